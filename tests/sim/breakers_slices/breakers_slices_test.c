/*
 * breakers_slices_test.c — hostile programs against the ledger of freed
 * bytes and the moves in slices (src/engine/residency.c): a chunk fetched
 * again while its own eviction is still queued, chunks around the slice
 * size, more evictions than the ledger's ring, kernels reading what the
 * previous kernel wrote across streams and threads. liblmshim.so is
 * preloaded over the simulated GPU (settings in meson.build: a 128 MiB
 * budget, every chunk managed); modeled times come from the simulator's
 * timeline file (SIMGPU_TIMELINE).
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "../../common/timeline.h"
#include "lmshim.h"
#include "simgpu.h"
#include "../../common/stamp_kernels.h"

#define MiB (1ull << 20)
#define MAXOPS 65536

/* follow(p, q, bytes): touches both; writes 1 + p's first word to q's first and last words. */
static void follow(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0], b = *(CUdeviceptr *)p[1];
    size_t bytes = *(size_t *)p[2];
    l->access(l, a, bytes, SIMGPU_READ);
    l->access(l, b, bytes, SIMGPU_READ_WRITE);
    uint32_t *x = (uint32_t *)(uintptr_t)a, *y = (uint32_t *)(uintptr_t)b;
    y[0] = x[0] + 1;
    y[bytes / 4 - 1] = x[bytes / 4 - 1] + 1;
}

static CUfunction f_stamp, f_follow, f_slow;
static CUmodule mod;

/* The primary context of device 0 and the kernels stamp, slow and follow. */
static void setup(void)
{
    primary_context(0);
    simgpu_kernel k = {"follow", follow, 3, {8, 8, 8}};
    OK(simgpu_register_kernel(&k));
    stamp_kernels_load(&mod, &f_stamp, &f_slow);
    OK(cuModuleGetFunction(&f_follow, mod, "follow"));
}

/* The budget LMS_LIMIT sets (in MiB: "NNNM"). */
static uint64_t budget(void)
{
    const char *l = getenv("LMS_LIMIT");
    CHECK(l != NULL);
    return strtoull(l, NULL, 10) * MiB;   /* "NNNM" */
}

/* The checks every case ends with. */
static void check_end(void)
{
    OK(cuCtxSynchronize());
    check_no_hazards(0, false);
}

/* check_end() for the cases whose threads share chunks across streams.
 * Under LMS_STREAM_ORDER=0 lmshim keeps only a chunk's latest use and
 * skips the fetch waits (the setting exists to show that the simulator's
 * counters catch missing waits): a kernel on one thread's stream may then
 * touch a shared chunk that another thread's fetch is still copying, or
 * an eviction may wait for the latest use only, depending on how the
 * threads interleave (seen once in CI, 4 blocks touched mid-copy, not in
 * 200 runs here). There only the budget is checked; the chains' results
 * are checked by the case either way. */
static void check_end_shared(void)
{
    const char *order = getenv("LMS_STREAM_ORDER");
    if (!order || strcmp(order, "0") != 0) {
        check_end();
        return;
    }
    OK(cuCtxSynchronize());
    CHECK_EQ_U(stats(0).budget_violations, 0);
}

/* The start refetch_own_eviction and device_alloc_waits share: X, W1 and
 * W2 fill the budget; X is used last by a slow kernel on stream A (it
 * stamps 7), W1 and W2 then by quick ones on stream B, which has finished:
 * X is the least recently used and still in use. */
typedef struct slow_x {
    CUstream a, b, c;          /* X's stream, W1's and W2's, a third */
    CUdeviceptr x, w1, w2;     /* owned by the case */
    long mark;                 /* the timeline's length before the slow kernel (bytes) */
} slow_x;

static slow_x slow_x_full(size_t x_bytes, size_t w1_bytes, size_t w2_bytes)
{
    setup();
    slow_x t;
    OK(cuStreamCreate(&t.a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&t.b, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&t.c, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc(&t.x, x_bytes));
    OK(cuMemAlloc(&t.w1, w1_bytes));
    OK(cuMemAlloc(&t.w2, w2_bytes));
    launch_stamp(f_stamp, t.x, x_bytes, 1, t.a);
    launch_stamp(f_stamp, t.w1, w1_bytes, 1, t.b);
    launch_stamp(f_stamp, t.w2, w2_bytes, 1, t.b);
    OK(cuCtxSynchronize());
    t.mark = timeline_mark();
    launch_stamp(f_slow, t.x, x_bytes, 7, t.a);
    launch_stamp(f_stamp, t.w1, w1_bytes, 2, t.b);
    launch_stamp(f_stamp, t.w2, w2_bytes, 2, t.b);
    OK(cuStreamSynchronize(t.b));
    return t;
}

/* Destroys a slow_x's streams. */
static void slow_x_end(slow_x *t)
{
    OK(cuStreamDestroy(t->a));
    OK(cuStreamDestroy(t->b));
    OK(cuStreamDestroy(t->c));
}

/* X (24 MiB: two slices) is used by a slow kernel on stream A; W1, W2
 * (50 and 54 MiB) by quick ones on B, so X is the least recently used
 * and the budget is full. A device allocation of 512 KiB evicts X, whose
 * eviction waits for the slow kernel. W1 and W2 are freed: the room is
 * back at once. A launch on X on a third stream C fetches X again with
 * room to spare: its copy in must still come after its own copy out
 * (else the copy out, which waits for the slow kernel, runs last on the
 * GPU and leaves X on the host while the engine counts it resident). The
 * kernel reads what the slow kernel wrote. */
static void refetch_own_eviction(void)
{
    slow_x t = slow_x_full(24 * MiB, 50 * MiB, 54 * MiB);
    CUstream c = t.c;
    CUdeviceptr x = t.x, w1 = t.w1, w2 = t.w2, z;
    long mark = t.mark;
    OK(cuMemAlloc(&z, 512 << 10));   /* a device chunk: evicts X */
    OK(cuMemFree(w1));
    OK(cuMemFree(w2));
    size_t bytes = 512 << 10;
    void *args[] = {&x, &z, &bytes};
    OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, c, args, NULL));   /* fetches X again */
    OK(cuCtxSynchronize());
    uint32_t v = 0;
    OK(cuMemcpyDtoH(&v, z, 4));
    CHECK_EQ_U(v, 8);   /* X's stamp from the slow kernel, plus one */
    static timeline_op ops[MAXOPS];
    int n = timeline_read_ops(mark, ops, MAXOPS);
    /* Only X leaves after the mark, and only X comes in after it left. */
    double out_end[8], in_start[8];
    int outs = 0, ins = 0;
    for (int i = 0; i < n; i++) {
        if (!ops[i].to_device && outs < 8)
            out_end[outs++] = ops[i].end;
        else if (ops[i].to_device && outs > 0 && ins < 8)
            in_start[ins++] = ops[i].start;
    }
    CHECK_EQ_U(outs, 2);   /* two slices each way */
    CHECK_EQ_U(ins, 2);
    for (int k = 0; k < 2; k++) {
        fprintf(stderr, "X's slice %d leaves until %.1f us, comes back from %.1f us\n", k, out_end[k], in_start[k]);
        CHECK(in_start[k] >= out_end[k] - 0.01);
    }
    check_end();
    OK(cuMemFree(x));
    OK(cuMemFree(z));
    slow_x_end(&t);
}

/* As refetch_own_eviction's start, with 24 MiB allocations on the device
 * (LMS_THRESHOLD=32M): X (24 MiB) used by a slow kernel on stream A, W1
 * and W2 (50 and 54 MiB) by quick ones on B, the budget full. A device
 * allocation D of 24 MiB makes the engine evict X, whose copy out waits
 * for the slow kernel; D is on the device from its allocation on, so the
 * allocation must not return before enough of X is off it. A kernel on D on a new
 * stream (kernels of streams overlap: SIMGPU_CONCURRENT=1) starts no
 * earlier than the allocation returned. */
static void device_alloc_waits(void)
{
    slow_x t = slow_x_full(40 * MiB, 40 * MiB, 48 * MiB);
    CUstream c = t.c;
    CUdeviceptr x = t.x, w1 = t.w1, w2 = t.w2, d;
    long mark = t.mark;
    OK(cuMemAlloc(&d, 24 * MiB));   /* a device chunk: evicts X */
    launch_stamp(f_stamp, d, 24 * MiB, 3, c);
    OK(cuCtxSynchronize());
    static timeline_op ops[MAXOPS];
    int n = timeline_read_ops(mark, ops, MAXOPS);
    CHECK(n > 0);
    FILE *f = fopen(getenv("SIMGPU_TIMELINE"), "r");
    CHECK(f != NULL);
    CHECK(fseek(f, mark, SEEK_SET) == 0);
    char line[512];
    double use = -1;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "kernel stamp"))
            CHECK(sscanf(line, "%*d %*s %*s %lf", &use) == 1);   /* the last: D's */
    fclose(f);
    uint64_t out = 0;   /* X's bytes off the device by then */
    for (int i = 0; i < n; i++)
        if (!ops[i].to_device && ops[i].end <= use + 0.01)
            out += ops[i].bytes;
    fprintf(stderr, "D used from %.1f us, %llu MiB of X off the device by then\n", use,
            (unsigned long long)(out / MiB));
    CHECK(128 * MiB - out + 24 * MiB <= budget());   /* W1, W2 and X were the whole budget */
    check_end();
    OK(cuMemFree(x));
    OK(cuMemFree(w1));
    OK(cuMemFree(w2));
    OK(cuMemFree(d));
    slow_x_end(&t);
}

/* The most managed bytes on the device at any modeled time after byte
 * `from` of the timeline, plus `base` held before (no chunk freed meanwhile). */
static uint64_t peak_on_timeline(long from, uint64_t base)
{
    static timeline_op ops[MAXOPS];
    int n = timeline_read_ops(from, ops, MAXOPS);
    CHECK(n < MAXOPS);
    return timeline_peak(ops, n, base);
}

static uint32_t word_at(CUdeviceptr p)
{
    uint32_t v = 0;
    OK(cuMemcpyDtoH(&v, p, 4));
    return v;
}

static uint32_t rnd(uint64_t *st)
{
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*st >> 33);
}

/* Chunks of sizes around the slice (16 MiB less a byte, 16 MiB and a
 * byte, 18 MiB, sizes off the 2 MiB grid, 40 MiB and a byte) on three
 * streams: each stream chains `follow` kernels over its own chunks, so
 * each kernel reads what the stream's previous kernel wrote; the chunks
 * are evicted and fetched again in slices all along. Each stream's last
 * chunk holds the chain's length; the budget holds on the timeline. */
static void odd_sizes(void)
{
    setup();
    enum { S = 3, PER = 6, STEPS = 120 };
    static const size_t sizes[PER] = {16 * MiB - 1, 16 * MiB + 1, 18 * MiB, 17 * MiB + 4097,
                                      40 * MiB + 1, 2 * MiB + 1};
    CUstream st[S];
    CUdeviceptr c[S][PER];
    long mark = timeline_mark();
    for (int i = 0; i < S; i++) {
        OK(cuStreamCreate(&st[i], CU_STREAM_NON_BLOCKING));
        for (int j = 0; j < PER; j++)
            OK(cuMemAlloc(&c[i][j], sizes[j]));
        launch_stamp(f_stamp, c[i][0], 2 * MiB, 0, st[i]);
    }
    uint64_t r = 7;
    int at[S] = {0};
    for (int k = 0; k < STEPS; k++)
        for (int i = 0; i < S; i++) {
            int next = (int)(rnd(&r) % (PER - 1));
            next += next >= at[i];   /* another chunk */
            size_t bytes = 2 * MiB;   /* within the smallest chunk */
            void *args[] = {&c[i][at[i]], &c[i][next], &bytes};
            OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, st[i], args, NULL));
            at[i] = next;
        }
    OK(cuCtxSynchronize());
    for (int i = 0; i < S; i++)
        CHECK_EQ_U(word_at(c[i][at[i]]), STEPS);
    check_end();
    uint64_t peak = peak_on_timeline(mark, 0);
    fprintf(stderr, "peak on the timeline: %.1f MiB of %llu\n", (double)peak / MiB,
            (unsigned long long)(budget() / MiB));
    CHECK(peak <= budget());
    for (int i = 0; i < S; i++) {
        for (int j = 0; j < PER; j++)
            OK(cuMemFree(c[i][j]));
        OK(cuStreamDestroy(st[i]));
    }
}

/* 100 chunks of 18 MiB (two slices) used in turn by slow kernels on one
 * stream while a second stream chains quick kernels over two chunks of
 * its own: each launch evicts a chunk whose eviction waits for a slow
 * kernel, so hundreds of ledger points are recorded while evictions are
 * queued (the ledger's ring of 64 wraps many times). */
static void ring_wrap(void)
{
    setup();
    enum { N = 100, ROUNDS = 3 };
    CUstream a, b;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    static CUdeviceptr c[N];
    CUdeviceptr p, q;
    long mark = timeline_mark();
    for (int i = 0; i < N; i++)
        OK(cuMemAlloc(&c[i], 18 * MiB));
    OK(cuMemAlloc(&p, 20 * MiB));
    OK(cuMemAlloc(&q, 20 * MiB));
    launch_stamp(f_stamp, p, 20 * MiB, 0, b);
    size_t bytes = 20 * MiB;
    for (int k = 0; k < ROUNDS * N; k++) {
        launch_stamp(f_slow, c[k % N], 18 * MiB, (uint32_t)k, a);
        void *args[] = {k % 2 ? &q : &p, k % 2 ? &p : &q, &bytes};
        OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, b, args, NULL));
    }
    OK(cuCtxSynchronize());
    CHECK_EQ_U(word_at(ROUNDS * N % 2 ? q : p), ROUNDS * N);
    for (int i = 0; i < N; i++)
        CHECK_EQ_U(word_at(c[i]), (uint32_t)((ROUNDS - 1) * N + i));
    check_end();
    uint64_t peak = peak_on_timeline(mark, 0);
    fprintf(stderr, "peak on the timeline: %.1f MiB\n", (double)peak / MiB);
    CHECK(peak <= budget());
    for (int i = 0; i < N; i++)
        OK(cuMemFree(c[i]));
    OK(cuMemFree(p));
    OK(cuMemFree(q));
    OK(cuStreamDestroy(a));
    OK(cuStreamDestroy(b));
}

/* Eight threads, each on a stream of its own, chain `follow` kernels over
 * four chunks of their own (17 MiB and a byte: two slices) and read the
 * shared ones; every chain ends right. */
enum { THREADS = 8, TSTEPS = 60 };
static CUcontext main_ctx;
static CUdeviceptr shared_c[4];
static void *thread_chain(void *arg)
{
    int me = (int)(intptr_t)arg;
    OK(cuCtxSetCurrent(main_ctx));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr c[4];
    for (int j = 0; j < 4; j++)
        OK(cuMemAlloc(&c[j], 17 * MiB + 1));
    launch_stamp(f_stamp, c[0], 16 * MiB, 0, s);
    size_t bytes = 16 * MiB;
    for (int k = 0; k < TSTEPS; k++) {
        void *args[] = {&c[k % 4], &c[(k + 1) % 4], &bytes};
        OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
        if (k % 5 == me % 5) {
            size_t sb = 8 * MiB;
            CUdeviceptr scratch = c[(k + 2) % 4];
            void *a2[] = {&shared_c[k % 4], &scratch, &sb};
            OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, s, a2, NULL));
        }
    }
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(word_at(c[TSTEPS % 4]), TSTEPS);
    for (int j = 0; j < 4; j++)
        OK(cuMemFree(c[j]));
    OK(cuStreamDestroy(s));
    return NULL;
}

static void threads_chains(void)
{
    setup();
    OK(cuCtxGetCurrent(&main_ctx));
    for (int j = 0; j < 4; j++) {
        OK(cuMemAlloc(&shared_c[j], 20 * MiB));
        launch_stamp(f_stamp, shared_c[j], 20 * MiB, 5, NULL);
    }
    OK(cuCtxSynchronize());
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, thread_chain, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    check_end_shared();
    for (int j = 0; j < 4; j++)
        OK(cuMemFree(shared_c[j]));
}

/* A 6 GiB chunk (pieces of 24 MiB: two slices each) under the budget,
 * its parts stamped and read back through kernels given interior pointers
 * on two streams. */
static void huge_chunk(void)
{
    setup();
    CUdeviceptr h;
    size_t total = 6ull << 30;
    OK(cuMemAlloc(&h, total));
    CUstream s[2];
    OK(cuStreamCreate(&s[0], CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s[1], CU_STREAM_NON_BLOCKING));
    long mark = timeline_mark();
    enum { PARTS = 24 };
    size_t part = total / PARTS;
    for (int k = 0; k < PARTS; k++)
        launch_stamp(f_stamp, h + (size_t)k * part, 40 * MiB, (uint32_t)k + 1, s[k % 2]);
    OK(cuCtxSynchronize());
    size_t bytes = 40 * MiB;
    for (int k = 0; k < PARTS; k++) {
        CUdeviceptr from = h + (size_t)k * part, to = h + (size_t)((k + PARTS / 2) % PARTS) * part + 64 * MiB;
        void *args[] = {&from, &to, &bytes};
        OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, s[k % 2], args, NULL));
    }
    OK(cuCtxSynchronize());
    for (int k = 0; k < PARTS; k++)
        CHECK_EQ_U(word_at(h + (size_t)((k + PARTS / 2) % PARTS) * part + 64 * MiB), (uint32_t)k + 2);
    check_end();
    uint64_t peak = peak_on_timeline(mark, 0);
    fprintf(stderr, "peak on the timeline: %.1f MiB\n", (double)peak / MiB);
    CHECK(peak <= budget());
    OK(cuMemFree(h));
    OK(cuStreamDestroy(s[0]));
    OK(cuStreamDestroy(s[1]));
}

/* Four threads, ten streams each (40 streams: more than the 32 slots, so
 * slots are taken over while sliced evictions wait for their kernels),
 * each stream chaining slow and quick kernels over a chunk of its own of
 * 17 MiB and a byte; every chain ends right. */
enum { WIDE_THREADS = 4, WIDE_STREAMS = 10, WIDE_STEPS = 6 };
static void *thread_wide(void *arg)
{
    (void)arg;
    OK(cuCtxSetCurrent(main_ctx));
    CUstream s[WIDE_STREAMS];
    CUdeviceptr c[WIDE_STREAMS][2];
    size_t bytes = 17 * MiB;
    for (int i = 0; i < WIDE_STREAMS; i++) {
        OK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
        OK(cuMemAlloc(&c[i][0], 17 * MiB + 1));
        OK(cuMemAlloc(&c[i][1], 17 * MiB + 1));
        launch_stamp(f_stamp, c[i][0], bytes, 0, s[i]);
    }
    for (int k = 0; k < WIDE_STEPS; k++)
        for (int i = 0; i < WIDE_STREAMS; i++) {
            if ((k + i) % 3 == 0)
                launch_stamp(f_slow, c[i][k % 2], bytes, (uint32_t)k, s[i]);
            void *args[] = {&c[i][k % 2], &c[i][(k + 1) % 2], &bytes};
            OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, s[i], args, NULL));
        }
    for (int i = 0; i < WIDE_STREAMS; i++) {
        OK(cuStreamSynchronize(s[i]));
        /* The last follow wrote 1 + what the kernel before it left. */
        int k = WIDE_STEPS - 1;
        uint32_t want = (k + i) % 3 == 0 ? (uint32_t)k + 1 : 0;
        if ((k + i) % 3 != 0) {
            want = word_at(c[i][k % 2]) + 1;
        }
        CHECK_EQ_U(word_at(c[i][(k + 1) % 2]), want);
        OK(cuMemFree(c[i][0]));
        OK(cuMemFree(c[i][1]));
        OK(cuStreamDestroy(s[i]));
    }
    return NULL;
}

static void wide_streams(void)
{
    setup();
    OK(cuCtxGetCurrent(&main_ctx));
    pthread_t t[WIDE_THREADS];
    for (int i = 0; i < WIDE_THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, thread_wide, NULL) == 0);
    for (int i = 0; i < WIDE_THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    check_end();
}

/* fork while sliced evictions wait for a slow kernel: the child chains
 * kernels over the same chunks (the parent's queued evictions and ledger
 * are its copy) and the parent goes on; both end right. */
static void fork_queued(void)
{
    setup();
    enum { N = 8 };
    CUdeviceptr c[N];
    size_t bytes = 20 * MiB;
    for (int i = 0; i < N; i++) {
        OK(cuMemAlloc(&c[i], 20 * MiB + 4096));
        launch_stamp(f_stamp, c[i], bytes, 0, NULL);
    }
    OK(cuCtxSynchronize());
    CUstream a;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < N; i++)
        launch_stamp(f_slow, c[i], bytes, (uint32_t)i + 1, a);   /* evictions queue behind these */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (int k = 0; k < 2 * N; k++) {
            void *args[] = {&c[k % N], &c[(k + 1) % N], &bytes};
            if (cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, a, args, NULL) != CUDA_SUCCESS)
                _exit(2);
        }
        if (cuCtxSynchronize() != CUDA_SUCCESS)
            _exit(3);
        uint32_t v = 0;
        if (cuMemcpyDtoH(&v, c[0], 4) != CUDA_SUCCESS || v != 2 * N + 1)   /* 1 from the slow kernel, 16 links */
            _exit(4);
        int (*get_stats)(int, lms_device_stats *) =
            (int (*)(int, lms_device_stats *))dlsym(RTLD_DEFAULT, "lms_get_stats");
        lms_device_stats st;
        if (!get_stats || get_stats(0, &st) != 0 || st.budget_violations)
            _exit(5);
        _exit(0);
    }
    for (int k = 0; k < N; k++) {
        void *args[] = {&c[k], &c[(k + 3) % N], &bytes};
        OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, a, args, NULL));
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ_U(WEXITSTATUS(status), 0);
    OK(cuCtxSynchronize());
    check_end();
    for (int i = 0; i < N; i++)
        OK(cuMemFree(c[i]));
    OK(cuStreamDestroy(a));
}

/* A context of its own whose chunks are evicted in slices behind a slow
 * kernel is destroyed with those copies queued; chunks of the primary
 * context then go on being evicted and fetched in slices (the ledger's
 * events went with the other context). */
static void context_gone_queued(void)
{
    setup();
    CUcontext prim, mine;
    OK(cuCtxGetCurrent(&prim));
    CUdevice dev;
    OK(cuDeviceGet(&dev, 0));
    OK(cuCtxCreate(&mine, NULL, 0, dev));
    CUmodule m2;
    CUfunction g_stamp, g_slow;
    OK(cuModuleLoadData(&m2, "x"));
    OK(cuModuleGetFunction(&g_stamp, m2, "stamp"));
    OK(cuModuleGetFunction(&g_slow, m2, "slow"));
    enum { N = 10 };
    CUdeviceptr c[N];
    for (int i = 0; i < N; i++) {
        OK(cuMemAlloc(&c[i], 18 * MiB));
        launch_stamp(g_slow, c[i], 18 * MiB, (uint32_t)i, NULL);   /* later ones evict earlier ones */
    }
    OK(cuModuleUnload(m2));
    OK(cuCtxDestroy(mine));
    OK(cuCtxSetCurrent(prim));
    CUdeviceptr p[N];
    size_t bytes = 18 * MiB;
    for (int i = 0; i < N; i++) {
        OK(cuMemAlloc(&p[i], 18 * MiB + 1));
        launch_stamp(f_stamp, p[i], bytes, (uint32_t)i, NULL);
    }
    for (int k = 0; k < 3 * N; k++) {
        void *args[] = {&p[k % N], &p[(k + 1) % N], &bytes};
        OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    }
    OK(cuCtxSynchronize());
    CHECK_EQ_U(word_at(p[0]), 3 * N);   /* each round around the ring adds N */
    check_end();
    for (int i = 0; i < N; i++)
        OK(cuMemFree(p[i]));
}

/* A graph captured (launches on chunks in slices) while sliced evictions
 * wait for slow kernels on another stream, launched three times between
 * launches on that stream; every result is right. */
static void graph_queued(void)
{
    setup();
    enum { N = 6 };
    CUstream a, g;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&g, CU_STREAM_NON_BLOCKING));
    CUdeviceptr c[N], q[3];
    size_t bytes = 20 * MiB;
    for (int i = 0; i < N; i++) {
        OK(cuMemAlloc(&c[i], 20 * MiB + 1));
        launch_stamp(f_stamp, c[i], bytes, 0, NULL);
    }
    for (int i = 0; i < 3; i++) {
        OK(cuMemAlloc(&q[i], 34 * MiB));
        launch_stamp(f_stamp, q[i], bytes, 0, NULL);
    }
    OK(cuCtxSynchronize());
    for (int i = 0; i < N; i++)
        launch_stamp(f_slow, c[i], bytes, 0, a);
    OK(cuStreamBeginCapture(g, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int k = 0; k < 3; k++) {
        void *args[] = {&q[k], &q[(k + 1) % 3], &bytes};
        OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, g, args, NULL));
    }
    CUgraph graph;
    OK(cuStreamEndCapture(g, &graph));
    CUgraphExec exec;
    OK(cuGraphInstantiate(&exec, graph, 0));
    for (int r = 0; r < 3; r++) {
        OK(cuGraphLaunch(exec, g));
        for (int i = 0; i < N; i++) {
            void *args[] = {&c[i], &c[(i + 1) % N], &bytes};
            OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, a, args, NULL));
        }
    }
    OK(cuCtxSynchronize());
    CHECK_EQ_U(word_at(q[0]), 9);   /* nine links around the three */
    CHECK_EQ_U(word_at(c[0]), 3 * N);
    check_end();
    OK(cuGraphExecDestroy(exec));
    OK(cuGraphDestroy(graph));
    for (int i = 0; i < N; i++)
        OK(cuMemFree(c[i]));
    for (int i = 0; i < 3; i++)
        OK(cuMemFree(q[i]));
    OK(cuStreamDestroy(a));
    OK(cuStreamDestroy(g));
}

static const test_case cases[] = {
    {"refetch_own_eviction", refetch_own_eviction},
    {"device_alloc_waits", device_alloc_waits},
    {"odd_sizes", odd_sizes},
    {"ring_wrap", ring_wrap},
    {"threads_chains", threads_chains},
    {"huge_chunk", huge_chunk},
    {"wide_streams", wide_streams},
    {"fork_queued", fork_queued},
    {"context_gone_queued", context_gone_queued},
    {"graph_queued", graph_queued},
};

TEST_MAIN(cases)
