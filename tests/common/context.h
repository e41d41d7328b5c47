/*
 * context.h — the setup every driver-API test program starts with: cuInit
 * and the primary context of a device made current.
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

#endif
