#!/usr/bin/env bash
# scripts/sanitize.sh asan|tsan: builds the library and its tests with a
# sanitizer in a directory of their own (build-asan/ or build-tsan/, or
# $ARMCI_SANITIZE_BUILD_DIR) and runs the unit tests and the multi-process
# data tests in the quick modes (shm, ucx, ucx-buffered).
#
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer (leaks included)
#   tsan: ThreadSanitizer (the application's thread against the helper)
#
# UCX, PMIx and Open MPI are not instrumented: their own reports are
# suppressed (scripts/sanitizers/*.supp), ours are not. Any report fails
# the run. MP_MODES, MP_NPS, MP_TESTS narrow or widen the multi-process part
# (see tests/mp/run-mp-tests.sh.in); SANITIZE_UNIT=0 skips the unit tests.
set -euo pipefail
kind=${1:-}
case $kind in
  asan) flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" ;;
  tsan) flags="-fsanitize=thread" ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan" >&2
    exit 2
    ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ARMCI_SANITIZE_BUILD_DIR:-$top/build-$kind}
supp=$top/scripts/sanitizers
jobs=$(($(nproc) < 2 ? 1 : 2))

cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
  autoreconf -fi >/dev/null
fi
mkdir -p "$build"
cd "$build"
# Fortran and the MPI-based extras stay out: the sanitizer runtimes and
# gfortran's or MPI's own start-up add nothing about this library.
[ -f Makefile ] || "$top/configure" --quiet --disable-fortran \
  CFLAGS="-g -O1 $flags" CXXFLAGS="-g -O1 $flags" LDFLAGS="$flags"
data_tests="mp_basic mp_acc mp_nonblocking mp_random mp_rmw mp_strided mp_aggregate mp_regcache mp_groups mp_msg"
tests=${MP_TESTS:-$data_tests mp_errors}
programs="libarmci.la"
for t in $tests; do programs="$programs tests/mp/${t%%:*}"; done
[ "${SANITIZE_UNIT:-1}" = 0 ] || programs="$programs tests/unit/unit_tests"
# shellcheck disable=SC2086
make -j"$jobs" --no-print-directory $programs >/dev/null

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# A sanitizer's report must fail the job: exit codes, never "recover".
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=86:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export TSAN_OPTIONS="suppressions=$supp/tsan.supp:exitcode=66:halt_on_error=0:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
# UCX's memory hooks (libucm) intercept madvise, also in glibc's thread exit,
# and take a lock there that TSan's runtime no longer tracks for that thread:
# the unit tests crashed at exit. Nothing here needs UCX's registration cache.
if [ "$kind" = tsan ]; then
  export UCX_MEM_MMAP_HOOK_MODE=${UCX_MEM_MMAP_HOOK_MODE:-none} UCX_MEM_MALLOC_HOOKS=${UCX_MEM_MALLOC_HOOKS:-no}
fi

status=0
if [ "${SANITIZE_UNIT:-1}" != 0 ]; then
  echo "== unit tests under $kind"
  ./tests/unit/unit_tests --gtest_brief=1 || status=1
fi
echo "== multi-process tests under $kind"
MP_MODES=${MP_MODES:-shm ucx ucx-buffered} MP_TESTS="$tests" MP_TIMEOUT=${MP_TIMEOUT:-600} \
  MP_LOGDIR=${MP_LOGDIR:-$build/tests/mp/mp-logs} tests/mp/run-mp-tests.sh || status=1
# A report in a passing job (exit code overridden by a launcher) still counts.
if grep -lE "ERROR: (Address|Leak|Thread)Sanitizer|WARNING: ThreadSanitizer|runtime error:" \
  "${MP_LOGDIR:-$build/tests/mp/mp-logs}"/*.err 2>/dev/null; then
  echo "sanitize: reports in the logs above" >&2
  status=1
fi
echo "sanitize $kind: $([ $status -eq 0 ] && echo clean || echo FAILED)"
exit $status
