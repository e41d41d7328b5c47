/*
 * html.h — the HTML report (html.c) behind `lmshim report --html`: one
 * self-contained file that opens from disk (no network). Per rank and
 * device: a zoomable memory timeline downsampled to min/max buckets, the
 * allocation sites as an icicle graph, the budget curve replayed from the
 * trace for Belady's MIN and every policy, and a summary with the settings
 * most likely to help. The page's script and style are compiled in from
 * report.js and report.css (see embed.c).
 */
#ifndef LMS_HTML_H
#define LMS_HTML_H

#include <stdio.h>

#include "report.h"

/* Points of the budget curve per series, and timeline buckets per panel. */
#define LMS_HTML_CURVE_POINTS 16
#define LMS_HTML_BUCKETS 4096

/* Writes the HTML report of r to `path`. The trace files r was read from
 * are read again for the replays; their problems go to `errors` (may be
 * NULL). link_gbps models transfer times. Returns 0, or -1 when `path`
 * cannot be written. */
int lms_report_html(const lms_report *r, const char *path, double link_gbps, FILE *errors);

#endif
