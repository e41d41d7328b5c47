/*
 * fitted_streams.c — a program whose kernels lmshim does get to fit (48
 * functions, each launched a hundred times and more), launched round robin
 * over several streams: each launch reads and writes the first half or
 * more of one of 24 buffers and computes for 0.13x to 1.45x the time the
 * link takes to carry a whole buffer. Kernels of different streams run one
 * at a time, so a fetch on one stream overlaps the kernels of the others
 * while a read in place lengthens its own kernel.
 *
 * usage: fitted_streams RATIO BUDGET_MIB KIND STREAMS
 *   the buffers total RATIO x BUDGET_MIB; KIND: `cycle` (buffer k mod 24
 *   and function k mod 48 at launch k: a step of 48 launches that the
 *   engine learns) or `random` (buffer and function drawn at random:
 *   nothing to learn but the functions' prices).
 * Prints `step_ms X` (modeled ms a step of 240 launches over the last 6 of
 * 18 steps) and `peak_mib Y`, and checks every buffer's count.
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
#define NBUF 24
#define NFN 48
#define MAXSTREAM 64
#define STEP 240
#define STEPS 18
#define MEASURED 6
#define LINK 55.0   /* bytes per ns: the simulator's default link (SIMGPU_LINK_GBPS) */

/* touch(p, bytes, compute_ns): reads and writes [p, p + bytes) once, adds
 * 1 to the 32-bit word at p. */
static void touch(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    l->access(l, a, *(size_t *)p[1], SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint32_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, *(double *)p[2]);
}

/* A small generator of its own: the same draws on every run. */
static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t draw(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng % n;
}

int main(int argc, char **argv)
{
    int nstream = argc == 5 ? atoi(argv[4]) : 0;
    if (argc != 5 || (strcmp(argv[3], "cycle") && strcmp(argv[3], "random")) || nstream < 1 ||
        nstream > MAXSTREAM) {
        fprintf(stderr, "usage: fitted_streams RATIO BUDGET_MIB cycle|random STREAMS (1-%d)\n", MAXSTREAM);
        return 2;
    }
    double ratio = atof(argv[1]);
    uint64_t budget = strtoull(argv[2], NULL, 10) * MiB;
    bool cycle = !strcmp(argv[3], "cycle");
    primary_context(0);

    static char names[NFN][16];
    for (int i = 0; i < NFN; i++) {
        snprintf(names[i], sizeof names[i], "touch%d", i);
        simgpu_kernel k = {names[i], touch, 3, {8, 8, 8}};
        OK(simgpu_register_kernel(&k));
    }
    CUmodule mod;
    OK(cuModuleLoadData(&mod, "x"));
    CUfunction fns[NFN];
    for (int i = 0; i < NFN; i++)
        OK(cuModuleGetFunction(&fns[i], mod, names[i]));
    CUstream streams[MAXSTREAM];
    for (int s = 0; s < nstream; s++)
        OK(cuStreamCreate(&streams[s], CU_STREAM_NON_BLOCKING));

    size_t size = (size_t)((double)budget * ratio / NBUF) & ~(2 * MiB - 1);
    CUdeviceptr buf[NBUF];
    uint32_t want[NBUF] = {0};
    for (int b = 0; b < NBUF; b++) {
        OK(cuMemAlloc(&buf[b], size));
        OK(cuMemsetD8(buf[b], 0, size));
    }

    simgpu_counters c0 = {0}, c1;
    uint64_t k = 0;
    for (int step = 0; step < STEPS; step++) {
        for (int i = 0; i < STEP; i++, k++) {
            int b = cycle ? (int)(k % NBUF) : (int)draw(NBUF);
            int f = cycle ? (int)(k % NFN) : (int)draw(NFN);
            size_t bytes = (size / 2 + (size_t)draw(size / 2)) & ~(size_t)4095;
            double ns = (0.13 + (double)draw(1000) * 1.32e-3) * (double)size / LINK;
            void *args[] = {&buf[b], &bytes, &ns};
            OK(cuLaunchKernel(fns[f], 1, 1, 1, 32, 1, 1, 0, streams[k % (uint64_t)nstream], args, NULL));
            want[b]++;
        }
        OK(cuCtxSynchronize());
        if (step == STEPS - MEASURED - 1)
            OK(simgpu_get_counters(0, &c0));
    }
    OK(simgpu_get_counters(0, &c1));
    for (int b = 0; b < NBUF; b++) {
        uint32_t v = 0;
        OK(cuMemcpyDtoH(&v, buf[b], sizeof v));
        CHECK_EQ_U(v, want[b]);
    }
    printf("step_ms %.4f\npeak_mib %.1f\n", (c1.modeled_ns - c0.modeled_ns) / 1e6 / MEASURED,
           (double)c1.peak_device_bytes / MiB);
    return 0;
}
