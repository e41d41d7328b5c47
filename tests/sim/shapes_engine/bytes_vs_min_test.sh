#!/bin/bash
# bytes_vs_min_test.sh SHAPES LMSHIM — the bytes the residency engine moves
# on the structured shapes of bench/shapes (transformer, train-eval,
# data-dependent, growing at 1.5x, 2x and 3x), against Belady's MIN over
# the same launches: bench/shapes runs lmshim-lookahead (LMS_FRAC=0.5)
# with --trace-dir; for each row, the MiB a measured step fetched and read
# over the link, over what `lmshim replay` reports for belady-min (fetched
# plus read in place, over the launches after the warm-up, per measured
# step), is at most 1.10.
set -u
shapes=$1
lmshim=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out="$dir/shapes.txt"
"$shapes" --shapes transformer,train-eval,data-dependent,growing --ratios 1.5,2,3 --trace-dir "$dir" >"$out" ||
    { cat "$out"; echo "bytes_vs_min_test: bench failed" >&2; exit 1; }
bad=0
rows=0
while read -r _ shape ratio path warm measured live; do
    warm=${warm#warm_launches=}
    measured=${measured#measured=}
    live=${live#live_mib=}
    rep=$("$lmshim" replay --policy none --skip "$warm" "$path") || { echo "$rep"; bad=1; continue; }
    bar=1.10
    line=$(echo "$rep" | awk -v live="$live" -v m="$measured" -v bar="$bar" -v row="$shape ${ratio}x" '
        $1 == "belady-min" { min = ($2 + $5) / m; found = 1 }
        END {
            if (!found || !(min > 0)) { print "FAIL " row ": no belady-min row"; exit }
            r = live / min
            printf "%s %s: live %.1f MiB a step, MIN %.1f, %.3fx (bar %s)\n", (r <= bar ? "ok" : "FAIL"), row, live, min, r, bar
        }')
    echo "$line"
    case $line in FAIL*) bad=1 ;; esac
    rows=$((rows + 1))
done < <(grep '^trace ' "$out")
if [ "$rows" -ne 12 ]; then
    cat "$out"
    echo "bytes_vs_min_test: $rows rows with a trace (12 expected)" >&2
    bad=1
fi
exit $bad
