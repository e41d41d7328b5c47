/*
 * report.h — offline analysis of traces (report.c), behind `lmshim report`:
 * one or more trace files (one per rank) become per-device totals, a memory
 * timeline, fragmentation over time and the top allocation sites; written
 * as text, as an SVG timeline, or as a Chrome/Perfetto trace.
 */
#ifndef LMS_REPORT_H
#define LMS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

/* ---- reading what a report holds (the HTML report's view) ----
 * file: 0 .. lms_report_nfiles()-1, in the order added; dev: 0..15. Strings
 * returned belong to the report. */
typedef struct lms_report_dev {
    uint64_t budget, physical, peak;       /* bytes; peak: device chunks + resident managed */
    uint64_t allocs[5];                    /* placements: device, managed, host, vmm, pinned */
    uint64_t fallbacks, oom, launches;     /* events */
    uint64_t prefetched, evicted;          /* bytes */
    size_t nsamples, nmarks, nmoves;       /* for the *_at accessors */
} lms_report_dev;

typedef struct lms_report_sample {
    double t;                              /* seconds since the file's first event */
    uint64_t device, resident, host;       /* bytes on the device, resident managed, off the device */
    uint64_t holes, rounding;              /* fragmentation, bytes */
} lms_report_sample;

typedef struct lms_report_site {
    int id;
    const char *frames;                    /* one frame a line, innermost first; NULL: no stack */
    uint64_t peak, count, moved;           /* peak live bytes, allocations, bytes fetched + evicted */
} lms_report_site;

int lms_report_nfiles(const lms_report *r);
const char *lms_report_path(const lms_report *r, int file);
int lms_report_rank(const lms_report *r, int file);
/* False when the file has no event of device `dev`. */
bool lms_report_device(const lms_report *r, int file, int dev, lms_report_dev *out);
/* The k-th state sample (k < nsamples), fetch or eviction (k < nmoves), and
 * out-of-memory ('o') or fallback ('f') mark (k < nmarks). */
void lms_report_sample_at(const lms_report *r, int file, int dev, size_t k, lms_report_sample *out);
void lms_report_move_at(const lms_report *r, int file, int dev, size_t k, double *t, bool *evict, uint64_t *bytes);
void lms_report_mark_at(const lms_report *r, int file, int dev, size_t k, double *t, char *kind);
size_t lms_report_nsites(const lms_report *r, int file);
void lms_report_site_at(const lms_report *r, int file, size_t k, lms_report_site *out);

#endif
