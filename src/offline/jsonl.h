/*
 * jsonl.h — reading a JSON Lines file line by line (jsonl.c), shared by
 * `lmshim replay` and `lmshim report`: each line is parsed and handed to a
 * callback; a line that is not JSON, that the callback rejects, or that is
 * cut short (a killed job's last line) is reported as "file:line: what" and
 * skipped, and reading goes on.
 */
#ifndef LMS_JSONL_H
#define LMS_JSONL_H

#include <stddef.h>
#include <stdio.h>

#include "json.h"

/* Handles one parsed line (node 0 is the root); returns NULL, or what is
 * wrong with the line. */
typedef const char *(*lms_jsonl_fn)(const lms_json *j, size_t lineno, void *ctx);

typedef struct lms_jsonl_counts {
    size_t lines;       /* lines read */
    size_t bad;         /* lines reported and skipped */
} lms_jsonl_counts;

/* Reads `path`; -1 (errno set) if it cannot be opened or read. */
int lms_jsonl_file(const char *path, lms_jsonl_fn fn, void *ctx, FILE *errors, lms_jsonl_counts *counts);

/* The same over text[0..len) in memory, named `name` in messages. */
void lms_jsonl_text(const char *name, const char *text, size_t len, lms_jsonl_fn fn, void *ctx, FILE *errors,
                    lms_jsonl_counts *counts);

#endif
