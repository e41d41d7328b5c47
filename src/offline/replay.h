/*
 * replay.h — replaying a trace's launches through a residency policy at any
 * budget, without a GPU (replay.c), next to Belady's MIN: the fewest bytes
 * any policy could fetch for the same launches and budget when each chunk is
 * fetched no earlier than needed (exact when chunks are of one size); the
 * bound that also allows reading in place (bound.c); and curves of bytes
 * moved against budget, in one pass where the policy allows (curve.c).
 */
#ifndef LMS_REPLAY_H
#define LMS_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "policy.h"

typedef enum { RP_DEVICE_ALLOC, RP_DEVICE_FREE, RP_MANAGED_ALLOC, RP_MANAGED_FREE, RP_LAUNCH } rp_kind;

typedef struct rp_event {
    rp_kind kind;
    int dev;
    uint32_t id;          /* managed chunk id */
    uint64_t bytes;       /* charge of the chunk (device or managed) */
    uint64_t fn;          /* launch: function */
    uint32_t first, n;    /* launch: its ids in the trace's id pool */
} rp_event;

/* The bytes of device (not managed) allocations after event ev, given
 * `device` before it: an RP_DEVICE_ALLOC adds its bytes, an RP_DEVICE_FREE
 * takes them away (never below zero: the trace may have begun after the
 * allocation); any other event leaves them. */
static inline uint64_t lms_replay_device_bytes(uint64_t device, const rp_event *ev)
{
    if (ev->kind == RP_DEVICE_ALLOC)
        return device + ev->bytes;
    if (ev->kind == RP_DEVICE_FREE)
        return device - (ev->bytes < device ? ev->bytes : device);
    return device;
}

typedef struct lms_trace_data {
    rp_event *events;
    size_t nevents, capevents;
    uint32_t *ids;        /* launch chunk ids, pooled */
    size_t nids, capids;
    uint64_t budget[16];  /* from "device" lines (0: unknown) */
    uint32_t max_id;      /* chunks: ids in events are dense indices 0..max_id-1 */
    struct lms_addrmap *idmap;   /* while loading: trace chunk id + 1 -> dense index */
    size_t lines, bad_lines;
} lms_trace_data;

/* Reads a trace file into t (appending). A malformed line is reported on
 * `errors` as "file:line: what" and skipped; a truncated last line too.
 * Returns -1 only when the file cannot be read. */
int lms_trace_load(const char *path, lms_trace_data *t, FILE *errors);
/* The same over text in memory (the fuzzer's entry point). */
void lms_trace_load_text(const char *name, const char *text, size_t len, lms_trace_data *t, FILE *errors);
void lms_trace_data_free(lms_trace_data *t);

typedef struct lms_replay_result {
    uint64_t fetched_bytes;   /* bytes fetched to the device */
    uint64_t evicted_bytes;   /* bytes sent back */
    uint64_t misses;          /* chunks a launch needed that were not resident */
    uint64_t remote_bytes;    /* bytes of chunks that could not be made resident */
    uint64_t launches;        /* launches counted */
} lms_replay_result;

/* Replays device `dev` of t at `budget` bytes through `policy` (NULL: Belady's
 * MIN), counting only from launch number `skip` on. */
void lms_replay(const lms_trace_data *t, int dev, uint64_t budget, const lms_policy *policy,
                uint64_t skip, lms_replay_result *out);

/* The bound that allows reading in place: the fewest bytes over the link
 * (fetched + read in place) that any schedule of fetches, evictions and
 * remote reads could move for the launches of `dev` at `budget`, counted
 * from launch `skip` on (what came before is free, so the counted part
 * starts from the best resident set). A lower bound for every policy and
 * for MIN: it lets each 512 B granule of a chunk's charge (charges are
 * 2 MiB pages from 2 MiB on, as the engine's) be resident on its own, which
 * whole-chunk and whole-page schedules are cases of; for that relaxation it
 * is exact (docs/ARCHITECTURE.md). `out`
 * gets its fetched, evicted, read-in-place bytes and the chunks it missed
 * in part or whole. */
void lms_replay_bound(const lms_trace_data *t, int dev, uint64_t budget, uint64_t skip, lms_replay_result *out);

/* A series of a curve: Belady's MIN, the bound above, or a policy. */
typedef enum { LMS_SERIES_MIN, LMS_SERIES_BOUND, LMS_SERIES_POLICY } lms_series_kind;

/* One series at budgets[0..n) into out[0..n) (the caller's arrays), as
 * lms_replay or lms_replay_bound at each budget would give: in one pass
 * over the trace for a policy that never fetches and for plain LRU (stack
 * distances, at each budget where every launch's chunks fit together), by
 * a replay per budget otherwise. Returns how many budgets the one pass gave. */
int lms_replay_curve(const lms_trace_data *t, int dev, lms_series_kind kind, const lms_policy *policy,
                     uint64_t skip, const uint64_t *budgets, int n, lms_replay_result *out);

/* The smallest period of the launches of `dev` (function and chunk sizes:
 * one step of a training loop); *launches gets their number. */
size_t lms_replay_period(const lms_trace_data *t, int dev, size_t *launches);

/* The smallest budget at which MIN evicts nothing and reads nothing in
 * place: the most, over the trace, of device bytes plus the live managed
 * chunks some launch has already used. */
uint64_t lms_replay_need(const lms_trace_data *t, int dev);

/* Writes an SVG plot of bytes over the link per step against budget for
 * nseries series at budgets[0..n): values[s * n + i] in bytes; names[s]
 * label them. A dashed line marks `mark` (0: none). 0, or -1 when the file
 * cannot be written. */
int lms_curve_svg(const char *path, const char *title, const uint64_t *budgets, int n, const char *const *names,
                  const double *values, int nseries, uint64_t mark);

#endif
