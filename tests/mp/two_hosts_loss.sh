#!/usr/bin/env bash
# A host that disappears mid-job: 4 ranks of mp_host_loss across the two
# guests of scripts/test-two-hosts.sh (2 per guest); once every rank has moved
# data, the second guest is powered off (sysrq "o": no shutdown, no goodbye
# messages, nothing said by PMIx or the network). The heartbeat between hosts
# (ARMCI_HEARTBEAT_MS) must then make every rank on the first guest report
# the loss within LOSS_REPORT_BOUND seconds (default 10): an armci error from
# a survivor naming a lost rank, and no survivor process left. The job
# (mpirun, whose daemon on the lost guest answers no more) is then given
# LOSS_BOUND seconds (default 60) and killed if still running, which the PASS
# line says: Open MPI 4.1's mpirun ended after 97 s in one run but in CI was
# still waiting for its lost daemon after 180 s and after 600 s (and crashed,
# exit 139, when killed). That is the launcher's limit; the library's
# processes are held to the report bound. Run from the build directory after make check:
#   ../tests/mp/two_hosts_loss.sh                     # ARMCI_NETWORK=verbs
#   LOSS_NETWORK=ucx ../tests/mp/two_hosts_loss.sh
#   LOSS_NETWORKS="verbs ucx" ../tests/mp/two_hosts_loss.sh   # both, one boot each
# (it boots the guests itself). Logs: two-hosts/host-loss.NETWORK.{out,err}.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${TWO_HOSTS_B:-}" ]; then
  [ -x tests/mp/mp_host_loss ] || { echo "two_hosts_loss: run from a build directory after make check" >&2; exit 1; }
  # A lost guest cannot come back in the same boot: one boot per network.
  status=0
  for net in ${LOSS_NETWORKS:-${LOSS_NETWORK:-verbs}}; do
    LOSS_NETWORK=$net RXE_VM_ENV="${RXE_VM_ENV:-} LOSS_NETWORK LOSS_BOUND LOSS_REPORT_BOUND" \
      "$top/scripts/test-two-hosts.sh" "$0" || status=1
  done
  exit $status
fi

net=${LOSS_NETWORK:-verbs} bound=${LOSS_BOUND:-60} report_bound=${LOSS_REPORT_BOUND:-10}
net_args=
[ "$net" = ucx ] && net_args=$TWO_HOSTS_UCX_ARGS
out=$TWO_HOSTS_OUT/host-loss.$net.out err=$TWO_HOSTS_OUT/host-loss.$net.err
# shellcheck disable=SC2086
timeout -k 10 1800 mpirun --oversubscribe $TWO_HOSTS_MPIRUN_ARGS $net_args -np 4 \
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

lost_re=$(echo "$lost" | xargs | tr ' ' '|')
survivor_re=$(echo "$survivors" | xargs | tr ' ' '|')
report_re="^armci: rank ($survivor_re): .*rank ($lost_re)([^0-9]|$)"
since() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
# The survivors' report and their exit, polled: both must come within the
# report bound, whatever mpirun then takes to give up on its lost daemon.
reported= exited=
while :; do
  [ -z "$reported" ] && grep -qE "$report_re" "$err" && reported=$(since)
  [ -z "$exited" ] && ! pgrep -x mp_host_loss > /dev/null && exited=$(since)
  [ -n "$reported" ] && [ -n "$exited" ] && break
  awk -v s="$(since)" -v b="$report_bound" 'BEGIN { exit !(s > b) }' && break
  sleep 0.2
done
why=
launcher=
if ! timeout "$bound" tail -f --pid=$job /dev/null; then
  # Open MPI 4.1's mpirun did not give up on its lost daemon in 600 s in CI
  # (and crashes when it is then killed): the launcher's limit, said on the
  # PASS line; the library's processes are bounded above.
  launcher="; mpirun itself still waited for its lost daemon after ${bound}s and was killed"
  kill "$job" 2>/dev/null
fi
wait "$job"
rc=$?
secs=$(since)
if [ -n "$why" ]; then :
elif [ -z "$reported" ]; then
  why="no armci error from a survivor (rank $survivor_re) naming a lost rank ($lost_re) within ${report_bound}s"
elif [ -z "$exited" ]; then
  why="survivors still running ${report_bound}s after the power-off"
elif [ "$rc" -eq 0 ]; then why="exit status 0 after losing a host"
fi
if [ -z "$why" ]; then
  echo "PASS host-loss ($net): reported ${reported}s and survivors gone ${exited}s after the power-off; job ended after ${secs}s (exit $rc)${launcher}:"
  grep -E "^armci: rank ($survivor_re): " "$err" | head -n 4 | sed 's/^/  | /'
  echo "1 passed, 0 failed"
  exit 0
fi
echo "FAIL host-loss ($net): $why (reported: ${reported:-never}, survivors gone: ${exited:-no}; exit $rc after ${secs}s)"
echo "  --- stderr (tail) ---"
tail -n 15 "$err" | sed 's/^/  | /'
echo "0 passed, 1 failed"
exit 1
