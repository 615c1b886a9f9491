#!/usr/bin/env bash
# Configures and builds out of tree in build/ (or $ARMCI_BUILD_DIR).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ARMCI_BUILD_DIR:-$top/build}
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
  autoreconf -fi >/dev/null
fi
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" --quiet ${ARMCI_CONFIGURE_FLAGS:-}
make -j"$(nproc)" --no-print-directory >/dev/null
echo "build: $build"
