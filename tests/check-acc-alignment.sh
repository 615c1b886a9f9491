#!/bin/sh
# make check: every loop of the built Acc kernels (accumulate_typed, each
# target clone) must start on a 64-byte boundary. acc_kernels.cpp asks for it
# (align-loops=64) because on AMD Zen a short loop straddling two 64-byte
# op-cache lines runs at half speed; a compiler that drops the attribute, or
# an edit that moves the loop out of the attributed function, would halve a
# small Acc's speed with no test noticing. A loop is found as the target of a
# backward branch inside the function that does not jump to its
# epilogue. Environment (from Makefile.am):
# top_builddir.
set -u
lib="$top_builddir/.libs/libarmci.so"
if [ ! -f "$lib" ]; then
  echo "FAIL $lib not found (the check reads the shared library's code)"
  exit 1
fi
objdump -d --no-show-raw-insn -C "$lib" | awk '
  function hex(text,   value, i) {
    value = 0
    for (i = 1; i <= length(text); i++) value = value * 16 + index("0123456789abcdef", substr(text, i, 1)) - 1
    return value
  }
  # A backward branch is a loop unless a return lies between its target and
  # itself: then it jumps to the shared epilogue of the function.
  function check(   b, r, epilogue) {
    for (b = 1; b <= nback; b++) {
      epilogue = 0
      for (r = 1; r <= nreturns; r++) if (returns[r] >= back_to[b] && returns[r] < back_from[b]) epilogue = 1
      if (epilogue) continue
      loops++
      if (back_to[b] % 64 != 0) {
        printf "FAIL loop at 0x%x (%d bytes past a 64-byte boundary) in %s\n", back_to[b], back_to[b] % 64, name
        bad++
      }
    }
    nback = 0; nreturns = 0
  }
  /^[0-9a-f]+ <.*accumulate_typed<[^>]*>*\(.*>:$/ {
    if (inside) check()
    name = $0; sub(/^[0-9a-f]+ </, "", name); sub(/>:$/, "", name)
    inside = 1; functions++; next
  }
  inside && /^$/ { check(); inside = 0; next }
  inside && /^ *[0-9a-f]+:\tret/ { returns[++nreturns] = hex(substr($1, 1, length($1) - 1)); next }
  inside && /^ *[0-9a-f]+:\tj[a-z]* +[0-9a-f]+ </ {
    at = hex(substr($1, 1, length($1) - 1)); target = hex($3)
    if (target < at) { ++nback; back_from[nback] = at; back_to[nback] = target }
  }
  END {
    if (inside) check()
    if (functions == 0) { print "FAIL no accumulate_typed function in the library"; exit 1 }
    if (loops == 0) { print "FAIL no loop found in the " functions " accumulate_typed functions"; exit 1 }
    printf "%s %d loops in %d accumulate_typed functions start on a 64-byte boundary\n", bad ? "FAIL not all" : "PASS", loops, functions
    printf "%d passed, %d failed\n", bad ? 0 : 1, bad ? 1 : 0
    exit bad ? 1 : 0
  }'
