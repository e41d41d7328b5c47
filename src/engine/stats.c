/*
 * stats.c — the exit summary and lms_get_stats (see stats.h).
 */
#include "stats.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "account.h"
#include "chunks.h"
#include "frag.h"
#include "log.h"
#include "options.h"
#include "policy.h"
#include "room.h"
#include "trace.h"
#include "units.h"

int lms_stats_snapshot(int device, lms_device_stats *out)
{
    if (!out || device < 0 || device >= LMS_MAX_DEVICES)
        return -1;
    const lms_account *a = &lms_accounts[device];
    if (atomic_load(&a->state) != 2)
        return -1;
    memset(out, 0, sizeof *out);
    out->physical = a->physical;
    out->budget = a->budget;
    out->used = atomic_load(&a->used);
    out->peak = atomic_load(&a->peak);
    for (int p = 0; p < LMS_PLACE_COUNT && p < LMS_STATS_PLACES; p++) {
        out->live_chunks[p] = atomic_load(&a->live_chunks[p]);
        out->live_bytes[p] = atomic_load(&a->live_bytes[p]);
        out->allocs[p] = atomic_load(&a->allocs[p]);
    }
    out->frees = atomic_load(&a->frees);
    out->fallbacks = atomic_load(&a->fallbacks);
    out->oom_failures = atomic_load(&a->oom_failures);
    out->prefetched_bytes = atomic_load(&a->prefetched_bytes);
    out->prefetches = atomic_load(&a->prefetches);
    out->evicted_bytes = atomic_load(&a->evicted_bytes);
    out->evictions = atomic_load(&a->evictions);
    out->launches_scanned = atomic_load(&a->launches_scanned);
    out->budget_violations = atomic_load(&a->violations);
    return 0;
}

/* Appends formatted text to a buffer. */
static void add(char *buf, size_t len, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    if (*at >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at += (size_t)n < len - *at ? (size_t)n : len - *at - 1;
}

void lms_stats_print(void)
{
    char buf[4096];
    size_t at = 0;
    char s1[32], s2[32], s3[32];
    for (int d = 0; d < LMS_MAX_DEVICES; d++) {
        lms_device_stats st;
        if (lms_stats_snapshot(d, &st) != 0)
            continue;
        at = 0;
        lms_format_size(s1, sizeof s1, st.peak);
        lms_format_size(s2, sizeof s2, st.budget);
        lms_format_size(s3, sizeof s3, st.physical);
        add(buf, sizeof buf, &at, "lmshim summary, device %d: peak used %s of budget %s (device %s)\n",
            d, s1, s2, s3);
        add(buf, sizeof buf, &at, "  %-8s %10s %12s %12s\n", "place", "allocs", "live chunks", "live bytes");
        for (int p = 0; p < LMS_PLACE_COUNT; p++) {
            if (!st.allocs[p])
                continue;
            lms_format_size(s1, sizeof s1, st.live_bytes[p]);
            add(buf, sizeof buf, &at, "  %-8s %10llu %12llu %12s\n", lms_place_names[p],
                (unsigned long long)st.allocs[p], (unsigned long long)st.live_chunks[p], s1);
        }
        add(buf, sizeof buf, &at, "  frees %llu, fallbacks %llu, out-of-memory answers %llu\n",
            (unsigned long long)st.frees, (unsigned long long)st.fallbacks,
            (unsigned long long)st.oom_failures);
        if (st.launches_scanned) {
            lms_format_size(s1, sizeof s1, st.prefetched_bytes);
            lms_format_size(s2, sizeof s2, st.evicted_bytes);
            add(buf, sizeof buf, &at, "  launches scanned %llu, prefetched %s in %llu, evicted %s in %llu\n",
                (unsigned long long)st.launches_scanned, s1, (unsigned long long)st.prefetches, s2,
                (unsigned long long)st.evictions);
        }
        const lms_account *a = &lms_accounts[d];
        char frac[32];
        snprintf(frac, sizeof frac, "%g", lms_opt.frac);   /* as the trace's header writes it */
        lms_room room = {.budget = st.budget, .device = atomic_load(&a->device_at_peak),
                         .managed_peak = atomic_load(&a->managed_peak), .fetched = st.prefetched_bytes,
                         .named = atomic_load(&a->named_bytes), .frac = lms_opt.frac, .frac_text = frac,
                         .no_fetch = lms_opt.policy && strcmp(lms_opt.policy->name, "none") == 0};
        at += lms_room_text(buf + at, sizeof buf - at, "  ", &room);
        lms_frag f;
        lms_frag_measure(d, &f);
        lms_format_size(s1, sizeof s1, f.holes);
        lms_format_size(s2, sizeof s2, f.reserved - f.requested);
        lms_format_size(s3, sizeof s3, f.largest_grant);
        add(buf, sizeof buf, &at, "  fragmentation: holes %s between %llu live device chunks, rounding %s, "
            "largest device grant now %s\n", s1, (unsigned long long)f.chunks, s2, s3);
        lms_log_write(buf, at);
    }
    at = 0;
    add(buf, sizeof buf, &at, "lmshim options:");
    for (int i = 0; i < LMS_OPT_COUNT; i++) {
        char v[300], env[64];
        lms_option_value(i, v, sizeof v);
        add(buf, sizeof buf, &at, " %s=%s", lms_option_env(i, env, sizeof env), v);
    }
    add(buf, sizeof buf, &at, "\n");
    lms_log_write(buf, at);
}

void lms_stats_trace_summary(void)
{
    for (int d = 0; d < LMS_MAX_DEVICES; d++) {
        lms_device_stats st;
        if (lms_stats_snapshot(d, &st) != 0)
            continue;
        lms_frag f;
        lms_frag_measure(d, &f);
        lms_trace_write_summary(&(lms_ev_summary){
            .dev = d, .physical = st.physical, .budget = st.budget, .used = st.used, .peak = st.peak,
            .allocs = {{st.allocs[0], st.allocs[1], st.allocs[2], st.allocs[3], st.allocs[4]}}, .frees = st.frees,
            .fallbacks = st.fallbacks, .oom = st.oom_failures, .prefetched = st.prefetched_bytes,
            .evicted = st.evicted_bytes, .launches_scanned = st.launches_scanned, .holes = f.holes,
            .rounding = f.reserved - f.requested});
    }
}
