/*
 * capture.c — the engine's answers to stream capture (see capture.h).
 *
 * A launch on a capturing stream does not run; its kernels run when the
 * graph is launched, and the graph launch hook (graph.c) makes their chunks
 * resident then. So while a stream captures the engine issues nothing on
 * it. A stream-ordered free of a chunk lmshim placed off the device would
 * synchronize the stream, which a capture forbids; it becomes a host node
 * instead, which only marks the chunk due, and the memory is released by
 * the next hook that drains (never from inside the host function, where
 * CUDA calls are not allowed), with the thread's capture mode relaxed so a
 * capture elsewhere is not disturbed. Until then the memory exists, so the
 * chunk keeps its residency entry and its charge (place.c releases them).
 */
#include "capture.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "graph.h"
#include "log.h"
#include "place.h"

/* One free recorded in a capture. Records stay allocated (and listed, so
 * they stay reachable) for the life of the process: a graph may run its host
 * node again. Released ones move to a list the drain never walks.
 *
 * States: 0 captured (the node has not run: the memory is the program's
 * still), 1 due (the node ran: the next drain frees it), 3 releasing (a
 * drain frees it now; still listed, so a free of the address meanwhile is
 * answered as a double free), 4 claimed (the program frees the address
 * itself while its captured free has not run: lms_capture_claim), 5
 * claimed and the node ran meanwhile, 2 released or ended (never acts
 * again). Several records may hold one address (a free captured in two
 * graphs): the first to be released ends the others. */
typedef struct deferred {
    lms_chunk chunk;          /* the chunk freed (pinned host or managed) */
    atomic_int state;
    struct deferred *next;
} deferred;

enum { CAPTURED = 0, DUE = 1, RELEASED = 2, RELEASING = 3, CLAIMED = 4, CLAIMED_DUE = 5 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static deferred *list;        /* not yet released, under lock */
static deferred *released;    /* released: kept (a graph may run their node again), never walked */
static atomic_int due;        /* records in state DUE */
static atomic_int listed;     /* records on `list`: none, and a free need not look */

/* Captures begun through the hooks and not seen ending: while there is
 * none, no stream captures (a stream joins a capture only while its origin
 * captures), and lms_capture_busy need not ask the driver. Counted before
 * the real begin, so a launch the program orders after a begin sees it. */
static atomic_int captures_open;
/* A capture ended that was not seen beginning: from then on every
 * lms_capture_busy asks the driver. */
static atomic_bool captures_unseen;

void lms_capture_untracked(void) { atomic_store(&captures_unseen, true); }
void lms_capture_begin_call(void) { atomic_fetch_add(&captures_open, 1); }
void lms_capture_begin_failed(void) { atomic_fetch_sub(&captures_open, 1); }

bool lms_capture_active(CUstream stream)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    return lms_drv.cuStreamIsCapturing && lms_drv.cuStreamIsCapturing(stream, &st) == CUDA_SUCCESS &&
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* True for the answers of a cuStreamEndCapture that ended a capture: it
 * succeeded, or the capture ended without a graph (invalidated, or work
 * left unjoined). Any other error (nothing captures any more: another
 * thread's end got there first; a bad handle) ended nothing. */
static bool ended_one(CUresult r)
{
    return r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
           r == CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
}

void lms_capture_end_call(CUstream stream, bool was, CUresult r)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (!was || !ended_one(r) || !lms_drv.cuStreamIsCapturing ||
        lms_drv.cuStreamIsCapturing(stream, &st) != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE)
        return;   /* not ended here (or cannot tell): the count stays, which only costs a query */
    if (atomic_fetch_sub(&captures_open, 1) <= 0) {
        atomic_fetch_add(&captures_open, 1);
        if (!atomic_exchange(&captures_unseen, true))
            lms_log(LMS_LEVEL_INFO, "a stream capture ended that began before lmshim saw it: every launch "
                                    "now asks whether its stream captures");
    }
}

bool lms_capture_busy(CUstream stream)
{
    if (!lms_drv.cuStreamIsCapturing)
        return false;
    if (atomic_load(&captures_open) <= 0 && !atomic_load_explicit(&captures_unseen, memory_order_relaxed))
        return false;   /* no capture anywhere */
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = lms_drv.cuStreamIsCapturing(stream, &st);
    return r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

void lms_capture_idle(void)
{
    lms_capture_drain();
    lms_graph_poll();
}

bool lms_capture_before_work(CUstream stream)
{
    lms_capture_idle();
    return lms_capture_busy(stream);
}

/* The host node of a captured free: marks it due, or notes that it ran
 * while the program's own free holds it (no CUDA call here). */
static void mark_due(void *user)
{
    deferred *d = user;
    int expect = CAPTURED;
    if (atomic_compare_exchange_strong(&d->state, &expect, DUE))
        atomic_fetch_add(&due, 1);
    else if (expect == CLAIMED)
        atomic_compare_exchange_strong(&d->state, &expect, CLAIMED_DUE);
}

/* Moves d (on `list`, whose link to it is *pp) to `released`, under lock. */
static void retire(deferred **pp, deferred *d)
{
    *pp = d->next;
    d->next = released;
    released = d;
    atomic_fetch_sub(&listed, 1);
}

/* Unlinks d from `list` and retires it, under lock. */
static void retire_listed(deferred *d)
{
    for (deferred **pp = &list; *pp; pp = &(*pp)->next)
        if (*pp == d) {
            retire(pp, d);
            return;
        }
}

/* Ends a record that never acts again (state RELEASED), from CAPTURED or
 * DUE; false when it was in another state. Under lock. */
static bool end_record(deferred *d)
{
    int st = atomic_load(&d->state);
    while ((st == CAPTURED || st == DUE) && !atomic_compare_exchange_weak(&d->state, &st, RELEASED))
        ;
    if (st == DUE)
        atomic_fetch_sub(&due, 1);
    return st == CAPTURED || st == DUE;
}

/* Other captures of d's free end: d's memory goes now, so their nodes
 * must not free the address again. Under lock. */
static void end_siblings(const deferred *d)
{
    for (deferred **pp = &list; *pp;) {
        deferred *o = *pp;
        if (o != d && o->chunk.key == d->chunk.key && end_record(o))
            retire(pp, o);
        else
            pp = &o->next;
    }
}

/* A claimed record as it was before the claim: captured, or due when its
 * node ran meanwhile. Under lock. */
static void unclaim(deferred *d)
{
    int st = CLAIMED;
    if (atomic_compare_exchange_strong(&d->state, &st, CAPTURED))
        return;
    if (st == CLAIMED_DUE) {
        atomic_store(&d->state, DUE);
        atomic_fetch_add(&due, 1);
    }
}

bool lms_capture_holds(uint64_t key, lms_chunk *c)
{
    if (atomic_load(&listed) == 0)
        return false;
    bool found = false;
    pthread_mutex_lock(&lock);
    for (deferred *d = list; d && !found; d = d->next)
        if (d->chunk.key == key) {
            *c = d->chunk;
            found = true;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

lms_claim lms_capture_claim(uint64_t key, lms_chunk *c)
{
    if (atomic_load(&listed) == 0)
        return LMS_CLAIM_NONE;
    bool busy = false, ran = false, held = false;
    pthread_mutex_lock(&lock);
    for (deferred *d = list; d; d = d->next) {
        if (d->chunk.key != key)
            continue;
        int st = atomic_load(&d->state);
        busy |= st == RELEASING || st == CLAIMED || st == CLAIMED_DUE;
        ran |= st == DUE;
        held |= st == CAPTURED;
    }
    if (!busy && !ran && held) {
        for (deferred *d = list; d && !ran; d = d->next) {
            int expect = CAPTURED;
            if (d->chunk.key != key)
                continue;
            if (atomic_compare_exchange_strong(&d->state, &expect, CLAIMED))
                *c = d->chunk;
            else
                ran = true;   /* its node ran just now */
        }
        for (deferred *d = ran ? list : NULL; d; d = d->next)
            if (d->chunk.key == key)
                unclaim(d);   /* no other claim holds this key: only this one's */
    }
    pthread_mutex_unlock(&lock);
    return busy ? LMS_CLAIM_BUSY : ran ? LMS_CLAIM_TWICE : held ? LMS_CLAIM_TAKEN : LMS_CLAIM_NONE;
}

void lms_capture_claim_end(uint64_t key, bool freed)
{
    pthread_mutex_lock(&lock);
    for (deferred **pp = &list; *pp;) {
        deferred *d = *pp;
        int st = atomic_load(&d->state);
        if (d->chunk.key != key || (st != CLAIMED && st != CLAIMED_DUE)) {
            pp = &d->next;
            continue;
        }
        if (freed) {
            atomic_store(&d->state, RELEASED);   /* the node may pass it later: nothing to do */
            retire(pp, d);
            continue;
        }
        unclaim(d);   /* still the program's */
        pp = &d->next;
    }
    pthread_mutex_unlock(&lock);
}

/* The host function lmshim asks the legacy stream for (legacy_ran):
 * does nothing. */
static void nothing(void *user)
{
    (void)user;
}

/* A stream-ordered free on the legacy stream (`stream`) while a blocking
 * stream captures: the driver refuses the program's free so
 * (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) and the refusal invalidates that
 * capture. lmshim frees its own placement without the driver's free, so
 * it asks the driver for the same kind of legacy-stream work, a host
 * function that does nothing, whose refusal invalidates the capture as the
 * program's free would have. True when the function ran instead: the
 * capture ended meanwhile, and nothing refuses the free any more. */
static bool legacy_ran(CUstream stream)
{
    return lms_drv.cuLaunchHostFunc && lms_drv.cuLaunchHostFunc(stream, nothing, NULL) == CUDA_SUCCESS;
}

bool lms_capture_free_async(const lms_chunk *c, CUstream stream, CUresult *r)
{
    if (!lms_drv.cuStreamIsCapturing)
        return false;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    *r = lms_drv.cuStreamIsCapturing(stream, &st);
    if (*r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT && legacy_ran(stream))
        return false;
    if (*r != CUDA_SUCCESS)
        return true;   /* e.g. the legacy stream tied to a capture: CUDA's error */
    if (st == CU_STREAM_CAPTURE_STATUS_NONE)
        return false;
    if (st == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
        *r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        return true;
    }
    deferred *d = calloc(1, sizeof *d);
    if (!d || !lms_drv.cuLaunchHostFunc) {
        free(d);
        *r = CUDA_ERROR_OUT_OF_MEMORY;
        return true;
    }
    d->chunk = *c;
    *r = lms_drv.cuLaunchHostFunc(stream, mark_due, d);
    if (*r != CUDA_SUCCESS) {
        free(d);
        return true;
    }
    pthread_mutex_lock(&lock);
    d->next = list;
    list = d;
    atomic_fetch_add(&listed, 1);
    pthread_mutex_unlock(&lock);
    lms_log(LMS_LEVEL_DEBUG, "free of 0x%llx captured: released when a launch of the graph passes it",
            (unsigned long long)c->key);
    return true;
}

void lms_capture_fork_prepare(void) { pthread_mutex_lock(&lock); }
void lms_capture_fork_parent(void) { pthread_mutex_unlock(&lock); }
void lms_capture_fork_child(void) { pthread_mutex_init(&lock, NULL); }

lms_capture_mode lms_capture_relax(void)
{
    lms_capture_mode m = {.mode = CU_STREAM_CAPTURE_MODE_RELAXED};
    m.saved = lms_drv.cuThreadExchangeStreamCaptureMode &&
              lms_drv.cuThreadExchangeStreamCaptureMode(&m.mode) == CUDA_SUCCESS;
    return m;
}

void lms_capture_restore(lms_capture_mode m)
{
    if (m.saved)
        lms_drv.cuThreadExchangeStreamCaptureMode(&m.mode);
}

void lms_capture_drain(void)
{
    if (atomic_load_explicit(&due, memory_order_relaxed) == 0)
        return;
    lms_capture_mode mode = lms_capture_relax();
    /* Under the context lock, shared: a context's end cannot free the
     * memory of a record taken here before its release
     * (lms_capture_context_gone). */
    lms_place_shared_begin();
    for (;;) {
        /* Taken under the lock, freed outside it (no lock held across a
         * driver call, which may take the driver's own). A taken record
         * stays listed until its memory is gone: a free of its address
         * meanwhile waits for it (lms_capture_claim). */
        deferred *batch[32];
        int n = 0;
        pthread_mutex_lock(&lock);
        for (deferred *d = list; d && n < 32; d = d->next) {
            int expect = DUE;
            if (!atomic_compare_exchange_strong(&d->state, &expect, RELEASING))
                continue;
            atomic_fetch_sub(&due, 1);
            batch[n++] = d;
            end_siblings(d);
        }
        pthread_mutex_unlock(&lock);
        if (n == 0)
            break;
        for (int i = 0; i < n; i++) {
            deferred *d = batch[i];
            CUresult r = lms_place_release(&d->chunk);   /* memory, entry and charge */
            if (r != CUDA_SUCCESS) {
                /* Freed behind lmshim's back: its bookkeeping goes, as a
                 * context's end would drop it. Still allocated: a chunk in
                 * the map again, for the program's free or its context's
                 * end. */
                bool gone = lms_place_driver_forgot(d->chunk.key);
                lms_log(LMS_LEVEL_WARN, "captured free of 0x%llx failed (error %d): %s",
                        (unsigned long long)d->chunk.key, (int)r, gone ? "dropped" : "kept");
                if (gone || !lms_chunks_insert(&d->chunk))
                    lms_place_gone(&d->chunk);
            }
            /* Off the list at once: a free of the address waits meanwhile,
             * and the driver may hand it out again now. */
            pthread_mutex_lock(&lock);
            atomic_store(&d->state, RELEASED);
            retire_listed(d);
            pthread_mutex_unlock(&lock);
        }
    }
    lms_place_shared_end();
    lms_capture_restore(mode);
}

void lms_capture_context_gone(bool (*forgot)(uint64_t key))
{
    /* The records not yet released, copied out under the lock (records
     * are never freed, so the pointers stay good); the driver is asked
     * with no lock held. */
    pthread_mutex_lock(&lock);
    size_t n = 0;
    for (deferred *d = list; d; d = d->next)
        n++;
    deferred **cand = n ? malloc(n * sizeof *cand) : NULL;
    n = 0;
    for (deferred *d = cand ? list : NULL; d; d = d->next)
        cand[n++] = d;
    pthread_mutex_unlock(&lock);
    if (!cand)
        return;   /* none (or no memory: the records stay as they are) */
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if ((atomic_load(&cand[i]->state) == CAPTURED || atomic_load(&cand[i]->state) == DUE) &&
            forgot(cand[i]->chunk.key))
            cand[k++] = cand[i];
    /* The driver freed those with the context: never released again (a
     * graph that passes the node later finds it released). */
    size_t gone = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < k; i++) {
        deferred *d = cand[i];
        /* A graph may pass its node meanwhile (0 -> 1): end_record retries.
         * Drains and frees hold the context lock shared, so no record is
         * releasing or claimed here. */
        if (!end_record(d))
            continue;   /* released meanwhile, or ended as another's sibling */
        end_siblings(d);   /* one memory: dropped once */
        retire_listed(d);
        cand[gone++] = d;
    }
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < gone; i++)
        lms_place_gone(&cand[i]->chunk);   /* its entry and charge, as a free's */
    free(cand);
}
