/*
 * trace.h — the JSON Lines trace (trace.c, LMS_TRACE): one header line,
 * then one event per line. Every field is documented in docs/TRACE.md.
 * Each writer formats on the stack and appends to a buffer under a lock;
 * the buffer goes to the file with write(2) when full and at exit.
 */
#ifndef LMS_TRACE_H
#define LMS_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#define LMS_TRACE_FORMAT 1

/* True when a trace is being written (one load). */
extern bool lms_trace_on;

/* Opens LMS_TRACE (with %p, %r, %h) and writes the header; no-op if unset. */
void lms_trace_open(void);
/* Writes what is buffered. */
void lms_trace_flush(void);

void lms_trace_device(int dev, uint64_t physical, uint64_t budget);
void lms_trace_alloc(int dev, uint64_t ptr, uint64_t size, uint64_t charge, const char *place, int64_t id,
                     bool fallback, int32_t site);
void lms_trace_fallback(int dev, uint64_t size, const char *place, const char *why);
void lms_trace_site(int32_t id, const char *frames_json);
/* One line with text that is already JSON (the exit summary, status). */
void lms_trace_raw(const char *json);
void lms_trace_free(int dev, uint64_t ptr, uint64_t size, const char *place);
void lms_trace_oom(int dev, uint64_t size, uint64_t used, uint64_t budget);
void lms_trace_launch(int dev, uint64_t seq, uint64_t fn, const char *name, uint64_t stream,
                      const uint32_t *ids, int n);
void lms_trace_move(const char *type, int dev, uint32_t id, uint64_t bytes, bool ahead);

#endif
