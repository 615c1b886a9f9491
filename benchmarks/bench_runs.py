"""What the compare scripts' tables share: the CSVs of alternating runs of
our build and ARMCI-MPI's, read into cells, and the summary helpers.

The scripts run it as `PYTHONPATH=benchmarks python3 - ... <<'PY'`
(bench_lib.sh's bench_python)."""
import csv
import math
import sys

IMPLS = ("libarmci", "armci-mpi")


def read_alternating(results, prefix, runs, key, values, who):
    """Reads RESULTS/PREFIX<impl>.<i>.csv for both builds and i = 1..runs:
    cells[impl][key(row)] is the list of values(row) over the runs, order the
    keys as the first build's CSVs list them. A CSV whose impl column names
    the other build ends the script (`who` says which)."""
    cells = {impl: {} for impl in IMPLS}
    order = []
    for impl in IMPLS:
        for i in range(1, runs + 1):
            path = f"{results}/{prefix}{impl}.{i}.csv"
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    if row["impl"] != impl:
                        sys.exit(f"{who}: {path} says impl={row['impl']}, expected {impl}")
                    k = key(row)
                    if impl == IMPLS[0] and k not in cells[impl]:
                        order.append(k)
                    cells[impl].setdefault(k, []).append(values(row))
    return cells, order


def geomean(xs):
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def fmt_size(n):
    """4096 -> "4K", as the C harness's format_bytes."""
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)
