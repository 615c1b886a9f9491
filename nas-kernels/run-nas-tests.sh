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
source "$(dirname "$0")/../tests/job_lib.sh"
job_lib_init run-nas-tests
bindir=${NAS_BINDIR:-$PWD/nas-kernels}
nps=${NAS_NPS:-1 2 4}
class=${NAS_CLASS:-S}
kernels=${NAS_KERNELS:-mg cg$([ -x "$bindir/cg_f" ] && echo " cg_f")}
variants=${NAS_VARIANTS:-mpi armci armci-nb}
job_timeout=${NAS_TIMEOUT:-180}

# job NAME NP ENV... -- ARGS...
job() {
  local name=$1 np=$2
  shift 2
  run_job "$job_timeout" "$np" "$@"
  if [ "$job_rc" -eq 0 ] && grep -q '^ Verification    =  SUCCESSFUL$' "$job_log"; then
    job_passed "$name ($(sed -n 's/^ Time in seconds =  //p' "$job_log") s)"
  else
    job_failed "$name (exit $job_rc)" 25
  fi
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
job_summary
