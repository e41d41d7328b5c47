/*
 * pool.c — memory pools and stream-ordered allocation (cuMemAllocAsync,
 * cuMemAllocFromPoolAsync, cuMemFreeAsync and their _ptsz twins).
 *
 * Pool memory is device memory charged to the pool's device, or, for a pool
 * created at a host location, pinned host memory that no device is charged
 * for. A pool keeps no cache: a stream-ordered free returns its bytes at
 * once (a release threshold of zero, CUDA's default).
 */
#include "sim.h"

#include <stdlib.h>

#define MAX_POOLS 256
static CUmemoryPool created[MAX_POOLS];   /* live created pools (sim_lock) */

/* True for a default pool or a live created one (under sim_lock). */
static bool pool_valid(CUmemoryPool p)
{
    if (!p)
        return false;
    for (int d = 0; d < sim_cfg.devices; d++)
        if (p == &sim_devices[d].default_pool)
            return true;
    for (int i = 0; i < MAX_POOLS; i++)
        if (created[i] == p)
            return !p->destroyed;
    return false;
}

SIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult r = sim_check_device_args(pool != NULL, dev);
    if (r != CUDA_SUCCESS)
        return r;
    *pool = &sim_devices[dev].default_pool;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult r = sim_check_device_args(pool != NULL, dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    *pool = sim_devices[dev].current_pool;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    if (!pool_valid(pool) || pool->device != dev)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        sim_devices[dev].current_pool = pool;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    bool host = props->location.type == CU_MEM_LOCATION_TYPE_HOST;
    if (host && props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return CUDA_ERROR_INVALID_VALUE;   /* host pools are not IPC capable */
    if (!host && props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!host && (props->location.id < 0 || props->location.id >= sim_cfg.devices))
        return CUDA_ERROR_INVALID_DEVICE;
    CUmemoryPool p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (struct CUmemPoolHandle_st){.magic = SIM_MAGIC_POOL, .device = host ? -1 : props->location.id,
                                     .handle_types = (unsigned)props->handleTypes};
    pthread_mutex_lock(&sim_lock);
    int slot = -1;
    for (int i = 0; i < MAX_POOLS && slot < 0; i++)
        if (!created[i])
            slot = i;
    if (slot >= 0)
        created[slot] = p;
    pthread_mutex_unlock(&sim_lock);
    if (slot < 0) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pool = p;
    return CUDA_SUCCESS;
}

/* Destroys a created pool; one with live allocations goes with its last one. */
SIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    int slot = -1;
    for (int i = 0; i < MAX_POOLS && slot < 0; i++)
        if (created[i] == pool && !pool->destroyed)
            slot = i;
    if (slot < 0) {
        r = CUDA_ERROR_INVALID_VALUE;   /* unknown, already destroyed, or a default pool */
    } else {
        created[slot] = NULL;
        for (int d = 0; d < sim_cfg.devices; d++)
            if (sim_devices[d].current_pool == pool)
                sim_devices[d].current_pool = &sim_devices[d].default_pool;
        if (pool->live == 0) {
            pool->magic = 0;
            free(pool);
        } else {
            pool->destroyed = true;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    if (!pool_valid(pool))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
        pool->release_threshold = *(cuuint64_t *)value;
    else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH || attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
        pool->used_high = pool->used_bytes;   /* only a reset to zero is allowed */
    else if (attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT || attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    if (!pool_valid(pool)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        switch (attr) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            *(cuuint64_t *)value = pool->release_threshold;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
            *(cuuint64_t *)value = pool->used_bytes;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            *(cuuint64_t *)value = pool->used_high;
            break;
        default:
            *(int *)value = 0;
            break;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    (void)keep;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    r = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* Pinned host memory from a host pool, for the device of `st` to read
 * (mapped, as all pinned memory is under unified addressing). */
static CUresult alloc_host_pool(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream st)
{
    sim_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *mem = sim_host_memory(n, &a->from_mmap, false);
    if (!mem) {
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *a = (sim_alloc){.base = (uintptr_t)mem, .size = n, .kind = SIM_MEM_HOST, .device = st->device,
                     .ctx = sim_alloc_ctx(st->device), .mapped = true, .owns_memory = true,
                     .from_mmap = a->from_mmap, .pool = pool};
    pthread_mutex_lock(&sim_lock);
    a->id = sim_next_buffer_id();
    pool->live++;
    pool->used_bytes += n;
    if (pool->used_bytes > pool->used_high)
        pool->used_high = pool->used_bytes;
    sim_registry_add(a);
    uintptr_t base = a->base;   /* a may be freed once unlocked */
    pthread_mutex_unlock(&sim_lock);
    *dptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

/* Shared body of the stream-ordered allocation entry points; pool NULL
 * means the current pool of the stream's device. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (!dptr || n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    if (!pool)
        pool = sim_devices[st->device].current_pool;
    bool ok = pool_valid(pool);
    int device = ok ? pool->device : -1;
    pthread_mutex_unlock(&sim_lock);
    /* Captured, an allocation from a device pool becomes an allocation
     * node of the graph (graphmem.c); one from a host pool cannot be. */
    bool record;
    r = sim_capture_gate(st, !ok || device >= 0, &record);
    if (r != CUDA_SUCCESS)
        return r;
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    if (record)
        return sim_graphmem_capture_alloc(st, n, device, dptr);
    if (pool->device < 0)
        return alloc_host_pool(dptr, n, pool, st);
    return sim_alloc_device(dptr, n, false, pool, pool->device);
}

SIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t n, CUstream s)
{ return alloc_async(dptr, n, NULL, s, false); }
SIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t n, CUstream s)
{ return alloc_async(dptr, n, NULL, s, true); }

SIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, CUmemoryPool pool,
                                            CUstream s)
{ return pool ? alloc_async(dptr, n, pool, s, false) : CUDA_ERROR_INVALID_VALUE; }
SIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t n, CUmemoryPool pool,
                                                 CUstream s)
{ return pool ? alloc_async(dptr, n, pool, s, true) : CUDA_ERROR_INVALID_VALUE; }

/* Shared body of cuMemFreeAsync: any device allocation, and any
 * allocation of a pool, may be freed. */
static CUresult free_async(CUdeviceptr p, CUstream s, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    /* Captured, the free of a graph allocation becomes a free node; other
     * frees cannot be captured here. */
    pthread_mutex_lock(&sim_lock);
    bool graph_alloc = sim_graphmem_is_alloc(p);
    pthread_mutex_unlock(&sim_lock);
    bool record;
    r = sim_capture_gate(st, graph_alloc, &record);
    if (r != CUDA_SUCCESS)
        return r;
    if (record) {
        sim_node_desc d = {.type = CU_GRAPH_NODE_TYPE_MEM_FREE, .dst = p};
        return sim_capture_add(st, &d);
    }
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = sim_registry_find_base((uintptr_t)p);
    r = a && (a->kind == SIM_MEM_DEVICE || (a->kind == SIM_MEM_HOST && a->pool))
            ? sim_free_alloc(a) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return free_async(p, s, false); }
SIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return free_async(p, s, true); }
