/*
 * lookahead_step_test.c — the lookahead policy's step confirmed by
 * repetition (step()) and its fetch-ahead over several launches (ahead()
 * with launches > 1), without CUDA.
 *
 * The step of train_eval_step: two training iterations of 24 launches
 * (the same signatures twice) and an evaluation of 12: 60 launches (on
 * bench/shapes `train-eval` the policy's period was 24, then 36). And the
 * planner's trials time the confirmed step, not the period.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/fake_steps.h"
#include "plan.h"
#include "policy.h"

#define IT 24               /* launches of a training iteration */
#define EV 12               /* ... of the evaluation */
#define TE_STEP (2 * IT + EV)  /* 60 */
#define NCH 40              /* chunk ids */

/* Launch k (0-based) of the step: its function and its two chunk ids. A
 * training launch i uses chunks i and i+1 with function 1 (both
 * iterations alike), an evaluation launch j chunks 30+j%2 and 32+j/2
 * with function 2. */
static uintptr_t step_launch(uint64_t k, uint32_t ids[2])
{
    if (k < 2 * IT) {
        uint32_t i = (uint32_t)(k % IT);
        ids[0] = i;
        ids[1] = i + 1;
        return 1;
    }
    uint32_t j = (uint32_t)(k - 2 * IT);
    ids[0] = 30 + j % 2;
    ids[1] = 32 + j / 2;
    return 2;
}

/* Feeds launch k of the step as launch `seq` (1-based) of the run. */
static void feed_k(const lms_policy *p, void *st, lms_policy_memo *memo, uint64_t seq, uint64_t k)
{
    uint32_t ids[2];
    uintptr_t fn = step_launch(k, ids);
    lms_policy_memo *m[2] = {&memo[ids[0]], &memo[ids[1]]};
    p->observe(st, seq, fn, ids, m, 2);
}

/* Feeds launch `seq` of a run of whole steps. */
static void feed(const lms_policy *p, void *st, lms_policy_memo *memo, uint64_t seq)
{
    feed_k(p, st, memo, seq, (seq - 1) % TE_STEP);
}

/* By the third step the step is confirmed at 60 and stays so (the
 * policy's own period is the distance to the matched launch, which a
 * repeated iteration can make shorter than the step). */
static void train_eval_step(void)
{
    const lms_policy *p = lms_policy_find("lookahead");
    CHECK(p && p->step);
    void *st = p->create();
    CHECK(st != NULL);
    lms_policy_memo memo[NCH];
    memset(memo, 0, sizeof memo);
    for (uint64_t seq = 1; seq <= 6 * TE_STEP; seq++) {
        feed(p, st, memo, seq);
        if (seq > 3 * TE_STEP)
            CHECK_EQ_U(p->step(st), TE_STEP);
    }
    p->destroy(st);
}

#define RUN (40 * TE_STEP)

static uint64_t run_key[RUN + 1];   /* the launches fed: function and ids, as one number */

/* Steps with an extra launch after some of them (chosen by a fixed
 * pseudo-random sequence): whenever step() names a length s, the last s
 * launches repeated the s before them, launch by launch. */
static void varying_step(void)
{
    const lms_policy *p = lms_policy_find("lookahead");
    void *st = p->create();
    CHECK(st != NULL);
    lms_policy_memo memo[NCH + 1];
    memset(memo, 0, sizeof memo);
    uint64_t seq = 0, rng = 12345;
    int named = 0;
    while (seq + TE_STEP + 1 <= RUN) {
        for (uint64_t k = 0; k < TE_STEP; k++) {
            feed_k(p, st, memo, ++seq, k);
            run_key[seq] = k + 1;
        }
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        if (rng >> 62 == 0) {   /* a quarter of the steps: the extra launch, its own function and chunk */
            uint32_t id = NCH;
            lms_policy_memo *m = &memo[NCH];
            p->observe(st, ++seq, 3, &id, &m, 1);
            run_key[seq] = 1000;
        }
        uint64_t s = p->step(st);
        if (s == 0)
            continue;
        named++;
        CHECK(s <= seq / 2);
        for (uint64_t i = seq - s + 1; i <= seq; i++)
            CHECK_EQ_U(run_key[i], run_key[i - s]);
    }
    CHECK(named > 0);
    p->destroy(st);
}

/* ahead() over 8 launches names each chunk once, at its first need, in
 * the order of need; over 1 launch, the next launch's chunks. */
static void ahead_deep(void)
{
    const lms_policy *p = lms_policy_find("lookahead");
    void *st = p->create();
    CHECK(st != NULL);
    lms_policy_memo memo[NCH];
    memset(memo, 0, sizeof memo);
    for (uint64_t seq = 1; seq <= 3 * TE_STEP + 5; seq++)
        feed(p, st, memo, seq);
    /* Launch 3*TE_STEP+5 is launch 4 of a training iteration: the next eight
     * use chunks 5..13, each of 6..12 twice (launches k and k+1). */
    uint32_t ids[64], dist[64];
    int n = p->ahead(st, ids, dist, 64, 8);
    CHECK_EQ_U(n, 9);
    for (int i = 0; i < n; i++) {
        CHECK_EQ_U(ids[i], 5 + (uint32_t)i);
        CHECK_EQ_U(dist[i], i == 0 ? 1 : (uint32_t)i);   /* 5 and 6: the next launch; 5+i: i launches on */
    }
    CHECK_EQ_U(p->ahead(st, ids, dist, 64, 1), 2);
    CHECK_EQ_U(ids[0], 5);
    CHECK_EQ_U(ids[1], 6);
    CHECK_EQ_U(p->ahead(st, ids, dist, 4, 8), 4);   /* at most max */
    p->destroy(st);
}

/* A policy whose period is 20 launches and whose confirmed step is 60:
 * the planner's trials time the step (windows of 60 launches), not the
 * period. */
static uint64_t period_20(void *st) { (void)st; return 20; }
static uint64_t step_60(void *st) { (void)st; return 60; }

static void trials_time_the_step(void)
{
    lms_policy pol = *lms_policy_find("lookahead");
    pol.period = period_20;
    pol.step = step_60;
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    fake_room_init(&c->f, ROOM, STEP);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, &pol));
    lms_plan_ops ops = fake_room_ops();
    ops.mark = fake_steps_mark;
    ops.between = fake_steps_between;
    for (uint32_t k = 0; k < 3 * STEP; k++) {
        c->seq = k + 1;
        uint32_t id = k % STEP;
        lms_plan_chunk *mine[1] = {&c->f.chunks[id]};
        lms_plan_pin(&plan, mine[0]);
        lms_plan_launch(&plan, &ops, c, c->seq, 7, &id, 1, mine, 1);
        c->now += 100;
        lms_plan_used(&plan, mine[0], c->seq);
        CHECK_EQ_U(plan.trial_period, 60);
    }
    /* Points every eighth of the step: 8 intervals of 60 / 8 = 7 launches
     * in the first mode's first 60 launches (9 points at most). */
    CHECK(c->nmarks >= 9);
    lms_plan_destroy(&plan);
    free(c);
}

static const test_case cases[] = {
    {"train_eval_step", train_eval_step},
    {"varying_step", varying_step},
    {"ahead_deep", ahead_deep},
    {"trials_time_the_step", trials_time_the_step},
};

TEST_MAIN(cases)
