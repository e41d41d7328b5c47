/*
 * replay.c — `lmshim replay trace.jsonl...`: replays the traced launches of
 * one device through each residency policy at a budget, without a GPU, and
 * prints bytes fetched and evicted, misses, and modeled transfer time (bytes
 * fetched plus bytes read remotely, at link speed) next to Belady's MIN for
 * the same launches and budget.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "replay.h"
#include "units.h"

static void usage(FILE *f)
{
    fputs("usage: lmshim replay [--budget SIZE] [--policy NAME|all] [--device N] [--skip N]\n"
          "                     [--link-gbps G] trace.jsonl [more.jsonl...]\n"
          "  --budget   device budget to replay at (default: the trace's)\n"
          "  --skip     launches not counted (e.g. a warm-up step)\n", f);
}

/* Reads a whole non-negative decimal number of at most max; -1 if text is
 * anything else. */
static long long parse_count(const char *text, unsigned long long max)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*text < '0' || *text > '9' || *end || errno || v > max)
        return -1;
    return (long long)v;
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
    uint64_t budget = 0;
    const char *which = "all";
    int dev = 0;
    unsigned long long skip = 0;
    double link = 55.0;
    lms_trace_data t = {0};
    int files = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        bool value_flag = strcmp(a, "--budget") == 0 || strcmp(a, "--policy") == 0 || strcmp(a, "--device") == 0 ||
                          strcmp(a, "--skip") == 0 || strcmp(a, "--link-gbps") == 0;
        if (value_flag && i + 1 >= argc) {
            fprintf(stderr, "lmshim replay: %s needs a value\n", a);
            return 2;
        }
        bool has_value = value_flag;
        if (strcmp(a, "--budget") == 0 && has_value) {
            if (!lms_parse_size(argv[++i], &budget) || budget == 0) {
                fprintf(stderr, "lmshim replay: bad --budget %s\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--policy") == 0 && has_value) {
            which = argv[++i];
            if (strcmp(which, "all") != 0 && !lms_policy_find(which)) {
                fprintf(stderr, "lmshim replay: unknown policy %s\n", which);
                return 2;
            }
        } else if (strcmp(a, "--device") == 0 && has_value) {
            long long v = parse_count(argv[++i], 15);
            if (v < 0) {
                fprintf(stderr, "lmshim replay: bad --device %s (a device number, 0 to 15)\n", argv[i]);
                return 2;
            }
            dev = (int)v;
        } else if (strcmp(a, "--skip") == 0 && has_value) {
            long long v = parse_count(argv[++i], 1ull << 62);
            if (v < 0) {
                fprintf(stderr, "lmshim replay: bad --skip %s (a number of launches)\n", argv[i]);
                return 2;
            }
            skip = (unsigned long long)v;
        } else if (strcmp(a, "--link-gbps") == 0 && has_value) {
            if (lms_cli_parse_gbps(argv[++i], &link) != 0) {
                fprintf(stderr, "lmshim replay: --link-gbps %s: not a positive number of GB/s\n", argv[i]);
                return 2;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "lmshim replay: unknown flag %s\n", a);
            usage(stderr);
            return 2;
        } else {
            if (lms_trace_load(a, &t, stderr) != 0) {
                fprintf(stderr, "lmshim replay: cannot read %s: %s\n", a, strerror(errno));
                lms_trace_data_free(&t);
                return 1;
            }
            files++;
        }
    }
    if (!files || dev < 0 || dev >= 16 || !(link > 0)) {
        usage(stderr);
        return 2;
    }
    if (!has_device(&t, dev)) {
        fprintf(stderr, "lmshim replay: the trace has nothing of device %d\n", dev);
        lms_trace_data_free(&t);
        return 1;
    }
    if (!budget)
        budget = t.budget[dev];
    if (!budget) {
        fprintf(stderr, "lmshim replay: the trace has no budget for device %d: give --budget\n", dev);
        return 2;
    }
    char b[32];
    lms_format_size(b, sizeof b, budget);
    printf("replay of device %d at budget %s, %zu events (%zu lines, %zu skipped)\n", dev, b, t.nevents, t.lines,
           t.bad_lines);
    printf("%-12s %14s %14s %9s %14s %12s %9s\n", "policy", "fetched_MiB", "evicted_MiB", "misses", "remote_MiB",
           "transfer_ms", "vs_MIN");
    lms_replay_result min;
    lms_replay(&t, dev, budget, NULL, skip, &min);
    if (min.launches == 0)
        fprintf(stderr, "lmshim replay: no launch of device %d with managed chunks alive%s to replay\n", dev,
                skip ? " after the skipped ones" : "");
    /* Link traffic: fetched bytes plus the bytes kernels read over the link
     * from chunks that were not resident (as the `none` policy does). */
    double min_link = (double)(min.fetched_bytes + min.remote_bytes);
    for (int i = -1; lms_policy_at(i < 0 ? 0 : i) || i < 0; i++) {
        const lms_policy *p = i < 0 ? NULL : lms_policy_at(i);
        if (p && strcmp(which, "all") != 0 && strcmp(which, p->name) != 0)
            continue;
        lms_replay_result r = min;
        if (p)
            lms_replay(&t, dev, budget, p, skip, &r);
        double link_bytes = (double)(r.fetched_bytes + r.remote_bytes);
        printf("%-12s %14.1f %14.1f %9llu %14.1f %12.3f %9.3f\n", p ? p->name : "belady-min",
               r.fetched_bytes / 1048576.0, r.evicted_bytes / 1048576.0, (unsigned long long)r.misses,
               r.remote_bytes / 1048576.0, link_bytes / link / 1e6,
               min_link > 0 ? link_bytes / min_link : 1.0);
    }
    lms_trace_data_free(&t);
    return 0;
}
