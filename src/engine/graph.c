/*
 * graph.c — the chunks of executable graphs and the pins of graph launches
 * (see graph.h and docs/ARCHITECTURE.md "Graphs").
 *
 * At instantiation the source graph's kernel nodes are read with
 * cuGraphGetNodes and cuGraphKernelNodeGetParams (the driver API has no
 * reader for an executable graph), and their parameters are scanned like a
 * launch's. A graph launch is then one launch for the residency engine over
 * the union of those chunks; after it is issued the chunks stay pinned
 * until an event recorded behind it has completed, so no eviction is
 * decided while the graph may still use them.
 */
#include "graph.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"
#include "log.h"
#include "residency.h"

#define EXECS 1024          /* executable graphs remembered (open addressing) */
#define IN_FLIGHT 256       /* graph launches pinned at once */

typedef struct exec_entry {
    CUgraphExec exec;       /* NULL: free slot; TOMB: removed */
    int n;
    uint32_t ids[LMS_LAUNCH_MAX_CHUNKS];   /* sorted */
} exec_entry;

typedef struct flight {
    CUevent ev;             /* recorded after the graph launch; NULL: free slot */
    int device, n;
    uint32_t ids[LMS_LAUNCH_MAX_CHUNKS];
} flight;

#define TOMB ((CUgraphExec)(uintptr_t)1)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static exec_entry execs[EXECS];      /* under lock */
static flight flights[IN_FLIGHT];    /* under lock */
static atomic_int nflights;

/* The slot of exec, or (insert) a free one; NULL when full or absent. */
static exec_entry *slot_of(CUgraphExec exec, bool insert)
{
    size_t h = ((uintptr_t)exec >> 4) * 0x9e3779b97f4a7c15ull >> 54;   /* 10 bits */
    exec_entry *tomb = NULL;
    for (size_t k = 0; k < EXECS; k++) {
        exec_entry *e = &execs[(h + k) % EXECS];
        if (e->exec == exec)
            return e;
        if (e->exec == TOMB && !tomb)
            tomb = e;
        if (!e->exec)
            return insert ? (tomb ? tomb : e) : NULL;
    }
    return insert ? tomb : NULL;
}

/* Merges sorted unique ids b[0..nb) into a[0..*na) (capacity max). */
static void merge_ids(uint32_t *a, int *na, const uint32_t *b, int nb, int max)
{
    for (int i = 0; i < nb; i++) {
        int k = *na;
        while (k > 0 && a[k - 1] > b[i])
            k--;
        if ((k > 0 && a[k - 1] == b[i]) || *na == max)
            continue;
        memmove(&a[k + 1], &a[k], (size_t)(*na - k) * sizeof *a);
        a[k] = b[i];
        (*na)++;
    }
}

void lms_graph_instantiated(CUgraphExec exec, CUgraph graph)
{
    if (!exec || !lms_residency_any() || !lms_drv.cuGraphGetNodes || !lms_drv.cuGraphNodeGetType ||
        !lms_drv.cuGraphKernelNodeGetParams)
        return;
    size_t count = 0;
    if (lms_drv.cuGraphGetNodes(graph, NULL, &count) != CUDA_SUCCESS || count == 0)
        return;
    CUgraphNode *nodes = malloc(count * sizeof *nodes);
    if (!nodes)
        return;   /* not scanned: its chunks are read over the link */
    exec_entry found = {.exec = exec};
    if (lms_drv.cuGraphGetNodes(graph, nodes, &count) == CUDA_SUCCESS) {
        for (size_t i = 0; i < count; i++) {
            CUgraphNodeType t;
            CUDA_KERNEL_NODE_PARAMS_v2 p;
            if (lms_drv.cuGraphNodeGetType(nodes[i], &t) != CUDA_SUCCESS ||
                t != CU_GRAPH_NODE_TYPE_KERNEL ||
                lms_drv.cuGraphKernelNodeGetParams(nodes[i], &p) != CUDA_SUCCESS || !p.func)
                continue;
            uint32_t ids[LMS_LAUNCH_MAX_CHUNKS];
            int n = lms_launch_chunks(p.func, p.kernelParams, p.extra, ids, LMS_LAUNCH_MAX_CHUNKS);
            merge_ids(found.ids, &found.n, ids, n, LMS_LAUNCH_MAX_CHUNKS);
        }
    }
    free(nodes);
    if (found.n == 0)
        return;
    pthread_mutex_lock(&lock);
    exec_entry *e = slot_of(exec, true);
    if (e)
        *e = found;
    pthread_mutex_unlock(&lock);
    if (!e)
        lms_log(LMS_LEVEL_INFO, "graph table full: a graph's chunks are read over the link");
}

void lms_graph_forget(CUgraphExec exec)
{
    pthread_mutex_lock(&lock);
    exec_entry *e = slot_of(exec, false);
    if (e)
        e->exec = TOMB;
    pthread_mutex_unlock(&lock);
}

int lms_graph_chunks(CUgraphExec exec, uint32_t *ids, int max)
{
    int n = 0;
    pthread_mutex_lock(&lock);
    exec_entry *e = slot_of(exec, false);
    if (e) {
        n = e->n < max ? e->n : max;
        memcpy(ids, e->ids, (size_t)n * sizeof *ids);
    }
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
    n = n < LMS_LAUNCH_MAX_CHUNKS ? n : LMS_LAUNCH_MAX_CHUNKS;
    lms_residency_pin(device, ids, n, +1);   /* before a poll can see the event */
    pthread_mutex_lock(&lock);
    flight *f = NULL;
    for (int i = 0; i < IN_FLIGHT && !f; i++)
        if (!flights[i].ev)
            f = &flights[i];
    if (f) {
        f->ev = ev;
        f->device = device;
        f->n = n;
        memcpy(f->ids, ids, (size_t)f->n * sizeof *ids);
        atomic_fetch_add(&nflights, 1);
    }
    pthread_mutex_unlock(&lock);
    if (!f) {   /* too many in flight: this launch's chunks are not held */
        lms_residency_pin(device, ids, n, -1);
        lms_drv.cuEventDestroy(ev);
    }
}

void lms_graph_fork_prepare(void) { pthread_mutex_lock(&lock); }
void lms_graph_fork_parent(void) { pthread_mutex_unlock(&lock); }
void lms_graph_fork_child(void) { pthread_mutex_init(&lock, NULL); }

void lms_graph_poll(void)
{
    if (atomic_load_explicit(&nflights, memory_order_relaxed) == 0 || !lms_drv.cuEventQuery)
        return;
    for (int i = 0; i < IN_FLIGHT; i++) {
        /* The event is queried with no lock held (the driver has its own). */
        pthread_mutex_lock(&lock);
        CUevent ev = flights[i].ev;
        pthread_mutex_unlock(&lock);
        if (!ev || lms_drv.cuEventQuery(ev) == CUDA_ERROR_NOT_READY)
            continue;
        flight done = {0};
        pthread_mutex_lock(&lock);
        if (flights[i].ev == ev) {
            done = flights[i];
            flights[i].ev = NULL;
            atomic_fetch_sub(&nflights, 1);
        }
        pthread_mutex_unlock(&lock);
        if (done.ev) {
            lms_residency_pin(done.device, done.ids, done.n, -1);
            lms_drv.cuEventDestroy(done.ev);
        }
    }
}
