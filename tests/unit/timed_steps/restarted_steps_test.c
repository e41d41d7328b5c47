/*
 * restarted_steps_test.c — the planner's timed steps (src/common/trials.c)
 * over steps whose length changes, each change starting the trials over:
 * a step of 24 launches (each on its own chunk, tests/common/fake_steps.h)
 * for PHASE steps, then one of 60 for PHASE steps, then the 24 again,
 * then the 60 again. Reading in place costs 20x a fetch, so reading in
 * place and acting deep reading its chunks used once a step in place are
 * far slower than acting, stopped early in the first round of trials. A
 * later round, before TRIAL_RETRY steps pass, does not try them again
 * (remember_slow), unless acting's own step costs otherwise (apply_slow).
 * One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#define STEP 24    /* launches of the shorter step */
#include "../../common/fake_steps.h"

#define PHASE 16   /* steps of one length in a row */
#define LONG 60    /* launches of the longer step */

/* Runs the four phases (STEP, LONG, STEP, LONG launches a step); counts, from
 * the second phase on, the launches planned reading every chunk in place
 * (*inplace_mode) and those whose chunk was read where it is (*read). */
static void run(int *inplace_mode, int *read)
{
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    c->fetch = 50, c->inplace = 1000;
    fake_room_init(&c->f, ROOM, LONG);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_steps_ops(true);
    uint64_t seq = 0;
    *inplace_mode = *read = 0;
    for (int phase = 0; phase < 4; phase++) {
        uint32_t len = phase % 2 ? LONG : STEP;
        for (int s = 0; s < PHASE; s++) {
            for (uint32_t k = 0; k < len; k++) {
                bool in_place = fake_steps_launch(c, &plan, &ops, ++seq, k);
                if (phase > 0) {
                    *inplace_mode += plan.mode == LMS_PLAN_INPLACE;
                    *read += in_place;
                }
            }
        }
    }
    lms_plan_destroy(&plan);
    free(c);
}

/* The rounds after the first try neither reading in place nor acting deep
 * reading in place: no launch reads its chunk where it is. */
static void slow_modes_skipped(void)
{
    int inplace_mode, read;
    run(&inplace_mode, &read);
    printf("from the second phase: %d launches reading in place as a mode, %d chunks read in place\n",
           inplace_mode, read);
    CHECK_EQ_U((uint64_t)inplace_mode, 0);
    CHECK_EQ_U((uint64_t)read, 0);
}

/* Steps of STEP launches for 20 steps with reading in place 20x a fetch,
 * then of LONG launches for 40 steps with a fetch 20x a read in place:
 * the costs changed, so acting's step costs per launch far more than in
 * the round that found reading in place slow, which is forgotten
 * (apply_slow): over the last 10 steps, over half the launches read their
 * chunk in place. Remembered regardless, reading in place was found only
 * after 256 steps (an outside helper's program). */
static void changed_costs_retried(void)
{
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    fake_room_init(&c->f, ROOM, LONG);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_steps_ops(true);
    uint64_t seq = 0;
    int read = 0;
    for (int s = 0; s < 60; s++) {
        bool later_costs = s >= 20;
        uint32_t len = later_costs ? LONG : STEP;
        c->fetch = later_costs ? 1000 : 50, c->inplace = later_costs ? 50 : 1000;
        for (uint32_t k = 0; k < len; k++) {
            bool in_place = fake_steps_launch(c, &plan, &ops, ++seq, k);
            read += s >= 50 && in_place;
        }
    }
    printf("the last 10 steps: %d of %d launches read their chunk in place\n", read, 10 * LONG);
    CHECK(read > 5 * LONG);
    lms_plan_destroy(&plan);
    free(c);
}

static const test_case cases[] = {
    {"slow_modes_skipped", slow_modes_skipped},
    {"changed_costs_retried", changed_costs_retried},
};

TEST_MAIN(cases)
