/*
 * svg.c — the frame of an SVG line plot (see svg.h). The callers draw their
 * series and legends inside it.
 */
#include "svg.h"

#include <stdint.h>

/* A round tick step (1, 2 or 5 times a power of ten) for a range of `span` > 0. */
static double tick_step(double span)
{
    double raw = span / 5, mag = 1;
    while (mag > raw)
        mag /= 10;
    while (mag * 10 <= raw)
        mag *= 10;
    double f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

/* v rounded up to a whole number of steps. */
static double round_up(double v, double step)
{
    double k = (double)(uint64_t)(v / step);
    return k * step < v ? (k + 1) * step : k * step;
}

/* Steps first, then the ends rounded up to them; nothing is allocated. */
void lms_svg_axes(lms_svg_frame *fr, double xmax, double ymax)
{
    if (xmax <= 0)
        xmax = 1;
    if (ymax <= 0)
        ymax = 1;
    fr->xs = tick_step(xmax);
    fr->ys = tick_step(ymax);
    fr->xmax = round_up(xmax, fr->xs);
    fr->ymax = round_up(ymax, fr->ys);
}

/* From the left margin, in proportion to the x axis. */
double lms_svg_x(const lms_svg_frame *fr, double v)
{
    return fr->left + v / fr->xmax * (fr->w - fr->left - fr->right);
}

/* Up from the plot's bottom edge, in proportion to the y axis. */
double lms_svg_y(const lms_svg_frame *fr, double v)
{
    const double ph = fr->h - fr->top - fr->bottom;
    return fr->top + ph - v / fr->ymax * ph;
}

/* One row of the legend per series, 20 px apart from the plot's top. */
void lms_svg_legend(FILE *f, const lms_svg_frame *fr, int s, const char *color, const char *attrs, const char *name)
{
    const int x = fr->w - fr->right;
    double ly = fr->top + 10 + s * 20;
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"%s/>"
               "<text x=\"%d\" y=\"%.1f\">", x + 15, ly, x + 40, ly, color, attrs, x + 46, ly + 4);
    lms_svg_text(f, name);
    fputs("</text>\n", f);
}

/* Writes text with XML's special characters escaped. */
void lms_svg_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

/* Header, page, title, then a vertical grid line and label per x tick, a
 * horizontal one per y tick, and the box; nothing is allocated. */
void lms_svg_frame_write(FILE *f, const lms_svg_frame *fr, const char *title)
{
    const int W = fr->w, H = fr->h, LEFT = fr->left, TOP = fr->top;
    const double pw = W - LEFT - fr->right, ph = H - TOP - fr->bottom;
    const double xmax = fr->xmax, ymax = fr->ymax, xs = fr->xs, ys = fr->ys;
#define PX(v) lms_svg_x(fr, v)
#define PY(v) lms_svg_y(fr, v)
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"15\">", LEFT, fr->title_y);
    lms_svg_text(f, title);
    fputs("</text>\n", f);
    for (double v = 0; v <= xmax + xs / 2; v += xs)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                PX(v), TOP, PX(v), TOP + ph, PX(v), TOP + ph + 16, v);
    for (double v = 0; v <= ymax + ys / 2; v += ys)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                LEFT, PY(v), LEFT + pw, PY(v), LEFT - 6, PY(v) + 4, v);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#333\"/>\n", LEFT,
            TOP, pw, ph);
#undef PX
#undef PY
}

/* fopen, then the frame. */
FILE *lms_svg_open(const char *path, const lms_svg_frame *fr, const char *title)
{
    FILE *f = fopen(path, "w");
    if (f)
        lms_svg_frame_write(f, fr, title);
    return f;
}

/* The closing tag, then fclose (which reports a failed write). */
int lms_svg_close(FILE *f)
{
    fputs("</svg>\n", f);
    return fclose(f) == 0 ? 0 : -1;
}
