/*
 * breakers_test.c — liblmshim.so (LD_PRELOAD, settings in meson.build) in
 * front of programs that use stream capture, CUDA graphs, memory pools and
 * many streams in the ways the simple tests do not: captures on one thread
 * while others allocate and free, allocations inside a capture, graphs
 * instantiated before any chunk exists, destroyed while in flight or
 * launched a thousand times at once, chunks freed under a graph, a hundred
 * streams and eight threads with kernels overlapping. Each case checks the
 * program's results, CUDA's answers, the simulated GPU's counters of
 * missing waits and lmshim's budget.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "lmshim.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define CHUNK (64 * MiB)

/* bump(p, bytes): p[0] += 1 (a 64-bit counter); touches the whole range. */
static void bump(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint64_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, 2e4);
}

/* pair(p, q, bytes): bumps p; q is a parameter it never touches. */
static void pair(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[2];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint64_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, 1e4);
}

/* gate(p, bytes): bumps p like bump, but its body holds the launching
 * thread until the test opens the gate (the launch sits between lmshim's
 * decision and its record after the launch). */
static atomic_int gate_entered, gate_open;
static void gate(simgpu_launch *l, void **p)
{
    bump(l, p);
    atomic_fetch_add(&gate_entered, 1);
    while (!atomic_load(&gate_open))
        sched_yield();
}

/* late(p, bytes): like gate, but it holds the thread before it touches p. */
static atomic_int late_entered, late_open;
static void late(simgpu_launch *l, void **p)
{
    atomic_store(&late_entered, 1);
    while (!atomic_load(&late_open))
        sched_yield();
    bump(l, p);
}

static CUfunction f_bump, f_pair, f_gate, f_late;
static CUcontext ctx;
static int (*get_stats)(int, lms_device_stats *);

static void setup(void)
{
    ctx = primary_context(0);
    simgpu_kernel k = {"bump", bump, 2, {8, 8}};
    OK(simgpu_register_kernel(&k));
    simgpu_kernel k2 = {"pair", pair, 3, {8, 8, 8}};
    OK(simgpu_register_kernel(&k2));
    CUmodule m;
    OK(cuModuleLoadData(&m, "x"));
    OK(cuModuleGetFunction(&f_bump, m, "bump"));
    OK(cuModuleGetFunction(&f_pair, m, "pair"));
    simgpu_kernel k3 = {"gate", gate, 2, {8, 8}};
    OK(simgpu_register_kernel(&k3));
    OK(cuModuleGetFunction(&f_gate, m, "gate"));
    simgpu_kernel k4 = {"late", late, 2, {8, 8}};
    OK(simgpu_register_kernel(&k4));
    OK(cuModuleGetFunction(&f_late, m, "late"));
    get_stats = (int (*)(int, lms_device_stats *))dlsym(RTLD_DEFAULT, "lms_get_stats");
    CHECK(get_stats != NULL);
}

static CUresult launch_bump(CUdeviceptr p, CUstream s)
{
    size_t bytes = CHUNK;
    void *args[] = {&p, &bytes};
    return cuLaunchKernel(f_bump, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

static uint64_t counter(CUdeviceptr p)
{
    uint64_t v = 0;
    OK(cuMemcpyDtoH(&v, p, sizeof v));
    return v;
}

static bool is_managed(CUdeviceptr p)
{
    int managed = 0;
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    return managed != 0;
}

/* A chunk set to zero (managed: the settings place every chunk off the device). */
static CUdeviceptr chunk(void)
{
    CUdeviceptr p;
    OK(cuMemAlloc(&p, CHUNK));
    OK(cuMemsetD8(p, 0, 64));
    return p;
}

/* The budget held and the simulated GPU saw no missing wait. */
static void check_invariants(void)
{
    lms_device_stats s;
    CHECK(get_stats(0, &s) == 0);
    CHECK(s.used <= s.budget);
    CHECK_EQ_U(s.budget_violations, 0);
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK(c.used_device_bytes <= s.budget);
    CHECK_EQ_U(c.inflight_waits, 0);
    CHECK_EQ_U(c.busy_evictions, 0);
}

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
 * by every later launch). The simulator does not model memory nodes, so it
 * refuses the allocation; what lmshim may not do is succeed with a chunk
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

/* Captures `n` bumps of chunks c[0..n) on s into an executable graph. */
static CUgraphExec capture_bumps(CUstream s, const CUdeviceptr *c, int n)
{
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < n; i++)
        OK(launch_bump(c[i], s));
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphDestroy(g));
    return e;
}

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
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr c[8];
    for (int i = 0; i < 8; i++)
        c[i] = chunk();
    for (int round = 0; round < 20; round++) {
        CUgraphExec e = capture_bumps(s, &c[round % 4], 4);
        OK(cuGraphLaunch(e, s));
        OK(cuGraphLaunch(e, s));
        OK(cuGraphExecDestroy(e));   /* its launches still run */
        OK(launch_bump(c[4 + round % 4], s));
    }
    OK(cuStreamSynchronize(s));
    uint64_t sum = 0;
    for (int i = 0; i < 8; i++)
        sum += counter(c[i]);
    CHECK_EQ_U(sum, 20 * 8 + 20);
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
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr c[8];
    for (int i = 0; i < 8; i++)
        c[i] = chunk();
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

#define TRY(j, call)                                     \
    do {                                                 \
        CUresult r_ = (call);                            \
        if (r_ != CUDA_SUCCESS && !(j)->fail) {          \
            (j)->fail = r_;                              \
            (j)->line = __LINE__;                        \
        }                                                \
    } while (0)

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

/* ---- many streams, many threads --------------------------------------------- */

/* A hundred streams (more than lmshim's stream slots, more than the users
 * a chunk remembers) launching over sixteen chunks, four of which fit; some
 * streams are destroyed and made again on the way. */
static void hundred_streams(void)
{
    setup();
    enum { STREAMS = 100, CHUNKS = 16 };
    CUstream s[STREAMS];
    for (int i = 0; i < STREAMS; i++)
        OK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
    CUdeviceptr c[CHUNKS];
    for (int i = 0; i < CHUNKS; i++)
        c[i] = chunk();
    OK(cuCtxSynchronize());
    OK(simgpu_reset_counters());
    uint64_t want[CHUNKS] = {0};
    unsigned seed = 7;
    for (int k = 0; k < 3000; k++) {
        seed = seed * 1103515245u + 12345u;
        int ci = (int)(seed >> 8) % CHUNKS;
        int si = (int)(seed >> 20) % STREAMS;
        OK(launch_bump(c[ci], s[si]));
        want[ci]++;
        if (k % 97 == 0) {   /* a stream goes away while chunks remember it */
            int d = (int)(seed >> 4) % STREAMS;
            OK(cuStreamDestroy(s[d]));
            OK(cuStreamCreate(&s[d], CU_STREAM_NON_BLOCKING));
        }
    }
    OK(cuCtxSynchronize());
    for (int i = 0; i < CHUNKS; i++)
        CHECK_EQ_U(counter(c[i]), want[i]);
    check_invariants();
}

typedef struct mt_job {
    int id;
    CUdeviceptr *c;           /* the shared chunks */
    int nc;
    CUresult fail;
    int line;
} mt_job;

/* Launches over the shared chunks on two streams of its own and on its
 * per-thread default stream. */
static void *mt_work(void *arg)
{
    mt_job *j = arg;
    TRY(j, cuCtxSetCurrent(ctx));
    CUstream s[3] = {NULL, NULL, CU_STREAM_PER_THREAD};
    TRY(j, cuStreamCreate(&s[0], CU_STREAM_NON_BLOCKING));
    TRY(j, cuStreamCreate(&s[1], CU_STREAM_NON_BLOCKING));
    unsigned seed = (unsigned)j->id * 7919u + 1;
    for (int k = 0; k < 300 && !j->fail; k++) {
        seed = seed * 1103515245u + 12345u;
        TRY(j, launch_bump(j->c[(seed >> 8) % (unsigned)j->nc], s[(seed >> 20) % 3]));
    }
    for (int i = 0; i < 3; i++)
        TRY(j, cuStreamSynchronize(s[i]));
    TRY(j, cuStreamDestroy(s[0]));
    TRY(j, cuStreamDestroy(s[1]));
    return NULL;
}

/* 600 launches over the shared chunks on thirteen streams of its own. */
static void *many_work(void *arg)
{
    mt_job *j = arg;
    TRY(j, cuCtxSetCurrent(ctx));
    enum { N = 13 };
    CUstream s[N];
    for (int i = 0; i < N; i++)
        TRY(j, cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
    unsigned seed = (unsigned)j->id * 104729u + 3;
    for (int k = 0; k < 600 && !j->fail; k++) {
        seed = seed * 1103515245u + 12345u;
        TRY(j, launch_bump(j->c[(seed >> 8) % (unsigned)j->nc], s[(seed >> 20) % N]));
    }
    for (int i = 0; i < N; i++) {
        TRY(j, cuStreamSynchronize(s[i]));
        TRY(j, cuStreamDestroy(s[i]));
    }
    return NULL;
}

/* Eight threads on thirteen streams each (104 streams, more than lmshim's
 * slots, taken over while other threads' launches are between their
 * decision and their record), kernels overlapping. */
static void threads_many_streams(void)
{
    setup();
    enum { THREADS = 8, CHUNKS = 10 };
    CUdeviceptr c[CHUNKS];
    for (int i = 0; i < CHUNKS; i++)
        c[i] = chunk();
    OK(cuCtxSynchronize());
    OK(simgpu_reset_counters());
    mt_job jobs[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (mt_job){.id = i, .c = c, .nc = CHUNKS};
        CHECK(pthread_create(&th[i], NULL, many_work, &jobs[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ_U(jobs[i].fail, 0);
    uint64_t sum = 0;
    for (int i = 0; i < CHUNKS; i++)
        sum += counter(c[i]);
    CHECK_EQ_U(sum, THREADS * 600);
    simgpu_counters sc;
    OK(simgpu_get_counters(0, &sc));
    printf("inflight_waits=%llu busy_evictions=%llu\n", (unsigned long long)sc.inflight_waits,
           (unsigned long long)sc.busy_evictions);
    check_invariants();
}

typedef struct gate_job {
    CUstream s;
    CUdeviceptr x;
    CUfunction f;             /* f_gate or f_late */
    CUresult r;
} gate_job;

static void *gate_work(void *arg)
{
    gate_job *j = arg;
    j->r = cuCtxSetCurrent(ctx);
    size_t bytes = CHUNK;
    void *args[] = {&j->x, &bytes};
    if (j->r == CUDA_SUCCESS)
        j->r = cuLaunchKernel(j->f, 1, 1, 1, 32, 1, 1, 0, j->s, args, NULL);
    return NULL;
}

/* A launch that reads a chunk over the link (no room: launches of other
 * threads pin the whole budget) is issued; before it is recorded, room
 * appears and another stream's launch would fetch the chunk. That copy
 * must not start while the first kernel may read the chunk: it is not made
 * (the second launch reads over the link too), and a later fetch waits for
 * both reads. */
static void fetch_vs_remote_reader(void)
{
    setup();
    CUdeviceptr g[4], x = chunk();
    for (int i = 0; i < 4; i++)
        g[i] = chunk();
    CUstream a, b, gs[4];
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 4; i++)
        OK(cuStreamCreate(&gs[i], CU_STREAM_NON_BLOCKING));
    OK(cuCtxSynchronize());
    OK(simgpu_reset_counters());
    atomic_store(&gate_entered, 0);
    atomic_store(&gate_open, 0);
    atomic_store(&late_entered, 0);
    atomic_store(&late_open, 0);
    gate_job gj[4];
    pthread_t gt[4], lt;
    for (int i = 0; i < 4; i++) {      /* the budget fetched, pinned by launches in the gate */
        gj[i] = (gate_job){.s = gs[i], .x = g[i], .f = f_gate};
        CHECK(pthread_create(&gt[i], NULL, gate_work, &gj[i]) == 0);
        while (atomic_load(&gate_entered) <= i)
            sched_yield();
    }
    gate_job lj = {.s = a, .x = x, .f = f_late};
    CHECK(pthread_create(&lt, NULL, gate_work, &lj) == 0);
    while (!atomic_load(&late_entered))
        sched_yield();                 /* issued, to read x over the link, not recorded */
    atomic_store(&gate_open, 1);       /* the pins go */
    for (int i = 0; i < 4; i++) {
        CHECK(pthread_join(gt[i], NULL) == 0);
        OK(gj[i].r);
    }
    OK(launch_bump(x, b));             /* room now: x would be fetched under the reader */
    atomic_store(&late_open, 1);
    CHECK(pthread_join(lt, NULL) == 0);
    OK(lj.r);
    for (int i = 0; i < 3; i++)
        OK(launch_bump(x, b));         /* fetched now, after both reads */
    OK(cuCtxSynchronize());
    CHECK_EQ_U(counter(x), 5);
    check_invariants();
}

/* A stream's slot is taken over by another stream while a launch on the
 * first is between its decision (it waited there for a chunk's fetch on a
 * third stream) and its record. The new stream must not inherit "already
 * waited for that fetch": its kernel would touch the chunk before the copy
 * ends. */
static void slot_taken_mid_launch(void)
{
    setup();
    CUdeviceptr x = chunk(), small;
    OK(cuMemAlloc(&small, 1 * MiB));   /* on the device: no chunk to scan */
    OK(cuMemsetD8(small, 0, 64));
    size_t one = 1 * MiB;
    void *sargs[] = {&small, &one};
    CUstream f, a, n[40];
    OK(cuStreamCreate(&f, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuCtxSynchronize());
    OK(simgpu_reset_counters());
    OK(launch_bump(x, f));             /* x fetched on f: a copy of about 1.2 ms */
    gate_job j = {.s = a, .x = x, .f = f_gate};
    pthread_t th;
    atomic_store(&gate_entered, 0);
    atomic_store(&gate_open, 0);
    CHECK(pthread_create(&th, NULL, gate_work, &j) == 0);
    while (!atomic_load(&gate_entered))
        sched_yield();                 /* a waited for the fetch; its launch is in the gate */
    OK(cuLaunchKernel(f_bump, 1, 1, 1, 32, 1, 1, 0, f, sargs, NULL));   /* f used after a */
    for (int i = 0; i < 40; i++) {     /* more streams than slots: a's slot goes */
        OK(cuStreamCreate(&n[i], CU_STREAM_NON_BLOCKING));
        OK(launch_bump(x, n[i]));      /* each must wait for x's fetch */
    }
    atomic_store(&gate_open, 1);
    CHECK(pthread_join(th, NULL) == 0);
    OK(j.r);
    OK(cuCtxSynchronize());
    CHECK_EQ_U(counter(x), 42);
    check_invariants();
    for (int i = 0; i < 40; i++)
        OK(cuStreamDestroy(n[i]));
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
    for (int round = 0; round < 2; round++) {
        CUdeviceptr v = round ? y : x;
        OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        OK(launch_bump(v, s));
        OK(cuMemFreeAsync(v, s));
        CUgraph g;
        OK(cuStreamEndCapture(s, &g));
        CUgraphExec e;
        OK(cuGraphInstantiate(&e, g, 0));
        OK(cuGraphDestroy(g));
        OK(cuGraphLaunch(e, s));
        OK(cuStreamSynchronize(s));
        OK(cuGraphExecDestroy(e));
    }
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
    for (int i = 0; i < CHUNKS; i++)
        c[i] = chunk();
    OK(cuCtxSynchronize());
    OK(simgpu_reset_counters());
    mt_job jobs[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (mt_job){.id = i, .c = c, .nc = CHUNKS};
        CHECK(pthread_create(&th[i], NULL, graph_work, &jobs[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ_U(jobs[i].fail, 0);
    uint64_t sum = 0;
    for (int i = 0; i < CHUNKS; i++)
        sum += counter(c[i]);
    CHECK_EQ_U(sum, THREADS * 50 * 4);
    check_invariants();
}

/* Twenty launches on the calling thread's per-thread default stream. */
static void *ptsz_work(void *arg)
{
    mt_job *j = arg;
    TRY(j, cuCtxSetCurrent(ctx));
    for (int k = 0; k < 20 && !j->fail; k++)
        TRY(j, launch_bump(j->c[(j->id + k) % j->nc], CU_STREAM_PER_THREAD));
    return NULL;
}

/* Eight threads over shared chunks (kernels overlap: SIMGPU_CONCURRENT=1),
 * and 64 threads each once on its per-thread default stream. */
static void eight_threads(void)
{
    setup();
    enum { THREADS = 8, CHUNKS = 12 };
    CUdeviceptr c[CHUNKS];
    for (int i = 0; i < CHUNKS; i++)
        c[i] = chunk();
    OK(cuCtxSynchronize());
    OK(simgpu_reset_counters());
    mt_job jobs[64];
    pthread_t th[64];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (mt_job){.id = i, .c = c, .nc = CHUNKS};
        CHECK(pthread_create(&th[i], NULL, mt_work, &jobs[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    uint64_t sum = 0;
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ_U(jobs[i].fail, 0);
    for (int i = 0; i < CHUNKS; i++)
        sum += counter(c[i]);
    CHECK_EQ_U(sum, THREADS * 300);
    check_invariants();
    /* 64 threads at once, each on its own per-thread default stream (more
     * streams than lmshim's slots; threads end while chunks remember them). */
    for (int i = 0; i < 64; i++) {
        jobs[i] = (mt_job){.id = 100 + i, .c = c, .nc = CHUNKS};
        CHECK(pthread_create(&th[i], NULL, ptsz_work, &jobs[i]) == 0);
    }
    for (int i = 0; i < 64; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    for (int i = 0; i < 64; i++)
        CHECK_EQ_U(jobs[i].fail, 0);
    OK(cuCtxSynchronize());
    sum = 0;
    for (int i = 0; i < CHUNKS; i++)
        sum += counter(c[i]);
    CHECK_EQ_U(sum, THREADS * 300 + 64 * 20);
    check_invariants();
}

/* ---- fork ---------------------------------------------------------------------- */

/* Graph launches and kernels in flight, then fork: the child (the simulator
 * lets it use CUDA) launches the graph and kernels on its own; the parent
 * goes on. Both see their own results, and neither hangs. */
static void fork_after_launches(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr c[8];
    for (int i = 0; i < 8; i++)
        c[i] = chunk();
    CUgraphExec e = capture_bumps(s, c, 4);
    for (int k = 0; k < 10; k++) {
        OK(cuGraphLaunch(e, s));
        OK(launch_bump(c[4 + k % 4], s));
    }
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (int k = 0; k < 10; k++) {
            if (cuGraphLaunch(e, s) != CUDA_SUCCESS || launch_bump(c[4 + k % 4], s) != CUDA_SUCCESS)
                _exit(2);
        }
        if (cuStreamSynchronize(s) != CUDA_SUCCESS || counter(c[0]) != 20 || counter(c[4]) != 6)
            _exit(3);
        _exit(0);
    }
    for (int k = 0; k < 10; k++) {
        OK(cuGraphLaunch(e, s));
        OK(launch_bump(c[4 + k % 4], s));
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ_U(WEXITSTATUS(status), 0);
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(counter(c[0]), 20);
    CHECK_EQ_U(counter(c[4]), 6);
    OK(cuGraphExecDestroy(e));
    check_invariants();
}

/* ---- IPC and exportable pools ------------------------------------------------- */

/* A pool of device 0's memory, exportable (POSIX fd handles) or not. */
static CUmemoryPool make_pool(bool exportable)
{
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .handleTypes = exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                                      : CU_MEM_HANDLE_TYPE_NONE,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemoryPool pool;
    OK(cuMemPoolCreate(&pool, &props));
    return pool;
}

/* An exportable pool made the device's current pool: cuMemAllocAsync
 * allocates from it, so its memory must stay exportable (on the device). */
static void ipc_current_pool(void)
{
    setup();
    CUmemoryPool ex = make_pool(true), def;
    OK(cuDeviceGetMemPool(&def, 0));
    OK(cuDeviceSetMemPool(0, ex));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p[3];
    for (int i = 0; i < 3; i++) {
        OK(cuMemAllocAsync(&p[i], CHUNK, s));
        CHECK(!is_managed(p[i]));
        CUmemPoolPtrExportData data;
        OK(cuMemPoolExportPointer(&data, p[i]));
    }
    for (int i = 0; i < 3; i++)
        OK(cuMemFreeAsync(p[i], s));
    OK(cuStreamSynchronize(s));
    /* Back to the default pool: chunks may leave the device again. */
    OK(cuDeviceSetMemPool(0, def));
    CUdeviceptr q;
    OK(cuMemAllocAsync(&q, CHUNK, s));
    CHECK(is_managed(q));
    OK(cuMemFreeAsync(q, s));
    OK(cuStreamSynchronize(s));
    OK(cuMemPoolDestroy(ex));
    check_invariants();
}

/* IPC on an interior pointer, a freed pointer and a plain pool's memory:
 * CUDA's answers, no crash, no log about chunks that are not lmshim's. */
static void ipc_odd_pointers(void)
{
    setup();
    CUdeviceptr small, big;
    OK(cuMemAlloc(&small, 1 * MiB));   /* on the device */
    big = chunk();                     /* off the device */
    CUipcMemHandle h;
    CUresult base_r = cuIpcGetMemHandle(&h, small);
    OK(base_r);
    CUresult inner_small = cuIpcGetMemHandle(&h, small + 4096);
    CHECK_IS(cuIpcGetMemHandle(&h, big + 4096), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuIpcGetMemHandle(&h, big), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(big));
    CHECK_IS(cuIpcGetMemHandle(&h, big), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(small));
    CHECK_IS(cuIpcGetMemHandle(&h, small), CUDA_ERROR_INVALID_VALUE);
    printf("interior device pointer: %d\n", (int)inner_small);
    CUmemoryPool plain = make_pool(false);
    CUdeviceptr p;
    OK(cuMemAllocFromPoolAsync(&p, 1 * MiB, plain, NULL));
    CUmemPoolPtrExportData data;
    CHECK_IS(cuMemPoolExportPointer(&data, p), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemPoolExportPointer(&data, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFreeAsync(p, NULL));
    OK(cuCtxSynchronize());
    OK(cuMemPoolDestroy(plain));
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

/* The log line of a refused IPC export names a setting that keeps such a
 * chunk on the device; following it must do so. The case runs twice: the
 * first run reads the advice from its log (LMS_LOG_FILE, meson.build) and
 * executes itself again with it. */
static void ipc_advice_works(void)
{
    setup();
    CUdeviceptr p;
    OK(cuMemAlloc(&p, CHUNK));
    CUipcMemHandle h;
    if (getenv("BREAKERS_ADVICE")) {   /* second run: with the advice */
        printf("LMS_THRESHOLD=%s\n", getenv("LMS_THRESHOLD"));
        CHECK(!is_managed(p));
        OK(cuIpcGetMemHandle(&h, p));
        return;
    }
    CHECK(is_managed(p));
    CHECK_IS(cuIpcGetMemHandle(&h, p), CUDA_ERROR_INVALID_VALUE);
    char path[512], line[1024], value[64] = "";
    const char *dir = getenv("BREAKERS_LOG_DIR");
    CHECK(dir != NULL);
    snprintf(path, sizeof path, "%s/breakers_%d.log", dir, (int)getpid());
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    while (fgets(line, sizeof line, f)) {
        const char *t = strstr(line, "LMS_THRESHOLD=");
        if (t)
            sscanf(t + strlen("LMS_THRESHOLD="), "%63[^ \n]", value);
    }
    fclose(f);
    CHECK(value[0] != 0);
    CHECK(setenv("LMS_THRESHOLD", value, 1) == 0);
    CHECK(setenv("BREAKERS_ADVICE", "1", 1) == 0);
    fflush(NULL);
    char *args[] = {"breakers_graphs_test", "ipc_advice_works", NULL};
    execv("/proc/self/exe", args);
    CHECK(!"execv failed");
}

static const test_case cases[] = {
    {"ipc_advice_works", ipc_advice_works},
    {"unsupported_entries", unsupported_entries},
    {"threads_many_streams", threads_many_streams},
    {"threads_graphs", threads_graphs},
    {"capture_extra_kernel", capture_extra_kernel},
    {"fetch_vs_remote_reader", fetch_vs_remote_reader},
    {"captured_free_host_mode", captured_free_host_mode},
    {"captured_free_keeps_charge", captured_free_keeps_charge},
    {"refused_free_keeps_chunk", refused_free_keeps_chunk},
    {"slot_taken_mid_launch", slot_taken_mid_launch},
    {"fork_after_launches", fork_after_launches},
    {"ipc_current_pool", ipc_current_pool},
    {"ipc_odd_pointers", ipc_odd_pointers},
    {"capture_vs_async_thread", capture_vs_async_thread},
    {"alloc_in_capture", alloc_in_capture},
    {"graph_before_chunks", graph_before_chunks},
    {"exec_destroyed_in_flight", exec_destroyed_in_flight},
    {"thousand_launches", thousand_launches},
    {"relaunch_after_free", relaunch_after_free},
    {"captures_threads", captures_threads},
    {"hundred_streams", hundred_streams},
    {"eight_threads", eight_threads},
};

TEST_MAIN(cases)
