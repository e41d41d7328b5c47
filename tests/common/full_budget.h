/*
 * full_budget.h — the state the eviction-ordering tests start from, over
 * a 128 MiB budget (header-only; tests over sim/ that include check.h,
 * stamp_kernels.h and timeline.h): X (40 MiB), W1 (40 MiB) and W2 (48 MiB)
 * fill the budget; after full_refill, X was used last by a slow kernel on
 * stream a (still running on the modeled GPU), W1 and W2 by quick ones on
 * b, which has finished: X is the least recently used and still in use.
 */
#ifndef FULL_BUDGET_H
#define FULL_BUDGET_H

#include <cuda.h>

#include "check.h"
#include "stamp_kernels.h"
#include "timeline.h"

#define FULL_MIB (1ull << 20)

typedef struct full {
    CUstream a, b, c;          /* X's stream, W1's and W2's, the allocating stream */
    CUdeviceptr x, w1, w2;     /* owned by the case */
    long mark;                 /* the timeline's length before the slow kernel (bytes) */
} full;

/* Makes X, W1, W2 and the streams in the current context, each chunk used
 * once by `stamp`; the case owns them (full_drop). */
static inline full full_make(CUfunction f_stamp)
{
    full t;
    OK(cuStreamCreate(&t.a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&t.b, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&t.c, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc(&t.x, 40 * FULL_MIB));
    OK(cuMemAlloc(&t.w1, 40 * FULL_MIB));
    OK(cuMemAlloc(&t.w2, 48 * FULL_MIB));
    launch_stamp(f_stamp, t.x, 40 * FULL_MIB, 1, t.a);
    launch_stamp(f_stamp, t.w1, 40 * FULL_MIB, 1, t.b);
    launch_stamp(f_stamp, t.w2, 48 * FULL_MIB, 1, t.b);
    OK(cuCtxSynchronize());
    return t;
}

/* Fills the budget again: X in use by a slow kernel on a (it writes 7),
 * W1 and W2 used after it on b (done); t->mark is where this begins on
 * the timeline. */
static inline void full_refill(full *t, CUfunction f_stamp, CUfunction f_slow)
{
    OK(cuCtxSynchronize());
    t->mark = timeline_mark();
    launch_stamp(f_slow, t->x, 40 * FULL_MIB, 7, t->a);
    launch_stamp(f_stamp, t->w1, 40 * FULL_MIB, 2, t->b);
    launch_stamp(f_stamp, t->w2, 48 * FULL_MIB, 2, t->b);
    OK(cuStreamSynchronize(t->b));
}

/* Frees the state's chunks and streams. */
static inline void full_drop(full *t)
{
    OK(cuCtxSynchronize());
    OK(cuMemFree(t->x));
    OK(cuMemFree(t->w1));
    OK(cuMemFree(t->w2));
    OK(cuStreamDestroy(t->a));
    OK(cuStreamDestroy(t->b));
    OK(cuStreamDestroy(t->c));
}

#endif
