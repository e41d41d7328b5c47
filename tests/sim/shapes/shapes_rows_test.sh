#!/bin/bash
# shapes_rows_test.sh SHAPES — bench/shapes keeps every row it was asked
# for: 65 seeds of `random` at two ratios are 130 rows (more than any
# fixed table the bench once had), each in the detailed table (9 modes)
# and in the summary, and none failed.
set -u
shapes=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$shapes" --shapes random --seeds 65 --ratios 0.5,1 --steps 2 --warmup 1 --quick >"$out" ||
    { cat "$out"; echo "shapes_rows_test: bench failed" >&2; exit 1; }
detailed=$(awk 'NF == 12 && $1 ~ /^random\// && $3 ~ /^(in-memory|plain-um|zero-copy|lmshim-)/' "$out" | wc -l)
summary=$(awk '/^summary/ { s = 1; next } s && $1 ~ /^random\// && /\|/' "$out" | wc -l)
failed=$(awk 'NF == 4 && $4 == "failed"' "$out" | wc -l)
last=$(awk '/^summary/ { s = 1; next } s && $1 == "random/65" && $2 == 1' "$out" | wc -l)
echo "detailed $detailed summary $summary failed $failed last $last"
[ "$detailed" -eq 1170 ] && [ "$summary" -eq 130 ] && [ "$failed" -eq 0 ] && [ "$last" -eq 1 ] ||
    { echo "shapes_rows_test: expected 1170 detailed rows, 130 summary rows (random/65 at 1x last), none failed" >&2; exit 1; }
