/*
 * launch_cost_test.c — what a scanned launch costs beyond its work, with
 * liblmshim.so preloaded: in the steady state a launch of many chunks
 * allocates no memory (every malloc, calloc and realloc of the launching
 * thread is counted: wrappers of glibc's allocator here, the sanitizer's
 * allocation hook under AddressSanitizer); a stream's device, which lmshim
 * remembers, is asked again once the stream's handle names a stream of
 * another device; a launch on a capturing stream does no residency work
 * whichever entry point began the capture (lmshim counts the captures
 * begun and skips the driver's capture query while there is none).
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static _Thread_local volatile bool counting;   /* this thread's allocations are counted */
static _Thread_local volatile uint64_t allocations;

#ifdef UNDER_ASAN
/* The sanitizer runtime's (sanitizer/allocator_interface.h, not always installed). */
int __sanitizer_install_malloc_and_free_hooks(void (*on_malloc)(const volatile void *, size_t),
                                              void (*on_free)(const volatile void *));

/* The sanitizer calls this for every allocation. */
static void on_malloc(const volatile void *p, size_t size)
{
    (void)p;
    (void)size;
    if (counting)
        allocations++;
}
static void on_free(const volatile void *p) { (void)p; }

static void count_setup(void) { __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free); }
#else
/* glibc's allocator under its other names: the wrappers below replace
 * malloc, calloc and realloc for the whole process and count. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

void *malloc(size_t n)
{
    if (counting)
        allocations++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (counting)
        allocations++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (counting)
        allocations++;
    return __libc_realloc(p, n);
}

static void count_setup(void) {}
#endif

#define CHUNKS 64

/* wide64(CUdeviceptr p[64]): does nothing (the launch's cost is the point). */
static void wide64(simgpu_launch *l, void **p)
{
    (void)l;
    (void)p;
}

/* The count sees an allocation of this thread (and none of another). */
static void count_works(void)
{
    count_setup();
    allocations = 0;
    counting = true;
    void *volatile p = malloc(24);
    counting = false;
    free(p);
    CHECK_EQ_U(allocations, 1);
}

/* Allocations of this thread during `launches` launches of f with args. */
static uint64_t allocations_in(CUfunction f, void **args, int launches)
{
    allocations = 0;
    counting = true;
    for (int i = 0; i < launches; i++)
        if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS)
            break;
    counting = false;
    return allocations;
}

/* 64 resident managed chunks in one launch: after a few launches (the
 * layout cached, the chunks fetched, the stream's slot made), 1000 more
 * launches allocate nothing more than 1000 launches of one chunk do. */
static void steady_no_malloc(void)
{
    count_works();
    primary_context(0);
    simgpu_kernel k = {"wide64", wide64, 1, {CHUNKS * sizeof(CUdeviceptr)}};
    CUfunction f = sim_function(&k);
    CUdeviceptr table[CHUNKS], one[CHUNKS] = {0};
    for (int i = 0; i < CHUNKS; i++) {
        OK(cuMemAlloc(&table[i], 2 * MiB));
        CHECK(is_managed(table[i]) == 1);
    }
    one[0] = table[0];
    void *args[] = {table}, *args1[] = {one};
    uint64_t before = stats(0).prefetches;
    CHECK(allocations_in(f, args, 20) < 1000000);   /* warm-up */
    CHECK(allocations_in(f, args1, 20) < 1000000);
    OK(cuCtxSynchronize());
    CHECK_EQ_U(stats(0).prefetches - before, CHUNKS);   /* all found, fetched once */
    uint64_t wide = allocations_in(f, args, 1000), narrow = allocations_in(f, args1, 1000);
    OK(cuCtxSynchronize());
    fprintf(stderr, "allocations in 1000 launches: %llu with 64 chunks, %llu with one\n",
            (unsigned long long)wide, (unsigned long long)narrow);
    CHECK(wide <= narrow + 10);
    CHECK_EQ_U(stats(0).prefetches - before, CHUNKS);
    for (int i = 0; i < CHUNKS; i++)
        OK(cuMemFree(table[i]));
}

typedef struct wide_job {
    CUcontext ctx;
    CUfunction f;
    CUdeviceptr *table;
} wide_job;

/* A thread's wide launches: its scratch is made, then freed at its exit. */
static void *wide_thread(void *arg)
{
    wide_job *j = arg;
    void *args[] = {j->table};
    if (cuCtxSetCurrent(j->ctx) != CUDA_SUCCESS)
        return (void *)1;
    for (int i = 0; i < 50; i++)
        if (cuLaunchKernel(j->f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS)
            return (void *)1;
    return NULL;
}

/* Eight threads at once, twice over, launch 64 chunks each and exit: their
 * scratches go with them (the sanitizer build reports a leak otherwise),
 * and every chunk was found (fetched once). */
static void threads_wide(void)
{
    CUcontext ctx = primary_context(0);
    simgpu_kernel k = {"wide64", wide64, 1, {CHUNKS * sizeof(CUdeviceptr)}};
    wide_job j = {.ctx = ctx, .f = sim_function(&k)};
    CUdeviceptr table[CHUNKS];
    for (int i = 0; i < CHUNKS; i++)
        OK(cuMemAlloc(&table[i], 2 * MiB));
    j.table = table;
    uint64_t before = stats(0).prefetches;
    for (int round = 0; round < 2; round++) {
        pthread_t th[8];
        for (int t = 0; t < 8; t++)
            CHECK(pthread_create(&th[t], NULL, wide_thread, &j) == 0);
        for (int t = 0; t < 8; t++) {
            void *r;
            CHECK(pthread_join(th[t], &r) == 0 && r == NULL);
        }
    }
    OK(cuCtxSynchronize());
    CHECK_EQ_U(stats(0).prefetches - before, CHUNKS);
    check_budget(0);
    for (int i = 0; i < CHUNKS; i++)
        OK(cuMemFree(table[i]));
}

/* one_ptr(CUdeviceptr p): does nothing. */
static void one_ptr(simgpu_launch *l, void **p)
{
    (void)l;
    (void)p;
}

/* A launch on a stream of device 0, the stream destroyed, its handle handed
 * to a stream of device 1 (the simulator reuses it): a launch there with a
 * chunk of device 1 is that device's (its chunk fetched there), not the
 * device the handle named before. */
static void stream_device_reuse(void)
{
    CUcontext c0 = primary_context(0), c1;
    OK(cuDevicePrimaryCtxRetain(&c1, 1));
    simgpu_kernel k = {"one_ptr", one_ptr, 1, {sizeof(CUdeviceptr)}};
    CUfunction f = sim_function(&k);
    CUdeviceptr x0, x1;
    OK(cuMemAlloc(&x0, 2 * MiB));
    OK(cuCtxSetCurrent(c1));
    OK(cuMemAlloc(&x1, 2 * MiB));
    CHECK(is_managed(x0) == 1 && is_managed(x1) == 1);
    CUstream a, b;
    OK(cuCtxSetCurrent(c0));
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    void *args0[] = {&x0}, *args1[] = {&x1};
    uint64_t p0 = stats(0).prefetches, p1 = stats(1).prefetches;
    for (int i = 0; i < 3; i++)
        OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, a, args0, NULL));
    OK(cuStreamSynchronize(a));
    CHECK_EQ_U(stats(0).prefetches - p0, 1);
    OK(cuStreamDestroy(a));
    OK(cuCtxSetCurrent(c1));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK(b == a);                                /* the same handle, now device 1's */
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, b, args1, NULL));
    OK(cuStreamSynchronize(b));
    CHECK_EQ_U(stats(1).prefetches - p1, 1);      /* x1 found: the launch is device 1's */
    OK(cuStreamDestroy(b));
    OK(cuCtxSetCurrent(c0));
    OK(cuMemFree(x0));
    OK(cuCtxSetCurrent(c1));
    OK(cuMemFree(x1));
}

typedef struct unload_job {
    CUcontext ctx;
    CUfunction f;
    CUdeviceptr x;
    int failures;
} unload_job;

/* Launches of a kernel whose layout stays cached, while another thread
 * loads and unloads modules. */
static void *launch_loop(void *arg)
{
    unload_job *j = arg;
    void *args[] = {&j->x};
    if (cuCtxSetCurrent(j->ctx) != CUDA_SUCCESS)
        return (void *)1;
    for (int i = 0; i < 20000; i++)
        if (cuLaunchKernel(j->f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS)
            j->failures++;
    return NULL;
}

/* Four threads scan launches (reading the layout cache together) while
 * this one loads a module, launches its kernel and unloads it, 300 times:
 * every unload empties the cache under the launches; nothing deadlocks
 * (the lock prefers writers, and no thread holds it twice), every launch
 * succeeds, and the new module's kernel (a reused handle) is scanned by
 * its own layout each time (its chunk fetched once). */
static void unload_while_launching(void)
{
    CUcontext ctx = primary_context(0);
    simgpu_kernel k = {"one_ptr", one_ptr, 1, {sizeof(CUdeviceptr)}};
    simgpu_kernel big = {"big16", one_ptr, 2, {8, 16}};
    CUfunction f = sim_function(&k);
    OK(simgpu_register_kernel(&big));
    unload_job j[4];
    CUdeviceptr y;
    OK(cuMemAlloc(&y, 2 * MiB));
    for (int t = 0; t < 4; t++) {
        j[t] = (unload_job){.ctx = ctx, .f = f};
        OK(cuMemAlloc(&j[t].x, 2 * MiB));
    }
    uint64_t before = stats(0).prefetches;
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        CHECK(pthread_create(&th[t], NULL, launch_loop, &j[t]) == 0);
    CUdeviceptr none = 0;
    struct { CUdeviceptr p, q; } second = {y, 0};   /* the 16-byte parameter */
    void *args[] = {&none, &second};
    for (int i = 0; i < 300; i++) {
        CUmodule m;
        CUfunction g;
        OK(cuModuleLoadData(&m, "again"));
        OK(cuModuleGetFunction(&g, m, "big16"));
        OK(cuLaunchKernel(g, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
        OK(cuCtxSynchronize());
        OK(cuModuleUnload(m));
    }
    for (int t = 0; t < 4; t++) {
        void *r;
        CHECK(pthread_join(th[t], &r) == 0 && r == NULL);
        CHECK_EQ_U(j[t].failures, 0);
    }
    OK(cuCtxSynchronize());
    CHECK_EQ_U(stats(0).prefetches - before, 5);   /* each chunk found, fetched once */
    for (int t = 0; t < 4; t++)
        OK(cuMemFree(j[t].x));
    OK(cuMemFree(y));
}

/* ---- captures ------------------------------------------------------------ */

typedef CUresult (*begin1_fn)(CUstream);
typedef CUresult (*begin2_fn)(CUstream, CUstreamCaptureMode);

/* The begin entry point of one ABI variant, as cudart would ask for it. */
static void *begin_variant(int version, bool ptsz)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    OK(cuGetProcAddress("cuStreamBeginCapture", &fn, version,
                        ptsz ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT, &q));
    CHECK(fn != NULL && q == CU_GET_PROC_ADDRESS_SUCCESS);
    return fn;
}

/* Launches f on x into the capture on s: lmshim fetches nothing; the
 * capture ends valid, and its graph's launch fetches x. */
static void captured_launch(CUfunction f, CUdeviceptr x, CUstream s)
{
    void *args[] = {&x};
    uint64_t before = stats(0).prefetches;
    CUstreamCaptureStatus st;
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    CHECK_EQ_U(stats(0).prefetches - before, 0);   /* nothing issued on the capturing stream */
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CHECK(g != NULL);
    CUgraphExec e;
    OK(cuGraphInstantiateWithFlags(&e, g, 0));
    OK(cuGraphLaunch(e, s));
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(stats(0).prefetches - before, 1);   /* the graph's launch fetched x */
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
}

typedef struct capture_job {
    CUcontext ctx;
    CUstream s;
    pthread_barrier_t begun, launched;
} capture_job;

/* Another thread's capture: begins (relaxed), lets the main thread launch
 * into it, and waits until it has. */
static void *capture_elsewhere(void *arg)
{
    capture_job *j = arg;
    if (cuCtxSetCurrent(j->ctx) != CUDA_SUCCESS ||
        cuStreamBeginCapture(j->s, CU_STREAM_CAPTURE_MODE_RELAXED) != CUDA_SUCCESS)
        return (void *)1;
    pthread_barrier_wait(&j->begun);
    pthread_barrier_wait(&j->launched);
    return NULL;
}

/* Every begin variant (v1 and v2, legacy and per-thread, as cuGetProcAddress
 * hands them out, and the exported name), a capture begun by another
 * thread, a failed begin and a failed end around an open capture: launches
 * into a capture issue nothing, launches after it work again. */
static void capture_variants(void)
{
    CUcontext ctx = primary_context(0);
    simgpu_kernel k = {"one_ptr", one_ptr, 1, {sizeof(CUdeviceptr)}};
    CUfunction f = sim_function(&k);
    CUstream s, t;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    enum { N = 8 };
    CUdeviceptr x[N];
    for (int i = 0; i < N; i++) {
        OK(cuMemAlloc(&x[i], 2 * MiB));
        CHECK(is_managed(x[i]) == 1);
    }
    OK(((begin1_fn)begin_variant(10000, false))(s));
    captured_launch(f, x[0], s);
    OK(((begin1_fn)begin_variant(10000, true))(s));
    captured_launch(f, x[1], s);
    OK(((begin2_fn)begin_variant(10010, false))(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    captured_launch(f, x[2], s);
    OK(((begin2_fn)begin_variant(10010, true))(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    captured_launch(f, x[3], s);
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    captured_launch(f, x[4], s);
    /* A begin that fails, an end that fails: the open capture still counts. */
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED) != CUDA_SUCCESS);
    CUgraph none = NULL;
    CHECK(cuStreamEndCapture(t, &none) != CUDA_SUCCESS);
    captured_launch(f, x[5], s);
    /* Begun by another thread. */
    capture_job j = {.ctx = ctx, .s = s};
    CHECK(pthread_barrier_init(&j.begun, NULL, 2) == 0 && pthread_barrier_init(&j.launched, NULL, 2) == 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, capture_elsewhere, &j) == 0);
    pthread_barrier_wait(&j.begun);
    void *args[] = {&x[6]};
    uint64_t before = stats(0).prefetches;
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    CHECK_EQ_U(stats(0).prefetches - before, 0);
    pthread_barrier_wait(&j.launched);
    void *r;
    CHECK(pthread_join(th, &r) == 0 && r == NULL);
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));   /* relaxed: any thread may end it */
    OK(cuGraphDestroy(g));
    /* No capture left: a launch works on its stream again. */
    args[0] = &x[7];
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(stats(0).prefetches - before, 1);
    pthread_barrier_destroy(&j.begun);
    pthread_barrier_destroy(&j.launched);
    for (int i = 0; i < N; i++)
        OK(cuMemFree(x[i]));
    OK(cuStreamDestroy(s));
    OK(cuStreamDestroy(t));
}

static const test_case cases[] = {
    {"capture_variants", capture_variants},
    {"steady_no_malloc", steady_no_malloc},
    {"threads_wide", threads_wide},
    {"stream_device_reuse", stream_device_reuse},
    {"unload_while_launching", unload_while_launching},
};

TEST_MAIN(cases)
