#!/usr/bin/env bash
# The NAS kernels MG and CG between the two guests of scripts/test-two-hosts.sh
# (rxea, rxeb: each its own kernel and Soft-RoCE rxe0 on a private link), in
# the three variants over the same fabric: the ARMCI variants with
# ARMCI_NETWORK=ucx, the mpi variant with Open MPI's pml ucx, both UCX over
# rxe0. np 2 puts one rank on each guest, np 4 two. Every run has --timers,
# so each prints its communication share; the transport UCX chose for the
# mpi runs (UCX_LOG_LEVEL=info) is kept in the CSV. Run from the build
# directory:
#   benchmarks/nas_two_hosts.sh [-c CLASSES] [-p NPS] [-k KERNELS] [-v VARIANTS] [-r CSV]
#   -c  classes (default S,W), -p process counts (2,4), -k kernels (mg,cg),
#   -v  variants (mpi,armci,armci-nb), -r CSV: only the table and plot of an
#       earlier run's CSV (several -r: their rows together)
# Environment: RUNS (runs per configuration, interleaved; default 3),
#   VM_LOCK (a lock file: each guest boot holds it, e.g. /tmp/vm.lock),
#   ONE_BOOT_PER_CLASS (1, default: one boot per class, so a lock is held
#   for one class at a time), TWO_HOSTS_OUT (default ./two-hosts), PLOT=0.
# Writes TWO_HOSTS_OUT/nas-two-hosts.csv (nas_bench.sh's columns plus the
# transport), nas-two-hosts.md and plots/nas-two-hosts-*.png.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
me=nas_two_hosts
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_me=$me

# ------------------------------------------------------ on rxea (the guest)
if [ -n "${TWO_HOSTS_B:-}" ]; then
  csv=$NAS_CSV
  out=$TWO_HOSTS_OUT/nas-logs
  mkdir -p "$out"
  [ -s "$csv" ] || echo "bench,kernel,class,nprocs,variant,net,run,seconds,mops,comm_seconds,binding,transport" > "$csv"
  for ((run = 1; run <= NAS_RUNS; run++)); do
    for c in ${NAS_CLASSES//,/ }; do
      for k in ${NAS_KERNELS//,/ }; do
        for p in ${NAS_NPS//,/ }; do
          for v in ${NAS_VARIANTS//,/ }; do
            hosts="--host $TWO_HOSTS_A:$((p / 2)),$TWO_HOSTS_B:$((p / 2))"
            # Same UCX over the same rxe0 for both: pml ucx (and no other
            # pml to fall back to) for MPI, ARMCI_NETWORK=ucx for ours.
            if [ "$v" = mpi ]; then
              fabric=(--mca pml ucx --mca btl self -x UCX_LOG_LEVEL=info)
            else
              fabric=(-x ARMCI_NETWORK=ucx)
            fi
            log="$out/$k-$c-$p-$v-$run.txt"
            # shellcheck disable=SC2086
            timeout 900 mpirun --oversubscribe $hosts -np "$p" $TWO_HOSTS_UCX_ARGS "${fabric[@]}" \
              "$NAS_BIN/$k" --class "$c" --variant "$v" --timers >"$log" 2>&1
            rc=$?
            if [ $rc -ne 0 ] || ! grep -q '^ Verification    =  SUCCESSFUL$' "$log"; then
              echo "$me: $k $c np=$p $v failed (exit $rc, log $log):"
              tail -n 15 "$log"
              continue
            fi
            nas_log_figures "$log"
            tr=-
            if [ "$v" = mpi ]; then
              # UCX's own words for the lanes of each endpoint, e.g.
              # "tag(rc_verbs/rxe0:1 ...)": the distinct ones, joined.
              tr=$(grep -o 'ep_cfg\[[0-9]*\]: [^;]*' "$log" | sed 's/^ep_cfg\[[0-9]*\]: //' | sort -u | paste -sd'|' -)
              tr=${tr:-unknown}
            else
              tr=$(grep -o 'rc_verbs\|ud_verbs\|rc_mlx5\|dc_mlx5\|tcp' "$log" | sort -u | paste -sd'|' -)
              tr=${tr:-armci-ucx}
            fi
            echo "nas-two-hosts,$k,$c,$p,$v,ucx,$run,$t,$mops,$comm,-,\"${tr//\"/}\"" >> "$csv"
            printf '   run %d %-3s %s np=%s %-8s %8s s (comm %s s) %s\n' "$run" "$k" "$c" "$p" "$v" "$t" "$comm" "$tr"
          done
        done
      done
    done
  done
  exit 0
fi

# ------------------------------------------------------ on this machine
classes=S,W nps=2,4 kernels=mg,cg variants=mpi,armci,armci-nb reuse=()
while [ $# -gt 0 ]; do
  nas_option "$@" || case $1 in
    -v) variants=$2 ;;
    -r) reuse+=("$2") ;;
    *) echo "$me: unknown option '$1' (see -h)" >&2; exit 2 ;;
  esac
  shift 2
done
out=${TWO_HOSTS_OUT:-$PWD/two-hosts}
mkdir -p "$out" && out=$(cd "$out" && pwd)
csv=$out/nas-two-hosts.csv
if [ ${#reuse[@]} -eq 0 ]; then
  for k in ${kernels//,/ }; do
    [ -x "nas-kernels/$k" ] || { echo "$me: run from a build directory after make (nas-kernels/$k)" >&2; exit 1; }
  done
  rm -f "$csv"
  started=$(date +%s) load_start=$(cut -d' ' -f1-3 /proc/loadavg)
  boots=("$classes")
  [ "${ONE_BOOT_PER_CLASS:-1}" = 1 ] && boots=(${classes//,/ })
  for cls in "${boots[@]}"; do
    echo "== class $cls: kernels $kernels, np $nps, variants $variants, ${RUNS:-3} runs (load $(cut -d' ' -f1-3 /proc/loadavg))"
    lock=()
    [ -n "${VM_LOCK:-}" ] && lock=(flock "$VM_LOCK")
    NAS_CSV=$csv NAS_BIN=$PWD/nas-kernels NAS_RUNS=${RUNS:-3} NAS_CLASSES=$cls NAS_NPS=$nps NAS_KERNELS=$kernels \
      NAS_VARIANTS=$variants TWO_HOSTS_OUT=$out \
      RXE_VM_ENV="${RXE_VM_ENV:-} NAS_CSV NAS_BIN NAS_RUNS NAS_CLASSES NAS_NPS NAS_KERNELS NAS_VARIANTS" \
      "${lock[@]}" "$top/scripts/test-two-hosts.sh" "$0" || echo "$me: the guests' run of class $cls failed"
  done
  echo "== done in $(( ($(date +%s) - started + 30) / 60 )) min; load average at the start $load_start, at the end $(cut -d' ' -f1-3 /proc/loadavg)"
  reuse=("$csv")
fi

# The table: per kernel, class, np and variant the median time and spread,
# the median communication share (Comm seconds / time), the speed-up over
# mpi (same UCX over the same rxe0) and the transport.
md=$out/nas-two-hosts.md
{ head -n 1 "${reuse[0]}"; for f in "${reuse[@]}"; do tail -n +2 "$f"; done; } > "$out/.nas-two-hosts-all.csv"
awk -F, -v md="$md" '
  function med(key, arr,   i, j, k, a, tmp) {
    k = n[key]
    for (i = 1; i <= k; i++) a[i] = arr[key, i] + 0
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { tmp = a[i]; a[i] = a[j]; a[j] = tmp }
    lo[key] = a[1]; hi[key] = a[k]
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  NR > 1 {
    key = $2 " " $3 " " $4 " " $5
    n[key]++; t[key, n[key]] = $8; cm[key, n[key]] = $10 / ($8 > 0 ? $8 : 1)
    tr = $12; for (i = 13; i <= NF; i++) tr = tr "," $i; gsub(/"/, "", tr); trans[key] = tr
    if (!(key in seen)) { seen[key] = 1; order[++m] = key }
  }
  END {
    for (i = 1; i <= m; i++) { share[order[i]] = med(order[i], cm); tm[order[i]] = med(order[i], t) }
    fmt = "%-3s %-5s %2s %-8s %4s %8s %15s %7s %7s  %s\n"
    printf fmt, "k", "class", "np", "variant", "runs", "median s", "spread", "comm %", "vs mpi", "transport (mpi: UCX ep_cfg)"
    print "| kernel | class | np | variant | runs | median s | spread s | comm share | vs mpi | transport |" > md
    print "|---|---|---|---|---|---|---|---|---|---|" > md
    for (i = 1; i <= m; i++) {
      key = order[i]; split(key, f, " ")
      ref = f[1] " " f[2] " " f[3] " mpi"
      vs = (ref in tm && tm[key] > 0) ? sprintf("%.2fx", tm[ref] / tm[key]) : "-"
      sp = sprintf("%.3f-%.3f", lo[key], hi[key])
      printf fmt, f[1], f[2], f[3], f[4], n[key], sprintf("%.3f", tm[key]), sp, sprintf("%.0f%%", 100 * share[key]), vs, trans[key]
      printf "| %s | %s | %s | %s | %d | %.3f | %s | %.0f%% | %s | %s |\n", f[1], f[2], f[3], f[4], n[key], tm[key], sp, 100 * share[key], vs, trans[key] > md
    }
  }' "$out/.nas-two-hosts-all.csv"
echo "(comm %: median of Comm seconds / time, the most any rank spent exchanging, reducing and waiting;"
echo " vs mpi: the mpi variant's median over this one's, >1 is faster; times are the guests' clock (TCG)."
echo " CSV: ${reuse[*]}; Markdown: $md)"
if [ "${PLOT:-1}" != 0 ] && py=$(bench_plot_python); then
  "$py" "$top/benchmarks/nas_plot.py" --name nas-two-hosts \
    --note "rxea + rxeb (QEMU TCG, Soft-RoCE rxe0), UCX for every variant" -o "$out/plots" "$out/.nas-two-hosts-all.csv"
fi
