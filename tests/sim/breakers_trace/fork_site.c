/*
 * fork_site.c — allocation sites across fork.
 *
 * usage: fork_site lock_held     a thread is inside the site table's lock
 *                                when the main thread forks; the child then
 *                                allocates (with LMS_STACKS): it must not
 *                                deadlock (an alarm ends it after 5 s)
 *        fork_site site_in_child the parent allocates 1 MiB from one
 *                                function, forks, and the child allocates
 *                                2 MiB from the same function: the child's
 *                                trace must describe the site it names
 *        fork_site fast_exit     two fork children allocate (2 and 3 MiB)
 *                                and end with _exit and _Exit (as Python's
 *                                os._exit, which a multiprocessing worker
 *                                ends with): no at-exit flush runs
 *        fork_site late_exit     an at-exit handler the program registered
 *                                before its first CUDA call (so it runs
 *                                after lmshim's) frees and allocates (3 MiB)
 *        fork_site grandchild    the parent allocates (1 MiB) and forks a
 *                                child that makes no CUDA call and forks a
 *                                grandchild, which allocates (2 MiB): its
 *                                header's parent is the child's pid (which
 *                                it prints)
 *        fork_site fd_reused FILE  after the trace opened, the program
 *                                closes every descriptor above 2 and opens
 *                                FILE (which takes the trace's number),
 *                                writes a line to it and allocates: FILE
 *                                must hold the program's line alone
 *        fork_site orphan_exec   the parent allocates 1 MiB and exits; its
 *                                fork child, once orphaned, execs this
 *                                program (after_exec: 5 MiB): the new image
 *                                must not take the parent's file
 *
 * lock_held holds the lock deterministically: the first traced allocation
 * creates the site table with calloc under the lock, and this program's
 * calloc (it interposes on the C library's) stops there until the main
 * thread has forked, or 2 s have passed (a fork that waits for the lock
 * waits that long). Exits 77 under AddressSanitizer, which owns calloc.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static atomic_int in_lock;    /* 1: the thread is inside the site table's lock */
static atomic_int forked;     /* 1: the main thread has forked */

#ifndef UNDER_ASAN   /* the sanitizer's calloc stays (its free must know every block) */
extern void *__libc_calloc(size_t, size_t);

/* The C library's calloc, but the site table's (8192 entries of at least
 * 512 bytes) waits for the fork first. */
void *calloc(size_t n, size_t size)
{
    if (n == 8192 && size >= 512 && !atomic_load(&forked)) {
        atomic_store(&in_lock, 1);
        for (int i = 0; i < 200 && !atomic_load(&forked); i++)
            nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return __libc_calloc(n, size);
}
#endif

static int setup(void)
{
    CUcontext ctx;
    return cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx);
}

__attribute__((noinline)) static int shared_site(size_t bytes)
{
    CUdeviceptr p;
    int r = cuMemAlloc(&p, bytes) != CUDA_SUCCESS;
    __asm__ volatile("" ::: "memory");   /* a call, not a jump */
    return r;
}

static void *first_alloc(void *arg)
{
    (void)arg;
    CUcontext ctx;
    if (cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx))
        return (void *)1;
    return (void *)(long)shared_site(1 << 20);
}

/* 0 if the child exited 0, else 1 (and says why). */
static int child_ok(pid_t pid)
{
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return 1;
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "fork_site: the child died of signal %d (SIGALRM: it deadlocked)\n", WTERMSIG(status));
        return 1;
    }
    return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

static int lock_held(void)
{
#ifdef UNDER_ASAN
    return 77;
#endif
    pthread_t t;
    if (setup() || pthread_create(&t, NULL, first_alloc, NULL))
        return 2;
    while (!atomic_load(&in_lock))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(5);
        _exit(shared_site(2 << 20));
    }
    atomic_store(&forked, 1);
    void *r;
    pthread_join(t, &r);
    return child_ok(pid) || r != NULL;
}

/* Both allocations are made by the same call: the same stack (the loop's
 * count is read at run time: not unrolled into two calls). */
static volatile int rounds = 2;

__attribute__((noinline)) static int site_in_child(void)
{
    if (setup())
        return 2;
    pid_t pid = -1;
    for (int round = 0; round < rounds; round++) {
        if (round == 1 && (pid = fork()) != 0)
            break;   /* the parent, after forking */
        if (shared_site((size_t)(round + 1) << 20))
            return 2;
    }
    if (pid == 0)
        exit(0);     /* the child, after its allocation */
    return child_ok(pid);
}

static int fast_exit(void)
{
    if (setup() || shared_site(1 << 20))
        return 2;
    for (int i = 0; i < 2; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            int r = shared_site((size_t)(2 + i) << 20);
            if (i == 0)
                _exit(r);
            _Exit(r);
        }
        if (pid < 0 || child_ok(pid))
            return 1;
    }
    return 0;
}

static int grandchild(void)
{
    if (setup() || shared_site(1 << 20))
        return 2;
    pid_t child = fork();
    if (child == 0) {
        printf("%d\n", (int)getpid());
        fflush(stdout);
        pid_t grand = fork();
        if (grand == 0)
            exit(shared_site(2 << 20));
        exit(grand < 0 || child_ok(grand));
    }
    return child < 0 || child_ok(child);
}

static int fd_reused(const char *file)
{
    if (setup() || shared_site(1 << 20))
        return 2;
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    int f = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f < 0 || write(f, "program data\n", 13) != 13)
        return 2;
    return shared_site(2 << 20);   /* and the file stays open until exit */
}

static CUdeviceptr late_ptr;

static void late_handler(void)
{
    CUdeviceptr q;
    cuMemFree(late_ptr);
    cuMemAlloc(&q, 3 << 20);
}

static int late_exit(void)
{
    atexit(late_handler);
    return setup() || cuMemAlloc(&late_ptr, 1 << 20) != CUDA_SUCCESS;
}

static int orphan_exec(void)
{
    if (setup() || shared_site(1 << 20))
        return 2;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid < 0 ? 2 : 0;
    while (getppid() == parent)
        usleep(1000);
    usleep(20000);   /* and a moment more: the parent's file is older than this exec */
    execl("/proc/self/exe", "fork_site", "after_exec", (char *)NULL);
    _exit(2);
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    if (strcmp(c, "fast_exit") == 0)
        return fast_exit();
    if (strcmp(c, "orphan_exec") == 0)
        return orphan_exec();
    if (strcmp(c, "late_exit") == 0)
        return late_exit();
    if (strcmp(c, "grandchild") == 0)
        return grandchild();
    if (strcmp(c, "fd_reused") == 0 && argc > 2)
        return fd_reused(argv[2]);
    if (strcmp(c, "after_exec") == 0)
        return setup() || shared_site(5 << 20);
    if (strcmp(c, "lock_held") == 0)
        return lock_held();
    if (strcmp(c, "site_in_child") == 0)
        return site_in_child();
    fprintf(stderr, "usage: fork_site lock_held|site_in_child|fast_exit|orphan_exec|late_exit|grandchild|fd_reused FILE\n");
    return 2;
}
