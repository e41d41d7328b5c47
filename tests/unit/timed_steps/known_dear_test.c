/*
 * known_dear_test.c — a trial of reading in place, or of acting deep
 * reading its chunks used once a step in place, is stopped before a launch
 * that would read in place a chunk whose price learned on grids of the
 * launch's class is over FAR_OVER fetches (src/common/trials.c, "Dear
 * reads known"), though its points complete too late to stop it there.
 * The step of tests/common/fake_steps.h (STEP launches, each on its own
 * chunk, a room of ROOM), reading in place 100x a fetch on the clock,
 * points complete DELAY (7) launches late; STEPS reaches the retry after
 * TRIAL_RETRY steps, whose round tries every mode until its points say it
 * is behind. One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#define STEPS 300   /* past the retry (256 steps after the first choice) */
#include "../../common/fake_steps.h"

#define FETCH_COST 50.0       /* ops.fetch_cost: ns per unit of charge, as the clock's fetch */
#define EARLY 200             /* steps before the retry's round */
#define DELAY 7               /* launches before a point completes */

static double class_price_now;   /* what ops.class_price answers for every chunk */

/* ops.class_price: class_price_now. */
static double fixed_class_price(void *ctx, lms_plan_chunk *c)
{
    (void)ctx, (void)c;
    return class_price_now;
}

/* ops.fetch_cost: FETCH_COST. */
static double fixed_fetch_cost(void *ctx)
{
    (void)ctx;
    return FETCH_COST;
}

/* The timed fake's ops with prices (class_price_now, on the launch's
 * grid class and, as the engine's own price prefers the class's, over
 * all) and a fetch's cost (FETCH_COST). */
static lms_plan_ops priced_ops(void)
{
    lms_plan_ops ops = fake_steps_ops(true);
    ops.class_price = fixed_class_price;
    ops.price = fixed_class_price;
    ops.fetch_cost = fixed_fetch_cost;
    return ops;
}

/* Runs STEPS steps with ops.class_price answering `price` (ns per unit
 * of charge; -1: none); counts the chunks read in place in the steps
 * before EARLY (*early) and from it on (*late). */
static void run(double price, int *early, int *late)
{
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    c->fetch = FETCH_COST, c->inplace = 5000, c->delay = DELAY;
    class_price_now = price;
    fake_room_init(&c->f, ROOM, STEP);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = priced_ops();
    *early = *late = 0;
    for (int s = 0; s < STEPS; s++) {
        for (uint32_t k = 0; k < STEP; k++) {
            bool in_place = fake_steps_launch(c, &plan, &ops, (uint64_t)s * STEP + k + 1, k);
            *(s < EARLY ? early : late) += in_place;
        }
    }
    printf("class price %.0f ns (a fetch %.0f): %d chunks read in place before step %d, %d from it\n", price,
           FETCH_COST, *early, EARLY, *late);
    lms_plan_destroy(&plan);
    free(c);
}

/* Each chunk's price on its grid's class is what the clock charges, 100
 * fetches, the 4,950 ns beyond a fetch over an eighth of acting's step
 * (40 launches of 150 ns): before the retry no chunk is read in place
 * (acting deep's trial fetches them, as acting deep chosen does;
 * reading in place's stops before its first), 29 without the prices; the
 * retry's round reads them until its points stop it. */
static void known_dear_not_read(void)
{
    int early, late;
    run(5000, &early, &late);
    CHECK_EQ_U((uint64_t)early, 0);
    CHECK(late > DELAY);
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
    run(5 * FETCH_COST, &early, &late);
    CHECK(early > 0);
}

/* A price of 9 fetches (an outside helper's): over FAR_OVER, but the
 * 400 ns beyond a fetch under an eighth of acting's step: a mode that
 * reads such a chunk in place may still win the step, so the trial
 * goes on. */
static void small_dear_read(void)
{
    int early, late;
    run(9 * FETCH_COST, &early, &late);
    CHECK(early > 0);
}

/* ns a launch computes in changed_costs_read (clocked.compute). */
static double compute_now;
static double fixed_compute(const void *ctx)
{
    (void)ctx;
    return compute_now;
}

/* An outside helper's fake clock: steps of 20 launches, reading in place
 * 5,000 ns (each chunk priced so on its class), for 30 steps; then steps
 * of 56 launches computing 400 ns each, reading in place 10 ns, the
 * prices left as they were (a price is relearned only where its chunk is
 * read in place). Acting's step per launch is 3x what it was when the
 * prices stopped a trial: they may be stale, and the trials of the new
 * step go on (p->dear_held). Over the last 10 steps, over half the
 * launches read their chunk in place; stopped on the old prices, that
 * took until the retry, 268 steps after the change. */
static void changed_costs_read(void)
{
    enum { SHORT = 20, LONG = 56 };
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    c->fetch = FETCH_COST, c->delay = DELAY, c->compute = fixed_compute;
    class_price_now = 5000;
    fake_room_init(&c->f, ROOM, LONG);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = priced_ops();
    uint64_t seq = 0;
    int read = 0;
    for (int s = 0; s < 60; s++) {
        bool later = s >= 30;
        c->inplace = later ? 10 : 5000;
        compute_now = later ? 400 : 100;
        for (uint32_t k = 0; k < (later ? LONG : SHORT); k++) {
            bool in_place = fake_steps_launch(c, &plan, &ops, ++seq, k);
            read += s >= 50 && in_place;
        }
    }
    printf("the last 10 steps: %d of %d launches read their chunk in place\n", read, 10 * LONG);
    CHECK(read > 5 * LONG);
    lms_plan_destroy(&plan);
    free(c);
}

/* costs[k]: ns chunk k costs read in place in one_dear_chunk (its price
 * too, when `priced`). */
static double costs[STEP];
static bool priced;
static double chunk_cost(void *ctx, lms_plan_chunk *c)
{
    (void)ctx;
    return priced && c->id < STEP ? costs[c->id] : -1;
}

/* An outside helper's fake clock: steps of STEP launches, each on its own
 * chunk, chunk 1 costing 900 ns read in place (18 fetches), the others
 * 5 (a tenth of a fetch), every price known (ops.price) and, when
 * `classed`, known on the grid class too. Returns the clock over 300
 * steps. */
static double one_dear_run(bool classed)
{
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    c->fetch = FETCH_COST, c->delay = DELAY;
    for (int k = 0; k < STEP; k++)
        costs[k] = k == 1 ? 900 : 5;
    priced = true;
    fake_room_init(&c->f, ROOM, STEP);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_steps_ops(true);
    ops.price = chunk_cost;
    ops.fetch_cost = fixed_fetch_cost;
    if (classed)
        ops.class_price = chunk_cost;
    uint64_t seq = 0;
    for (int s = 0; s < 300; s++) {
        for (uint32_t k = 0; k < STEP; k++) {
            c->inplace = costs[k];
            fake_steps_launch(c, &plan, &ops, ++seq, k);
        }
    }
    double clock = c->now;
    lms_plan_destroy(&plan);
    free(c);
    return clock;
}

/* One chunk of 40 dear in place, the rest cheap: acting deep (fetching
 * the dear one, reading the others in place) wins the step. With the
 * prices on the grid class, the trials find it as without them (within
 * 2%); stopping acting deep's trial at the dear chunk (a form tried) cost
 * 1.36x. */
static void one_dear_chunk(void)
{
    double without = one_dear_run(false), with = one_dear_run(true);
    printf("clock over 300 steps: %.0f ns with class prices, %.0f without\n", with, without);
    CHECK(with <= 1.02 * without);
}

static const test_case cases[] = {
    {"known_dear_not_read", known_dear_not_read},
    {"other_class_read", other_class_read},
    {"cheap_class_read", cheap_class_read},
    {"small_dear_read", small_dear_read},
    {"changed_costs_read", changed_costs_read},
    {"one_dear_chunk", one_dear_chunk},
};

TEST_MAIN(cases)
