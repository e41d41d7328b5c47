/*
 * launch.h — which managed chunks a kernel launch touches (launch.c): the
 * kernel's parameter layout (cached per handle, CUfunction or CUkernel,
 * until a module or library is unloaded) and a scan of its parameter bytes
 * (up to 32 KB) for addresses inside managed chunks.
 */
#ifndef LMS_LAUNCH_H
#define LMS_LAUNCH_H

#include "driver.h"
#include "residency.h"

/* Chunk ids (sorted, unique) that f's parameters point into; kernelParams
 * or the CU_LAUNCH_PARAM_BUFFER_POINTER form of `extra` (read up to its
 * CU_LAUNCH_PARAM_BUFFER_SIZE). Returns how many; *ids points into this
 * thread's scratch, valid until its next call. */
int lms_launch_chunks(CUfunction f, void **params, void **extra, const uint32_t **ids);

/* The words of f's parameters that may hold pointers, as lms_launch_chunks
 * reads them, with room for the ids of the chunks they point into (both in
 * this thread's scratch, valid until its next call; n 0 when there is
 * none): for lms_residency_before_scan, which finds the chunks. */
lms_scan lms_launch_words(CUfunction f, void **params, void **extra);

/* The class of a launch's grid (gx, gy, gz blocks), never 0: each
 * dimension itself up to 16, above that its quarter of an octave (two
 * grids in one class differ by under a fifth per dimension), hashed. A
 * kernel's grid follows the tiles of its output, and how many times it
 * reads an operand follows the tiles along the other side: one function's
 * price of reading in place is fitted per class (fnprice.h). */
uint64_t lms_launch_shape(unsigned gx, unsigned gy, unsigned gz);

/* The blocks of a grid (gx * gy * gz), or 0 for one the driver refuses
 * (a dimension 0, x over 2^31 - 1, y or z over 65535): the trials weigh
 * a timed step by its launches' blocks (src/common/trials.c, faster). */
uint64_t lms_launch_blocks(unsigned gx, unsigned gy, unsigned gz);

/* The kernel's name (cuFuncGetName or cuKernelGetName, cached), or "" when
 * unknown. Valid until the kernel's module or library is unloaded. */
const char *lms_launch_name(CUfunction f);

/* Around a real cuModuleUnload/cuLibraryUnload: no scan runs meanwhile,
 * and every cached layout is dropped when the unload succeeded (the driver
 * may hand the same handle values out again). */
void lms_launch_unload_begin(void);
void lms_launch_unload_end(bool unloaded);

/* fork: the layout lock is held across fork; the child gets a fresh one. */
void lms_launch_fork_prepare(void);
void lms_launch_fork_parent(void);
void lms_launch_fork_child(void);

#endif
