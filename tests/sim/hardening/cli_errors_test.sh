#!/bin/bash
# cli_errors_test.sh LMSHIM NODRIVER — command-line errors say what is wrong:
#  - `lmshim run` flags take the options' strict forms (no hex, fraction
#    of a byte, sign or white space);
#  - `report DIR` fails naming it; `report --link-gbps 0|-1|nan` names the
#    value; `report --svg` without a value says it needs one; the same for
#    `replay --link-gbps`;
#  - `replay` of a trace whose chunk ids sit near the id cap uses memory in
#    proportion to its chunks (a 300 KB trace stays under 100 MB);
#  - without a driver, `lmshim info` and a program under `lmshim run` say
#    what to do: install the NVIDIA driver, or use --sim.
set -u
lmshim=$1 nodriver=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "cli_errors_test: $*" >&2; exit 1; }

# A small valid trace.
cat >"$tmp/t.jsonl" <<'JSON'
{"type":"header","format":1}
{"type":"device","t":0,"dev":0,"physical":8589934592,"budget":1073741824}
{"type":"alloc","t":1,"dev":0,"ptr":"7f0000000000","size":67108864,"charge":0,"place":"managed","id":0,"fallback":false,"site":-1}
{"type":"launch","t":2,"dev":0,"seq":1,"fn":"10","name":"k","stream":"0","chunks":[0]}
JSON

mkdir "$tmp/dir"
out=$("$lmshim" report "$tmp/dir" 2>&1); rc=$?
[ $rc -ne 0 ] || fail "report of a directory exits 0: $out"
echo "$out" | grep -q "cannot read $tmp/dir: Is a directory" || fail "report of a directory: $out"
out=$("$lmshim" replay "$tmp/dir" 2>&1); rc=$?
[ $rc -ne 0 ] || fail "replay of a directory exits 0: $out"

for bad in 0 -1 nan inf 5x ''; do
    out=$("$lmshim" report --link-gbps "$bad" "$tmp/t.jsonl" 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "report --link-gbps '$bad' exits $rc"
    echo "$out" | grep -q -- "--link-gbps $bad: not a positive number" || fail "report --link-gbps '$bad': $out"
    out=$("$lmshim" replay --link-gbps "$bad" "$tmp/t.jsonl" 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "replay --link-gbps '$bad' exits $rc"
    echo "$out" | grep -q -- "--link-gbps $bad: not a positive number" || fail "replay --link-gbps '$bad': $out"
done
"$lmshim" report --link-gbps 12.5 "$tmp/t.jsonl" >/dev/null 2>&1 || fail "report --link-gbps 12.5 refused"
for flag in --svg --chrome --link-gbps; do
    out=$("$lmshim" report "$tmp/t.jsonl" $flag 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "report $flag without a value exits $rc"
    echo "$out" | grep -q -- "$flag needs a value" || fail "report $flag without a value: $out"
done

# Flags of lmshim run take the options' strict forms.
tab=$'\t'
for bad in "--limit=0x10" "--limit=1.5" "--threshold=1.5" "--threshold=${tab}8M" "--threshold= 8M" "-lms=${tab}5" \
           "-lms=+5"; do
    "$lmshim" run "${bad%%=*}" "${bad#*=}" -- true 2>/dev/null; rc=$?
    [ $rc -eq 2 ] || fail "run $bad exits $rc"
done

# Chunk ids near the cap (2^26): 40 chunks, 300 KB of launches.
python3 - "$tmp/bigid.jsonl" <<'PY' || fail "cannot write the trace"
import json, sys
lines = ['{"type":"header","format":1}',
         '{"type":"device","t":0,"dev":0,"physical":8589934592,"budget":1073741824}']
base = (1 << 26) - 40
for k in range(40):
    lines.append(json.dumps({"type": "alloc", "t": k, "dev": 0, "ptr": "%x" % (0x7f0000000000 + k * (64 << 20)),
                             "size": 64 << 20, "charge": 0, "place": "managed", "id": base + k,
                             "fallback": False, "site": -1}))
i = 0
while sum(len(l) + 1 for l in lines) < 300000:
    lines.append(json.dumps({"type": "launch", "t": 1000 + i, "dev": 0, "seq": i, "fn": "abc", "name": "k",
                             "stream": "0", "chunks": [base + (i + j) % 40 for j in range(8)]}))
    i += 1
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
python3 - "$lmshim" "$tmp/bigid.jsonl" <<'PY' || fail "replay of chunk ids near the cap"
import resource, subprocess, sys
r = subprocess.run([sys.argv[1], "replay", sys.argv[2]], capture_output=True, text=True)
peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"replay: exit {r.returncode}, peak {peak_mb:.1f} MB")
ok = r.returncode == 0 and "belady-min" in r.stdout and peak_mb < 100
if not ok:
    print(r.stdout, r.stderr)
sys.exit(0 if ok else 1)
PY

# No driver: an empty library path, and no libcuda.so.1 known to the loader.
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    echo "a driver is installed here: the no-driver checks are skipped"
    exit 0
fi
out=$(LD_LIBRARY_PATH= "$lmshim" info 2>&1)
echo "$out" | grep -q "install the NVIDIA driver" || fail "info without a driver: $out"
echo "$out" | grep -q -- "--sim" || fail "info without a driver does not name --sim: $out"
out=$(LD_LIBRARY_PATH= "$lmshim" run -- "$nodriver" 2>&1)
echo "$out" | grep -q "install the NVIDIA driver" || fail "run without a driver: $out"
echo "$out" | grep -q "lmshim run --sim" || fail "run without a driver does not name --sim: $out"
[ "$(echo "$out" | grep -c 'lmshim\[')" -eq 1 ] || fail "run without a driver: not one line: $out"
echo "ok"
