/*
 * acting_lean_test.c — acting lean (src/common/trials.c, "Acting lean";
 * src/common/plan.c, lms_plan_after) without CUDA: a training step shaped
 * like bench/shapes `train-eval` (two iterations of 6 layers forward and
 * backward, then evaluation; 22 chunks of one size, room for 7), on a fake
 * clock whose link is the bottleneck or not. One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "plan.h"
#include "policy.h"

#define NCHUNK 22
#define ROOM 7
#define UNIT 1000          /* a chunk's charge, bytes */
#define COMPUTE 100.0      /* ns of each kernel */
#define STEPS 24
#define TAIL 4
#define MAXL 64
#define MARKS 512
#define REREAD 4           /* passes of a kernel over a chunk it reads where it is */

/* The step's launches: up to three chunk ids each (A1..A6 = 0..5, the two
 * gradient buffers 6 and 7, layer l's filter gradient 8 + 2l and momentum
 * 9 + 2l, the two evaluation buffers 20 and 21; the first activation and
 * the filters stay on the device and are not listed). */
static uint32_t launch_ids[MAXL][3];
static int launch_n[MAXL], nlaunch;

static void add(int n, uint32_t a, uint32_t b, uint32_t c)
{
    launch_ids[nlaunch][0] = a, launch_ids[nlaunch][1] = b, launch_ids[nlaunch][2] = c;
    launch_n[nlaunch++] = n;
}

/* Builds the step (60 launches) as bench/workloads.c cnn_step orders it. */
static void build_step(void)
{
    nlaunch = 0;
    for (int it = 0; it < 2; it++) {
        add(1, 0, 0, 0);
        for (uint32_t l = 1; l < 6; l++)
            add(2, l - 1, l, 0);
        int cur = 0;
        for (int l = 5; l >= 0; l--) {
            add(2, 6, 7, 0);
            uint32_t g = 6 + (uint32_t)cur, df = 8 + 2 * (uint32_t)l;
            if (l > 0)
                add(3, (uint32_t)l - 1, g, df);
            else
                add(2, g, df, 0);
            add(2, df, df + 1, 0);
            cur = 1 - cur;
        }
    }
    for (int k = 0; k < 12; k++)
        add(2, 20, 21, 0);
}

/* Belady's MIN on demand over the repeating step, room ROOM: the fetches
 * of one step in the steady state (the reference the bar compares to). */
static int min_fetches_per_step(void)
{
    bool in[NCHUNK] = {0};
    int resident = 0, counted = 0;
    for (int s = 0; s < 8; s++)
        for (int t = 0; t < nlaunch; t++)
            for (int k = 0; k < launch_n[t]; k++) {
                uint32_t c = launch_ids[t][k];
                if (in[c])
                    continue;
                if (resident == ROOM) {
                    int victim = -1, far = -1;
                    for (uint32_t v = 0; v < NCHUNK; v++) {
                        bool now = false;
                        for (int j = 0; j < launch_n[t]; j++)
                            now |= launch_ids[t][j] == v;
                        if (!in[v] || now)
                            continue;
                        int d = 1;   /* launches to v's next use */
                        for (; d <= nlaunch; d++) {
                            int u = (t + d) % nlaunch;
                            bool used = false;
                            for (int j = 0; j < launch_n[u]; j++)
                                used |= launch_ids[u][j] == v;
                            if (used)
                                break;
                        }
                        if (d > far)
                            far = d, victim = (int)v;
                    }
                    in[victim] = false;
                    resident--;
                }
                in[c] = true;
                resident++;
                counted += s == 7;
            }
    return counted;
}

typedef struct clocked {
    fake_room f;              /* first: the fake_room ops get this pointer */
    double now, per_fetch;    /* the clock (ns); what one fetch holds the link */
    uint64_t seq;
    double at[MARKS];
    int nmarks;
    bool in_launch;           /* inside lms_plan_launch */
    uint64_t ahead_in_launch; /* fetches ahead made there (acting lean makes them after the launch) */
    int unknown_every;        /* ops.hides does not know one launch in this many (0: knows all) */
    double lean_cost;         /* ns more each launch takes while the planner acts lean */
    const lms_plan *plan;     /* the planner (lean_check's points are watched) */
    bool other_stream_once;   /* the third of acting lean's points is asked on another stream, once */
    int pause_between;        /* launches with nothing to learn made once two of lean's points are taken */
} clocked;

static int clock_mark(void *ctx, int like)
{
    (void)like;
    clocked *c = ctx;
    if (c->other_stream_once && c->plan && c->plan->trial_decided && c->plan->trial_lean && c->plan->lean_n == 2) {
        c->other_stream_once = false;
        return -1;
    }
    if (c->nmarks == MARKS)
        return 0;
    c->at[c->nmarks] = c->now;
    return ++c->nmarks;
}

static double clock_between(void *ctx, int from, int to)
{
    clocked *c = ctx;
    return from > 0 && to > from && to <= c->nmarks ? c->at[to - 1] - c->at[from - 1] : -1;
}

static double clock_fetch_cost(void *ctx)
{
    return ((clocked *)ctx)->per_fetch / UNIT;
}

/* ops.hides: what a kernel hides at the link's cost; 0 (unknown) for one
 * launch in `unknown_every` when that is set. */
static uint64_t clock_hides(void *ctx)
{
    clocked *c = ctx;
    if (c->unknown_every && c->seq % (uint64_t)c->unknown_every == 0)
        return 0;
    return (uint64_t)(COMPUTE / clock_fetch_cost(ctx));
}

/* ops.moved: the bytes fetched so far. */
static uint64_t clock_moved(void *ctx)
{
    return ((clocked *)ctx)->f.fetches * UNIT;
}

static bool clock_fetch(void *ctx, lms_plan_chunk *pc, bool ahead)
{
    clocked *c = ctx;
    c->ahead_in_launch += ahead && c->in_launch;
    return fake_room_fetch(ctx, pc, ahead);
}

/* Runs STEPS steps with a fetch holding the link per_fetch ns (timed:
 * with the timing ops; measured: with the link's cost known); each launch
 * takes the longer of its kernel and its fetches (those made for it and
 * ahead after the launch before, and REREAD passes over each chunk it
 * reads where it is). Returns the fetches of the last TAIL
 * steps; *lean: whether the planner acted lean at the end; *ahead_in: the
 * fetches ahead made inside lms_plan_launch over those steps. */
/* How a run departs from the plain one (run_with). */
typedef struct twists {
    double lean_cost;         /* clocked.lean_cost */
    bool other_stream_once;   /* clocked.other_stream_once */
    int pause_between;        /* clocked.pause_between */
} twists;

static uint64_t run_with(double per_fetch, bool measured, int unknown_every, int noise, bool *lean,
                         uint64_t *ahead_in, bool *lean_before_noise, twists tw, bool *was_lean);

static uint64_t run(double per_fetch, bool measured, bool *lean, uint64_t *ahead_in)
{
    bool before, was;
    return run_with(per_fetch, measured, 0, 0, lean, ahead_in, &before, (twists){0}, &was);
}

/* Launches `n` chunks drawn at random (nothing to learn) on c's clock. */
static void noise_launches(clocked *c, lms_plan *plan, const lms_plan_ops *ops, int n, uint32_t seed)
{
    uint32_t x = seed;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        uint32_t id = (x >> 16) % NCHUNK;
        lms_plan_chunk *mine[1] = {&c->f.chunks[id]};
        lms_plan_pin(plan, mine[0]);
        c->seq++;
        lms_plan_launch(plan, ops, c, c->seq, 99, &id, 1, mine, 1);
        lms_plan_used(plan, mine[0], c->seq);
        lms_plan_after(plan, ops, c);
        c->now += COMPUTE;
    }
}

/* As run(), ops.hides not knowing one launch in `unknown_every` (0: none),
 * then `noise` launches of chunks drawn at random (nothing to learn);
 * *lean_before_noise: whether it acted lean after the steps; with the
 * twists `tw` (each launch made while acting lean tw.lean_cost ns
 * longer, ...); *was_lean: whether it acted lean at any launch. */
static uint64_t run_with(double per_fetch, bool measured, int unknown_every, int noise, bool *lean,
                         uint64_t *ahead_in, bool *lean_before_noise, twists tw, bool *was_lean)
{
    clocked *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    fake_room_init(&c->f, (uint64_t)ROOM * UNIT, NCHUNK);
    for (int i = 0; i < NCHUNK; i++)
        c->f.chunks[i].charge = UNIT;
    c->per_fetch = per_fetch;
    c->unknown_every = unknown_every;
    c->lean_cost = tw.lean_cost;
    c->other_stream_once = tw.other_stream_once;
    c->pause_between = tw.pause_between;
    *was_lean = false;
    lms_plan plan;
    CHECK(lms_plan_init(&plan, lms_policy_find("lookahead")));
    c->plan = &plan;
    lms_plan_ops ops = fake_room_ops();
    ops.fetch = clock_fetch;
    ops.mark = clock_mark;
    ops.between = clock_between;
    if (measured) {
        ops.fetch_cost = clock_fetch_cost;
        ops.hides = clock_hides;
        ops.moved = clock_moved;
    }
    uint64_t tail_from = 0, ahead_from = 0;
    for (int s = 0; s < STEPS; s++) {
        if (s == STEPS - TAIL)
            tail_from = c->f.fetches, ahead_from = c->ahead_in_launch;
        for (int t = 0; t < nlaunch; t++) {
            if (c->pause_between && plan.trial_decided && plan.trial_lean && plan.lean_n == 2) {
                noise_launches(c, &plan, &ops, c->pause_between, 777);
                c->pause_between = 0;
            }
            c->seq++;
            lms_plan_chunk *mine[3];
            for (int k = 0; k < launch_n[t]; k++) {
                mine[k] = &c->f.chunks[launch_ids[t][k]];
                lms_plan_pin(&plan, mine[k]);
            }
            uint64_t f0 = c->f.fetches;
            c->in_launch = true;
            lms_plan_launch(&plan, &ops, c, c->seq, 7 + (uintptr_t)launch_n[t], launch_ids[t], launch_n[t], mine,
                            launch_n[t]);
            c->in_launch = false;
            int remote = 0;
            for (int k = 0; k < launch_n[t]; k++) {
                remote += !mine[k]->resident;
                lms_plan_used(&plan, mine[k], c->seq);
            }
            lms_plan_after(&plan, &ops, c);
            double link = per_fetch * ((double)(c->f.fetches - f0) + REREAD * remote);
            c->now += (link > COMPUTE ? link : COMPUTE) + (plan.lean ? c->lean_cost : 0);
            *was_lean |= plan.lean;
        }
    }
    *lean_before_noise = plan.lean;
    noise_launches(c, &plan, &ops, noise, 12345);
    *lean = plan.lean;
    *ahead_in = c->ahead_in_launch - ahead_from;
    uint64_t n = c->f.fetches - tail_from;
    lms_plan_destroy(&plan);
    free(c);
    return n;
}

/* A link-bound step (a fetch holds the link 5x a kernel): acting is
 * chosen, its step kept the link busy, so the planner acts lean and
 * moves Belady's MIN's bytes, fewer than acting eagerly moved when the
 * link's cost was not known; every fetch ahead is made after a launch. */
static void link_bound_lean(void)
{
    build_step();
    bool lean, eager_lean;
    uint64_t ahead_in, eager_ahead_in;
    uint64_t lean_n = run(5 * COMPUTE, true, &lean, &ahead_in);
    uint64_t eager_n = run(5 * COMPUTE, false, &eager_lean, &eager_ahead_in);
    int min = min_fetches_per_step();
    CHECK(lean);
    CHECK(!eager_lean);
    CHECK_EQ_U(lean_n, (uint64_t)(TAIL * min));
    CHECK(eager_n > lean_n);
    CHECK_EQ_U(ahead_in, 0);
    CHECK(eager_ahead_in > 0);
}

/* A fetch shorter than a kernel: the link has room, the planner acts
 * eagerly (fetching ahead into idle victims starts the link at once). */
static void compute_bound_eager(void)
{
    build_step();
    bool lean;
    uint64_t ahead_in;
    run(COMPUTE / 5, true, &lean, &ahead_in);
    CHECK(!lean);
    CHECK(ahead_in > 0);
}

/* The link-bound step, but the launches' durations unknown for one launch
 * in five (as a graph's launch, never timed): what they hide is not
 * known, so the planner does not act lean. */
static void hides_unknown_eager(void)
{
    build_step();
    bool lean, before, was;
    uint64_t ahead_in;
    run_with(5 * COMPUTE, true, 5, 0, &lean, &ahead_in, &before, (twists){0}, &was);
    CHECK(!lean);
    CHECK(ahead_in > 0);
}

/* Acting lean chosen, then launches with nothing to learn: the policy's
 * own rules run, eagerly (acting lean is the choice's, paused with it). */
static void pause_not_lean(void)
{
    build_step();
    bool lean, before, was;
    uint64_t ahead_in;
    run_with(5 * COMPUTE, true, 0, 400, &lean, &ahead_in, &before, (twists){0}, &was);
    CHECK(before);
    CHECK(!lean);
}

/* Acting lean is timed once chosen: on a clock where each launch made
 * lean takes a kernel's time more (its step about 1.2x acting's), the
 * planner acts lean for the steps that time it, then acts eagerly; where
 * lean costs nothing more (link_bound_lean) it stays lean. */
static void lean_timed_dropped(void)
{
    build_step();
    bool lean, before, was;
    uint64_t ahead_in;
    run_with(5 * COMPUTE, true, 0, 0, &lean, &ahead_in, &before, (twists){.lean_cost = COMPUTE}, &was);
    CHECK(was);
    CHECK(!lean);
    CHECK(ahead_in > 0);   /* acting eagerly again: fetches ahead inside the launch */
    run_with(5 * COMPUTE, true, 0, 0, &lean, &ahead_in, &before, (twists){0}, &was);
    CHECK(lean);
}

/* Lean's points must be a step apart and span lean's launches only (a
 * breaker's cases): the third asked on another stream once (a later
 * boundary is a step later: the span was two steps, and lean, free,
 * was dropped), or a pause of 200 launches with nothing to learn after
 * the second (the span held the pause): lean stays. */
static void lean_points_one_step(void)
{
    build_step();
    bool lean, before, was;
    uint64_t ahead_in;
    run_with(5 * COMPUTE, true, 0, 0, &lean, &ahead_in, &before, (twists){.other_stream_once = true}, &was);
    CHECK(was);
    CHECK(lean);
    run_with(5 * COMPUTE, true, 0, 0, &lean, &ahead_in, &before, (twists){.pause_between = 200}, &was);
    CHECK(was);
    CHECK(lean);
}

static const test_case cases[] = {
    {"link_bound_lean", link_bound_lean},
    {"compute_bound_eager", compute_bound_eager},
    {"hides_unknown_eager", hides_unknown_eager},
    {"pause_not_lean", pause_not_lean},
    {"lean_timed_dropped", lean_timed_dropped},
    {"lean_points_one_step", lean_points_one_step},
};

TEST_MAIN(cases)
