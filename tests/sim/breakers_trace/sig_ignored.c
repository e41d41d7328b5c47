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

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return check("after exec");
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
