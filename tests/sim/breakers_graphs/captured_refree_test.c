/*
 * captured_refree_test.c — liblmshim.so (LD_PRELOAD, settings in
 * meson.build) in front of programs that free, themselves, an address whose
 * stream-ordered free a capture recorded into a graph, or free one address
 * on two threads at once. While no launch of
 * the graph has passed that free, the memory is still the program's: its
 * own free must succeed and give the charge back, and a later launch must
 * not free the address again (the driver may have handed it out anew).
 * Once a launch has passed it, the program's free is a double free and
 * CUDA answers CUDA_ERROR_INVALID_VALUE. A free CUDA refuses changes
 * nothing: the graph's free still happens. Each case ends with nothing
 * charged and no chunk alive.
 */
#include "breakers.h"

/* True while the driver still has an allocation starting at p. */
static bool allocated(CUdeviceptr p)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    return cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS && base == p;
}

/* Captures a stream-ordered free of each of x[0..n) on s (no kernel: the
 * graph may run after the program freed the memory itself) and
 * instantiates the graph. */
static CUgraphExec capture_frees(const CUdeviceptr *x, int n, CUstream s)
{
    return capture_each(s, CU_STREAM_CAPTURE_MODE_GLOBAL, cuMemFreeAsync, x, n);
}

/* Launches e on s and waits for it. */
static void run(CUgraphExec e, CUstream s)
{
    OK(cuGraphLaunch(e, s));
    OK(cuStreamSynchronize(s));
}

/* After a case: a memory query (which releases the frees that are due)
 * shows the whole budget free, and lmshim counts no charge, no live chunk
 * and no violation. */
static void check_clean(void)
{
    size_t f = 0, t = 0;
    OK(cuMemGetInfo(&f, &t));
    lms_device_stats st;
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.used, 0);
    CHECK_EQ_U(st.live_chunks[0] + st.live_chunks[1] + st.live_chunks[2], 0);
    CHECK_EQ_U(f, t);
    check_invariants();
}

/* The graph is instantiated, never launched; the program frees the chunk
 * itself (both free calls), allocates again (the address comes back), then
 * launches the graph: the new allocation survives it. */
static void refree_before_launch(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int sync = 0; sync < 2; sync++) {
        CUdeviceptr x = chunk();
        CHECK(is_managed(x));
        OK(launch_bump(x, s));
        OK(cuStreamSynchronize(s));
        CUgraphExec e = capture_frees(&x, 1, s);
        if (sync)
            OK(cuMemFree(x));
        else
            OK(cuMemFreeAsync(x, s));
        OK(cuStreamSynchronize(s));
        CHECK(!allocated(x));
        lms_device_stats st;
        CHECK(get_stats(0, &st) == 0);
        CHECK_EQ_U(st.used, 0);
        CHECK(cuMemFree(x) != CUDA_SUCCESS);   /* now a double free */
        CUdeviceptr y = chunk();
        printf("round %d: the new allocation %s the freed address\n", sync, y == x ? "reuses" : "does not reuse");
        run(e, s);
        OK(launch_bump(y, s));                 /* a hook that drains */
        OK(cuStreamSynchronize(s));
        CHECK(allocated(y));
        CHECK_EQ_U(counter(y), 1);
        OK(cuMemFree(y));
        OK(cuGraphExecDestroy(e));
        check_clean();
    }
}

/* The graph ran (its free is due, not yet released; then released): the
 * program's free of the address is a double free, answered
 * CUDA_ERROR_INVALID_VALUE, and frees nothing twice. */
static void refree_after_run(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x = chunk(), keep = chunk();
    CUgraphExec e = capture_frees(&x, 1, s);
    run(e, s);
    CHECK_IS(cuMemFree(x), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemFreeAsync(x, s), CUDA_ERROR_INVALID_VALUE);
    CHECK(!allocated(x));
    CHECK(allocated(keep));
    OK(cuMemFree(keep));
    OK(cuGraphExecDestroy(e));
    check_clean();
}

/* Frees CUDA refuses (the wrong kind of free, a destroyed stream, a
 * synchronous free inside another thread's global capture) change
 * nothing: the graph's free still frees the memory, once. */
static void refused_refree(void)
{
    setup();
    CUstream s, dead, other;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&dead, CU_STREAM_NON_BLOCKING));
    OK(cuStreamDestroy(dead));
    CUdeviceptr x = chunk();
    CUgraphExec e = capture_frees(&x, 1, s);
    CHECK_IS(cuMemFreeHost((void *)(uintptr_t)x), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFreeAsync(x, dead) != CUDA_SUCCESS);
    OK(cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult r = cuMemFree(x);   /* synchronous: not allowed during a global capture */
    CUgraph g;
    CUresult end = cuStreamEndCapture(other, &g);
    printf("free during another global capture: %d, its end: %d\n", (int)r, (int)end);
    CHECK(r != CUDA_SUCCESS);
    if (end == CUDA_SUCCESS)
        OK(cuGraphDestroy(g));
    CHECK(allocated(x));
    lms_device_stats st;
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.live_chunks[1], 1);         /* still lmshim's managed chunk */
    run(e, s);
    check_clean();
    CHECK(!allocated(x));
    CHECK_IS(cuMemFree(x), CUDA_ERROR_INVALID_VALUE);
    OK(cuGraphExecDestroy(e));
    check_clean();
}

/* The capture that recorded the free was invalidated (a synchronous free
 * during a global capture): no graph will ever free the chunk, so the
 * program's own free must. */
static void refree_after_invalidated(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x = chunk();
    CUdeviceptr d;
    OK(cuMemAlloc(&d, 1 * MiB));               /* on the device */
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemFreeAsync(x, s));
    CHECK(cuMemFree(d) != CUDA_SUCCESS);       /* invalidates the capture */
    CUgraph g = NULL;
    CHECK_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(allocated(x));
    OK(cuMemFree(x));
    OK(cuMemFree(d));
    CHECK(!allocated(x));
    check_clean();
}

/* Two graphs capture a free of one chunk. Whichever runs first frees it
 * once; the other, launched after, frees nothing (not the new allocation
 * at the address); a graph destroyed unlaunched leaves nothing behind. */
static void free_in_two_graphs(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int first = 0; first < 2; first++) {
        CUdeviceptr x = chunk();
        CUgraphExec e[2] = {capture_frees(&x, 1, s), capture_frees(&x, 1, s)};
        CHECK(allocated(x));
        run(e[first], s);
        check_clean();
        CHECK(!allocated(x));
        CUdeviceptr y = chunk();
        run(e[1 - first], s);
        OK(launch_bump(y, s));                 /* drains */
        OK(cuStreamSynchronize(s));
        CHECK(allocated(y));
        OK(cuMemFree(y));
        OK(cuGraphExecDestroy(e[0]));
        OK(cuGraphExecDestroy(e[1]));
        check_clean();
    }
    /* neither launched: the program frees it */
    CUdeviceptr x = chunk();
    CUgraphExec a = capture_frees(&x, 1, s), b = capture_frees(&x, 1, s);
    OK(cuGraphExecDestroy(a));
    OK(cuGraphExecDestroy(b));
    OK(cuMemFree(x));
    CHECK_IS(cuMemFree(x), CUDA_ERROR_INVALID_VALUE);
    check_clean();
}

/* One thread releases a graph's many due frees (a memory query drains)
 * while another frees the same addresses again, allocating nothing in
 * between: every one of its frees is a double free, answered with an
 * error however the two threads interleave, and no address is freed twice. */
enum { FREES = 40, REFREES = 8 };
static CUdeviceptr freed_by_graph[FREES];
static atomic_int start_line;
static atomic_int refree_successes;

static void *drain_job(void *arg)
{
    (void)arg;
    OK(cuCtxSetCurrent(ctx));
    while (!atomic_load(&start_line))
        ;
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    return NULL;
}

static void *refree_job(void *arg)
{
    int from = *(int *)arg;
    OK(cuCtxSetCurrent(ctx));
    while (!atomic_load(&start_line))
        ;
    for (int k = 0; k < REFREES; k++)
        if (cuMemFree(freed_by_graph[from + k]) == CUDA_SUCCESS)
            atomic_fetch_add(&refree_successes, 1);
    return NULL;
}

static void double_free_races_drain(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int round = 0; round < 150; round++) {
        for (int i = 0; i < FREES; i++)
            OK(cuMemAlloc(&freed_by_graph[i], 8 * MiB));   /* at the threshold: managed */
        for (int i = 0; i < REFREES; i++)
            OK(launch_bump(freed_by_graph[i], s));        /* resident where the policy fetches */
        OK(cuStreamSynchronize(s));
        CUgraphExec e = capture_frees(freed_by_graph, FREES, s);
        run(e, s);                                         /* every free due */
        int from = (round % 2) ? 0 : FREES - REFREES;      /* released first, or last */
        atomic_store(&start_line, 0);
        pthread_t a, b;
        CHECK(pthread_create(&a, NULL, drain_job, NULL) == 0);
        CHECK(pthread_create(&b, NULL, refree_job, &from) == 0);
        atomic_store(&start_line, 1);
        CHECK(pthread_join(a, NULL) == 0);
        CHECK(pthread_join(b, NULL) == 0);
        OK(cuGraphExecDestroy(e));
        check_clean();
    }
    CHECK_EQ_U(atomic_load(&refree_successes), 0);
}

/* Threads each allocate a chunk, capture its free into a graph (their
 * own thread-local captures), free it themselves, then launch the graph:
 * a correct program. The driver hands one thread's freed address to
 * another thread at once, so a free of a new chunk meets the records of
 * the chunk before it at that address, perhaps while that chunk's free is
 * still under way: every free must succeed, and no graph may free a chunk
 * it did not capture. */
enum { OWN_THREADS = 8, OWN_ROUNDS = 300 };
static atomic_int own_refused;

static void *own_free_job(void *arg)
{
    (void)arg;
    OK(cuCtxSetCurrent(ctx));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < OWN_ROUNDS; i++) {
        CUdeviceptr x = chunk();
        OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        OK(cuMemFreeAsync(x, s));
        CUgraph g;
        OK(cuStreamEndCapture(s, &g));
        CUgraphExec e;
        OK(cuGraphInstantiate(&e, g, 0));
        OK(cuGraphDestroy(g));
        if (cuMemFree(x) != CUDA_SUCCESS)
            atomic_fetch_add(&own_refused, 1);
        run(e, s);
        OK(cuGraphExecDestroy(e));
    }
    OK(cuStreamDestroy(s));
    return NULL;
}

static void own_frees_threads(void)
{
    setup();
    pthread_t t[OWN_THREADS];
    for (int i = 0; i < OWN_THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, own_free_job, NULL) == 0);
    for (int i = 0; i < OWN_THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_EQ_U(atomic_load(&own_refused), 0);
    check_clean();
}

/* Two threads free one chunk at once (a program's double free), with or
 * without a graph holding a free of it that never runs before: exactly one
 * free succeeds, the chunk is dropped once, and the graph launched after
 * frees nothing (not the next chunk at the address). */
static CUdeviceptr contested;
static CUresult contest_result[2];

static void free_contested(int side) { contest_result[side] = cuMemFree(contested); }

static void two_frees_race(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int round = 0; round < 400; round++) {
        bool graph = round % 2;
        contested = chunk();
        CUgraphExec e = graph ? capture_frees(&contested, 1, s) : NULL;
        race(free_contested, free_contested);
        CHECK_EQ_U((contest_result[0] == CUDA_SUCCESS) + (contest_result[1] == CUDA_SUCCESS), 1);
        check_clean();
        if (e) {
            CUdeviceptr y = chunk();
            run(e, s);
            OK(launch_bump(y, s));     /* drains */
            OK(cuStreamSynchronize(s));
            CHECK(allocated(y));
            OK(cuMemFree(y));
            OK(cuGraphExecDestroy(e));
            check_clean();
        }
    }
}

/* One thread captures a free of a chunk (its own thread-local capture,
 * the graph never launched before) while another frees the chunk itself,
 * with either free call: no launch has passed the captured free, so the
 * program's free always succeeds, and the graph, launched after, frees
 * nothing (not the next chunk at the address). The captured free answers
 * success when it came first, else CUDA's answer for memory gone. */
static CUdeviceptr raced;
static CUstream capture_stream, free_stream;
static CUgraphExec raced_graph;
static CUresult own_result;
static bool own_async;

static void capture_raced(int side)
{
    (void)side;
    OK(cuStreamBeginCapture(capture_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CUresult r = cuMemFreeAsync(raced, capture_stream);
    CUgraph g = NULL;
    CUresult end = cuStreamEndCapture(capture_stream, &g);
    raced_graph = NULL;
    if (end == CUDA_SUCCESS) {
        if (r == CUDA_SUCCESS)
            OK(cuGraphInstantiate(&raced_graph, g, 0));
        OK(cuGraphDestroy(g));
    }
}

static void free_raced(int side)
{
    (void)side;
    own_result = own_async ? cuMemFreeAsync(raced, free_stream) : cuMemFree(raced);
}

static void capture_races_own_free(void)
{
    setup();
    OK(cuStreamCreate(&capture_stream, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&free_stream, CU_STREAM_NON_BLOCKING));
    int captured = 0;
    for (int round = 0; round < 600; round++) {
        own_async = round % 2;
        raced = chunk();
        race(capture_raced, free_raced);
        OK(cuStreamSynchronize(free_stream));
        CHECK_IS(own_result, CUDA_SUCCESS);
        check_clean();
        if (raced_graph) {
            captured++;
            CUdeviceptr y = chunk();
            run(raced_graph, capture_stream);
            OK(launch_bump(y, capture_stream));   /* drains */
            OK(cuStreamSynchronize(capture_stream));
            CHECK(allocated(y));
            OK(cuMemFree(y));
            OK(cuGraphExecDestroy(raced_graph));
            check_clean();
        }
    }
    printf("captured before the program's free: %d of 600\n", captured);
}

/* A free of the wrong kind (cuMemFreeHost of a cuMemAlloc pointer) racing
 * the right one: the right one succeeds and the wrong one is
 * CUDA_ERROR_INVALID_VALUE, whichever comes first, while a third thread
 * allocates and frees chunks of the same size (the driver hands the freed
 * address out again at once): each of its chunks is alive when its
 * allocation returns and its free succeeds. Run with LMS_MODE=host: the
 * chunks are pinned host memory, which the driver's cuMemFreeHost would
 * free, so a wrong-kind free that lost the race and went to the driver
 * freed the third thread's new chunk before lmshim listed it (32-67 of
 * 3000 wrong frees succeeded, 15-42 new chunks dead). The window is
 * narrow: many rounds (1000). */
static void free_raced_host(int side) { contest_result[side] = cuMemFreeHost((void *)(uintptr_t)raced); }
static void free_raced_device(int side) { contest_result[side] = cuMemFree(raced); }
static atomic_int churn_stop, churn_dead, churn_free_failed;

static void *churn_allocs(void *arg)
{
    (void)arg;
    OK(cuCtxSetCurrent(ctx));
    while (!atomic_load(&churn_stop)) {
        CUdeviceptr q;
        if (cuMemAlloc(&q, CHUNK) != CUDA_SUCCESS)
            continue;   /* the budget is full for a moment */
        if (!allocated(q))
            atomic_fetch_add(&churn_dead, 1);
        if (cuMemFree(q) != CUDA_SUCCESS)
            atomic_fetch_add(&churn_free_failed, 1);
    }
    return NULL;
}

static void wrong_kind_races_free(void)
{
    setup();
    pthread_t churn;
    CHECK(pthread_create(&churn, NULL, churn_allocs, NULL) == 0);
    for (int round = 0; round < 1000; round++) {
        while (cuMemAlloc(&raced, CHUNK) != CUDA_SUCCESS)
            ;   /* the churning thread holds the budget for a moment */
        race(free_raced_device, free_raced_host);
        CHECK_IS(contest_result[0], CUDA_SUCCESS);
        CHECK(contest_result[1] != CUDA_SUCCESS);
    }
    atomic_store(&churn_stop, 1);
    CHECK(pthread_join(churn, NULL) == 0);
    CHECK_EQ_U(atomic_load(&churn_dead), 0);
    CHECK_EQ_U(atomic_load(&churn_free_failed), 0);
    check_clean();
}

/* The program's own managed memory (cuMemAllocManaged) freed with
 * cuMemFreeAsync: lmshim lists it but the call is the driver's to answer
 * (the simulator refuses managed memory there: CUDA_ERROR_INVALID_VALUE,
 * the memory stays), outside a capture and inside one (the capture then
 * invalidated, as the driver does for a free it cannot capture); before,
 * lmshim freed it as one of its own managed placements, and the
 * program's later cuMemFree was refused. */
/* Ends the capture of s, which a refused free of p invalidated; p is
 * still allocated, and a synchronous free then takes it. */
static void ends_invalidated_keeping(CUstream s, CUdeviceptr p)
{
    CUgraph g = NULL;
    CHECK_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(allocated(p));
    OK(cuMemFree(p));
    CHECK(!allocated(p));
}

static void program_managed_async_free(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr m;
    OK(cuMemAllocManaged(&m, CHUNK, CU_MEM_ATTACH_GLOBAL));
    CHECK_IS(cuMemFreeAsync(m, s), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamSynchronize(s));
    CHECK(allocated(m));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_IS(cuMemFreeAsync(m, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ends_invalidated_keeping(s, m);
    check_clean();
}

/* The program's own pinned memory given to a device free, and a device
 * chunk given to cuMemFreeHost: the driver answers, as it would without
 * lmshim. Outside a capture that is CUDA_ERROR_INVALID_VALUE; during the
 * thread's own capture the capture's refusal comes first
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) and ends the capture
 * invalidated. Before, lmshim answered CUDA_ERROR_INVALID_VALUE itself
 * and the capture stayed valid. The memory stays the program's. */
static void program_pinned_device_free(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    void *h = NULL;
    unsigned flags = 0;
    OK(cuMemAllocHost(&h, 4 * MiB));
    CUdeviceptr hp = (CUdeviceptr)(uintptr_t)h;
    CHECK_IS(cuMemFreeAsync(hp, s), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemFree(hp), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamSynchronize(s));
    OK(cuMemHostGetFlags(&flags, h));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_IS(cuMemFreeAsync(hp, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = NULL;
    CHECK_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_IS(cuMemFree(hp), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(cuMemHostGetFlags(&flags, h));
    lms_device_stats st;
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.live_chunks[4], 1);   /* pinned: lmshim still tracks it */
    /* A small chunk lmshim keeps on the device, given to cuMemFreeHost. */
    CUdeviceptr d;
    OK(cuMemAlloc(&d, 2 * MiB));
    CHECK_IS(cuMemFreeHost((void *)(uintptr_t)d), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_IS(cuMemFreeHost((void *)(uintptr_t)d), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ends_invalidated_keeping(s, d);
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.live_chunks[4], 1);
    OK(cuMemFreeHost(h));
    CHECK_IS(cuMemHostGetFlags(&flags, h), CUDA_ERROR_INVALID_VALUE);
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.live_chunks[4], 0);
    OK(cuStreamDestroy(s));
    check_clean();
}

/* A stream-ordered free on the legacy stream while a blocking stream
 * captures is refused (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) and the capture
 * ends invalidated, as the driver answers for its own memory: lmshim frees
 * its placement off the device without the driver's free, and asks the
 * driver for legacy-stream work whose refusal does the same (before, the
 * capture stayed valid). The chunk stays, and frees after the capture. */
static void legacy_free_invalidates(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));   /* blocking: the legacy stream waits for it */
    CUdeviceptr c = chunk();
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_IS(cuMemFreeAsync(c, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    ends_invalidated_keeping(s, c);
    OK(cuStreamDestroy(s));
    check_clean();
}

#define LEGACY_ROUNDS 3000
#define LEGACY_BATCHES 5   /* batches of rounds at most, until the two outcomes both came */

/* legacy_free_races_end: the capture the main thread begins each round,
 * ended by a second thread after a spin of its own. */
static CUstream racing_capture;
static atomic_int racing_round, racing_ended;
static CUresult racing_end[LEGACY_ROUNDS * LEGACY_BATCHES + 1];

static void *end_racer(void *arg)
{
    (void)arg;
    OK(cuCtxSetCurrent(ctx));
    unsigned seed = 7;
    for (int i = 1; i <= LEGACY_ROUNDS * LEGACY_BATCHES; i++) {
        int r;
        while ((r = atomic_load(&racing_round)) != i)
            if (r < 0)
                return NULL;   /* the main thread is done */
        for (volatile int k = rand_r(&seed) % 3000; k > 0; k--)
            ;
        CUgraph g = NULL;
        racing_end[i] = cuStreamEndCapture(racing_capture, &g);
        if (g)
            OK(cuGraphDestroy(g));
        atomic_store(&racing_ended, i);
    }
    return NULL;
}

/* A free on the legacy stream races another thread's end of a blocking
 * stream's capture: each round ends as the driver ends it for its own
 * memory, refused with the capture invalidated and the chunk kept, or
 * freed with the capture ended valid. Before, about 5% of the rounds gave
 * what the driver never gives: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED for
 * the free with the capture valid (the capture ended between lmshim's two
 * questions), or the free refused with the capture valid (it ended before
 * lmshim's legacy-stream work). Rounds come in batches until both
 * outcomes came (a loaded machine may give one alone for a whole batch:
 * once in a CI run, 3,000 rounds refused or freed alike). */
static void legacy_free_races_end(void)
{
    setup();
    OK(cuStreamCreate(&racing_capture, CU_STREAM_DEFAULT));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, end_racer, NULL) == 0);
    unsigned seed = 11;
    int refused = 0, freed = 0, rounds = 0;
    for (int i = 1; i <= LEGACY_ROUNDS * LEGACY_BATCHES; i++) {
        if (i > 1 && (i - 1) % LEGACY_ROUNDS == 0 && refused > 0 && freed > 0)
            break;   /* a batch gave both */
        rounds++;
        CUdeviceptr c = chunk();
        OK(cuStreamBeginCapture(racing_capture, CU_STREAM_CAPTURE_MODE_RELAXED));
        atomic_store(&racing_round, i);
        for (volatile int k = rand_r(&seed) % 3000; k > 0; k--)
            ;
        CUresult f = cuMemFreeAsync(c, NULL);
        while (atomic_load(&racing_ended) != i)
            ;
        bool kept = allocated(c);
        if (f == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT && racing_end[i] == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && kept)
            refused++;
        else if (f == CUDA_SUCCESS && racing_end[i] == CUDA_SUCCESS && !kept)
            freed++;
        else
            fprintf(stderr, "round %d: free %d, end %d, kept %d\n", i, (int)f, (int)racing_end[i], (int)kept);
        if (kept)
            OK(cuMemFree(c));
    }
    atomic_store(&racing_round, -1);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_EQ_U(refused + freed, rounds);
    CHECK(refused > 0 && freed > 0);   /* the two did race */
    OK(cuStreamDestroy(racing_capture));
    OK(cuCtxSynchronize());
    check_clean();
}

/* A stream-ordered free waits for the work queued before it on its
 * stream, even while another thread's free of the same address (refused:
 * a synchronous free inside that thread's own capture) keeps taking the
 * chunk and putting it back: an event recorded on an idle stream right
 * after the stream-ordered free returns is never earlier, in the
 * simulator's time, than the end of the work queued before it. */
static atomic_int refusing_stop, refusing_ready;

static void *refusing_side(void *arg)
{
    CUstream own = *(CUstream *)arg;
    OK(cuCtxSetCurrent(ctx));
    OK(cuStreamBeginCapture(own, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    atomic_store(&refusing_ready, 1);
    while (!atomic_load(&refusing_stop))
        CHECK(cuMemFree(raced) != CUDA_SUCCESS);
    CUgraph g;
    if (cuStreamEndCapture(own, &g) == CUDA_SUCCESS)
        OK(cuGraphDestroy(g));
    return NULL;
}

static void async_free_waits_under_contention(void)
{
    setup();
    CUstream s, idle, own;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&idle, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&own, CU_STREAM_NON_BLOCKING));
    CUevent end_of_work, after_free;
    OK(cuEventCreate(&end_of_work, 0));
    OK(cuEventCreate(&after_free, 0));
    float earliest = 1e9f;
    for (int round = 0; round < 150; round++) {
        raced = chunk();
        OK(cuCtxSynchronize());
        for (int k = 0; k < 8; k++)
            OK(launch_bump(raced, s));
        OK(cuEventRecord(end_of_work, s));
        atomic_store(&refusing_stop, 0);
        atomic_store(&refusing_ready, 0);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, refusing_side, &own) == 0);
        while (!atomic_load(&refusing_ready))
            ;
        for (volatile int k = 0; k < (round % 16) * 100; k++)
            ;
        OK(cuMemFreeAsync(raced, s));
        OK(cuEventRecord(after_free, idle));
        atomic_store(&refusing_stop, 1);
        CHECK(pthread_join(t, NULL) == 0);
        OK(cuEventSynchronize(after_free));
        float ms = 0;
        OK(cuEventElapsedTime(&ms, end_of_work, after_free));
        if (ms < earliest)
            earliest = ms;
        OK(cuStreamSynchronize(s));
        check_clean();
    }
    printf("the earliest event after a free: %.3f ms after the work before it\n", earliest);
    CHECK(earliest >= 0);
}

static const test_case cases[] = {
    {"refree_before_launch", refree_before_launch},
    {"refree_after_run", refree_after_run},
    {"refused_refree", refused_refree},
    {"refree_after_invalidated", refree_after_invalidated},
    {"free_in_two_graphs", free_in_two_graphs},
    {"double_free_races_drain", double_free_races_drain},
    {"own_frees_threads", own_frees_threads},
    {"two_frees_race", two_frees_race},
    {"capture_races_own_free", capture_races_own_free},
    {"wrong_kind_races_free", wrong_kind_races_free},
    {"program_managed_async_free", program_managed_async_free},
    {"program_pinned_device_free", program_pinned_device_free},
    {"legacy_free_invalidates", legacy_free_invalidates},
    {"legacy_free_races_end", legacy_free_races_end},
    {"async_free_waits_under_contention", async_free_waits_under_contention},
};

TEST_MAIN(cases)
