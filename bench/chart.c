/*
 * chart.c — the SVG line chart (see chart.h). Axes start at zero; ticks are
 * at round steps; each series gets a color and a legend entry.
 */
#include "chart.h"

#include <stdio.h>

#include "svg.h"

#define W 760
#define H 440
#define LEFT 70
#define RIGHT 190
#define TOP 40
#define BOTTOM 60

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
                                     "#8c564b", "#e377c2"};

int chart_write_svg(const char *path, const char *title, const char *xlabel, const char *ylabel,
                    const chart_series *series, int nseries)
{
    double xmax = 0, ymax = 0;
    for (int s = 0; s < nseries; s++)
        for (int i = 0; i < series[s].n; i++) {
            xmax = series[s].x[i] > xmax ? series[s].x[i] : xmax;
            ymax = series[s].y[i] > ymax ? series[s].y[i] : ymax;
        }
    lms_svg_frame fr = {.w = W, .h = H, .left = LEFT, .right = RIGHT, .top = TOP, .bottom = BOTTOM, .title_y = 22};
    lms_svg_axes(&fr, xmax, ymax);
    FILE *f = lms_svg_open(path, &fr, title);
    if (!f)
        return -1;
    const double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
#define PX(v) lms_svg_x(&fr, v)
#define PY(v) lms_svg_y(&fr, v)
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", LEFT + pw / 2, H - 18);
    lms_svg_text(f, xlabel);
    fprintf(f, "</text>\n<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">",
            TOP + ph / 2);
    lms_svg_text(f, ylabel);
    fputs("</text>\n", f);
    for (int s = 0; s < nseries; s++) {
        const char *c = colors[s % (int)(sizeof colors / sizeof colors[0])];
        if (series[s].n > 0) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
            for (int i = 0; i < series[s].n; i++)
                fprintf(f, "%.1f,%.1f ", PX(series[s].x[i]), PY(series[s].y[i]));
            fputs("\"/>\n", f);
            for (int i = 0; i < series[s].n; i++)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", PX(series[s].x[i]),
                        PY(series[s].y[i]), c);
        }
        lms_svg_legend(f, &fr, s, c, "", series[s].name);
    }
#undef PX
#undef PY
    return lms_svg_close(f);
}
