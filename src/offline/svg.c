/*
 * svg.c — the frame of an SVG line plot (see svg.h). The callers draw their
 * series and legends inside it.
 */
#include "svg.h"

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
#define PX(v) (LEFT + (v) / xmax * pw)
#define PY(v) (TOP + ph - (v) / ymax * ph)
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
