#!/bin/bash
# varstep_test.sh VARSTEP LIBLMSHIM SHAPE RATIO BAR — a shape of varstep.c
# at RATIO x the budget, lmshim at its defaults against the better of
# LMS_POLICY=none and lru at the same settings: the step takes at most
# BAR x theirs. Cases (tests/unit/breakers_ctx/meson.build):
#  overflow 2x, bar 0.97: an extra kernel per gradient one step in three;
#   0.95x once the trials that timed the confirmed step hold through the
#   unconfirmed periods after each change (0.98x when each change cut
#   them and the planner acted throughout);
#  fresh 1.5x, bar 1.0: a temporary allocated every step, its kernel after
#   a GEMM chosen at random; 0.97x once the context after a new launch is
#   asked only one step back (1.11x when it set the period to a distance
#   inside the step).
set -u
varstep=$1 lib=$2 shape=$3 ratio=$4 bar=$5
step_ms() {
    env SIMGPU_MEM=2048M SIMGPU_L2_MIB=0.625 LD_PRELOAD="$lib" LMS_LIMIT=1024M "$@" "$varstep" "$shape" "$ratio" 40 25 |
        sed -n 's/^RESULT ok=1 step_ms=\([0-9.]*\).*/\1/p'
}
dflt=$(step_ms) none=$(step_ms LMS_POLICY=none) lru=$(step_ms LMS_POLICY=lru)
echo "$shape ${ratio}x: defaults $dflt ms, none $none, lru $lru"
[ -n "$dflt" ] && [ -n "$none" ] && [ -n "$lru" ] || { echo "varstep_test: a run failed" >&2; exit 1; }
awk -v d="$dflt" -v n="$none" -v l="$lru" -v bar="$bar" 'BEGIN {
    best = n < l ? n : l
    printf "defaults / best of none and lru: %.3f (bar %s)\n", d / best, bar
    exit !(d <= bar * best)
}'
