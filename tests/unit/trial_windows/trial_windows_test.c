/*
 * trial_windows_test.c — the planner's timed steps time each mode over
 * exactly one step (src/common/plan.c, point_offset), whatever the step's
 * length, without CUDA, on the repeating step of tests/common/fake_steps.h
 * with 38 launches (not a multiple of a window's 8 intervals). One case
 * per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#define STEP 38
#include "../../common/fake_steps.h"

/* Every launch takes 100 whatever the mode (fetching and reading in place
 * free): each mode that ran its timed window measured 38 launches, 3800.
 * With a point every 38/8 = 4 launches the windows were 32 launches long,
 * and each mode's covered another part of the step. */
static void window_is_one_step(void)
{
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    uint64_t fetches;
    int in;
    fake_steps_run(c, true, 4, &fetches, &in, 0);
    int timed = 0;
    for (int m = 0; m < LMS_PLAN_MODES; m++) {
        if (c->window[m] < 0)
            continue;
        timed++;
        CHECK(c->window[m] == 100.0 * STEP);
    }
    CHECK_EQ_U(timed, LMS_PLAN_MODES);   /* all tied: none stopped early */
    free(c);
}

/* Reading in place cheaper (30 against a fetch's 50): still kept with
 * windows of a whole step. */
static void inplace_wins_38(void)
{
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    c->fetch = 50, c->inplace = 30;
    uint64_t fetches;
    int in;
    fake_steps_run(c, true, 4, &fetches, &in, 0);
    CHECK_EQ_U(fetches, 0);
    free(c);
}

static const test_case cases[] = {
    {"window_is_one_step", window_is_one_step},
    {"inplace_wins_38", inplace_wins_38},
};

TEST_MAIN(cases)
