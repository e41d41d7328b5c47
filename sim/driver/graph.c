/*
 * graph.c — CUDA graphs: creation, kernel nodes (captured or added),
 * child graph nodes, conditional nodes (IF, WHILE, SWITCH; their handles'
 * values: conditional.c), queries, instantiation, updates of an executable graph (a kernel node's
 * parameters, or every node's from a graph of the same shape), upload,
 * launch and destruction.
 *
 * A graph owns its nodes; a node owns a copy of its kernel's parameter
 * values, laid out as the kernel's parameter buffer, so the program's
 * arguments may go away after the launch was captured. Instantiation copies
 * the nodes into the executable graph (the graph may then be destroyed).
 * Nodes are kept in insertion order, which respects every dependency (a
 * node can only depend on nodes that existed before it), and a launch runs
 * them in that order on the launch stream (docs/SIMULATOR.md).
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

/* Live graphs, nodes and executable graphs: a handle is checked here
 * before it is dereferenced (a destroyed or bogus one answers an error). */
static const void **live;            /* open addressing; NULL empty, TOMB removed */
static size_t live_cap, live_used;   /* slots, slots not empty */
static const char tomb_mark;
#define LIVE_TOMB ((const void *)&tomb_mark)

/* The first slot of p's path (the product's high bits: its low bits
 * follow the handle's alignment alone). */
static size_t live_hash(const void *p)
{
    return (((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 32) % live_cap;
}

/* The slot of p, or of an empty one if absent (under sim_lock). */
static size_t live_slot(const void *p)
{
    size_t i = live_hash(p);
    while (live[i] && live[i] != p)
        i = (i + 1) % live_cap;
    return i;
}

/* True when p is a live handle (under sim_lock). */
static bool live_has(const void *p)
{
    return p && live_cap && live[live_slot(p)] == p;
}

/* Adds a handle; false when the host is out of memory (under sim_lock). */
static bool live_add(const void *p)
{
    if ((live_used + 1) * 2 > live_cap) {   /* rehash: drop removed slots, keep <= 1/4 full */
        size_t n = 0, ncap = 256;
        for (size_t i = 0; i < live_cap; i++)
            n += live[i] && live[i] != LIVE_TOMB;
        while (ncap < (n + 1) * 4)
            ncap *= 2;
        const void **old = live;
        size_t ocap = live_cap;
        live = calloc(ncap, sizeof *live);
        if (!live) {
            live = old;
            return false;
        }
        live_cap = ncap;
        live_used = 0;
        for (size_t i = 0; i < ocap; i++)
            if (old[i] && old[i] != LIVE_TOMB) {
                live[live_slot(old[i])] = old[i];
                live_used++;
            }
        free(old);
    }
    /* A removed slot on p's path is taken again: an address freed and
     * handed out again (malloc reuses it at once) would otherwise leave
     * one more removed slot in its path each time. */
    size_t reuse = SIZE_MAX, i = live_hash(p);
    for (; live[i] && live[i] != p; i = (i + 1) % live_cap)
        if (live[i] == LIVE_TOMB && reuse == SIZE_MAX)
            reuse = i;
    if (live[i] == p)
        return true;   /* already live */
    if (reuse != SIZE_MAX)
        i = reuse;
    else
        live_used++;
    live[i] = p;
    return true;
}

/* Removes a handle (under sim_lock). */
static void live_remove(const void *p)
{
    if (live_has(p))
        live[live_slot(p)] = LIVE_TOMB;
}

#define SIM_MAGIC_GRAPH 0x47525048u
#define SIM_MAGIC_NODE  0x4e4f4445u
#define SIM_MAGIC_EXEC  0x47455845u

struct CUgraphNode_st {
    uint32_t magic;
    CUgraph graph;
    sim_node_desc d;                    /* d.params points into ptrs below */
    CUgraphNode *deps;                  /* owned */
    size_t ndeps;
    size_t dependents;                  /* nodes that depend on this one */
    void *buf;                          /* kernel: parameter values (owned) */
    void *ptrs[SIMGPU_MAX_PARAMS];      /* kernel: pointers into buf */
};

struct CUgraph_st {
    uint32_t magic;
    bool embedded;                      /* a child graph node's own graph, or a conditional
                                           node's body: the node owns it */
    bool body;                          /* embedded as a conditional node's body */
    CUgraphNode *nodes;                 /* owned, in insertion order */
    size_t n, cap;
};

struct CUgraphExec_st {
    uint32_t magic;
    CUgraph copy;                       /* owned copy of the instantiated graph */
    CUgraphNode *origin;                /* the instantiated graph's nodes at every depth
                                           (flat_fill's order; owned array; handles only,
                                           never dereferenced): how updates name nodes */
    CUgraphNode *copies;                /* the copy's node at each origin's index (owned array) */
    size_t norigin;
    size_t *oindex;                     /* open addressing over origin: index + 1, 0 empty
                                           (ocap slots, a power of two >= 2 norigin; owned) */
    size_t ocap;
    unsigned long long flags;
};

/* A graph with no nodes, or NULL when the host is out of memory (under
 * sim_lock: it joins the handle table). */
CUgraph sim_graph_new(void)
{
    CUgraph g = calloc(1, sizeof *g);
    if (g && !live_add(g)) {
        free(g);
        return NULL;
    }
    if (g)
        g->magic = SIM_MAGIC_GRAPH;
    return g;
}

/* Frees a node and what it owns. */
static void node_free(CUgraphNode n)
{
    live_remove(n);
    n->magic = 0;
    if (n->d.type == CU_GRAPH_NODE_TYPE_GRAPH)
        sim_graph_free(n->d.child);
    if (n->d.type == CU_GRAPH_NODE_TYPE_CONDITIONAL && n->d.bodies) {
        for (unsigned i = 0; i < n->d.nbodies; i++)
            sim_graph_free(n->d.bodies[i]);
        free(n->d.bodies);
    }
    free(n->deps);
    free(n->buf);
    free(n);
}

/* Frees a graph and its nodes. */
void sim_graph_free(CUgraph g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++)
        node_free(g->nodes[i]);
    free(g->nodes);
    live_remove(g);
    g->magic = 0;
    free(g);
}

CUgraphNode *sim_graph_nodes(CUgraph g, size_t *n)
{
    *n = g->n;
    return g->nodes;
}

bool sim_graph_has_dependents(CUgraphNode n)
{
    return n->dependents > 0;
}

/* Copies a kernel node's parameter values into the node's own buffer. */
static CUresult copy_params(CUgraphNode n)
{
    size_t offsets[SIMGPU_MAX_PARAMS], sizes[SIMGPU_MAX_PARAMS], total;
    unsigned np = sim_kernel_layout(n->d.func, offsets, sizes, &total);
    if (np && !n->d.params)
        return CUDA_ERROR_INVALID_VALUE;
    n->buf = malloc(total ? total : 1);
    if (!n->buf)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < np; i++) {
        memcpy((char *)n->buf + offsets[i], n->d.params[i], sizes[i]);
        n->ptrs[i] = (char *)n->buf + offsets[i];
    }
    n->d.params = n->ptrs;
    return CUDA_SUCCESS;
}

static CUgraph graph_clone(CUgraph g);

/* Adds a node after `deps` (nodes of g); *out gets it. A child graph node
 * embeds its own clone of d->child; a conditional node gets bodies of its
 * own (clones of d->bodies, or empty graphs when NULL). */
CUresult sim_graph_add(CUgraph g, const CUgraphNode *deps, size_t ndeps,
                       const sim_node_desc *d, CUgraphNode *out)
{
    for (size_t i = 0; i < ndeps; i++) {
        if (!live_has(deps[i]) || deps[i]->magic != SIM_MAGIC_NODE || deps[i]->graph != g)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t k = 0; k < i; k++)
            if (deps[k] == deps[i])
                return CUDA_ERROR_INVALID_VALUE;   /* "may not have any duplicate entries" */
    }
    if (g->n == g->cap) {
        size_t ncap = g->cap ? g->cap * 2 : 16;
        CUgraphNode *nn = realloc(g->nodes, ncap * sizeof *nn);
        if (!nn)
            return CUDA_ERROR_OUT_OF_MEMORY;
        g->nodes = nn;
        g->cap = ncap;
    }
    CUgraphNode n = calloc(1, sizeof *n);
    if (!n || !live_add(n)) {
        free(n);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *n = (struct CUgraphNode_st){.magic = SIM_MAGIC_NODE, .graph = g, .d = *d};
    if (d->type == CU_GRAPH_NODE_TYPE_GRAPH)
        n->d.child = NULL;   /* until its clone is made (node_free then frees nothing) */
    if (d->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
        n->d.bodies = NULL;  /* until its own are made */
    if (ndeps) {
        n->deps = malloc(ndeps * sizeof *n->deps);
        if (!n->deps) {
            node_free(n);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        memcpy(n->deps, deps, ndeps * sizeof *n->deps);
        n->ndeps = ndeps;
    }
    if (d->type == CU_GRAPH_NODE_TYPE_GRAPH) {
        if (!(n->d.child = graph_clone(d->child))) {
            node_free(n);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        n->d.child->embedded = true;
    }
    if (d->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
        /* Bodies of its own: empty ones for a new node, clones of
         * d->bodies for a copy. */
        if (!(n->d.bodies = calloc(d->nbodies, sizeof *n->d.bodies))) {
            node_free(n);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        for (unsigned i = 0; i < d->nbodies; i++) {
            CUgraph b = d->bodies ? graph_clone(d->bodies[i]) : sim_graph_new();
            if (!b) {
                node_free(n);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            b->embedded = true;
            b->body = true;
            n->d.bodies[i] = b;
        }
    }
    if (d->type == CU_GRAPH_NODE_TYPE_KERNEL) {
        CUresult r = copy_params(n);
        if (r != CUDA_SUCCESS) {
            node_free(n);
            return r;
        }
    }
    for (size_t i = 0; i < ndeps; i++)
        deps[i]->dependents++;
    g->nodes[g->n++] = n;
    *out = n;
    return CUDA_SUCCESS;
}

/* True when g is a live graph (under sim_lock). */
static bool graph_valid(CUgraph g)
{
    return live_has(g) && g->magic == SIM_MAGIC_GRAPH;
}

bool sim_graph_takes_memory_nodes(CUgraph g)
{
    return graph_valid(g) && !g->embedded;
}

bool sim_graph_valid(CUgraph g)
{
    return graph_valid(g);
}

/* True when n is a live node (under sim_lock). */
static bool node_valid(CUgraphNode n)
{
    return live_has(n) && n->magic == SIM_MAGIC_NODE;
}

/* A copy of g with the same nodes and edges (under sim_lock); NULL when out
 * of memory. */
static CUgraph graph_clone(CUgraph g)
{
    CUgraph c = sim_graph_new();
    if (!c)
        return NULL;
    for (size_t i = 0; i < g->n; i++) {
        CUgraphNode src = g->nodes[i], n;
        CUgraphNode *deps = src->ndeps ? malloc(src->ndeps * sizeof *deps) : NULL;
        size_t nd = 0;
        if (src->ndeps && !deps) {
            sim_graph_free(c);
            return NULL;
        }
        for (size_t k = 0; k < src->ndeps; k++)
            for (size_t j = 0; j < i; j++)
                if (g->nodes[j] == src->deps[k]) {
                    deps[nd++] = c->nodes[j];
                    break;
                }
        CUresult r = sim_graph_add(c, deps, nd, &src->d, &n);
        free(deps);
        if (r != CUDA_SUCCESS) {
            sim_graph_free(c);
            return NULL;
        }
    }
    return c;
}

/* ---- building and reading graphs -------------------------------------- */

SIM_EXPORT CUresult cuGraphCreate(CUgraph *out, unsigned int flags)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    *out = sim_graph_new();
    pthread_mutex_unlock(&sim_lock);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Checks a kernel node's parameter block and fills *d: the kernel is
 * p->func or, with by_kernel (the v2 form with func NULL), the CUkernel
 * `kern`, run in context ctx (NULL: the current one). */
static CUresult kernel_desc(const CUDA_KERNEL_NODE_PARAMS_v1 *p, CUkernel kern, CUcontext ctx,
                            sim_node_desc *d)
{
    if (!p || (p->kernelParams && p->extra))
        return CUDA_ERROR_INVALID_VALUE;
    bool by_kernel = !p->func && kern;
    CUfunction f = by_kernel ? (CUfunction)(void *)kern : p->func;
    if (by_kernel) {
        pthread_mutex_lock(&sim_lock);
        bool ok = sim_handle_check(f, SIM_MAGIC_KERNEL) != NULL;
        pthread_mutex_unlock(&sim_lock);
        if (!ok)
            return CUDA_ERROR_INVALID_HANDLE;
        if (!ctx && sim_current_ctx(&ctx) != CUDA_SUCCESS)
            ctx = NULL;
    } else if (!sim_kernel_valid(f)) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (!sim_launch_dims_ok((unsigned[3]){p->gridDimX, p->gridDimY, p->gridDimZ},
                            (unsigned[3]){p->blockDimX, p->blockDimY, p->blockDimZ}))
        return CUDA_ERROR_INVALID_VALUE;   /* as a launch of these dimensions */
    if (p->extra)
        return CUDA_ERROR_NOT_SUPPORTED;   /* not modeled: see docs/SIMULATOR.md */
    *d = (sim_node_desc){.type = CU_GRAPH_NODE_TYPE_KERNEL, .func = f, .by_kernel = by_kernel,
                         .ctx = by_kernel ? ctx : NULL,
                         .grid = {p->gridDimX, p->gridDimY, p->gridDimZ},
                         .block = {p->blockDimX, p->blockDimY, p->blockDimZ},
                         .shmem = p->sharedMemBytes, .params = p->kernelParams};
    return CUDA_SUCCESS;
}

/* Shared body of both cuGraphAddKernelNode ABIs (kernel_desc's arguments). */
static CUresult add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd,
                           const CUDA_KERNEL_NODE_PARAMS_v1 *p, CUkernel kern, CUcontext ctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || (nd && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    sim_node_desc d;
    if ((r = kernel_desc(p, kern, ctx, &d)) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    r = graph_valid(g) ? sim_graph_add(g, deps, nd, &d, out) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                         size_t nd, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    return add_kernel(out, g, deps, nd, p, NULL, NULL);
}

/* The v2 form may name a CUkernel (kern, with func NULL) and its context. */
SIM_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                            size_t nd, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    return add_kernel(out, g, deps, nd, (const CUDA_KERNEL_NODE_PARAMS_v1 *)p, p ? p->kern : NULL,
                      p ? p->ctx : NULL);
}

/* Shared body of both cuGraphKernelNodeGetParams ABIs: kernelParams points
 * at the node's own copy of the values, valid while the node lives. */
static CUresult kernel_params(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v1 *p, bool *by_kernel,
                              CUcontext *ctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    if (!node_valid(n) || n->d.type != CU_GRAPH_NODE_TYPE_KERNEL) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        *p = (CUDA_KERNEL_NODE_PARAMS_v1){
            .func = n->d.func, .gridDimX = n->d.grid[0], .gridDimY = n->d.grid[1],
            .gridDimZ = n->d.grid[2], .blockDimX = n->d.block[0], .blockDimY = n->d.block[1],
            .blockDimZ = n->d.block[2], .sharedMemBytes = n->d.shmem,
            .kernelParams = n->d.params, .extra = NULL};
        *by_kernel = n->d.by_kernel;
        *ctx = n->d.ctx;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* The v1 form has no kern field: a node that names a CUkernel reports it
 * cast to CUfunction in func (the launch entry points accept that). */
SIM_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    bool by_kernel;
    CUcontext ctx;
    return kernel_params(n, p, &by_kernel, &ctx);
}

/* The v2 form reports a node made from a CUkernel (added with kern, or
 * captured from a launch of a CUkernel handle) with func NULL and the
 * kernel in kern, as the field's documentation reads ("referenced if func
 * is NULL"); other nodes with func set and kern, ctx NULL. */
SIM_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    bool by_kernel = false;
    CUcontext ctx = NULL;
    CUresult r = kernel_params(n, (CUDA_KERNEL_NODE_PARAMS_v1 *)p, &by_kernel, &ctx);
    if (r == CUDA_SUCCESS) {
        p->kern = by_kernel ? (CUkernel)(void *)p->func : NULL;
        p->ctx = by_kernel ? ctx : NULL;
        if (by_kernel)
            p->func = NULL;
    }
    return r;
}

SIM_EXPORT CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *count)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    if (!graph_valid(g)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (!nodes) {
        *count = g->n;
    } else {
        size_t k = *count < g->n ? *count : g->n;
        memcpy(nodes, g->nodes, k * sizeof *nodes);
        for (size_t i = k; i < *count; i++)
            nodes[i] = NULL;
        *count = k;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuGraphNodeGetType(CUgraphNode n, CUgraphNodeType *type)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!type)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    if (node_valid(n))
        *type = n->d.type;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* A child graph node runs a clone of `child`, made here; a child with
 * allocation, free or conditional nodes is refused, as CUDA documents. */
SIM_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                             size_t nd, CUgraph child)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || (nd && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    if (!graph_valid(g) || !graph_valid(child) || child == g) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        for (size_t i = 0; i < child->n && r == CUDA_SUCCESS; i++)
            if (child->nodes[i]->d.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
                child->nodes[i]->d.type == CU_GRAPH_NODE_TYPE_MEM_FREE ||
                child->nodes[i]->d.type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
                r = CUDA_ERROR_INVALID_VALUE;
        if (r == CUDA_SUCCESS) {
            sim_node_desc d = {.type = CU_GRAPH_NODE_TYPE_GRAPH, .child = child};
            r = sim_graph_add(g, deps, nd, &d, out);
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* A conditional node (CUgraphNodeParams.conditional): its handle, type
 * and body count checked as CUDA documents them; the bodies are made
 * empty, owned by the node, and handed out in p->phGraph_out (valid while
 * the node lives). */
static CUresult add_conditional(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd,
                                CUDA_CONDITIONAL_NODE_PARAMS *p)
{
    bool sized = (p->type == CU_GRAPH_COND_TYPE_IF && (p->size == 1 || p->size == 2)) ||
                 (p->type == CU_GRAPH_COND_TYPE_WHILE && p->size == 1) ||
                 (p->type == CU_GRAPH_COND_TYPE_SWITCH && p->size >= 1);
    bool ctx_ok = !p->ctx || sim_ctx_valid(p->ctx);   /* takes sim_lock itself */
    pthread_mutex_lock(&sim_lock);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    /* A child graph node's graph holds no conditional node (CUDA refuses
     * such a graph as a child); a body may. */
    if (sized && ctx_ok && graph_valid(g) && (!g->embedded || g->body) && sim_cond_valid(p->handle)) {
        sim_node_desc d = {.type = CU_GRAPH_NODE_TYPE_CONDITIONAL, .nbodies = p->size,
                           .cond_type = p->type, .cond = p->handle};
        r = sim_graph_add(g, deps, nd, &d, out);
        if (r == CUDA_SUCCESS)
            p->phGraph_out = (*out)->d.bodies;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* Shared body of both cuGraphAddNode ABIs: kernel, child graph, empty and
 * conditional nodes (the other types: CUDA_ERROR_NOT_SUPPORTED, not
 * modeled). Edge data other than the default is not modeled either. */
static CUresult add_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                         size_t nd, CUgraphNodeParams *p)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || !p || (nd && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; edges && i < nd; i++)
        if (edges[i].from_port || edges[i].to_port || edges[i].type)
            return CUDA_ERROR_NOT_SUPPORTED;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        return add_kernel(out, g, deps, nd, (const CUDA_KERNEL_NODE_PARAMS_v1 *)&p->kernel, p->kernel.kern,
                          p->kernel.ctx);
    case CU_GRAPH_NODE_TYPE_GRAPH:
        return cuGraphAddChildGraphNode(out, g, deps, nd, p->graph.graph);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
        return add_conditional(out, g, deps, nd, &p->conditional);
    case CU_GRAPH_NODE_TYPE_EMPTY: {
        sim_node_desc d = {.type = CU_GRAPH_NODE_TYPE_EMPTY};
        pthread_mutex_lock(&sim_lock);
        r = graph_valid(g) ? sim_graph_add(g, deps, nd, &d, out) : CUDA_ERROR_INVALID_VALUE;
        pthread_mutex_unlock(&sim_lock);
        return r;
    }
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

SIM_EXPORT CUresult cuGraphAddNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd,
                                   CUgraphNodeParams *p)
{
    return add_node(out, g, deps, NULL, nd, p);
}

SIM_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                      const CUgraphEdgeData *edges, size_t nd, CUgraphNodeParams *p)
{
    return add_node(out, g, deps, edges, nd, p);
}

/* The graph a child graph node embeds (owned by the node). */
SIM_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode n, CUgraph *out)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    if (!node_valid(n) || n->d.type != CU_GRAPH_NODE_TYPE_GRAPH)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        *out = n->d.child;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuGraphDestroy(CUgraph g)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    if (graph_valid(g) && !g->embedded)
        sim_graph_free(g);
    else
        r = CUDA_ERROR_INVALID_VALUE;   /* an embedded graph belongs to its node */
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* ---- executable graphs ------------------------------------------------- */

/* Nodes of g at every depth: its own, and those of its child graphs and
 * conditional bodies (under sim_lock). */
static size_t flat_count(CUgraph g)
{
    size_t n = g->n;
    for (size_t i = 0; i < g->n; i++) {
        const sim_node_desc *d = &g->nodes[i]->d;
        if (d->type == CU_GRAPH_NODE_TYPE_GRAPH)
            n += flat_count(d->child);
        for (unsigned b = 0; d->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && b < d->nbodies; b++)
            n += flat_count(d->bodies[b]);
    }
    return n;
}

/* Writes g's nodes at every depth to out from *k on: each node, then the
 * nodes of its child graph or bodies (a node's nested nodes follow it
 * together; a graph and its clone list theirs in the same order). */
static void flat_fill(CUgraph g, CUgraphNode *out, size_t *k)
{
    for (size_t i = 0; i < g->n; i++) {
        const sim_node_desc *d = &g->nodes[i]->d;
        out[(*k)++] = g->nodes[i];
        if (d->type == CU_GRAPH_NODE_TYPE_GRAPH)
            flat_fill(d->child, out, k);
        for (unsigned b = 0; d->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && b < d->nbodies; b++)
            flat_fill(d->bodies[b], out, k);
    }
}

/* Slots of an executable graph's origin index for n nodes: a power of
 * two, at least 2 n. */
static size_t origin_slots(size_t n)
{
    size_t c = 2;
    while (c < 2 * n)
        c *= 2;
    return c;
}

/* The first slot of handle n's probe in e's origin index (the handle is
 * hashed, never dereferenced). A handle may name several nodes (one graph
 * given to two child graph nodes): they follow one another along it. */
static size_t origin_home(CUgraphExec e, CUgraphNode n)
{
    return (size_t)(((uintptr_t)n >> 4) * 0x9e3779b97f4a7c15ull >> 20) & (e->ocap - 1);
}

/* Walks handle n's probe from slot *i: the next index of n among e's
 * origin, *i moved past it; SIZE_MAX at the probe's end. */
static size_t origin_next(CUgraphExec e, CUgraphNode n, size_t *i)
{
    for (; e->oindex[*i]; *i = (*i + 1) & (e->ocap - 1)) {
        size_t k = e->oindex[*i] - 1;
        if (e->origin[k] == n) {
            *i = (*i + 1) & (e->ocap - 1);
            return k;
        }
    }
    return SIZE_MAX;
}

/* Indexes e's origin handles anew, each at the first empty slot of its
 * probe (under sim_lock). */
static void origin_index(CUgraphExec e)
{
    memset(e->oindex, 0, e->ocap * sizeof *e->oindex);
    for (size_t k = 0; k < e->norigin; k++) {
        size_t i = origin_home(e, e->origin[k]);
        while (e->oindex[i])
            i = (i + 1) & (e->ocap - 1);
        e->oindex[i] = k + 1;
    }
}

/* Shared body of every instantiation entry point. */
static CUresult instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphExec e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&sim_lock);
    if (!graph_valid(g))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!(e->copy = graph_clone(g)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if ((e->norigin = flat_count(g)) &&
             (!(e->origin = malloc(e->norigin * sizeof *e->origin)) ||
              !(e->copies = malloc(e->norigin * sizeof *e->copies)) ||
              !(e->oindex = calloc(e->ocap = origin_slots(e->norigin), sizeof *e->oindex))))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (!live_add(e))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && e->norigin) {
        size_t k = 0, j = 0;
        flat_fill(g, e->origin, &k);
        flat_fill(e->copy, e->copies, &j);
        origin_index(e);
    }
    if (r != CUDA_SUCCESS && e->copy)
        sim_graph_free(e->copy);
    pthread_mutex_unlock(&sim_lock);
    if (r != CUDA_SUCCESS) {
        free(e->origin);
        free(e->copies);
        free(e->oindex);
        free(e);
        return r;
    }
    e->magic = SIM_MAGIC_EXEC;
    e->flags = flags;
    *out = e;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g,
                                                unsigned long long flags)
{
    unsigned long long known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                               CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                               CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    if (flags & ~known)
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_INVALID_VALUE;
    return instantiate(out, g, flags);
}

/* CUDA 10/11 ABIs: an error node and a log buffer, no flags. */
SIM_EXPORT CUresult cuGraphInstantiate(CUgraphExec *out, CUgraph g, CUgraphNode *err_node,
                                       char *log, size_t log_size)
{
    if (err_node)
        *err_node = NULL;
    if (log && log_size)
        log[0] = 0;
    return instantiate(out, g, 0);
}

SIM_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *out, CUgraph g, CUgraphNode *err_node,
                                          char *log, size_t log_size)
{
    return cuGraphInstantiate(out, g, err_node, log, log_size);
}

/* Shared body of cuGraphInstantiateWithParams: an upload stream is honoured
 * by the (empty) upload; the result goes to the parameter block. */
static CUresult instantiate_params(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    if (!p)
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuGraphInstantiateWithFlags(out, g, p->flags & ~(cuuint64_t)
                                             CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
    p->hErrNode_out = NULL;
    p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                                      : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}

SIM_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *out, CUgraph g,
                                                 CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_params(out, g, p);
}

SIM_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *out, CUgraph g,
                                                      CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_params(out, g, p);
}

/* True when e is a live executable graph (takes sim_lock). */
static bool exec_valid(CUgraphExec e)
{
    pthread_mutex_lock(&sim_lock);
    bool ok = live_has(e) && e->magic == SIM_MAGIC_EXEC;
    pthread_mutex_unlock(&sim_lock);
    return ok;
}

SIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec e)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    if (!live_has(e) || e->magic != SIM_MAGIC_EXEC) {
        pthread_mutex_unlock(&sim_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    live_remove(e);
    sim_graph_free(e->copy);
    pthread_mutex_unlock(&sim_lock);
    e->magic = 0;
    free(e->origin);
    free(e->copies);
    free(e->oindex);
    free(e);
    return CUDA_SUCCESS;
}

/* ---- updates of executable graphs ------------------------------------ */

/* Gives node c (a kernel node of an executable graph's copy) the kernel,
 * dimensions and parameter values of d (under sim_lock); on failure c is
 * as it was. */
static CUresult node_set_kernel(CUgraphNode c, const sim_node_desc *d)
{
    sim_node_desc old = c->d;
    void *oldbuf = c->buf;
    void *oldptrs[SIMGPU_MAX_PARAMS];
    memcpy(oldptrs, c->ptrs, sizeof oldptrs);
    c->d = *d;
    CUresult r = copy_params(c);
    if (r != CUDA_SUCCESS) {
        c->d = old;
        c->buf = oldbuf;
        memcpy(c->ptrs, oldptrs, sizeof oldptrs);
        return r;
    }
    free(oldbuf);
    return CUDA_SUCCESS;
}

/* Shared body of the kernel node updates of an executable graph: `n` is
 * the node of the graph e was instantiated from (kernel_desc's other
 * arguments). Later launches run the new kernel and parameters; launches
 * made before are not affected (they ran at their launch). */
static CUresult exec_set_kernel(CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p,
                                CUkernel kern, CUcontext ctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    sim_node_desc d;
    if ((r = kernel_desc(p, kern, ctx, &d)) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    bool live = live_has(e) && e->magic == SIM_MAGIC_EXEC && n && e->ocap;
    size_t i = live ? origin_home(e, n) : 0, k;
    int named = 0;
    r = CUDA_SUCCESS;
    /* Every node the handle names (one graph given to two child graph
     * nodes names two), checked first, then set. */
    for (int pass = 0; live && pass < 2 && r == CUDA_SUCCESS; pass++) {
        i = origin_home(e, n);
        while (r == CUDA_SUCCESS && (k = origin_next(e, n, &i)) != SIZE_MAX) {
            CUgraphNode c = e->copies[k];
            named++;
            if (pass == 1)
                r = node_set_kernel(c, &d);
            else if (c->d.type != CU_GRAPH_NODE_TYPE_KERNEL ||
                     (c->d.by_kernel && d.by_kernel && c->d.ctx && d.ctx && c->d.ctx != d.ctx))
                r = CUDA_ERROR_INVALID_VALUE;   /* not a kernel node; the owning context cannot change */
        }
    }
    if (r == CUDA_SUCCESS && !named)
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                   const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    return exec_set_kernel(e, n, p, NULL, NULL);
}

SIM_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
                                                      const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    return exec_set_kernel(e, n, (const CUDA_KERNEL_NODE_PARAMS_v1 *)p, p ? p->kern : NULL,
                           p ? p->ctx : NULL);
}

static CUresult exec_set_child(CUgraphExec e, CUgraphNode n, CUgraph child);

/* The generic form: kernel and child graph nodes only (others: not
 * modeled). */
SIM_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode n, CUgraphNodeParams *p)
{
    if (!p)
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_INVALID_VALUE;
    if (p->type == CU_GRAPH_NODE_TYPE_GRAPH)
        return exec_set_child(e, n, p->graph.graph);
    if (p->type != CU_GRAPH_NODE_TYPE_KERNEL)
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_NOT_SUPPORTED;
    return exec_set_kernel(e, n, (const CUDA_KERNEL_NODE_PARAMS_v1 *)&p->kernel, p->kernel.kern,
                           p->kernel.ctx);
}

/* Index of node d of graph g, or g->n (under sim_lock). */
static size_t node_index(CUgraph g, CUgraphNode d)
{
    size_t j = 0;
    while (j < g->n && g->nodes[j] != d)
        j++;
    return j;
}

static int cmp_size(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return (a > b) - (a < b);
}

/* Whether node a of g and node b of c (as many dependencies) depend on the
 * nodes of the same places, in any order (edges are a set); else
 * TOPOLOGY_CHANGED with a dependency of a that b lacks in *err_from
 * (under sim_lock). */
static CUgraphExecUpdateResult deps_match(CUgraph g, CUgraphNode a, CUgraph c, CUgraphNode b,
                                          CUgraphNode *err_from)
{
    size_t n = a->ndeps;
    if (n == 0)
        return CU_GRAPH_EXEC_UPDATE_SUCCESS;
    size_t *ia = malloc(2 * n * sizeof *ia), *ib = ia + n;
    if (!ia)
        return CU_GRAPH_EXEC_UPDATE_ERROR;
    for (size_t k = 0; k < n; k++) {
        ia[k] = node_index(g, a->deps[k]);
        ib[k] = node_index(c, b->deps[k]);
    }
    qsort(ib, n, sizeof *ib, cmp_size);
    CUgraphExecUpdateResult r = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    for (size_t k = 0; k < n && r == CU_GRAPH_EXEC_UPDATE_SUCCESS; k++)
        if (!bsearch(&ia[k], ib, n, sizeof *ib, cmp_size)) {
            *err_from = a->deps[k];   /* the mismatched dependency */
            r = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        }
    free(ia);
    return r;
}

/* Why g cannot take the place of c, a graph of an executable graph
 * (CU_GRAPH_EXEC_UPDATE_SUCCESS when it can), with the node of g at fault
 * in *err and, for a dependency that does not match, that dependency in
 * *err_from (under sim_lock). Nodes pair by their order of creation; graph
 * memory nodes are not updated, nor child graph nodes unless `nested`
 * (then their graphs must match the same way). */
static CUgraphExecUpdateResult shape_check(CUgraph g, CUgraph c, bool nested, CUgraphNode *err,
                                           CUgraphNode *err_from)
{
    *err = *err_from = NULL;
    if (g->n != c->n)
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    for (size_t i = 0; i < g->n; i++) {
        CUgraphNode a = g->nodes[i], b = c->nodes[i];
        *err = a;
        if (a->d.type != b->d.type)
            return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        if (a->d.type == CU_GRAPH_NODE_TYPE_KERNEL && a->d.by_kernel && b->d.by_kernel && a->d.ctx &&
            b->d.ctx && a->d.ctx != b->d.ctx)
            return CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE;   /* context changed */
        if (a->ndeps != b->ndeps)
            return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        CUgraphExecUpdateResult dr = deps_match(g, a, c, b, err_from);
        if (dr != CU_GRAPH_EXEC_UPDATE_SUCCESS)
            return dr;
        bool holds = a->d.type == CU_GRAPH_NODE_TYPE_GRAPH || a->d.type == CU_GRAPH_NODE_TYPE_CONDITIONAL;
        if (a->d.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || a->d.type == CU_GRAPH_NODE_TYPE_MEM_FREE ||
            (holds && !nested))
            return CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
        if (a->d.type == CU_GRAPH_NODE_TYPE_CONDITIONAL &&
            (a->d.cond_type != b->d.cond_type || a->d.nbodies != b->d.nbodies))
            return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
        unsigned inner = a->d.type == CU_GRAPH_NODE_TYPE_GRAPH ? 1 : holds ? a->d.nbodies : 0;
        for (unsigned k = 0; k < inner; k++) {
            CUgraphNode in_err, in_from;
            CUgraphExecUpdateResult r =
                a->d.type == CU_GRAPH_NODE_TYPE_GRAPH
                    ? shape_check(a->d.child, b->d.child, true, &in_err, &in_from)
                    : shape_check(a->d.bodies[k], b->d.bodies[k], true, &in_err, &in_from);
            if (r != CU_GRAPH_EXEC_UPDATE_SUCCESS)
                return r;   /* *err names the node holding the graph */
        }
    }
    *err = NULL;
    return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

/* Shared body of both cuGraphExecUpdate ABIs: e's nodes take the
 * parameters of g's, paired by order of creation, when g has e's shape;
 * else CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE and e unchanged. Nodes are
 * named by the graph e was instantiated from afterwards as before. */
static CUresult exec_update(CUgraphExec e, CUgraph g, CUgraphNode *err, CUgraphNode *err_from,
                            CUgraphExecUpdateResult *result)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    *err = *err_from = NULL;
    *result = CU_GRAPH_EXEC_UPDATE_ERROR;
    pthread_mutex_lock(&sim_lock);
    if (!live_has(e) || e->magic != SIM_MAGIC_EXEC || !graph_valid(g)) {
        pthread_mutex_unlock(&sim_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *result = shape_check(g, e->copy, false, err, err_from);
    CUgraph copy = NULL;
    if (*result != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    } else if (!(copy = graph_clone(g))) {
        *result = CU_GRAPH_EXEC_UPDATE_ERROR;
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        sim_graph_free(e->copy);
        e->copy = copy;
        size_t k = 0;
        flat_fill(copy, e->copies, &k);   /* the same count: nested graphs are not updated */
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode *err_node,
                                      CUgraphExecUpdateResult *result)
{
    CUgraphNode err = NULL, from = NULL;
    CUgraphExecUpdateResult res = CU_GRAPH_EXEC_UPDATE_ERROR;
    if (!err_node || !result)
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_INVALID_VALUE;
    CUresult r = exec_update(e, g, &err, &from, &res);
    *err_node = err;
    *result = res;
    return r;
}

SIM_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    CUgraphNode err = NULL, from = NULL;
    CUgraphExecUpdateResult res = CU_GRAPH_EXEC_UPDATE_ERROR;
    if (!info)
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_INVALID_VALUE;
    CUresult r = exec_update(e, g, &err, &from, &res);
    *info = (CUgraphExecUpdateResultInfo){.result = res, .errorNode = err, .errorFromNode = from};
    return r;
}

/* Shared body of cuGraphExecChildGraphNodeSetParams and the generic form:
 * each child graph node of e that handle n names runs a clone of `child`
 * from now on, when child has the shape of the graph it runs now (nodes
 * paired by order of creation, child graph nodes inside matched the same
 * way); else CUDA_ERROR_INVALID_VALUE and e unchanged. */
static CUresult exec_set_child(CUgraphExec e, CUgraphNode n, CUgraph child)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    /* Every node the handle names (one graph given to two child graph
     * nodes names two), checked, then each given a clone of its own. */
    size_t nplaces = 0, i, k, *pos = NULL;
    CUgraph *copies = NULL;
    bool live = live_has(e) && e->magic == SIM_MAGIC_EXEC && n && e->ocap && graph_valid(child);
    for (i = live ? origin_home(e, n) : 0; live && origin_next(e, n, &i) != SIZE_MAX;)
        nplaces++;
    if (!nplaces) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (!(pos = malloc(nplaces * sizeof *pos)) || !(copies = calloc(nplaces, sizeof *copies))) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        size_t m = 0;
        for (i = origin_home(e, n); (k = origin_next(e, n, &i)) != SIZE_MAX;)
            pos[m++] = k;
        for (m = 0; m < nplaces && r == CUDA_SUCCESS; m++) {
            CUgraphNode c = e->copies[pos[m]], err, from;
            if (c->d.type != CU_GRAPH_NODE_TYPE_GRAPH ||
                shape_check(child, c->d.child, true, &err, &from) != CU_GRAPH_EXEC_UPDATE_SUCCESS)
                r = CUDA_ERROR_INVALID_VALUE;
            else if (!(copies[m] = graph_clone(child)))
                r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    for (size_t m = 0; r == CUDA_SUCCESS && m < nplaces; m++) {
        /* The nested nodes are named by the new graph's handles from now
         * on; the same shape lists as many, in the same places. */
        CUgraphNode c = e->copies[pos[m]];
        copies[m]->embedded = true;
        sim_graph_free(c->d.child);
        c->d.child = copies[m];
        copies[m] = NULL;
        size_t a = pos[m] + 1, b = a;
        flat_fill(child, e->origin, &a);
        flat_fill(c->d.child, e->copies, &b);
    }
    if (r == CUDA_SUCCESS)
        origin_index(e);
    for (size_t m = 0; copies && m < nplaces; m++)
        if (copies[m])
            sim_graph_free(copies[m]);   /* refused: the clones made go */
    free(copies);
    free(pos);
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec e, CUgraphNode n, CUgraph child)
{
    return exec_set_child(e, n, child);
}

static CUresult run_graph(CUgraph g, CUstream st);
static CUresult run_conditional(const sim_node_desc *d, CUstream st);

/* Runs one node on stream st (no lock held). */
static CUresult run_node(CUgraphNode n, CUstream st)
{
    const sim_node_desc *d = &n->d;
    switch (d->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        return sim_kernel_run(d->func, d->grid, d->block, st, d->params);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        return cuMemcpyAsync(d->dst, d->src, d->bytes, st);
    case CU_GRAPH_NODE_TYPE_MEMSET:
        return d->width == 1 ? cuMemsetD8Async(d->dst, (unsigned char)d->value, d->count, st)
             : d->width == 2 ? cuMemsetD16Async(d->dst, (unsigned short)d->value, d->count, st)
                             : cuMemsetD32Async(d->dst, d->value, d->count, st);
    case CU_GRAPH_NODE_TYPE_HOST:
        d->fn(d->user);
        return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return sim_graphmem_run(d);
    case CU_GRAPH_NODE_TYPE_GRAPH:
        return run_graph(d->child, st);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
        return run_conditional(d, st);
    default:
        return CUDA_SUCCESS;
    }
}

/* Runs g's nodes in order on st (no lock held). */
static CUresult run_graph(CUgraph g, CUstream st)
{
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < g->n && r == CUDA_SUCCESS; i++)
        r = run_node(g->nodes[i], st);
    return r;
}

#define WHILE_MAX (1u << 24)   /* a WHILE body run this often without clearing its value fails */

/* A conditional node: its handle's value picks the body run (IF: the
 * first when non-zero, the second, if any, when zero; SWITCH: the body of
 * that index, none past the last) or how often (WHILE: as long as it is
 * non-zero, read again after each run of the body). No lock held. */
static CUresult run_conditional(const sim_node_desc *d, CUstream st)
{
    unsigned v = sim_cond_value(d->cond);
    switch (d->cond_type) {
    case CU_GRAPH_COND_TYPE_IF:
        return v ? run_graph(d->bodies[0], st) : d->nbodies == 2 ? run_graph(d->bodies[1], st) : CUDA_SUCCESS;
    case CU_GRAPH_COND_TYPE_SWITCH:
        return v < d->nbodies ? run_graph(d->bodies[v], st) : CUDA_SUCCESS;
    case CU_GRAPH_COND_TYPE_WHILE:
        for (unsigned k = 0; sim_cond_value(d->cond); k++) {
            if (k == WHILE_MAX)
                return CUDA_ERROR_LAUNCH_TIMEOUT;   /* a GPU would hang */
            CUresult r = run_graph(d->bodies[0], st);
            if (r != CUDA_SUCCESS)
                return r;
        }
        return CUDA_SUCCESS;
    default:
        return CUDA_SUCCESS;
    }
}

/* Assigns the default of every conditional handle g uses (at any depth)
 * that was made so, as a launch begins. */
static void conditions_begin(CUgraph g)
{
    for (size_t i = 0; i < g->n; i++) {
        const sim_node_desc *d = &g->nodes[i]->d;
        if (d->type == CU_GRAPH_NODE_TYPE_GRAPH)
            conditions_begin(d->child);
        if (d->type != CU_GRAPH_NODE_TYPE_CONDITIONAL)
            continue;
        sim_cond_launch_begins(d->cond);
        for (unsigned b = 0; b < d->nbodies; b++)
            conditions_begin(d->bodies[b]);
    }
}

/* Shared body of cuGraphUpload and cuGraphLaunch (and their _ptsz twins).
 * Launching into a capturing stream (a child graph) is not modeled. */
static CUresult launch(CUgraphExec e, CUstream s, bool ptds, bool upload)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (!exec_valid(e))
        return CUDA_ERROR_INVALID_VALUE;
    bool record;
    r = sim_capture_gate(st, false, &record);
    if (r != CUDA_SUCCESS || upload)
        return r;
    conditions_begin(e->copy);
    return run_graph(e->copy, st);
}

SIM_EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s) { return launch(e, s, false, false); }
SIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) { return launch(e, s, true, false); }
SIM_EXPORT CUresult cuGraphUpload(CUgraphExec e, CUstream s) { return launch(e, s, false, true); }
SIM_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec e, CUstream s) { return launch(e, s, true, true); }
