/*
 * upset_step_test.c — the planner's timed steps (src/common/trials.c,
 * "trials through an upset") on a step of 40 launches, each on its own
 * chunk, where 10 launches in the middle of some steps run on chunks
 * drawn at random from 24 others (an upset: the data decides them). The
 * policy loses confidence at each upset; the trials must still reach a
 * choice. One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#define STEPS 60
#include "../../common/fake_steps.h"

#define UPSET_AT 10   /* the upset's first position in the step */
#define UPSET 10      /* its launches */
#define OTHERS 24     /* chunks the upset draws from (ids STEP..STEP+OTHERS-1) */

/* Runs STEPS steps with an upset every `every` steps on the fake clock
 * of c; returns the fetches made in the last `tail` steps in the steps
 * that neither hold an upset nor follow one (the policy's doubt, on
 * demand, runs into the step after), and in *mode the planner's mode at
 * the end. */
static uint64_t run_upsets(clocked *c, int every, int tail, int *mode)
{
    fake_room_init(&c->f, ROOM, STEP + OTHERS);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    ops.mark = fake_steps_mark;
    ops.between = fake_steps_between;
    uint64_t own = 0, rng = 12345;
    for (int s = 0; s < STEPS; s++) {
        for (uint32_t k = 0; k < STEP; k++) {
            c->seq = (uint64_t)s * STEP + k + 1;
            bool upset = s % every == every - 1 && k >= UPSET_AT && k < UPSET_AT + UPSET;
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t id = upset ? STEP + (uint32_t)(rng >> 33) % OTHERS : k;
            uintptr_t fn = upset ? 100 + (rng >> 40) % 16 : 7;
            lms_plan_chunk *mine[1] = {&c->f.chunks[id]};
            lms_plan_pin(&plan, mine[0]);
            uint64_t f0 = c->f.fetches;
            lms_plan_launch(&plan, &ops, c, c->seq, fn, &id, 1, mine, 1);
            c->now += 100 + c->fetch * (double)(c->f.fetches - f0) + (mine[0]->resident ? 0 : c->inplace);
            if (s >= STEPS - tail && (every == 1 ? !upset : s % every < every - 1 && s % every > 0))
                own += c->f.fetches - f0;
            lms_plan_used(&plan, mine[0], c->seq);
        }
    }
    *mode = plan.mode;
    lms_plan_destroy(&plan);
    return own;
}

/* Reading in place cheaper (30 against a fetch's 50), an upset every
 * fourth step: the trials are held through each upset and choose reading
 * in place; the steps clear of the upsets fetch nothing at the end (the
 * trials cut at every upset never chose, and acting fetched a chunk for
 * nearly every launch). */
static void upset_every_fourth(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 30;
    int mode;
    uint64_t own = run_upsets(c, 4, 9, &mode);
    CHECK_EQ_U(own, 0);
    CHECK_EQ_U((uint64_t)mode, LMS_PLAN_INPLACE);
    free(c);
}

/* The same with an upset in every step: the disturbance comes a step
 * after the one before, and the trials run through it. */
static void upset_every_step(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 30;
    int mode;
    uint64_t own = run_upsets(c, 1, 9, &mode);
    CHECK_EQ_U(own, 0);
    free(c);
}

/* Fetching cheaper (50 against 80 in place): acting still wins through
 * the upsets. */
static void upset_act_wins(void)
{
    clocked *c = calloc(1, sizeof *c);
    c->fetch = 50, c->inplace = 80;
    int mode;
    uint64_t own = run_upsets(c, 3, 9, &mode);
    CHECK(own >= 9 * (STEP - UPSET - ROOM) / 2);
    free(c);
}

static const test_case cases[] = {
    {"upset_every_fourth", upset_every_fourth},
    {"upset_every_step", upset_every_step},
    {"upset_act_wins", upset_act_wins},
};

TEST_MAIN(cases)
