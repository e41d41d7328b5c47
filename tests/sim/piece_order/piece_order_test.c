/*
 * piece_order_test.c — lmshim tracks a chunk larger than half the room as
 * 2 MiB pieces and judges which pieces a launch needs from its pointers;
 * a kernel may still reach any byte of the allocation. Here a kernel given
 * a pointer into the chunk reads pieces before it, which a launch on
 * another stream has just had fetched: the simulator counts a block read
 * before its copy ended (inflight_waits) unless lmshim ordered the kernel
 * after that fetch. Settings in meson.build (64 MiB budget, lru, streams
 * side by side).
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "lmshim.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define PIECE (2 * MiB)
#define SIZE (20 * PIECE + 1)   /* 21 pieces: more than half the room */

/* span(p, bytes): touches [p, p+bytes), adds 1 to its first byte. */
static void span(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint8_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
}

/* back(p, bytes): touches [p - bytes, p), adds 1 to its first byte (a
 * pointer into an allocation reaches all of it). */
static void back(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0] - *(size_t *)p[1];
    l->access(l, a, *(size_t *)p[1], SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint8_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, 1e9);   /* long: what follows on other streams runs meanwhile */
}

static CUfunction f_span, f_back;
static CUmodule mod;

static void setup(void)
{
    primary_context(0);
    simgpu_kernel k = {"span", span, 2, {8, 8}};
    OK(simgpu_register_kernel(&k));
    simgpu_kernel k2 = {"back", back, 2, {8, 8}};
    OK(simgpu_register_kernel(&k2));
    OK(cuModuleLoadData(&mod, "x"));
    OK(cuModuleGetFunction(&f_span, mod, "span"));
    OK(cuModuleGetFunction(&f_back, mod, "back"));
}

static CUresult launch(CUfunction f, CUdeviceptr p, size_t bytes, CUstream s)
{
    void *args[] = {&p, &bytes};
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

/* The checks every case ends with: no block read mid-copy, none faulted
 * in, none evicted in use, the budget kept, the kernels' counts. */
static void check_end(CUdeviceptr c)
{
    OK(cuCtxSynchronize());
    check_no_hazards(0, true);
    uint8_t v = 0;
    OK(cuMemcpyDtoH(&v, c + 5 * PIECE, 1));
    CHECK_EQ_U(v, 2);   /* the fetching launch and the one reaching back */
    OK(cuMemFree(c));
}

/* A chunk of SIZE bytes, zeroed; the caller frees it. */
static CUdeviceptr zeroed_chunk(void)
{
    CUdeviceptr c;
    OK(cuMemAlloc(&c, SIZE));
    OK(cuMemsetD8(c, 0, SIZE));
    return c;
}

/* A zeroed chunk whose pieces 10.. were fetched by a launch on the legacy
 * stream, finished; *s is a new non-blocking stream (the caller destroys
 * both). */
static CUdeviceptr tail_fetched(CUstream *s)
{
    CUdeviceptr c = zeroed_chunk();
    OK(launch(f_span, c + 10 * PIECE, PIECE, NULL));
    OK(cuCtxSynchronize());
    OK(cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
    return c;
}

/* Pieces 10.. are fetched on the legacy stream and finished; a launch on
 * stream s given piece 5 fetches 5..9 there; then a launch on the legacy
 * stream given piece 10 (its pieces all resident: it fetches nothing)
 * reads 5..9 back from its pointer. */
static void reach_back(void)
{
    setup();
    CUstream s;
    CUdeviceptr c = tail_fetched(&s);
    OK(launch(f_span, c + 5 * PIECE, PIECE, s));
    OK(launch(f_back, c + 10 * PIECE, 5 * PIECE, NULL));
    check_end(c);
    OK(cuStreamDestroy(s));
}

/* As reach_back, then a launch on stream s of another chunk needs the
 * room: the least recently used pieces, 5..9, go while the kernel reaching
 * back may still read them, unless their eviction waits for it. */
static void reach_back_evict(void)
{
    setup();
    CUdeviceptr c = zeroed_chunk(), d = zeroed_chunk();
    OK(launch(f_span, c + 10 * PIECE, PIECE, NULL));
    OK(cuCtxSynchronize());
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(launch(f_span, c + 5 * PIECE, PIECE, s));
    OK(cuStreamSynchronize(s));
    OK(launch(f_back, c + 10 * PIECE, 5 * PIECE, NULL));
    OK(launch(f_span, d, SIZE, s));
    OK(cuStreamSynchronize(s));
    check_end(c);
    OK(cuMemFree(d));
    OK(cuStreamDestroy(s));
}

/* The same with the fetch made for a graph's launch on stream s. */
static void reach_back_graph(void)
{
    setup();
    CUstream s;
    CUdeviceptr c = tail_fetched(&s);
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    OK(launch(f_span, c + 5 * PIECE, PIECE, s));
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphLaunch(e, s));
    OK(launch(f_back, c + 10 * PIECE, 5 * PIECE, NULL));
    OK(cuStreamSynchronize(s));
    check_end(c);
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
    OK(cuStreamDestroy(s));
}

static const test_case cases[] = {
    {"reach_back", reach_back},
    {"reach_back_graph", reach_back_graph},
    {"reach_back_evict", reach_back_evict},
};

TEST_MAIN(cases)
