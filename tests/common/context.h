/*
 * context.h — the setup every driver-API test program starts with: cuInit
 * and the primary context of a device made current, or a context of its
 * own.
 */
#ifndef TEST_CONTEXT_H
#define TEST_CONTEXT_H

#include <cuda.h>

#include "check.h"

/* Initialises the driver and makes device `dev`'s primary context current. */
static inline CUcontext primary_context(int dev)
{
    CUcontext ctx;
    OK(cuInit(0));
    OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    OK(cuCtxSetCurrent(ctx));
    return ctx;
}

/* Initialises the driver and makes a new context on device `dev` current
 * on the calling thread (the caller destroys it). */
static inline CUcontext new_context(int dev)
{
    CUdevice d;
    CUcontext ctx;
    OK(cuInit(0));
    OK(cuDeviceGet(&d, dev));
    OK(cuCtxCreate(&ctx, NULL, 0, d));
    return ctx;
}

/* The parameters of a graph allocation node of `bytes` on device `dev`
 * (pinned, from the device's graph pool). */
static inline CUDA_MEM_ALLOC_NODE_PARAMS graph_alloc_params(size_t bytes, int dev)
{
    CUDA_MEM_ALLOC_NODE_PARAMS ap = {0};
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.poolProps.location.id = dev;
    ap.bytesize = bytes;
    return ap;
}

/* A 3D array descriptor: w x h x d elements of format f with ch channels. */
static inline CUDA_ARRAY3D_DESCRIPTOR array3d_desc(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch,
                                                   unsigned flags)
{
    return (CUDA_ARRAY3D_DESCRIPTOR){.Width = w, .Height = h, .Depth = d, .Format = f, .NumChannels = ch,
                                     .Flags = flags};
}

#endif
