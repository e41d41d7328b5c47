#!/bin/bash
# frac_one_test.sh SHAPES LMSHIM LIBLMSHIM — at LMS_FRAC=1 (or 0.99) the
# residency engine has next to no room, so it fetches almost nothing and
# reads the managed chunks over the link at every launch: the slowest
# case, and `lmshim report` must hint at a smaller LMS_FRAC there too
# (not only when the chunks were fetched at least once over).
#   (a) bench/shapes `inference` 3x at LMS_FRAC=1: a hint naming 1, and
#       the same at LMS_FRAC=0.5 at least 2x faster a step;
#   (b) a hand-written trace: 1000 managed bytes named by launches 3 times
#       over, 100 fetched, 100 of room: a hint; only the 600-byte chunk
#       named, once: no hint (the chunks were not needed over and over);
#   (c) LMS_POLICY=none never fetches, whatever the room: a smaller
#       LMS_FRAC only reads more over the link (inference 3x at 0.5 is
#       slower than at 1 there), so no hint under it.
set -u
shapes=$1 cli=$2 lib=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "frac_one_test: $*" >&2; exit 1; }

. "$(dirname "$0")/../../common/inference_run.sh"
inference_run one 3 6 3 LMS_FRAC=1
inference_run half 3 6 3 LMS_FRAC=0.5
a=$(step one) b=$(step half)
awk -v a="$a" -v b="$b" 'BEGIN { exit !(a >= 2 * b) }' || fail "(a) LMS_FRAC=1 $a ms a step, 0.5 $b ms: not the case"
test "$(grep -c "^  hint: .* LMS_FRAC than this run's 1 (say 0.5)" "$dir/one.txt")" = 1 ||
    { cat "$dir/one.txt"; fail "(a) no hint at LMS_FRAC=1 ($a ms a step against $b ms at 0.5)"; }

hand() {   # hand LAUNCHES: 900 of device chunks, then 1000 managed in two chunks
    printf '{"type":"header","format":1,"lmshim":"0.1.0","pid":1,"rank":0,"t":1000,"path":"x","parent":-1,"options":{"LMS_FRAC":"1"}}\n'
    printf '{"type":"device","t":1001,"dev":0,"physical":4096,"budget":1000}\n'
    printf '{"type":"alloc","t":1002,"dev":0,"ptr":"0x1000","size":900,"charge":900,"place":"device","id":-1,"fallback":false,"site":-1}\n'
    printf '{"type":"alloc","t":1003,"dev":0,"ptr":"0x10000","size":600,"charge":0,"place":"managed","id":0,"fallback":false,"site":-1}\n'
    printf '{"type":"alloc","t":1003,"dev":0,"ptr":"0x20000","size":400,"charge":0,"place":"managed","id":1,"fallback":false,"site":-1}\n'
    printf '{"type":"prefetch","t":1004,"dev":0,"id":0,"bytes":100,"ahead":false}\n'
    for ((i = 0; i < $1; i++)); do
        printf '{"type":"launch","t":%d,"dev":0,"seq":%d,"fn":"0x1","name":"k","stream":"0x0","chunks":[0,1],"dropped":0}\n' $((1005 + i)) $((i + 1))
    done
    printf '{"type":"launch","t":2000,"dev":0,"seq":99,"fn":"0x1","name":"k","stream":"0x0","chunks":[7],"dropped":0}\n'
}
hand 3 >"$dir/h3.jsonl"
"$cli" report "$dir/h3.jsonl" >"$dir/h3.txt" 2>&1 || fail "(b) report failed"
test "$(grep -c '^  hint: ' "$dir/h3.txt")" = 1 || { cat "$dir/h3.txt"; fail "(b) no hint for chunks read 3 times over"; }
{ hand 0; printf '{"type":"launch","t":1005,"dev":0,"seq":1,"fn":"0x1","name":"k","stream":"0x0","chunks":[0],"dropped":0}\n'
  printf '{"type":"launch","t":1006,"dev":0,"seq":2,"fn":"0x1","name":"k","stream":"0x0","chunks":[],"dropped":0}\n'; } >"$dir/h1.jsonl"
"$cli" report "$dir/h1.jsonl" >"$dir/h1.txt" 2>&1 || fail "(b) report failed"
test "$(grep -c '^  hint: ' "$dir/h1.txt")" = 0 || { cat "$dir/h1.txt"; fail "(b) a hint for chunks named once"; }
inference_run none1 3 6 3 LMS_FRAC=1 LMS_POLICY=none
inference_run nonehalf 3 6 3 LMS_FRAC=0.5 LMS_POLICY=none
c=$(step none1) d=$(step nonehalf)
awk -v c="$c" -v d="$d" 'BEGIN { exit !(d > c) }' || fail "(c) under LMS_POLICY=none 0.5 ($d ms) is not slower than 1 ($c ms)"
! grep -q '^  hint: ' "$dir/none1.txt" || { cat "$dir/none1.txt"; fail "(c) a hint under LMS_POLICY=none"; }
hand 3 | sed 's/"LMS_FRAC":"1"/"LMS_FRAC":"1","LMS_POLICY":"none"/' >"$dir/hn.jsonl"
"$cli" report "$dir/hn.jsonl" >"$dir/hn.txt" 2>&1 || fail "(c) report failed"
! grep -q '^  hint: ' "$dir/hn.txt" || { cat "$dir/hn.txt"; fail "(c) a hint for a hand-written trace under none"; }
echo "frac_one_test: LMS_FRAC=1 $a ms, 0.5 $b ms a step, hint at 1; under LMS_POLICY=none 1 $c ms, 0.5 $d ms, no hint"
