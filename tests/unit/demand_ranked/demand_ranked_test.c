/*
 * demand_ranked_test.c — on demand (the trials' mode in LRU order), a
 * launch whose chunks do not fit the room together reads in place the
 * ones its prices say cost least (src/common/plan.c, bring_demand),
 * without CUDA: a room of 3 chunks, a launch of 4, each chunk priced by
 * the test, a fetch priced 1 per unit. One case per meson test.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "plan.h"
#include "policy.h"

#define ROOM 3
#define CHUNKS 4

static double prices[CHUNKS];   /* what reading each chunk in place costs per unit (-1: unknown) */

/* ops.price: the test's price of c. */
static double test_price(void *ctx, lms_plan_chunk *c)
{
    (void)ctx;
    return prices[c->id];
}

/* ops.fetch_cost: a fetch holds a launch 1 per unit. */
static double test_fetch_cost(void *ctx)
{
    (void)ctx;
    return 1;
}

/* A planner on demand over a fake room of ROOM chunks; the caller frees
 * the planner (lms_plan_destroy). */
typedef struct rig {
    fake_room f;   /* first: the fake_room ops get this pointer */
    lms_plan plan;
    lms_plan_ops ops;
    uint64_t seq;
} rig;

static void rig_init(rig *r)
{
    memset(r, 0, sizeof *r);
    fake_room_init(&r->f, ROOM, CHUNKS);
    CHECK(lms_plan_init(&r->plan, lms_policy_find("lookahead")));
    r->ops = fake_room_ops();
    r->ops.price = test_price;
    r->ops.fetch_cost = test_fetch_cost;
    r->ops.room = fake_room_budget;
}

/* One launch on chunks ids[0..n) on demand. */
static void launch(rig *r, const uint32_t *ids, int n)
{
    lms_plan_chunk *mine[CHUNKS];
    for (int i = 0; i < n; i++) {
        mine[i] = &r->f.chunks[ids[i]];
        lms_plan_pin(&r->plan, mine[i]);
    }
    r->plan.mode = LMS_PLAN_DEMAND;
    r->seq++;
    lms_plan_launch(&r->plan, &r->ops, r, r->seq, 42, ids, n, mine, n);
    for (int i = 0; i < n; i++)
        lms_plan_used(&r->plan, mine[i], r->seq);
}

static const uint32_t ALL[CHUNKS] = {0, 1, 2, 3};

/* The last chunk of the launch is priced 10 fetches, the others a tenth
 * of one: it is fetched, and one of the cheap ones is read in place (in
 * the launch's order the dear one was the one left off the device). */
static void dear_last_fetched(void)
{
    rig r;
    rig_init(&r);
    prices[0] = prices[1] = prices[2] = 0.1, prices[3] = 10;
    launch(&r, ALL, CHUNKS);
    CHECK(r.f.chunks[3].resident);
    CHECK_EQ_U(r.f.used, ROOM);
    lms_plan_destroy(&r.plan);
}

/* Chunks 0-2 priced `cheap` made resident by a launch of their own, then
 * a launch of all four with chunk 3 priced `dear`: whether chunk 3 ends
 * resident, and how many chunks were sent back for it. */
static void resident_then_dear(double cheap, double dear, bool *fetched, uint64_t *sent_back)
{
    rig r;
    rig_init(&r);
    prices[0] = prices[1] = prices[2] = cheap, prices[3] = dear;
    launch(&r, ALL, 3);
    CHECK(r.f.chunks[0].resident && r.f.chunks[1].resident && r.f.chunks[2].resident);
    launch(&r, ALL, CHUNKS);
    *fetched = r.f.chunks[3].resident;
    *sent_back = r.f.evictions;
    lms_plan_destroy(&r.plan);
}

/* The cheap chunks are resident already (an earlier launch used them):
 * the dear one is fetched in place of one of them, which is sent back
 * to be read in place. */
static void cheap_resident_sent_back(void)
{
    bool fetched;
    uint64_t sent_back;
    resident_then_dear(0.1, 10, &fetched, &sent_back);
    CHECK(fetched);
    CHECK_EQ_U(sent_back, 1);
}

/* A chunk sent back is fetched again at its next use on demand: it is
 * sent back only where reading the missing one in place costs more than
 * a fetch plus twice the resident one's price. Priced 1.5 against 0.3,
 * the dear one is read in place and nothing is sent back. */
static void near_fetch_not_sent_back(void)
{
    bool fetched;
    uint64_t sent_back;
    resident_then_dear(0.3, 1.5, &fetched, &sent_back);
    CHECK(!fetched);
    CHECK_EQ_U(sent_back, 0);
}

/* Every chunk priced under a fetch: still dearest first (the last one,
 * 0.9, fetched; the first, priced zero, read in place), but a resident
 * one is not sent back for a missing one: fetched again at its next use,
 * it would cost more than the missing one read in place saves. */
static void under_a_fetch_ranked(void)
{
    rig r;
    rig_init(&r);
    prices[0] = 0, prices[1] = 0.2, prices[2] = 0.5, prices[3] = 0.9;
    launch(&r, ALL, CHUNKS);
    CHECK(r.f.chunks[1].resident && r.f.chunks[2].resident && r.f.chunks[3].resident);
    CHECK(!r.f.chunks[0].resident);
    prices[0] = 0.9, prices[3] = 0;
    launch(&r, ALL, CHUNKS);
    CHECK(!r.f.chunks[0].resident);
    CHECK_EQ_U(r.f.evictions, 0);
    lms_plan_destroy(&r.plan);
}

/* The launch's chunks fit the room: every one is fetched, prices aside
 * (the launch order; nothing read in place). */
static void fits_all_fetched(void)
{
    rig r;
    rig_init(&r);
    r.f.room = CHUNKS;
    prices[0] = 10, prices[1] = 0, prices[2] = -1, prices[3] = 0.1;
    launch(&r, ALL, CHUNKS);
    for (int i = 0; i < CHUNKS; i++)
        CHECK(r.f.chunks[i].resident);
    CHECK_EQ_U(r.f.fetches, CHUNKS);
    lms_plan_destroy(&r.plan);
}

static const test_case cases[] = {
    {"dear_last_fetched", dear_last_fetched},
    {"cheap_resident_sent_back", cheap_resident_sent_back},
    {"near_fetch_not_sent_back", near_fetch_not_sent_back},
    {"under_a_fetch_ranked", under_a_fetch_ranked},
    {"fits_all_fetched", fits_all_fetched},
};

TEST_MAIN(cases)
