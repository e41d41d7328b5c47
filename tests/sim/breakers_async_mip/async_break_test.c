/*
 * async_break_test.c — stream-ordered device allocations while evictions
 * still leave the device, from outside: a capture on the allocating
 * stream, a capture elsewhere, the legacy and per-thread streams, a pool
 * of one device through a stream of another, a stream destroyed right
 * after, threads, many evictions (the ledger's ring wraps), fork and
 * LMS_ON_OOM=fail. liblmshim.so is preloaded over two simulated GPUs
 * (meson.build: a 128 MiB budget, chunks of 32 MiB and more managed,
 * kernels of streams side by side); modeled times from the timeline file.
 * The state each case starts from is async_leaving's: X (40 MiB), W1 and
 * W2 fill the budget, X the least recently used and still in use by a
 * 20 ms kernel, so a 24 MiB device chunk D evicts X.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
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
#include "../../common/host_clock.h"
#include "../../common/timeline.h"
#include "simgpu.h"
#include "../../common/stamp_kernels.h"
#include "../../common/full_budget.h"


static CUfunction f_stamp, f_slow;
static CUmodule mod;

/* The primary context of device 0 and the kernels stamp and slow (once). */
static void setup(void)
{
    primary_context(0);
    if (mod)
        return;
    stamp_kernels_load(&mod, &f_stamp, &f_slow);
}

/* The state of the cases (see the top; tests/common/full_budget.h). */
static full make_full(void)
{
    setup();
    return full_make(f_stamp);
}

/* Fills the budget again (full_refill). */
static void refill(full *t) { full_refill(t, f_stamp, f_slow); }

/* The last stamp kernel after t->mark (on D) started only once D fit
 * beside what was left of X, W1 and W2 in the 128 MiB budget; the host
 * waited `host_us` (the slow kernel lasts 20 ms). */
static void check_waited(const full *t, float host_us)
{
    double use = timeline_last_kernel_start(t->mark, "stamp");
    uint64_t out = timeline_out_by(t->mark, use);
    fprintf(stderr, "the kernel started at %.1f us, %llu MiB off the device by then; the host waited %.1f us\n", use,
            (unsigned long long)(out / MiB), host_us);
    CHECK(use >= 0);
    CHECK(128 * MiB - out + 24 * MiB <= 128 * MiB);
    CHECK(host_us < 1000.0f);
}

/* D on stream c: cudaMallocAsync, a stamp on it, and cudaFreeAsync. */
static void use_d_runtime(CUstream c)
{
    void *p = NULL;
    CHECK(cudaMallocAsync(&p, 24 * MiB, (cudaStream_t)c) == cudaSuccess);
    launch_stamp(f_stamp, (CUdeviceptr)(uintptr_t)p, 24 * MiB, 3, c);
    CHECK(cudaFreeAsync(p, (cudaStream_t)c) == cudaSuccess);
}

/* The node types of g: how many of type `type`. */
static int nodes_of(CUgraph g, CUgraphNodeType type)
{
    size_t n = 0;
    OK(cuGraphGetNodes(g, NULL, &n));
    CUgraphNode *v = calloc(n ? n : 1, sizeof *v);
    CHECK(v != NULL);
    OK(cuGraphGetNodes(g, v, &n));
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType t;
        OK(cuGraphNodeGetType(v[i], &t));
        k += t == type;
    }
    free(v);
    return k;
}

/* Ends the capture on s, checks its graph holds one allocation, one
 * kernel, one free and no event wait, then runs it on s. */
static void end_and_run(CUstream s)
{
    CUgraph g = NULL;
    OK(cuStreamEndCapture(s, &g));
    CHECK(g != NULL);
    CHECK_EQ_U(nodes_of(g, CU_GRAPH_NODE_TYPE_MEM_ALLOC), 1);
    CHECK_EQ_U(nodes_of(g, CU_GRAPH_NODE_TYPE_KERNEL), 1);
    CHECK_EQ_U(nodes_of(g, CU_GRAPH_NODE_TYPE_MEM_FREE), 1);
    CHECK_EQ_U(nodes_of(g, CU_GRAPH_NODE_TYPE_WAIT_EVENT), 0);
    CUgraphExec ge;
    OK(cuGraphInstantiate(&ge, g, 0));
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamSynchronize(s));
    OK(cuGraphExecDestroy(ge));
    OK(cuGraphDestroy(g));
}

/* The allocating stream is being captured (global, thread-local and
 * relaxed modes, then the per-thread stream, begun by the driver and by
 * the runtime): the allocation is a node of the graph, no wait
 * goes into it and the capture ends whole; the host does not wait. */
static void capture_own(void)
{
    full t = make_full();
    CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                   CU_STREAM_CAPTURE_MODE_RELAXED};
    for (int i = 0; i < 5; i++) {
        refill(&t);
        CUstream s = i < 3 ? t.c : CU_STREAM_PER_THREAD;
        CUevent before = host_clock_now();
        if (i < 4)
            OK(cuStreamBeginCapture(s, modes[i % 3]));
        else   /* the runtime's begin, on the per-thread stream */
            CHECK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeGlobal) == cudaSuccess);
        use_d_runtime(s);
        float host_us = host_clock_since(before);
        end_and_run(s);
        CHECK(host_us < 1000.0f);
    }
    check_no_hazards(0, false);
    full_drop(&t);
}

/* Another stream is being captured (global mode, this thread): D on the
 * uncaptured stream c still waits for X to leave, and the capture is not
 * broken by it. */
static void capture_other(void)
{
    full t = make_full();
    refill(&t);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUevent before = host_clock_now();
    CUdeviceptr d = 0;
    OK(cuMemAllocAsync(&d, 24 * MiB, t.c));
    float host_us = host_clock_since(before);
    void *p = NULL;
    CHECK(cudaMallocAsync(&p, 1 * MiB, (cudaStream_t)s) == cudaSuccess);
    launch_stamp(f_stamp, (CUdeviceptr)(uintptr_t)p, 1 * MiB, 3, s);
    CHECK(cudaFreeAsync(p, (cudaStream_t)s) == cudaSuccess);
    end_and_run(s);
    launch_stamp(f_stamp, d, 24 * MiB, 3, t.c);
    OK(cuStreamSynchronize(t.c));
    check_waited(&t, host_us);
    OK(cuMemFreeAsync(d, t.c));
    check_no_hazards(0, false);
    OK(cuStreamDestroy(s));
    full_drop(&t);
}

/* D on the legacy stream (NULL, then CU_STREAM_LEGACY) and on the
 * per-thread stream given by handle: each use waits for X. */
static void default_streams(void)
{
    full t = make_full();
    CUstream ss[] = {NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD};
    for (int i = 0; i < 3; i++) {
        refill(&t);
        CUevent before = host_clock_now();
        CUdeviceptr d = 0;
        OK(cuMemAllocAsync(&d, 24 * MiB, ss[i]));
        float host_us = host_clock_since(before);
        launch_stamp(f_stamp, d, 24 * MiB, 3, ss[i]);
        OK(cuCtxSynchronize());
        check_waited(&t, host_us);
        OK(cuMemFreeAsync(d, ss[i]));
        OK(cuCtxSynchronize());
    }
    check_no_hazards(0, false);
    full_drop(&t);
}

/* D from device 0's pool through a stream of device 1 (device 1's context
 * current), and from device 0's current pool through a stream of device 0
 * while device 1's context is current: the stream of the allocation
 * waits, and so does every stream ordered after it. */
static void other_device(void)
{
    full t = make_full();
    CUcontext c1 = primary_context(1);
    CUstream s1;
    OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 2; i++) {
        OK(cuCtxSetCurrent(c1));
        refill(&t);
        CUevent before = host_clock_now();
        CUdeviceptr d = 0;
        CUstream on = i == 0 ? s1 : t.c;
        if (i == 0) {
            CUmemoryPool pool;
            OK(cuDeviceGetDefaultMemPool(&pool, 0));
            OK(cuMemAllocFromPoolAsync(&d, 24 * MiB, pool, s1));
        } else {
            OK(cuMemAllocAsync(&d, 24 * MiB, t.c));
        }
        float host_us = host_clock_since(before);
        CUevent e;
        OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
        OK(cuEventRecord(e, on));
        setup();
        OK(cuStreamWaitEvent(t.b, e, 0));
        launch_stamp(f_stamp, d, 24 * MiB, 3, t.b);
        OK(cuCtxSynchronize());
        check_waited(&t, host_us);
        OK(cuEventDestroy(e));
        OK(cuMemFreeAsync(d, t.b));
        OK(cuCtxSynchronize());
    }
    check_no_hazards(0, false);
    OK(cuStreamDestroy(s1));
    full_drop(&t);
}

/* The allocating stream is destroyed right after the allocation: the wait
 * it took still orders what follows it. */
static void stream_destroyed(void)
{
    full t = make_full();
    refill(&t);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent before = host_clock_now();
    CUdeviceptr d = 0;
    OK(cuMemAllocAsync(&d, 24 * MiB, s));
    CUevent e;
    OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    OK(cuEventRecord(e, s));
    OK(cuStreamDestroy(s));
    float host_us = host_clock_since(before);
    OK(cuStreamWaitEvent(t.c, e, 0));
    launch_stamp(f_stamp, d, 24 * MiB, 3, t.c);
    OK(cuCtxSynchronize());
    check_waited(&t, host_us);
    OK(cuEventDestroy(e));
    OK(cuMemFreeAsync(d, t.c));
    check_no_hazards(0, false);
    full_drop(&t);
}

/* 150 rounds of the state and D (each a few ledger points: the ring of 64
 * wraps): every round's D waits for its X. */
static void ring_wraps(void)
{
    full t = make_full();
    for (int i = 0; i < 150; i++) {
        refill(&t);
        CUevent before = host_clock_now();
        CUdeviceptr d = 0;
        OK(cuMemAllocAsync(&d, 24 * MiB, t.c));
        float host_us = host_clock_since(before);
        launch_stamp(f_stamp, d, 24 * MiB, 3, t.c);
        OK(cuStreamSynchronize(t.c));
        check_waited(&t, host_us);
        OK(cuMemFreeAsync(d, t.c));
        OK(cuStreamSynchronize(t.c));
    }
    check_no_hazards(0, false);
    full_drop(&t);
}

static full shared;
static atomic_int stop;

/* Stream-ordered 8 MiB chunks on a stream of its own, each stamped and
 * freed, until `stop`; counts its rounds. */
static void *async_loop(void *arg)
{
    atomic_long *rounds = arg;
    setup();
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    while (!stop) {
        CUdeviceptr d = 0;
        CHECK(cuMemAllocAsync(&d, 8 * MiB, s) == CUDA_SUCCESS);
        launch_stamp(f_stamp, d, 8 * MiB, 5, s);
        CHECK(cuMemFreeAsync(d, s) == CUDA_SUCCESS);
        atomic_fetch_add(rounds, 1);
    }
    CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
    CHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
    return NULL;
}

/* Four threads allocate stream-ordered at once while the main thread
 * keeps evicting (X, W1 and W2 in turn by slow kernels) until each thread
 * made 20 chunks: no kernel reads a range mid-copy, nothing is evicted in
 * use, no budget violation, and every charge comes back. */
static void threads(void)
{
    shared = make_full();
    enum { N = 4 };
    pthread_t th[N];
    atomic_long rounds[N];
    for (int i = 0; i < N; i++) {
        atomic_init(&rounds[i], 0);
        CHECK(pthread_create(&th[i], NULL, async_loop, &rounds[i]) == 0);
    }
    for (int i = 0; i < 100000; i++) {
        CUdeviceptr c = i % 3 == 0 ? shared.x : i % 3 == 1 ? shared.w1 : shared.w2;
        launch_stamp(f_slow, c, 40 * MiB, 9, shared.a);
        check_budget(0);
        int done = 0;
        for (int k = 0; k < N; k++)
            done += atomic_load(&rounds[k]) >= 20;
        if (done == N && i >= 40)
            break;
        if (i % 16 == 15)
            OK(cuStreamSynchronize(shared.a));
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    OK(cuCtxSynchronize());
    fprintf(stderr, "rounds %ld %ld %ld %ld\n", atomic_load(&rounds[0]), atomic_load(&rounds[1]),
            atomic_load(&rounds[2]), atomic_load(&rounds[3]));
    for (int i = 0; i < N; i++)
        CHECK(atomic_load(&rounds[i]) >= 20);
    check_no_hazards(0, false);
    full_drop(&shared);
    CHECK_EQ_U(stats(0).used, 0);
}

/* fork right after a stream-ordered allocation that evicted (the
 * residency lock may be held by another thread): the child reads lmshim's
 * statistics and exits; the parent goes on. */
static void fork_after(void)
{
    full t = make_full();
    for (int i = 0; i < 10; i++) {
        refill(&t);
        CUdeviceptr d = 0;
        OK(cuMemAllocAsync(&d, 24 * MiB, t.c));
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            alarm(10);
            lms_device_stats s;
            _exit(get_stats(0, &s) == 0 ? 0 : 3);
        }
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        launch_stamp(f_stamp, d, 24 * MiB, 3, t.c);
        OK(cuStreamSynchronize(t.c));
        check_waited(&t, 0);
        OK(cuMemFreeAsync(d, t.c));
    }
    check_no_hazards(0, false);
    full_drop(&t);
}

/* LMS_ON_OOM=fail: D still evicts X and waits for it; four more device
 * chunks of 24 MiB evict W1 and W2 (120 MiB in all), a sixth cannot fit
 * even with every managed chunk gone: refused with out of memory,
 * nothing charged. */
static void oom_fail(void)
{
    full t = make_full();
    refill(&t);
    CUevent before = host_clock_now();
    CUdeviceptr d[6] = {0};
    OK(cuMemAllocAsync(&d[0], 24 * MiB, t.c));
    float host_us = host_clock_since(before);
    launch_stamp(f_stamp, d[0], 24 * MiB, 3, t.c);
    OK(cuStreamSynchronize(t.c));
    check_waited(&t, host_us);
    for (int i = 1; i < 5; i++)
        OK(cuMemAllocAsync(&d[i], 24 * MiB, t.c));
    uint64_t used = stats(0).used;
    CHECK_EQ_U(used, 120 * MiB);
    CHECK_IS(cuMemAllocAsync(&d[5], 24 * MiB, t.c), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ_U(stats(0).used, used);
    CHECK_EQ_U(stats(0).oom_failures, 1);
    for (int i = 0; i < 5; i++)
        OK(cuMemFreeAsync(d[i], t.c));
    check_no_hazards(0, false);
    full_drop(&t);
}

/* The primary context reset (the residency engine's streams and ledger
 * go with it) and the state made again: D still waits for X. */
static void after_reset(void)
{
    full t = make_full();
    refill(&t);
    OK(cuCtxSynchronize());
    OK(cuDevicePrimaryCtxReset(0));
    CHECK_EQ_U(stats(0).used, 0);
    mod = NULL;   /* the module went with the context */
    t = make_full();
    for (int i = 0; i < 3; i++) {
        refill(&t);
        CUevent before = host_clock_now();
        CUdeviceptr d = 0;
        OK(cuMemAllocAsync(&d, 24 * MiB, t.c));
        float host_us = host_clock_since(before);
        launch_stamp(f_stamp, d, 24 * MiB, 3, t.c);
        OK(cuStreamSynchronize(t.c));
        check_waited(&t, host_us);
        OK(cuMemFreeAsync(d, t.c));
    }
    check_no_hazards(0, false);
    full_drop(&t);
}

/* An array of 24 MiB (4096 x 1536 one-channel floats: a mipmapped one of
 * 1 level, then cuArray3DCreate's, then cuArrayCreate's) while managed
 * chunks fill the budget, X still in use by the slow kernel: the chunks
 * make way as for a device allocation (X leaves before the driver makes
 * the array, the host waiting as for cuMemAlloc: the device is never past
 * the budget), with LMS_ON_OOM=fail
 * it is not refused, and every charge comes back. */
static void arrays_make_room(void)
{
    full t = make_full();
    for (int kind = 0; kind < 3; kind++) {
        refill(&t);
        CUmipmappedArray m = NULL;
        CUarray a = NULL;
        CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 4096, .Height = 1536, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
        CUDA_ARRAY_DESCRIPTOR d2 = {.Width = 4096, .Height = 1536, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
        if (kind == 0)
            OK(cuMipmappedArrayCreate(&m, &d, 1));
        else if (kind == 1)
            OK(cuArray3DCreate(&a, &d));
        else
            OK(cuArrayCreate(&a, &d2));
        lms_device_stats s = stats(0);
        simgpu_counters c;
        OK(simgpu_get_counters(0, &c));
        fprintf(stderr, "after array %d: %llu MiB charged of %llu, %llu MiB on the device\n", kind,
                (unsigned long long)(s.used / MiB), (unsigned long long)(s.budget / MiB),
                (unsigned long long)(c.used_device_bytes / MiB));
        CHECK(s.used <= s.budget);
        check_budget(0);
        /* The host went on only once enough of X had left: a kernel issued
         * now on a stream of its own (on W1) starts after that. */
        CUstream s2;
        OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
        launch_stamp(f_stamp, t.w1, 40 * MiB, 4, s2);
        OK(cuCtxSynchronize());
        check_waited(&t, 0);
        OK(cuStreamDestroy(s2));
        if (m)
            OK(cuMipmappedArrayDestroy(m));
        else
            OK(cuArrayDestroy(a));
    }
    check_no_hazards(0, false);
    full_drop(&t);
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(sim_used(), 0);
}

/* A mipmapped array larger than the whole budget (4 GiB of level 0 on
 * the 8 GiB device) and one larger than the device (64 GiB, which the
 * driver refuses) while managed chunks fill the budget: no room can be
 * made for them, so nothing is evicted in vain. */
static void huge_array_evicts_nothing(void)
{
    full t = make_full();
    refill(&t);
    OK(cuCtxSynchronize());
    uint64_t before = sim_used();
    CHECK_EQ_U(stats(0).used, 128 * MiB);
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 1 << 15, .Height = 1 << 15, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUresult r = cuMipmappedArrayCreate(&m, &d, 1);
    CHECK(r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY);   /* OUT_OF_MEMORY with LMS_ON_OOM=fail */
    if (r == CUDA_SUCCESS)
        OK(cuMipmappedArrayDestroy(m));
    CUDA_ARRAY3D_DESCRIPTOR huge = {.Width = 1 << 17, .Height = 1 << 17, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CHECK_IS(cuMipmappedArrayCreate(&m, &huge, 1), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuCtxSynchronize());
    fprintf(stderr, "device bytes %llu MiB before, %llu MiB after\n", (unsigned long long)(before / MiB),
            (unsigned long long)(sim_used() / MiB));
    CHECK_EQ_U(sim_used(), before);
    CHECK_EQ_U(stats(0).used, 128 * MiB);
    check_no_hazards(0, false);
    full_drop(&t);
}

/* A cuMemCreate that no eviction can make room for (24 MiB of device
 * chunks and 112 MiB asked of a 128 MiB budget full of resident managed
 * chunks): nothing is evicted for it in vain. With LMS_ON_OOM=fail it is
 * refused; otherwise it is charged past the budget (the driver, not
 * lmshim, then moves managed pages if the device runs short). */
static void create_evicts_nothing(void)
{
    full t = make_full();
    refill(&t);
    OK(cuCtxSynchronize());
    CUdeviceptr small;
    OK(cuMemAlloc(&small, 24 * MiB));   /* under LMS_THRESHOLD: on the device, W1 or W2 leaves for it */
    OK(cuCtxSynchronize());
    uint64_t before = sim_used(), used = stats(0).used;
    CHECK_EQ_U(used, 112 * MiB);   /* 24 MiB on the device, X and W2 resident */
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h = 0;
    CUresult r = cuMemCreate(&h, 112 * MiB, &prop, 0);
    OK(cuCtxSynchronize());
    fprintf(stderr, "device bytes %llu MiB before, %llu MiB after\n", (unsigned long long)(before / MiB),
            (unsigned long long)(sim_used() / MiB));
    if (getenv("LMS_ON_OOM") && strcmp(getenv("LMS_ON_OOM"), "fail") == 0) {
        CHECK_IS(r, CUDA_ERROR_OUT_OF_MEMORY);
        CHECK_EQ_U(sim_used(), before);
        CHECK_EQ_U(stats(0).used, used);
    } else {
        OK(r);
        CHECK_EQ_U(sim_used(), before + 112 * MiB);
        CHECK_EQ_U(stats(0).used, used + 112 * MiB);
        OK(cuMemRelease(h));
    }
    check_no_hazards(0, false);
    OK(cuMemFree(small));
    full_drop(&t);
}

/* X in use by a graph launch still running (the slow kernel: X stays
 * pinned until a poll finds the graph done), W1 and W2 resident and
 * unpinned, and a
 * 112 MiB cuMemCreate that fits only if X left too: nothing is evicted for
 * it in vain (W1 and W2 stay). With LMS_ON_OOM=fail it is refused,
 * otherwise charged past the budget. */
static void pinned_evicts_nothing(void)
{
    full t = make_full();
    OK(cuStreamBeginCapture(t.a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_stamp(f_slow, t.x, 40 * MiB, 7, t.a);
    CUgraph g = NULL;
    OK(cuStreamEndCapture(t.a, &g));
    CUgraphExec ge;
    OK(cuGraphInstantiate(&ge, g, 0));
    launch_stamp(f_stamp, t.w1, 40 * MiB, 2, t.b);
    launch_stamp(f_stamp, t.w2, 48 * MiB, 2, t.b);
    OK(cuStreamSynchronize(t.b));
    /* Last: the simulator's events are complete at once, so the next
     * launch's poll would unpin X (cuMemCreate polls none). */
    OK(cuGraphLaunch(ge, t.a));   /* X pinned while it runs (20 ms) */
    uint64_t before = sim_used(), used = stats(0).used;
    CHECK_EQ_U(used, 128 * MiB);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h = 0;
    CUresult r = cuMemCreate(&h, 112 * MiB, &prop, 0);
    fprintf(stderr, "device bytes %llu MiB before, %llu MiB after; %llu MiB charged\n",
            (unsigned long long)(before / MiB), (unsigned long long)(sim_used() / MiB),
            (unsigned long long)(stats(0).used / MiB));
    if (getenv("LMS_ON_OOM") && strcmp(getenv("LMS_ON_OOM"), "fail") == 0) {
        CHECK_IS(r, CUDA_ERROR_OUT_OF_MEMORY);
        CHECK_EQ_U(sim_used(), before);
        CHECK_EQ_U(stats(0).used, used);
    } else {
        OK(r);
        CHECK_EQ_U(sim_used(), before + 112 * MiB);
        CHECK_EQ_U(stats(0).used, used + 112 * MiB);
        OK(cuMemRelease(h));
    }
    OK(cuStreamSynchronize(t.a));
    OK(cuGraphExecDestroy(ge));
    OK(cuGraphDestroy(g));
    check_no_hazards(0, false);
    full_drop(&t);
    CHECK_EQ_U(stats(0).used, 0);
}

/* Descriptors the driver refuses (a cubemap not square or not of 6 faces,
 * a layered array without layers, a 1D array with a depth, an unknown
 * flag), each of 12 MiB or less, for cuArray3DCreate and
 * cuMipmappedArrayCreate while managed chunks fill the budget: CUDA's
 * CUDA_ERROR_INVALID_VALUE, and nothing is evicted for them. */
static void bad_desc_evicts_nothing(void)
{
    full t = make_full();
    refill(&t);
    OK(cuCtxSynchronize());
    uint64_t before = sim_used();
    CHECK_EQ_U(stats(0).used, 128 * MiB);
    const CUDA_ARRAY3D_DESCRIPTOR bad[] = {
        {.Width = 1024, .Height = 512, .Depth = 6, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1,
         .Flags = CUDA_ARRAY3D_CUBEMAP},
        {.Width = 512, .Height = 512, .Depth = 5, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1,
         .Flags = CUDA_ARRAY3D_CUBEMAP},
        {.Width = 512, .Height = 512, .Depth = 12, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1,
         .Flags = CUDA_ARRAY3D_CUBEMAP},
        {.Width = 4096, .Height = 512, .Depth = 0, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1,
         .Flags = CUDA_ARRAY3D_LAYERED},
        {.Width = 1 << 20, .Height = 0, .Depth = 2, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1},
        {.Width = 4096, .Height = 512, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1, .Flags = 0x10000},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CUarray a;
        CUmipmappedArray m;
        CHECK_IS(cuArray3DCreate(&a, &bad[i]), CUDA_ERROR_INVALID_VALUE);
        CHECK_IS(cuMipmappedArrayCreate(&m, &bad[i], 2), CUDA_ERROR_INVALID_VALUE);
    }
    OK(cuCtxSynchronize());
    fprintf(stderr, "device bytes %llu MiB before, %llu MiB after\n", (unsigned long long)(before / MiB),
            (unsigned long long)(sim_used() / MiB));
    CHECK_EQ_U(sim_used(), before);
    CHECK_EQ_U(stats(0).used, 128 * MiB);
    CHECK_EQ_U(stats(0).oom_failures, 0);
    check_no_hazards(0, false);
    full_drop(&t);
}

/* LMS_ON_OOM=fail: D (stream-ordered, 24 MiB) evicts X while the slow
 * kernel still uses it, then a 120 MiB array no eviction can make room
 * for: it is refused at once, the host not waiting for X to leave. */
static void array_refused_no_wait(void)
{
    full t = make_full();
    refill(&t);
    CUdeviceptr d = 0;
    OK(cuMemAllocAsync(&d, 24 * MiB, t.c));   /* X leaves behind the slow kernel */
    uint64_t used = stats(0).used;
    CHECK_EQ_U(used, 112 * MiB);
    CUDA_ARRAY3D_DESCRIPTOR desc = {.Width = 8192, .Height = 3840, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray a;
    CUevent since = host_clock_now();
    CHECK_IS(cuArray3DCreate(&a, &desc), CUDA_ERROR_OUT_OF_MEMORY);
    float host_us = host_clock_since(since);
    fprintf(stderr, "refused after %.1f us of the host\n", host_us);
    CHECK(host_us < 1000.0f);   /* the slow kernel ends 20 ms after it began */
    CHECK_EQ_U(stats(0).used, used);
    CHECK_EQ_U(stats(0).oom_failures, 1);
    OK(cuMemFreeAsync(d, t.c));
    check_no_hazards(0, false);
    full_drop(&t);
}

/* A blocking stream captures (global mode) while the legacy stream gets a
 * stream-ordered allocation that would evict: CUDA's answer
 * (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, the capture invalidated), nothing
 * charged, no wait left behind on the host. */
static void legacy_during_capture(void)
{
    full t = make_full();
    refill(&t);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));   /* blocking: tied to the legacy stream */
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    uint64_t used = stats(0).used;
    CUevent before = host_clock_now();
    CUdeviceptr d = 0;
    CHECK_IS(cuMemAllocAsync(&d, 24 * MiB, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    float host_us = host_clock_since(before);
    CHECK(host_us < 1000.0f);
    CHECK(stats(0).used <= used);
    CUgraph g = NULL;
    CHECK_IS(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(cuStreamDestroy(s));
    OK(cuCtxSynchronize());
    check_no_hazards(0, false);
    full_drop(&t);
    CHECK_EQ_U(stats(0).used, 0);
}

static pthread_barrier_t arr_bar;

#define ROOM_THREADS 4   /* threads making 24 MiB each at once */

/* One thread's 24 MiB mipmapped array, made at the barrier and destroyed
 * after the second; returns the CUresult of its creation. */
static void *array_24m(void *arg)
{
    (void)arg;
    setup();
    CUmipmappedArray m = NULL;
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 4096, .Height = 1536, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    pthread_barrier_wait(&arr_bar);
    CUresult r = cuMipmappedArrayCreate(&m, &d, 1);
    pthread_barrier_wait(&arr_bar);
    if (r == CUDA_SUCCESS)
        CHECK(cuMipmappedArrayDestroy(m) == CUDA_SUCCESS);
    return (void *)(intptr_t)r;
}

/* One round of ROOM_THREADS threads running `fn` (the i-th given i), which
 * acts between the two waits at arr_bar: between them the budget holds;
 * every thread's CUresult is CUDA_SUCCESS. */
static void room_round(void *(*fn)(void *))
{
    pthread_t th[ROOM_THREADS];
    pthread_barrier_init(&arr_bar, NULL, ROOM_THREADS + 1);
    for (intptr_t i = 0; i < ROOM_THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, fn, (void *)i) == 0);
    pthread_barrier_wait(&arr_bar);
    pthread_barrier_wait(&arr_bar);
    lms_device_stats s = stats(0);
    CHECK(s.used <= s.budget);
    int ok = 0;
    for (int i = 0; i < ROOM_THREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        ok += (intptr_t)r == CUDA_SUCCESS;
    }
    pthread_barrier_destroy(&arr_bar);
    CHECK_EQ_U(ok, ROOM_THREADS);
}

/* Four threads make 24 MiB arrays at once while managed chunks fill the
 * budget (LMS_ON_OOM=fail): the managed chunks make room for all four
 * (96 MiB of 128), none is refused, the budget holds. */
static void arrays_threads_room(void)
{
    full t = make_full();
    for (int round = 0; round < 20; round++) {
        refill(&t);
        room_round(array_24m);
    }
    OK(cuCtxSynchronize());
    check_no_hazards(0, false);
    full_drop(&t);
    CHECK_EQ_U(stats(0).used, 0);
}

static CUstream async_streams[ROOM_THREADS];

/* One thread's 24 MiB stream-ordered chunk on its own stream, made at the
 * barrier and freed after the second; returns the CUresult. */
static void *async_24m(void *arg)
{
    intptr_t i = (intptr_t)arg;
    setup();
    CUdeviceptr d = 0;
    pthread_barrier_wait(&arr_bar);
    CUresult r = cuMemAllocAsync(&d, 24 * MiB, async_streams[i]);
    pthread_barrier_wait(&arr_bar);
    if (r == CUDA_SUCCESS)
        CHECK(cuMemFreeAsync(d, async_streams[i]) == CUDA_SUCCESS);
    return (void *)(intptr_t)r;
}

/* Four threads allocate 24 MiB stream-ordered at once while managed chunks
 * fill the budget (LMS_ON_OOM=fail): the managed chunks make room for all
 * four (96 MiB of 128), none is refused, the budget holds. */
static void async_threads_room(void)
{
    full t = make_full();
    for (int i = 0; i < ROOM_THREADS; i++)
        OK(cuStreamCreate(&async_streams[i], CU_STREAM_NON_BLOCKING));
    for (int round = 0; round < 20; round++) {
        refill(&t);
        room_round(async_24m);
        OK(cuCtxSynchronize());
    }
    for (int i = 0; i < ROOM_THREADS; i++)
        OK(cuStreamDestroy(async_streams[i]));
    check_no_hazards(0, false);
    full_drop(&t);
    CHECK_EQ_U(stats(0).used, 0);
}

static const test_case cases[] = {
    {"capture_own", capture_own},
    {"capture_other", capture_other},
    {"default_streams", default_streams},
    {"other_device", other_device},
    {"stream_destroyed", stream_destroyed},
    {"ring_wraps", ring_wraps},
    {"threads", threads},
    {"fork_after", fork_after},
    {"oom_fail", oom_fail},
    {"after_reset", after_reset},
    {"arrays_make_room", arrays_make_room},
    {"arrays_make_room_fail", arrays_make_room},
    {"huge_array_evicts_nothing", huge_array_evicts_nothing},
    {"huge_array_evicts_nothing_fail", huge_array_evicts_nothing},
    {"create_evicts_nothing", create_evicts_nothing},
    {"create_evicts_nothing_fail", create_evicts_nothing},
    {"pinned_evicts_nothing", pinned_evicts_nothing},
    {"pinned_evicts_nothing_fail", pinned_evicts_nothing},
    {"bad_desc_evicts_nothing", bad_desc_evicts_nothing},
    {"bad_desc_evicts_nothing_fail", bad_desc_evicts_nothing},
    {"array_refused_no_wait", array_refused_no_wait},
    {"legacy_during_capture", legacy_during_capture},
    {"arrays_threads_room", arrays_threads_room},
    {"async_threads_room", async_threads_room},
};

TEST_MAIN(cases)
