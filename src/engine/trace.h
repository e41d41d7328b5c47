/*
 * trace.h — the JSON Lines trace (trace.c, LMS_TRACE): one header line,
 * then one event per line. The lines and their fields are those of
 * common/trace_schema.def: from it come one struct per line type
 * (lms_ev_<type>) and per list record (lms_rec_<name>), and one writer per
 * line type (lms_trace_write_<type>) that writes every field in the
 * schema's order through the escaping writer (common/jsonw.c). Every field
 * is documented in docs/TRACE.md.
 *
 * Each writer formats on the stack and appends to a buffer under a lock;
 * the buffer goes to the file with write(2) when full, at exit, on
 * SIGTERM/SIGINT and before exec (preload/exec.c).
 */
#ifndef LMS_TRACE_H
#define LMS_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#define LMS_TRACE_FORMAT 1

/* Field types of the schema as C types. */
typedef struct lms_rec_frame lms_rec_frame;
typedef struct lms_rec_pyframe lms_rec_pyframe;
typedef struct lms_trace_ids { const uint32_t *v; int n; } lms_trace_ids;
typedef struct lms_trace_frames { const lms_rec_frame *v; int n; } lms_trace_frames;
typedef struct lms_trace_pyframes { const lms_rec_pyframe *v; int n; } lms_trace_pyframes;
typedef struct lms_trace_places { uint64_t v[5]; } lms_trace_places;   /* device, managed, host, vmm, pinned */
#define LMS_TRACE_CT_U64 uint64_t
#define LMS_TRACE_CT_I64 int64_t
#define LMS_TRACE_CT_HEX uint64_t
#define LMS_TRACE_CT_STR const char *
#define LMS_TRACE_CT_BOOL bool
#define LMS_TRACE_CT_TIME uint64_t          /* ignored: the writer sets it */
#define LMS_TRACE_CT_IDS lms_trace_ids
#define LMS_TRACE_CT_FRAMES lms_trace_frames
#define LMS_TRACE_CT_PYFRAMES lms_trace_pyframes
#define LMS_TRACE_CT_DROPPED uint64_t       /* ignored: the writer counts */
#define LMS_TRACE_CT_OPTIONS bool           /* ignored: the writer lists lms_opt */
#define LMS_TRACE_CT_PLACES lms_trace_places

#define LMS_EVENT(ev) typedef struct lms_ev_##ev lms_ev_##ev; struct lms_ev_##ev {
#define LMS_RECORD(rec) struct lms_rec_##rec {
#define LMS_FIELD(owner, name, type, doc) LMS_TRACE_CT_##type name;
#define LMS_END(owner) };
#include "trace_schema.def"
#undef LMS_EVENT
#undef LMS_RECORD
#undef LMS_FIELD
#undef LMS_END

/* One writer per line type. */
#define LMS_EVENT(ev) void lms_trace_write_##ev(const lms_ev_##ev *e);
#define LMS_RECORD(rec)
#define LMS_FIELD(owner, name, type, doc)
#define LMS_END(owner)
#include "trace_schema.def"
#undef LMS_EVENT
#undef LMS_RECORD
#undef LMS_FIELD
#undef LMS_END

/* True when a trace is being written (one load). */
extern bool lms_trace_on;

/* Opens the trace (LMS_TRACE with %p, %r, %h; docs/TRACE.md says which
 * file each process writes) and writes the header; no-op if unset. */
void lms_trace_open(void);
/* Writes what is buffered. */
void lms_trace_flush(void);
/* The same before an exec: waits at most a second for the buffer's lock
 * (an exec may come from a signal handler that interrupted a writer). */
void lms_trace_flush_before_exec(void);
/* Around fork: the child drops the parent's buffer and file (it opens its
 * own on its next hook). */
void lms_trace_fork_prepare(void);
void lms_trace_fork_parent(void);
void lms_trace_fork_child(void);

/* Shorthands of the writers above for the engine's call sites. */
void lms_trace_device(int dev, uint64_t physical, uint64_t budget);
void lms_trace_alloc(int dev, uint64_t ptr, uint64_t size, uint64_t charge, const char *place, int64_t id,
                     bool fallback, int32_t site);
void lms_trace_fallback(int dev, uint64_t size, const char *place, const char *why);
void lms_trace_free(int dev, uint64_t ptr, uint64_t size, const char *place);
void lms_trace_oom(int dev, uint64_t size, uint64_t used, uint64_t budget);
void lms_trace_launch(int dev, uint64_t seq, uint64_t fn, const char *name, uint64_t stream,
                      const uint32_t *ids, int n);
/* type: "prefetch" or "evict". */
void lms_trace_move(const char *type, int dev, uint32_t id, uint64_t bytes, bool ahead);

#endif
