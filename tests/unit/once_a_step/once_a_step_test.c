/*
 * once_a_step_test.c — acting deep reads a chunk used once a step in
 * place (src/common/plan.c, once_a_step) and fetches the chunks used more
 * often, without CUDA: a step of 20 launches over a room of 2 chunks;
 * launches 0-17 alternate between chunks 1 and 2, launch 18 uses chunk 3
 * and launch 19 chunk 0, each once a step; a free room is used (case
 * free_room_used). One case per meson test.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "plan.h"
#include "policy.h"

#define STEP 20
#define STEPS 8

static int new_from = STEPS;   /* from this step on, launch 18 uses chunk 4, new then, instead of 3 */

/* The chunk launch k of step s uses. */
static uint32_t chunk_of(int s, uint32_t k)
{
    return k < 18 ? 1 + k % 2 : k == 18 ? (s >= new_from ? 4 : 3) : 0;
}

/* The fake device with fetches counted per chunk. */
typedef struct counted {
    fake_room f;   /* first: the fake_room ops get this pointer */
    uint64_t by_id[5];
} counted;

/* ops.fetch: counts per chunk, then as fake_room. */
static bool counted_fetch(void *ctx, lms_plan_chunk *c, bool ahead)
{
    ((counted *)ctx)->by_id[c->id]++;
    return fake_room_fetch(ctx, c, ahead);
}

static uint64_t fetched_new;   /* fetches of chunk 4 in the last run */
static double reread_price = -1;   /* >= 0: ops.price of chunk 0 read in place (the others 1), a fetch costing 1 */

/* ops.price: chunk 0 reread_price, the others one pass (1). */
static double run_price(void *ctx, lms_plan_chunk *c)
{
    (void)ctx;
    return c->id == 0 ? reread_price : 1;
}

/* ops.fetch_cost: 1 a byte. */
static double unit_fetch_cost(void *ctx)
{
    (void)ctx;
    return 1;
}

static int grow_at = STEPS;   /* from this step on, the room holds 3 chunks instead of 2 */
static uint64_t in_place[STEPS];   /* launches of each step of the last run whose chunk was not resident */

/* Runs STEPS steps in `mode` (set before every launch: no timed steps
 * here); fetches[s] counts the fetches of step s, far[s] those of chunks
 * 0 and 3 (and fetched_new those of chunk 4). */
static void run(int mode, uint64_t *fetches, uint64_t *far)
{
    counted c;
    memset(&c, 0, sizeof c);
    fake_room_init(&c.f, 2, 5);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    ops.fetch = counted_fetch;
    if (reread_price >= 0)
        ops.price = run_price, ops.fetch_cost = unit_fetch_cost;
    memset(in_place, 0, sizeof in_place);
    for (int s = 0; s < STEPS; s++) {
        if (s == grow_at)
            c.f.room = 3;   /* a device buffer freed: the room grows */
        uint64_t before = c.f.fetches, far_before = c.by_id[0] + c.by_id[3];
        for (uint32_t k = 0; k < STEP; k++) {
            uint64_t seq = (uint64_t)s * STEP + k + 1;
            uint32_t id = chunk_of(s, k);
            lms_plan_chunk *mine[1] = {&c.f.chunks[id]};
            plan.mode = mode;
            lms_plan_pin(&plan, mine[0]);
            lms_plan_launch(&plan, &ops, &c, seq, 7 + id, &id, 1, mine, 1);
            in_place[s] += !mine[0]->resident;
            lms_plan_used(&plan, mine[0], seq);
        }
        fetches[s] = c.f.fetches - before;
        far[s] = c.by_id[0] + c.by_id[3] - far_before;
    }
    fetched_new = c.by_id[4];
    lms_plan_destroy(&plan);
}

/* Runs STEPS steps in `mode`: from step 3 on, each step fetches `want`
 * times, `want_far` of them chunks 0 and 3. */
static void steady_fetches(int mode, uint64_t want, uint64_t want_far)
{
    uint64_t fetches[STEPS], far[STEPS];
    run(mode, fetches, far);
    for (int s = 3; s < STEPS; s++) {
        CHECK_EQ_U(fetches[s], want);
        CHECK_EQ_U(far[s], want_far);
    }
}

/* Acting deep: once the step is learned, chunks 0 and 3 are read where
 * they are and chunks 1 and 2 stay: no fetch at all. */
static void deep_reads_once_in_place(void)
{
    steady_fetches(LMS_PLAN_DEEP, 0, 0);
}

/* Acting (one launch ahead): chunks 0 and 3 are fetched every step, and
 * chunks 1 and 2 come back after them: four fetches a step. */
static void act_fetches_once(void)
{
    steady_fetches(LMS_PLAN_ACT, 4, 2);
}

/* Before anything is learned (the first step), acting deep fetches as
 * acting does: a chunk never used before is no chunk used once a step. */
static void first_step_fetches(void)
{
    uint64_t deep[STEPS], act[STEPS], far[STEPS];
    run(LMS_PLAN_DEEP, deep, far);
    run(LMS_PLAN_ACT, act, far);
    CHECK_EQ_U(deep[0], act[0]);
    CHECK(deep[0] >= 4);
}

/* A chunk first used once the step is learned (step 5) is fetched at that
 * use by acting deep, and read in place from the next step on, when it is
 * used once a step: fetched exactly once. */
static void new_chunk_fetched(void)
{
    uint64_t fetches[STEPS], far[STEPS];
    new_from = 5;
    run(LMS_PLAN_DEEP, fetches, far);
    new_from = STEPS;
    CHECK_EQ_U(fetched_new, 1);
    CHECK_EQ_U(fetches[STEPS - 1], 0);
}

/* The room grows from 2 chunks to 3 in step 3 (a device buffer freed),
 * once the step is learned: acting deep fetches a chunk used once a step
 * into the free room rather than read it in place (nothing is evicted for
 * it): from step 4 on, one of chunks 0 and 3 stays on the device and the
 * other alone is read in place, with no fetch (the free room was left
 * empty: both read in place). */
static void free_room_used(void)
{
    uint64_t fetches[STEPS], far[STEPS];
    grow_at = 3;
    run(LMS_PLAN_DEEP, fetches, far);
    grow_at = STEPS;
    for (int s = 4; s < STEPS; s++) {
        CHECK_EQ_U(in_place[s], 1);
        CHECK_EQ_U(fetches[s], 0);
    }
}

/* Chunk 0 priced at 10 fetches read in place (a kernel re-reads it),
 * chunk 3 at one: from step 3 on, acting deep fetches chunk 0 at every
 * step and reads chunk 3 alone in place (src/common/plan.c, read_once).
 * At 4 fetches, under FAR_OVER (8), both are read in place as before. */
static void reread_fetched(void)
{
    uint64_t fetches[STEPS], far[STEPS];
    reread_price = 10;
    run(LMS_PLAN_DEEP, fetches, far);
    for (int s = 3; s < STEPS; s++) {
        CHECK_EQ_U(in_place[s], 1);
        CHECK_EQ_U(far[s], 1);
    }
    reread_price = 4;
    run(LMS_PLAN_DEEP, fetches, far);
    reread_price = -1;
    for (int s = 3; s < STEPS; s++) {
        CHECK_EQ_U(in_place[s], 2);
        CHECK_EQ_U(far[s], 0);
    }
}

/* ---- the room among chunks used once a step (give_room) ----------------- */

#define PAIRS 4            /* launches of a pair of chunks each, once a step */
#define FILL 14            /* launches on no managed chunk after them: a step of 18 */

/* A fake device that knows the launch being planned (its prices depend
 * on which of its chunks are off the device). */
typedef struct paired {
    fake_room f;                 /* first: the fake_room ops get this pointer */
    lms_plan_chunk **mine;       /* the launch being planned */
    int m;
} paired;

/* How many chunks of the launch being planned are off the device. */
static int off_device(const paired *d)
{
    int off = 0;
    for (int i = 0; i < d->m; i++)
        off += !d->mine[i]->resident;
    return off;
}

/* ops.price of a device whose launches hide one chunk read in place, not
 * two: 1 while the launch has both of its chunks off the device, else 0. */
static double paired_price(void *ctx, lms_plan_chunk *c)
{
    (void)c;
    return off_device(ctx) >= 2 ? 1 : 0;
}

/* ops.hides: one chunk's charge. */
static uint64_t paired_hides(void *ctx)
{
    (void)ctx;
    return 1;
}

/* Runs STEPS steps in acting deep of PAIRS launches (launch j on chunks 2j
 * and 2j+1) and FILL others, with a room of 4 chunks; both[s] counts the
 * launches of step s that had both chunks off the device, moved[s] the
 * fetches of step s. `hides` false: no ops.hides. */
static void run_pairs(bool hides, uint64_t *both, uint64_t *moved)
{
    paired d;
    memset(&d, 0, sizeof d);
    fake_room_init(&d.f, 4, 2 * PAIRS);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    ops.price = paired_price;
    if (hides)
        ops.hides = paired_hides;
    uint64_t seq = 0;
    for (int s = 0; s < STEPS; s++) {
        both[s] = 0;
        uint64_t before = d.f.fetches;
        for (uint32_t j = 0; j < PAIRS + FILL; j++) {
            uint32_t ids[2] = {2 * j, 2 * j + 1};
            int n = j < PAIRS ? 2 : 0;
            lms_plan_chunk *mine[2] = {NULL, NULL};
            for (int i = 0; i < n; i++) {
                mine[i] = &d.f.chunks[ids[i]];
                lms_plan_pin(&plan, mine[i]);
            }
            d.mine = mine, d.m = n;
            plan.mode = LMS_PLAN_DEEP;
            lms_plan_launch(&plan, &ops, &d, ++seq, 100 + j, ids, n, mine, n);
            both[s] += n == 2 && !mine[0]->resident && !mine[1]->resident;
            for (int i = 0; i < n; i++)
                lms_plan_used(&plan, mine[i], seq);
        }
        moved[s] = d.f.fetches - before;
    }
    lms_plan_destroy(&plan);
}

/* Four pairs over a room of four: the room acting deep began with held
 * both chunks of two pairs and none of the others (two launches reading
 * two chunks in place, the others none). Launches that hide a chunk
 * offer one, launches slowed by two take their room: from step 5 on every
 * launch reads exactly one chunk in place and nothing moves. Without
 * ops.hides the room stays as it began. */
static void room_given(void)
{
    uint64_t both[STEPS], moved[STEPS];
    run_pairs(false, both, moved);
    CHECK(both[STEPS - 1] >= 1);   /* as it began: the case below is no accident */
    run_pairs(true, both, moved);
    for (int s = 5; s < STEPS; s++) {
        CHECK_EQ_U(both[s], 0);
        CHECK_EQ_U(moved[s], 0);
    }
}

/* ---- a donor that hides less than it says (take_back) ------------------- */

/* Launch B on chunks 1 and 2, then launch A on chunk 0, then FILL others,
 * each step, in acting deep over a room of one chunk: A keeps chunk 0 and
 * B reads both of its chunks in place. Both say they hide one chunk
 * (hides 1), but A re-reads its chunk: reading it in place costs A 5 a
 * step, while B pays 1 a step for reading two in place, none for one. */

/* ops.price: A's chunk 5 when off the device; B's 1 with both off. */
static double rereads_price(void *ctx, lms_plan_chunk *c)
{
    int off = off_device(ctx);
    return c->id == 0 ? (off ? 5 : 0) : off >= 2 ? 1 : 0;
}

/* The launches of STEPS steps as above; cost[s] is the slowdown of step s
 * (A 5 with chunk 0 off the device, B 1 with both chunks off), moved[s]
 * its fetches. */
static void run_rereads(uint64_t *cost, uint64_t *moved)
{
    paired d;
    memset(&d, 0, sizeof d);
    fake_room_init(&d.f, 1, 3);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    ops.price = rereads_price;
    ops.hides = paired_hides;
    uint64_t seq = 0;
    for (int s = 0; s < STEPS; s++) {
        cost[s] = 0;
        uint64_t before = d.f.fetches;
        for (uint32_t j = 0; j < 2 + FILL; j++) {
            uint32_t ids[2] = {j == 0 ? 1 : 0, 2};
            int n = j == 0 ? 2 : j == 1 ? 1 : 0;
            lms_plan_chunk *mine[2] = {NULL, NULL};
            for (int i = 0; i < n; i++) {
                mine[i] = &d.f.chunks[ids[i]];
                lms_plan_pin(&plan, mine[i]);
            }
            d.mine = mine, d.m = n;
            plan.mode = LMS_PLAN_DEEP;
            lms_plan_launch(&plan, &ops, &d, ++seq, 200 + j, ids, n, mine, n);
            if (n == 2)
                cost[s] += !mine[0]->resident && !mine[1]->resident;
            else if (n == 1)
                cost[s] += mine[0]->resident ? 0 : 5;
            for (int i = 0; i < n; i++)
                lms_plan_used(&plan, mine[i], seq);
        }
        moved[s] = d.f.fetches - before;
    }
    lms_plan_destroy(&plan);
}

/* A offers chunk 0 (it says it hides it), B takes its room; A then reads
 * it in place at 5 a step against the 1 the move saved B, and takes it
 * back, never to offer it again: from step 6 on, the steps cost 1 (B) and
 * nothing moves (without taking back: 5 a step for good). */
static void room_taken_back(void)
{
    uint64_t cost[STEPS], moved[STEPS];
    run_rereads(cost, moved);
    for (int s = 6; s < STEPS; s++) {
        CHECK_EQ_U(cost[s], 1);
        CHECK_EQ_U(moved[s], 0);
    }
}

static const test_case cases[] = {
    {"deep_reads_once_in_place", deep_reads_once_in_place},
    {"act_fetches_once", act_fetches_once},
    {"first_step_fetches", first_step_fetches},
    {"new_chunk_fetched", new_chunk_fetched},
    {"free_room_used", free_room_used},
    {"room_given", room_given},
    {"room_taken_back", room_taken_back},
    {"reread_fetched", reread_fetched},
};

TEST_MAIN(cases)
