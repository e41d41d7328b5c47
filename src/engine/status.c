/*
 * status.c — the one-line status of long jobs (see status.h).
 */
#include "status.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "account.h"
#include "log.h"
#include "trace.h"
#include "units.h"

static pid_t running_in;   /* the process whose thread runs */

int lms_status_line(char *buf, int len, unsigned long long prev[][2])
{
    int at = snprintf(buf, (size_t)len, "status");
    for (int d = 0; d < LMS_MAX_DEVICES && at < len; d++) {
        lms_account *a = &lms_accounts[d];
        if (atomic_load(&a->state) != 2)
            continue;
        char used[32], budget[32], res[32], in[32], out[32];
        unsigned long long f = atomic_load(&a->prefetched_bytes), e = atomic_load(&a->evicted_bytes);
        lms_format_size(used, sizeof used, atomic_load(&a->used));
        lms_format_size(budget, sizeof budget, a->budget);
        lms_format_size(res, sizeof res, atomic_load(&a->live_bytes[LMS_PLACE_MANAGED]));
        lms_format_size(in, sizeof in, f - prev[d][0]);
        lms_format_size(out, sizeof out, e - prev[d][1]);
        prev[d][0] = f;
        prev[d][1] = e;
        at += snprintf(buf + at, (size_t)(len - at), " | dev %d used %s/%s managed %s prefetched +%s evicted +%s", d,
                       used, budget, res, in, out);
    }
    return at < len ? at : len - 1;
}

/* Sleeps `every` seconds, then writes a line; forever. */
static void *status_loop(void *arg)
{
    (void)arg;
    static unsigned long long prev[LMS_MAX_DEVICES][2];
    for (;;) {
        struct timespec ts = {.tv_sec = lms_opt.stats_every};
        while (nanosleep(&ts, &ts) != 0)
            ;
        char line[2048];
        int n = snprintf(line, sizeof line, "lmshim[%d] ", (int)getpid());
        n += lms_status_line(line + n, (int)sizeof line - n - 1, prev);
        line[n++] = '\n';
        lms_log_write(line, (size_t)n);
    }
    return NULL;
}

void lms_status_start(void)
{
    if (lms_opt.stats_every <= 0 || running_in == getpid())
        return;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, status_loop, NULL) == 0)
        running_in = getpid();
    pthread_attr_destroy(&attr);
}
