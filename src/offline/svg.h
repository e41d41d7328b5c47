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

/* Sets fr's axis ends and tick steps for data reaching xmax and ymax (in
 * the plotted units): round steps (1, 2 or 5 times a power of ten, about
 * five per axis), each end rounded up to a whole step; an axis without
 * data (max <= 0) runs to 1. */
void lms_svg_axes(lms_svg_frame *fr, double xmax, double ymax);

/* The picture's x (px) of the plotted value v; fr's axes must be set. */
double lms_svg_x(const lms_svg_frame *fr, double v);
/* The picture's y (px) of the plotted value v (zero at the bottom). */
double lms_svg_y(const lms_svg_frame *fr, double v);

/* Writes series s's legend entry right of the plot: a line in `color` (with
 * `attrs`, extra SVG attributes or "", e.g. a dash) and the escaped `name`.
 * The caller keeps the strings. */
void lms_svg_legend(FILE *f, const lms_svg_frame *fr, int s, const char *color, const char *attrs, const char *name);

/* Writes s as XML text, with <, >, & and " escaped. */
void lms_svg_text(FILE *f, const char *s);

/* Creates the file at `path` and writes fr's frame with `title` into it
 * (lms_svg_frame_write); NULL when it cannot be created. The caller draws
 * inside and ends it with lms_svg_close. */
FILE *lms_svg_open(const char *path, const lms_svg_frame *fr, const char *title);

/* Ends the picture (</svg>) and closes f; 0, or -1 when the file could not
 * be written. */
int lms_svg_close(FILE *f);

/* Writes the <svg> header, the white page, the title (escaped; the caller
 * keeps it) and the grid, tick labels and box of fr's plot. */
void lms_svg_frame_write(FILE *f, const lms_svg_frame *fr, const char *title);

#endif
