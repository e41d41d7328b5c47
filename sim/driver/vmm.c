/*
 * vmm.c — the virtual memory management API: physical allocations
 * (cuMemCreate/cuMemRelease), address reservations, mapping and access.
 *
 * A physical allocation is a memfd charged to its device at creation; a
 * mapping places it in a reserved range with mmap, so two mappings of one
 * handle share their bytes as on a GPU. A released handle frees its memory
 * when its last mapping goes.
 */
#include "sim.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_RESERVATIONS 1024

typedef struct phys {
    uint32_t magic;
    int fd;
    size_t size;          /* bytes */
    int device;
    int mappings;         /* live cuMemMap of this handle */
    bool released;        /* cuMemRelease called */
    unsigned handle_types; /* CUmemAllocationHandleType bits it may be exported as */
} phys;

typedef struct reservation {
    uintptr_t base;       /* address handed out */
    size_t size;          /* bytes handed out */
    uintptr_t map_base;   /* what mmap returned (for alignment slack) */
    size_t map_size;
} reservation;

#define PHYS_MAGIC 0x50485953u
static reservation reservations[MAX_RESERVATIONS];   /* sim_lock */
static phys **live;            /* every physical allocation not yet freed (sim_lock) */
static size_t nlive, caplive;

/* Validates an allocation property block; returns the device or -1. */
static int prop_device(const CUmemAllocationProp *prop)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id < 0 ||
        prop->location.id >= sim_cfg.devices)
        return -1;
    return prop->location.id;
}

SIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                  CUmemAllocationGranularity_flags option)
{
    (void)option;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!granularity || prop_device(prop) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = SIM_BLOCK_BYTES;
    return CUDA_SUCCESS;
}

/* Adds ph to the live set; false if out of memory (under sim_lock). */
static bool live_add(phys *ph)
{
    if (nlive == caplive) {
        size_t ncap = caplive ? caplive * 2 : 64;
        phys **n = realloc(live, ncap * sizeof *n);
        if (!n)
            return false;
        live = n;
        caplive = ncap;
    }
    live[nlive++] = ph;
    return true;
}

/* Index of ph in the live set, or nlive: a handle is an opaque value to
 * the program, so any value may come back (under sim_lock). */
static size_t live_find(const void *ph)
{
    size_t i = 0;
    while (i < nlive && live[i] != ph)
        i++;
    return i;
}

/* Frees a physical allocation once released and unmapped (under sim_lock). */
static void phys_maybe_free(phys *ph)
{
    if (!ph->released || ph->mappings > 0)
        return;
    size_t i = live_find(ph);
    if (i < nlive)
        live[i] = live[--nlive];
    sim_uncharge(ph->device, ph->size);
    close(ph->fd);
    ph->magic = 0;
    free(ph);
}

SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    int d = prop_device(prop);
    if (!handle || d < 0 || flags != 0 || size == 0 || size % SIM_BLOCK_BYTES)
        return CUDA_ERROR_INVALID_VALUE;
    phys *ph = calloc(1, sizeof *ph);
    if (!ph)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&sim_lock);
    r = sim_charge(d, size);
    if (r == CUDA_SUCCESS && !live_add(ph)) {
        sim_uncharge(d, size);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&sim_lock);
    if (r != CUDA_SUCCESS) {
        free(ph);
        return r;
    }
    ph->fd = memfd_create("simgpu-vmm", MFD_CLOEXEC);
    if (ph->fd < 0 || ftruncate(ph->fd, (off_t)size) != 0) {
        if (ph->fd >= 0)
            close(ph->fd);
        pthread_mutex_lock(&sim_lock);
        size_t i = live_find(ph);
        live[i] = live[nlive - 1];
        nlive--;
        sim_uncharge(d, size);
        pthread_mutex_unlock(&sim_lock);
        free(ph);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&sim_lock);   /* it is in `live` already: lookups read these */
    ph->magic = PHYS_MAGIC;
    ph->size = size;
    ph->device = d;
    ph->handle_types = (unsigned)prop->requestedHandleTypes;
    pthread_mutex_unlock(&sim_lock);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)ph;
    return CUDA_SUCCESS;
}

/* The unreleased physical allocation behind a handle, or NULL for any
 * other value; a handle the driver did not hand out is never dereferenced
 * (under sim_lock). */
static phys *phys_of(CUmemGenericAllocationHandle h)
{
    phys *ph = (phys *)(uintptr_t)h;
    return live_find(ph) < nlive && ph->magic == PHYS_MAGIC && !ph->released ? ph : NULL;
}

bool sim_vmm_export_info(CUmemGenericAllocationHandle h, unsigned *types, int *fd)
{
    phys *ph = phys_of(h);
    if (ph) {
        *types = ph->handle_types;
        *fd = ph->fd;
    }
    return ph != NULL;
}

SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    phys *ph = phys_of(handle);
    if (ph) {
        ph->released = true;
        phys_maybe_free(ph);
    }
    pthread_mutex_unlock(&sim_lock);
    return ph ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                        CUdeviceptr addr, unsigned long long flags)
{
    (void)addr;   /* a hint only */
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ptr || size == 0 || size % SIM_BLOCK_BYTES || flags != 0 ||
        (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment > SIM_BLOCK_BYTES ? alignment : SIM_BLOCK_BYTES;
    size_t map_size = size + align;
    void *m = mmap(NULL, map_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = ((uintptr_t)m + align - 1) / align * align;
    pthread_mutex_lock(&sim_lock);
    int slot = -1;
    for (int i = 0; i < MAX_RESERVATIONS && slot < 0; i++)
        if (!reservations[i].base)
            slot = i;
    if (slot >= 0)
        reservations[slot] = (reservation){base, size, (uintptr_t)m, map_size};
    pthread_mutex_unlock(&sim_lock);
    if (slot < 0) {
        munmap(m, map_size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

/* The reservation containing [p, p+size), or NULL (under sim_lock). */
static reservation *reservation_of(uintptr_t p, size_t size)
{
    for (int i = 0; i < MAX_RESERVATIONS; i++) {
        reservation *rv = &reservations[i];
        if (rv->base && p >= rv->base && size <= rv->size && p - rv->base <= rv->size - size)
            return rv;
    }
    return NULL;
}

SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    reservation *rv = reservation_of((uintptr_t)ptr, size);
    if (!rv || rv->base != ptr || rv->size != size) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        munmap((void *)rv->map_base, rv->map_size);
        *rv = (reservation){0};
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (flags != 0 || size == 0 || size % SIM_BLOCK_BYTES || offset % SIM_BLOCK_BYTES)
        return CUDA_ERROR_INVALID_VALUE;
    sim_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&sim_lock);
    phys *ph = phys_of(handle);
    if (!ph || offset > ph->size || size > ph->size - offset ||
        !reservation_of((uintptr_t)ptr, size) || sim_registry_overlap((uintptr_t)ptr, size)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, ph->fd,
                    (off_t)offset) == MAP_FAILED) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        ph->mappings++;
        *a = (sim_alloc){.base = (uintptr_t)ptr, .size = size, .kind = SIM_MEM_VMM,
                         .device = ph->device, .ctx = &sim_devices[ph->device].primary,
                         .id = sim_next_buffer_id(), .vmm_phys = ph};
        sim_registry_add(a);
        a = NULL;
    }
    pthread_mutex_unlock(&sim_lock);
    free(a);
    return r;
}

SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    if (!reservation_of((uintptr_t)ptr, size)) {
        pthread_mutex_unlock(&sim_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* "cuMemUnmap cannot unmap a sub-range of an address range mapped by
     * cuMemMap": a mapping cut by either end of the range refuses it. */
    uintptr_t p = (uintptr_t)ptr, end = p + size;
    sim_alloc *first = sim_registry_find(p), *last = sim_registry_find(end - 1);
    if ((first && first->kind == SIM_MEM_VMM && first->base < p) ||
        (last && last->kind == SIM_MEM_VMM && last->base + last->size > end)) {
        pthread_mutex_unlock(&sim_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    while (p < end) {
        sim_alloc *a = sim_registry_find(p);
        if (!a || a->kind != SIM_MEM_VMM) {
            p += SIM_BLOCK_BYTES;
            continue;
        }
        phys *ph = a->vmm_phys;
        uintptr_t next = a->base + a->size;
        mmap((void *)a->base, a->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
             MAP_NORESERVE, -1, 0);
        sim_registry_remove(a);
        free(a);
        ph->mappings--;
        phys_maybe_free(ph);
        p = next;
    }
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                   size_t count)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int prot = PROT_NONE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
            desc[i].location.id >= sim_cfg.devices)
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            prot = PROT_READ | PROT_WRITE;
        else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE)
            prot = PROT_READ;
    }
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = sim_registry_find((uintptr_t)ptr);
    if (!a || a->kind != SIM_MEM_VMM || !reservation_of((uintptr_t)ptr, size))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (mprotect((void *)(uintptr_t)ptr, size, prot) != 0)
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    return r;
}
