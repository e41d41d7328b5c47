/*
 * report.c — `lmshim report trace.jsonl [more.jsonl...]`: the text report
 * of one or more traces (one per rank, merged with a rank column), and
 * optionally an SVG timeline and a Chrome/Perfetto trace.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "html.h"
#include "report.h"

static void usage(FILE *f)
{
    fputs("usage: lmshim report [--svg out.svg] [--chrome out.json] [--html out.html] [--link-gbps G]\n"
          "                     trace.jsonl [more.jsonl...]\n"
          "  per rank and device: peak, placements, fallbacks, fetched and evicted bytes,\n"
          "  fragmentation over time and the top allocation sites with their stacks;\n"
          "  --html: one self-contained page (timeline, sites, budget curve, summary)\n", f);
}

int lms_cmd_report(int argc, char **argv)
{
    const char *svg = NULL, *chrome = NULL, *html = NULL;
    double link = 55.0;
    lms_report *r = lms_report_new();
    if (!r)
        return 1;
    int files = 0, status = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            lms_report_free(r);
            return 0;
        }
        if (strcmp(a, "--svg") == 0 || strcmp(a, "--chrome") == 0 || strcmp(a, "--link-gbps") == 0 ||
            strcmp(a, "--html") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "lmshim report: %s needs a value\n", a);
                lms_report_free(r);
                return 2;
            }
            if (a[2] == 'h') {
                html = argv[++i];
                continue;
            }
            if (a[2] == 's')
                svg = argv[++i];
            else if (a[2] == 'c')
                chrome = argv[++i];
            else if (lms_cli_parse_gbps(argv[++i], &link) != 0) {
                fprintf(stderr, "lmshim report: --link-gbps %s: not a positive number of GB/s\n", argv[i]);
                lms_report_free(r);
                return 2;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "lmshim report: unknown flag %s\n", a);
            usage(stderr);
            lms_report_free(r);
            return 2;
        } else if (lms_report_add(r, a, stderr) != 0) {
            fprintf(stderr, "lmshim report: cannot read %s: %s\n", a, strerror(errno));
            status = 1;
        } else {
            files++;
        }
    }
    if (!files || !(link > 0) || !isfinite(link)) {   /* a finite speed: the page's data is JSON */
        usage(stderr);
        lms_report_free(r);
        return 2;
    }
    lms_report_text(r, stdout);
    if (svg && lms_report_svg(r, svg) != 0) {
        fprintf(stderr, "lmshim report: cannot write %s: %s\n", svg, strerror(errno));
        status = 1;
    }
    if (chrome && lms_report_chrome(r, chrome, link) != 0) {
        fprintf(stderr, "lmshim report: cannot write %s: %s\n", chrome, strerror(errno));
        status = 1;
    }
    if (html && lms_report_html(r, html, link, NULL) != 0) {
        fprintf(stderr, "lmshim report: cannot write %s: %s\n", html, strerror(errno));
        status = 1;
    }
    lms_report_free(r);
    return status;
}
