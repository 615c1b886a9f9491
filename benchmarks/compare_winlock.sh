#!/usr/bin/env bash
# Hybrid window locks measured (benchmarks/winlock_bench.c): each policy of
# ARMCI_WIN_LOCK_MIGRATE is its own run (the setting is read at ARMCI_Init),
# np 4 with two virtual nodes of two ranks over UCX (ARMCI_SHM=1
# ARMCI_VNODE_SIZE=2 ARMCI_NETWORK=ucx), mpirun's default binding. Rounds
# of the policies alternate (the order rotating) so that drifting load falls
# on each alike; the table gives the median of the runs' medians, the
# lowest and highest run median, and the ratio to pinned.
#
# usage: benchmarks/compare_winlock.sh [BUILD_DIR] [winlock_bench options...]
# environment: RUNS (default 3), POLICIES (default "pinned always after:4"),
#   MPIRUN (default mpirun), OUT (default BUILD_DIR/bench-results/winlock.csv),
#   REPORT=1 (a dated report in benchmarks/results/, as bench_lib.sh's)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-$here/../build}
[ $# -gt 0 ] && shift
read -r -a policies <<< "${POLICIES:-pinned always after:4}"
runs=${RUNS:-3}
out=${OUT:-$build/bench-results/winlock.csv}
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -C "$build" --no-print-directory benchmarks/winlock_bench >/dev/null
n=${#policies[@]}
for ((r = 0; r < runs; ++r)); do
  for ((k = 0; k < n; ++k)); do
    p=${policies[$(((k + r) % n))]}
    ARMCI_SHM=1 ARMCI_VNODE_SIZE=2 ARMCI_NETWORK=ucx ARMCI_WIN_LOCK_MIGRATE=$p \
      "${MPIRUN:-mpirun}" --allow-run-as-root --oversubscribe -np 4 \
      -x ARMCI_SHM -x ARMCI_VNODE_SIZE -x ARMCI_NETWORK -x ARMCI_WIN_LOCK_MIGRATE \
      "$build/benchmarks/winlock_bench" --csv "$tmp/$r.${p/:/_}.csv" "$@" >"$tmp/$r.${p/:/_}.out"
    grep '^# run:' "$tmp/$r.${p/:/_}.out" | sed "s/^/# $p round $r /"
  done
done
cat "$tmp"/*.csv | awk -F, 'NR == 1 || $1 != "impl"' >"$out"
python3 - "$out" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cells, policies = [], []
runs = {}
for r in rows:
    if r["cell"] not in cells: cells.append(r["cell"])
    if r["policy"] not in policies: policies.append(r["policy"])
    runs.setdefault((r["cell"], r["policy"]), []).append(float(r["median_us"]))
print(f"{'cell':20} {'policy':10} {'median us':>10} {'lowest':>9} {'highest':>9} {'/pinned':>8}")
for c in cells:
    base = statistics.median(runs[(c, "pinned")]) if (c, "pinned") in runs else None
    for p in policies:
        v = runs.get((c, p))
        if not v: continue
        m = statistics.median(v)
        ratio = f"{m / base:8.3f}" if base else "       -"
        print(f"{c:20} {p:10} {m:10.3f} {min(v):9.3f} {max(v):9.3f} {ratio}")
EOF
echo "# CSV: $out"
if [ "${REPORT:-0}" != 0 ]; then
  python3 "$here/report.py" --name compare_winlock --command "benchmarks/compare_winlock.sh $*" \
    --dir "$here/results/$(date -u +%Y-%m-%d)-$(hostname -s)" "$out"
fi
