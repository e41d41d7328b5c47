/*
 * known_dear_test.c — a trial of reading in place, or of acting deep
 * reading its chunks used once a step in place, is stopped before a launch
 * that would read in place a chunk whose price learned on grids of the
 * launch's class is over FAR_OVER fetches (src/common/trials.c, "Dear
 * reads known"), though its points complete too late to stop it there.
 * The step of tests/common/fake_steps.h (STEP launches, each on its own
 * chunk, a room of ROOM), reading in place 100x a fetch on the clock,
 * points complete 7 launches late; STEPS reaches the retry after
 * TRIAL_RETRY steps, whose round tries every mode until its points say it
 * is behind. One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#define STEPS 300   /* past the retry (256 steps after the first choice) */
#include "../../common/fake_steps.h"

#define FETCH_PER_BYTE 0.01   /* ops.fetch_cost */
#define EARLY 200             /* steps before the retry's round */

static double class_price_now;   /* what ops.class_price answers for every chunk */

/* ops.class_price: class_price_now. */
static double fixed_class_price(void *ctx, lms_plan_chunk *c)
{
    (void)ctx, (void)c;
    return class_price_now;
}

/* ops.fetch_cost: FETCH_PER_BYTE. */
static double fixed_fetch_cost(void *ctx)
{
    (void)ctx;
    return FETCH_PER_BYTE;
}

/* Runs STEPS steps with ops.class_price answering `price`; counts the
 * chunks read in place in the steps before EARLY (*early) and from it on
 * (*late). */
static void run(double price, int *early, int *late)
{
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    c->fetch = 50, c->inplace = 5000, c->delay = 7;
    class_price_now = price;
    fake_room_init(&c->f, ROOM, STEP);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_steps_ops(true);
    ops.class_price = fixed_class_price;
    ops.fetch_cost = fixed_fetch_cost;
    *early = *late = 0;
    for (int s = 0; s < STEPS; s++) {
        for (uint32_t k = 0; k < STEP; k++) {
            bool in_place = fake_steps_launch(c, &plan, &ops, (uint64_t)s * STEP + k + 1, k);
            *(s < EARLY ? early : late) += in_place;
        }
    }
    printf("class price %.2f ns/B (a fetch %.2f): %d chunks read in place before step %d, %d from it\n", price,
           FETCH_PER_BYTE, *early, EARLY, *late);
    lms_plan_destroy(&plan);
    free(c);
}

/* Each chunk's price on its grid's class is 100 fetches: no trial reads a
 * chunk in place before the retry; the retry's round does, until its
 * points stop it. */
static void known_dear_not_read(void)
{
    int early, late;
    run(1.0, &early, &late);
    CHECK_EQ_U((uint64_t)early, 0);
    CHECK(late > 0);
}

/* No price on the launch's grid class (one learned on other grids says
 * little): the trials read chunks in place until their late points stop
 * them, as before. */
static void other_class_read(void)
{
    int early, late;
    run(-1, &early, &late);
    CHECK(early > 0);
}

/* A price under FAR_OVER fetches (5): not known dear; read in place. */
static void cheap_class_read(void)
{
    int early, late;
    run(5 * FETCH_PER_BYTE, &early, &late);
    CHECK(early > 0);
}

static const test_case cases[] = {
    {"known_dear_not_read", known_dear_not_read},
    {"other_class_read", other_class_read},
    {"cheap_class_read", cheap_class_read},
};

TEST_MAIN(cases)
