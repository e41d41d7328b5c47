#!/bin/bash
# html_test.sh LMSHIM TRACE_STEPS OVERSUB_DEMO — `lmshim report --html` in
# headless Chromium, on the demo's trace and on a four-rank trace of a
# training loop: the page draws without a script error or console error,
# the numbers of timeline points, sites and budget-curve points in the DOM
# are those of the traces, the page's self test (#selftest: zoom by wheel
# and drag, reset, metric switch, icicle zoom, rank switch) passes, and the
# budget the page says moves nothing is the one `lmshim replay` agrees with.
# HTML_SCREENSHOT=path keeps a screenshot of the four-rank page.
# Skipped (77) without Chromium.
set -u
lmshim=$1 steps=$2 demo=$3
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "no chromium: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Chromium's DOM after load (and its console on stderr) for page $1.
dom() {
    timeout 120 env -u LD_PRELOAD "$browser" --headless --no-sandbox --disable-gpu --window-size=1200,1400 \
        --enable-logging=stderr --v=0 --virtual-time-budget=5000 --dump-dom "file://$1#selftest" \
        >"$1.dom" 2>"$1.log" || fail "chromium on $1"
    if grep -E "CONSOLE|Uncaught" "$1.log"; then fail "console messages on $1"; fi
}

# 1. The demo: 8 x 256 MiB on a 1 GiB device, with stacks.
LMS_STACKS=16 "$lmshim" run --sim --sim-mem 1G --trace "$tmp/demo.jsonl" -- "$demo" >/dev/null 2>&1 ||
    fail "demo run"
"$lmshim" report "$tmp/demo.jsonl" --html "$tmp/demo.html" >/dev/null || fail "report --html (demo)"
dom "$tmp/demo.html"

# 2. Four ranks of a training loop, each of its own length, under a budget
#    smaller than its working set.
for r in 0 1 2 3; do
    RANK=$r LD_PRELOAD=$LMSHIM_LIB LMS_LIMIT=1G LMS_FRAC=0.5 LMS_THRESHOLD=16M LMS_POLICY=lru LMS_STACKS=16 \
        SIMGPU_MEM=4G LMS_TRACE="$tmp/rank-%r.jsonl" "$steps" $((3 + r)) 6 128 >/dev/null || fail "rank $r"
done
"$lmshim" report "$tmp"/rank-{0,1,2,3}.jsonl --html "$tmp/ranks.html" >/dev/null || fail "report --html (ranks)"
dom "$tmp/ranks.html"
timeout 120 env -u LD_PRELOAD "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1200,1500 --virtual-time-budget=5000 --screenshot="$tmp/ranks.png" \
    "file://$tmp/ranks.html" >/dev/null 2>&1
# a drawn page compresses to far more than a blank one (about 2 KB)
[ "$(stat -c %s "$tmp/ranks.png" 2>/dev/null || echo 0)" -gt 50000 ] || fail "screenshot missing or blank"
[ -z "${HTML_SCREENSHOT:-}" ] || cp "$tmp/ranks.png" "$HTML_SCREENSHOT"
series=$("$lmshim" replay --budget 1G "$tmp/demo.jsonl" | tail -n +3 | wc -l)

# What the DOM says against what the traces hold; then the page's `need`
# checked with `lmshim replay` just at it and 1 MiB below it.
env -u LD_PRELOAD python3 - "$tmp" "$series" "$lmshim" <<'PY' || exit 1
import json, re, subprocess, sys
tmp, series, lmshim = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def attrs(dom, tag_id):
    m = re.search(r'<(\w+) ' + ('id="%s"' % tag_id if tag_id != 'body' else '') + r'[^>]*>', dom) \
        if tag_id != 'body' else re.search(r'<body[^>]*>', dom)
    assert m, "no element " + tag_id
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(0)))

def expected(trace):
    """timeline samples of device 0, distinct sites, launches"""
    samples, sites, live = 0, set(), set()
    for line in open(trace):
        e = json.loads(line)
        t = e["type"]
        if t == "site":
            sites.add(e["id"])
        elif t == "alloc" and e["dev"] == 0:
            samples += 1
            live.add(e["ptr"])
        elif t == "free" and e["ptr"] in live:
            samples += 1
            live.discard(e["ptr"])
        elif t in ("prefetch", "evict") and e["dev"] == 0:
            samples += 1
    return samples, len(sites)

def replay(trace, budget):
    out = subprocess.run([lmshim, "replay", "--budget", str(budget), trace], capture_output=True,
                         text=True, check=True).stdout
    row = [l.split() for l in out.splitlines() if l.startswith("belady-min")][0]
    return float(row[2]), float(row[4])   # evicted MiB, remote MiB

for page, traces in (("demo", ["demo.jsonl"]), ("ranks", ["rank-%d.jsonl" % r for r in range(4)])):
    dom = open("%s/%s.html.dom" % (tmp, page)).read()
    html = open("%s/%s.html" % (tmp, page)).read()
    data = json.loads(re.search(r'<script id="lms-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    body = attrs(dom, "body")
    assert body.get("data-status") == "ok" and body.get("data-errors") == "0", (page, body)
    assert int(body["data-panels"]) == len(traces), (page, body)
    samples, nsites = expected("%s/%s" % (tmp, traces[0]))
    tl, st, cv = attrs(dom, "timeline"), attrs(dom, "sites"), attrs(dom, "curve")
    assert int(tl["data-points"]) == samples, (page, "timeline points", tl, samples)
    assert int(st["data-sites"]) == nsites and nsites >= (2 if len(traces) > 1 else 1), (page, "sites", st, nsites)
    assert int(st["data-nodes"]) > nsites, (page, "icicle nodes", st)
    assert int(cv["data-points"]) == 16 * series, (page, "curve points", cv, series)
    m = re.search(r'<pre id="selftest" data-checks="(\d+)" data-result="(\w+)">(.*?)</pre>', dom, re.S)
    assert m and m.group(2) == "pass", (page, m and m.group(3))
    checks = int(m.group(1))
    assert checks >= (11 if len(traces) > 1 else 7), (page, m.group(3))
    need = int(attrs(dom, "summary")["data-need"])
    ev, rem = replay("%s/%s" % (tmp, traces[0]), need)
    assert ev == 0 and rem == 0, (page, "need", need, ev, rem)
    ev, rem = replay("%s/%s" % (tmp, traces[0]), need - (1 << 20))
    assert ev > 0 or rem > 0, (page, "below need", need, ev, rem)
    c = data["ranks"][0]["panels"][0]["curve"]
    if page == "ranks":
        assert c["period"] == 12 and c["skip"] == 12, c   # forward + backward over 6 layers
        mn = [s for s in c["series"] if s["name"] == "min"][0]["at_need"]
        assert mn["fetched"] + mn["evicted"] + mn["remote"] == 0, mn   # a step moves nothing at need
        tips = re.search(r'<section id="summary"[^>]*>(.*?)</section>', dom, re.S).group(1)
        assert "LMS_LIMIT=" in tips and "would move nothing" in tips, tips
    print("%s: %s points, %d sites, %s curve points, %d self-test checks, need %d" %
          (page, tl["data-points"], nsites, cv["data-points"], checks, need))
PY
echo "html report: ok"
