/*
 * residency_test.c — the residency engine in front of real launches over the
 * simulated GPU (LD_PRELOAD of liblmshim.so; settings in meson.build).
 * After every launch, in every thread: lmshim's charged bytes and the
 * simulated device's bytes in use stay inside the budget, and no budget
 * violation was ever counted. Kernels do real work that is checked.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "../common/check.h"
#include "../common/context.h"
#include "../common/shim.h"
#include "lmshim.h"
#include "simgpu.h"

#define CHUNK (64 * MiB)
#define NCHUNKS 16

/* touch2(a, b, bytes): reads both ranges, counts the launch in each. */
static void touch2(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0], b = *(CUdeviceptr *)p[1];
    size_t bytes = *(size_t *)p[2];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    l->access(l, b, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint64_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add((uint64_t *)(uintptr_t)b, 1, __ATOMIC_RELAXED);
    l->compute(l, 1e5);
}

static CUfunction f_touch;

/* Registers the kernel. */
static void setup_kernel(void)
{
    f_touch = sim_function(&(simgpu_kernel){"touch2", touch2, 3, {8, 8, 8}});
}

typedef struct job {
    CUcontext ctx;
    CUstream stream;
    CUdeviceptr *chunks;
    int dev;
    unsigned seed;
    int launches;
    uint64_t counts[NCHUNKS];   /* launches that touched each chunk */
} job;

static void *launcher(void *arg)
{
    job *j = arg;
    if (cuCtxSetCurrent(j->ctx) != CUDA_SUCCESS)
        return (void *)1;
    size_t bytes = CHUNK;
    for (int i = 0; i < j->launches; i++) {
        j->seed = j->seed * 1103515245u + 12345u;
        int a = (int)(j->seed >> 16) % NCHUNKS, b = (a + 1 + (int)(j->seed >> 8) % (NCHUNKS - 1)) % NCHUNKS;
        void *args[] = {&j->chunks[a], &j->chunks[b], &bytes};
        if (cuLaunchKernel(f_touch, 1, 1, 1, 64, 1, 1, 0, j->stream, args, NULL) != CUDA_SUCCESS)
            return (void *)2;
        j->counts[a]++;
        j->counts[b]++;
        check_budget(j->dev);
    }
    return NULL;
}

/* Allocates the chunks of one device (most land in managed memory). */
static void alloc_chunks(CUdeviceptr *chunks)
{
    for (int i = 0; i < NCHUNKS; i++) {
        OK(cuMemAlloc(&chunks[i], CHUNK));
        OK(cuMemsetD8(chunks[i], 0, 64));
    }
}

/* Eight threads on four streams per device; devices from SIMGPU_DEVICES. */
static void threads_streams(void)
{
    OK(cuInit(0));
    int ndev;
    OK(cuDeviceGetCount(&ndev));
    CUcontext ctx[2];
    CUdeviceptr chunks[2][NCHUNKS];
    CUstream streams[2][4];
    for (int d = 0; d < ndev; d++) {
        OK(cuDevicePrimaryCtxRetain(&ctx[d], d));
        OK(cuCtxSetCurrent(ctx[d]));
        if (d == 0)
            setup_kernel();
        alloc_chunks(chunks[d]);
        for (int s = 0; s < 4; s++)
            OK(cuStreamCreate(&streams[d][s], CU_STREAM_NON_BLOCKING));
    }
    job jobs[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        int d = i % ndev;
        jobs[i] = (job){.ctx = ctx[d], .stream = streams[d][i % 4], .chunks = chunks[d], .dev = d,
                        .seed = (unsigned)i * 31 + 7, .launches = 300};
        CHECK(pthread_create(&th[i], NULL, launcher, &jobs[i]) == 0);
    }
    for (int i = 0; i < 8; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        CHECK(rc == NULL);
    }
    for (int d = 0; d < ndev; d++) {
        OK(cuCtxSetCurrent(ctx[d]));
        OK(cuCtxSynchronize());
        lms_device_stats s;
        CHECK(get_stats(d, &s) == 0);
        CHECK(s.live_chunks[1] >= 10);            /* most chunks are managed */
        CHECK(s.prefetches > 0 && s.evictions > 0);
        for (int c = 0; c < NCHUNKS; c++) {       /* every launch did its work */
            uint64_t want = 0, got = 0;
            for (int i = 0; i < 8; i++)
                if (jobs[i].dev == d)
                    want += jobs[i].counts[c];
            OK(cuMemcpyDtoH(&got, chunks[d][c], 8));
            CHECK_EQ_U(got, want);
        }
        check_budget(d);
        for (int c = 0; c < NCHUNKS; c++)
            OK(cuMemFree(chunks[d][c]));
        CHECK(get_stats(d, &s) == 0);
        CHECK_EQ_U(s.used, 0);                     /* frees of resident chunks gave their share back */
        simgpu_counters sc;
        OK(simgpu_get_counters(d, &sc));
        CHECK(sc.peak_device_bytes <= s.budget);
        for (int st = 0; st < 4; st++)
            OK(cuStreamDestroy(streams[d][st]));
    }
}

/* On demand (LMS_POLICY=lru): a launch finds its chunks resident, in
 * every launch form; a chunk larger than the budget is never fetched. */
static void forms_and_big_chunks(void)
{
    primary_context(0);
    setup_kernel();
    CUdeviceptr chunks[NCHUNKS];
    alloc_chunks(chunks);
    size_t bytes = CHUNK;
    simgpu_counters before, after;
    OK(simgpu_get_counters(0, &before));
    void *args[] = {&chunks[5], &chunks[9], &bytes};
    OK(cuLaunchKernel(f_touch, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    struct { CUdeviceptr a, b; size_t n; } buf = {chunks[6], chunks[10], CHUNK};
    size_t bsize = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bsize, CU_LAUNCH_PARAM_END};
    OK(cuLaunchKernel(f_touch, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra));
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1};
    void *args2[] = {&chunks[7], &chunks[11], &bytes};
    OK(cuLaunchKernelEx(&cfg, f_touch, args2, NULL));
    void *args3[] = {&chunks[8], &chunks[12], &bytes};
    OK(cuLaunchCooperativeKernel(f_touch, 1, 1, 1, 32, 1, 1, 0, CU_STREAM_PER_THREAD, args3));
    OK(cuCtxSynchronize());
    OK(simgpu_get_counters(0, &after));
    CHECK_EQ_U(after.remote_bytes - before.remote_bytes, 0);   /* every chunk was resident in time */
    CHECK_EQ_U(after.faults - before.faults, 0);
    CHECK(after.prefetch_bytes - before.prefetch_bytes >= 8 * CHUNK);
    check_budget(0);
    /* The budget is full of fetched chunks; a small device request still
     * gets device memory: fetched chunks make way. */
    lms_device_stats s;
    CHECK(get_stats(0, &s) == 0 && s.used + MiB > s.budget);
    CUdeviceptr small;
    OK(cuMemAlloc(&small, MiB));
    int managed = -1;
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, small));
    CHECK(managed == 0);
    check_budget(0);
    OK(cuMemFree(small));
    /* 600 MiB > the 512 MiB budget: managed in 2 MiB-aligned pieces, the
     * pieces that fit are fetched, the rest is read over the link. */
    CUdeviceptr big;
    OK(cuMemAlloc(&big, 600 * MiB));
    size_t big_bytes = 600 * MiB;
    void *args4[] = {&big, &chunks[0], &big_bytes};
    OK(simgpu_get_counters(0, &before));
    OK(cuLaunchKernel(f_touch, 1, 1, 1, 32, 1, 1, 0, NULL, args4, NULL));
    OK(simgpu_get_counters(0, &after));
    CHECK(after.remote_bytes - before.remote_bytes >= 88 * MiB);
    CHECK(after.remote_bytes - before.remote_bytes < 600 * MiB);
    CHECK(after.prefetch_bytes - before.prefetch_bytes >= 256 * MiB);
    check_budget(0);
    OK(cuMemFree(big));
    for (int c = 0; c < NCHUNKS; c++)
        OK(cuMemFree(chunks[c]));
}

/* LMS_POLICY=none: nothing moves; the GPU reads managed chunks remotely. */
static void policy_none(void)
{
    primary_context(0);
    setup_kernel();
    CUdeviceptr chunks[NCHUNKS];
    alloc_chunks(chunks);
    size_t bytes = CHUNK;
    void *args[] = {&chunks[14], &chunks[15], &bytes};
    OK(cuLaunchKernel(f_touch, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.prefetch_bytes, 0);
    CHECK_EQ_U(c.remote_bytes, 2 * CHUNK);
    lms_device_stats s;
    CHECK(get_stats(0, &s) == 0 && s.launches_scanned == 1 && s.prefetches == 0);
    for (int i = 0; i < NCHUNKS; i++)
        OK(cuMemFree(chunks[i]));
}

static const test_case cases[] = {
    {"threads_streams", threads_streams},
    {"forms_and_big_chunks", forms_and_big_chunks},
    {"policy_none", policy_none},
};

TEST_MAIN(cases)
