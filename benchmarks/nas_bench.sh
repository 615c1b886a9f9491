#!/usr/bin/env bash
# Runs the NAS kernels (nas-kernels/mg, cg and the Fortran cg_f) in every
# communication variant side by side, each configuration RUNS times
# (default 3) with the configurations interleaved so that load from other
# programs spreads over all of them (the variants of one cell rotate their
# order from run to run); prints per kernel, class and process
# count the median time, the spread (min-max) and the speed-up over the
# `mpi` variant, writes every run to a CSV and draws a chart.
#
# usage: benchmarks/nas_bench.sh [BUILD_DIR] [-c CLASSES] [-p NPS] [-k KERNELS] [-n NETS] [-r CSV]
#   BUILD_DIR  the libarmci build tree (default: the current directory)
#   -c         classes, comma list (default A; B takes about 5x longer)
#   -p         process counts (default 1,2,4)
#   -k         kernels (default mg,cg,cg_f)
#   -n         how the ARMCI variants reach their peers (default shm,ucx):
#              shm = ARMCI_SHM=1 (node shared memory), ucx = ARMCI_SHM=0
#              ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=ucx (every peer through UCX).
#              The mpi variant is Open MPI's own transport: run once per
#              configuration, it is the reference in both.
#   -r CSV     run nothing: the table and chart of an earlier run's CSV
# environment: RUNS (3), MPIRUN, MPIRUN_FLAGS (default --allow-run-as-root
#   --oversubscribe), RESULTS_DIR (default BUILD_DIR/bench-results),
#   NO_MAKE=1 (do not run make first), PLOT=0 (no chart), NPB_REF (the cited
#   NPB 3.3.1-MPI times: "kernel class np low high date;..."; the rows of those
#   cells get an NPB column and the ratio to it), NPB_BIN (the bin/ folder of
#   an NPB 3.3.1-MPI build holding mg.A.2, cg.B.1, ...: NPB runs as one more
#   variant, `npb`, interleaved with the others, and its median in the same
#   run replaces the cited figure; cells without a binary keep the citation).
# Output: RESULTS_DIR/nas.csv (one row per run), nas-table.txt, plots/nas-*.png,
# all from one invocation, which ends by saying how long it took and the
# load average at its start and end. On two cores class A with 3 runs takes
# tens of minutes and one CG class B run minutes, so `-c B` with CG is hours.
set -euo pipefail
started=$(date +%s)
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init nas_bench "$@"
set -- ${bench_args[@]+"${bench_args[@]}"}
me=$bench_me
runs=${RUNS:-3}
classes=A nps=1,2,4 kernels=mg,cg,cg_f nets=shm,ucx reuse=
while [ $# -gt 0 ]; do
  nas_option "$@" || case $1 in
    -n) nets=$2 ;;
    -r) reuse=$2 ;;
    *) echo "$me: unknown option '$1' (see -h)" >&2; exit 2 ;;
  esac
  shift 2
done
unset ARMCI_SHM ARMCI_VNODE_SIZE ARMCI_NETWORK

csv="$results/nas.csv"
if [ -n "$reuse" ]; then
  csv=$reuse
else
  targets=()
  for k in ${kernels//,/ }; do targets+=("nas-kernels/$k"); done
  if [ -z "${NO_MAKE:-}" ] && [ -f "$build_dir/Makefile" ]; then
    make -C "$build_dir" "${targets[@]}" >"$results/make-nas.log" 2>&1 || {
      tail -n 30 "$results/make-nas.log" >&2; echo "$me: make failed" >&2; exit 1; }
  fi

  net_env() {
    case $1 in
      shm) echo "ARMCI_SHM=1" ;;
      ucx) echo "ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=ucx" ;;
      *) echo "$me: unknown net '$1'" >&2; exit 2 ;;
    esac
  }

  # The configurations: kernel class np variant net; the ones of one cell
  # (kernel class np) compared with each other follow each other, and
  # cell_first[i] is where cell i starts.
  configs=() cell_first=()
  for c in ${classes//,/ }; do
    for k in ${kernels//,/ }; do
      for p in ${nps//,/ }; do
        cell_first+=(${#configs[@]})
        variants="mpi armci armci-nb"
        [ "$k" = cg_f ] && variants=armci-nb
        if [ -n "${NPB_BIN:-}" ] && [ "$k" != cg_f ]; then
          if [ -x "$NPB_BIN/$k.$c.$p" ]; then variants="npb $variants"
          else echo "$me: no $NPB_BIN/$k.$c.$p (make $k NPROCS=$p CLASS=$c in NPB): cited figure only" >&2; fi
        fi
        for v in $variants; do
          if [ "$v" = mpi ] || [ "$v" = npb ]; then configs+=("$k $c $p $v -"); continue; fi
          for n in ${nets//,/ }; do configs+=("$k $c $p $v $n"); done
        done
      done
    done
  done
  cell_first+=(${#configs[@]})

  # Run `run`'s order: within each cell the configurations rotate by one
  # place per run, so each takes every place in turn. In a fixed order a
  # variant always starts right after the same one exited and always at the
  # same point of a load that comes and goes, which shows as a difference
  # between variants that do identical work (all of them at np 1).
  run_order() {
    order=()
    local i first len j
    for ((i = 0; i + 1 < ${#cell_first[@]}; i++)); do
      first=${cell_first[i]} len=$((cell_first[i + 1] - cell_first[i]))
      for ((j = 0; j < len; j++)); do order+=("${configs[first + (j + $1 - 1) % len]}"); done
    done
  }

  echo "bench,kernel,class,nprocs,variant,net,run,seconds,mops,comm_seconds,binding" >"$csv"
  load_start=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "== $((${#configs[@]} * runs)) runs: ${#configs[@]} configurations x $runs (machine load: $load_start)"
  for ((run = 1; run <= runs; run++)); do
    run_order "$run"
    for cfg in "${order[@]}"; do
      read -r k c p v n <<<"$cfg"
      envs=()
      if [ "$n" != - ]; then for s in $(net_env "$n"); do envs+=(-x "$s"); done; fi
      log="$results/nas-$k-$c-$p-$v-$n-$run.txt"
      prog=("$build_dir/nas-kernels/$k" --class "$c" --variant "$v")
      [ "$v" = npb ] && prog=("$NPB_BIN/$k.$c.$p")
      "$mpirun_cmd" "${mpirun_flags[@]}" --report-bindings -np "$p" "${envs[@]}" "${prog[@]}" >"$log" 2>&1 || {
        tail -n 20 "$log" >&2; echo "$me: $cfg failed (log $log)" >&2; exit 1; }
      # NPB pads its report's values with more spaces than the kernels.
      grep -q '^ Verification    = *SUCCESSFUL$' "$log" || {
        tail -n 20 "$log" >&2; echo "$me: $cfg did not verify (log $log)" >&2; exit 1; }
      nas_log_figures "$log"
      binding=$(grep -q 'bound to' "$log" && echo core || echo none)
      echo "nas,$k,$c,$p,$v,$n,$run,$t,$mops,$comm,$binding" >>"$csv"
      printf '   run %d %-5s %s np=%s %-8s %-3s %8.2f s (comm %s s)\n' "$run" "$k" "$c" "$p" "$v" "$n" "$t" "${comm:--}"
    done
  done
fi

# NPB 3.3.1-MPI's own times for the cells where they were measured on this
# machine type (stock Fortran, -O3, gfortran 12, Open MPI 4.1.4, medians of
# three): NPB is no Debian package, so they are cited unless NPB_BIN names a
# build, whose runs in this invocation then take their place. Each entry:
# kernel class np low high date. NPB_REF replaces them.
npb_ref=${NPB_REF:-"mg A 2 0.50 0.55 2026-12-06;cg A 2 0.42 0.43 2026-12-06"}

# The table: medians and spreads per configuration, speed-up over mpi, and
# over NPB's reference where there is one.
table="$results/nas-table.txt"
awk -F, -v npb="$npb_ref" 'BEGIN {
    k = split(npb, e, ";")
    for (i = 1; i <= k; i++) if (split(e[i], f, " ") == 6) { rlo[f[1] " " f[2] " " f[3]] = f[4]; rhi[f[1] " " f[2] " " f[3]] = f[5]; rdate[f[1] " " f[2] " " f[3]] = f[6] }
  }
  NR > 1 {
    key = $2 " " $3 " " $4 " " $5 " " $6
    n[key]++; t[key, n[key]] = $8; cm[key, n[key]] = $10
    if (!(key in seen)) { seen[key] = 1; order[++m] = key }
  }
  function median_comm(key,   i, j, k, a, tmp) {
    k = n[key]
    if (cm[key, 1] == "") return "-"
    for (i = 1; i <= k; i++) a[i] = cm[key, i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { tmp = a[i]; a[i] = a[j]; a[j] = tmp }
    return sprintf("%.2f", k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2)
  }
  function median(key,   i, j, k, a, tmp) {
    k = n[key]
    for (i = 1; i <= k; i++) a[i] = t[key, i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { tmp = a[i]; a[i] = a[j]; a[j] = tmp }
    lo[key] = a[1]; hi[key] = a[k]
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    for (i = 1; i <= m; i++) med[order[i]] = median(order[i])
    printf "%-6s %-5s %3s %-9s %-4s %10s %17s %9s %8s  %-24s %s\n", "kernel", "class", "np", "variant", "net", "median s", "spread (min-max)", "vs mpi", "comm s", "NPB 3.3.1 MPI s (date)", "vs NPB"
    for (i = 1; i <= m; i++) {
      split(order[i], f, " ")
      ref = f[1] " " f[2] " " f[3] " mpi -"
      if (f[1] == "cg_f") ref = "cg " f[2] " " f[3] " mpi -"
      speed = (ref in med && med[order[i]] > 0) ? sprintf("%8.2fx", med[ref] / med[order[i]]) : "       -"
      cell = (f[1] == "cg_f" ? "cg" : f[1]) " " f[2] " " f[3]
      npbcol = "-"; vsnpb = "-"
      if ((cell " npb -") in med) {
        npbcol = sprintf("%.2f (this run)", med[cell " npb -"])
        if (med[order[i]] > 0) vsnpb = sprintf("%.2fx", med[cell " npb -"] / med[order[i]])
      } else if (cell in rlo) {
        npbcol = sprintf("%.2f-%.2f (%s)", rlo[cell], rhi[cell], rdate[cell])
        if (med[order[i]] > 0) vsnpb = sprintf("%.2f-%.2fx", rlo[cell] / med[order[i]], rhi[cell] / med[order[i]])
      }
      printf "%-6s %-5s %3s %-9s %-4s %10.2f %8.2f-%-8.2f %9s %8s  %-24s %s\n", f[1], f[2], f[3], f[4], f[5], med[order[i]], lo[order[i]], hi[order[i]], speed, median_comm(order[i]), npbcol, vsnpb
    }
  }' "$csv" | tee "$table"
echo "(vs mpi: the mpi variant's median time over this one's; >1 is faster. comm s: median of the"
echo " kernel's \"Comm seconds\", the most any rank spent exchanging, reducing and waiting."
echo " NPB 3.3.1 MPI: NPB's own time for that cell: its median in this run (NPB_BIN), else cited (stock"
echo " Fortran -O3, gfortran 12, Open MPI 4.1.4, medians of three, this machine type, on the date given);"
echo " vs NPB: NPB's time (the cited low and high) over this row's median, >= 0.95 is within 5%. CSV: $csv)"

if [ "${PLOT:-1}" != 0 ] && py=$(bench_plot_python); then
  "$py" "$script_dir/nas_plot.py" -o "$results/plots" "$csv"
fi
if [ -z "$reuse" ]; then
  echo "== done in $(( ($(date +%s) - started + 30) / 60 )) min; load average at the start $load_start, at the end $(cut -d' ' -f1-3 /proc/loadavg)"
fi
