/*
 * stream.c — streams, events and kernel launch in the simulated runtime.
 * cudaLaunchKernel takes a registered kernel's body as its key (simgpu.h).
 */
#include "rt.h"

RT_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!s)
        return rt_error(cudaErrorInvalidValue);
    return rt_result(rt_drv.cuStreamCreateWithPriority((CUstream *)s, flags, priority));
}

RT_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    return cudaStreamCreateWithPriority(s, flags, 0);
}

RT_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    return cudaStreamCreateWithPriority(s, cudaStreamDefault, 0);
}

RT_ONE_CALL(cudaStreamDestroy, (cudaStream_t s), rt_drv.cuStreamDestroy((CUstream)s))

RT_ONE_CALL(cudaStreamSynchronize, (cudaStream_t s), rt_drv.cuStreamSynchronize((CUstream)s))

RT_ONE_CALL(cudaStreamQuery, (cudaStream_t s), rt_drv.cuStreamQuery((CUstream)s))

RT_ONE_CALL(cudaStreamWaitEvent, (cudaStream_t s, cudaEvent_t ev, unsigned int flags),
            rt_drv.cuStreamWaitEvent((CUstream)s, (CUevent)ev, flags))

RT_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned int flags)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!ev)
        return rt_error(cudaErrorInvalidValue);
    return rt_result(rt_drv.cuEventCreate((CUevent *)ev, flags));
}

RT_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *ev)
{
    return cudaEventCreateWithFlags(ev, cudaEventDefault);
}

RT_ONE_CALL(cudaEventDestroy, (cudaEvent_t ev), rt_drv.cuEventDestroy((CUevent)ev))

RT_ONE_CALL(cudaEventRecord, (cudaEvent_t ev, cudaStream_t s), rt_drv.cuEventRecord((CUevent)ev, (CUstream)s))

RT_ONE_CALL(cudaEventSynchronize, (cudaEvent_t ev), rt_drv.cuEventSynchronize((CUevent)ev))

RT_ONE_CALL(cudaEventQuery, (cudaEvent_t ev), rt_drv.cuEventQuery((CUevent)ev))

RT_ONE_CALL(cudaEventElapsedTime, (float *ms, cudaEvent_t start, cudaEvent_t end),
            rt_drv.cuEventElapsedTime(ms, (CUevent)start, (CUevent)end))

RT_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
                                       size_t sharedMem, cudaStream_t s)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    CUfunction f;
    if (!rt_drv.simgpuFunctionForHost || rt_drv.simgpuFunctionForHost(&f, func) != CUDA_SUCCESS)
        return rt_error(cudaErrorInvalidDeviceFunction);
    return rt_result(rt_drv.cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                           (unsigned)sharedMem, (CUstream)s, args, NULL));
}
