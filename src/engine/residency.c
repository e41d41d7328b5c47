/*
 * residency.c — the residency engine (see residency.h and
 * docs/ARCHITECTURE.md "Residency").
 *
 * Chunks: every managed chunk lmshim placed, in an address-sorted table
 * (for scanning kernel parameters) and an id-indexed table (for policies).
 * Both are guarded by `map_lock`. Each device has a lock of its own that
 * orders its launches' decisions; lock order is device, then map.
 *
 * Budget: a fetch is charged to the device's account before it is issued
 * (a compare-and-swap against the budget, so device chunks + resident
 * managed chunks never pass it); an eviction returns its charge when it is
 * issued, and every later fetch on the device is ordered after the eviction
 * on the GPU (it waits on the eviction's event), so the device never holds
 * both. An eviction itself waits for the chunk's last use and any
 * unfinished fetch of it.
 */
#include "residency.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "log.h"
#include "plan.h"
#include "policy.h"
#include "launch.h"
#include "trace.h"

atomic_uint lms_residency_live;

typedef struct res_chunk {
    lms_plan_chunk pc;        /* id, charge, resident, pins, last use: first member */
    uint64_t ptr, size;       /* the managed range */
    int device;
    bool ready_pending;       /* fetched on the side stream: wait on ready_ev */
    CUevent used_ev;          /* recorded after its last launch */
    CUevent ready_ev;         /* recorded after a side-stream fetch */
} res_chunk;

typedef struct res_device {
    pthread_mutex_t lock;
    lms_plan plan;            /* the decisions and the resident list */
    bool ready;               /* plan, streams and event set up */
    uint64_t seq;             /* launches seen */
    CUstream side, evict;     /* fetch-ahead and eviction streams */
    CUevent evict_ev;         /* recorded after the latest eviction */
    bool evict_pending;
} res_device;

/* What the mechanics need for one launch (the planner's ctx). */
typedef struct live {
    res_device *d;
    lms_account *a;
    int device;
    CUstream stream;          /* the launch's stream */
} live;

static pthread_rwlock_t map_lock = PTHREAD_RWLOCK_INITIALIZER;
static res_chunk **by_addr;          /* sorted by ptr */
static int naddr, capaddr;
static res_chunk **by_id;            /* index: id; NULL once freed */
static uint32_t nids, capids;
static res_device devices[LMS_MAX_DEVICES] = {
    [0 ... LMS_MAX_DEVICES - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER}};

/* Index of the first chunk whose ptr is > p (under map_lock). */
static int upper(uint64_t p)
{
    int lo = 0, hi = naddr;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (by_addr[mid]->ptr <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Grows an array of pointers to hold at least `need` entries. */
static bool reserve_ptrs(void ***arr, int *cap, int need)
{
    if (need <= *cap)
        return true;
    int ncap = *cap ? *cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    void **n = realloc(*arr, (size_t)ncap * sizeof *n);
    if (!n)
        return false;
    *arr = n;
    *cap = ncap;
    return true;
}

int64_t lms_residency_add(uint64_t ptr, uint64_t size, int device)
{
    if (device < 0 || device >= LMS_MAX_DEVICES)
        return -1;
    res_chunk *c = calloc(1, sizeof *c);
    if (!c)
        return -1;   /* untracked: the GPU reads it over the link, nothing breaks */
    *c = (res_chunk){.pc = {.charge = lms_charge_of(size)}, .ptr = ptr, .size = size, .device = device};
    pthread_rwlock_wrlock(&map_lock);
    int capids_i = (int)capids;
    if (!reserve_ptrs((void ***)&by_addr, &capaddr, naddr + 1) ||
        !reserve_ptrs((void ***)&by_id, &capids_i, (int)nids + 1)) {
        pthread_rwlock_unlock(&map_lock);
        free(c);
        return -1;
    }
    capids = (uint32_t)capids_i;
    c->pc.id = nids;
    by_id[nids++] = c;
    int i = upper(ptr);
    memmove(&by_addr[i + 1], &by_addr[i], (size_t)(naddr - i) * sizeof *by_addr);
    by_addr[i] = c;
    naddr++;
    atomic_fetch_add(&lms_residency_live, 1);
    pthread_rwlock_unlock(&map_lock);
    return c->pc.id;
}

void lms_residency_remove(uint64_t ptr)
{
    pthread_rwlock_wrlock(&map_lock);
    int i = upper(ptr) - 1;
    res_chunk *c = i >= 0 && by_addr[i]->ptr == ptr ? by_addr[i] : NULL;
    if (c) {
        memmove(&by_addr[i], &by_addr[i + 1], (size_t)(naddr - i - 1) * sizeof *by_addr);
        naddr--;
        by_id[c->pc.id] = NULL;
        atomic_fetch_sub(&lms_residency_live, 1);
    }
    pthread_rwlock_unlock(&map_lock);
    if (!c)
        return;
    res_device *d = &devices[c->device];
    pthread_mutex_lock(&d->lock);
    if (c->pc.resident) {
        lms_plan_forget(&d->plan, &c->pc);
        lms_account *a = lms_account_of(c->device);
        if (a)
            lms_account_release(a, c->pc.charge);
    }
    pthread_mutex_unlock(&d->lock);
    if (c->used_ev && lms_drv.cuEventDestroy)
        lms_drv.cuEventDestroy(c->used_ev);
    if (c->ready_ev && lms_drv.cuEventDestroy)
        lms_drv.cuEventDestroy(c->ready_ev);
    free(c);
}

int lms_residency_find(const uint64_t *words, int n, uint32_t *ids, int max)
{
    int found = 0;
    pthread_rwlock_rdlock(&map_lock);
    if (naddr > 0) {
        uint64_t lo = by_addr[0]->ptr, hi = by_addr[naddr - 1]->ptr + by_addr[naddr - 1]->size;
        for (int w = 0; w < n && found < max; w++) {
            uint64_t v = words[w];
            if (v < lo || v >= hi)
                continue;
            int i = upper(v) - 1;
            if (i < 0 || v - by_addr[i]->ptr >= by_addr[i]->size)
                continue;
            uint32_t id = by_addr[i]->pc.id;
            int k = found;   /* insert sorted, unique */
            while (k > 0 && ids[k - 1] > id)
                k--;
            if (k > 0 && ids[k - 1] == id)
                continue;
            memmove(&ids[k + 1], &ids[k], (size_t)(found - k) * sizeof *ids);
            ids[k] = id;
            found++;
        }
    }
    pthread_rwlock_unlock(&map_lock);
    return found;
}

/* The chunk of an id (under map_lock), or NULL. */
static res_chunk *chunk_of(uint32_t id)
{
    return id < nids ? by_id[id] : NULL;
}

/* Sets a device up on its first launch: the planner and two streams. */
static bool ready_device(res_device *d)
{
    if (d->ready)
        return true;
    const lms_policy *policy = lms_opt.policy ? lms_opt.policy : lms_policy_find("none");
    if (policy->on_demand &&
        (!lms_drv.cuMemPrefetchAsync || !lms_drv.cuStreamCreate || !lms_drv.cuEventCreate ||
         !lms_drv.cuEventRecord || !lms_drv.cuStreamWaitEvent ||
         lms_drv.cuStreamCreate(&d->side, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
         lms_drv.cuStreamCreate(&d->evict, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
         lms_drv.cuEventCreate(&d->evict_ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)) {
        lms_log(LMS_LEVEL_WARN, "residency: cannot create streams or events; chunks stay where they are");
        policy = lms_policy_find("none");
    }
    if (!lms_plan_init(&d->plan, policy))
        return false;
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
                       (unsigned long long)atomic_load(&a->used), (unsigned long long)a->budget);
    }
}

static bool op_reserve(void *ctx, uint64_t bytes)
{
    live *l = ctx;
    return lms_account_reserve(l->a, bytes, l->a->budget);
}

static uint64_t op_budget(void *ctx) { return ((live *)ctx)->a->budget; }

/* Sends a chunk back to the host after its last use and any unfinished
 * fetch of it; later fetches wait for this eviction. */
static void op_evict(void *ctx, lms_plan_chunk *pc)
{
    live *l = ctx;
    res_chunk *c = (res_chunk *)pc;
    res_device *d = l->d;
    if (c->used_ev)
        lms_drv.cuStreamWaitEvent(d->evict, c->used_ev, 0);
    if (c->ready_pending)
        lms_drv.cuStreamWaitEvent(d->evict, c->ready_ev, 0);
    CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST};
    lms_drv.cuMemPrefetchAsync(c->ptr, c->size, host, 0, d->evict);
    lms_drv.cuEventRecord(d->evict_ev, d->evict);
    d->evict_pending = true;
    c->ready_pending = false;
    lms_account_release(l->a, pc->charge);
    atomic_fetch_add(&l->a->evicted_bytes, c->size);
    atomic_fetch_add(&l->a->evictions, 1);
    if (lms_trace_on)
        lms_trace_move("evict", l->device, pc->id, c->size, false);
}

/* Fetches a chunk to the device on the launch stream, or ahead on the side
 * stream (then launches that need it wait on its event). */
static bool op_fetch(void *ctx, lms_plan_chunk *pc, bool ahead)
{
    live *l = ctx;
    res_chunk *c = (res_chunk *)pc;
    res_device *d = l->d;
    CUstream s = ahead ? d->side : l->stream;
    if (d->evict_pending)
        lms_drv.cuStreamWaitEvent(s, d->evict_ev, 0);
    CUmemLocation dev = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = c->device};
    if (lms_drv.cuMemPrefetchAsync(c->ptr, c->size, dev, 0, s) != CUDA_SUCCESS) {
        lms_account_release(l->a, pc->charge);
        return false;
    }
    c->ready_pending = false;
    if (ahead) {
        if (!c->ready_ev && lms_drv.cuEventCreate(&c->ready_ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
            c->ready_ev = NULL;
        c->ready_pending = c->ready_ev && lms_drv.cuEventRecord(c->ready_ev, s) == CUDA_SUCCESS;
        if (!c->ready_pending)
            lms_drv.cuStreamSynchronize(s);   /* cannot order it: finish it now */
    }
    atomic_fetch_add(&l->a->prefetched_bytes, c->size);
    atomic_fetch_add(&l->a->prefetches, 1);
    check_budget(l->a);
    if (lms_trace_on)
        lms_trace_move("prefetch", l->device, pc->id, c->size, ahead);
    return true;
}

static void op_wait_ready(void *ctx, lms_plan_chunk *pc)
{
    live *l = ctx;
    res_chunk *c = (res_chunk *)pc;
    if (c->ready_pending)
        lms_drv.cuStreamWaitEvent(l->stream, c->ready_ev, 0);
}

/* The chunk of an id if it belongs to this device (under map_lock). */
static lms_plan_chunk *op_lookup(void *ctx, uint32_t id)
{
    live *l = ctx;
    res_chunk *c = chunk_of(id);
    return c && c->device == l->device ? &c->pc : NULL;
}

static const lms_plan_ops live_ops = {
    .reserve = op_reserve, .budget = op_budget, .evict = op_evict, .fetch = op_fetch,
    .wait_ready = op_wait_ready, .lookup = op_lookup,
};

void lms_residency_before(int device, CUstream stream, uintptr_t fn, const uint32_t *ids, int n,
                          lms_launch_token *tok)
{
    tok->device = -1;
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
    tok->n = n < LMS_LAUNCH_MAX_CHUNKS ? n : LMS_LAUNCH_MAX_CHUNKS;
    memcpy(tok->ids, ids, (size_t)tok->n * sizeof *ids);
    if (lms_trace_on)
        lms_trace_launch(device, tok->seq, fn, lms_launch_name((CUfunction)fn), (uint64_t)(uintptr_t)stream,
                         tok->ids, tok->n);
    live l = {.d = d, .a = a, .device = device, .stream = stream};
    pthread_rwlock_rdlock(&map_lock);
    lms_plan_chunk *mine[LMS_LAUNCH_MAX_CHUNKS];
    int m = 0;
    for (int i = 0; i < tok->n; i++) {
        lms_plan_chunk *pc = op_lookup(&l, ids[i]);
        if (pc) {
            pc->pins++;
            mine[m++] = pc;
        }
    }
    lms_plan_launch(&d->plan, &live_ops, &l, tok->seq, fn, tok->ids, tok->n, mine, m);
    pthread_rwlock_unlock(&map_lock);
    pthread_mutex_unlock(&d->lock);
}

bool lms_residency_reclaim(int device, uint64_t bytes)
{
    lms_account *a = lms_account_of(device);
    if (!a || device < 0 || device >= LMS_MAX_DEVICES)
        return false;
    res_device *d = &devices[device];
    pthread_mutex_lock(&d->lock);
    bool ok = false;
    if (d->ready && d->plan.nresident > 0 && d->evict) {
        live l = {.d = d, .a = a, .device = device, .stream = d->evict};
        pthread_rwlock_rdlock(&map_lock);
        /* Make room as for a need now; the room is not kept: it is the
         * caller's to reserve. */
        ok = lms_plan_make_room(&d->plan, &live_ops, &l, bytes);
        pthread_rwlock_unlock(&map_lock);
        if (ok)
            lms_account_release(a, bytes);
    }
    pthread_mutex_unlock(&d->lock);
    return ok;
}

void lms_residency_after(lms_launch_token *tok, CUstream stream)
{
    if (tok->device < 0)
        return;
    res_device *d = &devices[tok->device];
    pthread_mutex_lock(&d->lock);
    pthread_rwlock_rdlock(&map_lock);
    for (int i = 0; i < tok->n; i++) {
        res_chunk *c = chunk_of(tok->ids[i]);
        if (!c || c->device != tok->device)
            continue;
        c->pc.pins--;
        c->pc.last_use = tok->seq;
        if (d->plan.policy->on_demand) {
            if (!c->used_ev && lms_drv.cuEventCreate(&c->used_ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
                c->used_ev = NULL;
            if (c->used_ev)
                lms_drv.cuEventRecord(c->used_ev, stream);
        }
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
}
