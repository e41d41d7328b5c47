/*
 * context.c — contexts: each device's primary context, created contexts,
 * and the per-thread context stack.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

#define STACK_DEPTH 32
#define MAX_CREATED 256

static __thread CUcontext ctx_stack[STACK_DEPTH];
static __thread int ctx_depth;
static CUcontext created[MAX_CREATED];   /* live created contexts (sim_lock) */

/* True when ctx is a primary context or a live created one. */
bool sim_ctx_valid(CUcontext ctx)
{
    if (!ctx)
        return false;
    for (int d = 0; d < sim_cfg.devices; d++)
        if (ctx == &sim_devices[d].primary)
            return true;
    bool found = false;
    pthread_mutex_lock(&sim_lock);
    for (int i = 0; i < MAX_CREATED && !found; i++)
        found = created[i] == ctx;
    pthread_mutex_unlock(&sim_lock);
    return found;
}

/* The context a new allocation on `device` belongs to (any lock state: it
 * reads only the calling thread's stack). */
CUcontext sim_alloc_ctx(int device)
{
    CUcontext top = ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
    return top && top->device == device ? top : &sim_devices[device].primary;
}

/* Frees what a context owns as CUDA does when it is destroyed or reset:
 * every allocation made in it (device, stream-ordered, managed and pinned
 * host memory; host registrations are undone, the program's memory stays),
 * its arrays and its streams; a primary context's end also empties the
 * device's graph memory pool. VMM allocations belong to the process and stay. Takes
 * sim_lock; the allocations' records and memory are released here. */
void sim_ctx_free_resources(CUcontext ctx)
{
    pthread_mutex_lock(&sim_lock);
    size_t n;
    sim_alloc *const *all = sim_registry_all(&n);
    sim_alloc **mine = n ? malloc(n * sizeof *mine) : NULL;
    size_t k = 0;
    for (size_t i = 0; mine && i < n; i++)
        if (all[i]->ctx == ctx && all[i]->kind != SIM_MEM_VMM)
            mine[k++] = all[i];
    for (size_t i = 0; i < k; i++)
        sim_free_alloc(mine[i]);
    free(mine);
    sim_streams_drop_ctx(ctx);
    sim_arrays_drop_ctx(ctx);
    if (ctx->primary)   /* the device's state: its graph pool too */
        sim_graphmem_drop_device(ctx->device);
    pthread_mutex_unlock(&sim_lock);
}

/* The calling thread's current context; INVALID_CONTEXT when there is
 * none, CONTEXT_IS_DESTROYED when another thread destroyed it (CUDA's
 * answer; the handle is not read then). */
CUresult sim_current_ctx(CUcontext *out)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (ctx_depth == 0 || !ctx_stack[ctx_depth - 1])
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!sim_ctx_valid(ctx_stack[ctx_depth - 1]))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *out = ctx_stack[ctx_depth - 1];
    return CUDA_SUCCESS;
}

/* The device of the calling thread's current context. */
CUresult sim_current_device(int *out)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r == CUDA_SUCCESS)
        *out = ctx->device;
    return r;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = sim_check_device_args(pctx != NULL, dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    sim_devices[dev].primary.refs++;
    pthread_mutex_unlock(&sim_lock);
    *pctx = &sim_devices[dev].primary;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    bool last = false;
    if (sim_devices[dev].primary.refs > 0)
        last = --sim_devices[dev].primary.refs == 0;
    else
        r = CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_unlock(&sim_lock);
    if (last)   /* the last release destroys the primary context */
        sim_ctx_free_resources(&sim_devices[dev].primary);
    return r;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

SIM_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    /* Every allocation and stream of the primary context goes; the context
     * stays usable (it is made again on its next use). */
    pthread_mutex_lock(&sim_lock);
    sim_host_wait(sim_device_idle_ns(dev));
    pthread_mutex_unlock(&sim_lock);
    sim_ctx_free_resources(&sim_devices[dev].primary);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

SIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult r = sim_check_device_args(flags && active, dev);
    if (r != CUDA_SUCCESS)
        return r;
    *flags = sim_devices[dev].primary.flags;
    *active = sim_devices[dev].primary.refs > 0;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    sim_devices[dev].primary.flags = flags;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

/* Creates a context on dev and pushes it on the calling thread's stack. */
static CUresult create_context(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    CUresult r = sim_check_device_args(pctx != NULL, dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (ctx_depth >= STACK_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUcontext ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ctx = (struct CUctx_st){.magic = SIM_MAGIC_CTX, .device = dev, .flags = flags, .refs = 1};
    pthread_mutex_lock(&sim_lock);
    int slot = -1;
    for (int i = 0; i < MAX_CREATED && slot < 0; i++)
        if (!created[i])
            slot = i;
    if (slot >= 0)
        created[slot] = ctx;
    pthread_mutex_unlock(&sim_lock);
    if (slot < 0) {
        free(ctx);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    ctx_stack[ctx_depth++] = ctx;
    *pctx = ctx;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                   CUdevice dev)
{
    (void)params;
    return create_context(pctx, flags, dev);
}

SIM_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n,
                                   unsigned int flags, CUdevice dev)
{
    (void)params;
    (void)n;
    return create_context(pctx, flags, dev);
}

SIM_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return create_context(pctx, flags, dev);
}

SIM_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return create_context(pctx, flags, dev);
}

SIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    bool found = false;
    pthread_mutex_lock(&sim_lock);
    for (int i = 0; i < MAX_CREATED; i++)
        if (created[i] == ctx) {
            created[i] = NULL;
            found = true;
        }
    pthread_mutex_unlock(&sim_lock);
    if (!found)
        return CUDA_ERROR_INVALID_CONTEXT;
    sim_ctx_free_resources(ctx);
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] == ctx) {
            memmove(&ctx_stack[i], &ctx_stack[i + 1], (size_t)(ctx_depth - i - 1) * sizeof ctx);
            ctx_depth--;
            i--;
        }
    free(ctx);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }

SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx) {
        if (ctx_depth > 0)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    if (!sim_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == 0)
        ctx_depth = 1;
    ctx_stack[ctx_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!sim_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth >= STACK_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }

SIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext ctx = ctx_stack[--ctx_depth];
    if (pctx)
        *pctx = ctx;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx) { return cuCtxPopCurrent_v2(pctx); }

SIM_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    if (!device)
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_INVALID_VALUE;
    int d;
    CUresult r = sim_current_device(&d);
    if (r == CUDA_SUCCESS)
        *device = d;
    return r;
}

/* CUDA 13: the device of ctx, or of the current context when ctx is NULL. */
SIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    if (!ctx)
        return cuCtxGetDevice(device);
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = ctx->device;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = ctx->flags;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx && !sim_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *version = 3020;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSynchronize(void)
{
    int d;
    CUresult r = sim_current_device(&d);
    if (r == CUDA_SUCCESS)
        r = sim_capture_sync_device(d);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    sim_host_wait(sim_device_idle_ns(d));
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

/* CUDA 13: synchronizes ctx, or the current context when ctx is NULL. */
SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    if (!ctx)
        return cuCtxSynchronize();
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!sim_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    r = sim_capture_sync_device(ctx->device);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    sim_host_wait(sim_device_idle_ns(ctx->device));
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}
