#!/bin/bash
# run_fuzz.sh FUZZER SEED SECONDS — fuzzes the trace readers for SECONDS,
# starting from a seed trace; fails on any crash, leak or sanitizer report.
set -uo pipefail
fuzzer=$(realpath "$1") seed=$(realpath "$2")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/corpus"
cp "$seed" "$dir/corpus/seed.jsonl"
printf '{"type":"header","format":1}\n{"type":"alloc","t":1,"dev":0,"ptr":"0x1000","size":64,"place":"device"}\n' >"$dir/corpus/small.jsonl"
cd "$dir" && "$fuzzer" -max_total_time="$3" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 corpus >log 2>&1
status=$?
tail -n 15 log
exit $status
