/*
 * svg.h — the frame of an SVG line plot (svg.c), shared by `lmshim replay
 * --svg` (curve_svg.c) and the benchmarks' charts (bench/chart.c): header,
 * white page, title, grid with tick labels from zero, the plot's box.
 */
#ifndef LMS_SVG_H
#define LMS_SVG_H

#include <stdio.h>

typedef struct lms_svg_frame {
    int w, h;                        /* the picture, px */
    int left, right, top, bottom;    /* margins around the plot, px */
    int title_y;                     /* baseline of the title, px */
    double xmax, ymax;               /* the axes' ends, in the plotted units */
    double xs, ys;                   /* tick steps, in the plotted units */
} lms_svg_frame;

/* Writes s as XML text, with <, >, & and " escaped. */
void lms_svg_text(FILE *f, const char *s);

/* Writes the <svg> header, the white page, the title (escaped; the caller
 * keeps it) and the grid, tick labels and box of fr's plot. */
void lms_svg_frame_write(FILE *f, const lms_svg_frame *fr, const char *title);

#endif
