/*
 * workloads.h — training and inference steps shaped like real frameworks,
 * run over the simulated GPU by bench/shapes (one mode per process).
 *
 * A workload allocates its buffers through wl_alloc (device, managed or
 * pinned host memory, as the mode says) and issues kernels through the
 * wl_* launchers below. Each launcher is a real kernel launch
 * (cudaLaunchKernel) whose parameters are what a framework would pass: the
 * pointers, the sizes, the grid. The kernel body derives the ranges it
 * touches from those parameters alone (and from device memory it reads,
 * like an index tensor), declares them to the simulator with the passes a
 * real kernel makes (a GEMM re-reads its weight operand once per tile row
 * of its output: gridDim.y passes; its activation operand once per tile
 * column: gridDim.x passes), and declares compute time in proportion to
 * its work.
 *
 * Compute is calibrated per workload: a counting pass over one step
 * (nothing launched) adds up the work units, and each unit then costs
 * compute_scale x (working set / link bandwidth) / units, so that one step
 * computes for as long as moving its working set over the link once takes.
 */
#ifndef BENCH_WORKLOADS_H
#define BENCH_WORKLOADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WL_MIB (1ull << 20)

/* One workload run in this process. */
typedef struct wl_ctx {
    const char *alloc;     /* "device", "managed" or "host" */
    double ratio;          /* working set / device budget */
    uint64_t working_set;  /* bytes the workload aims to allocate */
    unsigned seed;         /* random workloads: the seed */
    bool quick;            /* smaller launch counts (the test) */
    bool counting;         /* count work units; launch nothing */
    double units;          /* work units counted */
    double ns_per_unit;    /* modeled compute per work unit, ns */
    uint64_t allocated;    /* bytes allocated so far */
    int error;             /* first CUDA error, 0 if none */
    void *state;           /* the workload's own (owned by it) */
} wl_ctx;

/* A workload: setup allocates (once), step issues one step's kernels. */
typedef struct wl_shape {
    const char *name;
    const char *what;              /* one line for the table's legend */
    uint64_t fixed_bytes;          /* 0: working set = ratio x budget; else this, budget = it / ratio */
    bool seeded;                   /* run once per seed */
    int steps;                     /* steps to run, the first ones warm-up (0: the bench's --steps) */
    int (*setup)(wl_ctx *c);       /* 0 or a CUDA error */
    int (*step)(wl_ctx *c, int step);
    bool named;                    /* run only where --shapes names it (kept for one rule, not in the bench's table) */
} wl_shape;

extern const wl_shape wl_shapes[];
extern const int wl_nshapes;

/* Registers every kernel with the simulated GPU; 0 on success. */
int wl_register_kernels(void);

/* Allocates `bytes` the way c->alloc says; NULL (and c->error set) on failure. */
void *wl_alloc(wl_ctx *c, size_t bytes);

/* Frees what wl_alloc gave (p may be NULL), taking its bytes off c->allocated. */
void wl_free(wl_ctx *c, void *p, size_t bytes);

/* Copies host bytes to device memory (an index tensor from the data loader). */
void wl_upload(wl_ctx *c, void *dst, const void *src, size_t bytes);

/* y = x . w on a grid of tn x tm output tiles: reads x tn times, w tm
 * times, writes (accumulate: reads and writes) y once. */
void wl_gemm(wl_ctx *c, const void *x, const void *w, void *y, size_t xb, size_t wb, size_t yb, unsigned tn,
             unsigned tm, bool accumulate);

/* The same body registered as a convolution (filters w re-read per tile row). */
void wl_conv(wl_ctx *c, const void *x, const void *w, void *y, size_t xb, size_t wb, size_t yb, unsigned tn,
             unsigned tm, bool accumulate);

/* One operand of an elementwise kernel: its range and SIMGPU_* mode. */
typedef struct wl_t {
    void *p;
    size_t bytes;
    int mode;
} wl_t;

/* An elementwise (or reduction) kernel over up to 6 operands, each touched
 * once: wl_ew(c, 3, (wl_t[]){{x, a, SIMGPU_READ}, ...}). */
void wl_ew(wl_ctx *c, int n, const wl_t *t);
/* The same on a grid of `blocks` x 1 blocks (wl_ew: 256): its work does
 * not follow the grid. */
void wl_ew_grid(wl_ctx *c, int n, const wl_t *t, unsigned blocks);

/* Embedding lookup: out rows <- table[idx[i]], i < n (idx: device int32). */
void wl_gather(wl_ctx *c, const void *table, const int32_t *idx, void *out, size_t row_bytes, unsigned n);

/* Embedding backward: grad[idx[i]] += in rows, i < n. */
void wl_scatter_add(wl_ctx *c, void *grad, const int32_t *idx, const void *in, size_t row_bytes, unsigned n);

/* A fused multi-tensor Adam over n tensors: lists[k][i] is tensor i of list
 * k (0 params, 1 grads, 2 first moments, 3 second moments), bytes[i] its
 * size. Launches ceil(n / 36) kernels, each with a by-value parameter that
 * carries 4 x 36 pointers (PyTorch's TensorListMetadata for depth 4). */
void wl_multi_adam(wl_ctx *c, void **const lists[4], const size_t *bytes, int n);

/* Reduces `n` tensors of bytes[i] into a one-int flag (1: overflow) that
 * the kernel decides from device memory it reads (a step counter). */
void wl_check_overflow(wl_ctx *c, void *const *t, const size_t *bytes, int n, int32_t *counter, int32_t *flag);

/* Launches from now on go to stream k (0: the legacy stream; 1..3 created
 * non-blocking on first use). */
void wl_stream(wl_ctx *c, int k);

/* Stream `waiter` waits for what stream `on` has launched so far (an event). */
void wl_stream_wait(wl_ctx *c, int waiter, int on);

/* Reads device bytes back to the host (synchronises). */
void wl_download(wl_ctx *c, void *dst, const void *src, size_t bytes);

/* Rounds down to whole 2 MiB pages, at least one. */
size_t wl_pages(double bytes);

/* A small deterministic generator (xorshift) for the workloads. */
uint32_t wl_rand(uint64_t *s);

#endif
