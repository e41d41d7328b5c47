/*
 * place.c — the LMS rule, the budget and OOM fallback (see place.h and
 * docs/ARCHITECTURE.md "Placement").
 */
#include "place.h"

#include "account.h"
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
            (unsigned long long)atomic_load(&a->used), (unsigned long long)a->budget,
            (unsigned long long)(f.holes + f.reserved - f.requested), (unsigned long long)f.holes,
            (unsigned long long)(f.reserved - f.requested), (unsigned long long)f.largest_grant,
            (unsigned long long)c->key);
}

/* Allocates `size` bytes of LMS_MODE memory for `device`: managed memory
 * advised to stay on the host and be read by the device over the link, or
 * mapped pinned host memory. */
static CUresult alloc_off_device(uint64_t size, int device, lms_place place, CUdeviceptr *out)
{
    if (place == LMS_PLACE_HOST) {
        void *h = NULL;
        if (!lms_drv.cuMemHostAlloc || !lms_drv.cuMemHostGetDevicePointer)
            return CUDA_ERROR_OUT_OF_MEMORY;
        CUresult r = lms_drv.cuMemHostAlloc(&h, size, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
        if (r != CUDA_SUCCESS)
            return CUDA_ERROR_OUT_OF_MEMORY;
        r = lms_drv.cuMemHostGetDevicePointer(out, h, 0);
        if (r != CUDA_SUCCESS)
            lms_drv.cuMemFreeHost(h);
        return r == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!lms_drv.cuMemAllocManaged || lms_drv.cuMemAllocManaged(out, size, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS)
        return CUDA_ERROR_OUT_OF_MEMORY;
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

/* Makes the off-device allocation and records it. */
static CUresult place_off_device(const lms_alloc_request *r, lms_account *a, lms_place place,
                                 bool fallback, CUdeviceptr *out)
{
    CUdeviceptr p;
    if (alloc_off_device(r->size, r->device, place, &p) != CUDA_SUCCESS) {
        atomic_fetch_add(&a->oom_failures, 1);
        lms_log(LMS_LEVEL_WARN, "out of memory: dev=%d size=%llu: %s allocation failed too",
                r->device, (unsigned long long)r->size, lms_place_names[place]);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    lms_chunk c = {.key = p, .size = r->size, .device = (int16_t)r->device, .place = (uint8_t)place,
                   .flags = (uint8_t)((fallback ? LMS_CHUNK_FALLBACK : 0) | (r->async ? LMS_CHUNK_ASYNC : 0))};
    if (!lms_chunks_insert(&c)) {
        /* Cannot track it, so cannot free it right later: give it back. */
        if (place == LMS_PLACE_HOST)
            lms_drv.cuMemFreeHost((void *)(uintptr_t)p);
        else
            lms_drv.cuMemFree(p);
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

CUresult lms_place_alloc(const lms_alloc_request *r, CUdeviceptr *out)
{
    lms_account *a = lms_account_of(r->device);
    if (!a)
        return r->native(r->native_ctx, out);   /* no device: CUDA answers */
    uint64_t charge = lms_charge_of(r->size);
    lms_place want = LMS_PLACE_DEVICE;
    if (r->size >= lms_opt.threshold && !r->device_only) {
        uint64_t used = lms_account_used(a);
        if ((double)(used + charge) > lms_opt.frac * (double)a->budget)
            want = lms_opt.mode == LMS_MODE_HOST ? LMS_PLACE_HOST : LMS_PLACE_MANAGED;
    }
    if (want != LMS_PLACE_DEVICE)
        return place_off_device(r, a, want, false, out);
    bool fits = lms_account_reserve(a, charge, a->budget);
    if (!fits && lms_residency_reclaim(r->device, charge))   /* fetched chunks make way */
        fits = lms_account_reserve(a, charge, a->budget);
    if (fits) {
        CUresult res = r->native(r->native_ctx, out);
        if (res == CUDA_SUCCESS) {
            lms_chunk c = {.key = *out, .size = r->size, .charged = charge, .device = (int16_t)r->device,
                           .place = LMS_PLACE_DEVICE, .flags = r->async ? LMS_CHUNK_ASYNC : 0};
            if (lms_chunks_insert(&c)) {
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
        atomic_fetch_add(&a->oom_failures, 1);
        if (lms_trace_on)
            lms_trace_oom(r->device, r->size, atomic_load(&a->used), a->budget);
        lms_log(LMS_LEVEL_INFO, "oom dev=%d size=%llu used=%llu budget=%llu: failing as LMS_ON_OOM=fail asks",
                r->device, (unsigned long long)r->size, (unsigned long long)atomic_load(&a->used),
                (unsigned long long)a->budget);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    lms_place fb = lms_opt.mode == LMS_MODE_HOST ? LMS_PLACE_HOST : LMS_PLACE_MANAGED;
    if (lms_trace_on)
        lms_trace_fallback(r->device, r->size, lms_place_names[fb], "budget or device out of memory");
    return place_off_device(r, a, fb, true, out);
}

CUresult lms_place_free(CUdeviceptr p, const lms_free_op *op)
{
    lms_chunk c;
    bool async = op->async_free != NULL;
    /* Out of the map before the real free: once the driver has the address
     * back it may hand it out again, to another thread, at once. */
    if (!p || !lms_chunks_remove(p, &c))
        return async ? op->async_free(p, op->stream) : op->sync_free(p);
    if (c.place == LMS_PLACE_MANAGED && !(c.flags & LMS_CHUNK_PROGRAM))
        lms_residency_remove(p);   /* its residency charge goes back first */
    CUresult r;
    switch (c.place) {
    case LMS_PLACE_DEVICE:
        r = async ? op->async_free(p, op->stream) : op->sync_free(p);
        break;
    case LMS_PLACE_MANAGED:
    case LMS_PLACE_HOST:
        /* Not pool memory: a stream-ordered free waits for the stream. */
        r = async && lms_drv.cuStreamSynchronize ? lms_drv.cuStreamSynchronize(op->stream) : CUDA_SUCCESS;
        if (r == CUDA_SUCCESS)
            r = c.place == LMS_PLACE_HOST ? lms_drv.cuMemFreeHost((void *)(uintptr_t)p) : op->sync_free(p);
        break;
    default:
        r = op->sync_free(p);   /* CUDA says what freeing this means */
        break;
    }
    if (r != CUDA_SUCCESS) {
        lms_chunks_insert(&c);  /* still allocated: keep tracking it */
        return r;
    }
    lms_account *a = lms_account_of(c.device);
    if (a) {
        if (c.charged)
            lms_account_release(a, c.charged);
        lms_account_drop_chunk(a, &c);
    }
    if (lms_trace_on)
        lms_trace_free(c.device, p, c.size, lms_place_names[c.place]);
    if (LMS_LOG_ON(LMS_LEVEL_DEBUG))
        lms_log(LMS_LEVEL_DEBUG, "free dev=%d size=%llu place=%s ptr=0x%llx", c.device,
                (unsigned long long)c.size, lms_place_names[c.place], (unsigned long long)p);
    return CUDA_SUCCESS;
}

void lms_place_note_program(uint64_t ptr, uint64_t size, int device, int place)
{
    lms_account *a = lms_account_of(device < 0 ? 0 : device);
    lms_chunk c = {.key = ptr, .size = size, .device = (int16_t)(device < 0 ? 0 : device),
                   .place = (uint8_t)place, .flags = LMS_CHUNK_PROGRAM};
    if (a && lms_chunks_insert(&c)) {
        lms_account_add_chunk(a, &c);
        if (lms_trace_on)
            lms_trace_alloc(c.device, ptr, size, 0, lms_place_names[place], -1, false, -1);
    }
}

CUresult lms_place_vmm_check(int device, uint64_t size)
{
    lms_account *a = lms_account_of(device);
    if (!a || lms_opt.on_oom != LMS_ON_OOM_FAIL)
        return CUDA_SUCCESS;
    uint64_t used = lms_account_used(a);
    if (size > a->budget || used > a->budget - size) {
        atomic_fetch_add(&a->oom_failures, 1);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

void lms_place_vmm_created(uint64_t handle, int device, uint64_t size)
{
    lms_account *a = lms_account_of(device);
    if (!a)
        return;
    lms_chunk c = {.key = handle | LMS_VMM_TAG, .size = size, .charged = size,
                   .device = (int16_t)device, .place = LMS_PLACE_VMM, .flags = LMS_CHUNK_PROGRAM};
    if (!lms_chunks_insert(&c))
        return;
    lms_account_force(a, size);
    lms_account_add_chunk(a, &c);
    if (lms_trace_on)
        lms_trace_alloc(device, handle, size, size, "vmm", -1, false, -1);
    if (lms_account_used(a) > a->budget) {
        static atomic_uint warned;
        lms_log_capped(LMS_LEVEL_WARN, &warned, 1, "cuMemCreate of %llu bytes passes the budget of "
                       "device %d (physical memory cannot fall back)", (unsigned long long)size, device);
    }
}

CUresult lms_place_vmm_release(uint64_t handle, CUresult (*real)(CUmemGenericAllocationHandle))
{
    lms_chunk c;
    bool known = lms_chunks_remove(handle | LMS_VMM_TAG, &c);
    CUresult r = real(handle);
    if (!known)
        return r;
    if (r != CUDA_SUCCESS) {
        lms_chunks_insert(&c);
        return r;
    }
    lms_account *a = lms_account_of(c.device);
    if (a) {
        lms_account_release(a, c.charged);
        lms_account_drop_chunk(a, &c);
    }
    return r;
}

CUresult lms_place_mem_info(size_t *free_bytes, size_t *total, CUresult (*real)(size_t *, size_t *))
{
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
