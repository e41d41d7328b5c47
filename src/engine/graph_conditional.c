/*
 * graph_conditional.c — the bodies of conditional graph nodes (CUDA
 * 12.3+: IF, WHILE, SWITCH), kept as cuGraphAddNode hands them out, at
 * the node's creation only: the driver API has no call that reads them
 * back. graph.c reads a graph into them at instantiation (see graph.h and
 * docs/ARCHITECTURE.md "Conditional bodies are looked into").
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;

/* The bodies of the conditional nodes made through the hooks
 * (cuGraphAddNode hands them out once, at creation; the driver API has no
 * reader for them). Open addressing on the node handle, grown by doubling;
 * a handle made again replaces its entry. Under cond_lock. */
typedef struct cond_entry {
    CUgraphNode node;       /* NULL: free slot */
    int n;
    CUgraph *bodies;        /* n body graphs, malloc'd, owned */
} cond_entry;
static cond_entry *conds;
static size_t ncond, capcond;

/* The slot of node in conds (its own, or the empty one where it would
 * go); capcond > 0 (under cond_lock). */
static size_t cond_slot(CUgraphNode node)
{
    size_t i = (size_t)(((uintptr_t)node >> 4) * 0x9e3779b97f4a7c15ull >> 32) & (capcond - 1);
    while (conds[i].node && conds[i].node != node)
        i = (i + 1) & (capcond - 1);
    return i;
}

/* Room in conds for one more entry (under cond_lock); false when out of memory. */
static bool cond_grow(void)
{
    if ((ncond + 1) * 2 <= capcond)
        return true;
    size_t ncap = capcond ? capcond * 2 : 64;
    cond_entry *old = conds, *fresh = calloc(ncap, sizeof *fresh);
    if (!fresh)
        return false;
    size_t ocap = capcond;
    conds = fresh;
    capcond = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].node)
            conds[cond_slot(old[i].node)] = old[i];
    free(old);
    return true;
}

void lms_graph_conditional_added(CUgraphNode node, const CUgraph *bodies, int n)
{
    if (!node || !bodies || n <= 0)
        return;
    CUgraph *copy = malloc((size_t)n * sizeof *copy);
    if (!copy)
        return;   /* its bodies are read over the link */
    memcpy(copy, bodies, (size_t)n * sizeof *copy);
    pthread_mutex_lock(&cond_lock);
    if (cond_grow()) {
        cond_entry *c = &conds[cond_slot(node)];
        if (c->node)
            free(c->bodies);   /* the handle came back: a new node */
        else
            ncond++;
        *c = (cond_entry){node, n, copy};
        copy = NULL;
    }
    pthread_mutex_unlock(&cond_lock);
    free(copy);
}

CUgraph *lms_graph_conditional_bodies(CUgraphNode node, int *n)
{
    CUgraph *copy = NULL;
    *n = 0;
    pthread_mutex_lock(&cond_lock);
    cond_entry *c = capcond ? &conds[cond_slot(node)] : NULL;
    if (c && c->node && (copy = malloc((size_t)c->n * sizeof *copy)) != NULL) {
        memcpy(copy, c->bodies, (size_t)c->n * sizeof *copy);
        *n = c->n;
    }
    pthread_mutex_unlock(&cond_lock);
    return copy;
}

void lms_graph_conditional_fork_child(void)
{
    pthread_mutex_init(&cond_lock, NULL);   /* a thread of the parent holding it does not go on */
}
