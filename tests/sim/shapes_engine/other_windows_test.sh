#!/bin/bash
# other_windows_test.sh SHAPES — the residency engine against the simple
# choices on the structured shapes of bench/shapes when the 6 measured
# steps come later than the bench's (steps 27-32 and 31-36, after 26 and
# 30 warm-up steps), at 1.5x, 2x and 3x, at the bench's settings:
# lmshim-lookahead (LMS_FRAC=0.5) over the better of lmshim-none and
# lmshim-lru, and lmshim at its defaults over the better of the two at the
# defaults, at most 1.02 in every row. An outside helper found
# `data-dependent` at 3x at the defaults 1.51x there (after 26) and 1.24x
# (after 30): launches once a step read chunks in place on their
# function's price, lent to them, and timing sampled each of those
# launches once in 4 steps, so their own prices came 4 steps late; such a
# launch is timed now (src/common/plan.c, can_price). docs/PERFORMANCE.md,
# "Twenty-fourth round". A mode that failed fails the test.
set -u
shapes=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
set=transformer,pytorch,train-eval,data-dependent,growing,inference,decoder,churn,deep,ragged
for warmup in 26 30; do
    "$shapes" --shapes "$set" --ratios 1.5,2,3 --steps $((warmup + 6)) --warmup $warmup >"$out" ||
        { cat "$out"; echo "other_windows_test: bench failed (warm-up $warmup)" >&2; exit 1; }
    echo "after $warmup warm-up steps:"
    sed -n '/^summary:/,$p' "$out"
    awk -v name="other_windows_test (warm-up $warmup)" -v bars= -v want=30 \
        -f "$(dirname "$0")/summary_bars.awk" "$out" || { echo "FAIL: a row over 1.02" >&2; exit 1; }
done
echo PASS
