/*
 * trace_steps.c — a training-like loop over the simulated GPU for the HTML
 * report's tests and its timing on big traces: per layer a weight and an
 * activation of distinct sizes, then STEPS steps of a forward launch per
 * layer (first to last) and a backward launch per layer (last to first),
 * each touching its layer's weight and activation. Under a budget smaller
 * than the working set the activations are managed and move every step.
 * Linked with -rdynamic so that its allocating functions have names.
 *
 * usage: trace_steps STEPS [LAYERS [MiB]]     (default 3 steps, 6 layers, 64 MiB)
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "simgpu.h"
#include "../../common/shim.h"

#define MAX_LAYERS 64

static CUdeviceptr weights[MAX_LAYERS], activations[MAX_LAYERS];
static size_t sizes[MAX_LAYERS];

/* Both kernels: params are (weight, activation, bytes). */
static void touch(simgpu_launch *l, void **p)
{
    size_t bytes = *(size_t *)p[2];
    l->access(l, *(CUdeviceptr *)p[0], bytes, SIMGPU_READ);
    l->access(l, *(CUdeviceptr *)p[1], bytes, SIMGPU_READ_WRITE);
}

__attribute__((noinline, visibility("default"))) int alloc_weights(int layers)
{
    for (int i = 0; i < layers; i++)
        if (cuMemAlloc(&weights[i], sizes[i]) != CUDA_SUCCESS)
            return 1;
    return 0;
}

__attribute__((noinline, visibility("default"))) int alloc_activations(int layers)
{
    for (int i = 0; i < layers; i++)
        if (cuMemAlloc(&activations[i], sizes[i]) != CUDA_SUCCESS)
            return 1;
    return 0;
}

/* One launch of f over layer i. */
static int launch(CUfunction f, int i)
{
    void *args[] = {&weights[i], &activations[i], &sizes[i]};
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS;
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 3;
    int layers = argc > 2 ? atoi(argv[2]) : 6;
    long mib = argc > 3 ? atol(argv[3]) : 64;
    if (steps < 1 || layers < 1 || layers > MAX_LAYERS || mib < 1 || mib > 4096) {
        fprintf(stderr, "usage: trace_steps STEPS [LAYERS (1-%d) [MiB (1-4096)]]\n", MAX_LAYERS);
        return 2;
    }
    for (int i = 0; i < layers; i++)
        sizes[i] = (size_t)mib * MiB + (size_t)i * 2 * MiB;   /* distinct sizes: a step has one shape */
    CUcontext ctx;
    CUmodule m;
    CUfunction fwd, bwd;
    simgpu_kernel kf = {"forward", touch, 3, {8, 8, 8}}, kb = {"backward", touch, 3, {8, 8, 8}};
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) || simgpu_register_kernel(&kf) ||
        simgpu_register_kernel(&kb) || cuModuleLoadData(&m, "steps") || cuModuleGetFunction(&fwd, m, "forward") ||
        cuModuleGetFunction(&bwd, m, "backward"))
        return 1;
    if (alloc_weights(layers) || alloc_activations(layers)) {
        fprintf(stderr, "trace_steps: out of memory\n");
        return 1;
    }
    for (long s = 0; s < steps; s++) {
        for (int i = 0; i < layers; i++)
            if (launch(fwd, i))
                return 1;
        for (int i = layers; i-- > 0;)
            if (launch(bwd, i))
                return 1;
    }
    if (cuCtxSynchronize())
        return 1;
    for (int i = 0; i < layers; i++) {
        cuMemFree(weights[i]);
        cuMemFree(activations[i]);
    }
    cuModuleUnload(m);
    printf("trace_steps: %ld steps of %d layers done\n", steps, layers);
    return 0;
}
