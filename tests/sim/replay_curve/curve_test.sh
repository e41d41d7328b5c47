#!/bin/bash
# curve_test.sh LMSHIM CASE — `lmshim replay`'s bound row and --curve on a
# trace worked out by hand: chunks A and B of 2 MiB, launches A B A B A.
#   table       at 2 MiB the bound reads B in place (6 MiB over the link),
#               MIN, lru and none move 10 MiB: vs_bound 1.667
#   curve       the curve's numbers per step at 2 MiB and 4 MiB
#   svg         the plot is well-formed SVG with a line per series, and
#               renders in headless Chromium (skipped, 77, without it)
#   bad_flags   each bad flag is named, exit 2
set -u
lmshim=$1 case=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
MiB=1048576
t=$tmp/t.jsonl
{
  echo '{"type":"header","format":1,"lmshim":"0.1.0","pid":1,"rank":0,"t":1}'
  echo "{\"type\":\"device\",\"t\":2,\"dev\":0,\"physical\":$((64*MiB)),\"budget\":$((2*MiB))}"
  for i in 0 1; do
    echo "{\"type\":\"alloc\",\"t\":3,\"dev\":0,\"ptr\":\"0x7f00${i}0000000\",\"size\":$((2*MiB)),\"charge\":0,\"place\":\"managed\",\"id\":$i,\"fallback\":false,\"site\":-1}"
  done
  seq=1
  for i in 0 1 0 1 0; do
    echo "{\"type\":\"launch\",\"t\":4,\"dev\":0,\"seq\":$seq,\"fn\":\"0x5$i\",\"name\":\"k\",\"stream\":\"0x0\",\"chunks\":[$i]}"
    seq=$((seq + 1))
  done
} > "$t"

# field N of the row whose first field is NAME
field() { awk -v p="$1" -v n="$2" '$1 == p { print $n }' "$tmp/out"; }
expect() { [ "$(field "$1" "$2")" = "$3" ] || fail "$1 field $2 is '$(field "$1" "$2")', expected $3"; }

case $case in
table)
  "$lmshim" replay "$t" > "$tmp/out" || fail "replay failed"
  cat "$tmp/out"
  expect 'optimal(+remote)' 2 2.0      # fetched: A
  expect 'optimal(+remote)' 5 4.0      # read in place: B twice
  expect 'optimal(+remote)' 8 1.000
  expect belady-min 2 10.0
  expect belady-min 8 1.667
  expect lru 8 1.667
  expect none 5 10.0
  expect none 8 1.667
  ;;
curve)
  "$lmshim" replay --curve --skip 0 --budgets 2M:4M:2 "$t" > "$tmp/out" || fail "replay --curve failed"
  cat "$tmp/out"
  grep -q '^lru: one pass$' "$tmp/out" || fail "lru not in one pass"
  grep -q '^none: one pass$' "$tmp/out" || fail "none not in one pass"
  # 5 launches, a step of 2: 2.5 steps. MiB per step, then ms at 55 GB/s.
  row() { awk -v b="$1" '$1 == b' "$tmp/out" | sed -n "${2}p"; }
  [ "$(row 2.0 1)" = "$(printf '%-12s %16s %16s %16s %16s %16s' 2.0 4.000 2.400 4.000 4.000 4.000)" ] ||
      fail "at 2 MiB: '$(row 2.0 1)'"
  [ "$(row 4.0 1)" = "$(printf '%-12s %16s %16s %16s %16s %16s' 4.0 1.600 1.600 1.600 1.600 4.000)" ] ||
      fail "at 4 MiB: '$(row 4.0 1)'"
  # 2.4 MiB at 55 GB/s: 0.046 ms
  [ "$(row 2.0 2 | awk '{ print $3 }')" = 0.046 ] || fail "modeled ms: '$(row 2.0 2)'"
  ;;
svg)
  "$lmshim" replay --curve --budgets 1M:6M:6 --svg "$tmp/c.svg" "$t" > "$tmp/out" || fail "replay --svg failed"
  python3 - "$tmp/c.svg" <<'PY' || fail "bad SVG"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
lines = root.findall(ns + "polyline")
names = [t.text for t in root.findall(ns + "text")]
assert len(lines) == 5, len(lines)
for n in ["belady-min", "optimal(+remote)", "lru", "none", "lookahead"]:
    assert n in names, n
for l in lines:
    pts = l.get("points").split()
    assert len(pts) == 6, pts
print("svg ok:", len(lines), "lines")
PY
  "$(dirname "$0")/../render_svg.sh" "$tmp/c.svg" 820 460 3000 6 red
  rc=$?
  case $rc in 0|77) exit $rc ;; esac
  fail "blank render"
  ;;
bad_flags)
  bad() {   # bad EXPECTED-MESSAGE ARGS...
    local want=$1; shift
    out=$("$lmshim" replay "$@" 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "replay $* exits $rc: $out"
    echo "$out" | grep -qF -- "$want" || fail "replay $*: '$out' does not say '$want'"
  }
  for v in 4M:2M:3 2M:4M:1 2M:4M 2M:4M:x 2M:4M:300 0:4M:3 2M:4M:3x :4M:3; do
    bad "--budgets $v: not FROM:TO:N" --curve --budgets "$v" "$t"
  done
  bad "--svg needs --curve" --svg "$tmp/x.svg" "$t"
  bad "--budgets needs --curve" --budgets 1M:2M:3 "$t"
  bad "--svg needs a value" "$t" --curve --svg
  bad "unknown flag --curvee" --curvee "$t"
  bad "--policy nope: unknown policy" --policy nope "$t"
  for v in x -1 16 1.5 ""; do
    bad "--device $v: not a device number" --device "$v" "$t"
  done
  for v in x -3 2k ""; do
    bad "--skip $v: not a number of launches" --skip "$v" "$t"
  done
  out=$("$lmshim" replay --curve --svg "$tmp/no/such/dir/c.svg" "$t" 2>&1); rc=$?
  [ $rc -eq 1 ] || fail "an unwritable --svg exits $rc"
  echo "$out" | grep -q "no/such/dir/c.svg" || fail "an unwritable --svg is not named: $out"
  ;;
*) fail "unknown case $case" ;;
esac
echo ok
