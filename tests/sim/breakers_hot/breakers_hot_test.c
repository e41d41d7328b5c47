/*
 * breakers_hot_test.c — the launch path's shortcuts attacked from outside,
 * with liblmshim.so preloaded over the simulated GPU: the count of open
 * stream captures (launches skip the driver's capture query while it is
 * zero) under ends that race, fail or come from another thread; the
 * per-thread cache of explicit streams' devices under handle reuse across
 * two devices; the per-thread scratch of wide launches (17, 200 and 4000
 * chunks) in threads that exit.
 */
#include <cuda.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"

/* one_ptr(CUdeviceptr p): does nothing. */
static void one_ptr(simgpu_launch *l, void **p)
{
    (void)l;
    (void)p;
}

/* wide(CUdeviceptr p[n]): does nothing. */
static void wide(simgpu_launch *l, void **p)
{
    (void)l;
    (void)p;
}

/* A managed chunk of 2 MiB on the current context's device. */
static CUdeviceptr managed_chunk(void)
{
    CUdeviceptr x;
    OK(cuMemAlloc(&x, 2 * MiB));
    CHECK(is_managed(x) == 1);
    return x;
}

/* ---- the count of open captures ------------------------------------------ */

/* Two threads end one capture at once, round after round, while a third
 * interrupts the first at a random moment with a signal whose handler
 * waits until the second has ended the capture: when the signal lands
 * between lmshim's question "does the stream capture?" and the real end,
 * the first end finds nothing left to end, after both asked (the order a
 * preempted thread gives). The window is narrow: about one round in a few
 * thousand hits it. */
typedef struct end_race {
    CUcontext ctx;
    CUstream s;
    pthread_barrier_t go, done;
    atomic_int ended;         /* ends that succeeded this round */
    atomic_int returned;      /* ends that returned this round */
    atomic_bool in_round, stop;
} end_race;

static end_race *race;

/* SIGUSR1 in the first ender: waits (at most 2 ms) until the other end
 * has returned. Only atomics and nanosleep: async-signal-safe. */
static void hold_on(int sig)
{
    (void)sig;
    for (int i = 0; i < 40 && race && atomic_load(&race->in_round) && atomic_load(&race->returned) == 0; i++)
        nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
}

/* Each round: waits for the start, ends the capture on s (one of the two
 * ends succeeds, the other finds nothing to end), waits for the other. */
static void *ender(void *arg)
{
    end_race *r = arg;
    if (cuCtxSetCurrent(r->ctx) != CUDA_SUCCESS)
        return (void *)1;
    for (;;) {
        pthread_barrier_wait(&r->go);
        if (atomic_load(&r->stop))
            return NULL;
        CUgraph g = NULL;
        if (cuStreamEndCapture(r->s, &g) == CUDA_SUCCESS) {
            atomic_fetch_add(&r->ended, 1);
            cuGraphDestroy(g);
        }
        atomic_fetch_add(&r->returned, 1);
        pthread_barrier_wait(&r->done);
    }
}

typedef struct poker {
    end_race *r;
    pthread_t target;
    unsigned seed;
} poker;

/* Once per round, at a random moment after its start, signals the first
 * ender (the window it aims at is a fraction of a microsecond wide). */
static void *poke(void *arg)
{
    poker *p = arg;
    for (;;) {
        pthread_barrier_wait(&p->r->go);
        if (atomic_load(&p->r->stop))
            return NULL;
        int spin = 1000 + (int)(rand_r(&p->seed) % 800);
        for (volatile int i = 0; i < spin; i++)
            ;
        pthread_kill(p->target, SIGUSR1);
        pthread_barrier_wait(&p->r->done);
    }
}

/* A capture stays open on `kept` while, round after round, a relaxed
 * capture on another stream is ended by two threads at once (one end
 * succeeds, the other finds nothing to end): after each round a launch
 * into the kept capture must still issue nothing (a fetch would
 * invalidate the capture). An end that found nothing to end must not
 * count a capture off, even when it saw the stream capture just before. */
static void racing_ends(void)
{
    CUcontext ctx = primary_context(0);
    simgpu_kernel k = {"one_ptr", one_ptr, 1, {sizeof(CUdeviceptr)}};
    CUfunction f = sim_function(&k);
    CUstream kept, s;
    OK(cuStreamCreate(&kept, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x = managed_chunk();
    OK(cuStreamBeginCapture(kept, CU_STREAM_CAPTURE_MODE_RELAXED));
    end_race r = {.ctx = ctx, .s = s};
    race = &r;
    struct sigaction sa = {.sa_handler = hold_on, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(pthread_barrier_init(&r.go, NULL, 4) == 0);
    CHECK(pthread_barrier_init(&r.done, NULL, 4) == 0);
    pthread_t th[2], pk;
    for (int t = 0; t < 2; t++)
        CHECK(pthread_create(&th[t], NULL, ender, &r) == 0);
    poker p = {.r = &r, .target = th[0], .seed = 1};
    CHECK(pthread_create(&pk, NULL, poke, &p) == 0);
    uint64_t before = stats(0).prefetches;
    void *args[] = {&x};
    for (int round = 0; round < 30000; round++) {
        atomic_store(&r.ended, 0);
        atomic_store(&r.returned, 0);
        OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        atomic_store(&r.in_round, true);
        pthread_barrier_wait(&r.go);
        pthread_barrier_wait(&r.done);
        atomic_store(&r.in_round, false);
        CHECK_EQ_U(atomic_load(&r.ended), 1);
        CUresult lr = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, kept, args, NULL);
        CUstreamCaptureStatus st;
        OK(cuStreamIsCapturing(kept, &st));
        if (lr != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_ACTIVE || stats(0).prefetches != before)
            fprintf(stderr, "round %d: a launch into the open capture was worked on (launch: %d)\n", round,
                    (int)lr);
        OK(lr);   /* lmshim's fetch on the capturing stream invalidated it */
        CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        CHECK_EQ_U(stats(0).prefetches - before, 0);
        if (round % 100 == 99) {   /* a fresh kept capture: its graph stays small */
            CUgraph kg;
            OK(cuStreamEndCapture(kept, &kg));
            OK(cuGraphDestroy(kg));
            OK(cuStreamBeginCapture(kept, CU_STREAM_CAPTURE_MODE_RELAXED));
        }
    }
    atomic_store(&r.stop, true);
    pthread_barrier_wait(&r.go);
    for (int t = 0; t < 2; t++) {
        void *ret;
        CHECK(pthread_join(th[t], &ret) == 0 && ret == NULL);
    }
    CHECK(pthread_join(pk, NULL) == 0);
    race = NULL;
    CUgraph g;
    OK(cuStreamEndCapture(kept, &g));
    OK(cuGraphDestroy(g));
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, kept, args, NULL));
    OK(cuStreamSynchronize(kept));
    CHECK_EQ_U(stats(0).prefetches - before, 1);   /* no capture left: fetched */
    pthread_barrier_destroy(&r.go);
    pthread_barrier_destroy(&r.done);
    OK(cuMemFree(x));
    OK(cuStreamDestroy(kept));
    OK(cuStreamDestroy(s));
}

/* Ends that fail around an open capture on `kept`: a second end of a
 * capture already ended, an end on a stream that joined the capture (not
 * its origin: the capture stays open, invalidated, and its own end then
 * ends it): after each, a launch into a still-open capture issues nothing,
 * and once none is open, launches work again. */
static void failed_ends(void)
{
    primary_context(0);
    simgpu_kernel k = {"one_ptr", one_ptr, 1, {sizeof(CUdeviceptr)}};
    CUfunction f = sim_function(&k);
    CUstream kept, s, joined;
    OK(cuStreamCreate(&kept, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&joined, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x = managed_chunk();
    void *args[] = {&x};
    uint64_t before = stats(0).prefetches;
    OK(cuStreamBeginCapture(kept, CU_STREAM_CAPTURE_MODE_GLOBAL));
    /* An end twice: the second finds nothing. */
    CUgraph g;
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuStreamEndCapture(s, &g));
    OK(cuGraphDestroy(g));
    CHECK(cuStreamEndCapture(s, &g) != CUDA_SUCCESS);
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, kept, args, NULL));
    CHECK_EQ_U(stats(0).prefetches - before, 0);
    /* An end on a stream that joined the capture: the capture stays open. */
    CUevent e;
    OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    OK(cuEventRecord(e, kept));
    OK(cuStreamWaitEvent(joined, e, 0));
    CHECK(cuStreamEndCapture(joined, &g) != CUDA_SUCCESS);
    CUstreamCaptureStatus st;
    OK(cuStreamIsCapturing(kept, &st));
    CHECK(st != CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK(cuStreamEndCapture(kept, &g) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(cuStreamIsCapturing(joined, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
    /* A new capture after the invalidated one: a launch into it issues nothing. */
    OK(cuStreamBeginCapture(kept, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, kept, args, NULL));
    CHECK_EQ_U(stats(0).prefetches - before, 0);
    OK(cuStreamEndCapture(kept, &g));
    OK(cuGraphDestroy(g));
    OK(cuEventDestroy(e));
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, kept, args, NULL));
    OK(cuStreamSynchronize(kept));
    CHECK_EQ_U(stats(0).prefetches - before, 1);
    OK(cuMemFree(x));
    OK(cuStreamDestroy(kept));
    OK(cuStreamDestroy(s));
    OK(cuStreamDestroy(joined));
}

typedef struct wrong_end {
    CUcontext ctx;
    CUstream s;
    CUresult r;
} wrong_end;

/* Tries to end another thread's capture. */
static void *end_elsewhere(void *arg)
{
    wrong_end *w = arg;
    CUgraph g = NULL;
    if (cuCtxSetCurrent(w->ctx) != CUDA_SUCCESS)
        return (void *)1;
    w->r = cuStreamEndCapture(w->s, &g);
    return NULL;
}

/* A global and a thread-local capture ended by another thread: CUDA says
 * so (wrong thread) and the capture stays open; a launch into it issues
 * nothing, and once its own thread ends it, launches work again. */
static void wrong_thread_end(void)
{
    CUcontext ctx = primary_context(0);
    simgpu_kernel k = {"one_ptr", one_ptr, 1, {sizeof(CUdeviceptr)}};
    CUfunction f = sim_function(&k);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x = managed_chunk();
    void *args[] = {&x};
    uint64_t before = stats(0).prefetches;
    CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL};
    for (int m = 0; m < 2; m++) {
        OK(cuStreamBeginCapture(s, modes[m]));
        wrong_end w = {.ctx = ctx, .s = s};
        pthread_t th;
        CHECK(pthread_create(&th, NULL, end_elsewhere, &w) == 0);
        CHECK(pthread_join(th, NULL) == 0);
        CHECK_IS(w.r, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
        OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
        CHECK_EQ_U(stats(0).prefetches - before, 0);
        CUgraph g;
        OK(cuStreamEndCapture(s, &g));
        OK(cuGraphDestroy(g));
    }
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(stats(0).prefetches - before, 1);
    OK(cuMemFree(x));
    OK(cuStreamDestroy(s));
}

/* A fork while a capture is open: the child (the simulator lets it use
 * CUDA) launches into its copy of the capture without fetching; the
 * parent too. */
static void fork_in_capture(void)
{
    primary_context(0);
    simgpu_kernel k = {"one_ptr", one_ptr, 1, {sizeof(CUdeviceptr)}};
    CUfunction f = sim_function(&k);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x = managed_chunk();
    void *args[] = {&x};
    uint64_t before = stats(0).prefetches;
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int bad = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS ||
                  stats(0).prefetches != before;
        CUgraph g;
        bad |= cuStreamEndCapture(s, &g) != CUDA_SUCCESS;
        _exit(bad);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    CHECK_EQ_U(stats(0).prefetches - before, 0);
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    OK(cuGraphDestroy(g));
    OK(cuMemFree(x));
    OK(cuStreamDestroy(s));
}

typedef CUresult (*begin2_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*end_fn)(CUstream, CUgraph *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

/* The per-thread variant of `name` at `version`, as a program built for
 * the per-thread default stream gets it. */
static void *per_thread(const char *name, int version)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    OK(cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q));
    CHECK(fn != NULL && q == CU_GET_PROC_ADDRESS_SUCCESS);
    return fn;
}

/* A capture of the per-thread default stream (stream 0 through the
 * per-thread begin, launch and end, as cuGetProcAddress hands them out),
 * in another thread while this one keeps a capture open too: launches into
 * either fetch nothing, both captures end valid, and their graphs' launches
 * fetch. */
typedef struct pt_job {
    CUcontext ctx;
    CUfunction f;
    CUdeviceptr x;
} pt_job;

static void *per_thread_capture(void *arg)
{
    pt_job *j = arg;
    CUfunction f = j->f;
    CUdeviceptr x = j->x;
    if (cuCtxSetCurrent(j->ctx) != CUDA_SUCCESS)
        return (void *)1;
    begin2_fn begin = per_thread("cuStreamBeginCapture", 10010);
    end_fn end = per_thread("cuStreamEndCapture", 10000);
    launch_fn launch = per_thread("cuLaunchKernel", 7000);
    void *args[] = {&x};
    uint64_t before = stats(0).prefetches;
    if (begin(NULL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS ||
        launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS || stats(0).prefetches != before)
        return (void *)1;
    CUgraph g;
    if (end(NULL, &g) != CUDA_SUCCESS || !g)
        return (void *)1;
    CUgraphExec e;
    if (cuGraphInstantiateWithFlags(&e, g, 0) != CUDA_SUCCESS || cuGraphLaunch(e, CU_STREAM_PER_THREAD) != CUDA_SUCCESS ||
        cuStreamSynchronize(CU_STREAM_PER_THREAD) != CUDA_SUCCESS || stats(0).prefetches != before + 1)
        return (void *)1;
    cuGraphExecDestroy(e);
    cuGraphDestroy(g);
    return NULL;
}

static void per_thread_stream_capture(void)
{
    CUcontext ctx = primary_context(0);
    simgpu_kernel k = {"one_ptr", one_ptr, 1, {sizeof(CUdeviceptr)}};
    CUfunction f = sim_function(&k);
    CUstream kept;
    OK(cuStreamCreate(&kept, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x = managed_chunk(), y = managed_chunk();
    void *args[] = {&y};
    uint64_t before = stats(0).prefetches;
    OK(cuStreamBeginCapture(kept, CU_STREAM_CAPTURE_MODE_RELAXED));
    pt_job job = {.ctx = ctx, .f = f, .x = x};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, per_thread_capture, &job) == 0);
    void *r;
    CHECK(pthread_join(th, &r) == 0 && r == NULL);
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, kept, args, NULL));
    CHECK_EQ_U(stats(0).prefetches - before, 1);   /* x, by the graph; y not yet */
    CUgraph g;
    OK(cuStreamEndCapture(kept, &g));
    OK(cuGraphDestroy(g));
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, kept, args, NULL));
    OK(cuStreamSynchronize(kept));
    CHECK_EQ_U(stats(0).prefetches - before, 2);
    OK(cuMemFree(x));
    OK(cuMemFree(y));
    OK(cuStreamDestroy(kept));
}

/* ---- the devices of streams ----------------------------------------------- */

enum { STREAM_THREADS = 4, STREAM_ROUNDS = 300 };

typedef struct stream_job {
    CUcontext ctx[2];
    CUfunction f;
    CUdeviceptr x[2];
    int launches[2];          /* launches made per device */
    int failures;
} stream_job;

/* Creates a stream on device (t + i) % 2, launches on it with that
 * device's chunk (once on device 0, three times on device 1), destroys
 * it; the simulator hands the handle just destroyed to the next stream,
 * on the other device. */
static void *stream_churn(void *arg)
{
    stream_job *j = arg;
    static atomic_int next;
    int t = atomic_fetch_add(&next, 1);
    for (int i = 0; i < 2 * STREAM_ROUNDS; i++) {
        int dev = (t + i) % 2;   /* the next stream, often the handle just destroyed, on the other device */
        CUstream s;
        if (cuCtxSetCurrent(j->ctx[dev]) != CUDA_SUCCESS || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
            j->failures++;
            continue;
        }
        void *args[] = {&j->x[dev]};
        int n = dev == 0 ? 1 : 3;   /* uneven: a device taken for the other shows in the counts */
        for (int k = 0; k < n; k++)
            if (cuLaunchKernel(j->f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS)
                j->failures++;
        j->launches[dev] += n;
        if (cuStreamSynchronize(s) != CUDA_SUCCESS || cuStreamDestroy(s) != CUDA_SUCCESS)
            j->failures++;
    }
    return NULL;
}

/* Four threads create streams on two devices, launch on them and destroy
 * them, 600 times each: every launch is scanned on the device its stream
 * belongs to (the counts of scanned launches per device match; a device
 * remembered for a destroyed handle would move launches between them). */
static void stream_churn_two_devices(void)
{
    CUcontext c0 = primary_context(0), c1;
    OK(cuDevicePrimaryCtxRetain(&c1, 1));
    simgpu_kernel k = {"one_ptr", one_ptr, 1, {sizeof(CUdeviceptr)}};
    CUfunction f = sim_function(&k);
    stream_job j[STREAM_THREADS];
    CUdeviceptr x0 = managed_chunk();
    OK(cuCtxSetCurrent(c1));
    CUdeviceptr x1 = managed_chunk();
    OK(cuCtxSetCurrent(c0));
    uint64_t s0 = stats(0).launches_scanned, s1 = stats(1).launches_scanned;
    pthread_t th[STREAM_THREADS];
    for (int t = 0; t < STREAM_THREADS; t++) {
        j[t] = (stream_job){.ctx = {c0, c1}, .f = f, .x = {x0, x1}};
        CHECK(pthread_create(&th[t], NULL, stream_churn, &j[t]) == 0);
    }
    int want[2] = {0, 0};
    for (int t = 0; t < STREAM_THREADS; t++) {
        CHECK(pthread_join(th[t], NULL) == 0);
        CHECK_EQ_U(j[t].failures, 0);
        want[0] += j[t].launches[0];
        want[1] += j[t].launches[1];
    }
    CHECK_EQ_U(stats(0).launches_scanned - s0, want[0]);
    CHECK_EQ_U(stats(1).launches_scanned - s1, want[1]);
    check_budget(0);
    check_budget(1);
    OK(cuMemFree(x0));
    OK(cuCtxSetCurrent(c1));
    OK(cuMemFree(x1));
}

/* A stream of device 0 cached by a launch, its context reset (its streams
 * go), four streams of device 1 made: one that got the old handle (the
 * allocator hands it back) has its launch scanned as device 1's. */
static void reset_with_cached_stream(void)
{
    CUcontext c0 = primary_context(0), c1;
    OK(cuDevicePrimaryCtxRetain(&c1, 1));
    simgpu_kernel k = {"one_ptr", one_ptr, 1, {sizeof(CUdeviceptr)}};
    OK(simgpu_register_kernel(&k));
    OK(cuCtxSetCurrent(c1));
    CUmodule m1;
    CUfunction f1;
    OK(cuModuleLoadData(&m1, "x"));
    OK(cuModuleGetFunction(&f1, m1, "one_ptr"));
    CUdeviceptr x1 = managed_chunk();
    int reused = 0;
    for (int i = 0; i < 20; i++) {
        OK(cuCtxSetCurrent(c0));
        CUmodule m0;
        CUfunction f0;
        OK(cuModuleLoadData(&m0, "x"));
        OK(cuModuleGetFunction(&f0, m0, "one_ptr"));
        CUdeviceptr x0 = managed_chunk();
        CUstream a;
        OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
        void *args0[] = {&x0};
        OK(cuLaunchKernel(f0, 1, 1, 1, 32, 1, 1, 0, a, args0, NULL));
        OK(cuStreamSynchronize(a));
        OK(cuDevicePrimaryCtxReset(0));   /* a, x0 and m0 go with it (and lmshim's streams there) */
        OK(cuCtxSetCurrent(c1));
        CUstream b[4];
        for (int t = 0; t < 4; t++) {
            OK(cuStreamCreate(&b[t], CU_STREAM_NON_BLOCKING));
            if (b[t] == a) {   /* launched on first: the cache may still name a */
                b[t] = b[0];
                b[0] = a;
                reused++;
            }
        }
        OK(cuDevicePrimaryCtxRetain(&c0, 0));
        uint64_t before = stats(1).launches_scanned;
        void *args1[] = {&x1};
        for (int t = 0; t < 4; t++) {
            OK(cuLaunchKernel(f1, 1, 1, 1, 32, 1, 1, 0, b[t], args1, NULL));
            OK(cuStreamSynchronize(b[t]));
        }
        CHECK_EQ_U(stats(1).launches_scanned - before, 4);
        for (int t = 0; t < 4; t++)
            OK(cuStreamDestroy(b[t]));
        OK(cuDevicePrimaryCtxRelease(0));
    }
    fprintf(stderr, "handles reused after a reset: %d of 20\n", reused);
    OK(cuMemFree(x1));
}

/* ---- wide launches ---------------------------------------------------------- */

/* n device allocations of `bytes` each (managed chunks at these sizes), in
 * a table the caller passes to free_table. */
static CUdeviceptr *alloc_table(int n, size_t bytes)
{
    CUdeviceptr *table = calloc((size_t)n, sizeof *table);
    CHECK(table != NULL);
    for (int i = 0; i < n; i++)
        OK(cuMemAlloc(&table[i], bytes));
    return table;
}

/* Frees the n allocations of an alloc_table table and the table. */
static void free_table(CUdeviceptr *table, int n)
{
    for (int i = 0; i < n; i++)
        OK(cuMemFree(table[i]));
    free(table);
}

typedef struct wide_job {
    CUcontext ctx;
    CUfunction f;
    CUdeviceptr *table;
    int launches;
} wide_job;

/* Launches f over the job's table, then exits (its scratches go with it). */
static void *wide_thread(void *arg)
{
    wide_job *j = arg;
    void *args[] = {j->table};
    if (cuCtxSetCurrent(j->ctx) != CUDA_SUCCESS)
        return (void *)1;
    for (int i = 0; i < j->launches; i++)
        if (cuLaunchKernel(j->f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS)
            return (void *)1;
    return NULL;
}

/* Launches of 17, 200 and 4000 chunks (4000 pointers: 32000 bytes of
 * parameters), each from threads that exit after one to three launches,
 * with one thread growing its scratch from 17 to 4000: every chunk is
 * found (fetched, as many as the budget holds), nothing leaks or is freed
 * twice (the sanitizer build), the budget holds. */
static void wide_widths(void)
{
    CUcontext ctx = primary_context(0);
    enum { MAXN = 4000 };
    CUdeviceptr *table = alloc_table(MAXN, 64 << 10);
    int widths[] = {17, 200, MAXN};
    uint64_t before = stats(0).prefetches;
    for (int w = 0; w < 3; w++) {
        char name[32];
        snprintf(name, sizeof name, "wide%d", widths[w]);
        simgpu_kernel k = {"", wide, 1, {(size_t)widths[w] * sizeof(CUdeviceptr)}};
        k.name = name;   /* the simulator copies it */
        wide_job j = {.ctx = ctx, .f = sim_function(&k), .table = table};
        pthread_t th[4];
        wide_job jobs[4];
        for (int t = 0; t < 4; t++) {
            jobs[t] = j;
            jobs[t].launches = 1 + t % 3;
            CHECK(pthread_create(&th[t], NULL, wide_thread, &jobs[t]) == 0);
            void *r;
            if (t % 2 == 1) {   /* two at a time */
                CHECK(pthread_join(th[t - 1], &r) == 0 && r == NULL);
                CHECK(pthread_join(th[t], &r) == 0 && r == NULL);
            }
        }
        /* This thread grows its scratch, width by width. */
        j.launches = 2;
        CHECK(wide_thread(&j) == NULL);
        OK(cuCtxSynchronize());
    }
    uint64_t fetched = stats(0).prefetches - before;
    fprintf(stderr, "fetches: %llu for %d chunks\n", (unsigned long long)fetched, MAXN);
    uint64_t room = stats(0).budget / (64 << 10);   /* a launch pins its chunks: the rest is read in place */
    CHECK(fetched >= (room < MAXN ? room : MAXN));
    check_budget(0);
    free_table(table, MAXN);
}

typedef struct graph_job {
    CUcontext ctx;
    CUgraphExec e;
} graph_job;

/* Launches the job's graph twice on a stream of its own, then exits. */
static void *graph_thread(void *arg)
{
    graph_job *j = arg;
    CUstream s;
    if (cuCtxSetCurrent(j->ctx) != CUDA_SUCCESS || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        return (void *)1;
    for (int i = 0; i < 2; i++)
        if (cuGraphLaunch(j->e, s) != CUDA_SUCCESS)
            return (void *)1;
    if (cuStreamSynchronize(s) != CUDA_SUCCESS || cuStreamDestroy(s) != CUDA_SUCCESS)
        return (void *)1;
    return NULL;
}

/* A graph of two kernels of 2500 chunks each, captured (the launches into
 * the capture fetch nothing), launched by three threads that exit: one
 * residency decision over 5000 chunks per launch, in each thread's
 * scratch; every chunk fetched once, nothing leaked or freed twice. */
static void graph_5000(void)
{
    CUcontext ctx = primary_context(0);
    enum { HALF = 2500 };
    simgpu_kernel k = {"wide2500", wide, 1, {HALF * sizeof(CUdeviceptr)}};
    CUfunction f = sim_function(&k);
    CUdeviceptr *table = alloc_table(2 * HALF, 64 << 10);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    uint64_t before = stats(0).prefetches;
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    void *a0[] = {table}, *a1[] = {table + HALF};
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, a0, NULL));
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, a1, NULL));
    CHECK_EQ_U(stats(0).prefetches - before, 0);
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiateWithFlags(&e, g, 0));
    graph_job j = {.ctx = ctx, .e = e};
    pthread_t th[3];
    for (int t = 0; t < 3; t++)
        CHECK(pthread_create(&th[t], NULL, graph_thread, &j) == 0);
    for (int t = 0; t < 3; t++) {
        void *r;
        CHECK(pthread_join(th[t], &r) == 0 && r == NULL);
    }
    OK(cuCtxSynchronize());
    CHECK_EQ_U(stats(0).prefetches - before, 2 * HALF);
    check_budget(0);
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
    OK(cuStreamDestroy(s));
    free_table(table, 2 * HALF);
}

static atomic_long ticks;

/* SIGALRM: counts (no SA_RESTART: interrupted calls see EINTR). */
static void tick(int sig)
{
    (void)sig;
    atomic_fetch_add(&ticks, 1);
}

typedef struct signal_job {
    CUcontext ctx;
    CUfunction f17, f200;
    CUdeviceptr *table;
    int failures;
} signal_job;

/* Wide launches on streams made and destroyed, and captures, while
 * SIGALRM interrupts every 50 us. */
static void *signal_worker(void *arg)
{
    signal_job *j = arg;
    if (cuCtxSetCurrent(j->ctx) != CUDA_SUCCESS)
        return (void *)1;
    void *args[] = {j->table};
    for (int i = 0; i < 300; i++) {
        CUstream s;
        CUgraph g;
        if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
            j->failures++;
            continue;
        }
        j->failures += cuLaunchKernel(i % 2 ? j->f17 : j->f200, 1, 1, 1, 32, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS;
        j->failures += cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED) != CUDA_SUCCESS;
        j->failures += cuLaunchKernel(j->f17, 1, 1, 1, 32, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS;
        if (cuStreamEndCapture(s, &g) == CUDA_SUCCESS)
            cuGraphDestroy(g);
        else
            j->failures++;
        j->failures += cuStreamSynchronize(s) != CUDA_SUCCESS;
        j->failures += cuStreamDestroy(s) != CUDA_SUCCESS;
    }
    return NULL;
}

/* Two threads launch 17 and 200 chunks on streams they make and destroy
 * and capture into them, under a signal every 50 us: no call fails, no
 * launch into a capture fetches (every chunk fetched once, by the
 * launches outside captures), the budget holds. */
static void signals_during_launches(void)
{
    CUcontext ctx = primary_context(0);
    enum { N = 200 };
    CUdeviceptr *table = alloc_table(N, 2 * MiB);
    simgpu_kernel k17 = {"sig17", wide, 1, {17 * sizeof(CUdeviceptr)}};
    simgpu_kernel k200 = {"sig200", wide, 1, {N * sizeof(CUdeviceptr)}};
    signal_job j[2];
    j[0] = (signal_job){.ctx = ctx, .f17 = sim_function(&k17), .f200 = sim_function(&k200), .table = table};
    j[1] = j[0];
    struct sigaction sa = {.sa_handler = tick};
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
    struct itimerval it = {.it_interval = {0, 50}, .it_value = {0, 50}};
    uint64_t before = stats(0).prefetches;
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        CHECK(pthread_create(&th[t], NULL, signal_worker, &j[t]) == 0);
    for (int t = 0; t < 2; t++) {
        void *r;
        CHECK(pthread_join(th[t], &r) == 0 && r == NULL);
        CHECK_EQ_U(j[t].failures, 0);
    }
    struct itimerval off = {0};
    CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0);
    OK(cuCtxSynchronize());
    fprintf(stderr, "signals: %ld\n", atomic_load(&ticks));
    CHECK(atomic_load(&ticks) > 0);
    CHECK_EQ_U(stats(0).prefetches - before, N);
    check_budget(0);
    free_table(table, N);
}

static const test_case cases[] = {
    {"racing_ends", racing_ends},
    {"failed_ends", failed_ends},
    {"wrong_thread_end", wrong_thread_end},
    {"fork_in_capture", fork_in_capture},
    {"per_thread_stream_capture", per_thread_stream_capture},
    {"stream_churn_two_devices", stream_churn_two_devices},
    {"reset_with_cached_stream", reset_with_cached_stream},
    {"wide_widths", wide_widths},
    {"graph_5000", graph_5000},
    {"signals_during_launches", signals_during_launches},
};

TEST_MAIN(cases)
