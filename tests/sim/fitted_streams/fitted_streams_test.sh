#!/bin/bash
# fitted_streams_test.sh PROGRAM — fitted_streams.c (48 functions that
# the engine fits, launches round robin over 1, 3 or 8 streams, buffers in
# a cycle: a step the engine learns) under lmshim over the simulated GPU,
# at 1.5x and 3x a 128 MiB budget, kernels of different streams run one
# at a time or side by side (SIMGPU_CONCURRENT), at the default LMS_FRAC
# and at 0.5. The program's `random` kind is not held here
# (docs/PERFORMANCE.md). Bars, as ratios: lmshim's defaults (no
# LMS_POLICY) take at most 1.05x the step of the better of LMS_POLICY=none
# and lru at the same settings; every run's buffers are right and its
# device peak is within the budget.
set -u
prog=$1
. "$(dirname "$0")/../../common/best_of.sh"   # B=128 (MiB), L2, bad
for conc in 0 1; do
    for ns in 1 3 8; do
        for ratio in 1.5 3; do
            for frac in default 0.5; do
                best_cell "$(printf 'cycle %-3s streams=%s concurrent=%s' "$ratio" "$ns" "$conc")" "$frac" \
                    SIMGPU_CONCURRENT=$conc -- "$prog" "$ratio" "$B" cycle "$ns"
            done
        done
    done
done
[ $bad = 0 ] && echo PASS || { echo "FAIL: a bar above does not hold" >&2; exit 1; }
