/*
 * report.h — offline analysis of traces (report.c), behind `lmshim report`:
 * one or more trace files (one per rank) become per-device totals, a memory
 * timeline, fragmentation over time and the top allocation sites; written
 * as text, as an SVG timeline, or as a Chrome/Perfetto trace.
 */
#ifndef LMS_REPORT_H
#define LMS_REPORT_H

#include <stddef.h>
#include <stdio.h>

typedef struct lms_report lms_report;

/* A new, empty report (NULL when out of memory); lms_report_free frees it. */
lms_report *lms_report_new(void);
void lms_report_free(lms_report *r);

/* Adds one trace file; its problems go to `errors` as "file:line: what".
 * Returns -1 if the file cannot be read. */
int lms_report_add(lms_report *r, const char *path, FILE *errors);

/* Adds a trace held in memory, named `name` in messages (the fuzzer's entry). */
void lms_report_add_text(lms_report *r, const char *name, const char *text, size_t len, FILE *errors);

/* The text report. */
void lms_report_text(const lms_report *r, FILE *out);
/* The SVG timeline: bytes on the device, resident managed and on the host,
 * one panel per rank and device, out-of-memory and fallback marks. */
int lms_report_svg(const lms_report *r, const char *path);
/* The Chrome trace (JSON, for Perfetto or chrome://tracing): memory
 * counters, and slices for fetches and evictions at link speed. */
int lms_report_chrome(const lms_report *r, const char *path, double link_gbps);

#endif
