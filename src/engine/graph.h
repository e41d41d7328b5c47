/*
 * graph.h — CUDA graphs as the engine sees them (graph.c): which managed
 * chunks each executable graph's kernels use, read from its kernel nodes at
 * instantiation and after its updates, and the pins that keep them on the device while a launch
 * of the graph runs.
 */
#ifndef LMS_GRAPH_H
#define LMS_GRAPH_H

#include <stdint.h>

#include "driver.h"

/* A graph was instantiated as `exec`, or cuGraphExecUpdate made exec's
 * nodes those of `graph`: remember the chunks its kernel nodes pass as
 * parameters, read from graph (nothing when no managed chunk exists). */
void lms_graph_instantiated(CUgraphExec exec, CUgraph graph);
/* Kernel node `node` of exec now runs f with these parameters (an update
 * of one node): its chunks replace the node's in exec's set. */
void lms_graph_node_set(CUgraphExec exec, CUgraphNode node, CUfunction f, void **params, void **extra);
/* Child graph node `child_node` of exec now runs `graph` (an update of
 * the child graph, cuGraphExecChildGraphNodeSetParams): the chunks of the
 * kernel nodes read through that node are replaced by graph's. */
void lms_graph_child_set(CUgraphExec exec, CUgraphNode child_node, CUgraph graph);
/* Conditional node `node` was made with these n body graphs (what
 * cuGraphAddNode hands out): a graph holding it is read into its bodies. */
void lms_graph_conditional_added(CUgraphNode node, const CUgraph *bodies, int n);
/* A malloc'd copy of the bodies of conditional node `node` (*n of them),
 * or NULL when lmshim did not see it made (graph_conditional.c). */
CUgraph *lms_graph_conditional_bodies(CUgraphNode node, int *n);
/* The executable graph goes away. */
void lms_graph_forget(CUgraphExec exec);
/* The chunks of `exec`: returns how many and sets *ids to a malloc'd copy
 * of their sorted ids that the caller frees; 0 (and NULL) when unknown. */
int lms_graph_chunks(CUgraphExec exec, uint32_t **ids);

/* A launch of a graph using chunks ids[0..n) was issued on `stream` of
 * `device`: pin them until an event recorded after it has completed. */
void lms_graph_launched(int device, const uint32_t *ids, int n, CUstream stream);
/* Unpins the chunks of graph launches that have completed. */
void lms_graph_poll(void);
/* The context ctx ended (under the context lock held exclusively): the
 * graph launches whose events were made in it are held no more, and their
 * events (gone with it) are forgotten. */
void lms_graph_context_gone(CUcontext ctx);

/* Charges the device's graph memory pool to its account: reads what the
 * driver's pool reserves (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: the
 * memory behind graph allocation nodes, kept until cuDeviceGraphMemTrim)
 * and charges or returns the change since the last reading, evicting
 * managed chunks first for room. After graph launches, at cuMemGetInfo and
 * after a trim; unless `always`, only once a graph with allocation nodes
 * was instantiated. */
void lms_graph_mem_sync(int device, bool always);
/* Bytes charged on `device` for its graph memory pool at the last
 * reading (0 for a device out of range): room no managed chunk can have
 * (lms_account_room). */
uint64_t lms_graph_mem_charged(int device);
/* After a context's end: each device's pool charge is read again (the
 * driver may have emptied the pool with the context). No lmshim lock may
 * be held. */
void lms_graph_mem_context_gone(void);
/* True once a graph with allocation nodes (at any depth, or a child graph
 * not looked into) was instantiated. */
bool lms_graph_mem_any(void);

/* fork: the tables' lock is held across fork; the child gets a fresh one
 * (and fresh locks of the pool's readings and the conditional bodies). */
void lms_graph_pool_fork_child(void);
void lms_graph_conditional_fork_child(void);
void lms_graph_fork_prepare(void);
void lms_graph_fork_parent(void);
void lms_graph_fork_child(void);

#endif
