#!/bin/bash
# oversub_test.sh OVERSUB LMSHIM — the residency bars, measured by
# bench/oversub on the simulated GPU's default model (55 GB/s link, 30 us +
# 10 GB/s faults), compute per step = the working set's link time:
#   0.5x: every lmshim policy within 2% of in-memory;
#   1x:   lru and lookahead within 5%;
#   2x:   lookahead within 1.3x of in-memory, at least 3x faster than plain
#         Unified Memory, no fault and no remote read after the warm-up steps,
#         and fetching at most 1.15x the bytes of Belady's MIN for the same
#         launches and budget (lmshim replay of its own trace).
set -u
oversub=$1 lmshim=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$oversub" --ratios 0.5,1,2 --trace "$tmp/t.jsonl" >"$tmp/out" || { cat "$tmp/out"; exit 1; }
cat "$tmp/out"
fail() { echo "oversub_test: $*" >&2; exit 1; }
# field ratio mode column
get() { awk -v r="$1" -v m="$2" -v c="$3" '$1 == r && $2 == m { print $c }' "$tmp/out"; }
# a <= b, false when a is missing or no number (a row the bench left out)
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a ~ /^[0-9.]+$/ && a + 0 <= b + 0) }'; }
num() { [[ $1 =~ ^[0-9.]+$ ]]; }

for m in lmshim-none lmshim-lru lmshim-lookahead; do
    le "$(get 0.5 $m 4)" 1.02 || fail "0.5x: $m is $(get 0.5 $m 4) x in-memory"
done
for m in lmshim-lru lmshim-lookahead; do
    le "$(get 1 $m 4)" 1.05 || fail "1x: $m is $(get 1 $m 4) x in-memory"
done
la=$(get 2 lmshim-lookahead 3) um=$(get 2 plain-um 3)
num "$la" && num "$um" || fail "2x: no lookahead or plain UM row"
le "$(get 2 lmshim-lookahead 4)" 1.3 || fail "2x: lookahead is $(get 2 lmshim-lookahead 4) x in-memory"
awk -v a="$um" -v b="$la" 'BEGIN { exit !(a >= 3 * b) }' || fail "2x: plain UM $um ms is not 3x lookahead $la ms"
[ "$(get 2 lmshim-lookahead 5)" = 0.0 ] || fail "2x: lookahead faulted"
[ "$(get 2 lmshim-lookahead 8)" = 0.0 ] || fail "2x: lookahead read remotely after the warm-up"

# Belady: 24 launches per step (8 layers x 3), the 8 warm-up steps not counted.
"$lmshim" replay --skip 192 "$tmp/t.jsonl" >"$tmp/replay" || fail "replay failed"
cat "$tmp/replay"
steps=3
min=$(awk '$1 == "belady-min" { print $2 }' "$tmp/replay")
live=$(get 2 lmshim-lookahead 6)
num "$min" && num "$live" || fail "no Belady MIN or lookahead bytes"
awk -v l="$live" -v m="$min" -v s="$steps" 'BEGIN { r = l / (m / s); printf "lookahead fetched %.1f MiB/step, Belady MIN %.1f: %.3fx\n", l, m / s, r; exit !(r <= 1.15) }' ||
    fail "lookahead fetched more than 1.15x Belady's MIN"
