/*
 * arrays.c — the device memory of CUDA arrays (see arrays.h and
 * docs/ARCHITECTURE.md "Arrays are charged until destroyed").
 *
 * One record per array or mipmapped array lmshim saw created, in a table
 * sorted by (handle, kind) under one lock (the two kinds of handle are
 * separate objects of the driver, whose values might meet). A record holds
 * the charge, the device and the context the array was made in. The
 * destroys run their real call under the lock, so that a destruction and a
 * creation that gets the same handle value back are seen in the order the
 * driver saw them. A mipmapped array is charged the bytes of all its
 * levels; the level arrays cuMipmappedArrayGetLevel hands out are its own
 * (no record: cuArrayDestroy of one passes through).
 */
#include "arrays.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "array_bytes.h"
#include "grow.h"
#include "log.h"
#include "place.h"
#include "residency.h"

typedef struct array_rec {
    uintptr_t handle;    /* the CUarray or CUmipmappedArray */
    bool mip;            /* a mipmapped array */
    CUcontext ctx;       /* the context it was made in */
    uint64_t charge;     /* bytes charged to `device` */
    int device;
} array_rec;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static array_rec *recs;      /* sorted by handle */
static size_t nrecs, caprecs;
static _Atomic uint64_t charged_on[LMS_MAX_DEVICES];   /* the records' charges by device (read without the lock) */

/* Index of the first record at or after (h, mip) (under lock). */
static size_t lower(uintptr_t h, bool mip)
{
    size_t lo = 0, hi = nrecs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (recs[mid].handle < h || (recs[mid].handle == h && recs[mid].mip < mip))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* True when record i is (h, mip) (under lock). */
static bool at(size_t i, uintptr_t h, bool mip)
{
    return i < nrecs && recs[i].handle == h && recs[i].mip == mip;
}

/* Bytes of an array's elements (a 0 height or depth counts 1), of all
 * `levels` levels of a mipmapped one (levels > 0), or 0 when lmshim does
 * not charge it. */
static uint64_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels, bool mip)
{
    if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
        return 0;   /* no memory until the program maps some */
    return mip ? lms_mipmap_bytes(d, levels) : lms_array_desc_bytes(d);
}

/* Room for an array about to be made (arrays.h); owns nothing. */
lms_array_room lms_arrays_make_room(const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels, bool mip)
{
    lms_array_room none = {.device = -1};
    if (!desc || !lms_array_desc_valid(desc))
        return none;   /* the driver refuses it: nothing leaves for it */
    uint64_t bytes = array_bytes(desc, levels, mip);
    int device = lms_driver_current_device();
    lms_account *a = bytes && device >= 0 ? lms_account_of(device) : NULL;
    if (!a)
        return none;
    uint64_t charge = lms_charge_of(bytes);
    if (charge > a->budget)
        return none;   /* no room can be made: nothing leaves in vain */
    lms_place_shared_begin();   /* reclaiming evicts: no context ends meanwhile */
    bool held = lms_residency_reserve(device, charge);   /* fetched chunks make way */
    /* What still leaves goes first; with LMS_ON_OOM=fail an array without
     * room is refused once the driver made it: no wait for it. */
    if (held || lms_opt.on_oom != LMS_ON_OOM_FAIL)
        lms_residency_settle_room(device, held ? 0 : charge);
    lms_place_shared_end();
    return held ? (lms_array_room){.device = device, .charge = charge} : none;
}

void lms_arrays_room_release(lms_array_room room)
{
    lms_account *a = room.device >= 0 ? lms_account_of(room.device) : NULL;
    if (a && room.charge)
        lms_account_release(a, room.charge);
}

/* Charges and records (h, mip) of `bytes`, with the reservation `room`
 * held for it; the shared body of the two creations. */
static CUresult created(uintptr_t handle, bool mip, uint64_t bytes, lms_array_room room)
{
    int device = lms_driver_current_device();
    CUcontext ctx = NULL;
    lms_account *a = device >= 0 ? lms_account_of(device) : NULL;
    uint64_t charge = lms_charge_of(bytes);
    if (room.device >= 0 && (room.device != device || room.charge != charge || bytes == 0)) {
        lms_arrays_room_release(room);   /* not this array's (the context changed meanwhile) */
        room.device = -1;
    }
    if (bytes == 0 || !a || !lms_drv.cuCtxGetCurrent || lms_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) {
        lms_arrays_room_release(room);
        return CUDA_SUCCESS;   /* untracked: never charged */
    }
    const char *what = mip ? "mipmapped array" : "array";
    if (room.device >= 0) {
        /* charged already: the reservation held while the driver made it */
    } else if (lms_opt.on_oom == LMS_ON_OOM_FAIL) {
        if (!lms_account_reserve(a, charge, a->budget)) {
            /* No trace line: a trace holds allocations and launches, and
             * arrays are neither (their creation is not traced either). */
            lms_account_refused(a, charge, what, false);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    } else {
        lms_account_force(a, charge);
    }
    pthread_mutex_lock(&lock);
    size_t i = lower(handle, mip);
    bool ok = !at(i, handle, mip);
    if (ok)
        ok = lms_grow((void **)&recs, &caprecs, nrecs + 1, sizeof *recs, 64);
    if (ok) {
        memmove(&recs[i + 1], &recs[i], (nrecs - i) * sizeof *recs);
        recs[i] = (array_rec){.handle = handle, .mip = mip, .ctx = ctx, .charge = charge, .device = device};
        nrecs++;
        atomic_fetch_add_explicit(&charged_on[device], charge, memory_order_relaxed);
    }
    pthread_mutex_unlock(&lock);
    if (!ok) {
        lms_account_release(a, charge);   /* untracked: its destroy passes through */
        return CUDA_SUCCESS;
    }
    static atomic_bool warned;   /* one line per process, however often */
    if (lms_account_used(a) > a->budget && !atomic_exchange(&warned, true))
        lms_log(LMS_LEVEL_WARN,
                "a CUDA %s of %llu bytes passes the budget of device %d, and arrays cannot "
                "leave the device (LMS_ON_OOM=fail refuses it instead)",
                what, (unsigned long long)charge, device);
    return CUDA_SUCCESS;
}

CUresult lms_array_created(CUarray handle, const CUDA_ARRAY3D_DESCRIPTOR *desc, lms_array_room room)
{
    return created((uintptr_t)handle, false, desc ? array_bytes(desc, 0, false) : 0, room);
}

CUresult lms_mipmapped_created(CUmipmappedArray handle, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels,
                               lms_array_room room)
{
    return created((uintptr_t)handle, true, desc ? array_bytes(desc, levels, true) : 0, room);
}

/* Returns a record's charge (its memory is gone). */
static void release(const array_rec *r)
{
    atomic_fetch_sub_explicit(&charged_on[r->device], r->charge, memory_order_relaxed);
    lms_account *a = lms_account_of(r->device);
    if (a)
        lms_account_release(a, r->charge);
}

/* Drops record (h, mip) after the driver destroyed it, returning its
 * charge; nothing when lmshim has none (under lock). */
static void forget(uintptr_t h, bool mip)
{
    size_t i = lower(h, mip);
    if (!at(i, h, mip))
        return;
    release(&recs[i]);
    memmove(&recs[i], &recs[i + 1], (nrecs - i - 1) * sizeof *recs);
    nrecs--;
}

CUresult lms_array_destroy(CUarray handle, CUresult (*real)(CUarray))
{
    pthread_mutex_lock(&lock);
    CUresult res = real(handle);
    if (res == CUDA_SUCCESS)
        forget((uintptr_t)handle, false);
    pthread_mutex_unlock(&lock);
    return res;
}

CUresult lms_mipmapped_destroy(CUmipmappedArray handle, CUresult (*real)(CUmipmappedArray))
{
    pthread_mutex_lock(&lock);
    CUresult res = real(handle);
    if (res == CUDA_SUCCESS)
        forget((uintptr_t)handle, true);
    pthread_mutex_unlock(&lock);
    return res;
}

void lms_arrays_context_gone(CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    size_t k = 0;
    for (size_t i = 0; i < nrecs; i++) {
        if (recs[i].ctx == ctx)
            release(&recs[i]);
        else
            recs[k++] = recs[i];
    }
    size_t dropped = nrecs - k;
    nrecs = k;
    pthread_mutex_unlock(&lock);
    if (dropped)
        lms_log(LMS_LEVEL_INFO, "context destroyed: %zu arrays freed with it", dropped);
}

uint64_t lms_arrays_charged(int device)
{
    return device >= 0 && device < LMS_MAX_DEVICES ? atomic_load_explicit(&charged_on[device], memory_order_relaxed)
                                                   : 0;
}

void lms_arrays_fork_prepare(void) { pthread_mutex_lock(&lock); }
void lms_arrays_fork_parent(void) { pthread_mutex_unlock(&lock); }
void lms_arrays_fork_child(void) { pthread_mutex_init(&lock, NULL); }
