#!/bin/bash
# run-fortran-tests.sh: the Fortran programs (`use armci`) under mpirun, in
# shared memory and over UCX, 2 and 4 processes. `make check` runs it from the
# build top directory. Each job passes when every rank printed its PASS line
# and the job exited 0.
#
# Environment (optional): FT_NPS (default "2 4"), FT_MODES ("shm ucx"),
# FT_TIMEOUT (seconds per job, 120), FT_BINDIR (default ./fortran).
set -u
mpirun=$(command -v mpirun || command -v prterun || true)
if [ -z "$mpirun" ]; then
  echo "run-fortran-tests: no mpirun/prterun found (install openmpi-bin)"
  exit 1
fi
bindir=${FT_BINDIR:-$PWD/fortran}
nps=${FT_NPS:-2 4}
modes=${FT_MODES:-shm ucx}
job_timeout=${FT_TIMEOUT:-120}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
passed=0 failed=0

mode_env() {
  case $1 in
    shm) echo "ARMCI_SHM=1" ;;
    ucx) echo "ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=ucx" ;;
    *) echo "run-fortran-tests: unknown mode $1" >&2; exit 2 ;;
  esac
}

for mode in $modes; do
  envs=()
  for kv in $(mode_env "$mode"); do envs+=(-x "$kv"); done
  for prog in tests/ft_calls examples/nbget_overlap; do
    name=${prog#*/}
    for np in $nps; do
      log=$(mktemp)
      env -u ARMCI_SHM -u ARMCI_VNODE_SIZE -u ARMCI_NETWORK \
        timeout "$job_timeout" "$mpirun" --oversubscribe -np "$np" "${envs[@]}" "$bindir/$prog" >"$log" 2>&1
      rc=$?
      npass=$(grep -c "^PASS $name rank" "$log")
      if [ "$rc" -eq 0 ] && [ "$npass" -eq "$np" ]; then
        echo "PASS $name np=$np $mode"
        passed=$((passed + 1))
      else
        echo "FAIL $name np=$np $mode (exit $rc, $npass of $np ranks passed)"
        tail -n 20 "$log" | sed 's/^/  | /'
        failed=$((failed + 1))
      fi
      rm -f "$log"
    done
  done
done

# Errors reach Fortran callers as they reach C ones: the job ends, non-zero,
# with the message naming the call, the argument and the rank.
for case in "error:ARMCI_Error: ft_calls: deliberate error from Fortran (code 7)" "badput:ARMCI_Put: argument 'bytes'"; do
  name=${case%%:*} expect=${case#*:}
  log=$(mktemp)
  env -u ARMCI_SHM -u ARMCI_VNODE_SIZE -u ARMCI_NETWORK \
    timeout "$job_timeout" "$mpirun" --oversubscribe -np 2 "$bindir/tests/ft_calls" "$name" >"$log" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -qF "$expect" "$log" && grep -q "rank 0" "$log"; then
    echo "PASS ft_calls $name (ends the job: $(grep -m1 -F "$expect" "$log" | cut -c1-100))"
    passed=$((passed + 1))
  else
    echo "FAIL ft_calls $name (exit $rc; expected a message with '$expect')"
    tail -n 20 "$log" | sed 's/^/  | /'
    failed=$((failed + 1))
  fi
  rm -f "$log"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
