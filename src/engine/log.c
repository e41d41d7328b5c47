/*
 * log.c — the output of lmshim (see log.h).
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_fd = 2;
static const char *const level_names[] = {"off", "error", "warn", "info", "debug"};

ssize_t lms_write_quiet(int fd, const void *buf, size_t len)
{
    /* SIGPIPE is blocked in this thread for the write; the one an EPIPE
     * raised is taken back unless the thread already had one waiting. */
    sigset_t pipe, old, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    sigemptyset(&pending);
    sigpending(&pending);
    bool had = sigismember(&pending, SIGPIPE) == 1;
    ssize_t n;
    do
        n = write(fd, buf, len);
    while (n < 0 && errno == EINTR);
    int saved = errno;
    if (n < 0 && errno == EPIPE && !had) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return n;
}

void lms_log_write(const char *text, size_t len)
{
    while (len > 0) {
        ssize_t n = lms_write_quiet(log_fd, text, len);
        if (n <= 0)
            return;
        text += n;
        len -= (size_t)n;
    }
}

/* Formats "lmshim[pid] level: text\n" into a stack buffer and writes it. */
static void vlog(lms_level level, const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "lmshim[%d] %s: ", (int)getpid(), level_names[level]);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + ((size_t)m < sizeof line - (size_t)n - 1 ? (size_t)m : sizeof line - (size_t)n - 2);
    line[len++] = '\n';
    lms_log_write(line, len);
}

void lms_log(lms_level level, const char *fmt, ...)
{
    if (!LMS_LOG_ON(level) || level == LMS_LEVEL_OFF)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void lms_log_capped(lms_level level, atomic_uint *count, unsigned cap, const char *fmt, ...)
{
    if (!LMS_LOG_ON(level) || level == LMS_LEVEL_OFF)
        return;
    unsigned seen = atomic_fetch_add_explicit(count, 1, memory_order_relaxed);
    if (seen > cap)
        return;
    if (seen == cap) {
        lms_log(level, "(further messages like the last one suppressed)");
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void lms_log_bad_value(const char *variable, const char *value, const char *kept)
{
    char line[512];
    /* A value too long for the line is cut, so that what is kept and the
     * newline are always there. */
    int cut = strlen(value) > 200 ? 200 : (int)strlen(value);
    int n = snprintf(line, sizeof line, "lmshim[%d] warn: %s=%.*s%s is not a valid value; keeping %.100s\n",
                     (int)getpid(), variable, cut, value, value[cut] ? "..." : "", kept);
    if (n > 0)
        (void)lms_write_quiet(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void lms_expand_path(const char *t, char *out, size_t len)
{
    size_t o = 0;
    for (; *t && o + 1 < len; t++) {
        char piece[256];
        const char *add = NULL;
        if (t[0] == '%' && t[1]) {
            t++;
            switch (*t) {
            case 'p': snprintf(piece, sizeof piece, "%d", (int)getpid()); add = piece; break;
            case 'r': snprintf(piece, sizeof piece, "%d", lms_rank()); add = piece; break;
            case 'h':
                if (gethostname(piece, sizeof piece) != 0)
                    strcpy(piece, "host");
                piece[sizeof piece - 1] = 0;
                add = piece;
                break;
            case '%': add = "%"; break;
            default: piece[0] = '%'; piece[1] = *t; piece[2] = 0; add = piece; break;
            }
        }
        if (add) {
            size_t n = strlen(add);
            if (o + n >= len)
                n = len - o - 1;
            memcpy(out + o, add, n);
            o += n;
        } else {
            out[o++] = *t;
        }
    }
    out[o] = 0;
}

int lms_open_quiet(const char *path, int flags)
{
    /* O_NONBLOCK: opening a FIFO for writing would wait for a reader. */
    int fd = open(path, flags | O_NONBLOCK, 0644);
    if (fd >= 0) {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
            fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);   /* writes wait for a slow reader, as usual */
    }
    return fd;
}

void lms_log_open(void)
{
    if (log_fd != 2) {
        close(log_fd);
        log_fd = 2;
    }
    if (!lms_opt.log_file[0])
        return;
    char path[512];
    lms_expand_path(lms_opt.log_file, path, sizeof path);
    int fd = lms_open_quiet(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC);
    if (fd < 0) {
        lms_log_bad_value("LMS_LOG_FILE", path,
                          errno == ENXIO ? "stderr (a FIFO nobody reads)" : "stderr (the file cannot be opened)");
        return;
    }
    log_fd = fd;
}
