#!/bin/bash
# trace_test.sh LMSHIM GOLDEN — traces of the golden workload and their reports:
#  - exact numbers (peak, placements, fetched/evicted bytes, launches) and
#    the top allocation site resolved to the function in the test program;
#  - four ranks write four files and one merged report;
#  - a malformed line and a truncated last line are reported as file:line and
#    the rest of the report still prints;
#  - the Chrome trace is valid JSON with the expected number of events.
set -u
lmshim=$1 golden=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "trace_test: $*" >&2; exit 1; }
export LMS_LIMIT=1G LMS_FRAC=0.5 LMS_THRESHOLD=64M LMS_POLICY=lru LMS_STACKS=8 SIMGPU_MEM=4G

for r in 0 1 2 3; do
    RANK=$r LMS_TRACE="$tmp/t-%r.jsonl" "$golden" >/dev/null || fail "rank $r failed"
done
[ "$(ls "$tmp"/t-*.jsonl | wc -l)" -eq 4 ] || fail "expected four trace files: $(ls "$tmp")"

"$lmshim" report "$tmp/t-0.jsonl" --chrome "$tmp/c.json" --svg "$tmp/t.svg" >"$tmp/report" 2>"$tmp/err" ||
    fail "report failed: $(cat "$tmp/err")"
cat "$tmp/report"
[ -s "$tmp/err" ] && fail "unexpected complaints: $(cat "$tmp/err")"
row=$(awk '$1 == "0" && $2 == "0"' "$tmp/report")
# rank dev peak budget device managed host pinned fallbacks oom prefetched evicted launches
[ "$(echo "$row" | awk '{print $3, $4, $5, $6, $7, $9, $10, $11, $12, $13}')" = "1G 1G 2 4 0 0 0 1G 512M 2" ] ||
    fail "golden numbers differ: $row"
top=$(grep -A2 '^    1\. site' "$tmp/report")
echo "$top" | grep -q 'peak 1G in 4 allocations' || fail "top site: $top"
echo "$top" | grep -q 'alloc_activations (trace_golden.c:[0-9]*, trace_golden+' || fail "top site not resolved to alloc_activations: $top"
grep -A1 '^    2\. site' "$tmp/report" | grep -q 'peak 512M in 2 allocations' || fail "second site"
grep -A2 '^    2\. site' "$tmp/report" | grep -q 'alloc_weights' || fail "second site not alloc_weights"

# Four ranks, one merged report.
"$lmshim" report "$tmp"/t-0.jsonl "$tmp"/t-1.jsonl "$tmp"/t-2.jsonl "$tmp"/t-3.jsonl >"$tmp/merged" ||
    fail "merged report failed"
[ "$(awk '$2 == "0" && $3 == "1G" {print $1}' "$tmp/merged" | tr '\n' ' ')" = "0 1 2 3 " ] ||
    fail "merged report rows: $(head -6 "$tmp/merged")"

# A malformed line and a truncated end.
{ head -n 3 "$tmp/t-0.jsonl"; echo '{"type":"alloc","dev":0,,}'; sed -n '4,$p' "$tmp/t-0.jsonl" | head -c -40; } >"$tmp/bad.jsonl"
"$lmshim" report "$tmp/bad.jsonl" >"$tmp/badreport" 2>"$tmp/baderr" || fail "report of a damaged trace failed"
grep -q "bad.jsonl:4: " "$tmp/baderr" || fail "no file:line for the malformed line: $(cat "$tmp/baderr")"
grep -q "truncated" "$tmp/baderr" || fail "the truncated line was not reported: $(cat "$tmp/baderr")"
grep -q '^0     0 ' "$tmp/badreport" || fail "no report for the damaged trace"

# The Chrome trace: valid JSON; a counter per memory change, a slice per fetch and eviction.
moves=$(grep -c '"type":"\(prefetch\|evict\)"' "$tmp/t-0.jsonl")
changes=$(grep -c '"type":"\(alloc\|free\|prefetch\|evict\)"' "$tmp/t-0.jsonl")
env -u LD_PRELOAD python3 - "$tmp/c.json" "$moves" "$changes" <<'PY' || fail "chrome trace check failed"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
slices = [e for e in events if e["ph"] == "X"]
counters = [e for e in events if e["ph"] == "C"]
print(f"chrome trace: {len(slices)} slices, {len(counters)} counters")
assert len(slices) == int(sys.argv[2]), len(slices)
assert len(counters) == int(sys.argv[3]), len(counters)
assert {e["name"] for e in slices} == {"prefetch", "evict"}
PY
grep -q '<polyline' "$tmp/t.svg" || fail "the SVG has no lines"
exit 0
