#!/bin/bash
# frac_hint_test.sh SHAPES LMSHIM LIBLMSHIM — `lmshim report` and the
# at-exit summary (LMS_STATS=1) tell the residency engine's room, in the
# same line, and, when it was small against the managed chunks at LMS_FRAC
# above 0.5, hint at a smaller LMS_FRAC; and that hint
# is right on the shape it was measured on: bench/shapes `inference` at 3x
# runs far faster at LMS_FRAC=0.5 than at the default.
#   (a) defaults (LMS_FRAC=0.9) at 3x: the room line, the hint naming 0.9;
#   (b) LMS_FRAC=0.5 at 3x: the room line, no hint; its step at least 2x
#       shorter than (a)'s;
#   (c) 0.5x (everything fits on the device placement): no managed chunk,
#       no room line, no hint;
#   (d) LMS_FRAC=1 at 3x: the hint of chunks read over the link.
set -u
shapes=$1 cli=$2 lib=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "frac_hint_test: $*" >&2; exit 1; }

. "$(dirname "$0")/../../common/inference_run.sh"
# One run of the inference shape at RATIO, its summary at exit too.
run() {
    local name=$1 ratio=$2
    shift 2
    inference_run "$name" "$ratio" 8 4 LMS_STATS=1 "$@"
}
# The summary at exit says what the report says: the same room and hint lines.
same() {
    diff <(grep -E '^  (residency room|hint):' "$dir/$1.out") <(grep -E '^  (residency room|hint):' "$dir/$1.txt") ||
        fail "$1: the summary at exit and the report differ"
}

run dflt 3
grep -q '^  residency room: .* (the budget less .* of device chunks) for .* of managed chunks at their peak; .* fetched$' \
    "$dir/dflt.txt" || { cat "$dir/dflt.txt"; fail "(a) no room line"; }
test "$(grep -c 'hint: .*LMS_FRAC than this run.s 0.9 (say 0.5)' "$dir/dflt.txt")" = 1 ||
    { cat "$dir/dflt.txt"; fail "(a) no hint, or more than one"; }
same dflt

run half 3 LMS_FRAC=0.5
grep -q '^  residency room: ' "$dir/half.txt" || { cat "$dir/half.txt"; fail "(b) no room line"; }
! grep -q 'hint:' "$dir/half.txt" || { cat "$dir/half.txt"; fail "(b) a hint at LMS_FRAC=0.5"; }
same half
a=$(step dflt) b=$(step half)
awk -v a="$a" -v b="$b" 'BEGIN { exit !(a >= 2 * b) }' ||
    fail "(b) LMS_FRAC=0.5 took $b ms a step against $a ms at the default: the hint would be wrong"

# (d) LMS_FRAC=1: almost no room, hardly anything fetched, the chunks read
#     over the link: the summary and the report agree on that hint too.
run whole 3 LMS_FRAC=1
grep -q 'hint: .*named by launches over and over but hardly fetched' "$dir/whole.txt" ||
    { cat "$dir/whole.txt"; fail "(d) no hint at LMS_FRAC=1"; }
same whole

run fits 0.5
! grep -qE 'residency room|hint:' "$dir/fits.txt" "$dir/fits.out" ||
    { cat "$dir/fits.txt" "$dir/fits.out"; fail "(c) a room line or hint with nothing managed"; }
echo "frac_hint_test: default $a ms, LMS_FRAC=0.5 $b ms a step; hint shown only at the default"
