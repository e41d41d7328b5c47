/*
 * capture.c — stream capture: cuStreamBeginCapture (every ABI), the capture
 * queries, cuStreamEndCapture, cuThreadExchangeStreamCaptureMode, and the
 * rules CUDA documents for work issued while a stream captures.
 *
 * A capture is a graph being built. The origin stream and every stream that
 * joined it (by waiting on an event recorded inside the capture) carry the
 * nodes their next operation depends on; a captured operation becomes a node
 * after them and runs only when the graph is launched (graph.c). Operations
 * that cannot be captured, a synchronization of a capturing stream, a wait
 * that crosses the capture's boundary and legacy-stream work that would
 * depend on a capturing blocking stream invalidate the capture; its
 * cuStreamEndCapture then answers CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
 * Everything here runs under sim_lock.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

#define MAX_CAPTURES 256

struct sim_capture {
    uint64_t id;                 /* unique, never 0 */
    CUgraph graph;               /* owned until cuStreamEndCapture hands it out */
    CUstream origin;
    CUstreamCaptureMode mode;
    pthread_t thread;            /* thread that began it */
    bool invalidated;
    bool blocking;               /* the origin is a blocking stream */
    int device;
};

static sim_capture *active[MAX_CAPTURES];   /* captures in progress */
static int nactive;
static uint64_t next_capture_id = 1;
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* The capture in progress with this id, or NULL. */
static sim_capture *capture_by_id(uint64_t id)
{
    for (int i = 0; i < nactive; i++)
        if (active[i]->id == id)
            return active[i];
    return NULL;
}

/* Invalidates a capture: its graph is dropped at cuStreamEndCapture. */
static void invalidate(sim_capture *c)
{
    c->invalidated = true;
}

/* Work on the legacy stream of `device` would wait for every blocking
 * stream: if one of them captures, its capture is invalidated. True when
 * that happened. */
static bool legacy_conflict(int device)
{
    bool hit = false;
    for (int i = 0; i < nactive; i++) {
        sim_capture *c = active[i];
        if (c->device == device && c->blocking) {
            invalidate(c);
            hit = true;
        }
    }
    return hit;
}

CUresult sim_capture_gate(CUstream st, bool capturable, bool *record)
{
    CUresult r = CUDA_SUCCESS;
    *record = false;
    pthread_mutex_lock(&sim_lock);
    if (st->cap) {
        if (st->cap->invalidated) {
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else if (!capturable) {
            invalidate(st->cap);
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        } else {
            *record = true;
        }
    } else if (st->kind == SIM_STREAM_LEGACY && legacy_conflict(st->device)) {
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

CUresult sim_capture_add(CUstream st, const sim_node_desc *d)
{
    pthread_mutex_lock(&sim_lock);
    CUresult r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    sim_capture *c = st->cap;
    if (c && !c->invalidated) {
        CUgraphNode n;
        r = sim_graph_add(c->graph, st->deps, (size_t)st->ndeps, d, &n);
        if (r == CUDA_SUCCESS) {
            st->deps[0] = n;
            st->ndeps = 1;
        } else {
            invalidate(c);
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

CUresult sim_capture_sync_stream(CUstream st)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&sim_lock);
    if (st->cap) {
        invalidate(st->cap);
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else if (st->kind == SIM_STREAM_LEGACY && legacy_conflict(st->device)) {
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

CUresult sim_capture_sync_device(int device)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&sim_lock);
    for (int i = 0; i < nactive; i++)
        if (active[i]->device == device) {
            invalidate(active[i]);
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

bool sim_capture_event_pending(CUevent e)
{
    return e->cap_id && capture_by_id(e->cap_id);
}

void sim_capture_record(CUstream st, CUevent e)
{
    e->cap_id = st->cap->id;
    e->ndeps = st->ndeps;
    memcpy(e->deps, st->deps, (size_t)st->ndeps * sizeof e->deps[0]);
    e->device = st->device;
}

/* Adds nodes to a stream's dependencies, once each. */
static bool add_deps(CUstream st, const CUgraphNode *deps, int n)
{
    for (int i = 0; i < n; i++) {
        bool have = false;
        for (int k = 0; k < st->ndeps && !have; k++)
            have = st->deps[k] == deps[i];
        if (have)
            continue;
        if (st->ndeps == SIM_MAX_DEPS)
            return false;
        st->deps[st->ndeps++] = deps[i];
    }
    return true;
}

CUresult sim_capture_wait(CUstream st, CUevent e, unsigned flags, bool *handled)
{
    sim_capture *ec = e->cap_id ? capture_by_id(e->cap_id) : NULL;
    *handled = st->cap || ec;
    if (!*handled)
        return CUDA_SUCCESS;
    if (st->cap && st->cap->invalidated)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (ec && ec->invalidated)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (st->cap && !ec) {
        if (flags & CU_EVENT_WAIT_EXTERNAL)
            return CUDA_SUCCESS;   /* an external wait: no edge in the graph */
        invalidate(st->cap);       /* the event lies outside the capture */
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    if (st->cap && st->cap != ec) {   /* two captures would be merged */
        invalidate(st->cap);
        invalidate(ec);
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    if (!st->cap) {                  /* fork: st joins the capture */
        if (st->kind == SIM_STREAM_LEGACY) {
            invalidate(ec);
            return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        }
        st->cap = ec;
        st->ndeps = 0;
    }
    if (!add_deps(st, e->deps, e->ndeps)) {
        invalidate(ec);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    return CUDA_SUCCESS;
}

CUresult sim_capture_unsafe_call(void)
{
    if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_SUCCESS;
    pthread_t self = pthread_self();
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&sim_lock);
    for (int i = 0; i < nactive; i++) {
        sim_capture *c = active[i];
        bool mine = pthread_equal(c->thread, self);
        if ((mine && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
            (!mine && thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
             c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            invalidate(c);
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* Ends a capture: every stream leaves it and it leaves the active list.
 * The caller then owns c and its graph. */
static void finish(sim_capture *c)
{
    sim_stream_leave_capture(c);
    for (int i = 0; i < nactive; i++)
        if (active[i] == c) {
            active[i] = active[--nactive];
            break;
        }
}

void sim_capture_forget_stream(CUstream st)
{
    sim_capture *c = st->cap;
    if (!c)
        return;
    st->cap = NULL;
    st->ndeps = 0;
    if (c->origin == st) {   /* the origin went away: the capture ends */
        finish(c);
        sim_graph_free(c->graph);
        free(c);
    }
}

/* ---- entry points ------------------------------------------------------ */

/* Shared body of the cuStreamBeginCapture variants. */
static CUresult begin(CUstream s, CUstreamCaptureMode mode, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (st->kind == SIM_STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;   /* the legacy stream cannot capture */
    sim_capture *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&sim_lock);
    if (st->cap) {
        r = CUDA_ERROR_ILLEGAL_STATE;
    } else if (nactive == MAX_CAPTURES || !(c->graph = sim_graph_new())) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        c->id = next_capture_id++;
        c->origin = st;
        c->mode = mode;
        c->thread = pthread_self();
        c->device = st->device;
        c->blocking = !(st->flags & CU_STREAM_NON_BLOCKING);
        active[nactive++] = c;
        st->cap = c;
        st->ndeps = 0;
        c = NULL;
    }
    pthread_mutex_unlock(&sim_lock);
    free(c);
    return r;
}

SIM_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    return begin(s, mode, false);
}
SIM_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    return begin(s, mode, true);
}
/* CUDA 10.0 ABI: no mode argument; the capture is global. */
SIM_EXPORT CUresult cuStreamBeginCapture(CUstream s)
{
    return begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}
SIM_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s)
{
    return begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
}

/* True when no node is left unjoined: every node without dependents is one
 * the origin stream depends on. */
static bool all_joined(sim_capture *c)
{
    size_t n;
    CUgraphNode *nodes = sim_graph_nodes(c->graph, &n);
    for (size_t i = 0; i < n; i++) {
        if (sim_graph_has_dependents(nodes[i]))
            continue;
        bool in_origin = false;
        for (int k = 0; k < c->origin->ndeps && !in_origin; k++)
            in_origin = c->origin->deps[k] == nodes[i];
        if (!in_origin)
            return false;
    }
    return true;
}

/* Shared body of cuStreamEndCapture and its _ptsz twin. */
static CUresult end(CUstream s, CUgraph *out, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    sim_capture *c = st->cap;
    if (!c) {
        pthread_mutex_unlock(&sim_lock);
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    if (c->origin != st) {
        invalidate(c);
        pthread_mutex_unlock(&sim_lock);
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    }
    if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self())) {
        pthread_mutex_unlock(&sim_lock);
        return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    }
    if (c->invalidated)
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else if (!all_joined(c))
        r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    finish(c);
    if (r == CUDA_SUCCESS) {
        *out = c->graph;
    } else {
        *out = NULL;
        sim_graph_free(c->graph);
    }
    pthread_mutex_unlock(&sim_lock);
    free(c);
    return r;
}

SIM_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g) { return end(s, g, false); }
SIM_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) { return end(s, g, true); }

/* Shared body of cuStreamIsCapturing and every cuStreamGetCaptureInfo. */
static CUresult info(CUstream s, bool ptds, CUstreamCaptureStatus *status, cuuint64_t *id,
                     CUgraph *graph, const CUgraphNode **deps, const CUgraphEdgeData **edges,
                     size_t *ndeps)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    sim_capture *c = st->cap;
    if (!c && st->kind == SIM_STREAM_LEGACY) {
        for (int i = 0; i < nactive && r == CUDA_SUCCESS; i++)
            if (active[i]->device == st->device && active[i]->blocking)
                r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    if (r == CUDA_SUCCESS) {
        *status = !c ? CU_STREAM_CAPTURE_STATUS_NONE
                : c->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                 : CU_STREAM_CAPTURE_STATUS_ACTIVE;
        bool live = c != NULL;
        if (id && live)
            *id = c->id;
        if (graph)
            *graph = live && !c->invalidated ? c->graph : NULL;
        if (deps)
            *deps = live && !c->invalidated ? st->deps : NULL;
        if (edges)
            *edges = NULL;   /* all edges are default edges */
        if (ndeps)
            *ndeps = live && !c->invalidated ? (size_t)st->ndeps : 0;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
    return info(s, false, status, NULL, NULL, NULL, NULL, NULL);
}
SIM_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *status)
{
    return info(s, true, status, NULL, NULL, NULL, NULL, NULL);
}
SIM_EXPORT CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *status,
                                           cuuint64_t *id)
{
    return info(s, false, status, id, NULL, NULL, NULL, NULL);
}
SIM_EXPORT CUresult cuStreamGetCaptureInfo_ptsz(CUstream s, CUstreamCaptureStatus *status,
                                                cuuint64_t *id)
{
    return info(s, true, status, id, NULL, NULL, NULL, NULL);
}
SIM_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *status,
                                              cuuint64_t *id, CUgraph *g,
                                              const CUgraphNode **deps, size_t *n)
{
    return info(s, false, status, id, g, deps, NULL, n);
}
SIM_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream s, CUstreamCaptureStatus *status,
                                                   cuuint64_t *id, CUgraph *g,
                                                   const CUgraphNode **deps, size_t *n)
{
    return info(s, true, status, id, g, deps, NULL, n);
}
SIM_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *status,
                                              cuuint64_t *id, CUgraph *g,
                                              const CUgraphNode **deps,
                                              const CUgraphEdgeData **edges, size_t *n)
{
    return info(s, false, status, id, g, deps, edges, n);
}
SIM_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *status,
                                                   cuuint64_t *id, CUgraph *g,
                                                   const CUgraphNode **deps,
                                                   const CUgraphEdgeData **edges, size_t *n)
{
    return info(s, true, status, id, g, deps, edges, n);
}

SIM_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
                  *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                  *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}
