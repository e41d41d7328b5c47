/*
 * graph.c — the CUDA graph hooks. Instantiation remembers the managed
 * chunks the graph's kernels use; a launch of the graph makes them resident
 * on the launch stream first (one residency decision for the whole graph)
 * and keeps them pinned until the graph's work on that stream is done.
 * Updates of an executable graph (a kernel node's parameters, a child
 * graph node's graph, or the whole graph's) replace the chunks of what
 * changed. A conditional node's bodies, handed out only when it is made,
 * are kept so that instantiation reads into them.
 * Graph memory (allocation nodes) lives in the driver's graph pool: what it
 * reserves is charged after each launch and after cuDeviceGraphMemTrim.
 */
#include "capture.h"
#include "graph.h"
#include "hooks.h"
#include "launch.h"
#include "residency.h"

#define INSTANTIATE_HOOK(sym, params, ...)                                        \
    LMS_EXPORT CUresult sym params                                                \
    {                                                                             \
        if (!LMS_ENTER(sym))                                      \
            return PASS(sym, __VA_ARGS__);                                        \
        CUresult r = REAL(sym)(__VA_ARGS__);                                      \
        if (r == CUDA_SUCCESS && out)                                             \
            lms_graph_instantiated(*out, g);                                      \
        lms_hook_leave();                                                         \
        return r;                                                                 \
    }

INSTANTIATE_HOOK(cuGraphInstantiateWithFlags,
                 (CUgraphExec *out, CUgraph g, unsigned long long flags), out, g, flags)
INSTANTIATE_HOOK(cuGraphInstantiate,
                 (CUgraphExec *out, CUgraph g, CUgraphNode *err, char *log, size_t size),
                 out, g, err, log, size)
INSTANTIATE_HOOK(cuGraphInstantiate_v2,
                 (CUgraphExec *out, CUgraph g, CUgraphNode *err, char *log, size_t size),
                 out, g, err, log, size)
INSTANTIATE_HOOK(cuGraphInstantiateWithParams,
                 (CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p), out, g, p)
INSTANTIATE_HOOK(cuGraphInstantiateWithParams_ptsz,
                 (CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p), out, g, p)

#define GRAPH_LAUNCH_HOOK(sym, ptds)                                               \
    LMS_EXPORT CUresult sym(CUgraphExec e, CUstream s)                             \
    {                                                                              \
        if (!LMS_ENTER(sym))                                       \
            return PASS(sym, e, s);                                                \
        uint32_t *ids = NULL;                                                      \
        int n = lms_residency_any() ? lms_graph_chunks(e, &ids) : 0;              \
        CUstream es = !s && (ptds) ? CU_STREAM_PER_THREAD : s;                     \
        if (n == 0) {                                                              \
            lms_capture_idle();                                                    \
            CUresult r0 = REAL(sym)(e, s);                                         \
            if (r0 == CUDA_SUCCESS && lms_graph_mem_any())                         \
                lms_graph_mem_sync(lms_driver_stream_device(es), false);           \
            lms_hook_leave();                                                      \
            return r0;                                                             \
        }                                                                          \
        lms_launch_token tok;                                                      \
        /* fn 0: a graph is no CUfunction the driver could be asked about */     \
        lms_residency_before(lms_driver_stream_device(es), es, 0, ids, n, &tok);  \
        CUresult r = REAL(sym)(e, s);                                              \
        lms_residency_after(&tok, es);                                             \
        if (r == CUDA_SUCCESS && tok.device >= 0)                                  \
            lms_graph_launched(tok.device, ids, n, es);                            \
        if (r == CUDA_SUCCESS && lms_graph_mem_any())                              \
            lms_graph_mem_sync(lms_driver_stream_device(es), false);               \
        free(ids);                                                                 \
        lms_hook_leave();                                                          \
        return r;                                                                  \
    }

GRAPH_LAUNCH_HOOK(cuGraphLaunch, false)
GRAPH_LAUNCH_HOOK(cuGraphLaunch_ptsz, true)

/* Forgotten before the driver frees it: once freed, another thread's
 * instantiation may get the same handle, whose entry a forget after the
 * call would drop. */
LMS_EXPORT CUresult cuGraphExecDestroy(CUgraphExec e)
{
    if (!LMS_ENTER(cuGraphExecDestroy))
        return PASS(cuGraphExecDestroy, e);
    lms_graph_forget(e);
    CUresult r = REAL(cuGraphExecDestroy)(e);
    lms_hook_leave();
    return r;
}

/* Updates of an executable graph: a kernel node's new parameters (each
 * ABI of the node's parameter block), a child graph node's new graph, or
 * every node's from a graph of the same shape. */
LMS_HOOK_THEN(cuGraphExecKernelNodeSetParams,
              (CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p), (e, n, p),
              lms_graph_node_set(e, n, p->func, p->kernelParams, p->extra))
LMS_HOOK_THEN(cuGraphExecKernelNodeSetParams_v2,
              (CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v2 *p), (e, n, p),
              lms_graph_node_set(e, n, p->func ? p->func : (CUfunction)(void *)p->kern,
                                 p->kernelParams, p->extra))
LMS_HOOK_THEN(cuGraphExecNodeSetParams, (CUgraphExec e, CUgraphNode n, CUgraphNodeParams *p), (e, n, p),
              if (p->type == CU_GRAPH_NODE_TYPE_KERNEL)
                  lms_graph_node_set(e, n, p->kernel.func ? p->kernel.func : (CUfunction)(void *)p->kernel.kern,
                                     p->kernel.kernelParams, p->kernel.extra);
              else if (p->type == CU_GRAPH_NODE_TYPE_GRAPH)
                  lms_graph_child_set(e, n, p->graph.graph))
/* A child graph node's graph replaced by one of the same shape (XLA's
 * nested command buffers update theirs so). */
LMS_HOOK_THEN(cuGraphExecChildGraphNodeSetParams, (CUgraphExec e, CUgraphNode n, CUgraph child), (e, n, child),
              lms_graph_child_set(e, n, child))
LMS_HOOK_THEN(cuGraphExecUpdate_v2, (CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info),
              (e, g, info), lms_graph_instantiated(e, g))
LMS_HOOK_THEN(cuGraphExecUpdate,
              (CUgraphExec e, CUgraph g, CUgraphNode *err, CUgraphExecUpdateResult *result),
              (e, g, err, result), lms_graph_instantiated(e, g))

/* A conditional node's bodies are handed out once, when it is made: kept,
 * so that instantiation reads into them (XLA's while and if commands are
 * conditional nodes whose bodies hold the loop's kernels). */
LMS_HOOK_THEN(cuGraphAddNode_v2,
              (CUgraphNode *out, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,
               CUgraphNodeParams *p),
              (out, g, deps, edges, n, p),
              if (out && p && p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
                  lms_graph_conditional_added(*out, p->conditional.phGraph_out, (int)p->conditional.size))
LMS_HOOK_THEN(cuGraphAddNode,
              (CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, CUgraphNodeParams *p),
              (out, g, deps, n, p),
              if (out && p && p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
                  lms_graph_conditional_added(*out, p->conditional.phGraph_out, (int)p->conditional.size))

/* The pool gives back what no graph allocation holds: its charge goes too. */
LMS_HOOK_THEN(cuDeviceGraphMemTrim, (CUdevice dev), (dev), lms_graph_mem_sync(dev, true))
