/*
 * memory.c — device, managed and pinned-host allocations of the simulated
 * driver, device accounting, memory info and pointer queries.
 *
 * Every allocation is host memory (so kernels, which are host functions,
 * read and write it directly) recorded in the registry with its kind.
 * Device and pool allocations are charged against the device's capacity;
 * managed allocations are charged only for their blocks resident on a
 * device (residency.c); pinned host memory is never charged.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SMALL_GRANULE 512u
#define MMAP_FROM ((size_t)64 << 10)

/* Bytes a device allocation of `bytes` is charged: 512 B granules below
 * 2 MiB, whole 2 MiB pages from there on (docs/SIMULATOR.md); SIZE_MAX,
 * which no device holds, when the rounding would pass it. */
size_t sim_round_charge(size_t bytes)
{
    size_t g = bytes < SIM_BLOCK_BYTES ? SMALL_GRANULE : SIM_BLOCK_BYTES;
    if (bytes > SIZE_MAX - (g - 1))
        return SIZE_MAX;
    return (bytes + g - 1) / g * g;
}

/* Host memory backing an allocation. Large ones come from mmap, so untouched
 * pages cost nothing; low32 asks for an address below 4 GiB (v1 ABI).
 * The caller owns the memory and releases it with sim_host_release. */
void *sim_host_memory(size_t bytes, bool *from_mmap, bool low32)
{
    if (low32 || bytes >= MMAP_FROM) {
        int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#ifdef MAP_32BIT
        if (low32)
            flags |= MAP_32BIT;
#endif
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
        *from_mmap = true;
        if (p == MAP_FAILED || (low32 && (uintptr_t)p + bytes > 0xffffffffu)) {
            if (p != MAP_FAILED)
                munmap(p, bytes);
            return NULL;
        }
        return p;
    }
    *from_mmap = false;
    return aligned_alloc(SMALL_GRANULE, sim_round_charge(bytes));
}

/* Releases memory from sim_host_memory. */
void sim_host_release(void *p, size_t bytes, bool from_mmap)
{
    if (from_mmap)
        munmap(p, bytes);
    else
        free(p);
}

/* Records the device's peak after a change of `used` (under sim_lock). */
void sim_note_used(int device)
{
    sim_device *dev = &sim_devices[device];
    if (dev->used > dev->c.peak_device_bytes)
        dev->c.peak_device_bytes = dev->used;
}

/* Charges bytes to a device, evicting managed blocks the way the driver does
 * when device memory is short. OUT_OF_MEMORY when it still cannot fit. */
CUresult sim_charge(int device, uint64_t bytes)
{
    sim_device *dev = &sim_devices[device];
    if (bytes > dev->capacity)
        return CUDA_ERROR_OUT_OF_MEMORY;
    while (dev->used + bytes > dev->capacity) {
        double ignored;
        if (!sim_evict_lru(device, &ignored))
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    dev->used += bytes;
    sim_note_used(device);
    return CUDA_SUCCESS;
}

/* Returns charged bytes to a device. */
void sim_uncharge(int device, uint64_t bytes)
{
    sim_devices[device].used -= bytes;
}

/* Allocates device memory on `device`, from `pool` when given. */
CUresult sim_alloc_device(CUdeviceptr *dptr, size_t bytes, bool low32, CUmemoryPool pool,
                          int device)
{
    size_t charged = sim_round_charge(bytes);
    sim_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_charge(device, charged);
    pthread_mutex_unlock(&sim_lock);
    if (r != CUDA_SUCCESS) {
        free(a);
        return r;
    }
    void *mem = sim_host_memory(bytes, &a->from_mmap, low32);
    pthread_mutex_lock(&sim_lock);
    if (!mem) {
        sim_uncharge(device, charged);
        pthread_mutex_unlock(&sim_lock);
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->base = (uintptr_t)mem;
    a->size = bytes;
    a->charged = charged;
    a->kind = SIM_MEM_DEVICE;
    a->device = device;
    a->ctx = sim_alloc_ctx(device);
    a->owns_memory = true;
    a->pool = pool;
    a->id = sim_next_buffer_id();
    if (pool) {
        pool->live++;
        pool->used_bytes += charged;
        if (pool->used_bytes > pool->used_high)
            pool->used_high = pool->used_bytes;
    }
    sim_registry_add(a);
    uintptr_t base = a->base;   /* a may be freed once unlocked */
    pthread_mutex_unlock(&sim_lock);
    *dptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

/* Releases an allocation: registry entry, charge, memory and record
 * (under sim_lock). Pools destroyed while in use go with their last chunk. */
CUresult sim_free_alloc(sim_alloc *a)
{
    sim_registry_remove(a);
    if (a->kind == SIM_MEM_MANAGED)
        sim_managed_release(a);
    if (a->charged)
        sim_uncharge(a->device, a->charged);
    if (a->pool) {
        CUmemoryPool pool = a->pool;
        pool->live--;
        pool->used_bytes -= a->charged ? a->charged : a->size;   /* host pools charge nothing */
        if (pool->destroyed && pool->live == 0) {
            pool->magic = 0;
            free(pool);
        }
    }
    if (a->owns_memory)
        sim_host_release((void *)a->base, a->size, a->from_mmap);
    free(a);
    return CUDA_SUCCESS;
}

/* Common checks of the allocation entry points: init, context, arguments. */
static CUresult alloc_preamble(const void *out, size_t bytes, int *device)
{
    CUresult r = sim_current_device(device);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_capture_unsafe_call();   /* may synchronize: refused in capture */
}

SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    int d;
    CUresult r = alloc_preamble(dptr, bytesize, &d);
    return r == CUDA_SUCCESS ? sim_alloc_device(dptr, bytesize, false, NULL, d) : r;
}

/* v1 ABI: a 32-bit device pointer, so the memory lies below 4 GiB. */
SIM_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    int d;
    CUdeviceptr p;
    CUresult r = alloc_preamble(dptr, bytesize, &d);
    if (r == CUDA_SUCCESS)
        r = sim_alloc_device(&p, bytesize, true, NULL, d);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr_v1)p;
    return r;
}

/* Pitched allocation: rows padded to 512 bytes. A row wider than the
 * device's maximum pitch is an invalid value; a pitch x height that does not
 * fit in a size_t is more memory than any device has. */
static CUresult alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned elem, bool low32)
{
    int d;
    CUresult r = alloc_preamble(dptr, width && height ? 1 : 0, &d);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pitch || (elem != 4 && elem != 8 && elem != 16) || width > SIM_MAX_PITCH)
        return CUDA_ERROR_INVALID_VALUE;
    /* A row or a total past what size_t holds fits in no memory. */
    if (width > SIZE_MAX - (SMALL_GRANULE - 1))
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t p = (width + SMALL_GRANULE - 1) / SMALL_GRANULE * SMALL_GRANULE;
    if (height > SIZE_MAX / p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = sim_alloc_device(dptr, p * height, low32, NULL, d);
    if (r == CUDA_SUCCESS)
        *pitch = p;
    return r;
}

SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t width,
                                       size_t height, unsigned int elem)
{
    return alloc_pitch(dptr, pPitch, width, height, elem, false);
}

SIM_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int width,
                                    unsigned int height, unsigned int elem)
{
    CUdeviceptr p = 0;
    size_t pitch = 0;
    CUresult r = alloc_pitch(dptr ? &p : NULL, pPitch ? &pitch : NULL, width, height, elem, true);
    if (r == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr_v1)p;
        *pPitch = (unsigned int)pitch;
    }
    return r;
}

SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult r = sim_check_init();
    if (r == CUDA_SUCCESS)
        r = sim_capture_unsafe_call();   /* synchronizes: refused in capture */
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = sim_registry_find_base((uintptr_t)dptr);
    if (!a || a->kind == SIM_MEM_HOST || a->kind == SIM_MEM_VMM)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        r = sim_free_alloc(a);
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr) { return cuMemFree_v2(dptr); }

SIM_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    int d;
    CUresult r = sim_current_device(&d);
    if (r != CUDA_SUCCESS)
        return r;
    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    *total = sim_devices[d].capacity;
    *free_bytes = sim_devices[d].capacity - sim_devices[d].used;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

/* v1 ABI: 32-bit counts, saturated. */
SIM_EXPORT CUresult cuMemGetInfo(unsigned int *free_bytes, unsigned int *total)
{
    size_t f, t;
    CUresult r = cuMemGetInfo_v2(free_bytes ? &f : NULL, total ? &t : NULL);
    if (r == CUDA_SUCCESS) {
        *free_bytes = f > 0xffffffffu ? 0xffffffffu : (unsigned int)f;
        *total = t > 0xffffffffu ? 0xffffffffu : (unsigned int)t;
    }
    return r;
}

/* A new record of `bytes` of host memory of `kind` for device d, owning
 * its memory (the caller frees both); NULL when out of memory. Not yet in
 * the registry. */
static sim_alloc *host_backed(size_t bytes, sim_kind kind, int d)
{
    sim_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    void *mem = sim_host_memory(bytes, &a->from_mmap, false);
    if (!mem) {
        free(a);
        return NULL;
    }
    a->base = (uintptr_t)mem;
    a->size = bytes;
    a->kind = kind;
    a->device = d;
    a->ctx = sim_alloc_ctx(d);
    a->owns_memory = true;
    return a;
}

SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    int d;
    CUresult r = alloc_preamble(dptr, bytesize, &d);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    sim_alloc *a = host_backed(bytesize, SIM_MEM_MANAGED, d);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (sim_managed_init(a) != CUDA_SUCCESS) {
        sim_host_release((void *)a->base, bytesize, a->from_mmap);
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&sim_lock);
    a->id = sim_next_buffer_id();
    sim_registry_add(a);
    uintptr_t base = a->base;   /* a may be freed once unlocked */
    pthread_mutex_unlock(&sim_lock);
    *dptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    int d;
    CUresult r = alloc_preamble(pp, bytesize, &d);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    sim_alloc *a = host_backed(bytesize, SIM_MEM_HOST, d);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->mapped = true;   /* unified addressing: pinned memory is always mapped */
    a->host_flags = flags;
    pthread_mutex_lock(&sim_lock);
    a->id = sim_next_buffer_id();
    sim_registry_add(a);
    uintptr_t base = a->base;   /* a may be freed once unlocked */
    pthread_mutex_unlock(&sim_lock);
    *pp = (void *)base;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

SIM_EXPORT CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

SIM_EXPORT CUresult cuMemFreeHost(void *p)
{
    CUresult r = sim_check_init();
    if (r == CUDA_SUCCESS)
        r = sim_capture_unsafe_call();   /* synchronizes, as cuMemFree: refused in capture */
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = sim_registry_find_base((uintptr_t)p);
    r = a && a->kind == SIM_MEM_HOST && !a->registered && !a->pool ? sim_free_alloc(a)
                                                                    : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* Finds the pinned host allocation containing p (under sim_lock). */
static sim_alloc *find_host(const void *p)
{
    sim_alloc *a = sim_registry_find((uintptr_t)p);
    return a && a->kind == SIM_MEM_HOST ? a : NULL;
}

SIM_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pdptr || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = find_host(p);
    pthread_mutex_unlock(&sim_lock);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1 *pdptr, void *p, unsigned int flags)
{
    CUdeviceptr d;
    CUresult r = cuMemHostGetDevicePointer_v2(pdptr ? &d : NULL, p, flags);
    if (r == CUDA_SUCCESS) {
        if (d > 0xffffffffu)
            return CUDA_ERROR_NOT_SUPPORTED;
        *pdptr = (CUdeviceptr_v1)d;
    }
    return r;
}

SIM_EXPORT CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pFlags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = find_host(p);
    if (a)
        *pFlags = a->host_flags | CU_MEMHOSTALLOC_DEVICEMAP;
    pthread_mutex_unlock(&sim_lock);
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = sim_registry_find((uintptr_t)dptr);
    if (a) {
        if (pbase)
            *pbase = (CUdeviceptr)a->base;
        if (psize)
            *psize = a->size;
    }
    pthread_mutex_unlock(&sim_lock);
    return a ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

SIM_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize,
                                         CUdeviceptr_v1 dptr)
{
    CUdeviceptr b;
    size_t s;
    CUresult r = cuMemGetAddressRange_v2(&b, &s, dptr);
    if (r == CUDA_SUCCESS) {
        if (pbase)
            *pbase = (CUdeviceptr_v1)b;
        if (psize)
            *psize = (unsigned int)s;
    }
    return r;
}

/* Answers one pointer attribute for a known allocation (under sim_lock). */
static CUresult attribute_of(const sim_alloc *a, CUpointer_attribute attr, void *data,
                             CUdeviceptr ptr)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = a->ctx;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = a->kind == SIM_MEM_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (a->kind == SIM_MEM_DEVICE || a->kind == SIM_MEM_VMM)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)(uintptr_t)ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(int *)data = a->kind == SIM_MEM_MANAGED;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = a->device;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = (CUdeviceptr)a->base;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = a->size;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = 1;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = a->id;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(int *)data = 1;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = a->pool;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

SIM_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = sim_registry_find((uintptr_t)ptr);
    r = a ? attribute_of(a, attribute, data, ptr) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* The "not a CUDA pointer" answer of cuPointerGetAttributes for one attribute. */
static void default_attribute(CUpointer_attribute attr, void *data)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = NULL; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *(void **)data = NULL; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = -2; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: *(unsigned long long *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *(CUmemoryPool *)data = NULL; break;
    default: *(int *)data = 0; break;
    }
}

SIM_EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attributes,
                                           void **data, CUdeviceptr ptr)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (n == 0 || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = sim_registry_find((uintptr_t)ptr);
    for (unsigned i = 0; i < n && r == CUDA_SUCCESS; i++) {
        if (!data[i]) {
            r = CUDA_ERROR_INVALID_VALUE;
        } else if (!a) {
            default_attribute(attributes[i], data[i]);
        } else if (attribute_of(a, attributes[i], data[i], ptr) != CUDA_SUCCESS) {
            default_attribute(attributes[i], data[i]);
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* Page-locks the program's own range [p, p+bytesize): a pinned host
 * allocation that does not own its memory, mapped at the same address
 * (unified addressing). A range overlapping pinned memory is
 * HOST_MEMORY_ALREADY_REGISTERED; I/O memory is not modeled (NOT_SUPPORTED). */
SIM_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                           CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (!p || !bytesize || (Flags & ~known) || (uintptr_t)p + bytesize < (uintptr_t)p)
        return CUDA_ERROR_INVALID_VALUE;
    if (Flags & CU_MEMHOSTREGISTER_IOMEMORY)
        return CUDA_ERROR_NOT_SUPPORTED;
    sim_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *a = (sim_alloc){.base = (uintptr_t)p, .size = bytesize, .kind = SIM_MEM_HOST,
                     .device = ctx->device, .ctx = ctx, .mapped = true, .registered = true,
                     .host_flags = Flags};
    pthread_mutex_lock(&sim_lock);
    sim_alloc *other = sim_registry_overlap((uintptr_t)p, bytesize);
    if (other) {
        r = other->kind == SIM_MEM_HOST ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                                        : CUDA_ERROR_INVALID_VALUE;
        free(a);
    } else {
        a->id = sim_next_buffer_id();
        sim_registry_add(a);
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return cuMemHostRegister_v2(p, bytesize, Flags);
}

/* Unregisters the range registered at exactly p; the memory stays the
 * program's. */
SIM_EXPORT CUresult cuMemHostUnregister(void *p)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = sim_registry_find_base((uintptr_t)p);
    r = a && a->registered ? sim_free_alloc(a) : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    pthread_mutex_unlock(&sim_lock);
    return r;
}
