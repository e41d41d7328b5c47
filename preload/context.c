/*
 * context.c — the hooks of a context's end: cuCtxDestroy, the reset of a
 * primary context (cuDevicePrimaryCtxReset, what cudaDeviceReset calls) and
 * its last cuDevicePrimaryCtxRelease. CUDA then frees every allocation made
 * in the context and its streams and events. After the driver succeeded,
 * lmshim asks it which chunks it no longer knows and drops those through
 * the free bookkeeping (charge, residency entry, trace) without a real free,
 * the arrays made there give their charges back, the residency engine
 * forgets the streams and events it made there, and the graph pools'
 * charges are read again.
 */
#include <stdlib.h>

#include "arrays.h"
#include "capture.h"
#include "chunks.h"
#include "graph.h"
#include "grow.h"
#include "hooks.h"
#include "log.h"
#include "place.h"
#include "residency.h"

/* The keys of the live chunks, copied out of the map (malloc'd v). */
typedef struct key_list {
    uint64_t *v;
    size_t n, cap;
    bool incomplete;   /* memory ran out: some chunks were left out */
} key_list;

/* Adds a chunk's key to the list; VMM handles belong to no context. */
static void collect(const lms_chunk *c, void *arg)
{
    key_list *k = arg;
    if (c->key & LMS_VMM_TAG)
        return;
    if (!lms_grow((void **)&k->v, &k->cap, k->n + 1, sizeof *k->v, 256)) {
        k->incomplete = true;
        return;
    }
    k->v[k->n++] = c->key;
}

/* A context went away: forgets the residency engine's streams and events
 * made in it (ctx may be NULL when unknown), then drops every chunk whose
 * memory the driver freed with it. */
static void context_gone(CUcontext ctx)
{
    if (ctx) {
        lms_graph_context_gone(ctx);
        lms_residency_context_gone(ctx);
        lms_arrays_context_gone(ctx);
    }
    if (!lms_drv.cuPointerGetAttribute)
        return;
    lms_capture_context_gone(lms_place_driver_forgot);   /* frees deferred in a capture: out of the map already */
    key_list k = {0};
    lms_chunks_foreach(collect, &k);
    size_t dropped = 0;
    for (size_t i = 0; i < k.n; i++) {
        lms_chunk c;
        /* Out of the map first: a free racing with it finds no chunk. */
        if (lms_place_driver_forgot(k.v[i]) && lms_chunks_remove(k.v[i], &c)) {
            lms_place_gone(&c);
            dropped++;
        }
    }
    free(k.v);
    if (k.incomplete)
        lms_log(LMS_LEVEL_WARN, "context destroyed: out of memory while listing chunks; "
                                "some freed chunks stay charged");
    lms_log(LMS_LEVEL_INFO, "context destroyed: %zu chunks freed with it", dropped);
}

/* The primary context of dev while it is active, or NULL; its retain count
 * is left as it was. */
static CUcontext active_primary(CUdevice dev)
{
    unsigned flags;
    int active = 0;
    CUcontext ctx = NULL;
    if (!lms_drv.cuDevicePrimaryCtxGetState || !lms_drv.cuDevicePrimaryCtxRetain ||
        !lms_drv.cuDevicePrimaryCtxRelease ||
        lms_drv.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active)
        return NULL;
    if (lms_drv.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)
        return NULL;
    lms_drv.cuDevicePrimaryCtxRelease(dev);
    return ctx;
}

/* True when dev's primary context is no longer active. */
static bool primary_inactive(CUdevice dev)
{
    unsigned flags;
    int active = 1;
    return lms_drv.cuDevicePrimaryCtxGetState &&
           lms_drv.cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && !active;
}

/* A hook whose call may end a context: `ctx` is found from the argument
 * `arg` (of `type`) before the real call, by the expression `find`; when
 * the call succeeds and the expression `gone` (of arg, ctx) holds, the
 * context's allocations are forgotten. Both expressions name arg and ctx. */
#define CONTEXT_END_HOOK(sym, type, find, gone)                                   \
    LMS_EXPORT CUresult sym(type arg)                                             \
    {                                                                             \
        if (!LMS_ENTER(sym))                                                      \
            return PASS(sym, arg);                                                \
        lms_place_context_begin();                                                \
        CUcontext ctx = (find);                                                   \
        lms_driver_streams_end_begin();   /* its streams may go: handles reused */ \
        CUresult r = REAL(sym)(arg);                                              \
        lms_driver_streams_end_done();                                            \
        bool ended = r == CUDA_SUCCESS && (gone);                                 \
        if (ended)                                                                \
            context_gone(ctx);                                                    \
        lms_place_context_end();                                                  \
        if (ended)   /* its graph pool may have gone too (no lock held) */        \
            lms_graph_mem_context_gone();                                         \
        lms_hook_leave();                                                         \
        return r;                                                                 \
    }

CONTEXT_END_HOOK(cuCtxDestroy_v2, CUcontext, arg, true)
CONTEXT_END_HOOK(cuCtxDestroy, CUcontext, arg, true)

/* A reset destroys the primary context's allocations whatever its count. */
CONTEXT_END_HOOK(cuDevicePrimaryCtxReset_v2, CUdevice, active_primary(arg), ctx != NULL)
CONTEXT_END_HOOK(cuDevicePrimaryCtxReset, CUdevice, active_primary(arg), ctx != NULL)

/* Only the release that takes the count to zero destroys the context. */
CONTEXT_END_HOOK(cuDevicePrimaryCtxRelease_v2, CUdevice, active_primary(arg), ctx && primary_inactive(arg))
CONTEXT_END_HOOK(cuDevicePrimaryCtxRelease, CUdevice, active_primary(arg), ctx && primary_inactive(arg))
