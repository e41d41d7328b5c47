#!/bin/bash
# blind_streams_test.sh PROGRAM — blind_streams.c (kernels never fitted,
# launched on 8 streams at random) under lmshim over the simulated GPU,
# at 1.5x and 3x a 128 MiB budget, its kernels all dear or half cheap,
# kernels of different streams run one at a time or side by side
# (SIMGPU_CONCURRENT), at the default LMS_FRAC and at 0.5. Bars, as
# ratios: lmshim's defaults (no LMS_POLICY) take at most 1.05x the step of
# the better of LMS_POLICY=none and lru at the same settings; every run's
# kernels are right and its device peak is within the budget.
set -u
prog=$1
B=128
L2=0.08   # MiB: an H200's 50 MiB of L2 against its 80 GiB, scaled to the budget
bad=0
run() {   # run RATIO KIND CONCURRENT FRAC POLICY: prints "step_ms peak_mib"
    local ratio=$1 kind=$2 conc=$3 frac=$4 pol=$5 out
    local envs=(SIMGPU_MEM=$((2 * B))M SIMGPU_L2_MIB=$L2 LMS_LIMIT=${B}M SIMGPU_CONCURRENT=$conc)
    [ "$frac" != default ] && envs+=(LMS_FRAC=$frac LMS_THRESHOLD=1M)
    [ "$pol" != defaults ] && envs+=(LMS_POLICY=$pol)
    out=$(env -u LMS_POLICY -u LMS_FRAC -u LMS_THRESHOLD "${envs[@]}" "$prog" "$ratio" "$B" "$kind") || {
        echo "FAIL: $ratio $kind concurrent=$conc frac=$frac $pol: the program failed" >&2
        echo "$out" >&2
        echo "x x"
        return
    }
    echo "$out" | awk '/^step_ms/ {t = $2} /^peak_mib/ {p = $2} END {print t, p}'
}
for conc in 0 1; do
    for kind in dear mixed; do
        for ratio in 1.5 3; do
            for frac in default 0.5; do
                read -r tn pn < <(run $ratio $kind $conc $frac none)
                read -r tl pl < <(run $ratio $kind $conc $frac lru)
                read -r td pd < <(run $ratio $kind $conc $frac defaults)
                if [ "$tn" = x ] || [ "$tl" = x ] || [ "$td" = x ]; then bad=1; continue; fi
                verdict=$(awk -v n="$tn" -v l="$tl" -v d="$td" -v b="$B" -v pn="$pn" -v pl="$pl" -v pd="$pd" 'BEGIN {
                    best = n < l ? n : l
                    r = d / best
                    msg = sprintf("%.3f", r)
                    if (r > 1.05) msg = msg " OVER"
                    if (pn > b || pl > b || pd > b) msg = msg " PEAK"
                    print msg }')
                printf '%-5s %-3s concurrent=%s frac=%-7s none %8.2f lru %8.2f defaults %8.2f ms: %s\n' \
                    "$kind" "$ratio" "$conc" "$frac" "$tn" "$tl" "$td" "$verdict"
                case $verdict in *OVER* | *PEAK*) bad=1 ;; esac
            done
        done
    done
done
[ $bad = 0 ] && echo PASS || { echo "FAIL: a bar above does not hold" >&2; exit 1; }
