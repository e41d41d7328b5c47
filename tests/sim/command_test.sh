#!/bin/bash
# command_test.sh LMSHIM OVERSUB_DEMO RUNTIME_CLIENT — the lmshim command and
# option handling end to end, over the simulated GPU:
#  - usage errors exit 2; --help exits 0;
#  - run sets LD_PRELOAD first and keeps what was there; flags and caffe's
#    -lms/-lms_frac become LMS_* variables;
#  - a working set twice the device fails alone and passes under `run --sim`;
#  - LMS_DISABLE=1 and a bad LMS_* value leave results unchanged, the bad
#    value with exactly one line on stderr;
#  - LMS_LOG_FILE with %r writes one file per rank.
set -u
lmshim=$1 demo=$2 client=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "command_test: $*" >&2; exit 1; }
sim=$(dirname "$(dirname "$lmshim")")/sim

"$lmshim" run --nope -- true 2>/dev/null; [ $? -eq 2 ] || fail "unknown flag must exit 2"
"$lmshim" run --limit 1G 2>/dev/null; [ $? -eq 2 ] || fail "missing -- must exit 2"
"$lmshim" run --frac 7 -- true 2>/dev/null; [ $? -eq 2 ] || fail "a bad flag value must exit 2"
"$lmshim" bogus 2>/dev/null; [ $? -eq 2 ] || fail "unknown command must exit 2"
"$lmshim" run --help >/dev/null || fail "run --help"
"$lmshim" info --help >/dev/null || fail "info --help"

out=$(LD_PRELOAD=/nonexistent/keep.so "$lmshim" run --limit 3G --stats -lms 409600 -lms_frac 0.8 \
      --on-oom=fail -- env 2>/dev/null)
echo "$out" | grep -qx 'LMS_LIMIT=3G' || fail "--limit not passed"
echo "$out" | grep -qx 'LMS_STATS=1' || fail "--stats not passed"
echo "$out" | grep -qx 'LMS_THRESHOLD=419430400' || fail "-lms is kilobytes"
echo "$out" | grep -qx 'LMS_FRAC=0.8' || fail "-lms_frac not passed"
echo "$out" | grep -qx 'LMS_ON_OOM=fail' || fail "--on-oom=fail not passed"
echo "$out" | grep -q '^LD_PRELOAD=/.*liblmshim.so:/nonexistent/keep.so$' || fail "LD_PRELOAD order: $(echo "$out" | grep LD_PRELOAD)"

info=$("$lmshim" info --sim --sim-mem 3G --sim-devices 2)
echo "$info" | grep -q '^device 1: .*memory 3G' || fail "info --sim: $info"
[ "$(echo "$info" | grep -c '^  LMS_')" -eq "$(grep -c '^LMS_OPTION(' "$OPTIONS_DEF")" ] ||
    fail "info lists every option of options.def"

# The main job, smaller: 4 x 64 MiB on a 128 MiB device.
if SIMGPU_MEM=128M LD_LIBRARY_PATH=$sim "$demo" 4 64 >"$tmp/alone" 2>&1; then
    fail "the demo should run out of memory without lmshim"
fi
grep -q 'out of memory' "$tmp/alone" || fail "no out-of-memory message: $(cat "$tmp/alone")"
"$lmshim" run --sim --sim-mem 128M --stats -- "$demo" 4 64 >"$tmp/shim" 2>&1 ||
    fail "the demo failed under lmshim: $(cat "$tmp/shim")"
grep -q '^ok: ' "$tmp/shim" || fail "no checked result"
grep -q 'lmshim summary, device 0' "$tmp/shim" || fail "no summary"

# Results unchanged by LMS_DISABLE=1 and by a bad value (one stderr line).
LD_LIBRARY_PATH=$sim LD_PRELOAD=$LMSHIM_LIB LMS_DISABLE=1 "$client" vector_math ||
    fail "LMS_DISABLE=1 changed the result"
LD_LIBRARY_PATH=$sim LD_PRELOAD=$LMSHIM_LIB LMS_FRAC=banana "$client" vector_math 2>"$tmp/err" ||
    fail "a bad LMS_FRAC changed the result"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q 'LMS_FRAC=banana' "$tmp/err" ||
    fail "expected one line about LMS_FRAC=banana, got: $(cat "$tmp/err")"

# One log file per rank.
for r in 0 1; do
    RANK=$r LD_LIBRARY_PATH=$sim LD_PRELOAD=$LMSHIM_LIB LMS_LOG=info \
        LMS_LOG_FILE="$tmp/lms-%r.log" "$client" vector_math || fail "rank $r failed"
done
for r in 0 1; do
    grep -q 'alloc dev=0 size=262144 place=device' "$tmp/lms-$r.log" || fail "rank $r log: $(cat "$tmp/lms-$r.log")"
done
# The live view: LMS_STATS_EVERY=1 writes a status line a second.
LD_LIBRARY_PATH=$sim LD_PRELOAD=$LMSHIM_LIB LMS_STATS_EVERY=1 "$client" alloc_and_wait 2>"$tmp/status" ||
    fail "alloc_and_wait failed"
[ "$(grep -c 'status | dev 0 used 64M/4G' "$tmp/status")" -ge 2 ] || fail "status lines: $(cat "$tmp/status")"
exit 0
