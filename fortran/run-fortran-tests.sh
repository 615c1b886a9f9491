#!/bin/bash
# run-fortran-tests.sh: the Fortran programs (`use armci`) under mpirun, in
# shared memory and over UCX, 2 and 4 processes. `make check` runs it from the
# build top directory. Each job passes when every rank printed its PASS line
# and the job exited 0.
#
# Environment (optional): FT_NPS (default "2 4"), FT_MODES ("shm ucx mixed"),
# FT_TIMEOUT (seconds per job, 120), FT_BINDIR (default ./fortran).
set -u
source "$(dirname "$0")/../tests/job_lib.sh"
job_lib_init run-fortran-tests
bindir=${FT_BINDIR:-$PWD/fortran}
nps=${FT_NPS:-2 4}
modes=${FT_MODES:-shm ucx mixed}
job_timeout=${FT_TIMEOUT:-120}

mode_env() {
  case $1 in
    shm) echo "ARMCI_SHM=1" ;;
    ucx) echo "ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=ucx" ;;
    mixed) echo "ARMCI_SHM=1 ARMCI_VNODE_SIZE=2 ARMCI_NETWORK=ucx" ;;
    *) echo "run-fortran-tests: unknown mode $1" >&2; exit 2 ;;
  esac
}

for mode in $modes; do
  for prog in tests/ft_calls tests/ft_msg examples/nbget_overlap; do
    name=${prog#*/}
    for np in $nps; do
      # shellcheck disable=SC2046 # one word per VAR=value
      run_job "$job_timeout" "$np" $(mode_env "$mode") -- "$bindir/$prog"
      npass=$(grep -c "^PASS $name rank" "$job_log")
      if [ "$job_rc" -eq 0 ] && [ "$npass" -eq "$np" ]; then
        job_passed "$name np=$np $mode"
      else
        job_failed "$name np=$np $mode (exit $job_rc, $npass of $np ranks passed)"
      fi
    done
  done
done

# Errors reach Fortran callers as they reach C ones: the job ends, non-zero,
# with the message naming the call, the argument and the rank.
for case in "error:ARMCI_Error: ft_calls: deliberate error from Fortran (code 7)" "badput:ARMCI_Put: argument 'bytes'"; do
  name=${case%%:*} expect=${case#*:}
  run_job "$job_timeout" 2 -- "$bindir/tests/ft_calls" "$name"
  if [ "$job_rc" -ne 0 ] && [ "$job_rc" -ne 124 ] && grep -qF "$expect" "$job_log" && grep -q "rank 0" "$job_log"; then
    job_passed "ft_calls $name (ends the job: $(grep -m1 -F "$expect" "$job_log" | cut -c1-100))"
  else
    job_failed "ft_calls $name (exit $job_rc; expected a message with '$expect')"
  fi
done
job_summary
