/*
 * replay.c — trace loading and replay (see replay.h). Policies replay
 * through the same planner as the live engine (plan.c), with counters for
 * mechanics; Belady's MIN is computed from the trace's true future.
 */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "grow.h"
#include "json.h"
#include "jsonl.h"
#include "plan.h"
#include "trace_fields.h"
#include "units.h"

/* ---- loading ------------------------------------------------------------- */

/* A live allocation while loading (kept in an address map by ptr). */
typedef struct live_alloc {
    uint64_t ptr;
    bool managed;
    uint32_t id;
    uint64_t bytes;
    int dev;
} live_alloc;

static bool push_event(lms_trace_data *t, rp_event e)
{
    if (!lms_grow((void **)&t->events, &t->capevents, t->nevents + 1, sizeof e, 1024))
        return false;
    t->events[t->nevents++] = e;
    return true;
}

static bool push_id(lms_trace_data *t, uint32_t id)
{
    if (!lms_grow((void **)&t->ids, &t->capids, t->nids + 1, sizeof id, 1024))
        return false;
    t->ids[t->nids++] = id;
    return true;
}

/* The dense index of a trace chunk id, given in order of first sight, so
 * that replay's arrays follow the number of chunks, not the largest id.
 * The map belongs to t (freed by lms_trace_data_free). False: no memory. */
static bool dense_id(lms_trace_data *t, uint32_t id, uint32_t *out)
{
    if (!t->idmap) {
        t->idmap = malloc(sizeof *t->idmap);
        if (!t->idmap)
            return false;
        lms_addrmap_init(t->idmap, sizeof(uint32_t));
    }
    uint32_t v;
    if (lms_addrmap_take(t->idmap, (uint64_t)id + 1, &v)) {   /* a lookup: put it back where it was */
        *out = v;
        return lms_addrmap_put(t->idmap, (uint64_t)id + 1, &v);
    }
    v = t->max_id;
    if (!lms_addrmap_put(t->idmap, (uint64_t)id + 1, &v))
        return false;
    t->max_id++;
    *out = v;
    return true;
}

#define MAX_BYTES 9.0e18   /* byte counts beyond this are not real */

/* Interprets one parsed line; returns NULL or what is wrong with it. */
static const char *take_line(lms_trace_data *t, lms_addrmap *m, const lms_json *j)
{
    char type[16], ptr_s[32];
    long long dev = 0, size = 0, charge = 0, id = -1;
    if (j->nodes[0].type != LMS_JSON_OBJECT)
        return "not an object";
    if (!lms_json_string(j, 0, LMS_TF_TYPE, type, sizeof type))
        return "no \"type\"";
    if (strcmp(type, LMS_TE(header)) == 0 || strcmp(type, LMS_TE(summary)) == 0 || strcmp(type, LMS_TE(site)) == 0 ||
        strcmp(type, LMS_TE(prefetch)) == 0 || strcmp(type, LMS_TE(evict)) == 0 || strcmp(type, LMS_TE(oom)) == 0 ||
        strcmp(type, LMS_TE(fallback)) == 0)
        return NULL;
    if (!lms_json_int(j, 0, LMS_TF(alloc, dev, I64), 0, 15, &dev))
        return "no valid \"dev\"";
    if (strcmp(type, LMS_TE(device)) == 0) {
        long long budget;
        if (!lms_json_int(j, 0, LMS_TF(device, budget, U64), 0, MAX_BYTES, &budget))
            return "device without a valid \"budget\"";
        t->budget[dev] = (uint64_t)budget;
        return NULL;
    }
    if (strcmp(type, LMS_TE(alloc)) == 0 || strcmp(type, LMS_TE(free)) == 0) {
        char place[16];
        if (!lms_json_string(j, 0, LMS_TF2(alloc, free, ptr, HEX), ptr_s, sizeof ptr_s) ||
            !lms_json_int(j, 0, LMS_TF2(alloc, free, size, U64), 0, MAX_BYTES, &size) ||
            !lms_json_string(j, 0, LMS_TF2(alloc, free, place, STR), place, sizeof place))
            return "alloc/free without valid ptr, size or place";
        uint64_t ptr = strtoull(ptr_s, NULL, 16);
        if (!ptr)
            return "bad ptr";
        if (type[0] == 'a') {
            if (lms_json_get(j, 0, LMS_TF(alloc, charge, U64)) >= 0 &&
                !lms_json_int(j, 0, LMS_TF(alloc, charge, U64), 0, MAX_BYTES, &charge))
                return "bad charge";
            if (lms_json_get(j, 0, LMS_TF(alloc, id, I64)) >= 0 &&
                !lms_json_int(j, 0, LMS_TF(alloc, id, I64), -1, 2147483647.0, &id))
                return "bad id";
            bool managed = strcmp(place, "managed") == 0 && id >= 0;
            if (strcmp(place, "device") != 0 && !managed && strcmp(place, "vmm") != 0)
                return NULL;   /* host placements take no device memory */
            live_alloc a = {.ptr = ptr, .managed = managed, .id = managed ? (uint32_t)id : 0,
                            .bytes = managed ? lms_charge_of((uint64_t)size) : (uint64_t)charge, .dev = (int)dev};
            if (managed && a.id >= (1u << 26))
                return "chunk id too large";
            if (managed && !dense_id(t, a.id, &a.id))
                return "out of memory";
            if (!lms_addrmap_put(m, a.ptr, &a) ||
                !push_event(t, (rp_event){.kind = managed ? RP_MANAGED_ALLOC : RP_DEVICE_ALLOC, .dev = a.dev,
                                          .id = a.id, .bytes = a.bytes}))
                return "out of memory";
            return NULL;
        }
        live_alloc a;
        if (!lms_addrmap_take(m, ptr, &a))
            return NULL;   /* a free of something the trace did not see allocated */
        return push_event(t, (rp_event){.kind = a.managed ? RP_MANAGED_FREE : RP_DEVICE_FREE, .dev = a.dev,
                                        .id = a.id, .bytes = a.bytes})
                   ? NULL : "out of memory";
    }
    if (strcmp(type, LMS_TE(launch)) == 0) {
        int arr = lms_json_get(j, 0, LMS_TF(launch, chunks, IDS));
        char fn_s[32] = "0";
        lms_json_string(j, 0, LMS_TF(launch, fn, HEX), fn_s, sizeof fn_s);
        if (arr < 0 || j->nodes[arr].type != LMS_JSON_ARRAY)
            return "launch without \"chunks\"";
        rp_event e = {.kind = RP_LAUNCH, .dev = (int)dev, .fn = strtoull(fn_s, NULL, 16),
                      .first = (uint32_t)t->nids};
        for (int c = j->nodes[arr].first_child; c >= 0; c = j->nodes[c].next) {
            double v = j->nodes[c].num;
            if (j->nodes[c].type != LMS_JSON_NUMBER || !(v >= 0 && v < 67108864.0) || v != (double)(uint32_t)v)
                return "a chunk id is not a valid number";
            uint32_t id;
            if (!dense_id(t, (uint32_t)v, &id) || !push_id(t, id))
                return "out of memory";
            e.n++;
        }
        return push_event(t, e) ? NULL : "out of memory";
    }
    return NULL;   /* a newer event type: skipped */
}

typedef struct load_ctx {
    lms_trace_data *t;
    lms_addrmap m;            /* ptr -> live_alloc */
} load_ctx;

static const char *load_line(const lms_json *j, size_t lineno, void *ctx)
{
    (void)lineno;
    load_ctx *l = ctx;
    return take_line(l->t, &l->m, j);
}

int lms_trace_load(const char *path, lms_trace_data *t, FILE *errors)
{
    load_ctx l = {.t = t};
    lms_addrmap_init(&l.m, sizeof(live_alloc));
    lms_jsonl_counts counts = {0};
    int r = lms_jsonl_file(path, load_line, &l, errors, &counts);
    t->lines += counts.lines;
    t->bad_lines += counts.bad;
    lms_addrmap_free(&l.m);
    return r;
}

void lms_trace_load_text(const char *name, const char *text, size_t len, lms_trace_data *t, FILE *errors)
{
    load_ctx l = {.t = t};
    lms_addrmap_init(&l.m, sizeof(live_alloc));
    lms_jsonl_counts counts = {0};
    lms_jsonl_text(name, text, len, load_line, &l, errors, &counts);
    t->lines += counts.lines;
    t->bad_lines += counts.bad;
    lms_addrmap_free(&l.m);
}

void lms_trace_data_free(lms_trace_data *t)
{
    free(t->events);
    free(t->ids);
    if (t->idmap)
        lms_addrmap_free(t->idmap);
    free(t->idmap);
    memset(t, 0, sizeof *t);
}

/* ---- replay ---------------------------------------------------------------- */

typedef struct rp_chunk {
    lms_plan_chunk pc;
    bool alive;
    uint64_t next_use;    /* Belady: index of the next launch using it */
    int mpos;             /* Belady: 1 + index in the victim heap; 0: not in it */
} rp_chunk;

typedef struct rp_ctx {
    rp_chunk *chunks;     /* by id */
    uint32_t nchunks;
    uint64_t budget, device_bytes, resident_bytes;
    bool counting;
    lms_replay_result *out;
} rp_ctx;

static bool rp_reserve(void *ctx, uint64_t bytes)
{
    rp_ctx *c = ctx;
    if (c->device_bytes + c->resident_bytes + bytes > c->budget)
        return false;
    c->resident_bytes += bytes;
    return true;
}

static uint64_t rp_budget(void *ctx)
{
    rp_ctx *c = ctx;
    return c->budget > c->device_bytes ? c->budget - c->device_bytes : 0;
}

static void rp_evict(void *ctx, lms_plan_chunk *pc)
{
    rp_ctx *c = ctx;
    c->resident_bytes -= pc->charge;
    if (c->counting)
        c->out->evicted_bytes += pc->charge;
}

static bool rp_fetch(void *ctx, lms_plan_chunk *pc, bool ahead)
{
    (void)ahead;
    rp_ctx *c = ctx;
    if (c->counting)
        c->out->fetched_bytes += pc->charge;
    return true;
}

static lms_plan_chunk *rp_lookup(void *ctx, uint32_t id)
{
    rp_ctx *c = ctx;
    return id < c->nchunks && c->chunks[id].alive ? &c->chunks[id].pc : NULL;
}

static const lms_plan_ops replay_ops = {
    .reserve = rp_reserve, .budget = rp_budget, .evict = rp_evict, .fetch = rp_fetch, .lookup = rp_lookup,
};

/* Belady's victims: the resident chunks not in use by the launch at hand,
 * in an indexed heap, the one used farthest ahead on top (then the higher
 * id), so that an eviction costs O(log n) whatever the number resident. */
typedef struct min_heap {
    rp_chunk **a;         /* room for every chunk */
    int n;
} min_heap;

static bool min_above(const rp_chunk *x, const rp_chunk *y)
{
    return x->next_use != y->next_use ? x->next_use > y->next_use : x->pc.id > y->pc.id;
}

static void min_place(min_heap *h, int i, rp_chunk *x)
{
    h->a[i] = x;
    x->mpos = i + 1;
}

/* Moves the chunk at slot i up or down until the order holds. */
static void min_sift(min_heap *h, int i)
{
    rp_chunk *x = h->a[i];
    while (i > 0 && min_above(x, h->a[(i - 1) / 2])) {
        min_place(h, i, h->a[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        int l = 2 * i + 1, best = i;
        rp_chunk *bx = x;
        if (l < h->n && min_above(h->a[l], bx))
            best = l, bx = h->a[l];
        if (l + 1 < h->n && min_above(h->a[l + 1], bx))
            best = l + 1, bx = h->a[l + 1];
        if (best == i)
            break;
        min_place(h, i, bx);
        i = best;
    }
    min_place(h, i, x);
}

static void min_push(min_heap *h, rp_chunk *x)
{
    min_place(h, h->n++, x);
    min_sift(h, h->n - 1);
}

/* Takes x out if it is in. */
static void min_remove(min_heap *h, rp_chunk *x)
{
    int i = x->mpos - 1;
    if (i < 0)
        return;
    x->mpos = 0;
    rp_chunk *last = h->a[--h->n];
    if (i < h->n) {
        min_place(h, i, last);
        min_sift(h, i);
    }
}

/* Belady: evict the resident chunk used farthest ahead until bytes fit. */
static bool belady_room(rp_ctx *c, min_heap *h, uint64_t bytes)
{
    while (!rp_reserve(c, bytes)) {
        if (h->n == 0)
            return false;
        rp_chunk *v = h->a[0];
        min_remove(h, v);
        v->pc.resident = false;
        rp_evict(c, &v->pc);
    }
    return true;
}

void lms_replay(const lms_trace_data *t, int dev, uint64_t budget, const lms_policy *policy, uint64_t skip,
                lms_replay_result *out)
{
    memset(out, 0, sizeof *out);
    rp_ctx c = {.nchunks = t->max_id, .budget = budget, .out = out};
    c.chunks = calloc(t->max_id ? t->max_id : 1, sizeof *c.chunks);
    /* next_at[k]: for the k-th id of the pool, the index of the next launch that uses the same id. */
    uint64_t *next_at = calloc(t->nids ? t->nids : 1, sizeof *next_at);
    uint64_t *last = calloc(t->max_id ? t->max_id : 1, sizeof *last);
    lms_plan plan;
    min_heap bres = {.a = calloc(t->max_id ? t->max_id : 1, sizeof *bres.a)};
    lms_plan_chunk **mine = NULL;
    uint32_t capmine = 0;
    if (!c.chunks || !next_at || !last || !bres.a || (policy && !lms_plan_init(&plan, policy)))
        goto done;
    if (!policy) {   /* the true future: next use of every occurrence */
        for (size_t i = 0; i < t->max_id; i++)
            last[i] = UINT64_MAX;
        for (size_t e = t->nevents; e-- > 0;) {
            const rp_event *ev = &t->events[e];
            if (ev->kind != RP_LAUNCH || ev->dev != dev)
                continue;
            for (uint32_t k = 0; k < ev->n; k++) {
                uint32_t id = t->ids[ev->first + k];
                if (id < t->max_id) {
                    next_at[ev->first + k] = last[id];
                    last[id] = e;
                }
            }
        }
    }
    uint64_t seq = 0;
    for (size_t e = 0; e < t->nevents; e++) {
        const rp_event *ev = &t->events[e];
        if (ev->dev != dev)
            continue;
        rp_chunk *ch = ev->id < c.nchunks ? &c.chunks[ev->id] : NULL;
        switch (ev->kind) {
        case RP_DEVICE_ALLOC:
        case RP_DEVICE_FREE: c.device_bytes = lms_replay_device_bytes(c.device_bytes, ev); break;
        case RP_MANAGED_ALLOC:
        case RP_MANAGED_FREE:
            /* An id allocated again (a damaged trace) is freed first. */
            if (ch && ch->alive) {
                if (ch->pc.resident) {
                    c.resident_bytes -= ch->pc.charge;
                    if (policy)
                        lms_plan_forget(&plan, &ch->pc);
                    else
                        min_remove(&bres, ch);
                }
                ch->alive = false;
            }
            if (ch && ev->kind == RP_MANAGED_ALLOC)
                *ch = (rp_chunk){.pc = {.id = ev->id, .charge = ev->bytes}, .alive = true, .next_use = UINT64_MAX};
            break;
        case RP_LAUNCH: {
            seq++;
            c.counting = seq > skip;
            if (c.counting)
                out->launches++;
            if (ev->n > capmine) {
                lms_plan_chunk **nm = realloc(mine, ev->n * sizeof *nm);
                if (!nm)
                    break;   /* no memory: the launch is not replayed */
                mine = nm;
                capmine = ev->n;
            }
            int m = 0;
            for (uint32_t k = 0; k < ev->n; k++) {
                lms_plan_chunk *pc = rp_lookup(&c, t->ids[ev->first + k]);
                if (!pc || pc->pins)
                    continue;   /* unknown, or listed twice */
                if (!policy)
                    min_remove(&bres, (rp_chunk *)pc);   /* in use: no victim, and its key changes */
                ((rp_chunk *)pc)->next_use = next_at[ev->first + k];
                if (c.counting && !pc->resident)
                    out->misses++;
                if (policy)
                    lms_plan_pin(&plan, pc);
                else
                    pc->pins++;
                mine[m++] = pc;
            }
            if (policy) {
                lms_plan_launch(&plan, &replay_ops, &c, seq, ev->fn, ev->n ? t->ids + ev->first : NULL, (int)ev->n, mine, m);
            } else {
                for (int i = 0; i < m; i++)
                    if (!mine[i]->resident && mine[i]->charge <= rp_budget(&c) &&
                        belady_room(&c, &bres, mine[i]->charge)) {
                        rp_fetch(&c, mine[i], false);
                        mine[i]->resident = true;
                    }
            }
            for (int i = 0; i < m; i++) {
                if (policy) {
                    lms_plan_used(&plan, mine[i], seq);
                } else {
                    mine[i]->pins--;
                    mine[i]->last_use = seq;
                    if (mine[i]->resident)
                        min_push(&bres, (rp_chunk *)mine[i]);
                }
                if (c.counting && !mine[i]->resident)
                    out->remote_bytes += mine[i]->charge;
            }
            if (policy)
                lms_plan_after(&plan, &replay_ops, &c);
            break;
        }
        }
    }
    if (policy)
        lms_plan_destroy(&plan);
done:
    free(c.chunks);
    free(next_at);
    free(last);
    free(bres.a);
    free(mine);
}
