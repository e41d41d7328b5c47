/*
 * timed_steps_test.c — the planner's timed steps (src/common/plan.c,
 * "Timed steps") without CUDA, on the repeating step of
 * tests/common/fake_steps.h. One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/fake_steps.h"

/* Reading in place is cheaper (30 against a fetch's 50 per chunk): after
 * the trials the planner stops fetching. */
static void inplace_wins(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 30;
    uint64_t fetches;
    int in;
    fake_steps_run(c, true, 4, &fetches, &in, STEPS - 4);
    CHECK_EQ_U(fetches, 0);
    CHECK(c->read_in_place >= 4 * (STEP - ROOM));   /* in place, or acting deep (each chunk is used once a step) */
    free(c);
}

/* Fetching is cheaper (50 against 80 in place): after the trials (two
 * steps per mode from the second step) the planner keeps fetching. */
static void act_wins(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 80;
    uint64_t fetches;
    int in;
    fake_steps_run(c, true, 4, &fetches, &in, 10);
    CHECK(fetches >= 4 * STEP - 2 * ROOM);   /* a fetch for nearly every launch */
    CHECK_EQ_U(in, 0);
    free(c);
}

/* Reading in place far dearer (5000): the mode in place stops at its
 * first point (an eighth of a step), not after its two steps. */
static void dear_trial_stops(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 5000;
    uint64_t fetches;
    int in;
    fake_steps_run(c, true, 4, &fetches, &in, 0);
    CHECK(in > 0);
    CHECK(in <= STEP / 8 + 1);
    free(c);
}

/* Points that complete only 7 launches later: the choice waits for them
 * and is the same. */
static void late_points(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 30, c->delay = 7;
    uint64_t fetches;
    int in;
    fake_steps_run(c, true, 4, &fetches, &in, 0);
    CHECK_EQ_U(fetches, 0);
    free(c);
}

/* Without the timing ops (as `lmshim replay` plans), nothing is tried. */
static void untimed_acts(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 30;
    uint64_t fetches;
    int in;
    fake_steps_run(c, false, 4, &fetches, &in, 0);
    CHECK_EQ_U(in, 0);
    CHECK(fetches > 0);
    free(c);
}

static const test_case cases[] = {
    {"inplace_wins", inplace_wins},       {"act_wins", act_wins},         {"dear_trial_stops", dear_trial_stops},
    {"late_points", late_points},         {"untimed_acts", untimed_acts},
};

TEST_MAIN(cases)
