/*
 * jsonw.h — the one JSON writer of the trace (jsonw.c). Every string that
 * goes into a trace line passes through lms_jw_str, which escapes it; no
 * other code formats JSON text.
 *
 * The writer fills a caller's fixed buffer and never cuts an element: a
 * value (or a whole object or array, see lms_jw_mark) that does not fit is
 * left out, `full` is set, and the text written so far stays valid JSON
 * once the open containers are closed — room for their closing brackets
 * is always kept.
 *
 * Strings are bytes: valid UTF-8 is written as it is, '"', '\\' and control
 * characters as JSON escapes, and each byte that is not part of valid UTF-8
 * as \u0080..\u00ff. The reader (offline/json.c) turns \u0080..\u00ff back
 * into that byte, so any byte string comes back unchanged.
 */
#ifndef LMS_JSONW_H
#define LMS_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LMS_JW_DEPTH 16

typedef struct lms_jw {
    char *buf;             /* the caller's buffer */
    size_t cap;            /* its size in bytes (one is kept for the NUL) */
    size_t len;            /* bytes written */
    size_t reserve;        /* bytes kept free for what the caller writes last */
    int depth;             /* open containers */
    bool has_items[LMS_JW_DEPTH];   /* per open container: an element was written (a comma is due) */
    char closer[LMS_JW_DEPTH];      /* per open container: ']' or '}' */
    bool full;             /* something was left out */
} lms_jw;

/* A point to go back to (lms_jw_rewind). */
typedef struct lms_jw_mark {
    size_t len;
    int depth;
    bool has_items;
} lms_jw_mark;

/* Starts writing into buf[0..cap). */
void lms_jw_init(lms_jw *w, char *buf, size_t cap);

/* Each writes one element; `key` is the member name inside an object and
 * NULL inside an array or at the top. */
void lms_jw_str(lms_jw *w, const char *key, const char *s);
void lms_jw_strn(lms_jw *w, const char *key, const char *s, size_t n);
void lms_jw_u64(lms_jw *w, const char *key, uint64_t v);
void lms_jw_i64(lms_jw *w, const char *key, int64_t v);
void lms_jw_hex(lms_jw *w, const char *key, uint64_t v);   /* "0x..." */
void lms_jw_bool(lms_jw *w, const char *key, bool v);
/* Opens an object or array (false when it does not fit: then nothing is
 * open and the matching end must not be called). */
bool lms_jw_begin(lms_jw *w, const char *key, char bracket);
void lms_jw_end(lms_jw *w);

/* Where the writer is; lms_jw_rewind drops everything written since, for
 * example a list element that came out incomplete. */
lms_jw_mark lms_jw_here(const lms_jw *w);
void lms_jw_rewind(lms_jw *w, lms_jw_mark m);

/* Closes what is open and NUL-terminates; returns the length. */
size_t lms_jw_finish(lms_jw *w);

/* Escapes s[0..n) as the body of a JSON string (without quotes) into
 * out[0..cap); returns the length it needs (it wrote it all if < cap). */
size_t lms_json_escape(const char *s, size_t n, char *out, size_t cap);

#endif
