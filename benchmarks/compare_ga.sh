#!/usr/bin/env bash
# Runs benchmarks/ga_bench (GA perf2's patterns and cache state) built
# against libarmci and against ARMCI-MPI, alternating, and prints per
# operation and shape: our time, ARMCI-MPI's, their ratio, the limit (the
# same pattern by memcpy or scale-and-add in one process) and our share of
# it, and the first sample of each cell (pass 0: remote pages rank 0 touches
# for the first time, which is all perf2 itself measures); then the goals
# per operation (medians, sizes from 4 KiB).
#
# usage: benchmarks/compare_ga.sh [BUILD_DIR] [ga_bench options...]
# environment: RUNS (default 3), RESULTS_DIR, PLOT=0, NO_MAKE=1, MPIRUN,
#   MPIRUN_FLAGS, MPICC, ARMCI_MPI_LIBS as for compare_armci_mpi.sh;
#   MERGE_ONLY=1 prints the tables of CSVs already in RESULTS_DIR
#   (ga.libarmci.N.csv, ga.armci-mpi.N.csv for N = 1..RUNS) without running.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
RUNS=${RUNS:-3}
bench_init compare_ga "$@"
set -- ${bench_args[@]+"${bench_args[@]}"}

if [ -z "${MERGE_ONLY:-}" ]; then
  bench_build_both ga_bench
  bench_alternate ga. ga_bench "$@"
fi

bench_python - "$results" "$runs" <<'PY'
import csv, statistics, sys
from bench_runs import geomean, read_alternating

results, runs = sys.argv[1], int(sys.argv[2])
cells, order = read_alternating(
    results, "ga.", runs, lambda row: (row["shape"], row["op"], int(row["size"])),
    lambda row: (float(row["lat_us_median"]), float(row["limit_us_median"]), float(row["first_us"])), "compare_ga")

def med(impl, key, col):
    return statistics.median(v[col] for v in cells[impl][key])

out = f"{results}/compare_ga.csv"
goals = []
with open(out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["shape", "op", "size", "libarmci_us", "armci_mpi_us", "ratio", "limit_us", "of_limit",
                "libarmci_first_us", "armci_mpi_first_us", "first_ratio"])
    groups = []
    for shape, op, _ in order:
        if (shape, op) not in groups:
            groups.append((shape, op))
    for shape, op in groups:
        print(f"\n== {shape} {op}   ratio = ARMCI-MPI time / ours (>1: ours faster); "
              f"of_limit = limit time / ours")
        print(f"{'bytes':>8} | {'ours us':>9} {'armci-mpi':>10} {'ratio':>6} | {'limit us':>9} {'of_limit':>8} | "
              f"{'first: ours':>11} {'armci-mpi':>10} {'ratio':>6}")
        mid, all4k, worst = [], [], (float("inf"), 0)
        ok_each = True
        for key in [k for k in order if k[:2] == (shape, op)]:
            if key not in cells["armci-mpi"]:
                continue
            size = key[2]
            o, t, lim = med("libarmci", key, 0), med("armci-mpi", key, 0), med("libarmci", key, 1)
            r, eff = t / o, lim / o
            fo, ft = med("libarmci", key, 2), med("armci-mpi", key, 2)
            w.writerow([shape, op, size, f"{o:.4f}", f"{t:.4f}", f"{r:.4f}", f"{lim:.4f}", f"{eff:.4f}",
                        f"{fo:.4f}", f"{ft:.4f}", f"{ft / fo:.4f}"])
            print(f"{size:8d} | {o:9.3f} {t:10.3f} {r:6.2f} | {lim:9.3f} {eff:8.3f} | "
                  f"{fo:11.3f} {ft:10.3f} {ft / fo:6.2f}")
            if size >= 4096:
                all4k.append(r)
                if size <= 65536:
                    mid.append(r)
                if r < worst[0]:
                    worst = (r, size)
                # the issue's per-size goal: 2x ARMCI-MPI or 90% of the limit, whichever is lower
                if not (r >= 2 or eff >= 0.9) or r < 1:
                    ok_each = False
        goals.append((shape, op, geomean(mid), geomean(all4k), worst, ok_each))

print("\n== summary (sizes from 4 KiB): geometric means of ARMCI-MPI time / ours")
print(f"{'shape':>7} {'op':>4} {'4K-64K':>7} {'>=4K':>6} {'worst (bytes)':>18} {'each size >= min(2x, 90% limit), >=1x':>40}")
for shape, op, g1, g2, (wr, ws), ok in goals:
    print(f"{shape:>7} {op:>4} {g1:7.2f} {g2:6.2f} {wr:9.2f} ({ws:7d}) {'yes' if ok else 'no':>40}")
print(f"\nruns per build: {runs}; CSVs in {results}/ga.*.csv; merged: {out}")
PY

bench_plot "$results/plots" "$results"/ga.libarmci.1.csv "$results"/ga.armci-mpi.1.csv
