/*
 * vmm.c — physical memory of the VMM API (see vmm.h and
 * docs/ARCHITECTURE.md "VMM memory is charged until released and unmapped").
 *
 * One record per physical allocation lmshim saw created, in two sorted
 * tables under one lock: `handles` holds the records not yet released (a
 * released handle is invalid to CUDA, and its value may be handed out
 * again), `maps` every live mapping with the record it maps. A record is
 * freed, and its charge returned, when it is released and no mapping refers
 * to it. The real calls run under the lock, so that a mapping and the
 * release or unmapping of the same memory are seen in the order the driver
 * saw them.
 */
#include "vmm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "chunks.h"
#include "grow.h"
#include "log.h"
#include "place.h"
#include "residency.h"
#include "trace.h"

typedef struct vmm_rec {
    uint64_t handle;     /* CUmemGenericAllocationHandle */
    uint64_t size;       /* bytes, charged to `device` */
    int device;
    uint32_t maps;       /* live mappings */
    bool released;       /* cuMemRelease succeeded */
} vmm_rec;

typedef struct vmm_map {
    uint64_t va;         /* start of the mapped range */
    uint64_t size;       /* bytes */
    vmm_rec *rec;
} vmm_map;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static vmm_rec **handles;     /* unreleased, sorted by handle */
static size_t nhandles, caphandles;
static vmm_map *maps;         /* live mappings, sorted by va */
static size_t nmaps, capmaps;

/* Index of the first record whose handle is >= h (under lock). */
static size_t handle_lower(uint64_t h)
{
    size_t lo = 0, hi = nhandles;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (handles[mid]->handle < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Index of the first mapping whose va is >= va (under lock). */
static size_t map_lower(uint64_t va)
{
    size_t lo = 0, hi = nmaps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (maps[mid].va < va)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The accounting view of a record. */
static lms_chunk chunk_of(const vmm_rec *r)
{
    return (lms_chunk){.key = r->handle | LMS_VMM_TAG, .size = r->size, .charged = r->size,
                       .device = (int16_t)r->device, .place = LMS_PLACE_VMM, .flags = LMS_CHUNK_PROGRAM};
}

/* The physical memory is gone: its charge goes back (frees the record). */
static void finish(vmm_rec *r)
{
    lms_account *a = lms_account_of(r->device);
    if (a) {
        lms_chunk c = chunk_of(r);
        lms_account_release(a, r->size);
        lms_account_drop_chunk(a, &c);
    }
    if (lms_trace_on)
        lms_trace_free(r->device, r->handle, r->size, "vmm");
    free(r);
}

bool lms_vmm_args_ok(const void *handle, uint64_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
    size_t gran = 0;
    return handle && prop && flags == 0 && size > 0 && lms_drv.cuMemGetAllocationGranularity &&
           lms_drv.cuMemGetAllocationGranularity(&gran, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
               CUDA_SUCCESS &&
           gran > 0 && size % gran == 0;
}

CUresult lms_vmm_charge(int device, uint64_t size, uint64_t *charged)
{
    *charged = 0;
    lms_account *a = lms_account_of(device);
    if (!a)
        return CUDA_SUCCESS;
    /* Checked and charged in one step: threads creating at once cannot
     * all pass the same room. lmshim's own fetched managed chunks make way
     * first, as for a device allocation, the room they leave charged at
     * once (a fetch of another thread could take it before a second
     * reservation): only the program's memory decides that physical memory
     * passes the budget. */
    lms_place_shared_begin();   /* reclaiming evicts: no context ends meanwhile */
    bool held = lms_residency_reserve(device, size);
    if (held)
        lms_residency_settle(device);   /* evictions still leaving go first */
    lms_place_shared_end();
    if (!held && lms_opt.on_oom == LMS_ON_OOM_FAIL) {
        lms_account_refused(a, size, "cuMemCreate", true);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!held)
        lms_account_force(a, size);
    *charged = size;
    return CUDA_SUCCESS;
}

void lms_vmm_uncharge(int device, uint64_t charged)
{
    lms_account *a = charged ? lms_account_of(device) : NULL;
    if (a)
        lms_account_release(a, charged);
}

bool lms_vmm_force(int device, uint64_t size)
{
    lms_account *a = lms_account_of(device);
    if (a)
        lms_account_force(a, size);
    return a != NULL;
}

void lms_vmm_created(uint64_t handle, int device, uint64_t size)
{
    lms_account *a = lms_account_of(device);
    if (!a)
        return;   /* no account: never charged, its calls pass through */
    vmm_rec *r = malloc(sizeof *r);
    if (!r) {
        lms_account_release(a, size);   /* untracked: its charge goes now */
        return;
    }
    *r = (vmm_rec){.handle = handle, .size = size, .device = device};
    pthread_mutex_lock(&lock);
    size_t i = handle_lower(handle);
    bool ok = (i == nhandles || handles[i]->handle != handle) &&
              lms_grow((void **)&handles, &caphandles, nhandles + 1, sizeof *handles, 64);
    if (ok) {
        memmove(&handles[i + 1], &handles[i], (nhandles - i) * sizeof *handles);
        handles[i] = r;
        nhandles++;
        lms_chunk c = chunk_of(r);
        lms_account_add_chunk(a, &c);
    }
    pthread_mutex_unlock(&lock);
    if (!ok) {
        lms_account_release(a, size);
        free(r);
        return;
    }
    if (lms_trace_on)
        lms_trace_alloc(device, handle, size, size, "vmm", -1, false, -1);
    static atomic_bool warned;   /* one line per process, however often */
    if (lms_account_used(a) > a->budget && !atomic_exchange(&warned, true)) {
        lms_log(LMS_LEVEL_WARN,
                "cuMemCreate of %llu bytes passes the budget of device %d, and physical memory "
                "cannot leave the device; PyTorch grows this way with expandable_segments: "
                "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False (lmshim run does)",
                (unsigned long long)size, device);
    }
}

CUresult lms_vmm_release(uint64_t handle, CUresult (*real)(CUmemGenericAllocationHandle))
{
    pthread_mutex_lock(&lock);
    CUresult res = real(handle);
    size_t i = handle_lower(handle);
    vmm_rec *r = res == CUDA_SUCCESS && i < nhandles && handles[i]->handle == handle ? handles[i] : NULL;
    if (r) {
        memmove(&handles[i], &handles[i + 1], (nhandles - i - 1) * sizeof *handles);
        nhandles--;
        r->released = true;
        if (r->maps == 0)
            finish(r);
    }
    pthread_mutex_unlock(&lock);
    return res;
}

CUresult lms_vmm_map(CUdeviceptr va, size_t size, size_t offset, uint64_t handle,
                     unsigned long long flags,
                     CUresult (*real)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                      unsigned long long))
{
    pthread_mutex_lock(&lock);
    size_t i = handle_lower(handle);
    vmm_rec *r = i < nhandles && handles[i]->handle == handle ? handles[i] : NULL;
    /* Out of memory for the record: the mapping is made, not counted (its
     * charge may then go at the release, early, never late). */
    if (r && !lms_grow((void **)&maps, &capmaps, nmaps + 1, sizeof *maps, 64))
        r = NULL;
    CUresult res = real(va, size, offset, handle, flags);
    if (res == CUDA_SUCCESS && r) {
        size_t k = map_lower(va);
        memmove(&maps[k + 1], &maps[k], (nmaps - k) * sizeof *maps);
        maps[k] = (vmm_map){.va = va, .size = size, .rec = r};
        nmaps++;
        r->maps++;
    }
    pthread_mutex_unlock(&lock);
    return res;
}

CUresult lms_vmm_unmap(CUdeviceptr va, size_t size, CUresult (*real)(CUdeviceptr, size_t))
{
    pthread_mutex_lock(&lock);
    CUresult res = real(va, size);
    if (res == CUDA_SUCCESS) {
        /* Every mapping inside [va, va + size) is gone. */
        size_t k = map_lower(va), end = k;
        while (end < nmaps && maps[end].va - va < size)
            end++;
        for (size_t j = k; j < end; j++) {
            vmm_rec *r = maps[j].rec;
            if (--r->maps == 0 && r->released)
                finish(r);
        }
        memmove(&maps[k], &maps[end], (nmaps - end) * sizeof *maps);
        nmaps -= end - k;
    }
    pthread_mutex_unlock(&lock);
    return res;
}

void lms_vmm_fork_prepare(void) { pthread_mutex_lock(&lock); }
void lms_vmm_fork_parent(void) { pthread_mutex_unlock(&lock); }
void lms_vmm_fork_child(void) { pthread_mutex_init(&lock, NULL); }
