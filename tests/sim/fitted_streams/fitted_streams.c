/*
 * fitted_streams.c — a program whose kernels lmshim does get to fit (48
 * functions, each launched a hundred times and more), launched round robin
 * over several streams: each launch reads and writes the first half or
 * more of one of 24 buffers and computes for 0.13x to 1.45x the time the
 * link takes to carry a whole buffer. Kernels of different streams run one
 * at a time, so a fetch on one stream overlaps the kernels of the others
 * while a read in place lengthens its own kernel.
 *
 * usage: fitted_streams RATIO BUDGET_MIB KIND STREAMS [SEED]
 *   the buffers total RATIO x BUDGET_MIB; KIND: `cycle` (buffer k mod 24
 *   and function k mod 48 at launch k: a step of 48 launches that the
 *   engine learns) or `random` (buffer and function drawn at random:
 *   nothing to learn but the functions' prices); SEED (default 0) draws
 *   other sizes, compute and, for `random`, buffers and functions.
 * Prints `step_ms X` (modeled ms a step of 240 launches over the last 6 of
 * 18 steps) and `peak_mib Y`, and checks every buffer's count.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/stream_program.h"

#define NBUF 24
#define NFN 48
#define MAXSTREAM 64
#define STEP 240
#define STEPS 18
#define MEASURED 6

/* touch(p, bytes, compute_ns): reads and writes [p, p + bytes) once, adds
 * 1 to the 32-bit word at p. */
static void touch(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    l->access(l, a, *(size_t *)p[1], SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint32_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, *(double *)p[2]);
}

int main(int argc, char **argv)
{
    int nstream = argc >= 5 ? atoi(argv[4]) : 0;
    if (argc < 5 || argc > 6 || (strcmp(argv[3], "cycle") && strcmp(argv[3], "random")) || nstream < 1 ||
        nstream > MAXSTREAM) {
        fprintf(stderr, "usage: fitted_streams RATIO BUDGET_MIB cycle|random STREAMS (1-%d) [SEED]\n", MAXSTREAM);
        return 2;
    }
    double ratio = atof(argv[1]);
    uint64_t budget = strtoull(argv[2], NULL, 10) * SP_MiB;
    bool cycle = !strcmp(argv[3], "cycle");
    sp_rng rng = sp_seeded(0x2545f4914f6cdd1dull, argc == 6 ? strtoull(argv[5], NULL, 10) : 0);
    primary_context(0);

    static char names[NFN][16];
    CUfunction fns[NFN];
    sp_functions((simgpu_kernel){.fn = touch, .num_params = 3, .param_sizes = {8, 8, 8}}, "touch", NFN, names, 1,
                 fns);
    CUstream streams[MAXSTREAM];
    sp_streams(streams, nstream);
    CUdeviceptr buf[NBUF];
    size_t size = sp_buffers(buf, NBUF, budget, ratio);
    uint32_t want[NBUF] = {0};

    simgpu_counters c0 = {0};
    uint64_t k = 0;
    for (int step = 0; step < STEPS; step++) {
        for (int i = 0; i < STEP; i++, k++) {
            int b = cycle ? (int)(k % NBUF) : (int)sp_draw(&rng, NBUF);
            int f = cycle ? (int)(k % NFN) : (int)sp_draw(&rng, NFN);
            size_t bytes = (size / 2 + (size_t)sp_draw(&rng, size / 2)) & ~(size_t)4095;
            double ns = (0.13 + (double)sp_draw(&rng, 1000) * 1.32e-3) * (double)size / SP_LINK;
            void *args[] = {&buf[b], &bytes, &ns};
            OK(cuLaunchKernel(fns[f], 1, 1, 1, 32, 1, 1, 0, streams[k % (uint64_t)nstream], args, NULL));
            want[b]++;
        }
        sp_step_end(step, STEPS, MEASURED, &c0);
    }
    sp_report(&c0, MEASURED);
    for (int b = 0; b < NBUF; b++) {
        uint32_t v = 0;
        OK(cuMemcpyDtoH(&v, buf[b], sizeof v));
        CHECK_EQ_U(v, want[b]);
    }
    return 0;
}
