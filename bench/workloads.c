/*
 * workloads.c — the workload shapes of bench/shapes (workloads.h): a
 * transformer step, random access, many small chunks, arena-sized chunks,
 * a PyTorch caching-allocator step, train/eval alternation, a
 * data-dependent extra kernel, a working set that grows, a forward pass
 * alone (inference), and one with small kernels between its GEMMs
 * (decoder).
 *
 * Each shape keeps its buffers in a static state (one workload per
 * process, never freed: the process ends with the run). Sizes come from
 * c->working_set; random choices from wl_rand seeded by the step (and the
 * seed), so every mode runs the same kernels on the same data.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "simgpu.h"
#include "workloads.h"

#define R SIMGPU_READ
#define W SIMGPU_WRITE
#define RW SIMGPU_READ_WRITE

/* The state of wl_rand for a seeded shape's step: the same draws for
 * every mode of one seed. */
static uint64_t step_rng(const wl_ctx *c, int step)
{
    return (uint64_t)c->seed * 1000003u + (uint64_t)step * 7919u + 1;
}

/* GEMM tiles of a training step: 16 tiles across the output's columns, 32
 * down its rows (4096 tokens in tiles of 128): the weight operand is read
 * 32 times, the activation operand 16 times. Weight gradients: 8 x 8. */
#define TN 16
#define TM 32
#define WG 8

/* ---- (a) transformer step ----------------------------------------------- */

#define TF_LAYERS 8
#define TF_TOKENS 256

static struct {
    size_t w, a, e, row;                  /* bytes: layer weight, activation, embedding, one row */
    unsigned vocab;                       /* rows of the embedding */
    void *Wt[TF_LAYERS], *dW[TF_LAYERS], *m[TF_LAYERS], *v[TF_LAYERS];
    void *A[TF_LAYERS + 1], *G[2], *E, *dE, *mE, *vE;
    int32_t *idx;                         /* the step's token ids (device) */
} tf;

/* Embedding 4 weights, 8 layers; each with a gradient and two moments;
 * 9 saved activations and 2 gradient buffers of half a weight:
 * 4 x (8 + 4) w + 11 w / 2 = 53.5 w. */
static int tf_setup(wl_ctx *c)
{
    tf.w = wl_pages((double)c->working_set / 53.5);
    tf.a = wl_pages((double)tf.w / 2);
    tf.e = 4 * tf.w;
    tf.row = tf.a / TF_TOKENS;
    tf.vocab = (unsigned)(tf.e / tf.row);
    /* Model, then activations (first forward), gradients, moments. */
    tf.E = wl_alloc(c, tf.e);
    for (int l = 0; l < TF_LAYERS; l++)
        tf.Wt[l] = wl_alloc(c, tf.w);
    tf.idx = wl_alloc(c, TF_TOKENS * sizeof(int32_t));
    for (int l = 0; l <= TF_LAYERS; l++)
        tf.A[l] = wl_alloc(c, tf.a);
    tf.G[0] = wl_alloc(c, tf.a);
    tf.G[1] = wl_alloc(c, tf.a);
    tf.dE = wl_alloc(c, tf.e);
    for (int l = 0; l < TF_LAYERS; l++)
        tf.dW[l] = wl_alloc(c, tf.w);
    tf.mE = wl_alloc(c, tf.e);
    tf.vE = wl_alloc(c, tf.e);
    for (int l = 0; l < TF_LAYERS; l++) {
        tf.m[l] = wl_alloc(c, tf.w);
        tf.v[l] = wl_alloc(c, tf.w);
    }
    return c->error;
}

/* Embedding, 8 layers forward, the tied output head, its backward, 8
 * layers backward in reverse, the embedding's gradient, Adam per tensor. */
static int tf_step(wl_ctx *c, int step)
{
    int32_t ids[TF_TOKENS];
    uint64_t rng = 0x51ed27u + (uint64_t)step * 7919u;
    for (int i = 0; i < TF_TOKENS; i++)
        ids[i] = (int32_t)(wl_rand(&rng) % tf.vocab);
    wl_upload(c, tf.idx, ids, sizeof ids);
    size_t a = tf.a, w = tf.w, e = tf.e;
    wl_gather(c, tf.E, tf.idx, tf.A[0], tf.row, TF_TOKENS);
    for (int l = 0; l < TF_LAYERS; l++)
        wl_gemm(c, tf.A[l], tf.Wt[l], tf.A[l + 1], a, w, a, TN, TM, false);
    wl_gemm(c, tf.A[TF_LAYERS], tf.E, tf.G[0], a, e, a, 4 * TN, TM, false);      /* logits */
    wl_gemm(c, tf.G[0], tf.E, tf.G[1], a, e, a, TN, TM, false);                  /* d input */
    wl_gemm(c, tf.A[TF_LAYERS], tf.G[0], tf.dE, a, a, e, WG, 4 * WG, false);     /* d E */
    int cur = 1;
    for (int l = TF_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, tf.G[cur], tf.Wt[l], tf.G[1 - cur], a, w, a, TN, TM, false);
        wl_gemm(c, tf.A[l], tf.G[cur], tf.dW[l], a, a, w, WG, WG, false);
        cur = 1 - cur;
    }
    wl_scatter_add(c, tf.dE, tf.idx, tf.G[cur], tf.row, TF_TOKENS);
    for (int l = 0; l < TF_LAYERS; l++)
        wl_ew(c, 4, (wl_t[]){{tf.dW[l], w, R}, {tf.Wt[l], w, RW}, {tf.m[l], w, RW}, {tf.v[l], w, RW}});
    wl_ew(c, 4, (wl_t[]){{tf.dE, e, R}, {tf.E, e, RW}, {tf.mE, e, RW}, {tf.vE, e, RW}});
    return c->error;
}

/* ---- (b) random access --------------------------------------------------- */

#define RND_BUFS 32
#define RND_LAUNCHES 64

static struct {
    size_t s;
    void *b[RND_BUFS];
} rnd;

/* Allocates b[0..n) of `bytes` each, in order; returns c->error. */
static int alloc_each(wl_ctx *c, void **b, int n, size_t bytes)
{
    for (int i = 0; i < n; i++)
        b[i] = wl_alloc(c, bytes);
    return c->error;
}

static int rnd_setup(wl_ctx *c)
{
    rnd.s = wl_pages((double)c->working_set / RND_BUFS);
    return alloc_each(c, rnd.b, RND_BUFS, rnd.s);
}

/* 64 kernels, each reading two buffers and writing a third, all chosen at
 * random afresh every step: nothing repeats. */
static int rnd_step(wl_ctx *c, int step)
{
    uint64_t rng = step_rng(c, step);
    for (int k = 0; k < RND_LAUNCHES; k++) {
        int x = (int)(wl_rand(&rng) % RND_BUFS), y, z;
        do
            y = (int)(wl_rand(&rng) % RND_BUFS);
        while (y == x);
        do
            z = (int)(wl_rand(&rng) % RND_BUFS);
        while (z == x || z == y);
        wl_ew(c, 3, (wl_t[]){{rnd.b[x], rnd.s, R}, {rnd.b[y], rnd.s, R}, {rnd.b[z], rnd.s, W}});
    }
    return c->error;
}

/* ---- (c) many chunks, (d) arena-sized chunks ----------------------------- */

/* Their size is fixed (the table's fixed_bytes: the device pages they take,
 * with their two activation buffers); the bench sets the budget to it over
 * the ratio. */

#define MANY_CHUNKS 2000
#define MANY_CHUNK (9 * WL_MIB)
#define ARENAS 8
#define ARENA (2250 * WL_MIB)
#define ARENA_TENSORS 25                      /* 90 MiB each */

static struct {
    int n;                 /* tensors */
    size_t t, act;         /* bytes: one tensor, one activation */
    void **T;              /* the tensors (interior pointers for arenas) */
    void *act0, *act1;
} seq;

/* Forward reads every tensor in order, backward in reverse, each followed
 * by its in-place update: 3 launches per tensor. */
static int seq_step(wl_ctx *c, int step)
{
    (void)step;
    for (int i = 0; i < seq.n; i++)
        wl_gemm(c, i % 2 ? seq.act1 : seq.act0, seq.T[i], i % 2 ? seq.act0 : seq.act1, seq.act, seq.t, seq.act,
                TN / 4, TM / 4, false);
    for (int i = seq.n - 1; i >= 0; i--) {
        wl_gemm(c, i % 2 ? seq.act0 : seq.act1, seq.T[i], i % 2 ? seq.act1 : seq.act0, seq.act, seq.t, seq.act,
                TN / 4, TM / 4, false);
        wl_ew(c, 2, (wl_t[]){{i % 2 ? seq.act1 : seq.act0, seq.act, R}, {seq.T[i], seq.t, RW}});
    }
    return c->error;
}

static int many_setup(wl_ctx *c)
{
    seq.n = MANY_CHUNKS;
    seq.t = MANY_CHUNK;
    seq.act = 4 * WL_MIB;
    seq.act0 = wl_alloc(c, seq.act);
    seq.act1 = wl_alloc(c, seq.act);
    seq.T = calloc((size_t)seq.n, sizeof *seq.T);
    if (!seq.T)
        return 2;
    for (int i = 0; i < seq.n && !c->error; i++)
        seq.T[i] = wl_alloc(c, seq.t);
    return c->error;
}

static int arena_setup(wl_ctx *c)
{
    seq.n = ARENAS * ARENA_TENSORS;
    seq.t = ARENA / ARENA_TENSORS;
    seq.act = 8 * WL_MIB;
    seq.act0 = wl_alloc(c, seq.act);
    seq.act1 = wl_alloc(c, seq.act);
    seq.T = calloc((size_t)seq.n, sizeof *seq.T);
    if (!seq.T)
        return 2;
    for (int k = 0; k < ARENAS && !c->error; k++) {
        char *arena = wl_alloc(c, ARENA);
        for (int i = 0; i < ARENA_TENSORS && arena; i++)
            seq.T[k * ARENA_TENSORS + i] = arena + (size_t)i * seq.t;
    }
    return c->error;
}

/* ---- (e) a PyTorch caching-allocator step ------------------------------- */

/* Segments as PyTorch's caching allocator makes them: requests up to 1 MiB
 * from 2 MiB segments, up to 10 MiB from 20 MiB segments, larger ones in a
 * segment of their own (rounded to 2 MiB); blocks of 512 bytes. */
typedef struct seg_pool {
    char *cur;
    size_t left;
} seg_pool;

static seg_pool small_pool, large_pool;
static uint64_t *pt_plan;   /* non-NULL: only add up segment bytes here */

/* A new segment of `bytes`, or its bytes added to the plan. */
static void *pt_segment(wl_ctx *c, size_t bytes)
{
    if (!pt_plan)
        return wl_alloc(c, bytes);
    *pt_plan += bytes;
    return (void *)(uintptr_t)(1ull << 40);   /* never used: the plan launches nothing */
}

/* Suballocates `bytes` from the pools; NULL on failure (c->error set). */
static void *pt_alloc(wl_ctx *c, size_t bytes)
{
    bytes = (bytes + 511) / 512 * 512;
    if (bytes > 10 * WL_MIB)
        return pt_segment(c, (bytes + 2 * WL_MIB - 1) / (2 * WL_MIB) * 2 * WL_MIB);
    seg_pool *p = bytes <= WL_MIB ? &small_pool : &large_pool;
    size_t seg = bytes <= WL_MIB ? 2 * WL_MIB : 20 * WL_MIB;
    if (p->left < bytes) {
        p->cur = pt_segment(c, seg);
        p->left = p->cur ? seg : 0;
        if (!p->cur)
            return NULL;
    }
    void *r = p->cur;
    p->cur += bytes;
    p->left -= bytes;
    return r;
}

enum { QKV, BQKV, PROJ, BPROJ, LN1W, LN1B, LN2W, LN2B, FC1, BFC1, FC2, BFC2, NPARAM };
enum { X_IN, LN1O, QKVO, ATTN, PROJO, XMID, LN2O, FC1O, GELU, FC2O, NACT };

#define PT_MAX_LAYERS 24

static struct {
    int layers, micro;
    size_t h4, a;                           /* bytes: one hidden vector of floats, one activation */
    size_t pbytes[PT_MAX_LAYERS * NPARAM];
    void *p[4][PT_MAX_LAYERS * NPARAM];     /* params, grads, first and second moments */
    void *act[PT_MAX_LAYERS + 1][NACT];
    void *dx, *dx2, *dln, *dattn, *dqkv, *dgelu;
} pt;

/* Allocates the model, activations, gradients and moments for hidden size
 * h and the working set's activation size. */
static void pt_allocate(wl_ctx *c, size_t h, double share)
{
    int L = pt.layers;
    pt.h4 = h * 4;
    pt.a = (size_t)(share * 0.2 * (double)c->working_set / (15.0 * L)) / 512 * 512;
    size_t hh = h * pt.h4;
    const size_t sizes[NPARAM] = {3 * hh, 3 * pt.h4, hh, pt.h4, pt.h4, pt.h4, pt.h4, pt.h4,
                                  4 * hh, 4 * pt.h4, 4 * hh, pt.h4};
    const size_t act_mult[NACT] = {1, 1, 3, 1, 1, 1, 1, 4, 4, 1};
    for (int k = 0; k < L * NPARAM; k++) {                  /* the model */
        pt.pbytes[k] = sizes[k % NPARAM];
        pt.p[0][k] = pt_alloc(c, pt.pbytes[k]);
    }
    for (int l = 0; l <= L; l++)                            /* the first forward */
        for (int j = 0; j < (l < L ? NACT : 1); j++)
            pt.act[l][j] = pt_alloc(c, act_mult[j] * pt.a);
    pt.dx = pt_alloc(c, pt.a);
    pt.dx2 = pt_alloc(c, pt.a);
    pt.dln = pt_alloc(c, pt.a);
    pt.dattn = pt_alloc(c, pt.a);
    pt.dqkv = pt_alloc(c, 3 * pt.a);
    pt.dgelu = pt_alloc(c, 4 * pt.a);
    for (int d = 1; d < 4; d++)                             /* gradients, then Adam's moments */
        for (int k = 0; k < L * NPARAM; k++)
            pt.p[d][k] = pt_alloc(c, pt.pbytes[k]);
}

/* Four copies of 12 h^2 floats per layer take 80% of the working set,
 * activations (15 a per layer) the rest; both shrink until the segments
 * the caching allocator makes fit in the working set. */
static int pt_setup(wl_ctx *c)
{
    pt.layers = c->quick ? 4 : PT_MAX_LAYERS;
    pt.micro = c->quick ? 2 : 15;
    double share = 1;
    for (;;) {
        size_t h = (size_t)(floor(sqrt(share * 0.8 * (double)c->working_set / (192.0 * pt.layers)) / 8) * 8);
        uint64_t total = 0;
        pt_plan = &total;
        small_pool = large_pool = (seg_pool){0};
        pt_allocate(c, h, share);
        pt_plan = NULL;
        small_pool = large_pool = (seg_pool){0};
        if (total <= c->working_set || share < 0.5) {
            pt_allocate(c, h, share);
            return c->error;
        }
        share *= 0.98;
    }
}

/* One microbatch's forward and backward: 11 + 17 kernels per layer. */
static void pt_micro(wl_ctx *c, bool accumulate)
{
    size_t a = pt.a, h4 = pt.h4;
    for (int l = 0; l < pt.layers; l++) {
        void **P = &pt.p[0][l * NPARAM], **x = pt.act[l];
        size_t *s = &pt.pbytes[l * NPARAM];
        wl_ew(c, 4, (wl_t[]){{x[X_IN], a, R}, {P[LN1W], h4, R}, {P[LN1B], h4, R}, {x[LN1O], a, W}});
        wl_gemm(c, x[LN1O], P[QKV], x[QKVO], a, s[QKV], 3 * a, TN, TM, false);
        wl_ew(c, 2, (wl_t[]){{x[QKVO], 3 * a, RW}, {P[BQKV], s[BQKV], R}});
        wl_ew(c, 2, (wl_t[]){{x[QKVO], 3 * a, R}, {x[ATTN], a, W}});
        wl_gemm(c, x[ATTN], P[PROJ], x[PROJO], a, s[PROJ], a, TN, TM, false);
        wl_ew(c, 4, (wl_t[]){{x[PROJO], a, R}, {P[BPROJ], h4, R}, {x[X_IN], a, R}, {x[XMID], a, W}});
        wl_ew(c, 4, (wl_t[]){{x[XMID], a, R}, {P[LN2W], h4, R}, {P[LN2B], h4, R}, {x[LN2O], a, W}});
        wl_gemm(c, x[LN2O], P[FC1], x[FC1O], a, s[FC1], 4 * a, TN, TM, false);
        wl_ew(c, 3, (wl_t[]){{x[FC1O], 4 * a, R}, {P[BFC1], s[BFC1], R}, {x[GELU], 4 * a, W}});
        wl_gemm(c, x[GELU], P[FC2], x[FC2O], 4 * a, s[FC2], a, TN, TM, false);
        wl_ew(c, 4, (wl_t[]){{x[FC2O], a, R}, {P[BFC2], h4, R}, {x[XMID], a, R}, {pt.act[l + 1][X_IN], a, W}});
    }
    for (int l = pt.layers - 1; l >= 0; l--) {
        void **P = &pt.p[0][l * NPARAM], **D = &pt.p[1][l * NPARAM], **x = pt.act[l];
        size_t *s = &pt.pbytes[l * NPARAM];
        bool acc = accumulate;
        wl_ew(c, 2, (wl_t[]){{pt.dx, a, R}, {D[BFC2], h4, acc ? RW : W}});
        wl_gemm(c, pt.dx, P[FC2], pt.dgelu, a, s[FC2], 4 * a, TN, TM, false);
        wl_gemm(c, x[GELU], pt.dx, D[FC2], 4 * a, a, s[FC2], WG, WG, acc);
        wl_ew(c, 3, (wl_t[]){{pt.dgelu, 4 * a, RW}, {x[FC1O], 4 * a, R}, {D[BFC1], s[BFC1], acc ? RW : W}});
        wl_gemm(c, pt.dgelu, P[FC1], pt.dln, 4 * a, s[FC1], a, TN, TM, false);
        wl_gemm(c, x[LN2O], pt.dgelu, D[FC1], a, 4 * a, s[FC1], WG, WG, acc);
        wl_ew(c, 6, (wl_t[]){{pt.dln, a, R}, {x[XMID], a, R}, {P[LN2W], h4, R}, {D[LN2W], h4, acc ? RW : W},
                             {D[LN2B], h4, acc ? RW : W}, {pt.dx2, a, W}});
        wl_ew(c, 2, (wl_t[]){{pt.dx, a, R}, {pt.dx2, a, RW}});
        wl_ew(c, 2, (wl_t[]){{pt.dx2, a, R}, {D[BPROJ], h4, acc ? RW : W}});
        wl_gemm(c, pt.dx2, P[PROJ], pt.dattn, a, s[PROJ], a, TN, TM, false);
        wl_gemm(c, x[ATTN], pt.dx2, D[PROJ], a, a, s[PROJ], WG, WG, acc);
        wl_ew(c, 3, (wl_t[]){{pt.dattn, a, R}, {x[QKVO], 3 * a, R}, {pt.dqkv, 3 * a, W}});
        wl_ew(c, 2, (wl_t[]){{pt.dqkv, 3 * a, R}, {D[BQKV], s[BQKV], acc ? RW : W}});
        wl_gemm(c, pt.dqkv, P[QKV], pt.dln, 3 * a, s[QKV], a, TN, TM, false);
        wl_gemm(c, x[LN1O], pt.dqkv, D[QKV], a, 3 * a, s[QKV], WG, WG, acc);
        wl_ew(c, 6, (wl_t[]){{pt.dln, a, R}, {x[X_IN], a, R}, {P[LN1W], h4, R}, {D[LN1W], h4, acc ? RW : W},
                             {D[LN1B], h4, acc ? RW : W}, {pt.dx, a, W}});
        wl_ew(c, 2, (wl_t[]){{pt.dx2, a, R}, {pt.dx, a, RW}});
    }
}

/* Gradient accumulation over the microbatches, then one fused Adam over
 * every parameter (8 launches of 36 tensors for 24 layers). */
static int pt_step(wl_ctx *c, int step)
{
    (void)step;
    for (int mb = 0; mb < pt.micro; mb++)
        pt_micro(c, mb > 0);
    void **const lists[4] = {pt.p[0], pt.p[1], pt.p[2], pt.p[3]};
    wl_multi_adam(c, lists, pt.pbytes, pt.layers * NPARAM);
    return c->error;
}

/* ---- (f) train/eval alternation (a convolutional network) ---------------- */

#define CNN_LAYERS 6

static struct {
    size_t f, a;
    void *F[CNN_LAYERS], *dF[CNN_LAYERS], *mom[CNN_LAYERS];
    void *A[CNN_LAYERS + 1], *G[2], *E[2];
} cnn;

/* Filters, gradients, momentum (18 f), 7 saved activations, 2 gradient
 * and 2 evaluation buffers (11 a, a = f). */
static int cnn_setup(wl_ctx *c)
{
    cnn.f = wl_pages((double)c->working_set / 29);
    cnn.a = cnn.f;
    for (int l = 0; l < CNN_LAYERS; l++)
        cnn.F[l] = wl_alloc(c, cnn.f);
    for (int l = 0; l <= CNN_LAYERS; l++)
        cnn.A[l] = wl_alloc(c, cnn.a);
    for (int i = 0; i < 2; i++)
        cnn.G[i] = wl_alloc(c, cnn.a);
    for (int l = 0; l < CNN_LAYERS; l++) {
        cnn.dF[l] = wl_alloc(c, cnn.f);
        cnn.mom[l] = wl_alloc(c, cnn.f);
    }
    for (int i = 0; i < 2; i++)
        cnn.E[i] = wl_alloc(c, cnn.a);
    return c->error;
}

/* Two training iterations (forward, backward, SGD with momentum), then an
 * evaluation over two batches (forward only, its own buffers). Filters are
 * re-read once per tile row of the output (16). */
static int cnn_step(wl_ctx *c, int step)
{
    (void)step;
    size_t f = cnn.f, a = cnn.a;
    for (int it = 0; it < 2; it++) {
        for (int l = 0; l < CNN_LAYERS; l++)
            wl_conv(c, cnn.A[l], cnn.F[l], cnn.A[l + 1], a, f, a, TN / 2, TM / 2, false);
        int cur = 0;
        for (int l = CNN_LAYERS - 1; l >= 0; l--) {
            wl_conv(c, cnn.G[cur], cnn.F[l], cnn.G[1 - cur], a, f, a, TN / 2, TM / 2, false);
            wl_conv(c, cnn.A[l], cnn.G[cur], cnn.dF[l], a, a, f, WG, WG, false);
            wl_ew(c, 3, (wl_t[]){{cnn.dF[l], f, R}, {cnn.mom[l], f, RW}, {cnn.F[l], f, RW}});
            cur = 1 - cur;
        }
    }
    for (int b = 0; b < 2; b++)
        for (int l = 0; l < CNN_LAYERS; l++)
            wl_conv(c, cnn.E[l % 2], cnn.F[l], cnn.E[1 - l % 2], a, f, a, TN / 2, TM / 2, false);
    return c->error;
}

/* ---- (g) a data-dependent extra kernel ----------------------------------- */

#define DD_LAYERS 8

static struct {
    size_t w, a;
    void *Wt[DD_LAYERS], *dW[DD_LAYERS], *m[DD_LAYERS], *v[DD_LAYERS];
    void *A[DD_LAYERS + 1], *G[2];
    int32_t *counter, *flag;
    size_t wbytes[DD_LAYERS];
} dd;

/* 8 layers with gradient and two moments (32 w), 9 activations and 2
 * gradient buffers of half a weight: 37.5 w. */
static int dd_setup(wl_ctx *c)
{
    dd.w = wl_pages((double)c->working_set / 37.5);
    dd.a = wl_pages((double)dd.w / 2);
    for (int l = 0; l < DD_LAYERS; l++)
        dd.Wt[l] = wl_alloc(c, dd.w);
    dd.counter = wl_alloc(c, 512);
    dd.flag = wl_alloc(c, 512);
    for (int l = 0; l <= DD_LAYERS; l++)
        dd.A[l] = wl_alloc(c, dd.a);
    dd.G[0] = wl_alloc(c, dd.a);
    dd.G[1] = wl_alloc(c, dd.a);
    for (int l = 0; l < DD_LAYERS; l++) {
        dd.dW[l] = wl_alloc(c, dd.w);
        dd.wbytes[l] = dd.w;
    }
    for (int l = 0; l < DD_LAYERS; l++) {
        dd.m[l] = wl_alloc(c, dd.w);
        dd.v[l] = wl_alloc(c, dd.w);
    }
    int32_t zero[2] = {0, 0};
    wl_upload(c, dd.counter, zero, sizeof zero[0]);
    return c->error;
}

/* Forward, backward, an overflow check over the gradients whose flag the
 * host reads back; when set (about one step in three, decided on the
 * device), an extra kernel per gradient rescales it; then fused Adam. */
static int dd_step(wl_ctx *c, int step)
{
    (void)step;
    size_t a = dd.a, w = dd.w;
    for (int l = 0; l < DD_LAYERS; l++)
        wl_gemm(c, dd.A[l], dd.Wt[l], dd.A[l + 1], a, w, a, TN, TM, false);
    int cur = 0;
    for (int l = DD_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, dd.G[cur], dd.Wt[l], dd.G[1 - cur], a, w, a, TN, TM, false);
        wl_gemm(c, dd.A[l], dd.G[cur], dd.dW[l], a, a, w, WG, WG, false);
        cur = 1 - cur;
    }
    wl_check_overflow(c, dd.dW, dd.wbytes, DD_LAYERS, dd.counter, dd.flag);
    int32_t flag = 0;
    wl_download(c, &flag, dd.flag, sizeof flag);
    if (flag)
        for (int l = 0; l < DD_LAYERS; l++)
            wl_ew(c, 1, (wl_t[]){{dd.dW[l], w, RW}});
    void **const lists[4] = {dd.Wt, dd.dW, dd.m, dd.v};
    wl_multi_adam(c, lists, dd.wbytes, DD_LAYERS);
    return c->error;
}

/* ---- (h) a working set that grows step by step --------------------------- */

#define GR_LAYERS 8
#define GR_STEPS 8

static struct {
    size_t w, blk, q;
    int nblk;                               /* cache blocks per layer so far */
    void *Wt[GR_LAYERS], *Q[2];
    void *cache[GR_LAYERS][GR_STEPS];
} gr;

/* Weights take 40% of the final working set, the attention cache the
 * rest, one block per layer added at each of the 8 steps. */
static int gr_setup(wl_ctx *c)
{
    gr.w = wl_pages(0.4 * (double)c->working_set / GR_LAYERS);
    gr.blk = wl_pages(0.6 * (double)c->working_set / (GR_LAYERS * GR_STEPS));
    gr.q = 2 * WL_MIB;
    for (int l = 0; l < GR_LAYERS; l++)
        gr.Wt[l] = wl_alloc(c, gr.w);
    gr.Q[0] = wl_alloc(c, gr.q);
    gr.Q[1] = wl_alloc(c, gr.q);
    return c->error;
}

/* Step s: each layer appends a cache block (allocated now), then per layer
 * a projection GEMM (weights read 4 times) and one attention kernel per
 * cache block so far (flash-decoding style splits). */
static int gr_step(wl_ctx *c, int step)
{
    int nblk = step + 1 < GR_STEPS ? step + 1 : GR_STEPS;
    if (!c->counting)
        for (; gr.nblk < nblk; gr.nblk++)
            for (int l = 0; l < GR_LAYERS; l++)
                gr.cache[l][gr.nblk] = wl_alloc(c, gr.blk);
    if (c->error)
        return c->error;
    for (int l = 0; l < GR_LAYERS; l++) {
        wl_gemm(c, gr.Q[l % 2], gr.Wt[l], gr.Q[1 - l % 2], gr.q, gr.w, gr.q, TN, 4, false);
        for (int b = 0; b < nblk; b++)
            wl_ew(c, 3, (wl_t[]){{gr.Q[1 - l % 2], gr.q / 8, R}, {gr.cache[l][b], gr.blk, b == nblk - 1 ? RW : R},
                                 {gr.Q[1 - l % 2], gr.q / 8, RW}});
    }
    return c->error;
}

/* ---- (i) inference and (j) a decoder: forward only ----------------------- */

#define FW_LAYERS 24
#define DEC_EW 3

static struct {
    size_t w, a;
    void *Wt[FW_LAYERS], *A[2];
} fw;

/* 24 layer weights and two activation buffers of an eighth of a weight:
 * every weight is used by one kernel a step. */
static int fw_setup(wl_ctx *c)
{
    fw.w = wl_pages((double)c->working_set / (FW_LAYERS + 0.25));
    fw.a = wl_pages((double)fw.w / 8);
    for (int l = 0; l < FW_LAYERS; l++)
        fw.Wt[l] = wl_alloc(c, fw.w);
    fw.A[0] = wl_alloc(c, fw.a);
    fw.A[1] = wl_alloc(c, fw.a);
    return c->error;
}

/* A batch through the 24 layers: per layer one GEMM (its weight re-read
 * per tile row of the output, as a batched forward pass does), and for
 * the decoder three elementwise kernels over the activations after it (a
 * norm, an activation function, a residual add). */
static int fw_layers(wl_ctx *c, int ew)
{
    for (int l = 0; l < FW_LAYERS; l++) {
        void *x = fw.A[l % 2], *y = fw.A[1 - l % 2];
        wl_gemm(c, x, fw.Wt[l], y, fw.a, fw.w, fw.a, TN, TM, false);
        for (int k = 0; k < ew; k++)
            wl_ew(c, 2, (wl_t[]){{x, fw.a, R}, {y, fw.a, RW}});
    }
    return c->error;
}

/* Inference: the GEMMs back to back. */
static int in_step(wl_ctx *c, int step)
{
    (void)step;
    return fw_layers(c, 0);
}

/* A decoder: each GEMM followed by three small kernels. */
static int dec_step(wl_ctx *c, int step)
{
    (void)step;
    return fw_layers(c, DEC_EW);
}

/* ---- (k) churn, (l) experts, (m) deep, (n) wide: re-reads, little to learn */

#define CH_BUFS 48
#define CH_PASSES 8
#define SMALL (2 * WL_MIB)   /* the activation buffers of these shapes */

/* Allocates the two small activation buffers of a shape below; returns
 * the bytes left of the working set for its n buffers, per buffer. */
static size_t small_pair(wl_ctx *c, void **x, void **y, int n)
{
    *x = wl_alloc(c, SMALL);
    *y = wl_alloc(c, SMALL);
    return wl_pages((double)(c->working_set - 2 * SMALL) / n);
}

static struct {
    size_t s;
    void *b[CH_BUFS], *x, *y;
} ch;

static int ch_setup(wl_ctx *c)
{
    ch.s = small_pair(c, &ch.x, &ch.y, CH_BUFS);
    return c->error;
}

/* A program without a caching allocator: each step frees the buffers of
 * the last one and allocates its own afresh (new chunks every step, never
 * seen before), then reads each with a GEMM that re-reads it 8 times. */
static int ch_step(wl_ctx *c, int step)
{
    (void)step;
    if (!c->counting)
        for (int i = 0; i < CH_BUFS; i++) {
            wl_free(c, ch.b[i], ch.s);
            ch.b[i] = wl_alloc(c, ch.s);
        }
    if (c->error)
        return c->error;
    for (int i = 0; i < CH_BUFS; i++)
        wl_gemm(c, ch.x, ch.b[i], ch.y, SMALL, ch.s, SMALL, 1, CH_PASSES, false);
    return c->error;
}

#define EX_EXPERTS 48

static struct {
    size_t w;
    void *Wt[EX_EXPERTS], *x, *y;
} ex;

static int ex_setup(wl_ctx *c)
{
    ex.w = small_pair(c, &ex.x, &ex.y, EX_EXPERTS);
    return alloc_each(c, ex.Wt, EX_EXPERTS, ex.w);
}

/* A mixture-of-experts layer: the router sends each step's tokens to
 * every expert, in a new random order every step (nothing repeats), and
 * expert e gets 2, 4, 6 or 8 tiles of them: its GEMM re-reads its weight
 * that many times. */
static int ex_step(wl_ctx *c, int step)
{
    uint64_t rng = step_rng(c, step);
    int order[EX_EXPERTS];
    for (int e = 0; e < EX_EXPERTS; e++)
        order[e] = e;
    for (int e = EX_EXPERTS - 1; e > 0; e--) {   /* a random permutation */
        int k = (int)(wl_rand(&rng) % (uint32_t)(e + 1)), t = order[e];
        order[e] = order[k];
        order[k] = t;
    }
    for (int i = 0; i < EX_EXPERTS; i++) {
        int e = order[i];
        wl_gemm(c, ex.x, ex.Wt[e], ex.y, SMALL, ex.w, SMALL, 1, 2 * (unsigned)(e % 4 + 1), false);
    }
    return c->error;
}

#define DEEP_LAYERS 96
#define DEEP_PASSES 8

static struct {
    size_t w;
    void *Wt[DEEP_LAYERS], *A[2];
} dp;

static int dp_setup(wl_ctx *c)
{
    dp.w = small_pair(c, &dp.A[0], &dp.A[1], DEEP_LAYERS);
    return alloc_each(c, dp.Wt, DEEP_LAYERS, dp.w);
}

/* A deep network forward: 96 layers in a fixed order, each one GEMM
 * re-reading its weight 8 times (a small batch: few tiles). */
static int dp_step(wl_ctx *c, int step)
{
    (void)step;
    for (int l = 0; l < DEEP_LAYERS; l++)
        wl_gemm(c, dp.A[l % 2], dp.Wt[l], dp.A[1 - l % 2], SMALL, dp.w, SMALL, 1, DEEP_PASSES, false);
    return c->error;
}

#define WIDE_BUFS 48
#define WIDE_READS 5
#define WIDE_LAUNCHES 16

static struct {
    size_t s;
    void *b[WIDE_BUFS], *y;
} wd;

static int wd_setup(wl_ctx *c)
{
    wd.y = wl_alloc(c, SMALL);
    wd.s = wl_pages((double)(c->working_set - SMALL) / WIDE_BUFS);
    return alloc_each(c, wd.b, WIDE_BUFS, wd.s);
}

/* 16 reductions a step, each reading 5 of the 48 buffers once (chosen at
 * random) into a small output: every operand streamed once, no re-reads. */
static int wd_step(wl_ctx *c, int step)
{
    uint64_t rng = step_rng(c, step);
    for (int k = 0; k < WIDE_LAUNCHES; k++) {
        wl_t t[WIDE_READS + 1];
        for (int i = 0; i < WIDE_READS; i++) {
            int b, dup;
            do {
                b = (int)(wl_rand(&rng) % WIDE_BUFS);
                dup = 0;
                for (int j = 0; j < i; j++)
                    dup |= t[j].p == wd.b[b];
            } while (dup);
            t[i] = (wl_t){wd.b[b], wd.s, R};
        }
        t[WIDE_READS] = (wl_t){wd.y, SMALL, RW};
        wl_ew(c, WIDE_READS + 1, t);
    }
    return c->error;
}

#define OPS_BUFS 12
#define OPS_LAUNCHES 16
#define OPS_PASSES 16

static struct {
    size_t s;
    void *b[OPS_BUFS], *y;
} ops;

static int ops_setup(wl_ctx *c)
{
    ops.y = wl_alloc(c, SMALL);
    ops.s = wl_pages((double)(c->working_set - SMALL) / OPS_BUFS);
    return alloc_each(c, ops.b, OPS_BUFS, ops.s);
}

/* 16 GEMMs a step, each with two of the 12 buffers chosen at random: one
 * as the weight, re-read 16 times, one as the input, read once. No launch
 * repeats another's chunks; each parameter keeps its way of reading.
 * `turned`: this step's GEMMs re-read the input 16 times and read the
 * weight once (a library that picks another tiling once the shapes
 * change): the parameter that was read once is the one re-read, and the
 * grid says so (16 x 1 tiles, not 1 x 16). */
static int pairs_step(wl_ctx *c, int step, bool turned)
{
    uint64_t rng = step_rng(c, step);
    for (int k = 0; k < OPS_LAUNCHES; k++) {
        int w = (int)(wl_rand(&rng) % OPS_BUFS), x;
        do
            x = (int)(wl_rand(&rng) % OPS_BUFS);
        while (x == w);
        if (!turned)
            wl_gemm(c, ops.b[x], ops.b[w], ops.y, ops.s, ops.s, SMALL, 1, OPS_PASSES, false);
        else
            wl_gemm(c, ops.b[w], ops.b[x], ops.y, ops.s, ops.s, SMALL, OPS_PASSES, 1, false);
    }
    return c->error;
}

/* `operands`: the pairs, never turned. */
static int ops_step(wl_ctx *c, int step)
{
    return pairs_step(c, step, false);
}

/* `turned`: the pairs, turned at step 12 (the prices learned before say
 * otherwise). */
static int turn_step(wl_ctx *c, int step)
{
    return pairs_step(c, step, step >= 12);
}

/* `flipped`: the pairs, turned every other 4 steps (two tilings the
 * library alternates between: one signature, two ways of reading). */
static int flip_step(wl_ctx *c, int step)
{
    return pairs_step(c, step, step / 4 % 2 == 1);
}

/* ---- (p) ragged: fresh buffers of varied sizes, GEMMs of varied tiling ------ */

#define RG_BUFS 48
#define RG_TILES 4

static struct {
    size_t s[RG_BUFS];
    void *b[RG_BUFS], *x, *y;
} rg;

static int rg_setup(wl_ctx *c)
{
    small_pair(c, &rg.x, &rg.y, RG_BUFS);
    return c->error;
}

/* A program with batches of varied sizes and no caching allocator: each
 * step frees the last step's buffers and allocates its own, each of a
 * size drawn at random (a tenth to 1.1 of an even share of the working
 * set), then reads each with a GEMM whose output has 1 to 4 tiles along
 * the other side, drawn per launch: the grid's y, and the times the GEMM
 * re-reads the buffer. Nothing repeats but the function and its grids. */
static int rg_step(wl_ctx *c, int step)
{
    uint64_t rng = step_rng(c, step);
    double share[RG_BUFS], total = 0;
    for (int i = 0; i < RG_BUFS; i++)
        total += share[i] = 0.1 + (double)(wl_rand(&rng) % 1000) / 1000.0;
    for (int i = 0; i < RG_BUFS; i++) {
        size_t s = wl_pages(share[i] / total * (double)(c->working_set - 2 * SMALL));
        if (!c->counting) {
            wl_free(c, rg.b[i], rg.s[i]);
            rg.b[i] = wl_alloc(c, s);
        }
        rg.s[i] = s;
    }
    if (c->error)
        return c->error;
    for (int i = 0; i < RG_BUFS; i++)
        wl_gemm(c, rg.x, rg.b[i], rg.y, SMALL, rg.s[i], SMALL, 1, 1 + wl_rand(&rng) % RG_TILES, false);
    return c->error;
}

/* ---- (q) seqlen: layers whose sequence length is drawn per step -------------- */

#define SL_LAYERS 6
#define SL_SHORT 4    /* the shortest sequence, in tiles */
#define SL_LONG 64    /* the longest */

static struct {
    size_t w, a;
    void *W[SL_LAYERS], *dW[SL_LAYERS], *m[SL_LAYERS], *A[SL_LAYERS + 1], *G[2];
} sl;

/* Per layer a weight, its gradient and a moment; 7 saved activations and
 * 2 gradient buffers of half a weight: 3 x 6 w + 9 w / 2 = 22.5 w. */
static int sl_setup(wl_ctx *c)
{
    sl.w = wl_pages((double)c->working_set / 22.5);
    sl.a = wl_pages((double)sl.w / 2);
    for (int l = 0; l < SL_LAYERS; l++) {
        sl.W[l] = wl_alloc(c, sl.w);
        sl.dW[l] = wl_alloc(c, sl.w);
        sl.m[l] = wl_alloc(c, sl.w);
    }
    for (int l = 0; l <= SL_LAYERS; l++)
        sl.A[l] = wl_alloc(c, sl.a);
    sl.G[0] = wl_alloc(c, sl.a);
    sl.G[1] = wl_alloc(c, sl.a);
    return c->error;
}

/* A step of a sequence of T tiles (SL_SHORT to SL_LONG, drawn per step
 * from the seed): each layer's forward GEMM on a 4 x T grid re-reads its
 * weight T times, the backward GEMM for the input likewise, the one for
 * the weight's gradient re-reads the saved activation T times; then an
 * update per layer. The same buffers every step, the work up to 16x
 * apart (variable-length batches, bucketed by length). */
static int sl_step(wl_ctx *c, int step)
{
    uint64_t rng = step_rng(c, step);
    unsigned t = SL_SHORT + wl_rand(&rng) % (SL_LONG - SL_SHORT + 1);
    size_t a = sl.a, w = sl.w;
    for (int l = 0; l < SL_LAYERS; l++)
        wl_gemm(c, sl.A[l], sl.W[l], sl.A[l + 1], a, w, a, 4, t, false);
    wl_ew(c, 2, (wl_t[]){{sl.A[SL_LAYERS], a, R}, {sl.G[0], a, W}});   /* the loss's gradient */
    int cur = 0;
    for (int l = SL_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, sl.G[cur], sl.W[l], sl.G[1 - cur], a, w, a, 4, t, false);
        wl_gemm(c, sl.A[l], sl.G[cur], sl.dW[l], a, a, w, t, 2, false);
        cur = 1 - cur;
    }
    for (int l = 0; l < SL_LAYERS; l++)
        wl_ew(c, 3, (wl_t[]){{sl.dW[l], w, R}, {sl.W[l], w, RW}, {sl.m[l], w, RW}});
    return c->error;
}

/* ---- (r) tilings: the same work on a grid drawn per step --------------------- */

#define TL_BUFS 24
#define TL_FEW 1       /* the fewest blocks a step's launches run */
#define TL_MANY 4096   /* the most */

static struct {
    size_t s;
    void *b[TL_BUFS], *y;
} tl;

/* 24 buffers and a small output. */
static int tl_setup(wl_ctx *c)
{
    tl.y = wl_alloc(c, SMALL);
    tl.s = wl_pages((double)(c->working_set - SMALL) / TL_BUFS);
    return alloc_each(c, tl.b, TL_BUFS, tl.s);
}

/* Each buffer streamed once into the output, in a fixed order, every
 * launch of the step on one grid drawn per step, even in the logarithm
 * from TL_FEW to TL_MANY blocks (a library's tiling heuristic): the same
 * work every step on grids up to 4096x apart, so a step's blocks say
 * nothing of its time (src/common/trials.c, "Steps whose work varies"). */
static int tl_step(wl_ctx *c, int step)
{
    uint64_t rng = step_rng(c, step);
    (void)wl_rand(&rng);   /* the first draw of a step's small state is near 0 */
    unsigned shift = wl_rand(&rng) % 13;   /* 2^0 .. 2^12 */
    unsigned blocks = (1u << shift) + wl_rand(&rng) % (1u << shift);
    blocks = blocks < TL_FEW ? TL_FEW : blocks > TL_MANY ? TL_MANY : blocks;
    for (int i = 0; i < TL_BUFS; i++)
        wl_ew_grid(c, 2, (wl_t[]){{tl.b[i], tl.s, R}, {tl.y, SMALL, RW}}, blocks);
    return c->error;
}

/* ==== shapes added by brk33: training and inference programs of other forms === */

/* Allocates n buffers of `bytes` into b[0..n). */
static void alloc_layers(wl_ctx *c, void **b, int n, size_t bytes)
{
    for (int i = 0; i < n; i++)
        b[i] = wl_alloc(c, bytes);
}

/* Adam over one tensor: grad read, param and two moments read and written. */
static void adam_one(wl_ctx *c, void *p, void *g, void *m, void *v, size_t b)
{
    wl_ew(c, 4, (wl_t[]){{g, b, R}, {p, b, RW}, {m, b, RW}, {v, b, RW}});
}

/* ---- pipe-1f1b: one pipeline stage, 8 microbatches in a 1F1B schedule ----- */

#define PP_LAYERS 4
#define PP_MICRO 8
#define PP_STAGES 4      /* this is stage 0 of 4: up to 4 microbatches in flight */
#define PP_MT 8          /* tiles of a microbatch: the weight re-read per microbatch */

static struct {
    size_t w, a;
    void *W[PP_LAYERS], *dW[PP_LAYERS], *m[PP_LAYERS], *v[PP_LAYERS];
    void *A[PP_STAGES][PP_LAYERS + 1];   /* the stash: a slot per microbatch in flight */
    void *G[2], *recv;
} pp;

/* 16 w of weights, gradients, moments; a stash of 4 x 5 activations, 2
 * gradient buffers and the received gradient, each a quarter weight:
 * 16 w + 23 w / 4. */
static int pp_setup(wl_ctx *c)
{
    pp.w = wl_pages((double)c->working_set / 21.75);
    pp.a = wl_pages((double)pp.w / 4);
    alloc_layers(c, pp.W, PP_LAYERS, pp.w);
    for (int s = 0; s < PP_STAGES; s++)
        alloc_layers(c, pp.A[s], PP_LAYERS + 1, pp.a);
    pp.G[0] = wl_alloc(c, pp.a);
    pp.G[1] = wl_alloc(c, pp.a);
    pp.recv = wl_alloc(c, pp.a);
    alloc_layers(c, pp.dW, PP_LAYERS, pp.w);
    alloc_layers(c, pp.m, PP_LAYERS, pp.w);
    alloc_layers(c, pp.v, PP_LAYERS, pp.w);
    return c->error;
}

static void pp_fwd(wl_ctx *c, int mb)
{
    void **A = pp.A[mb % PP_STAGES];
    wl_ew(c, 1, (wl_t[]){{A[0], pp.a, W}});   /* the microbatch's input */
    for (int l = 0; l < PP_LAYERS; l++)
        wl_gemm(c, A[l], pp.W[l], A[l + 1], pp.a, pp.w, pp.a, TN, PP_MT, false);
    wl_ew(c, 1, (wl_t[]){{A[PP_LAYERS], pp.a, R}});   /* sent to the next stage */
}

static void pp_bwd(wl_ctx *c, int mb)
{
    void **A = pp.A[mb % PP_STAGES];
    wl_ew(c, 2, (wl_t[]){{pp.recv, pp.a, W}, {pp.G[0], pp.a, W}});   /* gradient received */
    int cur = 0;
    for (int l = PP_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, pp.G[cur], pp.W[l], pp.G[1 - cur], pp.a, pp.w, pp.a, TN, PP_MT, false);
        wl_gemm(c, A[l], pp.G[cur], pp.dW[l], pp.a, pp.a, pp.w, WG, WG, mb > 0);
        cur = 1 - cur;
    }
}

/* Stage 0 of 1F1B: 3 forwards, then forward/backward in turn, then the
 * last backwards; gradients accumulate over the microbatches; Adam. */
static int pp_step(wl_ctx *c, int step)
{
    (void)step;
    int f = 0, b = 0;
    for (; f < PP_STAGES - 1; f++)
        pp_fwd(c, f);
    while (f < PP_MICRO) {
        pp_fwd(c, f++);
        pp_bwd(c, b++);
    }
    while (b < PP_MICRO)
        pp_bwd(c, b++);
    for (int l = 0; l < PP_LAYERS; l++)
        adam_one(c, pp.W[l], pp.dW[l], pp.m[l], pp.v[l], pp.w);
    return c->error;
}

/* ---- ckpt: activation checkpointing, forward recomputed per segment ------- */

#define CK_LAYERS 12
#define CK_SEG 4

static struct {
    size_t w, a;
    void *W[CK_LAYERS], *dW[CK_LAYERS], *m[CK_LAYERS], *v[CK_LAYERS];
    void *ck[CK_LAYERS / CK_SEG + 1], *R[CK_SEG], *G[2];
} ck;

/* 48 w; 4 checkpoints, 4 recompute buffers and 2 gradients of half a
 * weight: 53 w. */
static int ck_setup(wl_ctx *c)
{
    ck.w = wl_pages((double)c->working_set / 53);
    ck.a = wl_pages((double)ck.w / 2);
    alloc_layers(c, ck.W, CK_LAYERS, ck.w);
    alloc_layers(c, ck.ck, CK_LAYERS / CK_SEG + 1, ck.a);
    alloc_layers(c, ck.R, CK_SEG, ck.a);
    ck.G[0] = wl_alloc(c, ck.a);
    ck.G[1] = wl_alloc(c, ck.a);
    alloc_layers(c, ck.dW, CK_LAYERS, ck.w);
    alloc_layers(c, ck.m, CK_LAYERS, ck.w);
    alloc_layers(c, ck.v, CK_LAYERS, ck.w);
    return c->error;
}

/* Runs segment s forward from its checkpoint: into scratch buffers, the
 * last layer into the next checkpoint (save) or into R (recompute: R[k]
 * holds layer k's input, R[0] is the checkpoint itself). */
static void ck_segment(wl_ctx *c, int s, bool recompute)
{
    size_t a = ck.a, w = ck.w;
    for (int k = 0; k < CK_SEG; k++) {
        int l = s * CK_SEG + k;
        void *x = k == 0 ? ck.ck[s] : ck.R[k];
        void *y = k == CK_SEG - 1 ? (recompute ? ck.R[0] : ck.ck[s + 1]) : ck.R[k + 1];
        wl_gemm(c, x, ck.W[l], y, a, w, a, TN, TM, false);
    }
}

/* Forward saving only segment boundaries; backward per segment from the
 * last: recompute the segment's forward, then its backward. */
static int ck_step(wl_ctx *c, int step)
{
    (void)step;
    int nseg = CK_LAYERS / CK_SEG;
    wl_ew(c, 1, (wl_t[]){{ck.ck[0], ck.a, W}});
    for (int s = 0; s < nseg; s++)
        ck_segment(c, s, false);
    wl_ew(c, 2, (wl_t[]){{ck.ck[nseg], ck.a, R}, {ck.G[0], ck.a, W}});
    int cur = 0;
    for (int s = nseg - 1; s >= 0; s--) {
        ck_segment(c, s, true);
        for (int k = CK_SEG - 1; k >= 0; k--) {
            int l = s * CK_SEG + k;
            void *x = k == 0 ? ck.ck[s] : ck.R[k];
            wl_gemm(c, ck.G[cur], ck.W[l], ck.G[1 - cur], ck.a, ck.w, ck.a, TN, TM, false);
            wl_gemm(c, x, ck.G[cur], ck.dW[l], ck.a, ck.a, ck.w, WG, WG, false);
            cur = 1 - cur;
        }
    }
    for (int l = 0; l < CK_LAYERS; l++)
        adam_one(c, ck.W[l], ck.dW[l], ck.m[l], ck.v[l], ck.w);
    return c->error;
}

/* ---- lora: frozen large weights, small trained adapters ------------------- */

#define LR_LAYERS 16
#define LR_ADAPTER (2 * WL_MIB)

static struct {
    size_t w, a;
    void *W[LR_LAYERS], *A[LR_LAYERS + 1], *G[2], *H[LR_LAYERS], *dH;
    void *La[LR_LAYERS], *Lb[LR_LAYERS], *dLa[LR_LAYERS], *dLb[LR_LAYERS];
    void *ma[LR_LAYERS], *va[LR_LAYERS], *mb[LR_LAYERS], *vb[LR_LAYERS];
} lr;

/* 16 frozen weights, 17 saved activations and 2 gradients of a quarter
 * weight; per layer two adapters of 2 MiB with gradients, moments and the
 * low-rank activation (saved): 16 w + 19 w / 4 + 16 x 9 x 2 MiB. */
static int lr_setup(wl_ctx *c)
{
    double rest = (double)c->working_set - (double)LR_LAYERS * 9 * LR_ADAPTER - LR_ADAPTER;
    lr.w = wl_pages(rest / 20.75);
    lr.a = wl_pages((double)lr.w / 4);
    alloc_layers(c, lr.W, LR_LAYERS, lr.w);
    alloc_layers(c, lr.La, LR_LAYERS, LR_ADAPTER);
    alloc_layers(c, lr.Lb, LR_LAYERS, LR_ADAPTER);
    alloc_layers(c, lr.A, LR_LAYERS + 1, lr.a);
    alloc_layers(c, lr.H, LR_LAYERS, LR_ADAPTER);
    lr.dH = wl_alloc(c, LR_ADAPTER);
    lr.G[0] = wl_alloc(c, lr.a);
    lr.G[1] = wl_alloc(c, lr.a);
    alloc_layers(c, lr.dLa, LR_LAYERS, LR_ADAPTER);
    alloc_layers(c, lr.dLb, LR_LAYERS, LR_ADAPTER);
    alloc_layers(c, lr.ma, LR_LAYERS, LR_ADAPTER);
    alloc_layers(c, lr.va, LR_LAYERS, LR_ADAPTER);
    alloc_layers(c, lr.mb, LR_LAYERS, LR_ADAPTER);
    alloc_layers(c, lr.vb, LR_LAYERS, LR_ADAPTER);
    return c->error;
}

/* Forward: y = x W + (x La) Lb; backward: the input's gradient through W
 * (re-read) and the adapters, the adapters' gradients; Adam on adapters. */
static int lr_step(wl_ctx *c, int step)
{
    (void)step;
    size_t a = lr.a, w = lr.w, s = LR_ADAPTER;
    wl_ew(c, 1, (wl_t[]){{lr.A[0], a, W}});
    for (int l = 0; l < LR_LAYERS; l++) {
        wl_gemm(c, lr.A[l], lr.W[l], lr.A[l + 1], a, w, a, TN, TM, false);
        wl_gemm(c, lr.A[l], lr.La[l], lr.H[l], a, s, s, 1, TM, false);
        wl_gemm(c, lr.H[l], lr.Lb[l], lr.A[l + 1], s, s, a, TN, TM, true);
    }
    wl_ew(c, 2, (wl_t[]){{lr.A[LR_LAYERS], a, R}, {lr.G[0], a, W}});
    int cur = 0;
    for (int l = LR_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, lr.H[l], lr.G[cur], lr.dLb[l], s, a, s, 1, 1, false);
        wl_gemm(c, lr.G[cur], lr.Lb[l], lr.dH, a, s, s, 1, TM, false);
        wl_gemm(c, lr.A[l], lr.dH, lr.dLa[l], a, s, s, 1, 1, false);
        wl_gemm(c, lr.G[cur], lr.W[l], lr.G[1 - cur], a, w, a, TN, TM, false);
        wl_gemm(c, lr.dH, lr.La[l], lr.G[1 - cur], s, s, a, TN, TM, true);
        cur = 1 - cur;
    }
    for (int l = 0; l < LR_LAYERS; l++) {
        adam_one(c, lr.La[l], lr.dLa[l], lr.ma[l], lr.va[l], s);
        adam_one(c, lr.Lb[l], lr.dLb[l], lr.mb[l], lr.vb[l], s);
    }
    return c->error;
}

/* ---- kv-decode: a KV cache that grows a block a step, reset per request --- */

#define KV_LAYERS 8
#define KV_BLOCKS 16

static struct {
    size_t w, blk, q;
    void *W[KV_LAYERS], *Q[2], *cache[KV_LAYERS][KV_BLOCKS];
} kv;

/* Weights 30% of the working set, a preallocated cache the rest (vLLM
 * style: the cache is reserved up front). */
static int kv_setup(wl_ctx *c)
{
    kv.w = wl_pages(0.3 * (double)c->working_set / KV_LAYERS);
    kv.blk = wl_pages(0.7 * (double)c->working_set / (KV_LAYERS * KV_BLOCKS));
    kv.q = 2 * WL_MIB;
    alloc_layers(c, kv.W, KV_LAYERS, kv.w);
    kv.Q[0] = wl_alloc(c, kv.q);
    kv.Q[1] = wl_alloc(c, kv.q);
    for (int l = 0; l < KV_LAYERS; l++)
        alloc_layers(c, kv.cache[l], KV_BLOCKS, kv.blk);
    return c->error;
}

/* The request's length at `step`: requests follow one another, each with
 * a prompt of 1-4 blocks and 4-12 decode steps drawn from the seed; a
 * step is the prefill (first) or one decode step of a block. */
static int kv_len(const wl_ctx *c, int step, bool *prefill)
{
    uint64_t rng = (uint64_t)c->seed * 7777u + 3;
    int t = 0;
    for (;;) {
        int prompt = 1 + (int)(wl_rand(&rng) % 4), dec = 4 + (int)(wl_rand(&rng) % 9);
        if (step < t + 1 + dec) {
            int k = step - t;
            *prefill = k == 0;
            return prompt + k;
        }
        t += 1 + dec;
    }
}

static int kv_step(wl_ctx *c, int step)
{
    bool prefill;
    int len = kv_len(c, step, &prefill);
    for (int l = 0; l < KV_LAYERS; l++) {
        void *x = kv.Q[l % 2], *y = kv.Q[1 - l % 2];
        if (prefill) {   /* the prompt batched: the weight re-read per tile row */
            wl_gemm(c, x, kv.W[l], y, kv.q, kv.w, kv.q, TN, 4 * (unsigned)len, false);
            for (int b = 0; b < len; b++)
                wl_ew(c, 2, (wl_t[]){{y, kv.q, R}, {kv.cache[l][b], kv.blk, W}});
        } else {
            wl_gemm(c, x, kv.W[l], y, kv.q, kv.w, kv.q, TN, 1, false);
            for (int b = 0; b < len; b++)
                wl_ew(c, 3, (wl_t[]){{y, kv.q / 8, R}, {kv.cache[l][b], kv.blk, b == len - 1 ? W : R},
                                     {y, kv.q / 8, RW}});
        }
    }
    return c->error;
}

/* ---- gan: generator and discriminator steps in turn ----------------------- */

#define GAN_LAYERS 6

typedef struct gan_net {
    void *W[GAN_LAYERS], *dW[GAN_LAYERS], *m[GAN_LAYERS], *v[GAN_LAYERS], *A[GAN_LAYERS + 1];
} gan_net;

static struct {
    size_t w, a;
    gan_net g, d;
    void *G[2], *real;
} gan;

static void gan_net_alloc(wl_ctx *c, gan_net *n)
{
    alloc_layers(c, n->W, GAN_LAYERS, gan.w);
    alloc_layers(c, n->A, GAN_LAYERS + 1, gan.a);
    alloc_layers(c, n->dW, GAN_LAYERS, gan.w);
    alloc_layers(c, n->m, GAN_LAYERS, gan.w);
    alloc_layers(c, n->v, GAN_LAYERS, gan.w);
}

/* Two nets of 24 w and 7 activations of half a weight each, 2 gradients
 * and a real batch: 48 w + 17 w / 2. */
static int gan_setup(wl_ctx *c)
{
    gan.w = wl_pages((double)c->working_set / 56.5);
    gan.a = wl_pages((double)gan.w / 2);
    gan_net_alloc(c, &gan.g);
    gan_net_alloc(c, &gan.d);
    gan.G[0] = wl_alloc(c, gan.a);
    gan.G[1] = wl_alloc(c, gan.a);
    gan.real = wl_alloc(c, gan.a);
    return c->error;
}

static void gan_fwd(wl_ctx *c, gan_net *n, void *in, unsigned tiles)
{
    for (int l = 0; l < GAN_LAYERS; l++)
        wl_gemm(c, l ? n->A[l] : in, n->W[l], n->A[l + 1], gan.a, gan.w, gan.a, TN, tiles, false);
}

/* Backward through a net from G[0]; weight gradients when `grads`. */
static void gan_bwd(wl_ctx *c, gan_net *n, void *in, bool grads)
{
    int cur = 0;
    for (int l = GAN_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, gan.G[cur], n->W[l], gan.G[1 - cur], gan.a, gan.w, gan.a, TN, TM, false);
        if (grads)
            wl_gemm(c, l ? n->A[l] : in, gan.G[cur], n->dW[l], gan.a, gan.a, gan.w, WG, WG, false);
        cur = 1 - cur;
    }
    if (cur)
        wl_ew(c, 2, (wl_t[]){{gan.G[1], gan.a, R}, {gan.G[0], gan.a, W}});
}

/* Even steps train D (G forward, D on real and fake, D's update); odd
 * steps train G (G and D forward, back through D without its weight
 * gradients, through G, G's update). */
static int gan_step(wl_ctx *c, int step)
{
    gan_net *g = &gan.g, *d = &gan.d;
    wl_ew(c, 1, (wl_t[]){{g->A[0], gan.a, W}});   /* noise */
    gan_fwd(c, g, g->A[0], TM);
    if (step % 2 == 0) {
        gan_fwd(c, d, gan.real, TM);
        wl_ew(c, 2, (wl_t[]){{d->A[GAN_LAYERS], gan.a, R}, {gan.G[0], gan.a, W}});
        gan_bwd(c, d, gan.real, true);
        gan_fwd(c, d, g->A[GAN_LAYERS], TM);
        wl_ew(c, 2, (wl_t[]){{d->A[GAN_LAYERS], gan.a, R}, {gan.G[0], gan.a, W}});
        gan_bwd(c, d, g->A[GAN_LAYERS], true);
        for (int l = 0; l < GAN_LAYERS; l++)
            adam_one(c, d->W[l], d->dW[l], d->m[l], d->v[l], gan.w);
    } else {
        gan_fwd(c, d, g->A[GAN_LAYERS], TM);
        wl_ew(c, 2, (wl_t[]){{d->A[GAN_LAYERS], gan.a, R}, {gan.G[0], gan.a, W}});
        gan_bwd(c, d, g->A[GAN_LAYERS], false);
        gan_bwd(c, g, g->A[0], true);
        for (int l = 0; l < GAN_LAYERS; l++)
            adam_one(c, g->W[l], g->dW[l], g->m[l], g->v[l], gan.w);
    }
    return c->error;
}

/* ---- ddp: gradient buckets all-reduced on a second stream ----------------- */

#define DDP_LAYERS 12
#define DDP_PER 3                          /* layers a bucket */
#define DDP_BUCKETS (DDP_LAYERS / DDP_PER)

static struct {
    size_t w, a;
    void *W[DDP_LAYERS], *m[DDP_LAYERS], *v[DDP_LAYERS], *A[DDP_LAYERS + 1], *G[2], *stage;
    char *bucket[DDP_BUCKETS];          /* flat: the gradients of 3 layers, views inside */
} ddp;

static void *ddp_grad(int l)
{
    return ddp.bucket[(DDP_LAYERS - 1 - l) / DDP_PER] + (size_t)((DDP_LAYERS - 1 - l) % DDP_PER) * ddp.w;
}

/* 12 weights, 4 buckets of 3 gradients, 24 moments; 13 activations and 2
 * gradients of half a weight: 48 w + 7.5 w. */
static int ddp_setup(wl_ctx *c)
{
    ddp.w = wl_pages((double)c->working_set / 55.5);
    ddp.a = wl_pages((double)ddp.w / 2);
    alloc_layers(c, ddp.W, DDP_LAYERS, ddp.w);
    alloc_layers(c, ddp.A, DDP_LAYERS + 1, ddp.a);
    ddp.G[0] = wl_alloc(c, ddp.a);
    ddp.G[1] = wl_alloc(c, ddp.a);
    ddp.stage = wl_alloc(c, SMALL);
    for (int b = 0; b < DDP_BUCKETS; b++)
        ddp.bucket[b] = wl_alloc(c, DDP_PER * ddp.w);
    alloc_layers(c, ddp.m, DDP_LAYERS, ddp.w);
    alloc_layers(c, ddp.v, DDP_LAYERS, ddp.w);
    return c->error;
}

/* Forward; backward in reverse writing weight gradients into the bucket
 * views; as each bucket fills, the comm stream waits for it and runs a
 * ring all-reduce over it (reads and writes the bucket twice: reduce-
 * scatter then all-gather, through a small staging buffer) while backward
 * goes on; the optimizer waits for the comm stream. */
static int ddp_step(wl_ctx *c, int step)
{
    (void)step;
    size_t a = ddp.a, w = ddp.w, bb = DDP_PER * ddp.w;
    wl_stream(c, 0);
    for (int l = 0; l < DDP_LAYERS; l++)
        wl_gemm(c, ddp.A[l], ddp.W[l], ddp.A[l + 1], a, w, a, TN, TM, false);
    wl_ew(c, 2, (wl_t[]){{ddp.A[DDP_LAYERS], a, R}, {ddp.G[0], a, W}});
    int cur = 0;
    for (int l = DDP_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, ddp.G[cur], ddp.W[l], ddp.G[1 - cur], a, w, a, TN, TM, false);
        wl_gemm(c, ddp.A[l], ddp.G[cur], ddp_grad(l), a, a, w, WG, WG, false);
        cur = 1 - cur;
        if ((DDP_LAYERS - 1 - l) % DDP_PER == DDP_PER - 1) {
            int b = (DDP_LAYERS - 1 - l) / DDP_PER;
            wl_stream(c, 1);
            wl_stream_wait(c, 1, 0);
            for (int pass = 0; pass < 2; pass++)
                wl_ew_grid(c, 2, (wl_t[]){{ddp.bucket[b], bb, RW}, {ddp.stage, SMALL, RW}}, 64);
            wl_stream(c, 0);
        }
    }
    wl_stream_wait(c, 0, 1);
    for (int l = 0; l < DDP_LAYERS; l++)
        adam_one(c, ddp.W[l], ddp_grad(l), ddp.m[l], ddp.v[l], w);
    return c->error;
}

/* ---- zipf-embed: a large embedding table read at skewed rows -------------- */

#define ZE_ROW (16 * 1024)
#define ZE_LOOKUPS 2048
#define ZE_LAYERS 4

static struct {
    size_t t, w, a;
    unsigned rows;
    double *cdf;
    void *E, *S;                          /* the table and its Adagrad state */
    void *W[ZE_LAYERS], *dW[ZE_LAYERS], *m[ZE_LAYERS], *v[ZE_LAYERS], *A[ZE_LAYERS + 1], *G[2];
    int32_t *idx;
} ze;

/* The table and its state take 70% of the working set (35% each), the
 * dense tower the rest: 16 weights and 7 buffers of ZE_LOOKUPS rows. */
static int ze_setup(wl_ctx *c)
{
    ze.t = wl_pages(0.35 * (double)c->working_set);
    ze.rows = (unsigned)(ze.t / ZE_ROW);
    ze.a = (size_t)ZE_LOOKUPS * ZE_ROW;   /* 32 MiB */
    double rest = 0.3 * (double)c->working_set - 7.0 * (double)ze.a;
    ze.w = wl_pages(rest > 0 ? rest / 16 : 2 * WL_MIB);
    ze.E = wl_alloc(c, ze.t);
    alloc_layers(c, ze.W, ZE_LAYERS, ze.w);
    ze.idx = wl_alloc(c, ZE_LOOKUPS * sizeof(int32_t));
    alloc_layers(c, ze.A, ZE_LAYERS + 1, ze.a);
    ze.G[0] = wl_alloc(c, ze.a);
    ze.G[1] = wl_alloc(c, ze.a);
    ze.S = wl_alloc(c, ze.t);
    alloc_layers(c, ze.dW, ZE_LAYERS, ze.w);
    alloc_layers(c, ze.m, ZE_LAYERS, ze.w);
    alloc_layers(c, ze.v, ZE_LAYERS, ze.w);
    ze.cdf = malloc(ze.rows * sizeof *ze.cdf);
    double s = 0;
    for (unsigned r = 0; r < ze.rows; r++)
        ze.cdf[r] = s += pow(r + 1.0, -1.05);
    for (unsigned r = 0; r < ze.rows; r++)
        ze.cdf[r] /= s;
    return c->error;
}

/* A Zipf rank drawn by bisection over the CDF; hashed to a row (ids of a
 * recommender: hot rows all over the table). */
static int32_t ze_draw(uint64_t *rng)
{
    double u = (double)wl_rand(rng) / 4294967296.0;
    unsigned lo = 0, hi = ze.rows - 1;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (ze.cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int32_t)(((uint64_t)lo * 2654435761u + 12345u) % ze.rows);
}

/* Lookup, a dense tower forward and back, the sparse update of the rows
 * looked up (table and state, read and written), Adam on the tower. */
static int ze_step(wl_ctx *c, int step)
{
    static int32_t ids[ZE_LOOKUPS];
    uint64_t rng = step_rng(c, step);
    for (int i = 0; i < ZE_LOOKUPS; i++)
        ids[i] = ze_draw(&rng);
    wl_upload(c, ze.idx, ids, sizeof ids);
    size_t a = ze.a, w = ze.w;
    wl_gather(c, ze.E, ze.idx, ze.A[0], ZE_ROW, ZE_LOOKUPS);
    for (int l = 0; l < ZE_LAYERS; l++)
        wl_gemm(c, ze.A[l], ze.W[l], ze.A[l + 1], a, w, a, TN, TM, false);
    wl_ew(c, 2, (wl_t[]){{ze.A[ZE_LAYERS], a, R}, {ze.G[0], a, W}});
    int cur = 0;
    for (int l = ZE_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, ze.G[cur], ze.W[l], ze.G[1 - cur], a, w, a, TN, TM, false);
        wl_gemm(c, ze.A[l], ze.G[cur], ze.dW[l], a, a, w, WG, WG, false);
        cur = 1 - cur;
    }
    wl_scatter_add(c, ze.S, ze.idx, ze.G[cur], ZE_ROW, ZE_LOOKUPS);   /* state += g^2 */
    wl_scatter_add(c, ze.E, ze.idx, ze.G[cur], ZE_ROW, ZE_LOOKUPS);   /* row -= lr g / sqrt(state) */
    for (int l = 0; l < ZE_LAYERS; l++)
        adam_one(c, ze.W[l], ze.dW[l], ze.m[l], ze.v[l], w);
    return c->error;
}

/* ---- early-exit: inference whose depth depends on the batch --------------- */

#define EE_LAYERS 24

static struct {
    size_t w, a;
    void *W[EE_LAYERS], *A[2], *head;
    int32_t *flag;
} ee;

static int ee_setup(wl_ctx *c)
{
    ee.w = wl_pages((double)c->working_set / (EE_LAYERS + 0.25));
    ee.a = wl_pages((double)ee.w / 8);
    alloc_layers(c, ee.W, EE_LAYERS, ee.w);
    ee.A[0] = wl_alloc(c, ee.a);
    ee.A[1] = wl_alloc(c, ee.a);
    ee.head = wl_alloc(c, SMALL);
    return c->error;
}

/* Layers in groups of 6, each followed by an exit head (a small GEMM);
 * the batch leaves after the first head that is confident: a group runs
 * further with probability 0.55, drawn per step from the seed (the host
 * decides from the head's output, read back). */
static int ee_step(wl_ctx *c, int step)
{
    uint64_t rng = step_rng(c, step);
    for (int l = 0; l < EE_LAYERS; l++) {
        void *x = ee.A[l % 2], *y = ee.A[1 - l % 2];
        wl_gemm(c, x, ee.W[l], y, ee.a, ee.w, ee.a, TN, TM, false);
        wl_ew(c, 2, (wl_t[]){{y, ee.a, RW}, {x, ee.a, R}});
        if (l % 6 == 5 && l < EE_LAYERS - 1) {
            wl_gemm(c, y, ee.head, ee.head, ee.a, SMALL, SMALL, 1, 1, true);
            int32_t flag = 0;
            wl_download(c, &flag, ee.head, sizeof flag);
            if (wl_rand(&rng) % 100 >= 55)
                break;
        }
    }
    return c->error;
}

/* ---- periodic: training with an eval every 5 steps, a save every 7 -------- */

#define PE_LAYERS 8

static struct {
    size_t w, a;
    void *W[PE_LAYERS], *dW[PE_LAYERS], *m[PE_LAYERS], *v[PE_LAYERS], *A[PE_LAYERS + 1], *G[2], *ev[2];
    void *host;
} pe;

/* 32 w; 9 activations, 2 gradients, 2 eval buffers of half a weight:
 * 38.5 w. */
static int pe_setup(wl_ctx *c)
{
    pe.w = wl_pages((double)c->working_set / 38.5);
    pe.a = wl_pages((double)pe.w / 2);
    alloc_layers(c, pe.W, PE_LAYERS, pe.w);
    alloc_layers(c, pe.A, PE_LAYERS + 1, pe.a);
    pe.G[0] = wl_alloc(c, pe.a);
    pe.G[1] = wl_alloc(c, pe.a);
    alloc_layers(c, pe.dW, PE_LAYERS, pe.w);
    alloc_layers(c, pe.m, PE_LAYERS, pe.w);
    alloc_layers(c, pe.v, PE_LAYERS, pe.w);
    alloc_layers(c, pe.ev, 2, pe.a);
    pe.host = malloc(pe.w);
    return c->error;
}

/* A training iteration; after it, on every 5th step, evaluation on 3
 * batches (forward only, twice the tiles, ping-pong buffers); on every
 * 7th, a checkpoint: weights and both moments copied to the host. */
static int pe_step(wl_ctx *c, int step)
{
    size_t a = pe.a, w = pe.w;
    for (int l = 0; l < PE_LAYERS; l++)
        wl_gemm(c, pe.A[l], pe.W[l], pe.A[l + 1], a, w, a, TN, TM, false);
    wl_ew(c, 2, (wl_t[]){{pe.A[PE_LAYERS], a, R}, {pe.G[0], a, W}});
    int cur = 0;
    for (int l = PE_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, pe.G[cur], pe.W[l], pe.G[1 - cur], a, w, a, TN, TM, false);
        wl_gemm(c, pe.A[l], pe.G[cur], pe.dW[l], a, a, w, WG, WG, false);
        cur = 1 - cur;
    }
    for (int l = 0; l < PE_LAYERS; l++)
        adam_one(c, pe.W[l], pe.dW[l], pe.m[l], pe.v[l], w);
    if (step % 5 == 4)
        for (int b = 0; b < 3; b++) {
            wl_ew(c, 1, (wl_t[]){{pe.ev[0], a, W}});
            for (int l = 0; l < PE_LAYERS; l++)
                wl_gemm(c, pe.ev[l % 2], pe.W[l], pe.ev[1 - l % 2], a, w, a, TN, 2 * TM, false);
        }
    if (step % 7 == 6 && !c->counting)
        for (int l = 0; l < PE_LAYERS; l++) {
            wl_download(c, pe.host, pe.W[l], w);
            wl_download(c, pe.host, pe.m[l], w);
            wl_download(c, pe.host, pe.v[l], w);
        }
    return c->error;
}

/* ---- offload-adam: fp16 weights, fp32 master weights and moments ---------- */

#define OA_LAYERS 8

static struct {
    size_t h, a;
    void *H[OA_LAYERS], *dH[OA_LAYERS], *P[OA_LAYERS], *m[OA_LAYERS], *v[OA_LAYERS], *A[OA_LAYERS + 1], *G[2];
    int32_t *counter, *flag;
    size_t hb[OA_LAYERS];
} oa;

/* Per layer fp16 weight h and gradient h, fp32 master, m, v (2 h each):
 * 8 h; 9 activations and 2 gradients of half h: 64 h + 5.5 h. */
static int oa_setup(wl_ctx *c)
{
    oa.h = wl_pages((double)c->working_set / 69.5);
    oa.a = wl_pages((double)oa.h / 2);
    alloc_layers(c, oa.H, OA_LAYERS, oa.h);
    oa.counter = wl_alloc(c, 512);
    oa.flag = wl_alloc(c, 512);
    alloc_layers(c, oa.A, OA_LAYERS + 1, oa.a);
    oa.G[0] = wl_alloc(c, oa.a);
    oa.G[1] = wl_alloc(c, oa.a);
    alloc_layers(c, oa.dH, OA_LAYERS, oa.h);
    alloc_layers(c, oa.P, OA_LAYERS, 2 * oa.h);
    alloc_layers(c, oa.m, OA_LAYERS, 2 * oa.h);
    alloc_layers(c, oa.v, OA_LAYERS, 2 * oa.h);
    for (int l = 0; l < OA_LAYERS; l++)
        oa.hb[l] = oa.h;
    int32_t zero = 0;
    wl_upload(c, oa.counter, &zero, sizeof zero);
    return c->error;
}

/* Mixed precision: forward and backward on fp16 weights, an overflow
 * check read back (a skipped step when set), then per layer one kernel
 * reading the fp16 gradient, updating master weights and moments and
 * writing the fp16 weight. */
static int oa_step(wl_ctx *c, int step)
{
    (void)step;
    size_t a = oa.a, h = oa.h;
    for (int l = 0; l < OA_LAYERS; l++)
        wl_gemm(c, oa.A[l], oa.H[l], oa.A[l + 1], a, h, a, TN, TM, false);
    wl_ew(c, 2, (wl_t[]){{oa.A[OA_LAYERS], a, R}, {oa.G[0], a, W}});
    int cur = 0;
    for (int l = OA_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, oa.G[cur], oa.H[l], oa.G[1 - cur], a, h, a, TN, TM, false);
        wl_gemm(c, oa.A[l], oa.G[cur], oa.dH[l], a, a, h, WG, WG, false);
        cur = 1 - cur;
    }
    wl_check_overflow(c, oa.dH, oa.hb, OA_LAYERS, oa.counter, oa.flag);
    int32_t flag = 0;
    wl_download(c, &flag, oa.flag, sizeof flag);
    if (!flag)
        for (int l = 0; l < OA_LAYERS; l++)
            wl_ew(c, 5, (wl_t[]){{oa.dH[l], h, R}, {oa.P[l], 2 * h, RW}, {oa.m[l], 2 * h, RW},
                                 {oa.v[l], 2 * h, RW}, {oa.H[l], h, W}});
    return c->error;
}

/* ---- distill: a frozen teacher twice the student's size ------------------- */

#define DS_T 12
#define DS_S 6

static struct {
    size_t w, a;
    void *T[DS_T], *S[DS_S], *dS[DS_S], *m[DS_S], *v[DS_S], *A[DS_S + 1], *TA[2], *G[2];
} ds;

/* Teacher 12 layers of 2 w, student 6 x 4 w; 7 saved activations, 2
 * teacher buffers, 2 gradients of half a weight: 48 w + 5.5 w. */
static int ds_setup(wl_ctx *c)
{
    ds.w = wl_pages((double)c->working_set / 53.5);
    ds.a = wl_pages((double)ds.w / 2);
    alloc_layers(c, ds.T, DS_T, 2 * ds.w);
    alloc_layers(c, ds.S, DS_S, ds.w);
    alloc_layers(c, ds.A, DS_S + 1, ds.a);
    alloc_layers(c, ds.TA, 2, ds.a);
    ds.G[0] = wl_alloc(c, ds.a);
    ds.G[1] = wl_alloc(c, ds.a);
    alloc_layers(c, ds.dS, DS_S, ds.w);
    alloc_layers(c, ds.m, DS_S, ds.w);
    alloc_layers(c, ds.v, DS_S, ds.w);
    return c->error;
}

/* The teacher's forward (no activations kept), the student's forward,
 * the distillation loss over both outputs, the student's backward and
 * update. */
static int ds_step(wl_ctx *c, int step)
{
    (void)step;
    size_t a = ds.a, w = ds.w;
    wl_ew(c, 2, (wl_t[]){{ds.A[0], a, W}, {ds.TA[0], a, W}});
    for (int l = 0; l < DS_T; l++)
        wl_gemm(c, ds.TA[l % 2], ds.T[l], ds.TA[1 - l % 2], a, 2 * w, a, TN, TM, false);
    for (int l = 0; l < DS_S; l++)
        wl_gemm(c, ds.A[l], ds.S[l], ds.A[l + 1], a, w, a, TN, TM, false);
    wl_ew(c, 3, (wl_t[]){{ds.A[DS_S], a, R}, {ds.TA[DS_T % 2], a, R}, {ds.G[0], a, W}});
    int cur = 0;
    for (int l = DS_S - 1; l >= 0; l--) {
        wl_gemm(c, ds.G[cur], ds.S[l], ds.G[1 - cur], a, w, a, TN, TM, false);
        wl_gemm(c, ds.A[l], ds.G[cur], ds.dS[l], a, a, w, WG, WG, false);
        cur = 1 - cur;
    }
    for (int l = 0; l < DS_S; l++)
        adam_one(c, ds.S[l], ds.dS[l], ds.m[l], ds.v[l], w);
    return c->error;
}

/* ---- (s) big-grid: seqlen's layers on a grid whose x is drawn per step ------- */

/* seqlen's buffers; each GEMM's grid x (its activation's passes) drawn per
 * step from 2 to 127, its weight re-read twice whatever the grid. */
static int bg_step(wl_ctx *c, int step)
{
    uint64_t rng = step_rng(c, step);
    unsigned x = 2 + wl_rand(&rng) % 126;
    size_t a = sl.a, w = sl.w;
    for (int l = 0; l < SL_LAYERS; l++)
        wl_gemm(c, sl.A[l], sl.W[l], sl.A[l + 1], a, w, a, x, 2, false);
    wl_ew(c, 2, (wl_t[]){{sl.A[SL_LAYERS], a, R}, {sl.G[0], a, W}});
    int cur = 0;
    for (int l = SL_LAYERS - 1; l >= 0; l--) {
        wl_gemm(c, sl.G[cur], sl.W[l], sl.G[1 - cur], a, w, a, x, 2, false);
        wl_gemm(c, sl.A[l], sl.G[cur], sl.dW[l], a, a, w, x, 2, false);
        cur = 1 - cur;
    }
    for (int l = 0; l < SL_LAYERS; l++)
        wl_ew(c, 3, (wl_t[]){{sl.dW[l], w, R}, {sl.W[l], w, RW}, {sl.m[l], w, RW}});
    return c->error;
}

/* ---- the table of shapes -------------------------------------------------- */

const wl_shape wl_shapes[] = {
    {"transformer", "8 layers, embedding 4x a layer, fwd, bwd in reverse, Adam (weights, grads, 2 moments)",
     0, false, 0, tf_setup, tf_step, false},
    {"random", "64 kernels a step over 32 buffers chosen at random, nothing repeats", 0, true, 0, rnd_setup,
     rnd_step, false},
    {"many-chunks", "2000 chunks of 9 MiB (10 MiB of device pages each), forward, backward, in-place update",
     MANY_CHUNKS * (MANY_CHUNK + WL_MIB) + 8 * WL_MIB, false, 0, many_setup, seq_step, false},
    {"arenas", "8 arenas of 2250 MiB, 25 tensors each reached by interior pointers", ARENAS * ARENA + 16 * WL_MIB,
     false, 0, arena_setup, seq_step, false},
    {"pytorch", "24 layers in 2/20 MiB segments, 15 microbatches, fused Adam (144 pointers by value)", 0, false,
     0, pt_setup, pt_step, false},
    {"train-eval", "6 conv layers: 2 training iterations, then evaluation on 2 batches", 0, false, 0, cnn_setup,
     cnn_step, false},
    {"data-dependent", "8 layers; an overflow check read back decides an extra kernel", 0, false, 0, dd_setup,
     dd_step, false},
    {"growing", "8 layers and an attention cache that grows by a block per layer a step", 0, false, GR_STEPS,
     gr_setup, gr_step, false},
    {"inference", "24 layers forward only: each weight used by one GEMM a step", 0, false, 0, fw_setup, in_step,
     false},
    {"decoder", "24 layers forward only: a GEMM and 3 elementwise kernels each", 0, false, 0, fw_setup, dec_step,
     false},
    {"churn", "48 buffers freed and allocated afresh every step, each re-read 8 times by a GEMM", 0, false, 0,
     ch_setup, ch_step, false},
    {"experts", "48 experts in a new random order every step, each GEMM re-reading its weight 2-8 times", 0, true,
     0, ex_setup, ex_step, false},
    {"deep", "96 layers forward only, each GEMM re-reading its weight 8 times", 0, false, 0, dp_setup, dp_step,
     false},
    {"wide", "16 reductions a step, each reading 5 of 48 buffers chosen at random once", 0, true, 0, wd_setup,
     wd_step, false},
    {"operands", "16 GEMMs a step, each re-reading one of 12 buffers 16 times and reading another once, at random",
     0, true, 0, ops_setup, ops_step, false},
    {"ragged", "48 buffers of random sizes allocated afresh every step, each re-read 1-4 times (the grid says) by a GEMM",
     0, false, 0, rg_setup, rg_step, false},
    {"turned", "operands, but from step 12 each GEMM re-reads its first parameter 16 times, not its second", 0, true,
     0, ops_setup, turn_step, true},
    {"flipped", "operands, but every other 4 steps each GEMM re-reads its first parameter 16 times, not its second", 0,
     true, 0, ops_setup, flip_step, true},
    {"seqlen", "6 layers, a sequence of 4-64 tiles drawn per step: each GEMM re-reads its weight that many times", 0,
     true, 0, sl_setup, sl_step, true},
    {"tilings", "24 buffers streamed once a step, the same work on a grid of 1-4096 blocks drawn per step", 0, true,
     0, tl_setup, tl_step, true},
    {"pipe-1f1b", "pipeline stage 0 of 4: 4 layers, 8 microbatches in 1F1B, a stash of 4 in flight, Adam", 0, false,
     0, pp_setup, pp_step, true},
    {"ckpt", "12 layers checkpointed every 4: forward keeps boundaries, backward recomputes each segment", 0, false,
     0, ck_setup, ck_step, true},
    {"lora", "16 frozen weights read fwd and bwd, 2 MiB adapters per layer trained with Adam", 0, false, 0,
     lr_setup, lr_step, true},
    {"kv-decode", "8 layers decoding: a preallocated KV cache used up to a length that grows and resets per request",
     0, true, 0, kv_setup, kv_step, true},
    {"gan", "generator and discriminator (6 layers each): D steps and G steps in turn", 0, false, 0, gan_setup,
     gan_step, true},
    {"ddp", "12 layers, gradients in 4 flat buckets all-reduced on a second stream during backward", 0, false, 0,
     ddp_setup, ddp_step, true},
    {"zipf-embed", "embedding table and its state (70%) hit at 2048 Zipf rows a step, a dense tower", 0, true, 0,
     ze_setup, ze_step, true},
    {"early-exit", "24 layers inference, leaving after 6, 12, 18 or 24 (drawn, 0.55 to go on)", 0, true, 0,
     ee_setup, ee_step, true},
    {"periodic", "8 layers training; eval on 3 batches every 5th step, weights+moments saved to host every 7th", 0,
     false, 0, pe_setup, pe_step, true},
    {"offload-adam", "8 layers fp16, fp32 master weights and moments (75%) updated by one kernel a layer", 0, false,
     0, oa_setup, oa_step, true},
    {"distill", "frozen 12-layer teacher (2x weights) forward, 6-layer student trained", 0, false, 0, ds_setup,
     ds_step, true},
    {"big-grid", "6 layers (seqlen's), each GEMM's grid x drawn per step from 2 to 127 (its input's passes), its weight re-read twice", 0, true, 0, sl_setup, bg_step, true},
};
const int wl_nshapes = (int)(sizeof wl_shapes / sizeof wl_shapes[0]);
