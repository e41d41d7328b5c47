/*
 * trace.c — the JSON Lines trace writer (see trace.h).
 *
 * Lines are formatted in place at the end of the buffer, under its lock,
 * by writers generated from common/trace_schema.def: each field goes
 * through the escaping writer of common/jsonw.c with its schema type.
 *
 * Which file a process writes (docs/TRACE.md, "Which file"): the expanded
 * LMS_TRACE path, unless another process of the same job has it — a
 * live writer holds an flock(2) lock on its file, and a file already
 * written during this process's life, or carrying this pid in its header,
 * is never truncated; a fork child never takes its parent's file. Then the
 * process writes <path>.<pid> (or <path>.<pid>.<n>).
 */
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jsonw.h"
#include "log.h"
#include "options.h"

#define BUFFER (512u << 10)
#define LINE_MAX_BYTES (64u << 10)   /* one line at most; its lists are cut to fit, element by element */
#define PATH_BYTES 1024

bool lms_trace_on;
static int fd = -1;
static char *buffer;          /* BUFFER bytes, owned here */
static size_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char my_path[PATH_BYTES];     /* the file this process writes (inherited by a fork child) */
static int64_t parent_pid = -1;      /* set in a fork child */
static struct timespec started;      /* CLOCK_REALTIME when this process began (see process_start) */

__attribute__((constructor)) static void note_start(void)
{
    clock_gettime(CLOCK_REALTIME, &started);   /* this image's load: process_start finds earlier */
}

/* Moves `started` back to when this process was forked, which an exec
 * keeps: an exec'd fork child of a traced process then sees its parent's
 * file as written during its life, even after the parent exited. From
 * /proc/self/stat's start time (clock ticks since boot), one tick early. */
static void process_start(void)
{
    char text[1024];
    int f = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = f >= 0 ? read(f, text, sizeof text - 1) : -1;
    if (f >= 0)
        close(f);
    if (n <= 0)
        return;
    text[n] = 0;
    char *p = strrchr(text, ')');   /* after the command name, which may hold anything */
    unsigned long long ticks = 0;
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');     /* to the space before field `field + 1` */
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec boot, real;
    if (!p || sscanf(p + 1, "%llu", &ticks) != 1 || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0 ||
        clock_gettime(CLOCK_REALTIME, &real) != 0)
        return;
    int64_t since = ((int64_t)boot.tv_sec * 1000000000 + boot.tv_nsec) - (int64_t)(ticks ? ticks - 1 : 0) * (1000000000 / hz);
    int64_t at = ((int64_t)real.tv_sec * 1000000000 + real.tv_nsec) - since;   /* ns of CLOCK_REALTIME */
    if (at >= (int64_t)started.tv_sec * 1000000000 + started.tv_nsec)
        return;
    started.tv_sec = at / 1000000000;
    started.tv_nsec = at % 1000000000;
}

/* Nanoseconds on the monotonic clock. */
static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static dev_t file_dev;         /* the file fd was opened on: the program may close fd and */
static ino_t file_ino;         /* reuse its number for a file of its own (see drain) */
static bool file_lost;         /* that happened: tracing stopped */

/* Writes the buffer out (under lock) — if fd is still the trace's file:
 * once the program has closed it and opened a file of its own under the
 * same number, the trace stops (its lines are dropped) rather than write
 * into the program's file. */
static void drain(void)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_dev != file_dev || st.st_ino != file_ino) {
        fd = -1;               /* not ours to close any more */
        used = 0;
        lms_trace_on = false;
        file_lost = true;
        return;
    }
    size_t off = 0;
    while (off < used) {
        ssize_t n = lms_write_quiet(fd, buffer + off, used - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    used = 0;
}

/* Says once that drain found the trace's descriptor taken by the program
 * (not from a signal handler: logging is not for there). */
static void say_lost(void)
{
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (file_lost && !atomic_flag_test_and_set(&said))
        lms_log(LMS_LEVEL_WARN, "trace: the program closed the trace file's descriptor and reused it; "
                                "the trace stops there");
}

/* ---- the line writers ------------------------------------------------------ */

/* Starts a line of `type` at the end of the buffer: takes the lock and
 * returns true with w set up, or false (lock not held) when no trace. */
static bool line_begin(lms_jw *w, const char *type)
{
    pthread_mutex_lock(&lock);
    if (fd < 0 || !buffer) {
        pthread_mutex_unlock(&lock);
        return false;
    }
    if (BUFFER - used < LINE_MAX_BYTES)
        drain();
    if (fd < 0) {
        pthread_mutex_unlock(&lock);
        say_lost();
        return false;
    }
    lms_jw_init(w, buffer + used, LINE_MAX_BYTES - 1);   /* one byte for the newline */
    lms_jw_begin(w, NULL, '{');
    lms_jw_str(w, "type", type);
    return true;
}

/* Ends the line begun by line_begin and releases the lock. */
static void line_end(lms_jw *w)
{
    size_t n = lms_jw_finish(w);
    buffer[used + n] = '\n';
    used += n + 1;
    pthread_mutex_unlock(&lock);
}

/* One writer per field type; `dropped` counts list elements left out. */
static void put_U64(lms_jw *w, const char *k, const uint64_t *v, uint64_t *dropped)
{
    (void)dropped;
    lms_jw_u64(w, k, *v);
}
static void put_I64(lms_jw *w, const char *k, const int64_t *v, uint64_t *dropped)
{
    (void)dropped;
    lms_jw_i64(w, k, *v);
}
static void put_HEX(lms_jw *w, const char *k, const uint64_t *v, uint64_t *dropped)
{
    (void)dropped;
    lms_jw_hex(w, k, *v);
}
static void put_STR(lms_jw *w, const char *k, const char *const *v, uint64_t *dropped)
{
    (void)dropped;
    lms_jw_str(w, k, *v ? *v : "");
}
static void put_BOOL(lms_jw *w, const char *k, const bool *v, uint64_t *dropped)
{
    (void)dropped;
    lms_jw_bool(w, k, *v);
}
static void put_TIME(lms_jw *w, const char *k, const uint64_t *v, uint64_t *dropped)
{
    (void)v;
    (void)dropped;
    lms_jw_u64(w, k, now_ns());
}
static void put_DROPPED(lms_jw *w, const char *k, const uint64_t *v, uint64_t *dropped)
{
    (void)v;
    lms_jw_u64(w, k, *dropped);
}
static void put_PLACES(lms_jw *w, const char *k, const lms_trace_places *v, uint64_t *dropped)
{
    static const char *const names[5] = {"device", "managed", "host", "vmm", "pinned"};
    (void)dropped;
    if (!lms_jw_begin(w, k, '{'))
        return;
    for (int i = 0; i < 5; i++)
        lms_jw_u64(w, names[i], v->v[i]);
    lms_jw_end(w);
}
static void put_OPTIONS(lms_jw *w, const char *k, const bool *v, uint64_t *dropped)
{
    (void)v;
    (void)dropped;
    if (!lms_jw_begin(w, k, '{'))
        return;
    for (int i = 0; i < LMS_OPT_COUNT; i++) {
        char env[64], value[PATH_BYTES];
        lms_option_value(i, value, sizeof value);
        lms_jw_str(w, lms_option_env(i, env, sizeof env), value);
    }
    lms_jw_end(w);
}

/* Room kept for the fields after a list while the list is written. */
#define AFTER_LIST 96

static void put_IDS(lms_jw *w, const char *k, const lms_trace_ids *v, uint64_t *dropped)
{
    size_t keep = w->reserve;
    w->reserve = AFTER_LIST;
    if (lms_jw_begin(w, k, '[')) {
        int i = 0;
        for (; i < v->n; i++) {
            lms_jw_u64(w, NULL, v->v[i]);
            if (w->full)
                break;
        }
        *dropped += (uint64_t)(v->n - i);
        lms_jw_end(w);
    } else {
        *dropped += (uint64_t)v->n;
    }
    w->reserve = keep;
    w->full = false;
}

/* Record writers, from the schema (prototypes first). */
#define LMS_EVENT(ev)
#define LMS_RECORD(rec) static void write_##rec(lms_jw *w, const lms_rec_##rec *e, uint64_t *dropped);
#define LMS_FIELD(owner, name, type, doc)
#define LMS_END(owner)
#include "trace_schema.def"
#undef LMS_EVENT
#undef LMS_RECORD
#undef LMS_FIELD
#undef LMS_END

/* A list of records: each whole or not at all. */
#define LIST_WRITER(TYPE, rec)                                                               \
    static void put_##TYPE(lms_jw *w, const char *k, const lms_trace_##TYPE##_list *v, uint64_t *dropped) \
    {                                                                                        \
        size_t keep = w->reserve;                                                            \
        w->reserve = AFTER_LIST;                                                             \
        if (!lms_jw_begin(w, k, '[')) {                                                      \
            *dropped += (uint64_t)v->n;                                                      \
        } else {                                                                             \
            for (int i = 0; i < v->n; i++) {                                                 \
                lms_jw_mark m = lms_jw_here(w);                                              \
                w->full = false;                                                             \
                write_##rec(w, &v->v[i], dropped);                                           \
                if (w->full) {                                                               \
                    lms_jw_rewind(w, m);                                                     \
                    (*dropped)++;                                                            \
                }                                                                            \
            }                                                                                \
            lms_jw_end(w);                                                                   \
        }                                                                                    \
        w->reserve = keep;                                                                   \
        w->full = false;                                                                     \
    }
typedef lms_trace_frames lms_trace_FRAMES_list;
typedef lms_trace_pyframes lms_trace_PYFRAMES_list;
LIST_WRITER(FRAMES, frame)
LIST_WRITER(PYFRAMES, pyframe)

#define LMS_EVENT(ev)                                      \
    void lms_trace_write_##ev(const lms_ev_##ev *e)        \
    {                                                      \
        lms_jw jw, *w = &jw;                               \
        uint64_t dropped_ = 0, *dropped = &dropped_;       \
        if (!line_begin(w, #ev))                           \
            return;
#define LMS_RECORD(rec)                                                                 \
    static void write_##rec(lms_jw *w, const lms_rec_##rec *e, uint64_t *dropped)      \
    {                                                                                   \
        if (!lms_jw_begin(w, NULL, '{')) {                                              \
            w->full = true;                                                             \
            return;                                                                     \
        }
#define LMS_FIELD(owner, name, type, doc) put_##type(w, #name, &e->name, dropped);
#define LMS_END(owner)      \
        if (w->depth == 1)  \
            line_end(w);    \
        else                \
            lms_jw_end(w);  \
    }
#include "trace_schema.def"
#undef LMS_EVENT
#undef LMS_RECORD
#undef LMS_FIELD
#undef LMS_END

/* ---- shorthands ----------------------------------------------------------------- */

void lms_trace_device(int dev, uint64_t physical, uint64_t budget)
{
    lms_trace_write_device(&(lms_ev_device){.dev = dev, .physical = physical, .budget = budget});
}

void lms_trace_alloc(int dev, uint64_t ptr, uint64_t size, uint64_t charge, const char *place, int64_t id,
                     bool fallback, int32_t site)
{
    lms_trace_write_alloc(&(lms_ev_alloc){.dev = dev, .ptr = ptr, .size = size, .charge = charge, .place = place,
                                          .id = id, .fallback = fallback, .site = site});
}

void lms_trace_fallback(int dev, uint64_t size, const char *place, const char *why)
{
    lms_trace_write_fallback(&(lms_ev_fallback){.dev = dev, .size = size, .place = place, .why = why});
}

void lms_trace_free(int dev, uint64_t ptr, uint64_t size, const char *place)
{
    lms_trace_write_free(&(lms_ev_free){.dev = dev, .ptr = ptr, .size = size, .place = place});
}

void lms_trace_oom(int dev, uint64_t size, uint64_t used_bytes, uint64_t budget)
{
    lms_trace_write_oom(&(lms_ev_oom){.dev = dev, .size = size, .used = used_bytes, .budget = budget});
}

void lms_trace_launch(int dev, uint64_t seq, uint64_t fn, const char *name, uint64_t stream,
                      const uint32_t *ids, int n)
{
    lms_trace_write_launch(&(lms_ev_launch){.dev = dev, .seq = seq, .fn = fn, .name = name, .stream = stream,
                                            .chunks = {ids, n}});
}

void lms_trace_move(const char *type, int dev, uint32_t id, uint64_t bytes, bool ahead)
{
    if (type[0] == 'e')
        lms_trace_write_evict(&(lms_ev_evict){.dev = dev, .id = id, .bytes = bytes, .ahead = ahead});
    else
        lms_trace_write_prefetch(&(lms_ev_prefetch){.dev = dev, .id = id, .bytes = bytes, .ahead = ahead});
}

/* ---- flushing ------------------------------------------------------------------ */

void lms_trace_flush(void)
{
    pthread_mutex_lock(&lock);
    if (fd >= 0)
        drain();
    pthread_mutex_unlock(&lock);
    say_lost();
}

void lms_trace_flush_before_exec(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    if (pthread_mutex_timedlock(&lock, &until) != 0)
        return;
    if (fd >= 0)
        drain();
    pthread_mutex_unlock(&lock);
}

static void at_exit(void)
{
    lms_trace_flush();
}

/* The last flush, when the C library unloads lmshim after every at-exit
 * handler: a handler the program registered before lmshim's (before its
 * first CUDA call; C++ static destructors alike) runs after lmshim's and
 * may still free and allocate. */
__attribute__((destructor)) static void at_unload(void)
{
    lms_trace_flush();
}

static struct sigaction old_term, old_int;

/* SIGTERM/SIGINT: write what is buffered (unless another thread is in the
 * middle of appending: never wait inside a signal handler), then do what
 * the program had asked for this signal. */
static void on_signal(int sig, siginfo_t *info, void *uc)
{
    if (pthread_mutex_trylock(&lock) == 0) {
        if (fd >= 0)
            drain();
        pthread_mutex_unlock(&lock);
    }
    struct sigaction *old = sig == SIGTERM ? &old_term : &old_int;
    if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_DFL) {
        sigaction(sig, old, NULL);   /* the default: die of the signal, as intended */
        raise(sig);
        return;
    }
    if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN)
        return;
    /* The program's handler, as the kernel would have run it: with its
     * mask, and once only if it asked for SA_RESETHAND (the next signal
     * then finds the default). */
    struct sigaction prog = *old;
    if (prog.sa_flags & SA_RESETHAND) {
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
    }
    sigset_t mask, before;
    mask = prog.sa_mask;
    pthread_sigmask(SIG_BLOCK, &mask, &before);
    if (prog.sa_flags & SA_NODEFER) {
        sigemptyset(&mask);
        sigaddset(&mask, sig);
        pthread_sigmask(SIG_UNBLOCK, &mask, NULL);
    }
    if (prog.sa_flags & SA_SIGINFO) {
        if (prog.sa_sigaction)
            prog.sa_sigaction(sig, info, uc);
    } else {
        prog.sa_handler(sig);
    }
    pthread_sigmask(SIG_SETMASK, &before, NULL);
}

/* Installs the flushing handlers, keeping the program's. A signal the
 * program ignores is left ignored: a handler would make the program look as
 * if it handled the signal, and would not survive an exec as SIG_IGN does
 * (the programs it starts would die of a signal they were meant to ignore). */
static void catch_signals(void)
{
    struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    static const int sigs[2] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        struct sigaction *old = sigs[i] == SIGTERM ? &old_term : &old_int;
        if (sigaction(sigs[i], NULL, old) != 0 || (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN))
            continue;
        sigaction(sigs[i], &sa, old);
    }
}

void lms_trace_fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

void lms_trace_fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

void lms_trace_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    used = 0;                 /* the parent's lines: the parent writes them */
    if (fd >= 0 || parent_pid >= 0)   /* traced, or forked from a traced process itself */
        parent_pid = (int64_t)getppid();
    if (fd >= 0) {
        close(fd);            /* the parent's lock stays: the parent holds the file too */
        fd = -1;
    }
    lms_trace_on = false;     /* until the child's own file opens, on its next hook */
}

/* ---- which file ------------------------------------------------------------------ */

/* The pid in the header of the file open at f; -1 if none; -2 if the
 * file is not a trace (its first line is no lmshim header). */
static long header_pid(int f)
{
    static const char header[] = "{\"type\":\"header\"";
    char head[4096];
    ssize_t n = pread(f, head, sizeof head - 1, 0);
    if (n <= 0)
        return -1;
    head[n] = 0;
    if (strncmp(head, header, sizeof header - 1) != 0)
        return -2;
    char *nl = strchr(head, '\n');
    if (nl)
        *nl = 0;
    const char *p = strstr(head, "\"pid\":");
    return p ? strtol(p + 6, NULL, 10) : -1;
}

/* Opens `name` for this process alone, or returns -1 if another process
 * of the job has it (see the top of this file). */
static int take(const char *name)
{
    int f = lms_open_quiet(name, O_WRONLY | O_CREAT | O_CLOEXEC);
    if (f < 0)
        return -2;   /* cannot be opened at all */
    struct stat st;
    if (fstat(f, &st) == 0 && !S_ISREG(st.st_mode))
        return f;    /* a device or a pipe (/dev/null, a FIFO): written as it is */
    if (flock(f, LOCK_EX | LOCK_NB) != 0 || fstat(f, &st) != 0) {
        close(f);
        return -1;   /* a live writer has it */
    }
    if (st.st_size > 0) {
        int r = open(name, O_RDONLY | O_CLOEXEC);
        long pid = r >= 0 ? header_pid(r) : -1;
        if (r >= 0)
            close(r);
        bool written_since_start = st.st_mtim.tv_sec > started.tv_sec ||
                                   (st.st_mtim.tv_sec == started.tv_sec && st.st_mtim.tv_nsec > started.tv_nsec);
        bool alive = pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
        if (written_since_start || pid == (long)getpid() || alive || pid == -2) {   /* -2: not a trace: kept */
            close(f);
            return -1;
        }
        if (ftruncate(f, 0) != 0) {   /* a file of an earlier run */
            close(f);
            return -2;
        }
    }
    return f;
}

/* Chooses and opens this process's file; its name goes to `chosen`. */
static int open_own(const char *path, bool forked, char *chosen, size_t len)
{
    int f = -1;
    if (!forked || strcmp(path, my_path) != 0) {
        f = take(path);
        if (f >= 0 || f == -2) {
            snprintf(chosen, len, "%s", path);
            return f;
        }
    }
    for (int n = 0; n < 100; n++) {
        if (n == 0)
            snprintf(chosen, len, "%s.%d", path, (int)getpid());
        else
            snprintf(chosen, len, "%s.%d.%d", path, (int)getpid(), n);
        f = take(chosen);
        if (f != -1)
            return f;
    }
    return -2;
}

void lms_trace_open(void)
{
    static bool registered;
    pthread_mutex_lock(&lock);
    bool forked = parent_pid >= 0;
    if (fd >= 0) {
        close(fd);
        fd = -1;
    }
    used = 0;
    pthread_mutex_unlock(&lock);
    lms_trace_on = false;
    if (!lms_opt.trace[0])
        return;
    char path[PATH_BYTES], chosen[PATH_BYTES + 32];
    lms_expand_path(lms_opt.trace, path, sizeof path);
    if (!buffer)
        buffer = malloc(BUFFER);
    static pthread_once_t start_once = PTHREAD_ONCE_INIT;
    pthread_once(&start_once, process_start);
    errno = 0;
    int f = buffer ? open_own(path, forked, chosen, sizeof chosen) : -2;
    if (f < 0) {
        lms_log_bad_value("LMS_TRACE", path,
                          errno == ENXIO ? "no trace (a FIFO nobody reads)" : "no trace (the file cannot be opened)");
        return;
    }
    struct stat st;
    if (fstat(f, &st) != 0) {
        close(f);
        return;
    }
    pthread_mutex_lock(&lock);
    fd = f;
    file_dev = st.st_dev;
    file_ino = st.st_ino;
    file_lost = false;
    snprintf(my_path, sizeof my_path, "%s", path);
    pthread_mutex_unlock(&lock);
    lms_trace_on = true;
    if (!registered) {
        registered = true;
        atexit(at_exit);
        catch_signals();
    }
    lms_trace_write_header(&(lms_ev_header){.format = LMS_TRACE_FORMAT, .lmshim = LMSHIM_VERSION,
                                            .pid = (int64_t)getpid(), .rank = lms_rank(), .path = chosen,
                                            .parent = parent_pid});
}
