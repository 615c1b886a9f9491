#!/usr/bin/env bash
# Runs benchmarks/malloc_bench built against libarmci (shared memory, and
# through the network layer with ARMCI_SHM=0) and against ARMCI-MPI, at
# each process count, and prints microseconds per ARMCI_Malloc + ARMCI_Free
# pair side by side with the floor (one bare shared segment).
#
# usage: benchmarks/compare_malloc.sh [BUILD_DIR] [malloc_bench options...]
# environment:
#   NPS             process counts (default "2 4")
#   RUNS, MPIRUN, MPIRUN_FLAGS, MPICC, ARMCI_MPI_LIBS, RESULTS_DIR, NO_MAKE, PLOT
#                   as in compare_armci_mpi.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init compare_malloc "$@"
set -- ${bench_args[@]+"${bench_args[@]}"}

bench_build_both malloc_bench
b=$build_dir/benchmarks

for np in ${NPS:-2 4}; do
  for ((i = 1; i <= runs; i++)); do
    bench_run "malloc.np$np.shm.$i" "$b/malloc_bench" "ARMCI_SHM=1" "$@"
    bench_run "malloc.np$np.ucx.$i" "$b/malloc_bench" "ARMCI_SHM=0" "$@"
    bench_run "malloc.np$np.armci-mpi.$i" "$b/malloc_bench_armci_mpi" "" "$@"
  done
done

bench_python - "$results" "$runs" ${NPS:-2 4} <<'PY'
import csv, statistics, sys
from bench_runs import fmt_size as fmt
res, runs, nps = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
labels = ("shm", "ucx", "armci-mpi")

print("\n== malloc_bench: microseconds per ARMCI_Malloc + ARMCI_Free pair (median over runs of medians)")
print("   ratio = ARMCI-MPI / ours; floor = one bare shm segment, in our shm run")
print(f"{'np':>3} {'op':<7} {'size':>6} | {'ours shm':>9} {'ours ucx':>9} {'armci-mpi':>10} | "
      f"{'mpi/shm':>8} {'mpi/ucx':>8} | {'floor':>8}")
with open(f"{res}/compare-malloc.csv", "w", newline="") as out:
    w = csv.writer(out)
    w.writerow(["np", "op", "size", "ours_shm_us", "ours_ucx_us", "armci_mpi_us", "floor_us"])
    for np in nps:
        cells = {}
        order = []
        for label in labels:
            for i in range(1, runs + 1):
                with open(f"{res}/malloc.np{np}.{label}.{i}.csv", newline="") as f:
                    for row in csv.DictReader(f):
                        key = (row["op"], int(row["size"]))
                        if key not in order:
                            order.append(key)
                        cells.setdefault(key, {}).setdefault(label, []).append(float(row["us_median"]))
        med = lambda key, label: statistics.median(cells[key][label]) if label in cells.get(key, {}) else float("nan")
        for op, size in order:
            if op == "floor":
                continue
            s, u, m = (med((op, size), l) for l in labels)
            fl = med(("floor", size), "shm")
            print(f"{np:>3} {op:<7} {fmt(size):>6} | {s:9.1f} {u:9.1f} {m:10.1f} | {m / s:8.2f} {m / u:8.2f} | {fl:8.1f}")
            w.writerow([np, op, size, s, u, m, fl])
print(f"\nruns per build: {runs}; CSVs and logs in {res}; merged: {res}/compare-malloc.csv")
PY
