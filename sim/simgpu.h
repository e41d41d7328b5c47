/*
 * simgpu.h — the simulated GPU's own interface, for test and benchmark
 * programs that run over build/sim.
 *
 * A simulated kernel is a host function. A program registers it once, with
 * its parameter layout, then launches it through the ordinary CUDA APIs
 * (cuModuleGetFunction + cuLaunchKernel, or cudaLaunchKernel with the
 * function pointer). While it runs, the body tells the simulator which
 * device byte ranges it touches and how much compute time it models; the
 * simulator charges faults, migrations and link traffic for those ranges.
 *
 * Everything here is header-only: the functions find the simulated driver
 * with dlopen("libcuda.so.1"), so a program linked only to libcudart can
 * use them. See docs/SIMULATOR.md for the model.
 */
#ifndef SIMGPU_H
#define SIMGPU_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIMGPU_MAX_PARAMS 32

/* Access modes for simgpu_launch.access. */
enum { SIMGPU_READ = 1, SIMGPU_WRITE = 2, SIMGPU_READ_WRITE = 3 };

typedef struct simgpu_launch simgpu_launch;

/* Handed to a kernel body for the duration of one launch (not to be kept). */
struct simgpu_launch {
    int device;                          /* ordinal the kernel runs on */
    unsigned grid[3];                    /* gridDim x, y, z */
    unsigned block[3];                   /* blockDim x, y, z */
    /* Declare that the kernel touches [ptr, ptr+bytes) with mode SIMGPU_*. */
    void (*access)(simgpu_launch *self, uint64_t ptr, size_t bytes, int mode);
    /* Add modeled compute time, in nanoseconds. */
    void (*compute)(simgpu_launch *self, double ns);
    void *internal;                      /* owned by the simulator */
    /* Declare `passes` passes over [ptr, ptr+bytes) (a GEMM re-reads its
     * weight operand once per tile row of the output): what is not on the
     * device crosses the link once for the part an L2 of SIMGPU_L2_MIB
     * holds and once per pass for the rest. access() is one pass. Last in
     * the struct, so programs built before it was added still work. */
    void (*access_passes)(simgpu_launch *self, uint64_t ptr, size_t bytes, int mode, unsigned passes);
};

/* A kernel body: params[i] points at parameter i, as with kernelParams. */
typedef void (*simgpu_kernel_fn)(simgpu_launch *launch, void **params);

/* A kernel description; the simulator copies it at registration. */
typedef struct simgpu_kernel {
    const char *name;                           /* name for cuModuleGetFunction */
    simgpu_kernel_fn fn;                        /* body; also its cudaLaunchKernel key */
    unsigned num_params;                        /* parameters, <= SIMGPU_MAX_PARAMS */
    size_t param_sizes[SIMGPU_MAX_PARAMS];      /* bytes of each parameter */
} simgpu_kernel;

/* Model counters of one device (or of all, summed). Bytes and counts since
 * start or the last reset; modeled_ns is the latest completion time seen. */
typedef struct simgpu_counters {
    uint64_t faults;              /* 2 MiB blocks migrated by kernel faults */
    uint64_t bytes_to_device;     /* bytes migrated host -> device (faults + prefetch) */
    uint64_t bytes_to_host;       /* bytes migrated device -> host (evictions + prefetch) */
    uint64_t remote_bytes;        /* bytes kernels read or wrote over the link */
    uint64_t prefetch_bytes;      /* bytes moved by cuMemPrefetchAsync, both ways */
    uint64_t evictions;           /* blocks the driver evicted to make room */
    uint64_t launches;            /* kernels run */
    uint64_t peak_device_bytes;   /* most device memory in use at once */
    uint64_t used_device_bytes;   /* device memory in use now */
    double modeled_ns;            /* modeled time of the last completed work */
    uint64_t inflight_waits;      /* 2 MiB blocks a kernel touched before their copy to the device ended */
    uint64_t busy_evictions;      /* 2 MiB blocks sent to the host before a kernel using them ended */
    uint64_t stale_events;        /* calls naming an event of a context that ended (answered INVALID_HANDLE) */
} simgpu_counters;

typedef int (*simgpu_register_fn)(const simgpu_kernel *k);
typedef int (*simgpu_counters_fn)(int device, simgpu_counters *out);
typedef int (*simgpu_reset_fn)(void);

/* Finds a symbol of the simulated driver, loading it if needed; NULL when
 * there is none. The library stays loaded for the life of the process. */
static inline void *simgpu_symbol(const char *name)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    return h ? dlsym(h, name) : NULL;
}

/* Registers a kernel; returns 0 (CUDA_SUCCESS) or a CUresult. */
static inline int simgpu_register_kernel(const simgpu_kernel *k)
{
    simgpu_register_fn f = (simgpu_register_fn)simgpu_symbol("simgpuRegisterKernel");
    return f ? f(k) : 999;
}

/* Reads the counters of `device`, or of all devices summed when device < 0. */
static inline int simgpu_get_counters(int device, simgpu_counters *out)
{
    simgpu_counters_fn f = (simgpu_counters_fn)simgpu_symbol("simgpuGetCounters");
    return f ? f(device, out) : 999;
}

/* What cudaGraphSetConditional does on the device, for a kernel body:
 * the conditional handle (CUgraphConditionalHandle) holds `value` from now
 * on; 0, or a CUresult for a handle never made. */
static inline int simgpu_set_conditional(unsigned long long handle, unsigned value)
{
    int (*f)(unsigned long long, unsigned) =
        (int (*)(unsigned long long, unsigned))simgpu_symbol("simgpuSetConditional");
    return f ? f(handle, value) : 999;
}

/* Zeroes the counters (peak restarts from the bytes in use now). */
static inline int simgpu_reset_counters(void)
{
    simgpu_reset_fn f = (simgpu_reset_fn)simgpu_symbol("simgpuResetCounters");
    return f ? f() : 999;
}

#ifdef __cplusplus
}
#endif
#endif
