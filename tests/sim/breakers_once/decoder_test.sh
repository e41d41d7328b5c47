#!/bin/bash
# decoder_test.sh SHAPES — the decoder shape of bench/shapes (24 layers
# forward only, a GEMM re-reading its weight per tile row and three small
# kernels each: every weight used once a step) at 1.5x, as ratios to
# in-memory: lmshim-lookahead and lmshim at its defaults at most 1.05x at
# compute scale 1 (acting deep fetching every weight; 1.27x when acting
# deep read the weights in place and acting was kept), lookahead at most
# 1.30x at compute scale 0.5 (1.59x then).
set -u
shapes=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for scale in 1 0.5; do
    echo "scale $scale"
    "$shapes" --shapes decoder --ratios 1.5 --compute-scale "$scale" || { echo "decoder_test: bench failed" >&2; exit 1; }
done >"$out"
cat "$out"
# Summary rows: shape ratio mem_ms | um zc none lru look none9 lru9 dflt | ...
awk '
function fail(msg) { print "decoder_test: " msg > "/dev/stderr"; bad = 1 }
/^scale / { scale = $2; insum = 0; next }
/^summary:/ { insum = 1; next }
insum && $1 == "decoder" && $2 == 1.5 {
    look = $9; dflt = $12
    if (scale == 1 && !(look <= 1.05)) fail("scale 1: lookahead " look "x in-memory (bar 1.05)")
    if (scale == 1 && !(dflt <= 1.05)) fail("scale 1: defaults " dflt "x in-memory (bar 1.05)")
    if (scale == 0.5 && !(look <= 1.30)) fail("scale 0.5: lookahead " look "x in-memory (bar 1.30)")
    rows++
}
END {
    if (rows != 2)
        fail(rows " summary rows (2 expected)")
    exit bad
}' "$out"
