/*
 * streams_ipc_test.c — liblmshim.so (LD_PRELOAD, settings in meson.build)
 * with many streams and threads (a hundred streams, slots taken over in the
 * middle of another thread's launch, reads over the link racing a fetch,
 * 64 per-thread default streams, fork) and with memory shared between
 * processes (an exportable current pool, odd pointers, the advice of a
 * refused export). Kernels of different streams overlap
 * (SIMGPU_CONCURRENT=1), so a missing wait shows in the simulator's counters.
 */
#include "breakers.h"


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
    CHECK_EQ_U(jobs_on_new_chunks(many_work, THREADS, c, CHUNKS), THREADS * 600);
    simgpu_counters sc;
    OK(simgpu_get_counters(0, &sc));
    printf("inflight_waits=%llu busy_evictions=%llu\n", (unsigned long long)sc.inflight_waits,
           (unsigned long long)sc.busy_evictions);
    check_invariants();
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
    CHECK_EQ_U(jobs_on_new_chunks(mt_work, THREADS, c, CHUNKS), THREADS * 300);
    check_invariants();
    /* 64 threads at once, each on its own per-thread default stream (more
     * streams than lmshim's slots; threads end while chunks remember them). */
    run_jobs(ptsz_work, 64, 100, c, CHUNKS);
    OK(cuCtxSynchronize());
    CHECK_EQ_U(counters_sum(c, CHUNKS), THREADS * 300 + 64 * 20);
    check_invariants();
}

/* ---- fork ---------------------------------------------------------------------- */

/* Graph launches and kernels in flight, then fork: the child (the simulator
 * lets it use CUDA) launches the graph and kernels on its own; the parent
 * goes on. Both see their own results, and neither hangs. */
static void fork_after_launches(void)
{
    CUstream s;
    CUdeviceptr c[8];
    setup_stream_chunks(&s, c, 8);
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

/* An exportable pool made the device's current pool: cuMemAllocAsync
 * allocates from it, so its memory must stay exportable (on the device). */
static void ipc_current_pool(void)
{
    setup();
    CUmemoryPool ex = make_pool(0, true), def;
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

/* Where this process's lines begin in its log (set before main, and again
 * after an exec): a log of the same name left by an earlier process of the
 * same pid is not read. */
static pid_log log_of_run;

__attribute__((constructor)) static void note_log_start(void)
{
    pid_log_init(&log_of_run, "BREAKERS_LOG_DIR", "breakers");
}

/* The lines of this process's log (LMS_LOG_FILE=BREAKERS_LOG_DIR/
 * breakers_<pid>.log) that name the pointer at; the count of lines with
 * `what` in *refusals. Returns how many lines name `at`. */
static int log_lines_naming(CUdeviceptr at, const char *what, int *refusals)
{
    char line[1024], addr[32];
    snprintf(addr, sizeof addr, "0x%llx ", (unsigned long long)at);
    FILE *f = fopen(log_of_run.path, "r");
    int n = 0;
    *refusals = 0;
    if (!f)
        return 0;   /* nothing logged at all */
    CHECK(fseek(f, log_of_run.from, SEEK_SET) == 0);
    while (fgets(line, sizeof line, f)) {
        n += strstr(line, addr) != NULL;
        *refusals += strstr(line, what) != NULL;
    }
    fclose(f);
    return n;
}

/* IPC on an interior pointer, a freed pointer and a plain pool's memory:
 * CUDA's answers, no crash, no log about chunks that are not lmshim's
 * (checked where the log goes to BREAKERS_LOG_DIR, meson.build). */
static void ipc_odd_pointers(void)
{
    setup();
    CUdeviceptr small, big;
    OK(cuMemAlloc(&small, 1 * MiB));   /* on the device */
    big = chunk();                     /* off the device */
    CUipcMemHandle h;
    CUresult base_r = cuIpcGetMemHandle(&h, small);
    OK(base_r);
    /* The driver takes the base of an allocation; the simulator refuses an
     * interior pointer (docs/SIMULATOR.md), and lmshim passes that on. */
    CHECK_IS(cuIpcGetMemHandle(&h, small + 4096), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuIpcGetMemHandle(&h, big + 4096), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuIpcGetMemHandle(&h, big), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(big));
    CHECK_IS(cuIpcGetMemHandle(&h, big), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(small));
    CHECK_IS(cuIpcGetMemHandle(&h, small), CUDA_ERROR_INVALID_VALUE);
    CUmemoryPool plain = make_pool(0, false);
    CUdeviceptr p;
    OK(cuMemAllocFromPoolAsync(&p, 1 * MiB, plain, NULL));
    CUmemPoolPtrExportData data;
    CHECK_IS(cuMemPoolExportPointer(&data, p), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemPoolExportPointer(&data, 0), CUDA_ERROR_INVALID_VALUE);
    if (getenv("BREAKERS_LOG_DIR")) {
        fflush(NULL);
        int refusals;
        CHECK_EQ_U(log_lines_naming(small, "was placed in", &refusals), 0);
        CHECK_EQ_U(log_lines_naming(p, "cuMemPoolExportPointer", &refusals), 0);
        CHECK_EQ_U(refusals, 0);
        /* the one refusal of lmshim's own chunk, before its free */
        log_lines_naming(big, "was placed in", &refusals);
        CHECK_EQ_U(refusals, 1);
    }
    OK(cuMemFreeAsync(p, NULL));
    OK(cuCtxSynchronize());
    OK(cuMemPoolDestroy(plain));
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
    {"hundred_streams", hundred_streams},
    {"threads_many_streams", threads_many_streams},
    {"fetch_vs_remote_reader", fetch_vs_remote_reader},
    {"slot_taken_mid_launch", slot_taken_mid_launch},
    {"eight_threads", eight_threads},
    {"fork_after_launches", fork_after_launches},
    {"ipc_current_pool", ipc_current_pool},
    {"ipc_odd_pointers", ipc_odd_pointers},
    {"ipc_advice_works", ipc_advice_works},
};

TEST_MAIN(cases)
