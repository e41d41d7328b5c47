/*
 * engine_test.c — hostile programs against the residency engine's pieces
 * of large chunks, its heaps and its learned future, with liblmshim.so
 * preloaded over the simulated GPU (settings in meson.build). Every case
 * checks lmshim's budget (no violation, the simulated device never above
 * it) and the kernels' results.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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
#define PIECE (2 * MiB)

/* span(p, bytes): touches [p, p+bytes) and adds 1 to its first byte and
 * to its last. */
static void span(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    if (!bytes)
        return;
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint8_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add((uint8_t *)(uintptr_t)(a + bytes - 1), 1, __ATOMIC_RELAXED);
    l->compute(l, 1e4);
}

/* many(arr): a by-value array of MANY pointers, each range of 4 KiB
 * touched, its first byte counted. */
#define MANY 4000
typedef struct { CUdeviceptr p[MANY]; } many_arg;
static void many(simgpu_launch *l, void **p)
{
    many_arg *m = p[0];
    for (int i = 0; i < MANY; i++) {
        l->access(l, m->p[i], 4096, SIMGPU_READ_WRITE);
        __atomic_fetch_add((uint8_t *)(uintptr_t)m->p[i], 1, __ATOMIC_RELAXED);
    }
}

/* hold(p, bytes): like span, then holds the launching thread until the
 * test opens the gate (the launch sits between lmshim's decision and its
 * record after the launch). */
static atomic_int hold_entered, hold_open;
static void hold(simgpu_launch *l, void **p)
{
    span(l, p);
    atomic_store(&hold_entered, 1);
    while (!atomic_load(&hold_open))
        sched_yield();
}

static CUfunction f_span, f_many, f_hold;
static CUmodule mod;
static int (*get_stats)(int, lms_device_stats *);

static void setup(int dev)
{
    primary_context(dev);
    simgpu_kernel k = {"span", span, 2, {8, 8}};
    OK(simgpu_register_kernel(&k));
    simgpu_kernel k2 = {"many", many, 1, {sizeof(many_arg)}};
    OK(simgpu_register_kernel(&k2));
    OK(cuModuleLoadData(&mod, "x"));
    OK(cuModuleGetFunction(&f_span, mod, "span"));
    OK(cuModuleGetFunction(&f_many, mod, "many"));
    simgpu_kernel k3 = {"hold", hold, 2, {8, 8}};
    OK(simgpu_register_kernel(&k3));
    OK(cuModuleGetFunction(&f_hold, mod, "hold"));
    get_stats = (int (*)(int, lms_device_stats *))dlsym(RTLD_DEFAULT, "lms_get_stats");
    CHECK(get_stats != NULL);
}

static void check_budget(int dev)
{
    lms_device_stats s;
    CHECK(get_stats(dev, &s) == 0);
    CHECK(s.used <= s.budget);
    CHECK_EQ_U(s.budget_violations, 0);
    simgpu_counters c;
    OK(simgpu_get_counters(dev, &c));
    CHECK(c.used_device_bytes <= s.budget);
    CHECK(c.peak_device_bytes <= s.budget);
    CHECK_EQ_U(c.inflight_waits, 0);
    CHECK_EQ_U(c.busy_evictions, 0);
    CHECK_EQ_U(c.faults, 0);   /* nothing reaches the device but by lmshim's fetches */
}

static CUresult launch_span(CUdeviceptr p, size_t bytes, CUstream s)
{
    void *args[] = {&p, &bytes};
    return cuLaunchKernel(f_span, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

static uint8_t byte_at(CUdeviceptr p)
{
    uint8_t v = 0;
    OK(cuMemcpyDtoH(&v, p, 1));
    return v;
}

static CUdeviceptr zeroed(size_t size)
{
    CUdeviceptr p;
    OK(cuMemAlloc(&p, size));
    OK(cuMemsetD8(p, 0, size));
    return p;
}

/* Chunks of odd sizes (1 byte over 2 MiB multiples, 2^31+1, 600 MiB: more
 * than 256 pieces of 2 MiB) launched through the last byte of a piece, one
 * byte ranges at a piece's end, interior pointers in descending order and
 * the same chunk 100 times; every byte counted where the kernel put it. */
static void odd_pieces(void)
{
    setup(0);
    size_t sizes[] = {5 * PIECE + 1, (1ull << 31) + 1, 600 * MiB, 7 * PIECE + 1, 3 * PIECE};
    enum { N = sizeof sizes / sizeof sizes[0] };
    CUdeviceptr c[N];
    for (int i = 0; i < N; i++) {
        if (sizes[i] <= 64 * MiB) {
            c[i] = zeroed(sizes[i]);
            continue;
        }
        OK(cuMemAlloc(&c[i], sizes[i]));   /* only what is compared is set */
        for (size_t off = 0; off < sizes[i]; off += PIECE) {
            size_t len = sizes[i] - off < PIECE ? sizes[i] - off : PIECE;
            OK(cuMemsetD8(c[i] + off, 0, len < 8 ? len : 8));
            OK(cuMemsetD8(c[i] + off + len - (len < 8 ? len : 8), 0, len < 8 ? len : 8));
        }
    }
    uint8_t *want[N];
    for (int i = 0; i < N; i++)
        CHECK((want[i] = calloc(1, sizes[i])) != NULL);
    unsigned seed = 7;
    for (int round = 0; round < 12; round++) {
        for (int i = 0; i < N; i++) {
            size_t sz = sizes[i];
            /* descending interior pointers, each a small range */
            for (int k = 5; k >= 0; k--) {
                size_t off = (size_t)(rand_r(&seed) % (unsigned)(sz / PIECE + 1)) * PIECE + (size_t)k;
                if (off >= sz)
                    off = sz - 1;
                size_t len = (off + PIECE - 8 <= sz) ? PIECE - 8 : sz - off;
                OK(launch_span(c[i] + off, len, NULL));
                want[i][off]++;
                want[i][off + len - 1]++;
            }
            /* the last byte of the chunk alone, and of a piece */
            OK(launch_span(c[i] + sz - 1, 1, NULL));
            want[i][sz - 1] += 2;
            size_t last = PIECE - 1 < sz ? PIECE - 1 : sz - 1;
            OK(launch_span(c[i] + last, 1, NULL));
            want[i][last] += 2;
            check_budget(0);
        }
    }
    /* the whole of the smallest ones */
    for (int r = 0; r < 100; r++) {
        OK(launch_span(c[0], sizes[0], NULL));
        want[0][0]++;
        want[0][sizes[0] - 1]++;
    }
    OK(cuCtxSynchronize());
    check_budget(0);
    for (int i = 0; i < N; i++) {
        /* every byte of the small chunks; the heads and tails of every
         * 2 MiB piece (where the launches counted) of the large ones */
        uint8_t *got = malloc(PIECE);
        CHECK(got != NULL);
        for (size_t off = 0; off < sizes[i]; off += PIECE) {
            size_t len = sizes[i] - off < PIECE ? sizes[i] - off : PIECE;
            if (sizes[i] <= 64 * MiB || len <= 8) {
                OK(cuMemcpyDtoH(got, c[i] + off, len));
                CHECK(memcmp(got, want[i] + off, len) == 0);
            } else {
                OK(cuMemcpyDtoH(got, c[i] + off, 8));
                OK(cuMemcpyDtoH(got + 8, c[i] + off + len - 8, 8));
                CHECK(memcmp(got, want[i] + off, 8) == 0);
                CHECK(memcmp(got + 8, want[i] + off + len - 8, 8) == 0);
            }
        }
        free(got);
        free(want[i]);
        OK(cuMemFree(c[i]));
    }
    check_budget(0);
}

typedef struct job {
    int id;
    CUdeviceptr *c;
    size_t *sizes;
    int n;
    int dev;                  /* the device its chunks are on */
    CUresult fail;
    int line;
} job;

#define TRY(j, call)                                          \
    do {                                                      \
        CUresult r_ = (call);                                 \
        if (r_ != CUDA_SUCCESS && !(j)->fail) {               \
            (j)->fail = r_;                                   \
            (j)->line = __LINE__;                             \
        }                                                     \
    } while (0)

static atomic_int counts[16][2];
static CUcontext ctxs[2];

/* 8 threads x 4 streams over pieced chunks: pointers at piece boundaries
 * and ends; counts kept per chunk (first byte of each launch's range is
 * the chunk's first or last piece's byte). */
static void *worker(void *arg)
{
    job *j = arg;
    TRY(j, cuCtxSetCurrent(ctxs[j->dev]));
    CUstream s[4];
    for (int i = 0; i < 4; i++)
        TRY(j, cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
    unsigned seed = (unsigned)j->id * 77 + 1;
    for (int it = 0; it < 300 && !j->fail; it++) {
        int k = rand_r(&seed) % j->n;
        /* thread t owns byte t of the chunk's head and byte t from its end */
        size_t sz = j->sizes[k];
        if (rand_r(&seed) & 1)
            TRY(j, launch_span(j->c[k] + (size_t)j->id, 1, s[it % 4]));
        else
            TRY(j, launch_span(j->c[k] + sz - 1 - (size_t)j->id, 1, s[it % 4]));
        atomic_fetch_add(&counts[k + 8 * j->dev][0], 1);
        if (it % 16 == 0) {
            lms_device_stats st;
            if (get_stats(j->dev, &st) != 0 || st.budget_violations != 0 || st.used > st.budget) {
                j->fail = 999;
                j->line = __LINE__;
            }
        }
    }
    for (int i = 0; i < 4; i++) {
        TRY(j, cuStreamSynchronize(s[i]));
        TRY(j, cuStreamDestroy(s[i]));
    }
    return NULL;
}

/* The workers over chunks of odd sizes on `ndev` devices (8 threads each). */
static void run_threads(int ndev)
{
    setup(0);
    enum { N = 6 };
    size_t sizes[N] = {9 * PIECE + 1, 40 * PIECE + 3, 3 * PIECE, 5 * PIECE + 1, 70 * PIECE, 2 * PIECE + 1};
    CUdeviceptr c[2][N];
    for (int d = 0; d < ndev; d++) {
        ctxs[d] = primary_context(d);
        for (int i = 0; i < N; i++)
            c[d][i] = zeroed(sizes[i]);
        /* tensor starts inside the chunks, so that pieces are cut at them */
        for (int i = 0; i < N; i++)
            for (size_t off = PIECE / 2; off + 64 < sizes[i]; off += 3 * PIECE)
                OK(launch_span(c[d][i] + off + 64, 1, NULL));
    }
    pthread_t t[16];
    job jobs[16];
    for (int i = 0; i < 8 * ndev; i++) {
        jobs[i] = (job){.id = i % 8, .c = c[i / 8], .sizes = sizes, .n = N, .dev = i / 8};
        CHECK(pthread_create(&t[i], NULL, worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < 8 * ndev; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
        if (jobs[i].fail)
            fprintf(stderr, "thread %d: %d at line %d\n", i, jobs[i].fail, jobs[i].line);
        CHECK(jobs[i].fail == 0);
    }
    for (int d = 0; d < ndev; d++) {
        OK(cuCtxSetCurrent(ctxs[d]));
        OK(cuCtxSynchronize());
        check_budget(d);
        for (int i = 0; i < N; i++) {
            uint64_t sum = 0;
            for (int b = 0; b < 8; b++)
                sum += (uint64_t)byte_at(c[d][i] + (size_t)b) + byte_at(c[d][i] + sizes[i] - 1 - (size_t)b);
            /* each launch adds 2 to one byte (its first and last are the same) */
            CHECK_EQ_U(sum, 2ull * (uint64_t)atomic_load(&counts[i + 8 * d][0]));
            OK(cuMemFree(c[d][i]));
        }
        check_budget(d);
    }
}

static void threads_pieces(void)
{
    run_threads(1);
}

static void threads_two_devices(void)
{
    int n = 0;
    OK(cuInit(0));
    OK(cuDeviceGetCount(&n));
    CHECK(n >= 2);
    run_threads(2);
}

/* Frees of pieced chunks (cuMemFree and cuMemFreeAsync) while other
 * streams' launches use other chunks and the freed one's pieces are
 * resident; allocations of the same size in the same place, again and
 * again (the id space grows). */
static void free_churn(void)
{
    setup(0);
    CUstream s[3];
    for (int i = 0; i < 3; i++)
        OK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
    CUdeviceptr keep = zeroed(9 * PIECE + 1);
    size_t big = 20 * PIECE + 1;
    for (int r = 0; r < 3000; r++) {
        CUdeviceptr p;
        OK(cuMemAlloc(&p, r % 3 ? big : 3 * MiB));
        size_t sz = r % 3 ? big : 3 * MiB;
        OK(launch_span(p, sz, s[0]));
        OK(launch_span(p + sz / 2, sz - sz / 2, s[1]));
        OK(launch_span(keep + (size_t)(r % 9) * PIECE, PIECE, s[2]));
        if (r % 2)
            OK(cuMemFreeAsync(p, s[r % 3]));
        else
            OK(cuMemFree(p));
        if (r % 100 == 0)
            check_budget(0);
    }
    for (int i = 0; i < 3; i++)
        OK(cuStreamSynchronize(s[i]));
    uint8_t first = byte_at(keep);
    CHECK_EQ_U(first, ((3000 + 8) / 9) & 0xff);   /* a byte: it wraps */
    OK(cuMemFree(keep));
    check_budget(0);
    lms_device_stats st;
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.used, 0);
}

/* A step whose launch sequence is random each time, 60,000 launches over
 * 300 chunks, some pieced; then one launch with 4,000 chunks. */
static void random_steps(void)
{
    setup(0);
    enum { N = 300 };
    CUdeviceptr c[N];
    size_t sz[N];
    uint32_t cnt[N] = {0};
    for (int i = 0; i < N; i++) {
        sz[i] = i % 50 == 0 ? 30 * PIECE + 1 : (size_t)(1 + i % 5) * MiB + 13;
        c[i] = zeroed(sz[i]);
    }
    unsigned seed = 3;
    for (int l = 0; l < 60000; l++) {
        int k = rand_r(&seed) % N;
        OK(launch_span(c[k], sz[k], NULL));
        cnt[k] += 2;
        if (l % 5000 == 0)
            check_budget(0);
    }
    OK(cuCtxSynchronize());
    check_budget(0);
    for (int i = 0; i < N; i++)
        CHECK_EQ_U(byte_at(c[i]) + (uint32_t)0, (cnt[i] / 2) & 0xff);
    for (int i = 0; i < N; i++)
        OK(cuMemFree(c[i]));
    /* one launch with 4,000 chunks of 4 KiB (and one pieced chunk's 100 interior pointers) */
    static many_arg m;
    CUdeviceptr small[MANY - 100];
    for (int i = 0; i < MANY - 100; i++) {
        small[i] = zeroed(4096 + (size_t)i % 3);
        m.p[i] = small[i];
    }
    CUdeviceptr big = zeroed(300 * PIECE);
    for (int i = 0; i < 100; i++)
        m.p[MANY - 100 + i] = big + (size_t)(99 - i) * 3 * PIECE;
    void *args[] = {&m};
    for (int r = 0; r < 3; r++)
        OK(cuLaunchKernel(f_many, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    OK(cuCtxSynchronize());
    check_budget(0);
    for (int i = 0; i < MANY - 100; i += 97)
        CHECK_EQ_U(byte_at(small[i]), 3);
    CHECK_EQ_U(byte_at(big + 3 * PIECE), 3);
    for (int i = 0; i < MANY - 100; i++)
        OK(cuMemFree(small[i]));
    OK(cuMemFree(big));
    check_budget(0);
}

/* fork while pieced chunks are resident: the child launches on them and
 * frees them; the parent's go on. Graphs capturing launches on pieces. */
static void fork_graphs(void)
{
    setup(0);
    size_t sz = 25 * PIECE + 1;
    CUdeviceptr a = zeroed(sz), b = zeroed(sz);
    for (int r = 0; r < 5; r++) {
        OK(launch_span(a, sz, NULL));
        OK(launch_span(b + PIECE * 3 + 1, PIECE, NULL));
    }
    OK(cuCtxSynchronize());
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (int r = 0; r < 20; r++) {
            if (launch_span(a + (size_t)r * PIECE, PIECE, NULL) != CUDA_SUCCESS)
                _exit(2);
        }
        if (cuCtxSynchronize() != CUDA_SUCCESS)
            _exit(3);
        lms_device_stats st;
        if (get_stats(0, &st) != 0 || st.budget_violations)
            _exit(4);
        cuMemFree(a);
        cuMemFree(b);
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    OK(launch_span(a + 5 * PIECE, PIECE, s));
    OK(launch_span(b + sz - PIECE, PIECE, s));
    OK(launch_span(a, sz, s));
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    for (int r = 0; r < 10; r++) {
        OK(cuGraphLaunch(e, s));
        OK(launch_span(b, sz, NULL));
        check_budget(0);
    }
    OK(cuStreamSynchronize(s));
    OK(cuCtxSynchronize());
    CHECK_EQ_U(byte_at(a), 5 + 10);
    CHECK_EQ_U(byte_at(a + 5 * PIECE), 10);
    CHECK_EQ_U(byte_at(b + sz - 1), 10 + 10);
    CHECK_EQ_U(byte_at(b), 10);
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
    OK(cuMemFree(a));
    OK(cuMemFree(b));
    check_budget(0);
}

/* Two devices, launches on both (pieced chunks on each). */
static void two_devices(void)
{
    int n = 0;
    OK(cuInit(0));
    OK(cuDeviceGetCount(&n));
    CHECK(n >= 2);
    setup(0);
    CUdeviceptr a0 = zeroed(33 * PIECE + 1);
    primary_context(1);
    CUdeviceptr a1 = zeroed(33 * PIECE + 1);
    for (int r = 0; r < 30; r++) {
        primary_context(r % 2);
        CUdeviceptr p = r % 2 ? a1 : a0;
        OK(launch_span(p + (size_t)(r % 33) * PIECE, PIECE, NULL));
        check_budget(r % 2);
    }
    OK(cuCtxSynchronize());
    primary_context(0);
    OK(cuCtxSynchronize());
    CHECK_EQ_U(byte_at(a0), 1);
    CHECK_EQ_U(byte_at(a1 + PIECE), 1);
    OK(cuMemFree(a0));
    OK(cuMemFree(a1));
    check_budget(0);
    check_budget(1);
}

/* A chunk of 2^31+1 bytes launched through its base (for a traced run:
 * its pieces' sizes show in the prefetch lines). */
static void one_big(void)
{
    setup(0);
    size_t sz = (1ull << 31) + 1;
    CUdeviceptr p;
    OK(cuMemAlloc(&p, sz));
    OK(cuMemsetD8(p, 0, 1));
    OK(launch_span(p, 1, NULL));
    OK(cuCtxSynchronize());
    CHECK_EQ_U(byte_at(p), 2);
    check_budget(0);
    OK(cuMemFree(p));
}

/* Two steps of 60,000 launches each in the same order (the learned
 * history must grow past its first size), on three streams, over 300
 * chunks (some in pieces); between the steps the module is unloaded and
 * loaded again (new function handles for the same kernels). */
static void long_steps(void)
{
    setup(0);
    enum { N = 300, L = 60000 };
    static CUdeviceptr c[N];
    static size_t sz[N];
    static uint32_t cnt[N];
    for (int i = 0; i < N; i++) {
        sz[i] = i % 60 == 0 ? 20 * PIECE + 1 : (size_t)(1 + i % 3) * MiB + 5;
        c[i] = zeroed(sz[i]);
    }
    CUstream s[3];
    for (int i = 0; i < 3; i++)
        OK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
    for (int step = 0; step < 2; step++) {
        unsigned seed = 11;   /* the same order each step */
        for (int l = 0; l < L; l++) {
            int k = rand_r(&seed) % N;
            int st = k % 3;   /* a chunk stays on one stream: the program orders nothing across them */
            OK(launch_span(c[k] + (k % 60 == 0 ? (size_t)(l % 20) * PIECE : 0), k % 60 == 0 ? PIECE : sz[k], s[st]));
            cnt[k] += k % 60 == 0 ? (l % 20 == 0) : 1;
            if (l % 10000 == 0)
                check_budget(0);
        }
        OK(cuCtxSynchronize());
        check_budget(0);
        if (step == 0) {   /* the module goes and comes back: new handles */
            OK(cuModuleUnload(mod));
            OK(cuModuleLoadData(&mod, "x"));
            OK(cuModuleGetFunction(&f_span, mod, "span"));
        }
    }
    for (int i = 0; i < N; i++)
        CHECK_EQ_U(byte_at(c[i]), cnt[i] & 0xff);   /* the first byte: once per launch that began there */
    for (int i = 0; i < 3; i++)
        OK(cuStreamDestroy(s[i]));
    for (int i = 0; i < N; i++)
        OK(cuMemFree(c[i]));
    check_budget(0);
}

/* Chunks exactly at half the room (whole) and a byte over (pieces), each
 * launched whole, then through its last byte (for a traced run with
 * LMS_LIMIT=40M: the prefetch lines show which moved whole). */
static void threshold(void)
{
    setup(0);
    size_t half = 20 * MiB;
    CUdeviceptr a = zeroed(half), b = zeroed(half + 1);
    for (int r = 0; r < 3; r++) {
        OK(launch_span(a, half, NULL));
        OK(launch_span(b, half + 1, NULL));
        OK(launch_span(a + half - 1, 1, NULL));
        OK(launch_span(b + half, 1, NULL));
        check_budget(0);
    }
    OK(cuCtxSynchronize());
    CHECK_EQ_U(byte_at(a), 3);
    CHECK_EQ_U(byte_at(a + half - 1), 9);   /* the whole range ends there too */
    CHECK_EQ_U(byte_at(b), 3);
    CHECK_EQ_U(byte_at(b + half), 9);
    OK(cuMemFree(a));
    OK(cuMemFree(b));
    check_budget(0);
}

typedef struct hold_job {
    CUdeviceptr p;
    size_t bytes;
    CUstream s;
    CUresult r;
} hold_job;

static void *hold_work(void *arg)
{
    hold_job *j = arg;
    j->r = cuCtxSetCurrent(ctxs[0]);
    void *args[] = {&j->p, &j->bytes};
    if (j->r == CUDA_SUCCESS)
        j->r = cuLaunchKernel(f_hold, 1, 1, 1, 32, 1, 1, 0, j->s, args, NULL);
    return NULL;
}

/* A pieced chunk freed (and another allocated in its place, launched on)
 * while a launch on it, on another stream, is between lmshim's decision
 * and its record; the launch then ends. */
static void free_mid_launch(void)
{
    setup(0);
    ctxs[0] = primary_context(0);
    size_t sz = 30 * PIECE + 1;
    for (int round = 0; round < 4; round++) {
        CUdeviceptr x = zeroed(sz), y = zeroed(sz);
        OK(launch_span(x, sz, NULL));
        OK(launch_span(y + PIECE, PIECE, NULL));
        hold_job j = {.p = x + (size_t)round * PIECE, .bytes = PIECE};
        OK(cuStreamCreate(&j.s, CU_STREAM_NON_BLOCKING));
        atomic_store(&hold_entered, 0);
        atomic_store(&hold_open, 0);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, hold_work, &j) == 0);
        while (!atomic_load(&hold_entered))
            sched_yield();
        if (round % 2)
            OK(cuMemFreeAsync(x, NULL));
        else
            OK(cuMemFree(x));
        CUdeviceptr z = zeroed(sz);   /* perhaps where x was */
        OK(launch_span(z, sz, NULL));
        OK(launch_span(y, sz, NULL));
        atomic_store(&hold_open, 1);
        CHECK(pthread_join(t, NULL) == 0);
        OK(j.r);
        OK(cuCtxSynchronize());
        CHECK_EQ_U(byte_at(z), 1);
        CHECK_EQ_U(byte_at(y + PIECE), 1);
        check_budget(0);
        OK(cuStreamDestroy(j.s));
        OK(cuMemFree(y));
        OK(cuMemFree(z));
    }
    lms_device_stats st;
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.used, 0);
    check_budget(0);
}

static const test_case cases[] = {
    {"odd_pieces", odd_pieces},
    {"threads_pieces", threads_pieces},
    {"free_churn", free_churn},
    {"random_steps", random_steps},
    {"fork_graphs", fork_graphs},
    {"two_devices", two_devices},
    {"threads_two_devices", threads_two_devices},
    {"one_big", one_big},
    {"long_steps", long_steps},
    {"threshold", threshold},
    {"free_mid_launch", free_mid_launch},
};

TEST_MAIN(cases)
