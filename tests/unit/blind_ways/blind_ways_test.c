/*
 * blind_ways_test.c — with nothing to act on, the way of the chunks that
 * no price decides is measured (src/common/blindways.c): a fake device
 * with room for 8 of 32 chunks, one chunk drawn at random per launch,
 * and a clock each launch advances by what its chunk cost it (on the
 * device already, fetched, or read in place). The points are the clock
 * at the launch, complete `delay` launches later.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "plan.h"
#include "plan_steps.h"
#include "policy.h"

#define FN 0x77u
#define ROOM 8
#define CHUNKS 32
#define MARKS 4096

typedef struct clocked {
    fake_room f;              /* first: the ops get this struct */
    double now;               /* the device's clock, ns */
    uint64_t seq;             /* launches made */
    double hit, fetch, read;  /* what a launch's chunk costs: resident, fetched, read in place */
    int delay;                /* launches after which a point completes */
    int other_every;          /* every this many launches is on another stream (0: none) */
    int stream;               /* the stream launched on now */
    int mstream[MARKS];       /* the stream each point was recorded on */
    double at[MARKS];
    uint64_t done_at[MARKS];
    int nmarks;
    uint64_t reads;           /* launches whose chunk was read in place */
    uint32_t phase;           /* the functions' phases (ops.fn_phase) */
    int lo, span;             /* launches draw chunks lo .. lo + span - 1 (span 0: all) */
    int burst;                /* a launch costs this many times its cost one time in this many, else nothing (0: off) */
} clocked;

/* ops.fn_phase: the phases the test marked. */
static uint32_t c_phase(void *ctx) { return ((clocked *)ctx)->phase; }

/* Records a point: the clock now, on the stream launched on. */
static int point(clocked *c)
{
    if (c->nmarks == MARKS)
        return 0;
    c->mstream[c->nmarks] = c->stream;
    c->at[c->nmarks] = c->now;
    c->done_at[c->nmarks] = c->seq + (uint64_t)c->delay;
    return ++c->nmarks;
}

/* ops.mark: a point; -1 when `like` is given and this launch is on
 * another stream. */
static int c_mark(void *ctx, int like)
{
    clocked *c = ctx;
    if (like > 0 && c->other_every && c->seq % (uint64_t)c->other_every == 0)
        return -1;
    if (like > 0 && c->mstream[like - 1] != c->stream)
        return -1;
    return point(c);
}

/* ops.mark_all: a point after every stream's work, whatever the stream. */
static int c_mark_all(void *ctx, int like)
{
    (void)like;
    return point(ctx);
}

/* ops.between: the clock's difference once the later point completed. */
static double c_between(void *ctx, int from, int to)
{
    clocked *c = ctx;
    if (from <= 0 || to <= from || to > c->nmarks || c->seq < c->done_at[to - 1])
        return -1;
    return c->at[to - 1] - c->at[from - 1];
}

static bool never(void *p) { (void)p; return false; }
static const lms_policy blind_like = {.name = "blind-like", .on_demand = true, .guessing = never};
static const lms_policy acting_like = {.name = "acting-like", .on_demand = true};

/* A device of ROOM units, CHUNKS chunks, with the given costs. */
static void clocked_init(clocked *c, double hit, double fetch, double read)
{
    *c = (clocked){.hit = hit, .fetch = fetch, .read = read};
    fake_room_init(&c->f, ROOM, CHUNKS);
}

static lms_plan_ops clocked_ops(void)
{
    lms_plan_ops ops = fake_room_ops();
    ops.room = fake_room_budget;
    ops.managed = fake_room_managed;
    ops.mark = c_mark;
    ops.between = c_between;
    ops.fn_phase = c_phase;
    return ops;
}

/* A planner with nothing to act on (plan, its ops in *ops) over a fresh
 * device c whose costs are hit, fetch and read; rand() seeded. */
static void setup(clocked *c, lms_plan *plan, lms_plan_ops *ops, unsigned seed, double hit, double fetch, double read)
{
    srand(seed);
    clocked_init(c, hit, fetch, read);
    *ops = clocked_ops();
    CHECK(lms_plan_init(plan, &blind_like));
}

/* One launch of a random chunk under plan: the clock advances by its cost. */
static void launch(lms_plan *plan, const lms_plan_ops *ops, clocked *c)
{
    uint32_t id = (uint32_t)(c->lo + rand() % (c->span ? c->span : CHUNKS));
    lms_plan_chunk *mine[1] = {&c->f.chunks[id]};
    bool was = mine[0]->resident;
    c->seq++;
    lms_plan_pin(plan, mine[0]);
    lms_plan_launch(plan, ops, c, c->seq, FN, &id, 1, mine, 1);
    lms_plan_used(plan, mine[0], c->seq);
    double cost = was ? c->hit : mine[0]->resident ? c->fetch : c->read;
    if (c->burst > 0)
        cost *= rand() % c->burst == 0 ? c->burst : 0;
    c->now += cost;
    c->reads += !mine[0]->resident;
}

/* n launches; returns how many read their chunk in place. */
static uint64_t run(lms_plan *plan, const lms_plan_ops *ops, clocked *c, int n)
{
    uint64_t r = c->reads;
    for (int i = 0; i < n; i++)
        launch(plan, ops, c);
    return c->reads - r;
}

/* Reading in place is far cheaper than a fetch: the rules fetch (the room
 * holds a quarter of the chunks), the ways measured read in place. */
static void inplace_faster(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 1, 1, 20, 2);
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    uint64_t fetches = c.f.fetches;
    CHECK_EQ_U(run(&plan, &ops, &c, 100) > 60, 1);   /* 3 in 4 miss the room: read in place */
    CHECK_EQ_U(c.f.fetches, fetches);
    lms_plan_destroy(&plan);
}

/* Reading in place is far dearer: the ways measured fetch, and reading
 * in place's window is cut short once one of its parts measured it. */
static void fetch_faster(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 2, 1, 4, 40);
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);
    CHECK(plan.blind.dearer > 1);
    CHECK(c.reads < 40);   /* reading in place's window cut short after two of its parts (a whole one: about 48) */
    CHECK_EQ_U(run(&plan, &ops, &c, 100), 0);
    lms_plan_destroy(&plan);
}

/* Fetching chosen with reading in place 10x dearer: its windows turning
 * 1.5x slower leave it chosen, no trial reading in place; 6x slower
 * (most of the margin it won by gone) try the ways again. */
static void fetch_held_to_margin(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 12, 1, 4, 40);
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);
    CHECK(plan.blind.dearer > 1);
    c.hit *= 1.5, c.fetch *= 1.5;
    CHECK_EQ_U(run(&plan, &ops, &c, 1000), 0);   /* not one read in place: no trial */
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);
    c.hit *= 4, c.fetch *= 4;
    CHECK(run(&plan, &ops, &c, 400) > 0);   /* a trial's window reading in place */
    lms_plan_destroy(&plan);
}

/* Neither way is faster: the rules decide. */
static void tie_rules(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 3, 3, 3, 3);
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_RULES);
    lms_plan_destroy(&plan);
}

/* The choice waits for its points: until they complete the rules decide. */
static void waits_for_points(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 4, 1, 20, 2);
    c.delay = 200;
    run(&plan, &ops, &c, 16 + 128 + 128 + 10);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_RULES);   /* timed, not complete yet */
    run(&plan, &ops, &c, 250);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    lms_plan_destroy(&plan);
}

/* Reading in place turns dearer after the choice, twice as dear: not
 * enough for a part alone to try again (inplace_turns_dear), but the
 * windows watched show it, the ways are tried again, and fetching is
 * chosen. */
static void phase_tries_again(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 5, 1, 4, 3.5);
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    c.read = 7;
    run(&plan, &ops, &c, 40);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);   /* no part alone went over */
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);
    lms_plan_destroy(&plan);
}

/* The first round is a tie, and reading in place turns cheap during the
 * second: the second round's measures differ from the first's, replace
 * them, and alone choose reading in place. */
static void changed_during_trials(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 9, 3, 3, 3);
    run(&plan, &ops, &c, 16 + 64 + 64 + 2);
    CHECK_EQ_U(plan.blind.rounds, 1);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);   /* a second round */
    c.read = 1;
    run(&plan, &ops, &c, 130);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    CHECK_EQ_U(plan.blind.rounds, 1);   /* the first round's measures were dropped */
    CHECK_EQ_U(plan.blind.tried, 2);
    lms_plan_destroy(&plan);
}

/* A change that leaves the chosen way's time as it was (reading in place
 * costs the same) but makes fetching cheap is not seen by the windows
 * watched: the ways are tried again after 128 windows, and fetching is
 * chosen. */
static void retried_anyway(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 10, 1, 20, 2);
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    c.fetch = 1.2, c.hit = 1;
    c.read = 2 * 0.75 + 1 * 0.25;   /* what a window reading in place took per launch before */
    run(&plan, &ops, &c, 64 * 100);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    run(&plan, &ops, &c, 64 * 40);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);
    lms_plan_destroy(&plan);
}

/* A new phase of the functions after a quiet time tries the ways again
 * once 16 launches passed without another; phases that come every few
 * launches (two kinds of functions taking turns) do not, nor does one
 * after a quiet time that another follows within those 16 (a line of
 * chance phases: their gaps are long-tailed). */
static void phase_after_quiet(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 11, 1, 20, 2);
    for (int i = 0; i < 120; i++) {   /* a phase every 5 launches */
        c.phase++;
        run(&plan, &ops, &c, 5);
    }
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    for (int i = 0; i < 50; i++) {
        c.phase++;
        run(&plan, &ops, &c, 5);
        CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    }
    run(&plan, &ops, &c, 70);
    c.phase++;
    run(&plan, &ops, &c, 10);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);   /* not yet held */
    c.phase++;
    run(&plan, &ops, &c, 40);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);   /* another came: chance */
    for (int i = 0; i < 10; i++) {   /* the line noisy again */
        c.phase++;
        run(&plan, &ops, &c, 5);
    }
    run(&plan, &ops, &c, 70);
    c.phase++;
    run(&plan, &ops, &c, 16);   /* the first saw the phase */
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    run(&plan, &ops, &c, 1);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);   /* held 16 launches: trying, fetching first */
    lms_plan_destroy(&plan);
}

/* The kernels changed after `quiet` launches without a phase, and then
 * turn dear and cheap by turns (a phase every 3 launches): the ways are
 * tried again at once, fetching first, and the trials go on (their
 * fetching windows still under way 30 launches later; dropped, the way
 * chosen before, reading in place, would be back). */
static void changed_then_turns(lms_plan *plan, const lms_plan_ops *ops, clocked *c, int quiet)
{
    run(plan, ops, c, quiet);
    c->phase++;
    run(plan, ops, c, 1);
    CHECK_EQ_U(plan->blind.way, LMS_BWAY_FETCH);
    for (int i = 0; i < 10; i++) {
        c->phase++;
        run(plan, ops, c, 3);
    }
    CHECK_EQ_U(plan->blind.way, LMS_BWAY_FETCH);
}

/* On a calm line (a phase every 40 launches), a phase after a quiet
 * time of 100 launches tries the ways again at once. */
static void calm_line_at_once(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 14, 1, 20, 2);
    for (int i = 0; i < 15; i++) {
        c.phase++;
        run(&plan, &ops, &c, 40);
    }
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    changed_then_turns(&plan, &ops, &c, 100);
    lms_plan_destroy(&plan);
}

/* A phase after four times the quiet time (600 launches without one)
 * tries the ways again at once. */
static void long_quiet_at_once(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 13, 1, 20, 2);
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    changed_then_turns(&plan, &ops, &c, 0);
    lms_plan_destroy(&plan);
}

/* A launch with something to act on drops the window under way, and the
 * way chosen stays for the next launches with nothing to act on; trials
 * under way end there, and the rules decide. */
static void acting_pauses(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 6, 1, 20, 2);
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    CHECK(plan.blind.cur.pts[0] != 0);
    plan.policy = &acting_like;
    run(&plan, &ops, &c, 1);
    CHECK_EQ_U(plan.blind.cur.pts[0], 0);
    plan.policy = &blind_like;
    uint64_t fetches = c.f.fetches;
    CHECK_EQ_U(run(&plan, &ops, &c, 100) > 60, 1);   /* read in place, as chosen */
    CHECK_EQ_U(c.f.fetches, fetches);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    lms_plan_destroy(&plan);

    clocked_init(&c, 1, 20, 2);
    CHECK(lms_plan_init(&plan, &blind_like));
    run(&plan, &ops, &c, 40);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);   /* trying */
    plan.policy = &acting_like;
    run(&plan, &ops, &c, 1);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_RULES);
    lms_plan_destroy(&plan);
}

/* A window's end that falls on another stream moves to a later launch;
 * the choice is still made. */
static void other_stream(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 7, 1, 4, 40);
    c.other_every = 2;
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);
    lms_plan_destroy(&plan);
}

/* The launches move to another stream for good during the trials: the
 * window under way can never end there, so the trials start again on the
 * new stream and choose. */
static void stream_moves(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 12, 1, 4, 40);
    run(&plan, &ops, &c, 100);
    CHECK_EQ_U(plan.blind.stage != 0 && plan.blind.way != LMS_BWAY_RULES, 1);   /* trying */
    c.stream = 1;
    run(&plan, &ops, &c, 900);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);
    CHECK_EQ_U(c.mstream[plan.blind.cur.pts[0] - 1], 1);   /* its windows on the new stream */
    lms_plan_destroy(&plan);
}

/* Every launch on another stream than the last point's: points on one
 * stream could never end a part (the rules would decide), points after
 * every stream's work (ops.mark_all) time the ways as on one stream. */
static void points_of_all_streams(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 7, 1, 20, 2);
    c.other_every = 1;
    ops.mark_all = c_mark_all;
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);   /* the rules would fetch (the room holds a quarter) */
    lms_plan_destroy(&plan);
}

/* Sets the fake up as setup() with `seed`, fetch/read costs, and launches
 * over a hot set of 12 chunks (8 in the room) until reading in place is
 * chosen, as it must be (the plan is the caller's to destroy). */
static void inplace_over_hot_set(clocked *c, lms_plan *plan, lms_plan_ops *ops, unsigned seed, double fetch,
                                 double read)
{
    setup(c, plan, ops, seed, 1, fetch, read);
    c->span = 12;
    run(plan, ops, c, 600);
    CHECK_EQ_U(plan->blind.way, LMS_BWAY_INPLACE);
}

/* Reading in place chosen over a hot set of 12 chunks (the room holds 8
 * of them); then the set moves to 12 others, and reading them is 30 times
 * dearer: the room holds what the launches no longer use, and the trials
 * start again within the next two parts, not after two whole windows. */
static void inplace_turns_dear(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    inplace_over_hot_set(&c, &plan, &ops, 1, 20, 2);
    c.lo = 12;
    c.read = 60;
    run(&plan, &ops, &c, 40);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_FETCH);   /* trying again: settling fetches */
    lms_plan_destroy(&plan);
}

/* Reading in place chosen over the same hot set; then a burst of long
 * kernels: every launch takes 10 times longer, wherever its chunk is.
 * The launches miss the room no more than before: no part alone tries
 * the ways again (an outside helper's bursts of long kernels at each
 * step's start did, and lost reading in place: 1.04 -> 1.12x `none`). */
static void burst_not_sudden(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    inplace_over_hot_set(&c, &plan, &ops, 1, 20, 2);
    c.hit = 10;
    c.read = 20;
    run(&plan, &ops, &c, 40);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_INPLACE);
    CHECK_EQ_U(plan.blind.fragile, 0);
    lms_plan_destroy(&plan);
}

/* Reading in place a little faster (a fifth) is chosen; once it turned far
 * dearer at once, it needs to be faster by a quarter: the trials that
 * follow do not choose it again. */
static void fragile_inplace(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    inplace_over_hot_set(&c, &plan, &ops, 3, 10, 8);
    CHECK_EQ_U(plan.blind.fragile, 0);
    c.lo = 12;     /* the set moves, and reading it is far dearer */
    c.read = 60;
    run(&plan, &ops, &c, 40);
    CHECK_EQ_U(plan.blind.fragile, 1);
    c.lo = 0;
    c.read = 8;
    run(&plan, &ops, &c, 1200);
    CHECK(plan.blind.way != LMS_BWAY_INPLACE);
    lms_plan_destroy(&plan);
}

/* Without points (no mark/between) the rules decide, as before. */
static void untimed_rules(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 8, 1, 20, 2);
    ops.mark = NULL;
    ops.between = NULL;
    run(&plan, &ops, &c, 600);
    CHECK_EQ_U(plan.blind.way, LMS_BWAY_RULES);
    CHECK_EQ_U(run(&plan, &ops, &c, 100), 0);   /* the room's share: a quarter, fetched */
    lms_plan_destroy(&plan);
}

/* Prices judged: every chunk priced at `share` of what a fetch holds a
 * launch per byte (ops.price, ops.fetch_cost), so prices read them in
 * place (share < 1), against the rules' fetching (the room holds a
 * quarter of the chunks). */
static double judged_share;
static double c_price(void *ctx, lms_plan_chunk *c) { (void)ctx, (void)c; return judged_share; }
static double c_fetch_cost(void *ctx) { (void)ctx; return 1; }

/* A planner as setup()'s whose chunks all have a price of `share`. */
static void setup_priced(clocked *c, lms_plan *plan, lms_plan_ops *ops, unsigned seed, double share, double hit,
                         double fetch, double read)
{
    setup(c, plan, ops, seed, hit, fetch, read);
    judged_share = share;
    ops->price = c_price;
    ops->fetch_cost = c_fetch_cost;
}

/* Checks that fetching every chunk was judged faster and chosen: the
 * next 100 launches read nothing in place, whatever their prices say. */
static void fetching_every_chunk(lms_plan *plan, const lms_plan_ops *ops, clocked *c)
{
    CHECK_EQ_U(plan->blind.all, 1);
    CHECK_EQ_U(plan->blind.way, LMS_BWAY_FETCH);
    CHECK_EQ_U(run(plan, ops, c, 100), 0);
}

/* Prices near a fetch's cost read every chunk in place where fetching
 * is 10x cheaper on the device (a price that stands on launches whose
 * compute varies): the trials' windows both read in place (every chunk
 * is priced), prices went against the way at every chunk, and fetching
 * every chunk is judged against them and chosen. Before the judging,
 * every chunk was read in place for good. */
static void prices_judged_slower(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup_priced(&c, &plan, &ops, 21, 0.6, 1, 4, 40);
    run(&plan, &ops, &c, 1200);
    fetching_every_chunk(&plan, &ops, &c);
    lms_plan_destroy(&plan);
}

/* The same prices where reading in place is the cheaper way (reading 2,
 * a fetch 40): fetching every chunk is judged, ended after two of its
 * parts (BW_JUDGE_ABORT: a whole window would have fetched about 48),
 * and prices keep deciding. */
static void prices_judged_faster(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup_priced(&c, &plan, &ops, 22, 0.6, 1, 40, 2);
    run(&plan, &ops, &c, 1200);
    CHECK_EQ_U(plan.blind.all, 0);
    CHECK(plan.blind.judged_once);
    CHECK(c.f.fetches < 48);   /* the judging cut short (the fetches before it: none, every chunk priced) */
    uint64_t fetches = c.f.fetches;
    CHECK(run(&plan, &ops, &c, 100) > 60);   /* read in place, as prices say */
    CHECK_EQ_U(c.f.fetches, fetches);
    lms_plan_destroy(&plan);
}

/* Prices reading in place at 0.3 of a fetch's cost, where fetching is
 * 10x cheaper on the device: within MARGINAL_READ under a fetch's cost,
 * they are judged, and fetching every chunk is chosen. Before, only
 * prices down to half of a fetch's cost counted, and every chunk was
 * read in place for good. */
static void low_prices_judged(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup_priced(&c, &plan, &ops, 25, 0.3, 1, 4, 40);
    run(&plan, &ops, &c, 1200);
    fetching_every_chunk(&plan, &ops, &c);
    lms_plan_destroy(&plan);
}

/* Prices far from a fetch's cost (a fifth of it) are not judged: they
 * go against the rules at every chunk, but on no margin. */
static void prices_far_not_judged(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup_priced(&c, &plan, &ops, 23, 0.2, 1, 4, 40);
    run(&plan, &ops, &c, 1200);
    CHECK_EQ_U(plan.blind.all, 0);
    CHECK_EQ_U(plan.blind.judged_once, 0);
    lms_plan_destroy(&plan);
}

/* ops.price for split_prices: every fourth chunk priced to read in place
 * (0.6 of a fetch), the rest to fetch (1.5): all near a fetch's cost. */
static double c_split_price(void *ctx, lms_plan_chunk *c)
{
    return (c - ((clocked *)ctx)->f.chunks) % 4 == 0 ? 0.6 : 1.5;
}

/* ops.managed for split_prices: twice the chunks' units, so that the
 * room holds under a quarter of them and the rules read in place. */
static uint64_t c_managed_twice(void *ctx) { return 2 * fake_room_managed(ctx); }

/* Prices near a fetch's cost that split the chunks (a quarter read in
 * place, the rest fetched: every fetched one is against the rules'
 * reading in place) make a mix slower than fetching every chunk (reading
 * costs 8 a launch, a fetch 4, a hit 1: about 4.25 a launch against
 * 3.25). Reading every chunk in place is judged first (the way the
 * prices went against most) and loses; fetching every chunk is judged
 * next and chosen. Before, the first judging lost left the mix. */
static void other_way_judged(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup(&c, &plan, &ops, 24, 1, 4, 8);
    ops.price = c_split_price;
    ops.fetch_cost = c_fetch_cost;
    ops.managed = c_managed_twice;
    run(&plan, &ops, &c, 1500);
    fetching_every_chunk(&plan, &ops, &c);
    CHECK(plan.blind.judged_both);
    lms_plan_destroy(&plan);
}

/* Prices near a fetch's cost read every chunk in place (4.6 a launch
 * not resident, a hit 1) where fetching every chunk is about 12% faster
 * (a fetch 4, a quarter of the launches hit). While the rounds run, a
 * launch costs JUDGED_LATE_BURST times its cost one time in that many
 * and nothing otherwise, so their measure of prices deciding is loose;
 * from the judging on, launches cost what they cost. The judging of
 * fetching every chunk ends neither won nor lost (faster on average, by
 * less than the error of the two measures) and prices decide; the
 * chosen windows that follow add to their measure until it is sure, and
 * fetching every chunk is taken (late_evidence). Before, prices kept
 * reading every chunk in place. */
#define JUDGED_LATE_BURST 8
static void judged_late(void)
{
    clocked c;
    lms_plan plan;
    lms_plan_ops ops;
    setup_priced(&c, &plan, &ops, 29, 0.6, 1, 4, 4.6);
    c.burst = JUDGED_LATE_BURST;
    bool held = false;
    for (int i = 0; i < 4000 && !(plan.blind.all && plan.blind.judged == LMS_BWAY_RULES); i++) {
        if (plan.blind.judged_once)
            c.burst = 0;
        run(&plan, &ops, &c, 1);
        held |= plan.blind.late_way == LMS_BWAY_FETCH;
    }
    CHECK(held);   /* the judging told neither */
    fetching_every_chunk(&plan, &ops, &c);
    lms_plan_destroy(&plan);
}

static const test_case cases[] = {
    {"judged_late", judged_late},
    {"prices_judged_slower", prices_judged_slower},
    {"other_way_judged", other_way_judged},
    {"low_prices_judged", low_prices_judged},
    {"prices_judged_faster", prices_judged_faster},
    {"prices_far_not_judged", prices_far_not_judged},
    {"inplace_faster", inplace_faster},
    {"fetch_faster", fetch_faster},
    {"tie_rules", tie_rules},
    {"waits_for_points", waits_for_points},
    {"phase_tries_again", phase_tries_again},
    {"changed_during_trials", changed_during_trials},
    {"retried_anyway", retried_anyway},
    {"phase_after_quiet", phase_after_quiet},
    {"calm_line_at_once", calm_line_at_once},
    {"long_quiet_at_once", long_quiet_at_once},
    {"fetch_held_to_margin", fetch_held_to_margin},
    {"acting_pauses", acting_pauses},
    {"other_stream", other_stream},
    {"stream_moves", stream_moves},
    {"untimed_rules", untimed_rules},
    {"points_of_all_streams", points_of_all_streams},
    {"inplace_turns_dear", inplace_turns_dear},
    {"fragile_inplace", fragile_inplace},
    {"burst_not_sudden", burst_not_sudden},
};

TEST_MAIN(cases)
