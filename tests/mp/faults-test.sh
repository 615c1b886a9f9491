#!/bin/bash
# faults-test.sh: fault cases that need their own set-up (make check runs it
# from the build directory; MP_BINDIR, MP_MPIRUN override the paths).
# FAULTS_PARTS picks the parts below (default "1 2 3 4"), FAULTS_MODES the
# network modes of parts 2 and 4 (default "shm ucx"; also verbs and
# verbs-mixed, as in run-mp-tests.sh, which scripts/test-verbs-vm.sh runs
# in the Soft-RoCE VM with FAULTS_PARTS="2 4").
#
#  1. /dev/shm too small: in a private mount namespace (unshare -m) with a
#     small tmpfs on /dev/shm.
#     By default (ARMCI_SHM_FALLBACK=memfd) segments that do not fit are made
#     outside /dev/shm, in memory files neighbours map through /proc: a
#     one-node job of 4 ranks in a 1 MiB /dev/shm allocates 2 x 20 MiB and
#     moves every kind of transfer between every pair, checked in memory;
#     said once, nothing left in /dev/shm.
#     With ARMCI_SHM_FALLBACK=error, ARMCI_Malloc of more than fits in 8 MiB
#     must fail on every rank with an armci: error naming ARMCI_Malloc, the
#     size asked, the space left and the setting to change; a job where only
#     some ranks fit must fail on all of them; an allocation that fits must
#     work; /dev/shm must be empty afterwards. Spare segments
#     (ARMCI_MALLOC_KEEP) are given back, on every rank, before an allocation
#     that needs their room fails.
#     Network fallback (ARMCI_SHM_FALLBACK=network; 4 ranks, two virtual
#     nodes over UCX, a 32 MiB /dev/shm): the first node's ranks ask 20 MiB
#     each, which cannot both fit, so that node's parts are made in network
#     memory, said once; every kind of transfer between every pair is
#     checked in memory; /dev/shm is empty afterwards. With
#     ARMCI_SHM_FALLBACK=error the same ARMCI_Malloc fails on every rank,
#     naming the size, the space left and the setting.
#     Virtual nodes over UCX in an 8, 16 or 17 MiB /dev/shm, where UCX's own
#     posix segments do not fit (it is started again without them) and the
#     start-up segments neither (they go outside /dev/shm): the job works,
#     data checked, nothing left. A shared-memory-only job starts in a 1 MiB
#     /dev/shm (no network layer shared memory needed).
#  2. A rank killed (SIGKILL) while the others are in ARMCI_Barrier, wait in
#     ARMCI_Lock for a mutex it holds, or ARMCI_Wait on a get from it, with
#     each mode of FAULTS_MODES: every survivor ends with an error naming
#     the dead rank, none reaches the end, and the job is over within 10 s
#     of the death (from the victim's "dying at" line to mpirun's exit).
#     ARMCI_Error on one rank while the others are in ARMCI_Free: armci:
#     errors naming ARMCI_Free, no uncaught C++ exception.
#  3. A rank killed from outside while every rank loops over Malloc/Free:
#     nothing of the job is left in /dev/shm (or armci_cleanup removes it).
#  4. ARMCI_ON_PEER_FAILURE=return, each mode of FAULTS_MODES: a rank dies
#     holding a mutex; every call that needs it returns ARMCI_ERR_PEER_DEAD
#     (mp_faults return checks each code and that the survivors still move
#     correct data), ARMCI_Finalize returns, the errors name the dead rank,
#     /dev/shm keeps nothing of the job. And the Malloc/Free loop of 3 in
#     return mode: the survivors return from the failed call and finish,
#     leaving nothing in /dev/shm (no armci_cleanup needed).
# The launcher keeps the job running after a death (orte_enable_recovery),
# so what ends the survivors is the library's own detection.
set -u
bindir=${MP_BINDIR:-$PWD/tests/mp}
tooldir=${MP_TOOLDIR:-$PWD/src/tools}
mpirun=${MP_MPIRUN:-$(command -v mpirun)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
parts=${FAULTS_PARTS:-1 2 3 4}
modes=${FAULTS_MODES:-shm ucx}
want_part() { [[ " $parts " == *" $1 "* ]]; }
# The settings of each mode, as in run-mp-tests.sh.
declare -A mode_env=([shm]="ARMCI_SHM=1" [ucx]="ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=ucx"
  [verbs]="ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=verbs"
  [verbs-mixed]="ARMCI_SHM=1 ARMCI_VNODE_SIZE=2 ARMCI_NETWORK=verbs")
for mode in $modes; do
  [ -n "${mode_env[$mode]:-}" ] || { echo "faults-test: unknown mode '$mode' in FAULTS_MODES (known: ${!mode_env[*]})" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "PASS $1"; passed=$((passed + 1)); }
bad() {
  echo "FAIL $1: $2"
  failed=$((failed + 1))
  [ -f "$work/err" ] && tail -n 12 "$work/err" | sed 's/^/  | /'
}

# job NP SECONDS [VAR=VALUE...] -- ARGS: one mpirun job, output in $work/out, $work/err.
job() {
  local np=$1 secs=$2
  shift 2
  local -a xs=()
  while [ "$1" != "--" ]; do xs+=(-x "$1"); shift; done
  shift
  local -a recovery=(--mca orte_enable_recovery 1)
  [ "${NO_RECOVERY:-}" = 1 ] && recovery=()
  timeout -k 5 "$secs" "$mpirun" --oversubscribe "${recovery[@]}" -np "$np" "${xs[@]}" "$@" \
    >"$work/out" 2>"$work/err" </dev/null
}

# Seconds from the victim's death (the time mp_faults wrote to
# MP_DEATH_FILE) to now, just after the job ended.
since_death() {
  local t
  t=$(cat "$work/death" 2>/dev/null)
  [ -n "$t" ] && awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}
late() { awk -v s="$1" 'BEGIN { exit !(s > 10) }'; }

# ------------------------------------------------------------------ 1. /dev/shm too small
shm_case() {  # runs inside the private namespace: MiB, then the job's arguments
  mount -t tmpfs -o "size=$1m" tmpfs /dev/shm || exit 90
  shift
  "$@"
  local rc=$?
  ls -A /dev/shm >"$work/left"
  exit $rc
}
export -f shm_case job
export work mpirun bindir

# in_small_shm [norecovery] MIB JOB-ARGS...: the job in a private /dev/shm of
# MIB MiB (what it leaves there in $work/left); sets rc.
in_small_shm() {
  local NO_RECOVERY=
  [ "$1" = norecovery ] && { NO_RECOVERY=1; shift; }
  NO_RECOVERY=$NO_RECOVERY unshare -m bash -c "shm_case $*"
  rc=$?
}
# The first thing wrong with a job of NP ranks that had to work (with
# "moved", every rank moved its data too), or nothing.
not_worked() {
  if [ $rc -ne 0 ] || [ "$(grep -c '^PASS mp_faults' "$work/out")" -ne "$1" ]; then echo "exit status $rc"
  elif [ "${2:-}" = moved ] && [ "$(grep -c '^moved rank' "$work/out")" -ne "$1" ]; then
    echo "not every rank moved its data"
  elif [ -s "$work/left" ]; then echo "left in /dev/shm: $(tr '\n' ' ' <"$work/left")"
  fi
}
# The first thing wrong with a job whose ARMCI_Malloc had to fail on N ranks,
# each printing an error that matches PATTERN and gives the space left and
# SETTING, or nothing.
not_refused() {
  local nerr
  nerr=$(grep -c "$2" "$work/err")
  if [ $rc -ge 124 ]; then echo "not over within 60 s"
  elif [ "$nerr" -ne "$1" ]; then echo "$nerr of $1 ranks printed the ARMCI_Malloc error"
  elif ! grep -q "bytes free" "$work/err" || ! grep -q "$3" "$work/err"; then
    echo "the error does not give the space left and the setting"
  elif [ -s "$work/left" ]; then echo "left in /dev/shm: $(tr '\n' ' ' <"$work/left")"
  fi
}
# judge NAME [WHAT-IS-WRONG]: PASS when nothing is wrong.
judge() { if [ -n "${2:-}" ]; then bad "$1" "$2"; else ok "$1"; fi; }

if ! want_part 1; then :
elif ! unshare -m true 2>/dev/null; then
  bad "shm-full" "unshare -m is not permitted here (needs root or user namespaces); cannot test a full /dev/shm"
else
  in_small_shm norecovery 1 job 4 120 ARMCI_SHM=1 -- "$bindir/mp_faults" fallback 20480 256
  why=$(not_worked 4 moved)
  if [ -z "$why" ] && [ "$(grep -c 'shared segments are made outside it' "$work/err")" -ne 1 ]; then
    why="the fallback was not said exactly once"
  fi
  judge "shm-full np=4, one node, default fallback (2 x 20 MiB in a 1 MiB /dev/shm): memory files, data checked" "$why"
  for np in 2 4; do
    # 4 ranks x 3 MiB: the first ranks fit in 8 MiB, the last do not.
    kib=$((np == 2 ? 16384 : 3072))
    # With recovery, so that the launcher does not end the other ranks
    # before they print (and its exit status is 0 then: the lines count).
    in_small_shm 8 job $np 60 ARMCI_SHM=1 ARMCI_SHM_FALLBACK=error -- "$bindir/mp_faults" alloc 256 $kib
    if grep -q "^PASS" "$work/out"; then why="a rank ended normally"
    elif [ "$(grep -c '^allocated 256 KiB' "$work/out")" -ne $np ]; then why="the allocation that fits failed"
    elif grep -q "^allocated $kib KiB" "$work/out"; then why="a rank returned from the failed ARMCI_Malloc"
    else why=$(not_refused $np "ARMCI_Malloc: allocating $((kib * 1024)) bytes failed: rank [0-9]* could not reserve" "ARMCI_SHM=0")
    fi
    judge "shm-full np=$np (${kib} KiB per rank in an 8 MiB /dev/shm)" "$why"
  done
  # The first part (400 KiB a rank) stays spare after ARMCI_Free
  # (ARMCI_MALLOC_KEEP, capped by a share of the free /dev/shm); the second
  # (3700 KiB a rank) fits only once the spares are given back (it fails
  # when they are not: checked by hand with the release left out).
  in_small_shm norecovery 8 job 2 60 ARMCI_SHM=1 ARMCI_SHM_FALLBACK=error -- "$bindir/mp_faults" allocfree 400 3700
  why=$(not_worked 2)
  if [ -z "$why" ] && [ "$(grep -c '^allocated 3700 KiB' "$work/out")" -ne 2 ]; then
    why="the data was not read back on every rank"
  fi
  judge "shm-full: spare segments given back for an allocation that needs their room" "$why"
  mixed="ARMCI_SHM=1 ARMCI_VNODE_SIZE=2 ARMCI_NETWORK=ucx"
  # shellcheck disable=SC2086
  in_small_shm norecovery 32 job 4 120 $mixed ARMCI_SHM_FALLBACK=network -- "$bindir/mp_faults" fallback 20480 256
  why=$(not_worked 4 moved)
  nwarn=$(grep -c "rank 0: ARMCI_Malloc: /dev/shm is too small for this node's parts (20971520 bytes here)" "$work/err")
  if [ -z "$why" ] && { [ "$nwarn" -ne 1 ] || [ "$(grep -c 'is too small for this node' "$work/err")" -ne 1 ]; }; then
    why="not rank 0 alone said that its node fell back"
  fi
  judge "shm-fallback np=4 (2 x 20 MiB on one virtual node in a 32 MiB /dev/shm): network memory, data checked" "$why"
  # shellcheck disable=SC2086
  in_small_shm 32 job 4 60 $mixed ARMCI_SHM_FALLBACK=error -- "$bindir/mp_faults" fallback 20480 256
  if grep -q "^moved rank" "$work/out" || grep -q "^allocated" "$work/out"; then why="a rank returned from the failed ARMCI_Malloc"
  else why=$(not_refused 4 "ARMCI_Malloc: allocating [0-9]* bytes failed: rank [01] could not reserve 20971520 bytes" "ARMCI_SHM_FALLBACK=error")
  fi
  judge "shm-fallback=error np=4: ARMCI_Malloc fails on every rank" "$why"
  # UCX's own posix segments do not fit (8, 16 MiB: it starts again
  # without them), or the start-up segments do not (17 MiB): the job works.
  for mib in 8 16 17; do
    # shellcheck disable=SC2086
    in_small_shm norecovery $mib job 4 120 $mixed -- "$bindir/mp_faults" fallback 20480 256
    judge "virtual nodes over UCX in a $mib MiB /dev/shm: starts, data checked, nothing left" "$(not_worked 4 moved)"
  done
  in_small_shm norecovery 1 job 3 60 ARMCI_SHM=1 -- "$bindir/mp_faults" alloc 64
  judge "shm-only job in a 1 MiB /dev/shm" "$(not_worked 3)"
fi

# ------------------------------------------------------------------ 2. a rank dies
want_part 2 && for mode in $modes; do
  for c in barrier lock wait; do
    np=3
    rm -f "$work/death"
    # shellcheck disable=SC2086
    job $np 60 ${mode_env[$mode]} MP_DEATH_FILE="$work/death" -- "$bindir/mp_faults" "$c"
    rc=$?
    took=$(since_death)
    name="rank $((np - 1)) killed, survivors in $c, $mode"
    nerr=$(grep -cE "^armci: rank [0-9]+: ARMCI_[A-Za-z_]+: .*rank $((np - 1)) died" "$work/err")
    if [ $rc -ge 124 ]; then bad "$name" "not over within 60 s (exit status $rc)"
    elif [ -z "$took" ]; then bad "$name" "rank $((np - 1)) never got to its death"
    elif grep -q "^survived" "$work/out"; then bad "$name" "a survivor got past the death"
    elif [ "$nerr" -ne $((np - 1)) ]; then bad "$name" "$nerr of $((np - 1)) survivors named the dead rank"
    elif late "$took"; then bad "$name" "the job ended ${took} s after the death (more than 10 s)"
    else ok "$name (over ${took} s after the death; $(grep -oE 'ARMCI_[A-Za-z_]+:' "$work/err" | sort -u | xargs))"; fi
  done
done

# ARMCI_Error on one rank while the others are in ARMCI_Free: each survivor
# ends with an armci: error naming ARMCI_Free (the PMIx exchange failing,
# or the rank gone), never an uncaught C++ exception.
want_part 2 && for mode in $modes; do
  # shellcheck disable=SC2086
  job 3 60 ${mode_env[$mode]} -- "$bindir/mp_faults" errorfree
  rc=$?
  name="ARMCI_Error on rank 2 while the others are in ARMCI_Free, $mode"
  nerr=$(grep -cE "^armci: rank [01]: ARMCI_Free: " "$work/err")
  if [ $rc -ge 124 ]; then bad "$name" "not over within 60 s"
  elif grep -qE "terminate called|what\(\)" "$work/err"; then bad "$name" "an uncaught exception"
  elif grep -q "^survived" "$work/out"; then bad "$name" "a survivor got past ARMCI_Free"
  elif [ "$nerr" -ne 2 ]; then bad "$name" "$nerr of 2 survivors printed an ARMCI_Free error"
  else ok "$name"; fi
done

# ------------------------------------------------------------------ 3. killed inside Malloc
# A 3-rank Malloc/Free loop (settings "$@") whose rank 1 is killed at a
# random moment; sets victim (its pid) and rc (the job's status).
kill_rank1_in_mallocloop() {
  job 3 60 "$@" MP_PIDDIR="$work/pids" -- "$bindir/mp_faults" mallocloop 100000 &
  local launcher=$!
  for _ in $(seq 100); do [ -s "$work/pids/rank.1" ] && break; sleep 0.1; done
  victim=$(cat "$work/pids/rank.1" 2>/dev/null)
  # Somewhere inside the loop: most of a round is Malloc's exchange and barrier.
  sleep "0.$((RANDOM % 5))"
  [ -n "$victim" ] && kill -9 "$victim"
  wait $launcher
  rc=$?
}

job_left() {  # what of the job whose pids are in $work/pids is still in /dev/shm
  local pids
  pids=$(cat "$work/pids"/rank.* 2>/dev/null | tr '\n' '|')
  [ -n "$pids" ] && ls /dev/shm | grep -E "^armci-[0-9a-f]{16}-(${pids%|})-" || true
}
mkdir -p "$work/pids"
want_part 3 && for round in 1 2 3; do
  rm -f "$work/pids"/*
  kill_rank1_in_mallocloop ARMCI_SHM=1
  left=$(job_left)
  name="rank 1 killed in a Malloc/Free loop (round $round)"
  if [ -z "$victim" ]; then bad "$name" "rank 1 never started"
  elif [ $rc -ge 124 ]; then bad "$name" "not over within 60 s"
  elif [ -n "$left" ]; then
    # What a rank killed between making its segment and the others mapping
    # it leaves: armci_cleanup must remove it.
    "$tooldir/armci_cleanup" >/dev/null
    left=$(job_left)
    if [ -n "$left" ]; then bad "$name" "left in /dev/shm even after armci_cleanup: $left"
    else ok "$name (armci_cleanup removed what the killed rank left)"; fi
  else ok "$name"; fi
done

# ------------------------------------------------------------------ 4. return mode
want_part 4 && for mode in $modes; do
  rm -f "$work/pids"/*
  # shellcheck disable=SC2086
  job 3 60 ${mode_env[$mode]} ARMCI_ON_PEER_FAILURE=return MP_PIDDIR="$work/pids" -- "$bindir/mp_faults" return
  rc=$?
  name="return mode: rank 2 dies holding a mutex, survivors get error codes, $mode"
  nerr=$(grep -cE "^armci: rank [01]: ARMCI_Put: rank 2 died .*returning ARMCI_ERR_PEER_DEAD" "$work/err")
  left=$(job_left)
  if [ $rc -ge 124 ]; then bad "$name" "not over within 60 s"
  elif grep -qE "terminate called|what\(\)|^FAIL rank" "$work/err" "$work/out"; then bad "$name" "a check failed or an exception escaped"
  elif [ "$(grep -c '^returned rank' "$work/out")" -ne 2 ]; then bad "$name" "not both survivors got to the end"
  elif [ "$nerr" -ne 2 ]; then bad "$name" "$nerr of 2 survivors named the dead rank and ARMCI_Put"
  elif [ -n "$left" ]; then bad "$name" "left in /dev/shm: $left"
  else ok "$name (barrier saw the death after $(sed -n 's/^barrier saw the death after \([0-9.]*\) s.*/\1/p' "$work/out" | sort -n | tail -n 1) s)"; fi
done
want_part 4 && for mode in $modes; do
  rm -f "$work/pids"/*
  # shellcheck disable=SC2086
  kill_rank1_in_mallocloop ${mode_env[$mode]} ARMCI_ON_PEER_FAILURE=return
  left=$(job_left)
  name="return mode: rank 1 killed in a Malloc/Free loop, $mode"
  if [ -z "$victim" ]; then bad "$name" "rank 1 never started"
  elif [ $rc -ge 124 ]; then bad "$name" "not over within 60 s"
  elif grep -qE "terminate called|what\(\)|^FAIL rank" "$work/err" "$work/out"; then bad "$name" "a check failed or an exception escaped"
  elif [ "$(grep -c '^returned rank' "$work/out")" -ne 2 ]; then bad "$name" "not both survivors returned from the failed call"
  elif [ -n "$left" ]; then bad "$name" "left in /dev/shm: $left"
  else ok "$name"; fi
done

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
