/*
 * hardening_test.c — accounting and frees that hostile or unusual programs
 * exercise, with liblmshim.so preloaded over the simulated GPU. Each case
 * states the CUDA behaviour it holds lmshim to; settings in meson.build.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "lmshim.h"
#include "simgpu.h"

/* Chunks lmshim holds for a device (0 when it never looked at the device). */
static uint64_t chunks_of(int device)
{
    lms_device_stats s;
    if (get_stats(device, &s) != 0)
        return 0;
    uint64_t n = s.used;   /* a charged byte counts too */
    for (int p = 0; p < LMS_STATS_PLACES; p++)
        n += s.live_chunks[p];
    return n;
}

/* touch(a, bytes): reads and writes the range. */
static void touch(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint64_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, 1e5);
}

/* The kernel `touch`, registered once. */
static CUfunction touch_kernel(void)
{
    static CUfunction f;
    if (!f)
        f = sim_function(&(simgpu_kernel){"touch", touch, 2, {8, 8}});
    return f;
}

static void launch_touch(CUdeviceptr p, size_t bytes)
{
    void *args[] = {&p, &bytes};
    OK(cuLaunchKernel(touch_kernel(), 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    OK(cuCtxSynchronize());
}

/* cuMemCreate before cuInit is refused (NOT_INITIALIZED) and must not leave
 * the device's account built from that failed query: after cuInit the
 * budget is the device's memory (SIMGPU_MEM 4G, LMS_LIMIT 1 = all of it) and
 * a 64 MiB chunk stays on the device. */
static void vmm_before_init(void)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h;
    CHECK_IS(cuMemCreate(&h, 64 * MiB, &prop, 0), CUDA_ERROR_NOT_INITIALIZED);
    size_t f = 0, t = 0;
    CHECK_IS(cuMemGetInfo(&f, &t), CUDA_ERROR_NOT_INITIALIZED);
    primary_context(0);
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t, 4 * GiB);
    CHECK_EQ_U(f, 4 * GiB);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 64 * MiB));
    CHECK(is_managed(p) == 0);
    CHECK_EQ_U(stats(0).budget, 4 * GiB);
    CHECK_EQ_U(stats(0).used, 64 * MiB);
    OK(cuMemFree(p));
}

/* A pool's allocations are charged where the pool's memory is: a pool on
 * device 1 used from a stream of device 0 charges device 1 (and falls back
 * on device 1 when its budget is full); a host pool's memory is not device
 * memory. SIMGPU_DEVICES=2, LMS_LIMIT=1G, LMS_FRAC=1, LMS_THRESHOLD=64M. */
static void pool_location(void)
{
    OK(cuInit(0));
    CUcontext c0, c1;
    OK(cuDevicePrimaryCtxRetain(&c1, 1));
    OK(cuDevicePrimaryCtxRetain(&c0, 0));
    OK(cuCtxSetCurrent(c0));
    CUstream s0;
    OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 1;
    CUmemoryPool pool1;
    OK(cuMemPoolCreate(&pool1, &props));
    CUdeviceptr p[5];
    for (int i = 0; i < 5; i++)
        OK(cuMemAllocFromPoolAsync(&p[i], 256 * MiB, pool1, s0));
    for (int i = 0; i < 4; i++)
        CHECK(is_managed(p[i]) == 0);
    CHECK(is_managed(p[4]) == 1);                /* device 1's budget is full */
    CHECK_EQ_U(stats(1).used, 1 * GiB);
    CHECK_EQ_U(stats(1).live_chunks[1], 1);      /* the fallback is device 1's */
    CHECK_EQ_U(chunks_of(0), 0);
    /* The default pool of device 1, asked for by handle, is device 1's too. */
    CUmemoryPool def1;
    OK(cuDeviceGetDefaultMemPool(&def1, 1));
    CUdeviceptr q;
    OK(cuMemFreeAsync(p[0], s0));
    OK(cuMemAllocFromPoolAsync(&q, 128 * MiB, def1, s0));
    CHECK_EQ_U(stats(1).used, 896 * MiB);
    CHECK_EQ_U(chunks_of(0), 0);
    /* A host-located pool: pinned host memory, never charged to a device. */
    props.location.type = CU_MEM_LOCATION_TYPE_HOST;
    props.location.id = 0;
    CUmemoryPool hpool;
    OK(cuMemPoolCreate(&hpool, &props));
    CUdeviceptr h;
    OK(cuMemAllocFromPoolAsync(&h, 512 * MiB, hpool, s0));
    unsigned type = 0;
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, h));
    CHECK(type == CU_MEMORYTYPE_HOST);
    CHECK_EQ_U(chunks_of(0), 0);
    CHECK_EQ_U(stats(1).used, 896 * MiB);
    OK(cuMemFreeAsync(h, s0));
    OK(cuMemFreeAsync(q, s0));
    for (int i = 1; i < 5; i++)
        OK(cuMemFreeAsync(p[i], s0));
    OK(cuStreamSynchronize(s0));
    CHECK_EQ_U(chunks_of(0) + chunks_of(1), 0);
    OK(cuMemPoolDestroy(hpool));
    OK(cuMemPoolDestroy(pool1));
    OK(cuStreamDestroy(s0));
}

/* cuMemFreeHost on a resident managed chunk fails as CUDA answers
 * (INVALID_VALUE) and changes nothing: the chunk stays resident and
 * charged, is still fetched, and the right free then works.
 * LMS_LIMIT=1G, LMS_FRAC=0.25, LMS_THRESHOLD=64M, LMS_POLICY=lru. */
static void wrong_free_resident(void)
{
    primary_context(0);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 512 * MiB));                    /* past 0.25 x 1 GiB: managed */
    CHECK(is_managed(p) == 1);
    launch_touch(p, 512 * MiB);
    CHECK_EQ_U(stats(0).used, 512 * MiB);             /* fetched: charged */
    CHECK_IS(cuMemFreeHost((void *)(uintptr_t)p), CUDA_ERROR_INVALID_VALUE);
    lms_device_stats s = stats(0);
    CHECK_EQ_U(s.used, 512 * MiB);
    CHECK_EQ_U(s.live_chunks[1], 1);
    /* A device chunk (below the threshold) is counted on top of it. */
    CUdeviceptr d;
    OK(cuMemAlloc(&d, 32 * MiB));
    CHECK(is_managed(d) == 0);
    CHECK_EQ_U(stats(0).used, 544 * MiB);
    launch_touch(p, 512 * MiB);
    s = stats(0);
    CHECK(s.used <= s.budget);
    CHECK_EQ_U(s.budget_violations, 0);
    CHECK(s.launches_scanned == 2);
    OK(cuMemFree(p));
    OK(cuMemFree(d));
    s = stats(0);
    CHECK_EQ_U(s.used, 0);
    CHECK_EQ_U(s.live_chunks[1], 0);
}

/* LMS_MODE=host: a chunk the program got from cuMemAlloc is device memory
 * to the program, whatever backs it: cuMemFreeHost refuses it as CUDA
 * does, and cuMemFree then frees it. And the program's own pinned memory is
 * freed only by cuMemFreeHost. LMS_LIMIT=1G LMS_FRAC=0.5 LMS_THRESHOLD=64M. */
static void host_mode_free_kind(void)
{
    primary_context(0);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 768 * MiB));                    /* past 0.5 x 1 GiB: host */
    unsigned type = 0;
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    CHECK(type == CU_MEMORYTYPE_HOST);
    CHECK_IS(cuMemFreeHost((void *)(uintptr_t)p), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ_U(stats(0).live_chunks[2], 1);
    uint32_t v = 7, w = 0;
    OK(cuMemcpyHtoD(p, &v, 4));                       /* still allocated */
    OK(cuMemcpyDtoH(&w, p, 4));
    CHECK(w == 7);
    OK(cuMemFree(p));
    CHECK_EQ_U(stats(0).live_chunks[2], 0);
    CHECK_IS(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    void *h;
    OK(cuMemAllocHost(&h, 1 * MiB));
    CHECK_IS(cuMemFree((CUdeviceptr)(uintptr_t)h), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFreeHost(h));
    CHECK_EQ_U(stats(0).live_chunks[4], 0);
}

/* VMM: physical memory is freed when it is released AND its last mapping
 * is gone, and is charged until then. */
static void vmm_unmap_last(void)
{
    primary_context(0);
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h;
    OK(cuMemCreate(&h, 64 * MiB, &prop, 0));
    CUdeviceptr va1, va2;
    OK(cuMemAddressReserve(&va1, 64 * MiB, 0, 0, 0));
    OK(cuMemAddressReserve(&va2, 128 * MiB, 0, 0, 0));
    OK(cuMemMap(va1, 64 * MiB, 0, h, 0));
    OK(cuMemMap(va2, 32 * MiB, 0, h, 0));             /* two mappings of the first half */
    OK(cuMemMap(va2 + 32 * MiB, 32 * MiB, 32 * MiB, h, 0));
    OK(cuMemRelease(h));
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t - f, 64 * MiB);                      /* still mapped: still there */
    CHECK_EQ_U(stats(0).used, 64 * MiB);
    OK(cuMemUnmap(va1, 64 * MiB));
    CHECK_EQ_U(stats(0).used, 64 * MiB);              /* va2 still maps it */
    CHECK_IS(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemUnmap(va2, 64 * MiB));                    /* both mappings of va2 at once */
    CHECK_EQ_U(stats(0).used, 0);
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, t);
    /* Unmapped first, released last: freed at the release. */
    OK(cuMemCreate(&h, 32 * MiB, &prop, 0));
    OK(cuMemMap(va1, 32 * MiB, 0, h, 0));
    OK(cuMemUnmap(va1, 32 * MiB));
    CHECK_EQ_U(stats(0).used, 32 * MiB);
    OK(cuMemRelease(h));
    CHECK_EQ_U(stats(0).used, 0);
    OK(cuMemAddressFree(va1, 64 * MiB));
    OK(cuMemAddressFree(va2, 128 * MiB));
}

/* cuMemFreeAsync_ptsz(p, NULL) frees in the order of the calling thread's
 * per-thread default stream: freeing a managed chunk waits for that stream,
 * not for the legacy stream (which would wait for every blocking stream).
 * The modeled host clock shows which was synchronized.
 * LMS_LIMIT=1G LMS_FRAC=0.5 LMS_THRESHOLD=64M. */
static void ptsz_free_stream(void)
{
    primary_context(0);
    PFN_cuMemFreeAsync_v11020_ptsz free_ptsz =
        (PFN_cuMemFreeAsync_v11020_ptsz)dlsym(RTLD_DEFAULT, "cuMemFreeAsync_ptsz");
    CHECK(free_ptsz != NULL);
    CUdeviceptr m, d;
    OK(cuMemAlloc(&m, 768 * MiB));                    /* managed */
    CHECK(is_managed(m) == 1);
    OK(cuMemAlloc(&d, 256 * MiB));
    void *src = calloc(1, 256 * MiB);
    CHECK(src != NULL);
    CUstream busy, clock;
    OK(cuStreamCreate(&busy, 0));                     /* blocking: the legacy stream waits for it */
    OK(cuStreamCreate(&clock, CU_STREAM_NON_BLOCKING));
    CUevent e0, e1;
    OK(cuEventCreate(&e0, 0));
    OK(cuEventCreate(&e1, 0));
    OK(cuEventRecord(e0, clock));
    OK(cuMemcpyHtoDAsync(d, src, 256 * MiB, busy));   /* about 4.9 ms on the link */
    OK(free_ptsz(m, NULL));
    OK(cuEventRecord(e1, clock));                     /* stamped at the host clock */
    float ms = -1;
    OK(cuEventElapsedTime(&ms, e0, e1));
    CHECK(ms >= 0 && ms < 1.0f);                      /* the busy stream was not waited for */
    OK(cuStreamSynchronize(busy));
    CHECK_EQ_U(stats(0).live_chunks[1], 0);
    OK(cuMemFree(d));
    free(src);
    OK(cuEventDestroy(e0));
    OK(cuEventDestroy(e1));
    OK(cuStreamDestroy(busy));
    OK(cuStreamDestroy(clock));
}

/* ---- allocators that suballocate (arenas.c) ----------------------------- */

/* A caching allocator over cuMemAlloc, as PyTorch's behaves on
 * out-of-memory: free cached blocks, ask again for the same size. */
typedef struct cache {
    CUdeviceptr cached[8];   /* freed by the program, kept for reuse */
    int n;
} cache;

/* Allocates `size` the caching allocator's way; returns the OOM answers
 * seen on the way (the retry itself must succeed). */
static int cache_alloc(cache *c, CUdeviceptr *out, size_t size)
{
    CUresult r = cuMemAlloc(out, size);
    if (r != CUDA_ERROR_OUT_OF_MEMORY) {
        OK(r);
        return 0;
    }
    while (c->n > 0)                       /* empty the cache, then retry */
        OK(cuMemFree(c->cached[--c->n]));
    OK(cuMemAlloc(out, size));
    return 1;
}

/* LMS_OOM_RETRY=on, LMS_LIMIT=1G, LMS_FRAC=1, LMS_THRESHOLD=64M. The first
 * request past the budget is answered out-of-memory; the allocator frees
 * its cache and its retry lands on the device. With nothing left to free,
 * the retry of the same size falls back, never a second out-of-memory. */
static void oom_retry_cache(void)
{
    primary_context(0);
    cache c = {.n = 0};
    CUdeviceptr live, big, big2;
    OK(cuMemAlloc(&live, 256 * MiB));
    for (int i = 0; i < 2; i++)
        OK(cuMemAlloc(&c.cached[c.n++], 256 * MiB));   /* 768 MiB held, 512 of it cached */
    CHECK_EQ_U(cache_alloc(&c, &big, 512 * MiB), 1);
    CHECK(is_managed(big) == 0);                        /* the cache made room */
    lms_device_stats s = stats(0);
    CHECK_EQ_U(s.oom_failures, 1);
    CHECK_EQ_U(s.used, 768 * MiB);
    CHECK_EQ_U(s.allocs[1], 0);
    CHECK_EQ_U(cache_alloc(&c, &big2, 512 * MiB), 1);   /* nothing cached: falls back */
    CHECK(is_managed(big2) == 1);
    s = stats(0);
    CHECK_EQ_U(s.oom_failures, 2);
    CHECK_EQ_U(s.allocs[1], 1);
    /* A size answered, then placed on the device after a free, is settled:
     * the next trip of that size is a first one again. */
    OK(cuMemFree(big2));
    CHECK_IS(cuMemAlloc(&big2, 448 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemFree(big));
    OK(cuMemAlloc(&big, 448 * MiB));
    CHECK(is_managed(big) == 0);
    CHECK_IS(cuMemAlloc(&big2, 448 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemAlloc(&big2, 448 * MiB));
    CHECK(is_managed(big2) == 1);
    OK(cuMemFree(big2));
    OK(cuMemFree(big));
    OK(cuMemFree(live));
    CHECK_EQ_U(stats(0).used, 0);
}

/* The stand-in caching allocator's allocation function (a library named
 * libc10_cuda.so, path in FAKE_C10), loaded now. */
typedef CUresult (*c10_alloc_fn)(CUdeviceptr *, size_t);
static c10_alloc_fn load_c10(void)
{
    const char *lib = getenv("FAKE_C10");
    CHECK(lib != NULL);
    void *h = dlopen(lib, RTLD_NOW);
    CHECK(h != NULL);
    c10_alloc_fn f = (c10_alloc_fn)dlsym(h, "lms_test_c10_alloc");
    CHECK(f != NULL);
    return f;
}

/* LMS_OOM_RETRY=auto (the default): no out-of-memory answer until a caching
 * allocator's library is loaded, then its first trip is answered. Same
 * budget as above. */
static void oom_retry_auto(void)
{
    primary_context(0);
    CUdeviceptr a, b, c;
    OK(cuMemAlloc(&a, 768 * MiB));
    OK(cuMemAlloc(&b, 512 * MiB));                     /* no caching allocator: falls back */
    CHECK(is_managed(b) == 1);
    CHECK_EQ_U(stats(0).oom_failures, 0);
    c10_alloc_fn c10_alloc = load_c10();
    CHECK_IS(c10_alloc(&c, 512 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(c10_alloc(&c, 512 * MiB));
    CHECK(is_managed(c) == 1);
    CHECK_EQ_U(stats(0).oom_failures, 1);
    OK(cuMemFree(a));
    OK(cuMemFree(b));
    OK(cuMemFree(c));
}

/* LMS_OOM_RETRY=off: never an out-of-memory answer, even with a caching
 * allocator loaded. Same budget as above. */
static void oom_retry_off(void)
{
    primary_context(0);
    c10_alloc_fn c10_alloc = load_c10();
    CUdeviceptr a, b;
    OK(c10_alloc(&a, 768 * MiB));
    OK(c10_alloc(&b, 512 * MiB));
    CHECK(is_managed(b) == 1);
    CHECK_EQ_U(stats(0).oom_failures, 0);
    OK(cuMemFree(a));
    OK(cuMemFree(b));
}

/* Sends this process's stderr to a fresh temporary file; returns its fd. */
static int capture_stderr(void)
{
    char path[] = "/tmp/lms_hardening_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    fflush(stderr);
    CHECK(dup2(fd, 2) == 2);
    return fd;
}

/* Lines of the captured stderr (open as fd) that contain `needle`. */
static int stderr_lines_with(int fd, const char *needle)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return lines_with(path, needle);
}

/* One allocation taking most of the budget at once (TensorFlow's or JAX's
 * arena) gets one warning naming the settings, however often it happens;
 * LMS_LIMIT=1G. */
static void arena_warning(void)
{
    primary_context(0);
    int fd = capture_stderr();
    CUdeviceptr small, a, b;
    OK(cuMemAlloc(&small, 512 * MiB));                 /* half the budget: no word */
    CHECK_EQ_U(stderr_lines_with(fd, "lmshim"), 0);
    OK(cuMemFree(small));
    OK(cuMemAlloc(&a, 800 * MiB));
    OK(cuMemAlloc(&b, 900 * MiB));
    CHECK_EQ_U(stderr_lines_with(fd, "lmshim"), 1);
    CHECK_EQ_U(stderr_lines_with(fd, "TF_FORCE_GPU_ALLOW_GROWTH=true"), 1);
    CHECK_EQ_U(stderr_lines_with(fd, "XLA_PYTHON_CLIENT_PREALLOCATE=false"), 1);
    OK(cuMemFree(a));
    OK(cuMemFree(b));
}

/* VMM growth past the budget (PyTorch's expandable segments) gets one
 * warning naming PYTORCH_CUDA_ALLOC_CONF, however often; LMS_LIMIT=64M. */
static void vmm_growth_warning(void)
{
    primary_context(0);
    int fd = capture_stderr();
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h[4];
    for (int i = 0; i < 2; i++)
        OK(cuMemCreate(&h[i], 32 * MiB, &prop, 0));
    CHECK_EQ_U(stderr_lines_with(fd, "lmshim"), 0);
    for (int i = 2; i < 4; i++)
        OK(cuMemCreate(&h[i], 32 * MiB, &prop, 0));
    CHECK_EQ_U(stderr_lines_with(fd, "lmshim"), 1);
    CHECK_EQ_U(stderr_lines_with(fd, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False"), 1);
    for (int i = 0; i < 4; i++)
        OK(cuMemRelease(h[i]));
    CHECK_EQ_U(stats(0).used, 0);
}

/* Allocates and frees chunks in the primary context until *stop. */
static void *alloc_churn(void *arg)
{
    atomic_bool *stop = arg;
    CUcontext ctx;
    if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return (void *)1;
    while (!atomic_load(stop)) {
        CUdeviceptr p[16];
        for (int i = 0; i < 16; i++)
            if (cuMemAlloc(&p[i], 8 * MiB) != CUDA_SUCCESS)
                return (void *)2;
        for (int i = 0; i < 16; i++)
            if (cuMemFree(p[i]) != CUDA_SUCCESS)
                return (void *)3;
    }
    return NULL;
}

/* A hooked call before cuInit (a runtime-API program asks
 * cuGetProcAddress first) starts lmshim before the driver: lmshim's fork
 * handlers are registered before the driver's. At a fork, prepare
 * handlers run last-registered first, so the driver's lock would be taken
 * before lmshim's, while another thread holds lmshim's lock and waits
 * for the driver's inside an allocation. Forks while a thread allocates
 * must not hang (the alarm ends a hang). */
static void fork_hooked_before_init(void)
{
    size_t f = 0, t = 0;
    CUresult early = cuMemGetInfo(&f, &t);
    CHECK(early == CUDA_ERROR_NOT_INITIALIZED);
    primary_context(0);
    atomic_bool stop = false;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, alloc_churn, &stop) == 0);
    alarm(60);
    for (int k = 0; k < 200; k++) {
        fork_bare_child();
    }
    atomic_store(&stop, true);
    void *ret;
    CHECK(pthread_join(th, &ret) == 0);
    CHECK(ret == NULL);
    alarm(0);
    CHECK_EQ_U(chunks_of(0), 0);
}

/* Allocates and frees chunks until cancelled (the log, at debug level,
 * writes inside lmshim's calls: cancellation points). */
static void *cancelled_churn(void *arg)
{
    (void)arg;
    CUcontext ctx;
    if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return (void *)1;
    for (;;) {
        CUdeviceptr p;
        if (cuMemAlloc(&p, 8 * MiB) == CUDA_SUCCESS)
            cuMemFree(p);
        pthread_testcancel();
    }
    return NULL;
}

/* pthread_cancel of a thread in the middle of allocations and frees:
 * lmshim's calls are not cancelled inside (a lock held for ever, a freed
 * address marked as being freed for ever), so a reset of the context,
 * which waits for every allocation and free under way, returns, and then
 * nothing stays charged (the alarm ends a hang). */
static void cancel_in_free(void)
{
    if (getenv("LMS_TEST_ASAN")) {
        /* A cancelled thread's end trips AddressSanitizer itself
         * (stack-buffer-underflow in its sigaltstack at thread exit,
         * google/sanitizers issue 1399), whatever the thread ran. */
        puts("AddressSanitizer misreads a cancelled thread's exit (sanitizers issue 1399): skipped");
        exit(77);
    }
    primary_context(0);
    alarm(60);
    for (int round = 0; round < 40; round++) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, cancelled_churn, NULL) == 0);
        usleep(200 + (round % 8) * 300);
        CHECK(pthread_cancel(t) == 0);
        void *ret;
        CHECK(pthread_join(t, &ret) == 0);
        CHECK(ret == PTHREAD_CANCELED);
        OK(cuDevicePrimaryCtxReset(0));
        primary_context(0);
        CHECK_EQ_U(chunks_of(0), 0);
    }
    alarm(0);
}

static const test_case cases[] = {
    {"vmm_before_init", vmm_before_init},
    {"pool_location", pool_location},
    {"wrong_free_resident", wrong_free_resident},
    {"host_mode_free_kind", host_mode_free_kind},
    {"vmm_unmap_last", vmm_unmap_last},
    {"ptsz_free_stream", ptsz_free_stream},
    {"oom_retry_cache", oom_retry_cache},
    {"oom_retry_auto", oom_retry_auto},
    {"oom_retry_off", oom_retry_off},
    {"arena_warning", arena_warning},
    {"vmm_growth_warning", vmm_growth_warning},
    {"fork_hooked_before_init", fork_hooked_before_init},
    {"cancel_in_free", cancel_in_free},
};

TEST_MAIN(cases)
