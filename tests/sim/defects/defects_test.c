/*
 * defects_test.c — regression cases of the simulated GPU: bad VMM handles,
 * pitched allocations that overflow, device properties that agree with the
 * driver's attributes, and a runtime whose symbols carry the toolkit's
 * version node.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"

/* cuMemRelease of handles the driver never handed out answers an error. */
static void vmm_release_bogus(void)
{
    primary_context(0);
    CHECK_IS(cuMemRelease((CUmemGenericAllocationHandle)0x1000), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemRelease(0), CUDA_ERROR_INVALID_VALUE);
    uint64_t junk[8] = {0x5050505050505050ull};
    CHECK_IS(cuMemRelease((CUmemGenericAllocationHandle)(uintptr_t)junk), CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle h;
    OK(cuMemCreate(&h, 2 * MiB, &prop, 0));
    OK(cuMemRelease(h));
    CHECK_IS(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);   /* released twice */
}

/* Pitch x height past size_t is out of memory; a row wider than the maximum
 * pitch is an invalid value; nothing is allocated for either. */
static void pitch_overflow(void)
{
    primary_context(0);
    CUdeviceptr p = 0;
    size_t pitch = 0;
    CHECK_IS(cuMemAllocPitch(&p, &pitch, 64 * MiB, (1ull << 38) + 1, 4), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_IS(cuMemAllocPitch(&p, &pitch, SIZE_MAX - 100, 1, 4), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemAllocPitch(&p, &pitch, 0, 4, 4), CUDA_ERROR_INVALID_VALUE);
    int max_pitch = 0;
    OK(cuDeviceGetAttribute(&max_pitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH, 0));
    CHECK(max_pitch > 0);
    CHECK_IS(cuMemAllocPitch(&p, &pitch, (size_t)max_pitch + 1, 1, 4), CUDA_ERROR_INVALID_VALUE);
    size_t free_b, total;
    OK(cuMemGetInfo(&free_b, &total));
    CHECK_EQ_U(free_b, total);
    OK(cuMemAllocPitch(&p, &pitch, 1000, 3, 4));
    CHECK_EQ_U(pitch, 1024);
    OK(cuMemFree(p));
}

/* Properties are read from the attributes; every attribute has an answer
 * and the ones an H100 has are not 0. */
static void properties_agree(void)
{
    struct cudaDeviceProp prop;
    OK(cudaGetDeviceProperties(&prop, 0));
    int v;
#define SAME(field, attr)                                                    \
    do {                                                                     \
        OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_##attr, 0));         \
        CHECK_EQ_U((unsigned long long)prop.field, (unsigned long long)v);   \
        CHECK(v != 0);                                                       \
    } while (0)
    SAME(regsPerBlock, MAX_REGISTERS_PER_BLOCK);
    SAME(cooperativeLaunch, COOPERATIVE_LAUNCH);
    SAME(memPitch, MAX_PITCH);
    SAME(maxTexture1D, MAXIMUM_TEXTURE1D_WIDTH);
    SAME(maxTexture2D[1], MAXIMUM_TEXTURE2D_HEIGHT);
    SAME(maxTexture3D[2], MAXIMUM_TEXTURE3D_DEPTH);
    SAME(maxSurface2D[0], MAXIMUM_SURFACE2D_WIDTH);
    SAME(textureAlignment, TEXTURE_ALIGNMENT);
    SAME(sharedMemPerMultiprocessor, MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    SAME(regsPerMultiprocessor, MAX_REGISTERS_PER_MULTIPROCESSOR);
    SAME(sharedMemPerBlockOptin, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    SAME(maxBlocksPerMultiProcessor, MAX_BLOCKS_PER_MULTIPROCESSOR);
    SAME(streamPrioritiesSupported, STREAM_PRIORITIES_SUPPORTED);
    SAME(concurrentManagedAccess, CONCURRENT_MANAGED_ACCESS);
    SAME(multiProcessorCount, MULTIPROCESSOR_COUNT);
    SAME(l2CacheSize, L2_CACHE_SIZE);
    SAME(asyncEngineCount, ASYNC_ENGINE_COUNT);
#undef SAME
    CHECK_EQ_U(prop.major, 9);
    int overlap, engines, mclock, clock;
    OK(cuDeviceGetAttribute(&engines, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 0));
    OK(cuDeviceGetAttribute(&overlap, CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 0));
    CHECK(engines == 2 && overlap == 1);
    OK(cuDeviceGetAttribute(&mclock, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 0));
    OK(cuDeviceGetAttribute(&clock, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0));
    CHECK(mclock > 1000000 && clock > 1000000);
    for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++)
        OK(cuDeviceGetAttribute(&v, (CUdevice_attribute)a, 0));
    CHECK_IS(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
}

/* The runtime's symbols are versioned like the toolkit's libcudart.so.13. */
static void cudart_versioned(void)
{
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    CHECK(h != NULL);
    CHECK(dlvsym(h, "cudaMalloc", "libcudart.so.13") != NULL);
    CHECK(dlvsym(h, "cudaGetDeviceProperties", "libcudart.so.13") != NULL);
    CHECK(dlvsym(h, "cudaMalloc", "libcudart.so.12") == NULL);
    dlclose(h);
}

static const test_case cases[] = {
    {"vmm_release_bogus", vmm_release_bogus},
    {"pitch_overflow", pitch_overflow},
    {"properties_agree", properties_agree},
    {"cudart_versioned", cudart_versioned},
};

TEST_MAIN(cases)
