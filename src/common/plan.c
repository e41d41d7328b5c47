/*
 * plan.c — residency decisions (see plan.h): fetch a launch's missing
 * chunks on demand, then fetch ahead what the policy expects, evicting only
 * chunks the policy needs later than what they make room for.
 */
#include "plan.h"

#include <stdlib.h>

bool lms_plan_init(lms_plan *p, const lms_policy *policy)
{
    *p = (lms_plan){.policy = policy};
    p->pstate = policy->create ? policy->create() : NULL;
    return !policy->create || p->pstate;
}

void lms_plan_destroy(lms_plan *p)
{
    if (p->pstate && p->policy->destroy)
        p->policy->destroy(p->pstate);
    free(p->resident);
    free(p->view);
    *p = (lms_plan){0};
}

void lms_plan_forget(lms_plan *p, lms_plan_chunk *c)
{
    for (int i = 0; i < p->nresident; i++)
        if (p->resident[i] == c) {
            p->resident[i] = p->resident[--p->nresident];
            break;
        }
    c->resident = false;
}

/* Adds c to the resident list; false if the list cannot grow. */
static bool list(lms_plan *p, lms_plan_chunk *c)
{
    if (p->nresident == p->capresident) {
        int ncap = p->capresident ? p->capresident * 2 : 64;
        lms_plan_chunk **n = realloc(p->resident, (size_t)ncap * sizeof *n);
        if (!n)
            return false;
        p->resident = n;
        p->capresident = ncap;
    }
    p->resident[p->nresident++] = c;
    c->resident = true;
    return true;
}

/* Reserves `bytes`, evicting the policy's victims for a need `distance`
 * launches ahead. False when no victim qualifies. */
static bool make_room(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t bytes, uint32_t distance)
{
    while (!ops->reserve(ctx, bytes)) {
        if (p->nresident > p->capview) {
            lms_policy_chunk *v = realloc(p->view, (size_t)p->capresident * sizeof *v);
            if (!v)
                return false;
            p->view = v;
            p->capview = p->capresident;
        }
        for (int i = 0; i < p->nresident; i++) {
            const lms_plan_chunk *c = p->resident[i];
            p->view[i] = (lms_policy_chunk){.id = c->id, .bytes = c->charge, .last_use = c->last_use,
                                            .pinned = c->pins > 0};
        }
        int v = p->policy->victim(p->pstate, p->view, p->nresident, distance);
        if (v < 0 || v >= p->nresident || p->resident[v]->pins > 0)
            return false;
        lms_plan_chunk *c = p->resident[v];
        p->resident[v] = p->resident[--p->nresident];
        c->resident = false;
        ops->evict(ctx, c);
    }
    return true;
}

/* Reserves room for c and fetches it. */
static bool bring(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c, uint32_t distance,
                  bool ahead)
{
    if (!make_room(p, ops, ctx, c->charge, distance))
        return false;
    if (!ops->fetch(ctx, c, ahead))
        return false;
    if (!list(p, c)) {
        ops->evict(ctx, c);   /* cannot track it resident: send it back */
        return false;
    }
    return true;
}

/* Fetches ahead the chunks the policy expects, in order of need, within a
 * window of one budget. */
static void fetch_ahead(lms_plan *p, const lms_plan_ops *ops, void *ctx)
{
    enum { MAX = 256 };
    uint32_t ids[MAX], dist[MAX];
    int n = p->policy->ahead(p->pstate, ids, dist, MAX);
    uint64_t window = 0, budget = ops->budget(ctx);
    for (int i = 0; i < n; i++) {
        lms_plan_chunk *c = ops->lookup(ctx, ids[i]);
        if (!c)
            continue;
        window += c->charge;
        if (window > budget)
            break;   /* more than fits at once: the rest comes later */
        if (c->resident)
            continue;
        c->pins++;   /* not a victim of its own room-making */
        bool ok = bring(p, ops, ctx, c, dist[i], true);
        c->pins--;
        if (!ok)
            break;
    }
}

void lms_plan_launch(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t seq, uintptr_t fn,
                     const uint32_t *ids, int n, lms_plan_chunk **mine, int m)
{
    if (p->policy->observe)
        p->policy->observe(p->pstate, seq, fn, ids, n);
    if (p->policy->on_demand)
        for (int i = 0; i < m; i++) {
            lms_plan_chunk *c = mine[i];
            if (c->resident) {
                if (ops->wait_ready)
                    ops->wait_ready(ctx, c);
            } else if (c->charge <= ops->budget(ctx)) {
                bring(p, ops, ctx, c, LMS_DISTANCE_NOW, false);
            }
        }
    if (p->policy->ahead)
        fetch_ahead(p, ops, ctx);
}

bool lms_plan_make_room(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t bytes)
{
    return make_room(p, ops, ctx, bytes, LMS_DISTANCE_NOW);
}
