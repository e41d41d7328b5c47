/*
 * oversub_demo.c — a CUDA runtime program whose working set is twice the
 * device: eight 256 MiB buffers (2 GiB) on a 1 GiB device. Without lmshim it
 * runs out of memory; under `lmshim run --sim --sim-mem 1G` it runs to the
 * end, and every result is checked against the CPU.
 *
 * usage: oversub_demo [buffers [MiB each]]    (default 8 x 256)
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "simgpu.h"

/* fill(x, n, seed): x[i] = seed + i % 1000 */
static void fill(simgpu_launch *l, void **p)
{
    float *x = *(float **)p[0];
    size_t n = *(size_t *)p[1];
    float seed = *(float *)p[2];
    l->access(l, (uint64_t)(uintptr_t)x, n * sizeof *x, SIMGPU_WRITE);
    for (size_t i = 0; i < n; i++)
        x[i] = seed + (float)(i % 1000);
    l->compute(l, (double)n * 4 / 2000.0);   /* a memory-bound kernel at 2 TB/s */
}

/* axpy(y, x, n, a): y = a*x + y */
static void axpy(simgpu_launch *l, void **p)
{
    float *y = *(float **)p[0];
    const float *x = *(float **)p[1];
    size_t n = *(size_t *)p[2];
    float a = *(float *)p[3];
    l->access(l, (uint64_t)(uintptr_t)x, n * sizeof *x, SIMGPU_READ);
    l->access(l, (uint64_t)(uintptr_t)y, n * sizeof *y, SIMGPU_READ_WRITE);
    for (size_t i = 0; i < n; i++)
        y[i] = a * x[i] + y[i];
    l->compute(l, (double)n * 12 / 2000.0);
}

#define TRY(call)                                                                   \
    do {                                                                            \
        cudaError_t e_ = (call);                                                    \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "oversub_demo: %s: %s\n", #call, cudaGetErrorString(e_)); \
            return 1;                                                               \
        }                                                                           \
    } while (0)

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int nbuf = argc > 1 ? atoi(argv[1]) : 8;
    size_t mib = argc > 2 ? (size_t)atoll(argv[2]) : 256;
    if (nbuf < 2 || nbuf > 64 || nbuf % 2 || mib < 1 || mib > 4096) {
        fprintf(stderr, "usage: oversub_demo [buffers (even, 2-64) [MiB each]]\n");
        return 2;
    }
    simgpu_kernel kf = {"fill", fill, 3, {8, 8, 4}}, ka = {"axpy", axpy, 4, {8, 8, 8, 4}};
    if (simgpu_register_kernel(&kf) || simgpu_register_kernel(&ka)) {
        fprintf(stderr, "oversub_demo: needs the simulated GPU (build/sim)\n");
        return 1;
    }
    size_t n = mib << 18, bytes = n * sizeof(float);   /* floats per buffer */
    size_t free_b = 0, total = 0;
    TRY(cudaMemGetInfo(&free_b, &total));
    printf("device memory %zu MiB; working set %d x %zu MiB = %zu MiB\n", total >> 20, nbuf, mib,
           (size_t)nbuf * mib);
    float *buf[64];
    for (int i = 0; i < nbuf; i++) {
        cudaError_t e = cudaMalloc((void **)&buf[i], bytes);
        if (e != cudaSuccess) {
            printf("buffer %d of %d: cudaMalloc: %s\n", i + 1, nbuf, cudaGetErrorString(e));
            return 1;
        }
    }
    dim3 grid = {1024, 1, 1}, block = {256, 1, 1};
    for (int i = 0; i < nbuf; i++) {
        float seed = (float)i;
        void *args[] = {&buf[i], &n, &seed};
        TRY(cudaLaunchKernel((const void *)fill, grid, block, args, 0, NULL));
    }
    float a = 2.0f;
    for (int i = 0; i < nbuf; i += 2) {                /* buf[i] = 2 * buf[i+1] + buf[i] */
        void *args[] = {&buf[i], &buf[i + 1], &n, &a};
        TRY(cudaLaunchKernel((const void *)axpy, grid, block, args, 0, NULL));
    }
    TRY(cudaDeviceSynchronize());
    float *host = malloc(bytes);
    if (!host)
        return 1;
    size_t wrong = 0;
    for (int i = 0; i < nbuf; i++) {
        TRY(cudaMemcpy(host, buf[i], bytes, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < n; k++) {
            float v = (float)(k % 1000);
            float want = i % 2 ? (float)i + v : 2.0f * ((float)(i + 1) + v) + (float)i + v;
            wrong += host[k] != want;
        }
        TRY(cudaFree(buf[i]));
    }
    free(host);
    simgpu_counters c;
    if (simgpu_get_counters(-1, &c) == 0)
        printf("modeled GPU time %.1f ms, %llu MiB read over the link, %llu faults\n",
               c.modeled_ns / 1e6, (unsigned long long)(c.remote_bytes >> 20),
               (unsigned long long)c.faults);
    if (wrong) {
        printf("FAILED: %zu wrong values\n", wrong);
        return 1;
    }
    printf("ok: %zu values checked against the CPU\n", (size_t)nbuf * n);
    return 0;
}
