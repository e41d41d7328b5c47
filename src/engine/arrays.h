/*
 * arrays.h — CUDA arrays (arrays.c): the device memory of a cuArrayCreate,
 * cuArray3DCreate or cuMipmappedArrayCreate (every level) is charged to the
 * device of the context that made it, from creation until cuArrayDestroy
 * (cuMipmappedArrayDestroy) or the end of that context. An array
 * cannot leave the device: past the budget it is refused only with
 * LMS_ON_OOM=fail, otherwise charged with one warning. The hooks call
 * these around the real calls.
 */
#ifndef LMS_ARRAYS_H
#define LMS_ARRAYS_H

#include <stdbool.h>
#include <stdint.h>

#include "driver.h"

/* The charge held for an array while the driver makes it (see
 * lms_arrays_make_room): `charge` bytes reserved on `device`, or none
 * (device -1). */
typedef struct lms_array_room {
    int device;
    uint64_t charge;     /* bytes reserved in the device's account */
} lms_array_room;

/* Before the driver makes an array of `desc` (a mipmapped one of `levels`
 * levels when `mip`) in the current context: reserves its charge, and when
 * it does not fit beside what is charged, resident managed chunks leave to
 * make room first, as for a device allocation; the host then waits until
 * the evictions still leaving fit beside it (the driver takes the memory at
 * once, and any stream may use the array). The reservation is held across
 * the driver's call, so threads making arrays at once do not count the
 * same room twice. None is held when it cannot fit (the creation then
 * decides, as without one), for an array lmshim does not charge, one
 * larger than the whole budget (no room can be made for it: nothing
 * leaves in vain) or a descriptor the driver refuses at first sight. The
 * caller hands the answer to lms_array_created / lms_mipmapped_created,
 * or to lms_arrays_room_release when the driver refused. */
lms_array_room lms_arrays_make_room(const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels, bool mip);
/* Returns a reservation that the driver's refusal left unused. */
void lms_arrays_room_release(lms_array_room room);

/* After the driver made array `handle` from `desc` in the current context
 * (not yet recorded): charges it (`room`: the reservation held for it) and
 * records it. OUT_OF_MEMORY, nothing charged, when LMS_ON_OOM=fail and it
 * does not fit the budget (the caller then destroys it). Arrays of no
 * memory (sparse, deferred mapping) and of formats lmshim does not size
 * are not charged. */
CUresult lms_array_created(CUarray handle, const CUDA_ARRAY3D_DESCRIPTOR *desc, lms_array_room room);

/* The same for mipmapped array `handle` of `levels` levels (as asked: they
 * are clamped as cuMipmappedArrayCreate documents); every level's bytes are
 * charged. */
CUresult lms_mipmapped_created(CUmipmappedArray handle, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels,
                               lms_array_room room);

/* cuArrayDestroy through its real function; the charge goes back when the
 * driver destroyed an array lmshim recorded. */
CUresult lms_array_destroy(CUarray handle, CUresult (*real)(CUarray));
/* The same for cuMipmappedArrayDestroy. */
CUresult lms_mipmapped_destroy(CUmipmappedArray handle, CUresult (*real)(CUmipmappedArray));

/* Bytes charged on `device` for the arrays lmshim records now (0 for a
 * device out of range): room no managed chunk can have (lms_account_room). */
uint64_t lms_arrays_charged(int device);

/* A context went away: its arrays and mipmapped arrays went with it, and their charges back. */
void lms_arrays_context_gone(CUcontext ctx);

/* fork: the table's lock is held across fork; the child gets a fresh one. */
void lms_arrays_fork_prepare(void);
void lms_arrays_fork_parent(void);
void lms_arrays_fork_child(void);

#endif
