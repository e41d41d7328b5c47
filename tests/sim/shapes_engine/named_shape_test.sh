#!/bin/bash
# named_shape_test.sh SHAPES SHAPE MEAN ROW LOOK — bench/shapes SHAPE
# (a shape run only where named: `turned`, `flipped`, `seqlen`, `tilings`,
# `early-exit`, `big-grid`), seeds 1-30 at 1.5x, 2x and 3x over steps
# 13-42: lmshim at its defaults over the better of lmshim-none and
# lmshim-lru at the defaults at most MEAN on average over the seeds at
# each ratio and at most ROW in every row, lmshim-lookahead
# (LMS_FRAC=0.5) at most LOOK on average. What each shape's bars stand
# on: meson.build beside this file. A mode that failed fails the test.
set -u
shapes=$1 shape=$2 mean=$3 row=$4 look=$5
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$shapes" --shapes "$shape" --seed 1 --seeds 30 --ratios 1.5,2,3 --steps 42 --warmup 12 >"$out" ||
    { cat "$out"; echo "$shape: bench failed" >&2; exit 1; }
sed -n '/^summary:/,$p' "$out"
awk -v shape="$shape" -v mean="$mean" -v row="$row" -v lbar="$look" '
/^summary:/ { insum = 1; next }
insum && NF == 20 && index($1, shape "/") == 1 {
    if (!($14 > 0 && $15 > 0) || $0 ~ /fail/) { print shape ": " $1 " " $2 "x: a mode failed" > "/dev/stderr"; bad = 1 }
    n[$2]++; look[$2] += $14; dflt[$2] += $15
    if (!($15 <= row + 0)) { print shape ": " $1 " " $2 "x: defaults " $15 " (bar " row ")" > "/dev/stderr"; bad = 1 }
}
END {
    rows = 0
    for (r in n) {
        rows += n[r]
        printf "ratio %s: %d seeds, lookahead %.3f, defaults %.3f on average\n", r, n[r], look[r] / n[r], dflt[r] / n[r]
        if (!(dflt[r] / n[r] <= mean + 0)) { print shape ": defaults at " r "x average over " mean > "/dev/stderr"; bad = 1 }
        if (!(look[r] / n[r] <= lbar + 0)) { print shape ": lookahead at " r "x average over " lbar > "/dev/stderr"; bad = 1 }
    }
    if (rows != 90) { print shape ": " rows " rows, not 90" > "/dev/stderr"; bad = 1 }
    exit bad
}' "$out" && echo PASS || { echo "FAIL: a bar above does not hold" >&2; exit 1; }
