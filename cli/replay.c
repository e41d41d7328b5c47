/*
 * replay.c — `lmshim replay trace.jsonl...`: replays the traced launches of
 * one device through each residency policy at a budget, without a GPU, and
 * prints bytes fetched and evicted, misses, and modeled transfer time (bytes
 * fetched plus bytes read remotely, at link speed) next to Belady's MIN and
 * the bound that also allows reading in place, for the same launches and
 * budget. With --curve: the same per step at a series of budgets, as a
 * table and optionally an SVG plot.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "replay.h"
#include "units.h"

#define MAX_POINTS 256
#define BOUND_NAME "optimal(+remote)"

static void usage(FILE *f)
{
    fputs("usage: lmshim replay [--budget SIZE] [--policy NAME|all] [--device N] [--skip N]\n"
          "                     [--link-gbps G] [--curve [--budgets FROM:TO:N] [--svg out.svg]]\n"
          "                     trace.jsonl [more.jsonl...]\n"
          "  --budget   device budget to replay at (default: the trace's)\n"
          "  --skip     launches not counted (e.g. a warm-up step)\n"
          "  --curve    bytes over the link per step against budget, for every series\n"
          "  --budgets  the curve's budgets: N from FROM to TO (default: 16 from 0.1x to 1.2x the budget)\n"
          "  --svg      write the curve as an SVG plot\n", f);
}

/* Parses decimal digits and nothing else into *v; false otherwise. */
static bool whole_number(const char *s, unsigned long long *v)
{
    char *end;
    if (*s < '0' || *s > '9')
        return false;
    *v = strtoull(s, &end, 10);
    return *end == 0 && *v != ULLONG_MAX;
}

/* Parses FROM:TO:N into budgets; false when it is not that. */
static bool parse_budgets(const char *s, uint64_t *from, uint64_t *to, int *n)
{
    char a[64], b[64];
    const char *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2 || (size_t)(c1 - s) >= sizeof a || (size_t)(c2 - c1 - 1) >= sizeof b)
        return false;
    memcpy(a, s, (size_t)(c1 - s));
    a[c1 - s] = 0;
    memcpy(b, c1 + 1, (size_t)(c2 - c1 - 1));
    b[c2 - c1 - 1] = 0;
    char *end;
    long v = strtol(c2 + 1, &end, 10);
    if (!lms_parse_size(a, from) || !lms_parse_size(b, to) || *from == 0 || *to <= *from || c2[1] < '0' ||
        c2[1] > '9' || *end || v < 2 || v > MAX_POINTS)
        return false;
    *n = (int)v;
    return true;
}

/* A series of the table and the curve. */
typedef struct series {
    const char *name;
    lms_series_kind kind;
    const lms_policy *policy;
} series;

/* The series to show: MIN, the bound, then each policy (or the one asked
 * for); returns how many. */
static int pick_series(const char *which, series *s, int max)
{
    int n = 0;
    s[n++] = (series){"belady-min", LMS_SERIES_MIN, NULL};
    s[n++] = (series){BOUND_NAME, LMS_SERIES_BOUND, NULL};
    for (int i = 0; lms_policy_at(i) && n < max; i++)
        if (strcmp(which, "all") == 0 || strcmp(which, lms_policy_at(i)->name) == 0)
            s[n++] = (series){lms_policy_at(i)->name, LMS_SERIES_POLICY, lms_policy_at(i)};
    return n;
}

/* The table at one budget. */
static void print_table(const lms_trace_data *t, int dev, uint64_t budget, uint64_t skip, double link,
                        const series *s, int ns)
{
    printf("%-16s %14s %14s %9s %14s %12s %9s %9s\n", "policy", "fetched_MiB", "evicted_MiB", "misses",
           "remote_MiB", "transfer_ms", "vs_MIN", "vs_bound");
    lms_replay_result min, bound;
    lms_replay(t, dev, budget, NULL, skip, &min);
    lms_replay_bound(t, dev, budget, skip, &bound);
    if (min.launches == 0)
        fprintf(stderr, "lmshim replay: no launch of device %d with managed chunks alive%s to replay\n", dev,
                skip ? " after the skipped ones" : "");
    /* Link traffic: fetched bytes plus the bytes kernels read over the link
     * from chunks that were not resident (as the `none` policy does). */
    double min_link = (double)(min.fetched_bytes + min.remote_bytes);
    double bound_link = (double)(bound.fetched_bytes + bound.remote_bytes);
    for (int i = 0; i < ns; i++) {
        lms_replay_result r = s[i].kind == LMS_SERIES_MIN ? min : bound;
        if (s[i].kind == LMS_SERIES_POLICY)
            lms_replay(t, dev, budget, s[i].policy, skip, &r);
        double link_bytes = (double)(r.fetched_bytes + r.remote_bytes);
        printf("%-16s %14.1f %14.1f %9llu %14.1f %12.3f %9.3f %9.3f\n", s[i].name, r.fetched_bytes / 1048576.0,
               r.evicted_bytes / 1048576.0, (unsigned long long)r.misses, r.remote_bytes / 1048576.0,
               link_bytes / link / 1e6, min_link > 0 ? link_bytes / min_link : 1.0,
               bound_link > 0 ? link_bytes / bound_link : link_bytes > 0 ? 0.0 : 1.0);
    }
}

/* The curve: per series, bytes over the link per step at each budget. */
static int print_curve(const lms_trace_data *t, int dev, uint64_t budget, long long skip_arg, double link,
                       const series *s, int ns, uint64_t from, uint64_t to, int np, const char *svg)
{
    size_t launches = 0, period = lms_replay_period(t, dev, &launches);
    uint64_t skip = skip_arg >= 0 ? (uint64_t)skip_arg : period && launches / period >= 2 ? period : 0;
    double steps = period && launches > skip ? (double)(launches - skip) / (double)period : 1;
    uint64_t budgets[MAX_POINTS];
    for (int i = 0; i < np; i++)
        budgets[i] = from + (uint64_t)((double)(to - from) * i / (np - 1));
    double *vals = calloc((size_t)(ns * np), sizeof *vals);
    lms_replay_result *res = calloc((size_t)np, sizeof *res);
    if (!vals || !res) {
        free(vals);
        free(res);
        fputs("lmshim replay: out of memory\n", stderr);
        return 1;
    }
    printf("curve of device %d: %d budgets, %zu launches, a step of %zu, %llu not counted, %.6g steps counted\n",
           dev, np, launches, period, (unsigned long long)skip, steps);
    for (int k = 0; k < ns; k++) {
        int one = lms_replay_curve(t, dev, s[k].kind, s[k].policy, skip, budgets, np, res);
        for (int i = 0; i < np; i++)
            vals[k * np + i] = (double)(res[i].fetched_bytes + res[i].remote_bytes) / steps;
        printf("%s: %s\n", s[k].name, one == np ? "one pass" : one ? "one pass where every launch fits, replays else"
                                                                  : "a replay per budget");
    }
    for (int table = 0; table < 2; table++) {
        printf("\n%s per step\n%-12s", table ? "modeled transfer ms at --link-gbps" : "MiB over the link (fetched + read in place)",
               "budget_MiB");
        for (int k = 0; k < ns; k++)
            printf(" %16s", s[k].name);
        putchar('\n');
        for (int i = 0; i < np; i++) {
            printf("%-12.1f", budgets[i] / 1048576.0);
            for (int k = 0; k < ns; k++)
                printf(" %16.3f", table ? vals[k * np + i] / link / 1e6 : vals[k * np + i] / 1048576.0);
            putchar('\n');
        }
    }
    int rc = 0;
    if (svg) {
        const char *names[MAX_POINTS];
        for (int k = 0; k < ns && k < MAX_POINTS; k++)
            names[k] = s[k].name;
        char title[128];
        snprintf(title, sizeof title, "device %d: bytes over the link per step against budget", dev);
        if (lms_curve_svg(svg, title, budgets, np, names, vals, ns, budget) != 0) {
            perror(svg);
            rc = 1;
        }
    }
    free(vals);
    free(res);
    return rc;
}

/* True when the trace has an event of device dev. */
static bool has_device(const lms_trace_data *t, int dev)
{
    if (t->budget[dev])
        return true;
    for (size_t i = 0; i < t->nevents; i++)
        if (t->events[i].dev == dev)
            return true;
    return false;
}

int lms_cmd_replay(int argc, char **argv)
{
    uint64_t budget = 0, from = 0, to = 0;
    const char *which = "all", *svg = NULL;
    int dev = 0, np = 16;
    long long skip = -1;
    bool curve = false, budgets_given = false;
    double link = 55.0;
    lms_trace_data t = {0};
    int files = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            lms_trace_data_free(&t);
            return 0;
        }
        bool has_value = i + 1 < argc;
        const char *bad = NULL;
        if (strcmp(a, "--budget") == 0 && has_value) {
            if (!lms_parse_size(argv[++i], &budget) || budget == 0)
                bad = "not a size";
        } else if (strcmp(a, "--policy") == 0 && has_value) {
            which = argv[++i];
            if (strcmp(which, "all") != 0 && !lms_policy_find(which))
                bad = "unknown policy";
        } else if (strcmp(a, "--device") == 0 && has_value) {
            unsigned long long v;
            if (!whole_number(argv[++i], &v) || v >= 16)
                bad = "not a device number (0 to 15)";
            dev = (int)v;
        } else if (strcmp(a, "--skip") == 0 && has_value) {
            unsigned long long v;
            if (!whole_number(argv[++i], &v) || v > (unsigned long long)INT64_MAX)
                bad = "not a number of launches";
            skip = (long long)v;
        } else if (strcmp(a, "--link-gbps") == 0 && has_value) {
            if (lms_cli_parse_gbps(argv[++i], &link) != 0)
                bad = "not a positive number of GB/s";
        } else if (strcmp(a, "--curve") == 0) {
            curve = true;
        } else if (strcmp(a, "--budgets") == 0 && has_value) {
            budgets_given = true;
            if (!parse_budgets(argv[++i], &from, &to, &np))
                bad = "not FROM:TO:N (sizes FROM < TO, 2 <= N <= 256)";
        } else if (strcmp(a, "--svg") == 0 && has_value) {
            svg = argv[++i];
        } else if (a[0] == '-') {
            static const char *const valued[] = {"--budget", "--policy", "--device", "--skip", "--link-gbps",
                                                 "--budgets", "--svg"};
            bool needs = false;
            for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
                needs |= strcmp(a, valued[k]) == 0;
            if (needs)
                fprintf(stderr, "lmshim replay: %s needs a value\n", a);
            else
                fprintf(stderr, "lmshim replay: unknown flag %s\n", a);
            usage(stderr);
            lms_trace_data_free(&t);
            return 2;
        } else {
            if (lms_trace_load(a, &t, stderr) != 0) {
                fprintf(stderr, "lmshim replay: cannot read %s: %s\n", a, strerror(errno));
                lms_trace_data_free(&t);
                return 1;
            }
            files++;
        }
        if (bad) {
            fprintf(stderr, "lmshim replay: %s %s: %s\n", a, argv[i], bad);
            lms_trace_data_free(&t);
            return 2;
        }
    }
    const char *alone = svg ? "--svg" : budgets_given ? "--budgets" : NULL;
    if (alone && !curve) {
        fprintf(stderr, "lmshim replay: %s needs --curve\n", alone);
        lms_trace_data_free(&t);
        return 2;
    }
    if (!files || dev < 0 || dev >= 16 || !(link > 0)) {
        usage(stderr);
        lms_trace_data_free(&t);
        return 2;
    }
    if (!has_device(&t, dev)) {
        fprintf(stderr, "lmshim replay: the trace has nothing of device %d\n", dev);
        lms_trace_data_free(&t);
        return 1;
    }
    if (!budget)
        budget = t.budget[dev];
    if (!budget && !(curve && budgets_given)) {
        fprintf(stderr, "lmshim replay: the trace has no budget for device %d: give --budget\n", dev);
        lms_trace_data_free(&t);
        return 2;
    }
    series s[64];
    int ns = pick_series(which, s, 64);
    int rc = 0;
    if (curve) {
        if (!budgets_given) {
            from = budget / 10 ? budget / 10 : 1;
            to = budget + budget / 5;
            if (to <= from)
                to = from + 1;
        }
        rc = print_curve(&t, dev, budget, skip, link, s, ns, from, to, np, svg);
    } else {
        char b[32];
        lms_format_size(b, sizeof b, budget);
        printf("replay of device %d at budget %s, %zu events (%zu lines, %zu skipped)\n", dev, b, t.nevents,
               t.lines, t.bad_lines);
        print_table(&t, dev, budget, skip < 0 ? 0 : (uint64_t)skip, link, s, ns);
    }
    lms_trace_data_free(&t);
    return rc;
}
