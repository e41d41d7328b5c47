/*
 * link_test.c — the link shared between copies and kernels' streaming
 * (docs/SIMULATOR.md, "The time model"): each case issues kernels that
 * read, write or read and write pinned host memory, and copies on other
 * streams before or after them, and checks every end time against the
 * documented rule. L is 100 MiB of link time at 55 GB/s. The copies use
 * other buffers than the kernels, so that only the link orders them.
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "../../common/timeline.h"
#include "simgpu.h"

#define BYTES (100 * MiB)
#define L ((double)BYTES / 55.0)   /* ns */

/* rw(ptr, bytes, mode, compute_ns): one pass over a range in `mode`. */
static void rw(simgpu_launch *l, void **p)
{
    l->access(l, *(CUdeviceptr *)p[0], *(size_t *)p[1], *(int *)p[2]);
    l->compute(l, *(double *)p[3]);
}

static CUfunction f_rw;
static CUdeviceptr host, dev;
static void *hostp, *hostc;   /* the kernels' range; the copies' (no range shared) */
static CUstream s1, s2, s3;
static CUevent t0;

/* Context, kernel, 100 MiB pinned and device buffers, three streams. */
static void setup(void)
{
    primary_context(0);
    f_rw = sim_function(&(simgpu_kernel){"rw", rw, 4, {8, 8, 4, 8}});
    OK(cuMemAllocHost(&hostp, BYTES));
    OK(cuMemAllocHost(&hostc, BYTES));
    host = (CUdeviceptr)(uintptr_t)hostp;
    OK(cuMemAlloc(&dev, BYTES));
    OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&t0, 0));
}

/* Marks time 0: everything before has ended. */
static void start(void)
{
    OK(cuCtxSynchronize());
    OK(cuEventRecord(t0, s1));
}

/* The ends of what s1, s2 and s3 have issued, in ns from time 0: events
 * are recorded on all three before any wait (a wait advances the host's
 * clock, which later records would stamp). */
static void ends(double out[3])
{
    CUstream s[3] = {s1, s2, s3};
    CUevent e[3];
    for (int i = 0; i < 3; i++) {
        OK(cuEventCreate(&e[i], 0));
        OK(cuEventRecord(e[i], s[i]));
    }
    for (int i = 0; i < 3; i++) {
        OK(cuEventSynchronize(e[i]));
        float ms = 0;
        OK(cuEventElapsedTime(&ms, t0, e[i]));
        out[i] = ms * 1e6;
        OK(cuEventDestroy(e[i]));
    }
}

/* A kernel on s over the pinned buffer in `mode` with `compute` ns. */
static void kernel(CUstream s, int mode, double compute)
{
    size_t bytes = BYTES;
    void *args[] = {&host, &bytes, &mode, &compute};
    OK(cuLaunchKernel(f_rw, 1, 1, 1, 128, 1, 1, 0, s, args, NULL));
}

static void h2d(CUstream s) { OK(cuMemcpyHtoDAsync(dev, hostc, BYTES, s)); }
static void d2h(CUstream s) { OK(cuMemcpyDtoHAsync(hostc, dev, BYTES, s)); }

#define TOL 1e-4   /* relative: event stamps are floats in ms */

/* Reads: copies to the device issued after the kernel wait for its
 * streaming, copies to the host do not. */
static void read_then_copies(void)
{
    setup();
    start();
    kernel(s1, SIMGPU_READ, 0);
    h2d(s2);
    d2h(s3);
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], L, TOL);
        CHECK_NEAR(t[1], 2 * L, TOL);
        CHECK_NEAR(t[2], L, TOL);
    }
}

/* Writes: the other direction. */
static void write_then_copies(void)
{
    setup();
    start();
    kernel(s1, SIMGPU_WRITE, 0);
    h2d(s2);
    d2h(s3);
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], L, TOL);
        CHECK_NEAR(t[1], L, TOL);
        CHECK_NEAR(t[2], 2 * L, TOL);
    }
}

/* A range read and written: its link bytes count once in the kernel's
 * time, and both directions are held while it streams. */
static void read_write_then_copies(void)
{
    setup();
    start();
    kernel(s1, SIMGPU_READ | SIMGPU_WRITE, 0);
    h2d(s2);
    d2h(s3);
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], L, TOL);
        CHECK_NEAR(t[1], 2 * L, TOL);
        CHECK_NEAR(t[2], 2 * L, TOL);
    }
}

/* Copies issued before: a reading kernel's streaming waits for the copy to
 * the device only; a writing one for the copy to the host only. */
static void copies_then_kernels(void)
{
    setup();
    start();
    h2d(s2);
    kernel(s1, SIMGPU_READ, 0);
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], 2 * L, TOL);
    }
    start();
    h2d(s2);
    kernel(s1, SIMGPU_WRITE, 0);
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], L, TOL);
    }
    start();
    d2h(s2);
    kernel(s1, SIMGPU_WRITE, 0);
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], 2 * L, TOL);
    }
}

/* Compute longer than the streaming: the kernel ends after its compute,
 * the direction is free once its streaming ends (a copy issued after it
 * ends at 2L, before the kernel's 3L). */
static void compute_longer(void)
{
    setup();
    start();
    kernel(s1, SIMGPU_READ, 3 * L);
    h2d(s2);
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], 3 * L, TOL);
        CHECK_NEAR(t[1], 2 * L, TOL);
    }
}

/* With SIMGPU_CONCURRENT=1 two reading kernels on different streams run
 * side by side but share the direction: the second streams after the
 * first. */
static void concurrent_readers(void)
{
    setup();
    start();
    kernel(s1, SIMGPU_READ, 0);
    kernel(s2, SIMGPU_READ, 0);
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], L, TOL);
        CHECK_NEAR(t[1], 2 * L, TOL);
    }
}

/* A graph's kernel node shares the link as a launch does. */
static void graph_reader(void)
{
    setup();
    OK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    kernel(s1, SIMGPU_READ, 0);
    CUgraph g;
    OK(cuStreamEndCapture(s1, &g));
    CUgraphExec ge;
    OK(cuGraphInstantiate(&ge, g, 0));
    start();
    h2d(s2);
    OK(cuGraphLaunch(ge, s1));
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], 2 * L, TOL);
    }
    OK(cuGraphExecDestroy(ge));
    OK(cuGraphDestroy(g));
}


/* A memset of pinned host memory writes over the link: it shares the
 * device-to-host direction as a kernel's writes do (waits for a copy to
 * the host issued before it, holds the direction against one issued
 * after), and leaves the other direction alone. */
static void memset_host(void)
{
    setup();
    start();
    d2h(s2);
    OK(cuMemsetD8Async(host, 1, BYTES, s1));
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], 2 * L, TOL);
    }
    start();
    h2d(s2);
    OK(cuMemsetD32Async(host, 7, BYTES / 4, s1));
    d2h(s3);
    {
        double t[3];
        ends(t);
        CHECK_NEAR(t[0], L, TOL);
        CHECK_NEAR(t[2], 2 * L, TOL);
    }
}

/* Every operation the time model places writes a timeline line, memsets
 * too: one line for one memset of 100 MiB, on the compute engine, L long. */
static void memset_timeline(void)
{
    setup();
    const char *path = getenv("SIMGPU_TIMELINE");
    CHECK(path != NULL);
    start();
    OK(cuMemsetD8Async(dev, 1, BYTES, s1));
    OK(cuMemsetD8Async(host, 1, BYTES, s1));
    OK(cuCtxSynchronize());
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char buf[512];
    int n = 0;
    while (fgets(buf, sizeof buf, f)) {
        timeline_line t;
        if (timeline_parse(buf, &t) && strncmp(t.what, "memset", 6) == 0) {
            CHECK(strcmp(t.engine, "compute") == 0);
            CHECK_EQ_U(t.bytes, BYTES);
            n++;
            if (n == 2)
                CHECK_NEAR((t.end - t.start) * 1e3, L, 1e-4);
        }
    }
    fclose(f);
    CHECK_EQ_U(n, 2);
}


/* A kernel's timeline line explains its length: launch + wait + stall +
 * max(compute, link_wait + remote), with link_wait the time its streaming
 * waited for a copy issued before it in the same direction (here L). */
static void timeline_link_wait(void)
{
    setup();
    const char *path = getenv("SIMGPU_TIMELINE");
    CHECK(path != NULL);
    start();
    h2d(s2);
    kernel(s1, SIMGPU_READ, 0);
    OK(cuCtxSynchronize());
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char buf[512];
    int n = 0;
    while (fgets(buf, sizeof buf, f)) {
        double t0us, t1us, wait, stall, compute, remote, link_wait = -1;
        char *k = strstr(buf, " kernel rw ");
        if (!k)
            continue;
        CHECK(sscanf(buf, "%*d %*s %*p %lf %lf", &t0us, &t1us) == 2);
        CHECK(sscanf(k, " kernel rw wait=%lf stall=%lf compute=%lf remote=%lf link_wait=%lf", &wait, &stall,
                     &compute, &remote, &link_wait) == 5);
        CHECK_NEAR(link_wait * 1e3, L, 1e-4);
        CHECK_NEAR(t1us - t0us, wait + stall + (compute > link_wait + remote ? compute : link_wait + remote),
                   1e-4);
        n++;
    }
    fclose(f);
    CHECK_EQ_U(n, 1);
}

static const test_case cases[] = {
    {"read_then_copies", read_then_copies},
    {"write_then_copies", write_then_copies},
    {"read_write_then_copies", read_write_then_copies},
    {"copies_then_kernels", copies_then_kernels},
    {"compute_longer", compute_longer},
    {"concurrent_readers", concurrent_readers},
    {"graph_reader", graph_reader},
    {"memset_host", memset_host},
    {"memset_timeline", memset_timeline},
    {"timeline_link_wait", timeline_link_wait},
};

TEST_MAIN(cases)
