/*
 * peer_test.c — the call patterns of another GPU-slicing interposer's test
 * programs (allocation sweeps, pitch, pinned and registered host memory,
 * managed memory, cuMemCreate from threads, CUDA arrays of the driver and
 * the runtime), each checked against what the device really holds (the
 * simulator's counters) and what cuMemGetInfo says.
 *
 * sim_* cases run over the simulated driver alone; shim_* cases under
 * liblmshim.so with LMS_LIMIT=512M over a 1 GiB device (meson.build).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/shim.h"
#include "../../common/threads.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define BUDGET (512 * MiB)

/* cuMemGetInfo's total for the current device. */
static uint64_t info_total(void)
{
    size_t f = 0, t = 0;
    OK(cuMemGetInfo(&f, &t));
    return t;
}

/* A new context on device 0, current on the calling thread. */
static CUcontext setup(void)
{
    CUdevice dev;
    CUcontext ctx;
    OK(cuInit(0));
    OK(cuDeviceGet(&dev, 0));
    OK(cuCtxCreate(&ctx, NULL, 0, dev));
    return ctx;
}

/* The CUDA_ARRAY3D_DESCRIPTOR of a 2048 x 2048 two-channel 32-bit array
 * (32 MiB), with `depth` and `flags`. */
static CUDA_ARRAY3D_DESCRIPTOR desc3d(size_t depth, unsigned flags)
{
    return (CUDA_ARRAY3D_DESCRIPTOR){.Width = 2048, .Height = 2048, .Depth = depth,
                                     .Format = CU_AD_FORMAT_UNSIGNED_INT32, .NumChannels = 2,
                                     .Flags = flags};
}

/* The simulator models arrays as CUDA documents them: charged at creation,
 * descriptor kept, bad shapes refused, freed by cuArrayDestroy. */
static void sim_arrays(void)
{
    CUcontext ctx = setup();
    uint64_t base = sim_used();
    CUarray a, b;
    CUDA_ARRAY_DESCRIPTOR d2 = {.Width = 2048, .Height = 2048,
                                .Format = CU_AD_FORMAT_UNSIGNED_INT32, .NumChannels = 2};
    OK(cuArrayCreate(&a, &d2));
    CHECK_EQ_U(sim_used() - base, 32 * MiB);
    CHECK_EQ_U(info_used(), sim_used());
    CUDA_ARRAY_DESCRIPTOR back;
    OK(cuArrayGetDescriptor(&back, a));
    CHECK(back.Width == 2048 && back.Height == 2048 && back.NumChannels == 2 &&
          back.Format == CU_AD_FORMAT_UNSIGNED_INT32);
    CUDA_ARRAY3D_DESCRIPTOR d3 = desc3d(4, 0);
    OK(cuArray3DCreate(&b, &d3));
    CHECK_EQ_U(sim_used() - base, 32 * MiB + 128 * MiB);
    CUDA_ARRAY3D_DESCRIPTOR back3;
    OK(cuArray3DGetDescriptor(&back3, b));
    CHECK(back3.Depth == 4 && back3.Width == 2048);
    OK(cuArrayDestroy(b));
    OK(cuArrayDestroy(a));
    CHECK_EQ_U(sim_used(), base);
    CHECK_IS(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
    /* Shapes CUDA refuses. */
    CUDA_ARRAY3D_DESCRIPTOR bad = desc3d(0, 0);
    bad.NumChannels = 3;
    CHECK_IS(cuArray3DCreate(&b, &bad), CUDA_ERROR_INVALID_VALUE);
    bad = desc3d(0, 0);
    bad.Width = 0;
    CHECK_IS(cuArray3DCreate(&b, &bad), CUDA_ERROR_INVALID_VALUE);
    bad = desc3d(5, CUDA_ARRAY3D_CUBEMAP);
    CHECK_IS(cuArray3DCreate(&b, &bad), CUDA_ERROR_INVALID_VALUE);
    bad = desc3d(0, CUDA_ARRAY3D_LAYERED);
    CHECK_IS(cuArray3DCreate(&b, &bad), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuArray3DCreate(&b, NULL), CUDA_ERROR_INVALID_VALUE);
    /* Larger than the device. */
    CUDA_ARRAY3D_DESCRIPTOR big = desc3d(64, 0);
    CHECK_IS(cuArray3DCreate(&b, &big), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ_U(sim_used(), base);
    /* A context's end frees its arrays. */
    OK(cuArray3DCreate(&b, &d3));
    OK(cuCtxDestroy(ctx));
    CHECK_EQ_U(sim_used(), base);
    ctx = setup();
    CHECK_IS(cuArrayDestroy(b), CUDA_ERROR_INVALID_HANDLE);
    OK(cuCtxDestroy(ctx));
}

/* Sizes 2^k, 2^k + 1 and 2^k - 1 up to 256 MiB, allocated and freed one at
 * a time: cuMemGetInfo's used bytes follow the device's, and come back. */
static void shim_alloc_sweep(void)
{
    CUcontext ctx = setup();
    CHECK_EQ_U(info_total(), BUDGET);
    for (int k = 0; k < 28; k++) {
        size_t sizes[3] = {(size_t)2 << k, ((size_t)2 << k) + 1, ((size_t)2 << k) - 1};
        for (int i = 0; i < 3; i++) {
            CUdeviceptr p;
            OK(cuMemAlloc(&p, sizes[i]));
            CHECK(sim_used() >= sizes[i]);
            CHECK_EQ_U(info_used(), sim_used());
            OK(cuMemFree(p));
            CHECK_EQ_U(sim_used(), 0);
            CHECK_EQ_U(info_used(), 0);
        }
    }
    OK(cuCtxDestroy(ctx));
}

/* Pitched allocations are charged pitch x height, as the device holds. */
static void shim_pitch(void)
{
    CUcontext ctx = setup();
    unsigned elems[3] = {16, 8, 4};
    size_t widths[3] = {4096 - 8, 4096 - 4, 4096 - 1};
    for (int i = 0; i < 3; i++) {
        CUdeviceptr p;
        size_t pitch = 0;
        OK(cuMemAllocPitch(&p, &pitch, widths[i], 10, elems[i]));
        CHECK(pitch >= widths[i]);
        CHECK_EQ_U(sim_used(), pitch * 10);
        CHECK_EQ_U(info_used(), sim_used());
        OK(cuMemFree(p));
        CHECK_EQ_U(info_used(), 0);
    }
    OK(cuCtxDestroy(ctx));
}

/* Pinned, mapped and registered host memory takes nothing of the device
 * nor of the budget. */
static void shim_host_memory(void)
{
    CUcontext ctx = setup();
    for (int k = 0; k < 26; k += 5) {
        size_t bytes = ((size_t)2 << k) + 1;
        void *h;
        OK(cuMemAllocHost(&h, bytes));
        CHECK_EQ_U(info_used(), 0);
        OK(cuMemFreeHost(h));
        OK(cuMemHostAlloc(&h, bytes, CU_MEMHOSTALLOC_DEVICEMAP));
        CUdeviceptr d;
        OK(cuMemHostGetDevicePointer(&d, h, 0));
        CHECK_EQ_U(info_used(), 0);
        OK(cuMemFreeHost(h));
        void *mine = malloc(bytes);
        CHECK(mine);
        OK(cuMemHostRegister(mine, bytes, CU_MEMHOSTREGISTER_DEVICEMAP));
        CHECK_EQ_U(info_used(), 0);
        OK(cuMemHostUnregister(mine));
        free(mine);
    }
    CHECK_EQ_U(sim_used(), 0);
    OK(cuCtxDestroy(ctx));
}

static CUdevice thread_dev;

/* One thread's cuMemCreate of 64 MiB, held until every thread has tried;
 * returns the CUresult. */
static void *create_64m(void *arg)
{
    (void)arg;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = thread_dev;
    size_t gran = 0;
    CUresult r = cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    CUmemGenericAllocationHandle h = 0;
    if (r == CUDA_SUCCESS)
        r = cuMemCreate(&h, (64 * MiB + gran - 1) / gran * gran, &prop, 0);
    race_wait();
    if (r == CUDA_SUCCESS)
        cuMemRelease(h);
    return (void *)(intptr_t)r;
}

/* Ten threads create 64 MiB each against a 512 MiB budget with
 * LMS_ON_OOM=fail: exactly eight succeed, the others are refused with
 * out-of-memory, and everything comes back. Four hundred rounds: the threads
 * race between the driver's answer and the charge. */
static void shim_mem_create_threads(void)
{
    CUcontext ctx = setup();
    OK(cuCtxGetDevice(&thread_dev));
    for (int round = 0; round < 400; round++)
        ten_threads_eight_fit(create_64m);
    OK(cuCtxDestroy(ctx));
}

/* An array takes device memory that cannot leave the device: cuMemGetInfo
 * counts it against the budget from creation to cuArrayDestroy. */
static void shim_array_charged(void)
{
    CUcontext ctx = setup();
    CUarray a, b;
    CUDA_ARRAY_DESCRIPTOR d2 = {.Width = 2048, .Height = 2048,
                                .Format = CU_AD_FORMAT_UNSIGNED_INT32, .NumChannels = 2};
    OK(cuArrayCreate(&a, &d2));
    CHECK_EQ_U(sim_used(), 32 * MiB);
    CHECK_EQ_U(info_used(), 32 * MiB);
    CUDA_ARRAY3D_DESCRIPTOR d3 = desc3d(4, 0);
    OK(cuArray3DCreate(&b, &d3));
    CHECK_EQ_U(info_used(), 160 * MiB);
    OK(cuArrayDestroy(a));
    CHECK_EQ_U(info_used(), 128 * MiB);
    CHECK_IS(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
    CHECK_EQ_U(info_used(), 128 * MiB);
    OK(cuArrayDestroy(b));
    CHECK_EQ_U(info_used(), 0);
    /* A failed creation charges nothing. */
    CUDA_ARRAY3D_DESCRIPTOR bad = desc3d(0, 0);
    bad.NumChannels = 3;
    CHECK_IS(cuArray3DCreate(&b, &bad), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ_U(info_used(), 0);
    OK(cuCtxDestroy(ctx));
}

/* Arrays count with device chunks (run with LMS_ON_OOM=fail and a
 * threshold no chunk reaches, so that nothing leaves the device): an array
 * past the budget is refused with out-of-memory, and after 384 MiB of
 * arrays and a 64 MiB chunk, a 128 MiB request no longer fits. */
static void shim_array_budget(void)
{
    CUcontext ctx = setup();
    CUarray a[4];
    CUDA_ARRAY3D_DESCRIPTOR d = desc3d(3, 0);   /* 96 MiB */
    for (int i = 0; i < 4; i++)
        OK(cuArray3DCreate(&a[i], &d));
    CHECK_EQ_U(info_used(), 384 * MiB);
    CUDA_ARRAY3D_DESCRIPTOR big = desc3d(5, 0);   /* 160 MiB: 544 MiB in all */
    CUarray over;
    CHECK_IS(cuArray3DCreate(&over, &big), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ_U(info_used(), 384 * MiB);
    CHECK_EQ_U(sim_used(), 384 * MiB);
    /* A small device allocation still fits; one past the budget does not. */
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 64 * MiB));
    CHECK_EQ_U(info_used(), 448 * MiB);
    CUdeviceptr q;
    CHECK_IS(cuMemAlloc(&q, 128 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemFree(p));
    for (int i = 0; i < 4; i++)
        OK(cuArrayDestroy(a[i]));
    CHECK_EQ_U(info_used(), 0);
    OK(cuCtxDestroy(ctx));
}

static CUcontext array_ctx;

/* One thread's 64 MiB array in array_ctx, held until every thread has
 * tried; returns the CUresult. */
static void *array_64m(void *arg)
{
    (void)arg;
    CUresult r = cuCtxSetCurrent(array_ctx);
    CUarray a = NULL;
    CUDA_ARRAY3D_DESCRIPTOR d = desc3d(2, 0);
    if (r == CUDA_SUCCESS)
        r = cuArray3DCreate(&a, &d);
    race_wait();
    if (r == CUDA_SUCCESS && cuArrayDestroy(a) != CUDA_SUCCESS)
        r = CUDA_ERROR_UNKNOWN;
    return (void *)(intptr_t)r;
}

/* Ten threads create 64 MiB arrays against the 512 MiB budget with
 * LMS_ON_OOM=fail: exactly eight fit, and every charge comes back. */
static void shim_array_threads(void)
{
    array_ctx = setup();
    ten_threads_eight_fit(array_64m);
    OK(cuCtxDestroy(array_ctx));
}

/* A context's end frees its arrays, and their charge comes back. */
static void shim_array_context_end(void)
{
    CUcontext ctx = setup();
    CUarray a;
    CUDA_ARRAY3D_DESCRIPTOR d = desc3d(4, 0);
    OK(cuArray3DCreate(&a, &d));
    CHECK_EQ_U(info_used(), 128 * MiB);
    OK(cuCtxDestroy(ctx));
    ctx = setup();
    CHECK_EQ_U(sim_used(), 0);
    CHECK_EQ_U(info_used(), 0);
    CHECK_IS(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
    CHECK_EQ_U(info_used(), 0);
    OK(cuCtxDestroy(ctx));
}

/* The runtime's arrays (cudaMallocArray, cudaMalloc3DArray) are the
 * driver's: what the device holds and cudaMemGetInfo agree, from creation
 * to cudaFreeArray. Run bare and under lmshim. */
static void runtime_arrays(void)
{
    OK(cudaSetDevice(0));
    uint64_t base = rt_used();
    struct cudaChannelFormatDesc f2 = {32, 32, 0, 0, cudaChannelFormatKindFloat};
    cudaArray_t a, b;
    OK(cudaMallocArray(&a, &f2, 2048, 2048, 0));
    CHECK_EQ_U(rt_used() - base, 32 * MiB);
    CHECK_EQ_U(sim_used(), rt_used());
    OK(cudaMalloc3DArray(&b, &f2, (struct cudaExtent){2048, 2048, 4}, 0));
    CHECK_EQ_U(rt_used() - base, 160 * MiB);
    struct cudaChannelFormatDesc got;
    struct cudaExtent ext;
    unsigned flags = 1;
    OK(cudaArrayGetInfo(&got, &ext, &flags, b));
    CHECK(got.x == 32 && got.y == 32 && got.z == 0 && got.f == cudaChannelFormatKindFloat);
    CHECK(ext.width == 2048 && ext.height == 2048 && ext.depth == 4 && flags == 0);
    OK(cudaFreeArray(b));
    OK(cudaFreeArray(a));
    OK(cudaFreeArray(NULL));
    CHECK_EQ_U(rt_used(), base);
    struct cudaChannelFormatDesc three = {8, 8, 8, 0, cudaChannelFormatKindUnsigned};
    CHECK_IS(cudaMallocArray(&a, &three, 64, 64, 0), cudaErrorInvalidValue);
    struct cudaChannelFormatDesc mixed = {8, 16, 0, 0, cudaChannelFormatKindUnsigned};
    CHECK_IS(cudaMallocArray(&a, &mixed, 64, 64, 0), cudaErrorInvalidValue);
    CHECK_EQ_U(sim_used(), rt_used());
}

static const test_case cases[] = {
    {"sim_arrays", sim_arrays},
    {"shim_alloc_sweep", shim_alloc_sweep},
    {"shim_pitch", shim_pitch},
    {"shim_host_memory", shim_host_memory},
    {"shim_mem_create_threads", shim_mem_create_threads},
    {"shim_array_charged", shim_array_charged},
    {"shim_array_budget", shim_array_budget},
    {"shim_array_context_end", shim_array_context_end},
    {"shim_array_threads", shim_array_threads},
    {"sim_runtime_arrays", runtime_arrays},
    {"shim_runtime_arrays", runtime_arrays},
};

TEST_MAIN(cases)
