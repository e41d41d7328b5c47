#!/bin/bash
# breakers_test.sh CASE LMSHIM SIG_IGNORED CUDART PY_HOSTILE FORK_SITE
# Traces and reports under hostile conditions (runs with liblmshim.so in
# LD_PRELOAD):
#   ignored_signals  a program that ignores SIGINT/SIGTERM before the trace
#                    opens keeps them ignored, also across exec
#   reset_handler    a handler the program installed with SA_RESETHAND
#                    before the trace opened runs once, as it asked
#   html_hostile     Python frames from files named with newlines and
#                    "__proto__", and a hand-written trace whose policy is
#                    "__proto__" and whose names hold </script>: the text
#                    report keeps each frame on one line; the HTML page
#                    carries no </script> of the trace's and draws in
#                    Chromium without an error (skipped without Chromium)
#   many_moves       a trace of 100000 live managed chunks and 200000
#                    fetches and evictions is reported in seconds (each
#                    line finds its chunk by id without a scan)
#   py_subinterp     after a sub-interpreter ran, threads allocating with
#                    the GIL released: no Python frames read (and no
#                    crash); an allocation holding the GIL still has them
#   other_device     a prefetch/evict line naming a chunk of another device
#                    is reported and skipped: no byte count wraps around
#   link_inf         --link-gbps inf is refused (it made the page's data
#                    invalid JSON)
#   html_numbers     the HTML report's data stays in order for a trace
#                    whose peak nears 2^64 bytes (budget curve) and one
#                    with more samples than buckets, some stamped before
#                    the header (timeline)
#   fork_lock_held   a fork while another thread holds the site table's
#                    lock: the child's allocation does not deadlock
#   fork_site_in_child  a fork child allocating from a stack its parent
#                    used: the child's file describes that site
#   fast_exit        fork children ending with _exit and _Exit keep their
#                    lines (the buffer is written before the process ends)
#   late_exit        lines written by the program's own at-exit handler
#                    (registered before lmshim's, so run after it) reach
#                    the file
#   grandchild       a fork child's fork child names its own parent in its
#                    header, also when that child made no CUDA call
#   fd_reused        the program closes the trace's descriptor and opens a
#                    file of its own under that number: no trace line
#                    goes into the program's file
#   orphan_exec      a fork child that execs a traced program after its
#                    parent exited leaves the parent's file alone
#   not_a_trace      LMS_TRACE naming an existing file that is not a trace
#                    (no lmshim header): the file is left whole, the trace
#                    goes to <path>.<pid>
#   many_files       a report of 300 files (a fixed LMS_TRACE path and 300
#                    processes, or 300 ranks) reads and shows every file
#   many_sites       a trace of 100000 sites and 200000 allocations is
#                    reported in seconds (each line finds its site by id)
#   py_code_reuse    allocations from code objects freed one after the
#                    other (their addresses reused) each name their own file
#   py_not_utf8      a Python file name that is not UTF-8 reaches the trace
#                    byte for byte (each byte as its \u00XX escape)
set -u
case_=$1 lmshim=$2 sigprog=$3 cudart=$4 pyfile=$5 forksite=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "breakers_test $case_: $*" >&2; exit 1; }

case $case_ in
ignored_signals)
    LMS_TRACE="$tmp/t.jsonl" "$sigprog" || fail "signals the program ignores were not ignored any more"
    grep -q '"type":"header"' "$tmp/t.jsonl" || fail "no trace written: the case tests nothing"
    ;;
reset_handler)
    LMS_TRACE="$tmp/t.jsonl" "$sigprog" resethand
    rc=$?
    [ $rc -eq 130 ] || fail "the second SIGINT did not end the program (exit status $rc)"
    grep -q '"type":"header"' "$tmp/t.jsonl" || fail "no trace written: the case tests nothing"
    ;;
html_hostile)
    LMS_STACKS=16 LMS_TRACE="$tmp/py.jsonl" python3 "$pyfile" "$cudart" >/dev/null || fail "the Python program failed"
    env -u LD_PRELOAD python3 "$(dirname "$0")/hostile_trace.py" "$tmp/hand.jsonl" || fail "writing the trace"
    "$lmshim" report "$tmp/py.jsonl" >"$tmp/report" 2>"$tmp/err" || fail "report failed: $(cat "$tmp/err")"
    grep -q '^ *__proto__$' "$tmp/report" && fail "a file name's newline split a frame: $(cat "$tmp/report")"
    grep -qF 'hostile (a\n__proto__\nb.py:2) [python]' "$tmp/report" ||
        fail "the frame is not on one line, its newlines shown as \\n: $(cat "$tmp/report")"
    "$lmshim" report "$tmp/hand.jsonl" "$tmp/py.jsonl" --html "$tmp/page.html" >/dev/null 2>"$tmp/err" ||
        fail "report --html failed: $(cat "$tmp/err")"
    [ "$(grep -o '</script' "$tmp/page.html" | wc -l)" -eq 2 ] || fail "the page holds a </script> of the trace's"
    browser=$(command -v chromium || command -v chromium-browser || true)
    [ -n "$browser" ] || { echo "no chromium: the page was not drawn"; exit 77; }
    timeout 120 env -u LD_PRELOAD "$browser" --headless --no-sandbox --disable-gpu --window-size=1200,1400 \
        --enable-logging=stderr --v=0 --virtual-time-budget=5000 --dump-dom "file://$tmp/page.html#selftest" \
        >"$tmp/dom" 2>"$tmp/log" || fail "chromium failed"
    grep -E "CONSOLE|Uncaught" "$tmp/log" && fail "the page reported errors"
    grep -q '<body[^>]*data-status="ok"' "$tmp/dom" || fail "the page did not draw: $(grep -o 'error: [^<]*' "$tmp/dom")"
    grep -q 'data-result="pass"' "$tmp/dom" || fail "the page's self test failed"
    grep -qF '&lt;/script&gt;&lt;i&gt;' "$tmp/dom" || fail "the hostile option is not shown as text"
    ;;
py_not_utf8)
    LMS_STACKS=16 LMS_TRACE="$tmp/py.jsonl" python3 "$pyfile" "$cudart" >/dev/null || fail "the Python program failed"
    env -u LD_PRELOAD python3 - "$tmp/py.jsonl" <<'PY' || fail "the file name did not reach the trace"
import json, sys
sites = {}
sizes = {}
for line in open(sys.argv[1], encoding="utf-8"):
    o = json.loads(line)
    if o["type"] == "site":
        sites[o["id"]] = [f["file"] for f in o["py"]]
    elif o["type"] == "alloc":
        sizes[o["size"] >> 20] = o["site"]
files = sites[sizes[2]]
assert "bad\xff\xfe.py" in files, files
PY
    "$lmshim" report "$tmp/py.jsonl" >"$tmp/report" || fail "report failed"
    grep -qa $'hostile (bad\xff\xfe.py:2) \[python\]' "$tmp/report" || fail "the report lost the file's bytes"
    ;;
many_moves)
    env -u LD_PRELOAD python3 "$(dirname "$0")/many_moves.py" "$tmp/t.jsonl" 100000 200000 || fail "writing the trace"
    start=$(date +%s)
    timeout 30 "$lmshim" report "$tmp/t.jsonl" >"$tmp/report" 2>"$tmp/err" || fail "report failed or took over 30 s"
    echo "report: $(($(date +%s) - start)) s"
    # 100000 fetches and 100000 evictions of 4 KiB: 390.62M each way
    grep -Eq '^0 +0 .* 390.62M +390.62M ' "$tmp/report" || fail "wrong totals: $(head -3 "$tmp/report")"
    ;;
py_subinterp)
    LMS_STACKS=16 LMS_TRACE="$tmp/py.jsonl" python3 "$(dirname "$0")/py_subinterp.py" "$cudart" >/dev/null
    rc=$?
    [ $rc -eq 77 ] && { echo "no sub-interpreters in this Python: skipped"; exit 77; }
    [ $rc -eq 0 ] || fail "the Python program failed ($rc)"
    env -u LD_PRELOAD python3 - "$tmp/py.jsonl" <<'PY' || fail "frames"
import json, sys
sites, by_size = {}, {}
for line in open(sys.argv[1], encoding="utf-8"):
    o = json.loads(line)
    if o["type"] == "site":
        sites[o["id"]] = [f["fn"] for f in o["py"]]
    elif o["type"] == "alloc":
        by_size.setdefault(o["size"] >> 20, []).append(o["site"])
assert len(by_size[9]) == 160, by_size.keys()
assert all(sites[s] == [] for s in by_size[9]), "frames read without the GIL"
assert "held" in sites[by_size[3][0]], sites[by_size[3][0]]
PY
    ;;
other_device)
    env -u LD_PRELOAD python3 - "$tmp/t.jsonl" <<'PY' || fail "writing the trace"
import json, sys
lines = [{"type": "header", "format": 1, "lmshim": "0", "pid": 1, "rank": 0, "t": 1000, "path": "x", "parent": -1,
          "options": {}}]
lines += [{"type": "device", "t": 1000, "dev": d, "physical": 1 << 30, "budget": 1 << 29} for d in (0, 1)]
lines += [{"type": "alloc", "t": 1001, "dev": 1, "ptr": "0x1000", "size": 2 << 20, "charge": 0, "place": "managed",
           "id": 0, "fallback": False, "site": -1}]
lines += [{"type": k, "t": 1002 + i, "dev": 0, "id": 0, "bytes": 2 << 20, "ahead": False}
          for i, k in enumerate(["prefetch", "evict", "prefetch"])]
lines += [{"type": "free", "t": 1009, "dev": 1, "ptr": "0x1000", "size": 2 << 20, "place": "managed"}]
open(sys.argv[1], "w").write("".join(json.dumps(l) + "\n" for l in lines))
PY
    "$lmshim" report "$tmp/t.jsonl" >"$tmp/report" 2>"$tmp/err" || fail "report failed"
    [ "$(grep -c 'chunk of another device' "$tmp/err")" -eq 3 ] || fail "the lines were not reported: $(cat "$tmp/err")"
    grep -E '[0-9]{4,}\.[0-9]+[TPE]' "$tmp/report" && fail "a count wrapped around: $(cat "$tmp/report")"
    grep -Eq '^0 +1 +0 +512M ' "$tmp/report" || fail "device 1's chunk was made resident: $(head -3 "$tmp/report")"
    ;;
link_inf)
    env -u LD_PRELOAD python3 "$(dirname "$0")/many_moves.py" "$tmp/t.jsonl" 2 4 || fail "writing the trace"
    "$lmshim" report "$tmp/t.jsonl" --link-gbps inf --html "$tmp/p.html" >/dev/null 2>&1 && fail "--link-gbps inf accepted"
    "$lmshim" report "$tmp/t.jsonl" --link-gbps 1e3 --html "$tmp/p.html" >/dev/null 2>&1 || fail "--link-gbps 1e3 refused"
    ;;
html_numbers)
    env -u LD_PRELOAD python3 - "$tmp" <<'PY' || fail "writing the traces"
import json, sys
head = {"type": "header", "format": 1, "lmshim": "0", "pid": 1, "rank": 0, "t": 100000, "path": "x", "parent": -1,
        "options": {}}
dev = {"type": "device", "t": 100000, "dev": 0, "physical": 1 << 30, "budget": 1 << 29}
def alloc(t, ptr, size):
    return {"type": "alloc", "t": t, "dev": 0, "ptr": hex(ptr), "size": size, "charge": size, "place": "device",
            "id": -1, "fallback": False, "site": -1}
huge = [head, dev, alloc(100001, 0x1000, 9 * 10**18), alloc(100002, 0x2000, 9 * 10**18)]
early = [head, dev] + [alloc(100000 - 50 + i, 0x1000 + 4096 * i, 4096) for i in range(5000)]
for name, lines in (("huge", huge), ("early", early)):
    open(f"{sys.argv[1]}/{name}.jsonl", "w").write("".join(json.dumps(l) + "\n" for l in lines))
PY
    for t in huge early; do
        "$lmshim" report "$tmp/$t.jsonl" --html "$tmp/$t.html" >/dev/null 2>"$tmp/err" || fail "report --html $t failed"
    done
    env -u LD_PRELOAD python3 - "$tmp" <<'PY' || fail "data out of order"
import json, re, sys
def data(name):
    page = open(f"{sys.argv[1]}/{name}.html", encoding="utf-8").read()
    return json.loads(re.search(r'<script id="lms-data" type="application/json">(.*?)</script>', page, re.S).group(1))
p = data("huge")["ranks"][0]["panels"][0]
b = p["curve"]["budgets"]
assert all(x <= y for x, y in zip(b, b[1:])) and b[-1] > 0, ("budgets", b)
p = data("early")["ranks"][0]["panels"][0]
assert not p["exact"], "fewer samples than buckets: the case tests nothing"
assert all(0 <= x <= y for x, y in zip(p["t"], p["t"][1:])), ("times", [x for x in p["t"] if x < 0][:5], p["t"][-3:])
PY
    ;;
fork_lock_held)
    LMS_STACKS=8 LMS_TRACE="$tmp/t.jsonl" "$forksite" lock_held
    rc=$?
    [ $rc -eq 77 ] && { echo "calloc belongs to the sanitizer: skipped"; exit 77; }
    [ $rc -eq 0 ] || fail "the program failed ($rc)"
    ;;
fork_site_in_child)
    LMS_STACKS=8 LMS_TRACE="$tmp/t.jsonl" "$forksite" site_in_child || fail "the program failed"
    env -u LD_PRELOAD python3 - "$tmp" <<'PY' || fail "a file names a site it does not describe"
import glob, json, sys
files = glob.glob(sys.argv[1] + "/t.jsonl*")
assert len(files) == 2, files
for f in files:
    lines = [json.loads(l) for l in open(f, encoding="utf-8")]
    sites = {l["id"] for l in lines if l["type"] == "site"}
    named = {l["site"] for l in lines if l["type"] == "alloc"}
    assert named and named <= sites, (f, named, sites)
PY
    ;;
fast_exit)
    LMS_TRACE="$tmp/t.jsonl" "$forksite" fast_exit || fail "the program failed"
    [ "$(ls "$tmp" | wc -l)" -eq 3 ] || fail "expected three files: $(ls "$tmp")"
    for size in 2097152 3145728; do
        grep -qs "\"size\":$size" "$tmp"/t.jsonl.* || fail "the lines of the child allocating $size bytes are lost"
    done
    ;;
late_exit)
    LMS_TRACE="$tmp/t.jsonl" "$forksite" late_exit || fail "the program failed"
    grep -q '"type":"free"' "$tmp/t.jsonl" || fail "the handler's free is lost: $(cat "$tmp/t.jsonl")"
    grep -q '"size":3145728' "$tmp/t.jsonl" || fail "the handler's allocation is lost"
    ;;
grandchild)
    child=$(LMS_TRACE="$tmp/t.jsonl" "$forksite" grandchild) || fail "the program failed"
    file=$(grep -ls '"size":2097152' "$tmp"/t.jsonl.*) || fail "no grandchild file: $(ls "$tmp")"
    grep -q "\"parent\":$child," "$file" || fail "the header does not name $child: $(head -c 200 "$file")"
    ;;
fd_reused)
    LMS_TRACE="$tmp/t.jsonl" "$forksite" fd_reused "$tmp/mine.txt" 2>"$tmp/err" || fail "the program failed"
    [ "$(cat "$tmp/mine.txt")" = "program data" ] || fail "the program's file holds more: $(head -c 300 "$tmp/mine.txt")"
    ;;
orphan_exec)
    LMS_TRACE="$tmp/t.jsonl" "$forksite" orphan_exec || fail "the program failed"
    for i in $(seq 1 200); do   # the exec'd image outlives the parent: wait for its summary line
        grep -qs '"size":5242880' "$tmp"/t.jsonl* && grep -qs '"type":"summary"' $(grep -ls '"size":5242880' "$tmp"/t.jsonl*) && break
        sleep 0.05
    done
    grep -q '"size":1048576' "$tmp/t.jsonl" || fail "the parent's lines are gone: $(ls "$tmp"; cat "$tmp"/t.jsonl*)"
    [ "$(ls "$tmp" | wc -l)" -eq 2 ] || fail "expected two files: $(ls "$tmp")"
    grep -qs '"size":5242880' "$tmp"/t.jsonl.* || fail "the exec'd program's lines are missing"
    ;;
many_sites)
    env -u LD_PRELOAD python3 "$(dirname "$0")/many_sites.py" "$tmp/t.jsonl" 100000 200000 || fail "writing the trace"
    start=$(date +%s)
    timeout 30 "$lmshim" report "$tmp/t.jsonl" >"$tmp/report" 2>"$tmp/err" || fail "report failed or took over 30 s"
    echo "report: $(($(date +%s) - start)) s"
    grep -q "site 99999: peak 4K in 200000 allocations" "$tmp/report" || fail "wrong site: $(grep -m2 'site ' "$tmp/report")"
    ;;
py_code_reuse)
    LMS_STACKS=8 LMS_TRACE="$tmp/py.jsonl" python3 "$(dirname "$0")/py_code_reuse.py" "$cudart" >/dev/null ||
        fail "the Python program failed"
    env -u LD_PRELOAD python3 - "$tmp/py.jsonl" <<'PY' || fail "allocations named another module's file"
import json, sys
sites, wrong, n = {}, [], 0
for line in open(sys.argv[1], encoding="utf-8"):
    o = json.loads(line)
    if o["type"] == "site":
        sites[o["id"]] = [f["file"] for f in o["py"]]
    elif o["type"] == "alloc" and o["size"] % 4096 == 0 and o["size"] <= 50 * 4096:
        n += 1
        i = o["size"] // 4096 - 1
        if "gen_%03d.py" % i not in sites.get(o["site"], []):
            wrong.append((i, sites.get(o["site"])))
assert n == 50, n
assert not wrong, f"{len(wrong)} of 50 wrong, e.g. {wrong[:2]}"
PY
    ;;
not_a_trace)
    printf 'my notes\nkeep them\n' >"$tmp/notes.txt"
    touch -d '2 hours ago' "$tmp/notes.txt"
    LMS_TRACE="$tmp/notes.txt" "$forksite" after_exec || fail "the program failed"
    [ "$(cat "$tmp/notes.txt")" = "$(printf 'my notes\nkeep them')" ] || fail "the file was overwritten"
    grep -qs '"type":"header"' "$tmp"/notes.txt.* || fail "no trace next to it: $(ls "$tmp")"
    ;;
many_files)
    env -u LD_PRELOAD python3 - "$tmp" <<'PY' || fail "writing the traces"
import json, sys
for r in range(300):
    lines = [{"type": "header", "format": 1, "lmshim": "0", "pid": 1000 + r, "rank": r, "t": 1000, "path": "x",
              "parent": -1, "options": {}},
             {"type": "device", "t": 1000, "dev": 0, "physical": 1 << 30, "budget": 1 << 29},
             {"type": "alloc", "t": 1001, "dev": 0, "ptr": "0x1000", "size": 1 << 20, "charge": 1 << 20,
              "place": "device", "id": -1, "fallback": False, "site": -1}]
    open("%s/t.jsonl.%d" % (sys.argv[1], 1000 + r), "w").write("".join(json.dumps(l) + "\n" for l in lines))
PY
    "$lmshim" report "$tmp"/t.jsonl.* --html "$tmp/page.html" >"$tmp/report" 2>"$tmp/err" ||
        fail "report failed: $(head -3 "$tmp/err")"
    [ "$(grep -Ec '^[0-9]+ +0 +1M ' "$tmp/report")" -eq 300 ] || fail "not every file is in the report"
    [ "$(grep -o '"rank":[0-9]*,"path"' "$tmp/page.html" | wc -l)" -eq 300 ] || fail "not every file is in the page"
    ;;
*) fail "unknown case" ;;
esac
exit 0
