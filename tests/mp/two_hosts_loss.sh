#!/usr/bin/env bash
# A host that disappears mid-job: 4 ranks of mp_host_loss across the two
# guests of scripts/test-two-hosts.sh (2 per guest); once every rank has moved
# data, the second guest is powered off (sysrq "o": no shutdown, no goodbye
# messages). The ranks on the first guest must then end within
# LOSS_BOUND seconds (default 60), with a non-zero status and an armci error
# from a survivor that names a lost rank; a job still running by then hangs.
# Run from the build directory after make check:
#   ../tests/mp/two_hosts_loss.sh                     # ARMCI_NETWORK=verbs
#   LOSS_NETWORK=ucx ../tests/mp/two_hosts_loss.sh
# (it boots the guests itself). Logs: two-hosts/host-loss.NETWORK.{out,err}.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${TWO_HOSTS_B:-}" ]; then
  [ -x tests/mp/mp_host_loss ] || { echo "two_hosts_loss: run from a build directory after make check" >&2; exit 1; }
  RXE_VM_ENV="${RXE_VM_ENV:-} LOSS_NETWORK LOSS_BOUND" exec "$top/scripts/test-two-hosts.sh" "$0"
fi

net=${LOSS_NETWORK:-verbs} bound=${LOSS_BOUND:-60}
out=$TWO_HOSTS_OUT/host-loss.$net.out err=$TWO_HOSTS_OUT/host-loss.$net.err
# shellcheck disable=SC2086
timeout -k 10 1800 mpirun --oversubscribe $TWO_HOSTS_MPIRUN_ARGS -np 4 \
  -x ARMCI_SHM=1 -x ARMCI_NETWORK="$net" -x ARMCI_VERBOSE=1 tests/mp/mp_host_loss > "$out" 2> "$err" < /dev/null &
job=$!
# Polls the log for rank 0's line (the guest has no /dev/fd for a pipe from tail -f).
for _ in $(seq 1 1800); do
  grep -q '^round 1 done' "$out" && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.5
done
if ! grep -q '^round 1 done' "$out"; then
  echo "FAIL host-loss ($net): the job did not get through its first round"
  tail -n 20 "$out" "$err"
  kill "$job" 2>/dev/null
  wait "$job"
  exit 1
fi
survivors=$(sed -n "s/^rank \([0-9]*\) on $(hostname)\$/\1/p" "$out" | sort -n | tr '\n' ' ')
lost=$(sed -n "s/^rank \([0-9]*\) on $TWO_HOSTS_B\$/\1/p" "$out" | sort -n | tr '\n' ' ')
echo "host-loss ($net): ranks ${survivors}on $(hostname), ranks ${lost}on $TWO_HOSTS_B; powering $TWO_HOSTS_B off"
# rxeb's one vCPU is busy with its two ranks, so the ssh login can take long;
# the clock starts when rxeb says it is about to go.
off=$TWO_HOSTS_OUT/host-loss.$net.poweroff
"$TWO_HOSTS_SSH" "$TWO_HOSTS_B" 'echo powering off; echo o > /proc/sysrq-trigger' > "$off" 2>&1 &
for _ in $(seq 1 600); do
  grep -q '^powering off' "$off" && break
  sleep 0.2
done
t0=$(date +%s.%N)
grep -q '^powering off' "$off" || { echo "FAIL host-loss ($net): could not reach $TWO_HOSTS_B to power it off"; cat "$off"; exit 1; }

why=
if ! timeout "$bound" tail -f --pid=$job /dev/null; then
  why="hang: the job was still running ${bound}s after $TWO_HOSTS_B went away"
  kill "$job" 2>/dev/null
fi
wait "$job"
rc=$?
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
lost_re=$(echo "$lost" | xargs | tr ' ' '|')
survivor_re=$(echo "$survivors" | xargs | tr ' ' '|')
if [ -n "$why" ]; then :
elif [ "$rc" -eq 0 ]; then why="exit status 0 after losing a host"
elif ! grep -qE "^armci: rank ($survivor_re): .*rank ($lost_re)([^0-9]|$)" "$err"; then
  why="no armci error from a survivor (rank $survivor_re) naming a lost rank ($lost_re)"
fi
if [ -z "$why" ]; then
  echo "PASS host-loss ($net): job ended ${secs}s after the power-off (exit $rc):"
  grep -E "^armci: rank ($survivor_re): " "$err" | head -n 4 | sed 's/^/  | /'
  echo "1 passed, 0 failed"
  exit 0
fi
echo "FAIL host-loss ($net): $why (exit $rc after ${secs}s)"
echo "  --- stderr (tail) ---"
tail -n 15 "$err" | sed 's/^/  | /'
echo "0 passed, 1 failed"
exit 1
