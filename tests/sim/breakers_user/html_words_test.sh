#!/bin/bash
# html_words_test.sh LMSHIM OVERSUB_DEMO — the HTML report's words against
# its numbers, in headless Chromium, on a run whose every chunk is used once
# (4 x 64 MiB on a 128 MiB device: no repeating step, so each chunk's first
# fetch is part of what moves at any budget): the summary must not promise a
# budget at which nothing moves, and the curve's line says what holds there
# (no eviction). Skipped (77) without Chromium.
set -u
lmshim=$1 demo=$2
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "no chromium: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$lmshim" run --sim --sim-mem 128M --trace "$tmp/t.jsonl" -- "$demo" 4 64 >/dev/null 2>&1 || fail "demo run"
"$lmshim" report --html "$tmp/t.html" "$tmp/t.jsonl" >/dev/null || fail "report --html"
timeout 60 env -u LD_PRELOAD "$browser" --headless --no-sandbox --disable-gpu --window-size=1200,1400 \
    --virtual-time-budget=3000 --dump-dom "file://$tmp/t.html" >"$tmp/dom" 2>/dev/null || fail "chromium"
summary=$(tr '\n' ' ' <"$tmp/dom" | grep -o '<section id="summary".*</section>' | head -c 20000)
[ -n "$summary" ] || fail "no summary in the page"
echo "$summary" | grep -q 'Moving nothing' && fail "the summary promises a budget at which nothing moves"
echo "$summary" | grep -q 'Fetching each chunk only once' || fail "the summary lacks the first fetches: $summary"
grep -q 'moves nothing from' "$tmp/dom" && fail "the curve's line says 'moves nothing'"
grep -q 'no eviction from' "$tmp/dom" || fail "the curve's line is missing"
exit 0
