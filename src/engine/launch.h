/*
 * launch.h — which managed chunks a kernel launch touches (launch.c): the
 * kernel's parameter layout (cached per function) and a scan of its
 * parameter bytes for addresses inside managed chunks.
 */
#ifndef LMS_LAUNCH_H
#define LMS_LAUNCH_H

#include "driver.h"
#include "residency.h"

/* Chunk ids (sorted, unique) that f's parameters point into; kernelParams
 * or the CU_LAUNCH_PARAM_BUFFER_POINTER form of `extra`. Returns how many. */
int lms_launch_chunks(CUfunction f, void **params, void **extra, uint32_t *ids, int max);

/* The kernel's name (cuFuncGetName, cached), or "" when unknown. */
const char *lms_launch_name(CUfunction f);

#endif
