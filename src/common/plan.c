/*
 * plan.c — residency decisions (see plan.h): fetch a launch's missing
 * chunks on demand, then fetch ahead what the policy expects, evicting only
 * chunks the policy needs later than what they make room for. Where the
 * live engine measured what reading a chunk in place costs a launch
 * (price.c), a launch reads in place what is cheap to read there and,
 * when its chunks do not all fit, fetches the dearest first. Victims come
 * from the top of an indexed heap, so a launch that evicts costs O(log n)
 * per eviction whatever the number of resident chunks. Which mode runs a
 * learned step fastest is measured in trials.c (the timed steps).
 */
#include "plan.h"
#include "plan_steps.h"
#include "grow.h"
#include "price.h"

#include <stddef.h>
#include <stdlib.h>

#define AHEAD_MAX 1024   /* chunk ids asked of the policy's ahead() per launch */
#define AHEAD_DEEP 8     /* launches fetched ahead when acting deep */
#define IDLE_AFTER 3     /* launches after its last use when a victim passed over to is taken to be idle (pick_victim) */
#define HIDDEN_SHARE 8   /* a function's fitted price under 1/this of a fetch's: its reads in place are hidden */
#define TAKE_BACKOFF 16  /* a take whose fetch failed: none for this many of the chunk's steps */
#define MARGINAL 2       /* a price within this factor of a fetch's decides on a margin (blind_choice), ... */
#define MARGINAL_READ 4  /* ... or, reading in place, down to this factor under it */
#define TURNED 16        /* an own price under a fetch gives way to its position's agreed one this many times over it */
#define RECHECK 16       /* launches between two timed reads in place of one chunk on its own price (time_read) ... */
#define RECHECK_ANY 8    /* ... and of any chunk: at most one launch in this many timed so (timing.c samples one in 8) */
#define RECHECK_DEFER 4  /* chunks turned away for the stalest kept waiting before the next stalest is waited for */
#define FAR_OVER 8       /* a price this many times a fetch's: fetched even where reading every chunk in place was chosen */
#define PRIOR_ODDS 9     /* 8 new functions all dear in place: the next cheap at about 1 in this many (blind_choice) */
#define CHURN_MIN 8      /* fetches of chunks freed since, at least, ... */
#define CHURN_USES 1.5   /* ... that served fewer uses than this each: fetching into free room is not free (churning) */
#define CHURN_KEPT 256   /* fetches counted before the counts halve */

/* A chunk of the launch being planned and what reading it in place costs
 * that launch (negative: unknown). */
struct lms_plan_priced {
    lms_plan_chunk *c;
    double price;
    int order;                /* its place in the launch (ties keep it) */
};

/* ---- indexed heaps -------------------------------------------------------- */

/* One heap order: `above(a, b)` when the slot a belongs nearer the top;
 * the chunk's position field is at byte offset `pos`. */
typedef struct heap_kind {
    bool (*above)(const lms_plan_slot *a, const lms_plan_slot *b);
    size_t pos;
} heap_kind;

/* Victim order: farther expected next use first, then least recently
 * used, then the older chunk (a total order, so replays are exact). */
static bool victim_above(const lms_plan_slot *a, const lms_plan_slot *b)
{
    if (a->next_use != b->next_use)
        return a->next_use > b->next_use;
    if (a->last_use != b->last_use)
        return a->last_use < b->last_use;
    return a->id > b->id;
}

/* Expiry order: earliest expected next use first. */
static bool expiry_above(const lms_plan_slot *a, const lms_plan_slot *b)
{
    return a->next_use < b->next_use;
}

static const heap_kind VICTIMS = {victim_above, offsetof(lms_plan_chunk, vpos)};
static const heap_kind EXPIRY = {expiry_above, offsetof(lms_plan_chunk, epos)};

/* The slot of c as it is now (its keys copied). */
static lms_plan_slot slot_of(lms_plan_chunk *c)
{
    return (lms_plan_slot){.next_use = c->next_use, .last_use = c->last_use, .c = c, .id = c->id};
}

/* The position field (1 + index, 0: not in the heap) of c in heap kind k. */
static int *pos_of(const heap_kind *k, lms_plan_chunk *c)
{
    return (int *)(void *)((char *)c + k->pos);
}

/* Puts slot s at index i (recording its chunk's position). */
static void place(lms_plan_heap *h, const heap_kind *k, int i, lms_plan_slot s)
{
    h->a[i] = s;
    *pos_of(k, s.c) = i + 1;
}

/* Moves the slot at index i up or down until the order holds. */
static void sift(lms_plan_heap *h, const heap_kind *k, int i)
{
    lms_plan_slot s = h->a[i];
    while (i > 0 && k->above(&s, &h->a[(i - 1) / 2])) {
        place(h, k, i, h->a[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        int l = 2 * i + 1, best = i;
        const lms_plan_slot *bs = &s;
        if (l < h->n && k->above(&h->a[l], bs))
            best = l, bs = &h->a[l];
        if (l + 1 < h->n && k->above(&h->a[l + 1], bs))
            best = l + 1, bs = &h->a[l + 1];
        if (best == i)
            break;
        place(h, k, i, *bs);
        i = best;
    }
    place(h, k, i, s);
}

/* Adds c (room is reserved beforehand: see reserve_heaps). */
static void heap_push(lms_plan_heap *h, const heap_kind *k, lms_plan_chunk *c)
{
    place(h, k, h->n++, slot_of(c));
    sift(h, k, h->n - 1);
}

/* Takes c out of the heap if it is in it. */
static void heap_remove(lms_plan_heap *h, const heap_kind *k, lms_plan_chunk *c)
{
    int i = *pos_of(k, c) - 1;
    if (i < 0)
        return;
    *pos_of(k, c) = 0;
    lms_plan_slot last = h->a[--h->n];
    if (i < h->n) {
        place(h, k, i, last);
        sift(h, k, i);
    }
}

/* Grows a heap's array to hold `need` chunks. */
static bool heap_reserve(lms_plan_heap *h, int need)
{
    return lms_grow((void **)&h->a, &h->cap, (size_t)need, sizeof *h->a, 64);
}

/* ---- the resident set ----------------------------------------------------- */

/* Sets up a planner; the policy's state is the planner's to free. */
bool lms_plan_init(lms_plan *p, const lms_policy *policy)
{
    *p = (lms_plan){.policy = policy};
    p->pstate = policy->create ? policy->create() : NULL;
    return !policy->create || p->pstate;
}

/* Frees the policy's state and the planner's arrays (not the chunks). */
void lms_plan_destroy(lms_plan *p)
{
    if (p->pstate && p->policy->destroy)
        p->policy->destroy(p->pstate);
    free(p->victims.a);
    free(p->expiry.a);
    free(p->memos);
    free(p->batch);
    free(p->ahead);
    free(p->priced);
    *p = (lms_plan){0};
}

/* Asks the policy when c is needed next (later than now, or unknown). */
static void rekey(lms_plan *p, lms_plan_chunk *c)
{
    uint64_t next = p->policy->next_use && p->mode != LMS_PLAN_DEMAND
                        ? p->policy->next_use(p->pstate, &c->memo, c->last_use, p->now)
                        : LMS_NEXT_UNKNOWN;
    c->next_use = next > p->now ? next : LMS_NEXT_UNKNOWN;
}

/* Orders c among the candidates when it is resident and unpinned (its
 * charge counted in victim_bytes). */
static void enlist(lms_plan *p, lms_plan_chunk *c)
{
    if (!c->resident || c->pins > 0)
        return;
    heap_push(&p->victims, &VICTIMS, c);
    p->victim_bytes += c->charge;
    if (c->next_use != LMS_NEXT_UNKNOWN)
        heap_push(&p->expiry, &EXPIRY, c);
}

/* Takes c out of the candidates (its charge out of victim_bytes). */
static void delist(lms_plan *p, lms_plan_chunk *c)
{
    if (c->vpos > 0)
        p->victim_bytes -= c->charge;
    heap_remove(&p->victims, &VICTIMS, c);
    heap_remove(&p->expiry, &EXPIRY, c);
}

/* Asks again about every resident chunk held as "no guess" (the policy
 * learned something that may give one). */
static void reguess(lms_plan *p)
{
    int n = 0;
    for (int i = 0; i < p->victims.n; i++)   /* gather first: rekeying reorders the heap */
        if (p->victims.a[i].next_use == LMS_NEXT_UNKNOWN)
            p->batch[n++] = p->victims.a[i].c;
    for (int i = 0; i < n; i++) {
        delist(p, p->batch[i]);
        rekey(p, p->batch[i]);
        enlist(p, p->batch[i]);
    }
}

/* Asks again about chunks whose expected next use passed without a use. */
static void expire(lms_plan *p)
{
    while (p->expiry.n > 0 && p->expiry.a[0].next_use <= p->now) {
        lms_plan_chunk *c = p->expiry.a[0].c;
        delist(p, c);
        rekey(p, c);
        enlist(p, c);
    }
}

/* Makes c resident; false (c stays off the list) when the heaps cannot grow. */
static bool list(lms_plan *p, lms_plan_chunk *c)
{
    if (!heap_reserve(&p->victims, p->nresident + 1) || !heap_reserve(&p->expiry, p->nresident + 1))
        return false;
    c->resident = true;
    p->nresident++;
    rekey(p, c);
    enlist(p, c);
    return true;
}

void lms_plan_forget(lms_plan *p, lms_plan_chunk *c)
{
    if (c->resident) {
        delist(p, c);
        p->nresident--;
    }
    c->resident = false;
}

void lms_plan_dropped(lms_plan *p, const lms_plan_chunk *c)
{
    if (!c->fetched_n)
        return;   /* never fetched: it tells nothing of what a fetch serves */
    p->life_fetches += c->fetched_n;
    p->life_uses += c->used_n;
    if (p->life_fetches > CHURN_KEPT)
        p->life_fetches /= 2, p->life_uses /= 2;
}

/* Whether fetching into free room is not free: the room is not crowded
 * (every managed chunk fits), yet the chunks freed lately served fewer
 * than CHURN_USES uses per fetch (a program that allocates its buffers
 * afresh every step and uses each once). Such a fetch carries the link
 * once for one use, as reading in place would, but holds its launch
 * while a read in place may hide behind the kernel's compute: bench/
 * shapes `ragged` and `churn` at 1x with an L2 that holds a buffer's
 * re-reads (`--l2-mib 64`) fetched 518 MiB a step into free room, 1.49x
 * and 1.45x `none`'s step, read in place where the function's price
 * says so: 1.01x and 1.02x. Crowded, free room is rare and comes from
 * evictions, and the ways are timed (blindways.c). */
static bool churning(const lms_plan *p)
{
    return !p->crowded && p->life_fetches >= CHURN_MIN && p->life_uses < CHURN_USES * p->life_fetches;
}

void lms_plan_pin(lms_plan *p, lms_plan_chunk *c)
{
    if (c->pins++ == 0)
        delist(p, c);
}

/* Drops a pin taken without a use to record. */
static void unpin(lms_plan *p, lms_plan_chunk *c)
{
    if (c->pins > 0 && --c->pins == 0)
        enlist(p, c);
}

void lms_plan_used(lms_plan *p, lms_plan_chunk *c, uint64_t seq)
{
    if (seq > c->last_use) {
        c->last_use = seq;
        if (c->vpos > 0)   /* in the heap (not pinned): its slot's key follows, its place does not */
            p->victims.a[c->vpos - 1].last_use = seq;
    }
    if (c->pins > 0 && --c->pins == 0 && c->resident) {
        rekey(p, c);
        enlist(p, c);
    }
}

/* ---- decisions -------------------------------------------------------------- */

/* Whether the fetch that needs room, `bytes` in all (the whole batch being
 * brought), for a need `distance` launches ahead, takes the link longer
 * than the launch being planned computes (ops->hides): then whatever
 * holds it back shows in the step. Only for a need now or at the next
 * launch (one further ahead has launches to hide behind), not when acting
 * lean (on a saturated link every byte shows: Belady's order), and false
 * when the launch's duration is unknown. */
static bool outlasts_launch(const lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t bytes,
                            uint32_t distance)
{
    if (p->lean || (distance != LMS_DISTANCE_NOW && distance > 1))
        return false;
    uint64_t h = ops->hides ? ops->hides(ctx) : 0;
    return h > 0 && bytes > h;
}

/* Whether resident c may be in use by a kernel still running: the launch
 * of seq `busy` or a later one used it, or the latest launch on another
 * stream did (ops->busy). */
static bool in_use(const lms_plan_ops *ops, void *ctx, const lms_plan_chunk *c, uint64_t busy)
{
    return c->last_use >= busy || (ops->busy && ops->busy(ctx, c));
}

/* The victim to evict for a fetch of `bytes` for a need `distance`
 * launches ahead: the top of the victim heap, unless the last launch used
 * it (its eviction would wait for that kernel to end, and the fetch that
 * needs the room for the eviction) and one of the next six in the heap
 * (the top's children and grandchildren, which hold the second and third
 * farthest) was not used by it and is expected at least half as far ahead
 * (or never): the farthest of those. But when the fetch outlasts the
 * launch being planned (outlasts_launch), one last used IDLE_AFTER or
 * more launches ago first (the host runs ahead of the device: the kernel
 * of the launch before the last may not have ended either). Acting lean,
 * which plans after the launch (lms_plan_after), passes the top over only
 * when the launch just made uses it, and only for one expected at least
 * 0.9 as far ahead: a chunk needed sooner costs a fetch more later. A
 * chunk the latest launch on another stream used (ops->busy) counts as
 * used by the last launch: that kernel may still run too (an outside
 * tester's fixed cycle over 4 streams, 2x at the defaults: 1.08x `lru`'s
 * step with the same bytes, 1.00x with it). O(1):
 * six candidates, the launch's measured duration asked at most once.
 * (docs/ARCHITECTURE.md, "Which of them": the first that qualified in the
 * heap's array order, which is not the victim order, cost bench/shapes
 * train-eval at 1.5x 1.113x Belady's MIN's bytes, now 1.065x.) */
static lms_plan_chunk *pick_victim(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t bytes,
                                   uint32_t distance)
{
    lms_plan_chunk *top = p->victims.a[0].c;
    uint64_t busy = p->lean ? p->now : p->now - 1;   /* last uses whose kernels may still run */
    if (!in_use(ops, ctx, top, busy) || top->next_use == LMS_NEXT_UNKNOWN)
        return top;
    uint64_t far = top->next_use - p->now, near = p->lean ? far - far / 10 : far / 2;
    lms_plan_chunk *best = NULL;
    int hurried = -1;   /* outlasts_launch(), asked when two candidates differ in idleness */
    for (int i = 1; i < 7 && i < p->victims.n; i++) {
        lms_plan_chunk *c = p->victims.a[i].c;
        if (in_use(ops, ctx, c, busy) || (c->next_use != LMS_NEXT_UNKNOWN && c->next_use - p->now < near))
            continue;
        if (!best) {
            best = c;
            continue;
        }
        bool idle = p->now - c->last_use >= IDLE_AFTER, best_idle = p->now - best->last_use >= IDLE_AFTER;
        if (idle != best_idle) {
            if (hurried < 0)
                hurried = outlasts_launch(p, ops, ctx, bytes, distance);
            if (hurried) {
                if (idle)
                    best = c;
                continue;
            }
        }
        lms_plan_slot sc = slot_of(c), sb = slot_of(best);
        if (VICTIMS.above(&sc, &sb))
            best = c;
    }
    return best ? best : top;
}

/* Reserves `bytes`, evicting the policy's victims for a need `distance`
 * launches ahead. False when no victim qualifies. */
static bool make_room(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t bytes, uint32_t distance)
{
    while (!ops->reserve(ctx, bytes)) {
        expire(p);
        if (p->victims.n == 0)
            return false;
        lms_plan_chunk *c = pick_victim(p, ops, ctx, p->bringing > bytes ? p->bringing : bytes, distance);
        if (distance != LMS_DISTANCE_NOW && c->next_use != LMS_NEXT_UNKNOWN && c->next_use - p->now <= distance)
            return false;   /* everything resident is needed sooner than this */
        lms_plan_forget(p, c);
        ops->evict(ctx, c);
        if (p->requesting)
            c->took = 0;   /* evicted for the device's own request: it may take again (give_room) */
        p->pressed = p->now;
    }
    return true;
}

/* Fetches c into room already reserved for it; false when it failed. */
static bool fetch_into_room(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c, bool ahead)
{
    if (!ops->fetch(ctx, c, ahead))
        return false;
    if (!list(p, c)) {
        ops->evict(ctx, c);   /* cannot track it resident: send it back */
        return false;
    }
    if (c->fetched_n < UINT32_MAX)
        c->fetched_n++;
    c->gave_to = 0;   /* back on the device: no room of its own elsewhere (give_room) */
    c->losses = 0;
    return true;
}

/* Fetches batch[0..n) (pinned, not resident), chunk i needed dist[i]
 * launches ahead (dist NULL: now), one by one: each fetch waits only for
 * the evictions that made its room, so copies both ways overlap (making
 * room for all first measured slower). Ahead, it stops at the first chunk
 * it cannot bring. `already`: bytes fetched into free room for the same
 * needs just before (counted with the batch when asking whether the fetch
 * outlasts the launch: pick_victim). Returns how many it fetched. */
static int bring(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk **batch, int n, const uint32_t *dist,
                 bool ahead, uint64_t already)
{
    int done = 0;
    p->bringing = already;   /* the fetch the room is made for: the batch's needs now or at the next launch */
    for (int i = 0; i < n; i++)
        if (!dist || dist[i] <= 1)
            p->bringing += batch[i]->charge;
    for (int i = 0; i < n; i++) {
        if (make_room(p, ops, ctx, batch[i]->charge, dist ? dist[i] : LMS_DISTANCE_NOW) &&
            fetch_into_room(p, ops, ctx, batch[i], ahead)) {
            done++;
            continue;
        }
        if (!dist || dist[i] <= 1)
            p->bringing -= batch[i]->charge;   /* not fetched: not on the link */
        if (ahead)
            break;
    }
    p->bringing = 0;
    return done;
}

/* Grows the scratch arrays (memos, batch, priced: the planner's) to hold
 * n entries each; false when out of memory (each keeps what it held). */
static bool scratch(lms_plan *p, int n)
{
    size_t need = n > 0 ? (size_t)n : 0;
    return lms_grow((void **)&p->memos, &p->capmemos, need, sizeof *p->memos, 64) &&
           lms_grow((void **)&p->batch, &p->capbatch, need, sizeof *p->batch, 64) &&
           lms_grow((void **)&p->priced, &p->cappriced, need, sizeof *p->priced, 64);
}

/* The step's length the planner works with, in launches: the one the
 * policy confirmed by repetition when it is at least TRIAL_MIN launches
 * (*confirmed), else its period (0: none). A period inside a step (a
 * repeated training iteration) is shorter than the step. */
uint64_t lms_plan_step_length(const lms_plan *p, bool *confirmed)
{
    uint64_t period = p->policy->period ? p->policy->period(p->pstate) : 0;
    uint64_t step = period && p->policy->step ? p->policy->step(p->pstate) : 0;
    *confirmed = step >= TRIAL_MIN;
    return *confirmed ? step : period;
}

/* Whether acting deep reads c in place rather than fetching it for a need
 * `distance` launches ahead: c's last use was a whole step or more before
 * that need (the step the policy confirmed, else its period, of at least
 * TRIAL_MIN launches), so it is used once a step (an optimizer's moments).
 * Fetching such a chunk crosses the link as often as reading it where it
 * is, and holds room for a whole step or evicts a chunk needed again
 * sooner; reading it in place leaves the room to chunks used more often.
 * The timed steps keep acting deep only where that is faster, and time it
 * again fetching those chunks too where reading them in place made it far
 * slower than acting (trials.c, trial_next). Such a chunk is still fetched into
 * room that is free (fetch_free: nothing evicted for it). O(1). */
static bool once_a_step(const lms_plan *p, const lms_plan_chunk *c, uint32_t distance)
{
    if (p->mode != LMS_PLAN_DEEP || p->deep_all || !c->last_use)
        return false;
    bool confirmed;
    uint64_t step = lms_plan_step_length(p, &confirmed);
    return step >= TRIAL_MIN && p->now + distance - c->last_use >= step;
}

/* Whether a known price of reading in place is over `times` a fetch's
 * cost (`fetch`, known): over FAR_OVER, a chunk its kernel re-reads; over
 * MARGINAL, beyond the margin where prices go wrong (blind_choice). */
static bool over_fetches(double price, double fetch, double times)
{
    return price >= 0 && fetch > 0 && price > fetch * times;
}

/* Whether acting deep reads c in place as a chunk used once a step
 * (once_a_step), unless its latest known price in place was over FAR_OVER
 * fetches (c->reread: give_room, read_once_now): a kernel re-reads it (a
 * GEMM's weight in inference, once per tile row), and one pass over the
 * link to fetch it costs less than those passes. Without this, acting
 * deep chosen by the trials on steps of 6 layers read the weights of
 * deeper steps in place, 32 passes each, at every step (bench/shapes
 * `early-exit` seed 23 at 3x: 2.52x `lru`'s step). Not while the trials
 * run: acting deep's timed step reads such chunks in place, and that it
 * is far slower is what has it timed again fetching every chunk
 * (trials.c, trial_next); fetching them there, `deep` at 1.5x timed
 * acting deep only a little slower than acting and kept acting, 1.05x
 * in-memory against 1.00. O(1). */
static bool read_once(const lms_plan *p, const lms_plan_chunk *c, uint32_t distance)
{
    return (!(c->reread > 0) || p->trial == LMS_TRIAL_RUNNING) && once_a_step(p, c, distance);
}

/* What reading in place costs the launch being planned, in a trial of
 * reading in place, beyond fetching, known from prices learned on grids
 * of the launch's class (ops->class_price): the sum over its missing
 * chunks mine[0..m) priced over FAR_OVER fetches of (price - fetch) x
 * charge, ns; 0 when none is. O(m), only while such a trial runs, not in
 * the retry's rounds (trials.c, "Dear reads known"). */
static double trial_dear_ns(const lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk **mine, int m)
{
    if (p->mode != LMS_PLAN_INPLACE || p->trial_whole || !p->policy->on_demand || !ops->class_price ||
        !ops->fetch_cost)
        return 0;
    double fetch = ops->fetch_cost(ctx), ns = 0;
    for (int i = 0; i < m; i++) {
        lms_plan_chunk *c = mine[i];
        if (c->resident)
            continue;
        double price = ops->class_price(ctx, c);
        if (over_fetches(price, fetch, FAR_OVER))
            ns += (price - fetch) * (double)c->charge;
    }
    return ns;
}

/* The chunk holding the room c gave away: the chunk it gave it to, or
 * along the chain where that one gave it on (A to B, B to C: C); NULL when
 * the room is held by none of them (the last one was evicted for another
 * reason). Bounded by LMS_PLAN_DONORS hops. */
static lms_plan_chunk *holder(const lms_plan_ops *ops, void *ctx, const lms_plan_chunk *c)
{
    lms_plan_chunk *w = ops->lookup(ctx, c->gave_to - 1);
    for (int hop = 0; w && !w->resident && w->gave_to && hop < LMS_PLAN_DONORS; hop++)
        w = ops->lookup(ctx, w->gave_to - 1);
    return w && w->resident ? w : NULL;
}

/* Fetches c (not resident, not pinned) when the room has its charge free
 * without evicting anything, and nothing was evicted for room within the
 * last step: room free between evictions is room that chunks used more
 * often come back for within the step, and a chunk used once a step
 * fetched into it is evicted again for them, a fetch and an eviction a
 * step where reading it in place costs one pass. Nor one that gave its
 * room while a chunk holds that room (give_room: its launch hides its
 * reads); once none does, it may come back. False when it is not
 * fetched. */
static bool fetch_free(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c, bool ahead)
{
    bool confirmed;
    uint64_t step = lms_plan_step_length(p, &confirmed);
    if (c->gave_to && holder(ops, ctx, c))
        return false;   /* its room is held: its launch hides its reads (give_room) */
    if (p->pressed && p->now - p->pressed < step)
        return false;
    if (!ops->reserve(ctx, c->charge))
        return false;
    return fetch_into_room(p, ops, ctx, c, ahead);
}

/* Fetches ahead the chunks the policy expects, in order of need, within a
 * window of one budget (acting deep: those used once a step only into
 * free room); one record (ops->fetched) after them all. */
static void fetch_ahead(lms_plan *p, const lms_plan_ops *ops, void *ctx)
{
    if (!p->ahead && !(p->ahead = malloc(3 * AHEAD_MAX * sizeof *p->ahead)))
        return;
    uint32_t *ids = p->ahead, *dist = ids + AHEAD_MAX, *bdist = dist + AHEAD_MAX;
    int n = p->policy->ahead(p->pstate, ids, dist, AHEAD_MAX, p->mode == LMS_PLAN_DEEP ? AHEAD_DEEP : 1);
    if (n <= 0 || !scratch(p, n))
        return;
    uint64_t window = 0, budget = ops->budget(ctx), free_near = 0;
    int nb = 0, fetched_free = 0;
    for (int i = 0; i < n; i++) {
        lms_plan_chunk *c = ops->lookup(ctx, ids[i]);
        if (!c)
            continue;
        if (!c->resident && read_once(p, c, dist[i])) {
            if (c->pins == 0 && fetch_free(p, ops, ctx, c, true)) {
                fetched_free++;
                if (dist[i] <= 1)
                    free_near += c->charge;
            }
            continue;
        }
        window += c->charge;
        if (window > budget)
            break;   /* more than fits at once: the rest comes later */
        if (c->resident)
            continue;
        if (c->pins > 0)
            continue;   /* off the device and in use: read in place by a launch not yet recorded */
        if (p->lean && c->last_use >= p->now)
            continue;   /* read in place by the launch just made: as a pinned one before it */
        lms_plan_pin(p, c);   /* not a victim of its own batch's room-making */
        bdist[nb] = dist[i];
        p->batch[nb++] = c;
    }
    int fetched = bring(p, ops, ctx, p->batch, nb, bdist, true, free_near) + fetched_free;
    for (int i = 0; i < nb; i++)
        unpin(p, p->batch[i]);
    if (fetched && ops->fetched)
        ops->fetched(ctx, true);
}

/* ---- acting deep: the room among chunks used once a step ---------------------
 *
 * Acting deep reads a chunk used once a step where it is (once_a_step), so
 * which of them stay on the device is what the room held when the mode
 * began. A launch hides reads over the link up to what the link carries
 * while it computes (ops->hides); past that they show in its duration. So
 * a launch that reads nothing over the link beyond what it can hide, and
 * has a resident chunk used once a step that it could hide too, offers
 * that chunk (a donor); a launch measured slower for reading such a chunk
 * in place (a price above zero) takes the room of an offered chunk at
 * least as large: the offered one is evicted (its launch reads it over the
 * link from the next step on, hidden), the dear one fetched on demand,
 * once. On the transformer step's optimizer (one kernel per layer over a
 * weight, its gradient and two moments, each kernel hiding one moment's
 * read) this moves the room from layers whose two moments were resident
 * to layers that read both over the link. */

/* Offers chunk `id`, used by launch `seq` (the oldest offer gives way). */
static void offer(lms_plan *p, uint32_t id, uint64_t seq)
{
    int i;
    if (p->ndonors == LMS_PLAN_DONORS) {
        i = p->donor_head;
        p->donor_head = (p->donor_head + 1) % LMS_PLAN_DONORS;
    } else {
        i = (p->donor_head + p->ndonors++) % LMS_PLAN_DONORS;
    }
    p->donors[i] = (struct lms_plan_donor){.id = id, .seq = seq};
}

/* Takes the smallest offered chunk of at least `need` bytes, other than
 * `not`, that is still as it was offered (resident, not used since),
 * dropping the offers that are not (a pinned one stays offered); NULL
 * when none is.
 * O(LMS_PLAN_DONORS). */
static lms_plan_chunk *take(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t need,
                            const lms_plan_chunk *not)
{
    int n = p->ndonors, kept = 0, got_at = -1;
    lms_plan_chunk *got = NULL;
    struct lms_plan_donor keep[LMS_PLAN_DONORS];
    for (int k = 0; k < n; k++) {
        struct lms_plan_donor d = p->donors[(p->donor_head + k) % LMS_PLAN_DONORS];
        lms_plan_chunk *v = ops->lookup(ctx, d.id);
        if (!v || !v->resident || v->last_use != d.seq)
            continue;   /* gone, evicted, or used since: its launch's state is another */
        if (v != not && v->pins == 0 && v->charge >= need && (!got || v->charge < got->charge))
            got = v, got_at = kept;
        keep[kept++] = d;
    }
    int left = 0;
    for (int k = 0; k < kept; k++)
        if (k != got_at)
            p->donors[left++] = keep[k];
    p->donor_head = 0;
    p->ndonors = left;
    return got;
}

/* Brings c (pinned by the launch, not resident) in on demand after v was
 * evicted for it (v NULL: none), making what room is still missing from
 * the victims' order (v may be smaller than c). True when c was fetched. */
static bool swap_in(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk *v, lms_plan_chunk *c)
{
    if (v) {
        lms_plan_forget(p, v);
        ops->evict(ctx, v);
        p->pressed = p->now;   /* room made by evicting: not free room (fetch_free) */
    }
    if (!make_room(p, ops, ctx, c->charge, LMS_DISTANCE_NOW) || !fetch_into_room(p, ops, ctx, c, false))
        return false;
    if (ops->fetched)
        ops->fetched(ctx, false);
    return true;
}


/* A chunk of this launch (mine[0..m)) that gave its room away and that the
 * launch now reads in place at a measured cost above what the move saved
 * its taker (a launch that hides less than measured: a kernel re-reading
 * the chunk), on two launches in a row (one measurement may be noise),
 * takes its room back from the chunk holding it (holder) and is never
 * offered again. When that chunk is in use a moment (pinned by another
 * launch) it waits for its next launch; when none holds the room any
 * more, or this launch uses the holder, the room is made from the
 * victims' order. True when it moved (fetched or tried to). */
static bool take_back(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk **mine, int m)
{
    for (int i = 0; i < m; i++) {
        lms_plan_chunk *c = mine[i];
        if (c->resident || !c->gave_to)
            continue;
        double loss = ops->price(ctx, c) * (double)c->charge;
        if (!(loss > c->gave_gain)) {
            c->losses = 0;
            continue;
        }
        if (c->losses < 1) {
            c->losses++;
            continue;
        }
        lms_plan_chunk *w = holder(ops, ctx, c);
        if (w && w->pins > 0) {
            bool own = false;   /* pinned by this launch: it stays, the room is made elsewhere */
            for (int j = 0; j < m && !own; j++)
                own = mine[j] == w;
            if (!own)
                continue;
            w = NULL;
        }
        c->gave_to = 0;
        c->losses = 0;
        c->kept = true;
        swap_in(p, ops, ctx, w, c);
        return true;
    }
    return false;
}

/* give_room's decision (below): offers one chunk or takes one room. */
static void give_or_take(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk **mine, int m)
{
    uint64_t hides = ops->hides(ctx), remote = 0;
    if (!hides)
        return;
    for (int i = 0; i < m; i++)
        remote += mine[i]->resident ? 0 : mine[i]->charge;
    if (take_back(p, ops, ctx, mine, m))
        return;
    if (remote <= hides) {
        for (int i = 0; i < m; i++) {
            lms_plan_chunk *c = mine[i];
            if (c->resident && !c->kept && c->charge <= hides - remote && once_a_step(p, c, LMS_DISTANCE_NOW)) {
                offer(p, c->id, p->now);
                return;
            }
        }
        return;
    }
    for (int i = 0; i < m; i++) {
        lms_plan_chunk *c = mine[i];
        if (c->resident || c->took == p->deep_round + 1 || !(c->dear > 0) || p->now < c->no_take_until ||
            !once_a_step(p, c, LMS_DISTANCE_NOW))
            continue;   /* one that took and lost the room to a move takes no other this round */
        double price = ops->price(ctx, c);
        if (!(price > 0))
            continue;
        lms_plan_chunk *v = take(p, ops, ctx, c->charge, c->gave_to ? holder(ops, ctx, c) : NULL);
        if (!v)
            continue;   /* none for this one: another of the launch may have one */
        v->gave_to = c->id + 1;
        v->gave_gain = (float)((c->dear < price ? c->dear : price) * (double)c->charge);
        v->losses = 0;
        if (!swap_in(p, ops, ctx, v, c)) {
            v->gave_to = 0;   /* its room is free, not given */
            c->no_take_until = p->now + TAKE_BACKOFF * (p->now - c->last_use);
        } else {
            c->took = p->deep_round + 1;
        }
        return;
    }
}

/* Acting deep, after a launch's own fetches (mine[0..m), pinned): offers
 * one of its chunks used once a step, or takes an offered chunk's room for
 * one it read in place dearly at this launch and at its last (one
 * measurement may be noise; what the move saves is the lower of the two
 * prices); see above. A chunk takes once in a round of acting deep: one
 * that lost the room it took (to another move, or to a chunk used more
 * often: a demand in the victims' order) reads in place until the next
 * round, so that a room does not go round among chunks; one evicted for
 * the device's own request (lms_plan_make_room: an allocation) may take
 * again. A giver takes too, but not from the chunk holding its own room.
 * A chunk whose fetch failed in a take takes no room for TAKE_BACKOFF of
 * its steps (the donor's eviction was for nothing).
 * At most one of either per launch; then each chunk read in place
 * keeps its price for its next launch (`dear`). O(m + LMS_PLAN_DONORS). */
static void give_room(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk **mine, int m)
{
    if (p->mode != LMS_PLAN_DEEP || p->deep_all || !ops->hides || !ops->price) {
        for (int i = 0; i < m; i++)   /* launches in a row are those of acting deep */
            mine[i]->dear = 0, mine[i]->losses = 0;
        return;
    }
    give_or_take(p, ops, ctx, mine, m);
    double fetch = ops->fetch_cost ? ops->fetch_cost(ctx) : -1;
    for (int i = 0; i < m; i++) {
        lms_plan_chunk *c = mine[i];
        double price = c->resident ? 0 : ops->price(ctx, c);
        c->dear = price > 0 ? (float)price : 0;
        if (!c->resident && price >= 0)
            c->reread = over_fetches(price, fetch, FAR_OVER) ? (float)price : 0;
    }
}

/* How much a chunk should be fetched: its price when reading it in place
 * slowed the launch; an unknown price next (it may be dear); a price of
 * zero (its reads in place were hidden) last. */
static double rank_of(double price)
{
    return price > 0 ? price : price < 0 ? 0 : -1;
}

/* Dearer first, then the launch's order. */
static int by_price(const void *a, const void *b)
{
    const struct lms_plan_priced *x = a, *y = b;
    double rx = rank_of(x->price), ry = rank_of(y->price);
    if (rx != ry)
        return rx > ry ? -1 : 1;
    return x->order - y->order;
}

/* Chunk c's own price for the launch being planned (ops->price), or -1
 * when unknown; a zero counts as unknown when its function's fitted price
 * is above zero (`fn_price`) or the fit asks for a launch on the device
 * (`learn` > 0: it lost its line, a new phase): price.c keeps the lowest
 * price seen, and a read hidden by a compute that later fell kept reading
 * in place, 8 passes over the link.
 * An own price above zero and under a fetch's cost gives way to its
 * parameter position's (position_price) where the launches agree on one
 * over MARGINAL fetches and TURNED times it: the kernels read that
 * position otherwise now. An own price is the lowest of its signature's
 * phase, and a position's follows its latest launches: when a library
 * picks another tiling and the operand read once is the one re-read 16
 * times (bench/shapes `turned`), the positions turn within a few timed
 * launches while signatures sampled once in 8 launches keep own prices
 * 60 times too low (at 2x at the defaults, 1.42x the better of `none` and
 * `lru` over steps 13-42; 0.69x now; docs/PERFORMANCE.md, "Twenty-eighth
 * round"). Not a zero (a few pieces read in place hid under the compute,
 * where the position's price stands on whole chunks: bench/shapes
 * `inference` at 3x with 4x the compute fetched them, 0.21 -> 0.98x),
 * nor within 16 times (`experts`, whose position reads 2-8 times: 20
 * rows of seeds slower under `lookahead` where twice gave way). */
static double position_price(const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c);
static double own_price(const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c, double fn_price, int learn)
{
    double own = ops->price ? ops->price(ctx, c) : -1;
    if (own == 0 && (fn_price > 0 || learn > 0))
        return -1;
    double fetch = own > 0 && ops->fetch_cost ? ops->fetch_cost(ctx) : -1;
    if (fetch > 0 && own < fetch) {
        double pos = position_price(ops, ctx, c);
        if (pos > fetch * MARGINAL && pos > own * TURNED)
            return pos;
    }
    return own;
}

/* Chunk c's price learned for its parameter position (ops->role_price)
 * when the position's launches agree on it: their spread within half of
 * the price, or within half of what counts as hidden (1/HIDDEN_SHARE of
 * what a demand fetch holds a launch per byte), and c was used before;
 * else -1. A chunk no launch has used yet (just allocated) is mostly
 * written by its first: written in place, it is read over the link by
 * the kernels after it, which the writer's duration does not show (an
 * outside helper's temporary per layer, written by a GEMM and read once
 * by an elementwise kernel: 1.42x `lru`'s step under lookahead at 1.5x,
 * 1.31x at the defaults; 1.00 now). A position whose
 * chunk is re-read 16 times in some launches and read once in others
 * (which one, the grid or the data decides) has a mean that swings with
 * its latest launches: acting on it sent the dear operand back (an
 * outside tester's random pairs whose re-read operand is chosen per
 * launch, 1.10 -> 1.40x the best at 1.5x at the defaults). */
static double position_price(const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c)
{
    if (!c->last_use)
        return -1;
    double spread = 0, price = ops->role_price ? ops->role_price(ctx, c, &spread) : -1;
    if (price < 0)
        return -1;
    double fetch = ops->fetch_cost ? ops->fetch_cost(ctx) : -1;
    return lms_price_agrees(price, spread) || (fetch > 0 && spread <= fetch / (2 * HIDDEN_SHARE)) ? price : -1;
}

/* position_price, but a zero gives way while the function's fit asks
 * for a launch on the device (`learn` 1: it lost its line, a new phase),
 * as an own zero does (own_price). */
static double position_for(const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c, int learn)
{
    double pos = position_price(ops, ctx, c);
    return pos == 0 && learn == 1 ? -1 : pos;
}

/* Chunk c's price for the launch being planned with nothing to act on:
 * its own (own_price), else the one learned for its parameter position
 * (position_for: launches of random pairs of chunks never repeat a
 * signature, but each position of a kernel's parameters keeps its way
 * of reading), or -1. */
static double chunk_price(const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c, double fn_price, int learn)
{
    double own = own_price(ops, ctx, c, fn_price, learn);
    return own >= 0 ? own : position_for(ops, ctx, c, learn);
}

/* read_once for chunk c of the launch being planned, whose own price or
 * its parameter position's (chunk_price), where known, says whether it is
 * re-read: over FAR_OVER fetches, it is fetched and remembered so
 * (c->reread); under, the mark goes (a price that fell since). The
 * position's price covers a chunk not read in place yet at a position
 * whose other chunks were (the weights of the deeper layers of an
 * inference whose depth is drawn per step: `early-exit` seed 23 at 3x
 * read them all in place at the first deep step after acting deep was
 * chosen, 43 GiB over the link). While the trials run, only its price on
 * the launch's grid class says so (ops->class_price), and only outside
 * the retry's rounds (trials.c, "Dear reads known"): acting deep's timed
 * step reads the rest in place, which is how the trial learns that it
 * must be timed again fetching every chunk (trial_next). O(1). */
static bool read_once_now(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c)
{
    if (!once_a_step(p, c, LMS_DISTANCE_NOW))
        return false;
    if (p->trial == LMS_TRIAL_RUNNING)
        return p->trial_whole || !ops->class_price || !ops->fetch_cost ||
               !over_fetches(ops->class_price(ctx, c), ops->fetch_cost(ctx), FAR_OVER);
    double price = chunk_price(ops, ctx, c, -1, 0);
    if (price >= 0)
        c->reread = over_fetches(price, ops->fetch_cost ? ops->fetch_cost(ctx) : -1, FAR_OVER) ? (float)price : 0;
    return !(c->reread > 0);
}

/* What a launch decided with nothing to act on prices its chunks by
 * (chunk_price): its function's fitted price and what its fit asks; and
 * (blind_choice) what a function not fitted yet may expect, the lowest
 * and highest first prices of the latest functions fitted
 * (ops->fn_prior; `prior` false: unknown). */
typedef struct blind_prices {
    double fn_price;
    int learn;
    bool prior;
    double prior_lo, prior_hi;
    uint32_t seen;   /* the function's launches taught (ops->fn_seen), asked while its fit asks for one in place */
    int way;         /* the way measured for chunks no price decides (LMS_BWAY_*, blindways.c) ... */
    bool all;        /* ... or for every chunk (its trials; prices measured slower) ... */
    double dearer;   /* ... fetching: how much longer reading in place took per byte, less one */
    bool churn;      /* fetching into free room is not free (churning) */
    bool judging;    /* ... judged for every chunk (lms_plan_blind_judging) */
} blind_prices;

/* Chunk c's price for the launch being planned: with nothing to act on
 * (`bp`), chunk_price; acting (NULL), its own as learned (ops->price). */
static double price_for(const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c, const blind_prices *bp)
{
    return bp ? chunk_price(ops, ctx, c, bp->fn_price, bp->learn) : ops->price(ctx, c);
}

/* The chunk of this launch to read in place instead of fetching one whose
 * price is `want`: a resident one of mine[0..m) (pinned by this launch)
 * whose price (price_for, `bp`) is unknown (reading it in place once
 * tells it) or below half of `want` (the eviction and the fetch back cost
 * about what it saves), the cheapest; NULL when none qualifies or `want`
 * is unknown. O(m). */
static lms_plan_chunk *demotable(const lms_plan_ops *ops, void *ctx, lms_plan_chunk **mine, int m, double want,
                                 const blind_prices *bp)
{
    if (!(want > 0))
        return NULL;   /* unknown, or reading it in place costs nothing measurable */
    lms_plan_chunk *best = NULL;
    double best_price = 0;
    for (int i = 0; i < m; i++) {
        lms_plan_chunk *c = mine[i];
        if (!c->resident)
            continue;
        double pc = price_for(ops, ctx, c, bp);
        if (pc >= 0 && pc >= want / 2)
            continue;
        if (!best || pc < best_price)
            best = c, best_price = pc;
    }
    return best;
}

/* Whether a missing chunk of the launch, priced, is read in place rather
 * than fetched: reading it costs nothing, or less than a fetch holds the
 * launch. */
static bool in_place(const struct lms_plan_priced *pr, double fetch_cost)
{
    return pr->price >= 0 && (pr->price == 0 || pr->price < fetch_cost);
}

/* Whether a price of reading in place (ns per byte, known) says the reads
 * are hidden by the kernel's compute: zero, or under 1/HIDDEN_SHARE of
 * what a demand fetch holds a launch per byte (`fetch`, when known). */
static bool hidden(double price, double fetch)
{
    return price == 0 || (price > 0 && fetch > 0 && price < fetch / HIDDEN_SHARE);
}

/* The price a chunk without one of its own takes in a launch when acting
 * (bring_priced): the function's fitted price (`fn_price`) when it says
 * the function's reads in place are hidden, under 1/HIDDEN_SHARE of what
 * a demand fetch holds a launch per byte, and stands on a few launches
 * of each kind (a fit just after a new phase follows the launches that
 * marked it); else -1 (unknown: fetched). An
 * average over a function's launches mixes operands read once with
 * operands re-read many times, so only a function that hides its reads
 * in place lends its price (with any price it lent, bench/shapes
 * `train-eval` at 3x under lru at lmshim's defaults read re-read weights
 * in place: 6.63x in-memory against 3.52x). */
static double hidden_price(const lms_plan_ops *ops, void *ctx, int *learn)
{
    *learn = 0;
    double fn = ops->fn_price ? ops->fn_price(ctx, learn) : -1;
    double fetch = ops->fetch_cost ? ops->fetch_cost(ctx) : -1;
    return fn >= 0 && *learn == 0 && fetch > 0 && hidden(fn, fetch) ? fn : -1;
}

/* Whether the launch being planned, timed, would price its reads in
 * place: a base to measure its slowdown against is known
 * (ops->priceable), and the launches lately were all issued on its
 * stream (ops->alone). A chunk read in place on a price lent to it (its
 * function's: hidden_price) has none of its own for the launch's
 * signature; the launch is timed so that its own follows from this one.
 * Timing samples a signature once in 8 launches (timing.c): a launch once
 * a step went untimed for 4 steps while it read in place, on its
 * function's price of 0, chunks it re-read over the link (bench/shapes
 * `data-dependent` at 3x at the defaults, steps 28-31: 160-188 ms a step
 * against 92). Without a base the duration prices nothing, and timing
 * every such launch would cost two events each for nothing; beside other
 * streams' kernels the duration is not the launch's own (side by side it
 * shares the device, one at a time it queues behind them), and timing
 * more such launches moved tests/sim/mixed_parts `sizes` both ways (3x,
 * 3 streams side by side: 1.04 -> 1.21x the better of `none` and `lru`;
 * 8 streams one at a time: 1.26 -> 1.03; docs/PERFORMANCE.md,
 * "Twenty-fifth round"). */
static bool can_price(const lms_plan_ops *ops, void *ctx)
{
    return (!ops->alone || ops->alone(ctx)) && ops->priceable && ops->priceable(ctx);   /* the cheap test first */
}

/* On demand, what to weigh a resident chunk of the launch against when a
 * missing one priced `price` needs its room (demotable sends back one
 * priced under half of it): a chunk sent back is fetched again at its
 * next use, so the send-back saves what reading the missing one in place
 * costs over a fetch (`fetch`, per byte); -1 (nothing sent back) where
 * that is nothing or the fetch's cost is unknown. */
static double sent_back_for(double price, double fetch)
{
    return fetch > 0 && price > fetch ? price - fetch : -1;
}

/* Fetches the chunks p->priced[0..nb) (a launch's missing chunks with
 * their prices, dearest first) unless, acting, a chunk's price says it is
 * read in place (in_place; with nothing to act on, `bp`, blind_choice
 * already chose the chunks to fetch; on demand, `all`, every chunk is
 * fetched that the room can take); when the room is full of this
 * launch's chunks mine[0..m), one of them priced (price_for, `bp`) below
 * half of the one to fetch is sent back to be read in place (demotable).
 * `already`: as for bring(). Returns how many it fetched. */
static int bring_ranked(lms_plan *p, const lms_plan_ops *ops, void *ctx, int nb, lms_plan_chunk **mine, int m,
                        uint64_t already, const blind_prices *bp, bool all)
{
    const struct lms_plan_priced *pr = p->priced;
    int done = 0;
    double fetch_cost = ops->fetch_cost ? ops->fetch_cost(ctx) : -1;
    p->bringing = already;   /* the fetch the room is made for: the chunks fetched, not read in place (pick_victim) */
    for (int i = 0; i < nb; i++)
        if (bp || all || !in_place(&pr[i], fetch_cost))
            p->bringing += pr[i].c->charge;
    for (int i = 0; i < nb; i++) {
        lms_plan_chunk *c = pr[i].c;
        if (!bp && !all && in_place(&pr[i], fetch_cost))
            continue;   /* reading it in place costs less than fetching it now */
        for (;;) {
            if (make_room(p, ops, ctx, c->charge, LMS_DISTANCE_NOW)) {
                if (fetch_into_room(p, ops, ctx, c, false))
                    done++;
                else
                    p->bringing -= c->charge;   /* refused: not on the link */
                break;
            }
            double want = all ? sent_back_for(pr[i].price, fetch_cost) : pr[i].price;
            lms_plan_chunk *v = demotable(ops, ctx, mine, m, want, bp);
            if (!v) {
                p->bringing -= c->charge;
                break;   /* it is read in place */
            }
            lms_plan_forget(p, v);
            ops->evict(ctx, v);
        }
    }
    p->bringing = 0;
    return done;
}

/* Whether the chunks mine[0..m) of a launch fit the room for managed
 * chunks together (`budget`): else no launch of it runs with all of them
 * on the device. O(m), asked once per launch decided with nothing to act
 * on whose function's fit asks for such a launch, and on demand once per
 * launch with a chunk missing (bring_demand). */
static bool fits_whole(lms_plan_chunk *const *mine, int m, uint64_t budget)
{
    uint64_t total = 0;
    for (int i = 0; i < m && total <= budget; i++)
        total += mine[i]->charge;
    return total <= budget;
}

/* On demand (the trials' mode in LRU order): fetches every missing chunk
 * batch[0..nb) of a launch whose chunks are mine[0..m), prices aside, in
 * the launch's order (bring()). But when its chunks do not fit the room
 * for managed chunks together (ops->room), what it cannot hold is read
 * in place either way: then they go dearest first by their own prices
 * (own_price), and a resident one is sent back for a missing one where
 * that saves more than fetching it back costs (sent_back_for;
 * bring_ranked), as acting chooses. Without that, the launch's own
 * resident chunks held the room whatever they cost, and the missing
 * ones past it were read in place whatever they cost: an outside
 * helper's layers with a sequence length drawn per step, at 3x at the
 * defaults, read a weight re-read 40 times in place beside its input
 * and output, read once and resident (seed 4: 490 ms a step; ranked
 * without sending back, 440; both, 266; `lru`, which acts on prices,
 * 256). Sending back a chunk priced under half of the missing one
 * (acting's rule), bench/shapes `train-eval` at 3x with twice the
 * compute read 6.8 GiB a step in place in 326 ms, against 3.9 GiB and
 * 265 ms in the launch's order; 5.7 GiB and 302 ms now (docs/PERFORMANCE.md,
 * "Thirtieth round"). O(m) to ask whether they fit, O(nb log nb) when
 * they do not. `already`: as for bring(). Returns how many it fetched. */
static int bring_demand(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk **batch, int nb,
                        lms_plan_chunk **mine, int m, uint64_t already)
{
    if (!ops->price || !ops->room || fits_whole(mine, m, ops->room(ctx)))
        return bring(p, ops, ctx, batch, nb, NULL, false, already);
    struct lms_plan_priced *pr = p->priced;
    for (int i = 0; i < nb; i++)
        pr[i] = (struct lms_plan_priced){.c = batch[i], .price = own_price(ops, ctx, batch[i], -1, 0), .order = i};
    qsort(pr, (size_t)nb, sizeof *pr, by_price);
    return bring_ranked(p, ops, ctx, nb, mine, m, already, NULL, true);
}

/* Fetches the missing chunks batch[0..nb) of a launch whose chunks are
 * mine[0..m), dearest to read in place first, when their prices are
 * known (a chunk without a price of its own takes hidden_price(); read
 * in place on it, the launch is timed: can_price). A
 * chunk whose price is zero, or under what a demand fetch was measured to
 * hold a launch per byte, is read in place. When the room is
 * full of this launch's own chunks, a cheaper one of them is sent back and
 * read in place so that a dearer one is fetched (what one launch cannot
 * hold is read where it is, and its measured durations say which of its
 * chunks that should be). Without prices: in the launch's order, as
 * bring(). `already`: as for bring(). Returns how many it fetched. */
static int bring_priced(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk **batch, int nb,
                        lms_plan_chunk **mine, int m, uint64_t already)
{
    if (p->mode == LMS_PLAN_DEMAND)
        return bring_demand(p, ops, ctx, batch, nb, mine, m, already);
    if (!ops->price)
        return bring(p, ops, ctx, batch, nb, NULL, false, already);
    struct lms_plan_priced *pr = p->priced;
    bool known = false;
    int learn;
    double hidden = hidden_price(ops, ctx, &learn);
    if (learn > 0)
        p->explore = true;   /* its chunks fetched (none priced by the fit): the launch the fit asks for, timed */
    for (int i = 0; i < nb; i++) {
        double own = own_price(ops, ctx, batch[i], -1, learn);
        pr[i] = (struct lms_plan_priced){.c = batch[i], .price = own >= 0 ? own : hidden, .order = i};
        known |= pr[i].price >= 0;
        if (own < 0 && hidden >= 0 && !p->explore && can_price(ops, ctx))
            p->explore = true;   /* read in place on a lent price: timed, so that its own follows (asked once) */
    }
    if (!known)
        return bring(p, ops, ctx, batch, nb, NULL, false, already);
    qsort(pr, (size_t)nb, sizeof *pr, by_price);
    return bring_ranked(p, ops, ctx, nb, mine, m, already, NULL, false);
}

/* Whether the policy has nothing to act on: its doubt held long, so it
 * names no future and each use of a chunk is as likely as any other. */
static bool blind(const lms_plan *p)
{
    return p->policy->guessing && !p->policy->guessing(p->pstate);
}

/* Whether the latest functions fitted were all dearer to read in place
 * than a fetch (`fetch`, ns per byte) on their first prices. */
static bool prior_dear(const blind_prices *bp, double fetch)
{
    return bp->prior && fetch > 0 && bp->prior_lo >= fetch;
}

/* What the rules of blind_choice do with a chunk that no price or ask
 * decides (see there), LMS_BWAY_FETCH or _INPLACE: fetched where the
 * latest functions fitted were all dearer in place than a fetch,
 * read in place where all were hidden, else fetched when
 * the room holds at least a quarter of the managed bytes. */
static int rules_way(const lms_plan_ops *ops, void *ctx, const blind_prices *bp, double fetch)
{
    if (prior_dear(bp, fetch))
        return LMS_BWAY_FETCH;
    if (bp->prior && hidden(bp->prior_hi, fetch))
        return LMS_BWAY_INPLACE;
    return !ops->room || !ops->managed || ops->room(ctx) >= ops->managed(ctx) / 4 ? LMS_BWAY_FETCH : LMS_BWAY_INPLACE;
}

/* With nothing to act on, what to do with missing chunk c of the launch
 * being planned: BLIND_INPLACE (read it where it is), BLIND_FREE (fetch it
 * into free room, which this reserved for it) or BLIND_FETCH (fetch it,
 * evicting for room). Its price
 * is its own for this launch, else the one learned for its parameter
 * position, else its function's fitted price (`fn_price`, fnprice.h:
 * chunks new every step and launches that never repeat have no price of
 * their own; an own zero may not count: chunk_price). A chunk whose reads in place are
 * hidden (price under 1/HIDDEN_SHARE of what a demand fetch holds a
 * launch per byte) is read in place. Else one that fits in free room is
 * fetched there: the link once, and every later use finds it (unless
 * the chunks freed lately had about one use per fetch, `bp->churn`
 * (churning), and this is c's first use: then it is decided as below,
 * its room left free; a chunk used before is fetched, so that one kept
 * for many uses beside chunks made afresh pays one read in place at
 * most). Else a
 * fetch costs the link once and evicts a chunk as likely to be needed as
 * c, while reading in place costs the launch what it was measured to,
 * once per pass the kernel makes: the price against the fetch's. With no
 * price: while the function's fit lacks one kind of launch, that kind,
 * so that it can be fitted. What a function not fitted yet may expect is
 * the first prices of the latest functions fitted (bp->prior_lo, _hi;
 * each function counted once: a price pooled over launches is the
 * frequent functions': on an outside tester's program one hot function
 * re-reading its operands priced the pool dear beside thousands of cold
 * ones free to read in place, and fetching theirs cost 1.6x the better of
 * `none` and `lru`). Where every one of those came out dearer to read in place
 * than a fetch, a launch reading in place to teach a fit is made only
 * for a function taught as many launches as that launch could repay: at
 * about one chance in PRIOR_ODDS of finding it cheap, each of as many
 * later launches as it had saves a fetch, against what reading in place
 * costs over a fetch; and a chunk no price or ask decides is fetched
 * (an outside helper's 3,000 kernels drawn at random, each re-reading its
 * operand 8 times, at 2x at the defaults: read in place by the room's
 * share below and at each function's second launch, 1.56x `lru`'s step
 * over 18 steps, 1.30x over 60, 1.10x over 200; 1.00 now). Where every
 * one was hidden, it is read in place. Else a fetch when the room holds at least a
 * quarter of the managed bytes (measured on bench/shapes `random`, one
 * pass per operand: lru beats reading in place at 1/2 and 1/3 and loses
 * at 1/5 and below). Those three are the rules (rules_way); once the two
 * ways were timed over windows of launches (blindways.c, `bp->way`),
 * the faster decides instead, and fetching chosen, an ask for a read in
 * place waits as it does after dear first prices. Where the way was
 * judged faster for every chunk than prices deciding (bp->all), it
 * decides every chunk. *against says whether a price decided c against
 * the way (or the rules) on a margin, within MARGINAL of a fetch's cost
 * (LMS_BWAY_FETCH: fetched where the way reads in place; _INPLACE: the
 * other way round; else _RULES): blindways.c counts those, to judge the
 * way for every chunk against prices deciding. A price that reads in
 * place counts down to MARGINAL_READ under a fetch's cost: with kernels
 * of several streams one at a time, a fetch overlaps the others'
 * compute while a read in place holds them all, so the prices' margin
 * over what a demand fetch holds its own launch overstates reading in
 * place (tests/sim/mixed_parts `sizes` at 3x on 8 streams one at a time,
 * LMS_FRAC=0.5: prices at a quarter to a half of a fetch, and fetching
 * every chunk never judged: seed 1 1.57x `lru`'s step, 1.16x now; seed 0
 * 1.31x, 1.02x now). */
enum { BLIND_INPLACE, BLIND_FREE, BLIND_FETCH };

/* The price blind_choice decides chunk c by (-1: none): its own, else its
 * parameter position's where that says hidden or dearer than a fetch
 * (`fetch`), else its function's (bp->fn_price; *lent, when not NULL,
 * says so). Between, the function's decides, as before positions: a
 * fetch serves every later use of the chunk while it stays, and a
 * position priced a little under a fetch read in place at every use a
 * chunk used three times a step (an outside tester's, 0.99 -> 1.42x
 * `lru`'s step under lookahead at 2x). */
static double blind_price(const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c, const blind_prices *bp,
                          double fetch, bool *lent)
{
    if (lent)
        *lent = false;
    double price = own_price(ops, ctx, c, bp->fn_price, bp->learn);
    if (price >= 0)
        return price;
    double pos = position_for(ops, ctx, c, bp->learn);
    if (pos >= 0 && (hidden(pos, fetch) || (fetch > 0 && pos >= fetch)))
        return pos;
    if (lent)
        *lent = bp->fn_price >= 0;
    return bp->fn_price;
}

/* Keeps a chunk's staleness `stale` (1 + its `checked`) among those
 * waiting for time_read's gate: the stalest in p->waiting, the next in
 * p->waiting2 (0: none). */
static void keep_waiting(lms_plan *p, uint64_t stale)
{
    if (!p->waiting || stale < p->waiting) {
        if (p->waiting && (!p->waiting2 || p->waiting < p->waiting2))
            p->waiting2 = p->waiting;
        p->waiting = stale;
    } else if (stale > p->waiting && (!p->waiting2 || stale < p->waiting2)) {
        p->waiting2 = stale;
    }
}

/* With nothing to act on, chunk c is read in place on its function's
 * price (`lent`: blind_price found none of its own and none of its
 * position's that decides): where its parameter position has no price
 * learned at all, the launch is timed whatever the sampling (p->explore),
 * when its duration would price it (can_price), so that the position
 * gets one. A function's price is its launches' average: beside
 * an operand read once, one re-read 16 times that no timed launch had
 * read in place took the function's price of the other (random pairs,
 * bench/shapes `operands` at 1.25x at the defaults: of 16 launches a
 * step, once their signatures were timed 4 times, those at two places
 * of it are sampled (timing.c); the re-read operand was read in place at
 * 32 ms a launch by 7 launches in three steps, none of them sampled, and
 * its position stayed unpriced: 1.81x `lru`'s step, 0.91 now). Not where
 * the position has a price, however spread (its launches disagree):
 * timing those too moved tests/sim/mixed_parts `sizes` both ways, up to
 * 1.07 -> 1.29x the better of `none` and `lru` (docs/PERFORMANCE.md,
 * "Twenty-fifth round").
 * Read in place on a price of its own (or its position's), the launch is
 * timed too, at most once in RECHECK launches for the chunk and once in
 * RECHECK_ANY for any: a price of its own is its signature's lowest in
 * the phase, and sampled once in 8 launches, a signature seen seldom may
 * keep one from before its kernel turned for good. When the operand read
 * once became the one re-read 16 times (bench/shapes `turned`, seed 6,
 * 1.5x, LMS_FRAC=0.5), one chunk's price of 0.0043 ns a byte, under a
 * quarter of a fetch's, read it in place at 6 of the 30 steps measured, 2
 * GiB or more over the link each time, none of them sampled: 1.14x
 * `lru`'s step. Timed, the first such launch priced it on the launch's
 * grid class (asked before the signature's own: price.c) at 0.28, 15
 * fetches, and it was fetched from then on: 1.02. Over 30 seeds at 1.5x,
 * 2x and 3x at LMS_FRAC=0.5 (docs/PERFORMANCE.md, "Thirty-seventh
 * round"), `flipped` went from 16 cells over 1.02x the better of `none`
 * and `lru` to 2, `turned` from 44 to 42, `operands` and `random` none
 * either way. */
static void time_read(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c, bool lent)
{
    double spread;
    if (!can_price(ops, ctx))
        return;
    if (lent) {
        if (!p->explore && (!ops->role_price || ops->role_price(ctx, c, &spread) < 0))
            p->explore = true;
        return;
    }
    /* On its own price (see above). A launch timed already (another
     * chunk's check) checks it too. Kept waiting by the gate (a check in
     * the last RECHECK_ANY launches), the stalest chunk goes first when it
     * opens; one turned away for a staler one waits too; after
     * RECHECK_DEFER chunks turned away (its waiter fetched since, or
     * freed) the next stalest is waited for. A chunk never checked is the
     * stalest of all: a stream of chunks each read once would take the
     * checks (counting one first seen as checked RECHECK launches ago
     * gave `flipped` at 3x, LMS_FRAC=0.5, 3 cells over 1.02 of 30, not 1). */
    if (p->now - c->checked < RECHECK)
        return;
    uint64_t stale = c->checked + 1;
    if (p->explore || (p->now >= p->recheck_at && (!p->waiting || stale <= p->waiting))) {
        if (stale == p->waiting)
            p->waiting = p->waiting2, p->waiting2 = 0;   /* the stalest, or as stale */
        if (!p->explore)
            p->deferred = 0, p->recheck_at = p->now + RECHECK_ANY;
        p->explore = true;   /* timed already (another chunk's check), or by this one */
        c->checked = p->now;
        return;
    }
    keep_waiting(p, stale);
    if (p->now >= p->recheck_at && ++p->deferred >= RECHECK_DEFER)   /* turned away for a staler one */
        p->waiting = p->waiting2, p->waiting2 = 0, p->deferred = 0;
}

static int blind_choice(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk *c, const blind_prices *bp,
                        int *against)
{
    *against = LMS_BWAY_RULES;
    if (bp->all && bp->way != LMS_BWAY_RULES) {
        /* The way decides every chunk. A judging of reading every chunk in
         * place (bp->judging) still fetches a chunk priced over MARGINAL
         * fetches, beyond the margin where prices go wrong: one that read
         * every chunk in place read operands re-read 16 times a launch over
         * the link (bench/shapes `operands`, seed 24, 2x: `lookahead` 2.22x
         * `lru`'s step while such a judging ran; 1.06x now). Chosen for
         * every chunk, reading in place fetches only a chunk priced over
         * FAR_OVER fetches. Where it is chosen on kernels of several streams
         * side by side, prices over twice a fetch's include the other
         * streams' reads over the shared link; fetching such chunks there
         * too did worse (tests/sim/fitted_streams `random`, seeds 0-3: worst
         * cell 1.232x the better of `none` and `lru`, 1.157 before and with
         * the judging alone; docs/PERFORMANCE.md, "Twenty-third round", has
         * the cells the judging alone moved both ways; over 8 fetches moves
         * none of them). Fetching none there chose a way other than the one
         * judged: a judging of reading in place won while it fetched the
         * operands re-read 16 times (priced at 15 fetches), and the way
         * chosen after it read them in place for the 10 steps until two
         * windows were slower (bench/shapes `operands`, seed 21, 2x,
         * LMS_FRAC=0.5, steps 28-37: 350-600 ms a step against `lru`'s 85,
         * 17-31 GiB over the link; "Twenty-eighth round"). Fetching every
         * chunk still overrides low prices: with kernels of several streams
         * one at a time, a read in place holds them all, which a low price
         * does not show (mixed_parts `sizes` at 3x on 8 streams,
         * LMS_FRAC=0.5: 1.02 -> 1.35x where it did not). */
        if (ops->reserve(ctx, c->charge))
            return BLIND_FREE;
        if (bp->way == LMS_BWAY_FETCH)
            return BLIND_FETCH;
        double fetch = ops->fetch_cost ? ops->fetch_cost(ctx) : -1;
        double price = blind_price(ops, ctx, c, bp, fetch, NULL);
        bool far = bp->judging || over_fetches(price, fetch, FAR_OVER);
        return far && over_fetches(price, fetch, MARGINAL) ? BLIND_FETCH : BLIND_INPLACE;
    }
    int learn = bp->learn;
    double fetch = ops->fetch_cost ? ops->fetch_cost(ctx) : -1;
    bool lent;
    double price = blind_price(ops, ctx, c, bp, fetch, &lent);
    if (hidden(price, fetch)) {
        time_read(p, ops, ctx, c, lent);
        return BLIND_INPLACE;
    }
    if (!(bp->churn && c->used_n <= 1) && ops->reserve(ctx, c->charge))
        return BLIND_FREE;   /* its room is reserved: the caller fetches it there */
    if (price >= 0) {
        int d = in_place(&(struct lms_plan_priced){.c = c, .price = price}, fetch) ? BLIND_INPLACE : BLIND_FETCH;
        if (price >= fetch / (d == BLIND_INPLACE ? MARGINAL_READ : MARGINAL) && price <= fetch * MARGINAL) {
            int way = bp->way != LMS_BWAY_RULES ? bp->way : rules_way(ops, ctx, bp, fetch);
            if ((d == BLIND_FETCH) != (way == LMS_BWAY_FETCH))
                *against = d == BLIND_FETCH ? LMS_BWAY_FETCH : LMS_BWAY_INPLACE;
        }
        if (d == BLIND_INPLACE)
            time_read(p, ops, ctx, c, lent);
        return d;
    }
    bool dear = prior_dear(bp, fetch);
    double dearer = dear ? bp->prior_lo / fetch - 1 : 0;   /* reading in place over a fetch, less one */
    if (bp->way == LMS_BWAY_FETCH && bp->dearer > dearer)
        dearer = bp->dearer;
    if (learn < 0 && (dear || bp->way == LMS_BWAY_FETCH) && bp->seen < PRIOR_ODDS * dearer)
        learn = 0;   /* reading in place was dearer (the latest functions fitted, or measured), and it may not come back */
    if (learn) {
        p->explore = true;   /* made to teach the fit: wasted unless timed */
        return learn > 0 ? BLIND_FETCH : BLIND_INPLACE;
    }
    int way = bp->way != LMS_BWAY_RULES ? bp->way : rules_way(ops, ctx, bp, fetch);
    return way == LMS_BWAY_FETCH ? BLIND_FETCH : BLIND_INPLACE;
}

/* Fetches the missing chunks batch[0..nb) that a launch decided with
 * nothing to act on fetches (blind_choice), dearest to read in place
 * first by their prices (chunk_price, with `bp`), unknown ones next, the
 * launch's order within each; when the room is full of the launch's own
 * chunks mine[0..m), one priced below half of the one to fetch is read
 * in place instead (demotable). What the room cannot hold is read in
 * place, and which chunks those are should follow their prices, not
 * their addresses (an outside tester's launches of one operand re-read
 * 16 times and one read once, in random pairs of 256 MiB chunks beside a
 * room of one: 1.59x `lru`'s step at 3x at the defaults when the address
 * order decided). Without a price: in the launch's order, as bring().
 * `already`: as for bring(). O(nb log nb). Returns how many it fetched. */
static int bring_blind(lms_plan *p, const lms_plan_ops *ops, void *ctx, lms_plan_chunk **batch, int nb,
                       lms_plan_chunk **mine, int m, uint64_t already, const blind_prices *bp)
{
    struct lms_plan_priced *pr = p->priced;
    bool known = false;
    for (int i = 0; ops->price && i < nb; i++) {
        pr[i] = (struct lms_plan_priced){.c = batch[i], .price = chunk_price(ops, ctx, batch[i], bp->fn_price, bp->learn),
                                         .order = i};
        known |= pr[i].price >= 0;
    }
    if (!known)
        return bring(p, ops, ctx, batch, nb, NULL, false, already);
    qsort(pr, (size_t)nb, sizeof *pr, by_price);
    return bring_ranked(p, ops, ctx, nb, mine, m, already, bp, false);
}

/* Puts the planner in mode m: the victim order follows (LRU order on
 * demand: every resident chunk is asked again, O(n log n) per switch). */
void lms_plan_set_mode(lms_plan *p, int m)
{
    bool order_changes = (m == LMS_PLAN_DEMAND) != (p->mode == LMS_PLAN_DEMAND);
    if (m == LMS_PLAN_DEEP && p->mode != LMS_PLAN_DEEP)
        p->deep_round++;   /* a new round of acting deep: every chunk may take once in it */
    p->mode = m;
    p->lean = false;   /* acting lean is chosen after the mode (trials.c) */
    if (!order_changes || !scratch(p, p->victims.n))
        return;
    int n = 0;
    for (int i = 0; i < p->victims.n; i++)   /* gather first: rekeying reorders the heap */
        p->batch[n++] = p->victims.a[i].c;
    for (int i = 0; i < n; i++) {
        delist(p, p->batch[i]);
        rekey(p, p->batch[i]);
        enlist(p, p->batch[i]);
    }
}

void lms_plan_launch(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t seq, uintptr_t fn,
                     const uint32_t *ids, int n, lms_plan_chunk **mine, int m)
{
    if (seq > p->now)
        p->now = seq;
    p->explore = false;
    if (!scratch(p, n > m ? n : m))
        return;   /* no memory for decisions: the launch runs as things are */
    if (p->policy->observe) {
        for (int i = 0; i < n; i++) {
            lms_plan_chunk *c = ops->lookup(ctx, ids[i]);
            p->memos[i] = c ? &c->memo : NULL;
        }
        p->policy->observe(p->pstate, seq, fn, ids, p->memos, n);
    }
    if (p->policy->epoch && p->policy->epoch(p->pstate) != p->epoch && scratch(p, p->victims.n)) {
        p->epoch = p->policy->epoch(p->pstate);
        reguess(p);
    }
    lms_plan_trial_launch(p, ops, ctx, seq);
    if (p->trial == LMS_TRIAL_RUNNING) {
        double dear = trial_dear_ns(p, ops, ctx, mine, m);
        if (dear > 0)
            lms_plan_trial_dear(p, ops, ctx, dear);
    }
    if (p->trial == LMS_TRIAL_RUNNING && ops->hides) {
        uint64_t h = ops->hides(ctx);
        p->hidden_bytes += h;
        p->hides_asked++;
        p->hides_known += h > 0;
    }
    if (p->trial == LMS_TRIAL_RUNNING && ops->blocks) {
        uint64_t b = ops->blocks(ctx);
        p->grid_blocks += b < UINT32_MAX ? b : UINT32_MAX;   /* a window's sum stays far from wrapping */
    }
    if (p->policy->on_demand) {
        /* A resident chunk is waited for (its fetch may still be under
         * way on another stream) whether or not the missing ones are
         * fetched. */
        bool fetch = p->mode != LMS_PLAN_INPLACE, unsure = fetch && blind(p), asked = false;
        /* The ways are timed only while the managed chunks do not all
         * fit the room (else nothing is ever decided), asked every 64
         * launches: the fast path records no point and asks nothing. */
        if (unsure && seq >= p->crowd_at) {
            p->crowded = p->pressed || !ops->room || !ops->managed || ops->managed(ctx) > ops->room(ctx);
            p->crowd_at = seq + 64;
        }
        if (unsure && p->crowded) {
            uint64_t bytes = 0, missing = 0;
            for (int i = 0; i < m; i++) {
                bytes += mine[i]->charge;
                missing += mine[i]->resident ? 0 : mine[i]->charge;
            }
            lms_plan_blind_launch(p, ops, ctx, true, bytes, missing);
        } else if (p->blind.stage) {
            lms_plan_blind_launch(p, ops, ctx, false, 0, 0);
        }
        blind_prices bp = {.fn_price = -1, .judging = lms_plan_blind_judging(&p->blind), .way = p->blind.way, .all = p->blind.all, .dearer = p->blind.dearer,
                           .churn = unsure && churning(p)};   /* the rest asked at the first missing chunk (unsure) */
        int nb = 0;
        uint64_t free_now = 0;   /* bytes fetched into free room for this launch */
        uint64_t budget = ops->budget(ctx);
        for (int i = 0; i < m; i++) {
            lms_plan_chunk *c = mine[i];
            if (c->used_n < UINT32_MAX)
                c->used_n++;   /* what its fetches served (lms_plan_dropped) */
            if (c->resident) {
                if (ops->wait_ready)
                    ops->wait_ready(ctx, c);
            } else if (fetch && c->charge <= budget) {
                if (unsure) {
                    if (!asked) {
                        if (ops->fn_price)
                            bp.fn_price = ops->fn_price(ctx, &bp.learn);
                        /* A fit on few launches of a function seen
                         * seldom, where fetching was timed faster, gives
                         * way to the ways (as an ask to read in place
                         * would: blind_choice): its first prices may be
                         * of kernels that changed since (passes 1 -> 8,
                         * the compute unchanged: a price of zero read
                         * in place at 8x the compute). */
                        if (bp.learn == 2 && bp.way == LMS_BWAY_FETCH && ops->fn_seen &&
                            ops->fn_seen(ctx) < PRIOR_ODDS * bp.dearer)
                            bp.fn_price = -1, bp.learn = 0;
                        if (bp.learn > 0 && !fits_whole(mine, m, budget))
                            bp.learn = 0;   /* a launch on the device cannot be made: fetches would teach nothing */
                        bp.prior = ops->fn_prior && ops->fn_prior(ctx, &bp.prior_lo, &bp.prior_hi);
                        bp.seen = bp.learn < 0 && (bp.prior || bp.way == LMS_BWAY_FETCH) && ops->fn_seen ? ops->fn_seen(ctx)
                                                                                           : UINT32_MAX;
                    }
                    asked = true;
                    int against;
                    int d = blind_choice(p, ops, ctx, c, &bp, &against);
                    lms_plan_blind_decided(p, against);
                    if (d == BLIND_FETCH)
                        p->batch[nb++] = c;
                    else if (d == BLIND_FREE && fetch_into_room(p, ops, ctx, c, false))
                        free_now += c->charge;
                } else if (!read_once_now(p, ops, ctx, c)) {
                    p->batch[nb++] = c;
                } else {
                    /* Read in place, or fetched on demand only because its
                     * room was free: either way not fetched ahead as
                     * acting deep fetching every chunk would (trial_next). */
                    p->trial_once = true;
                    if (fetch_free(p, ops, ctx, c, false))
                        free_now += c->charge;
                }
            }
        }
        int got = nb == 0 ? 0
                  : unsure ? bring_blind(p, ops, ctx, p->batch, nb, mine, m, free_now, &bp)
                           : bring_priced(p, ops, ctx, p->batch, nb, mine, m, free_now);
        if ((got > 0 || free_now > 0) && ops->fetched)
            ops->fetched(ctx, false);
    }
    if (p->policy->on_demand)
        give_room(p, ops, ctx, mine, m);
    if (!p->lean && p->policy->ahead && (p->mode == LMS_PLAN_ACT || p->mode == LMS_PLAN_DEEP))
        fetch_ahead(p, ops, ctx);
}

bool lms_plan_pointing(const lms_plan *p)
{
    return p->trial == LMS_TRIAL_RUNNING || p->blind.cur.pts[0] != 0;   /* no stage: no window */
}

void lms_plan_after(lms_plan *p, const lms_plan_ops *ops, void *ctx)
{
    if (p->lean && p->mode == LMS_PLAN_ACT && p->policy->ahead)
        fetch_ahead(p, ops, ctx);
}

bool lms_plan_make_room(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t bytes)
{
    p->requesting = true;
    bool ok = make_room(p, ops, ctx, bytes, LMS_DISTANCE_NOW);
    p->requesting = false;
    return ok;
}
