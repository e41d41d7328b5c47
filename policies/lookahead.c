/*
 * lookahead.c — learns the repeating launch sequence of a training step and
 * uses it as the future: it names the chunks of the next launches so that
 * the engine prefetches them on a side stream while the current kernel runs,
 * and evicts the chunk whose next use is farthest away (Belady's rule with
 * the learned future).
 *
 * Learning: each launch has a signature (its function and chunk ids). The
 * launches that followed the previous occurrence of the current signature
 * are the prediction for the launches to come. Until a signature repeats
 * (the first step) there is no prediction and the policy acts like lru.
 */
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define HISTORY 65536u       /* launches remembered (a ring) */
#define IDS 8                /* chunk ids kept per launch */
#define MAP 16384u           /* signature -> last seq, open addressing */
#define HORIZON 1024u        /* launches looked ahead at most */
#define FUTURE (HORIZON * IDS)
/* How far ahead to fetch, in launches. Fetching further evicts earlier,
 * before better victims exist: at 2x oversubscription on bench/oversub a
 * window of 1 moves 1.10x Belady's MIN, 2 moves 1.14x, 8 moves 1.35x; one
 * launch of compute is enough to hide the next launch's fetches. */
#define AHEAD_LAUNCHES 1u

typedef struct launch {
    uint64_t sig;
    uint8_t n;
    uint32_t ids[IDS];
} launch;

typedef struct state {
    launch hist[HISTORY];
    struct { uint64_t sig, seq; } map[MAP];
    uint64_t seq;             /* the launch being observed */
    uint32_t nsigs;           /* signatures in map */
    bool matched;             /* a previous occurrence exists */
    uint64_t match;           /* its seq */
    /* The future of `seq`, computed once: unique ids in order of first need. */
    uint64_t future_of;       /* seq the future was computed for (+1; 0 = none) */
    int nfuture;
    uint32_t future_id[FUTURE], future_dist[FUTURE];
    uint32_t slot_id[2 * FUTURE], slot_dist[2 * FUTURE];   /* id -> distance lookup */
    uint32_t slot_gen[2 * FUTURE];                         /* slot in use when == gen */
    uint32_t gen;
} state;

static void *create(void)
{
    return calloc(1, sizeof(state));
}

static void destroy(void *s) { free(s); }

/* Mixes a value into a hash. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static void observe(void *p, uint64_t seq, uintptr_t fn, const uint32_t *ids, int n)
{
    state *s = p;
    uint64_t sig = mix(0x12345, fn);
    for (int i = 0; i < n; i++)
        sig = mix(sig, ids[i]);
    sig |= 1;   /* 0 marks an empty slot */
    launch *l = &s->hist[seq % HISTORY];
    l->sig = sig;
    l->n = (uint8_t)(n < IDS ? n : IDS);
    memcpy(l->ids, ids, l->n * sizeof *ids);
    s->seq = seq;
    s->matched = false;
    size_t i = (size_t)sig & (MAP - 1);
    while (s->map[i].sig && s->map[i].sig != sig)
        i = (i + 1) & (MAP - 1);
    if (s->map[i].sig == sig) {
        uint64_t prev = s->map[i].seq;
        if (seq - prev < HISTORY - HORIZON && s->hist[prev % HISTORY].sig == sig) {
            s->matched = true;
            s->match = prev;
        }
    }
    /* A new signature takes the free slot the probe ended on. The table is
     * sized for many times the launches of a step; if it ever fills, the
     * probe would not end, so a full table stops learning instead. */
    if (s->map[i].sig == sig || s->nsigs + 1 < MAP) {
        s->nsigs += s->map[i].sig != sig;
        s->map[i].sig = sig;
        s->map[i].seq = seq;
    }
}

/* Fills the future of the current launch (once per launch). */
static void compute_future(state *s)
{
    if (s->future_of == s->seq + 1)
        return;
    s->future_of = s->seq + 1;
    s->nfuture = 0;
    s->gen++;   /* empties the lookup table */
    if (!s->matched)
        return;
    uint64_t period = s->seq - s->match;
    uint64_t horizon = period < HORIZON ? period : HORIZON;
    for (uint64_t k = 1; k <= horizon; k++) {
        const launch *l = &s->hist[(s->match + k) % HISTORY];
        for (int j = 0; j < l->n; j++) {
            uint32_t id = l->ids[j];
            size_t h = (size_t)mix(7, id) % (2 * FUTURE);
            while (s->slot_gen[h] == s->gen && s->slot_id[h] != id)
                h = (h + 1) % (2 * FUTURE);
            if (s->slot_gen[h] == s->gen)
                continue;
            s->slot_gen[h] = s->gen;
            s->slot_id[h] = id;
            s->slot_dist[h] = (uint32_t)k;
            s->future_id[s->nfuture] = id;
            s->future_dist[s->nfuture] = (uint32_t)k;
            s->nfuture++;
        }
    }
}

/* Launches until `id` is needed again, or LMS_DISTANCE_NEVER. */
static uint32_t next_use(const state *s, uint32_t id)
{
    size_t h = (size_t)mix(7, id) % (2 * FUTURE);
    while (s->slot_gen[h] == s->gen) {
        if (s->slot_id[h] == id)
            return s->slot_dist[h];
        h = (h + 1) % (2 * FUTURE);
    }
    return LMS_DISTANCE_NEVER;
}

/* The chunk needed farthest ahead (least recently used among equals); only
 * if it is needed later than `distance`, unless the need is now. */
static int victim(void *p, const lms_policy_chunk *resident, int n, uint32_t distance)
{
    state *s = p;
    compute_future(s);
    if (!s->matched)
        return distance == LMS_DISTANCE_NOW ? lms_policy_lru_victim(resident, n) : -1;
    int best = -1;
    uint32_t best_next = 0;
    for (int i = 0; i < n; i++) {
        if (resident[i].pinned)
            continue;
        uint32_t nu = next_use(s, resident[i].id);
        if (best < 0 || nu > best_next ||
            (nu == best_next && resident[i].last_use < resident[best].last_use)) {
            best = i;
            best_next = nu;
        }
    }
    if (best >= 0 && distance != LMS_DISTANCE_NOW && best_next <= distance)
        return -1;   /* everything resident is needed sooner than this */
    return best;
}

/* The chunks of the next AHEAD_LAUNCHES predicted launches, read straight
 * from the history (no full future needed on the common path). */
static int ahead(void *p, uint32_t *ids, uint32_t *distance, int max)
{
    state *s = p;
    int n = 0;
    if (!s->matched)
        return 0;
    uint64_t period = s->seq - s->match;
    for (uint64_t k = 1; k <= AHEAD_LAUNCHES && k <= period; k++) {
        const launch *l = &s->hist[(s->match + k) % HISTORY];
        for (int j = 0; j < l->n && n < max; j++) {
            bool seen = false;
            for (int q = 0; q < n && !seen; q++)
                seen = ids[q] == l->ids[j];
            if (!seen) {
                ids[n] = l->ids[j];
                distance[n++] = (uint32_t)k;
            }
        }
    }
    return n;
}

const lms_policy lms_policy_lookahead = {
    .name = "lookahead",
    .doc = "learn the step's launch sequence; prefetch the next launches' chunks, evict the farthest next use",
    .on_demand = true,
    .create = create,
    .destroy = destroy,
    .observe = observe,
    .victim = victim,
    .ahead = ahead,
};
