#!/bin/bash
# per_thread_test.sh PROGRAM — mixed_parts.c `sizes` at 3x a 128 MiB
# budget, lmshim at LMS_FRAC=0.5 (kernels of different streams one at a
# time), seed 1: launched from 2 and from 4 threads, each on its own
# per-thread default stream (MP_PER_THREAD=1: one stream handle for all),
# it takes the step it takes on as many streams made by cuStreamCreate.
# The engine tells streams apart by thread where the handle is the
# per-thread default stream; counting launches in a row on one stream by
# their handles (ops->alone, src/engine/residency.c) took the threads'
# streams for one and timed launches the rule of src/common/plan.c
# (time_read) keeps to launches issued on one stream: 45.49 -> 47.89 ms
# (2 threads) and 38.80 -> 42.16 (4), an outside helper's finding.
# docs/PERFORMANCE.md, "Twenty-fifth round". Every run's buffers are
# right (the program checks them).
set -u
prog=$1
run() {   # run PER_THREAD STREAMS: the step's ms
    env -u LMS_POLICY MP_PER_THREAD=$1 SIMGPU_MEM=256M SIMGPU_L2_MIB=0.08 LMS_LIMIT=128M LMS_FRAC=0.5 \
        LMS_THRESHOLD=1M SIMGPU_CONCURRENT=0 "$prog" 3 128 sizes "$2" 1 | awk '/^step_ms/ {print $2}'
}
bad=0
for n in 2 4; do
    a=$(run 0 "$n")
    b=$(run 1 "$n")
    echo "streams=$n: cuStreamCreate $a ms, per-thread default streams $b ms"
    if [ -z "$a" ] || [ -z "$b" ] || ! awk -v a="$a" -v b="$b" 'BEGIN { exit !(b <= a * 1.001 && b >= a * 0.999) }'; then
        echo "FAIL: streams=$n: the threads' streams took ${b:-no} ms against ${a:-no}" >&2
        bad=1
    fi
done
[ $bad = 0 ] && echo PASS || exit 1
