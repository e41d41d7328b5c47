/*
 * free_trial_test.c — acting deep's trial and the chunks used once a step
 * fetched into free room (src/common/plan.c, fetch_free and trial_next).
 * Without CUDA: a step of STEP launches over a room of SPACE chunks; the
 * odd launches each on their own chunk (used once a step), the even ones
 * on a workspace of one chunk's charge, allocated before the launch
 * (lms_plan_make_room evicting for it, as the engine does for a device
 * allocation) and freed after it. So acting deep finds the room of the
 * workspace free at each odd launch and fetches its chunk into it on
 * demand (nothing evicted for it), never ahead, and reads none in place.
 * A fake clock charges each launch 100 ns plus FETCH for a chunk fetched
 * on demand, 2/3 of it for one fetched one launch ahead, a third for two,
 * nothing from three on. Per pair of launches: acting deep so 800 ns,
 * acting (fetching one launch ahead) 600, acting deep fetching every chunk
 * (two launches ahead) 400. One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_steps.h"

#define FETCH 600.0
#define SPACE 2   /* the room, in chunks */

/* The fake device with the clock and the launch each chunk was fetched for. */
typedef struct freed {
    clocked c;                            /* first: the fake ops get this pointer */
    uint64_t fetched_at[FAKE_ROOM_MAX];   /* seq of the launch planned when it was fetched (0: not since its use) */
} freed;

/* ops.fetch: notes when, then as fake_room. */
static bool freed_fetch(void *ctx, lms_plan_chunk *c, bool ahead)
{
    freed *d = ctx;
    d->fetched_at[c->id] = d->c.seq;
    return fake_room_fetch(ctx, c, ahead);
}

/* What launch `seq` waits for its chunk c, ns (a chunk read in place: 10
 * fetches, as a re-read operand). */
static double wait_of(freed *d, const lms_plan_chunk *c, uint64_t seq)
{
    if (!c->resident)
        return 10 * FETCH;
    if (!d->fetched_at[c->id])
        return 0;   /* resident since an earlier use */
    uint64_t lead = seq - d->fetched_at[c->id];
    return lead >= 3 ? 0 : FETCH * (double)(3 - lead) / 3;
}

/* Runs STEPS steps under lookahead with timed steps: launch k of a step
 * on chunk k / 2 when k is odd, on a workspace of one chunk's charge when
 * k is even (allocated before it, lms_plan_make_room evicting for it as
 * the engine does for a device allocation, and freed after it); returns
 * the last step's device time (ns). */
static double run(freed *d, lms_plan *plan)
{
    fake_room_init(&d->c.f, SPACE, STEP / 2);
    CHECK(lms_plan_init(plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    ops.fetch = freed_fetch;
    ops.mark = fake_steps_mark;
    ops.between = fake_steps_between;
    double start = 0;
    for (int s = 0; s < STEPS; s++) {
        start = d->c.now;
        for (uint32_t k = 0; k < STEP; k++) {
            d->c.seq = (uint64_t)s * STEP + k + 1;
            if (k % 2 == 0) {
                bool held = lms_plan_make_room(plan, &ops, d, 1);
                lms_plan_launch(plan, &ops, d, d->c.seq, 8, NULL, 0, NULL, 0);
                d->c.now += 100;
                if (held)
                    d->c.f.used -= 1;
                continue;
            }
            uint32_t id = k / 2;
            lms_plan_chunk *mine[1] = {&d->c.f.chunks[id]};
            lms_plan_pin(plan, mine[0]);
            lms_plan_launch(plan, &ops, d, d->c.seq, 7, &id, 1, mine, 1);
            d->c.now += 100 + wait_of(d, mine[0], d->c.seq);
            d->fetched_at[id] = 0;
            lms_plan_used(plan, mine[0], d->c.seq);
        }
    }
    return d->c.now - start;
}

/* Acting deep, fetching each chunk used once a step on demand into the
 * workspace's room, is 1.33x acting over its step: the trials try it
 * again fetching every chunk and keep that (400 ns a pair of launches).
 * When a chunk fetched into free room did not count as one acting deep
 * held back, acting was kept (600 ns a pair). */
static void deep_free_retried(void)
{
    freed *d = calloc(1, sizeof *d);
    CHECK(d != NULL);
    lms_plan plan;
    double last = run(d, &plan);
    CHECK(plan.trial_decided);
    CHECK_EQ_U(plan.mode, LMS_PLAN_DEEP);
    CHECK(plan.deep_all);
    CHECK(last <= STEP / 2 * (200 + FETCH / 3) * 1.05);
    lms_plan_destroy(&plan);
    free(d);
}

static const test_case cases[] = {
    {"deep_free_retried", deep_free_retried},
};

TEST_MAIN(cases)
