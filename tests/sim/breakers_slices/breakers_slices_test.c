/*
 * breakers_slices_test.c — hostile programs against the ledger of freed
 * bytes and the moves in slices (src/engine/residency.c): a chunk fetched
 * again while its own eviction is still queued, chunks around the slice
 * size, more evictions than the ledger's ring, kernels reading what the
 * previous kernel wrote across streams and threads. liblmshim.so is
 * preloaded over the simulated GPU (settings in meson.build: a 128 MiB
 * budget, every chunk managed); modeled times come from the simulator's
 * timeline file (SIMGPU_TIMELINE).
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "lmshim.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define MAXOPS 65536

/* stamp(p, bytes, v): touches [p, p+bytes), writes v to its first and last word. */
static void stamp(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    uint32_t v = *(uint32_t *)p[2];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    uint32_t *w = (uint32_t *)(uintptr_t)a;
    w[0] = v;
    w[bytes / 4 - 1] = v;
}

/* follow(p, q, bytes): touches both; writes 1 + p's first word to q's first and last words. */
static void follow(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0], b = *(CUdeviceptr *)p[1];
    size_t bytes = *(size_t *)p[2];
    l->access(l, a, bytes, SIMGPU_READ);
    l->access(l, b, bytes, SIMGPU_READ_WRITE);
    uint32_t *x = (uint32_t *)(uintptr_t)a, *y = (uint32_t *)(uintptr_t)b;
    y[0] = x[0] + 1;
    y[bytes / 4 - 1] = x[bytes / 4 - 1] + 1;
}

/* slow(p, bytes, v): as stamp, then 20 ms of compute. */
static void slow(simgpu_launch *l, void **p)
{
    stamp(l, p);
    l->compute(l, 20e6);
}

static CUfunction f_stamp, f_follow, f_slow;
static CUmodule mod;

static void setup(void)
{
    primary_context(0);
    simgpu_kernel k1 = {"stamp", stamp, 3, {8, 8, 4}};
    simgpu_kernel k2 = {"follow", follow, 3, {8, 8, 8}};
    simgpu_kernel k3 = {"slow", slow, 3, {8, 8, 4}};
    OK(simgpu_register_kernel(&k1));
    OK(simgpu_register_kernel(&k2));
    OK(simgpu_register_kernel(&k3));
    OK(cuModuleLoadData(&mod, "x"));
    OK(cuModuleGetFunction(&f_stamp, mod, "stamp"));
    OK(cuModuleGetFunction(&f_follow, mod, "follow"));
    OK(cuModuleGetFunction(&f_slow, mod, "slow"));
}

static void launch_stamp(CUfunction f, CUdeviceptr p, size_t bytes, uint32_t v, CUstream s)
{
    void *args[] = {&p, &bytes, &v};
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
}

/* One modeled copy of the timeline. */
typedef struct op {
    bool to_device;
    double start, end;   /* us */
    uint64_t bytes;
} op;

/* The prefetches of the timeline file from byte `from` of it, in issue
 * order; returns how many (at most MAXOPS). */
static int read_ops(long from, op *ops)
{
    const char *path = getenv("SIMGPU_TIMELINE");
    CHECK(path != NULL);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    CHECK(fseek(f, from, SEEK_SET) == 0);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < MAXOPS) {
        int dev, used = 0;
        char engine[16], stream[64];
        double s, e;
        unsigned long long b;
        if (sscanf(line, "%d %15s %63s %lf %lf %llu %n", &dev, engine, stream, &s, &e, &b, &used) != 6)
            continue;
        const char *what = line + used;
        bool in = strncmp(what, "prefetch to device", 18) == 0, out = strncmp(what, "prefetch to host", 16) == 0;
        if (in || out)
            ops[n++] = (op){.to_device = in, .start = s, .end = e, .bytes = b};
    }
    fclose(f);
    return n;
}

/* The timeline's length in bytes now (what later operations follow). */
static long timeline_mark(void)
{
    FILE *f = fopen(getenv("SIMGPU_TIMELINE"), "r");
    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long at = ftell(f);
    fclose(f);
    return at;
}

/* The checks every case ends with. */
static void check_end(void)
{
    OK(cuCtxSynchronize());
    simgpu_counters k;
    OK(simgpu_get_counters(0, &k));
    CHECK_EQ_U(k.inflight_waits, 0);
    CHECK_EQ_U(k.busy_evictions, 0);
    int (*get_stats)(int, lms_device_stats *) =
        (int (*)(int, lms_device_stats *))dlsym(RTLD_DEFAULT, "lms_get_stats");
    CHECK(get_stats != NULL);
    lms_device_stats st;
    CHECK(get_stats(0, &st) == 0);
    CHECK_EQ_U(st.budget_violations, 0);
}

/* X (24 MiB: two slices) is used by a slow kernel on stream A; W1, W2
 * (50 and 54 MiB) by quick ones on B, so X is the least recently used
 * and the budget is full. A device allocation of 512 KiB evicts X, whose
 * eviction waits for the slow kernel. W1 and W2 are freed: the room is
 * back at once. A launch on X on a third stream C fetches X again with
 * room to spare: its copy in must still come after its own copy out
 * (else the copy out, which waits for the slow kernel, runs last on the
 * GPU and leaves X on the host while the engine counts it resident). The
 * kernel reads what the slow kernel wrote. */
static void refetch_own_eviction(void)
{
    setup();
    CUstream a, b, c;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x, w1, w2, z;
    OK(cuMemAlloc(&x, 24 * MiB));
    OK(cuMemAlloc(&w1, 50 * MiB));
    OK(cuMemAlloc(&w2, 54 * MiB));
    launch_stamp(f_stamp, x, 24 * MiB, 1, a);
    launch_stamp(f_stamp, w1, 50 * MiB, 1, b);
    launch_stamp(f_stamp, w2, 54 * MiB, 1, b);
    OK(cuCtxSynchronize());
    long mark = timeline_mark();
    launch_stamp(f_slow, x, 24 * MiB, 7, a);
    launch_stamp(f_stamp, w1, 50 * MiB, 2, b);
    launch_stamp(f_stamp, w2, 54 * MiB, 2, b);
    OK(cuStreamSynchronize(b));
    OK(cuMemAlloc(&z, 512 << 10));   /* a device chunk: evicts X */
    OK(cuMemFree(w1));
    OK(cuMemFree(w2));
    size_t bytes = 512 << 10;
    void *args[] = {&x, &z, &bytes};
    OK(cuLaunchKernel(f_follow, 1, 1, 1, 32, 1, 1, 0, c, args, NULL));   /* fetches X again */
    OK(cuCtxSynchronize());
    uint32_t v = 0;
    OK(cuMemcpyDtoH(&v, z, 4));
    CHECK_EQ_U(v, 8);   /* X's stamp from the slow kernel, plus one */
    static op ops[MAXOPS];
    int n = read_ops(mark, ops);
    /* Only X leaves after the mark, and only X comes in after it left. */
    double out_end[8], in_start[8];
    int outs = 0, ins = 0;
    for (int i = 0; i < n; i++) {
        if (!ops[i].to_device && outs < 8)
            out_end[outs++] = ops[i].end;
        else if (ops[i].to_device && outs > 0 && ins < 8)
            in_start[ins++] = ops[i].start;
    }
    CHECK_EQ_U(outs, 2);   /* two slices each way */
    CHECK_EQ_U(ins, 2);
    for (int k = 0; k < 2; k++) {
        fprintf(stderr, "X's slice %d leaves until %.1f us, comes back from %.1f us\n", k, out_end[k], in_start[k]);
        CHECK(in_start[k] >= out_end[k] - 0.01);
    }
    check_end();
    OK(cuMemFree(x));
    OK(cuMemFree(z));
    OK(cuStreamDestroy(a));
    OK(cuStreamDestroy(b));
    OK(cuStreamDestroy(c));
}

static const test_case cases[] = {
    {"refetch_own_eviction", refetch_own_eviction},
};

TEST_MAIN(cases)
