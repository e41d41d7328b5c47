/*
 * policy.h — the contract between the residency engine (src/engine/residency.c, and
 * the offline replay of `lmshim replay`) and a residency policy.
 *
 * A policy decides; the engine acts. The engine owns every chunk, the
 * budget, the streams and the events. A policy sees chunks only as ids and
 * sizes, keeps whatever it learns in its own state, and answers three
 * questions: should a launch's missing chunks be fetched on demand, which
 * resident chunk should make room, and which chunks will be needed next.
 *
 * What a policy may assume:
 *   - Every call for one device comes under that device's lock, in launch
 *     order: observe(seq) for launch seq precedes every victim/ahead call
 *     made for that launch. seq grows by one per launch of the device.
 *   - Chunk ids are unique for the life of the process and never reused.
 *   - A chunk passed to victim() is resident; `pinned` ones are in use by a
 *     launch that has not been recorded yet.
 * What a policy must guarantee:
 *   - victim() never returns a pinned chunk, and returns -1 rather than a
 *     chunk it would rather keep than serve a need at `distance`.
 *   - No call blocks, allocates without bound, or calls CUDA.
 *   - create() may return NULL only when the policy keeps no state.
 * Adding a policy is one file and one row in policies.def.
 */
#ifndef LMS_POLICY_H
#define LMS_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define LMS_DISTANCE_NOW 0u              /* needed by the launch about to run */
#define LMS_DISTANCE_NEVER UINT32_MAX    /* not expected again */

/* A resident chunk as a policy sees it. */
typedef struct lms_policy_chunk {
    uint32_t id;
    uint64_t bytes;
    uint64_t last_use;      /* seq of the last launch that used it */
    bool pinned;            /* in use: must not be chosen */
} lms_policy_chunk;

typedef struct lms_policy {
    const char *name;
    const char *doc;
    bool on_demand;         /* fetch a launch's missing chunks before it runs */
    /* Per-device state (NULL for none). */
    void *(*create)(void);
    void (*destroy)(void *state);
    /* Launch `seq` of function `fn` uses chunks ids[0..n) (sorted). */
    void (*observe)(void *state, uint64_t seq, uintptr_t fn, const uint32_t *ids, int n);
    /* The index in resident[0..n) of the chunk to evict to serve a need
     * `distance` launches ahead (LMS_DISTANCE_NOW: the current one), or -1. */
    int (*victim)(void *state, const lms_policy_chunk *resident, int n, uint32_t distance);
    /* Up to max chunk ids expected next, in the order of first need, with
     * how many launches ahead each is needed; returns how many (NULL: none). */
    int (*ahead)(void *state, uint32_t *ids, uint32_t *distance, int max);
} lms_policy;

/* The policy called `name`, or NULL. */
const lms_policy *lms_policy_find(const char *name);
/* The i-th policy of the table, or NULL past the end. */
const lms_policy *lms_policy_at(int i);

/* The least recently used unpinned chunk of resident[0..n), or -1; shared by
 * policies that fall back to recency. */
int lms_policy_lru_victim(const lms_policy_chunk *resident, int n);

#endif
