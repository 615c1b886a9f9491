#!/bin/bash
# run-nas-tests.sh: class S of every NAS kernel and variant at 1, 2 and 4
# processes (shared memory), armci-nb also at 8, and the ARMCI variants once
# over UCX; a job
# passes when it exits 0 and reports "Verification    =  SUCCESSFUL".
# `make check` runs it from the build top directory.
#
# Environment (optional): NAS_NPS (default "1 2 4"), NAS_CLASS (S),
# NAS_KERNELS (default "mg cg", plus "cg_f" when the Fortran CG is built),
# NAS_VARIANTS ("mpi armci armci-nb"), NAS_UCX (1: add the UCX jobs),
# NAS_NP8 (1: add armci-nb at 8 processes),
# NAS_TIMEOUT (seconds per job, 180), NAS_BINDIR (./nas-kernels).
set -u
mpirun=$(command -v mpirun || command -v prterun || true)
if [ -z "$mpirun" ]; then
  echo "run-nas-tests: no mpirun/prterun found (install openmpi-bin)"
  exit 1
fi
bindir=${NAS_BINDIR:-$PWD/nas-kernels}
nps=${NAS_NPS:-1 2 4}
class=${NAS_CLASS:-S}
kernels=${NAS_KERNELS:-mg cg$([ -x "$bindir/cg_f" ] && echo " cg_f")}
variants=${NAS_VARIANTS:-mpi armci armci-nb}
job_timeout=${NAS_TIMEOUT:-180}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
passed=0 failed=0

# job NAME NP ENV... -- ARGS...
job() {
  local name=$1 np=$2 log rc
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=(-x "$1"); shift; done
  shift
  log=$(mktemp)
  env -u ARMCI_SHM -u ARMCI_VNODE_SIZE -u ARMCI_NETWORK \
    timeout "$job_timeout" "$mpirun" --oversubscribe -np "$np" "${envs[@]}" "$@" >"$log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] && grep -q '^ Verification    =  SUCCESSFUL$' "$log"; then
    echo "PASS $name ($(sed -n 's/^ Time in seconds =  //p' "$log") s)"
    passed=$((passed + 1))
  else
    echo "FAIL $name (exit $rc)"
    tail -n 25 "$log" | sed 's/^/  | /'
    failed=$((failed + 1))
  fi
  rm -f "$log"
}

for k in $kernels; do
  # The Fortran CG has the armci-nb variant only.
  kv=$variants
  [ "$k" = cg_f ] && kv=armci-nb
  for v in $kv; do
    for np in $nps; do
      job "$k class $class $v np=$np shm" "$np" ARMCI_SHM=1 -- "$bindir/$k" --class "$class" --variant "$v"
    done
    # Eight ranks (oversubscribed): neighbours are not each other's only
    # peers, so a halo notification counted as an allgather's shows.
    if [ "$v" = armci-nb ] && [ "${NAS_NP8:-1}" = 1 ]; then
      job "$k class $class $v np=8 shm" 8 ARMCI_SHM=1 -- "$bindir/$k" --class "$class" --variant "$v"
    fi
    if [ "${NAS_UCX:-1}" = 1 ] && [ "$v" != mpi ]; then
      job "$k class $class $v np=4 ucx" 4 ARMCI_SHM=0 ARMCI_VNODE_SIZE=1 ARMCI_NETWORK=ucx -- \
        "$bindir/$k" --class "$class" --variant "$v"
    fi
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
