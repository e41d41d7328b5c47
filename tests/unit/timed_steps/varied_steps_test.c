/*
 * varied_steps_test.c — the planner's timed steps (src/common/trials.c,
 * "Steps whose work varies") on the repeating step of
 * tests/common/fake_steps.h whose launches run a number of blocks the
 * test sets: a launch takes 100 ns plus 10 ns per block on the fake
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

/* Runs STEPS steps with the blocks of v (ops.blocks unset when `known`
 * is false); returns the mode the trials chose, or -1 when they did not
 * decide. *ratio gets the shortest timed step of the other modes over
 * acting's (-1: acting's or all theirs not timed). */
static int run(varied *v, bool known, double *ratio)
{
    clocked *c = &v->c;
    fake_room_init(&c->f, ROOM, STEP);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    v->plan = &plan;
    lms_plan_ops ops = fake_room_ops();
    ops.mark = fake_steps_mark;
    ops.between = fake_steps_between;
    if (known)
        ops.blocks = op_blocks;
    for (int s = 0; s < STEPS; s++) {
        for (uint32_t k = 0; k < STEP; k++) {
            c->seq = (uint64_t)s * STEP + k + 1;
            lms_plan_chunk *mine[1] = {&c->f.chunks[k]};
            lms_plan_pin(&plan, mine[0]);
            uint64_t f0 = c->f.fetches;
            lms_plan_launch(&plan, &ops, c, c->seq, 7, &k, 1, mine, 1);
            c->now += 100 + 10 * (double)launch_blocks(v) + c->fetch * (double)(c->f.fetches - f0) +
                      (mine[0]->resident ? 0 : c->inplace);
            lms_plan_used(&plan, mine[0], c->seq);
        }
    }
    double w[LMS_PLAN_MODES];
    for (int m = 0; m < LMS_PLAN_MODES; m++) {
        const int *k = plan.trial_marks[m];
        w[m] = plan.trial_done[m] && k[0] > 0 && k[LMS_TRIAL_POINTS - 1] > 0
                   ? c->at[k[LMS_TRIAL_POINTS - 1] - 1] - c->at[k[0] - 1]
                   : -1;
    }
    double other = -1;
    for (int m = LMS_PLAN_ACT + 1; m < LMS_PLAN_MODES; m++)
        if (w[m] > 0 && (other < 0 || w[m] < other))
            other = w[m];
    *ratio = w[LMS_PLAN_ACT] > 0 && other > 0 ? other / w[LMS_PLAN_ACT] : -1;
    int chose = plan.trial_decided ? plan.trial_best : -1;
    lms_plan_destroy(&plan);
    return chose;
}

/* Reading in place dearer than fetching (60 against 50 per chunk), the
 * other modes timed on steps of half the blocks: on demand's step (every
 * chunk fetched) is shorter than acting's (14,000 ns against 22,000) but
 * longer per block (17.5 against 13.75): acting stays. */
static void light_draw_acts(void)
{
    varied *v = calloc(1, sizeof *v);
    v->c.fetch = 50, v->c.inplace = 60, v->blocks = 40, v->drawn = 20;
    double ratio;
    int chose = run(v, true, &ratio);
    CHECK(ratio > 0 && ratio < 0.7);   /* the draw made another mode's step the shorter */
    CHECK_EQ_U((uint64_t)chose, (uint64_t)LMS_PLAN_ACT);
    free(v);
}

/* The same without the launches' blocks (ops.blocks unset): the steps'
 * times alone decide, and a mode timed on a light step is chosen. */
static void blocks_unknown_by_time(void)
{
    varied *v = calloc(1, sizeof *v);
    v->c.fetch = 50, v->c.inplace = 60, v->blocks = 40, v->drawn = 20;
    double ratio;
    int chose = run(v, false, &ratio);
    CHECK(ratio > 0 && ratio < 0.7);
    CHECK(chose > LMS_PLAN_ACT);
    free(v);
}

/* The other modes timed on steps of a quarter the blocks, over
 * BLOCKS_APART (3) times fewer than acting's: blocks so far apart are
 * not taken for the work, and time alone chooses another mode. */
static void far_apart_by_time(void)
{
    varied *v = calloc(1, sizeof *v);
    v->c.fetch = 50, v->c.inplace = 60, v->blocks = 40, v->drawn = 10;
    double ratio;
    int chose = run(v, true, &ratio);
    CHECK(ratio > 0 && ratio < 0.6);
    CHECK(chose > LMS_PLAN_ACT);
    free(v);
}

/* Reading in place free (0 against a fetch's 50), the other modes timed
 * on steps of 36 blocks a launch against 40: acting deep (reading the
 * chunks used once a step in place) and reading in place are shorter
 * (18,400 ns against 22,000) and shorter per block (12.8 against 13.75):
 * one of them is chosen. */
static void cheaper_both_ways_reads(void)
{
    varied *v = calloc(1, sizeof *v);
    v->c.fetch = 50, v->c.inplace = 0, v->blocks = 40, v->drawn = 36;
    double ratio;
    int chose = run(v, true, &ratio);
    CHECK(ratio > 0 && ratio < 1);
    CHECK(chose == LMS_PLAN_DEEP || chose == LMS_PLAN_INPLACE);
    free(v);
}

/* Reading in place free, the other modes timed on steps of 60 blocks a
 * launch against 40: longer (28,000 ns against 22,000) though shorter per
 * block (11.7 against 13.75): acting stays, as by the time alone. */
static void heavy_draw_acts(void)
{
    varied *v = calloc(1, sizeof *v);
    v->c.fetch = 50, v->c.inplace = 0, v->blocks = 40, v->drawn = 60;
    double ratio;
    int chose = run(v, true, &ratio);
    CHECK(ratio > 1);
    CHECK_EQ_U((uint64_t)chose, (uint64_t)LMS_PLAN_ACT);
    free(v);
}

static const test_case cases[] = {
    {"light_draw_acts", light_draw_acts},
    {"blocks_unknown_by_time", blocks_unknown_by_time},
    {"far_apart_by_time", far_apart_by_time},
    {"cheaper_both_ways_reads", cheaper_both_ways_reads},
    {"heavy_draw_acts", heavy_draw_acts},
};

TEST_MAIN(cases)
