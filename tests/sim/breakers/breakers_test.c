/*
 * breakers_test.c — hostile and unusual programs against lmshim's
 * accounting, frees, VMM tracking, pools and launch scans, with liblmshim.so
 * preloaded over the simulated GPU (the sim_* cases: the simulator alone).
 * Each case states the CUDA behaviour it holds lmshim (or the simulator)
 * to; settings in meson.build.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "lmshim.h"
#include "simgpu.h"

static CUmemAllocationProp dev_prop(int device)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
}

/* Device bytes the driver says are in use on the current device. */
static size_t driver_used(void)
{
    size_t f = 0, t = 0;
    OK(cuMemGetInfo(&f, &t));
    return t - f;
}

/* ---- VMM ------------------------------------------------------------------ */

/* cuMemUnmap "cannot unmap a sub-range of an address range mapped by
 * cuMemMap": a range cutting a mapping is refused, and the mapping (and the
 * physical memory's charge) stay. */
static void sim_vmm_partial_unmap(void)
{
    primary_context(0);
    CUmemAllocationProp prop = dev_prop(0);
    CUmemGenericAllocationHandle h;
    OK(cuMemCreate(&h, 64 * MiB, &prop, 0));
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 128 * MiB, 0, 0, 0));
    OK(cuMemMap(va, 64 * MiB, 0, h, 0));
    OK(cuMemRelease(h));
    CHECK_IS(cuMemUnmap(va + 32 * MiB, 32 * MiB), CUDA_ERROR_INVALID_VALUE);   /* its tail */
    CHECK_IS(cuMemUnmap(va, 32 * MiB), CUDA_ERROR_INVALID_VALUE);              /* its head */
    CHECK_IS(cuMemUnmap(va + 32 * MiB, 64 * MiB), CUDA_ERROR_INVALID_VALUE);   /* tail and beyond */
    CHECK_EQ_U(driver_used(), 64 * MiB);
    OK(cuMemUnmap(va, 128 * MiB));      /* the whole mapping and unmapped space around it */
    CHECK_EQ_U(driver_used(), 0);
    OK(cuMemAddressFree(va, 128 * MiB));
}

/* cuMemMap onto a range of which any part is mapped fails, wherever the
 * mapped part is (here in the middle). */
static void sim_vmm_overlap_map(void)
{
    primary_context(0);
    CUmemAllocationProp prop = dev_prop(0);
    CUmemGenericAllocationHandle h1, h2;
    OK(cuMemCreate(&h1, 16 * MiB, &prop, 0));
    OK(cuMemCreate(&h2, 64 * MiB, &prop, 0));
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 64 * MiB, 0, 0, 0));
    OK(cuMemMap(va + 16 * MiB, 16 * MiB, 0, h1, 0));
    CHECK_IS(cuMemMap(va, 64 * MiB, 0, h2, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemRelease(h1));
    OK(cuMemRelease(h2));
    CHECK_EQ_U(driver_used(), 16 * MiB);
    OK(cuMemUnmap(va, 64 * MiB));
    CHECK_EQ_U(driver_used(), 0);
    OK(cuMemAddressFree(va, 64 * MiB));
}

/* The same two under lmshim: what the program holds stays charged, and all
 * of it goes back in the end. */
static void vmm_partial_unmap(void)
{
    sim_vmm_partial_unmap();
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(stats(0).live_chunks[3], 0);
}

static void vmm_overlap_map(void)
{
    sim_vmm_overlap_map();
    CHECK_EQ_U(stats(0).used, 0);
}

/* Hostile VMM orders: a handle mapped twice at once, released before,
 * between and after its unmaps, released twice, garbage handles, unmaps of
 * nothing; the charge always equals what the driver holds. */
static void vmm_orders(void)
{
    primary_context(0);
    CUmemAllocationProp prop = dev_prop(0);
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 256 * MiB, 0, 0, 0));
    CUmemGenericAllocationHandle h;
    OK(cuMemCreate(&h, 32 * MiB, &prop, 0));
    OK(cuMemMap(va, 32 * MiB, 0, h, 0));
    CHECK_IS(cuMemMap(va, 32 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);   /* same place twice */
    OK(cuMemMap(va + 64 * MiB, 32 * MiB, 0, h, 0));
    OK(cuMemUnmap(va, 32 * MiB));
    OK(cuMemRelease(h));
    CHECK_IS(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemMap(va, 32 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);   /* released */
    CHECK_EQ_U(stats(0).used, 32 * MiB);
    OK(cuMemUnmap(va + 64 * MiB, 32 * MiB));
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_IS(cuMemRelease(0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemRelease(0xdead0000), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemMap(va, 32 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(&h, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(NULL, 32 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(&h, 32 * MiB, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    prop.location.id = 7;
    CHECK_IS(cuMemCreate(&h, 32 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    prop.location.id = -1;
    CHECK_IS(cuMemCreate(&h, 32 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ_U(stats(0).used, 0);
    /* Many handles and mappings, torn down in a scrambled order. */
    enum { N = 64 };
    CUmemGenericAllocationHandle hs[N];
    prop.location.id = 0;
    for (int i = 0; i < N; i++) {
        OK(cuMemCreate(&hs[i], 2 * MiB, &prop, 0));
        OK(cuMemMap(va + (uint64_t)i * 2 * MiB, 2 * MiB, 0, hs[i], 0));
        if (i % 3 == 0)
            OK(cuMemMap(va + 128 * MiB + (uint64_t)i * 2 * MiB, 2 * MiB, 0, hs[i], 0));
    }
    CHECK_EQ_U(stats(0).used, N * 2 * MiB);
    for (int i = 0; i < N; i += 2)
        OK(cuMemRelease(hs[i]));
    OK(cuMemUnmap(va, 64 * MiB));
    CHECK_EQ_U(stats(0).used, driver_used());
    for (int i = 1; i < N; i += 2)
        OK(cuMemRelease(hs[i]));
    CHECK_EQ_U(stats(0).used, driver_used());
    OK(cuMemUnmap(va + 128 * MiB, 128 * MiB));
    CHECK_EQ_U(stats(0).used, 64 * MiB);              /* the odd ones' first mappings */
    CHECK_EQ_U(stats(0).used, driver_used());
    OK(cuMemUnmap(va + 64 * MiB, 64 * MiB));
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(driver_used(), 0);
    OK(cuMemAddressFree(va, 256 * MiB));
}

/* Eight threads each creating, mapping (twice), unmapping and releasing in
 * a different order, over their own reservations, 200 rounds: lmshim's
 * charge always ends where the driver's does. */
typedef struct vmm_worker {
    CUcontext ctx;
    int order;
} vmm_worker;

static void *vmm_loop(void *p)
{
    vmm_worker *w = p;
    OK(cuCtxSetCurrent(w->ctx));
    CUmemAllocationProp prop = dev_prop(0);
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0));
    for (int i = 0; i < 200; i++) {
        CUmemGenericAllocationHandle h;
        OK(cuMemCreate(&h, 4 * MiB, &prop, 0));
        OK(cuMemMap(va, 4 * MiB, 0, h, 0));
        OK(cuMemMap(va + 8 * MiB, 2 * MiB, 2 * MiB, h, 0));
        switch ((w->order + i) % 3) {
        case 0:
            OK(cuMemRelease(h));
            OK(cuMemUnmap(va, 4 * MiB));
            OK(cuMemUnmap(va + 8 * MiB, 2 * MiB));
            break;
        case 1:
            OK(cuMemUnmap(va + 8 * MiB, 2 * MiB));
            OK(cuMemRelease(h));
            OK(cuMemUnmap(va, 4 * MiB));
            break;
        default:
            OK(cuMemUnmap(va, 16 * MiB));
            OK(cuMemRelease(h));
            break;
        }
    }
    OK(cuMemAddressFree(va, 16 * MiB));
    return NULL;
}

static void vmm_threads(void)
{
    CUcontext ctx = primary_context(0);
    enum { T = 8 };
    vmm_worker w[T];
    pthread_t t[T];
    for (int i = 0; i < T; i++) {
        w[i] = (vmm_worker){ctx, i};
        CHECK(pthread_create(&t[i], NULL, vmm_loop, &w[i]) == 0);
    }
    for (int i = 0; i < T; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(driver_used(), 0);
    CHECK_EQ_U(stats(0).live_chunks[3], 0);
}

/* ---- pools ---------------------------------------------------------------- */

/* A pool destroyed with live allocations lives on until they are freed
 * (CUDA: "released automatically once there are no more outstanding
 * allocations"); their charges go back at their frees, and a pool made
 * afterwards is charged where it is. SIMGPU_DEVICES=2. */
static void pool_destroyed_live(void)
{
    primary_context(0);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 1;
    CUmemoryPool pool;
    OK(cuMemPoolCreate(&pool, &props));
    CUdeviceptr p[3];
    for (int i = 0; i < 3; i++)
        OK(cuMemAllocFromPoolAsync(&p[i], 128 * MiB, pool, s));
    CHECK_EQ_U(stats(1).used, 384 * MiB);
    OK(cuMemPoolDestroy(pool));
    CHECK_IS(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFreeAsync(p[0], s));
    CHECK_EQ_U(stats(1).used, 256 * MiB);
    /* A device out of range, and a NULL pool. */
    props.location.id = 2;
    CUmemoryPool bad;
    CHECK_IS(cuMemPoolCreate(&bad, &props), CUDA_ERROR_INVALID_DEVICE);
    props.location.id = 0;
    CUmemoryPool pool0;
    OK(cuMemPoolCreate(&pool0, &props));
    CUdeviceptr q;
    OK(cuMemAllocFromPoolAsync(&q, 64 * MiB, pool0, s));
    CHECK_EQ_U(stats(0).used, 64 * MiB);
    CHECK_IS(cuMemAllocFromPoolAsync(&q, 64 * MiB, NULL, s), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFreeAsync(p[1], s));
    OK(cuMemFreeAsync(p[2], s));
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(stats(1).used, 0);
    OK(cuMemPoolDestroy(pool0));   /* q still live */
    OK(cuMemFreeAsync(q, s));
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(stats(0).used, 0);
    OK(cuStreamDestroy(s));
}

/* Forks while other threads are inside the VMM, pool and free paths: the
 * child (which the simulator lets use CUDA) creates, maps, unmaps and
 * releases, allocates from a pool and frees, without a deadlock. */
typedef struct forker {
    CUcontext ctx;
    CUmemoryPool pool;
    volatile int stop;
    int rounds;            /* loops the pool threads finished (atomic) */
} forker;

static void *pool_loop(void *p)
{
    forker *f = p;
    OK(cuCtxSetCurrent(f->ctx));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    while (!f->stop) {
        CUdeviceptr a, b;
        OK(cuMemAllocFromPoolAsync(&a, 8 * MiB, f->pool, s));
        OK(cuMemAlloc(&b, 96 * MiB));
        OK(cuMemFreeAsync(a, s));
        OK(cuMemFree(b));
        __atomic_add_fetch(&f->rounds, 1, __ATOMIC_RELAXED);
    }
    OK(cuStreamSynchronize(s));
    OK(cuStreamDestroy(s));
    return NULL;
}

static void *vmm_forever(void *p)
{
    forker *f = p;
    OK(cuCtxSetCurrent(f->ctx));
    CUmemAllocationProp prop = dev_prop(0);
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0));
    while (!f->stop) {
        CUmemGenericAllocationHandle h;
        OK(cuMemCreate(&h, 2 * MiB, &prop, 0));
        OK(cuMemMap(va, 2 * MiB, 0, h, 0));
        OK(cuMemRelease(h));
        OK(cuMemUnmap(va, 2 * MiB));
    }
    OK(cuMemAddressFree(va, 4 * MiB));
    return NULL;
}

static void fork_in_flight(void)
{
    forker f = {.ctx = primary_context(0)};
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    OK(cuMemPoolCreate(&f.pool, &props));
    pthread_t t[3];
    CHECK(pthread_create(&t[0], NULL, pool_loop, &f) == 0);
    CHECK(pthread_create(&t[1], NULL, vmm_forever, &f) == 0);
    CHECK(pthread_create(&t[2], NULL, pool_loop, &f) == 0);
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer's allocator is not fork-safe while other threads
     * allocate (a child can inherit its lock held and hang, with or without
     * lmshim): under it the children fork after the threads have stopped;
     * the plain build forks them in flight. They run a few rounds first. */
    while (__atomic_load_n(&f.rounds, __ATOMIC_RELAXED) < 8)
        usleep(1000);
    f.stop = 1;
    for (int i = 0; i < 3; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
#endif
    for (int k = 0; k < 20; k++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            alarm(20);
            CUmemAllocationProp prop = dev_prop(0);
            CUmemGenericAllocationHandle h;
            CUdeviceptr va, a;
            CUstream s = NULL;
            if (cuMemAddressReserve(&va, 2 * MiB, 0, 0, 0) || cuMemCreate(&h, 2 * MiB, &prop, 0) ||
                cuMemMap(va, 2 * MiB, 0, h, 0) || cuMemUnmap(va, 2 * MiB) || cuMemRelease(h) ||
                cuMemAllocFromPoolAsync(&a, 8 * MiB, f.pool, s) || cuMemFreeAsync(a, s) ||
                cuMemAlloc(&a, 300 * MiB) || cuMemFree(a))
                _exit(3);
            _exit(0);
        }
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
#if !defined(__SANITIZE_ADDRESS__)
    f.stop = 1;
    for (int i = 0; i < 3; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
#endif
    OK(cuMemPoolDestroy(f.pool));
    CHECK_EQ_U(stats(0).used, 0);
}

/* ---- frees ---------------------------------------------------------------- */

/* Interior pointers, double frees, NULL and garbage: CUDA answers, lmshim's
 * accounting does not move. LMS_LIMIT=1G LMS_FRAC=0.5 LMS_THRESHOLD=64M. */
static void free_garbage(void)
{
    primary_context(0);
    CUdeviceptr d, m;
    OK(cuMemAlloc(&d, 32 * MiB));
    OK(cuMemAlloc(&m, 768 * MiB));       /* managed */
    lms_device_stats s0 = stats(0);
    CHECK_IS(cuMemFree(d + 4096), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemFree(m + 4096), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemFreeHost((void *)(uintptr_t)(d + 8)), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemFree(0xdeadbeef000ull), CUDA_ERROR_INVALID_VALUE);
    lms_device_stats s1 = stats(0);
    CHECK_EQ_U(s1.used, s0.used);
    CHECK_EQ_U(s1.live_chunks[0], s0.live_chunks[0]);
    CHECK_EQ_U(s1.live_chunks[1], s0.live_chunks[1]);
    /* A stream-ordered free on a stream that is no more fails, and changes nothing. */
    CUstream gone;
    OK(cuStreamCreate(&gone, CU_STREAM_NON_BLOCKING));
    OK(cuStreamDestroy(gone));
    CHECK(cuMemFreeAsync(m, gone) != CUDA_SUCCESS);
    CHECK_EQ_U(stats(0).live_chunks[1], s0.live_chunks[1]);
    OK(cuMemFree(d));
    CHECK_IS(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(m));
    CHECK_IS(cuMemFree(m), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ_U(stats(0).used, 0);
    /* Huge requests. */
    CUdeviceptr h;
    CHECK_IS(cuMemAlloc(&h, (size_t)-1), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_IS(cuMemAlloc(&h, (size_t)1 << 62), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ_U(stats(0).used, 0);
}

/* ---- launches --------------------------------------------------------------- */

#define WIDE_BYTES 32760                 /* one parameter near CUDA's 32764-byte limit */
#define WIDE_WORDS (WIDE_BYTES / 8)

/* wide(CUdeviceptr table[WIDE_WORDS]): touches every non-zero entry. */
static void wide(simgpu_launch *l, void **p)
{
    const CUdeviceptr *t = p[0];
    for (int i = 0; i < WIDE_WORDS; i++)
        if (t[i])
            l->access(l, t[i], 4096, SIMGPU_READ);
}

/* pair(CUdeviceptr p, uint64_t q): touches p; q is only a number. */
static void pair(simgpu_launch *l, void **p)
{
    CUdeviceptr d;
    memcpy(&d, p[0], sizeof d);   /* an extra-form buffer may lie anywhere */
    if (d)
        l->access(l, d, 4096, SIMGPU_READ_WRITE);
}

static void register_kernels(void)
{
    static int done;
    if (done++)
        return;
    simgpu_kernel k[] = {{"wide", wide, 1, {WIDE_BYTES}}, {"pair", pair, 2, {8, 8}}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        OK(simgpu_register_kernel(&k[i]));
}

static CUfunction function(CUmodule *m, const char *name)
{
    register_kernels();
    CUfunction f;
    OK(cuModuleLoadData(m, "m"));
    OK(cuModuleGetFunction(&f, *m, name));
    return f;
}

static CUresult launch(CUfunction f, void **args, void **extra)
{
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, extra);
}

/* A managed chunk of `bytes` (the settings send it there). */
static CUdeviceptr managed(size_t bytes)
{
    CUdeviceptr p;
    OK(cuMemAlloc(&p, bytes));
    int m = 0;
    OK(cuPointerGetAttribute(&m, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    CHECK(m == 1);
    return p;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 12,000 live chunks; launches naming 1,000 and then 4,095 others in one
 * parameter (every word), in both forms: every chunk is fetched, and the
 * scan stays fast. LMS_LIMIT=1G LMS_FRAC=0 LMS_THRESHOLD=64K
 * LMS_POLICY=lru; chunks of 64 KiB. */
static void many_chunks(void)
{
    primary_context(0);
    CUmodule m;
    CUfunction f = function(&m, "wide");
    enum { LIVE = 12000 };
    CUdeviceptr *c = malloc(LIVE * sizeof *c);
    CUdeviceptr *table = calloc(WIDE_WORDS, sizeof *table);
    CHECK(c && table);
    double t0 = now_s();
    for (int i = 0; i < LIVE; i++)
        c[i] = managed(64 << 10);
    double t_alloc = now_s() - t0;
    int want[] = {1000, WIDE_WORDS};
    int next = 0;
    for (int k = 0; k < 2; k++) {
        for (int form = 0; form < 2; form++) {
            memset(table, 0, WIDE_BYTES);
            for (int i = 0; i < want[k]; i++)
                table[i] = c[next++] + (uint64_t)(i % 7) * 512;   /* interior too */
            uint64_t before = stats(0).prefetches;
            t0 = now_s();
            size_t bytes = WIDE_BYTES;
            void *args[] = {table};
            void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, table, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                             CU_LAUNCH_PARAM_END};
            OK(launch(f, form ? NULL : args, form ? extra : NULL));
            double t_launch = now_s() - t0;
            OK(cuCtxSynchronize());
            CHECK_EQ_U(stats(0).prefetches - before, want[k]);
            fprintf(stderr, "%d chunks, form %d: launch %.3f s (12,000 allocations %.3f s)\n", want[k],
                    form, t_launch, t_alloc);
            CHECK(t_launch < 2.0);
        }
    }
    t0 = now_s();
    for (int i = 0; i < LIVE; i++)
        OK(cuMemFree(c[LIVE - 1 - i]));
    fprintf(stderr, "12,000 frees: %.3f s\n", now_s() - t0);
    CHECK_EQ_U(stats(0).used, 0);
    OK(cuModuleUnload(m));
    free(c);
    free(table);
}

/* Extra-form buffers of odd sizes and alignments, the size at an odd
 * address, NULL entries: a chunk pointer in the buffer is found wherever the
 * buffer lies, nothing is read misaligned (UBSan halts on it in the
 * sanitized build) or past the given size, and the driver answers what is
 * wrong. */
static void extra_forms(void)
{
    primary_context(0);
    CUmodule m;
    CUfunction f = function(&m, "pair");
    CUdeviceptr a = managed(1 * MiB);
    char *raw = malloc(64);
    CHECK(raw != NULL);
    char *buf = raw + 1;                        /* unaligned */
    memset(raw, 0, 64);
    memcpy(buf, &a, 8);
    uint64_t q = 0;
    memcpy(buf + 8, &q, 8);
    size_t sizes[] = {16, 17, 23};
    for (int i = 0; i < 3; i++) {
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &sizes[i],
                         CU_LAUNCH_PARAM_END};
        uint64_t before = stats(0).launches_scanned;
        CUresult r = launch(f, NULL, extra);
        CHECK(r == CUDA_SUCCESS || r == CUDA_ERROR_INVALID_VALUE);
        CHECK(stats(0).launches_scanned >= before);
    }
    /* The size itself at an odd address (a packed structure). */
    char packed[1 + sizeof(size_t)];
    size_t sz16 = 16;
    memcpy(packed + 1, &sz16, sizeof sz16);
    void *odd_size[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, packed + 1,
                        CU_LAUNCH_PARAM_END};
    uint64_t fetched = stats(0).prefetches;
    OK(cuMemFree(a));
    a = managed(1 * MiB);
    memcpy(buf, &a, 8);
    OK(launch(f, NULL, odd_size));
    OK(cuCtxSynchronize());
    CHECK_EQ_U(stats(0).prefetches - fetched, 1);
    size_t sixteen = 16;
    void *no_buf[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, NULL, CU_LAUNCH_PARAM_BUFFER_SIZE, &sixteen,
                      CU_LAUNCH_PARAM_END};
    CHECK(launch(f, NULL, no_buf) != CUDA_SUCCESS);
    void *no_size[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, NULL,
                       CU_LAUNCH_PARAM_END};
    CHECK(launch(f, NULL, no_size) != CUDA_SUCCESS);
    void *empty[] = {CU_LAUNCH_PARAM_END};
    CHECK(launch(f, NULL, empty) != CUDA_SUCCESS);
    void *args[] = {&a, &q};
    CHECK(launch(f, args, no_buf) != CUDA_SUCCESS);   /* both forms at once */
    CHECK(launch(NULL, args, NULL) != CUDA_SUCCESS);
    CHECK(launch((CUfunction)(uintptr_t)0x1230, args, NULL) != CUDA_SUCCESS);   /* garbage */
    CUlibrary lib;
    CUkernel k;
    OK(cuLibraryLoadData(&lib, "l", NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k, lib, "pair"));
    OK(launch((CUfunction)(void *)k, args, NULL));
    OK(cuCtxSynchronize());
    OK(cuLibraryUnload(lib));
    CHECK(launch((CUfunction)(void *)k, args, NULL) != CUDA_SUCCESS);   /* its library is gone */
    OK(cuCtxSynchronize());
    OK(cuMemFree(a));
    OK(cuModuleUnload(m));
    free(raw);
}

/* Threads launching a kernel of a module that stays loaded, others loading,
 * launching and unloading modules of their own, and others allocating and
 * freeing chunks whose addresses the launches carry as plain numbers: every
 * launch succeeds and finds its chunk. Under ASan: no use after free. */
typedef struct race {
    CUcontext ctx;
    CUfunction f;               /* of the module that stays */
    CUdeviceptr mine[4];        /* one chunk per launching thread */
    volatile CUdeviceptr other; /* freed and reallocated meanwhile */
    volatile int stop;
    int launches;
    bool until_stop;            /* launchers go on past `launches` until stop */
    int hold, held;             /* AddressSanitizer builds: launchers wait while hold (held: how many) */
} race;

static void *launcher(void *p)
{
    race *r = p;
    static int next;
    int me = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
    OK(cuCtxSetCurrent(r->ctx));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < r->launches || (r->until_stop && !r->stop); i++) {
#ifdef __SANITIZE_ADDRESS__
        /* AddressSanitizer's allocator is not fork-safe: a child forked
         * while this thread allocates can hang in malloc (threads_and_fork
         * did, once in CI). Around each fork this thread waits here,
         * outside lmshim; without the sanitizer it launches on. */
        if (__atomic_load_n(&r->hold, __ATOMIC_ACQUIRE)) {
            __atomic_fetch_add(&r->held, 1, __ATOMIC_ACQ_REL);
            while (__atomic_load_n(&r->hold, __ATOMIC_ACQUIRE))
                usleep(100);
            __atomic_fetch_sub(&r->held, 1, __ATOMIC_ACQ_REL);
        }
#endif
        CUdeviceptr a = r->mine[me];
        uint64_t q = r->other;
        void *args[] = {&a, &q};
        OK(cuLaunchKernel(r->f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
        if (i % 16 == 0)
            OK(cuStreamSynchronize(s));
    }
    OK(cuStreamSynchronize(s));
    OK(cuStreamDestroy(s));
    return NULL;
}

static void *unloader(void *p)
{
    race *r = p;
    OK(cuCtxSetCurrent(r->ctx));
    CUdeviceptr c = managed(1 * MiB);
    while (!r->stop) {
        CUmodule m;
        CUfunction g = function(&m, "pair");
        uint64_t q = 0;
        void *args[] = {&c, &q};
        OK(launch(g, args, NULL));
        OK(cuCtxSynchronize());
        CUlibrary l;
        CUkernel k;
        OK(cuLibraryLoadData(&l, "l", NULL, NULL, 0, NULL, NULL, 0));
        OK(cuLibraryGetKernel(&k, l, "wide"));
        OK(cuModuleUnload(m));
        OK(cuLibraryUnload(l));
    }
    OK(cuMemFree(c));
    return NULL;
}

static void *churner(void *p)
{
    race *r = p;
    OK(cuCtxSetCurrent(r->ctx));
    while (!r->stop) {
        CUdeviceptr c = managed(1 * MiB);
        r->other = c + 64;
        sched_yield();
        r->other = 0;
        OK(cuMemFree(c));
    }
    return NULL;
}

static void launch_races(void)
{
    race r = {.ctx = primary_context(0), .launches = 3000};
    CUmodule m;
    r.f = function(&m, "pair");
    for (int i = 0; i < 4; i++)
        r.mine[i] = managed(1 * MiB);
    pthread_t l[4], u, c;
    CHECK(pthread_create(&u, NULL, unloader, &r) == 0);
    CHECK(pthread_create(&c, NULL, churner, &r) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&l[i], NULL, launcher, &r) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_join(l[i], NULL) == 0);
    r.stop = 1;
    CHECK(pthread_join(u, NULL) == 0);
    CHECK(pthread_join(c, NULL) == 0);
    OK(cuCtxSynchronize());
    lms_device_stats s = stats(0);
    CHECK(s.launches_scanned >= 1600);
    CHECK_EQ_U(s.budget_violations, 0);
    for (int i = 0; i < 4; i++)
        OK(cuMemFree(r.mine[i]));
    CHECK_EQ_U(stats(0).used, 0);
    OK(cuModuleUnload(m));
}

/* Threads that launch once and exit, 200 of them; and a fork while other
 * threads launch: the child launches, allocates and frees, and exits
 * (with AddressSanitizer the launchers wait outside lmshim around each
 * fork: see launcher()). */
static void *launch_once(void *p)
{
    race *r = p;
    OK(cuCtxSetCurrent(r->ctx));
    CUdeviceptr a = r->mine[0];
    uint64_t q = 0;
    void *args[] = {&a, &q};
    OK(launch(r->f, args, NULL));
    return NULL;
}

static void threads_and_fork(void)
{
    race r = {.ctx = primary_context(0), .launches = 2000, .until_stop = true};
    CUmodule m;
    r.f = function(&m, "pair");
    for (int i = 0; i < 4; i++)
        r.mine[i] = managed(1 * MiB);
    for (int i = 0; i < 200; i++) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, launch_once, &r) == 0);
        CHECK(pthread_join(t, NULL) == 0);
    }
    OK(cuCtxSynchronize());
    pthread_t l[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&l[i], NULL, launcher, &r) == 0);
    for (int k = 0; k < 5; k++) {
#ifdef __SANITIZE_ADDRESS__
        __atomic_store_n(&r.hold, 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(&r.held, __ATOMIC_ACQUIRE) < 2)
            usleep(100);
#endif
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            alarm(20);
            CUdeviceptr a = r.mine[3], b;
            uint64_t q = 0;
            void *args[] = {&a, &q};
            if (launch(r.f, args, NULL) != CUDA_SUCCESS || cuCtxSynchronize() != CUDA_SUCCESS ||
                cuMemAlloc(&b, 128 * MiB) != CUDA_SUCCESS || cuMemFree(b) != CUDA_SUCCESS)
                _exit(3);
            _exit(0);
        }
        __atomic_store_n(&r.hold, 0, __ATOMIC_RELEASE);
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    r.stop = 1;
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(l[i], NULL) == 0);
    OK(cuCtxSynchronize());
    for (int i = 0; i < 4; i++)
        OK(cuMemFree(r.mine[i]));
    OK(cuModuleUnload(m));
}
/* A program that has taken every pthread key (PTHREAD_KEYS_MAX) before
 * its first scanned launch: lmshim cannot have its per-thread scratch
 * freed at thread exit, so it must not use one; above all it must not write
 * a key it does not own (the program's values stay), and the launch works.
 * The same for the simulator's per-thread default stream. */
enum { KEYS = 2048 };
static pthread_key_t keys[KEYS];
static int nkeys;
static int sentinel[KEYS];

static void *launch_with_keys(void *p)
{
    race *r = p;
    OK(cuCtxSetCurrent(r->ctx));
    for (int i = 0; i < nkeys; i++)
        CHECK(pthread_setspecific(keys[i], &sentinel[i]) == 0);
    CUdeviceptr a = r->mine[0];
    uint64_t q = 0;
    void *args[] = {&a, &q};
    OK(launch(r->f, args, NULL));
    OK(cuLaunchKernel(r->f, 1, 1, 1, 32, 1, 1, 0, CU_STREAM_PER_THREAD, args, NULL));
    OK(cuCtxSynchronize());
    for (int i = 0; i < nkeys; i++)
        CHECK(pthread_getspecific(keys[i]) == &sentinel[i]);
    return NULL;
}

static void launch_keys_exhausted(void)
{
    race r = {.ctx = primary_context(0)};
    CUmodule m;
    r.f = function(&m, "pair");
    r.mine[0] = managed(1 * MiB);
    while (nkeys < KEYS && pthread_key_create(&keys[nkeys], NULL) == 0)
        nkeys++;
    CHECK(nkeys < KEYS);   /* the limit was reached */
    bool own_zero = false;
    for (int i = 0; i < nkeys; i++)
        own_zero |= keys[i] == 0;
    if (!own_zero)         /* under a sanitizer runtime that took key 0 first */
        fprintf(stderr, "key 0 is not the program's: a write to it is not seen here\n");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, launch_with_keys, &r) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    launch_with_keys(&r);
    OK(cuMemFree(r.mine[0]));
    OK(cuModuleUnload(m));
}

/* A racy program: one thread launches a kernel while another unloads and
 * reloads its module (the handle value comes back). CUDA answers each
 * launch SUCCESS or INVALID_HANDLE; lmshim adds no crash, no use after free
 * (ASan), and no other answer. */
typedef struct unload_race {
    CUcontext ctx;
    volatile CUfunction f;
    CUdeviceptr c;
    volatile int stop;
} unload_race;

static void *launch_racy(void *p)
{
    unload_race *u = p;
    OK(cuCtxSetCurrent(u->ctx));
    for (int i = 0; i < 3000; i++) {
        CUdeviceptr a = u->c;
        uint64_t q = 0;
        void *args[] = {&a, &q};
        CUresult r = launch(u->f, args, NULL);
        CHECK(r == CUDA_SUCCESS || r == CUDA_ERROR_INVALID_HANDLE);
    }
    OK(cuCtxSynchronize());
    return NULL;
}

static void unload_own_kernel_race(void)
{
    unload_race u = {.ctx = primary_context(0)};
    u.c = managed(1 * MiB);
    CUmodule m;
    u.f = function(&m, "pair");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, launch_racy, &u) == 0);
    for (int i = 0; i < 300; i++) {
        OK(cuModuleUnload(m));
        CUfunction g;
        OK(cuModuleLoadData(&m, "m"));
        OK(cuModuleGetFunction(&g, m, "pair"));
        u.f = g;
    }
    CHECK(pthread_join(t, NULL) == 0);
    OK(cuModuleUnload(m));
    OK(cuMemFree(u.c));
    CHECK_EQ_U(stats(0).used, 0);
}

/* ---- the first out-of-memory answer (LMS_OOM_RETRY) ------------------------ */

/* A stream-ordered request is never answered out-of-memory and is never
 * the retry of one: placing one of the same size on the device must not
 * settle the size a caching allocator was answered for, or its one retry
 * is answered out-of-memory again. LMS_OOM_RETRY=on LMS_LIMIT=1G LMS_FRAC=1
 * LMS_THRESHOLD=64M. */
static void oom_retry_async_same_size(void)
{
    primary_context(0);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr live, cached[3], x, a, big;
    OK(cuMemAlloc(&live, 128 * MiB));
    for (int i = 0; i < 3; i++)
        OK(cuMemAlloc(&cached[i], 128 * MiB));
    OK(cuMemAlloc(&x, 512 * MiB));                           /* the budget is full */
    CHECK_IS(cuMemAlloc(&big, 512 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemFree(x));
    OK(cuMemAllocAsync(&a, 512 * MiB, s));                   /* another user, same size */
    CHECK_EQ_U(stats(0).used, 1 * GiB);
    for (int i = 0; i < 3; i++)                              /* the allocator frees its cache */
        OK(cuMemFree(cached[i]));
    OK(cuMemAlloc(&big, 512 * MiB));                         /* its retry */
    CHECK_EQ_U(stats(0).oom_failures, 1);
    OK(cuMemFreeAsync(a, s));
    OK(cuStreamSynchronize(s));
    OK(cuMemFree(big));
    OK(cuMemFree(live));
    CHECK_EQ_U(stats(0).used, 0);
    OK(cuStreamDestroy(s));
}

/* Threads on two devices, four per device, each a caching allocator of its
 * own size: every request is answered out-of-memory at most once, and the
 * retry succeeds. Stream-ordered requests alongside are never answered so.
 * LMS_OOM_RETRY=on LMS_LIMIT=1G LMS_FRAC=1 LMS_THRESHOLD=64M
 * SIMGPU_DEVICES=2. */
typedef struct cacher {
    CUcontext ctx;
    size_t size;
    int ooms;
    bool async;
} cacher;

static void *cache_loop(void *p)
{
    cacher *c = p;
    OK(cuCtxSetCurrent(c->ctx));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr cache[4];
    int n = 0;
    for (int i = 0; i < 40; i++) {
        CUdeviceptr p2;
        if (c->async) {
            OK(cuMemAllocAsync(&p2, c->size, s));
            OK(cuMemFreeAsync(p2, s));
            continue;
        }
        CUresult r = cuMemAlloc(&p2, c->size);
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            c->ooms++;
            while (n > 0)
                OK(cuMemFree(cache[--n]));
            OK(cuMemAlloc(&p2, c->size));   /* the retry never fails */
        } else {
            OK(r);
        }
        if (n == 4)
            OK(cuMemFree(cache[--n]));
        cache[n++] = p2;                    /* "freed" into the cache */
        sched_yield();
    }
    while (n > 0)
        OK(cuMemFree(cache[--n]));
    OK(cuStreamSynchronize(s));
    OK(cuStreamDestroy(s));
    return NULL;
}

static void oom_retry_threads(void)
{
    OK(cuInit(0));
    CUcontext ctx[2];
    OK(cuDevicePrimaryCtxRetain(&ctx[0], 0));
    OK(cuDevicePrimaryCtxRetain(&ctx[1], 1));
    enum { T = 10 };
    cacher c[T];
    pthread_t t[T];
    for (int i = 0; i < T; i++) {
        c[i] = (cacher){.ctx = ctx[i % 2], .size = (96 + 32 * (size_t)(i / 2)) * MiB, .async = i >= 8};
        CHECK(pthread_create(&t[i], NULL, cache_loop, &c[i]) == 0);
    }
    int ooms = 0;
    for (int i = 0; i < T; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
        ooms += c[i].ooms;
    }
    CHECK(ooms > 0);
    CHECK_EQ_U(stats(0).oom_failures + stats(1).oom_failures, ooms);
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(stats(1).used, 0);
}

/* LMS_OOM_RETRY=auto with a caching allocator's library loaded: only its
 * own requests get the out-of-memory answer. Any other code in the process
 * (cuBLAS or cuDNN creating a handle, NCCL, an extension calling cudaMalloc)
 * does not retry, and would die of it; its requests fall back as in a plain
 * CUDA program. The stand-in library is in FAKE_C10_ALLOC.
 * LMS_LIMIT=1G LMS_FRAC=1 LMS_THRESHOLD=64M. */
static void oom_retry_other_caller(void)
{
    primary_context(0);
    void *lib = dlopen(getenv("FAKE_C10_ALLOC"), RTLD_NOW);
    CHECK(lib != NULL);
    CUresult (*c10_alloc)(CUdeviceptr *, size_t) =
        (CUresult (*)(CUdeviceptr *, size_t))dlsym(lib, "lms_test_c10_alloc");
    CHECK(c10_alloc != NULL);
    CUdeviceptr a, b, c, d;
    OK(c10_alloc(&a, 768 * MiB));
    OK(cuMemAlloc(&b, 512 * MiB));                   /* not the allocator's: falls back */
    CHECK_EQ_U(stats(0).oom_failures, 0);
    OK(cuMemAlloc(&d, 1 * MiB));                     /* small, device full: falls back too */
    CHECK_IS(c10_alloc(&c, 256 * MiB), CUDA_ERROR_OUT_OF_MEMORY);   /* the allocator's first trip */
    OK(c10_alloc(&c, 256 * MiB));                    /* its retry */
    CHECK_EQ_U(stats(0).oom_failures, 1);
    OK(cuMemFree(a));
    OK(cuMemFree(b));
    OK(cuMemFree(c));
    OK(cuMemFree(d));
    CHECK_EQ_U(stats(0).used, 0);
}

/* ---- pitched allocations whose size does not fit in size_t ------------------ */

/* width rounded to the pitch, times height, past 2^64: no allocation can
 * hold it, so none is made (a wrapped size would be a small allocation the
 * program takes for a huge one). SIMGPU_MEM=8G. */
static void sim_pitch_overflow(void)
{
    primary_context(0);
    CUdeviceptr p = 0;
    size_t pitch = 0;
    CHECK(cuMemAllocPitch(&p, &pitch, (size_t)1 << 32, ((size_t)1 << 32) + 1, 4) != CUDA_SUCCESS);
    CHECK(cuMemAllocPitch(&p, &pitch, SIZE_MAX - 100, 1, 4) != CUDA_SUCCESS);
    CHECK(cuMemAllocPitch(&p, &pitch, (size_t)1 << 20, ((size_t)1 << 44) + 2, 4) != CUDA_SUCCESS);
    OK(cuMemAllocPitch(&p, &pitch, 1000, 1000, 4));
    CHECK_EQ_U(pitch, 1024);
    OK(cuMemFree(p));
}

/* The same under lmshim, whose fallback would otherwise make the wrapped
 * size in managed memory. LMS_LIMIT=1G LMS_THRESHOLD=64M LMS_FRAC=0.5. */
static void pitch_overflow(void)
{
    sim_pitch_overflow();
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(stats(0).live_chunks[1], 0);
}

/* LMS_ON_OOM=fail refuses a cuMemCreate past the budget, but only one that
 * CUDA would make: bad arguments get CUDA's answer, whatever the size.
 * LMS_LIMIT=1G LMS_ON_OOM=fail. */
static void vmm_fail_arguments(void)
{
    primary_context(0);
    CUmemAllocationProp prop = dev_prop(0);
    CUmemGenericAllocationHandle h;
    CHECK_IS(cuMemCreate(NULL, 2 * GiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(&h, 2 * GiB + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);   /* granularity */
    CHECK_IS(cuMemCreate(&h, 2 * GiB, &prop, 1), CUDA_ERROR_INVALID_VALUE);          /* flags */
    CHECK_IS(cuMemCreate(&h, 2 * GiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);          /* a good one */
    OK(cuMemCreate(&h, 512 * MiB, &prop, 0));
    CHECK_EQ_U(stats(0).used, 512 * MiB);
    CHECK_EQ_U(driver_used(), 512 * MiB);
    OK(cuMemRelease(h));
    CHECK_EQ_U(stats(0).used, 0);
}

static const test_case cases[] = {
    {"sim_vmm_partial_unmap", sim_vmm_partial_unmap},
    {"sim_vmm_overlap_map", sim_vmm_overlap_map},
    {"vmm_partial_unmap", vmm_partial_unmap},
    {"vmm_overlap_map", vmm_overlap_map},
    {"vmm_orders", vmm_orders},
    {"vmm_fail_arguments", vmm_fail_arguments},
    {"vmm_threads", vmm_threads},
    {"pool_destroyed_live", pool_destroyed_live},
    {"fork_in_flight", fork_in_flight},
    {"free_garbage", free_garbage},
    {"many_chunks", many_chunks},
    {"extra_forms", extra_forms},
    {"launch_races", launch_races},
    {"threads_and_fork", threads_and_fork},
    {"launch_keys_exhausted", launch_keys_exhausted},
    {"unload_own_kernel_race", unload_own_kernel_race},
    {"oom_retry_async_same_size", oom_retry_async_same_size},
    {"oom_retry_threads", oom_retry_threads},
    {"oom_retry_other_caller", oom_retry_other_caller},
    {"sim_pitch_overflow", sim_pitch_overflow},
    {"pitch_overflow", pitch_overflow},
};
TEST_MAIN(cases)
