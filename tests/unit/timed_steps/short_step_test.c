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

static const test_case cases[] = {
    {"short_inplace_wins", short_inplace_wins},
    {"short_act_wins", short_act_wins},
};

TEST_MAIN(cases)
