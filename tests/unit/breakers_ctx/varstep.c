/*
 * varstep.c — a training step whose launch sequence varies from step to
 * step, run over the simulated GPU with bench/kernels.c's launchers (one
 * shape per process, like a bench/shapes worker): prints the mean step
 * time of the last steps.
 *
 *   varstep SHAPE RATIO STEPS WARMUP
 *
 * Shapes (all the bench's transformer step: an embedding gathered by
 * token, 8 layers forward, the tied head, backward, Adam per tensor; over
 * it reading the embedding in place beats fetching it):
 *   steady   the step as is;
 *   overflow a loss-scale check read back every step; when it finds an
 *            overflow (one step in three, at random) an extra kernel per
 *            gradient rescales it (mixed precision), so the step is 39 or
 *            47 launches;
 *   grow     a buffer allocated afresh every `GROW_EVERY` steps (growN:
 *            every N steps) gets a kernel of its own each step from then
 *            on, after the forward pass (a growing cache);
 *   fresh    a temporary allocated every step (a new chunk: a new
 *            signature), used by one kernel after a forward GEMM chosen at
 *            random, freed at the step's end (freshfix: always after the
 *            fourth).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "../../../bench/workloads.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define LINK_BYTES_PER_NS 55.0   /* the simulator's default link */
#define LAYERS 8
#define TOKENS 256
#define TN 16
#define TM 32
#define WG 8
#define GROW_EVERY 3
#define GROW_MAX 64
#define GROW_BYTES (16 * MiB)

static struct {
    size_t w, a, e, row;
    unsigned vocab;
    void *Wt[LAYERS], *dW[LAYERS], *m[LAYERS], *v[LAYERS];
    void *A[LAYERS + 1], *G[2], *E, *dE, *mE, *vE;
    int32_t *idx, *counter, *flag;
    size_t wbytes[LAYERS];
    void *grown[GROW_MAX];
    int ngrown;
} t;

/* The bench transformer's buffers (53.5 weights' worth), plus a counter
 * and a flag for the overflow check. */
static int setup(wl_ctx *c)
{
    t.w = wl_pages((double)c->working_set / 53.5);
    t.a = wl_pages((double)t.w / 2);
    t.e = 4 * t.w;
    t.row = t.a / TOKENS;
    t.vocab = (unsigned)(t.e / t.row);
    t.E = wl_alloc(c, t.e);
    for (int l = 0; l < LAYERS; l++)
        t.Wt[l] = wl_alloc(c, t.w);
    t.idx = wl_alloc(c, TOKENS * sizeof(int32_t));
    t.counter = wl_alloc(c, 512);
    t.flag = wl_alloc(c, 512);
    for (int l = 0; l <= LAYERS; l++)
        t.A[l] = wl_alloc(c, t.a);
    t.G[0] = wl_alloc(c, t.a);
    t.G[1] = wl_alloc(c, t.a);
    t.dE = wl_alloc(c, t.e);
    for (int l = 0; l < LAYERS; l++) {
        t.dW[l] = wl_alloc(c, t.w);
        t.wbytes[l] = t.w;
    }
    t.mE = wl_alloc(c, t.e);
    t.vE = wl_alloc(c, t.e);
    for (int l = 0; l < LAYERS; l++) {
        t.m[l] = wl_alloc(c, t.w);
        t.v[l] = wl_alloc(c, t.w);
    }
    int32_t zero = 0;
    wl_upload(c, t.counter, &zero, sizeof zero);
    return c->error;
}

/* One step of `shape` (see the top). */
static int step(wl_ctx *c, const char *shape, int s)
{
    bool overflow = strcmp(shape, "overflow") == 0, grow = strncmp(shape, "grow", 4) == 0;
    int every = grow && shape[4] ? atoi(shape + 4) : GROW_EVERY;
    int32_t ids[TOKENS];
    uint64_t rng = 0x51ed27u + (uint64_t)s * 7919u;
    for (int i = 0; i < TOKENS; i++)
        ids[i] = (int32_t)(wl_rand(&rng) % t.vocab);
    wl_upload(c, t.idx, ids, sizeof ids);
    size_t a = t.a, w = t.w, e = t.e;
    wl_gather(c, t.E, t.idx, t.A[0], t.row, TOKENS);
    void *tmp = NULL;
    int at = strcmp(shape, "fresh") == 0 ? (int)(wl_rand(&rng) % LAYERS) : 3;
    if (strncmp(shape, "fresh", 5) == 0 && !c->counting)
        tmp = wl_alloc(c, GROW_BYTES);
    for (int l = 0; l < LAYERS; l++) {
        wl_gemm(c, t.A[l], t.Wt[l], t.A[l + 1], a, w, a, TN, TM, false);
        if (tmp && l == at)
            wl_ew(c, 2, (wl_t[]){{t.A[l + 1], a / 64, SIMGPU_READ}, {tmp, GROW_BYTES, SIMGPU_READ_WRITE}});
    }
    if (grow && !c->counting && s % every == 0 && t.ngrown < GROW_MAX)
        t.grown[t.ngrown++] = wl_alloc(c, GROW_BYTES);
    for (int g = 0; g < t.ngrown; g++)
        wl_ew(c, 2, (wl_t[]){{t.A[LAYERS], a / 64, SIMGPU_READ}, {t.grown[g], GROW_BYTES, SIMGPU_READ_WRITE}});
    wl_gemm(c, t.A[LAYERS], t.E, t.G[0], a, e, a, 4 * TN, TM, false);
    wl_gemm(c, t.G[0], t.E, t.G[1], a, e, a, TN, TM, false);
    wl_gemm(c, t.A[LAYERS], t.G[0], t.dE, a, a, e, WG, 4 * WG, false);
    int cur = 1;
    for (int l = LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, t.G[cur], t.Wt[l], t.G[1 - cur], a, w, a, TN, TM, false);
        wl_gemm(c, t.A[l], t.G[cur], t.dW[l], a, a, w, WG, WG, false);
        cur = 1 - cur;
    }
    wl_scatter_add(c, t.dE, t.idx, t.G[cur], t.row, TOKENS);
    if (overflow) {
        /* The check's answer: one step in three, at random, decided here
         * (the device's answer read back would be the same sequence). */
        uint64_t r = 0x9e37u + (uint64_t)s * 104729u;
        wl_rand(&r);
        bool over = wl_rand(&r) % 3 == 0;
        wl_check_overflow(c, t.dW, t.wbytes, LAYERS, t.counter, t.flag);
        int32_t flag = 0;
        wl_download(c, &flag, t.flag, sizeof flag);
        if (over && !c->counting)
            for (int l = 0; l < LAYERS; l++)
                wl_ew(c, 1, (wl_t[]){{t.dW[l], w, SIMGPU_READ_WRITE}});
    }
    for (int l = 0; l < LAYERS; l++)
        wl_ew(c, 4, (wl_t[]){{t.dW[l], w, SIMGPU_READ}, {t.Wt[l], w, SIMGPU_READ_WRITE}, {t.m[l], w, SIMGPU_READ_WRITE},
                             {t.v[l], w, SIMGPU_READ_WRITE}});
    wl_ew(c, 4, (wl_t[]){{t.dE, e, SIMGPU_READ}, {t.E, e, SIMGPU_READ_WRITE}, {t.mE, e, SIMGPU_READ_WRITE},
                         {t.vE, e, SIMGPU_READ_WRITE}});
    if (tmp) {
        cudaDeviceSynchronize();
        cudaFree(tmp);
    }
    return c->error;
}

/* Sets the shape up, calibrates compute on its first step as bench/shapes
 * does (one step computes as long as its working set takes over the
 * link), runs STEPS steps and prints the mean over those after WARMUP. */
int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: varstep SHAPE RATIO STEPS WARMUP\n");
        return 2;
    }
    const char *shape = argv[1];
    int steps = atoi(argv[3]), warmup = atoi(argv[4]);
    if (wl_register_kernels() != 0 || steps <= warmup || warmup < 1)
        return 2;
    wl_ctx c = {.alloc = "device", .ratio = atof(argv[2]), .seed = 1};
    c.working_set = (uint64_t)(c.ratio * 1024.0 * (double)MiB);
    if (setup(&c) != 0)
        return 1;
    c.counting = true;
    step(&c, shape, 0);
    c.counting = false;
    c.ns_per_unit = c.units > 0 ? ((double)c.working_set / LINK_BYTES_PER_NS) / c.units : 0;
    simgpu_counters c0 = {0}, c1 = {0};
    for (int s = 0; s < steps; s++) {
        if (step(&c, shape, s) != 0 || cudaDeviceSynchronize() != cudaSuccess) {
            printf("RESULT ok=0 error=%d\n", c.error);
            return 1;
        }
        if (s == warmup - 1)
            simgpu_get_counters(-1, &c0);
    }
    simgpu_get_counters(-1, &c1);
    double n = steps - warmup;
    printf("RESULT ok=1 step_ms=%.4f remote=%.1f to_dev=%.1f\n", (c1.modeled_ns - c0.modeled_ns) / 1e6 / n,
           (double)(c1.remote_bytes - c0.remote_bytes) / MiB / n, (double)(c1.bytes_to_device - c0.bytes_to_device) / MiB / n);
    return 0;
}
