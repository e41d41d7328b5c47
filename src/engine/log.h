/*
 * log.h — lmshim's one output function (log.c): "lmshim[pid] level: text",
 * formatted on the stack and written with write(2); it never allocates and
 * never calls CUDA.
 */
#ifndef LMS_LOG_H
#define LMS_LOG_H

#include <stdatomic.h>
#include <sys/types.h>

#include "options.h"

/* True when messages of `level` are written (cheap: one load). */
#define LMS_LOG_ON(level) ((level) <= lms_opt.log)

/* Writes one line at `level` if the log level lets it through. */
__attribute__((format(printf, 2, 3))) void lms_log(lms_level level, const char *fmt, ...);

/* Like lms_log, but at most `cap` times per counter (then once "more
 * suppressed"); `count` is a static counter owned by the call site. */
__attribute__((format(printf, 4, 5))) void lms_log_capped(lms_level level, atomic_uint *count,
                                                          unsigned cap, const char *fmt, ...);

/* write(2) that never raises SIGPIPE: a pipe whose reader is gone (a log
 * or trace piped into `head`) answers -1/EPIPE instead of killing the
 * program. Retries EINTR; returns what write returned (errno kept). */
ssize_t lms_write_quiet(int fd, const void *buf, size_t len);

/* open(2) of a log or trace file (mode 0644 when created) that never
 * waits: a FIFO without a reader answers -1/ENXIO. The descriptor
 * returned blocks on writes as usual. */
int lms_open_quiet(const char *path, int flags);

/* The one-line complaint about a bad option value; always written to stderr. */
void lms_log_bad_value(const char *variable, const char *value, const char *kept);

/* Opens LMS_LOG_FILE (with %p, %r, %h expanded) if set; else stderr. */
void lms_log_open(void);

/* Expands %p (pid), %r (rank), %h (host) and %% of a path template into out. */
void lms_expand_path(const char *templ, char *out, size_t len);

/* Writes raw text to the log destination (summary tables). */
void lms_log_write(const char *text, size_t len);

#endif
