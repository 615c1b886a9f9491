#!/usr/bin/env bash
# Builds Global Arrays' own global/testing programs (the ones GA's make check
# runs) from a GA source tree against Debian's installed libga, twice: over
# this library (libarmci.so linked by its path) and over Debian's GA as it is
# (ARMCI-MPI), runs each at the given process counts and prints a PASS/FAIL
# line per run and the totals. Not part of make check; it fetches nothing.
#   tests/ga/run-ga-testing.sh GA_SOURCE_TREE [LIBDIR] [OUTDIR]
# LIBDIR holds libarmci.so (default build/.libs); env NPS (default "2 4"),
# TMO seconds per run (default 120), FLAVOURS (default "ours ref"),
# PROGRAMS (default: GA 5.8.2's parallel and threaded check programs).
# A run passes when it exits 0 and prints no failure message.
set -uo pipefail
ga=$(cd "${1:?usage: run-ga-testing.sh GA_SOURCE_TREE [LIBDIR] [OUTDIR]}" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
lib=$(cd "${2:-$top/build/.libs}" && pwd)
out=$(mkdir -p "${3:-/tmp/ga-testing}" && cd "${3:-/tmp/ga-testing}" && pwd)
t=$ga/global/testing
[ -f "$t/testutil.fh" ] || { echo "run-ga-testing: $t is not GA's global/testing" >&2; exit 2; }
[ -f "$lib/libarmci.so" ] || { echo "run-ga-testing: no libarmci.so in $lib" >&2; exit 2; }
command -v ga-config >/dev/null || { echo "run-ga-testing: ga-config not found (libglobalarrays-dev)" >&2; exit 2; }
NPS=${NPS:-"2 4"}; TMO=${TMO:-120}; FLAVOURS=${FLAVOURS:-"ours ref"}
# C programs, then Fortran ones (GA's GLOBAL_PARALLEL_TESTS and GLOBAL_THREADED_TESTS).
cprogs="elempatch getmem mtest mulmatpatchc normc matrixc ntestc nbtestc ntestfc packc patch_enumc print
 scan_addc scan_copyc testc testmatmultc testmult testmultrect gemmtest thread_perf_contig thread_perf_strided
 threadsafec read_only cache_test unpackc ga_lu ga-mpi lock simple_groups_commc"
fprogs="bin blktest g2test g3test ga_shift ghosts jacobi mir_perf2 mmatrix mulmatpatch nbtest nb2test ndim patch
 patch2 patch_enumf perfmod perform perf perf2 pg2test pgtest scan simple_groups sparse sprsmatmult stride testeig
 testmatmult testsolve test overlay testspd simple_groups_comm"
PROGRAMS=${PROGRAMS:-"$cprogs $fprogs"}

# GA's generated config.h and config.fh, as Debian's libga was configured
# (Open MPI, 8-byte Fortran INTEGER, 4-byte BLAS, LAPACK and ScaLAPACK).
mkdir -p "$out/inc" "$out/obj" "$out/log"
cat >"$out/inc/config.h" <<'H'
#define HAVE_STDIO_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_MATH_H 1
#define HAVE_ASSERT_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_ERRNO_H 1
#define MSG_COMMS_MPI 1
#define ENABLE_F77 1
#define HAVE_BLAS 1
#define HAVE_LAPACK 1
#define HAVE_SCALAPACK 1
#define F77_FUNC(name, NAME) name##_
#define F77_FUNC_(name, NAME) name##_
#define F2C_HIDDEN_STRING_LENGTH_AFTER_ARGS 1
#define HAVE_F77_FLUSH 1
#define F77_FLUSH flush
H
printf '#define HAVE_F77_FLUSH 1\n#define F77_FLUSH flush\n' >"$out/inc/config.fh"
# GA's internal headers only after the installed ones, so Debian's ga.h wins.
cpp="-DHAVE_CONFIG_H -I$out/inc -I$t -idirafter $ga/global/src -idirafter $ga/LinAlg/lapack+blas"
fflags="-O1 -w -fallow-argument-mismatch -fdefault-integer-8 -I/usr/include"
ga_ref="$(ga-config --ldflags --libs) -lgfortran -lm"
ga_ours="$(ga-config --ldflags --libs | sed 's/-larmci-openmpi//g') -lgfortran -lm $lib/libarmci.so -Wl,-rpath,$lib"
cd "$out/obj"
mpicc -O1 -w $cpp -c "$t/util.c" -o util.o || exit 1
mpifort $fflags $cpp -c "$t/ffflush.F" -o ffflush.o || exit 1
mpifort $fflags $cpp -c "$t/testblas.F" -o testblas.o || exit 1
for p in $PROGRAMS; do
  objs="$p.o" flags=""
  if [ -f "$t/$p.c" ]; then
    case $p in thread_perf_* | threadsafec | read_only) flags=-fopenmp ;; esac
    mpicc -O1 -w $flags $cpp -c "$t/$p.c" -o $p.o 2>"$out/log/$p.compile" || { echo "COMPILE-FAIL $p"; continue; }
  else
    mpifort $fflags $cpp -c "$t/$p.F" -o $p.o 2>"$out/log/$p.compile" || { echo "COMPILE-FAIL $p"; continue; }
    objs="$p.o util.o ffflush.o"
    case $p in mulmatpatch | patch) objs="$objs testblas.o" ;; esac
  fi
  for fl in $FLAVOURS; do
    mkdir -p "$out/bin-$fl"
    libs=$ga_ref; [ "$fl" = ours ] && libs=$ga_ours
    mpifort -o "$out/bin-$fl/$p" $objs $flags $libs 2>"$out/log/$p.$fl.link" || echo "LINK-FAIL $fl $p"
  done
done
# The check that the programs run on this library, not ARMCI-MPI's copy.
for x in "$out"/bin-ours/*; do
  [ -x "$x" ] || continue
  syms=$(nm "$x") deps=$(ldd "$x")
  [[ $syms == *" U ARMCI_Init"$'\n'* && $deps == *"$lib/libarmci.so"* ]] ||
    { echo "run-ga-testing: $x does not take ARMCI_Init from $lib/libarmci.so" >&2; exit 1; }
done

fails='armci:|[Mm]ismatch|[Ff]ailed|FAILED|[Aa]bort|Segmentation|[Ss]ignal|[Ww]rong|[Ee]rror:|Error found|ERROR'
mkdir -p "$out/run"
for fl in $FLAVOURS; do
  pass=0 total=0
  for p in $PROGRAMS; do
    [ -x "$out/bin-$fl/$p" ] || continue
    for np in $NPS; do
      log=$out/log/$p.$fl.np$np
      (cd "$out/run" && timeout -k 5 "$TMO" mpirun --allow-run-as-root --oversubscribe -np "$np" \
        "$out/bin-$fl/$p" </dev/null >"$log" 2>&1)
      rc=$?
      # test.F's "SHOULD FAIL" array and its "failure" line are an expected failure.
      msg=$(grep -vE 'SHOULD FAIL|^ *failure *$' "$log" | grep -m1 -E "$fails")
      total=$((total + 1))
      if [ $rc -eq 0 ] && [ -z "$msg" ]; then pass=$((pass + 1)); echo "PASS $fl $p np$np"
      else echo "FAIL $fl $p np$np rc=$rc ${msg:0:160}"; fi
    done
  done
  echo "$fl: $pass of $total runs passed"
done
