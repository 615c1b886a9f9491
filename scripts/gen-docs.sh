#!/usr/bin/env bash
# Regenerates the pages of docs/ that the code prints: docs/settings.md and
# docs/protocols.md, from armci_info --markdown of the build in build/ (or
# $ARMCI_BUILD_DIR), built first if needed. `make docs` in the build
# directory does the same. docs/check-generated.sh (make check) fails when
# the checked-in pages differ from what the code prints.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${ARMCI_BUILD_DIR:-$top/build}
[ -f "$build/Makefile" ] || bash "$top/scripts/build.sh" >/dev/null
make -C "$build" --no-print-directory src/tools/armci_info >/dev/null
for page in settings protocols; do
  "$build/src/tools/armci_info" --markdown "$page" >"$top/docs/$page.md"
  echo "wrote docs/$page.md"
done
