/*
 * prefetch.c — the managed-memory entry points: cuMemPrefetchAsync and
 * cuMemAdvise in both ABIs (CUdevice and CUmemLocation). The model itself
 * is in residency.c.
 */
#include "sim.h"

/* Turns a CUdevice (or CU_DEVICE_CPU) into a block location. */
static CUresult location_of_device(CUdevice d, int *loc)
{
    if (d == CU_DEVICE_CPU) {
        *loc = SIM_LOC_HOST;
        return CUDA_SUCCESS;
    }
    if (d < 0 || d >= sim_cfg.devices)
        return CUDA_ERROR_INVALID_DEVICE;
    *loc = d;
    return CUDA_SUCCESS;
}

/* Turns a CUmemLocation into a block location. */
static CUresult location_of(CUmemLocation l, int *loc)
{
    switch (l.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if (l.id < 0 || l.id >= sim_cfg.devices)
            return CUDA_ERROR_INVALID_DEVICE;
        *loc = l.id;
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        *loc = SIM_LOC_HOST;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* Shared body of every prefetch entry point. */
static CUresult prefetch(CUdeviceptr p, size_t n, int loc, CUstream s, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (loc >= 0 && !sim_cfg.concurrent_managed)
        return CUDA_ERROR_INVALID_DEVICE;   /* needs CONCURRENT_MANAGED_ACCESS */
    bool record;
    r = sim_capture_gate(st, false, &record);   /* no prefetch node in a graph */
    if (r != CUDA_SUCCESS)
        return r;
    double ns = 0;
    int engine = loc == SIM_LOC_HOST ? SIM_ENGINE_D2H : SIM_ENGINE_H2D;
    pthread_mutex_lock(&sim_lock);
    r = sim_prefetch((uintptr_t)p, n, loc, sim_start_ns(st, engine), &ns);
    if (r == CUDA_SUCCESS) {
        double end = sim_schedule(st, engine, ns);
        sim_timeline(st, engine, end - ns, end, n, loc == SIM_LOC_HOST ? "prefetch to host" : "prefetch to device");
        if (loc != SIM_LOC_HOST)
            sim_arrive((uintptr_t)p, n, end);   /* the blocks are there when the copy ends */
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* The entry points of the first ABI: dst is a device ordinal or CU_DEVICE_CPU. */
static CUresult prefetch_v1(CUdeviceptr p, size_t n, CUdevice dst, CUstream s, bool ptds)
{
    int loc;
    CUresult r = sim_check_init();
    if (r == CUDA_SUCCESS)
        r = location_of_device(dst, &loc);
    return r == CUDA_SUCCESS ? prefetch(p, n, loc, s, ptds) : r;
}

/* The entry points of the _v2 ABI: a location and flags (none defined). */
static CUresult prefetch_v2(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int flags, CUstream s, bool ptds)
{
    int loc;
    CUresult r = sim_check_init();
    if (r == CUDA_SUCCESS)
        r = flags ? CUDA_ERROR_INVALID_VALUE : location_of(l, &loc);
    return r == CUDA_SUCCESS ? prefetch(p, n, loc, s, ptds) : r;
}

SIM_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dst, CUstream s)
{ return prefetch_v1(p, n, dst, s, false); }
SIM_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t n, CUdevice dst, CUstream s)
{ return prefetch_v1(p, n, dst, s, true); }
SIM_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation l,
                                          unsigned int flags, CUstream s)
{ return prefetch_v2(p, n, l, flags, s, false); }
SIM_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation l,
                                               unsigned int flags, CUstream s)
{ return prefetch_v2(p, n, l, flags, s, true); }

/* Shared body of both cuMemAdvise ABIs. */
static CUresult advise(CUdeviceptr p, size_t n, CUmem_advise advice, int loc)
{
    if (n == 0 || advice < CU_MEM_ADVISE_SET_READ_MOSTLY ||
        advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_advise((uintptr_t)p, n, advice, loc);
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice d)
{
    int loc;
    CUresult r = sim_check_init();
    if (r == CUDA_SUCCESS)
        r = location_of_device(d, &loc);
    return r == CUDA_SUCCESS ? advise(p, n, advice, loc) : r;
}

SIM_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation l)
{
    int loc = SIM_LOC_HOST;
    CUresult r = sim_check_init();
    if (r == CUDA_SUCCESS && advice != CU_MEM_ADVISE_SET_READ_MOSTLY &&
        advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY &&
        advice != CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION)
        r = location_of(l, &loc);
    return r == CUDA_SUCCESS ? advise(p, n, advice, loc) : r;
}
