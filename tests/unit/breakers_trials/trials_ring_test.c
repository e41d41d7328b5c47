/*
 * trials_ring_test.c — the step points of src/engine/timing.c
 * (lms_timing_mark, lms_timing_between) over a fake driver whose events
 * carry the fake clock at their last record: a reading between two points
 * is their true distance or nothing (never a point recorded over since),
 * across many wraps of the ring of 128; a point whose record failed is no
 * point (mark answers 0), so that the planner does not run modes it can
 * never time. One case per meson test.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "options.h"
#include "timing.h"

typedef struct fake_event {
    uint64_t at;   /* fake clock at its last record (ns) */
    bool done;
} fake_event;

static uint64_t clock_ns;
static int fail_every;   /* a record fails when the record count is a multiple (0: never) */
static int records;

static CUresult ev_create(CUevent *e, unsigned flags)
{
    (void)flags;
    *e = (CUevent)calloc(1, sizeof(fake_event));
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult ev_destroy(CUevent e)
{
    free(e);
    return CUDA_SUCCESS;
}
static CUresult ev_record(CUevent e, CUstream s)
{
    (void)s;
    if (fail_every && ++records % fail_every == 0)
        return CUDA_ERROR_INVALID_HANDLE;   /* e.g. a stream destroyed */
    ((fake_event *)e)->at = clock_ns;
    ((fake_event *)e)->done = true;
    return CUDA_SUCCESS;
}
static CUresult ev_query(CUevent e) { return ((fake_event *)e)->done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY; }
static CUresult ev_elapsed(float *ms, CUevent a, CUevent b)
{
    *ms = (float)((double)(((fake_event *)b)->at - ((fake_event *)a)->at) / 1e6);
    return CUDA_SUCCESS;
}

static void setup(void)
{
    lms_options_load();
    lms_drv.cuEventCreate = ev_create;
    lms_drv.cuEventDestroy = ev_destroy;
    lms_drv.cuEventRecord = ev_record;
    lms_drv.cuEventQuery = ev_query;
    lms_drv.cuEventElapsedTime = ev_elapsed;
}

#define N 1000

/* Point k (1-based) is recorded at clock k ms: every reading the ring
 * gives is to - from ms, for every pair within 140 of each other after
 * each of N points. */
static void ring_wraps(void)
{
    setup();
    static int num[N + 1];
    int readable = 0;
    for (int k = 1; k <= N; k++) {
        clock_ns = (uint64_t)k * 1000000;
        num[k] = lms_timing_mark(0, (CUstream)(uintptr_t)0x10, 0);
        CHECK(num[k] > 0);
        for (int from = k - 140 > 1 ? k - 140 : 1; from < k; from++) {
            double ns = lms_timing_between(0, num[from], num[k]);
            if (ns >= 0) {
                readable++;
                CHECK_NEAR(ns, (double)(num[k] - num[from]) * 1e6, 1e3);
                CHECK(k - from < 128);
            }
        }
    }
    CHECK(readable > 124 * (N - 128));   /* the latest 128 are read */
}

/* Every third record fails: the failed ones are no points (0), and the
 * others read true distances. */
static void failed_record_is_no_point(void)
{
    setup();
    fail_every = 3;
    int prev = 0, prev_at = 0, zeros = 0;
    for (int k = 1; k <= 90; k++) {
        clock_ns = (uint64_t)k * 1000000;
        int m = lms_timing_mark(0, (CUstream)(uintptr_t)0x10, 0);
        if (!m) {
            zeros++;
            continue;
        }
        if (prev) {
            double ns = lms_timing_between(0, prev, m);
            CHECK(ns >= 0);
            CHECK_NEAR(ns, (double)(k - prev_at) * 1e6, 1e3);
        }
        prev = m, prev_at = k;
    }
    CHECK_EQ_U(zeros, 30);
}

/* Points on two streams: a reading between them would be no step's
 * time (a point on an idle stream completes when it is recorded, not when
 * the step's work reached it), so there is none; points on one stream
 * read, and a point asked on the stream of point `like` while the launch
 * is on another is put off (negative). */
static void streams_apart(void)
{
    setup();
    CUstream a = (CUstream)(uintptr_t)0x10, b = (CUstream)(uintptr_t)0x20;
    clock_ns = 1000000;
    int p1 = lms_timing_mark(0, a, 0);
    clock_ns = 2000000;
    int p2 = lms_timing_mark(0, b, 0);
    clock_ns = 3000000;
    int p3 = lms_timing_mark(0, a, p1);
    CHECK(p1 > 0 && p2 > 0 && p3 > 0);
    CHECK(lms_timing_between(0, p1, p2) < 0);
    CHECK(lms_timing_between(0, p2, p3) < 0);
    CHECK_NEAR(lms_timing_between(0, p1, p3), 2e6, 1e3);
    CHECK(lms_timing_mark(0, b, p1) < 0);
    CHECK(lms_timing_mark(0, a, p2) < 0);
    int p4 = lms_timing_mark(0, b, p2);
    CHECK(p4 > p3);
}

static int other_thread_mark;

/* Asks for a point like point `arg` on this thread's default stream. */
static void *mark_per_thread(void *arg)
{
    other_thread_mark = lms_timing_mark(0, CU_STREAM_PER_THREAD, *(int *)arg);
    return NULL;
}

/* The handles of default streams: NULL and CU_STREAM_LEGACY are one
 * stream; CU_STREAM_PER_THREAD is another stream on each thread. */
static void default_streams(void)
{
    setup();
    int p1 = lms_timing_mark(0, NULL, 0);
    CHECK(p1 > 0);
    int p2 = lms_timing_mark(0, CU_STREAM_LEGACY, p1);
    CHECK(p2 > 0);
    CHECK(lms_timing_between(0, p1, p2) >= 0);
    int p3 = lms_timing_mark(0, CU_STREAM_PER_THREAD, 0);
    CHECK(p3 > 0);
    CHECK(lms_timing_mark(0, CU_STREAM_PER_THREAD, p3) > 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, mark_per_thread, &p3) == 0);
    pthread_join(t, NULL);
    CHECK(other_thread_mark < 0);
}

static const test_case cases[] = {
    {"default_streams", default_streams},
    {"ring_wraps", ring_wraps},
    {"failed_record_is_no_point", failed_record_is_no_point},
    {"streams_apart", streams_apart},
};

TEST_MAIN(cases)
