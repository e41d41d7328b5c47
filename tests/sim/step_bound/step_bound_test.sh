#!/bin/bash
# step_bound_test.sh SCRIPT — scripts/step_bound.py on a trace and a
# timeline written here: a 100 MiB budget, a 50 MiB device chunk (room
# 50 MiB), managed chunks a, b, c of 20 MiB; each step launches k1(a)
# then k2(b, c), 1 ms of compute each; link 1 GB/s (1 byte per ns).
# From the first launch all three chunks (60 MiB) are needed and only
# 50 MiB fit, so 10 MiB must cross during the step: the bound is
# 0 + max(2 ms, 10 MiB / 1 GB/s) = 10.486 ms (compute alone: 2 ms).
set -u
script=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
M=1048576
{
  echo '{"type":"device","t":1,"dev":0,"physical":1073741824,"budget":'$((100 * M))'}'
  echo '{"type":"alloc","t":2,"dev":0,"ptr":"0x1000","size":'$((50 * M))',"charge":'$((50 * M))',"place":"device","id":-1,"fallback":false,"site":-1}'
  for id in 0 1 2; do
    echo '{"type":"alloc","t":3,"dev":0,"ptr":"0x'$((2 + id))'000","size":'$((20 * M))',"charge":0,"place":"managed","id":'$id',"fallback":false,"site":-1}'
  done
  for step in 0 1; do
    echo '{"type":"launch","t":4,"dev":0,"seq":'$((2 * step + 1))',"fn":"0x1","name":"k1","stream":"0x0","chunks":[0],"dropped":0}'
    echo '{"type":"launch","t":5,"dev":0,"seq":'$((2 * step + 2))',"fn":"0x2","name":"k2","stream":"0x0","chunks":[1,2],"dropped":0}'
  done
} > "$dir/t.jsonl"
for step in 0 1; do
  echo "0 compute 0x1 0.000 1000.000 0 kernel k1 wait=0.0 stall=0.0 compute=1000.0 remote=0.0"
  echo "0 compute 0x1 1000.000 2000.000 0 kernel k2 wait=0.0 stall=0.0 compute=1000.0 remote=0.0"
done > "$dir/tl.txt"
out=$(python3 "$script" "$dir/t.jsonl" "$dir/tl.txt" --steps 2 --link-gbps 1) || { echo "$out"; exit 1; }
echo "$out"
echo "$out" | grep -q '^room 50.0 MiB, 2 launches per step$' || { echo "FAIL: room"; exit 1; }
echo "$out" | grep -q '^step 1: bound 10.486 ms (compute 2.000 ms; from launch 0 of the step, 10.0 MiB must cross)$' ||
  { echo "FAIL: bound"; exit 1; }
# A timeline that does not match the trace is refused.
head -3 "$dir/tl.txt" > "$dir/short.txt"
if python3 "$script" "$dir/t.jsonl" "$dir/short.txt" --steps 2 2>/dev/null; then echo "FAIL: mismatch accepted"; exit 1; fi
# Steps that launch different kernels are refused.
sed '4s/ k2 / k3 /' "$dir/tl.txt" > "$dir/differ.txt"
if python3 "$script" "$dir/t.jsonl" "$dir/differ.txt" --steps 2 2>/dev/null; then echo "FAIL: varying steps accepted"; exit 1; fi
echo PASS
