#!/bin/bash
# mixed_parts_test.sh PROGRAM — mixed_parts.c (`sizes`: 40 buffers of 15
# sizes read 1-3 times; `alt`: a learnable cycle and random launches
# taking turns every 1,200 launches; `upset3`, `upset1`: a learned step
# with 40 random launches in every third step, in every step) under
# lmshim over the simulated GPU, at 1.5x and 3x a 128 MiB budget, on 3
# and 8 streams, kernels of different streams one at a time or side by
# side (SIMGPU_CONCURRENT), at the default LMS_FRAC and at 0.5, seed 0.
# Bars, as ratios: lmshim's defaults take at most BAR_CELL (1.25) x the
# step of the better of LMS_POLICY=none and lru at the same settings in
# each cell of `sizes` and `alt`, and at most BAR_MEAN (1.05) on average
# over each kind's 16 cells: what holds today (`sizes` 1.222 and 1.0348,
# `alt` 1.046 and 0.9419), so that it cannot get worse unseen; before the
# "Nineteenth round" of docs/PERFORMANCE.md `sizes` reached 1.257 (1.0457
# on average), before the "Seventeenth round" 1.582, and `alt` 1.554. Every run's buffers are right and its device peak is
# within the budget. SEEDS="0 1" runs other seeds.
set -u
prog=$1
. "$(dirname "$0")/../../common/best_of.sh"   # B=128 (MiB), L2, bad, BAR
BAR_CELL=${BAR_CELL:-1.25}
BAR_MEAN=${BAR_MEAN:-1.05}
BAR=$BAR_CELL
for kind in sizes alt; do
    ratios=()
    best_grid $kind "${SEEDS:-0}" "3 8" "$prog"
    best_mean $kind "$BAR_MEAN"
done
# A learned step with an upset of 40 random launches in every third step
# and in every step: at most BAR_UPSET_CELL (1.10) a cell and
# BAR_UPSET_MEAN (0.95) on average (today 1.000 and 0.8896 for `upset3`,
# 1.004 and 0.9008 for `upset1`; before the "Eighteenth round" of
# docs/PERFORMANCE.md 2.461 and 1.5897, 2.411 and 1.5733: the trials,
# cut at every upset, never chose, and the step ran acting).
BAR=${BAR_UPSET_CELL:-1.10}
for kind in upset3 upset1; do
    ratios=()
    best_grid $kind "${SEEDS:-0}" "3 8" "$prog"
    best_mean $kind "${BAR_UPSET_MEAN:-0.95}"
done
[ $bad = 0 ] && echo PASS || { echo "FAIL: a bar above does not hold" >&2; exit 1; }
