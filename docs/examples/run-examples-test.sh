#!/bin/bash
# make check: the README's example programs, so the README cannot drift from
# the library. Each code block of README.md must equal its file here
# (hello.c, hello.f90, CMakeLists.txt); then this build is installed into a
# scratch DESTDIR and the examples are built against that installation with
# the README's build lines (pkg-config, CMake find_package, -larmcif) and run
# alone and under the launcher at 2 and 3 processes, each rank's line checked.
# Environment (from Makefile.am's AM_TESTS_ENVIRONMENT): top_builddir,
# abs_top_srcdir, MAKE.
set -u
here=$abs_top_srcdir/docs/examples
top_builddir=$(cd "$top_builddir" && pwd)  # the script moves to a scratch directory
source "$abs_top_srcdir/tests/job_lib.sh"
job_lib_init run-examples-test

# The block after the README line "```LANG" up to the closing fence.
readme_block() {
  awk -v fence="\`\`\`$1" '$0 == fence { inside = 1; next } inside && $0 == "```" { exit } inside { print }' \
    "$abs_top_srcdir/README.md"
}
for pair in c:hello.c fortran:hello.f90 cmake:CMakeLists.txt; do
  lang=${pair%%:*} file=${pair#*:}
  job_log=$(mktemp)
  if diff -u <(readme_block "$lang") "$here/$file" >"$job_log"; then
    job_passed "README.md's \`\`\`$lang block equals docs/examples/$file"
  else
    job_failed "README.md's \`\`\`$lang block differs from docs/examples/$file (edit both alike)"
  fi
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/armci-examples.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
root=$scratch/root
prefix=$(sed -n 's/^prefix = //p' "$top_builddir/Makefile")
libdir=$(sed -n 's/^libdir = //p' "$top_builddir/Makefile" | sed "s|\${exec_prefix}|$prefix|")
if ! ${MAKE:-make} -C "$top_builddir" install DESTDIR="$root" >"$scratch/install.log" 2>&1; then
  cat "$scratch/install.log" >&2
  exit 1
fi
# pkg-config prefixes the .pc file's paths with the scratch root.
export PKG_CONFIG_PATH=$root$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
export LD_LIBRARY_PATH=$root$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cd "$scratch" || exit 1
cp "$here/hello.c" "$here/hello.f90" "$here/CMakeLists.txt" .

# build NAME COMMAND...: one build line, then the program must use the
# installed libarmci, not the build tree's.
build() {
  local name=$1
  shift
  job_log=$(mktemp)
  if "$@" >"$job_log" 2>&1 && ldd "$name" | grep libarmci | grep -q "$root"; then
    job_passed "build $name: $*"
    built+=("$name")
  else
    ldd "$name" >>"$job_log" 2>&1
    job_failed "build $name: $*"
  fi
}
built=()
# shellcheck disable=SC2046 # pkg-config's words
build hello_c cc hello.c $(pkg-config --cflags --libs armci) -o hello_c
# shellcheck disable=SC2046
build hello_cmake sh -c "cmake -S . -B cmake-build -DCMAKE_PREFIX_PATH='$root$prefix' && cmake --build cmake-build && cp cmake-build/hello hello_cmake"
# The Fortran example wherever configure built the module (--disable-fortran
# or no compiler: nothing to build it with).
if [ -f "$top_builddir/fortran/armci.mod" ]; then
  # shellcheck disable=SC2046
  build hello_f gfortran hello.f90 -larmcif $(pkg-config --cflags --libs armci) -o hello_f
else
  echo "note: this build has no Fortran module (configure found no Fortran compiler); hello.f90 not built"
fi

# check NAME NP: every rank printed its line with its right neighbour's value.
check() {
  local name=$1 np=$2 expect r
  expect=$(for ((r = 0; r < np; r++)); do echo "rank $r of $np read $((100 + (r + 1) % np)) from rank $(((r + 1) % np))"; done)
  if [ "$job_rc" -eq 0 ] && [ "$(grep '^rank ' "$job_log" | sort)" = "$expect" ]; then
    job_passed "$name np=$np"
  else
    job_failed "$name np=$np (exit $job_rc)"
  fi
}
for name in "${built[@]}"; do
  job_log=$(mktemp)
  env -u ARMCI_SHM -u ARMCI_VNODE_SIZE -u ARMCI_NETWORK timeout 60 "./$name" >"$job_log" 2>&1
  job_rc=$?
  check "$name alone" 1
  for np in 2 3; do
    run_job 120 "$np" "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" -- "./$name"
    check "$name mpirun" "$np"
  done
done
job_summary
