/*
 * mip_break_test.c — mipmapped arrays under liblmshim.so from outside:
 * hostile descriptors, destroys of the wrong kind or twice, destroys from
 * another context and after the context ended, handle values the driver
 * hands out again, threads and fork. After every step lmshim's count
 * (cuMemGetInfo, lms_get_stats) must equal the simulated device's own
 * (settings in meson.build: LMS_LIMIT=512M over a 1 GiB device).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "../../common/threads.h"
#include "simgpu.h"

/* lmshim's count and the simulated device's agree, and are `want` (at
 * the caller's `line`). */
#define agree(want) agree_at(want, __LINE__)
static void agree_at(uint64_t want, int line)
{
    fprintf(stderr, "line %d: device %llu, lmshim %llu bytes\n", line, (unsigned long long)sim_used(),
            (unsigned long long)info_used());
    CHECK_EQ_U(sim_used(), want);
    CHECK_EQ_U(info_used(), want);
    CHECK_EQ_U(stats(0).used, want);
}

/* Hostile descriptors and arguments: each refused as the simulated driver
 * refuses it, nothing charged by either side. */
static void hostile(void)
{
    CUcontext ctx = new_context(0);
    CUmipmappedArray m = NULL;
    CUDA_ARRAY3D_DESCRIPTOR d = array3d_desc(256, 256, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    CHECK_IS(cuMipmappedArrayCreate(NULL, &d, 3), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMipmappedArrayCreate(&m, NULL, 3), CUDA_ERROR_INVALID_VALUE);
    agree(0);
    CUDA_ARRAY3D_DESCRIPTOR zero = array3d_desc(0, 256, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    CHECK_IS(cuMipmappedArrayCreate(&m, &zero, 3), CUDA_ERROR_INVALID_VALUE);
    /* Extents whose product overflows 64 bits, or whose levels' sum does. */
    CUDA_ARRAY3D_DESCRIPTOR wrap = array3d_desc(1ull << 40, 1ull << 40, 0, CU_AD_FORMAT_FLOAT, 4, 0);
    CHECK_IS(cuMipmappedArrayCreate(&m, &wrap, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_IS(cuMipmappedArrayCreate(&m, &wrap, 100), CUDA_ERROR_OUT_OF_MEMORY);
    CUDA_ARRAY3D_DESCRIPTOR edge = array3d_desc(UINT64_MAX >> 2, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0);   /* 2^64 - 4 bytes */
    CHECK_IS(cuMipmappedArrayCreate(&m, &edge, 1), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_IS(cuMipmappedArrayCreate(&m, &edge, 2), CUDA_ERROR_OUT_OF_MEMORY);   /* the sum wraps */
    CUDA_ARRAY3D_DESCRIPTOR huge = array3d_desc(1ull << 36, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0);   /* 64 GiB */
    CHECK_IS(cuMipmappedArrayCreate(&m, &huge, 1000), CUDA_ERROR_OUT_OF_MEMORY);
    agree(0);
    /* Flags: an unknown bit, a cube map whose faces are not square, layered without layers. */
    CUDA_ARRAY3D_DESCRIPTOR bad = d;
    bad.Flags = 0x80000000u;
    CHECK_IS(cuMipmappedArrayCreate(&m, &bad, 3), CUDA_ERROR_INVALID_VALUE);
    bad = array3d_desc(256, 128, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP);
    CHECK_IS(cuMipmappedArrayCreate(&m, &bad, 3), CUDA_ERROR_INVALID_VALUE);
    bad = array3d_desc(256, 256, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED);
    CHECK_IS(cuMipmappedArrayCreate(&m, &bad, 3), CUDA_ERROR_INVALID_VALUE);
    bad = array3d_desc(256, 256, 0, CU_AD_FORMAT_FLOAT, 3, 0);
    CHECK_IS(cuMipmappedArrayCreate(&m, &bad, 3), CUDA_ERROR_INVALID_VALUE);
    bad = array3d_desc(256, 256, 0, CU_AD_FORMAT_BC1_UNORM, 1, 0);
    CHECK_IS(cuMipmappedArrayCreate(&m, &bad, 3), CUDA_ERROR_NOT_SUPPORTED);
    agree(0);
    /* Sparse with deferred mapping, and sparse past the device: no memory. */
    CUDA_ARRAY3D_DESCRIPTOR sp = array3d_desc(1ull << 20, 1ull << 20, 0, CU_AD_FORMAT_FLOAT, 4,
                                      CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING);
    OK(cuMipmappedArrayCreate(&m, &sp, 0));
    agree(0);
    OK(cuMipmappedArrayDestroy(m));
    /* numLevels 0 is one level; 2^32-1 is clamped to 9 (256 = 2^8). */
    OK(cuMipmappedArrayCreate(&m, &d, 0));
    agree(256 * 1024);
    OK(cuMipmappedArrayDestroy(m));
    OK(cuMipmappedArrayCreate(&m, &d, UINT32_MAX));
    CUarray l;
    OK(cuMipmappedArrayGetLevel(&l, m, 8));
    CHECK_IS(cuMipmappedArrayGetLevel(&l, m, 9), CUDA_ERROR_INVALID_VALUE);
    agree(683 * 512);   /* 4 x (65536 + 16384 + ... + 1) = 349524 bytes, in 512-byte units */
    OK(cuMipmappedArrayDestroy(m));
    agree(0);
    OK(cuCtxDestroy(ctx));
}

/* Destroys of the wrong kind, of NULL and twice: refused, nothing released. */
static void destroys(void)
{
    CUcontext ctx = new_context(0);
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR d = array3d_desc(1024, 1024, 0, CU_AD_FORMAT_FLOAT, 1, 0);   /* 4 MiB + levels */
    OK(cuMipmappedArrayCreate(&m, &d, 4));
    uint64_t one = sim_used();
    CHECK(one >= 4 * MiB);
    agree(one);
    CUarray l0, l3;
    OK(cuMipmappedArrayGetLevel(&l0, m, 0));
    OK(cuMipmappedArrayGetLevel(&l3, m, 3));
    CHECK_IS(cuArrayDestroy(l0), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuArrayDestroy(l3), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuMipmappedArrayDestroy((CUmipmappedArray)l0), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuArrayDestroy((CUarray)m), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuMipmappedArrayDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
    agree(one);
    CHECK(cudaFreeMipmappedArray(NULL) == cudaSuccess);
    agree(one);
    OK(cuMipmappedArrayDestroy(m));
    agree(0);
    CHECK_IS(cuMipmappedArrayDestroy(m), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cudaFreeMipmappedArray((cudaMipmappedArray_t)m) == cudaErrorInvalidValue);
    agree(0);
    OK(cuCtxDestroy(ctx));
}

/* Destroyed from another context; the end of its context frees it (then
 * its destroy is refused and releases nothing of another array's); the
 * primary context's reset and last release free its arrays too. */
static void contexts(void)
{
    CUcontext a = new_context(0);
    CUmipmappedArray m, keep;
    CUDA_ARRAY3D_DESCRIPTOR d = array3d_desc(1024, 1024, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    OK(cuMipmappedArrayCreate(&m, &d, 4));
    uint64_t one = sim_used();
    CUcontext b = new_context(0);   /* current now */
    OK(cuMipmappedArrayCreate(&keep, &d, 4));
    agree(2 * one);
    OK(cuMipmappedArrayDestroy(m));   /* a's, from b */
    agree(one);
    OK(cuCtxSetCurrent(a));
    OK(cuMipmappedArrayCreate(&m, &d, 4));
    agree(2 * one);
    OK(cuCtxDestroy(a));
    OK(cuCtxSetCurrent(b));
    agree(one);
    CHECK_IS(cuMipmappedArrayDestroy(m), CUDA_ERROR_INVALID_HANDLE);
    agree(one);
    OK(cuMipmappedArrayDestroy(keep));
    agree(0);
    OK(cuCtxDestroy(b));
    /* The primary context: its last release, its reset, the runtime's reset. */
    CUcontext p;
    OK(cuDevicePrimaryCtxRetain(&p, 0));
    OK(cuCtxSetCurrent(p));
    OK(cuMipmappedArrayCreate(&m, &d, 4));
    agree(one);
    OK(cuDevicePrimaryCtxRelease(0));   /* the last */
    agree(0);
    OK(cuDevicePrimaryCtxRetain(&p, 0));
    OK(cuCtxSetCurrent(p));
    OK(cuMipmappedArrayCreate(&m, &d, 4));
    agree(one);
    OK(cuDevicePrimaryCtxReset(0));
    agree(0);
    cudaMipmappedArray_t rm;
    struct cudaChannelFormatDesc f = {.x = 32, .f = cudaChannelFormatKindFloat};
    CHECK(cudaMallocMipmappedArray(&rm, &f, (struct cudaExtent){.width = 1024, .height = 1024, .depth = 0}, 4,
                                   0) == cudaSuccess);
    agree(one);
    CHECK(cudaDeviceReset() == cudaSuccess);
    agree(0);
    OK(cuDevicePrimaryCtxRelease(0));
}

/* Mipmapped arrays and plain arrays made and destroyed in turn, so that
 * the driver hands the same handle values out again (of either kind): the
 * counts agree after every step. */
static void reuse(void)
{
    CUcontext ctx = new_context(0);
    CUDA_ARRAY3D_DESCRIPTOR d = array3d_desc(512, 512, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    uintptr_t seen[64];
    int nseen = 0, again = 0;
    for (int i = 0; i < 200; i++) {
        CUmipmappedArray m;
        CUarray a;
        OK(cuMipmappedArrayCreate(&m, &d, 1 + i % 3));
        OK(cuArray3DCreate(&a, &d));
        uint64_t both = sim_used();
        agree(both);
        for (int k = 0; k < nseen; k++)
            again += seen[k] == (uintptr_t)m || seen[k] == (uintptr_t)a;
        if (nseen < 64)
            seen[nseen++] = (uintptr_t)m;
        if (i % 2) {
            OK(cuArrayDestroy(a));
            OK(cuMipmappedArrayDestroy(m));
        } else {
            OK(cuMipmappedArrayDestroy(m));
            OK(cuArrayDestroy(a));
        }
        agree(0);
    }
    /* Handle values handed out again (none under AddressSanitizer, whose
     * allocator keeps freed memory aside for a while). */
    fprintf(stderr, "%d handle values handed out again\n", again);
    OK(cuCtxDestroy(ctx));
}

static CUcontext shared_ctx;

/* One thread's 64 MiB: a mipmapped array (even threads) or a plain array
 * (odd) in shared_ctx, held until every thread has tried, then destroyed;
 * returns the CUresult. */
static void *make_64m(void *arg)
{
    intptr_t i = (intptr_t)arg;
    CUresult r = cuCtxSetCurrent(shared_ctx);
    CUmipmappedArray m = NULL;
    CUarray a = NULL;
    CUDA_ARRAY3D_DESCRIPTOR dm = array3d_desc(4096, 3072, 0, CU_AD_FORMAT_FLOAT, 1, 0);   /* 64 MiB in 13 levels */
    CUDA_ARRAY3D_DESCRIPTOR da = array3d_desc(4096, 4096, 0, CU_AD_FORMAT_FLOAT, 1, 0);   /* 64 MiB */
    if (r == CUDA_SUCCESS)
        r = i % 2 ? cuArray3DCreate(&a, &da) : cuMipmappedArrayCreate(&m, &dm, 13);
    race_wait();
    if (r == CUDA_SUCCESS && (i % 2 ? cuArrayDestroy(a) : cuMipmappedArrayDestroy(m)) != CUDA_SUCCESS)
        r = CUDA_ERROR_UNKNOWN;
    return (void *)(intptr_t)r;
}

/* Twelve threads, half mipmapped arrays and half plain ones of 64 MiB,
 * against the 512 MiB budget with LMS_ON_OOM=fail: eight fit, whichever
 * they are, and every charge comes back. */
static void threads_mixed(void)
{
    shared_ctx = new_context(0);
    for (int round = 0; round < 40; round++) {
        race_count c = race_threads(12, make_64m);
        CHECK_EQ_U(c.ok, 8);
        CHECK_EQ_U(c.oom, 4);
        agree(0);
    }
    OK(cuCtxDestroy(shared_ctx));
}

static volatile int stop;

/* Makes and destroys mipmapped arrays in shared_ctx until `stop`. */
static void *churn(void *arg)
{
    (void)arg;
    CHECK(cuCtxSetCurrent(shared_ctx) == CUDA_SUCCESS);
    CUDA_ARRAY3D_DESCRIPTOR d = array3d_desc(256, 256, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    while (!stop) {
        CUmipmappedArray m;
        if (cuMipmappedArrayCreate(&m, &d, 3) == CUDA_SUCCESS)
            cuMipmappedArrayDestroy(m);
    }
    return NULL;
}

/* fork while other threads make and destroy mipmapped arrays: the child
 * makes and destroys one too and exits (no lock left held across fork);
 * the parent's counts agree afterwards. */
static void fork_churn(void)
{
    shared_ctx = new_context(0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, churn, NULL) == 0);
    for (int i = 0; i < 30; i++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            alarm(10);
            CUDA_ARRAY3D_DESCRIPTOR d = array3d_desc(64, 64, 0, CU_AD_FORMAT_FLOAT, 1, 0);
            CUmipmappedArray m;
            cuCtxSetCurrent(shared_ctx);
            if (cuMipmappedArrayCreate(&m, &d, 2) == CUDA_SUCCESS)
                cuMipmappedArrayDestroy(m);
            _exit(0);
        }
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    agree(0);
    OK(cuCtxDestroy(shared_ctx));
}

/* Device 1's bytes in use as the simulated device counts them. */
static uint64_t sim_used1(void)
{
    simgpu_counters c;
    OK(simgpu_get_counters(1, &c));
    return c.used_device_bytes;
}

/* A mipmapped array made on device 1 (the driver's context, then the
 * runtime's after cudaSetDevice) is charged to device 1, not 0, and
 * destroyed from device 0's context its charge goes back to device 1. */
static void device1(void)
{
    CUdevice dev;
    CUcontext c0 = new_context(0), c1;
    OK(cuDeviceGet(&dev, 1));
    OK(cuCtxCreate(&c1, NULL, 0, dev));
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR d = array3d_desc(1024, 1024, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    OK(cuMipmappedArrayCreate(&m, &d, 4));
    uint64_t one = sim_used1();
    CHECK(one >= 4 * MiB);
    CHECK_EQ_U(stats(1).used, one);
    OK(cuCtxSetCurrent(c0));
    agree(0);
    OK(cuMipmappedArrayDestroy(m));
    CHECK_EQ_U(sim_used1(), 0);
    CHECK_EQ_U(stats(1).used, 0);
    CHECK(cudaSetDevice(1) == cudaSuccess);
    cudaMipmappedArray_t rm;
    struct cudaChannelFormatDesc f = {.x = 32, .f = cudaChannelFormatKindFloat};
    CHECK(cudaMallocMipmappedArray(&rm, &f, (struct cudaExtent){.width = 1024, .height = 1024, .depth = 0}, 4,
                                   0) == cudaSuccess);
    CHECK_EQ_U(sim_used1(), one);
    CHECK_EQ_U(stats(1).used, one);
    CHECK(cudaFreeMipmappedArray(rm) == cudaSuccess);
    CHECK_EQ_U(stats(1).used, 0);
    CHECK_EQ_U(sim_used1(), 0);
    OK(cuCtxDestroy(c1));
    OK(cuCtxDestroy(c0));
}

static const test_case cases[] = {
    {"hostile", hostile},
    {"destroys", destroys},
    {"contexts", contexts},
    {"reuse", reuse},
    {"threads_mixed", threads_mixed},
    {"fork_churn", fork_churn},
    {"device1", device1},
};

TEST_MAIN(cases)
