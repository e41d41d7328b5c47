/*
 * bound.c — the offline bound that allows reading in place (see replay.h,
 * lms_replay_bound; the model and why it is a bound: docs/ARCHITECTURE.md,
 * "The offline bound with reads in place").
 *
 * Each launch reads every distinct chunk it names once. A chunk's charge
 * (2 MiB pages from 2 MiB on, 512 B granules below: lms_charge_of) may be
 * resident in part: every granule of it is its own cache item. Bytes of a
 * chunk a launch needs that are not resident cross the link once, either
 * fetched (they stay) or read in place (they do not). With items of one
 * size and a miss costing the same either way, the cheapest schedule
 * keeps, after every request, the items whose next use is nearest:
 * farthest-in-future eviction with bypass. Since all granules of a chunk
 * share their next use, the chunk's resident amount moves as one number.
 */
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define GRANULE 512ull
#define NEVER UINT64_MAX

/* A chunk as the bound sees it. */
typedef struct bd_chunk {
    uint64_t charge;     /* bytes */
    uint64_t amount;     /* bytes resident (a multiple of GRANULE) */
    uint64_t next;       /* event index of its next launch, or NEVER */
    uint64_t seen;       /* 1 + event index of the launch that last named it */
    bool alive;
    int hpos;            /* 1 + index in the heap; 0: not in it */
} bd_chunk;

/* Resident chunks, the farthest next use on top. */
typedef struct bd_heap {
    uint32_t *a;         /* chunk indices */
    int n;
    bd_chunk *ch;
} bd_heap;

static bool above(const bd_heap *h, uint32_t x, uint32_t y)
{
    return h->ch[x].next > h->ch[y].next || (h->ch[x].next == h->ch[y].next && x > y);
}

static void put(bd_heap *h, int i, uint32_t x)
{
    h->a[i] = x;
    h->ch[x].hpos = i + 1;
}

/* Moves the chunk at slot i up or down until the order holds. */
static void sift(bd_heap *h, int i)
{
    uint32_t x = h->a[i];
    while (i > 0 && above(h, x, h->a[(i - 1) / 2])) {
        put(h, i, h->a[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        int l = 2 * i + 1, best = i;
        uint32_t bx = x;
        if (l < h->n && above(h, h->a[l], bx))
            best = l, bx = h->a[l];
        if (l + 1 < h->n && above(h, h->a[l + 1], bx))
            best = l + 1, bx = h->a[l + 1];
        if (best == i)
            break;
        put(h, i, bx);
        i = best;
    }
    put(h, i, x);
}

/* Adds chunk x (the array holds every chunk: no growth needed). */
static void push(bd_heap *h, uint32_t x)
{
    put(h, h->n++, x);
    sift(h, h->n - 1);
}

/* Takes chunk x out if it is in. */
static void drop(bd_heap *h, uint32_t x)
{
    int i = h->ch[x].hpos - 1;
    if (i < 0)
        return;
    h->ch[x].hpos = 0;
    uint32_t last = h->a[--h->n];
    if (i < h->n) {
        put(h, i, last);
        sift(h, i);
    }
}

/* next_at[k] for the k-th id of the pool: the event index of the next launch
 * of `dev` naming the same chunk, NEVER when none does before the chunk is
 * freed (or allocated again); first_at[e] for an alloc event: the first
 * launch naming that chunk. Both arrays are the caller's. */
static void future(const lms_trace_data *t, int dev, uint64_t *next_at, uint64_t *first_at, uint64_t *last)
{
    for (size_t i = 0; i < t->max_id; i++)
        last[i] = NEVER;
    for (size_t e = t->nevents; e-- > 0;) {
        const rp_event *ev = &t->events[e];
        if (ev->dev != dev)
            continue;
        if ((ev->kind == RP_MANAGED_ALLOC || ev->kind == RP_MANAGED_FREE) && ev->id < t->max_id) {
            first_at[e] = last[ev->id];
            last[ev->id] = NEVER;   /* uses before this belong to another life of the id */
        } else if (ev->kind == RP_LAUNCH) {
            for (uint32_t k = 0; k < ev->n; k++) {
                uint32_t id = t->ids[ev->first + k];
                if (id < t->max_id) {
                    next_at[ev->first + k] = last[id];
                    last[id] = e;
                }
            }
        }
    }
}

/* A chunk and its next use, to sort by. */
typedef struct bd_need {
    uint64_t next;
    uint32_t id;
} bd_need;

/* Orders needs nearest first (then by id: a total order). */
static int by_next(const void *a, const void *b)
{
    const bd_need *x = a, *y = b;
    if (x->next != y->next)
        return x->next < y->next ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The resident set that serves the rest best when what came before costs
 * nothing: the live chunks used next, nearest first, filling `room`. */
static void warm_start(bd_heap *h, uint32_t nch, uint64_t room, uint64_t *used)
{
    bd_need *order = malloc((nch ? nch : 1) * sizeof *order);
    if (!order)
        return;   /* no memory: the bound starts from what the greedy holds */
    uint32_t n = 0;
    while (h->n > 0) {
        uint32_t x = h->a[0];
        drop(h, x);
        h->ch[x].amount = 0;
    }
    for (uint32_t x = 0; x < nch; x++)
        if (h->ch[x].alive && h->ch[x].next != NEVER && h->ch[x].charge > 0)
            order[n++] = (bd_need){h->ch[x].next, x};
    if (n > 1)   /* order may be NULL when there is nothing */
        qsort(order, n, sizeof *order, by_next);
    *used = 0;
    for (uint32_t i = 0; i < n && *used < room; i++) {
        bd_chunk *c = &h->ch[order[i].id];
        c->amount = c->charge < room - *used ? c->charge : room - *used;
        *used += c->amount;
        push(h, order[i].id);
    }
    free(order);
}

void lms_replay_bound(const lms_trace_data *t, int dev, uint64_t budget, uint64_t skip, lms_replay_result *out)
{
    memset(out, 0, sizeof *out);
    size_t nch = t->max_id ? t->max_id : 1;
    bd_chunk *ch = calloc(nch, sizeof *ch);
    uint64_t *next_at = calloc(t->nids ? t->nids : 1, sizeof *next_at);
    uint64_t *first_at = calloc(t->nevents ? t->nevents : 1, sizeof *first_at);
    uint64_t *last = calloc(nch, sizeof *last);
    bd_heap h = {.a = calloc(nch, sizeof *h.a), .ch = ch};
    bd_need *miss = calloc(nch, sizeof *miss);   /* a launch's chunks not all resident */
    if (!ch || !next_at || !first_at || !last || !h.a || !miss)
        goto done;
    future(t, dev, next_at, first_at, last);
    /* room: the most the device offered at any launch so far (never less:
     * a replay keeps what it holds when device allocations grow). */
    uint64_t device = 0, room = 0, used = 0, seq = 0;
    for (size_t e = 0; e < t->nevents; e++) {
        const rp_event *ev = &t->events[e];
        if (ev->dev != dev)
            continue;
        bd_chunk *c = ev->id < t->max_id ? &ch[ev->id] : NULL;
        switch (ev->kind) {
        case RP_DEVICE_ALLOC:
        case RP_DEVICE_FREE: device = lms_replay_device_bytes(device, ev); break;
        case RP_MANAGED_ALLOC:
        case RP_MANAGED_FREE:
            if (c && c->alive) {
                drop(&h, ev->id);
                used -= c->amount;
                c->alive = false;
            }
            if (c && ev->kind == RP_MANAGED_ALLOC)
                *c = (bd_chunk){.charge = ev->bytes, .next = first_at[e], .alive = true};
            break;
        case RP_LAUNCH: {
            seq++;
            bool counting = seq > skip;
            uint64_t now = budget > device ? (budget - device) / GRANULE * GRANULE : 0;
            if (now > room)
                room = now;
            if (counting && seq == skip + 1 && skip > 0)
                warm_start(&h, t->max_id, room, &used);
            if (counting)
                out->launches++;
            /* First every chunk of the launch is read: what is resident
             * serves, the rest crosses the link; all take their next use. */
            uint32_t nm = 0;
            for (uint32_t k = 0; k < ev->n; k++) {
                uint32_t id = t->ids[ev->first + k];
                if (id >= t->max_id || !ch[id].alive || ch[id].seen == e + 1)
                    continue;   /* unknown, or named twice by this launch */
                c = &ch[id];
                c->seen = e + 1;
                drop(&h, id);
                c->next = next_at[ev->first + k];
                if (c->amount)
                    push(&h, id);
                uint64_t missing = c->charge - c->amount;
                if (counting) {
                    out->misses += missing > 0;
                    out->remote_bytes += missing;   /* until fetched below */
                }
                if (missing && c->next != NEVER)
                    miss[nm++] = (bd_need){c->next, id};
            }
            /* Then what was missing stays, nearest next use first, in room
             * that is free or held by chunks needed later. */
            if (nm > 1)
                qsort(miss, nm, sizeof *miss, by_next);
            for (uint32_t k = 0; k < nm; k++) {
                c = &ch[miss[k].id];
                uint64_t missing = c->charge - c->amount;
                uint64_t take = room - used < missing ? room - used : missing;
                while (take < missing && h.n > 0 && ch[h.a[0]].next > c->next) {
                    bd_chunk *v = &ch[h.a[0]];
                    uint64_t x = missing - take < v->amount ? missing - take : v->amount;
                    v->amount -= x;
                    used -= x;
                    take += x;
                    if (counting)
                        out->evicted_bytes += x;
                    if (!v->amount)
                        drop(&h, h.a[0]);
                }
                if (!take)
                    continue;
                drop(&h, miss[k].id);
                c->amount += take;
                used += take;
                push(&h, miss[k].id);
                if (counting) {
                    out->fetched_bytes += take;
                    out->remote_bytes -= take;
                }
            }
            break;
        }
        }
    }
done:
    free(ch);
    free(next_at);
    free(first_at);
    free(last);
    free(h.a);
    free(miss);
}
