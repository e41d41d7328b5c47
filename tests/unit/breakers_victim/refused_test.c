/*
 * refused_test.c — p->bringing (src/common/plan.c, bring and
 * bring_priced) on the paths around a demand fetch: a fetch that fails
 * (op_fetch refuses a chunk a launch reads over the link, or the driver
 * fails), the demotion of a launch's own chunk, and whether the total is
 * zero after every return.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "plan.h"
#include "policy.h"

#define BIG 64
#define UNIT 2

typedef struct room {
    uint64_t room, used, fetches, evictions;
    int evicted[BIG];
    uint32_t n;
    lms_plan_chunk chunks[BIG];
    double price[BIG];              /* ops->price per chunk (negative: unknown) */
    bool fails[BIG];                /* ops->fetch refuses it (its reservation released) */
    uint64_t hides;
    uint64_t max_bringing;          /* the largest p->bringing seen at an eviction */
    lms_plan *p;
} room;

static bool r_reserve(void *ctx, uint64_t b)
{
    room *f = ctx;
    if (f->used + b > f->room)
        return false;
    f->used += b;
    return true;
}
static uint64_t r_budget(void *ctx) { return ((room *)ctx)->room; }
static void r_evict(void *ctx, lms_plan_chunk *c)
{
    room *f = ctx;
    if (f->p->bringing > f->max_bringing)
        f->max_bringing = f->p->bringing;
    f->used -= c->charge;
    if (f->evictions < BIG)
        f->evicted[f->evictions] = (int)c->id;
    f->evictions++;
}
static bool r_fetch(void *ctx, lms_plan_chunk *c, bool ahead)
{
    (void)ahead;
    room *f = ctx;
    if (f->fails[c->id]) {
        f->used -= c->charge;   /* as op_fetch: lms_account_release */
        return false;
    }
    f->fetches++;
    return true;
}
static lms_plan_chunk *r_lookup(void *ctx, uint32_t id)
{
    room *f = ctx;
    return id < f->n ? &f->chunks[id] : NULL;
}
static uint64_t r_hides(void *ctx) { return ((room *)ctx)->hides; }
static double r_price(void *ctx, lms_plan_chunk *c) { return ((room *)ctx)->price[c->id]; }
static double r_fetch_cost(void *ctx)
{
    (void)ctx;
    return -1;
}
static const lms_plan_ops plain_ops = {.reserve = r_reserve, .budget = r_budget, .evict = r_evict,
                                       .fetch = r_fetch, .lookup = r_lookup, .hides = r_hides};
static const lms_plan_ops priced_ops = {.reserve = r_reserve, .budget = r_budget, .evict = r_evict,
                                        .fetch = r_fetch, .lookup = r_lookup, .hides = r_hides,
                                        .price = r_price, .fetch_cost = r_fetch_cost};

static uint64_t told_next(void *state, const lms_policy_memo *memo, uint64_t last_use, uint64_t now)
{
    (void)state, (void)last_use, (void)now;
    return memo->w[0] > now ? memo->w[0] : LMS_NEXT_UNKNOWN;
}
static const lms_policy told = {.name = "told", .on_demand = true, .next_use = told_next};

static uint64_t sixteen(void *state)
{
    (void)state;
    return 16;   /* TRIAL_MIN: a step, so acting deep reads chunks used once a step in place */
}
static const lms_policy stepped = {.name = "stepped", .on_demand = true, .next_use = told_next, .period = sixteen,
                                   .step = sixteen};

static void r_launch(lms_plan *p, const lms_plan_ops *ops, room *f, uint64_t seq, const uint32_t *ids, int k)
{
    lms_plan_chunk *mine[BIG];
    for (int i = 0; i < k; i++) {
        mine[i] = &f->chunks[ids[i]];
        lms_plan_pin(p, mine[i]);
    }
    lms_plan_launch(p, ops, f, seq, 1, ids, k, mine, k);
    CHECK_EQ_U(p->bringing, 0);   /* never stale after a return */
    for (int i = 0; i < k; i++) {
        lms_plan_used(p, mine[i], seq);
    }
    CHECK(f->used <= f->room);
}

/* As bringing_test.c's setup: room 9 units; launches 1..7 use chunks
 * 0..6. At launch 8: chunk 6 busy (1000), chunk 5 two back (990), chunks
 * 2 and 3 idle (910, 905), chunks 0, 1, 4 needed under half as far. */
static void setup(room *f, lms_plan *p)
{
    memset(f, 0, sizeof *f);
    f->room = 9 * UNIT;
    f->n = 16;
    for (uint32_t i = 0; i < f->n; i++) {
        f->chunks[i] = (lms_plan_chunk){.id = i, .charge = UNIT};
        f->price[i] = -1;
        f->chunks[i].memo.w[0] = i < 7 ? 100 + i : 2000;
    }
    f->chunks[6].memo.w[0] = 1000;
    f->chunks[5].memo.w[0] = 990;
    f->chunks[2].memo.w[0] = 910;
    f->chunks[3].memo.w[0] = 905;
    CHECK(lms_plan_init(p, &told));
    f->p = p;
    for (uint32_t i = 0; i < 7; i++)
        r_launch(p, &plain_ops, f, i + 1, &i, 1);
    p->mode = LMS_PLAN_ACT;
}

/* Launch 8 reads chunk 8 (one unit) and chunk 10 (two units) on demand
 * into a full room; the launch hides two units. `fail`: chunk 8's fetch
 * is refused after its room was made (one unit free again). Returns the
 * victim evicted for chunk 10 (the second eviction). */
static int second_victim(bool priced, bool fail, bool only10)
{
    room f;
    lms_plan p;
    setup(&f, &p);
    f.hides = 2 * UNIT;
    f.used += 2 * UNIT;
    f.chunks[10].charge = 2 * UNIT;
    if (priced)
        f.price[8] = 2.0, f.price[10] = 1.0;   /* chunk 8 first (dearer) */
    f.fails[8] = fail;
    uint32_t ids[2] = {8, 10};
    if (only10) {
        f.used -= UNIT;   /* the unit chunk 8's refused fetch left free */
        r_launch(&p, priced ? &priced_ops : &plain_ops, &f, 8, &ids[1], 1);
    } else {
        r_launch(&p, priced ? &priced_ops : &plain_ops, &f, 8, ids, 2);
    }
    int v = f.evicted[only10 ? 0 : 1];
    printf("%s, chunk 8 %s: victims", priced ? "priced" : "unpriced",
           only10 ? "absent" : fail ? "refused" : "fetched");
    for (uint64_t i = 0; i < f.evictions; i++)
        printf(" %d", f.evicted[i]);
    printf(" (victim for chunk 10: %d; bringing at evictions up to %llu units)\n", v,
           (unsigned long long)(f.max_bringing / UNIT));
    lms_plan_destroy(&p);
    return v;
}

/* A chunk whose fetch was refused is read in place: the copy for the
 * launch is then chunk 10's two units, which the launch hides, and the
 * victim for chunk 10 is the one chosen for those two units alone (the
 * farthest, 5). (Counting chunk 8's unit still, the fetch "outlasted" the
 * launch and the idle one, 3, went.) */
static void refused_fetch(void)
{
    int alone[2], refused[2];
    for (int priced = 1; priced >= 0; priced--) {
        alone[priced] = second_victim(priced, false, true);
        refused[priced] = second_victim(priced, true, false);
        second_victim(priced, false, false);
    }
    for (int priced = 1; priced >= 0; priced--) {
        CHECK_EQ_U(alone[priced], 5);
        CHECK_EQ_U(refused[priced], alone[priced]);
    }
}

/* The launch's own resident chunk 1 (cheap) is sent back so that chunk 2
 * (dear) is fetched: the room is full of the launch's chunks, no victim.
 * p->bringing is zero after the return (r_launch checks it), and the
 * demotion path never asked pick_victim (no eviction but chunk 1's). */
static void demoted(void)
{
    room f;
    lms_plan p;
    memset(&f, 0, sizeof f);
    f.room = 2 * UNIT;
    f.n = 4;
    for (uint32_t i = 0; i < f.n; i++) {
        f.chunks[i] = (lms_plan_chunk){.id = i, .charge = UNIT};
        f.chunks[i].memo.w[0] = 2000;
        f.price[i] = -1;
    }
    f.hides = UNIT;
    f.p = &p;
    CHECK(lms_plan_init(&p, &told));
    uint32_t a[2] = {0, 1};
    r_launch(&p, &plain_ops, &f, 1, a, 2);
    CHECK_EQ_U(f.used, 2 * UNIT);
    f.fetches = 0;
    p.mode = LMS_PLAN_ACT;
    f.price[0] = 5.0, f.price[1] = 0.5, f.price[2] = 4.0, f.price[3] = 0.0;
    uint32_t b[4] = {0, 1, 2, 3};
    r_launch(&p, &priced_ops, &f, 2, b, 4);
    printf("demoted: evictions %llu (first %d), fetches %llu, bringing up to %llu units\n",
           (unsigned long long)f.evictions, f.evicted[0], (unsigned long long)f.fetches,
           (unsigned long long)(f.max_bringing / UNIT));
    CHECK_EQ_U(f.evictions, 1);
    CHECK_EQ_U(f.evicted[0], 1);
    CHECK_EQ_U(f.fetches, 1);
    CHECK(f.chunks[2].resident);
    CHECK_EQ_U(f.max_bringing, UNIT);   /* chunk 2 only: chunk 3 (price 0) is read in place */
    lms_plan_destroy(&p);
}

/* Launch 18 (acting deep, or acting) lacks chunk 11, last used at launch
 * 1 (once a step: acting deep fetches it on demand into the one free unit,
 * fetch_free), and chunk 12 (never used: through bring). Launches 11..17
 * used chunks 0..6 as in setup(). The launch hides one unit; the copy it
 * waits for is two units either way (both on the launch's stream). Returns
 * the victim evicted for chunk 12. */
static int free_then_bring(bool deep)
{
    room f;
    lms_plan p;
    memset(&f, 0, sizeof f);
    f.room = 9 * UNIT;
    f.n = 16;
    for (uint32_t i = 0; i < f.n; i++) {
        f.chunks[i] = (lms_plan_chunk){.id = i, .charge = UNIT};
        f.price[i] = -1;
        f.chunks[i].memo.w[0] = i < 7 ? 100 + i : 2000;
    }
    f.chunks[6].memo.w[0] = 1000;
    f.chunks[5].memo.w[0] = 990;
    f.chunks[2].memo.w[0] = 910;
    f.chunks[3].memo.w[0] = 905;
    CHECK(lms_plan_init(&p, &stepped));
    f.p = &p;
    for (uint32_t i = 0; i < 7; i++)
        r_launch(&p, &plain_ops, &f, i + 11, &i, 1);
    p.mode = deep ? LMS_PLAN_DEEP : LMS_PLAN_ACT;
    f.chunks[11].last_use = 1;
    f.used += UNIT;   /* one unit free */
    f.hides = UNIT;
    uint32_t ids[2] = {11, 12};
    r_launch(&p, &plain_ops, &f, 18, ids, 2);
    printf("%s: fetches %llu, evictions %llu (first %d), bringing up to %llu units\n", deep ? "deep" : "act",
           (unsigned long long)f.fetches - 7, (unsigned long long)f.evictions, f.evicted[0],
           (unsigned long long)(f.max_bringing / UNIT));
    CHECK(f.chunks[11].resident && f.chunks[12].resident);
    CHECK_EQ_U(f.evictions, 1);
    int v = f.evicted[0];
    lms_plan_destroy(&p);
    return v;
}

/* The same two units copied on demand for the same launch: the victim
 * does not depend on whether one of them went into free room first. */
static void free_room_counted(void)
{
    int act = free_then_bring(false), deep = free_then_bring(true);
    CHECK_EQ_U(act, 2);
    CHECK_EQ_U(deep, act);
}

static const test_case cases[] = {
    {"free_room_counted", free_room_counted},
    {"refused_fetch", refused_fetch},
    {"demoted", demoted},
};

TEST_MAIN(cases)
