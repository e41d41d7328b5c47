/*
 * chart.h — a small SVG line chart writer (chart.c): lines of (x, y) points
 * with axes, ticks and a legend, readable in any browser.
 */
#ifndef LMS_CHART_H
#define LMS_CHART_H

typedef struct chart_series {
    const char *name;
    const double *x, *y;
    int n;
} chart_series;

/* Writes the chart to path; 0 on success, -1 (errno set) on failure. */
int chart_write_svg(const char *path, const char *title, const char *xlabel, const char *ylabel,
                    const chart_series *series, int nseries);

#endif
