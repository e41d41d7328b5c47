/*
 * sig_ignored.c — a program that ignores SIGINT and SIGTERM before its
 * first CUDA call (as a job started in the background by a shell, or under
 * `trap '' INT TERM`, does). With LMS_TRACE set, the trace opens at that
 * call; the signals must stay ignored: in the program (sigaction says
 * SIG_IGN) and in a program it execs (an ignored signal survives exec, a
 * handler does not).
 *
 * usage: sig_ignored          ignores, allocates, checks, execs itself as
 *        sig_ignored child    checks that the signals are still ignored
 *        sig_ignored resethand  a SIGINT handler installed with
 *                             SA_RESETHAND before the trace opens runs
 *                             once; the second SIGINT kills the program
 *                             (the test expects death by SIGINT)
 */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* 0 when SIGINT and SIGTERM are both ignored, else 1 (and says which). */
static int check(const char *who)
{
    static const int sigs[2] = {SIGINT, SIGTERM};
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        struct sigaction sa;
        if (sigaction(sigs[i], NULL, &sa) != 0 || (sa.sa_flags & SA_SIGINFO) || sa.sa_handler != SIG_IGN) {
            fprintf(stderr, "sig_ignored %s: signal %d is no longer ignored\n", who, sigs[i]);
            bad = 1;
        }
    }
    return bad;
}

static volatile sig_atomic_t handled;

static void once(int sig)
{
    (void)sig;
    handled++;
}

/* Returns only if the second SIGINT did not end the program. */
static int resethand(void)
{
    struct sigaction sa = {.sa_handler = once, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    CUcontext ctx;
    CUdeviceptr p;
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) || cuMemAlloc(&p, 1 << 20))
        return 2;
    raise(SIGINT);
    if (handled != 1) {
        fprintf(stderr, "sig_ignored resethand: the handler ran %d times\n", (int)handled);
        return 1;
    }
    raise(SIGINT);   /* the default now: the program dies here */
    fprintf(stderr, "sig_ignored resethand: survived the second SIGINT (the handler ran %d times)\n", (int)handled);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return check("after exec");
    if (argc > 1 && strcmp(argv[1], "resethand") == 0)
        return resethand();
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    CUcontext ctx;
    CUdeviceptr p;
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) || cuMemAlloc(&p, 1 << 20)) {
        fprintf(stderr, "sig_ignored: CUDA setup failed\n");
        return 2;
    }
    if (check("after the trace opened"))
        return 1;
    fflush(NULL);
    execl("/proc/self/exe", "sig_ignored", "child", (char *)NULL);
    perror("sig_ignored: exec");
    return 2;
}
