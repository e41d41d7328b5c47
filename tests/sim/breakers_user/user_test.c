/*
 * user_test.c — programs a new user runs first, with liblmshim.so preloaded
 * over the simulated GPU: what lmshim says to them on stderr. One case per
 * test; settings in meson.build.
 */
#include <cuda.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/check.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static CUcontext context(void)
{
    CUcontext c;
    OK(cuInit(0));
    OK(cuDevicePrimaryCtxRetain(&c, 0));
    OK(cuCtxSetCurrent(c));
    return c;
}

/* Sends stderr to a fresh temporary file; returns a descriptor of the file
 * and keeps the old stderr in *saved (restored by restore_stderr). */
static int capture_stderr(int *saved)
{
    char path[] = "/tmp/lms_user_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    fflush(stderr);
    *saved = dup(2);
    CHECK(*saved >= 0 && dup2(fd, 2) == 2);
    return fd;
}

/* Puts stderr back and returns how many captured lines contain `needle`. */
static int restore_stderr(int fd, int saved, const char *needle)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[16384];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    CHECK(n >= 0);
    buf[n] = 0;
    close(fd);
    fputs(buf, stderr);   /* what the program would have shown */
    int count = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        count += strstr(line, needle) != NULL;
    return count;
}

/* The warning about TensorFlow's or JAX's arena is for a request of most of
 * the budget, as they size it from cuMemGetInfo (the budget under lmshim):
 * a request larger than the budget (one big tensor, or a size no device
 * has) is not one and gets no such line. LMS_LIMIT=1G on a 4G device. */
static void arena_warning_within_budget(void)
{
    context();
    int saved, fd = capture_stderr(&saved);
    CUdeviceptr big, huge;
    OK(cuMemAlloc(&big, 2 * GiB));                         /* twice the budget: managed */
    CHECK_IS(cuMemAlloc(&huge, 1ull << 60), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemFree(big));
    CHECK_EQ_U(restore_stderr(fd, saved, "TF_FORCE_GPU_ALLOW_GROWTH"), 0);
    fd = capture_stderr(&saved);
    CUdeviceptr arena;
    OK(cuMemAlloc(&arena, 900 * MiB));                      /* JAX's 75%, TF's nearly all */
    OK(cuMemFree(arena));
    CHECK_EQ_U(restore_stderr(fd, saved, "TF_FORCE_GPU_ALLOW_GROWTH"), 1);
}

/* A program probing for the largest allocation that fits, halving from a
 * size no machine has, reads a few lmshim lines, not one per try. */
static void probing_oom_few_lines(void)
{
    context();
    int saved, fd = capture_stderr(&saved);
    CUdeviceptr p = 0;
    uint64_t size = 1ull << 62;
    int tries = 0;
    while (cuMemAlloc(&p, size) != CUDA_SUCCESS && size > MiB) {
        size /= 2;
        tries++;
    }
    OK(cuMemFree(p));
    int lines = restore_stderr(fd, saved, "lmshim[");
    CHECK(tries >= 12);                  /* 2^62 down to what the host can map */
    CHECK(lines >= 1 && lines <= 9);
}

/* The log and the trace piped into a reader that goes away (`| head`, a
 * crashed log shipper): lmshim's next write meets a pipe without a reader,
 * which must cost the log, not the program (SIGPIPE would kill it). This
 * case makes the pipes and runs the next one with LMS_LOG_FILE and
 * LMS_TRACE on their write ends. */
static void pipe_reader_gone(void)
{
    int log_pipe[2], trace_pipe[2];
    CHECK(pipe(log_pipe) == 0 && pipe(trace_pipe) == 0);
    char v[64];
    snprintf(v, sizeof v, "/dev/fd/%d", log_pipe[1]);
    setenv("LMS_LOG_FILE", v, 1);
    snprintf(v, sizeof v, "/dev/fd/%d", trace_pipe[1]);
    setenv("LMS_TRACE", v, 1);
    setenv("LMS_LOG", "info", 1);
    snprintf(v, sizeof v, "%d %d %d %d", log_pipe[0], log_pipe[1], trace_pipe[0], trace_pipe[1]);
    setenv("USER_TEST_PIPES", v, 1);
    char *again[] = {"user_test", "pipe_reader_gone_child", NULL};
    execv("/proc/self/exe", again);
    CHECK(!"exec");
}

/* The second half: lmshim opens both pipes while their readers live, then
 * the readers go; placements log and trace lines, and the trace is written
 * at exit. The case passes if the program exits 0 without a SIGPIPE. */
static void pipe_reader_gone_child(void)
{
    int fds[4];
    const char *p = getenv("USER_TEST_PIPES");
    CHECK(p && sscanf(p, "%d %d %d %d", &fds[0], &fds[1], &fds[2], &fds[3]) == 4);
    context();
    CUdeviceptr d;
    OK(cuMemAlloc(&d, 64 * MiB));    /* lmshim has its files open now */
    OK(cuMemFree(d));
    for (int i = 0; i < 4; i++)
        close(fds[i]);                /* no reader any more */
    for (int i = 0; i < 64; i++) {
        OK(cuMemAlloc(&d, 64 * MiB));
        OK(cuMemFree(d));
    }
    sigset_t pending;
    sigemptyset(&pending);
    CHECK(sigpending(&pending) == 0 && !sigismember(&pending, SIGPIPE));
}

/* A FIFO nobody reads as LMS_LOG_FILE or LMS_TRACE: opening it for writing
 * would wait for a reader forever; lmshim says so and goes on without it.
 * Made here, then the next case runs with both variables naming it. */
static void fifo_without_reader(void)
{
    char dir[] = "/tmp/lms_user_fifo_XXXXXX";
    CHECK(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/fifo", dir);
    CHECK(mkfifo(path, 0600) == 0);
    setenv("LMS_LOG_FILE", path, 1);
    setenv("LMS_TRACE", path, 1);
    setenv("USER_TEST_FIFO_DIR", dir, 1);
    char *again[] = {"user_test", "fifo_without_reader_child", NULL};
    execv("/proc/self/exe", again);
    CHECK(!"exec");
}

static void fifo_without_reader_child(void)
{
    const char *dir = getenv("USER_TEST_FIFO_DIR");
    char path[64];
    CHECK(dir);
    snprintf(path, sizeof path, "%s/fifo", dir);
    int saved, fd = capture_stderr(&saved);
    context();                        /* lmshim opens its files here */
    CUdeviceptr d;
    OK(cuMemAlloc(&d, 64 * MiB));
    OK(cuMemFree(d));
    unlink(path);
    rmdir(dir);
    CHECK_EQ_U(restore_stderr(fd, saved, "a FIFO nobody reads"), 2);
}

static const test_case cases[] = {
    {"pipe_reader_gone", pipe_reader_gone},
    {"pipe_reader_gone_child", pipe_reader_gone_child},
    {"fifo_without_reader", fifo_without_reader},
    {"fifo_without_reader_child", fifo_without_reader_child},
    {"probing_oom_few_lines", probing_oom_few_lines},
    {"arena_warning_within_budget", arena_warning_within_budget},
};

TEST_MAIN(cases)
