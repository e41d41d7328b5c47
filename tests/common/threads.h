/*
 * threads.h — many threads ask for device memory at once: the harness of
 * the tests that race allocations against a budget. Each thread's function
 * makes its allocation, calls race_wait() (so that no thread frees before
 * every thread has tried), frees what it got and returns its CUresult as
 * (void *)(intptr_t).
 */
#ifndef TEST_THREADS_H
#define TEST_THREADS_H

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>

#include "check.h"
#include "shim.h"

#define RACE_MAX_THREADS 64

static pthread_barrier_t race_bar;   /* every thread of the running round */

/* Waits until every thread of the round has made its allocation. */
static inline void race_wait(void) { pthread_barrier_wait(&race_bar); }

/* What the threads of a round answered. */
typedef struct race_count {
    int ok;    /* threads that answered CUDA_SUCCESS */
    int oom;   /* threads that answered CUDA_ERROR_OUT_OF_MEMORY */
} race_count;

/* Runs fn in n threads at once (at most RACE_MAX_THREADS), thread i given
 * (void *)(intptr_t)i, joins them and counts their answers. */
static inline race_count race_threads(int n, void *(*fn)(void *))
{
    pthread_t t[RACE_MAX_THREADS];
    CHECK(n > 0 && n <= RACE_MAX_THREADS);
    pthread_barrier_init(&race_bar, NULL, (unsigned)n);
    for (intptr_t i = 0; i < n; i++)
        CHECK(pthread_create(&t[i], NULL, fn, (void *)i) == 0);
    race_count c = {0, 0};
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(t[i], &r);
        c.ok += (intptr_t)r == CUDA_SUCCESS;
        c.oom += (intptr_t)r == CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_barrier_destroy(&race_bar);
    return c;
}

/* Runs fn in ten threads at once against a budget with room for eight of
 * their allocations: eight answer success, two out-of-memory, and every
 * charge comes back (cuMemGetInfo and the simulated device agree on 0). */
static inline void ten_threads_eight_fit(void *(*fn)(void *))
{
    race_count c = race_threads(10, fn);
    CHECK_EQ_U(c.ok, 8);
    CHECK_EQ_U(c.oom, 2);
    CHECK_EQ_U(info_used(), 0);
    CHECK_EQ_U(sim_used(), 0);
}

#endif
