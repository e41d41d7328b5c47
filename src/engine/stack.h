/*
 * stack.h — allocation sites (stack.c): the stack of an allocating call,
 * captured with libunwind into a fixed array before any lock is taken,
 * interned into a site table so that each distinct stack is written to the
 * trace once, as a "site" line with symbolized frames, and referred to by id.
 */
#ifndef LMS_STACK_H
#define LMS_STACK_H

#include <stdint.h>

#define LMS_STACK_MAX 64

/* The site id of the calling stack (LMS_STACKS frames, skipping `skip` of
 * lmshim's own), or -1 when stacks are off or the table is full. A new
 * site's line is written to the trace. */
int32_t lms_stack_site(int skip);

/* Fork handlers (engine.c): the table's lock is held across fork, and a
 * child describes again, in its own trace file, each site it uses. */
void lms_stack_fork_prepare(void);
void lms_stack_fork_parent(void);
void lms_stack_fork_child(void);

#endif
