/*
 * curve.c — bytes moved against budget for one series (see replay.h,
 * lms_replay_curve): one pass over the trace for the policies that allow it,
 * a replay per budget for the others; and the step and no-movement budget
 * of a trace, which the curves are drawn against.
 *
 * One pass for least-recently-used eviction on demand (stack distances).
 * Keep every used chunk on a recency stack: the chunks of the latest launch
 * on top, those of one launch in the planner's victim order (higher id
 * lower). At any budget where every launch's chunks fit together, LRU's
 * resident set is a prefix of that stack: a miss puts the launch's chunks
 * on top and evicts from the bottom only until the last fetch fits, so
 * the set stays a prefix (no longer the largest that fits when a free or
 * a larger room leaves space, so each budget keeps the bytes of its prefix,
 * B). A chunk is resident at a budget iff the bytes from the top down to it
 * are at most that budget's B. The stack is a Fenwick tree over recency
 * stamps holding charges, so each launch costs O(k log n + k x budgets)
 * for k chunks: no per-budget replay of the planner. Chunks are whole (of
 * any size in 2 MiB pages); the inclusion argument needs no uniform size.
 * At a budget where some launch's chunks do not fit together (some are
 * then read in place, out of stack order), or when a used chunk has no
 * charge, that budget is replayed instead. One replay, at the budget where
 * the pass evicted most, checks the pass against the planner; should they
 * ever differ (the planner's LRU changed), every budget is replayed.
 */
#include <stdlib.h>
#include <string.h>

#include "replay.h"

/* ---- the recency stack ------------------------------------------------------ */

typedef struct fenwick {
    uint64_t *v;         /* 1-based */
    size_t n;
} fenwick;

static void fw_add(fenwick *f, size_t i, int64_t d)
{
    for (; i <= f->n; i += i & -i)
        f->v[i] += (uint64_t)d;
}

/* Sum of stamps 1..i. */
static uint64_t fw_sum(const fenwick *f, size_t i)
{
    uint64_t s = 0;
    for (; i > 0; i -= i & -i)
        s += f->v[i];
    return s;
}

/* The smallest i with fw_sum(i) >= target (target > 0, at most the total). */
static size_t fw_find(const fenwick *f, uint64_t target)
{
    size_t pos = 0, step = 1;
    while (step * 2 <= f->n)
        step *= 2;
    for (; step; step /= 2)
        if (pos + step <= f->n && f->v[pos + step] < target) {
            pos += step;
            target -= f->v[pos];
        }
    return pos + 1;
}

typedef struct lru_chunk {
    uint64_t charge;
    size_t stamp;        /* position on the stack (larger: more recent); 0: not on it */
    uint64_t seen;       /* 1 + event index of the launch that last named it */
    bool alive;
} lru_chunk;

/* Orders a launch's chunks by id, highest first (they take stamps in this
 * order, so the lowest id ends on top, as the planner's ties go). */
static int by_id_desc(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Takes chunk x off the stack. */
static void unstack(fenwick *f, lru_chunk *c, uint64_t *total)
{
    if (c->stamp) {
        fw_add(f, c->stamp, -(int64_t)c->charge);
        *total -= c->charge;
        c->stamp = 0;
    }
}

/* LRU in one pass at budgets[0..n) into out[]; exact[i] false where the
 * budget must be replayed. False: no memory. */
static bool lru_one_pass(const lms_trace_data *t, int dev, uint64_t skip, const uint64_t *budgets, int n,
                         lms_replay_result *out, bool *exact)
{
    size_t nch = t->max_id ? t->max_id : 1;
    lru_chunk *ch = calloc(nch, sizeof *ch);
    fenwick f = {.v = calloc(t->nids + 2, sizeof *f.v), .n = t->nids + 1};
    uint64_t *B = calloc((size_t)n, sizeof *B), *hit = calloc((size_t)n, sizeof *hit);
    uint64_t *cum = NULL;
    uint32_t *set = NULL;
    size_t capset = 0;
    bool ok = ch && f.v && B && hit;
    uint64_t device = 0, total = 0, seq = 0;
    size_t stamp = 0;
    for (int b = 0; b < n; b++) {
        memset(&out[b], 0, sizeof out[b]);
        exact[b] = true;
    }
    for (size_t e = 0; ok && e < t->nevents; e++) {
        const rp_event *ev = &t->events[e];
        if (ev->dev != dev)
            continue;
        lru_chunk *c = ev->id < t->max_id ? &ch[ev->id] : NULL;
        switch (ev->kind) {
        case RP_DEVICE_ALLOC:
        case RP_DEVICE_FREE: device = lms_replay_device_bytes(device, ev); break;
        case RP_MANAGED_ALLOC:
        case RP_MANAGED_FREE:
            if (c && c->alive) {
                if (c->stamp) {
                    uint64_t above = total - fw_sum(&f, c->stamp - 1);
                    for (int b = 0; b < n; b++)
                        if (above <= B[b])
                            B[b] -= c->charge;   /* it was resident: its room is free */
                }
                unstack(&f, c, &total);
                c->alive = false;
            }
            if (c && ev->kind == RP_MANAGED_ALLOC)
                *c = (lru_chunk){.charge = ev->bytes, .alive = true};
            break;
        case RP_LAUNCH: {
            seq++;
            bool counting = seq > skip;
            if (ev->n > capset) {
                uint32_t *ns = realloc(set, ev->n * sizeof *ns);
                uint64_t *nc = realloc(cum, ev->n * sizeof *nc);
                if (ns)
                    set = ns;
                if (nc)
                    cum = nc;
                if (!ns || !nc) {
                    ok = false;
                    break;
                }
                capset = ev->n;
            }
            size_t k = 0;
            uint64_t sum = 0;
            for (uint32_t i = 0; i < ev->n; i++) {
                uint32_t id = t->ids[ev->first + i];
                if (id >= t->max_id || !ch[id].alive || ch[id].seen == e + 1)
                    continue;   /* unknown, or named twice */
                ch[id].seen = e + 1;
                if (ch[id].charge == 0)
                    for (int b = 0; b < n; b++)
                        exact[b] = false;   /* no room to tell resident from not */
                set[k++] = id;
                sum += ch[id].charge;
            }
            if (k > 1)   /* set may be NULL when nothing is named */
                qsort(set, k, sizeof *set, by_id_desc);
            for (size_t i = 0; i < k; i++)
                cum[i] = ch[set[i]].stamp ? total - fw_sum(&f, ch[set[i]].stamp - 1) : UINT64_MAX;
            for (int b = 0; b < n; b++) {
                uint64_t misses = 0;
                hit[b] = 0;
                for (size_t i = 0; i < k; i++) {
                    if (cum[i] <= B[b])
                        hit[b] += ch[set[i]].charge;
                    else
                        misses++;
                }
                if (counting) {
                    out[b].misses += misses;
                    out[b].launches++;
                }
            }
            /* The launch's chunks go on top. */
            for (size_t i = 0; i < k; i++) {
                lru_chunk *x = &ch[set[i]];
                unstack(&f, x, &total);
                x->stamp = ++stamp;
                fw_add(&f, x->stamp, (int64_t)x->charge);
                total += x->charge;
            }
            for (int b = 0; b < n; b++) {
                uint64_t room = budgets[b] > device ? budgets[b] - device : 0;
                if (sum > room)
                    exact[b] = false;
                if (!exact[b] || sum == hit[b])
                    continue;   /* all resident: nothing moves, the set is still a prefix */
                uint64_t rest = B[b] - hit[b], nb = sum + rest;
                if (nb > room) {
                    size_t j = fw_find(&f, total - room);
                    nb = total - fw_sum(&f, j);
                }
                if (counting) {
                    out[b].fetched_bytes += sum - hit[b];
                    out[b].evicted_bytes += rest - (nb - sum);
                }
                B[b] = nb;
            }
            break;
        }
        }
    }
    free(ch);
    free(f.v);
    free(B);
    free(hit);
    free(cum);
    free(set);
    return ok;
}

/* ---- series ------------------------------------------------------------------ */

/* Whether a policy's decisions are plain least-recently-used on demand. */
static bool is_plain_lru(const lms_policy *p)
{
    return p->on_demand && !p->observe && !p->next_use && !p->epoch && !p->ahead;
}

/* Whether a policy never fetches (its result does not depend on the budget). */
static bool never_fetches(const lms_policy *p)
{
    return !p->on_demand && !p->ahead;
}

/* One series at one budget. */
static void replay_one(const lms_trace_data *t, int dev, lms_series_kind kind, const lms_policy *policy,
                       uint64_t skip, uint64_t budget, lms_replay_result *out)
{
    if (kind == LMS_SERIES_BOUND)
        lms_replay_bound(t, dev, budget, skip, out);
    else
        lms_replay(t, dev, budget, kind == LMS_SERIES_MIN ? NULL : policy, skip, out);
}

int lms_replay_curve(const lms_trace_data *t, int dev, lms_series_kind kind, const lms_policy *policy,
                     uint64_t skip, const uint64_t *budgets, int n, lms_replay_result *out)
{
    if (n <= 0)
        return 0;
    if (kind == LMS_SERIES_POLICY && never_fetches(policy)) {
        replay_one(t, dev, kind, policy, skip, budgets[0], &out[0]);
        for (int b = 1; b < n; b++)
            out[b] = out[0];
        return n;
    }
    bool *exact = calloc((size_t)n, sizeof *exact);
    int one_pass = 0;
    if (exact && kind == LMS_SERIES_POLICY && is_plain_lru(policy) &&
        lru_one_pass(t, dev, skip, budgets, n, out, exact)) {
        /* The pass models the planner's LRU; one replay, at the budget
         * where it evicted most, checks that they still agree. */
        int check = -1;
        for (int b = 0; b < n; b++)
            if (exact[b] && (check < 0 || out[b].evicted_bytes > out[check].evicted_bytes))
                check = b;
        lms_replay_result r;
        if (check >= 0)
            lms_replay(t, dev, budgets[check], policy, skip, &r);
        if (check >= 0 && memcmp(&r, &out[check], sizeof r) != 0)
            memset(exact, 0, (size_t)n * sizeof *exact);   /* they differ: replay every budget */
        for (int b = 0; b < n; b++)
            one_pass += exact[b];
    } else if (exact) {
        memset(exact, 0, (size_t)n * sizeof *exact);
    }
    for (int b = 0; b < n; b++)
        if (!exact || !exact[b])
            replay_one(t, dev, kind, policy, skip, budgets[b], &out[b]);
    free(exact);
    return one_pass;
}

/* ---- steps and the no-movement budget --------------------------------------------- */

/* A launch's shape: its function and the sizes of the chunks it uses (ids
 * differ from step to step when a step allocates anew; shapes do not). */
static uint64_t launch_shape(const lms_trace_data *t, const rp_event *ev, const uint64_t *charge)
{
    uint64_t h = ev->fn * 0x9e3779b97f4a7c15ull;
    for (uint32_t k = 0; k < ev->n; k++) {
        uint32_t id = t->ids[ev->first + k];
        h = (h ^ (id < t->max_id ? charge[id] : 0)) * 0x100000001b3ull;
    }
    return h;
}

size_t lms_replay_period(const lms_trace_data *t, int dev, size_t *n)
{
    size_t count = 0;
    for (size_t e = 0; e < t->nevents; e++)
        count += t->events[e].kind == RP_LAUNCH && t->events[e].dev == dev;
    *n = count;
    if (count < 2)
        return count;
    uint64_t *shape = malloc(count * sizeof *shape);
    uint64_t *charge = calloc(t->max_id ? t->max_id : 1, sizeof *charge);
    size_t *pi = malloc(count * sizeof *pi);
    size_t period = count;
    if (shape && charge && pi) {
        size_t k = 0;
        for (size_t e = 0; e < t->nevents; e++) {
            const rp_event *ev = &t->events[e];
            if (ev->kind == RP_MANAGED_ALLOC && ev->id < t->max_id)
                charge[ev->id] = ev->bytes;
            else if (ev->kind == RP_LAUNCH && ev->dev == dev)
                shape[k++] = launch_shape(t, ev, charge);
        }
        pi[0] = 0;
        for (size_t i = 1; i < count; i++) {
            size_t j = pi[i - 1];
            while (j > 0 && shape[i] != shape[j])
                j = pi[j - 1];
            pi[i] = j + (shape[i] == shape[j]);
        }
        period = count - pi[count - 1];
    }
    free(shape);
    free(charge);
    free(pi);
    return period;
}

uint64_t lms_replay_need(const lms_trace_data *t, int dev)
{
    size_t ids = t->max_id ? t->max_id : 1;
    bool *touched = calloc(ids, sizeof *touched), *alive = calloc(ids, sizeof *alive);
    uint64_t *charge = calloc(ids, sizeof *charge);
    uint64_t device = 0, resident = 0, need = 0;
    for (size_t e = 0; touched && alive && charge && e < t->nevents; e++) {
        const rp_event *ev = &t->events[e];
        if (ev->dev != dev)
            continue;
        bool has = ev->id < t->max_id;
        switch (ev->kind) {
        case RP_DEVICE_ALLOC:
        case RP_DEVICE_FREE: device = lms_replay_device_bytes(device, ev); break;
        case RP_MANAGED_ALLOC:
        case RP_MANAGED_FREE:
            if (has && alive[ev->id] && touched[ev->id])
                resident -= charge[ev->id] < resident ? charge[ev->id] : resident;
            if (has) {
                alive[ev->id] = ev->kind == RP_MANAGED_ALLOC;
                touched[ev->id] = false;
                charge[ev->id] = ev->bytes;
            }
            break;
        case RP_LAUNCH:
            for (uint32_t k = 0; k < ev->n; k++) {
                uint32_t id = t->ids[ev->first + k];
                if (id < t->max_id && alive[id] && !touched[id]) {
                    touched[id] = true;
                    resident += charge[id];
                }
            }
            break;
        }
        if (device + resident > need)
            need = device + resident;
    }
    free(touched);
    free(alive);
    free(charge);
    return need;
}
