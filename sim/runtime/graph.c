/*
 * graph.c — stream capture, graphs and IPC handles in the simulated
 * runtime: thin wrappers over the driver's entry points (the cudaGraph_t,
 * cudaGraphExec_t and cudaStream_t handles are the driver's).
 */
#include "rt.h"

#include <string.h>

RT_ONE_CALL(cudaStreamBeginCapture, (cudaStream_t s, enum cudaStreamCaptureMode mode),
            rt_drv.cuStreamBeginCapture((CUstream)s, (CUstreamCaptureMode)mode))

RT_ONE_CALL(cudaStreamEndCapture, (cudaStream_t s, cudaGraph_t *graph),
            rt_drv.cuStreamEndCapture((CUstream)s, (CUgraph *)graph))

RT_ONE_CALL(cudaStreamIsCapturing, (cudaStream_t s, enum cudaStreamCaptureStatus *status),
            rt_drv.cuStreamIsCapturing((CUstream)s, (CUstreamCaptureStatus *)status))

RT_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus *status,
                                               unsigned long long *id, cudaGraph_t *graph,
                                               const cudaGraphNode_t **deps,
                                               const cudaGraphEdgeData **edges, size_t *ndeps)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    return rt_result(rt_drv.cuStreamGetCaptureInfo((CUstream)s, (CUstreamCaptureStatus *)status,
                                                   (cuuint64_t *)id, (CUgraph *)graph,
                                                   (const CUgraphNode **)deps,
                                                   (const CUgraphEdgeData **)edges, ndeps));
}

RT_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    cudaError_t e = rt_load();
    if (e != cudaSuccess)
        return rt_error(e);
    return rt_result(rt_drv.cuThreadExchangeStreamCaptureMode((CUstreamCaptureMode *)mode));
}

RT_ONE_CALL(cudaGraphInstantiate, (cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags),
            rt_drv.cuGraphInstantiateWithFlags((CUgraphExec *)exec, (CUgraph)graph, flags))

RT_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph,
                                                    unsigned long long flags)
{
    return cudaGraphInstantiate(exec, graph, flags);
}

RT_ONE_CALL(cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t s),
            rt_drv.cuGraphLaunch((CUgraphExec)exec, (CUstream)s))

RT_ONE_CALL(cudaGraphUpload, (cudaGraphExec_t exec, cudaStream_t s),
            rt_drv.cuGraphUpload((CUgraphExec)exec, (CUstream)s))

RT_ONE_CALL(cudaGraphDestroy, (cudaGraph_t graph), rt_drv.cuGraphDestroy((CUgraph)graph))

RT_ONE_CALL(cudaGraphExecDestroy, (cudaGraphExec_t exec), rt_drv.cuGraphExecDestroy((CUgraphExec)exec))

RT_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *p)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!handle)
        return rt_error(cudaErrorInvalidValue);
    CUipcMemHandle h;
    CUresult r = rt_drv.cuIpcGetMemHandle(&h, (CUdeviceptr)(uintptr_t)p);
    if (r == CUDA_SUCCESS)
        memcpy(handle->reserved, h.reserved, sizeof handle->reserved);
    return rt_result(r);
}

RT_EXPORT cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t handle, unsigned int flags)
{
    cudaError_t e = rt_enter();
    if (e != cudaSuccess)
        return e;
    if (!p)
        return rt_error(cudaErrorInvalidValue);
    CUipcMemHandle h;
    memcpy(h.reserved, handle.reserved, sizeof h.reserved);
    CUdeviceptr d = 0;
    CUresult r = rt_drv.cuIpcOpenMemHandle(&d, h, flags);
    if (r == CUDA_SUCCESS)
        *p = (void *)(uintptr_t)d;
    return rt_result(r);
}

RT_ONE_CALL(cudaIpcCloseMemHandle, (void *p), rt_drv.cuIpcCloseMemHandle((CUdeviceptr)(uintptr_t)p))
