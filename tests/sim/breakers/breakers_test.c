/*
 * breakers_test.c — hostile and unusual programs against lmshim's
 * accounting, frees, VMM tracking, pools and launch scans, with liblmshim.so
 * preloaded over the simulated GPU (the sim_* cases: the simulator alone).
 * Each case states the CUDA behaviour it holds lmshim (or the simulator)
 * to; settings in meson.build.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "lmshim.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* lmshim's statistics of a device, read through its public API. */
static lms_device_stats stats(int device)
{
    int (*get)(int, lms_device_stats *) = (int (*)(int, lms_device_stats *))dlsym(RTLD_DEFAULT, "lms_get_stats");
    CHECK(get != NULL);   /* the shim is preloaded */
    lms_device_stats s;
    CHECK(get(device, &s) == 0);
    return s;
}

static CUmemAllocationProp dev_prop(int device)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
}

/* Device bytes the driver says are in use on the current device. */
static size_t driver_used(void)
{
    size_t f = 0, t = 0;
    OK(cuMemGetInfo(&f, &t));
    return t - f;
}

/* ---- VMM ------------------------------------------------------------------ */

/* cuMemUnmap "cannot unmap a sub-range of an address range mapped by
 * cuMemMap": a range cutting a mapping is refused, and the mapping (and the
 * physical memory's charge) stay. */
static void sim_vmm_partial_unmap(void)
{
    primary_context(0);
    CUmemAllocationProp prop = dev_prop(0);
    CUmemGenericAllocationHandle h;
    OK(cuMemCreate(&h, 64 * MiB, &prop, 0));
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 128 * MiB, 0, 0, 0));
    OK(cuMemMap(va, 64 * MiB, 0, h, 0));
    OK(cuMemRelease(h));
    CHECK_IS(cuMemUnmap(va + 32 * MiB, 32 * MiB), CUDA_ERROR_INVALID_VALUE);   /* its tail */
    CHECK_IS(cuMemUnmap(va, 32 * MiB), CUDA_ERROR_INVALID_VALUE);              /* its head */
    CHECK_IS(cuMemUnmap(va + 32 * MiB, 64 * MiB), CUDA_ERROR_INVALID_VALUE);   /* tail and beyond */
    CHECK_EQ_U(driver_used(), 64 * MiB);
    OK(cuMemUnmap(va, 128 * MiB));      /* the whole mapping and unmapped space around it */
    CHECK_EQ_U(driver_used(), 0);
    OK(cuMemAddressFree(va, 128 * MiB));
}

/* cuMemMap onto a range of which any part is mapped fails, wherever the
 * mapped part is (here in the middle). */
static void sim_vmm_overlap_map(void)
{
    primary_context(0);
    CUmemAllocationProp prop = dev_prop(0);
    CUmemGenericAllocationHandle h1, h2;
    OK(cuMemCreate(&h1, 16 * MiB, &prop, 0));
    OK(cuMemCreate(&h2, 64 * MiB, &prop, 0));
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 64 * MiB, 0, 0, 0));
    OK(cuMemMap(va + 16 * MiB, 16 * MiB, 0, h1, 0));
    CHECK_IS(cuMemMap(va, 64 * MiB, 0, h2, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemRelease(h1));
    OK(cuMemRelease(h2));
    CHECK_EQ_U(driver_used(), 16 * MiB);
    OK(cuMemUnmap(va, 64 * MiB));
    CHECK_EQ_U(driver_used(), 0);
    OK(cuMemAddressFree(va, 64 * MiB));
}

/* The same two under lmshim: what the program holds stays charged, and all
 * of it goes back in the end. */
static void vmm_partial_unmap(void)
{
    sim_vmm_partial_unmap();
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(stats(0).live_chunks[3], 0);
}

static void vmm_overlap_map(void)
{
    sim_vmm_overlap_map();
    CHECK_EQ_U(stats(0).used, 0);
}

/* Hostile VMM orders: a handle mapped twice at once, released before,
 * between and after its unmaps, released twice, garbage handles, unmaps of
 * nothing; the charge always equals what the driver holds. */
static void vmm_orders(void)
{
    primary_context(0);
    CUmemAllocationProp prop = dev_prop(0);
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 256 * MiB, 0, 0, 0));
    CUmemGenericAllocationHandle h;
    OK(cuMemCreate(&h, 32 * MiB, &prop, 0));
    OK(cuMemMap(va, 32 * MiB, 0, h, 0));
    CHECK_IS(cuMemMap(va, 32 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);   /* same place twice */
    OK(cuMemMap(va + 64 * MiB, 32 * MiB, 0, h, 0));
    OK(cuMemUnmap(va, 32 * MiB));
    OK(cuMemRelease(h));
    CHECK_IS(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemMap(va, 32 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);   /* released */
    CHECK_EQ_U(stats(0).used, 32 * MiB);
    OK(cuMemUnmap(va + 64 * MiB, 32 * MiB));
    CHECK_EQ_U(stats(0).used, 0);
    OK(cuMemUnmap(va, 256 * MiB));                                          /* nothing mapped */
    CHECK_IS(cuMemRelease(0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemRelease(0xdead0000), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemMap(va, 32 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(&h, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(NULL, 32 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(&h, 32 * MiB, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    prop.location.id = 7;
    CHECK_IS(cuMemCreate(&h, 32 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    prop.location.id = -1;
    CHECK_IS(cuMemCreate(&h, 32 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ_U(stats(0).used, 0);
    /* Many handles and mappings, torn down in a scrambled order. */
    enum { N = 64 };
    CUmemGenericAllocationHandle hs[N];
    prop.location.id = 0;
    for (int i = 0; i < N; i++) {
        OK(cuMemCreate(&hs[i], 2 * MiB, &prop, 0));
        OK(cuMemMap(va + (uint64_t)i * 2 * MiB, 2 * MiB, 0, hs[i], 0));
        if (i % 3 == 0)
            OK(cuMemMap(va + 128 * MiB + (uint64_t)i * 2 * MiB, 2 * MiB, 0, hs[i], 0));
    }
    CHECK_EQ_U(stats(0).used, N * 2 * MiB);
    for (int i = 0; i < N; i += 2)
        OK(cuMemRelease(hs[i]));
    OK(cuMemUnmap(va, 64 * MiB));
    CHECK_EQ_U(stats(0).used, driver_used());
    for (int i = 1; i < N; i += 2)
        OK(cuMemRelease(hs[i]));
    CHECK_EQ_U(stats(0).used, driver_used());
    OK(cuMemUnmap(va + 128 * MiB, 128 * MiB));
    CHECK_EQ_U(stats(0).used, 64 * MiB);              /* the odd ones' first mappings */
    CHECK_EQ_U(stats(0).used, driver_used());
    OK(cuMemUnmap(va + 64 * MiB, 64 * MiB));
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(driver_used(), 0);
    OK(cuMemAddressFree(va, 256 * MiB));
}

/* ---- pools ---------------------------------------------------------------- */

/* A pool destroyed with live allocations lives on until they are freed
 * (CUDA: "released automatically once there are no more outstanding
 * allocations"); their charges go back at their frees, and a pool made
 * afterwards is charged where it is. SIMGPU_DEVICES=2. */
static void pool_destroyed_live(void)
{
    OK(cuInit(0));
    CUcontext c0;
    OK(cuDevicePrimaryCtxRetain(&c0, 0));
    OK(cuCtxSetCurrent(c0));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 1;
    CUmemoryPool pool;
    OK(cuMemPoolCreate(&pool, &props));
    CUdeviceptr p[3];
    for (int i = 0; i < 3; i++)
        OK(cuMemAllocFromPoolAsync(&p[i], 128 * MiB, pool, s));
    CHECK_EQ_U(stats(1).used, 384 * MiB);
    OK(cuMemPoolDestroy(pool));
    CHECK_IS(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFreeAsync(p[0], s));
    CHECK_EQ_U(stats(1).used, 256 * MiB);
    /* A device out of range, and a NULL pool. */
    props.location.id = 2;
    CUmemoryPool bad;
    CHECK_IS(cuMemPoolCreate(&bad, &props), CUDA_ERROR_INVALID_DEVICE);
    props.location.id = 0;
    CUmemoryPool pool0;
    OK(cuMemPoolCreate(&pool0, &props));
    CUdeviceptr q;
    OK(cuMemAllocFromPoolAsync(&q, 64 * MiB, pool0, s));
    CHECK_EQ_U(stats(0).used, 64 * MiB);
    CHECK_IS(cuMemAllocFromPoolAsync(&q, 64 * MiB, NULL, s), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFreeAsync(p[1], s));
    OK(cuMemFreeAsync(p[2], s));
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(stats(1).used, 0);
    OK(cuMemPoolDestroy(pool0));   /* q still live */
    OK(cuMemFreeAsync(q, s));
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(stats(0).used, 0);
    OK(cuStreamDestroy(s));
}

/* ---- frees ---------------------------------------------------------------- */

/* Interior pointers, double frees, NULL and garbage: CUDA answers, lmshim's
 * accounting does not move. LMS_LIMIT=1G LMS_FRAC=0.5 LMS_THRESHOLD=64M. */
static void free_garbage(void)
{
    primary_context(0);
    CUdeviceptr d, m;
    OK(cuMemAlloc(&d, 32 * MiB));
    OK(cuMemAlloc(&m, 768 * MiB));       /* managed */
    lms_device_stats s0 = stats(0);
    CHECK_IS(cuMemFree(d + 4096), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemFree(m + 4096), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemFreeHost((void *)(uintptr_t)(d + 8)), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemFree(0xdeadbeef000ull), CUDA_ERROR_INVALID_VALUE);
    lms_device_stats s1 = stats(0);
    CHECK_EQ_U(s1.used, s0.used);
    CHECK_EQ_U(s1.live_chunks[0], s0.live_chunks[0]);
    CHECK_EQ_U(s1.live_chunks[1], s0.live_chunks[1]);
    OK(cuMemFree(d));
    CHECK_IS(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(m));
    CHECK_IS(cuMemFree(m), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ_U(stats(0).used, 0);
    /* Huge requests. */
    CUdeviceptr h;
    CHECK_IS(cuMemAlloc(&h, (size_t)-1), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_IS(cuMemAlloc(&h, (size_t)1 << 62), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ_U(stats(0).used, 0);
}

typedef struct test_case_list test_case_list;
static const test_case cases[] = {
    {"sim_vmm_partial_unmap", sim_vmm_partial_unmap},
    {"sim_vmm_overlap_map", sim_vmm_overlap_map},
    {"vmm_partial_unmap", vmm_partial_unmap},
    {"vmm_overlap_map", vmm_overlap_map},
    {"vmm_orders", vmm_orders},
    {"pool_destroyed_live", pool_destroyed_live},
    {"free_garbage", free_garbage},
};
TEST_MAIN(cases)
