/*
 * blind_streams.c — a program whose kernels lmshim never gets to fit,
 * launched on many streams: each launch is one of 3,000 functions drawn
 * at random (seen once or twice each over the run), reads one of 48
 * buffers drawn at random (a GEMM's weight: `passes` passes over it) and
 * runs on one of 8 streams drawn at random. With nothing to act on, the
 * engine can only time the two ways (fetch, or read in place) on the
 * device (src/common/blindways.c).
 *
 * usage: blind_streams RATIO BUDGET_MIB KIND
 *   the buffers total RATIO x BUDGET_MIB; KIND: `dear` (8 passes, compute
 *   as long as the link takes for one pass) or `mixed` (each function dear
 *   or cheap for good, half each: cheap is one pass and 3x the compute).
 * Prints `step_ms X` (modeled ms a step over the last 6 of 18 steps) and
 * `peak_mib Y`, and checks every kernel's result.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define NBUF 48
#define NSTREAM 8
#define NAMES 1000     /* kernel names registered; three modules give 3,000 functions */
#define MODULES 3
#define STEPS 18
#define MEASURED 6
#define LINK 55.0      /* bytes per ns: the simulator's default link (SIMGPU_LINK_GBPS) */

/* gemm(w, bytes, passes, compute_ns): reads w `passes` times, bumps its
 * first byte. */
static void gemm(simgpu_launch *l, void **p)
{
    CUdeviceptr w = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    unsigned passes = *(unsigned *)p[2];
    l->access_passes(l, w, bytes, SIMGPU_READ_WRITE, passes);
    __atomic_fetch_add((uint8_t *)(uintptr_t)w, 1, __ATOMIC_RELAXED);
    l->compute(l, *(double *)p[3]);
}

/* A small generator of its own: the same draws on every run. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t draw(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[3], "dear") && strcmp(argv[3], "mixed"))) {
        fprintf(stderr, "usage: blind_streams RATIO BUDGET_MIB dear|mixed\n");
        return 2;
    }
    double ratio = atof(argv[1]);
    uint64_t budget = strtoull(argv[2], NULL, 10) * MiB;
    bool mixed = !strcmp(argv[3], "mixed");
    primary_context(0);

    static char names[NAMES][16];
    for (int i = 0; i < NAMES; i++) {
        snprintf(names[i], sizeof names[i], "g%d", i);
        simgpu_kernel k = {names[i], gemm, 4, {8, 8, 4, 8}};
        OK(simgpu_register_kernel(&k));
    }
    static CUfunction fns[NAMES * MODULES];
    for (int m = 0; m < MODULES; m++) {
        CUmodule mod;
        OK(cuModuleLoadData(&mod, "x"));
        for (int i = 0; i < NAMES; i++)
            OK(cuModuleGetFunction(&fns[m * NAMES + i], mod, names[i]));
    }
    CUstream streams[NSTREAM];
    for (int s = 0; s < NSTREAM; s++)
        OK(cuStreamCreate(&streams[s], CU_STREAM_NON_BLOCKING));

    size_t size = (size_t)((double)budget * ratio / NBUF) & ~(2 * MiB - 1);
    CUdeviceptr buf[NBUF];
    unsigned want[NBUF] = {0};
    for (int b = 0; b < NBUF; b++) {
        OK(cuMemAlloc(&buf[b], size));
        OK(cuMemsetD8(buf[b], 0, size));
    }

    simgpu_counters c0 = {0}, c1;
    for (int step = 0; step < STEPS; step++) {
        for (int i = 0; i < NBUF; i++) {
            int b = (int)draw(NBUF), f = (int)draw(NAMES * MODULES);
            CUstream s = streams[draw(NSTREAM)];
            /* half the functions cheap for good (a hash of the number) */
            bool cheap = mixed && ((uint32_t)f * 2654435761u >> 8) % 2;
            unsigned passes = cheap ? 1 : 8;
            double ns = (cheap ? 3.0 : 1.0) * (double)size / LINK;
            void *args[] = {&buf[b], &size, &passes, &ns};
            OK(cuLaunchKernel(fns[f], 64, 1, 1, 256, 1, 1, 0, s, args, NULL));
            want[b]++;
        }
        OK(cuCtxSynchronize());
        if (step == STEPS - MEASURED - 1)
            OK(simgpu_get_counters(0, &c0));
    }
    OK(simgpu_get_counters(0, &c1));
    for (int b = 0; b < NBUF; b++) {
        uint8_t v = 0;
        OK(cuMemcpyDtoH(&v, buf[b], 1));
        CHECK_EQ_U(v, want[b] & 0xff);
    }
    printf("step_ms %.4f\npeak_mib %.1f\n", (c1.modeled_ns - c0.modeled_ns) / 1e6 / MEASURED,
           (double)c1.peak_device_bytes / MiB);
    return 0;
}
