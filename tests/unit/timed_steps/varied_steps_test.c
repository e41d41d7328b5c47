/*
 * varied_steps_test.c — the planner's timed steps (src/common/trials.c,
 * "Steps whose work varies") on the repeating step of
 * tests/common/fake_steps.h whose launches run a number of blocks the
 * test sets: a launch computes 100 ns plus 10 ns per block on the fake
 * clock, with the fetches and reads in place of fake_steps.h. The steps
 * the modes other than acting are timed on can be given other blocks
 * than the rest (the draw of a step whose work varies: a sequence length
 * per step).
 * One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/fake_steps.h"

typedef struct varied {
    clocked c;          /* first: the fake ops get this pointer */
    const lms_plan *plan;
    uint64_t blocks;    /* a launch's blocks ... */
    uint64_t drawn;     /* ... and those of the timed steps of the modes other than acting */
} varied;

/* The blocks of the launch being planned (the plan's state after its
 * trials saw the launch: the same when ops.blocks asks and when the
 * clock is charged). */
static uint64_t launch_blocks(const varied *v)
{
    const lms_plan *p = v->plan;
    bool drawn = p->trial == LMS_TRIAL_RUNNING && p->mode != LMS_PLAN_ACT && !p->trial_settling;
    return drawn ? v->drawn : v->blocks;
}

/* ops.blocks. */
static uint64_t op_blocks(void *ctx)
{
    return launch_blocks(ctx);
}

/* clocked.compute: 100 ns and 10 a block. */
static double launch_compute(const void *ctx)
{
    return 100 + 10 * (double)launch_blocks(ctx);
}

/* Runs STEPS steps, fetching costing 50 a chunk and reading in place
 * `inplace`, the launches of `blocks` blocks and those of the other modes'
 * timed steps `drawn` (ops.blocks unset when `known` is false); returns
 * the mode the trials chose, or -1 when they did not decide. *ratio gets
 * the shortest timed step of the other modes over acting's (-1: acting's
 * or all theirs not timed). */
static int chosen(double inplace, uint64_t blocks, uint64_t drawn, bool known, double *ratio)
{
    varied *v = calloc(1, sizeof *v);
    CHECK(v != NULL);
    clocked *c = &v->c;
    c->fetch = 50, c->inplace = inplace, c->compute = launch_compute;
    v->blocks = blocks, v->drawn = drawn;
    fake_room_init(&c->f, ROOM, STEP);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    v->plan = &plan;
    lms_plan_ops ops = fake_steps_ops(true);
    if (known)
        ops.blocks = op_blocks;
    for (uint64_t seq = 1; seq <= (uint64_t)STEPS * STEP; seq++)
        fake_steps_launch(c, &plan, &ops, seq, (uint32_t)((seq - 1) % STEP));
    fake_steps_windows(c, &plan);
    double other = -1;
    for (int m = LMS_PLAN_ACT + 1; m < LMS_PLAN_MODES; m++)
        if (c->window[m] > 0 && (other < 0 || c->window[m] < other))
            other = c->window[m];
    *ratio = c->window[LMS_PLAN_ACT] > 0 && other > 0 ? other / c->window[LMS_PLAN_ACT] : -1;
    int chose = plan.trial_decided ? plan.trial_best : -1;
    lms_plan_destroy(&plan);
    free(v);
    return chose;
}

/* Reading in place dearer than fetching (60 against 50 per chunk), the
 * other modes timed on steps of half the blocks: on demand's step (every
 * chunk fetched) is shorter than acting's (14,000 ns against 22,000) but
 * longer per block (17.5 against 13.75): acting stays. */
static void light_draw_acts(void)
{
    double ratio;
    int chose = chosen(60, 40, 20, true, &ratio);
    CHECK(ratio > 0 && ratio < 0.7);   /* the draw made another mode's step the shorter */
    CHECK_EQ_U((uint64_t)chose, (uint64_t)LMS_PLAN_ACT);
}

/* The same without the launches' blocks (ops.blocks unset): the steps'
 * times alone decide, and a mode timed on a light step is chosen. */
static void blocks_unknown_by_time(void)
{
    double ratio;
    int chose = chosen(60, 40, 20, false, &ratio);
    CHECK(ratio > 0 && ratio < 0.7);
    CHECK(chose > LMS_PLAN_ACT);
}

/* The other modes timed on steps of a quarter the blocks, over
 * BLOCKS_APART (3) times fewer than acting's: blocks so far apart are
 * not taken for the work, and time alone chooses another mode. */
static void far_apart_by_time(void)
{
    double ratio;
    int chose = chosen(60, 40, 10, true, &ratio);
    CHECK(ratio > 0 && ratio < 0.6);
    CHECK(chose > LMS_PLAN_ACT);
}

/* Reading in place free (0 against a fetch's 50), the other modes timed
 * on steps of 36 blocks a launch against 40: acting deep (reading the
 * chunks used once a step in place) and reading in place are shorter
 * (18,400 ns against 22,000) and shorter per block (12.8 against 13.75):
 * one of them is chosen. */
static void cheaper_both_ways_reads(void)
{
    double ratio;
    int chose = chosen(0, 40, 36, true, &ratio);
    CHECK(ratio > 0 && ratio < 1);
    CHECK(chose == LMS_PLAN_DEEP || chose == LMS_PLAN_INPLACE);
}

/* Reading in place free, the other modes timed on steps of 60 blocks a
 * launch against 40: longer (28,000 ns against 22,000) though shorter per
 * block (11.7 against 13.75): acting stays, as by the time alone. */
static void heavy_draw_acts(void)
{
    double ratio;
    int chose = chosen(0, 40, 60, true, &ratio);
    CHECK(ratio > 1);
    CHECK_EQ_U((uint64_t)chose, (uint64_t)LMS_PLAN_ACT);
}

static const test_case cases[] = {
    {"light_draw_acts", light_draw_acts},
    {"blocks_unknown_by_time", blocks_unknown_by_time},
    {"far_apart_by_time", far_apart_by_time},
    {"cheaper_both_ways_reads", cheaper_both_ways_reads},
    {"heavy_draw_acts", heavy_draw_acts},
};

TEST_MAIN(cases)
