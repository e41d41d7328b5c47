/*
 * device.c — devices in the simulated runtime: count, current device,
 * properties and attributes, synchronization, memory info.
 */
#include "rt.h"

#include <string.h>

RT_EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return rt_error(cudaErrorInvalidValue);
    cudaError_t e = rt_load();
    if (e != cudaSuccess) {
        *count = 0;
        return rt_error(e);
    }
    return rt_result(rt_drv.cuDeviceGetCount(count));
}

RT_EXPORT cudaError_t cudaSetDevice(int device)
{
    int n;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return e;
    if (device < 0 || device >= n)
        return rt_error(cudaErrorInvalidDevice);
    rt_set_device(device);
    return rt_enter();
}

RT_EXPORT cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return rt_error(cudaErrorInvalidValue);
    *device = rt_device();
    return cudaSuccess;
}

RT_EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    cudaError_t e = rt_load();
    if (e != cudaSuccess)
        return rt_error(e);
    if (!value)
        return rt_error(cudaErrorInvalidValue);
    return rt_result(rt_drv.cuDeviceGetAttribute(value, (CUdevice_attribute)attr, device));
}

/* Reads one attribute into an int field (0 when the driver has none). */
static int attr(CUdevice_attribute a, int device)
{
    int v = 0;
    if (rt_drv.cuDeviceGetAttribute(&v, a, device) != CUDA_SUCCESS)
        v = 0;
    return v;
}

RT_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    cudaError_t e = rt_load();
    if (e != cudaSuccess)
        return rt_error(e);
    if (!prop)
        return rt_error(cudaErrorInvalidValue);
    memset(prop, 0, sizeof *prop);
    CUresult r = rt_drv.cuDeviceGetName(prop->name, sizeof prop->name, device);
    if (r == CUDA_SUCCESS)
        r = rt_drv.cuDeviceTotalMem(&prop->totalGlobalMem, device);
    if (r != CUDA_SUCCESS)
        return rt_result(r);
    prop->major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    prop->minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    prop->multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    prop->warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, device);
    prop->maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device);
    prop->sharedMemPerBlock = (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, device);
    prop->totalConstMem = (size_t)attr(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, device);
    prop->managedMemory = attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, device);
    prop->concurrentManagedAccess = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, device);
    prop->pageableMemoryAccess = attr(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, device);
    prop->unifiedAddressing = attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, device);
    prop->canMapHostMemory = attr(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, device);
    prop->concurrentKernels = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, device);
    prop->asyncEngineCount = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, device);
    prop->memoryPoolsSupported = attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device);
    prop->pciBusID = attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device);
    prop->l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device);
    prop->memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, device);
    prop->maxThreadsPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, device);
    prop->maxThreadsDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, device);
    prop->maxThreadsDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, device);
    prop->maxThreadsDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, device);
    prop->maxGridSize[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, device);
    prop->maxGridSize[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, device);
    prop->maxGridSize[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, device);
    return cudaSuccess;
}

RT_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t e = rt_enter();
    return e != cudaSuccess ? e : rt_result(rt_drv.cuCtxSynchronize());
}

RT_EXPORT cudaError_t cudaDeviceReset(void)
{
    return cudaDeviceSynchronize();
}

RT_EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    cudaError_t e = rt_enter();
    return e != cudaSuccess ? e : rt_result(rt_drv.cuMemGetInfo(free_bytes, total));
}
