#!/bin/bash
# per_step_test.sh SHAPES — bench/shapes --per-step: every mode of a row
# prints one line per step on stderr (the row's label, its ratio and the
# mode first, the steps in order), the last ones, after the warm-up,
# marked measured, whose means are the row's step time and MiB moved;
# no line names a row the run does not print; stdout is byte for byte
# what the run prints without the flag (a seeded shape, one that sets
# its own steps, and pytorch, which reads --quick). Run with stderr
# closed, no line lands in lmshim's trace.
set -u
shapes=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(--quick --shapes wide,growing,pytorch --seed 3 --seeds 1 --ratios 2 --steps 10 --warmup 7)
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
    if ($5 != n[key]) fail("step " $5 " after " n[key] + 0 " steps: " $0)
    n[key]++
    if (!($10 > 0)) fail("a step of no launch: " $0)
    if ($11 == 1) { m[key]++; ms[key] += $6; dev[key] += $7; host[key] += $8; rem[key] += $9 }
    else if ($11 != 0) fail("measured is neither 0 nor 1: " $0)
    else if (m[key] > 0) fail("a step not measured after a measured one: " $0)
    next
}
NF == 12 && ($1 == "wide/3" || $1 == "growing" || $1 == "pytorch") {
    key = $1 " " $2 " " $3
    rows++
    row[key] = 1
    if ($1 == "wide/3" && (n[key] != 10 || m[key] != 3))
        fail(key ": " n[key] + 0 " steps, " m[key] + 0 " measured (10 and 3 expected)")
    if (!(m[key] > 0)) { fail(key ": no step measured"); next }
    if (abs(ms[key] / m[key] - $4) > 0.0006 + $4 * 1e-6)
        fail(key ": measured steps average " ms[key] / m[key] " ms, the row says " $4)
    split($7 " " $8 " " $9, want, " ")
    got[1] = dev[key] / m[key]; got[2] = host[key] / m[key]; got[3] = rem[key] / m[key]
    for (i = 1; i <= 3; i++)
        if (abs(got[i] - want[i]) > 0.11)
            fail(key ": measured steps move " got[i] " MiB in column " i + 6 ", the row says " want[i])
}
END {
    if (rows != 27) fail(rows + 0 " rows (3 shapes x 9 modes expected)")
    for (k in n)
        if (!(k in row)) fail("step lines for " k ", a row the run does not print")
    exit bad
}' "$dir/err" "$dir/out" || exit 1
mkdir "$dir/tr"
"$shapes" --quick --shapes wide --seed 3 --seeds 1 --ratios 2 --steps 10 --warmup 7 --per-step \
    --trace-dir "$dir/tr" >/dev/null 2>&- || { echo "per_step_test: the run with stderr closed failed" >&2; exit 1; }
trace=$(ls "$dir/tr"/*.jsonl 2>/dev/null | head -1)
[ -s "$trace" ] || { echo "per_step_test: no trace written with stderr closed" >&2; exit 1; }
if grep -q '^step ' "$trace"; then
    echo "per_step_test: step lines in lmshim's trace when stderr is closed" >&2
    exit 1
fi
