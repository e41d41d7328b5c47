/*
 * trace_fuzz.c — libFuzzer harness for the trace readers and the HTML
 * writer: every input is read as a trace by the replay loader (then
 * replayed, bounded and curved) and by the report (whose text analysis
 * runs to the end), under AddressSanitizer and UBSan; inputs up to 16 KiB
 * are also written as an HTML page, whose data island must end at its own
 * closing tag and parse as JSON (a hostile name must not end the script).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "html.h"
#include "json.h"
#include "replay.h"
#include "report.h"

#define DATA_OPEN "<script id=\"lms-data\" type=\"application/json\">"

/* Writes `size` bytes to a fresh file; returns its path (static) or NULL. */
static const char *as_file(const uint8_t *data, size_t size, const char *suffix)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/lms_fuzz_%d%s", (int)getpid(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    bool ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok ? path : NULL;
}

/* Reads a whole file (the caller frees it); NULL if it cannot. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 65536;
            char *nb = realloc(buf, cap);
            if (!nb)
                break;
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    if (buf)
        buf[n] = 0;
    *len = n;
    return buf;
}

/* The page of a trace: its data island is closed by the first "</" after
 * it (nothing inside may contain one) and parses as JSON. */
static void check_html(const uint8_t *data, size_t size)
{
    const char *trace = as_file(data, size, ".jsonl");
    if (!trace)
        return;
    char tpath[64];
    snprintf(tpath, sizeof tpath, "%s", trace);
    char hpath[64];
    snprintf(hpath, sizeof hpath, "/tmp/lms_fuzz_%d.html", (int)getpid());
    lms_report *rep = lms_report_new();
    FILE *null = fopen("/dev/null", "w");
    if (rep && null && lms_report_add(rep, tpath, null) == 0 && lms_report_html(rep, hpath, 55.0, null) == 0) {
        size_t len = 0;
        char *page = slurp(hpath, &len);
        if (page) {
            char *open = strstr(page, DATA_OPEN);
            if (!open)
                abort();   /* every page has its data island */
            char *body = open + strlen(DATA_OPEN);
            char *end = strstr(body, "</");
            if (!end || strncmp(end, "</script>", 9) != 0)
                abort();   /* a "</" inside the data, or no end */
            static lms_json_node nodes[1 << 18];
            lms_json j = {.nodes = nodes, .cap = 1 << 18};
            if (!lms_json_parse(&j, body, (size_t)(end - body)) && strcmp(j.error, "too many values") != 0) {
                fprintf(stderr, "html data island: %s at %zu\n", j.error, j.error_at);
                abort();   /* the data is not JSON */
            }
            free(page);
        }
    }
    if (null)
        fclose(null);
    if (rep)
        lms_report_free(rep);
    unlink(tpath);
    unlink(hpath);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lms_trace_data t = {0};
    lms_trace_load_text("fuzz", (const char *)data, size, &t, NULL);
    lms_replay_result r;
    if (t.nevents < 4096) {
        lms_replay(&t, 0, 1ull << 30, NULL, 0, &r);
        lms_replay_bound(&t, 0, 1ull << 30, 2, &r);
        const uint64_t budgets[3] = {1ull << 20, 1ull << 26, 1ull << 30};
        lms_replay_result curve[3];
        if (lms_policy_find("lru"))
            lms_replay_curve(&t, 0, LMS_SERIES_POLICY, lms_policy_find("lru"), 1, budgets, 3, curve);
    }
    lms_trace_data_free(&t);
    lms_report *rep = lms_report_new();
    if (rep) {
        lms_report_add_text(rep, "fuzz", (const char *)data, size, NULL);
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            lms_report_text(rep, null);
            fclose(null);
        }
        lms_report_free(rep);
    }
    if (size <= 16384)
        check_html(data, size);
    return 0;
}
