/*
 * ahead_set_test.c — the lookahead policy's ahead() over several launches
 * (its set of ids named in one call: growth, the wrap of the call number,
 * memory failure, hostile maxima) and its step() when signatures
 * collide, white-box: the policy's file is built
 * into this test with calloc replaced, so that its state can be set and
 * its allocations failed. And the planner's fetch-ahead (plan.c, built in
 * too) when the policy names a chunk more than once.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"

static int calloc_fails;   /* the next calls of calloc that fail */

/* calloc, failing while calloc_fails > 0. */
static void *test_calloc(size_t n, size_t size)
{
    if (calloc_fails > 0) {
        calloc_fails--;
        return NULL;
    }
    return calloc(n, size);
}

#define calloc test_calloc
#include "lookahead.c"
#undef calloc

#include "plan.h"

#define PERIOD 10    /* launches per step */
#define WIDE 256     /* ids per launch */
#define SHIFT 32     /* launch k uses ids k*SHIFT .. k*SHIFT + WIDE - 1 */
#define NIDS ((PERIOD - 1) * SHIFT + WIDE)
#define STEPS 3

static lms_policy_memo memo[NIDS];

/* The ids of launch k of the step (sorted, unique). */
static void launch_ids(uint64_t k, uint32_t *ids)
{
    for (uint32_t j = 0; j < WIDE; j++)
        ids[j] = (uint32_t)k * SHIFT + j;
}

/* A state that learned STEPS steps of wide launches sharing most ids with
 * their neighbours; the caller destroys it. */
static state *learned(void)
{
    state *s = create();
    CHECK(s != NULL);
    memset(memo, 0, sizeof memo);
    uint32_t ids[WIDE];
    lms_policy_memo *m[WIDE];
    for (uint64_t seq = 1; seq <= STEPS * PERIOD; seq++) {
        uint64_t k = (seq - 1) % PERIOD;
        launch_ids(k, ids);
        for (int j = 0; j < WIDE; j++)
            m[j] = &memo[ids[j]];
        observe(s, seq, (uintptr_t)(k + 1), ids, m, WIDE);
    }
    CHECK(s->matched && s->confident);
    return s;
}

/* What ahead(max, launches) must say after learned(): each id once, at
 * the first of the next launches that uses it, in that order. Returns n. */
static int expected(int max, uint32_t launches, uint32_t *ids, uint32_t *dist)
{
    static bool seen[NIDS];
    memset(seen, 0, sizeof seen);
    int n = 0;
    uint32_t li[WIDE];
    for (uint32_t k = 1; k <= launches && k <= PERIOD; k++) {
        launch_ids((STEPS * PERIOD + k - 1) % PERIOD, li);
        for (int j = 0; j < WIDE && n < max; j++)
            if (!seen[li[j]]) {
                seen[li[j]] = true;
                ids[n] = li[j];
                dist[n++] = k;
            }
    }
    return n;
}

/* Calls ahead() and compares with expected(). */
static void check_ahead(state *s, int max, uint32_t launches)
{
    static uint32_t ids[4096], dist[4096], want[4096], wdist[4096];
    int n = ahead(s, ids, dist, max, launches);
    int w = expected(max, launches, want, wdist);
    CHECK_EQ_U(n, w);
    for (int i = 0; i < n && i < w; i++) {
        if (ids[i] != want[i] || dist[i] != wdist[i]) {
            fprintf(stderr, "max %d launches %u: entry %d is %u at %u, not %u at %u\n", max, launches, i, ids[i],
                    dist[i], want[i], wdist[i]);
            CHECK(false);
            return;
        }
    }
}

/* 8 wide launches sharing their ids, for several maxima (below, at and
 * above what they use; 1024, the planner's), one after the other (the set
 * grows and is reused). */
static void wide_repeats(void)
{
    state *s = learned();
    int maxes[] = {1, 100, 255, 256, 257, 1024, 10, 4096, 1024};
    for (size_t i = 0; i < sizeof maxes / sizeof *maxes; i++) {
        check_ahead(s, maxes[i], 8);
        check_ahead(s, maxes[i], 1);
        check_ahead(s, maxes[i], 3);
    }
    destroy(s);
}

/* The call number wraps after 2^32 calls: the calls around it still name
 * each id once. */
static void call_wraps(void)
{
    state *s = learned();
    check_ahead(s, 1024, 8);
    s->named_call = UINT32_MAX - 2;
    for (int i = 0; i < 6; i++)
        check_ahead(s, 1024, 8);
    CHECK(s->named_call >= 1 && s->named_call < 10);
    destroy(s);
}

/* Without memory for the set the ids come with repeats (each id at most
 * once per launch ahead), and the next call with memory is exact again. */
static void set_without_memory(void)
{
    state *s = learned();
    static uint32_t ids[1024], dist[1024];
    calloc_fails = 1;
    int n = ahead(s, ids, dist, 1024, 8);
    CHECK_EQ_U(calloc_fails, 0);
    CHECK(n > 0 && n <= 1024);
    CHECK_EQ_U(ids[0], 0);
    check_ahead(s, 1024, 8);
    destroy(s);
}

/* A maximum of zero or below names nothing; one far above what the
 * launches use names each id once (and neither hangs nor asks for a set
 * the size of the maximum). */
static void hostile_max(void)
{
    state *s = learned();
    static uint32_t ids[4096], dist[4096];
    CHECK_EQ_U(ahead(s, ids, dist, 0, 8), 0);
    CHECK_EQ_U(ahead(s, ids, dist, -1, 8), 0);
    CHECK_EQ_U(ahead(s, ids, dist, INT_MIN, 8), 0);
    /* ids has room for what 8 launches use (NIDS < 4096), not for max. */
    check_ahead(s, INT_MAX, 8);
    check_ahead(s, (1 << 30) + 1, 8);
    CHECK(s->named_cap <= 4 * 4096);
    destroy(s);
}

/* A signature's context that collides with another launch's (two keys of
 * the table alike: planted here, as 64-bit hashes collide once in 2^64):
 * step() still names no length whose launches did not repeat. */
static void step_collision(void)
{
    state *s = create();
    CHECK(s != NULL);
    lms_policy_memo mm[3];
    memset(mm, 0, sizeof mm);
    uint32_t id;
    lms_policy_memo *m;
    for (uint64_t seq = 1; seq <= 2; seq++) {   /* launches A, B */
        id = (uint32_t)seq;
        m = &mm[seq];
        observe(s, seq, seq, &id, &m, 1);
    }
    /* Launch C's signature and context, as observe() makes them; the
     * context is planted as last seen at launch 2 (B). */
    id = 0;
    uint64_t sig = mix(mix(0x12345, 3), id) | 1;
    uint64_t ctx = mix(mix(0x6a09e667f3bcc909ull, s->sig1), sig) | 1;
    CHECK(remember(s, ctx, 2));
    m = &mm[0];
    observe(s, 3, 3, &id, &m, 1);
    uint64_t st = step(s);
    CHECK(st == 0 || st > 3);   /* C is not B: no step of 1 (nor of 2: C is not A) */
    destroy(s);
}

/* ---- the planner's fetch-ahead with repeated ids ---------------------------- */

typedef struct room {
    uint64_t room, used;
    uint64_t fetches, double_fetches, pinned_fetches;
    lms_plan_chunk chunks[NIDS];
} room;

static bool r_reserve(void *ctx, uint64_t b)
{
    room *r = ctx;
    if (r->used + b > r->room)
        return false;
    r->used += b;
    return true;
}
static uint64_t r_budget(void *ctx) { return ((room *)ctx)->room; }
static void r_evict(void *ctx, lms_plan_chunk *c)
{
    room *r = ctx;
    CHECK(r->used >= c->charge);
    r->used -= c->charge;
}
static bool r_fetch(void *ctx, lms_plan_chunk *c, bool ahead_)
{
    (void)ahead_;
    room *r = ctx;
    r->fetches++;
    r->double_fetches += c->resident;
    return true;
}
static lms_plan_chunk *r_lookup(void *ctx, uint32_t id)
{
    room *r = ctx;
    return id < NIDS ? &r->chunks[id] : NULL;
}

/* The policy of this file behind the planner; with its set's memory
 * failing at every call, the planner fetches no chunk twice, leaves no pin
 * behind and counts the room exactly. */
static void planner_repeats(void)
{
    for (int fail = 0; fail < 2; fail++) {
        room *r = calloc(1, sizeof *r);
        CHECK(r != NULL);
        r->room = 3 * WIDE;
        for (uint32_t i = 0; i < NIDS; i++)
            r->chunks[i] = (lms_plan_chunk){.id = i, .charge = 1};
        lms_plan plan;
        CHECK(lms_plan_init(&plan, &lms_policy_lookahead));
        plan.mode = LMS_PLAN_DEEP;
        lms_plan_ops ops = {.reserve = r_reserve, .budget = r_budget, .evict = r_evict, .fetch = r_fetch,
                            .lookup = r_lookup};
        uint32_t ids[WIDE];
        lms_plan_chunk *mine[WIDE];
        for (uint64_t seq = 1; seq <= 6 * PERIOD; seq++) {
            uint64_t k = (seq - 1) % PERIOD;
            launch_ids(k, ids);
            for (int j = 0; j < WIDE; j++) {
                mine[j] = &r->chunks[ids[j]];
                lms_plan_pin(&plan, mine[j]);
            }
            calloc_fails = fail ? 1 << 30 : 0;
            lms_plan_launch(&plan, &ops, r, seq, (uintptr_t)(k + 1), ids, WIDE, mine, WIDE);
            calloc_fails = 0;
            for (int j = 0; j < WIDE; j++)
                lms_plan_used(&plan, mine[j], seq);
            CHECK_EQ_U(plan.mode, LMS_PLAN_DEEP);   /* no timed steps here (no marks) */
            uint64_t res = 0;
            for (uint32_t i = 0; i < NIDS; i++) {
                CHECK_EQ_U(r->chunks[i].pins, 0);
                res += r->chunks[i].resident ? r->chunks[i].charge : 0;
            }
            CHECK_EQ_U(res, r->used);
            CHECK_EQ_U(res, plan.victim_bytes);   /* nothing pinned after the launch */
        }
        CHECK(r->fetches > 0);
        CHECK_EQ_U(r->double_fetches, 0);
        lms_plan_destroy(&plan);
        free(r);
    }
}

static const test_case cases[] = {
    {"wide_repeats", wide_repeats},
    {"call_wraps", call_wraps},
    {"set_without_memory", set_without_memory},
    {"hostile_max", hostile_max},
    {"planner_repeats", planner_repeats},
    {"step_collision", step_collision},
};

TEST_MAIN(cases)
