#!/usr/bin/env bash
# Installs what building, testing and benchmarking need on Debian 12.
# Does nothing when everything is already there (so it is cheap to repeat).
set -euo pipefail
packages=(
  build-essential autoconf automake libtool pkg-config
  cmake              # make check: the CMake package test (tests/cmake)
  libpmix-dev libucx-dev ucx-utils libibverbs-dev libgtest-dev
  openmpi-bin libopenmpi-dev
  gfortran           # the Fortran module (use armci), its tests and nas-kernels/cg_f
  libarmci-mpi-dev   # the ARMCI-MPI reference the benchmarks compare with
  libglobalarrays-dev libscalapack-openmpi-dev gfortran # Global Arrays on this library (tests/ga; ga-config names scalapack)
  python3-matplotlib # benchmarks/plot.py: the CSVs as PNG charts (the demo draws one)
  openssh-server openssh-client  # scripts/test-two-hosts.sh: mpirun reaches the second guest over ssh
  slurmctld slurmd slurm-client munge  # scripts/test-slurm.sh: a one-node Slurm, jobs under srun --mpi=pmix
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}"
fi
