/*
 * blind_streams.c — a program whose kernels lmshim never gets to fit,
 * launched on many streams: each launch is one of 3,000 functions drawn
 * at random (seen once or twice each over the run), reads one of 48
 * buffers drawn at random (a GEMM's weight: `passes` passes over it) and
 * runs on one of 8 streams drawn at random. With nothing to act on, the
 * engine can only time the two ways (fetch, or read in place) on the
 * device (src/common/blindways.c).
 *
 * usage: blind_streams RATIO BUDGET_MIB KIND [SEED]
 *   the buffers total RATIO x BUDGET_MIB; KIND: `dear` (8 passes, compute
 *   as long as the link takes for one pass), `mixed` (each function dear
 *   or cheap for good, half each: cheap is one pass and 3x the compute) or
 *   `deepen` (as `dear`, but one pass in the first 6 steps: the kernels
 *   turn dear in place with their compute unchanged);
 *   SEED (default 0) draws other functions, buffers and streams.
 * Prints `step_ms X` (modeled ms a step over the last 6 of 18 steps) and
 * `peak_mib Y`, and checks every kernel's result.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/stream_program.h"

#define NBUF 48
#define NSTREAM 8
#define NAMES 1000     /* kernel names registered; three modules give 3,000 functions */
#define MODULES 3
#define STEPS 18
#define MEASURED 6

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5 || (strcmp(argv[3], "dear") && strcmp(argv[3], "mixed") && strcmp(argv[3], "deepen"))) {
        fprintf(stderr, "usage: blind_streams RATIO BUDGET_MIB dear|mixed|deepen [SEED]\n");
        return 2;
    }
    double ratio = atof(argv[1]);
    uint64_t budget = strtoull(argv[2], NULL, 10) * SP_MiB;
    bool mixed = !strcmp(argv[3], "mixed"), deepen = !strcmp(argv[3], "deepen");
    sp_rng rng = sp_seeded(0x9e3779b97f4a7c15ull, argc == 5 ? strtoull(argv[4], NULL, 10) : 0);
    primary_context(0);

    static char names[NAMES][16];
    static CUfunction fns[NAMES * MODULES];
    sp_functions((simgpu_kernel){.fn = sp_rw_passes, SP_RW_PASSES_PARAMS}, "g", NAMES, names,
                 MODULES, fns);
    CUstream streams[NSTREAM];
    sp_streams(streams, NSTREAM);
    CUdeviceptr buf[NBUF];
    size_t size = sp_buffers(buf, NBUF, budget, ratio);
    unsigned want[NBUF] = {0};

    simgpu_counters c0 = {0};
    for (int step = 0; step < STEPS; step++) {
        for (int i = 0; i < NBUF; i++) {
            int b = (int)sp_draw(&rng, NBUF), f = (int)sp_draw(&rng, NAMES * MODULES);
            CUstream s = streams[sp_draw(&rng, NSTREAM)];
            /* half the functions cheap for good (a hash of the number) */
            bool cheap = mixed && ((uint32_t)f * 2654435761u >> 8) % 2;
            unsigned passes = cheap || (deepen && step < 6) ? 1 : 8;
            double ns = (cheap ? 3.0 : 1.0) * (double)size / SP_LINK;
            void *args[] = {&buf[b], &size, &passes, &ns};
            OK(cuLaunchKernel(fns[f], 64, 1, 1, 256, 1, 1, 0, s, args, NULL));
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
