#!/bin/bash
# room_kept_test.sh SHAPES BAR — bench/shapes `lora` (16 frozen weights
# allocated first, then 2 MiB adapters, their gradients and moments) at
# 1.5x and 2x over steps 13-30: lmshim at its defaults at most BAR x the
# in-memory step at each ratio. The small chunks past LMS_FRAC leave the
# device where they would cut into the engine's room (src/engine/place.c,
# keeps_room); where they filled it, nothing was fetched. A mode that
# failed fails the test.
set -u
shapes=$1 bar=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$shapes" --shapes lora --ratios 1.5,2 --steps 30 --warmup 12 >"$out" || { cat "$out"; echo "lora: bench failed" >&2; exit 1; }
sed -n '/^summary:/,/^totals:/p' "$out"
awk -v bar="$bar" '
/^summary:/ { insum = 1; next }
/^totals:/ { insum = 0 }
insum && $1 == "lora" {
    rows++
    if ($0 ~ /fail/ || !($12 > 0)) { print "lora " $2 "x: a mode failed" > "/dev/stderr"; bad = 1 }
    else if (!($12 <= bar + 0)) { print "lora " $2 "x: defaults " $12 "x in-memory (bar " bar ")" > "/dev/stderr"; bad = 1 }
}
END {
    if (rows != 2) { print "lora: " rows " rows, not 2" > "/dev/stderr"; bad = 1 }
    exit bad
}' "$out" && echo PASS || { echo "FAIL: a bar above does not hold" >&2; exit 1; }
