# summary_bars.awk — the summary rows of build/bench/shapes held to bars,
# for other_settings_test.sh and other_seeds_test.sh: in each row,
# lmshim-lookahead (`look`) and lmshim at its defaults (`dflt`) over the
# better of lmshim-none and lmshim-lru at the same settings, at most 1.02
# but where `bars` names another; a mode that failed fails the row, and
# the rows must number `want`. Variables (awk -v):
#   name   the test, for its messages
#   bars   "shape ratio mode=bar;..." (mode: look or dflt), the exceptions
#   want   the summary rows expected
# Exits 1 when a bar does not hold.
function fail(msg) { print name ": " msg > "/dev/stderr"; bad = 1 }
BEGIN {
    n = split(bars, kv, ";")
    for (i = 1; i <= n; i++)
        if (split(kv[i], p, "=") == 2)
            bar[p[1]] = p[2] + 0
}
NF == 4 && $4 == "failed" { fail($1 " " $2 "x " $3 ": failed") }
/^summary:/ { insum = 1; next }
insum && NF == 20 && $3 ~ /^[0-9.]+$/ {
    key = $1 " " $2
    # a mode that failed prints "fail" in its column and 0.00 here
    if (!($14 > 0 && $15 > 0) || $0 ~ /fail/) fail(key "x: a mode failed (" $14 ", " $15 ")")
    b = (key " look") in bar ? bar[key " look"] : 1.02
    if (!($14 <= b)) fail(key "x: lookahead " $14 " x the best of none and lru (bar " b ")")
    b = (key " dflt") in bar ? bar[key " dflt"] : 1.02
    if (!($15 <= b)) fail(key "x: defaults " $15 " x the best of none and lru (bar " b ")")
    rows++
}
END {
    if (rows != want)
        fail(rows " summary rows (" want " expected)")
    exit bad
}
