/*
 * shim_graph_test.c — liblmshim.so in front of a program that captures
 * launches over managed chunks into a CUDA graph and replays it (as PyTorch
 * CUDA graphs do), under each residency policy (meson.build). The capture
 * must end without error, the replays must compute the right results, the
 * graph's chunks must be made resident at its launch (policies that fetch),
 * and the budget must hold throughout.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "lmshim.h"
#include "simgpu.h"

#define CHUNK (64 * MiB)
#define NCHUNKS 8

/* bump(p, bytes): p[0] += 1 (a 64-bit counter); touches the whole range. */
static void bump(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    (*(uint64_t *)(uintptr_t)a)++;
    l->compute(l, 1e4);
}

static CUfunction f_bump;

static void setup(void)
{
    primary_context(0);
    f_bump = sim_function(&(simgpu_kernel){"bump", bump, 2, {8, 8}});
}

static CUresult launch_bump(CUdeviceptr p, CUstream s)
{
    size_t bytes = CHUNK;
    void *args[] = {&p, &bytes};
    return cuLaunchKernel(f_bump, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

/* Capture in global mode (the strictest) over managed chunks, a launch on
 * another stream while the capture runs, a stream-ordered free of an
 * off-device chunk inside the capture; then three replays. */
static void capture_and_replay(void)
{
    setup();
    CUdeviceptr c[NCHUNKS], spare;
    int managed = 0;
    for (int i = 0; i < NCHUNKS; i++) {
        OK(cuMemAlloc(&c[i], CHUNK));
        OK(cuMemsetD8(c[i], 0, 64));
        managed += is_managed(c[i]);
    }
    OK(cuMemAlloc(&spare, CHUNK));
    CHECK(managed >= NCHUNKS / 2);   /* most chunks left the device */
    CHECK(is_managed(spare));
    CUstream s, other;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    lms_device_stats before, after;
    CHECK(get_stats(0, &before) == 0);

    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < NCHUNKS; i++)
            OK(launch_bump(c[i], s));
    OK(launch_bump(c[0], other));        /* real work elsewhere meanwhile */
    OK(cuMemFreeAsync(spare, s));        /* must not synchronize s */
    CUstreamCaptureStatus st;
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CHECK(is_managed(spare));            /* the free belongs to the graph */
    CHECK_EQ_U(counter(c[1]), 0);        /* nothing captured ran */
    CHECK_EQ_U(counter(c[0]), 1);        /* the other stream's launch ran */

    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphDestroy(g));
    simgpu_counters c0, c1;
    OK(simgpu_get_counters(0, &c0));
    for (int rep = 0; rep < 3; rep++) {
        OK(cuGraphLaunch(e, s));
        check_budget(0);
    }
    OK(cuStreamSynchronize(s));
    OK(simgpu_get_counters(0, &c1));
    CHECK_EQ_U(c1.launches - c0.launches, 3 * 2 * NCHUNKS);
    for (int i = 0; i < NCHUNKS; i++)
        CHECK_EQ_U(counter(c[i]), 6 + (i == 0));
    CHECK(get_stats(0, &after) == 0);
    const char *policy = getenv("LMS_POLICY");
    if (policy && strcmp(policy, "none") == 0) {
        CHECK_EQ_U(after.prefetches, before.prefetches);
        CHECK(c1.remote_bytes > c0.remote_bytes);
    } else {
        CHECK(after.prefetches > before.prefetches);   /* fetched for the graph */
        CHECK(c1.prefetch_bytes > c0.prefetch_bytes);
    }
    /* The captured free was released once the graph passed it. */
    OK(launch_bump(c[1], s));
    CUdeviceptr base;
    size_t size;
    CHECK(cuMemGetAddressRange(&base, &size, spare) != CUDA_SUCCESS);
    OK(cuGraphExecDestroy(e));
    /* After the graph, ordinary launches still fetch and evict freely. */
    for (int i = 0; i < NCHUNKS; i++) {
        OK(launch_bump(c[i], s));
        check_budget(0);
    }
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(counter(c[2]), 7);
    for (int i = 0; i < NCHUNKS; i++)
        OK(cuMemFree(c[i]));
}

/* The per-thread default stream captured through the _ptsz entry points,
 * in thread-local and relaxed modes. */
static void capture_ptsz_modes(void)
{
    setup();
    CUdeviceptr c[NCHUNKS];
    for (int i = 0; i < NCHUNKS; i++) {
        OK(cuMemAlloc(&c[i], CHUNK));
        OK(cuMemsetD8(c[i], 0, 64));
    }
    CUresult (*begin)(CUstream, CUstreamCaptureMode) = NULL;
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void **, void **) = NULL;
    CUresult (*glaunch)(CUgraphExec, CUstream) = NULL;
    CUresult (*free_async)(CUdeviceptr, CUstream) = NULL;
    CUdriverProcAddressQueryResult q;
    cuuint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    OK(cuGetProcAddress("cuStreamBeginCapture", (void **)&begin, 12000, ptds, &q));
    OK(cuGetProcAddress("cuLaunchKernel", (void **)&launch, 12000, ptds, &q));
    OK(cuGetProcAddress("cuGraphLaunch", (void **)&glaunch, 12000, ptds, &q));
    OK(cuGetProcAddress("cuMemFreeAsync", (void **)&free_async, 12000, ptds, &q));
    CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_RELAXED};
    for (int m = 0; m < 2; m++) {
        CUdeviceptr spare, refused;
        OK(cuMemAlloc(&spare, CHUNK));
        OK(begin(NULL, modes[m]));
        /* An allocation this thread's capture forbids gets CUDA's answer
         * (in relaxed mode it is allowed). */
        if (modes[m] == CU_STREAM_CAPTURE_MODE_RELAXED) {
            OK(cuMemAlloc(&refused, CHUNK));
            OK(cuMemFree(refused));
        } else {
            CHECK_IS(cuMemAlloc(&refused, CHUNK), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
            CUstreamCaptureStatus st;
            OK(cuStreamIsCapturing(CU_STREAM_PER_THREAD, &st));
            CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
            CUgraph dead;
            CHECK_IS(cuStreamEndCapture(CU_STREAM_PER_THREAD, &dead),
                     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
            OK(begin(NULL, modes[m]));
        }
        for (int i = 0; i < NCHUNKS; i++) {
            size_t bytes = CHUNK;
            void *args[] = {&c[i], &bytes};
            OK(launch(f_bump, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
        }
        OK(free_async(spare, NULL));   /* the captured per-thread stream, not the legacy one */
        CUgraph g;
        OK(cuStreamEndCapture(CU_STREAM_PER_THREAD, &g));
        CUgraphExec e;
        OK(cuGraphInstantiate(&e, g, 0));
        OK(glaunch(e, NULL));
        OK(glaunch(e, NULL));
        check_budget(0);
        OK(cuGraphExecDestroy(e));
        OK(cuGraphDestroy(g));
    }
    OK(cuCtxSynchronize());
    for (int i = 0; i < NCHUNKS; i++)
        CHECK_EQ_U(counter(c[i]), 4);
}

static const test_case cases[] = {
    {"capture_and_replay", capture_and_replay},
    {"capture_ptsz_modes", capture_ptsz_modes},
};

TEST_MAIN(cases)
