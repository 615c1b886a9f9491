# Shell functions the benchmark scripts share; sourced, never run:
#   source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
#   bench_init NAME "$@"; set -- "${bench_args[@]}"
#
# bench_init sets: bench_me (for messages), script_dir (benchmarks/ of the
# sources), build_dir (absolute; the first argument when it is not an
# option, else the current directory), results (RESULTS_DIR, default
# BUILD_DIR/bench-results), runs (RUNS, default 1), np (NP, default 2),
# mpirun_cmd + mpirun_flags (MPIRUN, MPIRUN_FLAGS), mpicc_cmd +
# armci_mpi_libs (MPICC, ARMCI_MPI_LIBS) and bench_args (the rest).
# REPORT=1 (or REPORT_DIR=DIR) makes a script that ends well leave a dated
# report too (bench_report).
# shellcheck shell=bash

bench_init() {
  bench_me=$1
  shift
  script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  build_dir=.
  if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    build_dir=$1
    shift
  fi
  bench_args=("$@")
  [ -d "$build_dir" ] || { echo "$bench_me: no build directory '$build_dir'" >&2; exit 2; }
  build_dir=$(cd "$build_dir" && pwd)
  runs=${RUNS:-1}
  case $runs in ''|*[!0-9]*|0) echo "$bench_me: RUNS must be a positive integer" >&2; exit 2 ;; esac
  np=${NP:-2}
  mpirun_cmd=${MPIRUN:-mpirun}
  read -r -a mpirun_flags <<< "${MPIRUN_FLAGS:---allow-run-as-root --oversubscribe}"
  mpicc_cmd=${MPICC:-mpicc}
  read -r -a armci_mpi_libs <<< "${ARMCI_MPI_LIBS:--larmci-openmpi}"
  results=${RESULTS_DIR:-$build_dir/bench-results}
  mkdir -p "$results" "$build_dir/benchmarks"
  bench_csvs=()
  bench_command="benchmarks/$bench_me.sh $*"
  if [ "${REPORT:-0}" != 0 ] || [ -n "${REPORT_DIR:-}" ]; then
    trap 'bench_status=$?; [ "$bench_status" -ne 0 ] || bench_report; exit "$bench_status"' EXIT
  fi
}

# bench_report: the CSVs of this script's runs and the charts of
# $results/plots, copied with a generated Markdown table per CSV
# (benchmarks/report.py) into REPORT_DIR, by default
# benchmarks/results/<UTC date>-<host name>/ of the sources, where
# benchmarks/README.md points at the latest one.
bench_report() {
  [ ${#bench_csvs[@]} -gt 0 ] || return 0
  local dir=${REPORT_DIR:-$script_dir/results/$(date -u +%Y-%m-%d)-$(hostname -s)} png plots=()
  for png in "$results"/plots/*.png; do [ -e "$png" ] && plots+=("$png"); done
  python3 "$script_dir/report.py" --name "$bench_me" --dir "$dir" --command "$bench_command" \
    "${bench_csvs[@]}" ${plots[@]+--plots "${plots[@]}"}
}

# bench_make PROGRAM...: keeps our binaries in step with the sources when
# BUILD_DIR is an automake tree (NO_MAKE=1 skips it), then checks they exist.
bench_make() {
  local p targets=("${@/#/benchmarks/}") log="$results/make-$bench_me.log"
  if [ -z "${NO_MAKE:-}" ] && [ -f "$build_dir/Makefile" ]; then
    echo "== make ${targets[*]} in $build_dir"
    make -C "$build_dir" "${targets[@]}" >"$log" 2>&1 || {
      tail -n 30 "$log" >&2
      echo "$bench_me: building our benchmarks failed (log: $log)" >&2
      exit 1
    }
  fi
  for p in "$@"; do
    [ -x "$build_dir/benchmarks/$p" ] || {
      echo "$bench_me: $build_dir/benchmarks/$p is missing; build it with 'make' in the build tree" >&2
      exit 1
    }
  done
}

# bench_build_both PROGRAM...: ours (bench_make) and ARMCI-MPI's
# (bench_build_armci_mpi) of the same sources.
bench_build_both() {
  bench_make "$@"
  bench_build_armci_mpi "$@"
}

# bench_alternate PREFIX PROGRAM [ARGS...]: RUNS runs of our PROGRAM and of
# its ARMCI-MPI build, alternating (slow drifts of the machine's load then
# spread over both), as bench_run PREFIXlibarmci.N and PREFIXarmci-mpi.N.
bench_alternate() {
  local prefix=$1 p=$2 i
  shift 2
  for ((i = 1; i <= runs; i++)); do
    echo "-- run $i/$runs"
    bench_run "${prefix}libarmci.$i" "$build_dir/benchmarks/$p" "" "$@"
    bench_run "${prefix}armci-mpi.$i" "$build_dir/benchmarks/${p}_armci_mpi" "" "$@"
  done
}

# bench_python ARGS...: python3 with benchmarks/ on its module path (for
# bench_runs.py, which the compare scripts' tables import).
bench_python() {
  PYTHONPATH="$script_dir${PYTHONPATH:+:$PYTHONPATH}" python3 "$@"
}

# bench_build_armci_mpi PROGRAM...: the same source and the harness, built
# with mpicc against ARMCI-MPI as BUILD_DIR/benchmarks/PROGRAM_armci_mpi
# (-O2 as automake's default CFLAGS for ours), then checked to link it.
bench_build_armci_mpi() {
  local p out log harness=("$script_dir/harness.c" "$script_dir/harness_options.c")
  for p in "$@"; do
    out="$build_dir/benchmarks/${p}_armci_mpi" log="$results/build-${p}_armci_mpi.log"
    echo "== $mpicc_cmd -O2 -o $out $script_dir/$p.c ${harness[*]} ${armci_mpi_libs[*]} -lm"
    "$mpicc_cmd" -O2 -o "$out" "$script_dir/$p.c" "${harness[@]}" "${armci_mpi_libs[@]}" -lm \
      >"$log" 2>&1 || {
      cat "$log" >&2
      echo "$bench_me: building the ARMCI-MPI version of $p failed" >&2
      exit 1
    }
    bench_check_links "$p"
  done
}

# bench_check_links PROGRAM: Debian's ARMCI-MPI is also called libarmci, so
# check that each build of PROGRAM links the library it says it measures.
# Ours: libarmci.so from BUILD_DIR and none of ARMCI-MPI's internals
# (ARMCII_*); ARMCI-MPI's: those internals linked in (it is a static
# library) and no libarmci.so.
bench_check_links() {
  local p=$1 ours="$build_dir/benchmarks/$1" theirs="$build_dir/benchmarks/$1_armci_mpi" lib n
  local run_on_ours=()
  # An uninstalled libtool program is a wrapper script; libtool runs ldd and nm on the binary.
  [ -x "$build_dir/libtool" ] && run_on_ours=("$build_dir/libtool" --mode=execute)
  # (grep -c, not grep -q: with pipefail, nm killed by an early-exiting grep fails the pipe)
  if [ -e "$ours" ]; then
    lib=$("${run_on_ours[@]}" ldd "$ours" 2>/dev/null | awk '$1 ~ /^libarmci\.so/ {print $3}')
    case $lib in
      "$build_dir"/*) ;;
      *) echo "$bench_me: $p resolves libarmci.so to '${lib:-nothing}', not to $build_dir" >&2; exit 1 ;;
    esac
    n=$("${run_on_ours[@]}" nm "$ours" 2>/dev/null | grep -c ' [TtWw] ARMCII_' || true)
    [ "$n" = 0 ] || { echo "$bench_me: $p has ARMCI-MPI's internals linked in" >&2; exit 1; }
    echo "   $p links $lib"
  fi
  if [ -e "$theirs" ]; then
    lib=$(ldd "$theirs" | awk '$1 ~ /^libarmci\.so/ {print $3}')
    [ -z "$lib" ] || { echo "$bench_me: ${p}_armci_mpi loads $lib" >&2; exit 1; }
    n=$(nm "$theirs" | grep -c ' [Tt] ARMCII_' || true)
    [ "$n" -gt 0 ] || { echo "$bench_me: ${p}_armci_mpi has no ARMCI-MPI internals (ARMCII_*) linked in" >&2; exit 1; }
    echo "   ${p}_armci_mpi links ARMCI-MPI statically ($n ARMCII_* functions)" \
      "and $(ldd "$theirs" | awk '$1 ~ /^libmpi\.so/ {print $3}')"
  fi
}

# bench_run NAME BINARY "VAR=value ..." [ARGS...]: one mpirun of BINARY with
# the settings (only for ours: ARMCI-MPI ignores them), the CSV to
# $results/NAME.csv and the output to NAME.txt. A failed run (a data check
# included) or one that wrote no CSV ends the script with the log's tail.
# Prints the run's "# run:" line and warns when rank 0 had the CPU less
# than 90% of the time (other load was running). bench_csvs collects the
# CSVs of this script's runs, for bench_plot.
bench_run() {
  local name=$1 bin=$2 settings=$3 s
  shift 3
  local -a envs=()
  for s in $settings ${ours_env[@]+"${ours_env[@]}"}; do envs+=(-x "$s"); done
  [[ $bin == *_armci_mpi ]] && envs=()
  local csv="$results/$name.csv" log="$results/$name.txt" rc=0
  rm -f "$csv"
  echo "== $name: $mpirun_cmd ${mpirun_flags[*]} -np $np ${envs[*]} $bin -c $csv $*"
  "$mpirun_cmd" "${mpirun_flags[@]}" -np "$np" "${envs[@]}" "$bin" -c "$csv" "$@" >"$log" 2>&1 || rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$csv" ]; then
    tail -n 30 "$log" >&2
    echo "$bench_me: $name failed (exit status $rc; log $log)" >&2
    exit 1
  fi
  bench_csvs+=("$csv")
  awk -v name="$name" '/^# run:/ {
      print "   " $0
      for (i = 1; i <= NF; i++) if ($i == "cpu/wall") share = $(i + 1) + 0
      if (share < 0.9)
        printf "   warning: rank 0 of %s had the CPU %.0f%% of the time: other load was running\n", name, share * 100
    }' "$log"
}

# bench_plot_python: prints a python3 that has matplotlib, or says on
# stderr that there is none and fails. Debian's matplotlib belongs to
# /usr/bin/python3, which another python3 (pyenv, a venv) may come before in
# PATH.
bench_plot_python() {
  local py
  for py in python3 /usr/bin/python3; do
    "$py" -c 'import matplotlib' 2>/dev/null && { echo "$py"; return 0; }
  done
  echo "$bench_me: no charts: python3-matplotlib is not installed (scripts/install-deps.sh installs it)" >&2
  return 1
}

# bench_plot OUT_DIR [CSV_OR_DIR...]: PNG charts (benchmarks/plot.py) of the
# CSVs, by default those of this script's runs (bench_csvs), into OUT_DIR;
# PLOT=0 skips it.
bench_plot() {
  [ "${PLOT:-1}" = 0 ] && return 0
  local out=$1 py
  shift
  [ $# -gt 0 ] || set -- "${bench_csvs[@]}"
  py=$(bench_plot_python) || return 0
  "$py" "$script_dir/plot.py" -o "$out" "$@"
}

# nas_option OPTION VALUE: the options both NAS scripts take (-c classes,
# -p process counts, -k kernels, -h); sets classes, nps or kernels. Returns
# 1 for any other option, for the caller's own list. Every option but -h
# takes a value, so a missing one is an error here, not a loop that never
# ends.
# shellcheck disable=SC2034  # classes, nps and kernels are for the caller
nas_option() {
  case $1 in
    -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  esac
  [ $# -ge 2 ] || { echo "$bench_me: option '$1' needs a value (see -h)" >&2; exit 2; }
  case $1 in
    -c) classes=$2 ;;
    -p) nps=$2 ;;
    -k) kernels=$2 ;;
    *) return 1 ;;
  esac
}

# nas_log_figures LOG: the NAS kernel's own figures in its output: sets t
# (Time in seconds), mops (Mop/s total) and comm (Comm seconds, empty when
# the run had no --timers). NPB's own report pads the values with more
# spaces.
# shellcheck disable=SC2034  # t, mops and comm are for the caller
nas_log_figures() {
  t=$(sed -n 's/^ Time in seconds = *//p' "$1")
  mops=$(sed -n 's|^ Mop/s total     = *||p' "$1")
  comm=$(sed -n 's/^ Comm seconds    =  \([0-9.]*\).*/\1/p' "$1")
}

# The verbs_vm_*.sh scripts: outside the VM, runs SCRIPT again inside the
# Soft-RoCE VM (../shared/rxe-vm) with the named variables passed in, and
# does not return; inside, sets dev, ip and out (a scratch directory).
bench_vm_enter() {  # SCRIPT "VARIABLE NAMES" args...
  local script=$1 names=$2
  shift 2
  if [ -z "${RXE_VM:-}" ]; then
    export RXE_VM_ENV="${RXE_VM_ENV:-} $names"
    exec "${RXE_VM_SCRIPT:-$script_dir/../../shared/rxe-vm/run-in-rxe-vm.sh}" "$script" "$@"
  fi
  hostname armci-vm
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  dev=${RXE_VM_DEV:-rxe0} ip=${RXE_VM_IP:-10.99.0.1}
  out=$(mktemp -d)
}

# Inside the Soft-RoCE VM (verbs_vm_*.sh): perftest pairs on device $dev,
# server address $ip, output files in $out (the caller's variables).
# perftest: server in the background, client against it; the client prints the table.
# A loaded emulated guest may take seconds to start the server: the client
# tries again while the server lives, and neither outlives its timeout.
perf_pair() {  # name tool args...
  local name=$1 tool=$2 try; shift 2
  echo "   $tool $*"
  timeout 300 "$tool" -d "$dev" -x 1 "$@" > "$out/$name.srv" 2>&1 &
  local server=$!
  for try in 1 2 3 4 5 6 7 8 9 10; do
    sleep 1
    timeout 300 "$tool" -d "$dev" -x 1 "$@" "$ip" > "$out/$name.cli" 2>&1 && break
    kill -0 "$server" 2>/dev/null || break
  done
  wait "$server" || true
}
lat_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 6 {print $5; exit}' "$out/$1.cli"; }   # t_typical
bw_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 4 {print $4; exit}' "$out/$1.cli"; }    # BW average MB/s
us_per_msg_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 && $5 > 0 {printf "%.2f", 1 / $5; exit}' "$out/$1.cli"; }  # 1 / MsgRate[Mpps]
