/*
 * stamp_kernels.h — two simulated kernels the residency tests launch on a
 * chunk, and the helper that launches them (header-only; test programs
 * over sim/ that include check.h and simgpu.h first).
 *
 *   stamp(p, bytes, v): reads and writes [p, p+bytes), writes v to its
 *                       first and last 32-bit words;
 *   slow(p, bytes, v):  the same, then 20 ms of modeled compute (a kernel
 *                       still running while the host goes on).
 */
#ifndef LMS_TEST_STAMP_KERNELS_H
#define LMS_TEST_STAMP_KERNELS_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "simgpu.h"

/* The body of stamp. */
static void stamp_body(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    uint32_t v = *(uint32_t *)p[2];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    uint32_t *w = (uint32_t *)(uintptr_t)a;
    w[0] = v;
    w[bytes / 4 - 1] = v;
}

/* The body of slow. */
static void slow_body(simgpu_launch *l, void **p)
{
    stamp_body(l, p);
    l->compute(l, 20e6);
}

/* Registers both kernels with the simulator (once per process: later
 * calls only look the functions up again in a new module, which the
 * caller keeps loaded while it launches them). */
static inline void stamp_kernels_load(CUmodule *mod, CUfunction *f_stamp, CUfunction *f_slow)
{
    static int registered;
    if (!registered) {
        simgpu_kernel k1 = {"stamp", stamp_body, 3, {8, 8, 4}};
        simgpu_kernel k2 = {"slow", slow_body, 3, {8, 8, 4}};
        OK(simgpu_register_kernel(&k1));
        OK(simgpu_register_kernel(&k2));
        registered = 1;
    }
    OK(cuModuleLoadData(mod, "x"));
    OK(cuModuleGetFunction(f_stamp, *mod, "stamp"));
    OK(cuModuleGetFunction(f_slow, *mod, "slow"));
}

/* Launches f(p, bytes, v) (stamp or slow) on stream s. */
static inline void launch_stamp(CUfunction f, CUdeviceptr p, size_t bytes, uint32_t v, CUstream s)
{
    void *args[] = {&p, &bytes, &v};
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
}

#endif
