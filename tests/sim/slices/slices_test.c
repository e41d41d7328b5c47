/*
 * slices_test.c — evictions and fetches pipeline at slice granularity:
 * a fetch waits for the slices of the evictions whose bytes its room
 * needs, not for whole victims, and the device never holds more than the
 * budget on the modeled timeline. liblmshim.so is preloaded over the
 * simulated GPU (settings in meson.build: a 128 MiB budget, lru, every
 * chunk managed); the modeled times come from the simulator's timeline
 * file (SIMGPU_TIMELINE, docs/SIMULATOR.md "The timeline file").
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "../../common/timeline.h"
#include "lmshim.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define BUDGET (128 * MiB)
#define MAXOPS 4096

/* span(p, bytes): touches [p, p+bytes), adds 1 to its first byte. */
static void span(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint8_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
}

/* slow(p, bytes): as span, then 10 ms of compute. */
static void slow(simgpu_launch *l, void **p)
{
    span(l, p);
    l->compute(l, 10e6);
}

static CUfunction f_span, f_slow;
static CUmodule mod;

static void setup(void)
{
    primary_context(0);
    simgpu_kernel k = {"span", span, 2, {8, 8}};
    OK(simgpu_register_kernel(&k));
    OK(cuModuleLoadData(&mod, "x"));
    OK(cuModuleGetFunction(&f_span, mod, "span"));
    simgpu_kernel k2 = {"slow", slow, 2, {8, 8}};
    OK(simgpu_register_kernel(&k2));
    OK(cuModuleGetFunction(&f_slow, mod, "slow"));
}

/* A managed chunk (LMS_FRAC=0) used whole by one launch, finished: it is
 * resident and idle. */
static CUdeviceptr used_chunk(size_t bytes)
{
    CUdeviceptr c;
    OK(cuMemAlloc(&c, bytes));
    void *args[] = {&c, &bytes};
    OK(cuLaunchKernel(f_span, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    OK(cuCtxSynchronize());
    return c;
}

/* The most managed bytes on the device at any modeled time. */
static uint64_t peak_on_timeline(void)
{
    static timeline_op ops[MAXOPS];
    return timeline_peak(ops, timeline_read_ops(0, ops, MAXOPS), 0);
}

/* The checks every case ends with: nothing read mid-copy, evicted in use
 * or faulted in, no budget violation, the budget kept on the timeline. */
static void check_end(void)
{
    OK(cuCtxSynchronize());
    check_no_hazards(0, true);
    uint64_t peak = peak_on_timeline();
    if (peak > BUDGET)
        fprintf(stderr, "slices_test: %llu MiB on the device at once on the modeled timeline\n",
                (unsigned long long)(peak / MiB));
    CHECK(peak <= BUDGET);
}

/* The evictions among ops[0..n): the first's start and the last's end. */
static void eviction_span(const timeline_op *ops, int n, double *start, double *end, uint64_t *bytes)
{
    *start = -1, *end = 0, *bytes = 0;
    for (int i = 0; i < n; i++)
        if (!ops[i].to_device) {
            if (*start < 0 || ops[i].start < *start)
                *start = ops[i].start;
            if (ops[i].end > *end)
                *end = ops[i].end;
            *bytes += ops[i].bytes;
        }
}

/* V (64 MiB) and A (56 MiB) resident; a launch on B (16 MiB) needs 8 MiB
 * of room: V goes (least recently used). B's fetch starts once the first
 * 8 MiB of V can be off the device, long before all of V is. */
static void room_from_first_slice(void)
{
    setup();
    CUdeviceptr v = used_chunk(64 * MiB), a = used_chunk(56 * MiB), b;
    OK(cuMemAlloc(&b, 16 * MiB));
    long mark = timeline_mark();
    size_t bytes = 16 * MiB;
    void *args[] = {&b, &bytes};
    OK(cuLaunchKernel(f_span, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    OK(cuCtxSynchronize());
    static timeline_op ops[MAXOPS];
    int n = timeline_read_ops(mark, ops, MAXOPS);
    double t0, t1, fetch = -1;
    uint64_t out;
    eviction_span(ops, n, &t0, &t1, &out);
    CHECK_EQ_U(out, 64 * MiB);   /* V went, whole */
    for (int i = 0; i < n; i++)
        if (ops[i].to_device && fetch < 0)
            fetch = ops[i].start;
    CHECK(fetch >= 0);
    double per_byte = (t1 - t0) / (double)out;
    fprintf(stderr, "eviction %.1f..%.1f us, fetch starts at %.1f us\n", t0, t1, fetch);
    CHECK(fetch >= t0 + 8 * MiB * per_byte - 0.01);   /* its room was off the device */
    CHECK(fetch <= t0 + 0.5 * (t1 - t0));             /* not after the whole victim */
    check_end();
    OK(cuMemFree(v));
    OK(cuMemFree(a));
    OK(cuMemFree(b));
}

/* V1, V2 (32 MiB each) and A (56 MiB) resident; a launch on B (48 MiB)
 * needs 40 MiB of room: V1 and V2 go. B is fetched in slices, each after
 * the slices of V1 and V2 that free its own room: its first bytes arrive
 * while V2 is still leaving. */
static void fetch_in_slices(void)
{
    setup();
    CUdeviceptr v1 = used_chunk(32 * MiB), v2 = used_chunk(32 * MiB), a = used_chunk(56 * MiB), b;
    OK(cuMemAlloc(&b, 48 * MiB));
    long mark = timeline_mark();
    size_t bytes = 48 * MiB;
    void *args[] = {&b, &bytes};
    OK(cuLaunchKernel(f_span, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    OK(cuCtxSynchronize());
    static timeline_op ops[MAXOPS];
    int n = timeline_read_ops(mark, ops, MAXOPS);
    double t0, t1, first = -1;
    uint64_t out, in = 0;
    eviction_span(ops, n, &t0, &t1, &out);
    CHECK_EQ_U(out, 64 * MiB);
    for (int i = 0; i < n; i++)
        if (ops[i].to_device) {
            if (first < 0)
                first = ops[i].start;
            in += ops[i].bytes;
        }
    CHECK_EQ_U(in, 48 * MiB);
    fprintf(stderr, "evictions %.1f..%.1f us, fetch starts at %.1f us\n", t0, t1, first);
    CHECK(first <= t0 + 0.5 * (t1 - t0));   /* its first slice did not wait for both victims */
    check_end();
    OK(cuMemFree(v1));
    OK(cuMemFree(v2));
    OK(cuMemFree(a));
    OK(cuMemFree(b));
}

/* V (48 MiB) used once on stream s, then 70 slow launches on W (40 MiB,
 * resident) there: more records than the stream's ring of 64 events, so
 * V's use has had its event recorded again by a later launch. A launch on
 * B (56 MiB) on another stream needs 16 MiB: V goes, and its eviction waits
 * for no later launch than the first records still in the ring (the 7th
 * slow kernel), not for the one that took its event (the 64th). */
static void evict_old_use(void)
{
    setup();
    CUstream s, s2;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CUdeviceptr w = used_chunk(40 * MiB), v, b;
    OK(cuMemAlloc(&v, 48 * MiB));
    OK(cuMemAlloc(&b, 56 * MiB));
    size_t vb = 48 * MiB, wb = 40 * MiB, bb = 56 * MiB;
    void *va[] = {&v, &vb}, *wa[] = {&w, &wb}, *ba[] = {&b, &bb};
    OK(cuLaunchKernel(f_span, 1, 1, 1, 32, 1, 1, 0, s, va, NULL));
    OK(cuStreamSynchronize(s));
    long mark = timeline_mark();
    for (int i = 0; i < 70; i++)
        OK(cuLaunchKernel(f_slow, 1, 1, 1, 32, 1, 1, 0, s, wa, NULL));
    OK(cuLaunchKernel(f_span, 1, 1, 1, 32, 1, 1, 0, s2, ba, NULL));
    OK(cuCtxSynchronize());
    static timeline_op ops[MAXOPS];
    int n = timeline_read_ops(mark, ops, MAXOPS);
    double t0, t1;
    uint64_t out;
    eviction_span(ops, n, &t0, &t1, &out);
    CHECK_EQ_U(out, 48 * MiB);   /* V went */
    /* The slow kernels run back to back from about the mark on: the 20th
     * ends 200 ms after the first starts. */
    FILE *f = fopen(getenv("SIMGPU_TIMELINE"), "r");
    CHECK(f != NULL);
    CHECK(fseek(f, mark, SEEK_SET) == 0);
    char line[512];
    double first = -1;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "kernel slow") && first < 0)
            CHECK(sscanf(line, "%*d %*s %*s %lf", &first) == 1);
    fclose(f);
    CHECK(first >= 0);
    fprintf(stderr, "slow kernels from %.1f us, V's eviction starts at %.1f us\n", first, t0);
    CHECK(t0 < first + 20 * 10e3);
    check_end();
    OK(cuMemFree(v));
    OK(cuMemFree(w));
    OK(cuMemFree(b));
    OK(cuStreamDestroy(s));
    OK(cuStreamDestroy(s2));
}

static const test_case cases[] = {
    {"room_from_first_slice", room_from_first_slice},
    {"fetch_in_slices", fetch_in_slices},
    {"evict_old_use", evict_old_use},
};

TEST_MAIN(cases)
