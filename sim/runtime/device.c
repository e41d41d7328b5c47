/*
 * device.c — devices in the simulated runtime: count, current device,
 * properties and attributes, synchronization, memory info.
 */
#include "rt.h"

#include <stddef.h>
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

/* Reads one attribute (0 when the driver has none). */
static int attr(CUdevice_attribute a, int device)
{
    int v = 0;
    if (rt_drv.cuDeviceGetAttribute(&v, a, device) != CUDA_SUCCESS)
        v = 0;
    return v;
}

/* Where each cudaDeviceProp field comes from: the driver attribute and the
 * field's offset and width. Every numeric field with a driver attribute is
 * listed, so properties and attributes agree by construction. */
typedef struct prop_field {
    CUdevice_attribute attr;
    size_t offset;       /* offsetof(struct cudaDeviceProp, field) */
    size_t width;        /* sizeof the field: int or size_t */
} prop_field;

#define F(field, name) {CU_DEVICE_ATTRIBUTE_##name, offsetof(struct cudaDeviceProp, field), \
                        sizeof(((struct cudaDeviceProp *)0)->field)}
static const prop_field prop_fields[] = {
    F(sharedMemPerBlock, MAX_SHARED_MEMORY_PER_BLOCK),
    F(regsPerBlock, MAX_REGISTERS_PER_BLOCK),
    F(warpSize, WARP_SIZE),
    F(memPitch, MAX_PITCH),
    F(maxThreadsPerBlock, MAX_THREADS_PER_BLOCK),
    F(maxThreadsDim[0], MAX_BLOCK_DIM_X),
    F(maxThreadsDim[1], MAX_BLOCK_DIM_Y),
    F(maxThreadsDim[2], MAX_BLOCK_DIM_Z),
    F(maxGridSize[0], MAX_GRID_DIM_X),
    F(maxGridSize[1], MAX_GRID_DIM_Y),
    F(maxGridSize[2], MAX_GRID_DIM_Z),
    F(totalConstMem, TOTAL_CONSTANT_MEMORY),
    F(major, COMPUTE_CAPABILITY_MAJOR),
    F(minor, COMPUTE_CAPABILITY_MINOR),
    F(textureAlignment, TEXTURE_ALIGNMENT),
    F(texturePitchAlignment, TEXTURE_PITCH_ALIGNMENT),
    F(multiProcessorCount, MULTIPROCESSOR_COUNT),
    F(integrated, INTEGRATED),
    F(canMapHostMemory, CAN_MAP_HOST_MEMORY),
    F(maxTexture1D, MAXIMUM_TEXTURE1D_WIDTH),
    F(maxTexture1DMipmap, MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH),
    F(maxTexture2D[0], MAXIMUM_TEXTURE2D_WIDTH),
    F(maxTexture2D[1], MAXIMUM_TEXTURE2D_HEIGHT),
    F(maxTexture2DMipmap[0], MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH),
    F(maxTexture2DMipmap[1], MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT),
    F(maxTexture2DLinear[0], MAXIMUM_TEXTURE2D_LINEAR_WIDTH),
    F(maxTexture2DLinear[1], MAXIMUM_TEXTURE2D_LINEAR_HEIGHT),
    F(maxTexture2DLinear[2], MAXIMUM_TEXTURE2D_LINEAR_PITCH),
    F(maxTexture2DGather[0], MAXIMUM_TEXTURE2D_GATHER_WIDTH),
    F(maxTexture2DGather[1], MAXIMUM_TEXTURE2D_GATHER_HEIGHT),
    F(maxTexture3D[0], MAXIMUM_TEXTURE3D_WIDTH),
    F(maxTexture3D[1], MAXIMUM_TEXTURE3D_HEIGHT),
    F(maxTexture3D[2], MAXIMUM_TEXTURE3D_DEPTH),
    F(maxTexture3DAlt[0], MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE),
    F(maxTexture3DAlt[1], MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE),
    F(maxTexture3DAlt[2], MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE),
    F(maxTextureCubemap, MAXIMUM_TEXTURECUBEMAP_WIDTH),
    F(maxTexture1DLayered[0], MAXIMUM_TEXTURE1D_LAYERED_WIDTH),
    F(maxTexture1DLayered[1], MAXIMUM_TEXTURE1D_LAYERED_LAYERS),
    F(maxTexture2DLayered[0], MAXIMUM_TEXTURE2D_LAYERED_WIDTH),
    F(maxTexture2DLayered[1], MAXIMUM_TEXTURE2D_LAYERED_HEIGHT),
    F(maxTexture2DLayered[2], MAXIMUM_TEXTURE2D_LAYERED_LAYERS),
    F(maxTextureCubemapLayered[0], MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH),
    F(maxTextureCubemapLayered[1], MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS),
    F(maxSurface1D, MAXIMUM_SURFACE1D_WIDTH),
    F(maxSurface2D[0], MAXIMUM_SURFACE2D_WIDTH),
    F(maxSurface2D[1], MAXIMUM_SURFACE2D_HEIGHT),
    F(maxSurface3D[0], MAXIMUM_SURFACE3D_WIDTH),
    F(maxSurface3D[1], MAXIMUM_SURFACE3D_HEIGHT),
    F(maxSurface3D[2], MAXIMUM_SURFACE3D_DEPTH),
    F(maxSurface1DLayered[0], MAXIMUM_SURFACE1D_LAYERED_WIDTH),
    F(maxSurface1DLayered[1], MAXIMUM_SURFACE1D_LAYERED_LAYERS),
    F(maxSurface2DLayered[0], MAXIMUM_SURFACE2D_LAYERED_WIDTH),
    F(maxSurface2DLayered[1], MAXIMUM_SURFACE2D_LAYERED_HEIGHT),
    F(maxSurface2DLayered[2], MAXIMUM_SURFACE2D_LAYERED_LAYERS),
    F(maxSurfaceCubemap, MAXIMUM_SURFACECUBEMAP_WIDTH),
    F(maxSurfaceCubemapLayered[0], MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH),
    F(maxSurfaceCubemapLayered[1], MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS),
    F(surfaceAlignment, SURFACE_ALIGNMENT),
    F(concurrentKernels, CONCURRENT_KERNELS),
    F(ECCEnabled, ECC_ENABLED),
    F(pciBusID, PCI_BUS_ID),
    F(pciDeviceID, PCI_DEVICE_ID),
    F(pciDomainID, PCI_DOMAIN_ID),
    F(tccDriver, TCC_DRIVER),
    F(asyncEngineCount, ASYNC_ENGINE_COUNT),
    F(unifiedAddressing, UNIFIED_ADDRESSING),
    F(memoryBusWidth, GLOBAL_MEMORY_BUS_WIDTH),
    F(l2CacheSize, L2_CACHE_SIZE),
    F(persistingL2CacheMaxSize, MAX_PERSISTING_L2_CACHE_SIZE),
    F(maxThreadsPerMultiProcessor, MAX_THREADS_PER_MULTIPROCESSOR),
    F(streamPrioritiesSupported, STREAM_PRIORITIES_SUPPORTED),
    F(globalL1CacheSupported, GLOBAL_L1_CACHE_SUPPORTED),
    F(localL1CacheSupported, LOCAL_L1_CACHE_SUPPORTED),
    F(sharedMemPerMultiprocessor, MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
    F(regsPerMultiprocessor, MAX_REGISTERS_PER_MULTIPROCESSOR),
    F(managedMemory, MANAGED_MEMORY),
    F(isMultiGpuBoard, MULTI_GPU_BOARD),
    F(multiGpuBoardGroupID, MULTI_GPU_BOARD_GROUP_ID),
    F(hostNativeAtomicSupported, HOST_NATIVE_ATOMIC_SUPPORTED),
    F(pageableMemoryAccess, PAGEABLE_MEMORY_ACCESS),
    F(concurrentManagedAccess, CONCURRENT_MANAGED_ACCESS),
    F(computePreemptionSupported, COMPUTE_PREEMPTION_SUPPORTED),
    F(canUseHostPointerForRegisteredMem, CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM),
    F(cooperativeLaunch, COOPERATIVE_LAUNCH),
    F(sharedMemPerBlockOptin, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    F(pageableMemoryAccessUsesHostPageTables, PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES),
    F(directManagedMemAccessFromHost, DIRECT_MANAGED_MEM_ACCESS_FROM_HOST),
    F(maxBlocksPerMultiProcessor, MAX_BLOCKS_PER_MULTIPROCESSOR),
    F(accessPolicyMaxWindowSize, MAX_ACCESS_POLICY_WINDOW_SIZE),
    F(reservedSharedMemPerBlock, RESERVED_SHARED_MEMORY_PER_BLOCK),
    F(hostRegisterSupported, HOST_REGISTER_SUPPORTED),
    F(sparseCudaArraySupported, SPARSE_CUDA_ARRAY_SUPPORTED),
    F(hostRegisterReadOnlySupported, READ_ONLY_HOST_REGISTER_SUPPORTED),
    F(timelineSemaphoreInteropSupported, TIMELINE_SEMAPHORE_INTEROP_SUPPORTED),
    F(memoryPoolsSupported, MEMORY_POOLS_SUPPORTED),
    F(gpuDirectRDMASupported, GPU_DIRECT_RDMA_SUPPORTED),
    F(gpuDirectRDMAFlushWritesOptions, GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS),
    F(gpuDirectRDMAWritesOrdering, GPU_DIRECT_RDMA_WRITES_ORDERING),
    F(memoryPoolSupportedHandleTypes, MEMPOOL_SUPPORTED_HANDLE_TYPES),
    F(deferredMappingCudaArraySupported, DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED),
    F(ipcEventSupported, IPC_EVENT_SUPPORTED),
    F(clusterLaunch, CLUSTER_LAUNCH),
    F(unifiedFunctionPointers, UNIFIED_FUNCTION_POINTERS),
    F(deviceNumaConfig, NUMA_CONFIG),
    F(deviceNumaId, NUMA_ID),
    F(mpsEnabled, MPS_ENABLED),
    F(hostNumaId, HOST_NUMA_ID),
    F(gpuPciDeviceID, GPU_PCI_DEVICE_ID),
    F(gpuPciSubsystemID, GPU_PCI_SUBSYSTEM_ID),
    F(hostNumaMultinodeIpcSupported, HOST_NUMA_MULTINODE_IPC_SUPPORTED),
};
#undef F

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
    for (size_t i = 0; i < sizeof prop_fields / sizeof prop_fields[0]; i++) {
        const prop_field *f = &prop_fields[i];
        int v = attr(f->attr, device);
        char *at = (char *)prop + f->offset;
        if (f->width == sizeof(size_t)) {
            size_t z = (size_t)(unsigned)v;
            memcpy(at, &z, sizeof z);
        } else {
            memcpy(at, &v, sizeof v);
        }
    }
    return cudaSuccess;
}

RT_ONE_CALL(cudaDeviceSynchronize, (void), rt_drv.cuCtxSynchronize())

/* As cudart: waits for the device, then resets its primary context, which
 * frees every allocation made in it. */
RT_EXPORT cudaError_t cudaDeviceReset(void)
{
    cudaError_t e = cudaDeviceSynchronize();
    return e != cudaSuccess ? e : rt_result(rt_drv.cuDevicePrimaryCtxReset(rt_device()));
}

RT_ONE_CALL(cudaMemGetInfo, (size_t *free_bytes, size_t *total), rt_drv.cuMemGetInfo(free_bytes, total))
