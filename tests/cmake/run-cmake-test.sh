#!/bin/sh
# make check: installs this build into a scratch DESTDIR, then configures,
# builds and runs the CMake project beside this script, which finds the
# installation with find_package(armci) and links armci::armci.
# Environment (from Makefile.am's AM_TESTS_ENVIRONMENT): top_builddir,
# abs_top_srcdir, MAKE.
set -eu
here=$abs_top_srcdir/tests/cmake
if ! command -v cmake >/dev/null; then
  echo "cmake not found: install it (scripts/install-deps.sh installs cmake)" >&2
  exit 1
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/armci-cmake.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
prefix=$(sed -n 's/^prefix = //p' "$top_builddir/Makefile")
${MAKE:-make} -C "$top_builddir" install DESTDIR="$scratch/root" >"$scratch/install.log" 2>&1 ||
  { cat "$scratch/install.log" >&2; exit 1; }
cmake -S "$here" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/root$prefix" >"$scratch/cmake.log" 2>&1 ||
  { cat "$scratch/cmake.log" >&2; exit 1; }
cmake --build "$scratch/build" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log" >&2; exit 1; }
# A put and a get through the installed library, not the build tree's.
ldd "$scratch/build/armci_cmake_user" | grep "libarmci" | grep -q "$scratch/root" ||
  { echo "armci_cmake_user is not linked with the installed libarmci:" >&2; ldd "$scratch/build/armci_cmake_user" >&2; exit 1; }
"$scratch/build/armci_cmake_user"
