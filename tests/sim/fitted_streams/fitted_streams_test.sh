#!/bin/bash
# fitted_streams_test.sh PROGRAM — fitted_streams.c (48 functions that
# the engine fits, launches round robin over 1, 2 or 8 streams, buffers in
# a cycle: a step the engine learns) under lmshim over the simulated GPU,
# at 1.5x and 3x a 128 MiB budget, at the default LMS_FRAC and at 0.5. The
# program's `random` kind is not held here (docs/PERFORMANCE.md). Bars, as ratios:
# lmshim's defaults (no LMS_POLICY) take at most 1.05x the step of the
# better of LMS_POLICY=none and lru at the same settings; every run's
# buffers are right and its device peak is within the budget.
set -u
prog=$1
B=128
L2=0.08   # MiB: an H200's 50 MiB of L2 against its 80 GiB, scaled to the budget
bad=0
run() {   # run RATIO KIND STREAMS FRAC POLICY: prints "step_ms peak_mib"
    local ratio=$1 kind=$2 ns=$3 frac=$4 pol=$5 out
    local envs=(SIMGPU_MEM=$((2 * B))M SIMGPU_L2_MIB=$L2 LMS_LIMIT=${B}M)
    [ "$frac" != default ] && envs+=(LMS_FRAC=$frac LMS_THRESHOLD=1M)
    [ "$pol" != defaults ] && envs+=(LMS_POLICY=$pol)
    out=$(env -u LMS_POLICY -u LMS_FRAC -u LMS_THRESHOLD "${envs[@]}" "$prog" "$ratio" "$B" "$kind" "$ns") || {
        echo "FAIL: $ratio $kind streams=$ns frac=$frac $pol: the program failed" >&2
        echo "$out" >&2
        echo "x x"
        return
    }
    echo "$out" | awk '/^step_ms/ {t = $2} /^peak_mib/ {p = $2} END {print t, p}'
}
for ns in 1 2 8; do
    for kind in cycle; do
        for ratio in 1.5 3; do
            for frac in default 0.5; do
                read -r tn pn < <(run $ratio $kind $ns $frac none)
                read -r tl pl < <(run $ratio $kind $ns $frac lru)
                read -r td pd < <(run $ratio $kind $ns $frac defaults)
                if [ "$tn" = x ] || [ "$tl" = x ] || [ "$td" = x ]; then bad=1; continue; fi
                verdict=$(awk -v n="$tn" -v l="$tl" -v d="$td" -v b="$B" -v pn="$pn" -v pl="$pl" -v pd="$pd" 'BEGIN {
                    best = n < l ? n : l
                    r = d / best
                    msg = sprintf("%.3f", r)
                    if (r > 1.05) msg = msg " OVER"
                    if (pn > b || pl > b || pd > b) msg = msg " PEAK"
                    print msg }')
                printf '%-6s %-3s streams=%s frac=%-7s none %8.2f lru %8.2f defaults %8.2f ms: %s\n' \
                    "$kind" "$ratio" "$ns" "$frac" "$tn" "$tl" "$td" "$verdict"
                case $verdict in *OVER* | *PEAK*) bad=1 ;; esac
            done
        done
    done
done
[ $bad = 0 ] && echo PASS || { echo "FAIL: a bar above does not hold" >&2; exit 1; }
