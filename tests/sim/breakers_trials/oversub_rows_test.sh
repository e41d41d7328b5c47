#!/bin/bash
# oversub_rows_test.sh OVERSUB_TEST — tests/sim/oversub_test.sh fails when
# bench/oversub leaves rows out: fed a fake bench that prints only its 2x
# rows (all within the bars) and a fake lmshim replay, the bars of 0.5x and
# 1x have nothing to hold and the script must say so, not pass.
set -u
bars=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/oversub" <<'EOS'
#!/bin/bash
# ratio mode ms x-in-memory faults MiB-fetched misc remote
echo "2 in-memory 10.0 1.00 0.0 0.0 - 0.0"
echo "2 plain-um 50.0 5.00 9.0 100.0 - 0.0"
echo "2 lmshim-lookahead 11.0 1.10 0.0 100.0 - 0.0"
EOS
cat >"$tmp/lmshim" <<'EOS'
#!/bin/bash
echo "belady-min 300.0"
EOS
chmod +x "$tmp/oversub" "$tmp/lmshim"
if "$bars" "$tmp/oversub" "$tmp/lmshim" >"$tmp/out" 2>&1; then
    cat "$tmp/out"
    echo "oversub_rows_test: the bars passed without their 0.5x and 1x rows" >&2
    exit 1
fi
grep -q "oversub_test: 0.5x" "$tmp/out" || { cat "$tmp/out"; echo "oversub_rows_test: no 0.5x complaint" >&2; exit 1; }
echo "oversub_rows_test: missing rows fail"
