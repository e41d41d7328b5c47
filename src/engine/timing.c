/*
 * timing.c — measured kernel durations (see timing.h and
 * docs/ARCHITECTURE.md "Pricing reads in place by measured durations").
 *
 * Events come from a pool of PAIRS start/end pairs per device, made on the
 * first sampled launch (timing events: flags 0) and used in turn as a ring:
 * a pair is armed at a launch's start, closed at its end, and read back in
 * order by lms_timing_poll once cuEventQuery says its end event completed
 * (a pair not yet completed stops the reading; nothing ever waits). When
 * every pair is in flight, launches go untimed.
 *
 * Sampling: a signature is timed on its first SEEN_ALL launches (so that a
 * step's prices are known from the second step on), then one launch in
 * EVERY. Cost per timed launch: two event records and, later, one query
 * and one elapsed-time read; untimed: one table probe.
 */
#include "timing.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "fnprice.h"
#include "log.h"
#include "price.h"

#define PAIRS 64          /* timed launches in flight per device */
#define SEEN_ALL 4        /* launches of a signature timed before sampling */
#define EVERY 8           /* then one launch in this many */
#define TABLE (1u << 16)  /* price table slots per device (1 MiB) */
#define FNS (1u << 14)    /* fits per generation, two generations of functions and two of classes per device (5 MiB; a generation turns at 8,192) */
/* Step points kept per device: the trials of four modes, acting deep
 * tried twice (trials.c, trial_next), record up to 81; the oldest one still
 * read, the acting mode's timed start, is 72 back. */
#define MARKS 128

typedef struct pair {
    CUevent start, end;
    uintptr_t fn;
    uintptr_t fit;            /* the key of its function's fit (fn and its grid's class) */
    uint64_t sig;
    uint32_t *remote;         /* ids read in place (malloc'd), NULL when none */
    int n;
    uint64_t bytes;           /* bytes read in place (a fetch batch: fetched) */
    uint64_t local;           /* bytes of the launch's chunks on the device */
    lms_price_role_read role; /* the parameter position its reads in place price (role LMS_PRICE_NO_ROLE: none) */
    bool fetch;               /* a batch of demand fetches, not a launch */
    bool closed;              /* the end event is recorded */
    bool bad;                 /* a record failed: learn nothing */
} pair;

typedef struct dev_timing {
    bool tried, ok;           /* the pool was made (ok) or could not be (tried) */
    bool tables;              /* the tables below were made (they outlive a context's end) */
    uint32_t pool;            /* pools made since the first (a handle of an older one closes nothing) */
    pair pairs[PAIRS];
    uint64_t head, tail;      /* pairs [head, tail) are in flight, in launch order */
    uint64_t batches;         /* demand fetch batches seen */
    double fetch_t, fetch_b;  /* timed demand fetch batches: decayed sums of durations (ns) and bytes (lms_timing_fetch_cost) */
    lms_price price;
    lms_fnprice fits;         /* each function's price, fitted (fnprice.h) */
    lms_fnprice classes;      /* ... and each function's in each class of its grid */
    CUevent marks[MARKS];     /* step boundaries: mark k is marks[k % MARKS] */
    bool mark_bad[MARKS];     /* its record failed */
    CUstream mark_stream[MARKS];  /* the stream it was recorded on (NULL: the legacy stream) */
    pthread_t mark_thread[MARKS]; /* the thread that recorded it (CU_STREAM_PER_THREAD: its own stream) */
    int nmarks;               /* marks recorded */
    CUcontext made_in;        /* the context current when the events were made */
    CUstream gauge;           /* a stream for points after every stream's work, made on the first (NULL: none) */
    bool gauge_tried;
} dev_timing;

static dev_timing timing[LMS_MAX_DEVICES];

/* The device's timing when its tables and events were made (ready() said
 * so once), else NULL (a device out of range, or none made yet): what the
 * readers of prices and fits ask before they read, making nothing. */
static dev_timing *made(int device)
{
    return device >= 0 && device < LMS_MAX_DEVICES && timing[device].ok ? &timing[device] : NULL;
}

/* Makes the device's tables once and its pool of events (again after the
 * context they were made in ended); false when it cannot. */
static bool ready(dev_timing *t)
{
    if (t->tried)
        return t->ok;
    t->tried = true;
    if (!lms_drv.cuEventCreate || !lms_drv.cuEventRecord || !lms_drv.cuEventQuery ||
        !lms_drv.cuEventElapsedTime || !lms_drv.cuEventDestroy)
        return false;
    if (!t->tables) {
        if (!lms_price_init(&t->price, TABLE))
            return false;
        if (!lms_fnprice_init(&t->fits, FNS) || !lms_fnprice_init(&t->classes, FNS)) {
            lms_fnprice_destroy(&t->fits);
            lms_price_destroy(&t->price);
            return false;
        }
        t->tables = true;
    }
    for (int i = 0; i < MARKS; i++)
        if (lms_drv.cuEventCreate(&t->marks[i], 0) != CUDA_SUCCESS) {
            lms_log(LMS_LEVEL_INFO, "residency: no timing events; reads in place are not priced");
            return false;
        }
    for (int i = 0; i < PAIRS; i++)
        if (lms_drv.cuEventCreate(&t->pairs[i].start, 0) != CUDA_SUCCESS ||
            lms_drv.cuEventCreate(&t->pairs[i].end, 0) != CUDA_SUCCESS) {
            lms_log(LMS_LEVEL_INFO, "residency: no timing events; reads in place are not priced");
            return false;   /* the events made stay: a handful, never used */
        }
    if (!lms_drv.cuCtxGetCurrent || lms_drv.cuCtxGetCurrent(&t->made_in) != CUDA_SUCCESS)
        t->made_in = NULL;
    t->ok = true;
    return true;
}

/* A pair's handle: 1 + its index, with the pool's number above (a
 * launch whose pool went with its context between its start and its end
 * closes none of the new pool's pairs). */
#define POOL_SHIFT 8
static int handle_of(const dev_timing *t, int idx)
{
    return (int)((t->pool & 0x7fffffu) << POOL_SHIFT) | (idx + 1);
}

/* The pair a handle names in the device's current pool, or NULL. */
static pair *pair_of(dev_timing *t, int h)
{
    if (h <= 0 || (uint32_t)h >> POOL_SHIFT != (t->pool & 0x7fffffu))
        return NULL;
    int idx = (h & ((1 << POOL_SHIFT) - 1)) - 1;
    return idx >= 0 && idx < PAIRS ? &t->pairs[idx] : NULL;
}

/* Arms the next pair: records its start on `stream`; returns its handle
 * (handle_of), or 0 when every pair is in flight or the record fails. */
static int arm(int device, CUstream stream)
{
    dev_timing *t = &timing[device];
    if (t->tail - t->head == PAIRS)
        lms_timing_poll(device);
    if (t->tail - t->head == PAIRS)
        return 0;   /* every pair in flight */
    int idx = (int)(t->tail % PAIRS);
    pair *pr = &t->pairs[idx];
    if (lms_drv.cuEventRecord(pr->start, stream) != CUDA_SUCCESS)
        return 0;
    *pr = (pair){.start = pr->start, .end = pr->end};
    t->tail++;
    return handle_of(t, idx);
}

void lms_timing_prefetch(int device, uintptr_t fn, uintptr_t fit, uint64_t sig, const uint32_t *ids, int n)
{
    dev_timing *t = made(device);   /* not ready(): a hint makes nothing */
    if (t)
        lms_price_prefetch(&t->price, fn, fit, sig, ids, n);
}

bool lms_timing_wanted(int device, uint64_t seq, uint64_t sig, bool always)
{
    if (device < 0 || device >= LMS_MAX_DEVICES)
        return false;
    dev_timing *t = &timing[device];
    return ready(t) && (always || lms_price_seen(&t->price, sig) < SEEN_ALL || seq % EVERY == 0);
}

int lms_timing_begin(int device, CUstream stream, uintptr_t fn, uintptr_t fit, uint64_t sig, const uint32_t *remote,
                     int n, uint64_t bytes, uint64_t local, const lms_price_role_read *role)
{
    if (device < 0 || device >= LMS_MAX_DEVICES || !ready(&timing[device]))
        return 0;
    dev_timing *t = &timing[device];
    uint32_t *copy = n > 0 ? malloc((size_t)n * sizeof *copy) : NULL;
    if (n > 0 && !copy)
        return 0;
    int h = arm(device, stream);
    if (!h) {
        free(copy);
        return 0;
    }
    pair *pr = pair_of(t, h);
    if (copy)
        memcpy(copy, remote, (size_t)n * sizeof *copy);
    pr->fn = fn;
    pr->fit = fit;
    pr->sig = sig;
    pr->remote = copy;
    pr->n = copy ? n : 0;
    pr->bytes = bytes;
    pr->local = local;
    pr->role = role ? *role : (lms_price_role_read){.role = LMS_PRICE_NO_ROLE};
    pr->role.cls = fit;   /* its position is also learned for its grid's class */
    return h;
}

int lms_timing_fetch_begin(int device, CUstream stream)
{
    if (device < 0 || device >= LMS_MAX_DEVICES)
        return 0;
    dev_timing *t = &timing[device];
    if (!ready(t) || (t->batches++ >= SEEN_ALL * 4 && t->batches % EVERY != 0))
        return 0;
    int h = arm(device, stream);
    if (h)
        pair_of(t, h)->fetch = true;
    return h;
}

void lms_timing_fetch_end(int device, int h, CUstream stream, uint64_t bytes)
{
    if (h <= 0 || device < 0 || device >= LMS_MAX_DEVICES)
        return;
    pair *pr = pair_of(&timing[device], h);
    if (pr)
        pr->bytes = bytes;
    lms_timing_end(device, h, stream);
}

double lms_timing_fetch_cost(int device)
{
    dev_timing *t = made(device);
    if (!t || !(t->fetch_t > 0) || !(t->fetch_b > 0))
        return -1;
    return t->fetch_t / t->fetch_b;
}

void lms_timing_end(int device, int h, CUstream stream)
{
    if (h <= 0 || device < 0 || device >= LMS_MAX_DEVICES)
        return;
    pair *pr = pair_of(&timing[device], h);
    if (!pr)
        return;   /* its pool went with its context since its start */
    pr->bad = lms_drv.cuEventRecord(pr->end, stream) != CUDA_SUCCESS;
    pr->closed = true;
}

void lms_timing_poll(int device)
{
    if (device < 0 || device >= LMS_MAX_DEVICES)
        return;
    dev_timing *t = &timing[device];
    if (!t->ok || t->head == t->tail || !t->pairs[t->head % PAIRS].closed)
        return;
    /* Queries are fine while another thread captures (relaxed mode). */
    lms_capture_mode mode = lms_capture_relax();
    while (t->head < t->tail) {
        pair *pr = &t->pairs[t->head % PAIRS];
        if (!pr->closed)
            break;   /* its launch is between before() and after() */
        float ms = 0;
        if (!pr->bad) {
            CUresult q = lms_drv.cuEventQuery(pr->end);
            if (q == CUDA_ERROR_NOT_READY)
                break;
            if (q != CUDA_SUCCESS || lms_drv.cuEventElapsedTime(&ms, pr->start, pr->end) != CUDA_SUCCESS)
                pr->bad = true;
        }
        if (!pr->bad && pr->fetch && pr->bytes > 0) {
            /* Bytes weigh: a mean of each batch's time per byte made a
             * small batch queued behind a large transfer count as much as
             * the transfer (buffers of 2-32 MiB on 8 streams one at a
             * time: a fetch measured at 23x the link's time per byte, 10x
             * weighed by bytes, and nearly every read in place priced
             * under the first; tests/sim/mixed_parts `sizes` at 3x,
             * LMS_FRAC=0.5, seed 0: 1.56x `lru`'s step, 1.31x weighed). */
            t->fetch_t = t->fetch_t * 3 / 4 + (double)ms * 1e6;
            t->fetch_b = t->fetch_b * 3 / 4 + (double)pr->bytes;
        } else if (!pr->bad) {
            if (pr->role.partial)
                pr->role.compute = lms_fnprice_device_ns(&t->fits, pr->fn, pr->local + pr->bytes);
            lms_price_learn_read(&t->price, pr->fn, pr->sig, pr->remote, pr->n, pr->bytes, (double)ms * 1e6, &pr->role);
            lms_fnprice_learn(&t->fits, pr->fn, pr->local, pr->bytes, (double)ms * 1e6);
            if (pr->fit != pr->fn)
                lms_fnprice_learn(&t->classes, pr->fit, pr->local, pr->bytes, (double)ms * 1e6);
        }
        free(pr->remote);
        pr->remote = NULL;
        t->head++;
    }
    lms_capture_restore(mode);
}

double lms_timing_price(int device, uintptr_t fn, uintptr_t fit, uint64_t sig, uint32_t id, uint32_t role)
{
    dev_timing *t = made(device);
    if (!t)
        return -1;
    return lms_price_of_class(&t->price, fn, fit, sig, id, role);
}

double lms_timing_price_in_class(int device, uintptr_t fn, uintptr_t fit, uint64_t sig, uint32_t id)
{
    dev_timing *t = made(device);
    if (!t)
        return -1;
    return lms_price_in_class(&t->price, fn, fit, sig, id);
}

double lms_timing_role_price(int device, uintptr_t fn, uintptr_t fit, uint32_t role, double *spread)
{
    *spread = 0;
    dev_timing *t = made(device);
    if (!t)
        return -1;
    return lms_price_role_of_class(&t->price, fn, fit, role, spread);
}

double lms_timing_fn_price(int device, uintptr_t fn, uintptr_t fit, int *learn)
{
    if (learn)
        *learn = 0;
    dev_timing *t = made(device);
    if (!t)
        return -1;
    return lms_fnprice_of_class(&t->fits, &t->classes, fn, fit, learn);
}

uint32_t lms_timing_fn_seen(int device, uintptr_t fn)
{
    dev_timing *t = made(device);
    if (!t)
        return 0;
    return lms_fnprice_seen(&t->fits, fn);
}

bool lms_timing_fn_prior(int device, double *lo, double *hi)
{
    dev_timing *t = made(device);
    if (!t)
        return false;
    return lms_fnprice_prior(&t->fits, lo, hi);
}

uint32_t lms_timing_fn_phase(int device)
{
    dev_timing *t = made(device);
    if (!t)
        return 0;
    return lms_fnprice_phase(&t->fits);
}

double lms_timing_local_base(int device, uintptr_t fn, uint64_t sig)
{
    dev_timing *t = made(device);
    if (!t)
        return -1;
    return lms_price_local_base(&t->price, fn, sig);
}

double lms_timing_base(int device, uintptr_t fn, uint64_t sig)
{
    dev_timing *t = made(device);
    if (!t)
        return -1;
    return lms_price_base(&t->price, fn, sig);
}

/* Whether point `k` (a number given by lms_timing_mark) is still in the
 * ring, not recorded over since. */
static bool kept(const dev_timing *t, int k)
{
    return k > 0 && k <= t->nmarks && t->nmarks - k < MARKS;
}

/* Whether point k (kept) was recorded on `stream` as the calling thread
 * names it: NULL and CU_STREAM_LEGACY are the legacy stream; each thread
 * has its own CU_STREAM_PER_THREAD. */
static bool same_stream(const dev_timing *t, int k, CUstream stream)
{
    int i = (k - 1) % MARKS;
    CUstream s = stream == CU_STREAM_LEGACY ? NULL : stream;
    return t->mark_stream[i] == s && (s != CU_STREAM_PER_THREAD || pthread_equal(t->mark_thread[i], pthread_self()));
}

int lms_timing_mark(int device, CUstream stream, int like)
{
    if (device < 0 || device >= LMS_MAX_DEVICES)
        return 0;
    dev_timing *t = &timing[device];
    if (!ready(t) || t->nmarks == INT32_MAX)
        return 0;
    if (like > 0) {
        /* Points are read against one another only on one stream: a point
         * on a stream idle at the time completes when it is recorded, not
         * when the step's work reaches it. */
        if (!kept(t, like))
            return 0;
        if (!same_stream(t, like, stream))
            return -1;
    }
    /* A record that failed (a stream destroyed, an error) is no point: its
     * number is used up (the slot's earlier point reads as recorded over)
     * and 0 tells the caller, which would otherwise wait for a reading
     * that never comes and run its trials untimed. */
    int k = t->nmarks++;
    t->mark_bad[k % MARKS] = lms_drv.cuEventRecord(t->marks[k % MARKS], stream) != CUDA_SUCCESS;
    t->mark_stream[k % MARKS] = stream == CU_STREAM_LEGACY ? NULL : stream;
    t->mark_thread[k % MARKS] = pthread_self();
    return t->mark_bad[k % MARKS] ? 0 : k + 1;
}

CUstream lms_timing_gauge(int device)
{
    if (device < 0 || device >= LMS_MAX_DEVICES || !ready(&timing[device]))
        return NULL;
    dev_timing *t = &timing[device];
    if (t->gauge || t->gauge_tried)
        return t->gauge;
    /* Made on the first point that needs it (a program that never does
     * gets no stream), in the points' events' context: an event is
     * recorded only on a stream of its own context. In another context,
     * not yet. */
    CUcontext cur = NULL;
    if (!t->made_in || !lms_drv.cuCtxGetCurrent || lms_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS ||
        cur != t->made_in)
        return NULL;
    t->gauge_tried = true;
    if (!lms_drv.cuStreamCreate || lms_drv.cuStreamCreate(&t->gauge, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        t->gauge = NULL;
    return t->gauge;
}

double lms_timing_between(int device, int from, int to)
{
    if (device < 0 || device >= LMS_MAX_DEVICES || from <= 0 || to <= from)
        return -1;
    dev_timing *t = &timing[device];
    if (!t->ok || !kept(t, from) || !kept(t, to))
        return -1;   /* not recorded, or recorded over since */
    CUevent a = t->marks[(from - 1) % MARKS], b = t->marks[(to - 1) % MARKS];
    if (t->mark_bad[(from - 1) % MARKS] || t->mark_bad[(to - 1) % MARKS])
        return -1;
    if (t->mark_stream[(from - 1) % MARKS] != t->mark_stream[(to - 1) % MARKS] ||
        (t->mark_stream[(to - 1) % MARKS] == CU_STREAM_PER_THREAD &&
         !pthread_equal(t->mark_thread[(from - 1) % MARKS], t->mark_thread[(to - 1) % MARKS])))
        return -1;   /* on two streams: no step's time (see lms_timing_mark) */
    lms_capture_mode mode = lms_capture_relax();
    float ms = 0;
    bool done = lms_drv.cuEventQuery(b) == CUDA_SUCCESS && lms_drv.cuEventElapsedTime(&ms, a, b) == CUDA_SUCCESS;
    lms_capture_restore(mode);
    return done ? (double)ms * 1e6 : -1;
}

void lms_timing_context_gone(CUcontext ctx)
{
    for (int dev = 0; dev < LMS_MAX_DEVICES; dev++) {
        dev_timing *t = &timing[dev];
        if (!t->ok || (t->made_in && t->made_in != ctx))
            continue;   /* none made, or made in a context that lives on */
        /* The events and the gauge went with the context: forgotten, not
         * destroyed. The launches in flight are not read; the points
         * recorded read as recorded over (kept() is false for each). */
        for (uint64_t i = t->head; i < t->tail; i++) {
            free(t->pairs[i % PAIRS].remote);
            t->pairs[i % PAIRS].remote = NULL;
        }
        memset(t->pairs, 0, sizeof t->pairs);
        memset(t->marks, 0, sizeof t->marks);
        t->head = t->tail = 0;
        t->nmarks = t->nmarks > INT32_MAX - MARKS ? INT32_MAX : t->nmarks + MARKS;
        t->gauge = NULL;
        t->gauge_tried = false;
        t->made_in = NULL;
        t->ok = t->tried = false;   /* made again, in the context current then, by the next ready() */
        t->pool++;
    }
}
