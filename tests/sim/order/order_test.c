/*
 * order_test.c — ordering across streams under lmshim (LD_PRELOAD; settings
 * in meson.build): a kernel never touches a chunk whose fetch has not
 * ended, and an eviction never starts before every kernel that used the
 * chunk ended, whichever streams they ran on. The simulated GPU counts both
 * mistakes (simgpu_counters.inflight_waits and busy_evictions).
 *
 * usage: order_test CASE ordered|unordered — `unordered` runs with
 * LMS_STREAM_ORDER=0 and checks that the counters do see the missing waits.
 */
#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "simgpu.h"

#define CHUNK (64 * MiB)

static bool ordered = true;

/* work(ptr, bytes, compute_ns): touches the range, counts the launch. */
static void work(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    double ns = *(double *)p[2];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint64_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, ns);
}

static CUfunction f_work;

static void setup(void)
{
    primary_context(0);
    f_work = sim_function(&(simgpu_kernel){"work", work, 3, {8, 8, 8}});
}

/* Launches work on chunk p, modeling `ns` of compute, on stream s. */
static void run(CUstream s, CUdeviceptr p, double ns)
{
    size_t bytes = CHUNK;
    void *args[] = {&p, &bytes, &ns};
    OK(cuLaunchKernel(f_work, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
}

/* A managed chunk (the budget makes every chunk managed) set to zero. */
static CUdeviceptr chunk(void)
{
    CUdeviceptr p;
    OK(cuMemAlloc(&p, CHUNK));
    OK(cuMemsetD8(p, 0, CHUNK));
    return p;
}

/* Checks a counter: zero when ordered, above zero when not. */
static void expect(uint64_t count, const char *what)
{
    printf("%s = %llu\n", what, (unsigned long long)count);
    if (ordered)
        CHECK_EQ_U(count, 0);
    else
        CHECK(count > 0);
}

/* Fetched on demand on stream A, then used by a kernel on stream B: B
 * must wait for the copy on A. */
static void use_waits_fetch(void)
{
    setup();
    CUstream a, b;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x = chunk();
    OK(simgpu_reset_counters());
    run(a, x, 1e4);
    run(b, x, 1e4);
    OK(cuCtxSynchronize());
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK(c.prefetch_bytes >= CHUNK);
    expect(c.inflight_waits, "inflight_waits");
    CHECK_EQ_U(*(uint64_t *)(uintptr_t)x, 2);
    OK(cuMemFree(x));
    OK(cuStreamDestroy(a));
    OK(cuStreamDestroy(b));
}

/* Used by a long kernel on A, then a short one on B; a third chunk needs
 * the room on C: the eviction must wait for A as well as for B. */
static void evict_waits_streams(void)
{
    setup();
    CUstream a, b, c3;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&c3, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x = chunk(), y = chunk();
    OK(simgpu_reset_counters());
    run(a, x, 50e6);   /* 50 ms */
    run(b, x, 1e4);
    run(c3, y, 1e4);   /* room for one chunk: x (in pieces: over half the room) goes back, in part */
    OK(cuCtxSynchronize());
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK(c.bytes_to_host >= CHUNK - (100 * MiB - CHUNK));
    expect(c.busy_evictions, "busy_evictions");
    CHECK_EQ_U(*(uint64_t *)(uintptr_t)x, 2);
    CHECK_EQ_U(*(uint64_t *)(uintptr_t)y, 1);
    OK(cuMemFree(x));
    OK(cuMemFree(y));
    OK(cuStreamDestroy(a));
    OK(cuStreamDestroy(b));
    OK(cuStreamDestroy(c3));
}

/* A repeating step over three chunks with room for two: lookahead fetches
 * the next launch's chunk on its side stream; the launch must wait for it. */
static void side_fetch_waited(void)
{
    setup();
    CUstream a;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CUdeviceptr ch[3] = {chunk(), chunk(), chunk()};
    OK(simgpu_reset_counters());
    for (int step = 0; step < 6; step++)
        for (int i = 0; i < 3; i++)
            run(a, ch[i], 1e4);
    OK(cuCtxSynchronize());
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK(c.prefetch_bytes >= 6 * CHUNK);
    expect(c.inflight_waits + c.busy_evictions, "inflight_waits + busy_evictions");
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_U(*(uint64_t *)(uintptr_t)ch[i], 6);
        OK(cuMemFree(ch[i]));
    }
    OK(cuStreamDestroy(a));
}

/* The simulator alone (no lmshim): a kernel on stream B touching a block a
 * prefetch on stream A is still copying waits for it and counts it; after
 * cuStreamWaitEvent on the prefetch's event it does neither. */
static void sim_inflight_model(void)
{
    setup();
    CUstream a, b;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CUevent ev;
    OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr x;
    OK(cuMemAllocManaged(&x, CHUNK, CU_MEM_ATTACH_GLOBAL));
    CUmemLocation gpu = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CUmemLocation cpu = {.type = CU_MEM_LOCATION_TYPE_HOST};
    double copy_ns = (double)CHUNK / 55.0;   /* the default 55 GB/s link */
    for (int waited = 0; waited < 2; waited++) {
        OK(cuCtxSynchronize());
        OK(simgpu_reset_counters());
        simgpu_counters c0;
        OK(simgpu_get_counters(0, &c0));
        OK(cuMemPrefetchAsync(x, CHUNK, gpu, 0, a));
        if (waited) {
            OK(cuEventRecord(ev, a));
            OK(cuStreamWaitEvent(b, ev, 0));
        }
        run(b, x, 1e4);
        OK(cuCtxSynchronize());
        simgpu_counters c;
        OK(simgpu_get_counters(0, &c));
        CHECK_EQ_U(c.faults, 0);
        CHECK_EQ_U(c.inflight_waits, waited ? 0 : CHUNK / (2 * MiB));
        /* Either way the kernel ends after the copy plus its own time. */
        CHECK(c.modeled_ns - c0.modeled_ns >= copy_ns + 1e4 - 1);
        OK(cuMemPrefetchAsync(x, CHUNK, cpu, 0, a));
    }
    OK(cuMemFree(x));
    OK(cuEventDestroy(ev));
    OK(cuStreamDestroy(a));
    OK(cuStreamDestroy(b));
}

typedef struct ptsz_job {
    CUcontext ctx;
    CUdeviceptr x;
} ptsz_job;

/* One launch on the calling thread's per-thread default stream. */
static void *ptsz_launch(void *arg)
{
    ptsz_job *j = arg;
    if (cuCtxSetCurrent(j->ctx) != CUDA_SUCCESS)
        return (void *)1;
    run(CU_STREAM_PER_THREAD, j->x, 1e4);
    return NULL;
}

/* Fetched on demand on one thread's per-thread default stream, then used
 * on another thread's: the same handle, two streams; the second must wait. */
static void per_thread_streams(void)
{
    setup();
    CUcontext ctx;
    OK(cuCtxGetCurrent(&ctx));
    ptsz_job j = {ctx, chunk()};
    OK(simgpu_reset_counters());
    for (int t = 0; t < 2; t++) {
        pthread_t th;
        void *r;
        CHECK(pthread_create(&th, NULL, ptsz_launch, &j) == 0);
        CHECK(pthread_join(th, &r) == 0 && r == NULL);
    }
    OK(cuCtxSynchronize());
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK(c.prefetch_bytes >= CHUNK);
    expect(c.inflight_waits, "inflight_waits");
    CHECK_EQ_U(*(uint64_t *)(uintptr_t)j.x, 2);
    OK(cuMemFree(j.x));
}

static const test_case cases[] = {
    {"use_waits_fetch", use_waits_fetch},
    {"evict_waits_streams", evict_waits_streams},
    {"side_fetch_waited", side_fetch_waited},
    {"per_thread_streams", per_thread_streams},
    {"sim_inflight_model", sim_inflight_model},
};

int main(int argc, char **argv)
{
    if (argc > 2)
        ordered = strcmp(argv[2], "unordered") != 0;
    return run_case(cases, sizeof cases / sizeof cases[0], argc, argv);
}
