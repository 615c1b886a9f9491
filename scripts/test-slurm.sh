#!/usr/bin/env bash
# A one-node Slurm cluster for the multi-process suite: writes a minimal
# slurm.conf and a munge key in a temporary directory, starts munged,
# slurmctld and slurmd (as root, in the foreground of this script, nothing
# installed as a service), runs a subset of tests/mp under
# `srun --mpi=pmix` at np 2 and 4, and stops the daemons and removes the
# directory on exit. Run from the build directory after make check.
#
#   scripts/test-slurm.sh              # the subset below
#   scripts/test-slurm.sh CMD [ARGS]   # CMD instead, with SLURM_CONF set
#
# Modes: shm, ucx (one virtual node per rank, ARMCI_VNODE_SIZE=1) and mixed
# (virtual nodes of 2 ranks: shared memory within, UCX between), so the
# node map the library builds from Slurm's PMIx server is exercised with one
# node, one per rank, and two per node.
# Environment: SLURM_TESTS (programs, default below), SLURM_MODES,
# SLURM_NPS, MP_TIMEOUT (s per job, default 180).
# Exit status: the runner's (0 when every job passed).
set -uo pipefail
build=$(pwd)
if [ $# -eq 0 ] && ! { [ -x tests/mp/run-mp-tests.sh ] && [ -x tests/mp/mp_basic ]; }; then
  echo "test-slurm: run from a build directory after make check" >&2
  exit 1
fi
for p in munged slurmctld slurmd srun; do
  command -v "$p" >/dev/null || PATH=$PATH:/usr/sbin command -v "$p" >/dev/null ||
    { echo "test-slurm: $p missing (scripts/install-deps.sh installs slurmctld, slurmd, munge)" >&2; exit 1; }
done
export PATH=$PATH:/usr/sbin
[ "$(id -u)" -eq 0 ] || { echo "test-slurm: the daemons run as root here; run as root" >&2; exit 1; }

run=$(mktemp -d "${TMPDIR:-/tmp}/test-slurm.XXXXXX") || exit 1
pids=()  # munged, slurmctld, slurmd: stopped in the reverse order
# This run's processes that are no child of ours: the step daemons
# (slurmstepd), found by the SLURM_CONF they inherited from slurmd.
strays() {
  grep -lsz "^SLURM_CONF=$run/slurm.conf\$" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
}
cleanup() {
  local i p
  # Steps still finishing need slurmctld and munge: let them end first.
  for _ in $(seq 1 20); do [ -z "$(strays)" ] && break; sleep 0.5; done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill "$p" 2>/dev/null
    for _ in $(seq 1 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  for p in $(strays); do kill -9 "$p" 2>/dev/null; done
  rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Free ports on the loopback for slurmctld and slurmd.
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 20000))
    ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
  done
  return 1
}
ctl_port=$(free_port) && d_port=$(free_port) || { echo "test-slurm: no free port" >&2; exit 1; }
[ "$ctl_port" != "$d_port" ] || d_port=$((ctl_port + 1))
node=$(hostname -s)

# munge with its own key, socket and files, so a system munged is not touched.
dd if=/dev/urandom of="$run/munge.key" bs=1024 count=1 status=none
chmod 0600 "$run/munge.key"
mkdir -m 0700 "$run/munge"
munged --force --foreground --key-file="$run/munge.key" --socket="$run/munge/socket" \
  --pid-file="$run/munge/pid" --log-file="$run/munge/log" --seed-file="$run/munge/seed" \
  >"$run/munged.out" 2>&1 &
pids+=($!)

mkdir -p "$run/state" "$run/spool" "$run/tmp"
# CPUs=2 as on the machine; jobs of 4 ranks use --overcommit (the runner adds
# it). No cgroups: proctrack/linuxproc and task/none work in a container.
cat >"$run/slurm.conf" <<EOF
ClusterName=armci-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$run/munge/socket
StateSaveLocation=$run/state
SlurmdSpoolDir=$run/spool
# Also the PMIx plugin's per-step directories (else /tmp/spmix_appdir_*).
TmpFS=$run/tmp
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmctldLogFile=$run/slurmctld.log
SlurmdLogFile=$run/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName=$node NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
export SLURM_CONF=$run/slurm.conf
for _ in $(seq 1 50); do [ -S "$run/munge/socket" ] && break; sleep 0.1; done
[ -S "$run/munge/socket" ] || { echo "test-slurm: munged did not start:"; cat "$run/munged.out" "$run/munge/log"; exit 1; } >&2
slurmctld -D -i >"$run/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$node" >"$run/slurmd.out" 2>&1 &
pids+=($!)
up=0
for _ in $(seq 1 60); do
  sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)' && { up=1; break; }
  sleep 1
done
if [ $up = 0 ]; then
  echo "test-slurm: node $node not idle after 60 s:" >&2
  sinfo -N >&2
  tail -n 20 "$run/slurmctld.log" "$run/slurmd.log" "$run/slurmctld.out" "$run/slurmd.out" >&2
  exit 1
fi
echo "test-slurm: slurmctld and slurmd up for node $node; srun --mpi=list: $(srun --mpi=list 2>&1 | tr -s '\n ' ' ')"

if [ $# -gt 0 ]; then
  "$@"
  exit
fi
MP_LAUNCHER=srun MP_MODES=${SLURM_MODES:-shm ucx mixed} MP_NPS=${SLURM_NPS:-2 4} MP_MPI_NPS=${SLURM_NPS:-2 4} \
  MP_TESTS=${SLURM_TESTS:-mp_basic mp_nonblocking mp_msg mp_groups mp_with_mpi:armci-first} \
  MP_LOGDIR="$build/slurm-logs" tests/mp/run-mp-tests.sh | tee "$run/suite.out"
rc=${PIPESTATUS[0]}
# Every job must have been one of slurmctld's (a runner that fell back to
# mpirun would pass without testing srun).
ran=$(awk '/^[0-9]+ passed, [0-9]+ failed/ {print $1 + $3}' "$run/suite.out")
done_jobs=$(scontrol -o show jobs 2>/dev/null | grep -c '^JobId=')
echo "test-slurm: slurmctld ran $done_jobs job(s) for the runner's ${ran:-0}"
if [ "${ran:-0}" -eq 0 ] || [ "$done_jobs" -lt "$ran" ]; then
  echo "test-slurm: fewer jobs under Slurm than the runner ran"
  echo "0 passed, 1 failed"
  rc=1
fi
if [ $rc -ne 0 ]; then
  echo "----- slurmd log -----"
  tail -n 30 "$run/slurmd.log"
fi
exit $rc
