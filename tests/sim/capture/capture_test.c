/*
 * capture_test.c — stream capture and graphs in the simulated driver:
 * captured work becomes nodes and runs only at cuGraphLaunch, kernel nodes
 * keep their parameter values, graphs built by hand, and the capture errors
 * CUDA documents.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "simgpu.h"

#define N 1024

/* inc(p, n, k): p[i] += k for i < n. */
static void inc(simgpu_launch *l, void **p)
{
    int *a = *(int **)p[0];
    int n = *(int *)p[1], k = *(int *)p[2];
    l->access(l, (uint64_t)(uintptr_t)a, (size_t)n * sizeof(int), SIMGPU_READ_WRITE);
    for (int i = 0; i < n; i++)
        a[i] += k;
}

static CUfunction f_inc;

static void setup(void)
{
    primary_context(0);
    f_inc = sim_function(&(simgpu_kernel){"inc", inc, 3, {8, 4, 4}});
}

/* Launches inc(p, n, k) on s. */
static CUresult launch_inc(CUdeviceptr p, int n, int k, CUstream s)
{
    void *args[] = {&p, &n, &k};
    return cuLaunchKernel(f_inc, 1, 1, 1, 128, 1, 1, 0, s, args, NULL);
}

/* Reads element i of device buffer p. */
static int at(CUdeviceptr p, int i)
{
    int v = -1;
    OK(cuMemcpyDtoH(&v, p + (CUdeviceptr)i * sizeof(int), sizeof v));
    return v;
}

/* A fork/join capture: two kernels on the origin, one on a side stream,
 * a memset; nothing runs until the graph is launched, then every launch
 * runs all of it with the captured argument values. */
static void capture_replay(void)
{
    setup();
    CUdeviceptr a, b;
    OK(cuMemAlloc(&a, N * sizeof(int)));
    OK(cuMemAlloc(&b, N * sizeof(int)));
    OK(cuMemsetD32(a, 0, N));
    OK(cuMemsetD32(b, 7, N));
    CUstream s, side;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    CUevent fork, join;
    OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    OK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));

    CUstreamCaptureStatus st;
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(launch_inc(a, N, 1, s));
    OK(cuEventRecord(fork, s));
    OK(cuStreamWaitEvent(side, fork, 0));          /* side joins the capture */
    OK(cuStreamIsCapturing(side, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuMemsetD32Async(b, 0, N, side));
    OK(launch_inc(b, N, 5, side));
    OK(cuEventRecord(join, side));
    OK(cuStreamWaitEvent(s, join, 0));             /* and is joined back */
    int k = 10;
    void *args[] = {&a, &(int){N}, &k};
    OK(cuLaunchKernel(f_inc, 1, 1, 1, 128, 1, 1, 0, s, args, NULL));
    k = 1000;                                      /* captured by value */
    cuuint64_t id = 0;
    CUgraph live = NULL;
    const CUgraphNode *deps = NULL;
    size_t ndeps = 0;
    OK(cuStreamGetCaptureInfo(s, &st, &id, &live, &deps, NULL, &ndeps));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && live != NULL && ndeps == 1);
    CHECK(at(a, 0) == 0 && at(b, 3) == 7);         /* nothing ran yet */
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    OK(cuStreamIsCapturing(side, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);

    size_t n = 0;
    OK(cuGraphGetNodes(g, NULL, &n));
    CHECK_EQ_U(n, 4);
    CUgraphNode nodes[4];
    OK(cuGraphGetNodes(g, nodes, &n));
    int kernels = 0;
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType t;
        OK(cuGraphNodeGetType(nodes[i], &t));
        if (t != CU_GRAPH_NODE_TYPE_KERNEL)
            continue;
        kernels++;
        CUDA_KERNEL_NODE_PARAMS p;
        OK(cuGraphKernelNodeGetParams(nodes[i], &p));
        CHECK(p.func == f_inc);
        CUdeviceptr arg = *(CUdeviceptr *)p.kernelParams[0];
        CHECK(arg == a || arg == b);
    }
    CHECK_EQ_U(kernels, 3);

    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphDestroy(g));                          /* the executable keeps its copy */
    simgpu_counters c0, c1;
    OK(simgpu_get_counters(0, &c0));
    for (int i = 0; i < 3; i++)
        OK(cuGraphLaunch(e, s));
    OK(cuGraphUpload(e, s));
    OK(cuStreamSynchronize(s));
    OK(simgpu_get_counters(0, &c1));
    CHECK_EQ_U(c1.launches - c0.launches, 9);
    CHECK_EQ_U(at(a, 0), 33);                       /* 3 x (1 + 10) */
    CHECK_EQ_U(at(a, N - 1), 33);
    CHECK_EQ_U(at(b, 0), 5);                        /* memset to 0, then + 5 */
    OK(cuGraphExecDestroy(e));
    CHECK_IS(cuGraphExecDestroy(e), CUDA_ERROR_INVALID_VALUE);
    OK(cuEventDestroy(fork));
    OK(cuEventDestroy(join));
    OK(cuStreamDestroy(s));
    OK(cuStreamDestroy(side));
    OK(cuMemFree(a));
    OK(cuMemFree(b));
}

/* A graph built with cuGraphCreate and cuGraphAddKernelNode. */
static void graph_by_hand(void)
{
    setup();
    CUdeviceptr a;
    OK(cuMemAlloc(&a, N * sizeof(int)));
    OK(cuMemsetD32(a, 0, N));
    CUgraph g;
    OK(cuGraphCreate(&g, 0));
    int n = N, k1 = 2, k2 = 3;
    void *args1[] = {&a, &n, &k1}, *args2[] = {&a, &n, &k2};
    CUDA_KERNEL_NODE_PARAMS p = {.func = f_inc, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                 .blockDimX = 64, .blockDimY = 1, .blockDimZ = 1,
                                 .kernelParams = args1};
    CUgraphNode n1, n2;
    OK(cuGraphAddKernelNode(&n1, g, NULL, 0, &p));
    p.kernelParams = args2;
    OK(cuGraphAddKernelNode(&n2, g, &n1, 1, &p));
    p.func = NULL;
    CHECK_IS(cuGraphAddKernelNode(&n2, g, NULL, 0, &p), CUDA_ERROR_INVALID_HANDLE);
    CUgraphExec e;
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = 0};
    OK(cuGraphInstantiateWithParams(&e, g, &ip));
    CHECK(ip.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS);
    OK(cuGraphLaunch(e, NULL));
    OK(cuGraphLaunch(e, CU_STREAM_PER_THREAD));
    CHECK_EQ_U(at(a, 5), 10);
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
    CHECK_IS(cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(a));
}

/* Begins a capture on s; the caller then provokes one error. */
static void begin(CUstream s, CUstreamCaptureMode mode)
{
    OK(cuStreamBeginCapture(s, mode));
}

/* cuStreamEndCapture after an error: the capture was invalidated. */
static void ends_invalidated(CUstream s)
{
    CUstreamCaptureStatus st;
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph g = (CUgraph)(uintptr_t)1;
    CHECK_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(g == NULL);
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
}

static void capture_errors(void)
{
    setup();
    CUdeviceptr a, m;
    OK(cuMemAlloc(&a, N * sizeof(int)));
    OK(cuMemAllocManaged(&m, 4 << 20, CU_MEM_ATTACH_GLOBAL));
    CUstream s, nb;
    OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));           /* blocking */
    OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    CUgraph g;
    CHECK_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
    CHECK_IS(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);

    /* Synchronizing a capturing stream. */
    begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CHECK_IS(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    OK(launch_inc(a, N, 1, s));
    CHECK_IS(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_IS(launch_inc(a, N, 1, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ends_invalidated(s);

    /* cuCtxSynchronize and cuStreamQuery while capturing. */
    begin(nb, CU_STREAM_CAPTURE_MODE_RELAXED);
    CHECK_IS(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ends_invalidated(nb);
    begin(nb, CU_STREAM_CAPTURE_MODE_RELAXED);
    CHECK_IS(cuStreamQuery(nb), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ends_invalidated(nb);

    /* Waiting on an event recorded outside the capture: isolation. */
    CUevent outside, inside;
    OK(cuEventCreate(&outside, CU_EVENT_DISABLE_TIMING));
    OK(cuEventCreate(&inside, CU_EVENT_DISABLE_TIMING));
    OK(cuEventRecord(outside, nb));
    begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CHECK_IS(cuStreamWaitEvent(s, outside, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    ends_invalidated(s);
    /* ... unless the wait is external. */
    begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    OK(cuStreamWaitEvent(s, outside, CU_EVENT_WAIT_EXTERNAL));
    OK(launch_inc(a, N, 1, s));
    /* An event recorded inside cannot be synchronized or queried. */
    OK(cuEventRecord(inside, s));
    CHECK_IS(cuEventQuery(inside), CUDA_ERROR_CAPTURED_EVENT);
    CHECK_IS(cuEventSynchronize(inside), CUDA_ERROR_CAPTURED_EVENT);
    CHECK_IS(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ends_invalidated(s);

    /* The legacy stream would wait for a capturing blocking stream. */
    begin(s, CU_STREAM_CAPTURE_MODE_RELAXED);
    CUstreamCaptureStatus st;
    CHECK_IS(cuStreamIsCapturing(NULL, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CHECK_IS(cuMemsetD32Async(a, 1, N, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    ends_invalidated(s);
    /* A non-blocking capturing stream does not interact with it. */
    begin(nb, CU_STREAM_CAPTURE_MODE_RELAXED);
    OK(cuMemsetD32Async(a, 1, N, NULL));
    OK(cuStreamIsCapturing(NULL, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
    OK(cuStreamEndCapture(nb, &g));
    OK(cuGraphDestroy(g));

    /* An operation that cannot be captured: a prefetch. */
    begin(nb, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUmemLocation dev0 = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CHECK_IS(cuMemPrefetchAsync(m, 4 << 20, dev0, 0, nb), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ends_invalidated(nb);

    /* Capture modes: an allocation is refused in a global capture of this
     * thread, allowed in a relaxed one or with the thread's mode relaxed. */
    CUdeviceptr p;
    begin(nb, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CHECK_IS(cuMemAlloc(&p, 4096), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ends_invalidated(nb);
    begin(nb, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    OK(cuThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    OK(cuMemAlloc(&p, 4096));
    OK(cuMemFree(p));
    OK(cuThreadExchangeStreamCaptureMode(&mode));
    OK(cuStreamEndCapture(nb, &g));
    OK(cuGraphDestroy(g));
    begin(nb, CU_STREAM_CAPTURE_MODE_RELAXED);
    OK(cuMemAlloc(&p, 4096));
    OK(cuMemFree(p));
    OK(cuStreamEndCapture(nb, &g));
    OK(cuGraphDestroy(g));

    /* A side stream that was never joined back. */
    CUstream side;
    OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    begin(nb, CU_STREAM_CAPTURE_MODE_GLOBAL);
    OK(cuEventRecord(inside, nb));
    OK(cuStreamWaitEvent(side, inside, 0));
    OK(launch_inc(a, N, 1, side));
    CHECK_IS(cuStreamEndCapture(side, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    CHECK_IS(cuStreamEndCapture(nb, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    begin(nb, CU_STREAM_CAPTURE_MODE_GLOBAL);
    OK(cuEventRecord(inside, nb));
    OK(cuStreamWaitEvent(side, inside, 0));
    OK(launch_inc(a, N, 1, side));
    CHECK_IS(cuStreamEndCapture(nb, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    OK(cuStreamIsCapturing(side, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);

    /* Destroying a capturing stream ends its capture. */
    CUstream tmp;
    OK(cuStreamCreate(&tmp, CU_STREAM_NON_BLOCKING));
    begin(tmp, CU_STREAM_CAPTURE_MODE_GLOBAL);
    OK(launch_inc(a, N, 1, tmp));
    OK(cuStreamDestroy(tmp));
    OK(cuMemAlloc(&p, 4096));                   /* no capture is left */
    OK(cuMemFree(p));
    CHECK_EQ_U(at(a, 0), 1);                    /* only the legacy memset ran, no kernel */
    OK(cuEventDestroy(outside));
    OK(cuEventDestroy(inside));
    OK(cuStreamDestroy(s));
    OK(cuStreamDestroy(nb));
    OK(cuStreamDestroy(side));
    OK(cuMemFree(a));
    OK(cuMemFree(m));
}

/* What another thread may do while this one captures. */
typedef struct other_thread {
    CUcontext ctx;
    CUstreamCaptureMode mode;   /* the other thread's own mode */
    CUresult alloc;             /* its cuMemAlloc's answer */
} other_thread;

static void *alloc_elsewhere(void *arg)
{
    other_thread *o = arg;
    CUdeviceptr p;
    if (cuCtxSetCurrent(o->ctx) != CUDA_SUCCESS)
        return NULL;
    CUstreamCaptureMode m = o->mode;
    cuThreadExchangeStreamCaptureMode(&m);
    o->alloc = cuMemAlloc(&p, 4096);
    if (o->alloc == CUDA_SUCCESS)
        cuMemFree(p);
    return NULL;
}

/* A global capture forbids other threads in global mode to allocate (and is
 * invalidated by the attempt); a thread-local capture does not. */
static void capture_threads(void)
{
    CUcontext ctx = primary_context(0);
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    const struct { CUstreamCaptureMode capture, other; CUresult want; } rows[] = {
        {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_GLOBAL, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED},
        {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CUDA_SUCCESS},
        {CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_GLOBAL, CUDA_SUCCESS},
        {CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_GLOBAL, CUDA_SUCCESS},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        OK(cuStreamBeginCapture(s, rows[i].capture));
        other_thread o = {.ctx = ctx, .mode = rows[i].other, .alloc = CUDA_ERROR_UNKNOWN};
        pthread_t t;
        CHECK(pthread_create(&t, NULL, alloc_elsewhere, &o) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        CHECK_IS(o.alloc, rows[i].want);
        CUgraph g;
        if (rows[i].want == CUDA_SUCCESS) {
            OK(cuStreamEndCapture(s, &g));
            OK(cuGraphDestroy(g));
        } else {
            CHECK_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        }
    }
    OK(cuStreamDestroy(s));
}

/* cuGetProcAddress hands out every capture and graph entry point. */
static void proc_variants(void)
{
    setup();
    const char *names[] = {"cuStreamBeginCapture", "cuStreamEndCapture", "cuStreamIsCapturing",
                           "cuStreamGetCaptureInfo", "cuGraphInstantiate", "cuGraphLaunch",
                           "cuGraphUpload", "cuGraphDestroy", "cuGraphExecDestroy",
                           "cuGraphKernelNodeGetParams", "cuGraphGetNodes",
                           "cuGraphInstantiateWithParams", "cuThreadExchangeStreamCaptureMode"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *legacy = NULL, *ptsz = NULL;
        CUdriverProcAddressQueryResult q;
        OK(cuGetProcAddress(names[i], &legacy, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
        CHECK(legacy != NULL && q == CU_GET_PROC_ADDRESS_SUCCESS);
        OK(cuGetProcAddress(names[i], &ptsz, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                            &q));
        CHECK(ptsz != NULL);
    }
    void *fn;
    CUdriverProcAddressQueryResult q;
    OK(cuGetProcAddress("cuGraphInstantiate", &fn, 12000, 0, &q));
    CHECK(fn == (void *)&cuGraphInstantiateWithFlags);
    OK(cuGetProcAddress("cuStreamGetCaptureInfo", &fn, 12030, 0, &q));
    CHECK(fn == (void *)&cuStreamGetCaptureInfo_v3);
    OK(cuGetProcAddress("cuStreamBeginCapture", &fn, 10010, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q));
    PFN_cuStreamBeginCapture_v10010_ptsz begin_ptsz = (PFN_cuStreamBeginCapture_v10010_ptsz)fn;
    OK(begin_ptsz(NULL, CU_STREAM_CAPTURE_MODE_RELAXED));   /* the per-thread stream captures */
    CUstreamCaptureStatus st;
    OK(cuGetProcAddress("cuStreamIsCapturing", &fn, 10000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q));
    OK(((PFN_cuStreamIsCapturing_v10000_ptsz)fn)(NULL, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph g;
    OK(cuStreamEndCapture(CU_STREAM_PER_THREAD, &g));
    OK(cuGraphDestroy(g));
}

static const test_case cases[] = {
    {"capture_replay", capture_replay},
    {"graph_by_hand", graph_by_hand},
    {"capture_errors", capture_errors},
    {"capture_threads", capture_threads},
    {"proc_variants", proc_variants},
};

TEST_MAIN(cases)
