/*
 * breakers_vmm_test.c — cuMemCreate's budget attacked from outside: threads
 * mixing cuMemCreate/cuMemRelease/cuMemMap/cuMemUnmap with cuMemAlloc,
 * cudaMalloc and managed memory against a small budget (with and without
 * LMS_ON_OOM=fail), a handle released while still mapped, failing
 * creations, another device's memory, fork while threads create, a budget
 * full of fetched managed chunks (still, or kept full by launches, beside
 * creations, device requests or a growing graph pool), the
 * last room raced for by a creation and an allocation, a refusal in the
 * trace, and two processes of one group (LMS_GROUP) creating at once.
 * Each case checks lmshim's charge (cuMemGetInfo, lms_get_stats) against
 * the simulated device's bytes in use. Settings in meson.build: a 1 GiB
 * device, LMS_LIMIT=512M; group members are this program again
 * (`breakers_vmm_test member KIND ARG`).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "lmshim.h"
#include "simgpu.h"

#define GROUP_DIR_TEMPLATE "/tmp/lmshim-breakers-vmm-XXXXXX"
#include "../group/group_helpers.h"

#define BUDGET (512 * MiB)

/* The properties of pinned device memory on `dev`. */
static CUmemAllocationProp dev_prop(int dev)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

/* cuMemCreate of `bytes` on device 0. */
static CUresult create(CUmemGenericAllocationHandle *h, size_t bytes)
{
    CUmemAllocationProp p = dev_prop(0);
    return cuMemCreate(h, bytes, &p, 0);
}

/* Read-write access for device 0 to [va, va + bytes). */
static void allow(CUdeviceptr va, size_t bytes)
{
    CUmemAccessDesc d = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    OK(cuMemSetAccess(va, bytes, &d, 1));
}

/* What every case ends with: nothing charged, by lmshim's count, by
 * cuMemGetInfo and by the simulated device. */
static void check_all_back(void)
{
    CHECK_EQ_U(info_used(), 0);
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(sim_used(), 0);
}

/* ---- a handle released while mapped ------------------------------------- */

/* The charge stays while any mapping does: a handle mapped twice and
 * released is charged until its second unmap; two handles mapped side by
 * side and released go with one unmap spanning both. */
static void released_while_mapped(void)
{
    primary_context(0);
    CUmemGenericAllocationHandle h, h2;
    OK(create(&h, 64 * MiB));
    CHECK_EQ_U(info_used(), 64 * MiB);
    CUdeviceptr va, vb;
    OK(cuMemAddressReserve(&va, 64 * MiB, 0, 0, 0));
    OK(cuMemAddressReserve(&vb, 128 * MiB, 0, 0, 0));
    OK(cuMemMap(va, 64 * MiB, 0, h, 0));
    OK(cuMemMap(vb, 32 * MiB, 32 * MiB, h, 0));    /* its second half, elsewhere */
    OK(cuMemRelease(h));
    CHECK_IS(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);   /* once only */
    CHECK_EQ_U(info_used(), 64 * MiB);
    CHECK_EQ_U(sim_used(), 64 * MiB);
    OK(cuMemUnmap(va, 64 * MiB));
    CHECK_EQ_U(info_used(), 64 * MiB);             /* still mapped at vb */
    CHECK_EQ_U(sim_used(), 64 * MiB);
    CHECK_IS(cuMemUnmap(vb, 16 * MiB), CUDA_ERROR_INVALID_VALUE);   /* cuts a mapping */
    CHECK_EQ_U(info_used(), 64 * MiB);
    OK(cuMemUnmap(vb, 32 * MiB));
    check_all_back();

    /* Two handles side by side in vb, both released, one unmap. */
    OK(create(&h, 64 * MiB));
    OK(create(&h2, 64 * MiB));
    OK(cuMemMap(vb, 64 * MiB, 0, h, 0));
    OK(cuMemMap(vb + 64 * MiB, 64 * MiB, 0, h2, 0));
    allow(vb, 128 * MiB);
    OK(cuMemsetD8(vb, 7, 64 * MiB));
    OK(cuMemsetD8(vb + 64 * MiB, 7, 64 * MiB));
    OK(cuMemRelease(h2));
    OK(cuMemRelease(h));
    CHECK_EQ_U(info_used(), 128 * MiB);
    OK(cuMemUnmap(vb, 128 * MiB));
    check_all_back();
    OK(cuMemAddressFree(va, 64 * MiB));
    OK(cuMemAddressFree(vb, 128 * MiB));
}

/* ---- another device's memory --------------------------------------------- */

/* Memory created on device 1 from a context of device 0 is device 1's
 * charge: device 0's cuMemGetInfo does not count it, device 1's does, and
 * both go back to 0 after the release, from either device's context. */
static void other_device(void)
{
    CUcontext c0 = primary_context(0), c1;
    OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CUmemAllocationProp p = dev_prop(1);
    CUmemGenericAllocationHandle h;
    OK(cuMemCreate(&h, 128 * MiB, &p, 0));
    CHECK_EQ_U(info_used(), 0);
    CHECK_EQ_U(stats(1).used, 128 * MiB);
    OK(cuCtxSetCurrent(c1));
    CHECK_EQ_U(info_used(), 128 * MiB);
    simgpu_counters k;
    OK(simgpu_get_counters(1, &k));
    CHECK_EQ_U(k.used_device_bytes, 128 * MiB);
    OK(cuCtxSetCurrent(c0));
    OK(cuMemRelease(h));
    CHECK_EQ_U(stats(1).used, 0);
    OK(cuCtxSetCurrent(c1));
    CHECK_EQ_U(info_used(), 0);
    OK(simgpu_get_counters(1, &k));
    CHECK_EQ_U(k.used_device_bytes, 0);
    OK(cuCtxSetCurrent(c0));
    check_all_back();
    OK(cuDevicePrimaryCtxRelease(1));
}

/* ---- failing creations --------------------------------------------------- */

/* A creation the driver refuses charges nothing and answers the driver's
 * error, whatever its size; host locations are never a device's charge.
 * With LMS_ON_OOM=fail only a valid creation past the budget is answered
 * out-of-memory, and the device never held it. */
static void bad_creations(void)
{
    primary_context(0);
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = dev_prop(0);
    size_t gran = 0;
    OK(cuMemGetAllocationGranularity(&gran, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK(gran > 0);
    CHECK_IS(cuMemCreate(&h, 64 * MiB + gran / 2, &p, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(&h, 768 * MiB + gran / 2, &p, 0), CUDA_ERROR_INVALID_VALUE);   /* past the budget too */
    CHECK_IS(cuMemCreate(&h, 0, &p, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(&h, 64 * MiB, &p, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(NULL, 64 * MiB, &p, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemCreate(&h, 64 * MiB, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp q = p;
    q.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    CHECK_IS(cuMemCreate(&h, 64 * MiB, &q, 0), CUDA_ERROR_INVALID_VALUE);
    q = p;
    q.location.id = 7;                                 /* no such device */
    CHECK_IS(cuMemCreate(&h, 64 * MiB, &q, 0), CUDA_ERROR_INVALID_VALUE);
    q.location.id = -1;
    CHECK_IS(cuMemCreate(&h, 64 * MiB, &q, 0), CUDA_ERROR_INVALID_VALUE);
    /* Host locations: whatever the driver answers, no device is charged. */
    CUmemLocationType host[] = {CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA,
                                CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) {
        q = p;
        q.location.type = host[i];
        q.location.id = 0;
        CUresult r = cuMemCreate(&h, 64 * MiB, &q, 0);
        CHECK_EQ_U(info_used(), 0);
        if (r == CUDA_SUCCESS)
            OK(cuMemRelease(h));
    }
    check_all_back();
    CHECK_EQ_U(stats(0).oom_failures, 0);
    /* Valid, but more than the device has: the driver's out-of-memory (or
     * the budget's), and whatever was charged first comes back. */
    CHECK_IS(cuMemCreate(&h, 2048 * MiB, &p, 0), CUDA_ERROR_OUT_OF_MEMORY);
    check_all_back();
    bool fail = getenv("LMS_ON_OOM") && strcmp(getenv("LMS_ON_OOM"), "fail") == 0;
    CHECK_EQ_U(stats(0).oom_failures, fail ? 1 : 0);
    /* Valid and past the budget: refused (fail) or charged (managed). */
    CUresult r = cuMemCreate(&h, 768 * MiB, &p, 0);
    if (fail) {
        CHECK_IS(r, CUDA_ERROR_OUT_OF_MEMORY);
        CHECK_EQ_U(stats(0).oom_failures, 2);
        simgpu_counters c;
        OK(simgpu_get_counters(0, &c));
        CHECK(c.peak_device_bytes <= BUDGET);   /* refused before the device held it */
    } else {
        OK(r);
        CHECK_EQ_U(stats(0).used, 768 * MiB);
        CHECK_EQ_U(sim_used(), 768 * MiB);
        OK(cuMemRelease(h));
    }
    check_all_back();
}

/* ---- threads mixing everything ------------------------------------------- */

static CUcontext mix_ctx;
static atomic_bool mix_done;
static bool mix_fail;              /* LMS_ON_OOM=fail */
static atomic_ullong mix_refused;  /* creations answered out-of-memory */
static atomic_ullong mix_created;

enum { MIX_THREADS = 6, MIX_SLOTS = 6, MIX_ROUNDS = 2000 };
static pthread_barrier_t mix_start;   /* the threads start together */
static pthread_barrier_t mix_full;    /* ... and hold their slots full together half way */
#define MIX_HANDLE (64 * MiB)

typedef struct mix_slot {
    int kind;                        /* 0 empty, 1 handle, 2 cuMemAlloc, 3 cudaMalloc, 4 managed */
    CUmemGenericAllocationHandle h;
    bool mapped, released;
    CUdeviceptr p;
} mix_slot;

/* Frees what a slot holds (in an order drawn from `x`). */
static void mix_empty(mix_slot *s, CUdeviceptr va, uint64_t x)
{
    switch (s->kind) {
    case 1:
        if (s->mapped && (x & 1)) {   /* released while mapped, unmapped after */
            OK(cuMemRelease(s->h));
            OK(cuMemUnmap(va, MIX_HANDLE));
        } else {
            if (s->mapped)
                OK(cuMemUnmap(va, MIX_HANDLE));
            OK(cuMemRelease(s->h));
        }
        break;
    case 2:
    case 4:
        OK(cuMemFree(s->p));
        break;
    case 3:
        CHECK_IS(cudaFree((void *)(uintptr_t)s->p), cudaSuccess);
        break;
    }
    s->kind = 0;
}

/* Creates a handle for slot s; false when answered out-of-memory (counted
 * as refused), a failure on any other error. */
static bool mix_create(mix_slot *s)
{
    CUresult r = create(&s->h, MIX_HANDLE);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {   /* the budget (fail), or the device itself */
        atomic_fetch_add(&mix_refused, 1);
        return false;
    }
    OK(r);
    atomic_fetch_add(&mix_created, 1);
    s->kind = 1;
    s->mapped = false;
    return true;
}

/* One thread: MIX_ROUNDS random steps over MIX_SLOTS slots, each slot a
 * VMM handle (mapped or not), a cuMemAlloc, a cudaMalloc or managed
 * memory; out-of-memory is an answer, any other error a failure. Half
 * way, every thread fills its empty slots with handles and waits for the
 * others there: together they ask for more than the budget whatever the
 * scheduling (a thread alone holds at most 384 MiB of the 512, and on a
 * busy machine the threads once ran one after the other: nothing was
 * refused). */
static void *mix_thread(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    OK(cuCtxSetCurrent(mix_ctx));
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, MIX_SLOTS * MIX_HANDLE, 0, 0, 0));
    mix_slot slots[MIX_SLOTS] = {0};
    pthread_barrier_wait(&mix_start);
    for (int round = 0; round < MIX_ROUNDS; round++) {
        if (round == MIX_ROUNDS / 2) {
            for (int j = 0; j < MIX_SLOTS; j++)
                if (!slots[j].kind)
                    mix_create(&slots[j]);
            pthread_barrier_wait(&mix_full);
        }
        int i = (int)(xorshift(&x) % MIX_SLOTS);
        mix_slot *s = &slots[i];
        CUdeviceptr at = va + (CUdeviceptr)i * MIX_HANDLE;
        if (s->kind) {
            if (s->kind == 1 && !s->mapped && (xorshift(&x) & 1)) {
                OK(cuMemMap(at, MIX_HANDLE, 0, s->h, 0));
                s->mapped = true;
            } else {
                mix_empty(s, at, xorshift(&x));
            }
            continue;
        }
        int kind = 1 + (int)(xorshift(&x) % 6);   /* handles half the time */
        kind = kind > 4 ? 1 : kind;
        CUresult r;
        size_t big = (xorshift(&x) & 1) ? 32 * MiB : 2 * MiB;
        switch (kind) {
        case 1:
            if (!mix_create(s))
                continue;
            break;
        case 2:
            r = cuMemAlloc(&s->p, big);
            if (r == CUDA_ERROR_OUT_OF_MEMORY)
                continue;
            OK(r);
            break;
        case 3: {
            void *q = NULL;
            cudaError_t e = cudaMalloc(&q, big);
            if (e == cudaErrorMemoryAllocation)
                continue;
            CHECK_IS(e, cudaSuccess);
            s->p = (CUdeviceptr)(uintptr_t)q;
            break;
        }
        default:
            OK(cuMemAllocManaged(&s->p, big, CU_MEM_ATTACH_GLOBAL));
            break;
        }
        s->kind = kind;
    }
    for (int i = 0; i < MIX_SLOTS; i++)
        mix_empty(&slots[i], va + (CUdeviceptr)i * MIX_HANDLE, xorshift(&x));
    OK(cuMemAddressFree(va, MIX_SLOTS * MIX_HANDLE));
    return NULL;
}

/* Watches the charge while the threads run: with LMS_ON_OOM=fail neither
 * cuMemGetInfo nor lmshim's count ever passes the budget. */
static void *mix_watch(void *arg)
{
    (void)arg;
    OK(cuCtxSetCurrent(mix_ctx));
    uint64_t n = 0;
    while (!atomic_load(&mix_done)) {
        size_t f = 0, t = 0;
        OK(cuMemGetInfo(&f, &t));
        CHECK(f <= t);
        CHECK_EQ_U(t, BUDGET);
        lms_device_stats s = stats(0);
        if (mix_fail) {
            CHECK(s.used <= s.budget);
            CHECK(s.peak <= s.budget);
        }
        CHECK_EQ_U(s.budget_violations, 0);
        n++;
    }
    return (void *)(uintptr_t)n;
}

/* MIX_THREADS threads and a watcher; everything comes back at the end. */
static void threads_mix(void)
{
    mix_ctx = primary_context(0);
    mix_fail = getenv("LMS_ON_OOM") && strcmp(getenv("LMS_ON_OOM"), "fail") == 0;
    pthread_t t[MIX_THREADS], w;
    pthread_barrier_init(&mix_start, NULL, MIX_THREADS);
    pthread_barrier_init(&mix_full, NULL, MIX_THREADS);
    CHECK(pthread_create(&w, NULL, mix_watch, NULL) == 0);
    for (int i = 0; i < MIX_THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, mix_thread, (void *)(uintptr_t)(i + 1)) == 0);
    for (int i = 0; i < MIX_THREADS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&mix_done, true);
    void *looks;
    pthread_join(w, &looks);
    printf("%llu created, %llu refused, %llu looks\n", (unsigned long long)atomic_load(&mix_created),
           (unsigned long long)atomic_load(&mix_refused), (unsigned long long)(uintptr_t)looks);
    CHECK(atomic_load(&mix_created) > 100);
    if (mix_fail) {
        CHECK(stats(0).oom_failures > 0);       /* the budget was reached */
        simgpu_counters c;
        OK(simgpu_get_counters(0, &c));
        CHECK(c.peak_device_bytes <= BUDGET);   /* refusals never held the device's memory */
    }
    check_all_back();
}

/* ---- fork while threads create ------------------------------------------- */

enum { FORK_THREADS = 4 };

/* Creates and releases 64 MiB (mapped half the time) until mix_done. */
static void *fork_creator(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg + 1;
    OK(cuCtxSetCurrent(mix_ctx));
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 64 * MiB, 0, 0, 0));
    uint64_t n = 0;
    while (!atomic_load(&mix_done)) {
        CUmemGenericAllocationHandle h;
        CUresult r = create(&h, 64 * MiB);
        if (r == CUDA_ERROR_OUT_OF_MEMORY && mix_fail)
            continue;
        OK(r);
        bool map = xorshift(&x) & 1;
        if (map)
            OK(cuMemMap(va, 64 * MiB, 0, h, 0));
        OK(cuMemRelease(h));
        if (map)
            OK(cuMemUnmap(va, 64 * MiB));
        n++;
    }
    OK(cuMemAddressFree(va, 64 * MiB));
    return (void *)(uintptr_t)n;
}

/* Forks 60 times while four threads create and release: no child hangs
 * (each creates and releases once itself, and its cuMemGetInfo stays in
 * the budget with LMS_ON_OOM=fail), and the parent's charge all comes back. */
static void fork_creates(void)
{
    mix_ctx = primary_context(0);
    mix_fail = getenv("LMS_ON_OOM") && strcmp(getenv("LMS_ON_OOM"), "fail") == 0;
    pthread_t t[FORK_THREADS];
    for (int i = 0; i < FORK_THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, fork_creator, (void *)(uintptr_t)i) == 0);
    for (int k = 0; k < 60; k++) {
        usleep(2000);
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            alarm(20);
            int bad = 0;
            CUmemGenericAllocationHandle h;
            if (cuCtxSetCurrent(mix_ctx) != CUDA_SUCCESS)
                bad = 1;
            CUresult r = create(&h, 2 * MiB);
            if (r == CUDA_SUCCESS)
                bad |= cuMemRelease(h) != CUDA_SUCCESS ? 2 : 0;
            else if (!(r == CUDA_ERROR_OUT_OF_MEMORY && mix_fail))
                bad |= 4;
            size_t f = 0, tot = 0;
            if (cuMemGetInfo(&f, &tot) != CUDA_SUCCESS || f > tot || tot != BUDGET)
                bad |= 8;
            _exit(bad);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "fork child %d ended with status 0x%x\n", k, st);
            exit(1);
        }
    }
    atomic_store(&mix_done, true);
    uint64_t n = 0;
    for (int i = 0; i < FORK_THREADS; i++) {
        void *c;
        pthread_join(t[i], &c);
        n += (uint64_t)(uintptr_t)c;
    }
    printf("%llu creations around 60 forks\n", (unsigned long long)n);
    CHECK(n > 60);
    check_all_back();
}

/* ---- a budget full of fetched managed chunks ----------------------------- */

/* touch2(a, b, bytes): the kernel that makes the residency engine fetch. */
static void touch_pair(simgpu_launch *l, void **p)
{
    l->access(l, *(CUdeviceptr *)p[0], *(size_t *)p[2], SIMGPU_READ);
    l->access(l, *(CUdeviceptr *)p[1], *(size_t *)p[2], SIMGPU_READ);
}

/* Eight managed chunks of 64 MiB (LMS_FRAC=0 sends them off the device)
 * are fetched by launches until lmshim's charge fills the budget. A
 * cuMemCreate then gets its room as a device allocation does: lmshim's
 * own fetched chunks make way (with LMS_ON_OOM=fail it is not refused,
 * otherwise the budget is not passed). */
static void fetched_make_way(void)
{
    primary_context(0);
    CUfunction f = sim_function(&(simgpu_kernel){"touch_pair", touch_pair, 3, {8, 8, 8}});
    enum { N = 8 };
    CUdeviceptr c[N];
    size_t bytes = 64 * MiB;
    for (int i = 0; i < N; i++) {
        OK(cuMemAlloc(&c[i], bytes));
        CHECK(is_managed(c[i]) == 1);
    }
    for (int i = 0; i < N; i += 2) {
        void *args[] = {&c[i], &c[i + 1], &bytes};
        OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    }
    OK(cuCtxSynchronize());
    lms_device_stats s = stats(0);
    CHECK(s.prefetched_bytes >= BUDGET - 64 * MiB);
    CHECK(s.used + 64 * MiB > s.budget);               /* no room left as it stands */
    CUmemGenericAllocationHandle h;
    OK(create(&h, 64 * MiB));
    OK(cuCtxSynchronize());
    check_budget(0);
    CHECK(stats(0).evicted_bytes >= 64 * MiB);
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 64 * MiB, 0, 0, 0));
    OK(cuMemMap(va, 64 * MiB, 0, h, 0));
    OK(cuMemRelease(h));
    OK(cuMemUnmap(va, 64 * MiB));
    OK(cuMemAddressFree(va, 64 * MiB));
    for (int i = 0; i < N; i++)
        OK(cuMemFree(c[i]));
    check_all_back();
    check_no_hazards(0, false);
}

/* ---- creations beside launches that fetch ------------------------------- */

static CUfunction fc_fn;
static CUdeviceptr fc_chunks[8];
static bool fc_count_only;   /* only lmshim's count is held to the budget */

/* The budget as these cases hold it: lmshim's count (and, unless
 * fc_count_only, the simulated device's bytes) within it. */
static void fc_check(void)
{
    if (fc_count_only) {
        lms_device_stats s = stats(0);
        CHECK(s.used <= s.budget);
        CHECK_EQ_U(s.budget_violations, 0);
    } else {
        check_budget(0);
    }
}

/* Launches touch_pair on random pairs of the eight chunks until mix_done,
 * on its own stream. */
static void *fc_launcher(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg + 3;
    OK(cuCtxSetCurrent(mix_ctx));
    CUstream st;
    OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    size_t bytes = 64 * MiB;
    uint64_t n = 0;
    while (!atomic_load(&mix_done)) {
        int a = (int)(xorshift(&x) % 8), b = (a + 1 + (int)(xorshift(&x) % 7)) % 8;
        void *args[] = {&fc_chunks[a], &fc_chunks[b], &bytes};
        OK(cuLaunchKernel(fc_fn, 1, 1, 1, 32, 1, 1, 0, st, args, NULL));
        fc_check();
        n++;
    }
    OK(cuStreamSynchronize(st));
    OK(cuStreamDestroy(st));
    return (void *)(uintptr_t)n;
}

static bool fc_alloc;   /* the creators allocate with cuMemAlloc instead */

/* Creates, maps and releases 64 MiB 300 times (or, with fc_alloc,
 * allocates and frees 4 MiB of device memory); with LMS_ON_OOM=fail a
 * refusal is an answer. */
static void *fc_creator(void *arg)
{
    (void)arg;
    OK(cuCtxSetCurrent(mix_ctx));
    if (fc_alloc) {
        uint64_t made = 0;
        for (int i = 0; i < 300; i++) {
            CUdeviceptr p;
            CUresult r = cuMemAlloc(&p, 4 * MiB);
            if (r == CUDA_ERROR_OUT_OF_MEMORY && mix_fail)
                continue;
            OK(r);
            made += is_managed(p) == 0;   /* on the device, as asked */
            check_budget(0);
            OK(cuMemFree(p));
        }
        return (void *)(uintptr_t)made;
    }
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 64 * MiB, 0, 0, 0));
    uint64_t made = 0;
    for (int i = 0; i < 300; i++) {
        CUmemGenericAllocationHandle h;
        CUresult r = create(&h, 64 * MiB);
        if (r == CUDA_ERROR_OUT_OF_MEMORY && mix_fail)
            continue;
        OK(r);
        made++;
        check_budget(0);
        OK(cuMemMap(va, 64 * MiB, 0, h, 0));
        OK(cuMemRelease(h));
        OK(cuMemUnmap(va, 64 * MiB));
    }
    OK(cuMemAddressFree(va, 64 * MiB));
    return (void *)(uintptr_t)made;
}

/* Two threads launch kernels that keep the budget full of fetched chunks
 * while two threads create 64 MiB at once: every creation gets its room
 * from the fetched chunks (none is refused, the budget is never passed),
 * no eviction hits a chunk in use, and everything comes back. */
static void fetch_and_create(void)
{
    fc_alloc = getenv("FC_ALLOC") != NULL;
    mix_ctx = primary_context(0);
    mix_fail = getenv("LMS_ON_OOM") && strcmp(getenv("LMS_ON_OOM"), "fail") == 0;
    fc_fn = sim_function(&(simgpu_kernel){"touch_pair", touch_pair, 3, {8, 8, 8}});
    for (int i = 0; i < 8; i++) {
        OK(cuMemAlloc(&fc_chunks[i], 64 * MiB));
        CHECK(is_managed(fc_chunks[i]) == 1);
    }
    pthread_t l[2], c[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&l[i], NULL, fc_launcher, (void *)(uintptr_t)i) == 0);
    for (int i = 0; i < 2000 && stats(0).prefetched_bytes < BUDGET; i++)
        usleep(1000);   /* the creators start once the launches filled the budget */
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&c[i], NULL, fc_creator, NULL) == 0);
    uint64_t made = 0, launches = 0;
    for (int i = 0; i < 2; i++) {
        void *m;
        pthread_join(c[i], &m);
        made += (uint64_t)(uintptr_t)m;
    }
    atomic_store(&mix_done, true);
    for (int i = 0; i < 2; i++) {
        void *n;
        pthread_join(l[i], &n);
        launches += (uint64_t)(uintptr_t)n;
    }
    lms_device_stats s = stats(0);
    printf("%llu creations, %llu launches, %llu MiB fetched, %llu MiB evicted\n", (unsigned long long)made,
           (unsigned long long)launches, (unsigned long long)(s.prefetched_bytes / MiB),
           (unsigned long long)(s.evicted_bytes / MiB));
    CHECK_EQ_U(made, 600);                             /* fetched chunks always made way */
    CHECK_EQ_U(s.oom_failures, 0);
    CHECK(s.prefetched_bytes > 0 && s.evicted_bytes > 0);
    check_budget(0);
    for (int i = 0; i < 8; i++)
        OK(cuMemFree(fc_chunks[i]));
    check_all_back();
    check_no_hazards(0, false);
}

/* ---- graph memory beside launches that fetch ----------------------------- */

/* 300 times: a graph that allocates 64 MiB, touches it and frees it is
 * launched and waited for, then the graph pool is trimmed; lmshim charges
 * the pool's growth after each launch. */
static void *fg_grapher(void *arg)
{
    (void)arg;
    OK(cuCtxSetCurrent(mix_ctx));
    CUstream st;
    OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    static size_t bytes = 64 * MiB;
    static CUdeviceptr where;
    for (int i = 0; i < 300; i++) {
        CUgraph g;
        OK(cuGraphCreate(&g, 0));
        CUDA_MEM_ALLOC_NODE_PARAMS ap = graph_alloc_params(bytes, 0);
        CUgraphNode an, kn, fn;
        OK(cuGraphAddMemAllocNode(&an, g, NULL, 0, &ap));
        where = ap.dptr;
        void *args[] = {&where, &where, &bytes};
        CUDA_KERNEL_NODE_PARAMS kp = {.func = fc_fn, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                      .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1, .kernelParams = args};
        OK(cuGraphAddKernelNode(&kn, g, &an, 1, &kp));
        OK(cuGraphAddMemFreeNode(&fn, g, &kn, 1, ap.dptr));
        CUgraphExec e;
        OK(cuGraphInstantiate(&e, g, 0));
        OK(cuGraphLaunch(e, st));
        fc_check();
        OK(cuStreamSynchronize(st));
        OK(cuGraphExecDestroy(e));
        OK(cuGraphDestroy(g));
        OK(cuDeviceGraphMemTrim(0));
    }
    OK(cuStreamDestroy(st));
    return NULL;
}

/* Two threads launch kernels that keep the budget full of fetched chunks
 * while a third runs graphs that grow the graph pool by 64 MiB each time:
 * the pool's growth gets its room from the fetched chunks, and lmshim's
 * count never passes the budget. (The device itself holds the pool's
 * growth from the launch on, before lmshim can see it.) */
static void fetch_and_graph(void)
{
    fc_count_only = true;
    mix_ctx = primary_context(0);
    fc_fn = sim_function(&(simgpu_kernel){"touch_pair", touch_pair, 3, {8, 8, 8}});
    for (int i = 0; i < 8; i++)
        OK(cuMemAlloc(&fc_chunks[i], 64 * MiB));
    pthread_t l[2], g;
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&l[i], NULL, fc_launcher, (void *)(uintptr_t)i) == 0);
    for (int i = 0; i < 2000 && stats(0).prefetched_bytes < BUDGET; i++)
        usleep(1000);   /* the graphs start once the launches filled the budget */
    CHECK(pthread_create(&g, NULL, fg_grapher, NULL) == 0);
    pthread_join(g, NULL);
    atomic_store(&mix_done, true);
    for (int i = 0; i < 2; i++)
        pthread_join(l[i], NULL);
    fc_check();
    for (int i = 0; i < 8; i++)
        OK(cuMemFree(fc_chunks[i]));
    check_all_back();
    check_no_hazards(0, false);
}

/* ---- the last room, raced for --------------------------------------------- */

enum { RACE_ROUNDS = 100000 };
static pthread_barrier_t race_bar;
static atomic_int race_wins[2];
static atomic_ullong race_total[2];   /* rounds each racer won */

/* Racer 0 creates 64 MiB, racer 1 allocates 64 MiB with cuMemAlloc, both
 * at once for the one room of 64 MiB left, holding what they got until
 * both tried. Returns the rounds both lost. */
static void *racer(void *arg)
{
    int me = (int)(uintptr_t)arg;
    uint64_t x = (uint64_t)me * 7919 + 17;
    OK(cuCtxSetCurrent(mix_ctx));
    uint64_t both_lost = 0;
    for (int round = 0; round < RACE_ROUNDS; round++) {
        CUmemGenericAllocationHandle h;
        CUdeviceptr p;
        pthread_barrier_wait(&race_bar);
        for (volatile uint64_t spin = xorshift(&x) % 20000; spin > 0; spin--)
            ;   /* a start drawn anew each round */
        CUresult r = me == 0 ? create(&h, 64 * MiB) : cuMemAlloc(&p, 64 * MiB);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_OUT_OF_MEMORY)
            OK(r);
        if (r == CUDA_SUCCESS) {
            atomic_fetch_add(&race_wins[me], 1);
            atomic_fetch_add(&race_total[me], 1);
        }
        pthread_barrier_wait(&race_bar);
        if (me == 0 && atomic_load(&race_wins[0]) + atomic_load(&race_wins[1]) == 0)
            both_lost++;
        pthread_barrier_wait(&race_bar);
        if (r == CUDA_SUCCESS)
            OK(me == 0 ? cuMemRelease(h) : cuMemFree(p));
        if (me == 0)
            atomic_store(&race_wins[0], 0), atomic_store(&race_wins[1], 0);
    }
    return (void *)(uintptr_t)both_lost;
}

/* The budget is the whole device (SIMGPU_MEM=LMS_LIMIT) and 64 MiB of it
 * is left: a cuMemCreate and a cuMemAlloc of 64 MiB race for it with
 * LMS_ON_OOM=fail, and one of them gets it every round. A creation the
 * budget refuses must not take the device memory of an allocation the
 * budget let in (the driver answering first held it until refused). */
static void last_room(void)
{
    mix_ctx = primary_context(0);
    CUdeviceptr hold;
    OK(cuMemAlloc(&hold, BUDGET - 64 * MiB));
    CHECK_EQ_U(sim_used(), BUDGET - 64 * MiB);
    pthread_barrier_init(&race_bar, NULL, 2);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, racer, (void *)(uintptr_t)i) == 0);
    void *lost;
    pthread_join(t[0], &lost);
    pthread_join(t[1], NULL);
    printf("both lost %llu of %d rounds; cuMemCreate won %llu, cuMemAlloc %llu\n",
           (unsigned long long)(uintptr_t)lost, RACE_ROUNDS, (unsigned long long)atomic_load(&race_total[0]),
           (unsigned long long)atomic_load(&race_total[1]));
    CHECK_EQ_U((uintptr_t)lost, 0);
    OK(cuMemFree(hold));
    check_all_back();
}

/* ---- two processes of one group ------------------------------------------ */

enum { GROUP_THREADS = 6, GROUP_ROUNDS = 2000 };
static pthread_barrier_t group_bar;

/* One member thread: GROUP_ROUNDS creations of 64 MiB, each held until
 * every thread of the process has tried. */
static void *group_creator(void *arg)
{
    (void)arg;
    OK(cuCtxSetCurrent(mix_ctx));
    uint64_t ok = 0;
    for (int round = 0; round < GROUP_ROUNDS; round++) {
        CUmemGenericAllocationHandle h;
        CUresult r = create(&h, 64 * MiB);
        if (!(r == CUDA_SUCCESS || (r == CUDA_ERROR_OUT_OF_MEMORY && mix_fail)))
            _exit(3);
        pthread_barrier_wait(&group_bar);
        if (r == CUDA_SUCCESS) {
            ok++;
            if (cuMemRelease(h) != CUDA_SUCCESS)
                _exit(4);
        }
        pthread_barrier_wait(&group_bar);
    }
    return (void *)(uintptr_t)ok;
}

/* A member: waits for fd 4 to close (both start together), then runs the
 * creators; its charge is back to 0 at the end. */
static void member_creator(const char *arg)
{
    (void)arg;
    mix_ctx = primary_context(0);
    mix_fail = getenv("LMS_ON_OOM") && strcmp(getenv("LMS_ON_OOM"), "fail") == 0;
    CHECK_EQ_U(info_used(), 0);                        /* joined the group */
    CHECK(write(3, "r", 1) == 1);
    wait_release();
    pthread_barrier_init(&group_bar, NULL, GROUP_THREADS);
    pthread_t t[GROUP_THREADS];
    for (int i = 0; i < GROUP_THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, group_creator, NULL) == 0);
    uint64_t ok = 0;
    for (int i = 0; i < GROUP_THREADS; i++) {
        void *c;
        pthread_join(t[i], &c);
        ok += (uint64_t)(uintptr_t)c;
    }
    CHECK(ok > 0);
    CHECK_EQ_U(stats(0).used, 0);
    CHECK_EQ_U(sim_used(), 0);
}

/* Two members of one group with a 512 MiB budget create 64 MiB from six
 * threads each, at once: with LMS_ON_OOM=fail the group's charge never
 * passes the budget (watched here through the group file, and its peak),
 * and every charge comes back. */
static void group_two(void)
{
    fresh_dir();
    bool fail = getenv("LMS_ON_OOM") && strcmp(getenv("LMS_ON_OOM"), "fail") == 0;
    int ready[2], go[2];
    CHECK(pipe2(ready, O_CLOEXEC) == 0 && pipe2(go, O_CLOEXEC) == 0);
    pid_t pid[2];
    for (int m = 0; m < 2; m++) {
        fflush(NULL);
        pid[m] = fork();
        CHECK(pid[m] >= 0);
        if (pid[m] == 0) {
            dup2(ready[1], 3);
            dup2(go[0], 4);
            member_exec("vmm", "512M", "creator", "", NULL);
        }
    }
    close(ready[1]);
    close(go[0]);
    for (int m = 0; m < 2; m++) {
        char ch;
        CHECK(read(ready[0], &ch, 1) == 1);
    }
    lms_group_header *h = map_group("vmm");
    CHECK_EQ_U(atomic_load(&h->budget[0]), BUDGET);
    close(go[1]);                                      /* both start */
    uint64_t looks = 0, most = 0;
    for (int live = 2; live > 0;) {
        if (fail)
            check_invariant(h);
        uint64_t c = atomic_load(&h->charged[0]);
        most = c > most ? c : most;
        looks++;
        for (int m = 0; m < 2; m++) {
            int st;
            if (pid[m] > 0 && waitpid(pid[m], &st, WNOHANG) == pid[m]) {
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                    fprintf(stderr, "member %d ended with status 0x%x\n", (int)pid[m], st);
                    exit(1);
                }
                pid[m] = -1;
                live--;
            }
        }
    }
    printf("%llu looks, most charged %llu MiB seen, group peak %llu MiB\n", (unsigned long long)looks,
           (unsigned long long)(most / MiB), (unsigned long long)(atomic_load(&h->peak[0]) / MiB));
    if (fail)
        CHECK(atomic_load(&h->peak[0]) <= BUDGET);   /* not even for an instant */
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
}

/* ---- a refusal in the trace ---------------------------------------------- */

/* A member that asks for 768 MiB past the 512 MiB budget (refused with
 * LMS_ON_OOM=fail) and for 64 MiB, then exits. */
static void member_refuser(const char *arg)
{
    (void)arg;
    primary_context(0);
    CUmemGenericAllocationHandle h;
    CHECK_IS(create(&h, 768 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(create(&h, 64 * MiB));
    OK(cuMemRelease(h));
}

/* A creation LMS_ON_OOM=fail refuses is an `oom` line of the trace, as a
 * refused device allocation is (docs/TRACE.md), and nothing else is. */
static void refusal_traced(void)
{
    fresh_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/refusal.trace", dir);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setenv("LMS_TRACE", path, 1);
        setenv("GROUP_TEST_DIR", dir, 1);
        execl(self, self, "member", "refuser", "", (char *)NULL);
        _exit(127);
    }
    reap(pid);
    CHECK_EQ_U(lines_with(path, "\"type\":\"oom\""), 1);
    CHECK_EQ_U(lines_with(path, "\"size\":805306368"), 1);   /* its size */
    CHECK_EQ_U(lines_with(path, "\"oom\":1,"), 1);            /* the summary counts it */
}

static const member_kind members[] = {{"creator", member_creator}, {"refuser", member_refuser}};

static const test_case cases[] = {
    {"released_while_mapped", released_while_mapped},
    {"bad_creations", bad_creations},
    {"threads_mix", threads_mix},
    {"fork_creates", fork_creates},
    {"fetched_make_way", fetched_make_way},
    {"group_two", group_two},
    {"last_room", last_room},
    {"refusal_traced", refusal_traced},
    {"other_device", other_device},
    {"fetch_and_create", fetch_and_create},
    {"fetch_and_graph", fetch_and_graph},
};

int main(int argc, char **argv)
{
    return group_main(argc, argv, members, sizeof members / sizeof members[0], cases,
                      sizeof cases / sizeof cases[0]);
}
