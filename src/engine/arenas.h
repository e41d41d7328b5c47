/*
 * arenas.h — allocators that suballocate (arenas.c): programs whose own
 * allocator carves device memory lmshim sees only as a few large requests.
 * The first trip of a request off the device is answered OUT_OF_MEMORY for
 * a caching allocator (LMS_OOM_RETRY), so that it frees its cache and asks
 * again; and an arena taken whole at start gets one warning naming the
 * framework setting that avoids it.
 */
#ifndef LMS_ARENAS_H
#define LMS_ARENAS_H

#include <stdbool.h>
#include <stdint.h>

/* A device request of `charge` bytes on `device` is about to leave the
 * device (the LMS rule or the budget). True when it must be answered
 * CUDA_ERROR_OUT_OF_MEMORY instead: LMS_OOM_RETRY is on (or auto with a
 * caching allocator loaded) and this is not the retry of a size just
 * answered so; the retry itself gets false and falls back. */
bool lms_arenas_answer_oom(int device, uint64_t charge);

/* A request of `charge` bytes that could have been answered out-of-memory
 * (a cuMemAlloc-style one) was placed on the device: an answer pending for
 * that size is settled (the cache made room). Stream-ordered requests do
 * not settle it: they are never answered, so never the retry. */
void lms_arenas_placed(int device, uint64_t charge);

/* Every device request: warns once when one request takes most of the
 * budget at once (TensorFlow's BFC arena, JAX's preallocation). */
void lms_arenas_note_request(int device, uint64_t size, uint64_t budget);

/* fork: the pending answers' lock is held across fork; the child gets a
 * fresh one. */
void lms_arenas_fork_prepare(void);
void lms_arenas_fork_parent(void);
void lms_arenas_fork_child(void);

#endif
