/*
 * curve_svg.c — the plot of `lmshim replay --curve --svg` (see replay.h,
 * lms_curve_svg): bytes over the link per step against budget, one line
 * per series, axes from zero with round ticks, a legend on the right, a
 * dashed line at the trace's own budget. Sizes are drawn in MiB or GiB,
 * whichever keeps the numbers short.
 */
#include <stdio.h>

#include "replay.h"
#include "svg.h"

#define W 820
#define H 460
#define LEFT 80
#define RIGHT 200
#define TOP 44
#define BOTTOM 60

static const char *const colors[] = {"#111111", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e",
                                     "#17becf", "#8c564b", "#e377c2"};

/* The unit that keeps a largest value of `max` bytes readable. */
static double unit_for(double max, const char **name)
{
    *name = max >= 8.0 * 1073741824.0 ? "GiB" : "MiB";
    return max >= 8.0 * 1073741824.0 ? 1073741824.0 : 1048576.0;
}

int lms_curve_svg(const char *path, const char *title, const uint64_t *budgets, int n, const char *const *names,
                  const double *values, int nseries, uint64_t mark)
{
    double bmax = (double)mark, vmax = 0;
    for (int i = 0; i < n; i++)
        bmax = (double)budgets[i] > bmax ? (double)budgets[i] : bmax;
    for (int i = 0; i < n * nseries; i++)
        vmax = values[i] > vmax ? values[i] : vmax;
    const char *xu, *yu;
    double xd = unit_for(bmax, &xu), yd = unit_for(vmax, &yu);
    lms_svg_frame fr = {.w = W, .h = H, .left = LEFT, .right = RIGHT, .top = TOP, .bottom = BOTTOM, .title_y = 24};
    lms_svg_axes(&fr, bmax / xd, vmax / yd);
    FILE *f = lms_svg_open(path, &fr, title);
    if (!f)
        return -1;
    const double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
#define PX(v) lms_svg_x(&fr, v)
#define PY(v) lms_svg_y(&fr, v)
    if (mark)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"5 4\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">budget</text>\n",
                PX(mark / xd), TOP, PX(mark / xd), TOP + ph, PX(mark / xd), TOP - 4);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">budget (%s)</text>\n", LEFT + pw / 2, H - 18, xu);
    fprintf(f, "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">"
               "over the link per step, fetched + read in place (%s)</text>\n", TOP + ph / 2, yu);
    for (int s = 0; s < nseries; s++) {
        const char *c = colors[s % (int)(sizeof colors / sizeof colors[0])];
        const char *dash = s == 1 ? " stroke-dasharray=\"7 4\"" : "";   /* the bound */
        if (n > 0) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", c, dash);
            for (int i = 0; i < n; i++)
                fprintf(f, "%.1f,%.1f ", PX(budgets[i] / xd), PY(values[s * n + i] / yd));
            fputs("\"/>\n", f);
            for (int i = 0; i < n; i++)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", PX(budgets[i] / xd),
                        PY(values[s * n + i] / yd), c);
        }
        lms_svg_legend(f, &fr, s, c, dash, names[s]);
    }
#undef PX
#undef PY
    return lms_svg_close(f);
}
