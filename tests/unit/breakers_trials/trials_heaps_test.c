/*
 * trials_heaps_test.c — the planner's invariants while the timed steps
 * (src/common/plan.c, "Timed steps") switch modes: a fake device (room in
 * units, chunks of charge 1..4), the lookahead policy with its period
 * forced from a schedule (steady, flapping within 2x and beyond it,
 * dropping under 16), chunks freed and made anew between launches, room
 * made for device chunks, points that fail. After every launch: both heaps
 * keep their order and positions, hold exactly the resident unpinned
 * chunks (the expiry heap those with a known next use), the charge of the
 * resident chunks is what is used and never above the room, and no pin is
 * left. One case per meson test.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "plan.h"
#include "policy.h"

#define NCHUNK 160
#define STEP 48      /* launches in the program's step */
#define PER 3        /* chunks per launch */
#define ROOM 60      /* units */

typedef struct fake {
    uint64_t used, room;
    lms_plan_chunk chunks[NCHUNK];
    uint64_t clock;            /* fake device time, ns */
    uint64_t at[1 << 16];      /* clock at each point */
    int nmarks;
    unsigned rnd;
    int fail_marks;            /* 1 in this many points fails (0: none; 1: all) */
    int asked;                 /* calls of ops.mark */
    int streams;               /* launch k goes to stream k % streams (0, 1: one stream) */
    int stream;                /* the stream of the launch being planned */
    int mark_stream[1 << 16];  /* the stream of each point */
    int cross;                 /* readings asked between points of two streams */
    bool decided;              /* a choice was made by readings */
    uint64_t modes_seen[LMS_PLAN_MODES];
} fake;

static uint64_t forced_period;   /* what period() answers */

static unsigned next_rand(fake *f)
{
    f->rnd = f->rnd * 1103515245u + 12345u;
    return (f->rnd >> 8) & 0xffffff;
}

static bool f_reserve(void *ctx, uint64_t bytes)
{
    fake *f = ctx;
    if (f->used + bytes > f->room)
        return false;
    f->used += bytes;
    return true;
}
static uint64_t f_budget(void *ctx) { return ((fake *)ctx)->room; }
static void f_evict(void *ctx, lms_plan_chunk *c)
{
    fake *f = ctx;
    CHECK(f->used >= c->charge);
    f->used -= c->charge;
}
static bool f_fetch(void *ctx, lms_plan_chunk *c, bool ahead)
{
    (void)ahead;
    fake *f = ctx;
    if (next_rand(f) % 31 == 0) {   /* a fetch that fails gives its charge back */
        f->used -= c->charge;
        return false;
    }
    f->clock += 50 * c->charge;
    return true;
}
static lms_plan_chunk *f_lookup(void *ctx, uint32_t id)
{
    fake *f = ctx;
    return id < NCHUNK ? &f->chunks[id] : NULL;
}
static uint64_t f_room(void *ctx) { return ((fake *)ctx)->room; }
static uint64_t f_managed(void *ctx)
{
    fake *f = ctx;
    uint64_t s = 0;
    for (int i = 0; i < NCHUNK; i++)
        s += f->chunks[i].charge;
    return s;
}
static int f_mark(void *ctx, int like)
{
    fake *f = ctx;
    f->asked++;
    if (like > 0 && f->mark_stream[like - 1] != f->stream)
        return -1;
    if (f->nmarks == (1 << 16) || (f->fail_marks && next_rand(f) % (unsigned)f->fail_marks == 0))
        return 0;
    f->mark_stream[f->nmarks] = f->stream;
    f->at[f->nmarks] = f->clock;
    return ++f->nmarks;
}
static double f_between(void *ctx, int from, int to)
{
    fake *f = ctx;
    if (from <= 0 || to <= from || to > f->nmarks)
        return -1;
    if (f->mark_stream[from - 1] != f->mark_stream[to - 1]) {
        f->cross++;
        return 0;   /* what a point on an idle stream reads: nothing to do */
    }
    return (double)(f->at[to - 1] - f->at[from - 1]);
}

/* The lookahead policy, its period forced. */
static uint64_t forced(void *state)
{
    (void)state;
    return forced_period;
}

/* Whether both heaps hold their order, positions and members. */
static void check_heaps(const lms_plan *p, fake *f)
{
    const lms_plan_heap *v = &p->victims, *e = &p->expiry;
    for (int i = 0; i < v->n; i++) {
        const lms_plan_chunk *c = v->a[i].c;
        CHECK_EQ_U(c->vpos, i + 1);
        CHECK(v->a[i].next_use == c->next_use && v->a[i].last_use == c->last_use && v->a[i].id == c->id);
        if (i > 0) {
            const lms_plan_chunk *u = v->a[(i - 1) / 2].c;
            bool above = c->next_use != u->next_use   ? c->next_use > u->next_use
                         : c->last_use != u->last_use ? c->last_use < u->last_use
                                                      : c->id > u->id;
            CHECK(!above);
        }
    }
    for (int i = 0; i < e->n; i++) {
        const lms_plan_chunk *c = e->a[i].c;
        CHECK_EQ_U(c->epos, i + 1);
        CHECK(e->a[i].next_use == c->next_use);
        if (i > 0)
            CHECK(!(c->next_use < e->a[(i - 1) / 2].c->next_use));
    }
    int resident = 0, listed = 0, expiring = 0;
    uint64_t charge = 0;
    for (int i = 0; i < NCHUNK; i++) {
        const lms_plan_chunk *c = &f->chunks[i];
        CHECK_EQ_U(c->pins, 0);
        if (c->resident) {
            resident++, charge += c->charge;
            CHECK(c->vpos > 0);
            listed++;
            CHECK_EQ_U(c->epos > 0, c->next_use != LMS_NEXT_UNKNOWN);
            expiring += c->epos > 0;
        } else {
            CHECK_EQ_U(c->vpos, 0);
            CHECK_EQ_U(c->epos, 0);
        }
    }
    uint64_t victim_bytes = 0;
    for (int i = 0; i < v->n; i++)
        victim_bytes += v->a[i].c->charge;
    CHECK_EQ_U(victim_bytes, p->victim_bytes);   /* nothing pinned here: every resident charge */
    CHECK_EQ_U(charge, p->victim_bytes);
    CHECK_EQ_U(resident, p->nresident);
    CHECK_EQ_U(listed, v->n);
    CHECK_EQ_U(expiring, e->n);
    CHECK_EQ_U(charge, f->used);
    CHECK(f->used <= f->room);
}

/* Frees chunk i (the caller returns its charge) and makes a new one in
 * its record. */
static void renew(lms_plan *p, fake *f, int i)
{
    lms_plan_chunk *c = &f->chunks[i];
    if (c->resident)
        f->used -= c->charge;
    lms_plan_forget(p, c);
    *c = (lms_plan_chunk){.id = (uint32_t)i, .charge = 1 + next_rand(f) % 4};
}

/* Runs `steps` steps of the program, the period answered by sched(s). */
static void run(fake *f, uint64_t (*sched)(int s, unsigned r), int steps, bool frees)
{
    static lms_policy pol;
    pol = *lms_policy_find("lookahead");
    pol.period = forced;
    lms_plan plan;
    CHECK(lms_plan_init(&plan, &pol));
    lms_plan_ops ops = {.reserve = f_reserve, .budget = f_budget, .evict = f_evict, .fetch = f_fetch,
                        .lookup = f_lookup, .room = f_room, .managed = f_managed, .mark = f_mark,
                        .between = f_between};
    f->room = ROOM;
    for (int i = 0; i < NCHUNK; i++)
        f->chunks[i] = (lms_plan_chunk){.id = (uint32_t)i, .charge = 1 + (uint32_t)i % 4};
    uint64_t seq = 0;
    for (int s = 0; s < steps; s++) {
        for (int k = 0; k < STEP; k++) {
            forced_period = sched(s * STEP + k, next_rand(f));
            uint32_t ids[PER];
            for (int j = 0; j < PER; j++)   /* sorted, unique; one in eight random */
                ids[j] = (uint32_t)(k * PER + j) % (NCHUNK - 8) + (next_rand(f) % 8 == 0 ? 1 : 0);
            for (int j = 1; j < PER; j++)
                if (ids[j] <= ids[j - 1])
                    ids[j] = ids[j - 1] + 1;
            lms_plan_chunk *mine[PER];
            for (int j = 0; j < PER; j++) {
                mine[j] = &f->chunks[ids[j] % NCHUNK];
                lms_plan_pin(&plan, mine[j]);
            }
            ++seq;
            f->stream = f->streams > 1 ? k % f->streams : 0;
            lms_plan_launch(&plan, &ops, f, seq, 7 + (uintptr_t)k, ids, PER, mine, PER);
            f->modes_seen[plan.mode]++;
            f->decided |= plan.trial_decided;
            for (int j = 0; j < PER; j++) {
                f->clock += mine[j]->resident ? 10 : 40 * mine[j]->charge;
                lms_plan_used(&plan, mine[j], seq);
            }
            check_heaps(&plan, f);
            if (frees && next_rand(f) % 5 == 0)
                renew(&plan, f, (int)(next_rand(f) % NCHUNK));
            uint64_t dev = 1 + next_rand(f) % 6;
            if (next_rand(f) % 17 == 0 && lms_plan_make_room(&plan, &ops, f, dev))
                f->used -= dev;   /* a device chunk made and freed */
            check_heaps(&plan, f);
        }
        if (frees && s % 3 == 2)   /* the program frees and makes all its chunks anew */
            for (int i = 0; i < NCHUNK; i++)
                renew(&plan, f, i);
        check_heaps(&plan, f);
    }
    lms_plan_destroy(&plan);
}

static uint64_t steady(int i, unsigned r) { (void)i, (void)r; return STEP; }
static uint64_t flap_within(int i, unsigned r) { (void)r; return (i / 37) % 2 ? STEP : STEP * 3 / 2; }
static uint64_t flap_beyond(int i, unsigned r) { (void)r; return (i / 29) % 2 ? 16 : 100; }
static uint64_t flap_random(int i, unsigned r)
{
    (void)i;
    static const uint64_t p[] = {0, 15, 16, 17, 48, 100, 1000, 100000};
    return r % 7 == 0 ? p[r / 7 % 8] : 48;
}
static uint64_t minimal(int i, unsigned r) { (void)i, (void)r; return 16; }

/* Each schedule, with and without frees, with points that sometimes fail. */
static void go(uint64_t (*sched)(int, unsigned), bool frees, int fail)
{
    fake *f = calloc(1, sizeof *f);
    f->rnd = 12345;
    f->fail_marks = fail;
    run(f, sched, 400, frees);
    free(f);
}

static void steady_frees(void) { go(steady, true, 0); }
static void steady_modes(void)
{
    fake *f = calloc(1, sizeof *f);
    f->rnd = 7;
    run(f, steady, 400, false);
    for (int m = 0; m < LMS_PLAN_MODES; m++)   /* every mode ran: the switches were exercised */
        CHECK(f->modes_seen[m] > 0);
    free(f);
}
static void flap_within_frees(void) { go(flap_within, true, 0); }
static void flap_beyond_frees(void) { go(flap_beyond, true, 0); }
static void flap_random_frees(void) { go(flap_random, true, 0); }
static void minimal_frees(void) { go(minimal, true, 0); }
static void failing_points(void) { go(flap_random, true, 9); }

/* Every point fails: each start of the trials gives up at once and the
 * next waits its 256 steps (400 steps: two starts), not 256 eighths of a
 * step. */
static void failed_first_point_waits(void)
{
    fake *f = calloc(1, sizeof *f);
    f->rnd = 3;
    f->fail_marks = 1;
    run(f, steady, 400, false);
    CHECK(f->asked >= 1);
    CHECK(f->asked <= 2);
    CHECK_EQ_U(f->modes_seen[LMS_PLAN_DEMAND] + f->modes_seen[LMS_PLAN_INPLACE], 0);
    free(f);
}

/* Launches on four streams in turn, reading in place far dearer: every
 * point of a trial is on one stream, none is read against another's, and
 * the choice is acting. */
static void streams_apart_plan(void)
{
    fake *f = calloc(1, sizeof *f);
    f->rnd = 5;
    f->streams = 4;
    run(f, steady, 300, false);
    CHECK_EQ_U(f->cross, 0);
    CHECK(f->decided);
    CHECK(f->modes_seen[LMS_PLAN_DEMAND] > 0);
    free(f);
}

static const test_case cases[] = {
    {"streams_apart_plan", streams_apart_plan},
    {"failed_first_point_waits", failed_first_point_waits},
    {"steady_frees", steady_frees},       {"steady_modes", steady_modes},   {"flap_within_frees", flap_within_frees},
    {"flap_beyond_frees", flap_beyond_frees}, {"flap_random_frees", flap_random_frees},
    {"minimal_frees", minimal_frees},     {"failing_points", failing_points},
};

TEST_MAIN(cases)
