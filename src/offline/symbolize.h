/*
 * symbolize.h — naming code addresses after the run (symbolize.c): the
 * function, source file and line of an offset in a module's file, from the
 * module's symbol table and debug information, read with elfutils' libdwfl.
 * Used by the report for frames that dladdr could not name at capture time
 * (functions not exported: static ones, executables without -rdynamic).
 */
#ifndef LMS_SYMBOLIZE_H
#define LMS_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lms_symbolizer lms_symbolizer;

/* A symbolizer with no module open yet; NULL when out of memory. */
lms_symbolizer *lms_symbolizer_new(void);
/* Closes every module it opened. */
void lms_symbolizer_free(lms_symbolizer *s);

typedef struct lms_symbol {
    char fn[256];        /* function, "" if unknown */
    char file[512];      /* source file, "" if unknown */
    int line;            /* 0 if unknown */
} lms_symbol;

/* Names the code at `offset` in the file of `module` (an address as the
 * file's program headers give it: pc minus the load bias). Modules are
 * opened once and kept. False when nothing is known. */
bool lms_symbolize(lms_symbolizer *s, const char *module, uint64_t offset, lms_symbol *out);

#endif
