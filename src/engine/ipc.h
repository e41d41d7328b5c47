/*
 * ipc.h — memory shared with other processes (ipc.c). CUDA shares only
 * device memory: an IPC handle exists for cuMemAlloc memory, a pool pointer
 * only from a pool created with handle types. A chunk lmshim placed off the
 * device cannot be shared, and memory of exportable pools never leaves it.
 */
#ifndef LMS_IPC_H
#define LMS_IPC_H

#include <stdbool.h>
#include <stdint.h>

#include "driver.h"

/* A pool was created with these properties: remember it if exportable. */
void lms_ipc_pool_created(CUmemoryPool pool, const CUmemPoolProps *props);
/* The pool is destroyed. */
void lms_ipc_pool_destroyed(CUmemoryPool pool);
/* True when allocations from `pool` may be exported (never placed off the
 * device). */
bool lms_ipc_pool_exportable(CUmemoryPool pool);

/* Before `call` (e.g. "cuIpcGetMemHandle") shares the memory at ptr: true
 * when lmshim placed that chunk off the device, after one log line naming
 * the chunk, its size and the settings that keep such chunks on the device;
 * the caller then answers CUDA's error for such memory. */
bool lms_ipc_refuse(const char *call, uint64_t ptr);

/* fork: the pool table's lock is held across fork; the child gets a fresh one. */
void lms_ipc_fork_prepare(void);
void lms_ipc_fork_parent(void);
void lms_ipc_fork_child(void);

#endif
