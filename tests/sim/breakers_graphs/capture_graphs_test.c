/*
 * capture_graphs_test.c — liblmshim.so (LD_PRELOAD, settings in meson.build)
 * in front of programs that capture and replay CUDA graphs the ways the
 * simple tests do not: captures on one thread while others allocate and
 * free, allocations and frees inside a capture, graphs instantiated before
 * any chunk exists, destroyed while in flight, launched a thousand times at
 * once or from six threads, chunks freed under a graph. Each case checks
 * the results, CUDA's answers, the simulator's counters of missing waits
 * and lmshim's budget.
 */
#include "breakers.h"


/* ---- capture on one thread, stream-ordered memory on another ---------------- */

typedef struct async_job {
    CUstream s;
    CUdeviceptr victim;       /* a managed chunk the job frees in stream order */
    CUresult alloc, launch, free_new, free_victim;
} async_job;

/* Stream-ordered allocation, launch and frees on a stream that does not
 * capture, by a thread in the default (global) capture mode: all allowed
 * while another thread captures. */
static void *async_work(void *arg)
{
    async_job *j = arg;
    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return (void *)1;
    CUdeviceptr p = 0;
    j->alloc = cuMemAllocAsync(&p, CHUNK, j->s);
    if (j->alloc == CUDA_SUCCESS) {
        j->launch = launch_bump(p, j->s);
        j->free_new = cuMemFreeAsync(p, j->s);
    }
    j->free_victim = cuMemFreeAsync(j->victim, j->s);
    return NULL;
}

/* A global-mode capture on the main thread; meanwhile another thread
 * allocates, launches and frees in stream order on its own stream, which
 * CUDA allows. lmshim's own work for those calls must not break the capture. */
static void capture_vs_async_thread(void)
{
    setup();
    CUdeviceptr c[4];
    for (int i = 0; i < 4; i++)
        c[i] = chunk();
    CUdeviceptr victim = chunk();
    CHECK(is_managed(victim));
    CUstream s, other;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 4; i++)
        OK(launch_bump(c[i], s));
    async_job j = {.s = other, .victim = victim};
    pthread_t th;
    void *ret;
    CHECK(pthread_create(&th, NULL, async_work, &j) == 0);
    CHECK(pthread_join(th, &ret) == 0 && ret == NULL);
    OK(j.alloc);
    OK(j.launch);
    OK(j.free_new);
    OK(j.free_victim);
    CUstreamCaptureStatus st;
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphLaunch(e, s));
    OK(cuGraphLaunch(e, s));
    OK(cuStreamSynchronize(s));
    for (int i = 0; i < 4; i++)
        CHECK_EQ_U(counter(c[i]), 2);
    check_invariants();
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
    for (int i = 0; i < 4; i++)
        OK(cuMemFree(c[i]));
}

/* ---- an allocation inside a capture ------------------------------------------ */

/* A stream-ordered allocation on a capturing stream is a node of the
 * graph: each launch of the graph has its own memory, freed by the graph's
 * free node. lmshim must not hand out memory of its own there (one
 * allocation made at capture, released after the first launch, then used
 * by every later launch). The simulator makes it an allocation node (an
 * older one refused it); what lmshim may not do is succeed with a chunk
 * off the device. */
static void alloc_in_capture(void)
{
    setup();
    CUdeviceptr c[4];
    for (int i = 0; i < 4; i++)
        c[i] = chunk();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(launch_bump(c[0], s));
    CUdeviceptr tmp = 0;
    CUresult r = cuMemAllocAsync(&tmp, CHUNK, s);
    printf("cuMemAllocAsync in capture: %d\n", (int)r);
    CHECK(r != CUDA_SUCCESS || !is_managed(tmp));
    CUgraph g = NULL;
    CUresult er = cuStreamEndCapture(s, &g);
    CHECK(r == CUDA_SUCCESS ? er == CUDA_SUCCESS : er == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    if (g)
        OK(cuGraphDestroy(g));
    check_invariants();
}
/* ---- graphs and their pins ---------------------------------------------------- */


/* A graph over device memory instantiated before any managed chunk exists,
 * launched once chunks exist and are fetched and evicted around it. */
static void graph_before_chunks(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr small;
    OK(cuMemAlloc(&small, 1 * MiB));   /* below the threshold: on the device */
    OK(cuMemsetD8(small, 0, 64));
    CHECK(!is_managed(small));
    size_t one = 1 * MiB;
    void *args[] = {&small, &one};
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuLaunchKernel(f_bump, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    CUdeviceptr c[8];
    for (int i = 0; i < 8; i++)
        c[i] = chunk();
    for (int rep = 0; rep < 4; rep++) {
        for (int i = 0; i < 8; i++)
            OK(launch_bump(c[i], s));
        OK(cuGraphLaunch(e, s));
    }
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(counter(small), 4);
    for (int i = 0; i < 8; i++)
        CHECK_EQ_U(counter(c[i]), 4);
    check_invariants();
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
}

/* Executable graphs destroyed while their launches are in flight; new
 * graphs made meanwhile may get the same handles. */
static void exec_destroyed_in_flight(void)
{
    CUstream s;
    CUdeviceptr c[8];
    setup_stream_chunks(&s, c, 8);
    for (int round = 0; round < 20; round++) {
        CUgraphExec e = capture_bumps(s, &c[round % 4], 4);
        OK(cuGraphLaunch(e, s));
        OK(cuGraphLaunch(e, s));
        OK(cuGraphExecDestroy(e));   /* its launches still run */
        OK(launch_bump(c[4 + round % 4], s));
    }
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(counters_sum(c, 8), 20 * 8 + 20);
    /* Every pin was let go: the chunks the graphs held can all be evicted
     * for the others, over and over. */
    lms_device_stats a, b;
    CHECK(get_stats(0, &a) == 0);
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < 8; i++)
            OK(launch_bump(c[i], s));
    OK(cuStreamSynchronize(s));
    CHECK(get_stats(0, &b) == 0);
    const char *policy = getenv("LMS_POLICY");
    if (!policy || strcmp(policy, "none") != 0)
        CHECK(b.evictions > a.evictions);
    check_invariants();
}

/* A thousand launches of graphs in flight at once (more than the pins
 * lmshim keeps), over twice the budget of chunks. */
static void thousand_launches(void)
{
    CUstream s;
    CUdeviceptr c[8];
    setup_stream_chunks(&s, c, 8);
    CUgraphExec e[2] = {capture_bumps(s, &c[0], 4), capture_bumps(s, &c[4], 4)};
    for (int k = 0; k < 1000; k++)
        OK(cuGraphLaunch(e[k % 2], s));
    OK(cuStreamSynchronize(s));
    for (int i = 0; i < 8; i++)
        CHECK_EQ_U(counter(c[i]), 500);
    check_invariants();
    /* All pins went when the launches ended: a launch over the other half
     * still finds room. */
    lms_device_stats a, b;
    for (int rep = 0; rep < 3; rep++) {
        CHECK(get_stats(0, &a) == 0);
        OK(cuGraphLaunch(e[rep % 2], s));
        OK(cuStreamSynchronize(s));
        CHECK(get_stats(0, &b) == 0);
    }
    OK(cuGraphExecDestroy(e[0]));
    OK(cuGraphExecDestroy(e[1]));
    check_invariants();
}

/* A graph names two chunks per node and touches one; the other is freed
 * (and its address perhaps handed out again) while launches of the graph
 * are in flight, then the graph is launched again. */
static void relaunch_after_free(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr used[4], named[4];
    for (int i = 0; i < 4; i++) {
        used[i] = chunk();
        named[i] = chunk();
    }
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 4; i++) {
        size_t bytes = CHUNK;
        void *args[] = {&used[i], &named[i], &bytes};
        OK(cuLaunchKernel(f_pair, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    }
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphDestroy(g));
    OK(cuGraphLaunch(e, s));
    for (int i = 0; i < 4; i++)
        OK(cuMemFree(named[i]));   /* while the launch may still run */
    CUdeviceptr fresh[4];
    for (int i = 0; i < 4; i++)
        fresh[i] = chunk();        /* may reuse the addresses */
    for (int rep = 0; rep < 5; rep++) {
        OK(cuGraphLaunch(e, s));
        for (int i = 0; i < 4; i++)
            OK(launch_bump(fresh[i], s));
    }
    OK(cuStreamSynchronize(s));
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_U(counter(used[i]), 6);
        CHECK_EQ_U(counter(fresh[i]), 5);
    }
    OK(cuGraphExecDestroy(e));
    check_invariants();
}

/* ---- captures on several threads while another allocates ------------------- */

typedef struct cap_job {
    int id;
    CUstreamCaptureMode mode;
    CUdeviceptr *c;           /* 2 chunks of its own */
    CUresult fail;            /* first failure */
    int line;
} cap_job;

/* Captures, instantiates and launches a graph over its chunks ten times. */
static void *cap_work(void *arg)
{
    cap_job *j = arg;
    TRY(j, cuCtxSetCurrent(ctx));
    CUstream s;
    TRY(j, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int round = 0; round < 10 && !j->fail; round++) {
        TRY(j, cuStreamBeginCapture(s, j->mode));
        TRY(j, launch_bump(j->c[0], s));
        TRY(j, launch_bump(j->c[1], s));
        CUgraph g = NULL;
        TRY(j, cuStreamEndCapture(s, &g));
        if (!g)
            break;
        CUgraphExec e;
        TRY(j, cuGraphInstantiate(&e, g, 0));
        TRY(j, cuGraphLaunch(e, s));
        TRY(j, cuGraphExecDestroy(e));
        TRY(j, cuGraphDestroy(g));
    }
    TRY(j, cuStreamSynchronize(s));
    TRY(j, cuStreamDestroy(s));
    return NULL;
}

static atomic_bool churn_stop;

/* Allocates, launches over and frees chunks. In thread-local mode its own
 * allocations are allowed during the others' captures; in the global mode
 * (j->mode) it makes only stream-ordered ones, allowed in any mode. */
static void *churn_work(void *arg)
{
    cap_job *j = arg;
    TRY(j, cuCtxSetCurrent(ctx));
    CUstreamCaptureMode mode = j->mode;
    TRY(j, cuThreadExchangeStreamCaptureMode(&mode));
    bool sync_ok = j->mode != CU_STREAM_CAPTURE_MODE_GLOBAL;
    CUstream s;
    TRY(j, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    int n = 0;
    while (!atomic_load(&churn_stop) && !j->fail && n < 200) {
        CUdeviceptr p, q;
        if (sync_ok)
            TRY(j, cuMemAlloc(&p, CHUNK));
        else
            TRY(j, cuMemAllocAsync(&p, CHUNK, s));
        TRY(j, cuMemAllocAsync(&q, CHUNK, s));
        TRY(j, launch_bump(p, s));
        TRY(j, launch_bump(q, s));
        TRY(j, cuMemFreeAsync(p, s));
        TRY(j, cuMemFreeAsync(q, s));
        n++;
    }
    TRY(j, cuStreamSynchronize(s));
    TRY(j, cuStreamDestroy(s));
    return NULL;
}

static void captures_threads(void)
{
    setup();
    enum { CAPS = 3 };
    CUdeviceptr c[CAPS][2];
    cap_job jobs[CAPS + 2];
    CUstreamCaptureMode modes[CAPS] = {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                       CU_STREAM_CAPTURE_MODE_RELAXED};
    pthread_t th[CAPS + 2];
    for (int i = 0; i < CAPS; i++) {
        c[i][0] = chunk();
        c[i][1] = chunk();
        jobs[i] = (cap_job){.id = i, .mode = modes[i], .c = c[i]};
    }
    jobs[CAPS] = (cap_job){.id = CAPS, .mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL};
    jobs[CAPS + 1] = (cap_job){.id = CAPS + 1, .mode = CU_STREAM_CAPTURE_MODE_GLOBAL};
    atomic_store(&churn_stop, false);
    for (int i = CAPS; i < CAPS + 2; i++)
        CHECK(pthread_create(&th[i], NULL, churn_work, &jobs[i]) == 0);
    for (int i = 0; i < CAPS; i++)
        CHECK(pthread_create(&th[i], NULL, cap_work, &jobs[i]) == 0);
    for (int i = 0; i < CAPS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    atomic_store(&churn_stop, true);
    for (int i = CAPS; i < CAPS + 2; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    for (int i = 0; i < CAPS + 2; i++) {
        if (jobs[i].fail)
            fprintf(stderr, "thread %d: error %d at line %d\n", i, (int)jobs[i].fail, jobs[i].line);
        CHECK_EQ_U(jobs[i].fail, 0);
    }
    for (int i = 0; i < CAPS; i++) {
        CHECK_EQ_U(counter(c[i][0]), 10);
        CHECK_EQ_U(counter(c[i][1]), 10);
    }
    check_invariants();
}

/* A free the driver refuses (cuMemFree during this thread's global
 * capture) leaves the chunk as it was: still found in launches, still
 * fetched and evicted, and freed later with its charge given back. */
static void refused_free_keeps_chunk(void)
{
    setup();
    enum { N = 6 };
    CUdeviceptr c[N];
    for (int i = 0; i < N; i++)
        c[i] = chunk();
    CUstream s, cap;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&cap, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < N; i++)
        OK(launch_bump(c[i], s));
    OK(cuStreamSynchronize(s));
    OK(cuStreamBeginCapture(cap, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_IS(cuMemFree(c[2]), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g;
    CHECK_IS(cuStreamEndCapture(cap, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    lms_device_stats a, b;
    CHECK(get_stats(0, &a) == 0);
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < N; i++)
            OK(launch_bump(c[i], s));
    OK(cuStreamSynchronize(s));
    CHECK(get_stats(0, &b) == 0);
    const char *policy = getenv("LMS_POLICY");
    if (!policy || strcmp(policy, "none") != 0)   /* six chunks, four fit: all move */
        CHECK(b.prefetches - a.prefetches >= 3 * (N - 4));
    for (int i = 0; i < N; i++) {
        CHECK_EQ_U(counter(c[i]), 4);
        OK(cuMemFree(c[i]));
    }
    CHECK(get_stats(0, &b) == 0);
    CHECK_EQ_U(b.used, 0);
    CHECK_EQ_U(b.live_chunks[1], 0);
    check_invariants();
}

/* A stream-ordered free of a resident chunk captured into a graph: the
 * memory stays (on the device) until a launch of the graph passes the
 * free, so its charge must stay too; device allocations made meanwhile
 * must not take the device past the budget. */
static void captured_free_keeps_charge(void)
{
    setup();
    CUdeviceptr x = chunk();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(launch_bump(x, s));             /* resident (policies that fetch) */
    OK(cuStreamSynchronize(s));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(launch_bump(x, s));
    OK(cuMemFreeAsync(x, s));
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphDestroy(g));
    enum { SMALL = 60 };
    CUdeviceptr d[SMALL];
    int on_device = 0;
    for (int i = 0; i < SMALL; i++) {  /* 4 MiB each, below the threshold */
        OK(cuMemAlloc(&d[i], 4 * MiB));
        on_device += !is_managed(d[i]);
        check_invariants();
    }
    printf("small chunks on the device: %d\n", on_device);
    OK(cuGraphLaunch(e, s));
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(counter(x), 2);         /* read before the graph's free is released */
    OK(launch_bump(d[0], s));          /* a hook that releases the free */
    OK(cuStreamSynchronize(s));
    check_invariants();
    for (int i = 0; i < SMALL; i++)
        OK(cuMemFree(d[i]));
    OK(cuGraphExecDestroy(e));
    lms_device_stats st;
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.used, 0);
}

/* Ends the capture on s, instantiates its graph, launches it once and
 * waits for it; returns the executable graph (the caller destroys it). */
static CUgraphExec end_and_run(CUstream s)
{
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphDestroy(g));
    OK(cuGraphLaunch(e, s));
    OK(cuStreamSynchronize(s));
    return e;
}

/* Captures a bump of x and a stream-ordered free of it on s (global mode),
 * then runs the graph once (end_and_run). */
static CUgraphExec run_bump_free(CUdeviceptr x, CUstream s)
{
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(launch_bump(x, s));
    OK(cuMemFreeAsync(x, s));
    return end_and_run(s);
}

/* LMS_MODE=host (meson.build): chunks off the device are pinned host
 * memory, never managed, so no residency work runs at launches. A free of
 * one captured into a graph must still be released once a launch of the
 * graph has passed it (by a later hook), not held for ever. */
static void captured_free_host_mode(void)
{
    setup();
    CUdeviceptr x = chunk(), y = chunk();
    CHECK(!is_managed(x));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int round = 0; round < 2; round++)
        OK(cuGraphExecDestroy(run_bump_free(round ? y : x, s)));
    CUdeviceptr small;
    OK(cuMemAlloc(&small, 1 * MiB));
    size_t one = 1 * MiB;
    void *args[] = {&small, &one};
    OK(cuLaunchKernel(f_bump, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));   /* a hook */
    OK(cuStreamSynchronize(s));
    CUdeviceptr base;
    size_t size;
    CHECK(cuMemGetAddressRange(&base, &size, x) != CUDA_SUCCESS);   /* released */
    CHECK(cuMemGetAddressRange(&base, &size, y) != CUDA_SUCCESS);
    lms_device_stats st;
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.live_chunks[2], 0);
}

/* Launches given their parameters in the `extra` buffer form, through a
 * CUkernel of a library, captured into a graph and replayed: the graph's
 * chunks are still found (the node holds the parameters). */
static void capture_extra_kernel(void)
{
    setup();
    CUlibrary lib;
    OK(cuLibraryLoadData(&lib, "image", NULL, NULL, 0, NULL, NULL, 0));
    CUkernel k;
    OK(cuLibraryGetKernel(&k, lib, "bump"));
    CUdeviceptr c[6];
    for (int i = 0; i < 6; i++)
        c[i] = chunk();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 6; i++) {
        struct { CUdeviceptr p; size_t bytes; } buf = {c[i], CHUNK};
        size_t size = sizeof buf;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                         CU_LAUNCH_PARAM_END};
        OK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, s, NULL, extra));
    }
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphDestroy(g));
    lms_device_stats a, b;
    CHECK(get_stats(0, &a) == 0);
    for (int rep = 0; rep < 3; rep++)
        OK(cuGraphLaunch(e, s));
    OK(cuStreamSynchronize(s));
    CHECK(get_stats(0, &b) == 0);
    for (int i = 0; i < 6; i++)
        CHECK_EQ_U(counter(c[i]), 3);
    const char *policy = getenv("LMS_POLICY");
    if (!policy || strcmp(policy, "none") != 0)
        CHECK(b.prefetches > a.prefetches);   /* the graph's chunks were found */
    check_invariants();
    OK(cuGraphExecDestroy(e));
    OK(cuLibraryUnload(lib));
}

/* Captures a graph over three of the shared chunks and launches it fifty
 * times, with plain launches between, on a stream of its own. */
static void *graph_work(void *arg)
{
    mt_job *j = arg;
    TRY(j, cuCtxSetCurrent(ctx));
    CUstream s;
    TRY(j, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr mine[3] = {j->c[j->id % j->nc], j->c[(j->id + 3) % j->nc], j->c[(j->id + 6) % j->nc]};
    if (j->fail)
        return NULL;
    CUgraphExec e = capture_bumps(s, mine, 3);
    for (int k = 0; k < 50 && !j->fail; k++) {
        TRY(j, cuGraphLaunch(e, s));
        TRY(j, launch_bump(j->c[(j->id + k) % j->nc], s));
    }
    TRY(j, cuStreamSynchronize(s));
    TRY(j, cuGraphExecDestroy(e));
    TRY(j, cuStreamDestroy(s));
    return NULL;
}

/* Six threads launch graphs over overlapping chunks (nine, four fit), with
 * kernels of different streams overlapping. */
static void threads_graphs(void)
{
    setup();
    enum { THREADS = 6, CHUNKS = 9 };
    CUdeviceptr c[CHUNKS];
    CHECK_EQ_U(jobs_on_new_chunks(graph_work, THREADS, c, CHUNKS), THREADS * 50 * 4);
    check_invariants();
}

/* Entries of graph and capture APIs the simulator may not have, asked for
 * through lmshim's cuGetProcAddress: a pointer, or a clean "not found". A
 * capture begun into an existing graph, if offered, still works or fails
 * with an error, never a crash. */
static void unsupported_entries(void)
{
    setup();
    const char *names[] = {"cuStreamBeginCaptureToGraph", "cuGraphExecUpdate", "cuGraphAddChildGraphNode",
                           "cuStreamUpdateCaptureDependencies", "cuGraphExecKernelNodeSetParams",
                           "cuGraphInstantiateWithParams", "cuGraphUpload", "cuGraphClone",
                           "cuGraphConditionalHandleCreate", "cuStreamGetCaptureInfo"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *fn = (void *)1;
        CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
        CUresult r = cuGetProcAddress(names[i], &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &q);
        printf("%s: %d %d %s\n", names[i], (int)r, (int)q, fn ? "fn" : "null");
        if (r == CUDA_SUCCESS && q == CU_GET_PROC_ADDRESS_SUCCESS)
            CHECK(fn != NULL);
        else
            CHECK(fn == NULL && q != CU_GET_PROC_ADDRESS_SUCCESS);
    }
    CUresult (*to_graph)(CUstream, CUgraph, const CUgraphNode *, const CUgraphEdgeData *, size_t,
                         CUstreamCaptureMode) = NULL;
    CUdriverProcAddressQueryResult q;
    if (cuGetProcAddress("cuStreamBeginCaptureToGraph", (void **)&to_graph, 12030,
                         CU_GET_PROC_ADDRESS_DEFAULT, &q) == CUDA_SUCCESS && to_graph) {
        CUgraph g;
        OK(cuGraphCreate(&g, 0));
        CUstream s;
        OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        CUdeviceptr x = chunk();
        if (to_graph(s, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS) {
            OK(launch_bump(x, s));
            CUgraph out;
            OK(cuStreamEndCapture(s, &out));
            CHECK(out == g);
        }
        OK(cuGraphDestroy(g));
    }
}

/* True while the driver still has an allocation at p. */
static bool allocated(CUdeviceptr p)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    return cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS && base == p;
}

/* A graph's free that has run is released by the next allocation, free or
 * memory query, not only by a launch: cuMemGetInfo after the graph shows
 * the chunk's charge gone, and so does the next cuMemAlloc. */
static void captured_free_released_unlaunched(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    lms_device_stats st;
    for (int round = 0; round < 2; round++) {
        CUdeviceptr x = chunk();
        CUgraphExec e = run_bump_free(x, s);
        CHECK_EQ_U(counter(x), 1);
        if (round == 0) {
            size_t f = 0, t = 0;
            OK(cuMemGetInfo(&f, &t));
            CHECK_EQ_U(f, t);          /* nothing charged any more */
        } else {
            CUdeviceptr d;
            OK(cuMemAlloc(&d, 1 * MiB));
            CHECK(get_stats(0, &st) == 0);
            CHECK(st.used <= 2 * MiB);   /* the small chunk's charge alone */
            OK(cuMemFree(d));
        }
        CHECK(!allocated(x));
        CHECK(get_stats(0, &st) == 0);
        CHECK_EQ_U(st.live_chunks[1], 0);
        OK(cuGraphExecDestroy(e));
    }
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.used, 0);
    check_invariants();
}

/* Releases many captured frees (more than one batch of the drain) again
 * and again on its own thread, while the main thread forks: the fork's
 * locks and the drain's are taken in one order (a child that exits at
 * once; the test's alarm ends a hang). */
static atomic_bool drain_done;
static void *drain_work(void *arg)
{
    CUstream s = *(CUstream *)arg;
    OK(cuCtxSetCurrent(ctx));
    enum { FREES = 80 };
    CUdeviceptr keep;
    OK(cuMemAlloc(&keep, 1 * MiB));
    for (int round = 0; round < 30; round++) {
        CUdeviceptr p[FREES];
        for (int i = 0; i < FREES; i++)
            OK(cuMemAlloc(&p[i], 8 * MiB));   /* at the threshold: managed */
        OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        for (int i = 0; i < FREES; i++)
            OK(cuMemFreeAsync(p[i], s));
        CUgraphExec e = end_and_run(s);
        size_t one = 1 * MiB;
        void *args[] = {&keep, &one};
        OK(cuLaunchKernel(f_bump, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));   /* drains */
        OK(cuStreamSynchronize(s));
        for (int i = 0; i < FREES; i++)
            CHECK(!allocated(p[i]));
        OK(cuGraphExecDestroy(e));
    }
    OK(cuMemFree(keep));
    atomic_store(&drain_done, true);
    return NULL;
}

static void fork_while_draining(void)
{
    setup();
    alarm(100);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, drain_work, &s) == 0);
    int forks = 0;
    while (!atomic_load(&drain_done)) {
        fork_bare_child();
        forks++;
    }
    CHECK(pthread_join(t, NULL) == 0);
    alarm(0);
    printf("forks while draining: %d\n", forks);
    CHECK(forks > 0);
    lms_device_stats st;
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.used, 0);
    CHECK_EQ_U(st.live_chunks[1], 0);
}

static const test_case cases[] = {
    {"capture_vs_async_thread", capture_vs_async_thread},
    {"alloc_in_capture", alloc_in_capture},
    {"graph_before_chunks", graph_before_chunks},
    {"exec_destroyed_in_flight", exec_destroyed_in_flight},
    {"thousand_launches", thousand_launches},
    {"relaunch_after_free", relaunch_after_free},
    {"captures_threads", captures_threads},
    {"refused_free_keeps_chunk", refused_free_keeps_chunk},
    {"captured_free_keeps_charge", captured_free_keeps_charge},
    {"captured_free_host_mode", captured_free_host_mode},
    {"capture_extra_kernel", capture_extra_kernel},
    {"threads_graphs", threads_graphs},
    {"unsupported_entries", unsupported_entries},
    {"captured_free_released_unlaunched", captured_free_released_unlaunched},
    {"fork_while_draining", fork_while_draining},
};

TEST_MAIN(cases)
