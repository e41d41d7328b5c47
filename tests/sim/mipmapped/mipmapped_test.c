/*
 * mipmapped_test.c — mipmapped CUDA arrays and sparse arrays: the
 * simulator's cuMipmappedArrayCreate / GetLevel / Destroy and the runtime's
 * cudaMallocMipmappedArray / cudaGetMipmappedArrayLevel /
 * cudaFreeMipmappedArray as CUDA documents them (levels clamped, each
 * level's extents halved down to 1, errors), and lmshim's charge for every
 * level from creation to destroy; sparse and deferred-mapping arrays take
 * no memory and are not charged.
 *
 * sim_* cases run over the simulated driver alone; shim_* cases under
 * liblmshim.so with LMS_LIMIT=512M over a 1 GiB device (meson.build).
 * Expected bytes are worked out by hand in the comments.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "../../common/threads.h"
#include "simgpu.h"

/* 4096 x 6144 one-channel floats: level 0 is 96 MiB; 13 levels (6144 needs
 * 1 + 12), each a quarter of the one before: 128 MiB less 4 bytes, charged
 * as 128 MiB (whole 2 MiB pages). */
static CUDA_ARRAY3D_DESCRIPTOR big2d(unsigned flags)
{
    return array3d_desc(4096, 6144, 0, CU_AD_FORMAT_FLOAT, 1, flags);
}

/* Level l of m has the extents w x h x d. */
static void check_level(CUmipmappedArray m, unsigned l, size_t w, size_t h, size_t d)
{
    CUarray a;
    OK(cuMipmappedArrayGetLevel(&a, m, l));
    CUDA_ARRAY3D_DESCRIPTOR got;
    OK(cuArray3DGetDescriptor(&got, a));
    CHECK_EQ_U(got.Width, w);
    CHECK_EQ_U(got.Height, h);
    CHECK_EQ_U(got.Depth, d);
}

/* The number of levels of m: the first level GetLevel refuses. */
static unsigned levels_of(CUmipmappedArray m)
{
    CUarray a;
    unsigned l = 0;
    while (l < 100 && cuMipmappedArrayGetLevel(&a, m, l) == CUDA_SUCCESS)
        l++;
    CHECK_IS(cuMipmappedArrayGetLevel(&a, m, l), CUDA_ERROR_INVALID_VALUE);
    return l;
}

/* Levels are clamped to [1, 1 + floor(log2(max extent))]; each level's
 * extents halve down to 1 (a 3D array's depth too, layers and cube faces
 * not); the device is charged every level's bytes, rounded once. */
static void sim_levels(void)
{
    CUcontext ctx = new_context(0);
    uint64_t base = sim_used();
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR d = big2d(0);
    OK(cuMipmappedArrayCreate(&m, &d, 100));   /* clamped to 13 */
    CHECK_EQ_U(levels_of(m), 13);
    CHECK_EQ_U(sim_used() - base, 128 * MiB);
    check_level(m, 0, 4096, 6144, 0);
    check_level(m, 1, 2048, 3072, 0);
    check_level(m, 11, 2, 3, 0);
    check_level(m, 12, 1, 1, 0);
    OK(cuMipmappedArrayDestroy(m));
    CHECK_EQ_U(sim_used(), base);
    /* 0 levels asked: one. 256 x 128 x 64 RGBA8: 8 MiB. */
    d = array3d_desc(256, 128, 64, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
    OK(cuMipmappedArrayCreate(&m, &d, 0));
    CHECK_EQ_U(levels_of(m), 1);
    CHECK_EQ_U(sim_used() - base, 8 * MiB);
    OK(cuMipmappedArrayDestroy(m));
    /* All 9 levels: 4 x (2097152 + 262144 + 32768 + 4096 + 512 + 64 + 8 + 2 + 1)
     * = 9586988 bytes, 10 MiB charged; the depth halves. */
    OK(cuMipmappedArrayCreate(&m, &d, 9));
    CHECK_EQ_U(levels_of(m), 9);
    CHECK_EQ_U(sim_used() - base, 10 * MiB);
    check_level(m, 3, 32, 16, 8);
    check_level(m, 7, 2, 1, 1);
    check_level(m, 8, 1, 1, 1);
    OK(cuMipmappedArrayDestroy(m));
    /* 2D layered 512 x 512 x 10 layers of half2 (4 bytes): 10 levels
     * (max(512, 512, 10)); layers stay 10: 4 x 10 x 349525 = 13981000
     * bytes, 14 MiB charged. */
    d = array3d_desc(512, 512, 10, CU_AD_FORMAT_HALF, 2, CUDA_ARRAY3D_LAYERED);
    OK(cuMipmappedArrayCreate(&m, &d, 100));
    CHECK_EQ_U(levels_of(m), 10);
    CHECK_EQ_U(sim_used() - base, 14 * MiB);
    check_level(m, 9, 1, 1, 10);
    OK(cuMipmappedArrayDestroy(m));
    /* Cubemap 256 x 256 x 6 of float4 (16 bytes), 9 levels: 16 x 6 x 87381
     * = 8388576 bytes, 8 MiB charged; the faces stay 6. */
    d = array3d_desc(256, 256, 6, CU_AD_FORMAT_FLOAT, 4, CUDA_ARRAY3D_CUBEMAP);
    OK(cuMipmappedArrayCreate(&m, &d, 9));
    CHECK_EQ_U(sim_used() - base, 8 * MiB);
    check_level(m, 8, 1, 1, 6);
    OK(cuMipmappedArrayDestroy(m));
    /* 1D 65536 floats, 17 levels: 4 x 131071 = 524284 bytes, 512 KiB
     * charged (512-byte granules below 2 MiB); the height stays 0. */
    d = array3d_desc(65536, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    OK(cuMipmappedArrayCreate(&m, &d, 17));
    CHECK_EQ_U(levels_of(m), 17);
    CHECK_EQ_U(sim_used() - base, 512 << 10);
    check_level(m, 16, 1, 0, 0);
    OK(cuMipmappedArrayDestroy(m));
    CHECK_EQ_U(sim_used(), base);
    OK(cuCtxDestroy(ctx));
}

/* CUDA's answers to bad arguments, and the level arrays: they belong to
 * the mipmapped array, cuArrayDestroy refuses them, and they go with it. */
static void sim_errors(void)
{
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR d = big2d(0);
    OK(cuInit(0));
    CHECK_IS(cuMipmappedArrayCreate(&m, &d, 1), CUDA_ERROR_INVALID_CONTEXT);   /* no context */
    CUcontext ctx = new_context(0);
    uint64_t base = sim_used();
    CHECK_IS(cuMipmappedArrayCreate(NULL, &d, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMipmappedArrayCreate(&m, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR bad[] = {
        array3d_desc(64, 64, 0, CU_AD_FORMAT_FLOAT, 3, 0),                                 /* 3 channels */
        array3d_desc(0, 64, 0, CU_AD_FORMAT_FLOAT, 1, 0),                                  /* no width */
        array3d_desc(64, 32, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP),              /* not square */
        array3d_desc(64, 64, 12, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP),             /* 12 faces, not layered */
        array3d_desc(64, 64, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED),              /* no layers */
        array3d_desc(64, 0, 4, CU_AD_FORMAT_FLOAT, 1, 0),                                  /* 1D with a depth */
        array3d_desc(64, 64, 0, CU_AD_FORMAT_FLOAT, 1, 0x8000),                            /* unknown flag */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_IS(cuMipmappedArrayCreate(&m, &bad[i], 4), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR bc1 = array3d_desc(64, 64, 0, CU_AD_FORMAT_BC1_UNORM, 1, 0);
    CHECK_IS(cuMipmappedArrayCreate(&m, &bc1, 4), CUDA_ERROR_NOT_SUPPORTED);   /* not modeled */
    CUDA_ARRAY3D_DESCRIPTOR huge = array3d_desc((size_t)1 << 40, (size_t)1 << 40, 0, CU_AD_FORMAT_FLOAT, 4, 0);
    CHECK_IS(cuMipmappedArrayCreate(&m, &huge, 4), CUDA_ERROR_OUT_OF_MEMORY);
    CUDA_ARRAY3D_DESCRIPTOR over = array3d_desc(16384, 16384, 0, CU_AD_FORMAT_FLOAT, 1, 0);   /* 1 GiB + levels */
    CHECK_IS(cuMipmappedArrayCreate(&m, &over, 2), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ_U(sim_used(), base);   /* nothing charged by a refusal */
    OK(cuMipmappedArrayCreate(&m, &d, 3));
    CUarray l0, l0again, l2;
    CHECK_IS(cuMipmappedArrayGetLevel(NULL, m, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMipmappedArrayGetLevel(&l0, NULL, 0), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuMipmappedArrayGetLevel(&l0, (CUmipmappedArray)&d, 0), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuMipmappedArrayGetLevel(&l0, m, 3), CUDA_ERROR_INVALID_VALUE);
    OK(cuMipmappedArrayGetLevel(&l0, m, 0));
    OK(cuMipmappedArrayGetLevel(&l0again, m, 0));
    CHECK(l0 == l0again);   /* the level's own array */
    OK(cuMipmappedArrayGetLevel(&l2, m, 2));
    CHECK(l2 != l0);
    CHECK_IS(cuArrayDestroy(l2), CUDA_ERROR_INVALID_HANDLE);   /* not separately */
    CUDA_ARRAY3D_DESCRIPTOR got;
    OK(cuArray3DGetDescriptor(&got, l2));   /* still the mipmapped array's */
    CHECK(got.Width == 1024 && got.Height == 1536);
    CHECK_EQ_U(sim_used() - base, 126 * MiB);   /* 96 + 24 + 6 MiB */
    OK(cuMipmappedArrayDestroy(m));
    CHECK_EQ_U(sim_used(), base);
    CHECK_IS(cuArray3DGetDescriptor(&got, l2), CUDA_ERROR_INVALID_HANDLE);   /* went with it */
    CHECK_IS(cuMipmappedArrayGetLevel(&l0, m, 0), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuMipmappedArrayDestroy(m), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuMipmappedArrayDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
    OK(cuCtxDestroy(ctx));
}

/* Sparse and deferred-mapping arrays and mipmapped arrays take no memory
 * (what backs them comes from cuMemCreate, mapped later): far larger than
 * the device, they are made and charge nothing; their levels halve as
 * usual. */
static void sparse_arrays(void)
{
    CUcontext ctx = new_context(0);
    uint64_t base = sim_used(), info = info_used();
    CUarray a, b;
    CUmipmappedArray m, n;
    CUDA_ARRAY3D_DESCRIPTOR s2 = array3d_desc(16384, 16384, 0, CU_AD_FORMAT_FLOAT, 4, CUDA_ARRAY3D_SPARSE);   /* 4 GiB */
    CUDA_ARRAY3D_DESCRIPTOR s3 = array3d_desc(1024, 1024, 1024, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_DEFERRED_MAPPING);
    OK(cuArray3DCreate(&a, &s2));
    OK(cuArray3DCreate(&b, &s3));
    OK(cuMipmappedArrayCreate(&m, &s2, 15));
    OK(cuMipmappedArrayCreate(&n, &s3, 11));
    CHECK_EQ_U(sim_used(), base);
    CHECK_EQ_U(info_used(), info);
    CHECK_EQ_U(levels_of(m), 15);
    check_level(n, 10, 1, 1, 1);
    OK(cuMipmappedArrayDestroy(n));
    OK(cuMipmappedArrayDestroy(m));
    OK(cuArrayDestroy(b));
    OK(cuArrayDestroy(a));
    CHECK_EQ_U(sim_used(), base);
    CHECK_EQ_U(info_used(), info);
    OK(cuCtxDestroy(ctx));
}

/* A context's end takes its mipmapped arrays (and their levels) with it. */
static void context_end(void)
{
    CUcontext ctx = new_context(0);
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR d = big2d(0);
    OK(cuMipmappedArrayCreate(&m, &d, 13));
    CUarray l1;
    OK(cuMipmappedArrayGetLevel(&l1, m, 1));
    CHECK_EQ_U(info_used(), 128 * MiB);
    OK(cuCtxDestroy(ctx));
    ctx = new_context(0);
    CHECK_EQ_U(sim_used(), 0);
    CHECK_EQ_U(info_used(), 0);
    CHECK_IS(cuMipmappedArrayDestroy(m), CUDA_ERROR_INVALID_HANDLE);
    CUDA_ARRAY3D_DESCRIPTOR got;
    CHECK_IS(cuArray3DGetDescriptor(&got, l1), CUDA_ERROR_INVALID_HANDLE);
    CHECK_EQ_U(info_used(), 0);
    OK(cuCtxDestroy(ctx));
}

/* The runtime's mipmapped arrays are the driver's: the device and
 * cudaMemGetInfo agree from cudaMallocMipmappedArray to
 * cudaFreeMipmappedArray; the documented errors. Run bare and under lmshim. */
static void runtime_mipmapped(void)
{
    OK(cudaSetDevice(0));
    uint64_t base = rt_used();
    struct cudaChannelFormatDesc f1 = {32, 0, 0, 0, cudaChannelFormatKindFloat};
    cudaMipmappedArray_t m;
    OK(cudaMallocMipmappedArray(&m, &f1, (struct cudaExtent){4096, 6144, 0}, 100, 0));
    CHECK_EQ_U(rt_used() - base, 128 * MiB);
    CHECK_EQ_U(sim_used(), rt_used());
    cudaArray_t l;
    OK(cudaGetMipmappedArrayLevel(&l, m, 12));
    struct cudaExtent ext;
    OK(cudaArrayGetInfo(NULL, &ext, NULL, l));
    CHECK(ext.width == 1 && ext.height == 1 && ext.depth == 0);
    CHECK(cudaGetMipmappedArrayLevel(&l, m, 13) == cudaErrorInvalidValue);
    CHECK(cudaGetMipmappedArrayLevel(&l, NULL, 0) == cudaErrorInvalidResourceHandle);
    CHECK(cudaFreeArray(l) == cudaErrorInvalidValue);   /* a level is not freed alone */
    struct cudaChannelFormatDesc f3 = {32, 32, 32, 0, cudaChannelFormatKindFloat};
    cudaMipmappedArray_t bad;
    CHECK(cudaMallocMipmappedArray(&bad, &f3, (struct cudaExtent){64, 64, 0}, 2, 0) == cudaErrorInvalidValue);
    CHECK(cudaMallocMipmappedArray(&bad, &f1, (struct cudaExtent){16384, 16384, 0}, 2, 0) ==
          cudaErrorMemoryAllocation);   /* past the device */
    (void)cudaGetLastError();
    OK(cudaFreeMipmappedArray(m));
    CHECK_EQ_U(rt_used(), base);
    CHECK(cudaFreeMipmappedArray(m) == cudaErrorInvalidValue);
    OK(cudaFreeMipmappedArray(NULL));   /* a no-op */
    (void)cudaGetLastError();
    CHECK_EQ_U(sim_used(), rt_used());
}

/* Under lmshim: a mipmapped array is charged every level from creation to
 * destroy; a level's cuArrayDestroy (refused) changes nothing. */
static void shim_charged(void)
{
    CUcontext ctx = new_context(0);
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR d = big2d(0);
    OK(cuMipmappedArrayCreate(&m, &d, 13));
    CHECK_EQ_U(sim_used(), 128 * MiB);
    CHECK_EQ_U(info_used(), 128 * MiB);   /* not the 96 MiB of level 0 */
    CHECK_EQ_U(stats(0).used, 128 * MiB);
    CUarray l;
    OK(cuMipmappedArrayGetLevel(&l, m, 1));
    CHECK_IS(cuArrayDestroy(l), CUDA_ERROR_INVALID_HANDLE);
    CHECK_EQ_U(info_used(), 128 * MiB);
    OK(cuMipmappedArrayDestroy(m));
    CHECK_EQ_U(info_used(), 0);
    CHECK_IS(cuMipmappedArrayDestroy(m), CUDA_ERROR_INVALID_HANDLE);
    CHECK_EQ_U(info_used(), 0);
    /* A refused creation charges nothing. */
    CUDA_ARRAY3D_DESCRIPTOR bad = big2d(0);
    bad.NumChannels = 3;
    CHECK_IS(cuMipmappedArrayCreate(&m, &bad, 2), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ_U(info_used(), 0);
    OK(cuCtxDestroy(ctx));
}

/* Under lmshim with LMS_ON_OOM=fail: after a 400 MiB array, a mipmapped
 * array whose level 0 (96 MiB) would fit the 512 MiB budget but whose
 * levels (128 MiB) do not is refused with out-of-memory and destroyed
 * again; with 1 level it fits. */
static void shim_budget(void)
{
    CUcontext ctx = new_context(0);
    CUarray a;
    CUDA_ARRAY3D_DESCRIPTOR d400 = array3d_desc(10240, 10240, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    OK(cuArray3DCreate(&a, &d400));
    CHECK_EQ_U(info_used(), 400 * MiB);
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR d = big2d(0);
    CHECK_IS(cuMipmappedArrayCreate(&m, &d, 13), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ_U(info_used(), 400 * MiB);
    CHECK_EQ_U(sim_used(), 400 * MiB);   /* the driver's was destroyed again */
    CHECK_IS(cuMipmappedArrayCreate(&m, &d, 2), CUDA_ERROR_OUT_OF_MEMORY);   /* 96 + 24 MiB */
    CHECK_EQ_U(stats(0).oom_failures, 2);
    OK(cuMipmappedArrayCreate(&m, &d, 1));
    CHECK_EQ_U(info_used(), 496 * MiB);
    OK(cuMipmappedArrayDestroy(m));
    OK(cuArrayDestroy(a));
    CHECK_EQ_U(info_used(), 0);
    CHECK_EQ_U(sim_used(), 0);
    OK(cuCtxDestroy(ctx));
}

/* Under lmshim with LMS_ON_OOM=fail: sparse and deferred-mapping arrays
 * and mipmapped arrays far past the budget are made and charged nothing
 * (their memory, from cuMemCreate, is charged there). */
static void shim_sparse(void)
{
    sparse_arrays();
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(stats(0).oom_failures, 0);
}

static CUcontext shared_ctx;

/* One thread's mipmapped array of 64 MiB in shared_ctx, held until every
 * thread has tried; returns the CUresult. */
static void *mip_64m(void *arg)
{
    (void)arg;
    CUresult r = cuCtxSetCurrent(shared_ctx);
    CUmipmappedArray m = NULL;
    /* 4096 x 3072 floats: 48 MiB; 13 levels: 64 MiB less 4 bytes, 64 MiB charged. */
    CUDA_ARRAY3D_DESCRIPTOR d = array3d_desc(4096, 3072, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    if (r == CUDA_SUCCESS)
        r = cuMipmappedArrayCreate(&m, &d, 13);
    race_wait();
    if (r == CUDA_SUCCESS && cuMipmappedArrayDestroy(m) != CUDA_SUCCESS)
        r = CUDA_ERROR_UNKNOWN;
    return (void *)(intptr_t)r;
}

/* Ten threads create 64 MiB mipmapped arrays against the 512 MiB budget
 * with LMS_ON_OOM=fail: exactly eight fit, and every charge comes back. */
static void shim_threads(void)
{
    shared_ctx = new_context(0);
    for (int round = 0; round < 50; round++)
        ten_threads_eight_fit(mip_64m);
    OK(cuCtxDestroy(shared_ctx));
}

static const test_case cases[] = {
    {"sim_levels", sim_levels},
    {"sim_errors", sim_errors},
    {"sim_sparse", sparse_arrays},
    {"sim_context_end", context_end},
    {"sim_runtime", runtime_mipmapped},
    {"shim_charged", shim_charged},
    {"shim_budget", shim_budget},
    {"shim_sparse", shim_sparse},
    {"shim_context_end", context_end},
    {"shim_threads", shim_threads},
    {"shim_runtime", runtime_mipmapped},
};

TEST_MAIN(cases)
