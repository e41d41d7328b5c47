/*
 * host_clock.h — the simulator's modeled host clock, read from a test: an
 * event recorded on a stream with no work is stamped with the host's
 * modeled time (header-only; tests over sim/ that include check.h).
 */
#ifndef HOST_CLOCK_H
#define HOST_CLOCK_H

#include <cuda.h>

#include "check.h"

/* An event stamped with the host's modeled clock now; the caller owns it
 * (host_clock_since destroys it). */
static inline CUevent host_clock_now(void)
{
    CUstream s;
    CUevent e;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
    OK(cuEventRecord(e, s));
    OK(cuStreamDestroy(s));
    return e;
}

/* The host's modeled time since `since` (us); destroys `since`. */
static inline float host_clock_since(CUevent since)
{
    CUevent e = host_clock_now();
    float ms = 0;
    OK(cuEventElapsedTime(&ms, since, e));
    OK(cuEventDestroy(e));
    OK(cuEventDestroy(since));
    return ms * 1000.0f;
}

#endif
