/*
 * breakers.h — what the breakers_graphs test programs share: the kernels
 * (bump, pair, and gate/late, whose bodies hold the launching thread), the
 * setup, chunk helpers, the invariants every case checks (lmshim's budget,
 * the simulator's counters of missing waits), a graph capture helper and
 * two threads released together.
 */
#ifndef BREAKERS_H
#define BREAKERS_H

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "lmshim.h"
#include "simgpu.h"

#define CHUNK (64 * MiB)

/* bump(p, bytes): p[0] += 1 (a 64-bit counter); touches the whole range. */
static void bump(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint64_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, 2e4);
}

/* pair(p, q, bytes): bumps p; q is a parameter it never touches. */
static void pair(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[2];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint64_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, 1e4);
}

/* gate(p, bytes): bumps p like bump, but its body holds the launching
 * thread until the test opens the gate (the launch sits between lmshim's
 * decision and its record after the launch). */
static atomic_int gate_entered, gate_open;
static void gate(simgpu_launch *l, void **p)
{
    bump(l, p);
    atomic_fetch_add(&gate_entered, 1);
    while (!atomic_load(&gate_open))
        sched_yield();
}

/* late(p, bytes): like gate, but it holds the thread before it touches p. */
static atomic_int late_entered, late_open;
static void late(simgpu_launch *l, void **p)
{
    atomic_store(&late_entered, 1);
    while (!atomic_load(&late_open))
        sched_yield();
    bump(l, p);
}

static CUfunction f_bump, f_pair, f_gate, f_late;
static CUcontext ctx;

static inline void setup(void)
{
    ctx = primary_context(0);
    f_bump = sim_function(&(simgpu_kernel){"bump", bump, 2, {8, 8}});
    f_pair = sim_function(&(simgpu_kernel){"pair", pair, 3, {8, 8, 8}});
    f_gate = sim_function(&(simgpu_kernel){"gate", gate, 2, {8, 8}});
    f_late = sim_function(&(simgpu_kernel){"late", late, 2, {8, 8}});
}

static inline CUresult launch_bump(CUdeviceptr p, CUstream s)
{
    size_t bytes = CHUNK;
    void *args[] = {&p, &bytes};
    return cuLaunchKernel(f_bump, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

/* A chunk set to zero (managed: the settings place every chunk off the device). */
static inline CUdeviceptr chunk(void)
{
    CUdeviceptr p;
    OK(cuMemAlloc(&p, CHUNK));
    OK(cuMemsetD8(p, 0, 64));
    return p;
}

/* The budget held and the simulated GPU saw no missing wait. */
static inline void check_invariants(void)
{
    check_budget(0);
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.inflight_waits, 0);
    CHECK_EQ_U(c.busy_evictions, 0);
}

/* Captures add(c[i], s) for each of c[0..n) on s, in `mode`, into an
 * executable graph. */
static inline CUgraphExec capture_each(CUstream s, CUstreamCaptureMode mode, CUresult (*add)(CUdeviceptr, CUstream),
                                       const CUdeviceptr *c, int n)
{
    OK(cuStreamBeginCapture(s, mode));
    for (int i = 0; i < n; i++)
        OK(add(c[i], s));
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphDestroy(g));
    return e;
}

/* Captures `n` bumps of chunks c[0..n) on s into an executable graph. */
static inline CUgraphExec capture_bumps(CUstream s, const CUdeviceptr *c, int n)
{
    return capture_each(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, launch_bump, c, n);
}

/* Runs a(0) and b(1) on two threads, each current in ctx, released at one
 * instant once both are ready, and waits for both. */
typedef struct racer {
    void (*fn)(int side);
    int side;
} racer;
static atomic_int racers_ready, racers_go;

static void *racer_thread(void *arg)
{
    const racer *r = arg;
    OK(cuCtxSetCurrent(ctx));
    atomic_fetch_add(&racers_ready, 1);
    while (!atomic_load(&racers_go))
        ;
    r->fn(r->side);
    return NULL;
}

static inline void race(void (*a)(int side), void (*b)(int side))
{
    racer r[2] = {{a, 0}, {b, 1}};
    pthread_t t[2];
    atomic_store(&racers_ready, 0);
    atomic_store(&racers_go, 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, racer_thread, &r[i]) == 0);
    while (atomic_load(&racers_ready) < 2)
        ;
    atomic_store(&racers_go, 1);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
}

#define TRY(j, call)                                     \
    do {                                                 \
        CUresult r_ = (call);                            \
        if (r_ != CUDA_SUCCESS && !(j)->fail) {          \
            (j)->fail = r_;                              \
            (j)->line = __LINE__;                        \
        }                                                \
    } while (0)

typedef struct mt_job {
    int id;
    CUdeviceptr *c;           /* the shared chunks */
    int nc;
    CUresult fail;
    int line;
} mt_job;

/* `n` zeroed chunks, then the work done and the simulator's counters reset. */
static inline void chunks(CUdeviceptr *c, int n)
{
    for (int i = 0; i < n; i++)
        c[i] = chunk();
    OK(cuCtxSynchronize());
    OK(simgpu_reset_counters());
}

/* Runs fn on `threads` threads (at most 64; job i is numbered first + i and
 * shares the chunks c[0..nc)), joins them and checks that none failed. */
static inline void run_jobs(void *(*fn)(void *), int threads, int first, CUdeviceptr *c, int nc)
{
    mt_job jobs[64];
    pthread_t th[64];
    CHECK(threads <= 64);
    for (int i = 0; i < threads; i++) {
        jobs[i] = (mt_job){.id = first + i, .c = c, .nc = nc};
        CHECK(pthread_create(&th[i], NULL, fn, &jobs[i]) == 0);
    }
    for (int i = 0; i < threads; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    for (int i = 0; i < threads; i++)
        CHECK_EQ_U(jobs[i].fail, 0);
}

/* The sum of the counters of chunks c[0..n). */
static inline uint64_t counters_sum(const CUdeviceptr *c, int n)
{
    uint64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += counter(c[i]);
    return sum;
}

/* setup(), then a non-blocking stream into *s and n fresh chunks into c
 * (counters not reset); the caller destroys the stream if it wants to. */
static inline void setup_stream_chunks(CUstream *s, CUdeviceptr *c, int n)
{
    setup();
    OK(cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < n; i++)
        c[i] = chunk();
}

/* Makes n zeroed chunks into c (see chunks), runs fn on `threads` threads
 * over them (job ids from 0, see run_jobs) and returns the sum of their
 * counters. The chunks stay allocated for the caller. */
static inline uint64_t jobs_on_new_chunks(void *(*fn)(void *), int threads, CUdeviceptr *c, int n)
{
    chunks(c, n);
    run_jobs(fn, threads, 0, c, n);
    return counters_sum(c, n);
}

typedef struct gate_job {
    CUstream s;
    CUdeviceptr x;
    CUfunction f;             /* f_gate or f_late */
    CUresult r;
} gate_job;

static inline void *gate_work(void *arg)
{
    gate_job *j = arg;
    j->r = cuCtxSetCurrent(ctx);
    size_t bytes = CHUNK;
    void *args[] = {&j->x, &bytes};
    if (j->r == CUDA_SUCCESS)
        j->r = cuLaunchKernel(j->f, 1, 1, 1, 32, 1, 1, 0, j->s, args, NULL);
    return NULL;
}

#endif
