#!/usr/bin/env bash
# Runs benchmarks/contig_bench built against libarmci and against ARMCI-MPI
# on the same machine and prints them side by side.
#
# usage: benchmarks/compare_armci_mpi.sh [BUILD_DIR] [contig_bench options...]
#   BUILD_DIR  the libarmci build tree (default: the current directory); our
#              binary is BUILD_DIR/benchmarks/contig_bench, and the ARMCI-MPI
#              one is built next to it as contig_bench_armci_mpi
#   options    passed to both runs, e.g. -q, -s 1M, -o 16
# environment:
#   RUNS=N          run each build N times, alternating, and take the median
#                   of each cell across runs (default 1)
#   MPIRUN, MPIRUN_FLAGS  launcher and its flags
#                   (default: mpirun --allow-run-as-root --oversubscribe)
#   MPICC, ARMCI_MPI_LIBS  how to build the ARMCI-MPI side
#                   (default: mpicc, -larmci-openmpi)
#   RESULTS_DIR     where the CSVs and logs go (default BUILD_DIR/bench-results)
#   NO_MAKE=1       do not run make for our binary first
#   PLOT=0          no PNG charts (default: benchmarks/plot.py draws them into
#                   RESULTS_DIR/plots)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init compare_armci_mpi "$@"
set -- ${bench_args[@]+"${bench_args[@]}"}

bench_build_both contig_bench
bench_alternate "" contig_bench "$@"

bench_python - "$results" "$runs" <<'PY'
import csv, statistics, sys
from bench_runs import fmt_size, geomean, read_alternating

results, runs = sys.argv[1], int(sys.argv[2])
# cells[impl][(op, size)] -> list of (lat_us, bw_MBps, memcpy_bw) over runs
cells, order = read_alternating(
    results, "", runs, lambda row: (row["op"], int(row["size"])),
    lambda row: (float(row["lat_us_median"]), float(row["bw_MBps_median"]), float(row["memcpy_bw_MBps"])),
    "compare_armci_mpi")

def med(key, impl, col):
    return statistics.median(v[col] for v in cells[impl][key])

common = [k for k in order if k in cells["armci-mpi"]]
if not common:
    sys.exit("compare_armci_mpi: the two runs have no (op, size) in common")

out_path = f"{results}/compare.csv"
summary = []
with open(out_path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["op", "size", "libarmci_lat_us", "armci_mpi_lat_us", "lat_ratio",
                "libarmci_bw_MBps", "armci_mpi_bw_MBps", "bw_ratio", "memcpy_bw_MBps"])
    ops = []
    for op, _ in common:
        if op not in ops:
            ops.append(op)
    for op in ops:
        keys = [k for k in common if k[0] == op]
        is_memcpy = op.startswith("memcpy")
        print()
        if is_memcpy:
            # The same memcpy measured during each run: a large difference
            # means the machine was not equally loaded during the two runs.
            print(f"== {op} (reference; measured in each run, MB/s)")
            print(f"{'size':>8} {'in libarmci run':>16} {'in armci-mpi run':>17} {'ratio':>7}")
        else:
            print(f"== {op}   ratio = ARMCI-MPI time / libarmci time (>1: libarmci faster)")
            print(f"{'size':>8} | {'lat_us ours':>11} {'armci-mpi':>10} {'ratio':>7} | "
                  f"{'MB/s ours':>10} {'armci-mpi':>10} {'ratio':>7} | {'memcpy MB/s':>11} {'ours/memcpy':>11}")
        lat_r, bw_r = [], []
        for key in keys:
            size = key[1]
            lo, lm = med(key, "libarmci", 0), med(key, "armci-mpi", 0)
            bo, bm = med(key, "libarmci", 1), med(key, "armci-mpi", 1)
            mc = med(key, "libarmci", 2)
            lr = lm / lo if lo > 0 else float("nan")
            br = bo / bm if bm > 0 else float("nan")
            lat_r.append(lr)
            bw_r.append(br)
            w.writerow([op, size, f"{lo:.4f}", f"{lm:.4f}", f"{lr:.4f}", f"{bo:.2f}", f"{bm:.2f}",
                        f"{br:.4f}", f"{mc:.2f}"])
            if is_memcpy:
                print(f"{fmt_size(size):>8} {bo:16.1f} {bm:17.1f} {bo / bm:7.2f}")
            else:
                print(f"{fmt_size(size):>8} | {lo:11.3f} {lm:10.3f} {lr:7.2f} | "
                      f"{bo:10.1f} {bm:10.1f} {br:7.2f} | {mc:11.1f} {bo / mc:11.3f}")
        if not is_memcpy:
            summary.append((op, geomean(lat_r), geomean(bw_r)))

print()
print("== geometric mean over sizes of ARMCI-MPI time / libarmci time (>1: libarmci faster)")
print(f"{'op':>12} {'latency':>8} {'bandwidth':>10}")
for op, lr, br in summary:
    print(f"{op:>12} {lr:8.2f} {br:10.2f}")
print(f"\nruns per build: {runs}; CSVs and logs in {results}; merged table: {out_path}")
PY

bench_plot "$results/plots"
