#!/usr/bin/env bash
# The demonstration of the README: installs dependencies, builds, and runs the
# contiguous put/get/acc benchmark on 2 processes next to one-core memcpy,
# then the same benchmark source linked to ARMCI-MPI, with the ratio per size.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ARMCI_BUILD_DIR:-$top/build}
"$top/scripts/install-deps.sh"
"$top/scripts/build.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$build"
exec "$top/benchmarks/compare_armci_mpi.sh" "$build" "$@"
