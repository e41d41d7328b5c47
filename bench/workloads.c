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
};
const int wl_nshapes = (int)(sizeof wl_shapes / sizeof wl_shapes[0]);
