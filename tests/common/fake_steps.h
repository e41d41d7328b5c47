/*
 * fake_steps.h — a repeating step for the planner's timed steps
 * (src/common/plan.c, "Timed steps") without CUDA: STEP launches, each on
 * its own chunk, over a room of ROOM chunks (so a fetched chunk is evicted
 * long before the step comes back to it: each chunk is used once a step,
 * so acting deep reads them in place, src/common/plan.c once_a_step); the
 * trials run from the second step, two steps per mode (acting, acting
 * deep, on demand, in place; acting deep may be tried twice). A fake
 * clock charges each launch `fetch` per chunk fetched for it and
 * `inplace` per chunk it reads where it is; points are readings of that
 * clock, complete at once or `delay` launches later; a launch computes
 * 100 ns, or what `compute` says. A test may define STEP and STEPS before
 * including it. Used by tests/unit/timed_steps, breakers_trials,
 * trial_windows, breakers_windows and breakers_once.
 */
#ifndef FAKE_STEPS_H
#define FAKE_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "fake_room.h"
#include "plan.h"
#include "policy.h"

#ifndef STEP
#define STEP 40   /* launches per step (over TRIAL_MIN; a test may define another) */
#endif
#define ROOM 4
#ifndef STEPS
#define STEPS 20   /* steps run (a test may define another) */
#endif
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
    int read_in_place;       /* launches from step `from` whose chunk was read where it is (any mode) */
    double window[LMS_PLAN_MODES]; /* the clock over each mode's timed window of the last trials (-1: none) */
    double (*compute)(const void *ctx); /* ns a launch computes, given this struct (NULL: 100) */
} clocked;

/* ops.mark: the clock now, complete `delay` launches later. */
static inline int fake_steps_mark(void *ctx, int like)
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
static inline double fake_steps_between(void *ctx, int from, int to)
{
    clocked *c = ctx;
    if (from <= 0 || to <= from || to > c->nmarks || c->seq < c->done_at[to - 1])
        return -1;
    return c->at[to - 1] - c->at[from - 1];
}

/* The ops of a fake room, with points on the fake clock when `timed`. */
static inline lms_plan_ops fake_steps_ops(bool timed)
{
    lms_plan_ops ops = fake_room_ops();
    if (timed) {
        ops.mark = fake_steps_mark;
        ops.between = fake_steps_between;
    }
    return ops;
}

/* Launch number seq, of fn 7 on chunk k: planned, charged on the clock
 * (its compute, its fetches, its chunk read in place) and recorded.
 * Whether its chunk was read where it is. */
static inline bool fake_steps_launch(clocked *c, lms_plan *plan, const lms_plan_ops *ops, uint64_t seq, uint32_t k)
{
    c->seq = seq;
    lms_plan_chunk *mine[1] = {&c->f.chunks[k]};
    lms_plan_pin(plan, mine[0]);
    uint64_t f0 = c->f.fetches;
    lms_plan_launch(plan, ops, c, c->seq, 7, &k, 1, mine, 1);
    bool in_place = !mine[0]->resident;
    c->now += (c->compute ? c->compute(c) : 100) + c->fetch * (double)(c->f.fetches - f0) + (in_place ? c->inplace : 0);
    lms_plan_used(plan, mine[0], c->seq);
    return in_place;
}

/* c->window from the points of each mode's timed window in plan. */
static inline void fake_steps_windows(clocked *c, const lms_plan *plan)
{
    for (int m = 0; m < LMS_PLAN_MODES; m++) {
        const int *k = plan->trial_marks[m];
        c->window[m] = plan->trial_done[m] && k[0] > 0 && k[LMS_TRIAL_POINTS - 1] > 0
                           ? c->at[k[LMS_TRIAL_POINTS - 1] - 1] - c->at[k[0] - 1]
                           : -1;
    }
}

/* Runs STEPS steps; counts the fetches made in the last `tail` steps, the
 * launches planned in the mode in place from step `from` on, and (in
 * c->read_in_place) those whose chunk was read where it is, whatever the
 * mode (acting deep reads a chunk used once a step in place too). */
static inline void fake_steps_run(clocked *c, bool timed, int tail, uint64_t *fetches_tail, int *inplace_launches,
                                  int from)
{
    fake_room_init(&c->f, ROOM, STEP);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_steps_ops(timed);
    uint64_t before = 0;
    *inplace_launches = 0;
    c->read_in_place = 0;
    for (int s = 0; s < STEPS; s++) {
        if (s == STEPS - tail)
            before = c->f.fetches;
        for (uint32_t k = 0; k < STEP; k++) {
            bool in_place = fake_steps_launch(c, &plan, &ops, (uint64_t)s * STEP + k + 1, k);
            *inplace_launches += s >= from && plan.mode == LMS_PLAN_INPLACE;
            c->read_in_place += s >= from && in_place;
        }
    }
    *fetches_tail = c->f.fetches - before;
    fake_steps_windows(c, &plan);
    lms_plan_destroy(&plan);
}

#endif
