/*
 * residency.c — where each 2 MiB block of managed memory lives, and what it
 * costs to move it: faults, driver eviction, advice, prefetch.
 *
 * Blocks start on the host (as if the program had initialised them there).
 * A block resident on a device is charged to that device and sits on the
 * device's LRU list. All functions run under sim_lock except where noted.
 */
#include "sim.h"

#include <stdlib.h>

/* Nanoseconds to move `bytes` over the host link. */
double sim_link_ns(uint64_t bytes)
{
    return (double)bytes / sim_cfg.link_gbps;
}

/* Nanoseconds of one fault batch that migrates `bytes`. */
static double fault_ns(uint64_t bytes)
{
    return sim_cfg.fault_us * 1e3 + (double)bytes / sim_cfg.fault_gbps;
}

static void lru_unlink(sim_block *b)
{
    b->prev->next = b->next;
    b->next->prev = b->prev;
    b->prev = b->next = NULL;
}

/* Puts b at the most-recently-used end of its device's list. */
static void lru_push(sim_device *dev, sim_block *b)
{
    b->prev = dev->lru.prev;
    b->next = &dev->lru;
    dev->lru.prev->next = b;
    dev->lru.prev = b;
}

/* Creates the block table of a new managed allocation (no lock needed:
 * the allocation is not yet visible). */
CUresult sim_managed_init(sim_alloc *a)
{
    a->nblocks = (a->size + SIM_BLOCK_BYTES - 1) / SIM_BLOCK_BYTES;
    a->blocks = calloc(a->nblocks, sizeof *a->blocks);
    if (!a->blocks)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < a->nblocks; i++) {
        sim_block *b = &a->blocks[i];
        b->owner = a;
        b->bytes = i + 1 < a->nblocks ? SIM_BLOCK_BYTES : a->size - i * SIM_BLOCK_BYTES;
        b->loc = SIM_LOC_HOST;
        b->preferred = SIM_LOC_NONE;
    }
    return CUDA_SUCCESS;
}

/* Drops a managed allocation's blocks: resident ones return their charge. */
void sim_managed_release(sim_alloc *a)
{
    for (size_t i = 0; i < a->nblocks; i++) {
        sim_block *b = &a->blocks[i];
        if (b->loc >= 0) {
            sim_uncharge(b->loc, b->bytes);
            lru_unlink(b);
        }
    }
    free(a->blocks);
    a->blocks = NULL;
    a->nblocks = 0;
}

/* Moves a resident block back to the host; returns the modeled cost. */
static double move_to_host(sim_block *b)
{
    int d = b->loc;
    sim_device *dev = &sim_devices[d];
    lru_unlink(b);
    sim_uncharge(d, b->bytes);
    b->loc = SIM_LOC_HOST;
    dev->c.bytes_to_host += b->bytes;
    return sim_link_ns(b->bytes);
}

/* Evicts the least recently used managed block of a device, as the driver
 * does when device memory runs short. False when no block is resident. */
bool sim_evict_lru(int device, double *cost_ns)
{
    sim_device *dev = &sim_devices[device];
    sim_block *b = dev->lru.next;
    if (b == &dev->lru)
        return false;
    dev->c.evictions++;
    *cost_ns += move_to_host(b);
    return true;
}

/* Makes a block resident on `device`, evicting LRU blocks for room.
 * False when the device has no room even after evicting everything
 * evictable (its memory is full of non-managed allocations). */
static bool move_to_device(sim_block *b, int device, double *evict_ns)
{
    sim_device *dev = &sim_devices[device];
    if (b->loc >= 0)
        (void)move_to_host(b);
    if (b->bytes > dev->capacity)
        return false;
    while (dev->used + b->bytes > dev->capacity)
        if (!sim_evict_lru(device, evict_ns))
            return false;
    dev->used += b->bytes;
    sim_note_used(device);
    b->loc = device;
    b->ready_ns = 0;   /* a fault: there when the faulting kernel resumes */
    b->busy_ns = 0;
    lru_push(dev, b);
    dev->c.bytes_to_device += b->bytes;
    return true;
}

/* Marks a resident block as just used. */
static void lru_touch(sim_device *dev, sim_block *b)
{
    lru_unlink(b);
    lru_push(dev, b);
}

/* A kernel on `device` that would start at start_ns touches [p, p+bytes).
 * Adds to *stall_ns the time the kernel waits on faults and evictions, and
 * to *remote_bytes the bytes of the range it reaches where they are, over the
 * link (the caller charges them, pass by pass: sim_pass_bytes); raises
 * *arrive_ns to the end of the copy of any resident block still on its
 * way (the kernel waits for it). */
void sim_touch(int device, uintptr_t p, size_t bytes, double start_ns, double *stall_ns, uint64_t *remote_bytes,
               double *arrive_ns)
{
    sim_device *dev = &sim_devices[device];
    while (bytes > 0) {
        sim_alloc *a = sim_registry_find(p);
        if (!a)
            return;                          /* not a CUDA pointer: not modeled */
        size_t in_alloc = a->base + a->size - p;
        size_t n = bytes < in_alloc ? bytes : in_alloc;
        if (a->kind == SIM_MEM_HOST || (a->kind != SIM_MEM_MANAGED && a->device != device)) {
            *remote_bytes += n;              /* zero-copy or peer access */
        } else if (a->kind == SIM_MEM_MANAGED) {
            size_t first = (p - a->base) / SIM_BLOCK_BYTES;
            size_t last = (p - a->base + n - 1) / SIM_BLOCK_BYTES;
            for (size_t i = first; i <= last; i++) {
                sim_block *b = &a->blocks[i];
                uintptr_t bstart = a->base + i * SIM_BLOCK_BYTES;
                uintptr_t lo = p > bstart ? p : bstart;
                uintptr_t hi = p + n < bstart + b->bytes ? p + n : bstart + b->bytes;
                if (b->loc == device) {
                    lru_touch(dev, b);
                    if (b->ready_ns > start_ns) {
                        dev->c.inflight_waits++;
                        if (b->ready_ns > *arrive_ns)
                            *arrive_ns = b->ready_ns;
                    }
                    continue;
                }
                bool remote = b->preferred == SIM_LOC_HOST && (b->accessed_by >> device & 1u);
                if (!remote) {
                    double evict = 0;
                    if (move_to_device(b, device, &evict)) {
                        dev->c.faults++;
                        *stall_ns += fault_ns(b->bytes) + evict;
                        continue;
                    }
                    *stall_ns += evict;      /* no room: read it where it is */
                }
                *remote_bytes += hi - lo;
            }
        }
        p += n;
        bytes -= n;
    }
}

/* Bytes that cross the link when a kernel makes `passes` passes over a
 * range of `range` bytes of which `remote` bytes are not on its device:
 * the share of the range an L2 of sim_cfg.l2_bytes holds crosses once,
 * the rest once per pass (docs/SIMULATOR.md, "Passes and the L2"):
 *   remote + (passes - 1) * remote * (range - L2) / range   when range > L2
 *   remote                                                   otherwise */
uint64_t sim_pass_bytes(uint64_t remote, uint64_t range, unsigned passes)
{
    uint64_t l2 = sim_cfg.l2_bytes;
    if (passes <= 1 || remote == 0 || range <= l2)
        return remote;
    unsigned __int128 extra = (unsigned __int128)(passes - 1) * remote * (range - l2) / range;
    return remote + (uint64_t)extra;
}

/* A kernel that touched [p, p+bytes) on `device` ends at end_ns: blocks
 * resident there are in use until then. */
void sim_mark_busy(int device, uintptr_t p, size_t bytes, double end_ns)
{
    while (bytes > 0) {
        sim_alloc *a = sim_registry_find(p);
        if (!a)
            return;
        size_t n = bytes < a->base + a->size - p ? bytes : a->base + a->size - p;
        if (a->kind == SIM_MEM_MANAGED)
            for (size_t i = (p - a->base) / SIM_BLOCK_BYTES; i <= (p - a->base + n - 1) / SIM_BLOCK_BYTES; i++)
                if (a->blocks[i].loc == device && a->blocks[i].busy_ns < end_ns)
                    a->blocks[i].busy_ns = end_ns;
        p += n;
        bytes -= n;
    }
}

/* The managed allocation that holds all of [p, p+bytes), with the indexes
 * of the range's first and last blocks in it; NULL when the range is not
 * (all) managed memory. Under sim_lock. */
static sim_alloc *managed_range(uintptr_t p, size_t bytes, size_t *first, size_t *last)
{
    sim_alloc *a = sim_registry_find(p);
    if (!a || a->kind != SIM_MEM_MANAGED || p + bytes > a->base + a->size)
        return NULL;
    *first = (p - a->base) / SIM_BLOCK_BYTES;
    *last = (p - a->base + bytes - 1) / SIM_BLOCK_BYTES;
    return a;
}

/* Migrates the managed blocks of [p, p+bytes) to dst (a device, or
 * SIM_LOC_HOST) by a copy that starts at start_ns, and returns the copy
 * time in *copy_ns. Blocks already there cost nothing. Blocks moved to a
 * device are marked in flight (ready_ns -1) until sim_arrive gives the
 * copy's end; a block sent to the host before a kernel using it ended is
 * counted. INVALID_VALUE when the range is not managed memory. */
CUresult sim_prefetch(uintptr_t p, size_t bytes, int dst, double start_ns, double *copy_ns)
{
    size_t first, last;
    sim_alloc *a = managed_range(p, bytes, &first, &last);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = first; i <= last; i++) {
        sim_block *b = &a->blocks[i];
        if (b->loc == dst) {
            if (dst >= 0)
                lru_touch(&sim_devices[dst], b);
            continue;
        }
        if (dst == SIM_LOC_HOST) {
            int from = b->loc;
            if (b->busy_ns > start_ns)
                sim_devices[from].c.busy_evictions++;
            *copy_ns += move_to_host(b);
            sim_devices[from].c.prefetch_bytes += b->bytes;
        } else if (move_to_device(b, dst, copy_ns)) {
            *copy_ns += sim_link_ns(b->bytes);
            sim_devices[dst].c.prefetch_bytes += b->bytes;
            b->ready_ns = -1;
        }
    }
    return CUDA_SUCCESS;
}

/* The copy that moved the in-flight blocks of [p, p+bytes) (a range
 * sim_prefetch accepted) ends at t_ns. */
void sim_arrive(uintptr_t p, size_t bytes, double t_ns)
{
    sim_alloc *a = sim_registry_find(p);
    if (!a || a->kind != SIM_MEM_MANAGED)
        return;
    for (size_t i = (p - a->base) / SIM_BLOCK_BYTES; i <= (p - a->base + bytes - 1) / SIM_BLOCK_BYTES; i++)
        if (a->blocks[i].ready_ns < 0)
            a->blocks[i].ready_ns = t_ns;
}

/* Applies one cuMemAdvise to the blocks of [p, p+bytes); loc is a device,
 * SIM_LOC_HOST, or ignored for advice that takes no location. */
CUresult sim_advise(uintptr_t p, size_t bytes, int advice, int loc)
{
    size_t first, last;
    sim_alloc *a = managed_range(p, bytes, &first, &last);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = first; i <= last; i++) {
        sim_block *b = &a->blocks[i];
        switch (advice) {
        case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: b->preferred = loc; break;
        case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: b->preferred = SIM_LOC_NONE; break;
        case CU_MEM_ADVISE_SET_ACCESSED_BY:
            if (loc >= 0)
                b->accessed_by |= 1u << loc;
            break;
        case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
            if (loc >= 0)
                b->accessed_by &= ~(1u << loc);
            break;
        default: break;                       /* read-mostly: not modeled */
        }
    }
    return CUDA_SUCCESS;
}
