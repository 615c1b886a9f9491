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
# Stress: mp_random with many operations per rank at np 4, once in shm, UCX
# and host-assisted UCX (about 25 s in all; ARMCI_TEST_STRESS=0 skips
# it, MP_RANDOM_OPS changes the count).
if [ "${ARMCI_TEST_STRESS:-1}" != 0 ]; then
  MP_RANDOM_OPS=${MP_RANDOM_OPS:-100000} MP_MODES="shm ucx ucx-host" MP_NPS=4 MP_TESTS=mp_random \
    MP_TIMEOUT=300 tests/mp/run-mp-tests.sh 2>&1 | tee stress.log || status=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
# Two ranks confined to one CPU (as in a container with a one-CPU cpuset, or
# `taskset -c 0` and no binding): the collectives and waits take their
# shared-core paths at np 2, which the 2-core CI machine never gives them
# otherwise (about 15 s). Every rank must choose the same.
MP_MODES=shm MP_NPS=2 MP_TESTS="mp_msg mp_group_comm mp_windows" MP_MPIRUN_ARGS="--bind-to none" \
  taskset -c 0 tests/mp/run-mp-tests.sh 2>&1 | tee one-cpu.log || status=1
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# AddressSanitizer + UndefinedBehaviorSanitizer: the unit tests and the data
# tests at np 2 in shm and UCX, built apart in build-asan/ (about 12 minutes
# on an idle 2-core machine, mostly the build; ARMCI_TEST_SANITIZERS=0 skips
# it). The whole of scripts/sanitize.sh asan and tsan stays a local run;
# CI runs the subsets here.
if [ "${ARMCI_TEST_SANITIZERS:-1}" != 0 ]; then
  ARMCI_SANITIZE_BUILD_DIR="$build-asan" MP_NPS=2 MP_MODES="shm ucx" \
    MP_TESTS="mp_basic mp_acc mp_nonblocking mp_random mp_rmw mp_strided mp_aggregate mp_regcache mp_groups mp_msg mp_windows mp_win_reorder:combine mp_errors:range" \
    "$top/scripts/sanitize.sh" asan 2>&1 | tee sanitize-asan.log || status=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
# ThreadSanitizer: the unit tests and the programs where the helper thread
# and the application's thread meet (progress, nonblocking handles, the
# host-assisted and buffered protocols, atomics, window queues), at np 2 in
# shm and UCX, built apart in build-tsan/ (about 11 minutes on an idle
# 2-core machine; ARMCI_TEST_SANITIZERS=0 skips it too).
if [ "${ARMCI_TEST_SANITIZERS:-1}" != 0 ]; then
  ARMCI_SANITIZE_BUILD_DIR="$build-tsan" MP_NPS=2 MP_MODES="shm ucx" \
    MP_TESTS="mp_basic mp_nonblocking mp_random mp_rmw mp_aggregate mp_strided mp_win_reorder:combine" \
    "$top/scripts/sanitize.sh" tsan 2>&1 | tee sanitize-tsan.log || status=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
# The same suite over raw verbs, in the Soft-RoCE VM (ARMCI_TEST_VERBS=0 skips it
# for a quick local run; CI always runs it).
if [ "${ARMCI_TEST_VERBS:-1}" != 0 ]; then
  "$top/scripts/test-verbs-vm.sh" 2>&1 | tee verbs-vm.log || status=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
# Across two hosts: two Soft-RoCE guests joined by a private link, mpirun over
# ssh, 2 ranks per guest (ARMCI_TEST_TWO_HOSTS=0 skips it). The whole suite
# takes about 47 minutes there (timed per program in the README), so CI runs
# every program once over verbs (about 13 minutes; of mp_errors, whose 25
# cases check arguments before any transfer, one) and five over UCX (about 5)
# (TWO_HOSTS_TESTS, TWO_HOSTS_UCX_TESTS change it; empty: everything).
# mp_msg runs over both, although over verbs it failed once in three across
# hosts and the cause is not found (README, "Across hosts"): a known failure
# stays visible.
if [ "${ARMCI_TEST_TWO_HOSTS:-1}" != 0 ]; then
  TWO_HOSTS_TESTS=${TWO_HOSTS_TESTS-mp_basic mp_msg mp_acc mp_nonblocking mp_random mp_rmw mp_strided mp_aggregate mp_regcache mp_groups mp_windows mp_errors:range mp_with_mpi:armci-first mp_group_comm mp_ga mp_ga_fortran mp_compat} \
  TWO_HOSTS_UCX_TESTS=${TWO_HOSTS_UCX_TESTS-mp_basic mp_rmw mp_regcache mp_strided mp_msg} \
    "$top/scripts/test-two-hosts.sh" 2>&1 | tee two-hosts.log || status=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  # A guest powered off mid-job: the survivors must report it within 10 s
  # (the heartbeat between hosts), over verbs and over UCX.
  LOSS_NETWORKS=${LOSS_NETWORKS-verbs ucx} "$top/tests/mp/two_hosts_loss.sh" 2>&1 | tee two-hosts-loss.log || status=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

# One closing line over every suite, from the runners' own logs.
passed=0 failed=0
add_gtest() {  # the gtest summary lines of a log
  local p f
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | awk '{s+=$1} END {print s+0}')
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | awk '{s+=$1} END {print s+0}')
  passed=$((passed + p)) failed=$((failed + f))
}
add_runner() {  # the "N passed, M failed" lines of the multi-process runner
  local p f
  p=$(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$1" | awk '{s+=$1} END {print s+0}')
  f=$(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$1" | awk '{s+=$3} END {print s+0}')
  passed=$((passed + p)) failed=$((failed + f))
}
[ -f tests/unit/unit_tests.log ] && add_gtest tests/unit/unit_tests.log
[ -f tests/mp/run-mp-tests.sh.log ] && add_runner tests/mp/run-mp-tests.sh.log
[ -f stress.log ] && [ "${ARMCI_TEST_STRESS:-1}" != 0 ] && add_runner stress.log
if [ -f sanitize-asan.log ] && [ "${ARMCI_TEST_SANITIZERS:-1}" != 0 ]; then
  add_gtest sanitize-asan.log
  add_runner sanitize-asan.log
  if [ -f sanitize-tsan.log ]; then
    add_gtest sanitize-tsan.log
    add_runner sanitize-tsan.log
  fi
fi
# The Fortran programs and the NAS kernels (when configure built them).
for log in fortran/run-fortran-tests.sh.log nas-kernels/run-nas-tests.sh.log; do
  [ -f "$log" ] && add_runner "$log"
done
if [ -f verbs-vm.log ] && [ "${ARMCI_TEST_VERBS:-1}" != 0 ]; then
  add_gtest verbs-vm.log
  add_runner verbs-vm.log
fi
if [ "${ARMCI_TEST_TWO_HOSTS:-1}" != 0 ]; then
  for log in two-hosts.log two-hosts-loss.log; do
    [ -f "$log" ] && add_runner "$log"
  done
fi
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "tests: $passed passed, $failed failed"
exit "$status"
