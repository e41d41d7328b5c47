/*
 * fake_driver.h — a driver table for the residency engine without CUDA:
 * a 4 GiB device, one stream, events that are plain heap blocks and
 * waits that return at once. The test supplies the prefetch (it records
 * the bytes moved and decides which moves fail) and installs the lot with
 * fake_driver_install.
 */
#ifndef FAKE_DRIVER_H
#define FAKE_DRIVER_H

#include <stdint.h>
#include <stdlib.h>

#include "driver.h"

/* cuDeviceTotalMem: every device has 4 GiB. */
static inline CUresult fake_total(size_t *bytes, CUdevice d)
{
    (void)d;
    *bytes = 4ull << 30;
    return CUDA_SUCCESS;
}

/* cuStreamCreate: always the same made-up handle; nothing to free. */
static inline CUresult fake_stream_create(CUstream *s, unsigned flags)
{
    (void)flags;
    *s = (CUstream)(uintptr_t)0x100;
    return CUDA_SUCCESS;
}

/* cuEventCreate: a 1-byte heap block, freed by fake_event_destroy. */
static inline CUresult fake_event_create(CUevent *e, unsigned flags)
{
    (void)flags;
    *e = (CUevent)malloc(1);
    return CUDA_SUCCESS;
}

/* cuEventDestroy: frees the block fake_event_create gave. */
static inline CUresult fake_event_destroy(CUevent e)
{
    free(e);
    return CUDA_SUCCESS;
}

/* Recording, waiting and synchronizing: nothing runs, so all succeed at once. */
static inline CUresult fake_event_record(CUevent e, CUstream s) { (void)e, (void)s; return CUDA_SUCCESS; }
static inline CUresult fake_wait(CUstream s, CUevent e, unsigned f) { (void)s, (void)e, (void)f; return CUDA_SUCCESS; }
static inline CUresult fake_event_sync(CUevent e) { (void)e; return CUDA_SUCCESS; }
static inline CUresult fake_stream_sync(CUstream s) { (void)s; return CUDA_SUCCESS; }

/* Puts the fakes above and the test's prefetch into lms_drv. */
static inline void fake_driver_install(PFN_cuMemPrefetchAsync_v12020 prefetch)
{
    lms_drv.cuDeviceTotalMem = fake_total;
    lms_drv.cuMemPrefetchAsync = prefetch;
    lms_drv.cuStreamCreate = fake_stream_create;
    lms_drv.cuEventCreate = fake_event_create;
    lms_drv.cuEventDestroy = fake_event_destroy;
    lms_drv.cuEventRecord = fake_event_record;
    lms_drv.cuStreamWaitEvent = fake_wait;
    lms_drv.cuEventSynchronize = fake_event_sync;
    lms_drv.cuStreamSynchronize = fake_stream_sync;
}

#endif
