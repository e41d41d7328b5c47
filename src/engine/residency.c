/*
 * residency.c — the residency engine (see residency.h and
 * docs/ARCHITECTURE.md "Residency").
 *
 * Chunks: every managed chunk lmshim placed, in an address-sorted table
 * (for scanning kernel parameters) and an id-indexed table (for policies).
 * A chunk larger than half the room managed chunks have is tracked as
 * 2 MiB-aligned pieces, each an entry of both tables (see add_pieces).
 * Both are guarded by `map_lock`. Each device has a lock of its own that
 * orders its launches' decisions; lock order is device, then map.
 *
 * Budget: a fetch is charged to the device's account before it is issued
 * (a compare-and-swap against the budget, so device chunks + resident
 * managed chunks never pass it); an eviction returns its charge when it is
 * issued, and a later fetch on the device waits on the GPU until enough of
 * the evictions' bytes left for its own to fit (the ledger of freed bytes),
 * so the device never holds more than the budget. Chunks larger than a
 * slice move in slices, so fetches and evictions overlap.
 *
 * Order across streams: each stream a launch runs on has a slot with a ring
 * of events; one event is recorded per launch (after it), one after a
 * launch's on-demand fetches and one after each batch of side-stream
 * fetches, never one per chunk. A chunk remembers the record after its
 * fetch and, per stream (up to USERS of them), the record after its latest
 * use there since the fetch. A launch on another stream than the fetch's
 * waits for the fetch (once per stream); an eviction waits for the fetch
 * and for every stream that used the chunk. A launch that reads a chunk
 * over the link is recorded as a use too, and a fetch waits for those reads
 * (none may be between its decision and its record: a count per chunk). A
 * slot taken over by another stream is forgotten by every chunk. A point
 * whose ring event was recorded again later is waited for through the
 * oldest record still in the ring (wait_ref). The same records time the
 * device across streams: a gauge stream (timing.c) waits for the
 * latest record of each stream launched on since its last point, and
 * records the next point (op_mark_all).
 */
#include "residency.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "capture.h"
#include "grow.h"
#include "log.h"
#include "place.h"
#include "plan.h"
#include "policy.h"
#include "price.h"
#include "scratch.h"
#include "timing.h"
#include "launch.h"
#include "trace.h"

atomic_uint lms_residency_live;

#define RING 64      /* events per stream slot */
#define SLOTS 32     /* streams per device with a slot at once */
#define USERS 4      /* streams a chunk remembers its uses on */
#define PIECE_ALIGN (2ull << 20)   /* pieces are 2 MiB-aligned ranges */
#define MAX_PIECES 256             /* pieces of one chunk at most (larger pieces beyond) */
#define SLICE (16ull << 20)        /* bytes: larger chunks move in 2 MiB-aligned slices of at most this */
#define ALONE 64                   /* launches on one stream before a launch's duration is its own (op_alone) */
#define LEDGER 64                  /* points of the eviction stream a fetch may wait for */

/* A point on a stream: record number `count` of slot `slot` in its epoch. */
typedef struct res_ref {
    int slot;                 /* -1: none */
    uint32_t epoch;
    uint64_t count;
} res_ref;

/* A stream launches ran on, with its ring of events. The default streams
 * are one handle for many streams: one slot per context (and per thread
 * for the per-thread one). */
typedef struct res_slot {
    CUstream stream;
    uint64_t owner;           /* CU_STREAM_PER_THREAD: the thread whose stream it is (thread_id) */
    CUcontext ctx;            /* a default stream: the context whose stream it is */
    bool used, keep;          /* in use; never recycled (the side stream) */
    uint32_t epoch;           /* bumped when the slot goes to another stream */
    uint64_t count;           /* records made; record k is ring[k % RING] */
    uint64_t tick;            /* last use, for recycling */
    CUcontext made_in;        /* context current when its ring was made */
    CUevent ring[RING];
} res_slot;

typedef struct res_chunk {
    lms_plan_chunk pc;        /* id, charge, resident, pins, last use, heaps */
    uint64_t ptr, size;       /* the managed range */
    int device;
    uint64_t kept;            /* bytes: charge kept by a failed eviction (still on the device) */
    uint64_t out_from, out_to; /* bytes: the device's `evicted` before and after its latest eviction's
                                  slices were issued (out_to 0: none since its fetch) */
    res_ref fetch;            /* the record after its latest fetch */
    uint32_t fetch_seen;      /* bit s: slot s is ordered after that fetch */
    res_ref users[USERS];     /* per stream, the record after its latest use since the fetch
                                 (or, while off the device, since the eviction: reads over the link) */
    bool users_all;           /* more streams than USERS: an eviction waits for all */
    struct res_chunk *group;  /* a chunk managed in pieces: its first piece (NULL: whole) */
    uint32_t pieces;          /* the first piece: how many pieces its chunk has */
    _Atomic uint64_t start;   /* 1 + lowest offset (bytes) in this piece a launch pointed at (0: none) */
    int remote;               /* launches reading it over the link, decided and not yet recorded */
    uint64_t role_seq;        /* a whole chunk or a first piece: the launch (seq) whose scan set role */
    uint32_t role;            /* ... the first parameter word of that launch that pointed into the chunk */
} res_chunk;

/* A token's id of a chunk its launch reads over the link (after() knows it
 * by this bit; ids stay below it). */
#define REMOTE_BIT 0x80000000u

typedef struct res_device {
    pthread_mutex_t lock;
    lms_plan plan;            /* the decisions and the resident set */
    bool ready;               /* plan, streams and event set up */
    uint64_t seq;             /* launches seen */
    CUstream side, evict;     /* fetch-ahead and eviction streams */
    /* The ledger of freed bytes: points on the eviction stream, each the
     * eviction bytes (charge units) issued before it; a fetch waits for
     * the first point that frees the room it needs (ledger_wait). */
    CUevent ledger[LEDGER];   /* point k is ledger[k % LEDGER] (NULL: not made) */
    uint64_t ledger_at[LEDGER]; /* bytes: `evicted` when that point was recorded */
    uint64_t points;          /* points recorded */
    uint64_t evicted;         /* bytes: eviction charges issued on the eviction stream */
    uint64_t freed;           /* bytes: of those, known to be off the device (the stream was finished) */
    int side_slot;            /* the side stream's slot */
    CUcontext made_in;        /* context current when side, evict and the ledger were made */
    bool remake;              /* that context went away: make them again before the next launch */
    res_slot slots[SLOTS];
    uint64_t tick;
    uint32_t unjoined;        /* bit s: slot s recorded on since the last point after every stream (op_mark_all) */
    int last_slot;            /* the slot of the latest launch ... */
    uint32_t last_epoch;      /* ... its epoch then ... */
    uint64_t other_at;        /* ... and the seq of the first launch on it since one on another (op_alone) */
} res_device;

/* What the mechanics need for one launch (the planner's ctx). */
typedef struct live {
    res_device *d;
    lms_account *a;
    int device;
    CUstream stream;          /* the launch's stream */
    int slot;                 /* its slot, or -1 */
    uint64_t sig;             /* the launch's signature (prices are learned per signature) */
    uintptr_t fn;             /* the launch's function */
    uintptr_t fit;            /* the key of its function's fit: fn and its grid's class (lms_launch_shape) */
    uint64_t blocks;          /* its grid's blocks (0: unknown) */
    uint64_t seq;             /* the launch's number on the device (0: a reclaim, no launch) */
    int fetch_timed;          /* the timing handle of its demand fetches (0: none) */
    bool fetch_tried;         /* a demand fetch was issued: fetch_timed is decided */
    uint64_t fetch_bytes;     /* bytes of its demand fetches */
} live;

static pthread_rwlock_t map_lock = PTHREAD_RWLOCK_INITIALIZER;
static res_chunk **by_addr;          /* sorted by ptr */
static uint64_t *bases;              /* bases[i] = by_addr[i]->ptr: the search stays in one array */
static int naddr;
static size_t capaddr, capbases;
static res_chunk **by_id;            /* index: id; NULL once freed */
static uint32_t nids;
static size_t capids;
static res_device devices[LMS_MAX_DEVICES] = {
    [0 ... LMS_MAX_DEVICES - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER}};

/* Index of the first chunk whose ptr is > p (under map_lock). The halving
 * has no branch on the data: at 10,000 chunks a branch per level was
 * mispredicted about every other level, the dearest part of a launch's
 * find (perf, bench/allocbench's eviction rows). */
static int upper(uint64_t p)
{
    if (naddr == 0)
        return 0;
    const uint64_t *b = bases;
    size_t n = (size_t)naddr;
    while (n > 1) {   /* the answer lies in [b, b + n] */
        size_t half = n / 2;
        b = b[half] <= p ? b + half : b;
        n -= half;
    }
    return (int)(b - bases) + (*b <= p);
}

/* Room in by_addr and bases for `need` chunks (under map_lock, written). */
static bool room_by_addr(size_t need)
{
    return lms_grow((void **)&by_addr, &capaddr, need, sizeof *by_addr, 64) &&
           lms_grow((void **)&bases, &capbases, need, sizeof *bases, 64);
}

/* The piece size for a managed chunk of `size` on `device`, or 0 to manage
 * it whole: a chunk larger than half the room managed chunks have (the
 * budget less the device chunks, when it is placed) moves in 2 MiB-aligned
 * pieces, at most MAX_PIECES of them. */
static uint64_t piece_size(uint64_t size, int device)
{
    lms_account *a = lms_account_of(device);
    if (!a || size <= 2 * PIECE_ALIGN)
        return 0;
    uint64_t dev = atomic_load(&a->live_bytes[LMS_PLACE_DEVICE]);
    uint64_t room = a->budget > dev ? a->budget - dev : 0;
    if (size <= room / 2)
        return 0;
    uint64_t p = ((size - 1) / MAX_PIECES + PIECE_ALIGN) / PIECE_ALIGN * PIECE_ALIGN;   /* ceil, so k <= MAX_PIECES */
    return p > PIECE_ALIGN ? p : PIECE_ALIGN;
}

/* Tracks a managed chunk: one entry, or one per piece (an array the first
 * piece heads; lms_residency_drop frees it). */
int64_t lms_residency_add(uint64_t ptr, uint64_t size, int device)
{
    if (device < 0 || device >= LMS_MAX_DEVICES)
        return -1;
    uint64_t psize = piece_size(size, device);
    uint32_t k = psize ? (uint32_t)((size + psize - 1) / psize) : 1;
    res_chunk *c = calloc(k, sizeof *c);
    if (!c)
        return -1;   /* untracked: the GPU reads it over the link, nothing breaks */
    for (uint32_t j = 0; j < k; j++) {
        uint64_t off = (uint64_t)j * psize, len = k > 1 ? (size - off < psize ? size - off : psize) : size;
        c[j] = (res_chunk){.pc = {.charge = lms_charge_of(len)}, .ptr = ptr + off, .size = len,
                           .device = device, .fetch = {.slot = -1}, .group = k > 1 ? c : NULL};
        for (int u = 0; u < USERS; u++)
            c[j].users[u].slot = -1;
    }
    c->pieces = k;
    pthread_rwlock_wrlock(&map_lock);
    if (!room_by_addr((size_t)naddr + k) ||
        !lms_grow((void **)&by_id, &capids, (size_t)nids + k, sizeof *by_id, 64)) {
        pthread_rwlock_unlock(&map_lock);
        free(c);
        return -1;
    }
    if (nids + k > REMOTE_BIT) {   /* ids must stay below the token's flag */
        pthread_rwlock_unlock(&map_lock);
        free(c);
        return -1;
    }
    int i = upper(ptr);
    memmove(&by_addr[i + (int)k], &by_addr[i], (size_t)(naddr - i) * sizeof *by_addr);
    memmove(&bases[i + (int)k], &bases[i], (size_t)(naddr - i) * sizeof *bases);
    for (uint32_t j = 0; j < k; j++) {
        c[j].pc.id = nids;
        by_id[nids++] = &c[j];
        by_addr[i + (int)j] = &c[j];
        bases[i + (int)j] = c[j].ptr;
    }
    naddr += (int)k;
    atomic_fetch_add(&lms_residency_live, 1);
    pthread_rwlock_unlock(&map_lock);
    return c->pc.id;
}

lms_res_chunk *lms_residency_take(uint64_t ptr)
{
    pthread_rwlock_wrlock(&map_lock);
    int i = upper(ptr) - 1;
    res_chunk *c = i >= 0 && by_addr[i]->ptr == ptr && (!by_addr[i]->group || by_addr[i]->group == by_addr[i])
                       ? by_addr[i] : NULL;
    if (c) {
        int k = (int)c->pieces;   /* its pieces follow it in address order */
        memmove(&by_addr[i], &by_addr[i + k], (size_t)(naddr - i - k) * sizeof *by_addr);
        memmove(&bases[i], &bases[i + k], (size_t)(naddr - i - k) * sizeof *bases);
        naddr -= k;
        for (int j = 0; j < k; j++)
            by_id[c[j].pc.id] = NULL;
        atomic_fetch_sub(&lms_residency_live, 1);
    }
    pthread_rwlock_unlock(&map_lock);
    if (c) {
        /* No victim from now on: after the real free its address may be
         * another allocation's, which an eviction would move. */
        res_device *d = &devices[c->device];
        pthread_mutex_lock(&d->lock);
        for (uint32_t j = 0; j < c->pieces; j++)
            lms_plan_pin(&d->plan, &c[j].pc);
        pthread_mutex_unlock(&d->lock);
    }
    return (lms_res_chunk *)c;
}

void lms_residency_put_back(lms_res_chunk *taken)
{
    res_chunk *c = (res_chunk *)taken;
    if (!c)
        return;
    int k = (int)c->pieces;
    pthread_rwlock_wrlock(&map_lock);
    /* Its id slots stayed reserved; by_addr may have been filled meanwhile. */
    if (!room_by_addr((size_t)naddr + (size_t)k)) {
        pthread_rwlock_unlock(&map_lock);
        lms_residency_drop(taken);   /* out of memory: untracked, as if never added */
        return;
    }
    int i = upper(c->ptr);
    memmove(&by_addr[i + k], &by_addr[i], (size_t)(naddr - i) * sizeof *by_addr);
    memmove(&bases[i + k], &bases[i], (size_t)(naddr - i) * sizeof *bases);
    for (int j = 0; j < k; j++) {
        by_addr[i + j] = &c[j];
        bases[i + j] = c[j].ptr;
        by_id[c[j].pc.id] = &c[j];
        c[j].fetch_seen = 0;   /* a slot taken over meanwhile did not see it: every stream waits again */
    }
    naddr += k;
    atomic_fetch_add(&lms_residency_live, 1);
    pthread_rwlock_unlock(&map_lock);
    res_device *d = &devices[c->device];
    pthread_mutex_lock(&d->lock);
    for (int j = 0; j < k; j++)   /* the pin of the take: a victim again, its last use as it was */
        lms_plan_used(&d->plan, &c[j].pc, c[j].pc.last_use);
    pthread_mutex_unlock(&d->lock);
}

void lms_residency_drop(lms_res_chunk *taken)
{
    res_chunk *c = (res_chunk *)taken;
    if (!c)
        return;
    res_device *d = &devices[c->device];
    pthread_mutex_lock(&d->lock);
    lms_account *a = lms_account_of(c->device);
    for (uint32_t j = 0; j < c->pieces; j++) {
        lms_plan_dropped(&d->plan, &c[j].pc);
        if (c[j].pc.resident) {
            lms_plan_forget(&d->plan, &c[j].pc);
            if (a)
                lms_account_release(a, c[j].pc.charge);
        }
        if (c[j].kept && a)
            lms_account_release(a, c[j].kept);
    }
    pthread_mutex_unlock(&d->lock);
    free(c);
}

/* Adds id to ids[0..*found) (sorted, unique) unless there are max. */
static void add_id(uint32_t *ids, int *found, int max, uint32_t id)
{
    int k = *found;
    while (k > 0 && ids[k - 1] > id)
        k--;
    if ((k > 0 && ids[k - 1] == id) || *found >= max)
        return;
    memmove(&ids[k + 1], &ids[k], (size_t)(*found - k) * sizeof *ids);
    ids[k] = id;
    (*found)++;
}

/* A pointer into piece i (by_addr index) of a chunk managed in pieces:
 * remembers where it pointed, and adds the pieces it reaches: from its own
 * to the one where the next pointer any launch passed into the chunk
 * points (that one only when the pointer is past its start), or to the
 * chunk's end. */
static void add_pieces(int i, uint64_t v, uint32_t *ids, int *found, int max)
{
    res_chunk *c = by_addr[i], *g = c->group;
    uint64_t off = v - c->ptr + 1, seen = atomic_load_explicit(&c->start, memory_order_relaxed);
    while ((seen == 0 || off < seen) &&
           !atomic_compare_exchange_weak_explicit(&c->start, &seen, off, memory_order_relaxed, memory_order_relaxed))
        ;
    add_id(ids, found, max, c->pc.id);
    for (int j = i + 1; j < naddr && by_addr[j]->group == g && *found < max; j++) {
        uint64_t st = atomic_load_explicit(&by_addr[j]->start, memory_order_relaxed);
        if (st == 1)
            break;   /* the next tensor starts with this piece */
        add_id(ids, found, max, by_addr[j]->pc.id);
        if (st)
            break;   /* the next tensor starts inside it */
    }
}

/* Mixes a value into a hash. */
static uint64_t mix_role(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* lms_residency_find under map_lock; *roles gets the order in which the
 * find met its chunks: a hash of (parameter word, chunk) pairs. Sorted ids
 * alone do not tell conv(a -> b) from conv(b -> a); the launch's price
 * signature needs to. Each chunk of `device` found (a chunk in pieces:
 * its first piece) keeps the first word that pointed into it as its
 * role in launch `seq` (the caller holds that device's lock; device -1:
 * none kept). */
static int find_locked(const uint64_t *words, int n, uint32_t *ids, int max, uint64_t *roles_out, int device,
                       uint64_t seq)
{
    int found = 0;
    uint64_t roles = 0;
    if (naddr > 0) {
        uint64_t lo = by_addr[0]->ptr, hi = by_addr[naddr - 1]->ptr + by_addr[naddr - 1]->size;
        uint64_t last_lo = 1, last_hi = 0;   /* the chunk the last word found: empty */
        int last = -1;
        for (int w = 0; w < n && found < max; w++) {
            uint64_t v = words[w];
            if (v < lo || v >= hi)
                continue;
            int i;
            if (v >= last_lo && v < last_hi)   /* another pointer into the same chunk (tensors of one segment) */
                i = last;
            else {
                i = upper(v) - 1;
                if (i < 0 || v - bases[i] >= by_addr[i]->size)
                    continue;
                last = i, last_lo = bases[i], last_hi = bases[i] + by_addr[i]->size;
            }
            if (by_addr[i]->group)
                add_pieces(i, v, ids, &found, max);
            else
                add_id(ids, &found, max, by_addr[i]->pc.id);
            res_chunk *head = by_addr[i]->group ? by_addr[i]->group : by_addr[i];
            if (head->device == device && head->role_seq != seq)
                head->role_seq = seq, head->role = (uint32_t)w;
            roles = mix_role(roles, (uint64_t)w << 32 | by_addr[i]->pc.id);
        }
    }
    *roles_out = roles;
    return found;
}

int lms_residency_find(const uint64_t *words, int n, uint32_t *ids, int max)
{
    uint64_t roles;
    pthread_rwlock_rdlock(&map_lock);
    int found = find_locked(words, n, ids, max, &roles, -1, 0);
    pthread_rwlock_unlock(&map_lock);
    return found;
}

/* The chunk of an id (under map_lock), or NULL. */
static res_chunk *chunk_of(uint32_t id)
{
    return id < nids ? by_id[id] : NULL;
}

/* ---- stream slots ----------------------------------------------------------- */

/* A number for the calling thread, never reused (a pthread_t is, once a
 * thread is joined). */
static uint64_t thread_id(void)
{
    static atomic_uint_fast64_t next;
    static _Thread_local uint64_t id __attribute__((tls_model("initial-exec")));
    if (!id)
        id = atomic_fetch_add(&next, 1) + 1;
    return id;
}

/* A slot goes to another stream: no chunk of the device may count it as
 * ordered after its fetch any more (the new stream has waited for nothing).
 * Takes map_lock; the caller holds the device's lock and none of map_lock. */
static void forget_slot(res_device *d, int slot)
{
    int device = (int)(d - devices);
    pthread_rwlock_rdlock(&map_lock);
    for (int i = 0; i < naddr; i++)
        if (by_addr[i]->device == device)
            by_addr[i]->fetch_seen &= ~(1u << slot);   /* written under the device's lock */
    pthread_rwlock_unlock(&map_lock);
}

/* The slot of `stream` on a device (made, or taken over from the stream
 * used least recently), or -1 when its events cannot be made. Called with
 * the device's lock held and map_lock not held (a takeover walks the chunks). */
static int slot_of(res_device *d, CUstream stream)
{
    int free_s = -1, old = -1;
    bool per_thread = stream == CU_STREAM_PER_THREAD;
    uint64_t me = per_thread ? thread_id() : 0;
    CUcontext ctx = NULL;
    if ((per_thread || !stream || stream == CU_STREAM_LEGACY) && lms_drv.cuCtxGetCurrent &&
        lms_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
        ctx = NULL;
    for (int i = 0; i < SLOTS; i++) {
        res_slot *s = &d->slots[i];
        if (s->used && s->stream == stream && s->owner == me && s->ctx == ctx) {
            s->tick = ++d->tick;
            return i;
        }
        if (!s->used && free_s < 0)
            free_s = i;
        if (s->used && !s->keep && (old < 0 || s->tick < d->slots[old].tick))
            old = i;
    }
    if (free_s >= 0) {
        CUevent ring[RING];
        for (int k = 0; k < RING; k++)
            if (lms_drv.cuEventCreate(&ring[k], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
                while (k-- > 0)
                    lms_drv.cuEventDestroy(ring[k]);
                return -1;
            }
        res_slot *s = &d->slots[free_s];
        CUcontext cur = NULL;
        if (lms_drv.cuCtxGetCurrent && lms_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS)
            cur = NULL;
        *s = (res_slot){.stream = stream, .owner = me, .ctx = ctx, .used = true, .tick = ++d->tick,
                        .made_in = cur};
        memcpy(s->ring, ring, sizeof ring);
        return free_s;
    }
    if (old < 0)
        return -1;
    /* Taken over: what chunks remember of the old stream is waited for now,
     * then forgotten (the epoch changes). */
    res_slot *s = &d->slots[old];
    for (uint64_t k = s->count > RING ? s->count - RING + 1 : 1; k <= s->count; k++)
        lms_drv.cuEventSynchronize(s->ring[k % RING]);
    forget_slot(d, old);
    s->stream = stream;
    s->owner = me;
    s->ctx = ctx;
    s->epoch++;
    s->count = 0;
    s->tick = ++d->tick;
    return old;
}

/* A stream the program destroyed: the driver may hand its handle to a new
 * stream, which must not inherit its slot (and the fetches the old stream
 * waited for). Each of its slots stops matching any handle and becomes the
 * first to be taken over; until then its ring stays, as the records made on
 * the destroyed stream still complete and chunks may wait for them. Nothing
 * is waited for on the host here. */
static const char gone_mark;   /* the handle of destroyed streams' slots: one no stream has */
#define GONE ((CUstream)(uintptr_t)&gone_mark)

void lms_residency_stream_gone(CUstream stream)
{
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
        return;
    for (int i = 0; i < LMS_MAX_DEVICES; i++) {
        res_device *d = &devices[i];
        pthread_mutex_lock(&d->lock);
        for (int k = 0; d->ready && k < SLOTS; k++) {
            res_slot *s = &d->slots[k];
            if (s->used && !s->keep && s->stream == stream) {
                s->stream = GONE;
                s->tick = 0;
            }
        }
        pthread_mutex_unlock(&d->lock);
    }
}

/* Records the next event of slot i on its stream; returns the point. When
 * it cannot, it finishes the stream's work now (the point is then done). */
static res_ref record(res_device *d, int i)
{
    res_slot *s = &d->slots[i];
    s->count++;
    d->unjoined |= 1u << i;
    if (lms_drv.cuEventRecord(s->ring[s->count % RING], s->stream) != CUDA_SUCCESS)
        lms_drv.cuStreamSynchronize(s->stream);
    return (res_ref){.slot = i, .epoch = s->epoch, .count = s->count};
}

/* Makes `stream` wait for point r (nothing when r is none or forgotten).
 * A point RING or more records back has had its event recorded again
 * later: the wait is then for the oldest record still in the ring (the
 * first after r that can be waited for), not for the one that took r's
 * event, which may be a kernel issued just now. */
static void wait_ref(res_device *d, CUstream stream, res_ref r)
{
    if (r.slot < 0 || d->slots[r.slot].epoch != r.epoch || r.count == 0)
        return;
    const res_slot *s = &d->slots[r.slot];
    uint64_t k = s->count - r.count >= RING ? s->count - RING + 1 : r.count;
    lms_drv.cuStreamWaitEvent(stream, s->ring[k % RING], 0);
}

/* The context current now, or NULL. */
static CUcontext current_context(void)
{
    CUcontext cur = NULL;
    if (!lms_drv.cuCtxGetCurrent || lms_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS)
        return NULL;
    return cur;
}

/* Makes the ledger's events (in the current context); false when one
 * cannot be made (none is kept then). The ledger starts empty. */
static bool make_ledger(res_device *d)
{
    d->points = 0;
    d->freed = d->evicted;
    for (int k = 0; k < LEDGER; k++)
        if (lms_drv.cuEventCreate(&d->ledger[k], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
            while (k-- > 0)
                lms_drv.cuEventDestroy(d->ledger[k]);
            memset(d->ledger, 0, sizeof d->ledger);
            return false;
        }
    return true;
}

/* Makes the side and eviction streams and the ledger's events again after
 * the context they were made in went away (lms_residency_context_gone).
 * Without them fetches and evictions go on the legacy stream, unordered
 * events replaced by synchronizations. Under the device's lock. */
static void remake_streams(res_device *d)
{
    d->remake = false;
    d->made_in = current_context();
    if (lms_drv.cuStreamCreate(&d->side, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        d->side = NULL;
    if (lms_drv.cuStreamCreate(&d->evict, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        d->evict = NULL;
    bool ledger = make_ledger(d);
    d->side_slot = slot_of(d, d->side);
    if (d->side_slot >= 0)
        d->slots[d->side_slot].keep = true;
    if (!d->side || !d->evict || !ledger || d->side_slot < 0)
        lms_log(LMS_LEVEL_WARN, "residency: cannot make streams or events again after a context reset; "
                                "fetches and evictions go on the default stream");
}

/* Sets a device up on its first launch: the planner and two streams. */
static bool ready_device(res_device *d)
{
    if (d->ready) {
        if (d->remake)
            remake_streams(d);
        return true;
    }
    d->made_in = current_context();
    const lms_policy *policy = lms_opt.policy ? lms_opt.policy : lms_policy_find("none");
    if (policy->on_demand &&
        (!lms_drv.cuMemPrefetchAsync || !lms_drv.cuStreamCreate || !lms_drv.cuEventCreate ||
         !lms_drv.cuEventRecord || !lms_drv.cuStreamWaitEvent || !lms_drv.cuEventSynchronize ||
         !lms_drv.cuStreamSynchronize || !lms_drv.cuEventDestroy ||
         lms_drv.cuStreamCreate(&d->side, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
         lms_drv.cuStreamCreate(&d->evict, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
         !make_ledger(d) || (d->side_slot = slot_of(d, d->side)) < 0)) {
        lms_log(LMS_LEVEL_WARN, "residency: cannot create streams or events; chunks stay where they are");
        policy = lms_policy_find("none");
    }
    if (!lms_plan_init(&d->plan, policy))
        return false;
    if (policy->on_demand)
        d->slots[d->side_slot].keep = true;
    d->ready = true;
    return true;
}

/* Counts a broken invariant (a bug if it ever happens) and says so once. */
static void check_budget(lms_account *a)
{
    if (lms_account_used(a) > a->budget) {
        static atomic_uint said;
        atomic_fetch_add(&a->violations, 1);
        lms_log_capped(LMS_LEVEL_ERROR, &said, 1, "residency: device bytes %llu passed the budget %llu",
                       (unsigned long long)lms_account_used(a), (unsigned long long)a->budget);
    }
}

static bool op_reserve(void *ctx, uint64_t bytes)
{
    live *l = ctx;
    return lms_account_reserve(l->a, bytes, l->a->budget);
}

static uint64_t op_budget(void *ctx) { return ((live *)ctx)->a->budget; }

/* Forgets what a chunk remembers of its fetch and uses. */
static void forget_refs(res_chunk *c)
{
    c->fetch.slot = -1;
    c->fetch_seen = 0;
    for (int u = 0; u < USERS; u++)
        c->users[u].slot = -1;
    c->users_all = false;
}

/* ---- the ledger of freed bytes ----------------------------------------------
 *
 * An eviction returns its charge when it is issued; its bytes leave the
 * device when the copy runs. `evicted` counts the charges issued on the
 * eviction stream, in its order, and a point recorded on that stream says
 * how many of them are off the device once it completes. A fetch may start
 * when the bytes still leaving fit beside what is charged: with `slack`
 * the budget less the charged bytes (its own reservation included), it
 * waits for the first point at or past `evicted - slack`, not for every
 * eviction issued (most of a large victim's bytes are not its room). A
 * large victim is evicted in slices with a point after each, so the fetch
 * that needs its first slice waits for that slice only; a large fetch goes
 * in slices too, each waiting for its own room. Every bytes count is in
 * charge units. */

/* The charged bytes' distance below the budget now (0 when at or past it). */
static uint64_t slack_of(const lms_account *a)
{
    uint64_t used = lms_account_used(a);
    return a->budget > used ? a->budget - used : 0;
}

/* Records a point after the evictions issued so far, unless the latest
 * point is there already or they are known done. When it cannot, it
 * finishes the eviction stream now. Under the device's lock. */
static void ledger_record(res_device *d)
{
    if (d->evicted == d->freed ||
        (d->points > 0 && d->ledger_at[(d->points - 1) % LEDGER] == d->evicted))
        return;
    uint64_t k = d->points % LEDGER;
    if (!d->ledger[k] || lms_drv.cuEventRecord(d->ledger[k], d->evict) != CUDA_SUCCESS) {
        lms_drv.cuStreamSynchronize(d->evict);   /* cannot order it: finish it now */
        d->freed = d->evicted;
        return;
    }
    d->ledger_at[k] = d->evicted;
    d->points++;
}

/* The point to wait for until the eviction stream has freed `upto` bytes
 * (of `evicted`): the earliest still in the ring at or past it, recording
 * one at the end when none is; -1 when they are known freed. Under the
 * device's lock. */
static int64_t ledger_point(res_device *d, uint64_t upto)
{
    if (upto <= d->freed)
        return -1;
    if (d->points == 0 || d->ledger_at[(d->points - 1) % LEDGER] < upto) {
        ledger_record(d);
        if (upto <= d->freed)
            return -1;
    }
    uint64_t first = d->points > LEDGER ? d->points - LEDGER : 0, k = d->points - 1;
    while (k > first && d->ledger_at[(k - 1) % LEDGER] >= upto)
        k--;   /* at most LEDGER steps; points are in the order of `evicted` */
    return (int64_t)k;
}

/* Makes stream s wait until the eviction stream has freed `upto` bytes.
 * Under the device's lock. */
static void ledger_wait(res_device *d, CUstream s, uint64_t upto)
{
    int64_t k = ledger_point(d, upto);
    if (k >= 0)
        lms_drv.cuStreamWaitEvent(s, d->ledger[k % LEDGER], 0);
}

/* Where (offset in c) slice j of a chunk's move ends: a chunk of at most
 * SLICE bytes moves whole; a larger one in slices that end on 2 MiB-aligned
 * addresses at most SLICE apart (the chunk's end for the last). */
static uint64_t slice_end(const res_chunk *c, uint64_t j)
{
    if (c->size <= SLICE)
        return c->size;
    uint64_t e = c->ptr / PIECE_ALIGN * PIECE_ALIGN + (j + 1) * SLICE;
    return e < c->ptr + c->size ? e - c->ptr : c->size;
}

/* Sends a chunk back to the host after its fetch and its uses on every
 * stream since, in slices when it is larger than one, with a ledger point
 * after each slice but the last: its charge returns as the slices are
 * issued, and a fetch waits only for the slices its room needs. */
static void op_evict(void *ctx, lms_plan_chunk *pc)
{
    live *l = ctx;
    res_chunk *c = (res_chunk *)pc;
    res_device *d = l->d;
    res_ref f = c->fetch;
    if (f.slot >= 0 && d->slots[f.slot].epoch == f.epoch && f.count > d->slots[f.slot].count)
        record(d, f.slot);   /* fetched in this batch, not yet recorded: record it now */
    wait_ref(d, d->evict, f);
    for (int u = 0; u < USERS; u++)
        wait_ref(d, d->evict, c->users[u]);
    for (int i = 0; c->users_all && i < SLOTS; i++)
        if (d->slots[i].used)
            wait_ref(d, d->evict, (res_ref){i, d->slots[i].epoch, d->slots[i].count});
    forget_refs(c);
    bool sliced = c->size > SLICE;
    if (sliced)
        ledger_record(d);   /* a fetch that needs only earlier evictions waits for none of these slices */
    CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST};
    uint64_t off = 0, back = 0;   /* bytes issued; charge returned */
    for (uint64_t j = 0; off < c->size; j++) {
        uint64_t end = slice_end(c, j);
        if (lms_drv.cuMemPrefetchAsync(c->ptr + off, end - off, host, 0, d->evict) != CUDA_SUCCESS)
            break;
        /* The last slice returns what is left of the charge (it rounds the size up). */
        uint64_t part = end == c->size ? pc->charge - back : end - off < pc->charge - back ? end - off
                                                                                           : pc->charge - back;
        off = end;
        back += part;
        d->evicted += part;
        lms_account_release(l->a, part);
        if (sliced && off < c->size)
            ledger_record(d);
    }
    c->out_from = d->evicted - back;
    c->out_to = back ? d->evicted : 0;
    if (off < c->size) {
        /* Still on the device (what was not issued): its bytes stay charged
         * until it is fetched again or freed. */
        static atomic_uint said;
        c->kept += pc->charge - back;
        lms_log_capped(LMS_LEVEL_WARN, &said, 1, "residency: an eviction failed; its bytes stay charged");
        if (off == 0)
            return;
    }
    atomic_fetch_add(&l->a->evicted_bytes, off);
    atomic_fetch_add(&l->a->evictions, 1);
    if (lms_trace_on)
        lms_trace_move("evict", l->device, c->group ? c->group->pc.id : pc->id, off, false);
}

/* Fetches a chunk to the device on the launch stream, or ahead on the side
 * stream, in slices when it is larger than one, each after the evictions
 * that free its room and after the same range's copy out in the chunk's
 * own eviction (the ledger: room alone may come from a free, and a copy in
 * unordered with a copy out still queued could be overtaken by it); the
 * record after the batch (op_fetched) marks its end. */
static bool op_fetch(void *ctx, lms_plan_chunk *pc, bool ahead)
{
    live *l = ctx;
    res_chunk *c = (res_chunk *)pc;
    res_device *d = l->d;
    CUstream s = ahead ? d->side : l->stream;
    int slot = ahead ? d->side_slot : l->slot;
    if (c->remote > 0 && lms_opt.stream_order) {
        /* A launch reads it over the link and is not recorded yet: a copy
         * now could not be ordered after it. It stays where it is. */
        lms_account_release(l->a, pc->charge);
        return false;
    }
    if (!ahead && !l->fetch_tried) {   /* the batch's time, its waits included */
        l->fetch_tried = true;
        l->fetch_timed = lms_timing_fetch_begin(l->device, s);
    }
    if (lms_opt.stream_order) {   /* the copy waits for the reads over the link since the eviction */
        for (int u = 0; u < USERS; u++)
            wait_ref(d, s, c->users[u]);
        for (int i = 0; c->users_all && i < SLOTS; i++)
            if (d->slots[i].used)
                wait_ref(d, s, (res_ref){i, d->slots[i].epoch, d->slots[i].count});
    }
    /* Before slice j lands, the part of the chunk after it is charged but
     * not on the device: the evictions in flight may hold that much more. */
    uint64_t slack = slack_of(l->a), off = 0;
    CUmemLocation dev = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = c->device};
    for (uint64_t j = 0; off < c->size; j++) {
        uint64_t end = slice_end(c, j);
        uint64_t after = end == c->size ? 0 : pc->charge - end;   /* charged bytes not landed yet */
        uint64_t free_now = slack + after;
        uint64_t upto = d->evicted > free_now ? d->evicted - free_now : 0;
        if (c->out_to) {   /* and after the same range left in its own eviction */
            uint64_t own = c->out_from + (end == c->size ? pc->charge : end);
            own = own < c->out_to ? own : c->out_to;
            upto = upto > own ? upto : own;
        }
        ledger_wait(d, s, upto);
        if (lms_drv.cuMemPrefetchAsync(c->ptr + off, end - off, dev, 0, s) != CUDA_SUCCESS) {
            if (off == 0) {
                lms_account_release(l->a, pc->charge);
                return false;
            }
            break;   /* the rest stays on the host: the kernel reaches it over the link */
        }
        off = end;
    }
    c->out_to = 0;
    if (c->kept) {   /* the charge of a failed eviction: now the new reservation's */
        lms_account_release(l->a, c->kept);
        c->kept = 0;
    }
    forget_refs(c);
    if (slot >= 0) {
        res_slot *sl = &d->slots[slot];
        c->fetch = (res_ref){.slot = slot, .epoch = sl->epoch, .count = sl->count + 1};
        c->fetch_seen = 1u << slot;
    } else {
        lms_drv.cuStreamSynchronize(s);   /* cannot order it: finish it now */
    }
    if (!ahead)
        l->fetch_bytes += c->size;
    atomic_fetch_add(&l->a->prefetched_bytes, c->size);
    atomic_fetch_add(&l->a->prefetches, 1);
    check_budget(l->a);
    if (lms_trace_on)
        lms_trace_move("prefetch", l->device, c->group ? c->group->pc.id : pc->id, c->size, ahead);
    return true;
}

/* One record after a batch of fetches: the point op_fetch promised. */
static void op_fetched(void *ctx, bool ahead)
{
    live *l = ctx;
    int slot = ahead ? l->d->side_slot : l->slot;
    if (slot >= 0)
        record(l->d, slot);
    if (!ahead && l->fetch_timed) {
        lms_timing_fetch_end(l->device, l->fetch_timed, l->stream, l->fetch_bytes);
        l->fetch_timed = 0;
    }
}

/* The launch's stream waits for c's fetch, once per stream. */
static void op_wait_ready(void *ctx, lms_plan_chunk *pc)
{
    live *l = ctx;
    res_chunk *c = (res_chunk *)pc;
    if (c->fetch.slot < 0 || !lms_opt.stream_order || (l->slot >= 0 && (c->fetch_seen >> l->slot & 1u)))
        return;
    wait_ref(l->d, l->stream, c->fetch);
    if (l->slot >= 0)
        c->fetch_seen |= 1u << l->slot;
}

/* The chunk of an id if it belongs to this device (under map_lock). */
static lms_plan_chunk *op_lookup(void *ctx, uint32_t id)
{
    live *l = ctx;
    res_chunk *c = chunk_of(id);
    return c && c->device == l->device ? &c->pc : NULL;
}

/* What managed chunks may hold: the budget less the device chunks. */
static uint64_t op_room(void *ctx)
{
    return lms_account_room(((live *)ctx)->a);
}

/* The live managed chunks' bytes. */
static uint64_t op_managed(void *ctx)
{
    return atomic_load(&((live *)ctx)->a->live_bytes[LMS_PLACE_MANAGED]);
}

/* The id prices are kept under: a piece's chunk (its first piece). */
static uint32_t price_id(const res_chunk *c)
{
    return c->group ? c->group->pc.id : c->pc.id;
}

/* The parameter word of the launch being planned that pointed into c (a
 * piece's chunk's), or LMS_PRICE_NO_ROLE when no scan of its parameters
 * named c. */
static uint32_t role_in(const live *l, const res_chunk *c)
{
    const res_chunk *head = c->group ? c->group : c;
    return l->seq && head->role_seq == l->seq ? head->role : LMS_PRICE_NO_ROLE;
}

/* The measured price of reading c in place for the launch being planned. */
static double op_price(void *ctx, lms_plan_chunk *pc)
{
    live *l = ctx;
    const res_chunk *c = (const res_chunk *)pc;
    return lms_timing_price(l->device, l->fn, l->fit, l->sig, price_id(c), role_in(l, c));
}

/* The measured price of reading c in place for a launch of the one being
 * planned's signature on grids of its class only (negative: none). */
static double op_class_price(void *ctx, lms_plan_chunk *pc)
{
    live *l = ctx;
    return lms_timing_price_in_class(l->device, l->fn, l->fit, l->sig, price_id((const res_chunk *)pc));
}

/* The price of reading c in place for the launch being planned learned
 * for the parameter word that pointed into it (its role) over the
 * function's launches of any signature, and its spread; negative when
 * unknown or when the launch's chunks were not found by a scan of its
 * parameters. */
static double op_role_price(void *ctx, lms_plan_chunk *pc, double *spread)
{
    const live *l = ctx;
    uint32_t role = role_in(l, (const res_chunk *)pc);
    *spread = 0;
    if (role == LMS_PRICE_NO_ROLE)
        return -1;
    return lms_timing_role_price(l->device, l->fn, l->fit, role, spread);
}

/* The fitted price of reading in place for the function being launched. */
static double op_fn_price(void *ctx, int *learn)
{
    const live *l = ctx;
    return lms_timing_fn_price(l->device, l->fn, l->fit, learn);
}

/* How many launches of the launched function its fit was taught. */
static uint32_t op_fn_seen(void *ctx)
{
    const live *l = ctx;
    return lms_timing_fn_seen(l->device, l->fn);
}

/* The first prices of the latest functions fitted on the device. */
static bool op_fn_prior(void *ctx, double *lo, double *hi)
{
    return lms_timing_fn_prior(((live *)ctx)->device, lo, hi);
}

/* The new phases the device's launches marked together so far. */
static uint32_t op_fn_phase(void *ctx)
{
    return lms_timing_fn_phase(((live *)ctx)->device);
}

/* What a demand fetch holds a launch per byte, as measured. */
static double op_fetch_cost(void *ctx)
{
    return lms_timing_fetch_cost(((live *)ctx)->device);
}

/* The bytes fetches carried to the device since the start. */
static uint64_t op_moved(void *ctx)
{
    return atomic_load(&((live *)ctx)->a->prefetched_bytes);
}

/* The bytes the launch being planned could read over the link within its
 * shortest measured duration, at what a demand fetch was measured to hold
 * a launch per byte; 0 when either is unknown. */
static uint64_t op_hides(void *ctx)
{
    const live *l = ctx;
    double base = lms_timing_base(l->device, l->fn, l->sig), per = lms_timing_fetch_cost(l->device);
    return base > 0 && per > 0 && base / per < 1e18 ? (uint64_t)(base / per) : 0;
}

/* The blocks of the launch being planned (its grid's), 0 when unknown. */
static uint64_t op_blocks(void *ctx)
{
    return ((const live *)ctx)->blocks;
}

/* Whether a timed launch of the one being planned would price its reads
 * in place (lms_timing_local_base). */
static bool op_priceable(void *ctx)
{
    const live *l = ctx;
    return lms_timing_local_base(l->device, l->fn, l->sig) > 0;
}

/* Whether the launch being planned and the ALONE launches before it were
 * all issued on its stream (note_stream; false for a reclaim, seq 0). */
static bool op_alone(void *ctx)
{
    const live *l = ctx;
    return l->seq >= l->d->other_at + ALONE;
}

/* Counts the launches issued in a row on the stream of launch l (its
 * slot and the slot's epoch: the per-thread default stream of each
 * thread is a stream of its own, as in slot_of), for op_alone. A launch
 * without a slot starts the count again. Not several_streams (the slots
 * held): a program may hold streams it has not launched on for long.
 * Under the device's lock. */
static void note_stream(res_device *d, const live *l)
{
    uint32_t epoch = l->slot >= 0 ? d->slots[l->slot].epoch : 0;
    if (l->slot < 0 || l->slot != d->last_slot || epoch != d->last_epoch || d->other_at == 0) {
        d->last_slot = l->slot;
        d->last_epoch = epoch;
        d->other_at = l->seq;
    }
}

/* A step's boundary, recorded on the launch's stream when it is that of
 * point `like` (timing.c). */
static int op_mark(void *ctx, int like)
{
    const live *l = ctx;
    return lms_timing_mark(l->device, l->stream, like);
}

/* A point after the work issued so far on every stream launches ran on
 * (the engine's fetch-ahead aside): the device's gauge stream (timing.c)
 * waits for the latest record of each slot recorded on since the last
 * point, and the point is recorded there. Timed on one of several busy
 * streams, a point completes when that stream's last kernel did, which
 * may be many launches before the others': parts of 16 launches then
 * varied by half and hid a 50% difference between the two ways of
 * blindways.c. The launch's own stream is recorded on first: a launch
 * with no managed chunk leaves no record, and parts of such launches
 * timed nothing (their time went to a later part, or past the window).
 * Without a gauge stream, a point on the launch's stream. Under the
 * device's lock. */
static int op_mark_all(void *ctx, int like)
{
    live *l = ctx;
    res_device *d = l->d;
    CUstream gauge = lms_drv.cuStreamWaitEvent ? lms_timing_gauge(l->device) : NULL;
    if (!gauge)
        return lms_timing_mark(l->device, l->stream, like);
    if (l->slot >= 0)
        record(d, l->slot);   /* launches of no managed chunk left no record of their own */
    for (int i = 0; i < SLOTS; i++) {
        const res_slot *s = &d->slots[i];
        if ((d->unjoined >> i & 1) && s->used && !s->keep && s->count)
            lms_drv.cuStreamWaitEvent(gauge, s->ring[s->count % RING], 0);   /* an event of any context */
    }
    d->unjoined = 0;
    return lms_timing_mark(l->device, gauge, like);
}

/* The device time between two boundaries, or negative (timing.c). */
static double op_between(void *ctx, int from, int to)
{
    return lms_timing_between(((live *)ctx)->device, from, to);
}

/* Whether c is used by the latest launch recorded on a stream other than
 * the planned launch's: that kernel may still run, and evicting c would
 * wait for it (and the fetch behind the eviction, and this launch).
 * O(USERS), no driver call. */
static bool op_busy(void *ctx, const lms_plan_chunk *pc)
{
    const live *l = ctx;
    const res_chunk *c = (const res_chunk *)pc;
    for (int u = 0; u < USERS; u++) {
        res_ref r = c->users[u];
        if (r.slot < 0 || r.slot == l->slot)
            continue;
        const res_slot *s = &l->d->slots[r.slot];
        if (s->epoch == r.epoch && s->count == r.count)
            return true;
    }
    return false;
}

static const lms_plan_ops live_ops = {
    .reserve = op_reserve, .budget = op_budget, .evict = op_evict, .fetch = op_fetch,
    .fetched = op_fetched, .wait_ready = op_wait_ready, .lookup = op_lookup, .room = op_room,
    .managed = op_managed, .price = op_price, .class_price = op_class_price, .role_price = op_role_price, .fn_price = op_fn_price, .fn_prior = op_fn_prior, .fn_seen = op_fn_seen,
    .fn_phase = op_fn_phase,
    .fetch_cost = op_fetch_cost,
    .moved = op_moved, .hides = op_hides, .priceable = op_priceable, .alone = op_alone, .mark = op_mark, .between = op_between, .busy = op_busy,
    .mark_all = op_mark_all, .blocks = op_blocks,
};

/* ---- a thread's memory for wide launches ------------------------------------ */

/* What a launch of more than LMS_TOKEN_FEW chunks needs beyond its token:
 * the token's ids, the chunks it pins, and room for the ids the trace and
 * the timing pass on. One block per thread (scratch.c), grown to its widest
 * launch and kept, so the steady state allocates nothing; freed at thread
 * exit. A thread runs one launch hook at a time (a nested call passes
 * through), so the scratch serves one launch from before() to after(). */
typedef struct wide_scratch {
    size_t cap;               /* entries of each array */
    lms_plan_chunk **mine;    /* the chunks the launch pinned */
    uint32_t *ids;            /* the token's ids (tok->more) */
    uint32_t *aux;            /* the trace's chunk ids, then the ids read in place */
} wide_scratch;

/* This thread's scratch with room for n entries per array (one block owned
 * by scratch.c: the struct, then the arrays), or NULL when it cannot have
 * it (no memory, no pthread key left); a scratch too small is replaced, at
 * least doubling. */
static wide_scratch *wide_scratch_for(int n)
{
    const size_t per = sizeof(lms_plan_chunk *) + 2 * sizeof(uint32_t);   /* bytes per entry */
    size_t size;
    wide_scratch *g = lms_scratch_get(LMS_SCRATCH_WIDE, sizeof *g + (size_t)n * per, &size);
    if (!g)
        return NULL;
    g->cap = (size - sizeof *g) / per;
    g->mine = (lms_plan_chunk **)(g + 1);
    g->ids = (uint32_t *)(g->mine + g->cap);
    g->aux = g->ids + g->cap;
    return g;
}

#define SHARE_RUNS 8   /* chunks read in place by one launch that role_of shares its slowdown among, at most */
#define MINOR_SHARE 4  /* a chunk read in place beside one this many times its bytes is not priced by the launch */

/* The chunks one launch reads in place (time_launch): each by its first
 * piece or whole chunk, with the bytes read of it; and the longest run
 * of one chunk's pieces (`top`, `top_bytes`). */
typedef struct remote_runs {
    const res_chunk *head[SHARE_RUNS];
    uint64_t bytes[SHARE_RUNS];
    int n;          /* chunks counted in head[] */
    bool over;      /* more than SHARE_RUNS chunks */
    const res_chunk *top;
    uint64_t top_bytes;
} remote_runs;

/* Counts `size` bytes read in place of chunk `head` into runs. */
static void count_run(remote_runs *runs, const res_chunk *head, uint64_t size)
{
    for (int i = 0; i < runs->n; i++)
        if (runs->head[i] == head) {
            runs->bytes[i] += size;
            return;
        }
    if (runs->n == SHARE_RUNS) {
        runs->over = true;
        return;
    }
    runs->head[runs->n] = head;
    runs->bytes[runs->n++] = size;
}

/* The parameter position (price.h) a launch's reads in place price,
 * `bytes` of them in all over the chunks in runs, `local` bytes of its
 * chunks on the device. One chunk holding 9/10 of them or more
 * (runs->top) prices the parameter word that pointed into it with the
 * whole slowdown; under a quarter of the launch's bytes (`partial`),
 * only where the slowdown is more than the compute could hide, or the
 * position's price says it could not have hidden them (price.c,
 * partial_slowdown: on bench/shapes `operands` at 1.25x at the defaults,
 * the room under one operand, launches reading a third of the re-read
 * one in place ran 7.5x their base, and its position went unpriced).
 * Else, when the reads in place are a quarter of the launch's bytes or
 * more, and every chunk read in place
 * but one has its position priced above zero (spread within half the
 * price), the one left has no price for its position at all, and it
 * holds a quarter of the launch's bytes or more, its position is priced
 * by what the slowdown leaves over the others' (price.c,
 * lms_price_learn_read; `known_ns`, `known_n`): launches reading both
 * operands of a GEMM in place, the re-read one's position never priced,
 * kept lending it the price of the one read once (bench/shapes
 * `operands`). Not beside a zero (a read the compute hid alone may show
 * beside another's), nor for a position priced already, however spread
 * (a share would pull its mean). Else none. Under the device lock and
 * map_lock. */
static lms_price_role_read role_of(const live *l, const remote_runs *runs, uint64_t bytes, uint64_t local)
{
    lms_price_role_read none = {.role = LMS_PRICE_NO_ROLE};
    if (!l->seq || !runs->top)
        return none;
    bool partial = bytes < (bytes + local) / 4;
    if (runs->top_bytes >= bytes - bytes / 10)
        return runs->top->role_seq == l->seq
                   ? (lms_price_role_read){.role = runs->top->role, .bytes = bytes, .partial = partial}
                   : none;
    if (runs->over || partial)
        return none;
    int rest = -1, known_n = 0;
    double known = 0;
    for (int i = 0; i < runs->n; i++) {
        const res_chunk *h = runs->head[i];
        if (h->role_seq != l->seq)
            return none;   /* no scan named the word that pointed into it */
        double spread = 0, price = lms_timing_role_price(l->device, l->fn, l->fit, h->role, &spread);
        if (price > 0 && lms_price_agrees(price, spread)) {
            known += price * (double)runs->bytes[i];
            known_n++;
        } else if (price < 0 && rest < 0) {
            rest = i;
        } else {
            return none;   /* a zero, a spread price, or two positions without one */
        }
    }
    if (rest < 0 || runs->bytes[rest] < (bytes + local) / 4)
        return none;
    return (lms_price_role_read){
        .role = runs->head[rest]->role, .bytes = runs->bytes[rest], .known_ns = known, .known_n = known_n};
}

/* Keeps in remote[0..k) (the price ids a launch reads in place, a run of
 * one chunk's pieces under one: they are adjacent in a launch's sorted
 * ids) only the runs whose bytes read in place are at least
 * 1/MINOR_SHARE of the largest run's (`top`); returns how many.
 * tids[0..n): the launch's ids, REMOTE_BIT on those read in place. A
 * launch's slowdown per byte read in place prices each of those chunks,
 * and a chunk read beside one many times its size takes the large one's
 * price: bench/shapes `big-grid` at 2x, seed 1, priced the weight
 * gradient's pieces (written once) at 0.99 ns/B from launches that read
 * the activation (re-read up to 127 times) in place beside five of them,
 * and fetched them ahead of the activation from then on (122 ms a step;
 * `lru`, which had no price for them, 99 ms). Under map_lock. */
static int drop_minor(const uint32_t *tids, int n, uint32_t *remote, int k, uint64_t top)
{
    if (k < 2)
        return k;
    int kept = 0;
    uint32_t cur = 0;
    uint64_t run = 0;
    for (int i = 0; i <= n; i++) {
        const res_chunk *c = i < n && (tids[i] & REMOTE_BIT) ? chunk_of(tids[i] & ~REMOTE_BIT) : NULL;
        if (i < n && !c)
            continue;
        uint32_t id = c ? price_id(c) : 0;
        if (run > 0 && (!c || id != cur)) {   /* the run of cur ends */
            if (run * MINOR_SHARE >= top)
                remote[kept++] = cur;
            run = 0;
        }
        if (c)
            cur = id, run += c->size;
    }
    return kept;
}

/* Times the launch when it is sampled (timing.c): the chunks it reads in
 * place (ids with REMOTE_BIT, by their chunk's id) and their bytes, the
 * bytes of its chunks on the device, and the position its reads in place
 * price (role_of) go with the start event; remote (n entries, the
 * caller's) is room for those ids. Nothing for a launch not sampled.
 * Under the device lock and map_lock. */
static int time_launch(const live *l, uint64_t seq, uintptr_t fn, const uint32_t *tids, int n, uint32_t *remote)
{
    if (!lms_timing_wanted(l->device, seq, l->sig, l->d->plan.explore))
        return 0;
    int k = 0;
    uint64_t bytes = 0, local = 0, run = 0;   /* run: bytes of remote[k - 1] */
    remote_runs runs = {.n = 0};
    for (int i = 0; i < n; i++) {
        res_chunk *c = chunk_of(tids[i] & ~REMOTE_BIT);
        if (!c)
            continue;
        if (!(tids[i] & REMOTE_BIT)) {
            local += c->size;
            continue;
        }
        bytes += c->size;
        uint32_t id = price_id(c);
        if (k == 0 || remote[k - 1] != id)   /* pieces of a chunk have consecutive ids */
            remote[k++] = id, run = 0;
        run += c->size;
        const res_chunk *head = c->group ? c->group : c;
        if (run > runs.top_bytes)
            runs.top_bytes = run, runs.top = head;
        count_run(&runs, head, c->size);
    }
    k = drop_minor(tids, n, remote, k, runs.top_bytes);
    lms_price_role_read role = role_of(l, &runs, bytes, local);
    return lms_timing_begin(l->device, l->stream, fn, l->fit, l->sig, remote, k, bytes, local, &role);
}

/* Traces a launch with the ids of its chunks (a chunk managed in pieces
 * by its first piece's id, the id its allocation was traced with);
 * chunk_ids (n entries, the caller's) is room for them. Under map_lock. */
static void trace_launch(int device, uint64_t seq, uintptr_t fn, CUstream stream, const uint32_t *ids, int n,
                         uint32_t *chunk_ids)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        res_chunk *c = chunk_of(ids[i]);
        add_id(chunk_ids, &m, n, c && c->group ? c->group->pc.id : ids[i]);
    }
    lms_trace_launch(device, seq, fn, lms_launch_name((CUfunction)fn), (uint64_t)(uintptr_t)stream, chunk_ids, m);
}

/* The first piece of the next chunk managed in pieces among ids[*i..n)
 * (a token's ids, sorted: a chunk's pieces have consecutive ids, so each
 * chunk comes once), advancing *i past it; NULL when none is left. Under
 * map_lock. */
static res_chunk *next_group(const uint32_t *ids, int n, int *i, int device)
{
    res_chunk *last = *i > 0 ? chunk_of(ids[*i - 1] & ~REMOTE_BIT) : NULL;
    last = last ? last->group : NULL;
    for (; *i < n; (*i)++) {
        res_chunk *c = chunk_of(ids[*i] & ~REMOTE_BIT);
        if (c && c->group && c->group != last && c->device == device) {
            (*i)++;
            return c->group;
        }
    }
    return NULL;
}

/* A kernel given a pointer into a chunk managed in pieces may reach every
 * byte of it, not only the pieces judged needed: the launch's stream waits
 * for the fetch of every resident piece of such a chunk (once per stream,
 * as for any use). Under the device lock and map_lock. */
static void wait_groups(live *l, const uint32_t *ids, int n)
{
    int i = 0;
    for (res_chunk *g; (g = next_group(ids, n, &i, l->device));)
        for (uint32_t k = 0; k < g->pieces; k++)
            if (g[k].pc.resident)
                op_wait_ready(l, &g[k].pc);
}

/* The bytes launch naming c counts toward the account's named bytes (the
 * residency room's hint, src/common/room.c): its size; for a chunk in
 * pieces, the whole chunk's once (at its first piece among the launch's,
 * `prev` the chunk named before c), as the trace names it. */
static uint64_t named_size(const res_chunk *c, const res_chunk *prev)
{
    const res_chunk *g = c->group;
    if (!g)
        return c->size;
    if (prev && prev->group == g)
        return 0;
    const res_chunk *last = &g[g->pieces - 1];
    return last->ptr + last->size - g->ptr;
}

/* The key a launch of fn with `scan` (NULL: no grid known) is fitted
 * under (fnprice.h): fn and the class of its grid, never 0 for a
 * function; fn alone without a grid. */
static uintptr_t fit_key(uintptr_t fn, const lms_scan *scan)
{
    uintptr_t k = fn && scan && scan->shape ? fn ^ (uintptr_t)scan->shape : fn;
    return k ? k : fn;
}

static void launch_before(int device, CUstream stream, uintptr_t fn, const uint32_t *ids, int n,
                          const lms_scan *scan, lms_launch_token *tok);

/* Before a launch (lms_residency_before and _before_scan): nothing for a
 * captured one; else launch_before under the context lock (place.h). */
static void before(int device, CUstream stream, uintptr_t fn, const uint32_t *ids, int n, const lms_scan *scan,
                   lms_launch_token *tok)
{
    tok->device = -1;
    tok->more = NULL;
    tok->timed = 0;
    tok->n = 0;
    tok->pieces = false;
    if (lms_capture_before_work(stream))
        return;   /* captured, not run: the graph's launch does this work */
    lms_place_shared_begin();
    launch_before(device, stream, fn, ids, n, scan, tok);
    lms_place_shared_end();
}

/* before() for a launch that runs: its chunks are ids[0..n), or, with
 * `scan`, those its words point into, found under the same hold of
 * map_lock as the rest of the launch's decisions. */
static void launch_before(int device, CUstream stream, uintptr_t fn, const uint32_t *ids, int n,
                          const lms_scan *scan, lms_launch_token *tok)
{
    lms_account *a = lms_account_of(device);
    if (!a)
        return;
    res_device *d = &devices[device];
    pthread_mutex_lock(&d->lock);
    if (!ready_device(d)) {
        pthread_mutex_unlock(&d->lock);
        return;
    }
    atomic_fetch_add(&a->launches_scanned, 1);
    tok->device = device;
    tok->seq = ++d->seq;
    live l = {.d = d, .a = a, .device = device, .stream = stream, .slot = -1, .fn = fn, .fit = fit_key(fn, scan),
              .blocks = scan ? scan->blocks : 0, .seq = tok->seq};
    if (d->plan.policy->on_demand) {
        l.slot = slot_of(d, stream);   /* before map_lock: a takeover walks the chunks */
        lms_timing_poll(device);
    }
    note_stream(d, &l);
    pthread_rwlock_rdlock(&map_lock);
    uint64_t roles = 0;
    if (scan) {
        ids = scan->room;
        n = scan->n > 0 ? find_locked(scan->words, scan->n, scan->room, scan->max, &roles, device, tok->seq) : 0;
    }
    /* Every id is kept, beyond LMS_TOKEN_FEW in the thread's scratch; if
     * it cannot be had, the first LMS_TOKEN_FEW are (the rest are reached
     * over the link). */
    wide_scratch *ws = n > LMS_TOKEN_FEW ? wide_scratch_for(n) : NULL;
    tok->more = ws ? ws->ids : NULL;
    tok->n = n > LMS_TOKEN_FEW && !ws ? LMS_TOKEN_FEW : n;
    uint32_t *tids = tok->more ? tok->more : tok->few;
    uint32_t few_aux[LMS_TOKEN_FEW], *aux = ws ? ws->aux : few_aux;   /* tok->n entries */
    if (tok->n > 0)   /* ids may be NULL when there are none */
        memcpy(tids, ids, (size_t)tok->n * sizeof *ids);
    if (lms_trace_on)
        trace_launch(device, tok->seq, fn, stream, tids, tok->n, aux);
    if (d->plan.policy->on_demand) {
        l.sig = lms_price_sig(fn, tids, tok->n) ^ roles;   /* the roles of this launch's scan */
        lms_timing_prefetch(device, fn, l.fit, l.sig, tids, tok->n);   /* its prices' lines, asked in the plan */
    }
    lms_plan_chunk *few[LMS_TOKEN_FEW], **mine = ws ? ws->mine : few;   /* tok->n entries */
    int m = 0;
    uint64_t named = 0;
    for (int i = 0; i < tok->n; i++) {
        lms_plan_chunk *pc = op_lookup(&l, tids[i]);
        if (pc) {
            lms_plan_pin(&d->plan, pc);
            mine[m++] = pc;
            tok->pieces |= ((res_chunk *)pc)->group != NULL;
            named += named_size((res_chunk *)pc, m > 1 ? (res_chunk *)mine[m - 2] : NULL);
        }
    }
    if (named)
        atomic_fetch_add_explicit(&a->named_bytes, named, memory_order_relaxed);
    lms_plan_launch(&d->plan, &live_ops, &l, tok->seq, fn, tids, tok->n, mine, m);
    if (d->plan.policy->on_demand) {
        if (tok->pieces)
            wait_groups(&l, tids, tok->n);   /* after fetch-ahead: it may bring pieces this kernel reaches */
        /* The chunks left off the device are read over the link: no copy
         * of them starts until after() has recorded this launch. */
        for (int i = 0; i < tok->n; i++) {
            res_chunk *c = (res_chunk *)op_lookup(&l, tids[i]);
            if (c && !c->pc.resident) {
                c->remote++;
                tids[i] |= REMOTE_BIT;
            }
        }
        if (fn)   /* a graph's launch (fn 0) is many kernels: not timed */
            tok->timed = time_launch(&l, tok->seq, fn, tids, tok->n, aux);
    }
    pthread_rwlock_unlock(&map_lock);
    pthread_mutex_unlock(&d->lock);
}

void lms_residency_before(int device, CUstream stream, uintptr_t fn, const uint32_t *ids, int n,
                          lms_launch_token *tok)
{
    before(device, stream, fn, ids, n, NULL, tok);
}

void lms_residency_before_scan(int device, CUstream stream, uintptr_t fn, const lms_scan *scan,
                               lms_launch_token *tok)
{
    before(device, stream, fn, NULL, 0, scan, tok);
}

/* Whether evicting every unpinned resident chunk of d could leave `bytes`
 * of room in a's budget (pinned ones, in use by launches in flight, are
 * no victims: lms_plan_make_room could never evict them). False when no
 * eviction can help. Under d's lock. */
static bool room_possible(const res_device *d, const lms_account *a, uint64_t bytes)
{
    uint64_t used = lms_account_used(a), freeable = d->plan.victim_bytes;
    uint64_t after = used > freeable ? used - freeable : 0;
    return bytes <= a->budget && after <= a->budget - bytes;
}

/* Evicts the policy's victims until `bytes` are charged to the device for
 * the caller (residency.h); nothing is evicted for a request no eviction
 * can make room for. */
static bool reclaim(int device, lms_account *a, uint64_t bytes)
{
    res_device *d = &devices[device];
    pthread_mutex_lock(&d->lock);
    bool ok = false;
    if (d->ready && d->plan.nresident > 0 && d->evict && room_possible(d, a, bytes)) {
        live l = {.d = d, .a = a, .device = device, .stream = d->evict, .slot = -1};
        pthread_rwlock_rdlock(&map_lock);
        ok = lms_plan_make_room(&d->plan, &live_ops, &l, bytes);   /* as for a need now */
        pthread_rwlock_unlock(&map_lock);
    }
    pthread_mutex_unlock(&d->lock);
    return ok;
}

bool lms_residency_reserve(int device, uint64_t bytes)
{
    lms_account *a = lms_account_of(device);
    if (!a || device < 0 || device >= LMS_MAX_DEVICES)
        return false;
    return lms_account_reserve(a, bytes, a->budget) || reclaim(device, a, bytes);
}

/* The ledger point past which the evictions still leaving d fit beside
 * what is charged to a and `extra` bytes more (into *upto: the bytes of
 * `evicted` it frees), or NULL when none is in flight past the room. Under
 * the device's lock. */
static CUevent leaving_point(res_device *d, const lms_account *a, uint64_t extra, uint64_t *upto)
{
    uint64_t slack = slack_of(a);
    slack = slack > extra ? slack - extra : 0;
    if (!d->ready || d->evicted - d->freed <= slack)
        return NULL;
    *upto = d->evicted - slack;
    int64_t k = ledger_point(d, *upto);
    return k >= 0 ? d->ledger[k % LEDGER] : NULL;
}

bool lms_residency_settle_stream(int device, CUstream stream)
{
    lms_account *a = lms_account_of(device);
    if (!a || device < 0 || device >= LMS_MAX_DEVICES || !lms_drv.cuStreamWaitEvent)
        return false;
    res_device *d = &devices[device];
    pthread_mutex_lock(&d->lock);
    uint64_t upto = 0;
    CUevent ev = leaving_point(d, a, 0, &upto);
    /* Under the lock: the ring's event cannot be recorded again meanwhile,
     * and the wait takes the record it has now. */
    bool ok = !ev || lms_drv.cuStreamWaitEvent(stream, ev, 0) == CUDA_SUCCESS;
    pthread_mutex_unlock(&d->lock);
    return ok;
}

/* Both host waits (residency.h): settle is settle_room with no bytes. */
void lms_residency_settle(int device) { lms_residency_settle_room(device, 0); }

void lms_residency_settle_room(int device, uint64_t bytes)
{
    lms_account *a = lms_account_of(device);
    if (!a || device < 0 || device >= LMS_MAX_DEVICES || !lms_drv.cuEventSynchronize)
        return;
    res_device *d = &devices[device];
    pthread_mutex_lock(&d->lock);
    uint64_t upto = 0;
    CUevent ev = leaving_point(d, a, bytes, &upto);
    pthread_mutex_unlock(&d->lock);
    if (!ev)
        return;
    /* Not under the lock: launches go on meanwhile. A later record of the
     * event (the ring wrapped) only makes the wait longer. */
    lms_capture_mode mode = lms_capture_relax();
    CUresult r = lms_drv.cuEventSynchronize(ev);
    lms_capture_restore(mode);
    if (r != CUDA_SUCCESS)
        return;
    pthread_mutex_lock(&d->lock);
    if (upto > d->freed && upto <= d->evicted)
        d->freed = upto;
    pthread_mutex_unlock(&d->lock);
}

void lms_residency_context_gone(CUcontext ctx)
{
    for (int dev = 0; dev < LMS_MAX_DEVICES; dev++) {
        res_device *d = &devices[dev];
        pthread_mutex_lock(&d->lock);
        if (!d->ready) {
            pthread_mutex_unlock(&d->lock);
            continue;
        }
        uint32_t gone = 0;   /* bit s: slot s's events went with ctx */
        for (int i = 0; i < SLOTS; i++) {
            res_slot *s = &d->slots[i];
            if (s->used && s->made_in == ctx) {
                gone |= 1u << i;
                s->used = s->keep = false;   /* free for the next stream; its ring is made anew */
            }
        }
        d->unjoined &= ~gone;
        if (d->made_in == ctx && (d->side || d->evict || d->ledger[0])) {
            d->side = d->evict = NULL;
            memset(d->ledger, 0, sizeof d->ledger);   /* the events went with ctx, */
            d->points = 0;
            d->freed = d->evicted;                     /* and so did its evictions */
            d->remake = true;
        }
        if (gone) {   /* no chunk may wait on those events any more */
            pthread_rwlock_rdlock(&map_lock);
            for (int i = 0; i < naddr; i++) {
                res_chunk *c = by_addr[i];
                if (c->device != dev)
                    continue;
                c->fetch_seen &= ~gone;
                if (c->fetch.slot >= 0 && (gone >> c->fetch.slot & 1u))
                    c->fetch.slot = -1;
                for (int u = 0; u < USERS; u++)
                    if (c->users[u].slot >= 0 && (gone >> c->users[u].slot & 1u))
                        c->users[u].slot = -1;
            }
            pthread_rwlock_unlock(&map_lock);
        }
        pthread_mutex_unlock(&d->lock);
    }
    lms_timing_context_gone(ctx);   /* the timed launches' events went too */
}

/* Remembers that c was used up to point r on r's stream (with
 * LMS_STREAM_ORDER=0, only the latest use, whatever its stream). */
static void note_use(res_chunk *c, res_ref r)
{
    if (!lms_opt.stream_order) {
        for (int u = 0; u < USERS; u++)
            c->users[u].slot = -1;
        c->users[0] = r;
        return;
    }
    int free_u = -1;
    for (int u = 0; u < USERS; u++) {
        if (c->users[u].slot == r.slot) {
            c->users[u] = r;
            return;
        }
        if (c->users[u].slot < 0 && free_u < 0)
            free_u = u;
    }
    if (free_u >= 0)
        c->users[free_u] = r;
    else
        c->users_all = true;
}

/* Acting lean's fetches ahead, after the launch on `stream` (slot: its
 * slot, or -1) was recorded; under d->lock, map_lock taken here. */
static void ahead_after(res_device *d, int device, CUstream stream, int slot)
{
    live l = {.d = d, .a = lms_account_of(device), .device = device, .stream = stream, .slot = slot};
    if (!l.a)
        return;
    pthread_rwlock_rdlock(&map_lock);
    lms_plan_after(&d->plan, &live_ops, &l);
    pthread_rwlock_unlock(&map_lock);
}

/* Whether the program's launches hold more than one stream slot (the
 * fetch-ahead's aside, and those of destroyed streams): with one, the
 * record a point makes on the launch's stream covers its work. O(SLOTS).
 * Under the device's lock. */
static bool several_streams(const res_device *d)
{
    int n = 0;
    for (int i = 0; i < SLOTS && n < 2; i++)
        n += d->slots[i].used && !d->slots[i].keep && d->slots[i].stream != GONE;
    return n > 1;
}

/* lms_residency_after under the context lock (place.h). */
static void launch_after(lms_launch_token *tok, CUstream stream)
{
    if (tok->device < 0)
        return;
    res_device *d = &devices[tok->device];
    const uint32_t *ids = lms_token_ids(tok);
    pthread_mutex_lock(&d->lock);
    lms_timing_end(tok->device, tok->timed, stream);
    res_ref r = {.slot = -1};
    bool recorded = false;
    /* The stream's slot (before() made it) is looked up before map_lock is
     * taken: a takeover walks the chunks. */
    bool pointing = d->plan.policy->on_demand && lms_plan_pointing(&d->plan) && several_streams(d);
    int slot = d->plan.policy->on_demand && (tok->n > 0 || pointing) ? slot_of(d, stream) : -1;
    if (tok->n == 0) {   /* no chunk to note: the chunk map is not read */
        if (pointing && slot >= 0)
            record(d, slot);   /* a point after every stream waits for this kernel too (op_mark_all) */
        if (d->plan.lean)
            ahead_after(d, tok->device, stream, slot);
        pthread_mutex_unlock(&d->lock);
        tok->more = NULL;
        return;
    }
    pthread_rwlock_rdlock(&map_lock);
    for (int i = 0; i < tok->n; i++) {
        bool remote = ids[i] & REMOTE_BIT;
        res_chunk *c = chunk_of(ids[i] & ~REMOTE_BIT);
        if (!c || c->device != tok->device)
            continue;
        lms_plan_used(&d->plan, &c->pc, tok->seq);
        if (remote)
            c->remote--;
        /* A resident chunk's use orders its eviction; a read over the link
         * orders its next fetch (op_fetch). */
        if ((!c->pc.resident && !remote) || !d->plan.policy->on_demand)
            continue;
        if (!recorded) {   /* one record per launch that used a chunk (resident or over the link) */
            recorded = true;
            if (slot >= 0)
                r = record(d, slot);
            else
                lms_drv.cuStreamSynchronize(stream);   /* cannot order it: finish it now */
        }
        if (r.slot >= 0)
            note_use(c, r);
    }
    /* The resident pieces of its chunks the launch may reach beyond those
     * judged needed are used too: their evictions wait for this kernel. */
    int gi = 0;
    bool groups = d->plan.policy->on_demand && tok->pieces;
    for (res_chunk *g; groups && (g = next_group(ids, tok->n, &gi, tok->device));) {
        for (uint32_t k = 0; k < g->pieces; k++) {
            if (!g[k].pc.resident)
                continue;
            if (!recorded) {
                recorded = true;
                if (slot >= 0)
                    r = record(d, slot);
                else
                    lms_drv.cuStreamSynchronize(stream);
            }
            if (r.slot >= 0)
                note_use(&g[k], r);
        }
    }
    pthread_rwlock_unlock(&map_lock);
    if (d->plan.lean)
        ahead_after(d, tok->device, stream, slot);
    pthread_mutex_unlock(&d->lock);
    tok->more = NULL;   /* the thread's scratch: kept for its next launch */
}

void lms_residency_after(lms_launch_token *tok, CUstream stream)
{
    if (tok->device < 0)
        return;
    lms_place_shared_begin();
    launch_after(tok, stream);
    lms_place_shared_end();
}

void lms_residency_pin(int device, const uint32_t *ids, int n, int delta)
{
    if (device < 0 || device >= LMS_MAX_DEVICES)
        return;
    res_device *d = &devices[device];
    pthread_mutex_lock(&d->lock);
    pthread_rwlock_rdlock(&map_lock);
    for (int i = 0; i < n; i++) {
        res_chunk *c = chunk_of(ids[i]);
        if (!c || c->device != device || !d->ready)
            continue;
        if (delta > 0)
            lms_plan_pin(&d->plan, &c->pc);
        else if (c->pc.pins > 0)
            lms_plan_used(&d->plan, &c->pc, 0);   /* unpinned; its last use stays */
    }
    pthread_rwlock_unlock(&map_lock);
    pthread_mutex_unlock(&d->lock);
}

void lms_residency_fork_prepare(void)
{
    for (int i = 0; i < LMS_MAX_DEVICES; i++)
        pthread_mutex_lock(&devices[i].lock);
    pthread_rwlock_wrlock(&map_lock);
}

void lms_residency_fork_parent(void)
{
    pthread_rwlock_unlock(&map_lock);
    for (int i = LMS_MAX_DEVICES - 1; i >= 0; i--)
        pthread_mutex_unlock(&devices[i].lock);
}

void lms_residency_fork_child(void)
{
    /* The child keeps its copy of the chunks, plans, streams and events: a
     * driver that lets a child use CUDA (the simulator) keeps them valid,
     * and one that does not makes every CUDA call of the child fail anyway. */
    pthread_rwlock_init(&map_lock, NULL);
    for (int i = 0; i < LMS_MAX_DEVICES; i++)
        pthread_mutex_init(&devices[i].lock, NULL);
    /* Launches of the parent's other threads never reach after() here. */
    for (int i = 0; i < naddr; i++)
        by_addr[i]->remote = 0;
}

