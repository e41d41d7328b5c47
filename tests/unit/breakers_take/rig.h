/*
 * rig.h — a scripted fake device for acting deep's room moves
 * (src/common/plan.c, give_room and take_back): chunks of the fake room,
 * launches per step, prices and what each launch hides set by the test,
 * the accounting checked after every launch. Used by take_test.c.
 */
#ifndef BREAKERS_TAKE_RIG_H
#define BREAKERS_TAKE_RIG_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "plan.h"
#include "plan_steps.h"
#include "policy.h"

#define RIG_FILL 14
#define RIG_MAXL 8

typedef struct rig rig;
struct rig {
    fake_room f;                  /* first */
    lms_plan plan;
    lms_plan_chunk **mine;
    int m;
    int s, j;                     /* step, launch within step */
    int nl;                       /* launches with chunks per step */
    uint32_t ids[RIG_MAXL][4];
    int n[RIG_MAXL];
    double (*price)(rig *r, lms_plan_chunk *c);
    uint64_t (*hides)(rig *r);
    void (*before)(rig *r);       /* called before each launch (may poke state) */
    int (*mode_of)(rig *r);       /* the planner's mode for this launch (NULL: acting deep) */
    const lms_plan_ops *ops;      /* the ops (NULL: rig_ops()) */
    bool fail_fetch[FAKE_ROOM_MAX];
    uint64_t fetch_by[FAKE_ROOM_MAX], evict_by[FAKE_ROOM_MAX];
    bool bad;                     /* accounting broke */
    int verbose;
    uint64_t seq;
    uint64_t held;                /* units held by a device request */
};

static int rig_off(const rig *r)
{
    int off = 0;
    for (int i = 0; i < r->m; i++)
        off += !r->mine[i]->resident;
    return off;
}

static bool rig_fetch(void *ctx, lms_plan_chunk *c, bool ahead)
{
    rig *r = ctx;
    if (r->fail_fetch[c->id]) {
        r->f.used -= c->charge;   /* returns the charge */
        return false;
    }
    r->fetch_by[c->id]++;
    return fake_room_fetch(ctx, c, ahead);
}
static void rig_evict(void *ctx, lms_plan_chunk *c)
{
    rig *r = ctx;
    r->evict_by[c->id]++;
    fake_room_evict(ctx, c);
}
static double rig_price(void *ctx, lms_plan_chunk *c) { rig *r = ctx; return r->price(r, c); }
static uint64_t rig_hides(void *ctx) { rig *r = ctx; return r->hides(r); }

/* Accounting: used == sum of resident charges, used <= room. */
static void rig_check(rig *r)
{
    uint64_t sum = 0;
    int nres = 0;
    for (uint32_t i = 0; i < r->f.n; i++)
        if (r->f.chunks[i].resident)
            sum += r->f.chunks[i].charge, nres++;
    if (sum + r->held != r->f.used || r->f.used > r->f.room || nres != r->plan.nresident) {
        if (!r->bad)
            fprintf(stderr, "accounting: step %d launch %d used %llu sum %llu room %llu nres %d plan %d\n", r->s,
                    r->j, (unsigned long long)r->f.used, (unsigned long long)sum, (unsigned long long)r->f.room,
                    nres, r->plan.nresident);
        r->bad = true;
    }
}

/* The rigs set up by this process (one case each), their planners freed
 * at exit. */
static rig *rig_made[16];
static int rig_nmade;

static void rig_free_all(void)
{
    for (int i = 0; i < rig_nmade; i++)
        lms_plan_destroy(&rig_made[i]->plan);
}

/* Sets r up with room for `room` units and nchunks chunks of 1 unit;
 * r's planner is freed at exit (or by lms_plan_destroy before). */
static void rig_init(rig *r, uint64_t room, uint32_t nchunks)
{
    bool known = false;
    for (int i = 0; i < rig_nmade; i++)
        known |= rig_made[i] == r;
    if (known)
        lms_plan_destroy(&r->plan);   /* set up again: the last one's planner first */
    memset(r, 0, sizeof *r);
    r->verbose = getenv("V") != NULL;   /* V=1: rig_show prints each step */
    fake_room_init(&r->f, room, nchunks);
    CHECK(lms_plan_init(&r->plan, lms_policy_find("lookahead")));
    if (!known && rig_nmade < 16) {
        if (rig_nmade == 0)
            atexit(rig_free_all);
        rig_made[rig_nmade++] = r;
    }
}

/* The fake room's ops with the rig's fetch, evict, price and hides. */
static lms_plan_ops rig_ops(void)
{
    lms_plan_ops ops = fake_room_ops();
    ops.fetch = rig_fetch;
    ops.evict = rig_evict;
    ops.price = rig_price;
    ops.hides = rig_hides;
    return ops;
}

/* Runs one step, each launch in the mode r->mode_of says (set through
 * lms_plan_set_mode) with r->ops; *cost: price x charge of each chunk
 * read off the device (as the rig's price says). Returns fetches in the
 * step. */
static uint64_t rig_step(rig *r, double *cost, uint64_t *seq)
{
    lms_plan_ops own = rig_ops();
    const lms_plan_ops *ops = r->ops ? r->ops : &own;
    uint64_t before = r->f.fetches;
    double c = 0;
    for (int j = 0; j < r->nl + RIG_FILL; j++) {
        r->j = j;
        int n = j < r->nl ? r->n[j] : 0;
        uint32_t *ids = j < r->nl ? r->ids[j] : NULL;
        lms_plan_chunk *mine[4] = {0};
        for (int i = 0; i < n; i++) {
            mine[i] = &r->f.chunks[ids[i]];
            lms_plan_pin(&r->plan, mine[i]);
        }
        r->mine = mine, r->m = n;
        if (r->before)
            r->before(r);
        int mode = r->mode_of ? r->mode_of(r) : LMS_PLAN_DEEP;
        if (r->plan.mode != mode)
            lms_plan_set_mode(&r->plan, mode);
        lms_plan_launch(&r->plan, ops, r, ++*seq, 300 + (uintptr_t)j, ids, n, mine, n);
        for (int i = 0; i < n; i++)
            if (!mine[i]->resident) {
                double p = r->price(r, mine[i]);
                c += p > 0 ? p * (double)mine[i]->charge : 0;
            }
        for (int i = 0; i < n; i++)
            lms_plan_used(&r->plan, mine[i], *seq);
        rig_check(r);
    }
    if (cost)
        *cost = c;
    return r->f.fetches - before;
}

static void rig_show(rig *r, int s, double cost, uint64_t moved)
{
    if (!r->verbose)
        return;
    fprintf(stderr, "step %2d cost %5.1f moved %llu  used %llu/%llu  res:", s, cost, (unsigned long long)moved,
            (unsigned long long)r->f.used, (unsigned long long)r->f.room);
    for (uint32_t i = 0; i < r->f.n; i++)
        fprintf(stderr, " %u%s%s%s", i, r->f.chunks[i].resident ? "R" : "-",
                r->f.chunks[i].kept ? "k" : "", r->f.chunks[i].gave_to ? "g" : "");
    fprintf(stderr, "  gave_to:");
    for (uint32_t i = 0; i < r->f.n; i++)
        if (r->f.chunks[i].gave_to)
            fprintf(stderr, " %u->%u(%.1f)", i, r->f.chunks[i].gave_to - 1, r->f.chunks[i].gave_gain);
    fprintf(stderr, "\n");
}

/* Runs `steps` steps; cost[s], moved[s]. */
static void rig_run(rig *r, int steps, double *cost, uint64_t *moved)
{
    for (int s = 0; s < steps; s++) {
        r->s = s;
        moved[s] = rig_step(r, &cost[s], &r->seq);
        rig_show(r, s, cost[s], moved[s]);
    }
}
#endif
