#!/bin/bash
# step_bound_hostile.sh SCRIPT — scripts/step_bound.py on inputs it cannot
# use: each run must fail (non-zero status) with exactly one line on
# stderr that starts with "step_bound:", never a Python traceback.
set -u
script=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
M=1048576
dev='{"type":"device","t":1,"dev":0,"physical":1073741824,"budget":'$((100 * M))'}'
alloc='{"type":"alloc","t":3,"dev":0,"ptr":"0x2000","size":'$((20 * M))',"charge":0,"place":"managed","id":0,"fallback":false,"site":-1}'
launch='{"type":"launch","t":4,"dev":0,"seq":1,"fn":"0x1","name":"k1","stream":"0x0","chunks":[0],"dropped":0}'
kline='0 compute 0x1 0.000 1000.000 0 kernel k1 wait=0.0 stall=0.0 compute=1000.0 remote=0.0'
printf '%s\n%s\n%s\n%s\n' "$dev" "$alloc" "$launch" "$launch" > "$dir/good.jsonl"
printf '%s\n%s\n' "$kline" "$kline" > "$dir/good.txt"
: > "$dir/empty"
printf '%s\n%s\n{"type":"launch","t":4,"dev"\n' "$dev" "$alloc" > "$dir/cut.jsonl"
printf '%s\n{"type":"launch","t":4,"dev":0,"seq":1}\n' "$dev" > "$dir/nochunks.jsonl"
printf '%s\n' "$dev" > "$dir/nolaunch.jsonl"
sed 's/compute=1000.0/compute=fast/' "$dir/good.txt" > "$dir/badnum.txt"
printf '%s\n%s\n%s\n%s\n%s\n' "$dev" "$alloc" "$launch" "$alloc" "$launch" > "$dir/reused.jsonl"
mkdir "$dir/adir"
fail=0
# expect_one_line NAME ARGS...: the script fails with one "step_bound:" line.
expect_one_line() {
  local name=$1
  shift
  python3 "$script" "$@" > "$dir/out" 2> "$dir/err"
  local rc=$?
  local n
  n=$(wc -l < "$dir/err")
  if [ $rc -eq 0 ] || [ "$n" -ne 1 ] || ! grep -q '^step_bound: ' "$dir/err"; then
    echo "FAIL: $name (status $rc, $n lines on stderr):"
    cat "$dir/err"
    fail=1
  fi
}
expect_one_line "empty trace" "$dir/empty" "$dir/good.txt" --steps 2
expect_one_line "missing trace" "$dir/none.jsonl" "$dir/good.txt" --steps 2
expect_one_line "trace is a directory" "$dir/adir" "$dir/good.txt" --steps 2
expect_one_line "missing timeline" "$dir/good.jsonl" "$dir/none.txt" --steps 2
expect_one_line "cut last line" "$dir/cut.jsonl" "$dir/good.txt" --steps 2
expect_one_line "launch without chunks" "$dir/nochunks.jsonl" "$dir/good.txt" --steps 1
expect_one_line "no launches" "$dir/nolaunch.jsonl" "$dir/empty" --steps 2
expect_one_line "steps 0" "$dir/good.jsonl" "$dir/good.txt" --steps 0
expect_one_line "steps -2" "$dir/good.jsonl" "$dir/good.txt" --steps -2
expect_one_line "steps 1 (no step after the warm-up)" "$dir/good.jsonl" "$dir/good.txt" --steps 1
expect_one_line "compute not a number" "$dir/good.jsonl" "$dir/badnum.txt" --steps 2
expect_one_line "id reused" "$dir/reused.jsonl" "$dir/good.txt" --steps 2
expect_one_line "link 0" "$dir/good.jsonl" "$dir/good.txt" --steps 2 --link-gbps 0
# The good input still gives a bound.
python3 "$script" "$dir/good.jsonl" "$dir/good.txt" --steps 2 | grep -q '^step 1: bound' ||
  { echo "FAIL: good input"; fail=1; }
[ $fail -eq 0 ] && echo PASS
exit $fail
