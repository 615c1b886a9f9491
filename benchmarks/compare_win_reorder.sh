#!/usr/bin/env bash
# Window reordering inside an epoch (ARMCI_WIN_REORDER) measured: the
# win_bench cells epoch16_lock (lock + 16 puts of 8 B + 16 gets of 8 B +
# unlock), epoch16_fence (the same between fences) and the one-put cells
# lock_put_unlock_x and fence_put, once per mode, over shared memory
# (ARMCI_SHM=1), UCX between processes (every rank its own node) and UCX
# over TCP, at np 2 and 4, under mpirun's default binding. The setting is
# read at ARMCI_Init, so each mode is its own run; the runs of the modes
# alternate (RUNS rounds, the order rotating each round) so that drifting
# load falls on every mode alike. Each run's MPI column (Open MPI's
# MPI_Win_* on the same processes) is printed as the yardstick of that run.
#
# usage: benchmarks/compare_win_reorder.sh [BUILD_DIR] [win_bench options...]
# environment:
#   RUNS            rounds of the three modes (default 3)
#   NPS             process counts (default "2 4")
#   TRANSPORTS      any of shm ucx ucx-tcp (default all three)
#   MODES           reordering modes (default "none gets-first combine"); the
#                   modes fence-deferred and fence-counted are
#                   ARMCI_WIN_FENCE=deferred and counted instead (no
#                   reordering): those fences against none (the immediate one)
#   CELLS           win_bench --cells (default epoch16,lock_put_unlock_x,fence_put)
#   MPIRUN, MPIRUN_FLAGS, RESULTS_DIR, NO_MAKE: as benchmarks/compare_win.sh
# Output: a table of the median over the runs of each run's median (and the
# lowest and highest run median), the ratio to mode none (< 1: faster),
# and $RESULTS_DIR/win_reorder.csv with the same rows.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init compare_win_reorder "$@"
bench_make win_bench
b=$build_dir/benchmarks
read -r -a modes <<< "${MODES:-none gets-first combine}"
rounds=${RUNS:-3}
cells=${CELLS:-epoch16,lock_put_unlock_x,fence_put}

transport_env() {
  case $1 in
    shm) echo "ARMCI_SHM=1" ;;
    ucx) echo "ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=ucx" ;;
    ucx-tcp) echo "ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=ucx UCX_TLS=tcp,self" ;;
    *) echo "compare_win_reorder: unknown transport '$1'" >&2; exit 2 ;;
  esac
}
mode_env() {
  case $1 in
    fence-*) echo "ARMCI_WIN_FENCE=${1#fence-}" ;;
    *) echo "ARMCI_WIN_REORDER=$1" ;;
  esac
}

for n in ${NPS:-2 4}; do
  np=$n
  for t in ${TRANSPORTS:-shm ucx ucx-tcp}; do
    for ((round = 0; round < rounds; round++)); do
      for ((k = 0; k < ${#modes[@]}; k++)); do
        m=${modes[$(((k + round) % ${#modes[@]}))]}
        bench_run "winreo.$t.np$n.$m.r$round" "$b/win_bench" "$(transport_env "$t") $(mode_env "$m")" \
          --cells "$cells" ${bench_args[@]+"${bench_args[@]}"}
      done
    done
  done
done

python3 - "$results" "$rounds" "${NPS:-2 4}" "${TRANSPORTS:-shm ucx ucx-tcp}" "${modes[@]}" <<'PY'
import csv, statistics, sys
res, rounds, nps, transports, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5:]
rows = []
print("\n== window reordering (ARMCI_WIN_REORDER): median over %d runs of each run's median, us per epoch at rank 0" % rounds)
print("   [lowest-highest run median]; vs none: our median over mode none's (< 1: faster); mpi: MPI_Win_* in the same runs")
print(f"{'run':<12} {'cell':<18} {'mode':<11} {'armci us':>9} {'[runs]':<17} {'vs none':>7} {'mpi us':>8}")
for n in nps:
    for t in transports:
        data = {}
        for m in modes:
            for r in range(rounds):
                with open(f"{res}/winreo.{t}.np{n}.{m}.r{r}.csv", newline="") as f:
                    for row in csv.DictReader(f):
                        d = data.setdefault((row["op"], m), {"armci": [], "mpi": []})
                        d["armci"].append(float(row["armci_us"]))
                        d["mpi"].append(float(row["mpi_us"]))
        for cell in sorted({c for c, _ in data}):
            base = statistics.median(data[(cell, "none")]["armci"]) if (cell, "none") in data else None
            for m in modes:
                d = data.get((cell, m))
                if not d:
                    continue
                med = statistics.median(d["armci"])
                ratio = med / base if base else float("nan")
                mpi = statistics.median(d["mpi"])
                span = f"[{min(d['armci']):.3f}-{max(d['armci']):.3f}]"
                print(f"{t + '.np' + n:<12} {cell:<18} {m:<11} {med:>9.3f} {span:<17} {ratio:>7.2f} {mpi:>8.3f}")
                rows.append([t, n, cell, m, f"{med:.4f}", f"{min(d['armci']):.4f}", f"{max(d['armci']):.4f}",
                             f"{ratio:.3f}", f"{mpi:.4f}", len(d["armci"])])
with open(f"{res}/win_reorder.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["transport", "nprocs", "op", "reorder", "armci_us", "armci_min_run_us", "armci_max_run_us",
                "over_none", "mpi_us", "runs"])
    w.writerows(rows)
print(f"\nCSV: {res}/win_reorder.csv")
PY
