/*
 * html.c — the HTML report (see html.h).
 *
 * The C side computes; the page draws. This file writes one JSON object
 * into the page (inside a <script type="application/json">) and the
 * compiled-in script renders it:
 *   - timeline: the report's samples of each rank and device, exact when
 *     there are at most LMS_HTML_BUCKETS of them, else one point per time
 *     bucket holding the minimum, maximum and last value of each series (the
 *     value entering the bucket counts toward its minimum and maximum, so
 *     no spike is lost); fetches and evictions summed per bucket the same way;
 *   - sites: each allocation site's frames, peak live bytes and bytes moved;
 *   - budget curve: the trace replayed (replay.c) at LMS_HTML_CURVE_POINTS
 *     budgets from 0.1x to 1.2x of the peak (or of `need` when larger), for
 *     Belady's MIN, each policy and the bound that allows reading in place
 *     (bound.c; its evictions are not charged), per step: bytes fetched,
 *     evicted, and read in place over the link (chunks that could not be
 *     made resident). Series come from lms_replay_curve (one pass where it can).
 *     A step is the trace's repeating launch sequence: the smallest period
 *     of the launches' functions and chunk sizes, found with the prefix
 *     function. The first step is warm-up and is not counted; with no
 *     repetition the whole trace is one step;
 *   - "need": the smallest budget at which MIN evicts nothing and leaves
 *     nothing remote: the largest device bytes plus bytes of live managed
 *     chunks already touched by a launch, over the trace. Below it some
 *     launch finds its chunks do not fit with what is resident.
 */
#include "html.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "policy.h"
#include "replay.h"

#define DEVS 16
#define MAX_MARKS 2000

extern const char lms_html_js[];    /* report.js, compiled in (embed.c) */
extern const char lms_html_css[];   /* report.css */

/* Writes s as a JSON string; '<' and '>' are escaped so that the text can
 * never close the <script> element it sits in. */
static void put_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == '<' || c == '>' || c == '&')
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* Writes "name":[v0,v1,...]. */
static void put_u64s(FILE *out, const char *name, const uint64_t *v, size_t n)
{
    fprintf(out, "\"%s\":[", name);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)v[i]);
    fputs("]", out);
}

/* ---- the trace's header: the options it ran with ---------------------------- */

typedef struct run_options {
    char policy[32];     /* LMS_POLICY */
    char limit[32];      /* LMS_LIMIT as written */
} run_options;

/* Reads the options of the header line of `path` (defaults when absent). */
static void read_options(const char *path, run_options *o)
{
    snprintf(o->policy, sizeof o->policy, "lookahead");
    snprintf(o->limit, sizeof o->limit, "1");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[8192];
    if (fgets(line, sizeof line, f)) {
        lms_json_node nodes[256];
        lms_json j = {.nodes = nodes, .cap = 256};
        size_t n = strcspn(line, "\n");
        int opts;
        if (lms_json_parse(&j, line, n) && j.nodes[0].type == LMS_JSON_OBJECT &&
            (opts = lms_json_get(&j, 0, "options")) >= 0 && j.nodes[opts].type == LMS_JSON_OBJECT) {
            lms_json_string(&j, opts, "LMS_POLICY", o->policy, sizeof o->policy);
            lms_json_string(&j, opts, "LMS_LIMIT", o->limit, sizeof o->limit);
        }
    }
    fclose(f);
}

/* ---- timeline ------------------------------------------------------------------ */

/* One timeline point: per series (device, resident, host) the smallest,
 * largest and last bytes within a time bucket, or one exact sample. */
typedef struct bucket3 {
    uint64_t min[3], max[3], last[3];   /* bytes */
    double t;                           /* seconds: the bucket's first sample */
    bool used;                          /* holds a sample */
} bucket3;

/* The three drawn series of a sample, in bytes. */
static void sample_values(const lms_report_sample *s, uint64_t v[3])
{
    v[0] = s->device;
    v[1] = s->resident;
    v[2] = s->host;
}

/* Writes "tl": the timeline of one panel, and its fragmentation maxima. */
static void put_timeline(FILE *out, const lms_report *r, int file, int dev, const lms_report_dev *d)
{
    double tmax = 0;
    uint64_t holes = 0, rounding = 0;
    lms_report_sample s;
    for (size_t k = 0; k < d->nsamples; k++) {
        lms_report_sample_at(r, file, dev, k, &s);
        tmax = s.t > tmax ? s.t : tmax;
        holes = s.holes > holes ? s.holes : holes;
        rounding = s.rounding > rounding ? s.rounding : rounding;
    }
    for (size_t k = 0; k < d->nmoves; k++) {
        double t;
        bool ev;
        uint64_t b;
        lms_report_move_at(r, file, dev, k, &t, &ev, &b);
        tmax = t > tmax ? t : tmax;
    }
    if (tmax <= 0)
        tmax = 1e-6;
    fprintf(out, "\"holes\":%llu,\"rounding\":%llu,\"t1\":%.9g,\"samples\":%zu,", (unsigned long long)holes,
            (unsigned long long)rounding, tmax, d->nsamples);
    bool exact = d->nsamples <= LMS_HTML_BUCKETS;
    size_t nb = exact ? d->nsamples : LMS_HTML_BUCKETS;
    bucket3 *b = calloc(nb ? nb : 1, sizeof *b);
    if (!b) {
        fputs("\"exact\":true,\"t\":[],\"v\":[],\"moves\":[],", out);
        return;
    }
    uint64_t prev[3] = {0, 0, 0};
    for (size_t k = 0; k < d->nsamples; k++) {
        lms_report_sample_at(r, file, dev, k, &s);
        if (!(s.t > 0))
            s.t = 0;   /* stamped before the trace's header (lines out of order): drawn at its start */
        uint64_t v[3];
        sample_values(&s, v);
        size_t i = exact ? k : (size_t)(s.t / tmax * (double)(nb - 1));
        if (i >= nb)
            i = nb - 1;
        bucket3 *x = &b[i];
        if (!x->used) {
            x->used = true;
            x->t = s.t;
            for (int c = 0; c < 3; c++)
                x->min[c] = x->max[c] = exact ? v[c] : prev[c];
        }
        for (int c = 0; c < 3; c++) {
            x->min[c] = v[c] < x->min[c] ? v[c] : x->min[c];
            x->max[c] = v[c] > x->max[c] ? v[c] : x->max[c];
            x->last[c] = prev[c] = v[c];
        }
    }
    size_t points = 0;
    fprintf(out, "\"exact\":%s,\"t\":[", exact ? "true" : "false");
    for (size_t i = 0; i < nb; i++)
        if (b[i].used)
            fprintf(out, "%s%.9g", points++ ? "," : "", b[i].t);
    /* v: per point, min, max and last of device, resident, host. */
    fputs("],\"v\":[", out);
    bool first = true;
    for (size_t i = 0; i < nb; i++)
        if (b[i].used)
            for (int c = 0; c < 3; c++) {
                fprintf(out, "%s%llu,%llu,%llu", first ? "" : ",", (unsigned long long)b[i].min[c],
                        (unsigned long long)b[i].max[c], (unsigned long long)b[i].last[c]);
                first = false;
            }
    fprintf(out, "],\"points\":%zu,", points);
    free(b);

    /* Moves: [t, fetched bytes, evicted bytes], exact or summed per bucket. */
    bool mexact = d->nmoves <= LMS_HTML_BUCKETS;
    size_t nm = mexact ? d->nmoves : LMS_HTML_BUCKETS;
    uint64_t *sums = calloc(nm ? nm * 2 : 1, sizeof *sums);
    double *ts = calloc(nm ? nm : 1, sizeof *ts);
    fputs("\"moves\":[", out);
    if (sums && ts) {
        for (size_t k = 0; k < d->nmoves; k++) {
            double t;
            bool ev;
            uint64_t bytes;
            lms_report_move_at(r, file, dev, k, &t, &ev, &bytes);
            t = t > 0 ? t : 0;
            size_t i = mexact ? k : (size_t)(t / tmax * (double)(nm - 1));
            if (i >= nm)
                i = nm - 1;
            sums[2 * i + ev] += bytes;
            ts[i] = mexact ? t : (double)i / (double)(nm - 1) * tmax;
        }
        first = true;
        for (size_t i = 0; i < nm; i++)
            if (sums[2 * i] || sums[2 * i + 1] || mexact) {
                fprintf(out, "%s%.9g,%llu,%llu", first ? "" : ",", ts[i], (unsigned long long)sums[2 * i],
                        (unsigned long long)sums[2 * i + 1]);
                first = false;
            }
    }
    free(sums);
    free(ts);
    fputs("],\"marks\":[", out);
    for (size_t k = 0; k < d->nmarks && k < MAX_MARKS; k++) {
        double t;
        char kind;
        lms_report_mark_at(r, file, dev, k, &t, &kind);
        fprintf(out, "%s%.9g,\"%c\"", k ? "," : "", t > 0 ? t : 0, kind);
    }
    fputs("],", out);
}

/* ---- budget curve ----------------------------------------------------------------- */

/* Writes "curve": replays of one device at a series of budgets. */
static void put_curve(FILE *out, const lms_trace_data *t, int dev, uint64_t peak, uint64_t current)
{
    size_t launches = 0, period = lms_replay_period(t, dev, &launches);
    size_t steps = period ? launches / period : 0;
    uint64_t skip = steps >= 2 ? period : 0;
    double counted = steps >= 2 ? (double)(launches - period) / (double)period : 1;
    uint64_t need = lms_replay_need(t, dev);
    fprintf(out, "\"curve\":{\"launches\":%zu,\"period\":%zu,\"steps\":%.6g,\"skip\":%llu,\"need\":%llu,"
                 "\"current\":%llu,",
            launches, period, counted, (unsigned long long)skip, (unsigned long long)need,
            (unsigned long long)current);
    /* The curve spans 0.1x to 1.2x of the larger of the peak and `need`;
     * two more replays of each series: at the current budget and at need. */
    uint64_t budgets[LMS_HTML_CURVE_POINTS + 2], top = peak > need ? peak : need;
    int nb = top ? LMS_HTML_CURVE_POINTS : 0;
    for (int i = 0; i < nb; i++) {   /* bytes: a count near 2^64 must not wrap (a hand-made trace) */
        double b = (double)top * (0.1 + 1.1 * i / (LMS_HTML_CURVE_POINTS - 1));
        budgets[i] = b < 18446744073709551615.0 ? (uint64_t)b : UINT64_MAX;
    }
    budgets[nb] = current;
    budgets[nb + 1] = need;
    put_u64s(out, "budgets", budgets, (size_t)nb);
    fputs(",\"series\":[", out);
    /* MIN, each policy, then the bound that allows reading in place, whose
     * evictions are not charged (its "moved" stays a lower bound). */
    int npol = 0;
    while (lms_policy_at(npol))
        npol++;
    for (int p = -1; p <= npol; p++) {
        const lms_policy *pol = p >= 0 && p < npol ? lms_policy_at(p) : NULL;
        bool bound = p == npol;
        uint64_t fetched[LMS_HTML_CURVE_POINTS + 2], evicted[LMS_HTML_CURVE_POINTS + 2],
            remote[LMS_HTML_CURVE_POINTS + 2];
        lms_replay_result res[LMS_HTML_CURVE_POINTS + 2];
        lms_replay_curve(t, dev, pol ? LMS_SERIES_POLICY : bound ? LMS_SERIES_BOUND : LMS_SERIES_MIN, pol, skip,
                         budgets, nb + 2, res);
        for (int i = 0; i <= nb + 1; i++) {
            fetched[i] = (uint64_t)((double)res[i].fetched_bytes / counted);
            evicted[i] = bound ? 0 : (uint64_t)((double)res[i].evicted_bytes / counted);
            remote[i] = (uint64_t)((double)res[i].remote_bytes / counted);
        }
        fprintf(out, "%s{\"name\":", p < 0 ? "" : ",");
        put_str(out, pol ? pol->name : bound ? "bound" : "min");
        fputc(',', out);
        put_u64s(out, "fetched", fetched, (size_t)nb);
        fputc(',', out);
        put_u64s(out, "evicted", evicted, (size_t)nb);
        fputc(',', out);
        put_u64s(out, "remote", remote, (size_t)nb);
        for (int i = nb; i <= nb + 1; i++)
            fprintf(out, ",\"%s\":{\"fetched\":%llu,\"evicted\":%llu,\"remote\":%llu}",
                    i == nb ? "at_current" : "at_need", (unsigned long long)fetched[i],
                    (unsigned long long)evicted[i], (unsigned long long)remote[i]);
        fputc('}', out);
    }
    fputs("]}", out);
}

/* ---- the page ---------------------------------------------------------------------- */

/* Writes "sites" of one file: id, peak, allocations, bytes moved, frames. */
static void put_sites(FILE *out, const lms_report *r, int file)
{
    fputs("\"sites\":[", out);
    size_t n = lms_report_nsites(r, file);
    for (size_t k = 0; k < n; k++) {
        lms_report_site s;
        lms_report_site_at(r, file, k, &s);
        fprintf(out, "%s{\"id\":%d,\"peak\":%llu,\"count\":%llu,\"moved\":%llu,\"frames\":[", k ? "," : "", s.id,
                (unsigned long long)s.peak, (unsigned long long)s.count, (unsigned long long)s.moved);
        bool first = true;
        for (const char *l = s.frames; l && *l;) {
            const char *nl = strchr(l, '\n');
            size_t len = nl ? (size_t)(nl - l) : strlen(l);
            char frame[512];
            snprintf(frame, sizeof frame, "%.*s", (int)(len < sizeof frame ? len : sizeof frame - 1), l);
            if (!first)
                fputc(',', out);
            put_str(out, frame);
            first = false;
            l += len + (nl != NULL);
        }
        fputs("]}", out);
    }
    fputs("]", out);
}

/* Writes the data object: {"link_gbps", "ranks": [{..., "panels": [...]}]}. */
static void put_data(FILE *out, const lms_report *r, double link_gbps, FILE *errors)
{
    fprintf(out, "{\"format\":1,\"link_gbps\":%.6g,\"buckets\":%d,\"ranks\":[", link_gbps, LMS_HTML_BUCKETS);
    for (int f = 0; f < lms_report_nfiles(r); f++) {
        run_options o;
        read_options(lms_report_path(r, f), &o);
        fprintf(out, "%s{\"rank\":%d,\"path\":", f ? "," : "", lms_report_rank(r, f));
        put_str(out, lms_report_path(r, f));
        fputs(",\"policy\":", out);
        put_str(out, o.policy);
        fputs(",\"limit\":", out);
        put_str(out, o.limit);
        fputc(',', out);
        put_sites(out, r, f);
        fputs(",\"panels\":[", out);
        lms_trace_data t = {0};
        bool loaded = lms_trace_load(lms_report_path(r, f), &t, errors) == 0;
        bool first = true;
        for (int dv = 0; dv < DEVS; dv++) {
            lms_report_dev d;
            if (!lms_report_device(r, f, dv, &d))
                continue;
            fprintf(out, "%s{\"dev\":%d,\"budget\":%llu,\"physical\":%llu,\"peak\":%llu,\"fallbacks\":%llu,"
                         "\"oom\":%llu,\"prefetched\":%llu,\"evicted\":%llu,\"launches\":%llu,",
                    first ? "" : ",", dv, (unsigned long long)d.budget, (unsigned long long)d.physical,
                    (unsigned long long)d.peak, (unsigned long long)d.fallbacks, (unsigned long long)d.oom,
                    (unsigned long long)d.prefetched, (unsigned long long)d.evicted,
                    (unsigned long long)d.launches);
            first = false;
            put_u64s(out, "allocs", d.allocs, 5);
            fputc(',', out);
            put_timeline(out, r, f, dv, &d);
            if (loaded)
                put_curve(out, &t, dv, d.peak, d.budget ? d.budget : t.budget[dv]);
            else
                fputs("\"curve\":null", out);
            fputs("}", out);
        }
        fputs("]}", out);
        lms_trace_data_free(&t);
    }
    fputs("]}", out);
}

/* The page: style, data, script (see html.h). */
int lms_report_html(const lms_report *r, const char *path, double link_gbps, FILE *errors)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n<title>lmshim report</title>\n<style>\n", out);
    fputs(lms_html_css, out);
    fputs("</style></head>\n<body data-status=\"loading\">\n"
          "<noscript>This report draws with JavaScript.</noscript>\n"
          "<script id=\"lms-data\" type=\"application/json\">", out);
    put_data(out, r, link_gbps, errors);
    fputs("</script>\n<script>\n", out);
    fputs(lms_html_js, out);
    fputs("</script>\n</body></html>\n", out);
    return fclose(out) == 0 ? 0 : -1;
}
