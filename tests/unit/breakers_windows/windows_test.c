/*
 * windows_test.c — the planner's timed windows (src/common/plan.c, "Timed
 * steps") on steps whose launches differ in cost by their place in the
 * step (a light forward half, a heavy backward half), without CUDA: a
 * mode is compared with acting over the same launches of the step, also
 * after a mode before it stopped early. One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "../../common/fake_steps.h"
#include "plan.h"
#include "policy.h"

static uint64_t step_len;   /* what period() and step() answer */
static uint64_t told_step(void *st) { (void)st; return step_len; }

/* Runs `steps` steps of `len` launches (one chunk each, chunk k % (len /
 * 2): each used twice a step, so that acting deep fetches them all and is
 * tried once, src/common/plan.c trial_next)
 * under the lookahead policy told the step's length; a launch at place k
 * of the step costs `light` in the first half, `heavy` in the second,
 * plus extra[mode], and first[mode] more in the step's first eighth
 * (first may be NULL). Counts the launches planned in each mode while the
 * trials run. Returns the planner (the caller destroys it). */
static void phased_run(clocked *c, lms_plan *plan, uint64_t len, int steps, double light, double heavy,
                       const double extra[LMS_PLAN_MODES], const double *first, uint64_t tried[LMS_PLAN_MODES])
{
    static lms_policy pol;
    pol = *lms_policy_find("lookahead");
    step_len = len;
    pol.period = told_step;
    pol.step = told_step;
    fake_room_init(&c->f, ROOM, STEP);
    CHECK(lms_plan_init(plan, &pol));
    lms_plan_ops ops = fake_room_ops();
    ops.mark = fake_steps_mark;
    ops.between = fake_steps_between;
    for (uint64_t seq = 1; seq <= (uint64_t)steps * len; seq++) {
        uint64_t k = (seq - 1) % len;
        uint32_t id = (uint32_t)(k % (len / 2));
        lms_plan_chunk *mine[1] = {&c->f.chunks[id]};
        c->seq = seq;
        lms_plan_pin(plan, mine[0]);
        lms_plan_launch(plan, &ops, c, seq, 7, &id, 1, mine, 1);
        c->now += (2 * k < len ? light : heavy) + extra[plan->mode] + (first && 8 * k < len ? first[plan->mode] : 0);
        if (plan->trial == LMS_TRIAL_RUNNING)
            tried[plan->mode]++;
        lms_plan_used(plan, mine[0], seq);
    }
}

/* Acting deep far dearer (stopped at its first point that completed, an
 * eighth or a quarter into the step); on demand a little cheaper than
 * acting at every launch. On demand must be timed whole and chosen:
 * compared from the place of the step where the mode before stopped, its
 * first points cover heavy launches where acting's cover light ones
 * (2.75x at its fourth point with a step of 40), and it was stopped as
 * far slower. Acting deep still runs no more than until its first point
 * completes. For steps of 40, 38 (uneven points) and 16 (the shortest),
 * points complete at once or 3 launches later. */
static void stopped_keeps_place(void)
{
    const uint64_t lens[] = {40, 38, 16};
    const double extra[LMS_PLAN_MODES] = {[LMS_PLAN_DEEP] = 10000, [LMS_PLAN_DEMAND] = -50};
    for (int v = 0; v < 6; v++) {
        clocked *c = calloc(1, sizeof *c);
        CHECK(c != NULL);
        c->delay = v < 3 ? 0 : 3;
        uint64_t len = lens[v % 3], tried[LMS_PLAN_MODES] = {0};
        lms_plan plan;
        phased_run(c, &plan, len, 12, 100, 1000, extra, NULL, tried);
        CHECK(plan.trial_decided);
        CHECK(!plan.trial_done[LMS_PLAN_DEEP]);
        CHECK(tried[LMS_PLAN_DEEP] <= 2 * (len / 8 + 1) + (uint64_t)c->delay);
        CHECK(plan.trial_done[LMS_PLAN_DEMAND]);
        CHECK_EQ_U(plan.trial_best, LMS_PLAN_DEMAND);
        lms_plan_destroy(&plan);
        free(c);
    }
}

/* Reading in place 2.5x dearer than acting over the step's light first
 * eighth (250 against 100 a launch), then 50 cheaper a launch: over the
 * whole step it is the fastest, and it is not stopped at its first point,
 * where it had lost less than an eighth of acting's step (an outside
 * helper's `skew`: 0.73 against 0.32 ms at the first point, stopped, and
 * 1.86x the step reading in place takes). */
static void light_eighth_not_stopped(void)
{
    const double extra[LMS_PLAN_MODES] = {[LMS_PLAN_INPLACE] = -50};
    const double first[LMS_PLAN_MODES] = {[LMS_PLAN_INPLACE] = 200};
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    uint64_t tried[LMS_PLAN_MODES] = {0};
    lms_plan plan;
    phased_run(c, &plan, 40, 12, 100, 1000, extra, first, tried);
    CHECK(plan.trial_decided);
    CHECK(plan.trial_done[LMS_PLAN_INPLACE]);
    CHECK_EQ_U(plan.trial_best, LMS_PLAN_INPLACE);
    lms_plan_destroy(&plan);
    free(c);
}

static const test_case cases[] = {
    {"stopped_keeps_place", stopped_keeps_place},
    {"light_eighth_not_stopped", light_eighth_not_stopped},
};

TEST_MAIN(cases)
