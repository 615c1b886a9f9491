#!/usr/bin/env bash
# Two hosts on this machine: boots two throw-away QEMU guests (the kernel and
# root filesystem of ../shared/rxe-vm), "rxea" 10.99.0.1 and "rxeb" 10.99.0.2,
# joined by a private Ethernet link (QEMU socket netdev on 127.0.0.1) that
# carries each guest's Soft-RoCE device rxe0. rxeb runs sshd with keys made
# for this run; rxea runs a command that launches jobs across both with Open
# MPI's mpirun over ssh (PMIx across two daemons, the node map from two real
# host names). Run from the build directory after make check.
#
#   scripts/test-two-hosts.sh                 # the multi-process suite, 2 ranks per guest:
#                                             # ARMCI_NETWORK=verbs, then ARMCI_NETWORK=ucx
#   scripts/test-two-hosts.sh CMD [ARGS...]   # CMD on rxea instead (benchmarks, scenarios)
#
# CMD finds: TWO_HOSTS_A/B (host names), TWO_HOSTS_MPIRUN_ARGS (--host rxea:2,rxeb:2),
# TWO_HOSTS_UCX_ARGS (mpirun arguments for ARMCI_NETWORK=ucx jobs),
# TWO_HOSTS_SSH (ssh to the other guest), TWO_HOSTS_OUT (a directory shared
# read-write with this machine), and mpirun set up to reach rxeb.
# Environment: TWO_HOSTS_TESTS (programs of the suite, default all),
# TWO_HOSTS_UCX_TESTS (of the ucx pass, default the same; "none" skips it),
# TWO_HOSTS_TIMEOUT (s, whole run, default 3600), MP_TIMEOUT (s per job, 900),
# TWO_HOSTS_OUT (default ./two-hosts: logs of failed jobs, benchmark output),
# TWO_HOSTS_VERBS_TIMEOUT (ARMCI_VERBS_TIMEOUT of every job, default 18;
# empty: the library's default), TWO_HOSTS_REPEAT (the verbs pass N times in
# one boot, stopping at the first failure, each with the rxe0 counters it moved).
# Exit status: CMD's (the suite's); 124 when the run timed out.
set -uo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
host_a=rxea host_b=rxeb ip_a=10.99.0.1 ip_b=10.99.0.2

# ------------------------------------------------------------ inside a guest
# Both guests see this machine's files (read-only, writes thrown away), so the
# run directory made below is visible to them at the same path.
if [ "${1:-}" = --guest ]; then
  role=$2 run=$3
  shift 3
  printf '%s %s\n%s %s\n' "$ip_a" "$host_a" "$ip_b" "$host_b" >> /etc/hosts
  # A TCG guest that booted while this machine was loaded calibrates its TSC
  # wrongly, and its clock then runs up to 40 times too fast (timeouts fire
  # early). The emulated HPET keeps real time. TWO_HOSTS_CLOCK=tsc keeps the
  # TSC (two_hosts_bench.sh: perftest counts TSC cycles, so both use them).
  if [ "${TWO_HOSTS_CLOCK:-hpet}" = hpet ]; then
    echo hpet > /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null ||
      echo "test-two-hosts: $(hostname) keeps clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" >&2
  fi
  if [ "$role" = b ]; then
    mkdir -p /run/sshd
    echo "guest $(hostname): sshd on $ip_b"
    # In the foreground: rxea stops it (by its pid file) when its command is done.
    exec /usr/sbin/sshd -D -e -f "$run/sshd_config"
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_plm_rsh_agent="$run/ssh"
  export TWO_HOSTS_A=$host_a TWO_HOSTS_B=$host_b TWO_HOSTS_SSH="$run/ssh"
  export TWO_HOSTS_MPIRUN_ARGS="--host $host_a:2,$host_b:2"
  # A setting for the emulated guests, not a library default: rdma_rxe on a
  # TCG guest of a loaded machine acks later than the default RC ack timeout
  # (14: 67 ms), sometimes later than 1 s. Every timeout resends all that
  # is unacknowledged although nothing was lost (each guest's sent_pkts
  # equals the other's rcvd_pkts), the duplicates load the guests further,
  # and the retransmissions snowball until a SEND fails ("remote invalid
  # request error") or a pair's QP stalls past the heartbeat: mp_msg failed
  # in 3 of 5 runs at 14 with 30-280 timeouts and up to 15 900 duplicates
  # per guest and run; at 18 (1.07 s) a few timeouts and tens of duplicates
  # per run remain and 20 repetitions in one boot passed (TWO_HOSTS_REPEAT
  # prints these counters per repetition).
  timeout_exp=${TWO_HOSTS_VERBS_TIMEOUT-18}
  [ -n "$timeout_exp" ] && TWO_HOSTS_MPIRUN_ARGS="$TWO_HOSTS_MPIRUN_ARGS -x ARMCI_VERBS_TIMEOUT=$timeout_exp"
  # UCX 1.13 over the two rxe devices: its own GID choice (index 1, RoCE v2 on
  # IPv4) ends in "Endpoint timeout" on rc_verbs and ud_verbs; the link-local
  # IPv6 GID (index 0) works. Jobs with ARMCI_NETWORK=ucx add these arguments.
  export TWO_HOSTS_UCX_ARGS="-x UCX_IB_GID_INDEX=0"
  # rxeb boots at the same time; its sshd is up a few seconds after its kernel.
  up=0
  for _ in $(seq 1 120); do
    "$run/ssh" "$host_b" true 2>/dev/null && { up=1; break; }
    sleep 1
  done
  [ $up = 1 ] || { echo "test-two-hosts: cannot ssh from $host_a to $host_b" >&2; exit 125; }
  echo "guest $(hostname): $host_b reachable over ssh; $(ibv_devices | awk 'NR > 2 {printf "%s ", $1}')on $ip_a"
  "$@"
  rc=$?
  # The devices' own counts of packets and retransmissions over the whole run
  # (non-zero ones): what tells a lost packet from a spurious retransmission.
  counters='cd /sys/class/infiniband/rxe0/ports/1/hw_counters 2>/dev/null &&
    for c in *; do v=$(cat "$c"); [ "$v" != 0 ] && printf " %s=%s" "$c" "$v"; done; echo'
  echo "rxe0 counters $host_a:$(sh -c "$counters")"
  echo "rxe0 counters $host_b:$("$run/ssh" "$host_b" "$counters" 2>/dev/null)"
  "$run/ssh" "$host_b" 'kill $(cat /run/two-hosts-sshd.pid)' 2>/dev/null
  exit $rc
fi

# ------------------------------------------------------------ on this machine
top=$(cd "$(dirname "$0")/.." && pwd)
vm=${RXE_VM_SCRIPT:-$top/../shared/rxe-vm/run-in-rxe-vm.sh}
if [ ! -x "$vm" ]; then
  echo "test-two-hosts: $vm not found: the guests need ../shared/rxe-vm beside the repository" >&2
  exit 1
fi
for p in /usr/sbin/sshd ssh ssh-keygen; do
  command -v "$p" >/dev/null || { echo "test-two-hosts: $p missing (scripts/install-deps.sh installs openssh)" >&2; exit 1; }
done
build=$(pwd)
if [ $# -eq 0 ]; then
  [ -x tests/mp/run-mp-tests.sh ] && [ -x tests/mp/mp_basic ] || {
    echo "test-two-hosts: run from a build directory after make check" >&2
    exit 1
  }
fi
out=${TWO_HOSTS_OUT:-$build/two-hosts}
mkdir -p "$out" && out=$(cd "$out" && pwd)
rm -rf "$out/mp-logs"  # the failed jobs of an earlier run
run=$(mktemp -d "${TMPDIR:-/tmp}/two-hosts.XXXXXX") || exit 1
a_pid= b_pid=
cleanup() {
  # Each guest's runner kills its QEMU when it is signalled.
  [ -n "$a_pid" ] && kill "$a_pid" 2>/dev/null
  [ -n "$b_pid" ] && kill "$b_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Keys for this run only: the client's, and one host key for both guests.
ssh-keygen -q -t ed25519 -N '' -C two-hosts -f "$run/id" || exit 1
ssh-keygen -q -t ed25519 -N '' -C two-hosts-host -f "$run/host_key" || exit 1
cp "$run/id.pub" "$run/authorized_keys"
echo "$host_a,$host_b,$ip_a,$ip_b $(cut -d' ' -f1,2 "$run/host_key.pub")" > "$run/known_hosts"
cat > "$run/sshd_config" <<EOF
ListenAddress $ip_b
HostKey $run/host_key
PidFile /run/two-hosts-sshd.pid
AuthorizedKeysFile $run/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
EOF
# ServerAlive: a guest that vanishes ends its ssh session (and so mpirun's
# daemon link) within a minute instead of never; the limits are wide because
# the emulated guests can stall for seconds while the machine is loaded.
cat > "$run/ssh_config" <<EOF
Host *
  IdentityFile $run/id
  UserKnownHostsFile $run/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 60
  ServerAliveInterval 10
  ServerAliveCountMax 6
  LogLevel ERROR
EOF
printf '#!/bin/sh\nexec ssh -F %s "$@"\n' "$run/ssh_config" > "$run/ssh"
chmod 0755 "$run/ssh"

if [ $# -eq 0 ]; then
  # The suite, 2 ranks per guest (3 for mp_compat: 2 + 1), in both passes.
  cat > "$run/suite.sh" <<EOF
#!/usr/bin/env bash
export MP_NPS=4 MP_MPI_NPS=4 MP_ERROR_NP=4 MP_EXPECT_NODES=2 MP_TIMEOUT=\${MP_TIMEOUT:-900}
export MP_MPIRUN_ARGS="\$TWO_HOSTS_MPIRUN_ARGS" MP_LOGDIR=$out/mp-logs
# The emulated CPU is slow: twenty thousand operations in flight.
export MP_INFLIGHT=20000
status=0
# Each guest's rxe0 counters, to tell a lost packet (one guest's sent_pkts
# above the other's rcvd_pkts) from a spurious retransmission
# (completer_retry_err, duplicate_request) per repetition.
counters() {
  local c='cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for c in *; do printf "%s=%s " "\$c" "\$(cat \$c)"; done'
  echo "\$(sh -c "\$c") | \$("\$TWO_HOSTS_SSH" "\$TWO_HOSTS_B" "\$c" 2>/dev/null)"
}
delta() {  # the counters that changed between two snapshots, per guest
  awk -v a="\$1" -v b="\$2" 'BEGIN {
    split(a, ha, "[|]"); split(b, hb, "[|]")
    for (g = 1; g <= 2; g++) {
      n = split(ha[g], x, " "); split(hb[g], y, " "); out = ""
      for (i = 1; i <= n; i++) { split(x[i], kv, "="); split(y[i], kw, "=")
        if (kw[2] - kv[2] != 0) out = out " " kv[1] "=" kw[2] - kv[2] }
      printf "  %s:%s\n", (g == 1 ? "rxea" : "rxeb"), out
    }
  }'
}
# TWO_HOSTS_REPEAT=N runs the verbs pass N times in this one boot and stops
# at the first failure (a flaky program shows itself in one boot).
repeat=\${TWO_HOSTS_REPEAT:-1}
for i in \$(seq 1 "\$repeat"); do
  before=\$(counters)
  MP_MODES=hosts-verbs MP_TESTS="${TWO_HOSTS_TESTS:-}" ./tests/mp/run-mp-tests.sh || status=1
  if [ "\$repeat" -gt 1 ]; then
    echo "repetition \$i of \$repeat: \$([ \$status = 0 ] && echo passed || echo FAILED); rxe0 counters that changed:"
    delta "\$before" "\$(counters)"
    [ \$status = 0 ] || break
  fi
done
if [ "${TWO_HOSTS_UCX_TESTS:-}" != none ]; then
  MP_MODES=hosts-ucx MP_TESTS="${TWO_HOSTS_UCX_TESTS:-${TWO_HOSTS_TESTS:-}}" \
    MP_MPIRUN_ARGS="\$MP_MPIRUN_ARGS \$TWO_HOSTS_UCX_ARGS" ./tests/mp/run-mp-tests.sh || status=1
fi
exit \$status
EOF
  chmod 0755 "$run/suite.sh"
  set -- "$run/suite.sh"
fi

# A free port on the loopback for the link.
port=
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 20000))
  ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { port=$p; break; }
done
[ -n "$port" ] || { echo "test-two-hosts: no free port" >&2; exit 1; }

limit=${TWO_HOSTS_TIMEOUT:-3600}
export RXE_VM_SMP=${RXE_VM_SMP:-1} RXE_VM_MEM=${RXE_VM_MEM:-1G}
export RXE_VM_ENV="${RXE_VM_ENV:-} MP_TIMEOUT MP_SEED TWO_HOSTS_OUT TWO_HOSTS_CLOCK TWO_HOSTS_VERBS_TIMEOUT TWO_HOSTS_REPEAT"
export TWO_HOSTS_OUT=$out
# rxeb listens on the link, rxea connects (QEMU wants the listener first).
RXE_VM_NETDEV=socket-listen:$port RXE_VM_HOSTNAME=$host_b RXE_VM_IP4=$ip_b/24 RXE_VM_TIMEOUT=$((limit + 120)) \
  "$vm" "$self" --guest b "$run" > "$run/b.out" 2>&1 &
b_pid=$!
for _ in $(seq 1 100); do
  ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
  kill -0 "$b_pid" 2>/dev/null || break
  sleep 0.1
done
RXE_VM_NETDEV=socket-connect:$port RXE_VM_HOSTNAME=$host_a RXE_VM_IP4=$ip_a/24 RXE_VM_TIMEOUT=$limit RXE_VM_RW="$out" \
  "$vm" "$self" --guest a "$run" "$@" &
a_pid=$!
wait "$a_pid"
rc=$?
a_pid=
# rxeb powers off when its sshd is stopped; a scenario may have powered it off already.
for _ in $(seq 1 60); do kill -0 "$b_pid" 2>/dev/null || break; sleep 1; done
if kill -0 "$b_pid" 2>/dev/null; then
  echo "test-two-hosts: $host_b still up a minute after $host_a finished; stopping it" >&2
  kill "$b_pid"
fi
wait "$b_pid"
b_rc=$?
b_pid=
if [ "$rc" -ne 0 ]; then
  echo "----- $host_b (exit $b_rc) -----"
  tail -n 30 "$run/b.out"
fi
echo "test-two-hosts: exit $rc"
exit "$rc"
