# job_lib.sh: what the small job runners (fortran/, nas-kernels/) share:
# finding the launcher, starting one job with a clean ARMCI environment,
# counting passes and failures. Sourced, not run.
#
#   job_lib_init NAME       finds mpirun/prterun (exit 1 naming NAME if none)
#   run_job TIMEOUT NP ENV... -- PROGRAM ARGS...
#                           runs the job, its output in $job_log, its exit
#                           status in $job_rc (the caller removes $job_log
#                           through job_passed/job_failed)
#   job_passed LINE         prints "PASS LINE", counts it
#   job_failed LINE [N]     prints "FAIL LINE" and the log's last N lines (20)
#   job_summary             prints "P passed, F failed"; status 0 if none failed

job_lib_init() {
  job_mpirun=$(command -v mpirun || command -v prterun || true)
  if [ -z "$job_mpirun" ]; then
    echo "$1: no mpirun/prterun found (install openmpi-bin)"
    exit 1
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  job_passes=0 job_failures=0
}

run_job() {
  local timeout_s=$1 np=$2
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=(-x "$1"); shift; done
  shift
  job_log=$(mktemp)
  # The caller's ARMCI_* choices must not leak into a job that sets its own.
  env -u ARMCI_SHM -u ARMCI_VNODE_SIZE -u ARMCI_NETWORK \
    timeout "$timeout_s" "$job_mpirun" --oversubscribe -np "$np" "${envs[@]}" "$@" >"$job_log" 2>&1
  job_rc=$?
}

job_passed() {
  echo "PASS $1"
  job_passes=$((job_passes + 1))
  rm -f "$job_log"
}

job_failed() {
  echo "FAIL $1"
  tail -n "${2:-20}" "$job_log" | sed 's/^/  | /'
  job_failures=$((job_failures + 1))
  rm -f "$job_log"
}

job_summary() {
  echo "$job_passes passed, $job_failures failed"
  [ "$job_failures" -eq 0 ]
}
