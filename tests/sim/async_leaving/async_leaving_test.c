/*
 * async_leaving_test.c — stream-ordered device allocations while an
 * eviction is still leaving the device. liblmshim.so is preloaded over the
 * simulated GPU (settings in meson.build: a 128 MiB budget, chunks of 32 MiB
 * and more managed, kernels of streams side by side). Three managed chunks
 * fill the budget; the least recently used one, X, is still in use by a
 * slow kernel. A stream-ordered allocation of a device chunk makes the
 * engine evict X, whose copy out waits for the slow kernel: the new chunk
 * must not be used on its stream before enough of X is off the device, and
 * the host must not wait for it either (CUDA does not block there).
 * Modeled times come from the simulator's timeline file (SIMGPU_TIMELINE).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "../../common/host_clock.h"
#include "../../common/timeline.h"
#include "simgpu.h"
#include "../../common/stamp_kernels.h"
#include "../../common/full_budget.h"


static CUfunction f_stamp, f_slow;
static CUmodule mod;

/* The primary context and the kernels stamp and slow. */
static void setup(void)
{
    primary_context(0);
    stamp_kernels_load(&mod, &f_stamp, &f_slow);
}

/* The budget LMS_LIMIT sets (in MiB: "NNNM"). */
static uint64_t budget(void)
{
    const char *l = getenv("LMS_LIMIT");
    CHECK(l != NULL);
    return strtoull(l, NULL, 10) * MiB;
}

/* The state each case starts from (tests/common/full_budget.h): the
 * budget full, X the least recently used chunk and still in use. */
static full full_budget(void)
{
    setup();
    full t = full_make(f_stamp);
    full_refill(&t, f_stamp, f_slow);
    return t;
}

/* How each case allocates its 24 MiB device chunk D, stream-ordered on
 * stream c: the four entry points that take that path. */
typedef enum how { DRIVER, DRIVER_PER_THREAD, POOL, RUNTIME } how;

/* Allocates `bytes` on stream c the way h names; the caller frees it. */
static CUdeviceptr alloc_d(how h, CUstream c, size_t bytes)
{
    CUdeviceptr d = 0;
    switch (h) {
    case DRIVER:
        OK(cuMemAllocAsync(&d, bytes, c));
        break;
    case DRIVER_PER_THREAD: {
        CUresult (*ptsz)(CUdeviceptr *, size_t, CUstream) = NULL;
        CUdriverProcAddressQueryResult q;
        OK(cuGetProcAddress("cuMemAllocAsync", (void **)&ptsz, 12000,
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q));
        CHECK(ptsz != NULL);
        OK(ptsz(&d, bytes, NULL));   /* the per-thread default stream */
        break;
    }
    case POOL: {
        CUmemoryPool pool;
        OK(cuDeviceGetDefaultMemPool(&pool, 0));
        OK(cuMemAllocFromPoolAsync(&d, bytes, pool, c));
        break;
    }
    case RUNTIME: {
        void *p = NULL;
        CHECK(cudaMallocAsync(&p, bytes, (cudaStream_t)c) == cudaSuccess);
        d = (CUdeviceptr)(uintptr_t)p;
        break;
    }
    }
    return d;
}

/* One case: D is allocated stream-ordered on its stream, then a kernel on
 * D on the same stream (kernels of streams overlap: SIMGPU_CONCURRENT=1)
 * starts only once W1, W2, D and what is left of X fit in the budget. The
 * host's clock does not move past the slow kernel meanwhile (no host
 * wait), and the kernel reads nothing stale. */
static void alloc_waits(how h)
{
    full t = full_budget();
    CUstream c = h == DRIVER_PER_THREAD ? CU_STREAM_PER_THREAD : t.c;
    CUevent before = host_clock_now();
    CUdeviceptr d = alloc_d(h, c, 24 * MiB);   /* a device chunk: evicts X */
    float host_us = host_clock_since(before);
    launch_stamp(f_stamp, d, 24 * MiB, 3, c);
    OK(cuCtxSynchronize());
    double use = timeline_last_kernel_start(t.mark, "stamp");
    uint64_t out = timeline_out_by(t.mark, use);
    fprintf(stderr, "D used from %.1f us, %llu MiB of X off the device by then; the host waited %.1f us\n", use,
            (unsigned long long)(out / MiB), host_us);
    CHECK(use >= 0);
    CHECK(128 * MiB - out + 24 * MiB <= budget());   /* W1, W2 and X were the whole budget */
    CHECK(host_us < 1000.0f);                        /* the slow kernel lasts 20 ms */
    uint32_t v = 0;
    OK(cuMemcpyDtoH(&v, d, 4));
    CHECK_EQ_U(v, 3);
    OK(cuMemcpyDtoH(&v, t.x, 4));
    CHECK_EQ_U(v, 7);   /* X kept what the slow kernel wrote */
    check_no_hazards(0, false);
    OK(cuMemFreeAsync(d, c));
    OK(cuStreamSynchronize(c));
    full_drop(&t);
}

/* The cases: cuMemAllocAsync, its _ptsz variant on the per-thread stream,
 * cuMemAllocFromPoolAsync from the default pool, cudaMallocAsync. */
static void driver_async(void) { alloc_waits(DRIVER); }
static void driver_async_ptsz(void) { alloc_waits(DRIVER_PER_THREAD); }
static void pool_async(void) { alloc_waits(POOL); }
static void runtime_async(void) { alloc_waits(RUNTIME); }

static const test_case cases[] = {
    {"driver_async", driver_async},
    {"driver_async_ptsz", driver_async_ptsz},
    {"pool_async", pool_async},
    {"runtime_async", runtime_async},
};

TEST_MAIN(cases)
