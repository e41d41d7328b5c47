/*
 * replay.h — replaying a trace's launches through a residency policy at any
 * budget, without a GPU (replay.c), next to Belady's MIN: the fewest bytes
 * any policy could fetch for the same launches and budget when each chunk is
 * fetched no earlier than needed (exact when chunks are of one size).
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

#endif
