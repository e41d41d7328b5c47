#!/bin/bash
# later_seeds_test.sh SHAPES — the residency engine against the simple
# choices on the seeded shapes of bench/shapes (operands, experts, wide),
# seeds 1-100 at 1.25x and 2x, over 30 measured steps (steps 13-42)
# rather than the bench's 6: lmshim-lookahead (LMS_FRAC=0.5) over the
# better of lmshim-none and lmshim-lru, and lmshim at its defaults over
# the better of the two at the defaults, at most 1.02 in every row. Over
# 6 steps, rows of these random shapes go over by chance (the defaults at
# 1.03-1.06 on `wide` seeds 56, 77 and 97 at 2x: on seed 97 the defaults
# fetched at step 6 what `lru` read in place, and from there the room
# held other buffers; none over 30 steps). Over 30 steps the window
# caught what 6 did not: `operands` seed 21 at 2x under lookahead 2.31x
# `lru`'s step (5.27 and 2.28x in-memory), seeds 28 and 47 at 2x 1.19 and
# 2.08x, seed 30 at 1.25x 1.86x: reading every chunk in place, chosen
# after a judging that fetched the operands priced far over a fetch,
# read them in place until two windows were slower (src/common/plan.c,
# FAR_OVER; docs/PERFORMANCE.md, "Twenty-eighth round"). A mode that
# failed fails the test.
set -u
shapes=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$shapes" --shapes operands,experts,wide --seed 1 --seeds 100 --ratios 1.25,2 --steps 42 --warmup 12 >"$out" ||
    { cat "$out"; echo "later_seeds_test: bench failed" >&2; exit 1; }
sed -n '/^summary:/,$p' "$out"
awk -v name=later_seeds_test -v bars= -v want=$((3 * 100 * 2)) -f "$(dirname "$0")/summary_bars.awk" "$out" &&
    echo PASS || { echo "FAIL: a row over 1.02" >&2; exit 1; }
