#!/bin/bash
# trace_io_test.sh CASE LMSHIM TRACE_PROCS TRACE_DEEP CUDART PY_ALLOC
# Traces that must come out whole and readable (runs with liblmshim.so in
# LD_PRELOAD):
#   fork          a fork child and its parent on one fixed LMS_TRACE path:
#                 the parent keeps the path, the child writes <path>.<pid>
#   spawn         a fork child that execs a new image while its parent
#                 lives: the image writes <path>.<pid>, the parent's stays
#   orphan        a fork child whose parent has exited (its file unlocked)
#                 still writes <path>.<pid>
#   exec          lines buffered before an exec are in the file; the new
#                 image writes <path>.<pid>, the first file stays whole
#   escaping      a kernel named op"quote\x and a trace path with " and \:
#                 every line is valid JSON and replay reads every launch
#   long_frames   64 frames of a 255-character function in an executable
#                 under a long path: the site line is valid JSON, frames
#                 left out whole and counted
#   named_frames  static functions of a -g program without -rdynamic: the
#                 report names them with file:line
#   python_frames two Python functions allocating through ctypes: the
#                 report names both lines
set -u
case_=$1 lmshim=$2 procs=$3 deep=$4 cudart=$5 pyfile=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "trace_io_test $case_: $*" >&2; exit 1; }
# Every line of every file given is JSON and the files are UTF-8.
valid_json() {
    env -u LD_PRELOAD python3 - "$@" <<'PY' || fail "invalid JSON in $*"
import json, sys
for f in sys.argv[1:]:
    for n, line in enumerate(open(f, encoding="utf-8"), 1):
        try:
            json.loads(line)
        except ValueError as e:
            sys.exit(f"{f}:{n}: {e}: {line[:200]!r}")
PY
}
# Sizes (MiB) of the alloc lines of a file, sorted, space-separated.
sizes() { grep -o '"type":"alloc"[^}]*"size":[0-9]*' "$1" | sed 's/.*"size"://' | awk '{printf "%d ", $1 / 1048576}'; }
export LMS_STACKS=16

case $case_ in
fork)
    LMS_TRACE="$tmp/t.jsonl" "$procs" fork || fail "the program failed"
    files=$(cd "$tmp" && ls)
    [ "$(echo "$files" | wc -l)" -eq 2 ] || fail "expected the parent's file and one child file: $files"
    child=$(echo "$files" | grep -v '^t.jsonl$') || fail "no child file: $files"
    valid_json "$tmp/t.jsonl" "$tmp/$child"
    [ "$(sizes "$tmp/t.jsonl")" = "1 3 " ] || fail "parent's allocations: $(sizes "$tmp/t.jsonl")"
    [ "$(sizes "$tmp/$child")" = "2 " ] || fail "child's allocations: $(sizes "$tmp/$child")"
    grep -q "\"parent\":$(head -1 "$tmp/t.jsonl" | grep -o '"pid":[0-9]*' | cut -d: -f2)," "$tmp/$child" ||
        fail "the child's header does not name its parent"
    [ "$child" = "t.jsonl.$(head -1 "$tmp/$child" | grep -o '"pid":[0-9]*' | cut -d: -f2)" ] ||
        fail "the child's file is not <path>.<pid>: $child"
    ;;
spawn)
    LMS_TRACE="$tmp/t.jsonl" "$procs" spawn || fail "the program failed"
    files=$(cd "$tmp" && ls)
    [ "$(echo "$files" | wc -l)" -eq 2 ] || fail "expected the parent's file and one child file: $files"
    child=$(echo "$files" | grep -v '^t.jsonl$')
    valid_json "$tmp/t.jsonl" "$tmp/$child"
    [ "$(sizes "$tmp/t.jsonl")" = "1 3 " ] || fail "parent's allocations: $(sizes "$tmp/t.jsonl")"
    [ "$(sizes "$tmp/$child")" = "5 " ] || fail "the exec'd child's allocations: $(sizes "$tmp/$child")"
    ;;
orphan)
    LMS_TRACE="$tmp/t.jsonl" "$procs" orphan || fail "the program failed"
    for i in $(seq 1 100); do   # the child outlives the parent: wait for its summary line
        [ "$(ls "$tmp" | wc -l)" -eq 2 ] && grep -q '"type":"summary"' "$tmp"/t.jsonl.* 2>/dev/null && break
        sleep 0.05
    done
    files=$(cd "$tmp" && ls)
    [ "$(echo "$files" | wc -l)" -eq 2 ] || fail "expected the parent's file and one child file: $files"
    child=$(echo "$files" | grep -v '^t.jsonl$')
    valid_json "$tmp/t.jsonl" "$tmp/$child"
    [ "$(sizes "$tmp/t.jsonl")" = "1 " ] || fail "parent's allocations: '$(sizes "$tmp/t.jsonl")'"
    [ "$(sizes "$tmp/$child")" = "2 " ] || fail "child's allocations: $(sizes "$tmp/$child")"
    ;;
exec)
    LMS_TRACE="$tmp/t.jsonl" "$procs" exec || fail "the program failed"
    files=$(cd "$tmp" && ls)
    [ "$(echo "$files" | wc -l)" -eq 2 ] || fail "expected two files: $files"
    valid_json "$tmp"/t.jsonl*
    [ "$(sizes "$tmp/t.jsonl")" = "4 " ] || fail "lines before the exec: '$(sizes "$tmp/t.jsonl")'"
    other=$(echo "$files" | grep -v '^t.jsonl$')
    [ "$(sizes "$tmp/$other")" = "5 " ] || fail "the new image's allocations: $(sizes "$tmp/$other")"
    ;;
escaping)
    dir="$tmp/we\"ird\\dir"
    mkdir -p "$dir"
    LMS_THRESHOLD=1M LMS_FRAC=0 LMS_TRACE="$dir/t.jsonl" "$procs" quote_kernel || fail "the program failed"
    valid_json "$dir/t.jsonl"
    env -u LD_PRELOAD python3 - "$dir/t.jsonl" "$dir/t.jsonl" <<'PY' || fail "names not kept"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert lines[0]["options"]["LMS_TRACE"] == sys.argv[2], lines[0]["options"]["LMS_TRACE"]
assert lines[0]["path"] == sys.argv[2], lines[0]["path"]
names = [l["name"] for l in lines if l["type"] == "launch"]
assert names == ['op"quote\\x'], names
PY
    "$lmshim" replay --budget 1G "$dir/t.jsonl" >"$tmp/replay" 2>"$tmp/err" || fail "replay failed: $(cat "$tmp/err")"
    [ -s "$tmp/err" ] && fail "replay skipped lines: $(cat "$tmp/err")"
    ;;
long_frames)
    long="$tmp"
    for i in 1 2 3 4; do long="$long/$(printf 'd%.0s' $(seq 1 240))"; done
    mkdir -p "$long"
    cp "$deep" "$long/trace_deep"
    LMS_STACKS=64 LMS_TRACE="$tmp/t.jsonl" "$long/trace_deep" || fail "the program failed"
    valid_json "$tmp/t.jsonl"
    env -u LD_PRELOAD python3 - "$tmp/t.jsonl" <<'PY' || fail "site line"
import json, sys
sites = [l for l in map(json.loads, open(sys.argv[1], encoding="utf-8")) if l["type"] == "site"]
assert len(sites) == 1, sites
s = sites[0]
print(f"site: {len(s['frames'])} frames written, {s['dropped']} left out")
assert s["dropped"] > 0, "every frame fit: the case does not test the limit"
assert len(s["frames"]) + s["dropped"] == 64, (len(s["frames"]), s["dropped"])
assert all(len(f["fn"]) == 255 for f in s["frames"][:10]), [len(f["fn"]) for f in s["frames"][:10]]
assert all(f["module"].endswith("/trace_deep") for f in s["frames"][:10])
PY
    "$lmshim" report "$tmp/t.jsonl" >"$tmp/report" 2>"$tmp/err" || fail "report failed"
    grep -q "more frames left out of the trace" "$tmp/report" || fail "the report does not say frames were left out"
    ;;
named_frames)
    LMS_TRACE="$tmp/t.jsonl" "$procs" static_sites || fail "the program failed"
    grep -q '"fn":"static_site_six"' "$tmp/t.jsonl" && fail "dladdr named a static function: the case tests nothing"
    "$lmshim" report "$tmp/t.jsonl" >"$tmp/report" 2>"$tmp/err" || fail "report failed: $(cat "$tmp/err")"
    src=$(dirname "$0")/trace_procs.c
    six=$(grep -n 'SITE_SIX' "$src" | head -1 | cut -d: -f1)
    seven=$(grep -n 'SITE_SEVEN' "$src" | head -1 | cut -d: -f1)
    grep -q "static_site_six (trace_procs.c:$six, trace_procs+0x" "$tmp/report" ||
        fail "static_site_six not named at trace_procs.c:$six: $(cat "$tmp/report")"
    grep -q "static_site_seven (trace_procs.c:$seven, trace_procs+0x" "$tmp/report" ||
        fail "static_site_seven not named at trace_procs.c:$seven"
    ;;
python_frames)
    LMS_TRACE="$tmp/t.jsonl" python3 "$pyfile" "$cudart" || fail "the Python program failed"   # on by default
    valid_json "$tmp/t.jsonl"
    "$lmshim" report "$tmp/t.jsonl" >"$tmp/report" 2>"$tmp/err" || fail "report failed: $(cat "$tmp/err")"
    w=$(grep -n 'WEIGHTS_LINE' "$pyfile" | cut -d: -f1)
    a=$(grep -n 'ACTIVATIONS_LINE' "$pyfile" | cut -d: -f1)
    grep -q "make_weights (.*py_alloc.py:$w) \[python\]" "$tmp/report" ||
        fail "make_weights at line $w not in the report: $(cat "$tmp/report")"
    grep -q "make_activations (.*py_alloc.py:$a) \[python\]" "$tmp/report" ||
        fail "make_activations at line $a not in the report"
    grep -q "step (.*py_alloc.py:" "$tmp/report" || fail "the caller's frame is missing"
    ;;
*) fail "unknown case" ;;
esac
exit 0
