#!/usr/bin/env bash
# Runs overlap_bench, target_busy and aggregate_bench built against libarmci
# and against ARMCI-MPI on the same machine (np 2) and prints them side by
# side; runs helper_cost (ours) under each helper setting and prints the
# compute rates relative to no helper.
#
# usage: benchmarks/compare_overlap.sh [BUILD_DIR] [-q] [-n] [-t] [-b LIST]
#   BUILD_DIR  the libarmci build tree (default: the current directory); our
#              binaries are BUILD_DIR/benchmarks/NAME, the ARMCI-MPI ones are
#              built next to them as NAME_armci_mpi
#   -q         quick: fewer sizes and samples
#   -n         also run ours with ARMCI_SHM=0: same-node peers through the
#              network layer (UCX over shared memory)      label libarmci-net
#   -t         also run ours with ARMCI_SHM=0 ARMCI_NETWORK=ucx UCX_TLS=tcp
#              (UCX over TCP)                              label libarmci-tcp
#   -b LIST    comma list of overlap,target_busy,aggregate,helper (default all)
# environment:
#   OVERLAP_ARGS, TARGET_BUSY_ARGS, AGGREGATE_ARGS, HELPER_ARGS
#                   extra options for each benchmark (all runs of it)
#   OURS_ENV        extra VAR=value settings for every run of ours, e.g.
#                   "ARMCI_PROTOCOL=buffered" (space separated)
#   RUNS=N          helper_cost: run each helper setting N times, alternating,
#                   and take the median (default 1)
#   HELPER_NONE_ENV the settings that turn the helper off
#                   (default "ARMCI_HELPER=none ARMCI_PROGRESS_THREAD=0")
#   MPIRUN, MPIRUN_FLAGS  launcher (default: mpirun --allow-run-as-root --oversubscribe)
#   MPICC, ARMCI_MPI_LIBS how to build the ARMCI-MPI side (mpicc, -larmci-openmpi)
#   RESULTS_DIR     CSVs and logs (default BUILD_DIR/bench-results)
#   NO_MAKE=1       do not run make for our binaries first
#   PLOT=0          no PNG charts (default: into RESULTS_DIR/plots)
# The settings this script varies (ARMCI_SHM, ARMCI_NETWORK, UCX_TLS,
# ARMCI_HELPER, ARMCI_PROGRESS_THREAD) are removed from the environment it
# was started with, so that every run gets exactly the ones named here.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init compare_overlap "$@"
set -- ${bench_args[@]+"${bench_args[@]}"}
me=$bench_me

quick=0 net=0 tcp=0 benches=overlap,target_busy,aggregate,helper
while [ $# -gt 0 ]; do
  case $1 in
    -q) quick=1 ;;
    -n) net=1 ;;
    -t) tcp=1 ;;
    -b) [ $# -ge 2 ] || { echo "$me: -b needs a list" >&2; exit 2; }
        benches=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "$me: unknown option '$1' (see -h)" >&2; exit 2 ;;
  esac
  shift
done
for b in ${benches//,/ }; do
  case $b in overlap|target_busy|aggregate|helper) ;;
    *) echo "$me: -b: unknown benchmark '$b' (overlap, target_busy, aggregate, helper)" >&2; exit 2 ;;
  esac
done
want() { [[ ",$benches," == *",$1,"* ]]; }

read -r -a ours_env <<< "${OURS_ENV:-}"
read -r -a helper_none_env <<< "${HELPER_NONE_ENV:-ARMCI_HELPER=none ARMCI_PROGRESS_THREAD=0}"
read -r -a overlap_args <<< "${OVERLAP_ARGS:-}"
read -r -a target_busy_args <<< "${TARGET_BUSY_ARGS:-}"
read -r -a aggregate_args <<< "${AGGREGATE_ARGS:-}"
read -r -a helper_args <<< "${HELPER_ARGS:-}"
if [ $quick = 1 ]; then
  overlap_args=(-s "8,4K,256K,4M" -r 5 "${overlap_args[@]}")
  target_busy_args=(-s "64K,1M,4M" -r 5 -m 5 "${target_busy_args[@]}")
  aggregate_args=(-r 9 "${aggregate_args[@]}")
  helper_args=(-k 5 -d 0.1 "${helper_args[@]}")
fi
unset ARMCI_SHM ARMCI_NETWORK UCX_TLS ARMCI_HELPER ARMCI_PROGRESS_THREAD
programs=()
want overlap && programs+=(overlap_bench)
want target_busy && programs+=(target_busy)
want aggregate && programs+=(aggregate_bench)
want helper && programs+=(helper_cost)
[ ${#programs[@]} -gt 0 ] || { echo "$me: nothing to run" >&2; exit 2; }

bench_make "${programs[@]}"
b=$build_dir/benchmarks
for p in "${programs[@]}"; do
  [ "$p" = helper_cost ] && continue # only ours is compared across helper settings
  bench_build_armci_mpi "$p"
done

# Our configurations: label and settings.
configs=("libarmci|ARMCI_SHM=1")
[ $net = 1 ] && configs+=("libarmci-net|ARMCI_SHM=0")
[ $tcp = 1 ] && configs+=("libarmci-tcp|ARMCI_SHM=0 ARMCI_NETWORK=ucx UCX_TLS=tcp")

run() { bench_run "$@"; } # name binary "VAR=value ..." [args...]; OURS_ENV is added to ours

# Every configuration of ours, then ARMCI-MPI.
run_all() { # program tag [args...]; prints the labels it ran
  local prog=$1 tag=$2
  shift 2
  local c
  for c in "${configs[@]}"; do
    run "$prog$tag.${c%%|*}" "$b/$prog" "${c#*|}" "$@"
  done
  run "$prog$tag.armci-mpi" "$b/${prog}_armci_mpi" "" "$@"
}

labels=()
for c in "${configs[@]}"; do labels+=("${c%%|*}"); done
labels+=(armci-mpi)

if want overlap; then
  run_all overlap_bench .idle -t idle "${overlap_args[@]}"
  run_all overlap_bench .busy -t busy "${overlap_args[@]}"
fi
want target_busy && run_all target_busy "" "${target_busy_args[@]}"
want aggregate && run_all aggregate_bench "" "${aggregate_args[@]}"

if want helper; then
  # Helper settings x (idle at the default path, idle and mixed through the
  # network layer); RUNS rounds, the settings alternating within each.
  helper_modes=("idle-shm|ARMCI_SHM=1|idle" "idle-net|ARMCI_SHM=0|idle" "mixed-net|ARMCI_SHM=0|mixed")
  for ((i = 1; i <= runs; i++)); do
    for m in "${helper_modes[@]}"; do
      IFS='|' read -r mlabel msettings mmode <<< "$m"
      run "helper_cost.$mlabel.none.$i" "$b/helper_cost" "$msettings ${helper_none_env[*]}" -m "$mmode" "${helper_args[@]}"
      run "helper_cost.$mlabel.block.$i" "$b/helper_cost" "$msettings ARMCI_HELPER=block" -m "$mmode" "${helper_args[@]}"
      run "helper_cost.$mlabel.spin.$i" "$b/helper_cost" "$msettings ARMCI_HELPER=spin" -m "$mmode" "${helper_args[@]}"
    done
  done
fi

python3 - "$results" "$benches" "$runs" "${labels[@]}" <<'PY'
import csv, math, statistics, sys

res, benches, runs, labels = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4:]
nan = float("nan")

def rows(name):
    with open(f"{res}/{name}.csv", newline="") as f:
        return list(csv.DictReader(f))

def short(label):
    return {"libarmci": "ours", "libarmci-net": "ours-net", "libarmci-tcp": "ours-tcp"}.get(label, label)

def fmt_size(n):
    n = int(n)
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)

def table(title, key_cols, data, value_cols, names, fmts):
    """data: {label: {key: row}}; one block of columns per label."""
    keys = []
    for l in labels:
        for k in data[l]:
            if k not in keys:
                keys.append(k)
    width = 10 * len(value_cols)
    print(f"\n== {title}")
    print(" " * (7 * len(key_cols) - 1) + "".join(f" | {short(l):^{width}}" for l in labels))
    print(" ".join(f"{c:>6}" for c in key_cols) + "".join(
        " | " + "".join(f"{n:>10}" for n in names) for _ in labels))
    for k in keys:
        line = " ".join(f"{(fmt_size(x) if x.isdigit() else x):>6}" for x in k)
        for l in labels:
            r = data[l].get(k)
            line += " | " + "".join(
                f"{(float(r[c]) if r else nan):>10{f}}" for c, f in zip(value_cols, fmts))
        print(line)

if "overlap" in benches:
    for tgt in ("idle", "busy"):
        data = {l: {(r["op"], r["bytes"]): r for r in rows(f"overlap_bench.{tgt}.{l}")
                    if abs(float(r["c_frac"]) - 1) < 1e-9} for l in labels}
        table(f"overlap_bench, target {tgt}: t_comm and t_total (us), overlap %",
              ("op", "bytes"), data, ("t_comm_us", "t_total_us", "overlap_pct"),
              ("t_comm", "t_total", "overlap%"), (".2f", ".2f", ".1f"))

if "target_busy" in benches:
    data = {l: {(r["op"], r["bytes"]): r for r in rows(f"target_busy.{l}")} for l in labels}
    table("target_busy: MB/s with the target idle and busy, busy/idle",
          ("op", "bytes"), data, ("idle_MBps", "busy_MBps", "busy_over_idle"),
          ("idle", "busy", "busy/idle"), (".0f", ".0f", ".3f"))

if "aggregate" in benches:
    data = {l: {(r["op"], r["way"]): r for r in rows(f"aggregate_bench.{l}")} for l in labels}
    table("aggregate_bench: us per operation, ratio to blocking",
          ("op", "way"), data, ("per_op_us", "ratio_to_blk"), ("us/op", "/blk"), (".4f", ".3f"))

if "helper" in benches:
    print("\n== helper_cost (ours): kernel Gflop/s over wall time, median over runs of each")
    print("   setting's median; ratio = rate / rate with no helper (target: >= 0.98 for block);")
    print("   cpu ratio: the same for Gflop/s per main-thread CPU second; main = main thread")
    print("   CPU / wall, other = the process's other threads' CPU / wall. A row whose main is")
    print("   well below 1 while other stays near 0 shared its core with other jobs: trust")
    print("   the cpu ratio there, not the wall ratio")
    print(f"{'mode':<10} {'rank':>4} {'setting':<7} {'Gflop/s':>8} {'ratio':>7} {'cpu ratio':>9} {'main':>6} {'other':>6}  {'within 2%':<9}")
    for mode in ("idle-shm", "idle-net", "mixed-net"):
        per = {}
        for setting in ("none", "block", "spin"):
            for i in range(1, runs + 1):
                for r in rows(f"helper_cost.{mode}.{setting}.{i}"):
                    per.setdefault((int(r["rank"]), setting), []).append(r)
        for rank in sorted({k[0] for k in per}):
            base = statistics.median(float(r["gflops_median"]) for r in per[(rank, "none")])
            cbase = statistics.median(float(r["gflops_per_cpu_s"]) for r in per[(rank, "none")])
            for setting in ("none", "block", "spin"):
                rs = per[(rank, setting)]
                g = statistics.median(float(r["gflops_median"]) for r in rs)
                cg = statistics.median(float(r["gflops_per_cpu_s"]) for r in rs)
                mc = statistics.median(float(r["main_cpu"]) for r in rs)
                oc = statistics.median(float(r["other_cpu"]) for r in rs)
                ok = "" if setting == "none" else ("yes" if g / base >= 0.98 else "NO")
                print(f"{mode:<10} {rank:>4} {setting:<7} {g:8.3f} {g / base:7.3f} {cg / cbase:9.3f} {mc:6.2f} {oc:6.2f}  {ok:<9}")
print(f"\nCSVs and logs in {res}")
PY

bench_plot "$results/plots"
