#!/bin/bash
# per_step_test.sh SHAPES — bench/shapes --per-step: every mode of a row
# prints one line per step on stderr (the row's label, its ratio and the
# mode first, the steps in order), those after the warm-up marked
# measured, and the mean of the measured steps is the row's step time;
# stdout is byte for byte what the run prints without the flag.
set -u
shapes=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(--quick --shapes wide --seed 3 --seeds 1 --ratios 2 --steps 10 --warmup 7)
"$shapes" "${args[@]}" --per-step >"$dir/out" 2>"$dir/err" || { cat "$dir/out" "$dir/err"; exit 1; }
"$shapes" "${args[@]}" >"$dir/plain" 2>/dev/null || { echo "per_step_test: the run without --per-step failed" >&2; exit 1; }
if ! cmp -s "$dir/out" "$dir/plain"; then
    echo "per_step_test: stdout differs with --per-step" >&2
    diff "$dir/out" "$dir/plain" >&2
    exit 1
fi
awk '
function fail(msg) { print "per_step_test: " msg > "/dev/stderr"; bad = 1 }
function abs(x) { return x < 0 ? -x : x }
NR == FNR {
    if ($1 != "step") next
    key = $2 " " $3 " " $4
    if (NF != 11) fail("a step line of " NF " fields: " $0)
    if ($5 != n[key]) fail("step " $5 " after " n[key] " steps: " $0)
    n[key]++
    if ($11 == 1) { m[key]++; sum[key] += $6 }
    else if ($11 != 0) fail("measured is neither 0 nor 1: " $0)
    if ($5 < 7 && $11 != 0) fail("a warm-up step marked measured: " $0)
    next
}
NF == 12 && $1 == "wide/3" {
    key = $1 " " $2 " " $3
    rows++
    if (n[key] != 10) fail(key ": " n[key] + 0 " step lines (10 expected)")
    if (m[key] != 3) fail(key ": " m[key] + 0 " measured (3 expected)")
    if (m[key] > 0 && abs(sum[key] / m[key] - $4) > 0.0006 + $4 * 1e-6)
        fail(key ": measured steps average " sum[key] / m[key] " ms, the row says " $4)
}
END {
    if (rows != 9) fail(rows + 0 " rows of wide/3 (9 modes expected)")
    exit bad
}' "$dir/err" "$dir/out"
