/*
 * free_churn_test.c — acting deep and room free only between evictions
 * (src/common/plan.c, fetch_free). Without CUDA: a room of 4 units, a
 * step of STEP launches: chunks A and B (2 units each) alternate, then a
 * chunk C of 4 units is used twice (evicting A and B), then A again, and
 * after it a chunk O of 1 unit used once a step, then B again. After C,
 * A's fetch evicts C and leaves 2 units free until B comes back: room
 * that B takes back within the step. One case per meson test.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "plan.h"
#include "policy.h"

#define STEP 24
#define STEPS 10
#define A 0
#define B 1
#define C 2
#define O 3
#define NONE 4   /* a launch on no managed chunk */

/* The chunk launch k of a step uses (NONE: none). */
static uint32_t chunk_of(uint32_t k)
{
    static const uint32_t order[STEP] = {A, B, A, B, A, B, C, NONE, C, A, NONE, NONE,
                                         O, NONE, NONE, NONE, NONE, NONE, NONE, NONE, NONE, NONE, NONE, B};
    return order[k];
}

/* The fake device with O's fetches and evictions counted. */
typedef struct churn {
    fake_room f;   /* first: the fake_room ops get this pointer */
    uint64_t o_moves;
} churn;

/* ops.fetch: counts O's, then as fake_room. */
static bool churn_fetch(void *ctx, lms_plan_chunk *c, bool ahead)
{
    ((churn *)ctx)->o_moves += c->id == O;
    return fake_room_fetch(ctx, c, ahead);
}

/* ops.evict: counts O's, then as fake_room. */
static void churn_evict(void *ctx, lms_plan_chunk *c)
{
    ((churn *)ctx)->o_moves += c->id == O;
    fake_room_evict(ctx, c);
}

/* Acting deep (set before every launch: no timed steps): once the step is
 * learned, O is read in place, neither fetched into the room A left free
 * nor evicted for B: from step 4 on O never moves (fetched into it, O
 * was evicted for B every step: a fetch and an eviction a step). A, B and
 * C move as acting deep moves them either way. */
static void churn_free_room(void)
{
    churn d;
    memset(&d, 0, sizeof d);
    fake_room_init(&d.f, 4, 4);
    d.f.chunks[A].charge = 2;
    d.f.chunks[B].charge = 2;
    d.f.chunks[C].charge = 4;
    d.f.chunks[O].charge = 1;
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    ops.fetch = churn_fetch;
    ops.evict = churn_evict;
    uint64_t moved[STEPS];
    for (int s = 0; s < STEPS; s++) {
        uint64_t before = d.o_moves;
        for (uint32_t k = 0; k < STEP; k++) {
            uint64_t seq = (uint64_t)s * STEP + k + 1;
            uint32_t id = chunk_of(k);
            int n = id == NONE ? 0 : 1;
            lms_plan_chunk *mine[1] = {n ? &d.f.chunks[id] : NULL};
            if (n)
                lms_plan_pin(&plan, mine[0]);
            plan.mode = LMS_PLAN_DEEP;
            lms_plan_launch(&plan, &ops, &d, seq, 7 + id, &id, n, mine, n);
            if (n)
                lms_plan_used(&plan, mine[0], seq);
        }
        moved[s] = d.o_moves - before;
    }
    for (int s = 4; s < STEPS; s++)
        CHECK_EQ_U(moved[s], 0);
    lms_plan_destroy(&plan);
}

static const test_case cases[] = {
    {"churn_free_room", churn_free_room},
};

TEST_MAIN(cases)
