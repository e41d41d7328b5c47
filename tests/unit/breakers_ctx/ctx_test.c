/*
 * ctx_test.c — the planner's timed steps (src/common/plan.c, "Timed
 * steps": a drifting period is not timed; a confirmed step more than 2x
 * longer retimes the trials) with the real lookahead policy on launch
 * sequences whose step varies, without CUDA: a fake clock charges each
 * launch by the planner's mode, reading in place 3x cheaper than the
 * rest, so the trials, when they complete, choose it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "plan.h"
#include "policy.h"

#define BASE 40          /* launches of the step before what varies */
#define MARKS_MAX 4096   /* points the fake clock holds */
#define ROOM 4

/* The fake device: a room of ROOM chunks, a clock and its points. */
typedef struct clock_room {
    fake_room f;   /* first: the fake_room ops get this pointer */
    double now;    /* ns */
    int nmarks;
    double at[MARKS_MAX];
} clock_room;

/* ops.mark: the clock now, complete at once. */
static int mark(void *ctx, int like)
{
    (void)like;
    clock_room *c = ctx;
    if (c->nmarks == MARKS_MAX)
        return 0;
    c->at[c->nmarks] = c->now;
    return ++c->nmarks;
}

/* ops.between: the clock's difference between two points. */
static double between(void *ctx, int from, int to)
{
    clock_room *c = ctx;
    if (from <= 0 || to <= from || to > c->nmarks)
        return -1;
    return c->at[to - 1] - c->at[from - 1];
}

/* One launch: its function and its one chunk. */
typedef struct one {
    uintptr_t fn;
    uint32_t id;
} one;

/* Writes step s of a sequence into out (at least 2 x BASE long); returns
 * its launches. */
typedef int (*script_fn)(int s, uint64_t *rng, one *out);

/* BASE launches, each on its own chunk, then one more on a chunk
 * allocated this step every second step (a cache that gains a block every
 * other step): the step is confirmed by repetition between two growths. */
static int grow_every_other(int s, uint64_t *rng, one *out)
{
    (void)rng;
    int n = 0;
    for (int k = 0; k < BASE; k++) {
        out[n++] = (one){100 + (uintptr_t)k, (uint32_t)k};
        if (k == BASE / 2)
            for (int j = 0; j < s / 2; j++)
                out[n++] = (one){500 + (uintptr_t)j, (uint32_t)(BASE + j % 20)};
    }
    return n;
}

/* BASE launches, plus one three quarters in, one step in three at random
 * (an overflow check that asks for an extra kernel: mixed precision). */
static int extra_one_in_three(int s, uint64_t *rng, one *out)
{
    (void)s;
    int n = 0;
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    bool extra = (*rng >> 33) % 3 == 0;
    for (int k = 0; k < BASE; k++) {
        out[n++] = (one){100 + (uintptr_t)k, (uint32_t)k};
        if (k == 3 * BASE / 4 && extra)
            out[n++] = (one){99, BASE + 10};
    }
    return n;
}

/* What a run ended with. */
typedef struct outcome {
    bool decided;
    int best;
    double inplace;   /* the share of the second half's launches planned in place */
} outcome;

/* Runs `steps` steps of script under the lookahead policy, each launch
 * charged 300 ns but 100 ns in place. */
static outcome run(script_fn script, int steps)
{
    clock_room *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    fake_room_init(&c->f, ROOM, FAKE_ROOM_MAX);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    ops.mark = mark;
    ops.between = between;
    static one l[4 * BASE];
    uint64_t seq = 0, rng = 7, half = 0, inplace = 0;
    for (int s = 0; s < steps; s++) {
        int n = script(s, &rng, l);
        for (int i = 0; i < n; i++) {
            uint32_t id = l[i].id % FAKE_ROOM_MAX;
            lms_plan_chunk *mine[1] = {&c->f.chunks[id]};
            lms_plan_pin(&plan, mine[0]);
            lms_plan_launch(&plan, &ops, c, ++seq, l[i].fn, &id, 1, mine, 1);
            c->now += plan.mode == LMS_PLAN_INPLACE ? 100 : 300;
            if (s >= steps / 2) {
                half++;
                inplace += plan.mode == LMS_PLAN_INPLACE;
            }
            lms_plan_used(&plan, mine[0], seq);
        }
    }
    outcome o = {plan.trial_decided, plan.trial_best, half ? (double)inplace / (double)half : 0};
    printf("decided %d, best %d, %.2f of the second half in place\n", o.decided, o.best, o.inplace);
    lms_plan_destroy(&plan);
    free(c);
    return o;
}

/* A step confirmed between growths every other step: the trials timed
 * the confirmed step and hold (the unconfirmed period after each growth
 * does not cut them), so they choose reading in place. (Cut at each
 * growth, they never completed: acting throughout, 3x dearer.) */
static void grow_every_other_step(void)
{
    outcome o = run(grow_every_other, 200);
    CHECK(o.decided);
    CHECK_EQ_U(o.best, LMS_PLAN_INPLACE);
    CHECK(o.inplace >= 0.9);
}

/* A step of 40 or 41 launches at random: the trials time it and hold;
 * two steps (81), then four (163), repeated by chance, do not start them
 * over and over (each round spends ~8 steps in the dearer modes). */
static void varying_step_holds(void)
{
    outcome o = run(extra_one_in_three, 200);
    CHECK(o.decided);
    CHECK_EQ_U(o.best, LMS_PLAN_INPLACE);
    CHECK(o.inplace >= 0.95);
}

/* ---- the confirmed step named by the test ------------------------------- */

static uint64_t named_step;
static uint64_t period_named(void *st) { (void)st; return named_step ? named_step : 40; }
static uint64_t step_named(void *st) { (void)st; return named_step; }

/* Runs launches 1..n with step() naming what `at` says for each, each
 * launch charged 100 ns; returns how many times the trials started on
 * another length, and in *final_period and *decided what they timed last
 * and whether they chose. */
static int starts_of(uint64_t (*at)(uint64_t seq), uint64_t n, uint64_t *final_period, bool *decided)
{
    lms_policy pol = *lms_policy_find("lookahead");
    pol.period = period_named;
    pol.step = step_named;
    clock_room *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    fake_room_init(&c->f, ROOM, 40);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, &pol));
    lms_plan_ops ops = fake_room_ops();
    ops.mark = mark;
    ops.between = between;
    int starts = 0;
    uint64_t timed = 0;
    for (uint64_t seq = 1; seq <= n; seq++) {
        named_step = at(seq);
        uint32_t k = (uint32_t)(seq % 40);
        lms_plan_chunk *mine[1] = {&c->f.chunks[k]};
        lms_plan_pin(&plan, mine[0]);
        lms_plan_launch(&plan, &ops, c, seq, 7, &k, 1, mine, 1);
        c->now += 100;
        lms_plan_used(&plan, mine[0], seq);
        starts += plan.trial_period != timed;
        timed = plan.trial_period;
    }
    *final_period = plan.trial_period;
    *decided = plan.trial_decided;
    lms_plan_destroy(&plan);
    free(c);
    return starts;
}

/* 20 confirmed, then 60 from launch 1000 on; from 4000 on, 60 but for a
 * flash of a longer one every 1000 launches (130, 270, 550, 1110, ...),
 * each confirmed for fewer launches than its length (a step of varying
 * length that repeated by chance over a few steps). */
static uint64_t flashes(uint64_t seq)
{
    if (seq < 1000)
        return 20;
    if (seq < 4000 || seq % 1000 >= 100)
        return 60;
    uint64_t len = 60;
    for (uint64_t k = 4; k <= seq / 1000; k++)
        len = 2 * len + 10;
    return len;
}

/* The same, but each longer one holds from its start on. */
static uint64_t holds(uint64_t seq)
{
    if (seq < 1000)
        return 20;
    if (seq < 4000)
        return 60;
    return 130;
}

/* Trials moved to a confirmed step 2x longer (20, then 60) move to a
 * still longer one only once it held a whole step: flashes do not start
 * them over (the trials on 60 hold and choose); a longer step that holds
 * does (the control). */
static void longer_flashes_hold(void)
{
    uint64_t period;
    bool decided;
    int starts = starts_of(flashes, 12000, &period, &decided);
    printf("flashes: %d starts, timing %llu\n", starts, (unsigned long long)period);
    CHECK_EQ_U(starts, 2);   /* 20, then 60 */
    CHECK_EQ_U(period, 60);
    CHECK(decided);
    starts = starts_of(holds, 12000, &period, &decided);
    printf("holds: %d starts, timing %llu\n", starts, (unsigned long long)period);
    CHECK_EQ_U(starts, 3);
    CHECK_EQ_U(period, 130);
    CHECK(decided);
}

/* Nested steps confirmed in turn, each held: 20, 60, 180, 540. */
static uint64_t chain(uint64_t seq)
{
    return seq < 1000 ? 20 : seq < 3000 ? 60 : seq < 8000 ? 180 : 540;
}

/* A confirmed step that alternates between 20 and 60 every 500 launches. */
static uint64_t alternate(uint64_t seq)
{
    return seq / 500 % 2 ? 60 : 20;
}

/* A chain of longer steps, each held, moves the trials to each in turn
 * and they choose on the last; one that alternates between L and 3L
 * moves them once, to 3L, and they hold there (both held before the
 * rule of longer_flashes_hold too: it must not cost them). */
static void chain_and_alternation_settle(void)
{
    uint64_t period;
    bool decided;
    int starts = starts_of(chain, 20000, &period, &decided);
    printf("chain: %d starts, timing %llu, decided %d\n", starts, (unsigned long long)period, decided);
    CHECK_EQ_U(starts, 4);
    CHECK_EQ_U(period, 540);
    CHECK(decided);
    starts = starts_of(alternate, 12000, &period, &decided);   /* before the retry, 256 steps of 60 after the choice */
    printf("alternation: %d starts, timing %llu, decided %d\n", starts, (unsigned long long)period, decided);
    CHECK_EQ_U(starts, 2);
    CHECK_EQ_U(period, 60);
    CHECK(decided);
}

static const test_case cases[] = {
    {"grow_every_other_step", grow_every_other_step},
    {"varying_step_holds", varying_step_holds},
    {"longer_flashes_hold", longer_flashes_hold},
    {"chain_and_alternation_settle", chain_and_alternation_settle},
};

TEST_MAIN(cases)
