/*
 * once_dear_test.c — acting deep and the chunks used once a step
 * (src/common/plan.c, once_a_step) where reading such a chunk in place is
 * far dearer than fetching it: an inference step whose every weight is
 * used by one kernel that re-reads it (a GEMM's weight operand, once per
 * tile row of its output). Without CUDA: STEP launches, each on its own
 * chunk, over a room of ROOM chunks; a fake clock charges each launch 100
 * ns, plus FETCH for a chunk fetched on demand, 2/3 of it for one fetched
 * one launch ahead, a third for two, nothing from three on (the compute
 * of the launches between hides it), and `inplace` for a chunk read in
 * place. Acting deep fetching every chunk is the fastest schedule here;
 * reading the chunks in place costs the trial of acting deep its step.
 * One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_steps.h"

#define FETCH 100.0

/* The fake device with the clock and the launch each chunk was fetched for. */
typedef struct dear {
    clocked c;                        /* first: the fake ops get this pointer */
    uint64_t fetched_at[FAKE_ROOM_MAX];   /* seq of the launch planned when it was fetched (0: not since its use) */
    double inplace;                   /* ns per chunk read in place */
} dear;

/* ops.fetch: notes when, then as fake_room. */
static bool dear_fetch(void *ctx, lms_plan_chunk *c, bool ahead)
{
    dear *d = ctx;
    d->fetched_at[c->id] = d->c.seq;
    return fake_room_fetch(ctx, c, ahead);
}

/* What launch `seq` waits for its chunk c, ns. */
static double wait_of(dear *d, const lms_plan_chunk *c, uint64_t seq)
{
    if (!c->resident)
        return d->inplace;
    if (!d->fetched_at[c->id])
        return 0;   /* resident since an earlier use */
    uint64_t lead = seq - d->fetched_at[c->id];
    return lead >= 3 ? 0 : FETCH * (double)(3 - lead) / 3;
}

/* Runs `steps` steps under lookahead with timed steps; returns the device
 * time of the last step (ns) and, in *remote, the launches of the last
 * step whose chunk was read in place. */
static double run(dear *d, int steps, lms_plan *plan, int *remote)
{
    fake_room_init(&d->c.f, ROOM, STEP);
    CHECK(lms_plan_init(plan, lms_policy_find("lookahead")));
    lms_plan_ops ops = fake_room_ops();
    ops.fetch = dear_fetch;
    ops.mark = fake_steps_mark;
    ops.between = fake_steps_between;
    double start = 0;
    *remote = 0;
    for (int s = 0; s < steps; s++) {
        start = d->c.now;
        *remote = 0;
        for (uint32_t k = 0; k < STEP; k++) {
            d->c.seq = (uint64_t)s * STEP + k + 1;
            lms_plan_chunk *mine[1] = {&d->c.f.chunks[k]};
            lms_plan_pin(plan, mine[0]);
            lms_plan_launch(plan, &ops, d, d->c.seq, 7, &k, 1, mine, 1);
            d->c.now += 100 + wait_of(d, mine[0], d->c.seq);
            *remote += !mine[0]->resident;
            d->fetched_at[k] = 0;
            lms_plan_used(plan, mine[0], d->c.seq);
        }
    }
    return d->c.now - start;
}

/* Runs the trials with reading in place at `inplace` ns a chunk and
 * points that complete `delay` launches late: the trials must have
 * decided, and chosen acting deep; returns the last step's device time
 * and, in *remote, its launches read in place. */
static double deep_kept(double inplace, int delay, int *remote)
{
    dear *d = calloc(1, sizeof *d);
    CHECK(d != NULL);
    d->inplace = inplace;
    d->c.delay = delay;
    lms_plan plan;
    double last = run(d, STEPS, &plan, remote);
    CHECK(plan.trial_decided);
    CHECK_EQ_U(plan.mode, LMS_PLAN_DEEP);
    lms_plan_destroy(&plan);
    free(d);
    return last;
}

/* deep_kept(inplace, delay) ends fetching every chunk: no launch of the
 * last step reads in place, and that step takes within 10% of 100 ns a
 * launch. */
static void deep_fetches_every_chunk(double inplace, int delay)
{
    int remote;
    double last = deep_kept(inplace, delay, &remote);
    CHECK_EQ_U(remote, 0);
    CHECK(last <= STEP * 100 * 1.1);
}

/* Reading a chunk in place costs 10 fetches: the trials end in a schedule
 * as fast as acting deep fetching every chunk (a step of 100 ns a launch),
 * not in acting, whose fetches one launch ahead wait 2/3 of a fetch each
 * (the schedule that was kept when acting deep read them in place). */
static void deep_fetches_dear_once(void)
{
    deep_fetches_every_chunk(10 * FETCH, 0);
}

/* Reading a chunk in place costs 1.5 fetches: acting deep reading them
 * in place is 1.5x acting, its trial runs to the end, and acting deep
 * fetching every chunk is tried too and kept. */
static void deep_fetches_dearish_once(void)
{
    deep_fetches_every_chunk(1.5 * FETCH, 0);
}

/* The same as deep_fetches_dearish_once with the device a step and more
 * behind the host (points complete 45 launches late): acting deep's step
 * against acting's is not complete when its window ends, and is judged
 * with the choice, which asks for the retry then (judged on the last
 * point that had completed, acting deep's first points looked no slower:
 * acting was kept). */
static void deep_fetches_dearish_once_late(void)
{
    deep_fetches_every_chunk(1.5 * FETCH, 45);
}

/* Reading a chunk in place costs 10 fetches, points 45 launches late. */
static void deep_fetches_dear_once_late(void)
{
    deep_fetches_every_chunk(10 * FETCH, 45);
}

/* Reading a chunk in place costs a tenth of a fetch: acting deep reads
 * the chunks used once a step in place and is kept so. */
static void deep_reads_cheap_once(void)
{
    int remote;
    double last = deep_kept(FETCH / 10, 0, &remote);
    CHECK(remote >= STEP - ROOM);   /* but what stayed resident from the modes before */
    CHECK(last <= STEP * (100 + FETCH / 10) * 1.01);
}

static const test_case cases[] = {
    {"deep_fetches_dear_once", deep_fetches_dear_once},
    {"deep_fetches_dearish_once", deep_fetches_dearish_once},
    {"deep_reads_cheap_once", deep_reads_cheap_once},
    {"deep_fetches_dearish_once_late", deep_fetches_dearish_once_late},
    {"deep_fetches_dear_once_late", deep_fetches_dear_once_late},
};

TEST_MAIN(cases)
