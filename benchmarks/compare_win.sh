#!/usr/bin/env bash
# Runs benchmarks/win_bench (ARMCI_Win_* beside Open MPI's MPI_Win_* in one
# run) at np 2 and np 4, over shared memory (ARMCI_SHM=1) and through the
# network layer (ARMCI_SHM=0, every rank its own node: UCX), and prints the
# medians side by side with MPI's time over ours (>1: ours faster). In the
# ucx rows MPI keeps its own shared-memory one-sided component; the
# ucxmpi rows run the same job with Open MPI's UCX components (pml and osc
# ucx, every UCX transport allowed), so that both sides go through UCX.
#
# usage: benchmarks/compare_win.sh [BUILD_DIR] [win_bench options...]
# environment:
#   NPS             process counts (default "2 4")
#   MPIRUN, MPIRUN_FLAGS  launcher (default: mpirun --allow-run-as-root --oversubscribe)
#   RESULTS_DIR     CSVs and logs (default BUILD_DIR/bench-results)
#   NO_MAKE=1       do not run make first
#   MPI_UCX=0       leave out the ucxmpi rows (they need Open MPI's osc ucx)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init compare_win "$@"
bench_make win_bench sync_floor
b=$build_dir/benchmarks
labels=()
for np in ${NPS:-2 4}; do
  bench_run "win.shm.np$np" "$b/win_bench" "ARMCI_SHM=1" ${bench_args[@]+"${bench_args[@]}"}
  bench_run "win.ucx.np$np" "$b/win_bench" "ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=ucx" \
    ${bench_args[@]+"${bench_args[@]}"}
  labels+=("shm.np$np" "ucx.np$np")
  if [ "${MPI_UCX:-1}" != 0 ]; then
    if ompi_info 2>/dev/null | grep -q "MCA osc: ucx"; then
      saved_flags=("${mpirun_flags[@]}")
      mpirun_flags+=(--mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
      bench_run "win.ucxmpi.np$np" "$b/win_bench" "ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=ucx" \
        ${bench_args[@]+"${bench_args[@]}"}
      mpirun_flags=("${saved_flags[@]}")
      labels+=("ucxmpi.np$np")
    else
      echo "   (no ucxmpi rows: this Open MPI has no osc ucx component)"
    fi
  fi
  # The same number of processes with no library at all: what any fence
  # or PSCW epoch costs at least here (benchmarks/sync_floor.c).
  "$b/sync_floor" -n "$np" > "$results/floor.np$np.csv"
done

python3 - "$results" "${labels[@]}" <<'PY'
import csv, sys
res, labels = sys.argv[1], sys.argv[2:]
print("\n== win_bench: median microseconds per epoch at rank 0 (q1-q3); mpi/armci > 1: ours faster")
print(f"{'run':<10} {'op':<18} {'armci us':>9} {'(q1-q3)':<17} {'mpi us':>9} {'(q1-q3)':<17} {'mpi/armci':>9}")
for l in labels:
    with open(f"{res}/win.{l}.csv", newline="") as f:
        for r in csv.DictReader(f):
            a = f"({float(r['armci_q1_us']):.3f}-{float(r['armci_q3_us']):.3f})"
            m = f"({float(r['mpi_q1_us']):.3f}-{float(r['mpi_q3_us']):.3f})"
            # overlap cells: the overlap % of each (win_bench's overlap section)
            ov = (f"  overlap {float(r['armci_overlap_pct']):.0f}% vs {float(r['mpi_overlap_pct']):.0f}%"
                  if r.get("armci_overlap_pct") else "")
            print(f"{l:<10} {r['op']:<18} {float(r['armci_us']):>9.3f} {a:<17} {float(r['mpi_us']):>9.3f} {m:<17} "
                  f"{float(r['mpi_over_armci']):>9.2f}{ov}")

# A ratio to MPI cannot pass MPI's time over the floor of the same shape.
print("\n== the floor: forked processes exchanging flags in shared memory, no library (sync_floor);")
print("   best ratio = MPI's time over the floor, the most any library could reach")
print(f"{'run':<10} {'op':<18} {'floor us':>9} {'(min-max)':<17} {'ours us':>9} {'mpi us':>9} {'best ratio':>10}")
for l in labels:
    if not l.startswith("shm."):
        continue
    np = l.split(".np")[1]
    with open(f"{res}/win.{l}.csv", newline="") as f:
        cells = {r["op"]: r for r in csv.DictReader(f)}
    with open(f"{res}/floor.np{np}.csv", newline="") as f:
        floors = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    for fl in floors:
        op = {"fence": "fence_empty", "pscw_ring": "pscw_ring"}[fl["shape"]]
        if op not in cells:
            continue
        r, floor = cells[op], float(fl["us"])
        print(f"{'np' + np:<9} {op:<18} {floor:>9.3f} {'(' + fl['min_us'] + '-' + fl['max_us'] + ')':<17} "
              f"{float(r['armci_us']):>9.3f} {float(r['mpi_us']):>9.3f} {float(r['mpi_us']) / floor:>10.2f}")
PY
