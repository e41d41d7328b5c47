/*
 * contexts_test.c — a context's end frees its allocations. sim_* cases: the
 * simulated driver alone (cuCtxDestroy, cuDevicePrimaryCtxReset, the last
 * cuDevicePrimaryCtxRelease, cudaDeviceReset). shim_* cases: the same under
 * liblmshim.so (LMS_LIMIT=512M, LMS_FRAC=0.25, LMS_THRESHOLD=64M): the chunks of the context leave
 * the budget, and launches after it still fetch within the budget.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "lmshim.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* The simulated device's bytes in use. */
static uint64_t sim_used(int dev)
{
    simgpu_counters c;
    OK(simgpu_get_counters(dev, &c));
    return c.used_device_bytes;
}

/* True when the driver still has an allocation starting at p. */
static bool known(CUdeviceptr p)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    return cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS && base == p;
}

/* Free bytes cuMemGetInfo reports for the current context's device. */
static size_t free_now(void)
{
    size_t f = 0, t = 0;
    OK(cuMemGetInfo(&f, &t));
    return f;
}

/* Makes a managed allocation resident on device 0. */
static CUdeviceptr resident_managed(size_t bytes)
{
    CUdeviceptr m;
    OK(cuMemAllocManaged(&m, bytes, CU_MEM_ATTACH_GLOBAL));
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    OK(cuMemPrefetchAsync(m, bytes, loc, 0, NULL));
    OK(cuCtxSynchronize());
    return m;
}

/* Every kind a context owns: device, pool, managed, pinned memory, a
 * stream, an event. */
typedef struct owned {
    CUdeviceptr dev, pooled, managed;
    void *pinned;
    CUstream stream;
    CUevent event;
} owned;

static owned allocate_all(void)
{
    owned o;
    OK(cuMemAlloc(&o.dev, 256 * MiB));
    OK(cuStreamCreate(&o.stream, CU_STREAM_NON_BLOCKING));
    OK(cuMemAllocAsync(&o.pooled, 64 * MiB, o.stream));
    OK(cuStreamSynchronize(o.stream));
    o.managed = resident_managed(128 * MiB);
    OK(cuMemHostAlloc(&o.pinned, 4 * MiB, 0));
    OK(cuEventCreate(&o.event, 0));
    OK(cuEventRecord(o.event, o.stream));
    return o;
}

/* Nothing of o is left: no pointer known, the stream handle invalid. */
static void check_all_gone(const owned *o)
{
    CHECK(!known(o->dev));
    CHECK(!known(o->pooled));
    CHECK(!known(o->managed));
    CHECK(!known((CUdeviceptr)(uintptr_t)o->pinned));
    CHECK_IS(cuStreamSynchronize(o->stream), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuEventQuery(o->event), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuEventDestroy(o->event), CUDA_ERROR_INVALID_HANDLE);
}

/* cuDevicePrimaryCtxReset frees the primary context's memory; the context
 * stays usable and the whole device can be allocated again. */
static void sim_primary_reset(void)
{
    primary_context(0);
    size_t before = free_now();
    owned o = allocate_all();
    CHECK(free_now() < before);
    OK(cuDevicePrimaryCtxReset(0));
    check_all_gone(&o);
    CHECK_EQ_U(sim_used(0), 0);
    CHECK_EQ_U(free_now(), before);
    CUdeviceptr all;
    OK(cuMemAlloc(&all, before));   /* the full capacity again */
    OK(cuMemFree(all));
}

/* cuCtxDestroy frees what was made in that context only. */
static void sim_ctx_destroy(void)
{
    primary_context(0);
    CUdeviceptr keep;
    OK(cuMemAlloc(&keep, 128 * MiB));
    uint64_t kept = sim_used(0);
    CUcontext mine;
    OK(cuCtxCreate(&mine, NULL, 0, 0));
    owned o = allocate_all();
    CUcontext ctx = NULL;
    OK(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, o.dev));
    CHECK(ctx == mine);
    CHECK(sim_used(0) > kept);
    OK(cuCtxDestroy(mine));
    check_all_gone(&o);
    CHECK(known(keep));
    CHECK_EQ_U(sim_used(0), kept);
    OK(cuMemFree(keep));
    CHECK_EQ_U(sim_used(0), 0);
}

/* The thread of destroyed_elsewhere: its current context is destroyed by
 * the main thread between the two steps. */
static atomic_int elsewhere_step;
static CUresult elsewhere_info, elsewhere_alloc;

static void *elsewhere_job(void *arg)
{
    OK(cuCtxSetCurrent(arg));
    atomic_store(&elsewhere_step, 1);
    while (atomic_load(&elsewhere_step) != 2)
        ;
    size_t f, t;
    CUdeviceptr p;
    elsewhere_info = cuMemGetInfo(&f, &t);
    elsewhere_alloc = cuMemAlloc(&p, 1 * MiB);
    return NULL;
}

/* A context destroyed by another thread while current here: the calls
 * that need a context answer CUDA_ERROR_CONTEXT_IS_DESTROYED (the handle
 * is gone: reading it was a use after free). */
static void sim_destroyed_elsewhere(void)
{
    primary_context(0);
    CUcontext mine;
    OK(cuCtxCreate(&mine, NULL, 0, 0));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, elsewhere_job, mine) == 0);
    while (atomic_load(&elsewhere_step) != 1)
        ;
    OK(cuCtxDestroy(mine));
    atomic_store(&elsewhere_step, 2);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_IS(elsewhere_info, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_IS(elsewhere_alloc, CUDA_ERROR_CONTEXT_IS_DESTROYED);
}

/* Only the release that takes the retain count to zero frees. */
static void sim_last_release(void)
{
    CUcontext prim = primary_context(0);
    CUcontext again;
    OK(cuDevicePrimaryCtxRetain(&again, 0));
    CHECK(again == prim);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 64 * MiB));
    OK(cuDevicePrimaryCtxRelease(0));
    CHECK(known(p));
    OK(cuDevicePrimaryCtxRelease(0));
    CHECK(!known(p));
    CHECK_EQ_U(sim_used(0), 0);
    CHECK_IS(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
}

/* cudaDeviceReset resets the primary context: cudaMalloc memory goes. */
static void sim_device_reset(void)
{
    void *p, *h;
    size_t f0, f1, t;
    OK(cudaMemGetInfo(&f0, &t));
    OK(cudaMalloc(&p, 512 * MiB));
    OK(cudaMallocHost(&h, 1 * MiB));
    OK(cudaMemGetInfo(&f1, &t));
    CHECK(f1 < f0);
    OK(cudaDeviceReset());
    OK(cudaMemGetInfo(&f1, &t));
    CHECK_EQ_U(f1, t);
    CHECK(!known((CUdeviceptr)(uintptr_t)p));
    CHECK(!known((CUdeviceptr)(uintptr_t)h));
}

/* ---- under lmshim: LMS_LIMIT=512M on a 2 GiB device --------------------- */

#define BUDGET (512 * MiB)
#define CHUNK (64 * MiB)
#define NCHUNKS 16   /* twice the budget */
/* What the device's graph memory pool reserves. */
static uint64_t pool_reserved(int dev)
{
    cuuint64_t v = 0;
    OK(cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v));
    return v;
}

/* Launches, on stream st, a graph that allocates `bytes` from device 0's
 * graph pool and frees them, and waits: the pool keeps the bytes
 * reserved. The graph and its executable are left to the context. */
static void grow_graph_pool(size_t bytes, CUstream st)
{
    CUgraph g;
    OK(cuGraphCreate(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap = graph_alloc_params(bytes, 0);
    CUgraphNode an, fn;
    OK(cuGraphAddMemAllocNode(&an, g, NULL, 0, &ap));
    OK(cuGraphAddMemFreeNode(&fn, g, &an, 1, ap.dptr));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphLaunch(e, st));
    OK(cuStreamSynchronize(st));
}

/* A reset of the primary context empties the device's graph memory pool:
 * what it reserved is free on the device again. */
static void sim_graph_pool_reset(void)
{
    primary_context(0);
    size_t before = free_now();
    grow_graph_pool(128 * MiB, NULL);
    CHECK_EQ_U(pool_reserved(0), 128 * MiB);
    CHECK_EQ_U(sim_used(0), 128 * MiB);
    OK(cuDevicePrimaryCtxReset(0));
    CHECK_EQ_U(pool_reserved(0), 0);
    CHECK_EQ_U(sim_used(0), 0);
    CHECK_EQ_U(free_now(), before);
}

#define SMALL (16 * MiB)   /* below LMS_THRESHOLD: stays on the device within the budget */

static CUfunction f_touch;
static CUmodule module;
static int (*get_stats)(int, lms_device_stats *);

/* touch(a, bytes): reads and writes the range, counts the launch in it. */
static void touch(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    l->access(l, a, *(size_t *)p[1], SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint64_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, 1e4);
}

static void setup_kernel(void)
{
    simgpu_kernel k = {"touch", touch, 2, {8, 8}};
    OK(simgpu_register_kernel(&k));
    OK(cuModuleLoadData(&module, "x"));
    OK(cuModuleGetFunction(&f_touch, module, "touch"));
    get_stats = (int (*)(int, lms_device_stats *))dlsym(RTLD_DEFAULT, "lms_get_stats");
    CHECK(get_stats != NULL);
}

static lms_device_stats stats(void)
{
    lms_device_stats s;
    CHECK(get_stats(0, &s) == 0);
    return s;
}

/* Live chunks of every placement. */
static uint64_t live_chunks(const lms_device_stats *s)
{
    uint64_t n = 0;
    for (int i = 0; i < LMS_STATS_PLACES; i++)
        n += s->live_chunks[i];
    return n;
}

static int is_managed(CUdeviceptr p)
{
    int m = -1;
    OK(cuPointerGetAttribute(&m, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    return m;
}

/* Launches touch over each chunk `rounds` times on stream s; checks that
 * every launch counted and that the budget held. */
static void run_over(CUdeviceptr *chunks, int n, int rounds, CUstream s)
{
    size_t bytes = CHUNK;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++) {
            void *args[] = {&chunks[i], &bytes};
            OK(cuLaunchKernel(f_touch, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
            CHECK(sim_used(0) <= BUDGET);
        }
    OK(cuCtxSynchronize());
    for (int i = 0; i < n; i++) {
        uint64_t count = 0;
        OK(cuMemcpyDtoH(&count, chunks[i], sizeof count));
        CHECK_EQ_U(count, (uint64_t)rounds);
    }
    lms_device_stats st = stats();
    CHECK(st.used <= st.budget);
    CHECK_EQ_U(st.budget_violations, 0);
}

/* Allocates n chunks, zeroed where the counter lives. */
static void alloc_chunks(CUdeviceptr *chunks, int n)
{
    for (int i = 0; i < n; i++) {
        OK(cuMemAlloc(&chunks[i], CHUNK));
        OK(cuMemsetD8(chunks[i], 0, 64));
    }
}

/* After the reset: the full budget is free, nothing is charged, a full
 * budget of small chunks stays on the device, and large chunks past the
 * fraction are managed and fetched by launches again. */
static void check_fresh_budget(void)
{
    size_t f = 0, t = 0;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t, BUDGET);
    CHECK_EQ_U(f, BUDGET);
    lms_device_stats s = stats();
    CHECK_EQ_U(s.used, 0);
    CHECK_EQ_U(live_chunks(&s), 0);
    CUdeviceptr small[BUDGET / SMALL];
    for (unsigned i = 0; i < BUDGET / SMALL; i++) {
        OK(cuMemAlloc(&small[i], SMALL));
        CHECK(is_managed(small[i]) == 0);   /* the whole budget on the device */
    }
    for (unsigned i = 0; i < BUDGET / SMALL; i++)
        OK(cuMemFree(small[i]));
    CUdeviceptr again[NCHUNKS];
    alloc_chunks(again, NCHUNKS);
    CHECK(is_managed(again[NCHUNKS - 1]) == 1);
    lms_device_stats s0 = stats();
    simgpu_counters c0, c1;
    OK(simgpu_get_counters(0, &c0));
    CUstream st;
    OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    run_over(again, NCHUNKS, 3, st);
    /* The residency engine works again: its fetches and evictions (on the
     * streams it made again) reached the device. */
    lms_device_stats s1 = stats();
    OK(simgpu_get_counters(0, &c1));
    CHECK(s1.prefetches > s0.prefetches && s1.evictions > s0.evictions);
    CHECK(c1.bytes_to_host - c0.bytes_to_host >= s1.evicted_bytes - s0.evicted_bytes);
    CHECK(c1.bytes_to_device - c0.bytes_to_device >= s1.prefetched_bytes - s0.prefetched_bytes);
    for (int i = 0; i < NCHUNKS; i++)
        OK(cuMemFree(again[i]));
    OK(cuStreamDestroy(st));
    CHECK_EQ_U(stats().used, 0);
    /* lmshim named no event the context's end took with it (its timing
     * events, its eviction ledger, a graph launch's hold) */
    CHECK_EQ_U(c1.stale_events, 0);
}

/* Past the budget (device and resident managed chunks), then the primary
 * context is reset by the driver call or by cudaDeviceReset (argument). */
static void reset_case(bool runtime)
{
    primary_context(0);
    setup_kernel();
    CUdeviceptr chunks[NCHUNKS];
    alloc_chunks(chunks, NCHUNKS);
    CUstream st;
    OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    run_over(chunks, NCHUNKS, 2, st);
    CHECK(stats().used > 0);
    if (runtime)
        OK(cudaDeviceReset());
    else
        OK(cuDevicePrimaryCtxReset(0));
    CHECK_EQ_U(stats().used, 0);
    OK(cuModuleLoadData(&module, "x"));   /* modules went with the context */
    OK(cuModuleGetFunction(&f_touch, module, "touch"));
    check_fresh_budget();
}

static void shim_primary_reset(void) { reset_case(false); }
static void shim_device_reset(void) { reset_case(true); }

/* The graph pool charged to the budget (128 MiB reserved after a graph's
 * launch), then the primary context reset: the pool's charge goes at the
 * reset, before any cuMemGetInfo or graph launch reads the pool again
 * (on the code before, 128 MiB stayed charged until then), and the
 * budget is whole after it. */
static void shim_graph_pool_reset(void)
{
    primary_context(0);
    setup_kernel();
    CUstream st;
    OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    grow_graph_pool(128 * MiB, st);
    CHECK_EQ_U(stats().used, 128 * MiB);
    OK(cuDevicePrimaryCtxReset(0));
    CHECK_EQ_U(stats().used, 0);
    CHECK_EQ_U(pool_reserved(0), 0);
    OK(cuModuleLoadData(&module, "x"));   /* modules went with the context */
    OK(cuModuleGetFunction(&f_touch, module, "touch"));
    check_fresh_budget();
}

/* A created context's chunks go with it; the primary's stay charged. */
static void shim_ctx_destroy(void)
{
    CUcontext prim = primary_context(0);
    setup_kernel();
    CUdeviceptr kept[2];
    alloc_chunks(kept, 2);
    uint64_t kept_used = stats().used;
    CHECK_EQ_U(kept_used, 2 * CHUNK);   /* LMS_FRAC x budget: the next ones are managed */
    CUcontext mine;
    OK(cuCtxCreate(&mine, NULL, 0, 0));
    CUdeviceptr chunks[NCHUNKS];
    alloc_chunks(chunks, NCHUNKS - 2);
    CUstream st;
    OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    run_over(chunks, NCHUNKS - 2, 2, st);
    OK(cuCtxDestroy(mine));
    OK(cuCtxSetCurrent(prim));
    lms_device_stats s = stats();
    CHECK_EQ_U(s.used, kept_used);
    CHECK_EQ_U(live_chunks(&s), 2);
    run_over(kept, 2, 1, NULL);   /* the primary's chunks still work */
    for (int i = 0; i < 2; i++)
        OK(cuMemFree(kept[i]));
    check_fresh_budget();
}

/* The release that takes the primary context's count to zero ends it:
 * its chunks go; a release before that keeps them. */
static void shim_last_release(void)
{
    CUcontext prim = primary_context(0), again;
    setup_kernel();
    OK(cuDevicePrimaryCtxRetain(&again, 0));
    CUdeviceptr chunks[NCHUNKS];
    alloc_chunks(chunks, NCHUNKS);
    run_over(chunks, NCHUNKS, 1, NULL);
    uint64_t used = stats().used;
    CHECK(used > 0);
    OK(cuDevicePrimaryCtxRelease(0));   /* one retain left */
    lms_device_stats s = stats();
    CHECK_EQ_U(s.used, used);
    CHECK_EQ_U(live_chunks(&s), NCHUNKS);
    OK(cuDevicePrimaryCtxRelease(0));   /* the last one */
    CHECK_EQ_U(stats().used, 0);
    OK(cuDevicePrimaryCtxRetain(&again, 0));
    CHECK(again == prim);
    OK(cuCtxSetCurrent(prim));
    OK(cuModuleLoadData(&module, "x"));
    OK(cuModuleGetFunction(&f_touch, module, "touch"));
    check_fresh_budget();
}

/* Four threads, each with its own context past its share of the budget,
 * launch and destroy it, three times over. */
static void *ctx_worker(void *arg)
{
    (void)arg;
    for (int round = 0; round < 3; round++) {
        CUcontext mine;
        if (cuCtxCreate(&mine, NULL, 0, 0) != CUDA_SUCCESS)
            return (void *)1;
        CUdeviceptr chunks[6];
        alloc_chunks(chunks, 6);
        run_over(chunks, 6, 1, NULL);
        if (cuCtxDestroy(mine) != CUDA_SUCCESS)
            return (void *)2;
    }
    return NULL;
}

/* A graph launched in a created context over its chunks, the context
 * destroyed before any later launch polled the graph's hold: the hold
 * goes with the context, and the next launches, in the primary context,
 * name none of its events. */
static void shim_graph_ctx_destroy(void)
{
    CUcontext prim = primary_context(0);
    setup_kernel();
    CUcontext mine;
    OK(cuCtxCreate(&mine, NULL, 0, 0));
    CUdeviceptr chunks[NCHUNKS - 2];
    alloc_chunks(chunks, NCHUNKS - 2);
    CUstream st;
    OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
    size_t bytes = CHUNK;
    for (int i = 0; i < NCHUNKS - 2; i++) {
        void *args[] = {&chunks[i], &bytes};
        OK(cuLaunchKernel(f_touch, 1, 1, 1, 32, 1, 1, 0, st, args, NULL));
    }
    CUgraph g;
    OK(cuStreamEndCapture(st, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphLaunch(e, st));
    OK(cuCtxDestroy(mine));
    OK(cuCtxSetCurrent(prim));
    CHECK_EQ_U(stats().used, 0);
    check_fresh_budget();
}

/* In a created context, a chunk past the fraction (managed) is freed by
 * cuMemFreeAsync during a stream capture, which lmshim defers to a host
 * node of the graph; the graph is launched (`ran`: the free is due, to be
 * released by the next hook that drains) or not, then the context is
 * destroyed. The driver freed the chunk with it: its charge goes at once,
 * and no later drain frees its address again (the driver may have handed
 * it out to the allocations check_fresh_budget makes and frees). */
static void captured_free_case(bool ran)
{
    CUcontext prim = primary_context(0);
    setup_kernel();
    CUcontext mine;
    OK(cuCtxCreate(&mine, NULL, 0, 0));
    CUdeviceptr chunks[6];
    alloc_chunks(chunks, 6);
    CHECK(is_managed(chunks[5]) == 1);
    CUstream st;
    OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
    size_t bytes = CHUNK;
    void *args[] = {&chunks[5], &bytes};
    OK(cuLaunchKernel(f_touch, 1, 1, 1, 32, 1, 1, 0, st, args, NULL));
    OK(cuMemFreeAsync(chunks[5], st));
    CUgraph g;
    OK(cuStreamEndCapture(st, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    if (ran) {
        OK(cuGraphLaunch(e, st));
        OK(cuStreamSynchronize(st));
    }
    OK(cuCtxDestroy(mine));
    OK(cuCtxSetCurrent(prim));
    lms_device_stats s = stats();
    CHECK_EQ_U(s.used, 0);
    CHECK_EQ_U(live_chunks(&s), 0);
    check_fresh_budget();
}

static void shim_captured_free_ran(void) { captured_free_case(true); }
static void shim_captured_free_unrun(void) { captured_free_case(false); }

/* The free of free_vs_end: waits for the start, then frees its chunk in
 * the context another thread destroys meanwhile. */
typedef struct racer {
    CUcontext ctx;
    CUdeviceptr chunk;
    atomic_int *start;   /* 1: the racer's context is current; 2: go */
    CUresult r;
} racer;

static void *free_racer(void *arg)
{
    racer *j = arg;
    if (cuCtxSetCurrent(j->ctx) != CUDA_SUCCESS)
        return (void *)1;
    atomic_store(j->start, 1);
    while (atomic_load(j->start) != 2)
        ;
    j->r = cuMemFree(j->chunk);
    return NULL;
}

/* A thread frees a chunk while the main thread destroys its context:
 * whichever wins (the free succeeds, or the destruction took the memory
 * and the free fails), the chunk is dropped once and its charge goes. */
static void shim_free_vs_end(void)
{
    CUcontext prim = primary_context(0);
    setup_kernel();
    int won = 0, lost = 0;
    for (int i = 0; i < 300; i++) {
        CUcontext mine;
        OK(cuCtxCreate(&mine, NULL, 0, 0));
        CUdeviceptr c;
        OK(cuMemAlloc(&c, SMALL));   /* on the device, charged */
        atomic_int start = 0;
        racer j = {mine, c, &start, CUDA_SUCCESS};
        pthread_t t;
        CHECK(pthread_create(&t, NULL, free_racer, &j) == 0);
        while (atomic_load(&start) != 1)
            ;
        atomic_store(&start, 2);
        for (volatile int k = 0; k < (i % 32) * 40; k++)
            ;
        OK(cuCtxDestroy(mine));
        void *ret;
        CHECK(pthread_join(t, &ret) == 0);
        CHECK(ret == NULL);
        j.r == CUDA_SUCCESS ? won++ : lost++;
        OK(cuCtxSetCurrent(prim));
        lms_device_stats st = stats();
        CHECK_EQ_U(st.used, 0);
        CHECK_EQ_U(live_chunks(&st), 0);
    }
    printf("frees before the context's end: %d, after: %d\n", won, lost);
    check_fresh_budget();
}

/* Makes and releases physical memory (cuMemCreate) and arrays in the
 * primary context, each a making of room that evicts other threads'
 * fetched chunks, until *stop. */
static void *maker(void *arg)
{
    const atomic_bool *stop = arg;
    CUcontext prim;
    if (cuDevicePrimaryCtxRetain(&prim, 0) != CUDA_SUCCESS || cuCtxSetCurrent(prim) != CUDA_SUCCESS)
        return (void *)1;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUDA_ARRAY3D_DESCRIPTOR desc = array3d_desc(4096, 4096, 0, CU_AD_FORMAT_FLOAT, 1, 0);   /* 64 MiB */
    for (unsigned i = 0; !atomic_load(stop); i++) {
        if (i % 2 == 0) {
            CUmemGenericAllocationHandle h;
            if (cuMemCreate(&h, CHUNK, &prop, 0) != CUDA_SUCCESS || cuMemRelease(h) != CUDA_SUCCESS)
                return (void *)2;
        } else {
            CUarray arr;
            if (cuArray3DCreate(&arr, &desc) != CUDA_SUCCESS || cuArrayDestroy(arr) != CUDA_SUCCESS)
                return (void *)3;
        }
    }
    return NULL;
}

/* Four threads each destroy their own contexts (ctx_worker); with
 * `makers`, a fifth thread makes physical memory and arrays in the
 * primary context meanwhile: no room it makes evicts on the streams, or
 * the chunks, of a context that ended (the simulator counts a call naming
 * an event of an ended context: check_fresh_budget). */
static void threads_case(bool makers)
{
    CUcontext prim = primary_context(0);
    setup_kernel();
    atomic_bool stop = false;
    pthread_t mk, th[4];
    if (makers)
        CHECK(pthread_create(&mk, NULL, maker, &stop) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&th[i], NULL, ctx_worker, NULL) == 0);
    for (int i = 0; i < 4; i++) {
        void *ret;
        CHECK(pthread_join(th[i], &ret) == 0);
        CHECK(ret == NULL);
    }
    atomic_store(&stop, true);
    if (makers) {
        void *ret;
        CHECK(pthread_join(mk, &ret) == 0);
        CHECK(ret == NULL);
    }
    OK(cuCtxSetCurrent(prim));
    lms_device_stats s = stats();
    CHECK_EQ_U(s.used, 0);
    CHECK_EQ_U(s.budget_violations, 0);
    check_fresh_budget();
}

static void shim_threads(void) { threads_case(false); }
static void shim_threads_makers(void) { threads_case(true); }

static const test_case cases[] = {
    {"sim_primary_reset", sim_primary_reset},
    {"sim_ctx_destroy", sim_ctx_destroy},
    {"sim_last_release", sim_last_release},
    {"sim_device_reset", sim_device_reset},
    {"sim_destroyed_elsewhere", sim_destroyed_elsewhere},
    {"sim_graph_pool_reset", sim_graph_pool_reset},
    {"shim_primary_reset", shim_primary_reset},
    {"shim_device_reset", shim_device_reset},
    {"shim_ctx_destroy", shim_ctx_destroy},
    {"shim_last_release", shim_last_release},
    {"shim_threads", shim_threads},
    {"shim_threads_makers", shim_threads_makers},
    {"shim_graph_ctx_destroy", shim_graph_ctx_destroy},
    {"shim_captured_free_ran", shim_captured_free_ran},
    {"shim_captured_free_unrun", shim_captured_free_unrun},
    {"shim_free_vs_end", shim_free_vs_end},
    {"shim_graph_pool_reset", shim_graph_pool_reset},
};

TEST_MAIN(cases)
