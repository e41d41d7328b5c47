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

/* A 3D array descriptor: w x h x d elements of format f with ch channels. */
static inline CUDA_ARRAY3D_DESCRIPTOR array3d_desc(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch,
                                                   unsigned flags)
{
    return (CUDA_ARRAY3D_DESCRIPTOR){.Width = w, .Height = h, .Depth = d, .Format = f, .NumChannels = ch,
                                     .Flags = flags};
}

#endif
