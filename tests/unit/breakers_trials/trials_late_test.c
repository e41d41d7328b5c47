/*
 * trials_late_test.c — the timed steps (src/common/plan.c, "Timed
 * steps") when points complete late, as on a device the host runs ahead
 * of: a dear mode still stops early, on the latest of its points that
 * completed. On the repeating step of tests/common/fake_steps.h. One
 * case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/fake_steps.h"

/* Reading in place far dearer (5000), points complete 7 launches late
 * (more than the 5 between two points): the mode in place still stops
 * within a few points of its start, not after its two steps. */
static void dear_trial_stops_late(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 5000, c->delay = 7;
    uint64_t fetches;
    int in;
    fake_steps_run(c, true, 4, &fetches, &in, 0);
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
    fake_steps_run(c, true, 4, &fetches, &in, 0);
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
    fake_steps_run(c, true, 4, &fetches, &in, 0);
    CHECK_EQ_U(fetches, 0);
    free(c);
}

static const test_case cases[] = {
    {"dear_trial_stops_late", dear_trial_stops_late},
    {"dear_trial_stops_later", dear_trial_stops_later},
    {"late_inplace_wins", late_inplace_wins},
};

TEST_MAIN(cases)
