/*
 * stream_program.h — the frame of the test programs that launch one
 * simulated kernel's functions on buffers over several streams and
 * report the modeled time of their last steps (blind_streams,
 * fitted_streams): the functions registered, the streams, the buffers
 * allocated and cleared, a seeded generator, and the measure printed as
 * `step_ms X` and `peak_mib Y`, which tests/common/best_of.sh reads.
 */
#ifndef TEST_STREAM_PROGRAM_H
#define TEST_STREAM_PROGRAM_H

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "simgpu.h"

#define SP_MiB (1ull << 20)
#define SP_LINK 55.0   /* bytes per ns: the simulator's default link (SIMGPU_LINK_GBPS) */

/* A small generator of its own: the same draws on every run of a seed. */
typedef struct sp_rng {
    uint64_t s;
} sp_rng;

/* A generator from `base` (nonzero) moved by `seed` (any below 2^32
 * leaves it nonzero). */
static inline sp_rng sp_seeded(uint64_t base, uint64_t seed)
{
    return (sp_rng){base + seed * 0x2545f4914f6cdd1dull};
}

/* A draw in [0, n). */
static inline uint64_t sp_draw(sp_rng *r, uint64_t n)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s % n;
}

/* The body of a kernel of four parameters (p, bytes, passes, compute_ns):
 * reads and writes [p, p + bytes) `passes` times and adds 1 to the
 * 32-bit word at p, which the program checks at its end. */
static inline void sp_rw_passes(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    l->access_passes(l, a, *(size_t *)p[1], SIMGPU_READ_WRITE, *(unsigned *)p[2]);
    __atomic_fetch_add((uint32_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, *(double *)p[3]);
}

/* sp_rw_passes's parameters. */
#define SP_RW_PASSES_PARAMS .num_params = 4, .param_sizes = {8, 8, 4, 8}

/* Registers `n` kernels named PREFIX0.. PREFIX(n-1) with body `fn` and
 * parameters `k` (its name is set here), and gets each from `modules`
 * modules loaded in turn into fns[m * n + i]. names (n x 16 chars) is
 * the caller's and must outlive the program's launches. */
static inline void sp_functions(simgpu_kernel k, const char *prefix, int n, char (*names)[16], int modules,
                                CUfunction *fns)
{
    for (int i = 0; i < n; i++) {
        snprintf(names[i], 16, "%s%d", prefix, i);
        k.name = names[i];
        OK(simgpu_register_kernel(&k));
    }
    for (int m = 0; m < modules; m++) {
        CUmodule mod;
        OK(cuModuleLoadData(&mod, "x"));
        for (int i = 0; i < n; i++)
            OK(cuModuleGetFunction(&fns[m * n + i], mod, names[i]));
    }
}

/* Creates n non-blocking streams into s[]. */
static inline void sp_streams(CUstream *s, int n)
{
    for (int i = 0; i < n; i++)
        OK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
}

/* Allocates n device buffers totalling `ratio` x `budget` bytes (each
 * rounded down to 2 MiB) into buf[], cleared; returns one's size. */
static inline size_t sp_buffers(CUdeviceptr *buf, int n, uint64_t budget, double ratio)
{
    size_t size = (size_t)((double)budget * ratio / n) & ~(2 * SP_MiB - 1);
    for (int b = 0; b < n; b++) {
        OK(cuMemAlloc(&buf[b], size));
        OK(cuMemsetD8(buf[b], 0, size));
    }
    return size;
}

/* The end of step `step` of `steps`, the last `measured` timed: waits for
 * the device, and keeps the counters before the timed steps in *c0. */
static inline void sp_step_end(int step, int steps, int measured, simgpu_counters *c0)
{
    OK(cuCtxSynchronize());
    if (step == steps - measured - 1)
        OK(simgpu_get_counters(0, c0));
}

/* Prints the modeled ms a step over the `measured` steps since c0, and
 * the device's peak: before the program reads its results back (a copy
 * adds modeled time). */
static inline void sp_report(const simgpu_counters *c0, int measured)
{
    simgpu_counters c1;
    OK(simgpu_get_counters(0, &c1));
    printf("step_ms %.4f\npeak_mib %.1f\n", (c1.modeled_ns - c0->modeled_ns) / 1e6 / measured,
           (double)c1.peak_device_bytes / SP_MiB);
    printf("moved_mib to_device %.1f to_host %.1f remote %.1f a step\n",
           (double)(c1.bytes_to_device - c0->bytes_to_device) / SP_MiB / measured,
           (double)(c1.bytes_to_host - c0->bytes_to_host) / SP_MiB / measured,
           (double)(c1.remote_bytes - c0->remote_bytes) / SP_MiB / measured);
}

#endif
