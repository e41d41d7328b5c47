/*
 * graph_pool.c — the device's graph memory pool charged to its account:
 * what the driver's pool reserves for graph allocation nodes, read after
 * graph launches, at cuMemGetInfo, after a trim and after a context's end
 * (see graph.h and docs/ARCHITECTURE.md "Graph memory is charged as the
 * driver's pool holds it").
 */
#include <pthread.h>
#include <stdatomic.h>

#include "account.h"
#include "graph.h"
#include "place.h"
#include "residency.h"

/* Bytes of each device's graph memory pool charged to its account. */
static _Atomic uint64_t pool_charged[LMS_MAX_DEVICES];
/* Held around a reading of the pool and its exchange into pool_charged:
 * readings are taken in the order they are read, so the last exchanged is
 * the newest. Unheld, a reading of 0 taken as a context ended was
 * exchanged after another thread's launch had grown the pool again and
 * read it (equal to the charge not yet released, it changed nothing):
 * the pool's 128 MiB went uncharged until the next reading (an outside
 * helper's program, threads held in a debugger). */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

void lms_graph_mem_sync(int device, bool always)
{
    cuuint64_t reserved = 0;
    if (!always && !lms_graph_mem_any())
        return;   /* no graph memory can exist: no driver call */
    lms_account *a = device >= 0 && device < LMS_MAX_DEVICES ? lms_account_of(device) : NULL;
    if (!a || !lms_drv.cuDeviceGetGraphMemAttribute)
        return;
    /* Concurrent readings each move the charge by their own difference, so
     * it ends at the last value exchanged: the newest, under the lock. */
    pthread_mutex_lock(&pool_lock);
    uint64_t old = 0;
    bool read = lms_drv.cuDeviceGetGraphMemAttribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
                                                     &reserved) == CUDA_SUCCESS;
    if (read)
        old = atomic_exchange(&pool_charged[device], (uint64_t)reserved);
    pthread_mutex_unlock(&pool_lock);
    if (!read || reserved == old)
        return;   /* the common case: one driver call, nothing changed */
    if (reserved > old) {
        /* Room first, as for a device request, kept for the pool (another
         * thread's fetch could take it before a second charge). */
        lms_place_shared_begin();   /* reclaiming evicts: no context ends meanwhile */
        bool held = lms_residency_reserve(device, reserved - old);
        lms_place_shared_end();
        if (!held)
            lms_account_force(a, reserved - old);
    } else if (reserved < old) {
        lms_account_release(a, old - reserved);
    }
}

uint64_t lms_graph_mem_charged(int device)
{
    return device >= 0 && device < LMS_MAX_DEVICES ? atomic_load_explicit(&pool_charged[device], memory_order_relaxed)
                                                   : 0;
}

/* A context ended: the pools whose memory lmshim charges are read again,
 * since the driver may have given a pool back with the context (a reset of
 * the primary context empties the device's pool). One driver call per
 * device with a charge; called with no lmshim lock held (growth makes
 * room, which takes the context lock). */
void lms_graph_mem_context_gone(void)
{
    for (int d = 0; d < LMS_MAX_DEVICES; d++)
        if (atomic_load_explicit(&pool_charged[d], memory_order_relaxed))
            lms_graph_mem_sync(d, true);
}

void lms_graph_pool_fork_child(void)
{
    pthread_mutex_init(&pool_lock, NULL);   /* a reading of another thread does not go on in the child */
}
