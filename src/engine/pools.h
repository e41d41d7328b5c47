/*
 * pools.h — where the memory of each memory pool is (pools.c), so that a
 * stream-ordered allocation from a pool is charged to the pool's location
 * and not to its stream's device.
 */
#ifndef LMS_POOLS_H
#define LMS_POOLS_H

#include "driver.h"

enum {
    LMS_POOL_NOT_DEVICE = -1,   /* host or host-NUMA pool: not device memory */
    LMS_POOL_UNKNOWN = -2,      /* a pool lmshim did not see created */
};

/* After a successful cuMemPoolCreate: remembers the pool's location. */
void lms_pool_created(CUmemoryPool pool, const CUmemPoolProps *props);
/* After a successful cuMemPoolDestroy: forgets it. */
void lms_pool_destroyed(CUmemoryPool pool);
/* The device whose memory `pool` hands out, LMS_POOL_NOT_DEVICE, or
 * LMS_POOL_UNKNOWN. A device's default pool is found by asking the driver. */
int lms_pool_device(CUmemoryPool pool);

/* True when `pool` was created exportable (handle types other than none):
 * CUDA shares only device memory, so its allocations never leave the device. */
bool lms_pool_exportable(CUmemoryPool pool);

/* True when the current pool of `device` (what cuMemAllocAsync allocates
 * from, set with cuDeviceSetMemPool) is an exportable pool. Asks the driver
 * only while an exportable pool exists. */
bool lms_pool_current_exportable(int device);

/* fork: the table's lock is held across fork; the child gets a fresh one. */
void lms_pools_fork_prepare(void);
void lms_pools_fork_parent(void);
void lms_pools_fork_child(void);

#endif
