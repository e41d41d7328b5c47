#!/bin/bash
# shapes_test.sh SHAPES — bars that bench/shapes --quick shows today on the
# simulated GPU, kept as ratios (never times):
#   every mode of every shape completes;
#   no lmshim mode's device peak exceeds its budget (LMS_LIMIT; the device
#     is twice that);
#   at 0.5x every lmshim mode is within 2% of in-memory;
#   at 1.5x and above, lmshim-lookahead is at least 2x faster than plain
#     Unified Memory on every shape;
#   lmshim at its defaults is never slower than 3x plain Unified Memory.
set -u
shapes=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$shapes" --quick >"$out" || { cat "$out"; echo "shapes_test: bench failed" >&2; exit 1; }
cat "$out"
# Detailed rows: shape ratio mode step_ms vs_mem vs_best to_dev to_host remote faults peak budget
awk '
function fail(msg) { print "shapes_test: " msg > "/dev/stderr"; bad = 1 }
NF == 4 && $4 == "failed" { fail($1 " " $2 "x " $3 ": failed") }
NF == 12 && $3 ~ /^(in-memory|plain-um|zero-copy|lmshim-)/ {
    key = $1 " " $2
    t[key, $3] = $4
    if ($3 ~ /^lmshim-/ && $11 > $12 + 0)
        fail(key "x " $3 ": device peak " $11 " MiB over the budget " $12 " MiB")
    if ($2 == 0.5 && $3 ~ /^lmshim-/ && $5 > 1.02)
        fail(key "x " $3 ": " $5 " x in-memory at 0.5x")
    keys[key] = $2
    rows++
}
END {
    for (k in keys) {
        um = t[k, "plain-um"]; la = t[k, "lmshim-lookahead"]; df = t[k, "lmshim-defaults"]
        if (keys[k] >= 1.5 && !(um >= 2 * la))
            fail(k "x: lookahead " la " ms is not 2x faster than plain UM " um " ms")
        if (!(df <= 3 * um))
            fail(k "x: defaults " df " ms slower than 3x plain UM " um " ms")
    }
    if (rows != 16 * 5 * 9)
        fail(rows " rows (16 shapes x 5 ratios x 9 modes expected)")
    exit bad
}' "$out"
