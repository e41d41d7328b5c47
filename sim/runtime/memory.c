/*
 * memory.c — allocation, copies, memsets, managed-memory hints and pointer
 * queries of the simulated runtime; each is a thin call into the driver.
 */
#include "rt.h"

#include <stdint.h>

#define DP(p) ((CUdeviceptr)(uintptr_t)(p))

RT_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!devPtr)
        return rt_error(cudaErrorInvalidValue);
    if (size == 0) {            /* the runtime answers NULL for zero bytes */
        *devPtr = NULL;
        return cudaSuccess;
    }
    CUdeviceptr p;
    CUresult r = rt_drv.cuMemAlloc(&p, size);
    if (r == CUDA_SUCCESS)
        *devPtr = (void *)(uintptr_t)p;
    return rt_result(r);
}

RT_EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!devPtr || !pitch)
        return rt_error(cudaErrorInvalidValue);
    CUdeviceptr p;
    CUresult r = rt_drv.cuMemAllocPitch(&p, pitch, width, height, 4);
    if (r == CUDA_SUCCESS)
        *devPtr = (void *)(uintptr_t)p;
    return rt_result(r);
}

RT_EXPORT cudaError_t cudaFree(void *devPtr)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess || !devPtr)  /* cudaFree(NULL) is a no-op */
        return e;
    return rt_result(rt_drv.cuMemFree(DP(devPtr)));
}

RT_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!devPtr || size == 0)
        return rt_error(cudaErrorInvalidValue);
    CUdeviceptr p;
    CUresult r = rt_drv.cuMemAllocManaged(&p, size, flags);
    if (r == CUDA_SUCCESS)
        *devPtr = (void *)(uintptr_t)p;
    return rt_result(r);
}

RT_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!pHost)
        return rt_error(cudaErrorInvalidValue);
    return rt_result(rt_drv.cuMemHostAlloc(pHost, size, flags));
}

RT_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

RT_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess || !ptr)
        return e;
    return rt_result(rt_drv.cuMemFreeHost(ptr));
}

/* Page-locks the program's range (cudaHostRegister flags have the values
 * of the driver's CU_MEMHOSTREGISTER_* flags). */
RT_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    return rt_result(rt_drv.cuMemHostRegister(ptr, size, flags));
}

RT_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    return rt_result(rt_drv.cuMemHostUnregister(ptr));
}

RT_EXPORT cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!pDevice)
        return rt_error(cudaErrorInvalidValue);
    CUdeviceptr p;
    CUresult r = rt_drv.cuMemHostGetDevicePointer(&p, pHost, flags);
    if (r == CUDA_SUCCESS)
        *pDevice = (void *)(uintptr_t)p;
    return rt_result(r);
}

/* Shared body of cudaMemcpy and cudaMemcpyAsync. */
static cudaError_t memcpy_kind(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                               CUstream s, bool async)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    CUresult r;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        r = async ? rt_drv.cuMemcpyHtoDAsync(DP(dst), src, n, s) : rt_drv.cuMemcpyHtoD(DP(dst), src, n);
        break;
    case cudaMemcpyDeviceToHost:
        r = async ? rt_drv.cuMemcpyDtoHAsync(dst, DP(src), n, s) : rt_drv.cuMemcpyDtoH(dst, DP(src), n);
        break;
    case cudaMemcpyDeviceToDevice:
        r = async ? rt_drv.cuMemcpyDtoDAsync(DP(dst), DP(src), n, s)
                  : rt_drv.cuMemcpyDtoD(DP(dst), DP(src), n);
        break;
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:
        r = async ? rt_drv.cuMemcpyAsync(DP(dst), DP(src), n, s) : rt_drv.cuMemcpy(DP(dst), DP(src), n);
        break;
    default:
        return rt_error(cudaErrorInvalidMemcpyDirection);
    }
    return rt_result(r);
}

RT_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    return memcpy_kind(dst, src, n, kind, NULL, false);
}

RT_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                                      enum cudaMemcpyKind kind, cudaStream_t s)
{
    return memcpy_kind(dst, src, n, kind, (CUstream)s, true);
}

RT_ONE_CALL(cudaMemset, (void *devPtr, int value, size_t n),
            rt_drv.cuMemsetD8(DP(devPtr), (unsigned char)value, n))

RT_ONE_CALL(cudaMemsetAsync, (void *devPtr, int value, size_t n, cudaStream_t s),
            rt_drv.cuMemsetD8Async(DP(devPtr), (unsigned char)value, n, (CUstream)s))

RT_EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t s)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!devPtr)
        return rt_error(cudaErrorInvalidValue);
    CUdeviceptr p;
    CUresult r = rt_drv.cuMemAllocAsync(&p, size, (CUstream)s);
    if (r == CUDA_SUCCESS)
        *devPtr = (void *)(uintptr_t)p;
    return rt_result(r);
}

RT_EXPORT cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t pool,
                                              cudaStream_t s)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!ptr)
        return rt_error(cudaErrorInvalidValue);
    CUdeviceptr p;
    CUresult r = rt_drv.cuMemAllocFromPoolAsync(&p, size, (CUmemoryPool)pool, (CUstream)s);
    if (r == CUDA_SUCCESS)
        *ptr = (void *)(uintptr_t)p;
    return rt_result(r);
}

RT_ONE_CALL(cudaFreeAsync, (void *devPtr, cudaStream_t s), rt_drv.cuMemFreeAsync(DP(devPtr), (CUstream)s))

RT_ONE_CALL(cudaDeviceGetDefaultMemPool, (cudaMemPool_t *pool, int device),
            rt_drv.cuDeviceGetDefaultMemPool((CUmemoryPool *)pool, device))

/* The driver's location for a runtime location (same numbering). */
static CUmemLocation location(struct cudaMemLocation l)
{
    CUmemLocation c = {.type = (CUmemLocationType)l.type, .id = l.id};
    return c;
}

RT_ONE_CALL(cudaMemPrefetchAsync,
            (const void *devPtr, size_t n, struct cudaMemLocation l, unsigned int flags, cudaStream_t s),
            rt_drv.cuMemPrefetchAsync(DP(devPtr), n, location(l), flags, (CUstream)s))

RT_ONE_CALL(cudaMemAdvise,
            (const void *devPtr, size_t n, enum cudaMemoryAdvise advice, struct cudaMemLocation l),
            rt_drv.cuMemAdvise(DP(devPtr), n, (CUmem_advise)advice, location(l)))

RT_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *ptr)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!a)
        return rt_error(cudaErrorInvalidValue);
    unsigned int type = 0;
    int managed = 0, ordinal = -2;
    CUdeviceptr dptr = 0;
    void *hptr = NULL;
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                   CU_POINTER_ATTRIBUTE_HOST_POINTER};
    void *data[] = {&type, &managed, &ordinal, &dptr, &hptr};
    CUresult r = rt_drv.cuPointerGetAttributes(5, which, data, DP(ptr));
    if (r != CUDA_SUCCESS)
        return rt_result(r);
    a->type = managed ? cudaMemoryTypeManaged
            : type == CU_MEMORYTYPE_DEVICE ? cudaMemoryTypeDevice
            : type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered;
    a->device = a->type == cudaMemoryTypeUnregistered ? -2 : ordinal;
    a->devicePointer = (void *)(uintptr_t)dptr;
    a->hostPointer = a->type == cudaMemoryTypeUnregistered ? (void *)ptr : hptr;
    return cudaSuccess;
}

/* ---- CUDA arrays ---------------------------------------------------------- */

/* The driver's format and channel count for a channel description: 1, 2
 * or 4 channels of one width (8, 16 or 32 bits; 16 or 32 for floats);
 * false for any other. */
static bool array_format(const struct cudaChannelFormatDesc *d, CUarray_format *fmt, unsigned *channels)
{
    int bits[4] = {d->x, d->y, d->z, d->w};
    unsigned n = 0;
    while (n < 4 && bits[n] != 0)
        n++;
    if (n == 0 || n == 3)
        return false;
    for (unsigned i = 0; i < 4; i++)
        if ((i < n && bits[i] != bits[0]) || (i >= n && bits[i] != 0))
            return false;
    switch (d->f) {
    case cudaChannelFormatKindSigned:
        *fmt = bits[0] == 8 ? CU_AD_FORMAT_SIGNED_INT8 : bits[0] == 16 ? CU_AD_FORMAT_SIGNED_INT16
             : bits[0] == 32 ? CU_AD_FORMAT_SIGNED_INT32 : (CUarray_format)0;
        break;
    case cudaChannelFormatKindUnsigned:
        *fmt = bits[0] == 8 ? CU_AD_FORMAT_UNSIGNED_INT8 : bits[0] == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
             : bits[0] == 32 ? CU_AD_FORMAT_UNSIGNED_INT32 : (CUarray_format)0;
        break;
    case cudaChannelFormatKindFloat:
        *fmt = bits[0] == 16 ? CU_AD_FORMAT_HALF : bits[0] == 32 ? CU_AD_FORMAT_FLOAT : (CUarray_format)0;
        break;
    default:
        return false;
    }
    *channels = n;
    return *fmt != 0;
}

/* An array of width x height x depth elements through cuArray3DCreate (the
 * cudaArray* flags have the values of the driver's CUDA_ARRAY3D_* flags). */
static cudaError_t make_array(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                              size_t width, size_t height, size_t depth, unsigned flags)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = width, .Height = height, .Depth = depth, .Flags = flags};
    if (!array || !desc || !array_format(desc, &d.Format, &d.NumChannels))
        return rt_error(cudaErrorInvalidValue);
    CUarray a;
    CUresult r = rt_drv.cuArray3DCreate(&a, &d);
    if (r == CUDA_SUCCESS)
        *array = (cudaArray_t)a;
    return rt_result(r);
}

RT_EXPORT cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                      size_t width, size_t height, unsigned int flags)
{
    return make_array(array, desc, width, height, 0, flags);
}

RT_EXPORT cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                        struct cudaExtent extent, unsigned int flags)
{
    return make_array(array, desc, extent.width, extent.height, extent.depth, flags);
}

RT_EXPORT cudaError_t cudaFreeArray(cudaArray_t array)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess || !array)   /* a NULL array is a no-op */
        return e;
    CUresult r = rt_drv.cuArrayDestroy((CUarray)array);
    /* An array freed before (or never made) is cudaErrorInvalidValue, the
     * one error cudaFreeArray documents, not the driver's invalid handle. */
    return r == CUDA_ERROR_INVALID_HANDLE ? rt_error(cudaErrorInvalidValue) : rt_result(r);
}

RT_EXPORT cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc *desc, struct cudaExtent *extent,
                                       unsigned int *flags, cudaArray_t array)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    CUDA_ARRAY3D_DESCRIPTOR d;
    CUresult r = rt_drv.cuArray3DGetDescriptor(&d, (CUarray)array);
    if (r == CUDA_ERROR_INVALID_HANDLE)
        return rt_error(cudaErrorInvalidValue);   /* as cudaArrayGetInfo documents */
    if (r != CUDA_SUCCESS)
        return rt_result(r);
    if (desc) {
        int bits = 0;
        enum cudaChannelFormatKind kind = cudaChannelFormatKindUnsigned;
        switch (d.Format) {
        case CU_AD_FORMAT_UNSIGNED_INT8: bits = 8; break;
        case CU_AD_FORMAT_UNSIGNED_INT16: bits = 16; break;
        case CU_AD_FORMAT_UNSIGNED_INT32: bits = 32; break;
        case CU_AD_FORMAT_SIGNED_INT8: bits = 8; kind = cudaChannelFormatKindSigned; break;
        case CU_AD_FORMAT_SIGNED_INT16: bits = 16; kind = cudaChannelFormatKindSigned; break;
        case CU_AD_FORMAT_SIGNED_INT32: bits = 32; kind = cudaChannelFormatKindSigned; break;
        case CU_AD_FORMAT_HALF: bits = 16; kind = cudaChannelFormatKindFloat; break;
        case CU_AD_FORMAT_FLOAT:
        default: bits = 32; kind = cudaChannelFormatKindFloat; break;   /* the only other made */
        }
        *desc = (struct cudaChannelFormatDesc){.x = bits, .y = d.NumChannels > 1 ? bits : 0,
                                               .z = d.NumChannels > 2 ? bits : 0,
                                               .w = d.NumChannels > 2 ? bits : 0, .f = kind};
    }
    if (extent)
        *extent = (struct cudaExtent){.width = d.Width, .height = d.Height, .depth = d.Depth};
    if (flags)
        *flags = d.Flags;
    return cudaSuccess;
}

/* ---- mipmapped arrays ------------------------------------------------------ */

/* A mipmapped array through cuMipmappedArrayCreate (the cudaArray* flags
 * are the driver's CUDA_ARRAY3D_* values); the driver owns it. */
RT_EXPORT cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray,
                                               const struct cudaChannelFormatDesc *desc,
                                               struct cudaExtent extent, unsigned int numLevels,
                                               unsigned int flags)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = extent.width, .Height = extent.height, .Depth = extent.depth,
                                 .Flags = flags};
    if (!mipmappedArray || !desc || !array_format(desc, &d.Format, &d.NumChannels))
        return rt_error(cudaErrorInvalidValue);
    CUmipmappedArray m;
    CUresult r = rt_drv.cuMipmappedArrayCreate(&m, &d, numLevels);
    if (r == CUDA_SUCCESS)
        *mipmappedArray = (cudaMipmappedArray_t)m;
    return rt_result(r);
}

/* A level's array, the mipmapped array's own (cuMipmappedArrayGetLevel). */
RT_EXPORT cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t *levelArray, cudaMipmappedArray_const_t mipmappedArray,
                                                 unsigned int level)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    CUarray a;
    CUresult r = rt_drv.cuMipmappedArrayGetLevel(levelArray ? &a : NULL, (CUmipmappedArray)mipmappedArray, level);
    if (r == CUDA_SUCCESS)
        *levelArray = (cudaArray_t)a;
    return rt_result(r);   /* a bad handle: cudaErrorInvalidResourceHandle, as documented */
}

/* Frees a mipmapped array and its levels (cuMipmappedArrayDestroy). */
RT_EXPORT cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess || !mipmappedArray)   /* a NULL array is a no-op, as for cudaFreeArray */
        return e;
    CUresult r = rt_drv.cuMipmappedArrayDestroy((CUmipmappedArray)mipmappedArray);
    /* One freed before (or never made) is cudaErrorInvalidValue, the one
     * error cudaFreeMipmappedArray documents. */
    return r == CUDA_ERROR_INVALID_HANDLE ? rt_error(cudaErrorInvalidValue) : rt_result(r);
}
