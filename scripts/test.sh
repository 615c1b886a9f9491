#!/usr/bin/env bash
# The test command of the README: installs dependencies, builds, and runs the
# whole suite (unit tests and multi-process tests in every network mode).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ARMCI_BUILD_DIR:-$top/build}
"$top/scripts/install-deps.sh"
"$top/scripts/build.sh"
cd "$build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
make -j1 check --no-print-directory VERBOSE=1 || status=$?
# One closing line over both suites, from the runners' own logs.
passed=0 failed=0
if [ -f tests/unit/unit_tests.log ]; then
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' tests/unit/unit_tests.log | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' tests/unit/unit_tests.log | tail -1)
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0}))
fi
if [ -f tests/mp/run-mp-tests.sh.log ]; then
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' tests/mp/run-mp-tests.sh.log | tail -1)
  p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed*}
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0}))
fi
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "tests: $passed passed, $failed failed"
exit "$status"
