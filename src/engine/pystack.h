/*
 * pystack.h — the Python frames of an allocation (pystack.c): when the
 * process is CPython 3.8–3.13 and the allocating thread holds the GIL, the
 * interpreter's frames, innermost first, read through the public C API
 * found at run time with dlsym (nothing links libpython).
 */
#ifndef LMS_PYSTACK_H
#define LMS_PYSTACK_H

#include <stddef.h>

#include "trace.h"

#define LMS_PY_MAX 32

/* One frame as captured: its code object (not a reference: alive while the
 * frame runs; a site keeps one, see lms_pystack_keep) and its line.
 * Compared bytewise to tell sites apart. */
typedef struct lms_pyframe_key {
    void *code;
    long line;
} lms_pyframe_key;

/* Captures up to `max` frames of the calling thread into out; 0 when the
 * process is not CPython, the thread does not hold the GIL, or
 * LMS_PY_STACKS is off. */
int lms_pystack_capture(lms_pyframe_key *out, int max);

/* Takes a reference to the code object of each of keys[0..n), frames this
 * thread has just captured (it holds the GIL), for a new site: a code
 * object a site names is never freed, so its address never comes back as
 * another's (code compiled at run time and dropped) and matches the site. */
void lms_pystack_keep(const lms_pyframe_key *keys, int n);

/* Names the frames just captured by this thread (same hook call: the
 * frames are still running) into out[0..n): file and function are copied
 * into strings[0..cap), owned by the caller. Returns how many it named. */
int lms_pystack_describe(const lms_pyframe_key *keys, int n, lms_rec_pyframe *out, char *strings, size_t cap);

#endif
