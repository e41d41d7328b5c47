/*
 * shim_test.c — liblmshim.so in front of real client programs over the
 * simulated GPU (LD_PRELOAD set by meson). Placement is asserted through the
 * public CUDA API (IS_MANAGED, memory type, cuMemGetInfo), data through
 * memcpy round trips, accounting through lms_get_stats. One case per test;
 * each case's LMS_* and SIMGPU_* settings are in tests/sim/meson.build.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/context.h"
#include "../common/shim.h"
#include "lmshim.h"

static CUcontext setup(void) { return primary_context(0); }

/* Writes a pattern through memcpy and reads it back. */
static void round_trip(CUdeviceptr p, size_t size)
{
    uint64_t out[4] = {p, size, p ^ size, 42}, in[4] = {0};
    OK(cuMemcpyHtoD(p, out, sizeof out));
    OK(cuMemcpyHtoD(p + size - sizeof out, out, sizeof out));
    OK(cuMemcpyDtoH(in, p + size - sizeof out, sizeof in));
    CHECK(memcmp(in, out, sizeof in) == 0);
    OK(cuMemcpyDtoH(in, p, sizeof in));
    CHECK(memcmp(in, out, sizeof in) == 0);
}

/* 0 <= free <= total == budget, as cuMemGetInfo must always answer. */
static void check_info(size_t budget)
{
    size_t f = 0, t = 0;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t, budget);
    CHECK(f <= t);
}

/* (c) The driver API linked directly. LMS_LIMIT=1G LMS_FRAC=0.5
 * LMS_THRESHOLD=64M on a 4 GiB device: 12 chunks of 256 MiB = 3 GiB. */
static void budget_1g(void)
{
    setup();
    CUdeviceptr p[12];
    size_t t;
    OK(cuDeviceTotalMem(&t, 0));
    CHECK_EQ_U(t, 1 * GiB);
    for (int i = 0; i < 12; i++) {
        OK(cuMemAlloc(&p[i], 256 * MiB));
        round_trip(p[i], 256 * MiB);
        check_info(1 * GiB);
        /* 0.5 x 1 GiB holds two chunks on the device; the rest past the
         * fraction are managed. */
        CHECK(is_managed(p[i]) == (i >= 2));
    }
    lms_device_stats s = stats(0);
    CHECK_EQ_U(s.budget, 1 * GiB);
    CHECK_EQ_U(s.used, 512 * MiB);
    CHECK_EQ_U(s.live_chunks[0], 2);
    CHECK_EQ_U(s.live_chunks[1], 10);
    for (int i = 0; i < 12; i++)
        OK(cuMemFree(p[i]));
    s = stats(0);
    CHECK_EQ_U(s.used, 0);
    CHECK_EQ_U(s.live_chunks[0] + s.live_chunks[1], 0);
    size_t f;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, 1 * GiB);
}

/* LMS_ON_OOM=fail, LMS_FRAC=1: the chunk past the budget is refused, and
 * nothing leaks. */
static void oom_fail(void)
{
    setup();
    CUdeviceptr p[5];
    for (int i = 0; i < 4; i++)
        OK(cuMemAlloc(&p[i], 256 * MiB));
    CHECK_IS(cuMemAlloc(&p[4], 256 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    check_info(1 * GiB);
    lms_device_stats s = stats(0);
    CHECK_EQ_U(s.oom_failures, 1);
    CHECK_EQ_U(s.used, 1 * GiB);
    for (int i = 0; i < 4; i++)
        OK(cuMemFree(p[i]));
    s = stats(0);
    CHECK_EQ_U(s.used, 0);
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, t);
}

/* LMS_LIMIT=345M: an odd budget; 3 x 256 MiB all succeed, data intact. */
static void budget_345m(void)
{
    setup();
    CUdeviceptr p[3];
    for (int i = 0; i < 3; i++) {
        OK(cuMemAlloc(&p[i], 256 * MiB));
        round_trip(p[i], 256 * MiB);
        check_info(345 * MiB);
    }
    CHECK(is_managed(p[0]) == 0);
    CHECK(is_managed(p[1]) == 1 && is_managed(p[2]) == 1);
    for (int i = 0; i < 3; i++)
        OK(cuMemFree(p[i]));
    CHECK_EQ_U(stats(0).used, 0);
}

/* LMS_MODE=host: chunks past the fraction are pinned, mapped host memory. */
static void host_mode(void)
{
    setup();
    CUdeviceptr a, b;
    OK(cuMemAlloc(&a, 512 * MiB));          /* fits under 0.5 x 1 GiB */
    OK(cuMemAlloc(&b, 512 * MiB));          /* past it: host */
    unsigned ta = 0, tb = 0;
    OK(cuPointerGetAttribute(&ta, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));
    OK(cuPointerGetAttribute(&tb, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, b));
    CHECK(ta == CU_MEMORYTYPE_DEVICE && tb == CU_MEMORYTYPE_HOST);
    round_trip(b, 512 * MiB);
    OK(cuMemsetD32(b, 7, 16));
    unsigned w[16];
    OK(cuMemcpyDtoH(w, b, sizeof w));
    CHECK(w[0] == 7 && w[15] == 7);
    CHECK_EQ_U(stats(0).live_chunks[2], 1);
    OK(cuMemFree(b));                       /* the program frees it as device memory */
    OK(cuMemFree(a));
    CHECK_EQ_U(stats(0).live_chunks[2], 0);
}

/* Bad arguments get CUDA's own answers through the shim. */
static void errors_kept(void)
{
    CUdeviceptr p;
    CHECK_IS(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
    setup();
    CHECK_IS(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemFree(12345), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemAlloc(&p, 16));
    OK(cuMemFree(p));
    CHECK_IS(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemAllocManaged(&p, 16, 99), CUDA_ERROR_INVALID_VALUE);
    size_t f;
    CHECK_IS(cuMemGetInfo(&f, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemAllocPitch(&p, &f, 100, 10, 3), CUDA_ERROR_INVALID_VALUE);
}

/* (e) Two devices, each with its own budget (LMS_LIMIT_1=256M). */
static void two_devices(void)
{
    OK(cuInit(0));
    CUcontext c0, c1;
    OK(cuDevicePrimaryCtxRetain(&c0, 0));
    OK(cuDevicePrimaryCtxRetain(&c1, 1));
    OK(cuCtxSetCurrent(c1));
    CUdeviceptr a, b;
    OK(cuMemAlloc(&a, 192 * MiB));
    OK(cuMemAlloc(&b, 192 * MiB));          /* past device 1's budget: managed */
    CHECK(is_managed(a) == 0 && is_managed(b) == 1);
    check_info(256 * MiB);
    OK(cuCtxSetCurrent(c0));
    CUdeviceptr c;
    OK(cuMemAlloc(&c, 192 * MiB));
    CHECK(is_managed(c) == 0);
    check_info(1 * GiB);
    int ord = -1;
    OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b));
    CHECK(ord == 1);
    CHECK_EQ_U(stats(1).used, 192 * MiB);
    CHECK_EQ_U(stats(0).used, 192 * MiB);
    OK(cuMemFree(a));
    OK(cuMemFree(b));
    OK(cuMemFree(c));
    CHECK_EQ_U(stats(0).used + stats(1).used, 0);
}

static CUcontext thread_ctx;

/* One of eight threads: 10,000 mixed allocations and frees. */
static void *mixed_worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    if (cuCtxSetCurrent(thread_ctx) != CUDA_SUCCESS)
        return (void *)1;
    CUdeviceptr held[16] = {0};
    for (int i = 0; i < 10000; i++) {
        seed = seed * 1664525u + 1013904223u;
        int slot = (int)(seed >> 20) % 16;
        if (held[slot]) {
            uint32_t v = 0;
            if (cuMemcpyDtoH(&v, held[slot], 4) != CUDA_SUCCESS || v != (uint32_t)held[slot])
                return (void *)2;
            CUresult r = (seed & 1) ? cuMemFreeAsync(held[slot], CU_STREAM_PER_THREAD) : cuMemFree(held[slot]);
            if (r != CUDA_SUCCESS)
                return (void *)3;
            held[slot] = 0;
        } else {
            size_t size = (seed & 8) ? 16 * MiB + (seed >> 12) % MiB : 256 + (seed >> 8) % 65536;
            CUresult r = (seed & 2) ? cuMemAllocAsync(&held[slot], size, CU_STREAM_PER_THREAD)
                                    : cuMemAlloc(&held[slot], size);
            if (r != CUDA_SUCCESS)
                return (void *)4;
            uint32_t v = (uint32_t)held[slot];
            if (cuMemcpyHtoD(held[slot], &v, 4) != CUDA_SUCCESS)
                return (void *)5;
        }
    }
    for (int s = 0; s < 16; s++)
        if (held[s] && cuMemFree(held[s]) != CUDA_SUCCESS)
            return (void *)6;
    return NULL;
}

/* (f) Eight threads x 10,000 under a tight budget (LMS_LIMIT=512M) so that
 * all three placements happen; accounting returns exactly to its start. */
static void threads_mixed(void)
{
    thread_ctx = setup();
    size_t f0, f1, t;
    OK(cuMemGetInfo(&f0, &t));
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        CHECK(pthread_create(&th[i], NULL, mixed_worker, (void *)(uintptr_t)(i * 7 + 1)) == 0);
    for (int i = 0; i < 8; i++) {
        void *rc;
        CHECK(pthread_join(th[i], &rc) == 0);
        CHECK(rc == NULL);
    }
    OK(cuMemGetInfo(&f1, &t));
    CHECK_EQ_U(f1, f0);
    lms_device_stats s = stats(0);
    CHECK_EQ_U(s.used, 0);
    for (int p = 0; p < LMS_STATS_PLACES; p++)
        CHECK_EQ_U(s.live_chunks[p], 0);
    CHECK(s.allocs[0] > 1000 && s.allocs[1] > 100);   /* both placements were exercised */
    CHECK_EQ_U(s.frees, s.allocs[0] + s.allocs[1]);
}

/* (g) A fork child allocates and frees through the shim. */
static void fork_child(void)
{
    setup();
    CUdeviceptr keep;
    OK(cuMemAlloc(&keep, 300 * MiB));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        CUdeviceptr p, q;
        int bad = cuMemAlloc(&p, 300 * MiB) != CUDA_SUCCESS;     /* past 0.5 x 1 GiB: managed */
        bad |= (is_managed(p) != 1) << 1;
        bad |= (cuMemAlloc(&q, 1 * MiB) != CUDA_SUCCESS) << 2;
        bad |= (cuMemFree(p) != CUDA_SUCCESS || cuMemFree(q) != CUDA_SUCCESS) << 3;
        lms_device_stats s = stats(0);
        bad |= (s.used != 300 * MiB) << 4;                        /* the parent's chunk, copied */
        _exit(bad);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ_U(WEXITSTATUS(status), 0);
    CHECK_EQ_U(stats(0).used, 300 * MiB);
    OK(cuMemFree(keep));
}

/* (h) Pool and stream-ordered allocations under pressure, freed on another
 * stream: device ones through the pool, fallbacks after a synchronize. */
static void pools_async(void)
{
    setup();
    CUstream s1, s2;
    OK(cuStreamCreate(&s1, 0));
    OK(cuStreamCreate(&s2, 0));
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool pool;
    OK(cuMemPoolCreate(&pool, &props));
    CUdeviceptr a, b, c, d;
    OK(cuMemAllocAsync(&a, 400 * MiB, s1));
    OK(cuMemAllocFromPoolAsync(&b, 400 * MiB, pool, s1));   /* past 0.5: managed */
    OK(cuMemAllocAsync(&c, 100 * MiB, CU_STREAM_PER_THREAD));
    OK(cuMemAllocFromPoolAsync(&d, 400 * MiB, pool, s1));
    CHECK(is_managed(a) == 0 && is_managed(b) == 1 && is_managed(d) == 1);
    round_trip(b, 400 * MiB);
    lms_device_stats st = stats(0);
    CHECK_EQ_U(st.used, 500 * MiB);
    OK(cuMemFreeAsync(a, s2));
    OK(cuMemFreeAsync(b, s2));
    OK(cuMemFreeAsync(c, CU_STREAM_PER_THREAD));
    OK(cuMemFreeAsync(d, s2));
    CHECK_IS(cuMemFreeAsync(d, s2), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamSynchronize(s2));
    st = stats(0);
    CHECK_EQ_U(st.used, 0);
    CHECK_EQ_U(st.live_chunks[0] + st.live_chunks[1], 0);
    OK(cuMemPoolDestroy(pool));
    OK(cuStreamDestroy(s1));
    OK(cuStreamDestroy(s2));
}

/* (i) cuMemCreate physical memory is counted on the device of its
 * properties, and leaves the count at cuMemRelease. */
static void vmm_counted(void)
{
    setup();
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h;
    OK(cuMemCreate(&h, 64 * MiB, &prop, 0));
    CHECK_EQ_U(stats(0).used, 64 * MiB);
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t - f, 64 * MiB);
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 64 * MiB, 0, 0, 0));
    OK(cuMemMap(va, 64 * MiB, 0, h, 0));
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    OK(cuMemSetAccess(va, 64 * MiB, &acc, 1));
    round_trip(va, 64 * MiB);
    OK(cuMemUnmap(va, 64 * MiB));
    OK(cuMemRelease(h));
    OK(cuMemAddressFree(va, 64 * MiB));
    CHECK_EQ_U(stats(0).used, 0);
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;   /* no device to read: not counted, no crash */
    CHECK(cuMemCreate(&h, 2 * MiB, &prop, 0) != CUDA_SUCCESS);
}

/* (a) static-cudart style: everything through dlopen + cuGetProcAddress_v2,
 * including per-thread-stream (flags=2) variants. */
static void static_cudart_style(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
    CHECK(gpa != NULL);
    CHECK((void *)gpa == dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"));   /* the shim's */
    CUdriverProcAddressQueryResult st;
    const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    PFN_cuInit_v2000 init;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuCtxSetCurrent_v4000 set;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemFree_v3020 mfree;
    PFN_cuMemAllocAsync_v11020_ptsz alloc_async;
    PFN_cuMemFreeAsync_v11020_ptsz free_async;
    PFN_cuMemGetInfo_v3020 info;
    PFN_cuPointerGetAttribute_v4000 attr;
    OK(gpa("cuInit", (void **)&init, 12000, pt, &st));
    OK(gpa("cuDevicePrimaryCtxRetain", (void **)&retain, 12000, pt, &st));
    OK(gpa("cuCtxSetCurrent", (void **)&set, 12000, pt, &st));
    OK(gpa("cuMemAlloc", (void **)&alloc, 12000, pt, &st));
    OK(gpa("cuMemFree", (void **)&mfree, 12000, pt, &st));
    OK(gpa("cuMemAllocAsync", (void **)&alloc_async, 12000, pt, &st));
    OK(gpa("cuMemFreeAsync", (void **)&free_async, 12000, pt, &st));
    OK(gpa("cuMemGetInfo", (void **)&info, 12000, pt, &st));
    OK(gpa("cuPointerGetAttribute", (void **)&attr, 12000, pt, &st));
    CHECK((void *)alloc == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
    CHECK((void *)alloc_async == dlsym(RTLD_DEFAULT, "cuMemAllocAsync_ptsz"));
    CHECK(st == CU_GET_PROC_ADDRESS_SUCCESS);
    CUcontext ctx;
    OK(init(0));
    OK(retain(&ctx, 0));
    OK(set(ctx));
    CUdeviceptr p[6];
    for (int i = 0; i < 6; i++) {
        OK(i % 2 ? alloc_async(&p[i], 256 * MiB, NULL) : alloc(&p[i], 256 * MiB));
        int m = -1;
        OK(attr(&m, CU_POINTER_ATTRIBUTE_IS_MANAGED, p[i]));
        CHECK(m == (i >= 2));
        size_t f, t;
        OK(info(&f, &t));
        CHECK(t == 1 * GiB && f <= t);
    }
    for (int i = 0; i < 6; i++)
        OK(i % 2 ? free_async(p[i], NULL) : mfree(p[i]));
    CHECK_EQ_U(stats(0).used, 0);
    dlclose(h);
}

/* (d) dlopen with RTLD_DEEPBIND, then dlsym of the versioned names. */
static void deepbind_dlsym(void)
{
    if (getenv("LMS_TEST_ASAN")) {
        puts("AddressSanitizer refuses RTLD_DEEPBIND (sanitizers issue 611): skipped");
        exit(77);
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_DEEPBIND);
    CHECK(h != NULL);
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
    CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    CUresult (*mfree)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))dlsym(h, "cuMemFree_v2");
    CHECK(init && retain && set && alloc && mfree);
    CHECK((void *)alloc == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));   /* the hook, not the driver's */
    CUcontext ctx;
    OK(init(0));
    OK(retain(&ctx, 0));
    OK(set(ctx));
    CUdeviceptr a, b;
    OK(alloc(&a, 400 * MiB));
    OK(alloc(&b, 400 * MiB));
    CHECK(is_managed(a) == 0 && is_managed(b) == 1);
    CHECK_EQ_U(stats(0).used, 400 * MiB);
    OK(mfree(a));
    OK(mfree(b));
    CHECK_EQ_U(stats(0).used, 0);
}

/* dlvsym cannot hand out a driver entry that bypasses the hooks: the
 * driver defines no symbol versions, and glibc's dlvsym answers a versioned
 * lookup only with a symbol of that version in an object that has a
 * version table (the driver has one, for what it needs from the C
 * library). So lmshim leaves dlvsym alone; dlsym answers with the hooks. */
static void dlvsym_no_driver_entry(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    void *hook = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    CHECK(hook != NULL && dlsym(h, "cuMemAlloc_v2") == hook);   /* the shim's, through either handle */
    const char *versions[] = {"GLIBC_2.2.5", "GLIBC_2.34", "libcuda.so.1", "CUDA_12.0", "cuMemAlloc_v2"};
    const char *names[] = {"cuMemAlloc_v2", "cuMemAlloc", "cuGetProcAddress_v2", "cuLaunchKernel", "cuInit"};
    for (size_t v = 0; v < sizeof versions / sizeof *versions; v++)
        for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
            CHECK(dlvsym(h, names[n], versions[v]) == NULL);
            CHECK(dlvsym(RTLD_DEFAULT, names[n], versions[v]) == NULL);
        }
    dlclose(h);
}

/* Allocates chunks of 32 MiB into p[] until one is placed in managed
 * memory (or max); returns how many were (the last one is managed). */
static int smalls_until_managed(CUdeviceptr *p, int max)
{
    for (int n = 0; n < max; n++) {
        OK(cuMemAlloc(&p[n], 32 * MiB));
        if (is_managed(p[n])) {
            round_trip(p[n], 32 * MiB);
            return n + 1;
        }
    }
    return max;
}

/* LMS_LIMIT=1G LMS_FRAC=0.75 LMS_THRESHOLD=64M: chunks under the
 * threshold stay on the device while no managed chunk lives, and past the
 * fraction while the room beside the device chunks stays at least what
 * the fraction set aside (256 MiB) or, when less, the managed chunks'
 * bytes; one that would cut into it goes to managed memory. */
static void room_kept(void)
{
    setup();
    CUdeviceptr big, late, small[24];
    OK(cuMemAlloc(&big, 640 * MiB));   /* under the fraction: device */
    CHECK(is_managed(big) == 0);
    /* No managed chunk: 12 x 32 MiB fill the budget on the device, the
     * 13th falls back (the budget is full). */
    int n = smalls_until_managed(small, 24);
    CHECK_EQ_U(n, 13);
    for (int i = 0; i < n; i++)
        OK(cuMemFree(small[i]));
    OK(cuMemAlloc(&late, 384 * MiB));   /* past the fraction: managed */
    CHECK(is_managed(late) == 1);
    /* 768 MiB is the fraction; the 5th is past it and leaves 224 MiB of
     * room, under 256: managed. */
    n = smalls_until_managed(small, 24);
    CHECK_EQ_U(n, 5);
    for (int i = 0; i < n; i++)
        OK(cuMemFree(small[i]));
    OK(cuMemFree(late));
    OK(cuMemAlloc(&late, 160 * MiB));   /* 160 MiB managed: the room kept is 160 MiB */
    CHECK(is_managed(late) == 1);
    n = smalls_until_managed(small, 24);   /* the 8th leaves 128 MiB < 160 */
    CHECK_EQ_U(n, 8);
    lms_device_stats s = stats(0);
    CHECK_EQ_U(s.used, (640 + 7 * 32) * MiB);
    CHECK_EQ_U(s.live_chunks[1], 2);
    check_info(1 * GiB);
    OK(cuMemFree(late));
    OK(cuMemFree(big));
    for (int i = 0; i < n; i++)
        OK(cuMemFree(small[i]));
    CHECK_EQ_U(stats(0).used, 0);
}

/* The same settings: a CUDA array is no room for the engine. Beside a
 * 640 MiB device chunk, a 64 MiB array and 160 MiB of managed chunks the
 * room is 320 MiB: the 6th small chunk would leave 128 MiB, under the
 * 160 kept (with the array taken for room, 384 MiB: the 8th, as in
 * room_kept). With the array gone the room is 384 MiB again. */
static void room_kept_array(void)
{
    setup();
    CUdeviceptr big, late, small[24];
    OK(cuMemAlloc(&big, 640 * MiB));
    OK(cuMemAlloc(&late, 160 * MiB));   /* past the fraction: managed */
    CHECK(is_managed(late) == 1);
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 2048, .Height = 2048, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CUarray arr;
    OK(cuArray3DCreate(&arr, &d));   /* 64 MiB */
    CHECK_EQ_U(stats(0).used, (640 + 64) * MiB);
    int n = smalls_until_managed(small, 24);
    CHECK_EQ_U(n, 6);
    for (int i = 0; i < n; i++)
        OK(cuMemFree(small[i]));
    OK(cuArrayDestroy(arr));
    n = smalls_until_managed(small, 24);
    CHECK_EQ_U(n, 8);
    for (int i = 0; i < n; i++)
        OK(cuMemFree(small[i]));
    OK(cuMemFree(late));
    OK(cuMemFree(big));
    CHECK_EQ_U(stats(0).used, 0);
}

/* LMS_DISABLE=1: a pure pass-through; the device simply runs out. */
static void disabled(void)
{
    setup();
    CUdeviceptr p[5];
    for (int i = 0; i < 4; i++) {
        OK(cuMemAlloc(&p[i], 256 * MiB));
        CHECK(is_managed(p[i]) == 0);
    }
    CHECK_IS(cuMemAlloc(&p[4], 256 * MiB), CUDA_ERROR_OUT_OF_MEMORY);   /* SIMGPU_MEM=1G */
    lms_device_stats s;
    CHECK(get_stats(0, &s) == -1);   /* lmshim never looked at a device */
    for (int i = 0; i < 4; i++)
        OK(cuMemFree(p[i]));
}

static const test_case cases[] = {
    {"disabled", disabled},
    {"budget_1g", budget_1g},
    {"oom_fail", oom_fail},
    {"budget_345m", budget_345m},
    {"host_mode", host_mode},
    {"errors_kept", errors_kept},
    {"two_devices", two_devices},
    {"threads_mixed", threads_mixed},
    {"fork_child", fork_child},
    {"pools_async", pools_async},
    {"vmm_counted", vmm_counted},
    {"static_cudart_style", static_cudart_style},
    {"deepbind_dlsym", deepbind_dlsym},
    {"dlvsym_no_driver_entry", dlvsym_no_driver_entry},
    {"room_kept", room_kept},
    {"room_kept_array", room_kept_array},
};

TEST_MAIN(cases)
