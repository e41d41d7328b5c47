/*
 * short_step_test.c — the planner's timed steps (src/common/trials.c) on
 * a step of 6 launches, under TRIAL_MIN: once it held for SHORT_HOLD
 * launches, the trials time windows of whole steps (three of them, 18
 * launches). One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#define STEP 6
#define STEPS 80
#include "../../common/fake_steps.h"

/* Reading in place is cheaper (30 against a fetch's 50 per chunk): once
 * the trials have run the planner stops fetching (a step this short was
 * never timed, and acting fetched every chunk the room lacked). */
static void short_inplace_wins(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 30;
    uint64_t fetches;
    int in;
    fake_steps_run(c, true, 10, &fetches, &in, STEPS - 10);
    CHECK_EQ_U(fetches, 0);
    CHECK(c->read_in_place >= 10 * (STEP - ROOM));
    free(c);
}

/* Fetching is cheaper (50 against 200 in place; acting fetches 4 chunks
 * a step, reading in place reads the 2 the room lacks): it goes on. */
static void short_act_wins(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 200;
    uint64_t fetches;
    int in;
    fake_steps_run(c, true, 10, &fetches, &in, STEPS - 10);
    CHECK(fetches >= 10 * (STEP - ROOM));
    CHECK_EQ_U(in, 0);
    CHECK(c->window[LMS_PLAN_ACT] > 0);   /* the trials ran: acting was timed, */
    CHECK(c->window[LMS_PLAN_INPLACE] < 0 || c->window[LMS_PLAN_INPLACE] > c->window[LMS_PLAN_ACT]);   /* in place stopped or slower */
    free(c);
}

/* A step of 18 launches over 18 chunks, whose trials chose (marked as
 * timing a step confirmed by repetition: a shorter confirmed step never
 * restarts those), then a loop of 4 launches over 4 other chunks that
 * the room holds: once the loop held, the trials start again on it,
 * windows of 16 launches (the choice made over the 18 was resumed for the
 * loop until the retry: reading in place there read the loop's chunks
 * over the link at every launch, 7.4x acting in an outside tester's
 * program), and the loop ends up finding its chunks. */
static void short_after_long(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 30;
    fake_room_init(&c->f, ROOM, 22);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    ops.mark = fake_steps_mark;
    ops.between = fake_steps_between;
    int late_in_place = 0;
    for (uint64_t s = 0; s < 1200; s++) {
        bool loop = s >= 30 * 18;
        if (s == 30 * 18) {
            CHECK(plan.trial == LMS_TRIAL_CHOSEN && plan.trial_period == 18);
            plan.trial_confirmed = true;   /* as when the trials timed a step confirmed by repetition */
        }
        uint32_t k = loop ? 18 + (uint32_t)(s % 4) : (uint32_t)(s % 18);
        c->seq = s + 1;
        lms_plan_chunk *mine[1] = {&c->f.chunks[k]};
        lms_plan_pin(&plan, mine[0]);
        uint64_t f0 = c->f.fetches;
        lms_plan_launch(&plan, &ops, c, c->seq, loop ? 9 : 7, &k, 1, mine, 1);
        c->now += 100 + c->fetch * (double)(c->f.fetches - f0) + (mine[0]->resident ? 0 : c->inplace);
        late_in_place += s >= 1100 && !mine[0]->resident;
        lms_plan_used(&plan, mine[0], c->seq);
    }
    CHECK_EQ_U(plan.trial_period, 16);   /* the trials timed the loop */
    CHECK_EQ_U(plan.trial_short, 4);
    CHECK_EQ_U(late_in_place, 0);
    lms_plan_destroy(&plan);
    free(c);
}

static const test_case cases[] = {
    {"short_inplace_wins", short_inplace_wins},
    {"short_act_wins", short_act_wins},
    {"short_after_long", short_after_long},
};

TEST_MAIN(cases)
