/*
 * exec.c — the ends of a process image that run no atexit handler: the
 * exec family, and _exit and _Exit (Python's os._exit, with which a
 * multiprocessing worker ends). Each hook writes the trace's buffered lines,
 * then calls the C library's function (found with dlsym(RTLD_NEXT)) with
 * the same arguments; the list forms (execl, execle, execlp) gather their
 * arguments and call the vector forms. Hooked: execve, execv, execvp,
 * execvpe, execl, execle, execlp, fexecve, execveat, _exit, _Exit.
 * posix_spawn and system() start a new process and leave this one's buffer
 * alone: they need nothing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hooks.h"
#include "trace.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

/* The C library's function `name`, or NULL. */
static void *next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* What every hook does first. */
static void before_exec(void)
{
    lms_trace_flush_before_exec();
}

LMS_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    before_exec();
    execve_fn real = (execve_fn)next("execve");
    return real ? real(path, argv, envp) : (errno = ENOSYS, -1);
}

LMS_EXPORT int execv(const char *path, char *const argv[])
{
    before_exec();
    execv_fn real = (execv_fn)next("execv");
    return real ? real(path, argv) : (errno = ENOSYS, -1);
}

LMS_EXPORT int execvp(const char *file, char *const argv[])
{
    before_exec();
    execv_fn real = (execv_fn)next("execvp");
    return real ? real(file, argv) : (errno = ENOSYS, -1);
}

LMS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    before_exec();
    execve_fn real = (execve_fn)next("execvpe");
    return real ? real(file, argv, envp) : (errno = ENOSYS, -1);
}

LMS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    before_exec();
    fexecve_fn real = (fexecve_fn)next("fexecve");
    return real ? real(fd, argv, envp) : (errno = ENOSYS, -1);
}

LMS_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    before_exec();
    execveat_fn real = (execveat_fn)next("execveat");
    return real ? real(dirfd, path, argv, envp, flags) : (errno = ENOSYS, -1);
}

typedef void (*exit_fn)(int);

/* Ends the process as the C library's `name` does (the exit_group system
 * call if it cannot be found). */
static _Noreturn void end_now(const char *name, int status)
{
    exit_fn real = (exit_fn)next(name);
    if (real)
        real(status);
    syscall(SYS_exit_group, status);
    for (;;)
        ;
}

LMS_EXPORT _Noreturn void _exit(int status)
{
    before_exec();
    end_now("_exit", status);
}

LMS_EXPORT _Noreturn void _Exit(int status)
{
    before_exec();
    end_now("_Exit", status);
}

/* The list forms: arguments up to the NULL into a vector (on the stack when
 * short, else malloc'd and freed if the exec fails); with `want_env`, the
 * environment that follows the NULL. Then the vector form. */
#define SHORT_ARGS 64
#define LIST_FORM(fn_name, real_name, want_env)                                   \
    LMS_EXPORT int fn_name(const char *path, const char *arg, ...)                \
    {                                                                             \
        before_exec();                                                            \
        va_list ap;                                                               \
        size_t n = 1;                                                             \
        va_start(ap, arg);                                                        \
        for (const char *a = arg; a; a = va_arg(ap, const char *))                \
            n++;                                                                  \
        va_end(ap);                                                               \
        char *small[SHORT_ARGS];                                                  \
        char **argv = n <= SHORT_ARGS ? small : malloc(n * sizeof *argv);         \
        if (!argv) {                                                              \
            errno = ENOMEM;                                                       \
            return -1;                                                            \
        }                                                                         \
        size_t i = 0;                                                             \
        va_start(ap, arg);                                                        \
        for (const char *a = arg; a; a = va_arg(ap, const char *))                \
            argv[i++] = (char *)a;                                                \
        argv[i] = NULL;                                                           \
        char *const *envp = want_env ? va_arg(ap, char *const *) : environ;       \
        va_end(ap);                                                               \
        int r;                                                                    \
        if (want_env) {                                                           \
            execve_fn real = (execve_fn)next(real_name);                          \
            r = real ? real(path, argv, envp) : (errno = ENOSYS, -1);             \
        } else {                                                                  \
            execv_fn real = (execv_fn)next(real_name);                            \
            r = real ? real(path, argv) : (errno = ENOSYS, -1);                   \
        }                                                                         \
        if (argv != small) {                                                      \
            int e = errno;                                                        \
            free(argv);                                                           \
            errno = e;                                                            \
        }                                                                         \
        return r;                                                                 \
    }
LIST_FORM(execl, "execv", 0)
LIST_FORM(execlp, "execvp", 0)
LIST_FORM(execle, "execve", 1)
