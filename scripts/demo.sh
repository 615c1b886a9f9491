#!/usr/bin/env bash
# The demonstration of the README: installs dependencies, builds, and runs the
# contiguous put/get/acc benchmark on 2 processes next to one-core memcpy,
# then the same benchmark source linked to ARMCI-MPI, with the ratio per size;
# writes the CSVs and draws them as one PNG (benchmarks/plot.py).
# Options go to contig_bench (e.g. -q for a quick run); RUNS, PLOT and the
# other variables of benchmarks/compare_armci_mpi.sh apply.
# With --ga first, the demo shows GA's own benchmark patterns instead
# (benchmarks/compare_ga.sh: perf2's contiguous and 2-D get/put/acc with its
# cold remote block, against ARMCI-MPI and against memcpy / scale-and-add);
# the options after it go to ga_bench.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ARMCI_BUILD_DIR:-$top/build}
"$top/scripts/install-deps.sh"
"$top/scripts/build.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$build"
results=${RESULTS_DIR:-$build/bench-results}
if [ "${1:-}" = --ga ]; then
  shift
  "$top/benchmarks/compare_ga.sh" "$build" "$@"
  echo
  echo "demo: tables above; CSVs: $results/ga.*.csv, merged $results/compare_ga.csv"
  [ "${PLOT:-1}" = 0 ] || echo "demo: the comparison as a picture: $results/plots/ga_bench.png"
  exit 0
fi
"$top/benchmarks/compare_armci_mpi.sh" "$build" "$@"
echo
echo "demo: tables above; CSVs: $results/libarmci.*.csv, $results/armci-mpi.*.csv, merged $results/compare.csv"
[ "${PLOT:-1}" = 0 ] || echo "demo: the comparison as a picture: $results/plots/contig_bench.png"
