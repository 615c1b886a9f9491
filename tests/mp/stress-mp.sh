#!/bin/bash
# stress-mp.sh: runs one multi-process test many times in one mode and
# process count, through run-mp-tests.sh, and counts the failed runs; the
# logs of failed runs are kept. For races seen once in many runs.
#
#   ../tests/mp/stress-mp.sh RUNS TEST MODE NP     (from the build directory)
#   e.g. ../tests/mp/stress-mp.sh 200 mp_rmw ucx-buffered 4
# MP_RUNNER names another runner; MP_MPIRUN_ARGS passes on, e.g.
# "-x MP_RMW_ITERS=2000" for longer runs.
set -u
runs=${1:?runs} test=${2:?test} mode=${3:?mode} np=${4:?np}
runner=${MP_RUNNER:-$PWD/tests/mp/run-mp-tests.sh}
[ -x "$runner" ] || { echo "stress-mp: no runner at $runner (run from the build directory)" >&2; exit 2; }
logdir=${MP_LOGDIR:-$PWD/tests/mp/mp-logs}/stress
mkdir -p "$logdir"
failed=0
start=$(date +%s)
for i in $(seq 1 "$runs"); do
  if ! out=$(MP_LOGDIR="$logdir/run$i" MP_MODES="$mode" MP_NPS="$np" MP_TESTS="$test" "$runner" 2>&1); then
    failed=$((failed + 1))
    echo "run $i FAILED:"
    echo "$out" | sed 's/^/  /'
  else
    rm -rf "${logdir:?}/run$i"
  fi
done
echo "$test np=$np mode=$mode: $runs runs, $failed failed, $(($(date +%s) - start)) s"
[ "$failed" -eq 0 ]
