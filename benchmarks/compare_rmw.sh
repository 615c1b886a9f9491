#!/usr/bin/env bash
# Runs benchmarks/rmw_bench and benchmarks/gups built against libarmci (same
# node with CPU atomics: ARMCI_SHM=1; through the network layer: ARMCI_SHM=0)
# and against ARMCI-MPI on the same machine, and prints them side by side.
#
# usage: benchmarks/compare_rmw.sh [BUILD_DIR] [-q]
#   BUILD_DIR  the libarmci build tree (default: the current directory)
#   -q         quick: rmw_bench -q, gups with 2^16 updates per rank and 1 rep
# environment:
#   NP              processes (default 2)
#   RMW_ARGS        extra rmw_bench options;  GUPS_ARGS  extra gups options
#   MPIRUN, MPIRUN_FLAGS  launcher (default: mpirun --allow-run-as-root --oversubscribe)
#   MPICC, ARMCI_MPI_LIBS how to build the ARMCI-MPI side (mpicc, -larmci-openmpi)
#   RESULTS_DIR     CSVs and logs (default BUILD_DIR/bench-results)
#   NO_MAKE=1       do not run make for our binaries first
#   PLOT=0          no PNG charts (default: into RESULTS_DIR/plots)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init compare_rmw "$@"
quick=0
[ "${bench_args[0]:-}" = "-q" ] && quick=1

read -r -a rmw_args <<< "${RMW_ARGS:-}"
read -r -a gups_args <<< "${GUPS_ARGS:-}"
if [ $quick = 1 ]; then
  rmw_args+=(-q)
  gups_args+=(-u 65536 -r 1)
fi

bench_build_both rmw_bench gups

b=$build_dir/benchmarks
bench_run rmw.libarmci-cpu "$b/rmw_bench" "ARMCI_SHM=1" "${rmw_args[@]}"
bench_run rmw.libarmci-net "$b/rmw_bench" "ARMCI_SHM=0 ARMCI_VNODE_SIZE=1" "${rmw_args[@]}"
bench_run rmw.armci-mpi "$b/rmw_bench_armci_mpi" "" "${rmw_args[@]}"
bench_run gups.libarmci-cpu "$b/gups" "ARMCI_SHM=1" "${gups_args[@]}"
bench_run gups.libarmci-net "$b/gups" "ARMCI_SHM=0 ARMCI_VNODE_SIZE=1" "${gups_args[@]}"
bench_run gups.armci-mpi "$b/gups_armci_mpi" "" "${gups_args[@]}"

python3 - "$results" <<'PY'
import csv, sys
res = sys.argv[1]
labels = ("libarmci-cpu", "libarmci-net", "armci-mpi")

def load(kind, key, val):
    out = {}
    for l in labels:
        with open(f"{res}/{kind}.{l}.csv", newline="") as f:
            for row in csv.DictReader(f):
                out.setdefault(key(row), {})[l] = float(row[val])
    return out

rmw = load("rmw", lambda r: (r["op"], r["target"]), "lat_us_median")
print("\n== rmw_bench: median microseconds per operation (contended rows: wall time / all operations)")
print("   ratio = ARMCI-MPI time / libarmci same-node time (>1: libarmci faster)")
print(f"{'op':<26} {'target':<7} {'ours cpu':>9} {'ours net':>9} {'armci-mpi':>10} {'ratio':>7}")
with open(f"{res}/compare-rmw.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["op", "target", "libarmci_cpu_us", "libarmci_net_us", "armci_mpi_us", "ratio_mpi_over_cpu"])
    for (op, tgt), v in rmw.items():
        c, n, m = (v.get(l, float("nan")) for l in labels)
        print(f"{op:<26} {tgt:<7} {c:9.3f} {n:9.3f} {m:10.3f} {m / c:7.1f}")
        w.writerow([op, tgt, c, n, m, m / c])

gups = load("gups", lambda r: r["variant"], "gups")
errs = load("gups", lambda r: r["variant"], "errors")
print("\n== gups: GUPS (errors after the inverse pass)")
print(f"{'variant':<8} {'ours cpu':>16} {'ours net':>16} {'armci-mpi':>16} {'cpu/mpi':>8}")
for var, v in gups.items():
    cells = [f"{v[l]:.5f} ({int(errs[var][l])})" for l in labels]
    print(f"{var:<8} {cells[0]:>16} {cells[1]:>16} {cells[2]:>16} {v['libarmci-cpu'] / v['armci-mpi']:8.1f}")
print(f"\nCSVs and logs in {res}; merged: {res}/compare-rmw.csv")
PY

bench_plot "$results/plots"
