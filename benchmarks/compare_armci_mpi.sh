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
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_file="$script_dir/contig_bench.c"

build_dir=.
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build_dir=$1
  shift
fi
[ -d "$build_dir" ] || { echo "compare_armci_mpi: no build directory '$build_dir'" >&2; exit 2; }
build_dir=$(cd "$build_dir" && pwd)

runs=${RUNS:-1}
case $runs in ''|*[!0-9]*|0) echo "compare_armci_mpi: RUNS must be a positive integer" >&2; exit 2 ;; esac
mpirun_cmd=${MPIRUN:-mpirun}
read -r -a mpirun_flags <<< "${MPIRUN_FLAGS:---allow-run-as-root --oversubscribe}"
mpicc_cmd=${MPICC:-mpicc}
read -r -a armci_mpi_libs <<< "${ARMCI_MPI_LIBS:--larmci-openmpi}"
results=${RESULTS_DIR:-$build_dir/bench-results}
mkdir -p "$results" "$build_dir/benchmarks"

ours="$build_dir/benchmarks/contig_bench"
theirs="$build_dir/benchmarks/contig_bench_armci_mpi"

# Keep our binary in step with the sources when this is an automake tree.
if [ -z "${NO_MAKE:-}" ] && [ -f "$build_dir/Makefile" ]; then
  echo "== make benchmarks/contig_bench in $build_dir"
  make -C "$build_dir" benchmarks/contig_bench >"$results/make.log" 2>&1 || {
    tail -n 30 "$results/make.log" >&2
    echo "compare_armci_mpi: building our benchmark failed (log: $results/make.log)" >&2
    exit 1
  }
fi
[ -x "$ours" ] || {
  echo "compare_armci_mpi: $ours is missing; build it with 'make' in the build tree" >&2
  exit 1
}

# -O2 matches automake's default CFLAGS for our build.
echo "== $mpicc_cmd -O2 -o $theirs $source_file ${armci_mpi_libs[*]}"
"$mpicc_cmd" -O2 -o "$theirs" "$source_file" "${armci_mpi_libs[@]}"

run_one() { # impl binary run_index [options...]
  local impl=$1 bin=$2 idx=$3
  shift 3
  local csv="$results/$impl.$idx.csv" log="$results/$impl.$idx.txt"
  rm -f "$csv"
  echo "== run $idx/$runs $impl: $mpirun_cmd ${mpirun_flags[*]} -np 2 $bin -c $csv $*"
  local rc=0
  "$mpirun_cmd" "${mpirun_flags[@]}" -np 2 "$bin" -c "$csv" "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 30 "$log" >&2
    echo "compare_armci_mpi: the $impl run failed with exit status $rc (log: $log)" >&2
    exit 1
  fi
  [ -s "$csv" ] || { echo "compare_armci_mpi: the $impl run wrote no CSV ($log)" >&2; exit 1; }
  # A rank 0 that was off the CPU for a good part of the run was competing
  # with other load, and its figures say more about the machine than the
  # library.
  awk -v impl="$impl" '/^# run:/ {
      print
      for (i = 1; i <= NF; i++) if ($i == "cpu/wall") share = $(i + 1) + 0
      if (share < 0.9)
        printf "   warning: rank 0 of %s had the CPU %.0f%% of the time: other load was running\n", impl, share * 100
    }' "$log"
}

# Alternating the two builds spreads slow drifts in machine load over both.
for ((i = 1; i <= runs; i++)); do
  run_one libarmci "$ours" "$i" "$@"
  run_one armci-mpi "$theirs" "$i" "$@"
done

python3 - "$results" "$runs" <<'PY'
import csv, math, statistics, sys

results, runs = sys.argv[1], int(sys.argv[2])
IMPLS = ("libarmci", "armci-mpi")

# cells[impl][(op, size)] -> list of (lat_us, bw_MBps, memcpy_bw) over runs
cells = {impl: {} for impl in IMPLS}
order = []
for impl in IMPLS:
    for i in range(1, runs + 1):
        path = f"{results}/{impl}.{i}.csv"
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["impl"] != impl:
                    sys.exit(f"compare_armci_mpi: {path} says impl={row['impl']}, expected {impl}")
                key = (row["op"], int(row["size"]))
                if key not in cells[impl] and impl == IMPLS[0]:
                    order.append(key)
                cells[impl].setdefault(key, []).append(
                    (float(row["lat_us_median"]), float(row["bw_MBps_median"]),
                     float(row["memcpy_bw_MBps"])))

def med(key, impl, col):
    return statistics.median(v[col] for v in cells[impl][key])

def geomean(xs):
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")

def fmt_size(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)

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
