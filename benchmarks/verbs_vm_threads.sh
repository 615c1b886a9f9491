#!/usr/bin/env bash
# Who takes the CPU during window lock epochs over verbs: boots the
# Soft-RoCE VM once and runs win_bench --one-way (lock cells) under `perf
# record -a -e sched:sched_switch` for each setting, alternated, then counts
# per thread how often it gave its vCPU away, by state (S sleeping, D
# uninterruptible, R preempted). The library names its threads
# (armci-helper, armci-heartbeat), so the helper's share is read directly.
# Run from the build directory:
#   ../benchmarks/verbs_vm_threads.sh
# SETTINGS (default "default none default none"): default, none
# (ARMCI_HELPER=none) or idle (ARMCI_PROGRESS_IDLE_US=999999, a helper that
# never takes over); CELLS (default lock_put_unlock_x,lock_unlock).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
script_dir=$top/benchmarks
source "$script_dir/bench_lib.sh"  # bench_vm_enter
bench_vm_enter "$script_dir/verbs_vm_threads.sh" "SETTINGS CELLS" "$@"
net=(-x ARMCI_SHM=0 -x ARMCI_NETWORK=verbs -x ARMCI_VNODE_SIZE=1)
run=0
for setting in ${SETTINGS:-default none default none}; do
  case $setting in
    default) extra=() ;;
    none) extra=(-x ARMCI_HELPER=none) ;;
    idle) extra=(-x ARMCI_PROGRESS_IDLE_US=999999) ;;
    *) echo "verbs_vm_threads.sh: unknown setting $setting" >&2; exit 2 ;;
  esac
  run=$((run + 1))
  perf record -q -a -e sched:sched_switch -o "$out/p.data" -- \
    timeout 600 mpirun -np 2 "${extra[@]}" "${net[@]}" benchmarks/win_bench --one-way \
    --cells "${CELLS:-lock_put_unlock_x,lock_unlock}" -r 3 -c "$out/w.csv" > "$out/w.txt" 2>&1 ||
    { cat "$out/w.txt"; exit 1; }
  echo "== run $run: $setting"
  awk -F, '$1 == "libarmci" { printf "   %-18s %8.1f us\n", $2, $3 }' "$out/w.csv"
  # perf script: "comm pid/tid [cpu] ... prev_state=X ==> ..." for the thread switched out
  perf script -i "$out/p.data" -F comm,pid,tid,trace 2>/dev/null |
    awk '{ split($2, id, "/"); pid = id[1]; tid = id[2]
           if ($1 != "win_bench" && $1 !~ /^armci-/) next
           kind = $1 ~ /^armci-/ ? $1 : (pid == tid ? "main" : "other")
           state = "?"; if (match($0, /prev_state=[A-Z]/)) state = substr($0, RSTART + 11, 1)
           n[pid " " kind]++; s[pid " " kind " " state]++; total[pid]++ }
         END { for (k in n) {
                 if (total[substr(k, 1, index(k, " ") - 1)] < 100) continue  # short-lived children of the ranks
                 line = sprintf("   pid %-6s %-16s %6d switches:", substr(k, 1, index(k, " ") - 1), substr(k, index(k, " ") + 1), n[k])
                 split("S D R", st, " ")
                 for (i = 1; i <= 3; i++) line = line sprintf(" %s %d", st[i], s[k " " st[i]] + 0)
                 print line } }' | sort
done
