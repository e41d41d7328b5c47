/*
 * trace_golden.c — a small, fully determined workload for the trace and
 * report tests: two 256 MiB weight buffers and four 256 MiB activation
 * buffers, then two launches that each touch two activations. Under
 * LMS_LIMIT=1G LMS_FRAC=0.5 LMS_THRESHOLD=64M LMS_POLICY=lru the weights stay
 * on the device and the activations are managed; the first launch fetches
 * two activations (512 MiB), the second evicts them and fetches the other
 * two. Linked with -rdynamic so that its own functions have names.
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>

#include "simgpu.h"
#include "../common/shim.h"

static CUdeviceptr weights[2], activations[4];
static volatile int nweights = 2, nactivations = 4;   /* loops stay loops: one call site each */

static void touch2(simgpu_launch *l, void **p)
{
    l->access(l, *(CUdeviceptr *)p[0], 256 * MiB, SIMGPU_READ_WRITE);
    l->access(l, *(CUdeviceptr *)p[1], 256 * MiB, SIMGPU_READ_WRITE);
}

__attribute__((noinline, visibility("default"))) int alloc_weights(void)
{
    for (int i = 0; i < nweights; i++)
        if (cuMemAlloc(&weights[i], 256 * MiB) != CUDA_SUCCESS)
            return 1;
    return 0;
}

__attribute__((noinline, visibility("default"))) int alloc_activations(void)
{
    for (int i = 0; i < nactivations; i++)
        if (cuMemAlloc(&activations[i], 256 * MiB) != CUDA_SUCCESS)
            return 1;
    return 0;
}

int main(void)
{
    CUcontext ctx;
    CUmodule m;
    CUfunction f;
    simgpu_kernel k = {"touch2", touch2, 2, {8, 8}};
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) || simgpu_register_kernel(&k) ||
        cuModuleLoadData(&m, "golden") || cuModuleGetFunction(&f, m, "touch2"))
        return 1;
    if (alloc_weights() || alloc_activations())
        return 1;
    for (int i = 0; i < 4; i += 2) {
        void *args[] = {&activations[i], &activations[i + 1]};
        if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL))
            return 1;
    }
    if (cuCtxSynchronize())
        return 1;
    for (int i = 0; i < 2; i++)
        cuMemFree(weights[i]);
    for (int i = 0; i < 4; i++)
        cuMemFree(activations[i]);
    puts("golden: done");
    return 0;
}
