/*
 * rt.h — shared state of the simulated runtime (libcudart.so.13).
 *
 * Like the real runtime, it reaches the driver only through
 * cuGetProcAddress_v2, found with dlopen("libcuda.so.1") + dlsym: every
 * driver function in RT_DRIVER below is resolved through it once, at the
 * first runtime call. Nothing here links to libcuda.
 */
#ifndef RT_H
#define RT_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>

#define RT_EXPORT __attribute__((visibility("default")))

/* Driver entry points the runtime uses: X(base name, ABI version). */
#define RT_DRIVER(X) \
    X(cuInit, 2000) X(cuDriverGetVersion, 2020) X(cuDeviceGetCount, 2000) \
    X(cuDeviceGet, 2000) X(cuDeviceGetName, 2000) X(cuDeviceTotalMem, 3020) \
    X(cuDeviceGetAttribute, 2000) X(cuDevicePrimaryCtxRetain, 7000) \
    X(cuDevicePrimaryCtxReset, 11000) \
    X(cuCtxSetCurrent, 4000) X(cuCtxSynchronize, 2000) \
    X(cuMemAlloc, 3020) X(cuMemAllocPitch, 3020) X(cuMemFree, 3020) X(cuMemGetInfo, 3020) \
    X(cuMemAllocManaged, 6000) X(cuMemHostAlloc, 2020) X(cuMemFreeHost, 2000) \
    X(cuMemHostGetDevicePointer, 3020) X(cuMemcpy, 4000) X(cuMemcpyAsync, 4000) \
    X(cuMemcpyHtoD, 3020) X(cuMemcpyDtoH, 3020) X(cuMemcpyDtoD, 3020) \
    X(cuMemcpyHtoDAsync, 3020) X(cuMemcpyDtoHAsync, 3020) X(cuMemcpyDtoDAsync, 3020) \
    X(cuMemsetD8, 3020) X(cuMemsetD8Async, 3020) \
    X(cuMemAllocAsync, 11020) X(cuMemAllocFromPoolAsync, 11020) X(cuMemFreeAsync, 11020) \
    X(cuDeviceGetDefaultMemPool, 11020) X(cuMemPrefetchAsync, 12020) X(cuMemAdvise, 12020) \
    X(cuPointerGetAttributes, 7000) X(cuStreamCreateWithPriority, 5050) \
    X(cuStreamDestroy, 4000) X(cuStreamSynchronize, 2000) X(cuStreamQuery, 2000) \
    X(cuStreamWaitEvent, 3020) X(cuEventCreate, 2000) X(cuEventDestroy, 4000) \
    X(cuEventRecord, 2000) X(cuEventSynchronize, 2000) X(cuEventQuery, 2000) \
    X(cuEventElapsedTime, 12080) X(cuLaunchKernel, 4000) \
    X(cuMemHostRegister, 6050) X(cuMemHostUnregister, 4000) \
    X(cuArray3DCreate, 3020) X(cuArray3DGetDescriptor, 3020) X(cuArrayDestroy, 2000) \
    X(cuMipmappedArrayCreate, 5000) X(cuMipmappedArrayGetLevel, 5000) X(cuMipmappedArrayDestroy, 5000) \
    X(cuStreamBeginCapture, 10010) X(cuStreamEndCapture, 10000) X(cuStreamIsCapturing, 10000) \
    X(cuStreamGetCaptureInfo, 12030) X(cuThreadExchangeStreamCaptureMode, 10010) \
    X(cuGraphInstantiateWithFlags, 11040) X(cuGraphLaunch, 10000) X(cuGraphUpload, 11010) \
    X(cuGraphDestroy, 10000) X(cuGraphExecDestroy, 10000) \
    X(cuIpcGetMemHandle, 4010) X(cuIpcOpenMemHandle, 11000) X(cuIpcCloseMemHandle, 4010)

typedef struct rt_driver {
#define RT_FIELD(name, version) PFN_##name##_v##version name;
    RT_DRIVER(RT_FIELD)
#undef RT_FIELD
    CUresult (*simgpuFunctionForHost)(CUfunction *out, const void *fn);
} rt_driver;

extern rt_driver rt_drv;

/* Loads the driver and makes the calling thread's current device's primary
 * context current. Returns cudaSuccess or the error to report. */
cudaError_t rt_enter(void);
/* Loads the driver only (no context). */
cudaError_t rt_load(void);
/* The calling thread's current device. */
int rt_device(void);
void rt_set_device(int device);
/* Maps a driver result to the runtime's code and records it as the last error. */
cudaError_t rt_result(CUresult r);
/* Records a runtime error as the last error and returns it. */
cudaError_t rt_error(cudaError_t e);

/* Defines the exported runtime function `name` (`params`: its parenthesised
 * parameter list) that is one driver call: rt_enter()'s error, else the
 * result of `call` (made only once rt_enter succeeded) as the runtime's
 * error (rt_result). */
#define RT_ONE_CALL(name, params, call)                    \
    RT_EXPORT cudaError_t name params                      \
    {                                                      \
        cudaError_t e = rt_enter();                        \
        return e != cudaSuccess ? e : rt_result(call);     \
    }

#endif
