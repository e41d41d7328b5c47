/*
 * mixed_parts.c — two shapes the engine lost on by 1.5x, launched round
 * robin over several streams, each launch reading and writing the first
 * half or more of one buffer and computing for 0.13x to 1.45x the time
 * the link takes to carry that buffer:
 *
 *   `sizes`: 40 buffers of 15 sizes, from 1 to 16 shares of the working
 *   set (at least 2 MiB), 48 functions of which a third read their buffer
 *   once, a third twice and a third three times; buffer and function
 *   drawn at random. Fetch batches of very different sizes queue behind
 *   each other on the link.
 *   `alt`: 24 buffers of one size; parts of 1,200 launches take turns: a
 *   cycle (buffer k mod 24, function k mod 48, compute by function: a
 *   step the engine learns) then buffer, function and compute drawn at
 *   random (nothing to learn).
 *   `upset3`, `upset1`: 24 buffers of one size; a step of 240 launches in
 *   a fixed order (buffer and function by position, each position's own)
 *   but for 40 launches in its middle drawn at random (an upset: which
 *   launches run there, the data decides), in every third step
 *   (`upset3`) or in every step (`upset1`).
 *   `phase`: 24 buffers of one size; 960 launches in a cycle of 96, then
 *   2,000 in a cycle of 1,000 (buffer and function by position in the
 *   cycle), in turn: an order whose period changes (2,960 launches in
 *   all), which the tests do not hold (docs/PERFORMANCE.md, "Eighteenth
 *   round": over 60 steps the trials of its whole period are still
 *   under way).
 *
 * usage: mixed_parts RATIO BUDGET_MIB sizes|alt|upset3|upset1|phase STREAMS [SEED [STEPS]]
 *   the buffers total RATIO x BUDGET_MIB; SEED (default 0) draws other
 *   sizes of reads, compute and the random launches; STEPS (default 60,
 *   at least 31) steps of 240 launches are run.
 * MP_PER_THREAD=1: each stream's launches come from a thread of its own on
 * its per-thread default stream (launcher, below).
 * Prints `step_ms X` (modeled ms a step of 240 launches over the last 30
 * steps: three turns of `alt`'s parts, ten upsets of `upset3` over the
 * default 60) and `peak_mib Y`, and checks every buffer's count.
 */
#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/stream_program.h"

/* The driver's launch on the per-thread default stream (cuda.h names it
 * only under CUDA_API_PER_THREAD_DEFAULT_STREAM). */
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared, CUstream stream, void **params, void **extra);

/* With MP_PER_THREAD=1 the launches of stream s are issued by thread s
 * on its own per-thread default stream (CU_STREAM_PER_THREAD: one handle
 * for every thread, a stream of each thread's own), one at a time in
 * the order the streams would take: the same program, the streams told
 * apart only by the thread that launches. */
typedef struct launcher {
    pthread_t th;
    pthread_mutex_t m;
    pthread_cond_t cv;
    CUcontext ctx;
    CUfunction f;
    void **args;             /* the launch's parameters (the caller's, while it waits) */
    CUresult r;
    bool busy, quit;
} launcher;

/* A launcher thread: issues each launch it is handed, until told to quit. */
static void *launcher_main(void *arg)
{
    launcher *l = arg;
    OK(cuCtxSetCurrent(l->ctx));
    pthread_mutex_lock(&l->m);
    for (;;) {
        while (!l->busy && !l->quit)
            pthread_cond_wait(&l->cv, &l->m);
        if (l->quit)
            break;
        l->r = cuLaunchKernel_ptsz(l->f, 1, 1, 1, 32, 1, 1, 0, CU_STREAM_PER_THREAD, l->args, NULL);
        l->busy = false;
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->m);
    return NULL;
}

/* Has launcher l issue f(args) and waits until it did; its result. */
static CUresult launch_by(launcher *l, CUfunction f, void **args)
{
    pthread_mutex_lock(&l->m);
    l->f = f, l->args = args, l->busy = true;
    pthread_cond_broadcast(&l->cv);
    while (l->busy)
        pthread_cond_wait(&l->cv, &l->m);
    CUresult r = l->r;
    pthread_mutex_unlock(&l->m);
    return r;
}

#define MAXBUF 40
#define NFN 48
#define MAXSTREAM 64
#define STEP 240
#define STEPS 60
#define MEASURED 30
#define PART 1200
#define UPSET_AT 100   /* an upset's first position in the step */
#define UPSET 40       /* ... its launches */
#define PHASE_A 960    /* `phase`: launches in a cycle of 96, ... */
#define PHASE_B 2000   /* ... then in a cycle of 1,000 */

int main(int argc, char **argv)
{
    int nstream = argc >= 5 ? atoi(argv[4]) : 0;
    const char *kind = argc >= 5 ? argv[3] : "";
    int every = !strcmp(kind, "upset3") ? 3 : !strcmp(kind, "upset1") ? 1 : 0;   /* steps between upsets */
    bool phase = !strcmp(kind, "phase");
    int steps = argc == 7 ? atoi(argv[6]) : STEPS;
    if (argc < 5 || argc > 7 || (strcmp(kind, "sizes") && strcmp(kind, "alt") && !every && !phase) || nstream < 1 ||
        nstream > MAXSTREAM || steps <= MEASURED) {
        fprintf(stderr,
                "usage: mixed_parts RATIO BUDGET_MIB sizes|alt|upset3|upset1|phase STREAMS (1-%d) [SEED [STEPS (%d+)]]\n",
                MAXSTREAM, MEASURED + 1);
        return 2;
    }
    double ratio = atof(argv[1]);
    uint64_t budget = strtoull(argv[2], NULL, 10) * SP_MiB;
    bool sizes = !strcmp(argv[3], "sizes");
    sp_rng rng = sp_seeded(0x9e3779b97f4a7c15ull, argc >= 6 ? strtoull(argv[5], NULL, 10) : 0);
    primary_context(0);

    static char names[NFN][16];
    CUfunction fns[NFN];
    sp_functions((simgpu_kernel){.fn = sp_rw_passes, SP_RW_PASSES_PARAMS}, "rw", NFN, names, 1, fns);
    CUstream streams[MAXSTREAM];
    sp_streams(streams, nstream);
    static launcher by[MAXSTREAM];
    const char *pt = getenv("MP_PER_THREAD");
    bool per_thread = pt && !strcmp(pt, "1");
    for (int s = 0; per_thread && s < nstream; s++) {
        pthread_mutex_init(&by[s].m, NULL);
        pthread_cond_init(&by[s].cv, NULL);
        OK(cuCtxGetCurrent(&by[s].ctx));
        CHECK(pthread_create(&by[s].th, NULL, launcher_main, &by[s]) == 0);
    }
    CUdeviceptr buf[MAXBUF];
    size_t sz[MAXBUF];
    int nbuf = sizes ? MAXBUF : 24;
    if (sizes) {
        double shares = 0;
        for (int b = 0; b < nbuf; b++)
            shares += 1 + (b * 7) % 16;
        for (int b = 0; b < nbuf; b++) {
            sz[b] = (size_t)((double)budget * ratio * (1 + (b * 7) % 16) / shares) & ~(2 * SP_MiB - 1);
            if (sz[b] < 2 * SP_MiB)
                sz[b] = 2 * SP_MiB;
            OK(cuMemAlloc(&buf[b], sz[b]));
            OK(cuMemsetD8(buf[b], 0, sz[b]));
        }
    } else {
        size_t size = sp_buffers(buf, nbuf, budget, ratio);
        for (int b = 0; b < nbuf; b++)
            sz[b] = size;
    }
    uint32_t want[MAXBUF] = {0};

    simgpu_counters c0 = {0};
    uint64_t k = 0;
    for (int step = 0; step < steps; step++) {
        for (int i = 0; i < STEP; i++, k++) {
            bool cycle = phase || (!sizes && (k / PART) % 2 == 0);
            uint64_t j = k;   /* the position whose buffer and function a learnable launch takes */
            if (phase) {
                j = k % (PHASE_A + PHASE_B);
                j = j < PHASE_A ? j % 96 : (j - PHASE_A) % 1000;
            }
            if (every) {
                uint64_t at = k % STEP;
                cycle = !((k / STEP) % (uint64_t)every == (uint64_t)every - 1 && at >= UPSET_AT && at < UPSET_AT + UPSET);
                j = at * 0x9e3779b97f4a7c15ull >> 20;   /* an order of the step's own */
            }
            int b = cycle ? (int)(j % (uint64_t)nbuf) : (int)sp_draw(&rng, (uint64_t)nbuf);
            int f = cycle ? (int)(j % NFN) : (int)sp_draw(&rng, NFN);
            unsigned passes = sizes ? 1 + (unsigned)(f % 3) : 1;
            double share = cycle ? 0.2 + 0.02 * f : 0.13 + (double)sp_draw(&rng, 1000) * 1.32e-3;
            size_t bytes = (sz[b] / 2 + (size_t)sp_draw(&rng, sz[b] / 2)) & ~(size_t)4095;
            double ns = share * (double)sz[b] / SP_LINK;
            void *args[] = {&buf[b], &bytes, &passes, &ns};
            int s = (int)(k % (uint64_t)nstream);
            OK(per_thread ? launch_by(&by[s], fns[f], args)
                          : cuLaunchKernel(fns[f], 1, 1, 1, 32, 1, 1, 0, streams[s], args, NULL));
            want[b]++;
        }
        sp_step_end(step, steps, MEASURED, &c0);
    }
    sp_report(&c0, MEASURED);
    for (int b = 0; b < nbuf; b++) {
        uint32_t v = 0;
        OK(cuMemcpyDtoH(&v, buf[b], sizeof v));
        CHECK_EQ_U(v, want[b]);
    }
    for (int s = 0; per_thread && s < nstream; s++) {
        pthread_mutex_lock(&by[s].m);
        by[s].quit = true;
        pthread_cond_broadcast(&by[s].cv);
        pthread_mutex_unlock(&by[s].m);
        pthread_join(by[s].th, NULL);
    }
    return 0;
}
