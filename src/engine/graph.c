/*
 * graph.c — the chunks of executable graphs and the pins of graph launches
 * (see graph.h and docs/ARCHITECTURE.md "Graphs").
 *
 * At instantiation the source graph's kernel nodes (and those of its child
 * graphs, cuGraphChildGraphNodeGetGraph) are read with cuGraphGetNodes and
 * cuGraphKernelNodeGetParams (the driver API has no
 * reader for an executable graph), and their parameters are scanned like a
 * launch's, with the layout of the node's CUfunction or CUkernel. Each
 * kernel node's chunks are kept apart, so an update of the executable
 * graph (a node's new parameters, or a whole graph's with
 * cuGraphExecUpdate) replaces what changed. A graph launch is then one
 * launch for the residency engine over the union of those chunks; after it
 * is issued the chunks stay pinned until an event recorded behind it has
 * completed, so no eviction is decided while the graph may still use them.
 * The graph memory pool's charge is graph_pool.c's; the bodies of
 * conditional nodes, kept as they are made, graph_conditional.c's.
 */
#include "graph.h"

#include <pthread.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "launch.h"
#include "log.h"
#include "place.h"
#include "residency.h"

#define EXECS_FIRST 1024    /* slots of the graph table at first; it doubles at three quarters full */
#define IN_FLIGHT 256       /* graph launches pinned at once */

typedef struct node_ids {
    CUgraphNode node;       /* the kernel node, as the program names it */
    uint32_t owner;         /* the id of the nest whose graph holds it; 0: the graph's own */
    int n;
    uint32_t *ids;          /* n sorted ids, malloc'd, owned by the entry (a nested
                               node is kept with none, so that it keeps its place) */
} node_ids;

/* A place in an executable graph where a child graph or conditional
 * node's graphs were read: one graph given to two child graph nodes
 * makes two places for each node inside it, named by the same handles. */
typedef struct nest {
    uint32_t id;            /* unique in its entry; the array is sorted by id */
    uint32_t parent;        /* the nest whose graph holds the node; 0: the graph's own */
    CUgraphNode node;       /* the child graph or conditional node */
    int left;               /* levels of nesting still read below it */
    bool mark;              /* scratch of entry_drop_place */
} nest;

typedef struct exec_entry {
    CUgraphExec exec;       /* NULL: free slot; TOMB: removed */
    int n;
    uint32_t *ids;          /* n sorted unique ids, the union of the nodes' (owned) */
    int nnodes, capnodes;
    node_ids *nodes;        /* kernel nodes with chunks, malloc'd, owned */
    int *index;             /* open addressing over nodes: position + 1, 0 empty
                               (capindex slots, a power of two >= 2 capnodes; owned) */
    int capindex;
    nest *nests;            /* nests read (nnests, capnests; malloc'd, owned), each
                               after the nest that holds it */
    int nnests;
    size_t capnests;
    uint32_t next_nest;     /* the id of the next nest (ids start at 1) */
    bool stale;             /* a node changed since ids was made */
} exec_entry;

typedef struct flight {
    CUevent ev;             /* recorded after the graph launch; NULL: free slot */
    CUcontext ctx;          /* the context ev was made in (NULL: unknown) */
    int device, n;
    uint32_t *ids;          /* n ids, malloc'd, owned by the flight */
} flight;

#define TOMB ((CUgraphExec)(uintptr_t)1)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static exec_entry *execs;            /* capexecs slots (open addressing), calloc'd, under lock */
static size_t capexecs;              /* a power of two, or 0 before the first graph */
static size_t used;                  /* slots not empty: entries and removed ones (under lock) */
static flight flights[IN_FLIGHT];    /* under lock */
static atomic_int nflights;
static atomic_flag polling = ATOMIC_FLAG_INIT;   /* a poll runs: others skip theirs */

static size_t tombs;   /* removed slots in execs (under lock) */

/* The first slot exec's probe looks at (the hash's top bits: capexecs
 * slots, capexecs > 0). */
static size_t exec_hash(CUgraphExec exec)
{
    uint64_t h = ((uintptr_t)exec >> 4) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> (64 - __builtin_ctzll(capexecs)));
}

/* Rebuilds the table with `cap` slots (a power of two), its removed
 * slots left out; false when out of memory (the table stays as it was).
 * Under lock. */
static bool rehash(size_t cap)
{
    exec_entry *old = execs;
    size_t oldcap = capexecs;
    exec_entry *t = calloc(cap, sizeof *t);
    if (!t)
        return false;
    execs = t;
    capexecs = cap;
    used = 0;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].exec || old[i].exec == TOMB)
            continue;
        size_t h = exec_hash(old[i].exec);
        while (execs[h & (cap - 1)].exec)
            h++;
        execs[h & (cap - 1)] = old[i];
        used++;
    }
    tombs = 0;
    free(old);
    return true;
}

/* Rehashes the table when removed slots fill a quarter of it: a lookup
 * of an absent handle stops at the first empty slot, and with none left
 * it scanned every slot (under lock). Out of memory, they stay. */
static void sweep_tombs(void)
{
    if (tombs * 4 >= capexecs)
        rehash(capexecs);
}

/* The slot of exec, NULL when absent (under lock). */
static exec_entry *slot_of(CUgraphExec exec)
{
    if (!capexecs)
        return NULL;
    size_t h = exec_hash(exec);
    for (size_t k = 0; k < capexecs; k++) {
        exec_entry *e = &execs[(h + k) & (capexecs - 1)];
        if (e->exec == exec)
            return e;
        if (!e->exec)
            return NULL;
    }
    return NULL;
}

/* The slot of exec, made when absent (an entry naming exec and holding
 * nothing): the table is made, or doubled, first when that would fill
 * more than three quarters of it. NULL when out of memory (under lock). */
static exec_entry *slot_made(CUgraphExec exec)
{
    exec_entry *e = slot_of(exec);
    if (e)
        return e;
    if ((used + 1) * 4 > capexecs * 3 && !rehash(capexecs ? capexecs * 2 : EXECS_FIRST) &&
        used + 1 >= capexecs)
        return NULL;   /* out of memory and no empty slot left to end the probes */
    size_t h = exec_hash(exec);
    for (size_t k = 0; k < capexecs; k++) {
        e = &execs[(h + k) & (capexecs - 1)];
        if (e->exec == TOMB || !e->exec) {
            if (e->exec == TOMB)
                tombs--;
            else
                used++;
            *e = (exec_entry){.exec = exec};
            return e;
        }
    }
    return NULL;
}

/* Removes e's entry (what it owned is the caller's to free); under lock. */
static void slot_remove(exec_entry *e)
{
    *e = (exec_entry){.exec = TOMB};
    tombs++;
    sweep_tombs();
}

/* A malloc'd copy of ids[0..n) (the caller owns it), or NULL when n is
 * 0 or out of memory. */
static uint32_t *ids_copy(const uint32_t *ids, int n)
{
    uint32_t *copy = n > 0 ? malloc((size_t)n * sizeof *copy) : NULL;
    if (copy)
        memcpy(copy, ids, (size_t)n * sizeof *copy);
    return copy;
}

/* Frees what entry e owns (not the entry). */
static void entry_free(exec_entry *e)
{
    for (int i = 0; i < e->nnodes; i++)
        free(e->nodes[i].ids);
    free(e->nodes);
    free(e->index);
    free(e->ids);
    free(e->nests);
}

/* Notes a nest of id `id` (above every id in e) for node, held by nest
 * `parent` (0: the graph's own), `left` levels still read below it; false
 * when out of memory. */
static bool entry_add_nest(exec_entry *e, uint32_t id, uint32_t parent, CUgraphNode node, int left)
{
    if (!lms_grow((void **)&e->nests, &e->capnests, (size_t)e->nnests + 1, sizeof *e->nests, 8))
        return false;
    e->nests[e->nnests++] = (nest){id, parent, node, left, false};
    if (id >= e->next_nest)
        e->next_nest = id + 1;
    return true;
}

/* The id a new nest of e takes (ids start at 1). */
static uint32_t fresh_nest(const exec_entry *e)
{
    return e->next_nest ? e->next_nest : 1;
}

/* The nest of id `id` in e, or NULL (a binary search: the array is sorted
 * by id). */
static nest *nest_of(exec_entry *e, uint32_t id)
{
    int lo = 0, hi = e->nnests - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (e->nests[mid].id == id)
            return &e->nests[mid];
        if (e->nests[mid].id < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* A node's owner for a lookup that takes a record of any place. */
#define ANY_OWNER UINT32_MAX

/* The first slot of node's probe in e's index (e->capindex > 0). One
 * handle may have several records, one per owner: a graph given to two
 * child graph nodes, or a handle freed with its graph and made again in
 * another (they follow one another along the probe). */
static unsigned index_home(const exec_entry *e, CUgraphNode node)
{
    return (unsigned)(((uintptr_t)node >> 4) * 0x9e3779b97f4a7c15ull >> 32) & ((unsigned)e->capindex - 1);
}

/* Walks node's probe from slot *i: the position in e->nodes of the next
 * record of node read through `owner` (ANY_OWNER: any), *i moved past
 * it; -1 at the probe's end, *i then at its empty slot. */
static int index_next(const exec_entry *e, CUgraphNode node, uint32_t owner, unsigned *i)
{
    unsigned mask = (unsigned)e->capindex - 1;
    for (; e->index[*i]; *i = (*i + 1) & mask) {
        int pos = e->index[*i] - 1;
        if (e->nodes[pos].node == node && (owner == ANY_OWNER || e->nodes[pos].owner == owner)) {
            *i = (*i + 1) & mask;
            return pos;
        }
    }
    return -1;
}

/* Indexes record `pos` of e at the first empty slot of its probe. */
static void index_put(exec_entry *e, int pos)
{
    unsigned i = index_home(e, e->nodes[pos].node);
    while (e->index[i])
        i = (i + 1) & ((unsigned)e->capindex - 1);
    e->index[i] = pos + 1;
}

/* Room in e for one more node (nodes and their index grown together);
 * false when out of memory. */
static bool entry_grow(exec_entry *e)
{
    if (e->nnodes < e->capnodes)
        return true;
    size_t ncap = (size_t)e->capnodes;
    if (ncap > INT_MAX / 4 ||
        !lms_grow((void **)&e->nodes, &ncap, (size_t)e->nnodes + 1, sizeof *e->nodes, 8))
        return false;
    int *ni = calloc(ncap * 2, sizeof *ni);
    if (!ni)
        return false;   /* nodes grown, capnodes not: tried again next time */
    free(e->index);
    e->index = ni;
    e->capindex = (int)ncap * 2;
    e->capnodes = (int)ncap;
    for (int k = 0; k < e->nnodes; k++)
        index_put(e, k);
    return true;
}

/* Sets the chunks of node `node` in the graph of nest `owner` (0: the
 * graph's own) to ids[0..n) (malloc'd, taken over by e; n 0: ids NULL),
 * adding the record when new (a nested node's even with no chunk: its
 * place is known for a later update). With owner ANY_OWNER (an update
 * naming the node by its handle alone) every record of the handle takes
 * them, or a new one of the graph's own. False when out of memory (ids
 * freed; a record not set keeps its chunks). One walk of the handle's
 * probe: updating every node of a large graph costs linear time in all. */
static bool entry_set_node(exec_entry *e, CUgraphNode node, uint32_t *ids, int n, uint32_t owner)
{
    unsigned i = e->capindex ? index_home(e, node) : 0;
    int pos, set = 0;
    bool ok = true;
    while (e->capindex && (pos = index_next(e, node, owner, &i)) >= 0) {
        uint32_t *mine = set ? ids_copy(ids, n) : ids;   /* a second record of the handle: a copy */
        if (set && n && !mine) {
            ok = false;
            continue;
        }
        free(e->nodes[pos].ids);
        e->nodes[pos].n = n;
        e->nodes[pos].ids = mine;
        e->stale = true;
        set++;
        if (owner != ANY_OWNER)
            break;   /* one record per (handle, owner) */
    }
    if (set)
        return ok;
    if (n == 0 && (owner == 0 || owner == ANY_OWNER))
        return true;
    if (!entry_grow(e)) {
        free(ids);
        return false;
    }
    e->nodes[e->nnodes] = (node_ids){node, owner == ANY_OWNER ? 0 : owner, n, ids};
    index_put(e, e->nnodes++);
    e->stale = true;
    return true;
}

/* Drops from e what the graphs of nest `place` hold at any depth: the
 * kernel nodes (their ids freed) and the nests below it (its own stays),
 * and indexes the rest again. A nest comes after the nest holding it, so
 * one pass in order marks every nest below; linear in e's nodes and nests
 * (times the log of its nests). */
static void entry_drop_place(exec_entry *e, nest *place)
{
    uint32_t keep = place->id;
    place->mark = true;
    for (int i = 0; i < e->nnests; i++) {
        nest *parent = e->nests[i].parent ? nest_of(e, e->nests[i].parent) : NULL;
        if (parent && parent->mark)
            e->nests[i].mark = true;
    }
    int k = 0;
    for (int i = 0; i < e->nnodes; i++) {
        nest *owner = e->nodes[i].owner ? nest_of(e, e->nodes[i].owner) : NULL;
        if (owner && owner->mark)
            free(e->nodes[i].ids);
        else
            e->nodes[k++] = e->nodes[i];
    }
    bool dropped = k != e->nnodes;
    e->nnodes = k;
    k = 0;
    for (int i = 0; i < e->nnests; i++)
        if (!e->nests[i].mark || e->nests[i].id == keep) {
            e->nests[k] = e->nests[i];
            e->nests[k++].mark = false;
        }
    e->nnests = k;
    if (dropped) {
        memset(e->index, 0, (size_t)e->capindex * sizeof *e->index);
        for (int i = 0; i < e->nnodes; i++)
            index_put(e, i);
        e->stale = true;
    }
}

/* Merges what was read of a graph into `found` (its nests numbered from
 * 1, its own nodes owned by 0) into e below nest `place`: found's nests
 * take ids above e's, its own nodes become the place's. The ids are moved
 * out of found (`last`) or copied (another place named by the same
 * handle). Out of memory part way: what was merged stays, the rest is
 * read over the link. */
static void entry_merge(exec_entry *e, uint32_t place, exec_entry *found, bool last)
{
    uint32_t base = fresh_nest(e) - 1;
    for (int i = 0; i < found->nnests; i++) {
        const nest *x = &found->nests[i];
        if (!entry_add_nest(e, base + x->id, x->parent ? base + x->parent : place, x->node, x->left))
            return;
    }
    for (int i = 0; i < found->nnodes; i++) {
        node_ids *x = &found->nodes[i];
        uint32_t *ids = last ? x->ids : ids_copy(x->ids, x->n);
        if (!last && x->n && !ids)
            return;
        entry_set_node(e, x->node, ids, x->n, x->owner ? base + x->owner : place);
        if (last)
            x->ids = NULL;   /* taken over, or freed on failure */
    }
}

static int cmp_id(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Makes e's union of its nodes' ids again when stale; false when out of
 * memory (the union then stays as it was, stale). */
static bool entry_union(exec_entry *e)
{
    if (!e->stale)
        return true;
    size_t total = 0;
    for (int i = 0; i < e->nnodes; i++)
        total += (size_t)e->nodes[i].n;
    uint32_t *u = NULL;
    int n = 0;
    if (total) {
        if (total > INT32_MAX || !(u = malloc(total * sizeof *u)))
            return false;
        size_t k = 0;
        for (int i = 0; i < e->nnodes; i++)
            if (e->nodes[i].n) {   /* a node whose update left it no chunk has no ids */
                memcpy(&u[k], e->nodes[i].ids, (size_t)e->nodes[i].n * sizeof *u);
                k += (size_t)e->nodes[i].n;
            }
        qsort(u, total, sizeof *u, cmp_id);
        for (size_t i = 0; i < total; i++)
            if (n == 0 || u[n - 1] != u[i])
                u[n++] = u[i];
    }
    free(e->ids);
    e->ids = u;
    e->n = n;
    e->stale = false;
    return true;
}

/* A malloc'd copy of the chunk ids f's parameters point into (*n of them;
 * NULL when none, or out of memory: then *n is 0 and *oom true). */
static uint32_t *node_chunks(CUfunction f, void **params, void **extra, int *n, bool *oom)
{
    const uint32_t *ids;
    *n = f ? lms_launch_chunks(f, params, extra, &ids) : 0;
    if (*n <= 0) {
        *n = 0;
        return NULL;
    }
    uint32_t *copy = ids_copy(ids, *n);
    if (!copy) {
        *n = 0;
        *oom = true;
    }
    return copy;
}

/* Set once a graph that may allocate graph memory was instantiated (an
 * allocation node, at any depth, or a child graph not looked into): until then
 * graph launches and cuMemGetInfo skip the pool's reading. */
static atomic_bool mem_nodes_seen;

#define CHILD_DEPTH 8   /* child graphs looked into, nested at most this deep */

/* Whether reading a graph can teach anything: its kernels' chunks (*scan:
 * some managed chunk exists), or whether it allocates graph memory (until
 * one that may was seen). */
static bool worth_reading(bool *scan)
{
    *scan = lms_residency_any() && lms_drv.cuGraphKernelNodeGetParams;
    return *scan || !atomic_load_explicit(&mem_nodes_seen, memory_order_relaxed);
}

/* Reads graph's kernel nodes into *found (their chunks, when `scan`),
 * and those of its child graphs and conditional bodies to `depth` levels
 * (each such node noted as a nest, when `scan`), and notes allocation
 * nodes (and a child graph not looked into); graph's own nodes are owned
 * by nest `owner` (0 at the top). False when the nodes could not be read
 * (out of memory). */
static bool read_graph(CUgraph graph, bool scan, exec_entry *found, int depth, uint32_t owner)
{
    size_t count = 0;
    if (lms_drv.cuGraphGetNodes(graph, NULL, &count) != CUDA_SUCCESS || count == 0)
        return true;
    CUgraphNode *nodes = malloc(count * sizeof *nodes);
    if (!nodes)
        return false;
    bool ok = true;
    if (lms_drv.cuGraphGetNodes(graph, nodes, &count) == CUDA_SUCCESS) {
        for (size_t i = 0; i < count && ok; i++) {
            CUgraphNodeType t;
            CUDA_KERNEL_NODE_PARAMS_v2 p;
            CUgraph child;
            if (lms_drv.cuGraphNodeGetType(nodes[i], &t) != CUDA_SUCCESS)
                continue;
            if (t == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
                atomic_store(&mem_nodes_seen, true);
            if (t == CU_GRAPH_NODE_TYPE_GRAPH) {
                if (depth > 0 && lms_drv.cuGraphChildGraphNodeGetGraph &&
                    lms_drv.cuGraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS) {
                    uint32_t id = scan ? fresh_nest(found) : 0;
                    ok = (!scan || entry_add_nest(found, id, owner, nodes[i], depth - 1)) &&
                         read_graph(child, scan, found, depth - 1, id);
                } else
                    atomic_store(&mem_nodes_seen, true);   /* not looked into: it may allocate */
                continue;
            }
            if (t == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
                /* Its bodies, as made (they hold no allocation nodes);
                 * every body's chunks join, whichever the launch runs. */
                int nb = 0;
                CUgraph *bodies = depth > 0 && scan ? lms_graph_conditional_bodies(nodes[i], &nb) : NULL;
                uint32_t id = fresh_nest(found);
                if (nb)
                    ok = entry_add_nest(found, id, owner, nodes[i], depth - 1);
                for (int b = 0; b < nb && ok; b++)
                    ok = read_graph(bodies[b], scan, found, depth - 1, id);
                free(bodies);
                continue;
            }
            if (!scan || t != CU_GRAPH_NODE_TYPE_KERNEL ||
                lms_drv.cuGraphKernelNodeGetParams(nodes[i], &p) != CUDA_SUCCESS)
                continue;
            /* The kernel is func, or kern when func is NULL (a node made from
             * a CUkernel); the layout cache takes either kind of handle. */
            CUfunction f = p.func ? p.func : (CUfunction)(void *)p.kern;
            int n;
            bool oom = false;
            uint32_t *ids = node_chunks(f, p.kernelParams, p.extra, &n, &oom);
            ok = !oom && entry_set_node(found, nodes[i], ids, n, owner);
        }
    }
    free(nodes);
    return ok;
}

/* Puts `found` (its union made) in exec's slot, replacing what was there;
 * an empty one only removes. Takes over what found owns. */
static void store(CUgraphExec exec, exec_entry *found)
{
    /* Kept with chunks, or with nests (their nodes' places, for updates
     * that may bring chunks later). */
    bool keep = entry_union(found) && (found->n > 0 || found->nnests > 0);
    exec_entry old = {0};
    bool full = false;
    pthread_mutex_lock(&lock);
    exec_entry *e = keep ? slot_made(exec) : slot_of(exec);
    if (e)
        old = *e;   /* instantiated again under the same handle, or updated (a new one holds nothing) */
    if (e && keep) {
        *e = *found;
        e->exec = exec;
    } else if (e) {
        slot_remove(e);
    }
    full = keep && !e;
    pthread_mutex_unlock(&lock);
    entry_free(&old);
    if (!keep || full)
        entry_free(found);
    if (full)
        lms_log(LMS_LEVEL_INFO, "graph table: out of memory: a graph's chunks are read over the link");
}

void lms_graph_instantiated(CUgraphExec exec, CUgraph graph)
{
    if (!exec || !lms_drv.cuGraphGetNodes || !lms_drv.cuGraphNodeGetType)
        return;
    bool scan;
    if (!worth_reading(&scan))
        return;
    exec_entry found = {.exec = exec};
    if (!read_graph(graph, scan, &found, CHILD_DEPTH, 0))
        atomic_store(&mem_nodes_seen, true);   /* not all read: it may allocate */
    /* Out of memory part way: what was read is kept, the rest is read
     * over the link. */
    store(exec, &found);
}

void lms_graph_node_set(CUgraphExec exec, CUgraphNode node, CUfunction f, void **params, void **extra)
{
    if (!exec || !node || !lms_residency_any())
        return;
    int n;
    bool oom = false;
    uint32_t *ids = node_chunks(f, params, extra, &n, &oom);
    pthread_mutex_lock(&lock);
    exec_entry *e = slot_of(exec);
    if (!e && n > 0)
        e = slot_made(exec);   /* none of its nodes had chunks before */
    if (e && oom) {
        /* Its new chunks unknown: the old ones stay, fetched for nothing
         * at worst, and the new ones are read over the link. */
    } else if (e) {
        entry_set_node(e, node, ids, n, ANY_OWNER);
        ids = NULL;
    }
    pthread_mutex_unlock(&lock);
    free(ids);
}

void lms_graph_child_set(CUgraphExec exec, CUgraphNode child_node, CUgraph graph)
{
    if (!exec || !child_node || !graph || !lms_drv.cuGraphGetNodes || !lms_drv.cuGraphNodeGetType)
        return;
    bool scan;
    if (!worth_reading(&scan))
        return;
    /* As deep as at instantiation: the levels left below the node's places.
     * In a graph read into before where the node has no place, it lies
     * deeper than the read went: not followed (read over the link). In one
     * never read into, it is taken as a node of the graph's own. */
    int left = -1;
    pthread_mutex_lock(&lock);
    exec_entry *e = slot_of(exec);
    for (int i = 0; e && i < e->nnests; i++)
        if (e->nests[i].node == child_node && e->nests[i].left > left)
            left = e->nests[i].left;
    if (left < 0 && !(e && e->nnests))
        left = CHILD_DEPTH - 1;
    pthread_mutex_unlock(&lock);
    if (left < 0)
        return;
    exec_entry found = {0};
    if (!read_graph(graph, scan, &found, left, 0))
        atomic_store(&mem_nodes_seen, true);   /* not all read: it may allocate */
    pthread_mutex_lock(&lock);
    e = slot_of(exec);
    if (!e && (found.nnodes > 0 || found.nnests > 0))
        e = slot_made(exec);   /* none of its nodes had chunks before */
    /* Every place the handle names (one graph given to two child graph
     * nodes names two), ids taken first: the merges add nests. */
    int nplaces = 0;
    for (int i = 0; e && i < e->nnests; i++)
        nplaces += e->nests[i].node == child_node;
    uint32_t *places = e ? malloc(((size_t)nplaces + 1) * sizeof *places) : NULL;
    if (places && nplaces) {
        int k = 0;
        for (int i = 0; i < e->nnests; i++)
            if (e->nests[i].node == child_node)
                places[k++] = e->nests[i].id;
    } else if (places) {
        uint32_t id = fresh_nest(e);   /* a node of the graph's own */
        nplaces = entry_add_nest(e, id, 0, child_node, CHILD_DEPTH - 1) ? 1 : 0;
        places[0] = id;
    }
    for (int k = 0; k < nplaces; k++) {
        nest *place = nest_of(e, places[k]);
        if (!place)
            continue;   /* below another place of the handle, dropped with it */
        entry_drop_place(e, place);
        entry_merge(e, places[k], &found, k == nplaces - 1);
    }
    pthread_mutex_unlock(&lock);
    free(places);
    entry_free(&found);
}

void lms_graph_forget(CUgraphExec exec)
{
    exec_entry old = {0};
    pthread_mutex_lock(&lock);
    exec_entry *e = slot_of(exec);
    if (e) {
        old = *e;
        slot_remove(e);
    }
    pthread_mutex_unlock(&lock);
    entry_free(&old);
}

int lms_graph_chunks(CUgraphExec exec, uint32_t **ids)
{
    int n = 0;
    *ids = NULL;
    pthread_mutex_lock(&lock);
    exec_entry *e = slot_of(exec);
    if (e)
        entry_union(e);   /* after a node's update; out of memory: the union before */
    if (e && (*ids = ids_copy(e->ids, e->n)) != NULL)
        n = e->n;
    pthread_mutex_unlock(&lock);
    return n;
}

void lms_graph_launched(int device, const uint32_t *ids, int n, CUstream stream)
{
    if (n <= 0 || device < 0 || !lms_drv.cuEventCreate || !lms_drv.cuEventRecord)
        return;
    CUevent ev;
    if (lms_drv.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return;
    if (lms_drv.cuEventRecord(ev, stream) != CUDA_SUCCESS) {
        lms_drv.cuEventDestroy(ev);
        return;
    }
    uint32_t *copy = ids_copy(ids, n);
    if (!copy) {   /* this launch's chunks are not held */
        lms_drv.cuEventDestroy(ev);
        return;
    }
    CUcontext ctx = NULL;
    if (!lms_drv.cuCtxGetCurrent || lms_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
        ctx = NULL;
    lms_residency_pin(device, ids, n, +1);   /* before a poll can see the event */
    pthread_mutex_lock(&lock);
    flight *f = NULL;
    for (int i = 0; i < IN_FLIGHT && !f; i++)
        if (!flights[i].ev)
            f = &flights[i];
    if (f) {
        f->ev = ev;
        f->ctx = ctx;
        f->device = device;
        f->n = n;
        f->ids = copy;
        atomic_fetch_add(&nflights, 1);
    }
    pthread_mutex_unlock(&lock);
    if (!f) {   /* too many in flight: this launch's chunks are not held */
        lms_residency_pin(device, ids, n, -1);
        lms_drv.cuEventDestroy(ev);
        free(copy);
    }
}

bool lms_graph_mem_any(void)
{
    return atomic_load_explicit(&mem_nodes_seen, memory_order_relaxed);
}

void lms_graph_fork_prepare(void) { pthread_mutex_lock(&lock); }
void lms_graph_fork_parent(void) { pthread_mutex_unlock(&lock); }
void lms_graph_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    lms_graph_pool_fork_child();
    lms_graph_conditional_fork_child();
    atomic_flag_clear(&polling);   /* a poll of another thread does not go on in the child */
}

static void graph_poll(void);

void lms_graph_poll(void)
{
    if (atomic_load_explicit(&nflights, memory_order_relaxed) == 0 || !lms_drv.cuEventQuery)
        return;
    /* One poll at a time: another one could destroy an event this one is
     * still querying. A poll is a chance, not a duty: a launch that finds
     * one running skips its own (the next launch polls). */
    if (atomic_flag_test_and_set_explicit(&polling, memory_order_acquire))
        return;
    /* Under the context lock, shared: a context's end cannot take an
     * event from under a query (lms_graph_context_gone). */
    lms_place_shared_begin();
    graph_poll();
    lms_place_shared_end();
    atomic_flag_clear_explicit(&polling, memory_order_release);
}

/* lms_graph_poll's work, by the one thread polling, under the context
 * lock. */
static void graph_poll(void)
{
    /* One pass under the lock takes the events, the queries run with no
     * lock held (the driver has its own), one more pass takes the flights
     * that completed: two lock round trips per poll, whatever is in flight. */
    int idx[IN_FLIGHT], k = 0;
    CUevent evs[IN_FLIGHT];
    pthread_mutex_lock(&lock);
    for (int i = 0; i < IN_FLIGHT; i++)
        if (flights[i].ev) {
            idx[k] = i;
            evs[k++] = flights[i].ev;
        }
    pthread_mutex_unlock(&lock);
    int ndone = 0;
    for (int j = 0; j < k; j++)
        if (lms_drv.cuEventQuery(evs[j]) != CUDA_ERROR_NOT_READY)
            idx[ndone] = idx[j], evs[ndone++] = evs[j];
    if (ndone == 0)
        return;
    flight done[IN_FLIGHT];
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int j = 0; j < ndone; j++) {
        flight *f = &flights[idx[j]];
        if (f->ev == evs[j]) {   /* not taken by another poll meanwhile */
            done[n++] = *f;
            f->ev = NULL;
            atomic_fetch_sub(&nflights, 1);
        }
    }
    pthread_mutex_unlock(&lock);
    for (int j = 0; j < n; j++) {
        lms_residency_pin(done[j].device, done[j].ids, done[j].n, -1);
        lms_drv.cuEventDestroy(done[j].ev);
        free(done[j].ids);
    }
}

void lms_graph_context_gone(CUcontext ctx)
{
    if (atomic_load_explicit(&nflights, memory_order_relaxed) == 0)
        return;
    flight gone[IN_FLIGHT];
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < IN_FLIGHT; i++)
        if (flights[i].ev && (flights[i].ctx == ctx || !flights[i].ctx)) {
            gone[n++] = flights[i];
            flights[i].ev = NULL;
            atomic_fetch_sub(&nflights, 1);
        }
    pthread_mutex_unlock(&lock);
    /* The events went with the context (not destroyed again here); the
     * graphs' work ended with it, so their chunks are held no more. */
    for (int j = 0; j < n; j++) {
        lms_residency_pin(gone[j].device, gone[j].ids, gone[j].n, -1);
        free(gone[j].ids);
    }
}
