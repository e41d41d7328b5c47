/*
 * trace_deep.c — an allocation under 70 frames of one exported function
 * whose name has 255 characters (deep_name.h): with LMS_STACKS=64 and the
 * executable copied under a long directory, its site line holds more than
 * a line may: frames must be left out whole and counted, and the line must
 * stay valid JSON. Linked with -rdynamic so that dladdr names the frames.
 */
#include <cuda.h>
#include <stdio.h>

#include "deep_name.h"

static volatile int sink;

__attribute__((noinline, visibility("default"))) int DEEP_NAME(int depth);
__attribute__((noinline, visibility("default"))) int DEEP_NAME(int depth)
{
    if (depth > 0) {
        int r = DEEP_NAME(depth - 1);
        sink = r;   /* work after the call: not a tail call, one frame per level */
        return r;
    }
    CUdeviceptr p;
    return cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS;
}

int main(void)
{
    CUcontext ctx;
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx))
        return 1;
    return DEEP_NAME(70);
}
