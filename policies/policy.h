/*
 * policy.h — the contract between the residency planner (src/common/plan.c,
 * run by the live engine and by `lmshim replay`) and a residency policy.
 *
 * A policy decides; the planner acts. The planner owns every chunk, the
 * budget and the order of eviction; the engine owns the streams and events.
 * A policy sees chunks only as ids and a few words of memory kept for it in
 * each chunk (its memo), keeps whatever else it learns in its own state, and
 * answers three questions: should a launch's missing chunks be fetched on
 * demand, when will a chunk be needed next, and which chunks will be needed
 * next.
 *
 * Eviction order: the planner keeps the resident chunks ordered by the
 * policy's expected next use, farthest first, least recently used among
 * equals (all of them, for a policy that makes no guess: plain LRU). It asks
 * next_use() when a chunk's use is recorded, when it becomes resident, and
 * when its expected next use has passed without a use; each answer costs the
 * planner O(log n), so choosing a victim never scans the resident chunks.
 * A fetch for a need `distance` launches ahead evicts only chunks expected
 * later than that need (or never).
 *
 * What a policy may assume:
 *   - Every call for one device comes under that device's lock. observe(seq)
 *     comes in launch order and precedes the next_use/ahead calls made for
 *     that launch. seq grows by one per launch of the device.
 *   - Chunk ids are unique for the life of the process and never reused.
 *   - A memo is zero when its chunk is made, and only the policy writes it.
 * What a policy must guarantee:
 *   - next_use() answers a seq later than `now`, or LMS_NEXT_UNKNOWN.
 *   - No call blocks, calls CUDA, or allocates without bound; the work per
 *     launch is bounded by the launch's own ids (amortised), not by the
 *     number of chunks or the length of what it learned.
 *   - create() may return NULL only when the policy keeps no state.
 * Adding a policy is one file and one row in policies.def.
 */
#ifndef LMS_POLICY_H
#define LMS_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define LMS_DISTANCE_NOW 0u              /* needed by the launch about to run */
#define LMS_DISTANCE_NEVER UINT32_MAX    /* not expected again */
#define LMS_NEXT_UNKNOWN UINT64_MAX      /* next_use(): no guess (evicted first) */

/* What a policy keeps in each chunk; zero when the chunk is made. */
typedef struct lms_policy_memo {
    uint64_t w[4];
} lms_policy_memo;

typedef struct lms_policy {
    const char *name;
    const char *doc;
    bool on_demand;         /* fetch a launch's missing chunks before it runs */
    /* Per-device state (NULL for none). */
    void *(*create)(void);
    void (*destroy)(void *state);
    /* Launch `seq` of function `fn` uses chunks ids[0..n) (sorted, unique);
     * memos[i] is the memo of ids[i], NULL when the planner does not manage
     * that chunk. (NULL: the policy learns nothing.) */
    void (*observe)(void *state, uint64_t seq, uintptr_t fn, const uint32_t *ids, lms_policy_memo *const *memos,
                    int n);
    /* The seq of the launch expected to use a chunk next (> now), or
     * LMS_NEXT_UNKNOWN; last_use is the seq of its last recorded use (0:
     * none). (NULL: always unknown, which makes eviction LRU.) */
    uint64_t (*next_use)(void *state, const lms_policy_memo *memo, uint64_t last_use, uint64_t now);
    /* A number that changes when next_use() may now guess for chunks it had
     * no guess for; the planner then asks again about those (rarely: each
     * change costs it O(n log n)). (NULL: never.) */
    uint64_t (*epoch)(void *state);
    /* False while the policy has nothing to act on (its predictions keep
     * failing: random access); the planner then fetches a launch's missing
     * chunks only where that pays on average (see plan.c). (NULL: always
     * true.) */
    bool (*guessing)(void *state);
    /* Up to max chunk ids the next `launches` launches are expected to
     * use, in the order of first need, with how many launches ahead each
     * is needed; returns how many (NULL: none). */
    int (*ahead)(void *state, uint32_t *ids, uint32_t *distance, int max, uint32_t launches);
    /* The learned step's length in launches while the policy acts on what
     * it learned, else 0 (NULL: never known). The planner times whole
     * steps with it to choose between fetching and reading in place. */
    uint64_t (*period)(void *state);
    /* The step's length in launches once it is confirmed by repetition
     * (that many launches in a row repeat the ones that many earlier), else
     * 0 (NULL: never). Inside a step the period may be shorter (a step of
     * two training iterations and an evaluation repeats the iteration):
     * the planner times this length when it has it. */
    uint64_t (*step)(void *state);
} lms_policy;

/* The policy called `name`, or NULL. */
const lms_policy *lms_policy_find(const char *name);
/* The i-th policy of the table, or NULL past the end. */
const lms_policy *lms_policy_at(int i);

#endif
