/*
 * copy.c — cuMemcpy* and cuMemset* in every direction, sync and async.
 *
 * Device ranges are checked against the registry (a range that runs past
 * its allocation is INVALID_VALUE); the bytes move at once; the time model
 * charges the copy to the engine its direction uses. Copies do not migrate
 * managed memory: a managed range counts as where its first block lives.
 */
#include "sim.h"

#include <string.h>

enum { WHERE_HOST, WHERE_DEVICE };

/* Where [p, p+n) lives for the time model; INVALID_VALUE if `must_be_cuda`
 * and the range is not inside one allocation (under sim_lock). */
static CUresult locate(uintptr_t p, size_t n, bool must_be_cuda, int *where)
{
    sim_alloc *a = sim_registry_find(p);
    if (!a) {
        *where = WHERE_HOST;
        return must_be_cuda ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    }
    if (n > a->base + a->size - p)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->kind == SIM_MEM_HOST)
        *where = WHERE_HOST;
    else if (a->kind == SIM_MEM_MANAGED)
        *where = a->blocks[(p - a->base) / SIM_BLOCK_BYTES].loc >= 0 ? WHERE_DEVICE : WHERE_HOST;
    else
        *where = WHERE_DEVICE;
    return CUDA_SUCCESS;
}

/* One copy: checks, moves the bytes, models the time. dst_dev / src_dev say
 * whether the API declares that side a device pointer. */
static CUresult copy(uintptr_t dst, uintptr_t src, size_t n, bool dst_dev, bool src_dev,
                     CUstream s, bool ptds, bool sync)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    int wd, ws;
    pthread_mutex_lock(&sim_lock);
    r = locate(dst, n, dst_dev, &wd);
    if (r == CUDA_SUCCESS)
        r = locate(src, n, src_dev, &ws);
    pthread_mutex_unlock(&sim_lock);
    bool record = false;
    if (r == CUDA_SUCCESS)
        r = sim_capture_gate(st, !sync, &record);
    if (r != CUDA_SUCCESS)
        return r;
    if (record)
        return sim_capture_add(st, &(sim_node_desc){.type = CU_GRAPH_NODE_TYPE_MEMCPY,
                                                    .dst = dst, .src = src, .bytes = n});
    memmove((void *)dst, (const void *)src, n);
    pthread_mutex_lock(&sim_lock);
    double end;
    if (wd == WHERE_DEVICE && ws == WHERE_DEVICE)
        end = sim_schedule(st, SIM_ENGINE_COMPUTE, 2.0 * (double)n / sim_cfg.hbm_gbps);
    else if (wd == WHERE_DEVICE)
        end = sim_schedule(st, SIM_ENGINE_H2D, sim_link_ns(n));
    else if (ws == WHERE_DEVICE)
        end = sim_schedule(st, SIM_ENGINE_D2H, sim_link_ns(n));
    else
        end = sim_schedule(st, SIM_ENGINE_COMPUTE, 0.0);
    sim_timeline(st, -1, end, end, n, "copy (ends)");
    if (sync)
        sim_host_wait(end);
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

#define U(p) ((uintptr_t)(p))

SIM_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ return copy(dst, src, n, false, false, NULL, false, true); }
SIM_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ return copy(dst, src, n, false, false, NULL, true, true); }
SIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ return copy(dst, src, n, false, false, s, false, false); }
SIM_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ return copy(dst, src, n, false, false, s, true, false); }

SIM_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{ return copy(dst, U(src), n, true, false, NULL, false, true); }
SIM_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{ return copy(dst, U(src), n, true, false, NULL, true, true); }
SIM_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr_v1 dst, const void *src, unsigned int n)
{ return copy(dst, U(src), n, true, false, NULL, false, true); }
SIM_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{ return copy(U(dst), src, n, false, true, NULL, false, true); }
SIM_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{ return copy(U(dst), src, n, false, true, NULL, true, true); }
SIM_EXPORT CUresult cuMemcpyDtoH(void *dst, CUdeviceptr_v1 src, unsigned int n)
{ return copy(U(dst), src, n, false, true, NULL, false, true); }
SIM_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ return copy(dst, src, n, true, true, NULL, false, true); }
SIM_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ return copy(dst, src, n, true, true, NULL, true, true); }
SIM_EXPORT CUresult cuMemcpyDtoD(CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int n)
{ return copy(dst, src, n, true, true, NULL, false, true); }

SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{ return copy(dst, U(src), n, true, false, s, false, false); }
SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{ return copy(dst, U(src), n, true, false, s, true, false); }
SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{ return copy(U(dst), src, n, false, true, s, false, false); }
SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{ return copy(U(dst), src, n, false, true, s, true, false); }
SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ return copy(dst, src, n, true, true, s, false, false); }
SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ return copy(dst, src, n, true, true, s, true, false); }

/* A copy between the memory of contexts dctx and sctx (both must be
 * valid), otherwise as copy(). */
static CUresult peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream s,
                     bool ptds, bool sync)
{
    if (!sim_ctx_valid(dctx) || !sim_ctx_valid(sctx))
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_INVALID_CONTEXT;
    return copy(dst, src, n, true, true, s, ptds, sync);
}

SIM_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                                 size_t n)
{ return peer(dst, dctx, src, sctx, n, NULL, false, true); }
SIM_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                                      CUcontext sctx, size_t n, CUstream s)
{ return peer(dst, dctx, src, sctx, n, s, false, false); }
SIM_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                                      size_t n)
{ return peer(dst, dctx, src, sctx, n, NULL, true, true); }
SIM_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                                           CUcontext sctx, size_t n, CUstream s)
{ return peer(dst, dctx, src, sctx, n, s, true, false); }

/* One memset of n elements of `width` bytes each. */
static CUresult set(CUdeviceptr dst, unsigned value, unsigned width, size_t n, CUstream s,
                    bool ptds, bool sync)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    if (dst % width)
        return CUDA_ERROR_INVALID_VALUE;
    int where;
    pthread_mutex_lock(&sim_lock);
    r = locate(dst, n * width, true, &where);
    pthread_mutex_unlock(&sim_lock);
    bool record = false;
    if (r == CUDA_SUCCESS)
        r = sim_capture_gate(st, !sync, &record);
    if (r != CUDA_SUCCESS)
        return r;
    if (record)
        return sim_capture_add(st, &(sim_node_desc){.type = CU_GRAPH_NODE_TYPE_MEMSET, .dst = dst,
                                                    .value = value, .width = width, .count = n});
    if (width == 1) {
        memset((void *)(uintptr_t)dst, (int)(value & 0xff), n);
    } else if (width == 2) {
        uint16_t *p = (uint16_t *)(uintptr_t)dst;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint16_t)value;
    } else {
        uint32_t *p = (uint32_t *)(uintptr_t)dst;
        for (size_t i = 0; i < n; i++)
            p[i] = value;
    }
    pthread_mutex_lock(&sim_lock);
    double ns, dur;
    if (where == WHERE_DEVICE) {
        ns = dur = (double)(n * width) / sim_cfg.hbm_gbps;
    } else {
        /* Writes over the link share the device-to-host direction with the
         * copy engine, as a kernel's do: they start when the copies issued
         * before them in that direction are done, and hold it. */
        sim_device *dev = &sim_devices[st->device];
        double start = sim_start_ns(st, SIM_ENGINE_COMPUTE);
        double stream = dev->d2h.busy_ns > start ? dev->d2h.busy_ns : start;
        ns = sim_link_ns(n * width);
        dev->d2h.busy_ns = stream + ns;
        dur = stream - start + ns;
    }
    double end = sim_schedule(st, SIM_ENGINE_COMPUTE, dur);
    sim_timeline(st, SIM_ENGINE_COMPUTE, end - dur, end, n * width, "memset");
    if (sync)
        sim_host_wait(end);
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

/* The memset entry points of one element width (`bits`, elements of
 * `type`): cuMemsetD<bits>_v2 with its per-thread-stream variant, the
 * legacy cuMemsetD<bits>, and cuMemsetD<bits>Async with its _ptsz variant. */
#define MEMSET_WIDTH(bits, type)                                                                 \
    SIM_EXPORT CUresult cuMemsetD##bits##_v2(CUdeviceptr d, type v, size_t n)                    \
    { return set(d, v, bits / 8, n, NULL, false, true); }                                        \
    SIM_EXPORT CUresult cuMemsetD##bits##_v2_ptds(CUdeviceptr d, type v, size_t n)               \
    { return set(d, v, bits / 8, n, NULL, true, true); }                                         \
    SIM_EXPORT CUresult cuMemsetD##bits(CUdeviceptr_v1 d, type v, unsigned int n)                \
    { return set(d, v, bits / 8, n, NULL, false, true); }                                        \
    SIM_EXPORT CUresult cuMemsetD##bits##Async(CUdeviceptr d, type v, size_t n, CUstream s)      \
    { return set(d, v, bits / 8, n, s, false, false); }                                          \
    SIM_EXPORT CUresult cuMemsetD##bits##Async_ptsz(CUdeviceptr d, type v, size_t n, CUstream s) \
    { return set(d, v, bits / 8, n, s, true, false); }

MEMSET_WIDTH(8, unsigned char)
MEMSET_WIDTH(16, unsigned short)
MEMSET_WIDTH(32, unsigned int)
