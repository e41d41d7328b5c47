/*
 * trace.c — the JSON Lines trace writer (see trace.h).
 */
#include "trace.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "options.h"

#define BUFFER (256u << 10)

bool lms_trace_on;
static int fd = -1;
static char *buffer;          /* BUFFER bytes, owned here */
static size_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Nanoseconds on the monotonic clock. */
static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Writes the buffer out (under lock). */
static void drain(void)
{
    size_t off = 0;
    while (off < used) {
        ssize_t n = write(fd, buffer + off, used - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    used = 0;
}

/* Appends one formatted line. */
__attribute__((format(printf, 1, 2))) static void line(const char *fmt, ...)
{
    char text[12288];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof text - 1 ? (size_t)n : sizeof text - 2;
    text[len++] = '\n';
    pthread_mutex_lock(&lock);
    if (fd >= 0) {
        if (used + len > BUFFER)
            drain();
        memcpy(buffer + used, text, len);
        used += len;
    }
    pthread_mutex_unlock(&lock);
}

void lms_trace_flush(void)
{
    pthread_mutex_lock(&lock);
    if (fd >= 0)
        drain();
    pthread_mutex_unlock(&lock);
}

static void at_exit(void)
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
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction)
            old->sa_sigaction(sig, info, uc);
    } else if (old->sa_handler == SIG_DFL) {
        sigaction(sig, old, NULL);   /* the default: die of the signal, as intended */
        raise(sig);
    } else if (old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
    }
}

/* Installs the flushing handlers, keeping the program's. */
static void catch_signals(void)
{
    struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);
}

void lms_trace_open(void)
{
    static bool registered;
    pthread_mutex_lock(&lock);
    if (fd >= 0) {            /* a fork child: its own file */
        close(fd);
        fd = -1;
    }
    used = 0;
    pthread_mutex_unlock(&lock);
    lms_trace_on = false;
    if (!lms_opt.trace[0])
        return;
    char path[512];
    lms_expand_path(lms_opt.trace, path, sizeof path);
    if (!buffer)
        buffer = malloc(BUFFER);
    int f = buffer ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (f < 0) {
        lms_log_bad_value("LMS_TRACE", path, "no trace (the file cannot be opened)");
        return;
    }
    fd = f;
    lms_trace_on = true;
    if (!registered) {
        registered = true;
        atexit(at_exit);
        catch_signals();
    }
    char opts[1024];
    size_t at = 0;
    for (int i = 0; i < LMS_OPT_COUNT && at < sizeof opts; i++) {
        char env[64], value[300];
        lms_option_value(i, value, sizeof value);
        int n = snprintf(opts + at, sizeof opts - at, "%s\"%s\":\"%s\"", i ? "," : "",
                         lms_option_env(i, env, sizeof env), value);
        if (n > 0)
            at += (size_t)n;
    }
    line("{\"type\":\"header\",\"format\":%d,\"lmshim\":\"%s\",\"pid\":%d,\"rank\":%d,\"t\":%llu,"
         "\"options\":{%s}}",
         LMS_TRACE_FORMAT, LMSHIM_VERSION, (int)getpid(), lms_rank(), (unsigned long long)now_ns(), opts);
}

void lms_trace_device(int dev, uint64_t physical, uint64_t budget)
{
    line("{\"type\":\"device\",\"t\":%llu,\"dev\":%d,\"physical\":%llu,\"budget\":%llu}",
         (unsigned long long)now_ns(), dev, (unsigned long long)physical, (unsigned long long)budget);
}

void lms_trace_alloc(int dev, uint64_t ptr, uint64_t size, uint64_t charge, const char *place, int64_t id,
                     bool fallback, int32_t site)
{
    line("{\"type\":\"alloc\",\"t\":%llu,\"dev\":%d,\"ptr\":\"0x%llx\",\"size\":%llu,\"charge\":%llu,"
         "\"place\":\"%s\",\"id\":%lld,\"fallback\":%s,\"site\":%d}",
         (unsigned long long)now_ns(), dev, (unsigned long long)ptr, (unsigned long long)size,
         (unsigned long long)charge, place, (long long)id, fallback ? "true" : "false", (int)site);
}

void lms_trace_fallback(int dev, uint64_t size, const char *place, const char *why)
{
    line("{\"type\":\"fallback\",\"t\":%llu,\"dev\":%d,\"size\":%llu,\"place\":\"%s\",\"why\":\"%s\"}",
         (unsigned long long)now_ns(), dev, (unsigned long long)size, place, why);
}

void lms_trace_site(int32_t id, const char *frames_json)
{
    line("{\"type\":\"site\",\"t\":%llu,\"id\":%d,\"frames\":[%s]}", (unsigned long long)now_ns(), (int)id,
         frames_json);
}

void lms_trace_raw(const char *json)
{
    line("%s", json);
}

void lms_trace_free(int dev, uint64_t ptr, uint64_t size, const char *place)
{
    line("{\"type\":\"free\",\"t\":%llu,\"dev\":%d,\"ptr\":\"0x%llx\",\"size\":%llu,\"place\":\"%s\"}",
         (unsigned long long)now_ns(), dev, (unsigned long long)ptr, (unsigned long long)size, place);
}

void lms_trace_oom(int dev, uint64_t size, uint64_t used_bytes, uint64_t budget)
{
    line("{\"type\":\"oom\",\"t\":%llu,\"dev\":%d,\"size\":%llu,\"used\":%llu,\"budget\":%llu}",
         (unsigned long long)now_ns(), dev, (unsigned long long)size, (unsigned long long)used_bytes,
         (unsigned long long)budget);
}

void lms_trace_launch(int dev, uint64_t seq, uint64_t fn, const char *name, uint64_t stream,
                      const uint32_t *ids, int n)
{
    char list[1024];
    size_t at = 0;
    for (int i = 0; i < n && at + 16 < sizeof list; i++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%u", i ? "," : "", ids[i]);
    list[at] = 0;
    line("{\"type\":\"launch\",\"t\":%llu,\"dev\":%d,\"seq\":%llu,\"fn\":\"0x%llx\",\"name\":\"%s\","
         "\"stream\":\"0x%llx\",\"chunks\":[%s]}",
         (unsigned long long)now_ns(), dev, (unsigned long long)seq, (unsigned long long)fn, name ? name : "",
         (unsigned long long)stream, list);
}

void lms_trace_move(const char *type, int dev, uint32_t id, uint64_t bytes, bool ahead)
{
    line("{\"type\":\"%s\",\"t\":%llu,\"dev\":%d,\"id\":%u,\"bytes\":%llu,\"ahead\":%s}", type,
         (unsigned long long)now_ns(), dev, id, (unsigned long long)bytes, ahead ? "true" : "false");
}
