/*
 * status.h — the live view of long jobs (status.c): with LMS_STATS_EVERY=s,
 * a background thread writes one status line per s seconds to the log
 * (and the trace). It reads lmshim's counters only and never calls CUDA.
 */
#ifndef LMS_STATUS_H
#define LMS_STATUS_H

/* Starts the status thread of this process if LMS_STATS_EVERY asks for one. */
void lms_status_start(void);

/* Formats the status of every used device into buf; `prev` holds the
 * fetched/evicted bytes at the last line (updated). Returns the length. */
int lms_status_line(char *buf, int len, unsigned long long prev[][2]);

#endif
