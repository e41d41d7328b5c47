/*
 * conditional.c — the handles of conditional graph nodes
 * (cuGraphConditionalHandleCreate) and the value each holds: what a
 * conditional node reads when a graph runs it (IF, WHILE, SWITCH; graph.c
 * runs the bodies). A kernel sets the value from the device with
 * cudaGraphSetConditional; a simulated kernel body calls
 * simgpuSetConditional (simgpu.h) instead. A handle made with
 * CU_GRAPH_COND_ASSIGN_DEFAULT takes its default value again at the start
 * of every launch of a graph that uses it (docs/SIMULATOR.md "Conditional
 * nodes").
 */
#include "sim.h"

#include <stdatomic.h>
#include <stdlib.h>

#define COND_MAX 65536   /* handles a process may make */

/* One handle: the graph it was made for, its default, its value. */
typedef struct cond {
    CUgraph graph;
    unsigned dflt;
    bool assign_default;
    _Atomic unsigned value;   /* set by kernels while no lock is held */
} cond;

static cond *conds;      /* conds[h - 1] for handle h (sim_lock to make; values atomic) */
static size_t nconds;

/* The record of handle h, or NULL (under sim_lock, or after the handle was
 * made: records never move once the array is at its full size). */
static cond *cond_of(CUgraphConditionalHandle h)
{
    return h >= 1 && h <= nconds ? &conds[h - 1] : NULL;
}

SIM_EXPORT CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *out, CUgraph g, CUcontext ctx,
                                                   unsigned int dflt, unsigned int flags)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || (flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT))
        return CUDA_ERROR_INVALID_VALUE;
    bool ctx_ok = !ctx || sim_ctx_valid(ctx);   /* takes sim_lock itself */
    pthread_mutex_lock(&sim_lock);
    if (!sim_graph_valid(g) || !ctx_ok) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (!conds && !(conds = calloc(COND_MAX, sizeof *conds))) {
        r = CUDA_ERROR_OUT_OF_MEMORY;   /* allocated whole once: records never move */
    } else if (nconds == COND_MAX) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        cond *c = &conds[nconds];
        c->graph = g;
        c->dflt = dflt;
        c->assign_default = flags & CU_GRAPH_COND_ASSIGN_DEFAULT;
        atomic_store(&c->value, c->assign_default ? dflt : 0);
        *out = ++nconds;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

bool sim_cond_valid(CUgraphConditionalHandle h)
{
    return cond_of(h) != NULL;
}

unsigned sim_cond_value(CUgraphConditionalHandle h)
{
    cond *c = cond_of(h);
    return c ? atomic_load(&c->value) : 0;
}

void sim_cond_launch_begins(CUgraphConditionalHandle h)
{
    cond *c = cond_of(h);
    if (c && c->assign_default)
        atomic_store(&c->value, c->dflt);
}

/* What cudaGraphSetConditional does on the device, for a kernel body:
 * handle h holds `value` from now on. 0, or CUDA_ERROR_INVALID_VALUE for a
 * handle never made. */
SIM_EXPORT int simgpuSetConditional(unsigned long long h, unsigned value)
{
    pthread_mutex_lock(&sim_lock);
    cond *c = cond_of(h);
    pthread_mutex_unlock(&sim_lock);
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    atomic_store(&c->value, value);
    return CUDA_SUCCESS;
}
