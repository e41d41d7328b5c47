/*
 * graphmem.c — graph memory nodes and the per-device graph memory pool:
 * cuGraphAddMemAllocNode, cuGraphAddMemFreeNode, what their nodes do when
 * a graph runs, cuDeviceGetGraphMemAttribute, cuDeviceSetGraphMemAttribute
 * and cuDeviceGraphMemTrim (docs/SIMULATOR.md "Graph memory").
 *
 * As CUDA documents, an allocation node's address is fixed when the node
 * is made, and the memory behind it is taken from the device when a graph
 * runs the node: the pool reserves device bytes then (charged to the
 * device like any allocation) and keeps them after the free node ran, for
 * the next launch, until cuDeviceGraphMemTrim gives back what no
 * allocation holds. Work runs at issue here, so no graph is ever "still
 * executing" at a trim.
 */
#include "sim.h"

#include <stdlib.h>

/* One graph allocation: its address, made at the node's creation, lives as
 * long as the process (the record owns its backing host bytes; the
 * registry's entry for it owns none). */
typedef struct gmem {
    uintptr_t base;
    size_t size;              /* bytes requested */
    size_t charge;            /* bytes it takes from the pool (rounded) */
    int device;
    bool live;                /* allocated by a launch, not yet freed */
    bool from_mmap;
    struct gmem *next;
} gmem;

/* The graph pool of a device (under sim_lock). */
typedef struct gpool {
    uint64_t reserved, reserved_high;   /* bytes held on the device */
    uint64_t used, used_high;           /* bytes of live graph allocations */
} gpool;

static gmem *gmems;                    /* every graph allocation (sim_lock) */
static gpool pools[SIM_MAX_DEVICES];   /* (sim_lock) */

/* The graph allocation at exactly p, or NULL (under sim_lock). */
static gmem *gmem_at(uintptr_t p)
{
    for (gmem *g = gmems; g; g = g->next)
        if (g->base == p)
            return g;
    return NULL;
}

bool sim_graphmem_is_alloc(CUdeviceptr p)
{
    return gmem_at((uintptr_t)p) != NULL;
}

CUresult sim_graphmem_run(const sim_node_desc *d)
{
    pthread_mutex_lock(&sim_lock);
    gmem *g = gmem_at((uintptr_t)d->dst);
    CUresult r = CUDA_SUCCESS;
    if (!g) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (d->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        gpool *p = &pools[g->device];
        if (g->live) {
            r = CUDA_ERROR_INVALID_VALUE;   /* relaunched before the allocation was freed */
        } else {
            if (p->used + g->charge > p->reserved) {   /* the pool grows */
                uint64_t more = p->used + g->charge - p->reserved;
                r = sim_charge(g->device, more);
                if (r == CUDA_SUCCESS) {
                    p->reserved += more;
                    if (p->reserved > p->reserved_high)
                        p->reserved_high = p->reserved;
                }
            }
            if (r == CUDA_SUCCESS) {
                g->live = true;
                p->used += g->charge;
                if (p->used > p->used_high)
                    p->used_high = p->used;
            }
        }
    } else if (g->live) {   /* free node: the bytes stay reserved for reuse */
        g->live = false;
        pools[g->device].used -= g->charge;
    } else {
        r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* A device's primary context went (reset or last release): its graph
 * pool goes with it, as every allocation of the device's state does. What
 * the pool reserved is given back to the device, and the graph
 * allocations of the device are no longer live (their addresses stay
 * fixed, for a later launch of the graph to allocate again). Under
 * sim_lock. */
void sim_graphmem_drop_device(int device)
{
    gpool *p = &pools[device];
    sim_uncharge(device, p->reserved);
    p->reserved = p->used = 0;
    for (gmem *g = gmems; g; g = g->next)
        if (g->device == device)
            g->live = false;
}

/* A new graph allocation of `size` bytes on `device`, its address taken
 * for the process's lifetime (listed; takes sim_lock); NULL when out of memory. */
static gmem *gmem_new(size_t size, int device)
{
    gmem *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    void *mem = sim_host_memory(size, &m->from_mmap, false);
    if (!mem) {
        free(m);
        return NULL;
    }
    m->base = (uintptr_t)mem;
    m->size = size;
    m->charge = sim_round_charge(size);
    m->device = device;
    /* Known to pointer queries and copies as device memory of its device;
     * the record owns the bytes, and nothing is charged until a launch. */
    sim_alloc *a = calloc(1, sizeof *a);
    if (a)
        *a = (sim_alloc){.base = m->base, .size = size, .kind = SIM_MEM_DEVICE, .device = device,
                         .ctx = &sim_devices[device].primary};
    pthread_mutex_lock(&sim_lock);
    m->next = gmems;
    gmems = m;
    if (a) {
        a->id = sim_next_buffer_id();
        sim_registry_add(a);
    }
    pthread_mutex_unlock(&sim_lock);
    return m;
}

SIM_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                           size_t nd, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || !p || (nd && !deps) || p->bytesize == 0 ||
        p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        p->poolProps.location.id < 0 || p->poolProps.location.id >= sim_cfg.devices ||
        p->poolProps.handleTypes != CU_MEM_HANDLE_TYPE_NONE || (p->accessDescCount && !p->accessDescs))
        return CUDA_ERROR_INVALID_VALUE;
    gmem *m = gmem_new(p->bytesize, p->poolProps.location.id);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_node_desc d = {.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC, .dst = m->base, .bytes = m->size};
    pthread_mutex_lock(&sim_lock);
    r = sim_graph_takes_memory_nodes(g) ? sim_graph_add(g, deps, nd, &d, out) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    if (r == CUDA_SUCCESS)
        p->dptr = m->base;
    return r;
}

CUresult sim_graphmem_capture_alloc(CUstream st, size_t size, int device, CUdeviceptr *dptr)
{
    gmem *m = gmem_new(size, device);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_node_desc d = {.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC, .dst = m->base, .bytes = m->size};
    CUresult r = sim_capture_add(st, &d);
    if (r == CUDA_SUCCESS)
        *dptr = m->base;
    return r;
}

SIM_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                          size_t nd, CUdeviceptr dptr)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || (nd && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    sim_node_desc d = {.type = CU_GRAPH_NODE_TYPE_MEM_FREE, .dst = dptr};
    pthread_mutex_lock(&sim_lock);
    r = sim_graph_takes_memory_nodes(g) && gmem_at((uintptr_t)dptr) ? sim_graph_add(g, deps, nd, &d, out)
                                                       : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void *value)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    const gpool *p = &pools[dev];
    cuuint64_t v = 0;
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: v = p->used; break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: v = p->used_high; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: v = p->reserved; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: v = p->reserved_high; break;
    default: r = CUDA_ERROR_INVALID_VALUE; break;
    }
    pthread_mutex_unlock(&sim_lock);
    if (r == CUDA_SUCCESS)
        *(cuuint64_t *)value = v;
    return r;
}

/* Only the high watermarks can be set, and only to zero. */
SIM_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void *value)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!value || *(cuuint64_t *)value != 0 ||
        (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
        pools[dev].used_high = 0;
    else
        pools[dev].reserved_high = 0;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

/* Gives back to the device what the pool reserves beyond its live
 * allocations. */
SIM_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    gpool *p = &pools[dev];
    sim_uncharge(dev, p->reserved - p->used);
    p->reserved = p->used;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}
