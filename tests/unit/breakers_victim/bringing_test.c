/*
 * bringing_test.c — what pick_victim is told the fetch is (src/common/
 * plan.c, bring's p->bringing and make_room's distance) from outside:
 * the same demand bytes with prices known (bring_priced, which makes room
 * chunk by chunk without bring) and without; and acting deep, a fetch for
 * the next launch followed in its batch by fetches for launches further
 * ahead.
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
    uint64_t hides;                 /* ops->hides (0: unknown) */
    double price;                   /* ops->price for every chunk (negative: unknown) */
    int ahead_ids[8], nahead;       /* the ahead list */
    uint32_t ahead_dist[8];         /* and its distances */
    lms_plan *p;
} room;

static room *cur;

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
    CHECK(c->pins == 0);
    f->used -= c->charge;
    if (f->evictions < BIG)
        f->evicted[f->evictions] = (int)c->id;
    f->evictions++;
}
static bool r_fetch(void *ctx, lms_plan_chunk *c, bool ahead)
{
    (void)c, (void)ahead;
    ((room *)ctx)->fetches++;
    return true;
}
static lms_plan_chunk *r_lookup(void *ctx, uint32_t id)
{
    room *f = ctx;
    return id < f->n ? &f->chunks[id] : NULL;
}
static uint64_t r_hides(void *ctx) { return ((room *)ctx)->hides; }
static double r_price(void *ctx, lms_plan_chunk *c)
{
    (void)c;
    return ((room *)ctx)->price;
}
static double r_fetch_cost(void *ctx)
{
    (void)ctx;
    return -1;   /* unknown: a chunk with a price above zero is fetched */
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

static int told_ahead(void *state, uint32_t *ids, uint32_t *dist, int max, uint32_t launches)
{
    (void)state, (void)launches;
    int k = 0;
    for (int i = 0; cur && i < cur->nahead && k < max; i++) {
        ids[k] = (uint32_t)cur->ahead_ids[i];
        dist[k++] = cur->ahead_dist[i];
    }
    return k;
}

static const lms_policy told = {.name = "told", .on_demand = true, .next_use = told_next, .ahead = told_ahead};

static void r_launch(lms_plan *p, const lms_plan_ops *ops, room *f, uint64_t seq, const uint32_t *ids, int k)
{
    lms_plan_chunk *mine[BIG];
    for (int i = 0; i < k; i++) {
        mine[i] = &f->chunks[ids[i]];
        lms_plan_pin(p, mine[i]);
    }
    lms_plan_launch(p, ops, f, seq, 1, ids, k, mine, k);
    for (int i = 0; i < k; i++) {
        lms_plan_used(p, mine[i], seq);
    }
    CHECK(f->used <= f->room);
}

/* Room 9 units; launches 1..7 use chunks 0..6 (one unit each). Next uses:
 * chunk 6 (launch 7: busy at launch 8) 1000, chunk 5 (two back) 990,
 * chunks 2 and 3 (idle) 910 and 905, chunks 0,1,4 at 100+ (under half as
 * far: no candidates). Chunks 7.. are spare (next use 2000 / 9). */
static void setup(room *f, lms_plan *p)
{
    memset(f, 0, sizeof *f);
    f->room = 9 * UNIT;
    f->n = 16;
    f->price = -1;
    for (uint32_t i = 0; i < f->n; i++)
        f->chunks[i] = (lms_plan_chunk){.id = i, .charge = UNIT};
    for (uint32_t i = 0; i < 7; i++)
        f->chunks[i].memo.w[0] = 100 + i;
    f->chunks[6].memo.w[0] = 1000;
    f->chunks[5].memo.w[0] = 990;
    f->chunks[2].memo.w[0] = 910;
    f->chunks[3].memo.w[0] = 905;
    f->chunks[7].memo.w[0] = 2000;
    for (uint32_t i = 8; i < f->n; i++)
        f->chunks[i].memo.w[0] = 9;
    CHECK(lms_plan_init(p, &told));
    f->p = p;
    cur = f;
    for (uint32_t i = 0; i < 7; i++)
        r_launch(p, &plain_ops, f, i + 1, &i, 1);
    p->mode = LMS_PLAN_ACT;
}

/* ---- 1. demand bytes with prices known ------------------------------------ */

/* Launch 8 reads two units it lacks, on demand, into a full room (two
 * units held outside the planner): `split` as chunks 8 and 9 of one unit,
 * else as chunk 10 of two; `priced` with ops->price known (1.0, above
 * zero: every chunk is fetched; bring_priced), else unknown (bring).
 * Launch 8 hides one unit: the two units outlast it. Victims to v[0..1]. */
static void demand_victims(bool split, bool priced, int v[2])
{
    room f;
    lms_plan p;
    setup(&f, &p);
    f.hides = UNIT;
    f.used += 2 * UNIT;
    if (priced)
        f.price = 1.0;
    f.chunks[10].charge = 2 * UNIT;
    uint32_t two[2] = {8, 9}, one = 10;
    r_launch(&p, priced ? &priced_ops : &plain_ops, &f, 8, split ? two : &one, split ? 2 : 1);
    CHECK_EQ_U(f.evictions, 2);
    v[0] = f.evicted[0], v[1] = f.evicted[1];
    printf("demand, %s, prices %s: evicted %d then %d\n", split ? "two chunks of one unit" : "one chunk of two units",
           priced ? "known" : "unknown", v[0], v[1]);
    cur = NULL;
    lms_plan_destroy(&p);
}

static bool same_pair(const int a[2], const int b[2])
{
    return (a[0] == b[0] && a[1] == b[1]) || (a[0] == b[1] && a[1] == b[0]);
}

/* The same two units on demand for the same launch: the victims do not
 * depend on how they are cut into chunks, whether or not the launch's
 * prices are known (bring_priced, the path once prices are measured,
 * made room chunk by chunk with one chunk's charge: split and priced
 * evicted {5, 2}, the others {2, 3}). */
static void priced_split(void)
{
    int w[2], s[2], pw[2], ps[2];
    demand_victims(false, false, w);
    demand_victims(true, false, s);
    demand_victims(false, true, pw);
    demand_victims(true, true, ps);
    CHECK(same_pair(w, s));
    CHECK(same_pair(w, pw));
    CHECK(same_pair(pw, ps));
}

/* ---- 2. acting deep: the next launch's fetch in a batch reaching further - */

/* Launch 8 uses chunk 7 (fills the room but one unit, which is held
 * outside). Acting deep, it fetches ahead chunk 8 (one unit) for launch 9
 * and, when `far`, chunks 11 and 12 for launches 12 and 13 after it.
 * Launch 8 hides one unit: chunk 8 alone does not outlast it. Returns the
 * victim evicted for chunk 8 (the first eviction). */
static int deep_first_victim(bool far)
{
    room f;
    lms_plan p;
    setup(&f, &p);
    p.mode = LMS_PLAN_DEEP;
    f.hides = UNIT;
    f.used += UNIT;
    f.ahead_ids[0] = 8, f.ahead_dist[0] = 1, f.nahead = 1;
    f.chunks[11].memo.w[0] = 12;
    f.chunks[12].memo.w[0] = 13;
    if (far) {
        f.ahead_ids[1] = 11, f.ahead_dist[1] = 4;
        f.ahead_ids[2] = 12, f.ahead_dist[2] = 5;
        f.nahead = 3;
    }
    uint32_t seven = 7;
    r_launch(&p, &plain_ops, &f, 8, &seven, 1);
    CHECK(f.evictions >= 1);
    int v = f.evicted[0];
    printf("deep, chunk 8 for launch 9%s: first victim %d (%llu evictions, %llu fetches)\n",
           far ? " then 11, 12 for launches 12, 13" : " alone", v, (unsigned long long)f.evictions,
           (unsigned long long)f.fetches);
    cur = NULL;
    lms_plan_destroy(&p);
    return v;
}

/* A need further than the next launch "has launches to hide behind"
 * (outlasts_launch), and the batch is fetched in order of need, so chunk
 * 8's copy ends before theirs begin: the victim made room for chunk 8
 * does not change because chunks for launches 12 and 13 follow it in the
 * batch (counted with them, it was 2, idle first, against 5 alone). */
static void deep_mixed(void)
{
    int alone = deep_first_victim(false), followed = deep_first_victim(true);
    CHECK_EQ_U(alone, 5);
    CHECK_EQ_U(followed, alone);
}

static const test_case cases[] = {
    {"priced_split", priced_split},
    {"deep_mixed", deep_mixed},
};

TEST_MAIN(cases)
