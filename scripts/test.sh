#!/usr/bin/env bash
# The test command of the README (CI runs it: .ci/run).
#
#   scripts/test.sh           installs dependencies, builds, and runs the whole
#                             suite: make check (unit tests, every network mode
#                             and process count, Fortran, NAS kernels, ...),
#                             stress, one CPU, Slurm, the sanitizers, raw verbs
#                             in the Soft-RoCE VM, two hosts and a lost host
#   scripts/test.sh --quick   builds and runs the unit tests and the
#                             multi-process suite at np 2 in shm and ucx: no
#                             VM, no sanitizers, a few minutes
#
# Parts can be left out of the whole run (for a local run; CI runs all):
# ARMCI_TEST_STRESS=0, ARMCI_TEST_SLURM=0, ARMCI_TEST_SANITIZERS=0,
# ARMCI_TEST_VERBS=0, ARMCI_TEST_TWO_HOSTS=0; ARMCI_TEST_CHECK="tests/unit/unit_tests ..."
# runs only those tests of make check.
# It ends with each part's time and one line over every test that ran:
# "tests: N passed, M failed".
set -uo pipefail
quick=0
case ${1:-} in
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ARMCI_BUILD_DIR:-$top/build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

status=0
summary=()  # one line per part: name, seconds, result
logs=()     # the logs whose test counts make the closing line
started=$SECONDS
# part NAME LOG CMD [ARGS...]: runs CMD with its output on the terminal and
# in LOG (relative to the build directory), and records its time.
part() {
  local name=$1 log=$2 t0=$SECONDS rc
  shift 2
  "$@" 2>&1 | tee "$build/$log"
  rc=${PIPESTATUS[0]}
  summary+=("$(printf '%-22s %6d s  %s' "$name" $((SECONDS - t0)) "$([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)")")")
  logs+=("$build/$log")
  [ "$rc" = 0 ] || status=1
}
on() { [ "$quick" = 0 ] && [ "${!1:-1}" != 0 ]; }

mkdir -p "$build"
build_all() {
  "$top/scripts/install-deps.sh" && "$top/scripts/build.sh" &&
    # The test programs too (make check would build them first).
    make -C "$build" -j"$(nproc)" --no-print-directory check TESTS= >/dev/null
}
part build build.log build_all || {
  printf '%s\n' "${summary[@]}"
  echo "tests: 0 passed, 1 failed"
  exit 1
}
cd "$build" || exit 1

if [ "$quick" = 1 ]; then
  part unit tests/unit/unit_tests.log tests/unit/unit_tests --gtest_brief=1
  part "mp (np 2, shm ucx)" quick-mp.log env MP_NPS=2 MP_MPI_NPS=2 MP_MODES="shm ucx" tests/mp/run-mp-tests.sh
else
  # make check one test at a time, so each gets its time in the summary
  # (ARMCI_TEST_CHECK names some of them for a local run).
  # shellcheck disable=SC2016
  checks=${ARMCI_TEST_CHECK:-$(make -s --no-print-directory -f Makefile -f <(printf 'print-tests:\n\t@echo $(TESTS)\n') print-tests)}
  for t in $checks; do
    part "check: $(basename "${t%.sh}")" "$t.check.log" make -j1 check --no-print-directory VERBOSE=1 TESTS="$t"
    logs+=("$build/$t.log")  # the test's own log, which test-driver writes
  done
fi

# Stress: mp_random with many operations per rank at np 4, once in shm, UCX
# and host-assisted UCX (MP_RANDOM_OPS changes the count).
if on ARMCI_TEST_STRESS; then
  part stress stress.log env MP_RANDOM_OPS="${MP_RANDOM_OPS:-100000}" MP_MODES="shm ucx ucx-host" MP_NPS=4 \
    MP_TESTS=mp_random MP_TIMEOUT=300 tests/mp/run-mp-tests.sh
fi
# Two ranks confined to one CPU (as in a container with a one-CPU cpuset, or
# `taskset -c 0` and no binding): the collectives and waits take their
# shared-core paths at np 2, which a 2-core machine never gives them
# otherwise. Every rank must choose the same.
if [ "$quick" = 0 ]; then
  part one-cpu one-cpu.log env MP_MODES=shm MP_NPS=2 MP_TESTS="mp_msg mp_group_comm mp_windows" \
    MP_MPIRUN_ARGS="--bind-to none" taskset -c 0 tests/mp/run-mp-tests.sh
fi
# The launcher most clusters use: a one-node Slurm started for the run, jobs
# under srun --mpi=pmix (scripts/test-slurm.sh).
if on ARMCI_TEST_SLURM; then
  part slurm slurm.log "$top/scripts/test-slurm.sh"
fi
# AddressSanitizer + UndefinedBehaviorSanitizer: the unit tests and the data
# tests at np 2 in shm and UCX, built apart in build-asan/. The whole of
# scripts/sanitize.sh asan and tsan stays a local run; CI runs these subsets.
if on ARMCI_TEST_SANITIZERS; then
  part asan sanitize-asan.log env ARMCI_SANITIZE_BUILD_DIR="$build-asan" MP_NPS=2 MP_MODES="shm ucx" \
    MP_TESTS="mp_basic mp_acc mp_nonblocking mp_random mp_rmw mp_strided mp_aggregate mp_regcache mp_groups mp_msg mp_windows mp_win_reorder:combine mp_errors:range" \
    "$top/scripts/sanitize.sh" asan
  # ThreadSanitizer: the unit tests and the programs where the helper thread
  # and the application's thread meet (progress, nonblocking handles, the
  # host-assisted and buffered protocols, atomics, window queues).
  part tsan sanitize-tsan.log env ARMCI_SANITIZE_BUILD_DIR="$build-tsan" MP_NPS=2 MP_MODES="shm ucx" \
    MP_TESTS="mp_basic mp_nonblocking mp_random mp_rmw mp_aggregate mp_strided mp_win_reorder:combine" \
    "$top/scripts/sanitize.sh" tsan
fi
# The same suite over raw verbs, in the Soft-RoCE VM.
if on ARMCI_TEST_VERBS; then
  part "verbs VM" verbs-vm.log "$top/scripts/test-verbs-vm.sh"
fi
# Across two hosts: two Soft-RoCE guests joined by a private link, mpirun over
# ssh, 2 ranks per guest. The verbs VM above already runs every program with
# shared memory within a virtual node and verbs between (verbs-mixed), so
# here run the programs whose behaviour depends on real hosts: the node map
# and start-up from two PMIx daemons (mp_basic, mp_compat, mp_with_mpi), the
# node-scoped collectives (mp_msg, mp_group_comm), and one program of each
# kind of transfer (mp_rmw, mp_strided, mp_windows); over UCX, the start-up
# and the collectives. TWO_HOSTS_TESTS, TWO_HOSTS_UCX_TESTS change it
# (empty: everything).
if on ARMCI_TEST_TWO_HOSTS; then
  part "two hosts" two-hosts.log env \
    TWO_HOSTS_TESTS="${TWO_HOSTS_TESTS-mp_basic mp_msg mp_rmw mp_strided mp_windows mp_group_comm mp_with_mpi:armci-first mp_compat}" \
    TWO_HOSTS_UCX_TESTS="${TWO_HOSTS_UCX_TESTS-mp_basic mp_msg}" \
    "$top/scripts/test-two-hosts.sh"
  # A guest powered off mid-job: the survivors must report it within 10 s
  # (the heartbeat between hosts), over verbs and over UCX.
  part "host loss" two-hosts-loss.log env LOSS_NETWORKS="${LOSS_NETWORKS-verbs ucx}" "$top/tests/mp/two_hosts_loss.sh"
fi

# One closing line over every test that ran, from the logs' own summaries:
# GoogleTest's PASSED/FAILED lines, the runners' "N passed, M failed" lines,
# and for a make check test with neither, its automake result.
passed=0 failed=0
count() {
  local log=$1 p f trs=${1%.log}.trs
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
  p=$((p + $(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$log" | awk '{s+=$1} END {print s+0}')))
  f=$((f + $(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$log" | awk '{s+=$3} END {print s+0}')))
  if [ $((p + f)) -eq 0 ] && [ -f "$trs" ]; then
    grep -q '^:test-result: PASS' "$trs" && p=1
    grep -q '^:test-result: FAIL' "$trs" && f=1
  fi
  passed=$((passed + p)) failed=$((failed + f))
}
for log in "${logs[@]}"; do
  case $log in *.check.log) continue ;; esac  # make's own output: counted by the test's log
  [ -f "$log" ] && count "$log"
done
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo
echo "time per part:"
printf '  %s\n' "${summary[@]}"
printf '  %-22s %6d s\n' total $((SECONDS - started))
echo "tests: $passed passed, $failed failed"
exit "$status"
