/*
 * trials_late_test.c — the timed steps (src/common/plan.c, "Timed
 * steps") when points complete late, as on a device the host runs ahead
 * of: a dear mode still stops early, on the latest of its points that
 * completed. The harness of tests/unit/timed_steps: a repeating step of STEP launches, each on
 * its own chunk, over a room of ROOM chunks (so a fetched chunk is evicted
 * long before the step comes back to it): the trials run from the second
 * step, two steps per mode (acting, on demand, in place). A fake clock charges each
 * launch `fetch` per chunk fetched for it and `inplace` per chunk it
 * reads where it is; points are readings of that clock, complete at once
 * or `delay` launches later. One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "plan.h"
#include "policy.h"

#define STEP 40   /* launches per step (over TRIAL_MIN) */
#define ROOM 4
#define STEPS 20
#define MARKS 256

typedef struct clocked {
    fake_room f;             /* first: the fake_room ops get this pointer */
    double now;              /* the fake device clock, ns */
    double fetch, inplace;   /* ns per chunk fetched / read in place */
    int delay;               /* launches before a point completes */
    uint64_t seq;            /* the launch being planned */
    double at[MARKS];        /* clock of each point */
    uint64_t done_at[MARKS]; /* launch from which it reads complete */
    int nmarks;
} clocked;

/* ops.mark: the clock now, complete `delay` launches later. */
static int mark(void *ctx, int like)
{
    (void)like;   /* one stream */
    clocked *c = ctx;
    if (c->nmarks == MARKS)
        return 0;
    c->at[c->nmarks] = c->now;
    c->done_at[c->nmarks] = c->seq + (uint64_t)c->delay;
    return ++c->nmarks;
}

/* ops.between: the clock's difference once the later point completed. */
static double between(void *ctx, int from, int to)
{
    clocked *c = ctx;
    if (from <= 0 || to <= from || to > c->nmarks || c->seq < c->done_at[to - 1])
        return -1;
    return c->at[to - 1] - c->at[from - 1];
}

/* Runs STEPS steps; counts the fetches made in the last `tail` steps and
 * the launches planned in place from step `from` on. */
static void run(clocked *c, bool timed, int tail, uint64_t *fetches_tail, int *inplace_launches, int from)
{
    fake_room_init(&c->f, ROOM, STEP);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    if (timed) {
        ops.mark = mark;
        ops.between = between;
    }
    uint64_t before = 0;
    *inplace_launches = 0;
    for (int s = 0; s < STEPS; s++) {
        if (s == STEPS - tail)
            before = c->f.fetches;
        for (uint32_t k = 0; k < STEP; k++) {
            c->seq = (uint64_t)s * STEP + k + 1;
            lms_plan_chunk *mine[1] = {&c->f.chunks[k]};
            lms_plan_pin(&plan, mine[0]);
            uint64_t f0 = c->f.fetches;
            lms_plan_launch(&plan, &ops, c, c->seq, 7, &k, 1, mine, 1);
            c->now += 100 + c->fetch * (double)(c->f.fetches - f0) + (mine[0]->resident ? 0 : c->inplace);
            *inplace_launches += s >= from && plan.mode == LMS_PLAN_INPLACE;
            lms_plan_used(&plan, mine[0], c->seq);
        }
    }
    *fetches_tail = c->f.fetches - before;
    lms_plan_destroy(&plan);
}

/* Reading in place far dearer (5000), points complete 7 launches late
 * (more than the 5 between two points): the mode in place still stops
 * within a few points of its start, not after its two steps. */
static void dear_trial_stops_late(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 5000, c->delay = 7;
    uint64_t fetches;
    int in;
    run(c, true, 4, &fetches, &in, 0);
    CHECK(in > 0);
    CHECK(in <= 3 * (STEP / 8) + 1);
    free(c);
}

/* Points 30 launches late (six points): the same. */
static void dear_trial_stops_later(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 5000, c->delay = 30;
    uint64_t fetches;
    int in;
    run(c, true, 4, &fetches, &in, 0);
    CHECK(in > 0);
    CHECK(in <= 8 * (STEP / 8) + 1);
    free(c);
}

/* Reading in place cheaper (30 against 50), points late: still chosen. */
static void late_inplace_wins(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 30, c->delay = 30;
    uint64_t fetches;
    int in;
    run(c, true, 4, &fetches, &in, 0);
    CHECK_EQ_U(fetches, 0);
    free(c);
}

static const test_case cases[] = {
    {"dear_trial_stops_late", dear_trial_stops_late},
    {"dear_trial_stops_later", dear_trial_stops_later},
    {"late_inplace_wins", late_inplace_wins},
};

TEST_MAIN(cases)
