/*
 * timeline.h — reading the simulator's timeline file (SIMGPU_TIMELINE,
 * docs/SIMULATOR.md "The timeline file"): one line per modeled operation,
 * "device engine stream start_us end_us bytes what...". The readers CHECK
 * that the file opens; the path is SIMGPU_TIMELINE's unless given.
 */
#ifndef TIMELINE_H
#define TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* One parsed line; `what` points into the caller's buffer. */
typedef struct timeline_line {
    int device;
    char engine[16];               /* "h2d", "d2h", "compute", ... */
    double start, end;             /* us */
    unsigned long long bytes;
    const char *what;              /* the operation and its fields, to the line's end */
} timeline_line;

/* Parses one line of the file into l; false when it is not an operation. */
static inline bool timeline_parse(const char *buf, timeline_line *l)
{
    int used = 0;
    if (sscanf(buf, "%d %15s %*s %lf %lf %llu %n", &l->device, l->engine, &l->start, &l->end, &l->bytes,
               &used) != 5 || used == 0)
        return false;
    l->what = buf + used;
    return true;
}

/* One modeled prefetch of the timeline. */
typedef struct timeline_op {
    bool to_device;
    double start, end;   /* us */
    uint64_t bytes;
} timeline_op;

/* The prefetches of the timeline file from byte `from` of it, in issue
 * order, into the caller's ops; returns how many (at most max). */
static inline int timeline_read_ops(long from, timeline_op *ops, int max)
{
    const char *path = getenv("SIMGPU_TIMELINE");
    CHECK(path != NULL);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    CHECK(fseek(f, from, SEEK_SET) == 0);
    char buf[512];
    int n = 0;
    while (fgets(buf, sizeof buf, f) && n < max) {
        timeline_line l;
        if (!timeline_parse(buf, &l))
            continue;
        bool in = strncmp(l.what, "prefetch to device", 18) == 0, out = strncmp(l.what, "prefetch to host", 16) == 0;
        if (in || out)
            ops[n++] = (timeline_op){.to_device = in, .start = l.start, .end = l.end, .bytes = l.bytes};
    }
    fclose(f);
    return n;
}

/* The timeline's length in bytes now (what later operations follow). */
static inline long timeline_mark(void)
{
    FILE *f = fopen(getenv("SIMGPU_TIMELINE"), "r");
    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long at = ftell(f);
    fclose(f);
    return at;
}

/* The most managed bytes on the device at any modeled time over ops[0..n),
 * plus `base` held before them: a fetch holds its bytes from its start, an
 * eviction until its end (no chunk freed meanwhile). */
static inline uint64_t timeline_peak(const timeline_op *ops, int n, uint64_t base)
{
    uint64_t peak = base;
    for (int i = 0; i < n; i++) {   /* the peak is at some fetch's start */
        if (!ops[i].to_device)
            continue;
        double t = ops[i].start;
        int64_t held = (int64_t)base;
        for (int j = 0; j < n; j++) {
            if (ops[j].to_device && ops[j].start <= t)
                held += (int64_t)ops[j].bytes;
            else if (!ops[j].to_device && ops[j].end <= t)
                held -= (int64_t)ops[j].bytes;
        }
        if (held > 0 && (uint64_t)held > peak)
            peak = (uint64_t)held;
    }
    return peak;
}

/* The start (us) of the last kernel called `name` on the timeline after
 * byte `mark`, or -1. */
static inline double timeline_last_kernel_start(long mark, const char *name)
{
    FILE *f = fopen(getenv("SIMGPU_TIMELINE"), "r");
    CHECK(f != NULL);
    CHECK(fseek(f, mark, SEEK_SET) == 0);
    char buf[512], want[128];
    snprintf(want, sizeof want, "kernel %s", name);
    size_t wl = strlen(want);
    double use = -1;
    while (fgets(buf, sizeof buf, f)) {
        timeline_line l;
        if (timeline_parse(buf, &l) && strncmp(l.what, want, wl) == 0 && (l.what[wl] == ' ' || l.what[wl] == 0))
            use = l.start;
    }
    fclose(f);
    return use;
}

/* The bytes sent back to the host (evictions) that ended by modeled time
 * `at` (us), among the operations after byte `mark`. */
static inline uint64_t timeline_out_by(long mark, double at)
{
    enum { MAX = 65536 };
    static timeline_op ops[MAX];
    int n = timeline_read_ops(mark, ops, MAX);
    CHECK(n > 0);
    uint64_t out = 0;
    for (int i = 0; i < n; i++)
        if (!ops[i].to_device && ops[i].end <= at + 0.01)
            out += ops[i].bytes;
    return out;
}

#endif
