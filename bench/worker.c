/*
 * worker.c — running one benchmark mode in its own process (worker.h):
 * the child gets its environment and writes its RESULT line to a pipe the
 * parent reads.
 */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Fills *p from self's folder; p is the caller's. */
void worker_paths_of(const char *self, worker_paths *p)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", self);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    snprintf(p->sim, sizeof p->sim, "%s/../sim", dir);
    snprintf(p->shim, sizeof p->shim, "%s/../preload/liblmshim.so", dir);
}

/* Takes every LMS_ variable but the log's (LMS_LOG, LMS_LOG_FILE) out of
 * this process's environment: a mode runs with exactly the options its
 * bench names (a shell's LMS_LIMIT_0 or LMS_POLICY would change rows that
 * say otherwise). */
static void clear_lms_options(void)
{
    for (bool again = true; again;) {
        again = false;
        for (char **e = environ; *e; e++) {
            size_t k = strcspn(*e, "=");
            if (strncmp(*e, "LMS_", 4) != 0 || strncmp(*e, "LMS_LOG", 7) == 0 || k >= 128)
                continue;
            char name[128];
            memcpy(name, *e, k);
            name[k] = 0;
            unsetenv(name);   /* environ changes: look again from its start */
            again = true;
            break;
        }
    }
}

/* Opens /dev/null on whichever of fds 0-2 is closed, so that neither a
 * pipe of this process nor a file a child opens takes a standard
 * stream's number (run with stderr closed, a worker's lines on stderr
 * went into the trace lmshim opened in the child, as fd 2). */
static void std_fds_open(void)
{
    for (int f = 0; f <= 2; f++) {
        if (fcntl(f, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int d = open("/dev/null", f == 0 ? O_RDONLY : O_WRONLY);
        if (d >= 0 && d != f) {
            dup2(d, f);
            close(d);
        }
    }
}

/* Forks, applies env in the child and execs argv with stdout on a pipe
 * (or on this process's stdout when buf is NULL); the parent reads the pipe
 * into buf (the caller's) and reaps the child. */
bool worker_run(char *const argv[], const worker_env *env, size_t n, char *buf, size_t size)
{
    int fd[2] = {-1, -1};
    std_fds_open();
    if (buf) {
        buf[0] = 0;
        if (pipe(fd) != 0)
            return false;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        clear_lms_options();
        for (size_t i = 0; i < n; i++) {
            if (env[i].value)
                setenv(env[i].name, env[i].value, 1);
            else
                unsetenv(env[i].name);
        }
        if (buf) {
            dup2(fd[1], 1);
            close(fd[0]);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    if (buf) {
        close(fd[1]);
        size_t got = 0;
        for (ssize_t r; pid > 0 && got < size - 1 && (r = read(fd[0], buf + got, size - 1 - got)) != 0;)
            if (r > 0)
                got += (size_t)r;
            else if (errno != EINTR)
                break;
        buf[got] = 0;
        close(fd[0]);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Reads comma-separated positive numbers from s into out. */
int worker_parse_ratios(const char *s, double *out, int max)
{
    int n = 0;
    char *end;
    while (*s && n < max) {
        out[n] = strtod(s, &end);
        if (end == s || !(out[n] > 0))
            return 0;
        n++;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}
