/*
 * scratch.h — a thread's scratch memory (scratch.c): one block per thread
 * and per use, kept from one call to the next so that the steady state
 * allocates nothing, and freed at thread exit through one pthread key.
 */
#ifndef LMS_SCRATCH_H
#define LMS_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>

/* What a block serves; each use has a block of its own per thread. */
typedef enum lms_scratch_use {
    LMS_SCRATCH_LAUNCH,       /* launch.c: a launch's parameter words and chunk ids */
    LMS_SCRATCH_WIDE,         /* residency.c: the ids and chunks of a wide launch */
    LMS_SCRATCH_USES
} lms_scratch_use;

/* This thread's block for `use` with room for at least `bytes` bytes, or
 * NULL when it cannot be had (no memory, or no pthread key left: nothing
 * would free it at thread exit). A block too small is replaced by one at
 * least twice its size; the contents do not carry over. *size (when not
 * NULL) gets the block's size in bytes. The block belongs to scratch.c:
 * the thread uses it until its next call for the same use, and it is
 * freed at thread exit (a later call, from a destructor, makes a new one). */
void *lms_scratch_get(lms_scratch_use use, size_t bytes, size_t *size);

/* True when the pthread key could not be made (every key taken), so every
 * lms_scratch_get answers NULL. */
bool lms_scratch_no_key(void);

#endif
