/*
 * json.h — a small JSON reader for one line of a trace (json.c). It parses
 * into a fixed array of nodes owned by the caller, never allocates, bounds
 * its depth, and says where and why a line is not valid JSON.
 */
#ifndef LMS_JSON_H
#define LMS_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { LMS_JSON_NULL, LMS_JSON_BOOL, LMS_JSON_NUMBER, LMS_JSON_STRING, LMS_JSON_ARRAY, LMS_JSON_OBJECT } lms_json_type;

typedef struct lms_json_node {
    lms_json_type type;
    const char *key;        /* member name inside an object (not NUL-terminated), or NULL */
    size_t key_len;
    const char *str;        /* string value (raw, escapes kept; not NUL-terminated) */
    size_t str_len;
    double num;             /* number or bool (0/1) */
    int first_child;        /* index of the first child, -1 if none */
    int next;               /* index of the next sibling, -1 if none */
    int count;              /* children */
} lms_json_node;

typedef struct lms_json {
    lms_json_node *nodes;   /* caller's array */
    int cap, n;
    char error[96];         /* why the last parse failed */
    size_t error_at;        /* byte offset of the failure */
} lms_json;

/* Parses text[0..len) as one JSON value into j->nodes (node 0 is the root).
 * Returns false, with j->error and j->error_at set, when it is not valid
 * JSON, is nested deeper than 32, or needs more nodes than j->cap. */
bool lms_json_parse(lms_json *j, const char *text, size_t len);

/* The member `key` of object node `obj`, or -1. */
int lms_json_get(const lms_json *j, int obj, const char *key);

/* Typed reads of member `key` of `obj`: false if missing or of another type. */
bool lms_json_number(const lms_json *j, int obj, const char *key, double *out);
/* Strings are unescaped (\u0080..\u00ff give that byte: common/jsonw.h),
 * cut to len - 1 bytes and NUL-terminated. */
bool lms_json_string(const lms_json *j, int obj, const char *key, char *out, size_t len);
/* The same for string node `node` (an array element). */
bool lms_json_node_string(const lms_json *j, int node, char *out, size_t len);

/* Decodes the raw content s[0..n) of a parsed string into out[0..cap);
 * returns the decoded length (all of it was written if <= cap). */
size_t lms_json_unescape(const char *s, size_t n, char *out, size_t cap);

/* A number of member `key` that is a whole number within [lo, hi]. */
bool lms_json_int(const lms_json *j, int obj, const char *key, double lo, double hi, long long *out);

#endif
