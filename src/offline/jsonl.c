/*
 * jsonl.c — JSON Lines reading (see jsonl.h).
 */
#include "jsonl.h"

#include <errno.h>
#include <stdlib.h>

#define NODES 8192

/* Parses one line (without its newline) and hands it on. */
static void one_line(const char *name, const char *text, size_t n, bool complete, size_t lineno, lms_jsonl_fn fn,
                     void *ctx, FILE *errors, lms_jsonl_counts *counts, lms_json *j)
{
    counts->lines++;
    if (n == 0)
        return;
    const char *why;
    if (!lms_json_parse(j, text, n))
        why = complete ? j->error : "truncated line (the trace ends mid-event)";
    else
        why = fn(j, lineno, ctx);
    if (why) {
        counts->bad++;
        if (errors)
            fprintf(errors, "%s:%zu: %s\n", name, lineno, why);
    }
}

int lms_jsonl_file(const char *path, lms_jsonl_fn fn, void *ctx, FILE *errors, lms_jsonl_counts *counts)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    lms_json_node *nodes = malloc(NODES * sizeof *nodes);
    if (!nodes) {
        fclose(f);
        return -1;
    }
    lms_json j = {.nodes = nodes, .cap = NODES};
    lms_jsonl_counts local = {0};
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        bool complete = line[len - 1] == '\n';
        one_line(path, line, (size_t)len - complete, complete, ++lineno, fn, ctx, errors, &local, &j);
    }
    int read_error = ferror(f) ? errno : 0;   /* e.g. EISDIR: a directory opens but cannot be read */
    free(line);
    free(nodes);
    fclose(f);
    if (counts) {
        counts->lines += local.lines;
        counts->bad += local.bad;
    }
    if (read_error) {
        errno = read_error;
        return -1;
    }
    return 0;
}

void lms_jsonl_text(const char *name, const char *text, size_t len, lms_jsonl_fn fn, void *ctx, FILE *errors,
                    lms_jsonl_counts *counts)
{
    lms_json_node *nodes = malloc(NODES * sizeof *nodes);
    if (!nodes)
        return;
    lms_json j = {.nodes = nodes, .cap = NODES};
    lms_jsonl_counts local = {0};
    size_t start = 0, lineno = 0;
    while (start < len) {
        size_t end = start;
        while (end < len && text[end] != '\n')
            end++;
        one_line(name, text + start, end - start, end < len, ++lineno, fn, ctx, errors, &local, &j);
        start = end + 1;
    }
    free(nodes);
    if (counts) {
        counts->lines += local.lines;
        counts->bad += local.bad;
    }
}
