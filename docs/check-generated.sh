#!/bin/sh
# make check: docs/settings.md and docs/protocols.md must be what the code
# prints (armci_info --markdown), so a new setting or protocol cannot leave
# the pages behind. Environment (from Makefile.am): top_builddir, abs_top_srcdir.
set -u
failed=0
for page in settings protocols; do
  diff=$(mktemp)
  if "$top_builddir/src/tools/armci_info" --markdown "$page" | diff -u "$abs_top_srcdir/docs/$page.md" - >"$diff"; then
    echo "PASS docs/$page.md is what armci_info --markdown $page prints"
  else
    echo "FAIL docs/$page.md differs from what the code prints; regenerate it with scripts/gen-docs.sh"
    echo "     (or make docs in the build directory) and commit the result:"
    sed "s/^/  | /" "$diff"
    failed=$((failed + 1))
  fi
  rm -f "$diff"
done
echo "$((2 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
