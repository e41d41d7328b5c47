/*
 * victim_room.h — the fake device of the pick_victim breakers' tests
 * (lms_plan_ops without CUDA): room for a number of chunks of charge
 * VR_UNIT each, what each launch hides, per-chunk prices and refusals,
 * the victims in order, and a policy told each chunk's next use (memo
 * w[0], or its place in a cycle of w[1] launches) that fetches ahead a
 * fixed list or the next launches of a cycle. Each test file includes it
 * once; everything here is static to that file.
 */
#ifndef VICTIM_ROOM_H
#define VICTIM_ROOM_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../common/check.h"
#include "plan.h"
#include "policy.h"

#define VR_MAX 256
#define VR_UNIT 2   /* a chunk's charge: a launch hiding 1 is outlasted by one chunk (pick_victim) */

typedef struct victim_room {
    uint64_t room, used, fetches, evictions;
    uint64_t busy_evictions, recent_evictions; /* of a chunk used by the last launch, by one of the last two */
    int evicted[VR_MAX];                       /* the victims in order (the first VR_MAX) */
    int last_evicted;                          /* -1: none */
    uint32_t n;                                /* chunks 0..n-1 */
    lms_plan_chunk chunks[VR_MAX];
    uint64_t hides;                            /* ops->hides for every launch (0: unknown) */
    double price[VR_MAX];                      /* ops->price per chunk (negative: unknown) */
    bool fails[VR_MAX];                        /* ops->fetch refuses it (its reservation released) */
    bool pinned_evictions;                     /* the test lets a launch's own chunk be evicted (demotion) */
    uint64_t max_bringing;                     /* the largest p->bringing seen at an eviction */
    uint64_t seq, cycle;                       /* ahead in a cycle: launch s uses chunk (s-1) % cycle (0: none) */
    uint32_t depth;                            /* ... the next `depth` launches (0: one) */
    int ahead_ids[8], nahead;                  /* else ahead: this list */
    uint32_t ahead_dist[8];                    /* ... needed this many launches ahead (0: one) */
    lms_plan *p;                               /* the planner, when the counters need it */
} victim_room;

static victim_room *vr_cur;   /* the room of the launch being planned (the policy's ahead() reads it) */

/* ops.reserve: charges b if it fits. */
static inline bool vr_reserve(void *ctx, uint64_t b)
{
    victim_room *f = ctx;
    if (f->used + b > f->room)
        return false;
    f->used += b;
    return true;
}

/* ops.budget: the room. */
static inline uint64_t vr_budget(void *ctx) { return ((victim_room *)ctx)->room; }

/* ops.evict: gives the charge back, records the victim and counts it. */
static inline void vr_evict(void *ctx, lms_plan_chunk *c)
{
    victim_room *f = ctx;
    if (!f->pinned_evictions)
        CHECK(c->pins == 0);   /* never a chunk of the launch being planned */
    f->used -= c->charge;
    if (f->evictions < VR_MAX)
        f->evicted[f->evictions] = (int)c->id;
    f->last_evicted = (int)c->id;
    f->evictions++;
    if (f->p) {
        if (c->last_use + 1 >= f->p->now)
            f->busy_evictions++;
        if (c->last_use + 2 >= f->p->now)
            f->recent_evictions++;
        if (f->p->bringing > f->max_bringing)
            f->max_bringing = f->p->bringing;
    }
}

/* ops.fetch: counts, or refuses a chunk marked to fail (as op_fetch does,
 * releasing its reservation). */
static inline bool vr_fetch(void *ctx, lms_plan_chunk *c, bool ahead)
{
    (void)ahead;
    victim_room *f = ctx;
    if (f->fails[c->id]) {
        f->used -= c->charge;
        return false;
    }
    f->fetches++;
    return true;
}

/* ops.lookup: chunk id, or NULL past the last. */
static inline lms_plan_chunk *vr_lookup(void *ctx, uint32_t id)
{
    victim_room *f = ctx;
    return id < f->n ? &f->chunks[id] : NULL;
}

/* ops.hides, ops.price, ops.fetch_cost (unknown: a chunk priced above
 * zero is fetched). */
static inline uint64_t vr_hides(void *ctx) { return ((victim_room *)ctx)->hides; }
static inline double vr_price(void *ctx, lms_plan_chunk *c) { return ((victim_room *)ctx)->price[c->id]; }
static inline double vr_fetch_cost(void *ctx)
{
    (void)ctx;
    return -1;
}

static const lms_plan_ops vr_ops = {.reserve = vr_reserve, .budget = vr_budget, .evict = vr_evict,
                                    .fetch = vr_fetch, .lookup = vr_lookup, .hides = vr_hides};
static const lms_plan_ops vr_priced_ops = {.reserve = vr_reserve, .budget = vr_budget, .evict = vr_evict,
                                           .fetch = vr_fetch, .lookup = vr_lookup, .hides = vr_hides,
                                           .price = vr_price, .fetch_cost = vr_fetch_cost};

/* policy.next_use: memo w[0], or with w[1] set the first launch after
 * `now` of chunk w[0] in a cycle of w[1] (chunk w[0] used by launches
 * w[0]+1, w[0]+1+w[1], ...). */
static inline uint64_t vr_next(void *state, const lms_policy_memo *memo, uint64_t last_use, uint64_t now)
{
    (void)state, (void)last_use;
    uint64_t n = memo->w[1];
    if (n)
        return now + 1 + (memo->w[0] + n - now % n) % n;
    return memo->w[0] > now ? memo->w[0] : LMS_NEXT_UNKNOWN;
}

/* policy.ahead: in a cycle, the chunks of the next min(launches, depth)
 * launches; else the room's list. */
static inline int vr_ahead(void *state, uint32_t *ids, uint32_t *dist, int max, uint32_t launches)
{
    (void)state;
    const victim_room *f = vr_cur;
    int k = 0;
    if (!f)
        return 0;
    if (f->cycle) {
        uint32_t depth = f->depth ? f->depth : 1, d = launches < depth ? launches : depth;
        for (uint32_t j = 1; j <= d && k < max; j++) {
            ids[k] = (uint32_t)((f->seq + j - 1) % f->cycle);
            dist[k++] = j;
        }
        return k;
    }
    for (int i = 0; i < f->nahead && k < max; i++) {
        ids[k] = (uint32_t)f->ahead_ids[i];
        dist[k++] = f->ahead_dist[i] ? f->ahead_dist[i] : 1;
    }
    return k;
}

static const lms_policy vr_told = {.name = "told", .on_demand = true, .next_use = vr_next};
static const lms_policy vr_told_ahead = {.name = "told-ahead", .on_demand = true, .next_use = vr_next,
                                         .ahead = vr_ahead};

/* Sets f up: room for `room` chunks, n chunks of charge VR_UNIT, no
 * price, launches of unknown duration, nothing ahead. */
static inline void vr_init(victim_room *f, uint64_t room, uint32_t n)
{
    memset(f, 0, sizeof *f);
    f->room = room * VR_UNIT;
    f->n = n;
    f->last_evicted = -1;
    for (uint32_t i = 0; i < n; i++) {
        f->chunks[i] = (lms_plan_chunk){.id = i, .charge = VR_UNIT};
        f->price[i] = -1;
    }
}

/* Launch `seq` using ids[0..k): pinned, planned, recorded and, acting
 * lean, fetched ahead after it, as the live engine does; the planner's
 * batch bytes are zero after every return, and the room is never over. */
static inline void vr_launch(lms_plan *p, const lms_plan_ops *ops, victim_room *f, uint64_t seq,
                             const uint32_t *ids, int k)
{
    lms_plan_chunk *mine[VR_MAX];
    for (int i = 0; i < k; i++) {
        mine[i] = &f->chunks[ids[i]];
        lms_plan_pin(p, mine[i]);
    }
    f->seq = seq;
    vr_cur = f;
    lms_plan_launch(p, ops, f, seq, 1, ids, k, mine, k);
    CHECK_EQ_U(p->bringing, 0);
    for (int i = 0; i < k; i++)
        lms_plan_used(p, mine[i], seq);
    lms_plan_after(p, ops, f);
    vr_cur = NULL;
    CHECK(f->used <= f->room);
}

/* The scene of launch 8 (or first + 7): room for 9 chunks; launches
 * first..first+6 used chunks 0..6, one each, under policy `pol`, acting.
 * Next uses: chunk 6 (the last launch's: busy) 1000, chunk 5 (two
 * launches back) 990, chunks 2 and 3 (idle) 910 and 905, chunks 0, 1, 4
 * at 100+ (under half as far: no candidates); chunk 7 2000, chunks 8..n-1
 * `later`. */
static inline void vr_scene(victim_room *f, lms_plan *p, const lms_policy *pol, uint32_t n, uint64_t first,
                            uint64_t later)
{
    vr_init(f, 9, n);
    for (uint32_t i = 0; i < n; i++)
        f->chunks[i].memo.w[0] = i < 7 ? 100 + i : i == 7 ? 2000 : later;
    f->chunks[6].memo.w[0] = 1000;
    f->chunks[5].memo.w[0] = 990;
    f->chunks[2].memo.w[0] = 910;
    f->chunks[3].memo.w[0] = 905;
    CHECK(lms_plan_init(p, pol));
    f->p = p;
    for (uint32_t i = 0; i < 7; i++)
        vr_launch(p, &vr_ops, f, first + i, &i, 1);
    p->mode = LMS_PLAN_ACT;
}

/* A cycle of n chunks used once a step in order (launch s uses chunk
 * (s-1) % n), room r, the policy's next use exact, in `mode`, fetching
 * ahead the next `depth` launches when `pol` fetches ahead, each launch
 * hiding `hides`. Over `steps` steps after a warm one: out[0] fetches,
 * out[1] evictions of a chunk the last launch used, out[2] of one used by
 * the last two. */
static inline void vr_cycle_run(const lms_policy *pol, int mode, uint32_t n, uint64_t r, uint32_t depth,
                                uint64_t hides, int steps, uint64_t out[3])
{
    victim_room f;
    vr_init(&f, r, n);
    f.hides = hides;
    f.cycle = n;
    f.depth = depth;
    for (uint32_t i = 0; i < n; i++)
        f.chunks[i].memo.w[0] = i, f.chunks[i].memo.w[1] = n;
    lms_plan p;
    CHECK(lms_plan_init(&p, pol));
    p.mode = mode;
    f.p = &p;
    uint64_t seq = 0, w[3] = {0, 0, 0};
    for (int s = 0; s <= steps; s++) {
        if (s == 1)
            w[0] = f.fetches, w[1] = f.busy_evictions, w[2] = f.recent_evictions;
        for (uint32_t i = 0; i < n; i++) {
            seq++;
            vr_launch(&p, &vr_ops, &f, seq, &i, 1);
        }
    }
    out[0] = f.fetches - w[0], out[1] = f.busy_evictions - w[1], out[2] = f.recent_evictions - w[2];
    lms_plan_destroy(&p);
}

/* Belady's MIN on a cycle of n unit chunks used once a step in order
 * (launch s uses chunk (s-1) % n), room r, on demand: the misses over
 * `steps` steps after a warm one, by simulation (evict the resident chunk
 * used farthest ahead). */
static inline uint64_t vr_cyclic_min(uint32_t n, uint64_t r, int steps)
{
    bool res[VR_MAX] = {0};
    uint64_t nres = 0, miss = 0, seq = 0;
    for (int s = 0; s <= steps; s++)
        for (uint32_t i = 0; i < n; i++) {
            seq++;
            if (res[i])
                continue;
            if (s > 0)
                miss++;
            if (nres == r) {
                uint32_t far = 0;
                uint64_t farthest = 0;
                for (uint32_t j = 0; j < n; j++) {
                    uint64_t next = seq + 1 + (j + n - seq % n) % n;   /* next use of chunk j after seq */
                    if (res[j] && next > farthest)
                        farthest = next, far = j;
                }
                res[far] = false;
                nres--;
            }
            res[i] = true;
            nres++;
        }
    return miss;
}

#endif
