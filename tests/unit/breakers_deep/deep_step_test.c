/*
 * deep_step_test.c — the lookahead policy's step confirmed by repetition
 * (step()) on hostile launch sequences, and the planner's timed steps
 * with acting deep (src/common/plan.c, "Timed steps") under policies and
 * costs chosen to mislead them, without CUDA.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/fake_steps.h"
#include "plan.h"
#include "policy.h"

#define NSYM 64   /* launch symbols: function s on chunk s % NSYM */

/* A policy state fed launches by symbol, with the keys fed (1-based). */
typedef struct feeder {
    const lms_policy *p;
    void *st;
    lms_policy_memo memo[NSYM];
    uint64_t *key;   /* key[seq]: the symbol of launch seq, owned here */
    uint64_t seq, cap;
    uint64_t named;  /* launches after which step() named a length */
} feeder;

/* A feeder for up to cap launches (the caller frees it with feeder_free). */
static feeder *feeder_new(uint64_t cap)
{
    feeder *f = calloc(1, sizeof *f);
    CHECK(f != NULL);
    f->p = lms_policy_find("lookahead");
    CHECK(f->p && f->p->step);
    f->st = f->p->create();
    CHECK(f->st != NULL);
    f->key = calloc(cap + 1, sizeof *f->key);
    CHECK(f->key != NULL);
    f->cap = cap;
    return f;
}

static void feeder_free(feeder *f)
{
    f->p->destroy(f->st);
    free(f->key);
    free(f);
}

/* Feeds launch of symbol `sym`, then checks that the length step() names
 * (if any) repeated whole: each of the last s launches is the one s
 * earlier. `check_every` > 1 checks only that often (long runs). */
static void feed_sym(feeder *f, uint64_t sym, uint64_t check_every)
{
    uint32_t id = (uint32_t)(sym % NSYM);
    lms_policy_memo *m = &f->memo[id];
    CHECK(f->seq < f->cap);
    f->seq++;
    f->key[f->seq] = sym;
    f->p->observe(f->st, f->seq, (uintptr_t)(sym + 1), &id, &m, 1);
    uint64_t s = f->p->step(f->st);
    if (s == 0)
        return;
    f->named++;
    if (f->seq % check_every != 0)
        return;
    CHECK(s <= f->seq / 2);
    if (s > f->seq / 2)
        return;
    for (uint64_t i = f->seq - s + 1; i <= f->seq; i++)
        if (f->key[i] != f->key[i - s]) {
            fprintf(stderr, "step %llu named at launch %llu: launch %llu differs from %llu\n",
                    (unsigned long long)s, (unsigned long long)f->seq, (unsigned long long)i,
                    (unsigned long long)(i - s));
            CHECK(false);
            return;
        }
}

static uint64_t rng_next(uint64_t *r)
{
    *r = *r * 6364136223846793005ull + 1442695040888963407ull;
    return *r >> 33;
}

/* Random sequences: runs of a random pattern (length 1..300 over 2..40
 * symbols, so signatures repeat inside a step) repeated a random number
 * of times, each launch mutated with a small probability; and alternating
 * two patterns. Whenever step() names a length, it repeated whole. */
static void step_random_property(void)
{
    for (uint64_t trial = 0; trial < 24; trial++) {
        uint64_t rng = 0x9e3779b9u + trial * 7919;
        feeder *f = feeder_new(60000);
        uint64_t pat[2][300];
        while (f->seq + 2000 < f->cap) {
            uint64_t len[2], alpha = 2 + rng_next(&rng) % 39;
            for (int w = 0; w < 2; w++) {
                len[w] = 1 + rng_next(&rng) % (rng_next(&rng) % 4 == 0 ? 300 : 40);
                for (uint64_t i = 0; i < len[w]; i++)
                    pat[w][i] = rng_next(&rng) % alpha;
            }
            bool alternate = rng_next(&rng) % 3 == 0;
            uint64_t reps = 1 + rng_next(&rng) % 8, mutate = rng_next(&rng) % 4;   /* per 1000 launches */
            for (uint64_t r = 0; r < reps; r++)
                for (int w = 0; w <= (int)alternate; w++)
                    for (uint64_t i = 0; i < len[w] && f->seq + 1 < f->cap; i++)
                        feed_sym(f, rng_next(&rng) % 1000 < mutate ? 100 + rng_next(&rng) % 20 : pat[w][i], 1);
        }
        CHECK(f->named > 0);
        feeder_free(f);
    }
}

/* Periodic at 181 but 60-periodic for two thirds of each step (two equal
 * blocks of 60, then 61 others): the policy names 60 only where 60
 * repeated, and 181 from the fourth step on. */
static void step_181_looks_60(void)
{
    feeder *f = feeder_new(181 * 10);
    uint64_t blocka[60], blockb[61], rng = 42;
    for (int i = 0; i < 60; i++)
        blocka[i] = rng_next(&rng) % 30;
    for (int i = 0; i < 61; i++)
        blockb[i] = 30 + rng_next(&rng) % 30;
    for (int s = 0; s < 10; s++) {
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 60; i++)
                feed_sym(f, blocka[i], 1);
        for (int i = 0; i < 61; i++)
            feed_sym(f, blockb[i], 1);
        if (s >= 3)
            CHECK_EQ_U(f->p->step(f->st), 181);
    }
    feeder_free(f);
}

/* One launch repeated: a step of 1. */
static void step_of_one(void)
{
    feeder *f = feeder_new(100);
    for (int i = 0; i < 100; i++)
        feed_sym(f, 5, 1);
    CHECK_EQ_U(f->p->step(f->st), 1);
    feeder_free(f);
}

/* A step of distinct launches longer than the ring's first size (HIST_MIN
 * = 4096 launches): the ring grows, and the step is confirmed within its
 * third run. */
static void step_past_first_ring(void)
{
    feeder *f = feeder_new(3 * 5000 + 10);
    for (int r = 0; r < 3; r++)
        for (uint32_t i = 0; i < 5000; i++)
            feed_sym(f, i, 64);
    CHECK_EQ_U(f->p->step(f->st), 5000);
    feeder_free(f);
}

/* A step of distinct launches longer than the history ring can grow to
 * (HIST_MAX = 2^18 launches), fed three times: it cannot be confirmed, and
 * nothing is named that did not repeat (checked every 4096 launches: the
 * check walks the whole step). */
#define LONG_STEP ((1u << 18) + 1000u)
static void step_longer_than_ring(void)
{
    feeder *f = feeder_new(3u * LONG_STEP + 10);
    for (int r = 0; r < 3; r++)
        for (uint32_t i = 0; i < LONG_STEP; i++)
            feed_sym(f, i, 4096);
    CHECK_EQ_U(f->p->step(f->st), 0);
    feeder_free(f);
}

/* ---- the planner ----------------------------------------------------------- */

/* A launch's device time by mode: base plus `extra[mode]`, ns. */
typedef struct moded {
    clocked c;            /* first: the fake_steps ops get this pointer */
    double extra[LMS_PLAN_MODES];
} moded;

/* Runs `steps` steps of STEP launches (one chunk each) under policy pol,
 * charging each launch by the planner's mode; counts the launches planned
 * in each mode during the first trials (before the choice). */
static void moded_run(moded *m, const lms_policy *pol, int steps, lms_plan *plan, uint64_t tried[LMS_PLAN_MODES])
{
    fake_room_init(&m->c.f, ROOM, STEP);
    CHECK(lms_plan_init(plan, pol));
    lms_plan_ops ops = fake_room_ops();
    ops.mark = fake_steps_mark;
    ops.between = fake_steps_between;
    for (int s = 0; s < steps; s++)
        for (uint32_t k = 0; k < STEP; k++) {
            m->c.seq = (uint64_t)s * STEP + k + 1;
            lms_plan_chunk *mine[1] = {&m->c.f.chunks[k]};
            lms_plan_pin(plan, mine[0]);
            lms_plan_launch(plan, &ops, &m->c, m->c.seq, 7, &k, 1, mine, 1);
            m->c.now += 100 + m->extra[plan->mode];
            if (plan->trial == 1 /* running */)
                tried[plan->mode]++;
            lms_plan_used(plan, mine[0], m->c.seq);
        }
}

/* What one run of the lookahead policy over moded launches ended with. */
typedef struct deep_outcome {
    bool decided;                    /* the trials made their choice */
    int best;                        /* the mode chosen (when decided) */
    int mode;                        /* the mode at the end */
    uint64_t tried[LMS_PLAN_MODES];  /* launches per mode in the first trials */
} deep_outcome;

/* Runs STEPS steps under lookahead with each launch charged 100 ns plus
 * the given extra ns of its mode; returns the outcome (owns nothing: the
 * plan and the launches are freed here). */
static deep_outcome deep_trial(double act, double deep, double demand, double inplace)
{
    moded *m = calloc(1, sizeof *m);
    CHECK(m != NULL);
    m->extra[LMS_PLAN_ACT] = act;
    m->extra[LMS_PLAN_DEEP] = deep;
    m->extra[LMS_PLAN_DEMAND] = demand;
    m->extra[LMS_PLAN_INPLACE] = inplace;
    lms_plan plan;
    deep_outcome o = {0};
    moded_run(m, lms_policy_find("lookahead"), STEPS, &plan, o.tried);
    o.decided = plan.trial_decided;
    o.best = plan.trial_best;
    o.mode = plan.mode;
    lms_plan_destroy(&plan);
    free(m);
    return o;
}

/* Acting deep the cheapest: chosen. */
static void deep_wins(void)
{
    deep_outcome o = deep_trial(100, 20, 150, 150);
    CHECK(o.decided);
    CHECK_EQ_U(o.best, LMS_PLAN_DEEP);
    CHECK_EQ_U(o.mode, LMS_PLAN_DEEP);
}

/* Acting deep dearer, but less than 2x: timed whole, not chosen. */
static void deep_loses(void)
{
    deep_outcome o = deep_trial(50, 100, 80, 80);
    CHECK(o.decided);
    CHECK_EQ_U(o.best, LMS_PLAN_ACT);
    CHECK_EQ_U(o.mode, LMS_PLAN_ACT);
    CHECK(o.tried[LMS_PLAN_DEEP] >= 2 * STEP - 2);
}

/* Acting deep over 2x dearer than acting: stopped before its timed step
 * ends, not chosen. */
static void deep_aborts(void)
{
    deep_outcome o = deep_trial(0, 400, 50, 50);
    CHECK(o.decided);
    CHECK_EQ_U(o.best, LMS_PLAN_ACT);
    CHECK(o.tried[LMS_PLAN_DEEP] > 0);
    CHECK(o.tried[LMS_PLAN_DEEP] < STEP + STEP / 4);   /* stopped at the first point that completed */
    CHECK(o.tried[LMS_PLAN_DEMAND] >= 2 * STEP - 2);
}

/* Policies whose period() is 20 and whose step() misbehaves. */
static uint64_t flips = 0;
static uint64_t period_20(void *st) { (void)st; return 20; }
static uint64_t period_0(void *st) { (void)st; return 0; }
static uint64_t step_flips(void *st) { (void)st; return ++flips % 2 ? 24 : 48; }
static uint64_t step_flips_0(void *st) { (void)st; return ++flips % 2 ? 0 : 40; }
static uint64_t step_huge(void *st) { (void)st; return (1ull << 33) + 3; }
static uint64_t step_max(void *st) { (void)st; return UINT64_MAX; }
static uint64_t step_40(void *st) { (void)st; return 40; }
static uint64_t period_max(void *st) { (void)st; return UINT64_MAX; }

/* A step() that names another length at every launch: the trials still
 * end in a choice (they do not restart at each launch). */
static void step_flips_every_launch(void)
{
    uint64_t (*steps[2])(void *) = {step_flips, step_flips_0};
    for (int v = 0; v < 2; v++) {
        lms_policy pol = *lms_policy_find("lookahead");
        pol.period = period_20;
        pol.step = steps[v];
        moded *m = calloc(1, sizeof *m);
        CHECK(m != NULL);
        m->extra[LMS_PLAN_INPLACE] = -50;   /* cheapest: chosen once timed */
        lms_plan plan;
        uint64_t tried[LMS_PLAN_MODES] = {0};
        moded_run(m, &pol, 3 * STEPS, &plan, tried);
        CHECK(plan.trial_decided);
        CHECK_EQ_U(plan.trial_best, LMS_PLAN_INPLACE);
        lms_plan_destroy(&plan);
        free(m);
    }
}

/* Runs STEPS steps of lookahead with `period` and `step` in place of its
 * own, every mode at the same cost: the planner acts throughout; returns
 * how many points it marked. */
static int acting_marks(uint64_t (*period)(void *), uint64_t (*step)(void *))
{
    lms_policy pol = *lms_policy_find("lookahead");
    pol.period = period;
    pol.step = step;
    moded *m = calloc(1, sizeof *m);
    CHECK(m != NULL);
    lms_plan plan;
    uint64_t tried[LMS_PLAN_MODES] = {0};
    moded_run(m, &pol, STEPS, &plan, tried);
    CHECK_EQ_U(plan.mode, LMS_PLAN_ACT);
    int marks = m->c.nmarks;
    lms_plan_destroy(&plan);
    free(m);
    return marks;
}

/* A step() past 2^32 launches or the largest number, or a period() of the
 * largest number without step() (twice it wrapped: a different step at
 * every launch, the trials restarted at each with a point): one point,
 * acting meanwhile; a period of 0 ignores step(). */
static void step_hostile_lengths(void)
{
    uint64_t (*steps[3])(void *) = {step_huge, step_max, NULL};
    for (int v = 0; v < 3; v++)
        CHECK(acting_marks(steps[v] ? period_20 : period_max, steps[v]) <= 2);   /* the first point, not one per launch */
    CHECK_EQ_U(acting_marks(period_0, step_40), 0);
}


/* The step of two training iterations of 24 launches and an evaluation of
 * 12 (60 launches; chunks as in tests/unit/lookahead_step): the real
 * policy confirms 24 at the end of the second iteration, before the
 * evaluation ever ran, and 60 two steps later. The trials time 60 from the
 * sixth step on (not 24-launch windows that start at different places of
 * the step until their retry, 256 x 24 launches later). */
#define IT 24
#define TE_STEP (2 * IT + 12)

static void trials_move_to_the_step(void)
{
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    fake_room_init(&c->f, 8, 40);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    ops.mark = fake_steps_mark;
    ops.between = fake_steps_between;
    uint64_t timed_24 = 0;
    for (uint64_t seq = 1; seq <= 20 * TE_STEP; seq++) {
        uint64_t k = (seq - 1) % TE_STEP;
        uint32_t ids[2];
        if (k < 2 * IT)
            ids[0] = (uint32_t)(k % IT), ids[1] = ids[0] + 1;
        else
            ids[0] = 30 + (uint32_t)(k - 2 * IT) % 2, ids[1] = 32 + (uint32_t)(k - 2 * IT) / 2;
        lms_plan_chunk *mine[2] = {&c->f.chunks[ids[0]], &c->f.chunks[ids[1]]};
        lms_plan_pin(&plan, mine[0]);
        lms_plan_pin(&plan, mine[1]);
        c->seq = seq;
        lms_plan_launch(&plan, &ops, c, seq, k < 2 * IT ? 1 : 2, ids, 2, mine, 2);
        c->now += 100;
        lms_plan_used(&plan, mine[0], seq);
        lms_plan_used(&plan, mine[1], seq);
        timed_24 += plan.trial_period == IT;
        if (seq > 6 * TE_STEP)
            CHECK_EQ_U(plan.trial_period, TE_STEP);
        if (seq > 6 * TE_STEP && plan.trial_period != TE_STEP)
            break;
    }
    CHECK(timed_24 < 4 * TE_STEP);
    lms_plan_destroy(&plan);
    free(c);
}

/* The period the policy names, set by the test per launch. */
static uint64_t named_period, named_step;
static uint64_t period_named(void *st) { (void)st; return named_period; }
static uint64_t step_named(void *st) { (void)st; return named_step; }

/* Sets up m (a room of ROOM, STEP chunks) and plan under pol, with the
 * fake clock's ops, which it returns. */
static lms_plan_ops moded_setup(moded *m, lms_plan *plan, const lms_policy *pol)
{
    fake_room_init(&m->c.f, ROOM, STEP);
    CHECK(lms_plan_init(plan, pol));
    lms_plan_ops ops = fake_room_ops();
    ops.mark = fake_steps_mark;
    ops.between = fake_steps_between;
    return ops;
}

/* Plans and records launch seq on chunk seq % STEP, charged 100 ns plus
 * its mode's extra. */
static void moded_launch(moded *m, lms_plan *plan, const lms_plan_ops *ops, uint64_t seq)
{
    uint32_t k = (uint32_t)(seq % STEP);
    m->c.seq = seq;
    lms_plan_chunk *mine[1] = {&m->c.f.chunks[k]};
    lms_plan_pin(plan, mine[0]);
    lms_plan_launch(plan, ops, &m->c, seq, 7, &k, 1, mine, 1);
    m->c.now += 100 + m->extra[plan->mode];
    lms_plan_used(plan, mine[0], seq);
}

/* A period not confirmed that grows by one every eighth of itself (a step
 * that grows every step, bench/shapes `growing`), reading in place the
 * cheapest mode: its windows would time different work in each mode, so
 * no trial completes and the planner acts throughout. A period that holds
 * is timed (the control). */
static void period_drifts_acts(void)
{
    for (int drift = 1; drift >= 0; drift--) {
        lms_policy pol = *lms_policy_find("lookahead");
        pol.period = period_named;
        pol.step = NULL;
        moded *m = calloc(1, sizeof *m);
        CHECK(m != NULL);
        m->extra[LMS_PLAN_INPLACE] = -50;
        lms_plan plan;
        lms_plan_ops ops = moded_setup(m, &plan, &pol);
        uint64_t acting = 0, launches = 0;
        named_period = 20;
        for (uint64_t seq = 1; seq <= 3000; seq++) {
            if (drift && seq % (named_period / 8) == 0)
                named_period++;
            moded_launch(m, &plan, &ops, seq);
            launches++;
            acting += plan.mode == LMS_PLAN_ACT;
        }
        if (drift) {
            CHECK(!plan.trial_decided);
            CHECK(acting * 100 >= launches * 99);   /* a trial's first window at most, cut short */
        } else {
            CHECK(plan.trial_decided);
            CHECK_EQ_U(plan.trial_best, LMS_PLAN_INPLACE);
        }
        lms_plan_destroy(&plan);
        free(m);
    }
}

/* A step of 20 launches confirmed and timed, then one of 60 confirmed (the
 * 20 were a repeated part of it): the trials time the 60 (what was
 * fastest over a part need not be over the step). */
static void longer_step_retimed(void)
{
    lms_policy pol = *lms_policy_find("lookahead");
    pol.period = period_named;
    pol.step = step_named;
    moded *m = calloc(1, sizeof *m);
    CHECK(m != NULL);
    lms_plan plan;
    lms_plan_ops ops = moded_setup(m, &plan, &pol);
    named_period = named_step = 20;
    bool timed_20 = false;
    for (uint64_t seq = 1; seq <= 4000; seq++) {
        if (seq == 1000)
            named_step = 60;
        moded_launch(m, &plan, &ops, seq);
        timed_20 |= seq < 1000 && plan.trial_period == 20;
    }
    CHECK(timed_20);
    CHECK_EQ_U(plan.trial_period, 60);
    CHECK(plan.trial_decided);
    lms_plan_destroy(&plan);
    free(m);
}

static const test_case cases[] = {
    {"step_random_property", step_random_property},
    {"step_181_looks_60", step_181_looks_60},
    {"step_of_one", step_of_one},
    {"step_longer_than_ring", step_longer_than_ring},
    {"step_past_first_ring", step_past_first_ring},
    {"deep_wins", deep_wins},
    {"deep_loses", deep_loses},
    {"deep_aborts", deep_aborts},
    {"step_flips_every_launch", step_flips_every_launch},
    {"step_hostile_lengths", step_hostile_lengths},
    {"trials_move_to_the_step", trials_move_to_the_step},
    {"period_drifts_acts", period_drifts_acts},
    {"longer_step_retimed", longer_step_retimed},
};

TEST_MAIN(cases)
