#!/bin/bash
# report_room_test.sh LMSHIM — `lmshim report`'s residency room line and
# LMS_FRAC hint on hand-written traces, each an attack the reader must
# survive with the numbers the trace says:
#   (a) device chunks allocated while the managed chunks stay at their peak
#       shrink the room: it is the budget less the most device chunks
#       while they were at their peak, not those at the moment they peaked;
#   (a2) with launches at the peak, the room is the one they ran in: a
#       scratch buffer freed before the first launch leaves the whole
#       budget; device chunks freed only after the last launch (the
#       program's end) still count;
#   (b) "under a quarter" exactly: room 1 for 5 bytes hints (1 < 1.25),
#       room 2 for 8 bytes does not (a quarter is not under it);
#   (c) the header's LMS_FRAC read as options are written (digits and one
#       point, nothing else, the whole string): " 0.9", "9e-1", "+0.9",
#       hex, a string cut at the reader's buffer, an escaped NUL give no
#       hint; "0.50000001" is above 0.5 and is named as written;
#   (d) a pointer allocated again without a free (the free was missed)
#       retires the old chunk: the managed peak is not counted twice;
#   (f) the program's own managed memory (cuMemAllocManaged: place
#       "managed", id -1) is no chunk of the residency engine and no
#       LMS_FRAC moves it: not in the managed bytes the room is set against;
#   (e) a trace without managed chunks prints no room line; --svg,
#       --chrome and --html still work on every trace here.
set -u
cli=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "report_room_test: $*" >&2; exit 1; }

hdr() { printf '{"type":"header","format":1,"lmshim":"0.1.0","pid":1,"rank":0,"t":1000,"path":"x","parent":-1,"options":{"LMS_FRAC":"%s"}}\n' "$1"; }
dev() { printf '{"type":"device","t":1001,"dev":%s,"physical":4096,"budget":%s}\n' "$1" "$2"; }
al() { printf '{"type":"alloc","t":%s,"dev":0,"ptr":"%s","size":%s,"charge":%s,"place":"%s","id":%s,"fallback":false,"site":-1}\n' "$@"; }
fr() { printf '{"type":"free","t":%s,"dev":0,"ptr":"%s"}\n' "$@"; }
pf() { printf '{"type":"prefetch","t":%s,"dev":0,"id":%s,"bytes":%s,"ahead":false}\n' "$@"; }
report() { "$cli" report "$dir/$1.jsonl" >"$dir/$1.txt" 2>&1 || { cat "$dir/$1.txt"; fail "$1: report failed"; }; }
room() { grep '^  residency room: ' "$dir/$1.txt"; }
hint() { grep -c '^  hint: ' "$dir/$1.txt"; }

# (a) 600 of device chunks, 1000 managed, then 200 more device chunks.
{ hdr 0.9; dev 0 1000; al 1002 0x1000 600 600 device -1; al 1003 0x10000 1000 0 managed 0
  al 1004 0x2000 200 200 device -1; pf 1005 0 2000; fr 1006 0x2000; } >"$dir/a.jsonl"
report a
room a | grep -q '^  residency room: 200 (the budget less 800 of device chunks) for 1000 ' ||
    { cat "$dir/a.txt"; fail "(a) the room ignores device chunks allocated at the managed peak"; }
test "$(hint a)" = 1 || { cat "$dir/a.txt"; fail "(a) no hint with 200 of room for 1000"; }

# (a2) 800 of scratch freed before the launches; 800 of activations freed after them.
lc() { printf '{"type":"launch","t":%s,"dev":0,"seq":%s,"fn":"0x1","name":"k","stream":"0x0","chunks":[0],"dropped":0}\n' "$@"; }
{ hdr 0.9; dev 0 1000; al 1002 0x1000 800 800 device -1; al 1003 0x10000 1000 0 managed 0; fr 1004 0x1000
  lc 1005 1; pf 1006 0 1000; lc 1007 2; pf 1008 0 1000; } >"$dir/a2.jsonl"
report a2
room a2 | grep -q '^  residency room: 1000 (the budget less 0 of device chunks) for 1000 ' ||
    { cat "$dir/a2.txt"; fail "(a2) scratch freed before any launch still shrinks the room"; }
test "$(hint a2)" = 0 || { cat "$dir/a2.txt"; fail "(a2) a hint with the whole budget as room"; }
{ hdr 0.9; dev 0 1000; al 1002 0x1000 800 800 device -1; al 1003 0x10000 1000 0 managed 0
  lc 1005 1; pf 1006 0 1000; lc 1007 2; pf 1008 0 1000; fr 1009 0x1000; } >"$dir/a3.jsonl"
report a3
room a3 | grep -q '^  residency room: 200 (the budget less 800 of device chunks) for 1000 ' ||
    { cat "$dir/a3.txt"; fail "(a2) device chunks freed at the end do not count"; }

# (b) the quarter, exactly.
{ hdr 0.9; dev 0 1000; al 1002 0x1000 999 999 device -1; al 1003 0x10000 5 0 managed 0; pf 1004 0 5; } >"$dir/b1.jsonl"
{ hdr 0.9; dev 0 1000; al 1002 0x1000 998 998 device -1; al 1003 0x10000 8 0 managed 0; pf 1004 0 8; } >"$dir/b2.jsonl"
report b1
report b2
room b1 | grep -q 'room: 1 (.*) for 5 of' || { cat "$dir/b1.txt"; fail "(b) room line of b1"; }
test "$(hint b1)" = 1 || { cat "$dir/b1.txt"; fail "(b) room 1 is under a quarter of 5 bytes: no hint"; }
test "$(hint b2)" = 0 || { cat "$dir/b2.txt"; fail "(b) room 2 is a quarter of 8 bytes, not under it: a hint"; }

# (c) the header's LMS_FRAC.
frac_case() {
    { hdr "$1"; dev 0 1000; al 1002 0x1000 800 800 device -1; al 1003 0x10000 1000 0 managed 0; pf 1004 0 2000; } \
        >"$dir/c.jsonl"
    report c
    room c >/dev/null || { cat "$dir/c.txt"; fail "(c) LMS_FRAC \"$1\": no room line"; }
}
for bad in ' 0.9' '0.9 ' '9e-1' '+0.9' '0x1.ccccccccccccdp-1' '0.9000000000000000000000000000000zz' \
           '0.9\u0000z' '-0' 'nan' 'inf' '1e400' '0.5x' ''; do
    frac_case "$bad"
    test "$(hint c)" = 0 || { cat "$dir/c.txt"; fail "(c) LMS_FRAC \"$bad\" is no fraction lmshim writes: a hint"; }
done
for good in 0.9 1 0.50000001 0.90000000000000000001; do
    frac_case "$good"
    grep -q "^  hint: .* LMS_FRAC than this run's $good (say 0.5)" "$dir/c.txt" ||
        { cat "$dir/c.txt"; fail "(c) LMS_FRAC \"$good\": no hint naming it"; }
done
frac_case 0.5
test "$(hint c)" = 0 || { cat "$dir/c.txt"; fail "(c) a hint at LMS_FRAC=0.5"; }

# (d) 0x10000 allocated twice, freed once, then another chunk.
{ hdr 0.9; dev 0 1000; al 1002 0x10000 1000 0 managed 0; al 1003 0x10000 1000 0 managed 1; fr 1004 0x10000
  al 1005 0x20000 1000 0 managed 2; pf 1006 2 2000; } >"$dir/d.jsonl"
report d
room d | grep -q ' for 1000 of managed chunks at their peak' ||
    { cat "$dir/d.txt"; fail "(d) a pointer allocated twice counted twice"; }

# (f) 10000 of the program's managed memory next to the engine's 1000.
{ hdr 0.9; dev 0 1000; al 1002 0x1000 800 800 device -1; al 1003 0x40000 10000 0 managed -1
  al 1004 0x10000 1000 0 managed 0; pf 1005 0 2000; fr 1006 0x40000; } >"$dir/f.jsonl"
report f
room f | grep -q ' for 1000 of managed chunks at their peak' ||
    { cat "$dir/f.txt"; fail "(f) the program's own managed memory counted as the engine's chunks"; }
test "$(hint f)" = 1 || { cat "$dir/f.txt"; fail "(f) no hint"; }
{ hdr 0.9; dev 0 1000; al 1003 0x40000 10000 0 managed -1; fr 1006 0x40000; } >"$dir/f2.jsonl"
report f2
! grep -qE 'residency room|hint:' "$dir/f2.txt" || { cat "$dir/f2.txt"; fail "(f) a room line for the program's managed memory alone"; }

# (e) no managed chunk; the other outputs on every trace.
{ hdr 0.9; dev 0 1000; al 1002 0x1000 800 800 device -1; al 1003 0x9000 100 0 host -1; fr 1004 0x1000; } >"$dir/e.jsonl"
report e
! grep -qE 'residency room|hint:' "$dir/e.txt" || { cat "$dir/e.txt"; fail "(e) a room line without managed chunks"; }
for t in a a2 a3 b1 b2 c d e f f2; do
    "$cli" report --svg "$dir/$t.svg" --chrome "$dir/$t.json" --html "$dir/$t.html" "$dir/$t.jsonl" >/dev/null 2>&1 &&
        test -s "$dir/$t.svg" && test -s "$dir/$t.json" && test -s "$dir/$t.html" || fail "(e) $t: --svg/--chrome/--html"
done
echo "report_room_test: ok"
