/*
 * ipc.h — memory shared with other processes (ipc.c). CUDA shares only
 * device memory: an IPC handle exists for cuMemAlloc memory, a pool pointer
 * only from a pool created with handle types. A chunk lmshim placed off the
 * device cannot be shared (exportable pools are kept on it: pools.c).
 */
#ifndef LMS_IPC_H
#define LMS_IPC_H

#include <stdbool.h>
#include <stdint.h>

#include "driver.h"

/* Before `call` (e.g. "cuIpcGetMemHandle") shares the memory at ptr: true
 * when lmshim placed that chunk off the device, after one log line naming
 * the chunk, its size and the settings that keep such chunks on the device;
 * the caller then answers CUDA's error for such memory. */
bool lms_ipc_refuse(const char *call, uint64_t ptr);

#endif
