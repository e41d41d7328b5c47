/*
 * trace_procs.c — programs whose traces must come out whole: a fork child
 * and its parent tracing to one fixed LMS_TRACE path, a process that execs
 * itself with lines still buffered, a kernel whose name needs escaping,
 * and allocations from static functions (built with -g, without -rdynamic:
 * only the report's symbolization can name them).
 *
 * usage: trace_procs fork|spawn|orphan|exec|after_exec|quote_kernel|static_sites
 * Each allocation's size tells the test which process made it.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simgpu.h"
#include "../../common/shim.h"

static int setup(void)
{
    CUcontext ctx;
    return cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx);
}

__attribute__((noinline)) static int alloc(size_t bytes)
{
    CUdeviceptr p;
    return cuMemAlloc(&p, bytes) != CUDA_SUCCESS;
}

/* Parent 1 MiB, child 2 MiB, parent again 3 MiB after the child ended. */
static int fork_case(void)
{
    if (setup() || alloc(1 * MiB))
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0)
        exit(alloc(2 * MiB));   /* exit, not _exit: the child's own at-exit flush */
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    return alloc(3 * MiB);
}

/* Parent 1 MiB; a child that execs this program (5 MiB, a new image with
 * its own pid) while the parent lives; the parent 3 MiB after it ended. */
static int spawn_case(void)
{
    if (setup() || alloc(1 * MiB))
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        execl("/proc/self/exe", "trace_procs", "after_exec", (char *)NULL);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    return alloc(3 * MiB);
}

/* Parent 1 MiB, then it exits; its fork child waits for that, then
 * allocates 2 MiB: the parent's file is no longer locked, and still the
 * child must not take it. */
static int orphan_case(void)
{
    if (setup() || alloc(1 * MiB))
        return 1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid > 0)
        return 0;
    while (getppid() == parent)
        usleep(1000);
    return alloc(2 * MiB);
}

/* 4 MiB, then exec of this program, which allocates 5 MiB. */
static int exec_case(void)
{
    if (setup() || alloc(4 * MiB))
        return 1;
    execl("/proc/self/exe", "trace_procs", "after_exec", (char *)NULL);
    return 1;
}

static void touch(simgpu_launch *l, void **p)
{
    l->access(l, *(CUdeviceptr *)p[0], 2 * MiB, SIMGPU_READ_WRITE);
}

/* A managed chunk (the test sets LMS_THRESHOLD=1M LMS_FRAC=0) used by a
 * kernel named op"quote\x: its launch line is written. */
static int quote_case(void)
{
    static simgpu_kernel k = {"op\"quote\\x", touch, 1, {8}};
    CUmodule m;
    CUfunction f;
    CUdeviceptr p;
    if (setup() || simgpu_register_kernel(&k) || cuModuleLoadData(&m, "quote") ||
        cuModuleGetFunction(&f, m, "op\"quote\\x") || cuMemAlloc(&p, 2 * MiB))
        return 1;
    void *args[] = {&p};
    int r = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) || cuCtxSynchronize();
    return cuMemFree(p) || cuModuleUnload(m) || r;
}

/* Two static functions, one allocation site each: 6 MiB and 7 MiB (with
 * work after the call, so that it is a call and not a jump). */
static volatile int sink;

__attribute__((noinline)) static int static_site_six(void)
{
    int r = alloc(6 * MiB);   /* SITE_SIX */
    sink = r;
    return r;
}

__attribute__((noinline)) static int static_site_seven(void)
{
    int r = alloc(7 * MiB);   /* SITE_SEVEN */
    sink = r;
    return r;
}

static int (*volatile sites[2])(void) = {static_site_six, static_site_seven};   /* no inlining */

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    if (strcmp(c, "fork") == 0)
        return fork_case();
    if (strcmp(c, "exec") == 0)
        return exec_case();
    if (strcmp(c, "spawn") == 0)
        return spawn_case();
    if (strcmp(c, "orphan") == 0)
        return orphan_case();
    if (strcmp(c, "after_exec") == 0)
        return setup() || alloc(5 * MiB);
    if (strcmp(c, "quote_kernel") == 0)
        return quote_case();
    if (strcmp(c, "static_sites") == 0)
        return setup() || sites[0]() || sites[1]();
    fprintf(stderr, "usage: trace_procs fork|spawn|orphan|exec|after_exec|quote_kernel|static_sites\n");
    return 2;
}
