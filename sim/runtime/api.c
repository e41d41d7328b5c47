/*
 * api.c — loading the driver through cuGetProcAddress_v2, the error state,
 * error names and versions of the simulated runtime.
 */
#include "rt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

rt_driver rt_drv;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cudaError_t load_error = cudaErrorInitializationError;
static __thread cudaError_t last_error;
static __thread int current_device;
static __thread int context_device = -1;   /* device whose context is current */

/* Resolves every driver entry point; runs once per process. */
static void load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        load_error = cudaErrorInsufficientDriver;
        return;
    }
    PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
    if (!gpa) {
        load_error = cudaErrorInsufficientDriver;
        return;
    }
    CUdriverProcAddressQueryResult st;
#define RT_RESOLVE(name, version)                                                           \
    if (gpa(#name, (void **)&rt_drv.name, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st) != \
            CUDA_SUCCESS || !rt_drv.name) {                                                   \
        load_error = cudaErrorInsufficientDriver;                                            \
        return;                                                                               \
    }
    RT_DRIVER(RT_RESOLVE)
#undef RT_RESOLVE
    gpa("simgpuFunctionForHost", (void **)&rt_drv.simgpuFunctionForHost, 2000,
        CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st);
    CUresult r = rt_drv.cuInit(0);
    load_error = r == CUDA_SUCCESS ? cudaSuccess
               : r == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice : cudaErrorInitializationError;
}

cudaError_t rt_load(void)
{
    pthread_once(&load_once, load);
    return load_error;
}

int rt_device(void) { return current_device; }

void rt_set_device(int device)
{
    current_device = device;
    context_device = -1;
}

cudaError_t rt_enter(void)
{
    cudaError_t e = rt_load();
    if (e != cudaSuccess)
        return rt_error(e);
    if (context_device == current_device)
        return cudaSuccess;
    CUcontext ctx;
    CUdevice dev;
    CUresult r = rt_drv.cuDeviceGet(&dev, current_device);
    if (r == CUDA_SUCCESS)
        r = rt_drv.cuDevicePrimaryCtxRetain(&ctx, dev);
    if (r == CUDA_SUCCESS)
        r = rt_drv.cuCtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS)
        return rt_result(r);
    context_device = current_device;
    return cudaSuccess;
}

cudaError_t rt_error(cudaError_t e)
{
    if (e != cudaSuccess)
        last_error = e;
    return e;
}

cudaError_t rt_result(CUresult r)
{
    cudaError_t e;
    switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: e = cudaErrorInvalidValue; break;
    case CUDA_ERROR_OUT_OF_MEMORY: e = cudaErrorMemoryAllocation; break;
    case CUDA_ERROR_NOT_INITIALIZED: e = cudaErrorInitializationError; break;
    case CUDA_ERROR_NO_DEVICE: e = cudaErrorNoDevice; break;
    case CUDA_ERROR_INVALID_DEVICE: e = cudaErrorInvalidDevice; break;
    case CUDA_ERROR_INVALID_CONTEXT: e = cudaErrorDeviceUninitialized; break;
    case CUDA_ERROR_INVALID_HANDLE: e = cudaErrorInvalidResourceHandle; break;
    case CUDA_ERROR_NOT_FOUND: e = cudaErrorSymbolNotFound; break;
    case CUDA_ERROR_NOT_READY: e = cudaErrorNotReady; break;
    case CUDA_ERROR_NOT_SUPPORTED: e = cudaErrorNotSupported; break;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: e = cudaErrorHostMemoryAlreadyRegistered; break;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: e = cudaErrorHostMemoryNotRegistered; break;
    case CUDA_ERROR_ILLEGAL_STATE: e = cudaErrorIllegalState; break;
    default:
        /* The stream capture codes are the same numbers in both APIs. */
        e = r >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && r <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD
                ? (cudaError_t)r : cudaErrorUnknown;
        break;
    }
    return rt_error(e);
}

RT_EXPORT cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

RT_EXPORT cudaError_t cudaPeekAtLastError(void) { return last_error; }

/* Name and text of the runtime codes this runtime returns. */
static const struct { cudaError_t code; const char *name, *text; } texts[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

RT_EXPORT const char *cudaGetErrorString(cudaError_t e)
{
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (texts[i].code == e)
            return texts[i].text;
    return "unrecognized error code";
}

RT_EXPORT const char *cudaGetErrorName(cudaError_t e)
{
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (texts[i].code == e)
            return texts[i].name;
    return "cudaErrorUnknown";
}

RT_EXPORT cudaError_t cudaDriverGetVersion(int *version)
{
    if (!version)
        return rt_error(cudaErrorInvalidValue);
    cudaError_t e = rt_load();
    if (e == cudaErrorInsufficientDriver) {
        *version = 0;
        return cudaSuccess;
    }
    return rt_result(rt_drv.cuDriverGetVersion(version));
}

RT_EXPORT cudaError_t cudaRuntimeGetVersion(int *version)
{
    if (!version)
        return rt_error(cudaErrorInvalidValue);
    *version = CUDART_VERSION;
    return cudaSuccess;
}
