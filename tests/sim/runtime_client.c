/*
 * runtime_client.c — a plain C program that uses only the CUDA runtime API
 * (cuda_runtime_api.h) and the simulator's kernel header, linked to
 * libcudart alone, run with build/sim on LD_LIBRARY_PATH. Results are
 * checked against the CPU.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

#include "../common/check.h"
#include "simgpu.h"

/* saxpy(n, a, x, y): y = a*x + y */
static void saxpy(simgpu_launch *l, void **p)
{
    int n = *(int *)p[0];
    float a = *(float *)p[1];
    const float *x = *(float **)p[2];
    float *y = *(float **)p[3];
    l->access(l, (uint64_t)(uintptr_t)x, (size_t)n * 4, SIMGPU_READ);
    l->access(l, (uint64_t)(uintptr_t)y, (size_t)n * 4, SIMGPU_READ_WRITE);
    for (int i = 0; i < n; i++)
        y[i] = a * x[i] + y[i];
}

static void register_saxpy(void)
{
    simgpu_kernel k = {"saxpy", saxpy, 4, {4, 4, 8, 8}};
    OK(simgpu_register_kernel(&k));
}

static void vector_math(void)
{
    enum { N = 1 << 16 };
    float *hx = malloc(N * 4), *hy = malloc(N * 4), *out = malloc(N * 4);
    for (int i = 0; i < N; i++) {
        hx[i] = (float)i;
        hy[i] = 1.0f;
    }
    float *x, *y;
    OK(cudaMalloc((void **)&x, N * 4));
    OK(cudaMalloc((void **)&y, N * 4));
    register_saxpy();
    OK(cudaMemcpy(x, hx, N * 4, cudaMemcpyHostToDevice));
    OK(cudaMemcpy(y, hy, N * 4, cudaMemcpyHostToDevice));
    int n = N;
    float a = 2.0f;
    void *args[] = {&n, &a, &x, &y};
    dim3 grid = {N / 256, 1, 1}, block = {256, 1, 1};
    OK(cudaLaunchKernel((const void *)saxpy, grid, block, args, 0, NULL));
    OK(cudaDeviceSynchronize());
    OK(cudaMemcpy(out, y, N * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        CHECK(out[i] == 2.0f * hx[i] + 1.0f);
    OK(cudaMemset(y, 0, N * 4));
    OK(cudaMemcpy(out, y, 16, cudaMemcpyDeviceToHost));
    CHECK(out[0] == 0.0f && out[3] == 0.0f);
    CHECK_IS(cudaMemcpy(out, y, 16, (enum cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
    OK(cudaFree(x));
    OK(cudaFree(y));
    free(hx);
    free(hy);
    free(out);
}

static void managed_and_info(void)
{
    size_t f0, f1, t;
    OK(cudaMemGetInfo(&f0, &t));
    struct cudaDeviceProp prop;
    OK(cudaGetDeviceProperties(&prop, 0));
    CHECK(prop.totalGlobalMem == t && prop.managedMemory == 1 && prop.major == 9);
    void *d, *m, *h;
    OK(cudaMalloc(&d, 64 << 20));
    OK(cudaMemGetInfo(&f1, &t));
    CHECK(f0 - f1 == (64u << 20));
    OK(cudaMallocManaged(&m, 1 << 20, cudaMemAttachGlobal));
    OK(cudaMallocHost(&h, 4096));
    struct cudaPointerAttributes a;
    OK(cudaPointerGetAttributes(&a, d));
    CHECK(a.type == cudaMemoryTypeDevice && a.device == 0);
    OK(cudaPointerGetAttributes(&a, m));
    CHECK(a.type == cudaMemoryTypeManaged);
    OK(cudaPointerGetAttributes(&a, h));
    CHECK(a.type == cudaMemoryTypeHost);
    int local;
    OK(cudaPointerGetAttributes(&a, &local));
    CHECK(a.type == cudaMemoryTypeUnregistered);
    struct cudaMemLocation loc = {.type = cudaMemLocationTypeDevice, .id = 0};
    OK(cudaMemPrefetchAsync(m, 1 << 20, loc, 0, NULL));
    OK(cudaMemAdvise(m, 1 << 20, cudaMemAdviseSetAccessedBy, loc));
    OK(cudaFree(d));
    OK(cudaFree(m));
    OK(cudaFreeHost(h));
    OK(cudaFree(NULL));
}

static void errors(void)
{
    int local;
    CHECK_IS(cudaFree(&local), cudaErrorInvalidValue);
    CHECK_IS(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_IS(cudaGetLastError(), cudaSuccess);
    void *p;
    CHECK_IS(cudaMalloc(&p, (size_t)1 << 40), cudaErrorMemoryAllocation);
    CHECK_IS(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    CHECK(strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);
    CHECK(strcmp(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue") == 0);
    CHECK_IS(cudaSetDevice(7), cudaErrorInvalidDevice);
    int v = 0;
    OK(cudaDriverGetVersion(&v));
    CHECK(v == 13000);
    CHECK_IS(cudaLaunchKernel((const void *)errors, (dim3){1, 1, 1}, (dim3){1, 1, 1}, NULL, 0, NULL),
             cudaErrorInvalidDeviceFunction);
}

static void streams_events(void)
{
    register_saxpy();
    cudaStream_t s1, s2;
    cudaEvent_t e0, e1;
    OK(cudaStreamCreate(&s1));
    OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    OK(cudaEventCreate(&e0));
    OK(cudaEventCreate(&e1));
    void *d, *pool_mem;
    OK(cudaMallocAsync(&d, 256 << 20, s1));
    void *h;
    OK(cudaMallocHost(&h, 256 << 20));
    OK(cudaEventRecord(e0, s1));
    OK(cudaMemcpyAsync(d, h, 256 << 20, cudaMemcpyHostToDevice, s1));
    OK(cudaEventRecord(e1, s1));
    OK(cudaStreamWaitEvent(s2, e1, 0));
    OK(cudaEventSynchronize(e1));
    float ms = 0;
    OK(cudaEventElapsedTime(&ms, e0, e1));
    CHECK_NEAR(ms, (256.0 * (1 << 20)) / 55.0 / 1e6, 1e-4);   /* 55 GB/s link */
    cudaMemPool_t pool;
    OK(cudaDeviceGetDefaultMemPool(&pool, 0));
    OK(cudaMallocFromPoolAsync(&pool_mem, 1 << 20, pool, s2));
    OK(cudaFreeAsync(pool_mem, s1));
    OK(cudaFreeAsync(d, s2));
    OK(cudaStreamSynchronize(s2));
    OK(cudaStreamQuery(s1));
    OK(cudaEventQuery(e1));
    OK(cudaFreeHost(h));
    OK(cudaEventDestroy(e0));
    OK(cudaEventDestroy(e1));
    OK(cudaStreamDestroy(s1));
    OK(cudaStreamDestroy(s2));
}

/* With a spy library preloaded (tests/sim/spy_*.c), checks what it saw. */
static void spy(void)
{
    const char *expect = getenv("SPY_EXPECT");
    CHECK(expect != NULL);
    void *d;
    OK(cudaMalloc(&d, 1 << 20));
    OK(cudaFree(d));
    int (*seen)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "spy_seen");
    CHECK(seen != NULL);
    if (strcmp(expect, "lookup") == 0)
        CHECK(seen() >= 1);   /* the runtime asked dlsym for cuGetProcAddress_v2 */
    else
        CHECK(seen() == 0);   /* an exported cuMemAlloc_v2 alone is never called */
}

/* Two devices through cudaSetDevice (SIMGPU_DEVICES=2). */
static void two_devices(void)
{
    int n = 0, cur = -1;
    OK(cudaGetDeviceCount(&n));
    CHECK(n == 2);
    void *a, *b;
    OK(cudaMalloc(&a, 1 << 20));
    OK(cudaSetDevice(1));
    OK(cudaGetDevice(&cur));
    CHECK(cur == 1);
    OK(cudaMalloc(&b, 1 << 20));
    struct cudaPointerAttributes at;
    OK(cudaPointerGetAttributes(&at, a));
    CHECK(at.device == 0);
    OK(cudaPointerGetAttributes(&at, b));
    CHECK(at.device == 1);
    size_t f, t;
    OK(cudaMemGetInfo(&f, &t));
    CHECK(t - f == (1u << 20));
    OK(cudaFree(b));
    OK(cudaSetDevice(0));
    OK(cudaFree(a));
}

/* Holds 64 MiB for 2.2 s: long enough for status lines. */
static void alloc_and_wait(void)
{
    void *p;
    OK(cudaMalloc(&p, 64 << 20));
    struct timespec ts = {2, 200000000};
    while (nanosleep(&ts, &ts) != 0)
        ;
    OK(cudaFree(p));
}

/* (b) the shared runtime in front of lmshim: LMS_LIMIT=1G LMS_FRAC=0.5
 * LMS_THRESHOLD=64M; placement read through cudaPointerGetAttributes. */
static void shim_placement(void)
{
    void *p[4];
    for (int i = 0; i < 4; i++) {
        OK(cudaMalloc(&p[i], 256 << 20));
        struct cudaPointerAttributes a;
        OK(cudaPointerGetAttributes(&a, p[i]));
        CHECK(a.type == (i < 2 ? cudaMemoryTypeDevice : cudaMemoryTypeManaged));
        size_t f, t;
        OK(cudaMemGetInfo(&f, &t));
        CHECK(t == (1u << 30) && f <= t);
        OK(cudaMemset(p[i], i + 1, 4096));
        unsigned char b[4096];
        OK(cudaMemcpy(b, p[i], sizeof b, cudaMemcpyDeviceToHost));
        CHECK(b[0] == i + 1 && b[4095] == i + 1);
    }
    for (int i = 0; i < 4; i++)
        OK(cudaFree(p[i]));
    size_t f, t;
    OK(cudaMemGetInfo(&f, &t));
    CHECK(f == t);
}

static const test_case cases[] = {
    {"shim_placement", shim_placement},
    {"two_devices", two_devices},
    {"alloc_and_wait", alloc_and_wait},
    {"vector_math", vector_math},
    {"managed_and_info", managed_and_info},
    {"errors", errors},
    {"streams_events", streams_events},
    {"spy", spy},
};

TEST_MAIN(cases)
