/*
 * place.c — the LMS rule, the budget and OOM fallback (see place.h and
 * docs/ARCHITECTURE.md "Placement").
 */
#include "place.h"

#include <pthread.h>
#include <sched.h>

#include "account.h"
#include "arenas.h"
#include "capture.h"
#include "caps.h"
#include "chunks.h"
#include "frag.h"
#include "log.h"
#include "residency.h"
#include "trace.h"

/* Logs one placement decision at info, in caffe's style: the size, the
 * device total now, the fragmented bytes (holes + rounding), the pointer. */
static void log_decision(const lms_chunk *c, const lms_account *a, const char *why)
{
    if (!LMS_LOG_ON(LMS_LEVEL_INFO))
        return;
    lms_frag f;
    lms_frag_measure(c->device, &f);
    lms_log(LMS_LEVEL_INFO,
            "alloc dev=%d size=%llu place=%s%s used=%llu budget=%llu fragmented=%llu holes=%llu "
            "rounding=%llu largest=%llu ptr=0x%llx",
            c->device, (unsigned long long)c->size, lms_place_names[c->place], why,
            (unsigned long long)lms_account_used(a), (unsigned long long)a->budget,
            (unsigned long long)(f.holes + f.reserved - f.requested), (unsigned long long)f.holes,
            (unsigned long long)(f.reserved - f.requested), (unsigned long long)f.largest_grant,
            (unsigned long long)c->key);
}

/* Allocates `size` bytes of LMS_MODE memory for `device`: managed memory
 * advised to stay on the host and be read by the device over the link, or
 * mapped pinned host memory. */
/* Adds the chunk of a new allocation to the map. A chunk already at its
 * address is stale: the driver hands out no address it still holds, so
 * that memory went with its context (a destroy or reset whose sweep has
 * not reached it yet, preload/context.c); its bookkeeping finishes first.
 * False when the map has no memory for it. */
static bool insert_new(const lms_chunk *c)
{
    if (lms_chunks_insert(c))
        return true;
    lms_chunk old;
    if ((c->key & LMS_VMM_TAG) || !lms_chunks_remove(c->key, &old))
        return false;
    lms_place_gone(&old);
    return lms_chunks_insert(c);
}

static CUresult alloc_off_device(uint64_t size, int device, lms_place place, CUdeviceptr *out)
{
    if (place == LMS_PLACE_HOST) {
        void *h = NULL;
        if (!lms_drv.cuMemHostAlloc || !lms_drv.cuMemHostGetDevicePointer)
            return CUDA_ERROR_OUT_OF_MEMORY;
        CUresult r = lms_drv.cuMemHostAlloc(&h, size, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
        if (r != CUDA_SUCCESS)
            return lms_capture_refused(r) ? r : CUDA_ERROR_OUT_OF_MEMORY;
        r = lms_drv.cuMemHostGetDevicePointer(out, h, 0);
        if (r != CUDA_SUCCESS)
            lms_drv.cuMemFreeHost(h);
        return r == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!lms_drv.cuMemAllocManaged)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult m = lms_drv.cuMemAllocManaged(out, size, CU_MEM_ATTACH_GLOBAL);
    if (m != CUDA_SUCCESS)
        return lms_capture_refused(m) ? m : CUDA_ERROR_OUT_OF_MEMORY;
    if (lms_drv.cuMemAdvise) {
        CUmemLocation cpu = {.type = CU_MEM_LOCATION_TYPE_HOST};
        CUmemLocation gpu = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device};
        if (lms_drv.cuMemAdvise(*out, size, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, cpu) != CUDA_SUCCESS ||
            lms_drv.cuMemAdvise(*out, size, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu) != CUDA_SUCCESS) {
            static atomic_uint warned;
            lms_log_capped(LMS_LEVEL_WARN, &warned, 1, "cuMemAdvise failed on a managed chunk: "
                           "the driver will migrate it on demand");
        }
    }
    return CUDA_SUCCESS;
}

/* Held shared from lmshim's pinned placement's real allocation until its
 * chunk is in the map, and exclusive by a pinned-memory free of an address
 * the map does not know while it asks the driver: such a free (the
 * program's double or wrong-kind free) must not meet lmshim's new
 * placement at a reused address before it is listed, which the driver
 * would free (the program never asked for pinned memory there; without
 * lmshim the call is refused). Placements do not wait for each other; a
 * waiting free goes before new placements (writer first, so a thread
 * placing in a loop does not starve it). Taken only under the context
 * lock held shared, so never held at a fork. */
static pthread_rwlock_t pinned_placing = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

/* Makes the off-device allocation and records it. */
static CUresult place_off_device(const lms_alloc_request *r, lms_account *a, lms_place place,
                                 bool fallback, CUdeviceptr *out)
{
    CUdeviceptr p;
    if (place == LMS_PLACE_MANAGED && !lms_caps_managed_ok(r->device))
        place = LMS_PLACE_HOST;   /* no prefetch possible there (caps.c) */
    /* A stream-ordered request is allowed during any capture; the calls
     * made in its place are not, unless the thread's mode is relaxed. */
    lms_capture_mode mode = {0};
    if (r->async)
        mode = lms_capture_relax();
    if (place == LMS_PLACE_HOST)
        pthread_rwlock_rdlock(&pinned_placing);
    CUresult res = alloc_off_device(r->size, r->device, place, &p);
    lms_capture_restore(mode);
    bool listed = res == CUDA_SUCCESS;
    lms_chunk c = {.key = p, .size = r->size, .device = (int16_t)r->device, .place = (uint8_t)place,
                   .flags = (uint8_t)((fallback ? LMS_CHUNK_FALLBACK : 0) | (r->async ? LMS_CHUNK_ASYNC : 0))};
    if (listed && !insert_new(&c)) {
        /* Cannot track it, so cannot free it right later: give it back. */
        if (place == LMS_PLACE_HOST)
            lms_drv.cuMemFreeHost((void *)(uintptr_t)p);
        else
            lms_drv.cuMemFree(p);
        listed = false;
        res = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (place == LMS_PLACE_HOST)
        pthread_rwlock_unlock(&pinned_placing);
    if (lms_capture_refused(res))
        return res;   /* an allocation a capture forbids: CUDA's answer */
    if (res != CUDA_SUCCESS) {
        atomic_fetch_add(&a->oom_failures, 1);
        /* A program probing for the largest size that fits (halving until
         * one does) fails many times on purpose: a few lines, then one more. */
        static atomic_uint failed_too;
        lms_log_capped(LMS_LEVEL_WARN, &failed_too, 8, "out of memory: dev=%d size=%llu: %s allocation failed too",
                       r->device, (unsigned long long)r->size, lms_place_names[place]);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    lms_account_add_chunk(a, &c);
    int64_t id = place == LMS_PLACE_MANAGED ? lms_residency_add(p, r->size, r->device) : -1;
    if (lms_trace_on)
        lms_trace_alloc(r->device, p, r->size, 0, lms_place_names[place], id, fallback, r->site);
    log_decision(&c, a, fallback ? " (fallback)" : "");
    *out = p;
    return CUDA_SUCCESS;
}

/* True when a request about to leave the device is answered
 * OUT_OF_MEMORY instead, for the program's caching allocator (arenas.h);
 * counted as such. Only cuMemAlloc-style requests: stream-ordered ones come
 * from the driver's own pools, whose callers need not retry. */
static bool answer_oom(const lms_alloc_request *r, lms_account *a, uint64_t charge)
{
    if (r->async || r->device_only || !lms_arenas_answer_oom(r->device, charge))
        return false;
    atomic_fetch_add(&a->oom_failures, 1);
    if (lms_trace_on)
        lms_trace_oom(r->device, r->size, lms_account_used(a), a->budget);
    return true;
}

/* Held shared by each placement, from the real allocation to its chunk's
 * insertion, and by the residency engine's work before and after each
 * launch; exclusively by a context's end, from the driver's call to its
 * last dropped chunk: a sweep never meets an address the driver has
 * handed out again before lmshim knows of it, and no launch on another
 * thread evicts on the engine's streams, or chunks, of a context the
 * driver destroyed before lmshim forgot them (a heap-use-after-free in
 * the simulator under AddressSanitizer, and evictions of memory gone:
 * contexts/shim_threads_lru, 1 run in 8). */
static pthread_rwlock_t ctx_lock = PTHREAD_RWLOCK_INITIALIZER;

/* The holds of ctx_lock by this thread (shared ones may nest), and its
 * cancellation state before the first: a thread is not cancelled while it
 * holds the lock (it would stay held, and a key its free took stay marked
 * as being freed, for ever). */
static __thread int held_depth __attribute__((tls_model("initial-exec")));   /* no __tls_get_addr: twice a launch */
static __thread int saved_cancel __attribute__((tls_model("initial-exec")));

/* Counts a hold of ctx_lock; the first disables cancellation. */
static void hold_begin(void)
{
    if (held_depth++ == 0)
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &saved_cancel);
}

/* Counts a hold off; the last puts cancellation back. */
static void hold_end(void)
{
    if (--held_depth == 0)
        pthread_setcancelstate(saved_cancel, NULL);
}

void lms_place_context_begin(void)
{
    hold_begin();
    pthread_rwlock_wrlock(&ctx_lock);
}

void lms_place_context_end(void)
{
    pthread_rwlock_unlock(&ctx_lock);
    hold_end();
}

void lms_place_shared_begin(void)
{
    hold_begin();
    pthread_rwlock_rdlock(&ctx_lock);
}

void lms_place_shared_end(void)
{
    pthread_rwlock_unlock(&ctx_lock);
    hold_end();
}
void lms_place_fork_prepare(void) { pthread_rwlock_wrlock(&ctx_lock); }
void lms_place_fork_parent(void) { pthread_rwlock_unlock(&ctx_lock); }
void lms_place_fork_child(void) { pthread_rwlock_init(&ctx_lock, NULL); }

static CUresult place_alloc(const lms_alloc_request *r, CUdeviceptr *out);

CUresult lms_place_alloc(const lms_alloc_request *r, CUdeviceptr *out)
{
    lms_capture_drain();   /* memory a graph has freed: not counted against this one */
    lms_place_shared_begin();
    CUresult res = place_alloc(r, out);
    lms_place_shared_end();
    return res;
}

/* Whether `charge` more bytes would take what is charged past LMS_FRAC of
 * the budget (the group's charges in a group). */
static bool past_frac(const lms_account *a, uint64_t charge)
{
    return (double)(lms_account_used(a) + charge) > lms_opt.frac * (double)a->budget;
}

/* Whether a device request of `charge` bytes below LMS_THRESHOLD leaves
 * the device to keep the residency engine's room: past LMS_FRAC of the
 * budget, while managed chunks lmshim placed live, when it would leave
 * less room beside what cannot leave the device (lms_account_room) than
 * LMS_FRAC sets aside for them, (1 - LMS_FRAC) of the budget, or, where
 * less, the device chunks' own share (LMS_FRAC of it: under a fraction of
 * a half the room is the larger share already, and LMS_FRAC=0, every
 * large chunk off the device, keeps every small one on it) or those
 * managed chunks' bytes (the program's own managed chunks are not the
 * engine's to fetch). A request the room cannot hold at all goes the way
 * of any that does not fit (LMS_ON_OOM). Without it a program whose small
 * allocations come after its large ones (a frozen model, then its
 * adapters and their optimizer state) filled the room with chunks that
 * stay for good, and every managed chunk was read over the link:
 * bench/shapes `lora` at 2x, 852 ms a step against 77 with the rule
 * (docs/PERFORMANCE.md, "Thirty-second round"). */
static bool keeps_room(const lms_account *a, uint64_t charge)
{
    uint64_t managed = lms_account_engine_managed(a);
    if (managed == 0 || !past_frac(a, charge))
        return false;
    double floor = (1 - lms_opt.frac) * (double)a->budget, share = lms_opt.frac * (double)a->budget;
    floor = floor < share ? floor : share;
    floor = floor < (double)managed ? floor : (double)managed;
    double left = (double)lms_account_room(a) - (double)charge;
    return left >= 0 && left < floor;   /* one that cannot fit at all is the budget's to refuse or fall back */
}

/* lms_place_alloc under the context lock. */
static CUresult place_alloc(const lms_alloc_request *r, CUdeviceptr *out)
{
    lms_account *a = lms_account_of(r->device);
    if (!a)
        return r->native(r->native_ctx, out);   /* no device: CUDA answers */
    /* On a capturing stream a stream-ordered allocation is a node of the
     * graph, whose memory each launch gets and its free node gives back:
     * CUDA's alone (a chunk of lmshim's would be made once, at capture, and
     * released after the first launch). Not tracked: its free passes too. */
    if (r->async && lms_capture_busy(r->stream))
        return r->native(r->native_ctx, out);
    uint64_t charge = lms_charge_of(r->size);
    lms_arenas_note_request(r->device, r->size, a->budget);
    lms_place want = LMS_PLACE_DEVICE;
    if (!r->device_only && (r->size >= lms_opt.threshold ? past_frac(a, charge) : keeps_room(a, charge)))
        want = lms_opt.mode == LMS_MODE_HOST ? LMS_PLACE_HOST : LMS_PLACE_MANAGED;
    if (want != LMS_PLACE_DEVICE)
        return answer_oom(r, a, charge) ? CUDA_ERROR_OUT_OF_MEMORY : place_off_device(r, a, want, false, out);
    /* Fetched chunks make way, their room kept for this request (another
     * thread's fetch could take it before a second reservation). */
    if (lms_residency_reserve(r->device, charge)) {
        if (!r->async)
            lms_residency_settle(r->device);   /* evictions still leaving go first */
        CUresult res = r->native(r->native_ctx, out);
        /* A stream-ordered allocation is used in its stream's order: the
         * stream waits for them instead (after the real call, which then
         * succeeded: every use of the memory is ordered after both). */
        if (res == CUDA_SUCCESS && r->async && !lms_residency_settle_stream(r->device, r->stream))
            lms_residency_settle(r->device);   /* cannot order it: wait here */
        if (res == CUDA_SUCCESS) {
            lms_chunk c = {.key = *out, .size = r->size, .charged = charge, .device = (int16_t)r->device,
                           .place = LMS_PLACE_DEVICE, .flags = r->async ? LMS_CHUNK_ASYNC : 0};
            if (!r->async && !r->device_only)   /* only what can be answered settles it */
                lms_arenas_placed(r->device, charge);
            if (insert_new(&c)) {
                lms_account_add_chunk(a, &c);
                if (lms_trace_on)
                    lms_trace_alloc(r->device, *out, r->size, charge, "device", -1, false, r->site);
                log_decision(&c, a, "");
            } else {
                lms_account_release(a, charge);   /* untracked: its free passes through */
            }
            return CUDA_SUCCESS;
        }
        lms_account_release(a, charge);
        if (res != CUDA_ERROR_OUT_OF_MEMORY)
            return res;
    }
    if (lms_opt.on_oom == LMS_ON_OOM_FAIL || r->device_only) {
        lms_account_refused(a, r->size, "allocation", true);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (answer_oom(r, a, charge))
        return CUDA_ERROR_OUT_OF_MEMORY;
    lms_place fb = lms_opt.mode == LMS_MODE_HOST ? LMS_PLACE_HOST : LMS_PLACE_MANAGED;
    if (lms_trace_on)
        lms_trace_fallback(r->device, r->size, lms_place_names[fb], "budget or device out of memory");
    return place_off_device(r, a, fb, true, out);
}

/* The bookkeeping of a chunk whose memory went back to the driver: its
 * residency entry `res` (taken, or NULL) and its charge go back. */
static void finish_free(const lms_chunk *c, lms_res_chunk *res)
{
    lms_residency_drop(res);    /* its residency charge goes back */
    lms_account *a = lms_account_of(c->device);
    if (a) {
        if (c->charged)
            lms_account_release(a, c->charged);
        lms_account_drop_chunk(a, c);
    }
    if (lms_trace_on)
        lms_trace_free(c->device, c->key, c->size, lms_place_names[c->place]);
    if (LMS_LOG_ON(LMS_LEVEL_DEBUG))
        lms_log(LMS_LEVEL_DEBUG, "free dev=%d size=%llu place=%s ptr=0x%llx", c->device,
                (unsigned long long)c->size, lms_place_names[c->place], (unsigned long long)c->key);
}

void lms_place_gone(const lms_chunk *c)
{
    lms_res_chunk *res = c->place == LMS_PLACE_MANAGED && !(c->flags & LMS_CHUNK_PROGRAM)
                             ? lms_residency_take(c->key) : NULL;
    finish_free(c, res);
}

CUresult lms_place_release(const lms_chunk *c)
{
    /* Out of the residency map before the real free, as in lms_place_free. */
    lms_res_chunk *res = c->place == LMS_PLACE_MANAGED && !(c->flags & LMS_CHUNK_PROGRAM)
                             ? lms_residency_take(c->key) : NULL;
    CUresult r = c->place == LMS_PLACE_HOST ? lms_drv.cuMemFreeHost((void *)(uintptr_t)c->key)
                                            : lms_drv.cuMemFree((CUdeviceptr)c->key);
    if (r != CUDA_SUCCESS)
        lms_residency_put_back(res);   /* still allocated: it keeps its entry and charge */
    else
        finish_free(c, res);
    return r;
}

bool lms_place_driver_forgot(uint64_t key)
{
    CUdeviceptr start = 0;
    if (!lms_drv.cuPointerGetAttribute)
        return false;
    CUresult r = lms_drv.cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, (CUdeviceptr)key);
    return r == CUDA_ERROR_INVALID_VALUE || (r == CUDA_SUCCESS && start != (CUdeviceptr)key);
}

/* The real free of an address lmshim does not track: CUDA answers. */
static CUresult pass_free(CUdeviceptr p, const lms_free_op *op)
{
    return op->async_free ? op->async_free(p, op->stream) : op->sync_free(p);
}

/* Waits for `stream` with the thread's capture mode relaxed (the free
 * made in place of a stream-ordered one is allowed during any capture). */
static CUresult stream_wait(CUstream stream)
{
    if (!lms_drv.cuStreamSynchronize)
        return CUDA_SUCCESS;
    lms_capture_mode mode = lms_capture_relax();
    CUresult r = lms_drv.cuStreamSynchronize(stream);
    lms_capture_restore(mode);
    return r;
}

/* True for a chunk whose stream-ordered free waits for its stream: one
 * lmshim placed off the device (not pool memory, nor the program's own
 * managed or pinned memory, which the driver frees as the program asks). */
static bool off_device(const lms_chunk *c)
{
    return (c->place == LMS_PLACE_MANAGED || c->place == LMS_PLACE_HOST) && !(c->flags & LMS_CHUNK_PROGRAM);
}

/* Frees chunk c at p (`waited`: a stream-ordered free's stream was
 * waited for already, by lms_place_free). `in_map`: c was taken out of the
 * chunk map by lms_chunks_take, its key marked as being freed, and is
 * settled here (put back when the free fails, so a second free of the
 * address meanwhile waits for the outcome); otherwise c is held by
 * lms_capture_claim for this free (a captured free of it never ran).
 * *freed says whether the memory went back (not when the free failed, or a
 * capture deferred it). */
static CUresult free_chunk(CUdeviceptr p, lms_chunk c, const lms_free_op *op, bool in_map, bool waited,
                           bool *freed)
{
    bool async = op->async_free != NULL;
    const lms_chunk *back = &c;   /* what settles into the map: the chunk, unless gone or listed */
    lms_capture_mode mode = {0};
    lms_res_chunk *res = NULL;
    CUresult r;
    *freed = false;
    /* CUDA frees pinned host memory only with cuMemFreeHost and device
     * memory only with a device free; lmshim's placement does not change
     * what the program holds. Where the driver holds the memory as the
     * program asked for it (the program's own kinds, device placements),
     * the driver answers a wrong free, a capture's refusal first. A wrong
     * free of lmshim's own placement is answered here: the driver holds
     * that memory as another kind than the program asked for (its
     * cuMemFreeHost would free lmshim's pinned placement). */
    if (op->host_free != (c.place == LMS_PLACE_PINNED) && c.place != LMS_PLACE_DEVICE &&
        !(c.flags & LMS_CHUNK_PROGRAM)) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto settle;
    }
    bool off = off_device(&c);
    if (off && async && lms_capture_busy(op->stream)) {
        /* On a capturing stream nothing may synchronize: the free becomes
         * part of the capture instead (capture.c). The memory stays until
         * a launch of the graph passes the free, and so do its residency
         * entry (still fetched and evicted) and its charge:
         * lms_place_released finishes the free then. */
        if (lms_capture_free_async(&c, op->stream, &r)) {
            if (r == CUDA_SUCCESS)
                back = NULL;   /* listed */
            goto settle;
        }
        /* The capture ended meanwhile: freed as outside one, after the
         * stream's work (lms_place_free did not wait for a capturing
         * stream), as the driver would free its own memory. Before, the
         * program got CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, an answer
         * the driver never gives a stream that does not capture. */
        waited = false;
    }
    /* Not pool memory: a stream-ordered free waits for the stream before
     * anything is taken down; lms_place_free did, before the context lock,
     * unless it could not tell then what the address was (another free
     * held it). */
    if (off && async && !waited) {
        r = stream_wait(op->stream);
        if (r != CUDA_SUCCESS)
            goto settle;
    }
    /* A stream-ordered free is allowed during any capture; the free made
     * in its place is not, unless the thread's mode is relaxed (another
     * thread's global capture stays valid). The chunk is out of the map
     * already: once the driver has the address back it may hand it out
     * again, to another thread, at once. */
    if (off && async)
        mode = lms_capture_relax();
    if (c.place == LMS_PLACE_MANAGED && !(c.flags & LMS_CHUNK_PROGRAM))
        res = lms_residency_take(p);
    if (c.place == LMS_PLACE_DEVICE || (c.flags & LMS_CHUNK_PROGRAM))
        r = pass_free(p, op);   /* the program's call: the driver answers it */
    else if (c.place == LMS_PLACE_HOST)
        r = lms_drv.cuMemFreeHost((void *)(uintptr_t)p);
    else
        r = op->sync_free(p);   /* lmshim's managed placement */
    lms_capture_restore(mode);
    /* A failed free leaves the chunk as it was, unless the memory went all
     * the same (freed behind lmshim's back). */
    if (r != CUDA_SUCCESS && !lms_place_driver_forgot(p)) {
        lms_residency_put_back(res);
        goto settle;
    }
    finish_free(&c, res);
    back = NULL;
    *freed = true;
settle:
    if (in_map)
        lms_chunks_settle(p, back);
    return r;
}

/* A pinned-memory free of an address neither the map nor a captured free
 * holds: asked of the driver while no pinned placement of lmshim's is
 * between its real allocation and its listing (pinned_placing), unless
 * the address is listed by then (*again: look once more). */
static CUresult pass_free_pinned_or_again(CUdeviceptr p, const lms_free_op *op, bool *again)
{
    lms_chunk c;
    pthread_rwlock_wrlock(&pinned_placing);
    *again = lms_chunks_peek(p, &c) != LMS_TAKE_NONE;
    CUresult r = *again ? CUDA_SUCCESS : pass_free(p, op);
    pthread_rwlock_unlock(&pinned_placing);
    return r;
}

/* lms_place_free under the context lock (`waited`: as free_chunk's). */
static CUresult place_free(CUdeviceptr p, const lms_free_op *op, bool waited)
{
    if (!p)
        return pass_free(p, op);
    for (;;) {
        lms_chunk c;
        bool freed;
        switch (lms_chunks_take(p, &c)) {
        case LMS_TAKE_FOUND:
            return free_chunk(p, c, op, true, waited, &freed);
        case LMS_TAKE_BUSY:
            sched_yield();   /* another free of the address decides first */
            continue;
        case LMS_TAKE_NONE:
            break;
        }
        /* Not in the map: a captured free may hold it (capture.c). */
        switch (lms_capture_claim(p, &c)) {
        case LMS_CLAIM_NONE:
            if (op->host_free) {
                bool again;
                CUresult r = pass_free_pinned_or_again(p, op, &again);
                if (again)
                    continue;   /* listed meanwhile: freed as lmshim's chunk */
                return r;
            }
            return pass_free(p, op);
        case LMS_CLAIM_TWICE:
            return CUDA_ERROR_INVALID_VALUE;   /* a graph freed it: CUDA's answer to a double free */
        case LMS_CLAIM_BUSY:
            sched_yield();   /* another free of the address decides first */
            continue;
        case LMS_CLAIM_TAKEN:
            break;
        }
        /* Its captured frees never ran: the memory is the program's to free
         * (or to capture a free of again). */
        CUresult r = free_chunk(p, c, op, false, waited, &freed);
        lms_capture_claim_end(p, freed);
        return r;
    }
}

/* Before the context lock, for a stream-ordered free at p: waits for its
 * stream when p is an off-device chunk (not pool memory), known in the
 * map or held by a captured free; a fork waits for the context lock, and
 * the stream may be waiting for the forking thread. *waited says whether
 * the question was settled here (a device chunk, an unknown address, a
 * capturing stream: nothing to wait for); not when another free had the
 * address taken (free_chunk then waits under the lock). */
static CUresult wait_stream_first(CUdeviceptr p, const lms_free_op *op, bool *waited)
{
    lms_chunk c;
    *waited = true;
    if (!op->async_free || !p)
        return CUDA_SUCCESS;
    lms_take t = lms_chunks_peek(p, &c);
    bool off;
    if (t == LMS_TAKE_FOUND) {
        off = off_device(&c);
    } else if (t == LMS_TAKE_NONE && lms_capture_holds(p, &c)) {
        off = off_device(&c);
    } else {
        *waited = t == LMS_TAKE_NONE;   /* unknown: the driver answers */
        return CUDA_SUCCESS;
    }
    if (!off || lms_capture_busy(op->stream))
        return CUDA_SUCCESS;
    return stream_wait(op->stream);
}

CUresult lms_place_free(CUdeviceptr p, const lms_free_op *op)
{
    lms_capture_drain();   /* before the lock: a drain takes it itself */
    bool waited;
    CUresult r = wait_stream_first(p, op, &waited);
    if (r != CUDA_SUCCESS)
        return r;
    /* Shared, as a placement: a context's end cannot sweep between this
     * free's removal of a chunk and its putting back after a failed real
     * free (the chunk would outlive its memory, charged). */
    lms_place_shared_begin();
    r = place_free(p, op, waited);
    lms_place_shared_end();
    return r;
}

void lms_place_note_program(uint64_t ptr, uint64_t size, int device, int place)
{
    lms_account *a = lms_account_of(device < 0 ? 0 : device);
    lms_chunk c = {.key = ptr, .size = size, .device = (int16_t)(device < 0 ? 0 : device),
                   .place = (uint8_t)place, .flags = LMS_CHUNK_PROGRAM};
    if (a && insert_new(&c)) {
        lms_account_add_chunk(a, &c);
        if (lms_trace_on)
            lms_trace_alloc(c.device, ptr, size, 0, lms_place_names[place], -1, false, -1);
    }
}

CUresult lms_place_mem_info(size_t *free_bytes, size_t *total, CUresult (*real)(size_t *, size_t *))
{
    lms_capture_drain();
    CUresult r = real(free_bytes, total);
    if (r != CUDA_SUCCESS)
        return r;
    lms_account *a = lms_account_of(lms_driver_current_device());
    if (!a)
        return r;
    uint64_t t = a->budget < *total ? a->budget : *total;
    uint64_t used = lms_account_used(a);
    uint64_t f = used < t ? t - used : 0;
    if (f > *free_bytes)
        f = *free_bytes;
    *total = t;
    *free_bytes = f;
    return CUDA_SUCCESS;
}

CUresult lms_place_total_mem(size_t *bytes, CUdevice dev, CUresult (*real)(size_t *, CUdevice))
{
    CUresult r = real(bytes, dev);
    if (r != CUDA_SUCCESS)
        return r;
    lms_account *a = lms_account_of(dev);
    if (a && a->budget < *bytes)
        *bytes = a->budget;
    return CUDA_SUCCESS;
}
