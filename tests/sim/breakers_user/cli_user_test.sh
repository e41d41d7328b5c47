#!/bin/bash
# cli_user_test.sh LMSHIM LMSHIM_LIB CLIENT — what a new user of the lmshim
# command meets first, each check one message or number they read:
#  - `run`: every boolean flag takes no value, `=v` or a following boolean
#    word; a value flag followed by `--` "needs a value"; a bad value names
#    the flag as typed (-lms_frac, --stream-order); --help shows no empty
#    default;
#  - `run` and `info` name an LMS_* variable that is no option (a typo);
#  - `info`: a flag without its value says so; without a driver one line on
#    stdout and nothing on stderr; the value column lines up;
#  - a bad LMS_* value: the warning says what is kept in words, ends with a
#    newline however long the value; LMS_STACKS above 64 is refused;
#  - `report`: the timeline ends with the state the trace ends in; a file it
#    cannot write is named after "lmshim report:";
#  - `top`: a flag without its value, two groups, an unknown flag: said;
#  - `replay`: a device the trace lacks, a bad or missing number, a trace
#    with nothing to replay, a file it cannot read: each said in one line.
set -u
lmshim=$1 lib=$2 client=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "cli_user_test: $*" >&2; failed=1; }   # every check runs

# run: boolean flags
for b in --stream-order --py-stacks --stats --disable; do
    "$lmshim" run $b -- true 2>"$tmp/err" || fail "$b with no value: $(cat "$tmp/err")"
done
out=$("$lmshim" run --stream-order -- env 2>/dev/null)
echo "$out" | grep -qx 'LMS_STREAM_ORDER=1' || fail "--stream-order alone is 1"
out=$("$lmshim" run --stream-order 0 --stats off -- env 2>"$tmp/err") || fail "--stream-order 0: $(cat "$tmp/err")"
echo "$out" | grep -qx 'LMS_STREAM_ORDER=0' || fail "--stream-order 0 not passed"
echo "$out" | grep -qx 'LMS_STATS=off' || fail "--stats off not passed"
# run: value flags and their complaints
"$lmshim" run --limit -- true 2>"$tmp/err"; [ $? -eq 2 ] || fail "--limit -- must exit 2"
grep -q -- '--limit needs a value' "$tmp/err" || fail "--limit --: $(cat "$tmp/err")"
"$lmshim" run -lms_frac 3 -- true 2>"$tmp/err"; [ $? -eq 2 ] || fail "-lms_frac 3 must exit 2"
grep -q -- "for -lms_frac\$" "$tmp/err" || fail "-lms_frac 3: $(cat "$tmp/err")"
"$lmshim" run --stream-order=x -- true 2>"$tmp/err"
grep -q -- "for --stream-order\$" "$tmp/err" || fail "--stream-order=x: $(cat "$tmp/err")"
"$lmshim" run --help | grep -q '(default )' && fail "run --help shows an empty default"

# a misspelt variable is named; LMS_LIMIT_<n> is an option
LMS_TRESHOLD=400M LMS_LIMIT_3=1G "$lmshim" run -- true 2>"$tmp/err" || fail "run with LMS_TRESHOLD"
grep -q '^lmshim run: LMS_TRESHOLD: not an lmshim option, ignored' "$tmp/err" || fail "LMS_TRESHOLD: $(cat "$tmp/err")"
grep -q 'LMS_LIMIT_3' "$tmp/err" && fail "LMS_LIMIT_3 called unknown: $(cat "$tmp/err")"
LMS_TRESHOLD=400M "$lmshim" info | grep -q '^also set: LMS_TRESHOLD: not an lmshim option' || fail "info: LMS_TRESHOLD"
LMS_LIMIT_1=256M "$lmshim" info | grep -q '^  LMS_LIMIT_1 *256M *environment' || fail "info does not show LMS_LIMIT_1"

# info
"$lmshim" info --sim-mem 2>"$tmp/err"; [ $? -eq 2 ] || fail "info --sim-mem must exit 2"
grep -q -- '--sim-mem needs a value' "$tmp/err" || fail "info --sim-mem: $(cat "$tmp/err")"
LD_LIBRARY_PATH=/nonexistent "$lmshim" info >"$tmp/out" 2>"$tmp/err" || fail "info without a driver"
[ -s "$tmp/err" ] && fail "info without a driver wrote to stderr: $(cat "$tmp/err")"
grep -q '^driver: none (libcuda.so.1' "$tmp/out" || fail "info without a driver: $(head -1 "$tmp/out")"
cols=$(grep '^  LMS_' "$tmp/out" | awk '{ print index($0, $2) }' | sort -u | wc -l)
[ "$cols" -eq 1 ] || fail "info: the value column does not line up: $(grep '^  LMS_' "$tmp/out")"

# bad values, over the simulated GPU
bad() { env "$@" LD_PRELOAD="$lib" "$client" errors 2>&1 >/dev/null | grep 'is not a valid value'; }
line=$(bad LMS_GROUP=../x)
echo "$line" | grep -q 'keeping (none)$' || fail "LMS_GROUP=../x: $line"
long=$(printf 'x%.0s' $(seq 600))
line=$(bad LMS_THRESHOLD=$long)
echo "$line" | grep -q '\.\.\. is not a valid value; keeping 8M$' || fail "a long LMS_THRESHOLD: $line"
[ "$(echo "$line" | wc -l)" -eq 1 ] || fail "a long value: more than one line"
line=$(bad LMS_STACKS=65)
echo "$line" | grep -q 'LMS_STACKS=65 is not a valid value' || fail "LMS_STACKS=65 taken: $line"
"$lmshim" run --stacks 64 -- true || fail "--stacks 64 refused"

# report: a trace of 12 device chunks allocated then freed
t=$tmp/trace.jsonl
echo '{"type":"header","format":1,"lmshim":"0.1.0","pid":1,"rank":0,"t":1000000000,"path":"x","parent":-1,"options":{}}' >"$t"
echo '{"type":"device","t":1000000000,"dev":0,"physical":1073741824,"budget":1073741824}' >>"$t"
for i in $(seq 1 12); do
    printf '{"type":"alloc","t":%d,"dev":0,"ptr":"0x%x","size":16777216,"charge":16777216,"place":"device","id":-1,"fallback":false,"site":-1}\n' \
        $((1000000000 + i * 1000000)) $((i * 16777216)) >>"$t"
done
for i in $(seq 1 12); do
    printf '{"type":"free","t":%d,"dev":0,"ptr":"0x%x","size":16777216,"place":"device"}\n' \
        $((2000000000 + i * 1000000)) $((i * 16777216)) >>"$t"
done
"$lmshim" report "$t" >"$tmp/report" 2>&1 || fail "report: $(cat "$tmp/report")"
last=$(grep '^    t=' "$tmp/report" | tail -1)
echo "$last" | grep -q '^    t=1.012s device=0 ' || fail "the timeline does not end with the trace's end: $last"
"$lmshim" report --svg /nonexistent/x.svg "$t" 2>"$tmp/err" >/dev/null
grep -q '^lmshim report: cannot write /nonexistent/x.svg: ' "$tmp/err" || fail "report --svg: $(cat "$tmp/err")"

# top
"$lmshim" top --dir 2>"$tmp/err"; [ $? -eq 2 ] || fail "top --dir must exit 2"
grep -q -- '^lmshim top: --dir needs a value' "$tmp/err" || fail "top --dir: $(head -1 "$tmp/err")"
"$lmshim" top a b --once 2>"$tmp/err"
grep -q "^lmshim top: one group at most" "$tmp/err" || fail "top a b: $(head -1 "$tmp/err")"
"$lmshim" top --bogus 2>"$tmp/err"
grep -q "^lmshim top: unknown flag '--bogus'" "$tmp/err" || fail "top --bogus: $(head -1 "$tmp/err")"

# replay
"$lmshim" replay --device 3 "$t" >/dev/null 2>"$tmp/err"; [ $? -eq 1 ] || fail "replay --device 3 must exit 1"
grep -q 'the trace has nothing of device 3' "$tmp/err" || fail "replay --device 3: $(cat "$tmp/err")"
"$lmshim" replay --skip -5 "$t" >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] || fail "replay --skip -5 must exit 2"
grep -q -- '--skip -5: not a number of launches' "$tmp/err" || fail "replay --skip -5: $(cat "$tmp/err")"
"$lmshim" replay --device x "$t" >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] || fail "replay --device x must exit 2"
"$lmshim" replay "$t" --device 2>"$tmp/err" >/dev/null
grep -q -- '--device needs a value' "$tmp/err" || fail "replay --device: $(cat "$tmp/err")"
"$lmshim" replay /nonexistent 2>"$tmp/err" >/dev/null
grep -q '^lmshim replay: cannot read /nonexistent: ' "$tmp/err" || fail "replay /nonexistent: $(cat "$tmp/err")"
"$lmshim" replay "$t" 2>"$tmp/err" >/dev/null || fail "replay of a trace without launches"
grep -q 'no launch of device 0' "$tmp/err" || fail "replay with nothing to replay: $(cat "$tmp/err")"
exit $failed
