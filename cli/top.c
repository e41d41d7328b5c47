/*
 * top.c — `lmshim top [GROUP]`: the live view of shared budgets. Reads the
 * group files (src/common/groupfile.h) read-only: per GPU (by UUID) the
 * group's budget and usage, per member its pid, command, device bytes, managed bytes
 * resident and off the device, and what it fetched and evicted per second.
 * Refreshed once a second; `--once` prints one view (after one second, to
 * have rates), `--json` one JSON object per group and view, one a line
 * (JSON Lines).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "groupfile.h"
#include "options.h"
#include "units.h"

#define MAX_GROUPS 32

/* One group file, mapped read-only, and the counters of its members at the
 * previous view (for the rates). */
typedef struct watched {
    char name[LMS_GROUP_NAME_MAX + 1];
    char path[512];
    int fd;
    lms_group_header *h;                           /* the mapping; NULL if unusable */
    uint64_t joined[LMS_GROUP_SLOTS];              /* identity of a slot's member at the last view */
    uint64_t fetched[LMS_GROUP_SLOTS][LMS_GROUP_DEVICES];   /* bytes, at the last view */
    uint64_t evicted[LMS_GROUP_SLOTS][LMS_GROUP_DEVICES];
} watched;

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

/* A group file truncated while it is read faults (SIGBUS) inside show():
 * the view of that group is dropped there instead of killing top. */
static sigjmp_buf bus_jump;
static volatile sig_atomic_t reading;
static void on_bus(int sig)
{
    if (reading)
        siglongjmp(bus_jump, 1);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Stops watching a group whose file is no longer a group file. */
static void drop(watched *w, const char *why)
{
    fprintf(stderr, "lmshim top: %s: %s; no longer shown\n", w->path, why);
    munmap(w->h, LMS_GROUP_FILE_BYTES);
    close(w->fd);
    w->h = NULL;
}

static void show(watched *w, bool json, double dt, FILE *f);

/* Shows one view of a watched group on out, unless its file was truncated
 * (before or while it is read); false if it is no longer watched. The view
 * is built in memory first, so a dropped one leaves no half line. */
static bool show_safely(watched *w, bool json, double dt, FILE *out)
{
    struct stat st;
    if (fstat(w->fd, &st) != 0 || (uint64_t)st.st_size != LMS_GROUP_FILE_BYTES) {
        drop(w, "truncated");
        return false;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return true;
    reading = 1;
    bool ok = sigsetjmp(bus_jump, 1) == 0;
    if (ok)
        show(w, json, dt, mem);
    reading = 0;
    fclose(mem);
    if (ok)
        fwrite(buf, 1, len, out);
    else
        drop(w, "truncated while read");
    free(buf);
    return ok;
}

static void usage(FILE *f)
{
    fputs("usage: lmshim top [GROUP] [--dir DIR] [--once] [--json]\n"
          "  the shared budgets of LMS_GROUP groups: per GPU (by UUID) the group's budget and usage,\n"
          "  per member pid, command, device bytes, managed bytes resident and off the device,\n"
          "  fetched and evicted per second. GROUP: LMS_GROUP, else every group in DIR\n"
          "  (LMS_GROUP_DIR, default /dev/shm). Refreshed every second until interrupted.\n"
          "  --once   one view (after one second, for the rates)\n"
          "  --json   one JSON object per group and view, one a line (JSON Lines)\n", f);
}

/* Maps a group file read-only; false (and why on stderr) if unusable.
 * O_NONBLOCK: a FIFO in a group file's place must not wait for a writer. */
static bool open_group(watched *w)
{
    w->fd = open(w->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    const char *why = NULL;
    if (w->fd < 0 || fstat(w->fd, &st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if ((uint64_t)st.st_size != LMS_GROUP_FILE_BYTES)
        why = "wrong size";
    if (!why) {
        void *m = mmap(NULL, LMS_GROUP_FILE_BYTES, PROT_READ, MAP_SHARED, w->fd, 0);
        if (m == MAP_FAILED)
            why = strerror(errno);
        else if ((why = lms_groupfile_check(m, LMS_GROUP_FILE_BYTES)) != NULL)
            munmap(m, LMS_GROUP_FILE_BYTES);
        else
            w->h = m;
    }
    if (why) {
        fprintf(stderr, "lmshim top: %s: %s\n", w->path, why);
        if (w->fd >= 0)
            close(w->fd);
        return false;
    }
    return true;
}

/* Finds the groups to watch: the one named, or every group file in dir. */
static int find_groups(const char *dir, const char *name, watched *ws)
{
    int n = 0;
    if (name) {
        if (lms_groupfile_path(dir, name, ws[0].path, sizeof ws[0].path) != 0) {
            fprintf(stderr, "lmshim top: '%s' is not a group name\n", name);
            return -1;
        }
        snprintf(ws[0].name, sizeof ws[0].name, "%s", name);
        return open_group(&ws[0]) ? 1 : -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "lmshim top: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < MAX_GROUPS) {
        const char *prefix = "lmshim-group-";
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        watched *w = &ws[n];
        snprintf(w->name, sizeof w->name, "%s", e->d_name + strlen(prefix));
        if (lms_groupfile_path(dir, w->name, w->path, sizeof w->path) == 0 && open_group(w))
            n++;
    }
    closedir(d);
    if (n == 0)
        fprintf(stderr, "lmshim top: no group in %s\n", dir);
    return n > 0 ? n : -1;
}

/* Length of the well-formed UTF-8 sequence at s (at most n bytes), or 0
 * if it is not one (a stray, overlong, surrogate or cut byte). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) ||
        (c == 0xf4 && s[1] >= 0x90))
        return 0;
    return len;
}

/* Copies the string of at most `max` bytes at s into out (len bytes,
 * NUL-terminated) for the terminal: every control character and invalid
 * byte as '?', cut before a character that does not fit. */
static void to_text(char *out, size_t len, const char *s, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strnlen(s, max), o = 0;
    for (size_t i = 0; i < n;) {
        size_t l = utf8_len(u + i, n - i);
        unsigned c = u[i];
        bool bad = l == 0 || c < 0x20 || c == 0x7f || (c == 0xc2 && u[i + 1] < 0xa0);
        size_t put = bad ? 1 : l;
        if (o + put >= len)
            break;
        if (bad)
            out[o] = '?';
        else
            memcpy(out + o, u + i, l);
        o += put;
        i += l ? l : 1;
    }
    out[o] = 0;
}

/* Writes the string of at most `max` bytes at s (a field of the group file,
 * written by any process that can write it: maybe not NUL-terminated, maybe
 * not UTF-8) as a JSON string: control characters escaped, invalid bytes as
 * U+FFFD. */
static void put_json(FILE *f, const char *s, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strnlen(s, max);
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        size_t len = utf8_len(u + i, n - i);
        unsigned c = u[i];
        if (len == 0)
            fputs("\\ufffd", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else if (c == 0xc2 && u[i + 1] < 0xa0)   /* C1 controls */
            fprintf(f, "\\u%04x", u[i + 1]);
        else if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else
            fwrite(u + i, 1, len, f);
        i += len ? len : 1;
    }
    fputc('"', f);
}

/* A GPU entry is shown when the group has a budget or a charge on it. */
static bool device_used(const lms_group_header *h, int d)
{
    return atomic_load(&((lms_group_header *)h)->budget[d]) || atomic_load(&((lms_group_header *)h)->charged[d]);
}

/* Prints one view of a group (text or JSON); `dt` seconds since the last. */
static void show(watched *w, bool json, double dt, FILE *f)
{
    lms_group_header *h = w->h;
    char a[32], b[32], c[32], e[32], g[32], cmd[17], gpu[64];
    if (json) {
        fputs("{\"group\":", f);
        put_json(f, h->name, sizeof h->name);
        fputs(",\"path\":", f);
        put_json(f, w->path, sizeof w->path);
        fprintf(f, ",\"reclaimed_members\":%llu,\"reclaimed_bytes\":%llu,\"devices\":[",
                (unsigned long long)atomic_load(&h->reclaimed_members),
                (unsigned long long)atomic_load(&h->reclaimed_bytes));
    } else {
        char name[sizeof h->name], path[sizeof w->path];
        to_text(name, sizeof name, h->name, sizeof h->name);
        to_text(path, sizeof path, w->path, sizeof w->path);
        fprintf(f, "group %s  (%s)  reclaimed from dead members: %llu\n", name, path,
                (unsigned long long)atomic_load(&h->reclaimed_members));
    }
    int shown = 0;
    for (int d = 0; d < LMS_GROUP_DEVICES; d++) {
        if (!device_used(h, d))
            continue;
        uint64_t budget = atomic_load(&h->budget[d]), used = atomic_load(&h->charged[d]);
        uint64_t peak = atomic_load(&h->peak[d]);
        lms_groupfile_gpu_name(h, d, json, gpu, sizeof gpu);
        if (json) {
            fprintf(f, "%s{\"entry\":%d,\"budget\":%llu,\"used\":%llu,\"peak\":%llu,\"gpu\":\"%s\"}",
                    shown ? "," : "", d, (unsigned long long)budget, (unsigned long long)used,
                    (unsigned long long)peak, gpu);
        } else {
            lms_format_size(a, sizeof a, budget);
            lms_format_size(b, sizeof b, used);
            lms_format_size(c, sizeof c, peak);
            fprintf(f, "%s: budget %s  used %s (%.0f%%)  peak %s\n", gpu, a, b,
                    budget ? 100.0 * (double)used / (double)budget : 0.0, c);
        }
        shown++;
    }
    if (json)
        fputs("],\"members\":[", f);
    else
        fprintf(f, "  %-8s %-16s %-12s %9s %9s %9s %9s %9s  %s\n", "PID", "COMMAND", "GPU", "DEVICE", "RESIDENT",
                "OFF-DEV", "FETCH/s", "EVICT/s", "");
    int members = 0;
    for (int i = 0; i < LMS_GROUP_SLOTS; i++) {
        lms_group_slot *s = lms_groupfile_slot(h, i);
        if (atomic_load(&s->state) != LMS_SLOT_LIVE)
            continue;
        bool alive = lms_groupfile_alive(w->fd, i) != 0;
        bool same = w->joined[i] == s->joined_ns && dt > 0;
        w->joined[i] = s->joined_ns;
        if (json) {
            fprintf(f, "%s{\"pid\":%d,\"command\":", members ? "," : "", (int)s->pid);
            put_json(f, s->command, sizeof s->command);
            fprintf(f, ",\"alive\":%s,\"devices\":[", alive ? "true" : "false");
        }
        int rows = 0;
        for (int d = 0; d < LMS_GROUP_DEVICES; d++) {
            uint64_t fe = atomic_load(&s->fetched_bytes[d]), ev = atomic_load(&s->evicted_bytes[d]);
            double fr = same && fe >= w->fetched[i][d] ? (double)(fe - w->fetched[i][d]) / dt : 0;
            double er = same && ev >= w->evicted[i][d] ? (double)(ev - w->evicted[i][d]) / dt : 0;
            w->fetched[i][d] = fe;
            w->evicted[i][d] = ev;
            uint64_t charged = atomic_load(&s->charged[d]), dev = atomic_load(&s->device_bytes[d]);
            uint64_t res = atomic_load(&s->resident_bytes[d]), man = atomic_load(&s->managed_bytes[d]);
            if (!device_used(h, d) && !charged && !man)
                continue;
            uint64_t off = man > res ? man - res : 0;
            lms_groupfile_gpu_name(h, d, json, gpu, sizeof gpu);
            if (json) {
                fprintf(f, "%s{\"entry\":%d,\"charged\":%llu,\"device_bytes\":%llu,\"resident\":%llu,"
                        "\"off_device\":%llu,\"fetched_per_s\":%.0f,\"evicted_per_s\":%.0f,\"gpu\":\"%s\"}",
                        rows ? "," : "", d, (unsigned long long)charged, (unsigned long long)dev,
                        (unsigned long long)res, (unsigned long long)off, fr, er, gpu);
            } else {
                lms_format_size(a, sizeof a, dev);
                lms_format_size(b, sizeof b, res);
                lms_format_size(c, sizeof c, off);
                lms_format_size(e, sizeof e, (uint64_t)fr);
                lms_format_size(g, sizeof g, (uint64_t)er);
                to_text(cmd, sizeof cmd, s->command, sizeof s->command);
                fprintf(f, "  %-8d %-16s %-12s %9s %9s %9s %9s %9s  %s\n", (int)s->pid, cmd, gpu, a, b, c, e,
                        g, alive ? "" : "(gone: its charge comes back at the next member's look)");
            }
            rows++;
        }
        if (json)
            fputs("]}", f);
        members++;
    }
    if (json)
        fputs("]}\n", f);
    else if (members == 0)
        fputs("  (no members)\n", f);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int lms_cmd_top(int argc, char **argv)
{
    bool once = false, json = false;
    const char *name = NULL, *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--once") == 0)
            once = true;
        else if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] != '-' && !name)
            name = argv[i];
        else {
            if (strcmp(argv[i], "--dir") == 0)
                fprintf(stderr, "lmshim top: --dir needs a value\n");
            else if (argv[i][0] != '-')
                fprintf(stderr, "lmshim top: one group at most ('%s' and '%s')\n", name, argv[i]);
            else
                fprintf(stderr, "lmshim top: unknown flag '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    lms_options_load();   /* LMS_GROUP and LMS_GROUP_DIR as defaults */
    if (!name && lms_opt.group[0])
        name = lms_opt.group;
    if (!dir)
        dir = lms_opt.group_dir;
    static watched ws[MAX_GROUPS];
    int n = find_groups(dir, name, ws);
    if (n < 0)
        return 1;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGBUS, on_bus);
    bool tty = !json && isatty(STDOUT_FILENO);
    FILE *sink = once ? fopen("/dev/null", "w") : NULL;   /* --once: the first sample is not shown */
    double last = now_s(), dt = 0;
    for (int view = 0; !stop; view++) {
        FILE *out = sink && view == 0 ? sink : stdout;
        if (tty && out == stdout)
            fputs("\033[H\033[2J", stdout);
        int shown = 0;
        for (int i = 0; i < n; i++)
            shown += ws[i].h && show_safely(&ws[i], json, dt, out);
        fflush(out);
        if (shown == 0) {
            if (sink)
                fclose(sink);
            return 1;
        }
        if (once && view > 0)
            break;
        struct timespec ts = {.tv_sec = 1};
        nanosleep(&ts, NULL);
        double t = now_s();
        dt = t - last;
        last = t;
    }
    if (sink)
        fclose(sink);
    return 0;
}
