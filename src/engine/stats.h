/*
 * stats.h — the per-device summary printed at exit (stats.c) and the
 * snapshot behind lms_get_stats.
 */
#ifndef LMS_STATS_H
#define LMS_STATS_H

#include "lmshim.h"

/* Fills a snapshot of one device; -1 if the device was never used. */
int lms_stats_snapshot(int device, lms_device_stats *out);

/* Writes the summary table of every used device to the log destination. */
void lms_stats_print(void);

/* Writes a "summary" trace line per used device. */
void lms_stats_trace_summary(void);

#endif
