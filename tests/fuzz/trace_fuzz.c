/*
 * trace_fuzz.c — libFuzzer harness for the trace readers: every input is
 * read as a trace by the replay loader (then replayed, bounded and
 * curved) and by the report (whose text,
 * SVG-free analysis runs to the end), under AddressSanitizer and UBSan.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "replay.h"
#include "report.h"

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
    return 0;
}
