/*
 * pools.c — memory pools and where their memory is (see pools.h).
 *
 * The driver tells a pool's location only to its creator (CUmemPoolProps);
 * no cuMemPoolGetAttribute answers it. So the cuMemPoolCreate hook records
 * it here, in a small table under a lock (programs make few pools). The
 * default pools of the devices are recognised by asking
 * cuDeviceGetDefaultMemPool; the answer is kept in the same table.
 */
#include "pools.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "grow.h"
#include "options.h"

typedef struct pool_rec {
    CUmemoryPool pool;
    int device;          /* device ordinal or LMS_POOL_NOT_DEVICE */
    bool exportable;     /* created with IPC handle types */
} pool_rec;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pool_rec *recs;       /* unordered; owned here */
static size_t nrecs, caprecs;
static atomic_size_t nexportable;   /* records with exportable set */

/* Index of a pool's record, or nrecs (under lock). */
static size_t find(CUmemoryPool pool)
{
    size_t i = 0;
    while (i < nrecs && recs[i].pool != pool)
        i++;
    return i;
}

/* Records or updates a pool's location (under lock); silently does nothing
 * when out of memory (the pool is then asked about again). */
static void put(CUmemoryPool pool, int device, bool exportable)
{
    size_t i = find(pool);
    if (i == nrecs) {
        if (!lms_grow((void **)&recs, &caprecs, nrecs + 1, sizeof *recs, 16))
            return;
        nrecs++;
    } else if (recs[i].exportable) {
        atomic_fetch_sub(&nexportable, 1);
    }
    recs[i] = (pool_rec){pool, device, exportable};
    if (exportable)
        atomic_fetch_add(&nexportable, 1);
}

void lms_pool_created(CUmemoryPool pool, const CUmemPoolProps *props)
{
    /* Device memory is a pinned pool at a device location; host pools (and
     * managed pools, CUDA 13) hand out memory that is not charged. */
    int device = props->allocType == CU_MEM_ALLOCATION_TYPE_PINNED &&
                         props->location.type == CU_MEM_LOCATION_TYPE_DEVICE
                     ? props->location.id
                     : LMS_POOL_NOT_DEVICE;
    pthread_mutex_lock(&lock);
    put(pool, device, props->handleTypes != CU_MEM_HANDLE_TYPE_NONE);
    pthread_mutex_unlock(&lock);
}

void lms_pool_destroyed(CUmemoryPool pool)
{
    pthread_mutex_lock(&lock);
    size_t i = find(pool);
    if (i < nrecs) {
        if (recs[i].exportable)
            atomic_fetch_sub(&nexportable, 1);
        recs[i] = recs[--nrecs];
    }
    pthread_mutex_unlock(&lock);
}

int lms_pool_device(CUmemoryPool pool)
{
    pthread_mutex_lock(&lock);
    size_t i = find(pool);
    int device = i < nrecs ? recs[i].device : LMS_POOL_UNKNOWN;
    pthread_mutex_unlock(&lock);
    if (device != LMS_POOL_UNKNOWN)
        return device;
    int count = 0;
    if (!lms_drv.cuDeviceGetDefaultMemPool || !lms_drv.cuDeviceGetCount ||
        lms_drv.cuDeviceGetCount(&count) != CUDA_SUCCESS)
        return LMS_POOL_UNKNOWN;
    for (int d = 0; d < count && d < LMS_MAX_DEVICES; d++) {
        CUmemoryPool def;
        if (lms_drv.cuDeviceGetDefaultMemPool(&def, d) == CUDA_SUCCESS && def == pool) {
            pthread_mutex_lock(&lock);
            put(pool, d, false);
            pthread_mutex_unlock(&lock);
            return d;
        }
    }
    return LMS_POOL_UNKNOWN;
}

bool lms_pool_exportable(CUmemoryPool pool)
{
    pthread_mutex_lock(&lock);
    size_t i = find(pool);
    bool exportable = i < nrecs && recs[i].exportable;
    pthread_mutex_unlock(&lock);
    return exportable;
}

bool lms_pool_current_exportable(int device)
{
    if (atomic_load_explicit(&nexportable, memory_order_relaxed) == 0 || device < 0 ||
        !lms_drv.cuDeviceGetMemPool)
        return false;
    CUmemoryPool cur;
    return lms_drv.cuDeviceGetMemPool(&cur, device) == CUDA_SUCCESS && lms_pool_exportable(cur);
}

void lms_pools_fork_prepare(void) { pthread_mutex_lock(&lock); }
void lms_pools_fork_parent(void) { pthread_mutex_unlock(&lock); }
void lms_pools_fork_child(void) { pthread_mutex_init(&lock, NULL); }
