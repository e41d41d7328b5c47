/*
 * kernels.c — the framework operations the workloads are built from
 * (workloads.h): GEMM and convolution with their re-reads, elementwise
 * kernels, embedding gather and scatter, a multi-tensor fused Adam whose
 * by-value parameter carries 144 pointers, and an overflow check whose
 * result the host reads back. Each is a simulated kernel launched through
 * cudaLaunchKernel; its body touches only what its parameters (and the
 * device memory they point at) say.
 */
#include <cuda_runtime_api.h>
#include <string.h>

#include "simgpu.h"
#include "workloads.h"

/* Work units per byte touched once: a GEMM or a convolution computes far
 * more per byte than an elementwise kernel. */
#define GEMM_UNITS_PER_BYTE 4.0
#define EW_UNITS_PER_BYTE 1.0

#define LIST_DEPTH 4
#define LIST_MAX 36     /* tensors per launch at depth 4, as PyTorch's multi_tensor_apply */
#define LIST_BLOCKS 320

/* PyTorch's TensorListMetadata for depth 4, passed by value. */
typedef struct tensor_list {
    void *addr[LIST_DEPTH][LIST_MAX];
    int64_t numel[LIST_MAX];            /* elements of 4 bytes */
    unsigned char block_to_tensor[LIST_BLOCKS];
    int32_t block_to_chunk[LIST_BLOCKS];
    int32_t start_tensor;
} tensor_list;

/* ---- kernel bodies (what the simulated GPU runs) ------------------------ */

/* gemm(x, w, y, xb, wb, yb, accumulate, compute_ns): grid = tn x tm tiles. */
static void gemm_body(simgpu_launch *l, void **p)
{
    uint64_t x = *(uint64_t *)p[0], w = *(uint64_t *)p[1], y = *(uint64_t *)p[2];
    size_t xb = *(size_t *)p[3], wb = *(size_t *)p[4], yb = *(size_t *)p[5];
    int acc = *(int *)p[6];
    l->access_passes(l, x, xb, SIMGPU_READ, l->grid[0]);   /* once per tile column */
    l->access_passes(l, w, wb, SIMGPU_READ, l->grid[1]);   /* once per tile row */
    l->access(l, y, yb, acc ? SIMGPU_READ_WRITE : SIMGPU_WRITE);
    l->compute(l, *(double *)p[7]);
}

/* elementwise(compute_ns, n, modes, t0..t5, bytes0..bytes5): mode i in
 * bits 2i..2i+1 of modes. */
static void elementwise_body(simgpu_launch *l, void **p)
{
    int n = *(int *)p[1];
    unsigned modes = *(unsigned *)p[2];
    for (int i = 0; i < n && i < 6; i++)
        l->access(l, *(uint64_t *)p[3 + i], *(size_t *)p[9 + i], (int)(modes >> (2 * i) & 3));
    l->compute(l, *(double *)p[0]);
}

/* gather(table, idx, out, row_bytes, n, compute_ns): reads the index
 * tensor, then the rows it names. */
static void gather_body(simgpu_launch *l, void **p)
{
    uint64_t table = *(uint64_t *)p[0], out = *(uint64_t *)p[2];
    const int32_t *idx = *(const int32_t **)p[1];
    size_t row = *(size_t *)p[3];
    unsigned n = *(unsigned *)p[4];
    l->access(l, (uint64_t)(uintptr_t)idx, n * sizeof *idx, SIMGPU_READ);
    for (unsigned i = 0; i < n; i++)
        l->access(l, table + (uint64_t)idx[i] * row, row, SIMGPU_READ);
    l->access(l, out, (size_t)n * row, SIMGPU_WRITE);
    l->compute(l, *(double *)p[5]);
}

/* scatter_add(grad, idx, in, row_bytes, n, compute_ns). */
static void scatter_body(simgpu_launch *l, void **p)
{
    uint64_t grad = *(uint64_t *)p[0], in = *(uint64_t *)p[2];
    const int32_t *idx = *(const int32_t **)p[1];
    size_t row = *(size_t *)p[3];
    unsigned n = *(unsigned *)p[4];
    l->access(l, (uint64_t)(uintptr_t)idx, n * sizeof *idx, SIMGPU_READ);
    l->access(l, in, (size_t)n * row, SIMGPU_READ);
    for (unsigned i = 0; i < n; i++)
        l->access(l, grad + (uint64_t)idx[i] * row, row, SIMGPU_READ_WRITE);
    l->compute(l, *(double *)p[5]);
}

/* multi_tensor_adam(list, compute_ns, lr, beta1, beta2): block b works on
 * tensor list.block_to_tensor[b]; one block per tensor here. */
static void adam_body(simgpu_launch *l, void **p)
{
    const tensor_list *tl = p[0];
    for (unsigned b = 0; b < l->grid[0] && b < LIST_BLOCKS; b++) {
        int t = tl->block_to_tensor[b];
        size_t bytes = (size_t)tl->numel[t] * 4;
        l->access(l, (uint64_t)(uintptr_t)tl->addr[0][t], bytes, SIMGPU_READ_WRITE);
        l->access(l, (uint64_t)(uintptr_t)tl->addr[1][t], bytes, SIMGPU_READ);
        l->access(l, (uint64_t)(uintptr_t)tl->addr[2][t], bytes, SIMGPU_READ_WRITE);
        l->access(l, (uint64_t)(uintptr_t)tl->addr[3][t], bytes, SIMGPU_READ_WRITE);
    }
    l->compute(l, *(double *)p[1]);
}

/* check_overflow(list, counter, flag, compute_ns): reads every tensor of
 * list 0; the launch that starts the list (start_tensor 0) advances the
 * step counter and decides the flag from it, as if an inf had appeared. */
static void overflow_body(simgpu_launch *l, void **p)
{
    const tensor_list *tl = p[0];
    int32_t *counter = *(int32_t **)p[1], *flag = *(int32_t **)p[2];
    for (unsigned b = 0; b < l->grid[0] && b < LIST_BLOCKS; b++) {
        int t = tl->block_to_tensor[b];
        l->access(l, (uint64_t)(uintptr_t)tl->addr[0][t], (size_t)tl->numel[t] * 4, SIMGPU_READ);
    }
    if (tl->start_tensor == 0) {
        l->access(l, (uint64_t)(uintptr_t)counter, sizeof *counter, SIMGPU_READ_WRITE);
        l->access(l, (uint64_t)(uintptr_t)flag, sizeof *flag, SIMGPU_WRITE);
        uint32_t k = (uint32_t)++*counter * 2654435761u;
        *flag = (k >> 28) % 3 == 0;
    }
    l->compute(l, *(double *)p[3]);
}

/* conv uses gemm_body under its own name (cudaLaunchKernel keys on the
 * body, so it gets its own host stub). */
static void conv_body(simgpu_launch *l, void **p)
{
    gemm_body(l, p);
}

int wl_register_kernels(void)
{
    const simgpu_kernel ks[] = {
        {"gemm", gemm_body, 8, {8, 8, 8, 8, 8, 8, 4, 8}},
        {"conv2d", conv_body, 8, {8, 8, 8, 8, 8, 8, 4, 8}},
        {"elementwise", elementwise_body, 15, {8, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8}},
        {"embedding_gather", gather_body, 6, {8, 8, 8, 8, 4, 8}},
        {"embedding_scatter_add", scatter_body, 6, {8, 8, 8, 8, 4, 8}},
        {"multi_tensor_adam", adam_body, 5, {sizeof(tensor_list), 8, 4, 4, 4}},
        {"check_overflow", overflow_body, 4, {sizeof(tensor_list), 8, 8, 8}},
    };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        if (simgpu_register_kernel(&ks[i]) != 0)
            return 1;
    return 0;
}

/* ---- host side ----------------------------------------------------------- */

void *wl_alloc(wl_ctx *c, size_t bytes)
{
    void *p = NULL;
    cudaError_t e;
    if (strcmp(c->alloc, "managed") == 0) {
        e = cudaMallocManaged(&p, bytes, cudaMemAttachGlobal);
    } else if (strcmp(c->alloc, "host") == 0) {
        void *h;
        e = cudaHostAlloc(&h, bytes, cudaHostAllocMapped);
        if (e == cudaSuccess)
            e = cudaHostGetDevicePointer(&p, h, 0);
    } else {
        e = cudaMalloc(&p, bytes);
    }
    if (e != cudaSuccess) {
        if (!c->error)
            c->error = (int)e;
        return NULL;
    }
    c->allocated += bytes;
    return p;
}

void wl_free(wl_ctx *c, void *p, size_t bytes)
{
    if (!p)
        return;
    /* Pinned host memory is mapped at its own address (unified addressing). */
    cudaError_t e = strcmp(c->alloc, "host") == 0 ? cudaFreeHost(p) : cudaFree(p);
    if (e != cudaSuccess && !c->error)
        c->error = (int)e;
    c->allocated -= bytes;
}

/* Modeled compute of `units` work units; in counting mode, counts them. */
static double compute_of(wl_ctx *c, double units)
{
    c->units += units;
    return units * c->ns_per_unit;
}

/* The streams a workload launches on (0: the legacy stream), and the
 * current one (wl_stream). */
#define WL_STREAMS 4
static cudaStream_t wl_streams[WL_STREAMS];
static cudaStream_t wl_cur;

void wl_stream(wl_ctx *c, int k)
{
    if (c->counting || k < 0 || k >= WL_STREAMS)
        return;
    if (k && !wl_streams[k]) {
        cudaError_t e = cudaStreamCreateWithFlags(&wl_streams[k], cudaStreamNonBlocking);
        if (e != cudaSuccess && !c->error)
            c->error = (int)e;
    }
    wl_cur = wl_streams[k];
}

void wl_stream_wait(wl_ctx *c, int waiter, int on)
{
    if (c->counting)
        return;
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaEventRecord(ev, wl_streams[on]);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(wl_streams[waiter], ev, 0);
    if (e == cudaSuccess)
        e = cudaEventDestroy(ev);
    if (e != cudaSuccess && !c->error)
        c->error = (int)e;
}

/* Launches `body` on the current stream, recording the first error. */
static void launch(wl_ctx *c, void (*body)(simgpu_launch *, void **), unsigned gx, unsigned gy, void **args)
{
    dim3 grid = {gx ? gx : 1, gy ? gy : 1, 1}, block = {256, 1, 1};
    cudaError_t e = cudaLaunchKernel((const void *)body, grid, block, args, 0, wl_cur);
    if (e != cudaSuccess && !c->error)
        c->error = (int)e;
}

void wl_upload(wl_ctx *c, void *dst, const void *src, size_t bytes)
{
    if (c->counting)
        return;
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess && !c->error)
        c->error = (int)e;
}

void wl_download(wl_ctx *c, void *dst, const void *src, size_t bytes)
{
    if (c->counting) {
        memset(dst, 0, bytes);
        return;
    }
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess && !c->error)
        c->error = (int)e;
}

/* Shared body of wl_gemm and wl_conv. */
static void matmul(wl_ctx *c, void (*body)(simgpu_launch *, void **), const void *x, const void *w, void *y,
                   size_t xb, size_t wb, size_t yb, unsigned tn, unsigned tm, bool accumulate)
{
    double ns = compute_of(c, GEMM_UNITS_PER_BYTE * (double)(xb + wb + yb));
    if (c->counting)
        return;
    int acc = accumulate;
    void *args[] = {&x, &w, &y, &xb, &wb, &yb, &acc, &ns};
    launch(c, body, tn, tm, args);
}

void wl_gemm(wl_ctx *c, const void *x, const void *w, void *y, size_t xb, size_t wb, size_t yb, unsigned tn,
             unsigned tm, bool accumulate)
{
    matmul(c, gemm_body, x, w, y, xb, wb, yb, tn, tm, accumulate);
}

void wl_conv(wl_ctx *c, const void *x, const void *w, void *y, size_t xb, size_t wb, size_t yb, unsigned tn,
             unsigned tm, bool accumulate)
{
    matmul(c, conv_body, x, w, y, xb, wb, yb, tn, tm, accumulate);
}

void wl_ew(wl_ctx *c, int n, const wl_t *t)
{
    wl_ew_grid(c, n, t, 256);
}

void wl_ew_grid(wl_ctx *c, int n, const wl_t *t, unsigned blocks)
{
    double bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += (double)t[i].bytes * (t[i].mode == SIMGPU_READ_WRITE ? 2 : 1);
    double ns = compute_of(c, EW_UNITS_PER_BYTE * bytes);
    if (c->counting)
        return;
    void *ptr[6] = {0};
    size_t size[6] = {0};
    unsigned modes = 0;
    if (n > 6)
        n = 6;
    for (int i = 0; i < n; i++) {
        ptr[i] = t[i].p;
        size[i] = t[i].bytes;
        modes |= (unsigned)t[i].mode << (2 * i);
    }
    void *args[] = {&ns, &n, &modes, &ptr[0], &ptr[1], &ptr[2], &ptr[3], &ptr[4], &ptr[5],
                    &size[0], &size[1], &size[2], &size[3], &size[4], &size[5]};
    launch(c, elementwise_body, blocks, 1, args);
}

void wl_gather(wl_ctx *c, const void *table, const int32_t *idx, void *out, size_t row_bytes, unsigned n)
{
    double ns = compute_of(c, EW_UNITS_PER_BYTE * 2.0 * (double)n * (double)row_bytes);
    if (c->counting)
        return;
    void *args[] = {&table, &idx, &out, &row_bytes, &n, &ns};
    launch(c, gather_body, n, 1, args);
}

void wl_scatter_add(wl_ctx *c, void *grad, const int32_t *idx, const void *in, size_t row_bytes, unsigned n)
{
    double ns = compute_of(c, EW_UNITS_PER_BYTE * 3.0 * (double)n * (double)row_bytes);
    if (c->counting)
        return;
    void *args[] = {&grad, &idx, &in, &row_bytes, &n, &ns};
    launch(c, scatter_body, n, 1, args);
}

/* Fills one launch's tensor list from tensors [start, start+k). */
static void fill_list(tensor_list *tl, void **const lists[], int depth, const size_t *bytes, int start, int k)
{
    memset(tl, 0, sizeof *tl);
    for (int i = 0; i < k; i++) {
        for (int d = 0; d < depth; d++)
            tl->addr[d][i] = lists[d][start + i];
        tl->numel[i] = (int64_t)(bytes[start + i] / 4);
        tl->block_to_tensor[i] = (unsigned char)i;
    }
    tl->start_tensor = start;
}

void wl_multi_adam(wl_ctx *c, void **const lists[4], const size_t *bytes, int n)
{
    for (int s = 0; s < n; s += LIST_MAX) {
        int k = n - s < LIST_MAX ? n - s : LIST_MAX;
        double b = 0;
        for (int i = 0; i < k; i++)
            b += (double)bytes[s + i];
        double ns = compute_of(c, EW_UNITS_PER_BYTE * 7.0 * b);
        if (c->counting)
            continue;
        tensor_list tl;
        fill_list(&tl, lists, 4, bytes, s, k);
        float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f;
        void *args[] = {&tl, &ns, &lr, &b1, &b2};
        launch(c, adam_body, (unsigned)k, 1, args);
    }
}

void wl_check_overflow(wl_ctx *c, void *const *t, const size_t *bytes, int n, int32_t *counter, int32_t *flag)
{
    void **const lists[1] = {(void **)t};
    for (int s = 0; s < n; s += LIST_MAX) {
        int k = n - s < LIST_MAX ? n - s : LIST_MAX;
        double b = 0;
        for (int i = 0; i < k; i++)
            b += (double)bytes[s + i];
        double ns = compute_of(c, EW_UNITS_PER_BYTE * b);
        if (c->counting)
            continue;
        tensor_list tl;
        fill_list(&tl, lists, 1, bytes, s, k);
        void *args[] = {&tl, &counter, &flag, &ns};
        launch(c, overflow_body, (unsigned)k, 1, args);
    }
}

size_t wl_pages(double bytes)
{
    size_t s = (size_t)(bytes / (double)(2 * WL_MIB)) * 2 * WL_MIB;
    return s ? s : 2 * WL_MIB;
}

uint32_t wl_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return (uint32_t)(x >> 32);
}
