/*
 * timeline_test.c — SIMGPU_TIMELINE writes one line per modeled operation
 * (docs/SIMULATOR.md, "The timeline file"): a prefetch to the device on
 * the H2D engine, a kernel that waits for it on the compute engine, a
 * prefetch back on the D2H engine; each line's start and end agree with
 * the time model. One case per meson test; the file's path is the
 * case's argument.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "../../common/timeline.h"
#include "simgpu.h"

#define LINK_US(bytes) ((double)(bytes) / 55.0 / 1e3)   /* 55 GB/s */

static const char *path;
static const CUmemLocation gpu = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, host = {CU_MEM_LOCATION_TYPE_HOST, 0};

/* touch(ptr, bytes, compute_ns): one pass over a range. */
static void touch(simgpu_launch *l, void **p)
{
    l->access(l, *(CUdeviceptr *)p[0], *(size_t *)p[1], SIMGPU_READ);
    l->compute(l, *(double *)p[2]);
}

/* One parsed line. */
typedef struct line {
    int device;
    char engine[16], what[200];
    double start, end;
    unsigned long long bytes;
} line;

/* Reads up to max lines of the timeline file; returns how many. */
static int read_lines(line *out, int max)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f)
        return 0;
    int n = 0;
    char buf[512];
    while (n < max && fgets(buf, sizeof buf, f)) {
        line *l = &out[n];
        timeline_line t;
        if (timeline_parse(buf, &t)) {
            l->device = t.device;
            snprintf(l->engine, sizeof l->engine, "%s", t.engine);
            l->start = t.start;
            l->end = t.end;
            l->bytes = t.bytes;
            snprintf(l->what, sizeof l->what, "%s", t.what);
            l->what[strcspn(l->what, "\n")] = 0;
            n++;
        }
    }
    fclose(f);
    return n;
}

/* A 64 MiB prefetch to the device, a kernel over it (1 ms of compute),
 * a prefetch back: three lines, on h2d, compute, d2h, in the model's
 * times (the kernel, issued at once, waits for the copy). */
static void three_engines(void)
{
    primary_context(0);   /* opens the file (cuInit) */
    CUfunction f = sim_function(&(simgpu_kernel){"touch", touch, 3, {8, 8, 8}});
    size_t bytes = 64 * MiB;
    CUdeviceptr p;
    OK(cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL));
    CUstream side;
    OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    CUevent ev;
    OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    OK(cuMemPrefetchAsync(p, bytes, gpu, 0, side));
    OK(cuEventRecord(ev, side));
    double compute = 1e6;
    void *args[] = {&p, &bytes, &compute};
    OK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    OK(cuMemPrefetchAsync(p, bytes, host, 0, NULL));
    OK(cuCtxSynchronize());
    line l[8];
    int n = read_lines(l, 8);
    CHECK_EQ_U(n, 3);
    if (n != 3)
        return;
    CHECK(strcmp(l[0].engine, "h2d") == 0 && strcmp(l[0].what, "prefetch to device") == 0);
    CHECK_EQ_U(l[0].bytes, bytes);
    CHECK(l[0].end - l[0].start > LINK_US(bytes) - 0.01 && l[0].end - l[0].start < LINK_US(bytes) + 0.01);
    CHECK(strcmp(l[1].engine, "compute") == 0 && strncmp(l[1].what, "kernel touch wait=", 18) == 0);
    CHECK(l[1].end >= l[0].end + 1000.0 - 0.01);   /* it ran after the copy ended, for 1 ms */
    CHECK(strcmp(l[2].engine, "d2h") == 0 && strcmp(l[2].what, "prefetch to host") == 0);
    CHECK(l[2].start >= l[1].end - 0.01);           /* after the kernel on the same stream */
    OK(cuMemFree(p));
}

static const test_case cases[] = {
    {"three_engines", three_engines},
};

/* argv[1]: the case, argv[2]: the timeline file SIMGPU_TIMELINE names. */
int main(int argc, char **argv)
{
    if (argc < 3)
        return run_case(cases, sizeof cases / sizeof cases[0], argc, argv);
    path = argv[2];
    return run_case(cases, sizeof cases / sizeof cases[0], 2, argv);
}
