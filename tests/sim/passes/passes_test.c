/*
 * passes_test.c — kernels that make several passes over a range: what is
 * not on the device crosses the link once for the share an L2 of
 * SIMGPU_L2_MIB holds and once per pass for the rest
 * (docs/SIMULATOR.md, "Passes and the L2"), checked to the byte. One case
 * per meson test.
 */
#include <cuda.h>
#include <stdint.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "simgpu.h"

#define LINK_NS(bytes) ((double)(bytes) / 55.0)   /* 55 GB/s */

/* reread(ptr, bytes, passes, compute_ns): `passes` passes over a range;
 * passes 0 declares it through access() (one pass). */
static void reread(simgpu_launch *l, void **p)
{
    uint64_t ptr = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    unsigned passes = *(unsigned *)p[2];
    if (passes == 0)
        l->access(l, ptr, bytes, SIMGPU_READ);
    else
        l->access_passes(l, ptr, bytes, SIMGPU_READ, passes);
    l->compute(l, *(double *)p[3]);
}

static CUfunction f_reread, f_rewrite;

/* rewrite(ptr, bytes): one pass writing a range. */
static void rewrite(simgpu_launch *l, void **p)
{
    l->access(l, *(CUdeviceptr *)p[0], *(size_t *)p[1], SIMGPU_WRITE);
}

/* Context on device 0 and the kernel registered. */
static void setup(void)
{
    primary_context(0);
    f_reread = sim_function(&(simgpu_kernel){"reread", reread, 4, {8, 8, 4, 8}});
    f_rewrite = sim_function(&(simgpu_kernel){"rewrite", rewrite, 2, {8, 8}});
}

/* Runs reread on the legacy stream, waits, and returns the counters' growth. */
static simgpu_counters run(CUdeviceptr p, size_t bytes, unsigned passes, double compute_ns)
{
    simgpu_counters before, after;
    OK(cuCtxSynchronize());
    OK(simgpu_get_counters(0, &before));
    void *args[] = {&p, &bytes, &passes, &compute_ns};
    OK(cuLaunchKernel(f_reread, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    OK(cuCtxSynchronize());
    OK(simgpu_get_counters(0, &after));
    after.remote_bytes -= before.remote_bytes;
    after.faults -= before.faults;
    after.modeled_ns -= before.modeled_ns;
    return after;
}

/* Pinned host memory, 200 MiB read in 10 passes, L2 50 MiB: 50 MiB stays
 * in L2 after the first pass, 150 MiB crosses again on each of the other 9:
 * 200 + 9 x 150 = 1550 MiB. */
static void zero_copy_passes(void)
{
    setup();
    void *h;
    OK(cuMemAllocHost(&h, 200 * MiB));
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)h;
    simgpu_counters c = run(p, 200 * MiB, 10, 0);
    CHECK_EQ_U(c.remote_bytes, 1550 * MiB);
    CHECK_NEAR(c.modeled_ns, LINK_NS(1550 * MiB), 1e-9);
    /* access() is one pass, and so is access_passes(..., 1). */
    CHECK_EQ_U(run(p, 200 * MiB, 0, 0).remote_bytes, 200 * MiB);
    CHECK_EQ_U(run(p, 200 * MiB, 1, 0).remote_bytes, 200 * MiB);
    /* A range the L2 holds crosses once however many passes. */
    CHECK_EQ_U(run(p, 40 * MiB, 30, 0).remote_bytes, 40 * MiB);
    CHECK_EQ_U(run(p, 50 * MiB, 30, 0).remote_bytes, 50 * MiB);
    /* Compute longer than the streaming hides it. */
    c = run(p, 100 * MiB, 3, 1e7);   /* 100 + 2 x 50 = 200 MiB: 3.81 ms < 10 ms */
    CHECK_EQ_U(c.remote_bytes, 200 * MiB);
    CHECK_NEAR(c.modeled_ns, 1e7, 1e-9);
    OK(cuMemFreeHost(h));
}

/* Managed memory read where it is (PreferredLocation host, AccessedBy the
 * device), 20 MiB of 100 prefetched to the device: only the 80 MiB on the
 * host cross, 80 + 4 x 80 x (100 - 50) / 100 = 240 MiB in 5 passes; the
 * resident part costs nothing, and nothing faults. */
static void managed_partly_resident(void)
{
    setup();
    CUdeviceptr p;
    OK(cuMemAllocManaged(&p, 100 * MiB, CU_MEM_ATTACH_GLOBAL));
    CUmemLocation cpu = {.type = CU_MEM_LOCATION_TYPE_HOST}, gpu = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    OK(cuMemAdvise(p, 100 * MiB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, cpu));
    OK(cuMemAdvise(p, 100 * MiB, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu));
    OK(cuMemPrefetchAsync(p, 20 * MiB, gpu, 0, NULL));
    simgpu_counters c = run(p, 100 * MiB, 5, 0);
    CHECK_EQ_U(c.faults, 0);
    CHECK_EQ_U(c.remote_bytes, 240 * MiB);
    CHECK_NEAR(c.modeled_ns, LINK_NS(240 * MiB), 1e-9);
    /* All of it on the device: passes cost no link time. */
    OK(cuMemPrefetchAsync(p, 100 * MiB, gpu, 0, NULL));
    CHECK_EQ_U(run(p, 100 * MiB, 40, 0).remote_bytes, 0);
    OK(cuMemFree(p));
}

/* Faulting managed memory migrates once; the passes then read it on the
 * device. */
static void faults_once(void)
{
    setup();
    CUdeviceptr p;
    OK(cuMemAllocManaged(&p, 64 * MiB, CU_MEM_ATTACH_GLOBAL));
    simgpu_counters c = run(p, 64 * MiB, 16, 0);
    CHECK_EQ_U(c.faults, 32);
    CHECK_EQ_U(c.remote_bytes, 0);
    OK(cuMemFree(p));
}

/* With SIMGPU_L2_MIB=0 (set by meson) every pass crosses the link:
 * 8 x 64 = 512 MiB. */
static void no_l2(void)
{
    setup();
    void *h;
    OK(cuMemAllocHost(&h, 64 * MiB));
    CHECK_EQ_U(run((CUdeviceptr)(uintptr_t)h, 64 * MiB, 8, 0).remote_bytes, 512 * MiB);
    OK(cuMemFreeHost(h));
}

/* With SIMGPU_L2_MIB=8 (set by meson): 64 + 7 x (64 - 8) = 456 MiB. */
static void small_l2(void)
{
    setup();
    void *h;
    OK(cuMemAllocHost(&h, 64 * MiB));
    CHECK_EQ_U(run((CUdeviceptr)(uintptr_t)h, 64 * MiB, 8, 0).remote_bytes, 456 * MiB);
    OK(cuMemFreeHost(h));
}

/* With a bad SIMGPU_L2_MIB (set by meson) the default 50 MiB is kept:
 * 64 + 7 x (64 - 50) = 162 MiB. */
static void bad_l2_keeps_default(void)
{
    setup();
    void *h;
    OK(cuMemAllocHost(&h, 64 * MiB));
    CHECK_EQ_U(run((CUdeviceptr)(uintptr_t)h, 64 * MiB, 8, 0).remote_bytes, 162 * MiB);
    OK(cuMemFreeHost(h));
}

/* Reads over the link share the host-to-device direction with the copy
 * engine: a kernel reading 100 MiB of pinned memory while a 100 MiB
 * prefetch to the device is under way ends after both, 2 x 100 MiB of
 * link time; a kernel writing 100 MiB over the link uses the other
 * direction and ends with the prefetch, 1 x. */
static void link_shared_with_copies(void)
{
    setup();
    void *h;
    OK(cuMemAllocHost(&h, 100 * MiB));
    CUdeviceptr ph = (CUdeviceptr)(uintptr_t)h, m1, m2;
    OK(cuMemAllocManaged(&m1, 100 * MiB, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemAllocManaged(&m2, 100 * MiB, CU_MEM_ATTACH_GLOBAL));
    CUstream side;
    OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    CUmemLocation gpu = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    simgpu_counters a, b;
    size_t bytes = 100 * MiB;
    unsigned passes = 1;
    double compute = 0;
    OK(cuCtxSynchronize());
    OK(simgpu_get_counters(0, &a));
    OK(cuMemPrefetchAsync(m1, bytes, gpu, 0, side));
    void *rargs[] = {&ph, &bytes, &passes, &compute};
    OK(cuLaunchKernel(f_reread, 1, 1, 1, 128, 1, 1, 0, NULL, rargs, NULL));
    OK(cuCtxSynchronize());
    OK(simgpu_get_counters(0, &b));
    CHECK_NEAR(b.modeled_ns - a.modeled_ns, 2 * LINK_NS(100 * MiB), 1e-9);
    OK(simgpu_get_counters(0, &a));
    OK(cuMemPrefetchAsync(m2, bytes, gpu, 0, side));
    void *wargs[] = {&ph, &bytes};
    OK(cuLaunchKernel(f_rewrite, 1, 1, 1, 128, 1, 1, 0, NULL, wargs, NULL));
    OK(cuCtxSynchronize());
    OK(simgpu_get_counters(0, &b));
    CHECK_NEAR(b.modeled_ns - a.modeled_ns, LINK_NS(100 * MiB), 1e-9);
    OK(cuStreamDestroy(side));
    OK(cuMemFree(m1));
    OK(cuMemFree(m2));
    OK(cuMemFreeHost(h));
}

static const test_case cases[] = {
    {"link_shared_with_copies", link_shared_with_copies},
    {"bad_l2_keeps_default", bad_l2_keeps_default},
    {"zero_copy_passes", zero_copy_passes},
    {"managed_partly_resident", managed_partly_resident},
    {"faults_once", faults_once},
    {"no_l2", no_l2},
    {"small_l2", small_l2},
};

TEST_MAIN(cases)
