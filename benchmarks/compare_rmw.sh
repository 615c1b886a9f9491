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
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build_dir=.
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build_dir=$1
  shift
fi
[ -d "$build_dir" ] || { echo "compare_rmw: no build directory '$build_dir'" >&2; exit 2; }
build_dir=$(cd "$build_dir" && pwd)
quick=0
[ "${1:-}" = "-q" ] && quick=1

np=${NP:-2}
mpirun_cmd=${MPIRUN:-mpirun}
read -r -a mpirun_flags <<< "${MPIRUN_FLAGS:---allow-run-as-root --oversubscribe}"
mpicc_cmd=${MPICC:-mpicc}
read -r -a armci_mpi_libs <<< "${ARMCI_MPI_LIBS:--larmci-openmpi}"
results=${RESULTS_DIR:-$build_dir/bench-results}
mkdir -p "$results" "$build_dir/benchmarks"
read -r -a rmw_args <<< "${RMW_ARGS:-}"
read -r -a gups_args <<< "${GUPS_ARGS:-}"
if [ $quick = 1 ]; then
  rmw_args+=(-q)
  gups_args+=(-u 65536 -r 1)
fi

if [ -z "${NO_MAKE:-}" ] && [ -f "$build_dir/Makefile" ]; then
  echo "== make benchmarks/rmw_bench benchmarks/gups in $build_dir"
  make -C "$build_dir" benchmarks/rmw_bench benchmarks/gups >"$results/make-rmw.log" 2>&1 || {
    tail -n 30 "$results/make-rmw.log" >&2
    echo "compare_rmw: building our benchmarks failed" >&2
    exit 1
  }
fi
for b in rmw_bench gups; do
  [ -x "$build_dir/benchmarks/$b" ] || { echo "compare_rmw: $build_dir/benchmarks/$b is missing" >&2; exit 1; }
  echo "== $mpicc_cmd -O2 -o $build_dir/benchmarks/${b}_armci_mpi $script_dir/$b.c ${armci_mpi_libs[*]}"
  "$mpicc_cmd" -O2 -o "$build_dir/benchmarks/${b}_armci_mpi" "$script_dir/$b.c" "${armci_mpi_libs[@]}"
done

run() { # label binary env... -- args...
  local label=$1 bin=$2
  shift 2
  local -a envs=()
  while [ "$1" != "--" ]; do envs+=(-x "$1"); shift; done
  shift
  local csv="$results/$label.csv" log="$results/$label.txt"
  rm -f "$csv"
  echo "== $label: $mpirun_cmd ${mpirun_flags[*]} -np $np ${envs[*]} $bin -c $csv $*"
  local rc=0
  # ARMCI_* stay out of the ARMCI-MPI runs' way; -x sets them for ours.
  "$mpirun_cmd" "${mpirun_flags[@]}" -np "$np" "${envs[@]}" "$bin" -c "$csv" "$@" >"$log" 2>&1 || rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$csv" ]; then
    tail -n 30 "$log" >&2
    echo "compare_rmw: $label failed (exit $rc; log $log)" >&2
    exit 1
  fi
  grep '^# run:' "$log" || true
}

b=$build_dir/benchmarks
run rmw.libarmci-cpu "$b/rmw_bench" ARMCI_SHM=1 -- "${rmw_args[@]}"
run rmw.libarmci-net "$b/rmw_bench" ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 -- "${rmw_args[@]}"
run rmw.armci-mpi "$b/rmw_bench_armci_mpi" -- "${rmw_args[@]}"
run gups.libarmci-cpu "$b/gups" ARMCI_SHM=1 -- "${gups_args[@]}"
run gups.libarmci-net "$b/gups" ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 -- "${gups_args[@]}"
run gups.armci-mpi "$b/gups_armci_mpi" -- "${gups_args[@]}"

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
