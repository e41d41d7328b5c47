/*
 * stream_test.c — streams, events, the modeled timeline, memory pools with
 * stream-ordered allocation, and the virtual memory API of the simulated
 * driver. One case per meson test.
 */
#include <cuda.h>
#include <stdint.h>

#include "../common/check.h"
#include "../common/context.h"
#include "../common/shim.h"

#define LINK_NS(bytes) ((double)(bytes) / 55.0)   /* default link: 55 GB/s */

static void setup(void) { primary_context(0); }

static void streams(void)
{
    setup();
    CUstream s;
    CHECK_IS(cuStreamCreate(&s, 0x10), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned flags = 0;
    OK(cuStreamGetFlags(s, &flags));
    CHECK(flags == CU_STREAM_NON_BLOCKING);
    CUdevice d = -1;
    OK(cuStreamGetDevice(s, &d));
    CHECK(d == 0);
    OK(cuStreamQuery(s));
    OK(cuStreamSynchronize(s));
    OK(cuStreamSynchronize(NULL));
    OK(cuStreamSynchronize(CU_STREAM_LEGACY));
    OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    OK(cuStreamDestroy(s));
    CHECK_IS(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuStreamDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
}

static void events(void)
{
    setup();
    CUevent a, b, nt;
    OK(cuEventCreate(&a, 0));
    OK(cuEventCreate(&b, 0));
    OK(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
    CHECK_IS(cuEventCreate(&a, 0x100), CUDA_ERROR_INVALID_VALUE);
    float ms;
    CHECK_IS(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);   /* not recorded */
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 1 * GiB));
    void *h;
    OK(cuMemAllocHost(&h, 1 * GiB));
    OK(cuEventRecord(a, NULL));
    OK(cuMemcpyHtoDAsync(p, h, 1 * GiB, NULL));
    OK(cuEventRecord(b, NULL));
    OK(cuEventRecord(nt, NULL));
    OK(cuEventSynchronize(b));
    OK(cuEventQuery(b));
    OK(cuEventElapsedTime(&ms, a, b));
    CHECK_NEAR(ms, LINK_NS(1 * GiB) / 1e6, 1e-4);   /* 1 GiB at 55 GB/s = 19.52 ms */
    CHECK_IS(cuEventElapsedTime(&ms, a, nt), CUDA_ERROR_INVALID_HANDLE);
    OK(cuEventDestroy(a));
    OK(cuEventDestroy(b));
    OK(cuEventDestroy(nt));
    OK(cuMemFree(p));
    OK(cuMemFreeHost(h));
}

/* Copies on two streams use the two copy engines and overlap; copies in the
 * same direction share one engine and serialize; a stream that waits on an
 * event starts after it. */
static void timeline(void)
{
    setup();
    CUdeviceptr d1, d2;
    void *h1, *h2;
    OK(cuMemAlloc(&d1, 1 * GiB));
    OK(cuMemAlloc(&d2, 1 * GiB));
    OK(cuMemAllocHost(&h1, 1 * GiB));
    OK(cuMemAllocHost(&h2, 1 * GiB));
    CUstream s1, s2;
    OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CUevent t0, e1, e2, e3;
    OK(cuEventCreate(&t0, 0));
    OK(cuEventCreate(&e1, 0));
    OK(cuEventCreate(&e2, 0));
    OK(cuEventCreate(&e3, 0));
    OK(cuEventRecord(t0, s1));
    OK(cuMemcpyHtoDAsync(d1, h1, 1 * GiB, s1));   /* H2D engine */
    OK(cuMemcpyDtoHAsync(h2, d2, 1 * GiB, s2));   /* D2H engine: overlaps */
    OK(cuEventRecord(e1, s1));
    OK(cuEventRecord(e2, s2));
    float ms1, ms2, ms3;
    OK(cuEventElapsedTime(&ms1, t0, e1));
    OK(cuEventElapsedTime(&ms2, t0, e2));
    double one = LINK_NS(1 * GiB) / 1e6;
    CHECK_NEAR(ms1, one, 1e-4);
    CHECK_NEAR(ms2, one, 1e-4);
    OK(cuMemcpyHtoDAsync(d2, h2, 1 * GiB, s2));   /* same engine as s1's copy: after it */
    OK(cuEventRecord(e3, s2));
    OK(cuEventElapsedTime(&ms3, t0, e3));
    CHECK_NEAR(ms3, 2 * one, 1e-4);
    OK(cuStreamWaitEvent(s1, e3, 0));             /* s1 now starts after e3 */
    OK(cuMemcpyDtoHAsync(h1, d1, 1 * GiB, s1));
    OK(cuEventRecord(e1, s1));
    OK(cuEventElapsedTime(&ms1, t0, e1));
    CHECK_NEAR(ms1, 3 * one, 1e-4);
    OK(cuCtxSynchronize());
    CUevent evs[] = {t0, e1, e2, e3};
    for (int i = 0; i < 4; i++)
        OK(cuEventDestroy(evs[i]));
    OK(cuStreamDestroy(s1));
    OK(cuStreamDestroy(s2));
    OK(cuMemFree(d1));
    OK(cuMemFree(d2));
    OK(cuMemFreeHost(h1));
    OK(cuMemFreeHost(h2));
}

static void pools(void)
{
    setup();
    CUmemoryPool def, cur, mine;
    OK(cuDeviceGetDefaultMemPool(&def, 0));
    OK(cuDeviceGetMemPool(&cur, 0));
    CHECK(def == cur);
    CHECK_IS(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
    CUstream s1, s2;
    OK(cuStreamCreate(&s1, 0));
    OK(cuStreamCreate(&s2, 0));
    size_t f0, f1, t;
    OK(cuMemGetInfo(&f0, &t));
    CUdeviceptr a, b;
    OK(cuMemAllocAsync(&a, 8 * MiB, s1));
    CUmemoryPool of = NULL;
    OK(cuPointerGetAttribute(&of, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
    CHECK(of == def);
    OK(cuMemGetInfo(&f1, &t));
    CHECK_EQ_U(f0 - f1, 8 * MiB);
    OK(cuMemsetD8Async(a, 9, 8 * MiB, s1));
    OK(cuMemFreeAsync(a, s2));                     /* freed on another stream */
    CHECK_IS(cuMemFreeAsync(a, s2), CUDA_ERROR_INVALID_VALUE);
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    OK(cuMemPoolCreate(&mine, &props));
    OK(cuMemAllocFromPoolAsync(&b, 4 * MiB, mine, s1));
    cuuint64_t used = 0;
    OK(cuMemPoolGetAttribute(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    CHECK_EQ_U(used, 4 * MiB);
    CHECK_IS(cuMemAllocFromPoolAsync(&b, 4 * MiB, NULL, s1), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemPoolDestroy(mine));                    /* outstanding: goes with the last free */
    CHECK_IS(cuMemPoolDestroy(mine), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFreeAsync(b, s2));
    OK(cuMemAllocAsync(&a, 1 * MiB, CU_STREAM_PER_THREAD));   /* per-thread default stream */
    OK(cuMemFreeAsync(a, CU_STREAM_PER_THREAD));
    OK(cuMemGetInfo(&f1, &t));
    CHECK_EQ_U(f1, f0);
    props.location.id = 5;
    CHECK_IS(cuMemPoolCreate(&mine, &props), CUDA_ERROR_INVALID_DEVICE);
    OK(cuStreamDestroy(s1));
    OK(cuStreamDestroy(s2));
}

static void vmm(void)
{
    setup();
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK_EQ_U(gran, 2 * MiB);
    CUmemGenericAllocationHandle hnd;
    CHECK_IS(cuMemCreate(&hnd, gran + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    size_t f0, f1, t;
    OK(cuMemGetInfo(&f0, &t));
    OK(cuMemCreate(&hnd, 2 * gran, &prop, 0));
    OK(cuMemGetInfo(&f1, &t));
    CHECK_EQ_U(f0 - f1, 2 * gran);                 /* physical memory is charged */
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
    OK(cuMemMap(va, 2 * gran, 0, hnd, 0));
    OK(cuMemMap(va + 2 * gran, 2 * gran, 0, hnd, 0));   /* a second view of the same bytes */
    CHECK_IS(cuMemMap(va, 2 * gran, 0, hnd, 0), CUDA_ERROR_INVALID_VALUE);   /* already mapped */
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    OK(cuMemSetAccess(va, 4 * gran, &acc, 1));
    OK(cuMemsetD32(va, 0xfeedf00d, 4));
    unsigned w = 0;
    OK(cuMemcpyDtoH(&w, va + 2 * gran, 4));
    CHECK(w == 0xfeedf00du);
    int ordinal = -1;
    OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + 100));
    CHECK(ordinal == 0);
    CHECK_IS(cuMemFree(va), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemRelease(hnd));                         /* still mapped: memory stays */
    OK(cuMemGetInfo(&f1, &t));
    CHECK_EQ_U(f0 - f1, 2 * gran);
    OK(cuMemUnmap(va, 4 * gran));
    OK(cuMemGetInfo(&f1, &t));
    CHECK_EQ_U(f1, f0);                            /* last mapping gone: freed */
    CHECK_IS(cuMemAddressFree(va, gran), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemAddressFree(va, 4 * gran));
    prop.location.id = 3;
    CHECK_IS(cuMemCreate(&hnd, gran, &prop, 0), CUDA_ERROR_INVALID_VALUE);
}

/* The legacy default stream waits for blocking streams, not for
 * non-blocking ones; and per-thread default streams are per thread. */
static void legacy_and_per_thread(void)
{
    setup();
    CUdeviceptr d;
    void *h;
    OK(cuMemAlloc(&d, 1 * GiB));
    OK(cuMemAllocHost(&h, 1 * GiB));
    CUstream blocking, nonblocking;
    OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    OK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
    CUevent t0, e;
    OK(cuEventCreate(&t0, 0));
    OK(cuEventCreate(&e, 0));
    OK(cuEventRecord(t0, nonblocking));
    OK(cuMemcpyDtoHAsync(h, d, 1 * GiB, nonblocking));   /* D2H engine, 19.5 ms */
    OK(cuMemsetD8Async(d, 0, 16, NULL));                  /* legacy: does not wait for it */
    OK(cuEventRecord(e, NULL));
    float ms;
    OK(cuEventElapsedTime(&ms, t0, e));
    CHECK(ms < 1.0f);
    OK(cuMemcpyDtoHAsync(h, d, 1 * GiB, blocking));       /* after the other copy: same engine */
    OK(cuMemsetD8Async(d, 0, 16, NULL));                  /* legacy waits for `blocking` */
    OK(cuEventRecord(e, NULL));
    OK(cuEventElapsedTime(&ms, t0, e));
    CHECK_NEAR(ms, 2 * LINK_NS(1 * GiB) / 1e6, 1e-3);
    unsigned long long id_main = 0, id_again = 0;
    OK(cuStreamGetId(CU_STREAM_PER_THREAD, &id_main));
    OK(cuStreamGetId(CU_STREAM_PER_THREAD, &id_again));
    CHECK(id_main == id_again && id_main != 0);
    OK(cuEventDestroy(t0));
    OK(cuEventDestroy(e));
    OK(cuStreamDestroy(blocking));
    OK(cuStreamDestroy(nonblocking));
    OK(cuMemFree(d));
    OK(cuMemFreeHost(h));
}

static const test_case cases[] = {
    {"legacy_and_per_thread", legacy_and_per_thread},
    {"streams", streams},
    {"events", events},
    {"timeline", timeline},
    {"pools", pools},
    {"vmm", vmm},
};

TEST_MAIN(cases)
