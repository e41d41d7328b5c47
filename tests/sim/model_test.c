/*
 * model_test.c — simulated kernels (registration, launch in every form,
 * parameter layouts) and the residency and time model, with counters
 * checked against hand-computed values (docs/SIMULATOR.md has the formulas).
 * One case per meson test.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#include "../common/check.h"
#include "../common/context.h"
#include "../common/shim.h"
#include "simgpu.h"

#define BLOCK (2 * MiB)
#define LINK_NS(bytes) ((double)(bytes) / 55.0)                   /* 55 GB/s */
#define FAULT_NS(bytes) (30e3 + (double)(bytes) / 10.0)           /* 30 us + 10 GB/s */

/* vadd(a, b, c, n): c[i] = a[i] + b[i]; 1 ns of compute per element. */
static void vadd(simgpu_launch *l, void **p)
{
    const float *a = *(float **)p[0], *b = *(float **)p[1];
    float *c = *(float **)p[2];
    int n = *(int *)p[3];
    l->access(l, (uint64_t)(uintptr_t)a, (size_t)n * 4, SIMGPU_READ);
    l->access(l, (uint64_t)(uintptr_t)b, (size_t)n * 4, SIMGPU_READ);
    l->access(l, (uint64_t)(uintptr_t)c, (size_t)n * 4, SIMGPU_WRITE);
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
    l->compute(l, n);
}

/* scan(ptr, bytes, compute_ns): reads a range, models compute time. */
static void scan(simgpu_launch *l, void **p)
{
    l->access(l, *(CUdeviceptr *)p[0], *(size_t *)p[1], SIMGPU_READ);
    l->compute(l, *(double *)p[2]);
}

static CUfunction f_vadd, f_scan;

/* Context on device 0, both kernels registered and looked up. */
static void setup(void)
{
    primary_context(0);
    f_vadd = sim_function(&(simgpu_kernel){"vadd", vadd, 4, {8, 8, 8, 4}});
    f_scan = sim_function(&(simgpu_kernel){"scan", scan, 3, {8, 8, 8}});
}

/* Launches scan over [p, p+bytes) with compute_ns on stream s. */
static CUresult run_scan(CUdeviceptr p, size_t bytes, double compute_ns, CUstream s)
{
    void *args[] = {&p, &bytes, &compute_ns};
    return cuLaunchKernel(f_scan, 1, 1, 1, 128, 1, 1, 0, s, args, NULL);
}

static void kernel_launch(void)
{
    setup();
    CUmodule m;
    CUfunction f;
    OK(cuModuleLoad(&m, "anything.cubin"));
    CHECK_IS(cuModuleGetFunction(&f, m, "nope"), CUDA_ERROR_NOT_FOUND);
    OK(cuModuleUnload(m));
    size_t off, size;
    OK(cuFuncGetParamInfo(f_vadd, 3, &off, &size));
    CHECK(off == 24 && size == 4);
    CHECK_IS(cuFuncGetParamInfo(f_vadd, 4, &off, &size), CUDA_ERROR_INVALID_VALUE);
    const char *name;
    OK(cuFuncGetName(&name, f_vadd));
    CHECK(strcmp(name, "vadd") == 0);
    enum { N = 1000 };
    CUdeviceptr a, b, c;
    OK(cuMemAlloc(&a, N * 4));
    OK(cuMemAlloc(&b, N * 4));
    OK(cuMemAlloc(&c, N * 4));
    float ha[N], hb[N], hc[N];
    for (int i = 0; i < N; i++) {
        ha[i] = (float)i;
        hb[i] = (float)(2 * i);
    }
    OK(cuMemcpyHtoD(a, ha, sizeof ha));
    OK(cuMemcpyHtoD(b, hb, sizeof hb));
    int n = N;
    void *args[] = {&a, &b, &c, &n};
    OK(cuLaunchKernel(f_vadd, 4, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    OK(cuMemcpyDtoH(hc, c, sizeof hc));
    for (int i = 0; i < N; i++)
        CHECK(hc[i] == (float)(3 * i));
    /* The same launch through the packed-buffer form. */
    struct { CUdeviceptr a, b, c; int n; } buf = {b, b, c, N};
    size_t bsize = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bsize,
                     CU_LAUNCH_PARAM_END};
    OK(cuLaunchKernel(f_vadd, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    OK(cuMemcpyDtoH(hc, c, sizeof hc));
    CHECK(hc[10] == 40.0f);
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
                          .blockDimY = 1, .blockDimZ = 1};
    void *args2[] = {&a, &a, &c, &n};
    OK(cuLaunchKernelEx(&cfg, f_vadd, args2, NULL));
    OK(cuMemcpyDtoH(hc, c, sizeof hc));
    CHECK(hc[10] == 20.0f);
    OK(cuLaunchCooperativeKernel(f_vadd, 1, 1, 1, 1, 1, 1, 0, NULL, args));
    OK(cuLaunchKernel(f_vadd, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_PER_THREAD, args, NULL));
    OK(cuMemcpyDtoH(hc, c, sizeof hc));
    CHECK(hc[10] == 30.0f);
    CHECK_IS(cuLaunchKernel(f_vadd, 0, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuLaunchKernel(f_vadd, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuLaunchKernel(f_vadd, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuLaunchKernel((CUfunction)&buf, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
             CUDA_ERROR_INVALID_HANDLE);
    bsize = 8;
    CHECK_IS(cuLaunchKernel(f_vadd, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra), CUDA_ERROR_INVALID_VALUE);
    simgpu_counters ctr;
    OK(simgpu_get_counters(0, &ctr));
    CHECK_EQ_U(ctr.launches, 5);
    OK(cuMemFree(a));
    OK(cuMemFree(b));
    OK(cuMemFree(c));
}

/* A kernel reading 3 GiB of managed memory on a 2 GiB device (SIMGPU_MEM=2G):
 * every block faults once; the first 1024 fill the device, the last 512 each
 * evict the least recently used block. */
static void fault_3g_on_2g(void)
{
    setup();
    CUdeviceptr p;
    OK(cuMemAllocManaged(&p, 3 * GiB, CU_MEM_ATTACH_GLOBAL));
    OK(run_scan(p, 3 * GiB, 0, NULL));
    OK(cuCtxSynchronize());
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.faults, 1536);
    CHECK_EQ_U(c.evictions, 512);
    CHECK_EQ_U(c.bytes_to_device, 3 * GiB);
    CHECK_EQ_U(c.bytes_to_host, 1 * GiB);
    CHECK_EQ_U(c.remote_bytes, 0);
    CHECK_EQ_U(c.peak_device_bytes, 2 * GiB);
    CHECK_EQ_U(c.used_device_bytes, 2 * GiB);
    CHECK_NEAR(c.modeled_ns, 1536 * FAULT_NS(BLOCK) + 512 * LINK_NS(BLOCK), 1e-9);
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, 0);
    OK(cuMemFree(p));
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, 2 * GiB);
}

/* With PreferredLocation=CPU and AccessedBy=device the same kernel reads
 * over the link: no fault, no migration, 3 GiB remote. */
static void remote_advised(void)
{
    setup();
    CUdeviceptr p;
    OK(cuMemAllocManaged(&p, 3 * GiB, CU_MEM_ATTACH_GLOBAL));
    CUmemLocation cpu = {.type = CU_MEM_LOCATION_TYPE_HOST}, gpu = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    OK(cuMemAdvise(p, 3 * GiB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, cpu));
    OK(cuMemAdvise(p, 3 * GiB, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu));
    OK(run_scan(p, 3 * GiB, 1e6, NULL));
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.faults, 0);
    CHECK_EQ_U(c.bytes_to_device, 0);
    CHECK_EQ_U(c.remote_bytes, 3 * GiB);
    CHECK_NEAR(c.modeled_ns, LINK_NS(3 * GiB), 1e-9);   /* streaming hides the 1 ms compute */
    OK(cuMemFree(p));
}

/* After a prefetch, the kernel finds everything resident: zero faults. */
static void prefetch_then_run(void)
{
    setup();
    CUdeviceptr p;
    OK(cuMemAllocManaged(&p, 1 * GiB, CU_MEM_ATTACH_GLOBAL));
    CUmemLocation gpu = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    OK(cuMemPrefetchAsync(p, 1 * GiB, gpu, 0, NULL));
    OK(run_scan(p, 1 * GiB, 5e6, NULL));
    OK(cuCtxSynchronize());
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.faults, 0);
    CHECK_EQ_U(c.prefetch_bytes, 1 * GiB);
    CHECK_EQ_U(c.bytes_to_device, 1 * GiB);
    CHECK_NEAR(c.modeled_ns, LINK_NS(1 * GiB) + 5e6, 1e-9);
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t - f, 1 * GiB);                    /* resident managed memory is charged */
    CUmemLocation cpu = {.type = CU_MEM_LOCATION_TYPE_HOST};
    OK(cuMemPrefetchAsync(p, 1 * GiB, cpu, 0, NULL));   /* and released when it leaves */
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t - f, 0);
    CHECK_IS(cuMemPrefetchAsync(p, 1 * GiB, gpu, 1, NULL), CUDA_ERROR_INVALID_VALUE);
    gpu.id = 4;
    CHECK_IS(cuMemPrefetchAsync(p, 1 * GiB, gpu, 0, NULL), CUDA_ERROR_INVALID_DEVICE);
    CUdeviceptr d;
    OK(cuMemAlloc(&d, MiB));
    gpu.id = 0;
    CHECK_IS(cuMemPrefetchAsync(d, MiB, gpu, 0, NULL), CUDA_ERROR_INVALID_VALUE);   /* not managed */
    OK(cuMemFree(d));
    OK(cuMemFree(p));
}

/* The CUDA 11 ABI (CUdevice) of prefetch and advise, and overlap: a
 * prefetch on one stream runs while a kernel computes on another. */
static void prefetch_overlap_v1(void)
{
    setup();
    void *fn;
    CUdriverProcAddressQueryResult st;
    OK(cuGetProcAddress("cuMemPrefetchAsync", &fn, 8000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    PFN_cuMemPrefetchAsync_v8000 prefetch_v1 = (PFN_cuMemPrefetchAsync_v8000)fn;
    OK(cuGetProcAddress("cuMemAdvise", &fn, 8000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    PFN_cuMemAdvise_v8000 advise_v1 = (PFN_cuMemAdvise_v8000)fn;
    CUdeviceptr a, b;
    OK(cuMemAllocManaged(&a, 512 * MiB, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemAllocManaged(&b, 512 * MiB, CU_MEM_ATTACH_GLOBAL));
    OK(prefetch_v1(a, 512 * MiB, 0, NULL));
    OK(cuCtxSynchronize());
    OK(simgpu_reset_counters());
    simgpu_counters c0;
    OK(simgpu_get_counters(0, &c0));
    CUstream s1, s2;
    OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    double compute = 20e6;                                  /* 20 ms */
    OK(run_scan(a, 512 * MiB, compute, s1));
    OK(prefetch_v1(b, 512 * MiB, 0, s2));                   /* 9.76 ms, hidden */
    OK(cuCtxSynchronize());
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.faults, 0);
    CHECK_NEAR(c.modeled_ns - c0.modeled_ns, compute, 1e-9);
    OK(advise_v1(b, 512 * MiB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU));
    CHECK_IS(advise_v1(b, 512 * MiB, (CUmem_advise)99, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(advise_v1(b, 512 * MiB, CU_MEM_ADVISE_SET_ACCESSED_BY, 7), CUDA_ERROR_INVALID_DEVICE);
    OK(cuStreamDestroy(s1));
    OK(cuStreamDestroy(s2));
    OK(cuMemFree(a));
    OK(cuMemFree(b));
}

/* Device allocations evict resident managed blocks before failing
 * (SIMGPU_MEM=1G). */
static void evict_on_alloc(void)
{
    setup();
    CUdeviceptr m, d, e;
    OK(cuMemAllocManaged(&m, 768 * MiB, CU_MEM_ATTACH_GLOBAL));
    OK(run_scan(m, 768 * MiB, 0, NULL));
    OK(simgpu_reset_counters());
    OK(cuMemAlloc(&d, 512 * MiB));
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.evictions, 128);
    CHECK_EQ_U(c.bytes_to_host, 256 * MiB);
    CHECK_IS(cuMemAlloc(&e, 600 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemAlloc(&e, 512 * MiB));                 /* evicts the rest */
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.evictions, 384);
    /* The device is now full of non-managed memory: a kernel reads managed
     * memory where it is. */
    OK(run_scan(m, 4 * MiB, 0, NULL));
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.remote_bytes, 4 * MiB);
    OK(cuMemFree(d));
    OK(cuMemFree(e));
    OK(cuMemFree(m));
}

/* Driver eviction is least-recently-used (SIMGPU_MEM=8M: four blocks). */
static void lru_order(void)
{
    setup();
    CUdeviceptr m;
    OK(cuMemAllocManaged(&m, 5 * BLOCK, CU_MEM_ATTACH_GLOBAL));
    const int order[] = {0, 1, 2, 3, 0, 4, 1, 0};   /* 4 evicts 1, then 1 evicts 2 */
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        OK(run_scan(m + (CUdeviceptr)order[i] * BLOCK, 64, 0, NULL));
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.faults, 6);
    CHECK_EQ_U(c.evictions, 2);
    OK(run_scan(m + 3 * BLOCK, 64, 0, NULL));        /* 3 is still resident */
    OK(run_scan(m + 2 * BLOCK, 64, 0, NULL));        /* 2 was evicted */
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.faults, 7);
    OK(cuMemFree(m));
}

/* Pinned host memory is read over the link (zero-copy); launch overhead
 * comes from SIMGPU_LAUNCH_US (set to 5 here). */
static void zero_copy_and_launch_cost(void)
{
    setup();
    void *h;
    OK(cuMemAllocHost(&h, 110 * MiB));
    OK(run_scan((CUdeviceptr)(uintptr_t)h, 110 * MiB, 0, NULL));
    for (int i = 0; i < 10; i++)
        OK(run_scan((CUdeviceptr)(uintptr_t)h, 0, 0, NULL));
    OK(cuCtxSynchronize());
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.remote_bytes, 110 * MiB);
    CHECK_EQ_U(c.faults, 0);
    CHECK_NEAR(c.modeled_ns, LINK_NS(110 * MiB) + 11 * 5e3, 1e-9);
    OK(cuMemFreeHost(h));
}

static const test_case cases[] = {
    {"lru_order", lru_order},
    {"zero_copy_and_launch_cost", zero_copy_and_launch_cost},
    {"kernel_launch", kernel_launch},
    {"fault_3g_on_2g", fault_3g_on_2g},
    {"remote_advised", remote_advised},
    {"prefetch_then_run", prefetch_then_run},
    {"prefetch_overlap_v1", prefetch_overlap_v1},
    {"evict_on_alloc", evict_on_alloc},
};

TEST_MAIN(cases)
