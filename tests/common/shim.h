/*
 * shim.h — what test programs over the simulated GPU share: size units,
 * lmshim's statistics read through its public API (with liblmshim.so
 * preloaded), the checks a case ends with, the bytes in use as the
 * simulated device, cuMemGetInfo and cudaMemGetInfo see them, a simulated kernel's
 * CUfunction, a counter in device memory, a memory pool, the placement of
 * a pointer, counting lines of a log and a fork whose child exits at once.
 */
#ifndef TEST_SHIM_H
#define TEST_SHIM_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "lmshim.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* lmshim's lms_get_stats: fills *s for `device` and answers 0, or answers
 * non-zero when lmshim does not know the device. The shim must be
 * preloaded (the check fails otherwise). */
static inline int get_stats(int device, lms_device_stats *s)
{
    static int (*get)(int, lms_device_stats *);
    if (!get)
        get = (int (*)(int, lms_device_stats *))dlsym(RTLD_DEFAULT, "lms_get_stats");
    CHECK(get != NULL);   /* the shim is preloaded */
    return get(device, s);
}

/* lmshim's statistics of a device, which it must know. */
static inline lms_device_stats stats(int device)
{
    lms_device_stats s;
    CHECK(get_stats(device, &s) == 0);
    return s;
}

/* lmshim's invariant on `device` at this instant: within its budget, by its
 * own count and by the simulated device's. */
static inline void check_budget(int device)
{
    lms_device_stats s = stats(device);
    CHECK(s.used <= s.budget);
    CHECK_EQ_U(s.budget_violations, 0);
    simgpu_counters c;
    OK(simgpu_get_counters(device, &c));
    CHECK(c.used_device_bytes <= s.budget);
}

/* What a case over the shim ends with on `device` (its work finished):
 * the simulated GPU saw no kernel read a range mid-copy and no eviction of
 * a range in use (with `no_faults`, no fault either), and lmshim counted
 * no budget violation. */
static inline void check_no_hazards(int device, bool no_faults)
{
    simgpu_counters k;
    OK(simgpu_get_counters(device, &k));
    CHECK_EQ_U(k.inflight_waits, 0);
    CHECK_EQ_U(k.busy_evictions, 0);
    if (no_faults)
        CHECK_EQ_U(k.faults, 0);
    CHECK_EQ_U(stats(device).budget_violations, 0);
}

/* The simulated device 0's bytes in use. */
static inline uint64_t sim_used(void)
{
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    return c.used_device_bytes;
}

/* cuMemGetInfo's used bytes (total - free) for the current device. */
static inline uint64_t info_used(void)
{
    size_t f = 0, t = 0;
    OK(cuMemGetInfo(&f, &t));
    CHECK(f <= t);
    return t - f;
}

/* cudaMemGetInfo's used bytes (total - free) for the current device. */
static inline uint64_t rt_used(void)
{
    size_t f = 0, t = 0;
    OK(cudaMemGetInfo(&f, &t));
    return t - f;
}

/* Registers the simulated kernel `k` and answers its CUfunction, from a
 * module loaded for it that stays loaded (a function is valid while its
 * module is). */
static inline CUfunction sim_function(const simgpu_kernel *k)
{
    OK(simgpu_register_kernel(k));
    CUmodule m;
    CUfunction f;
    OK(cuModuleLoadData(&m, "x"));
    OK(cuModuleGetFunction(&f, m, k->name));
    return f;
}

/* The 64-bit counter at device address p (read with a copy). */
static inline uint64_t counter(CUdeviceptr p)
{
    uint64_t v = 0;
    OK(cuMemcpyDtoH(&v, p, sizeof v));
    return v;
}

/* A pool of `device`'s memory, exportable (POSIX fd handles) or not; the
 * caller destroys it. */
static inline CUmemoryPool make_pool(int device, bool exportable)
{
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .handleTypes = exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                                      : CU_MEM_HANDLE_TYPE_NONE,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device}};
    CUmemoryPool pool;
    OK(cuMemPoolCreate(&pool, &props));
    return pool;
}

/* Whether p is managed memory (CU_POINTER_ATTRIBUTE_IS_MANAGED). */
static inline int is_managed(CUdeviceptr p)
{
    int m = -1;
    OK(cuPointerGetAttribute(&m, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    return m;
}

/* The size in bytes of the file at `path` now, 0 when there is none:
 * where this process's lines begin in a log named by its pid
 * (LMS_LOG_FILE=..._%p.log) that an earlier process of the same pid left. */
static inline long file_size_now(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    fclose(f);
    return n > 0 ? n : 0;
}

/* Lines of the file at `path` (which must exist) from byte `from` on that
 * contain `what`. */
static inline int lines_with_from(const char *path, const char *what, long from)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    CHECK(fseek(f, from, SEEK_SET) == 0);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, what) != NULL;
    fclose(f);
    return n;
}

/* Lines of the file at `path` (which must exist) that contain `what`. */
static inline int lines_with(const char *path, const char *what)
{
    return lines_with_from(path, what, 0);
}

/* This process's lmshim log when LMS_LOG_FILE is $DIR/PREFIX_%p.log with
 * DIR named by the environment variable `dir_env`: its path, and where this
 * process's lines begin in it (a log of the same name left by an earlier
 * process of the same pid is not read). Set it up before the case logs
 * anything (a constructor of the test). */
typedef struct pid_log {
    char path[512];
    long from;
} pid_log;

static inline void pid_log_init(pid_log *l, const char *dir_env, const char *prefix)
{
    const char *dir = getenv(dir_env);
    snprintf(l->path, sizeof l->path, "%s/%s_%d.log", dir ? dir : ".", prefix, (int)getpid());
    l->from = file_size_now(l->path);
}

/* Lines of this process's log `l` that contain `what`. */
static inline int pid_log_lines(const pid_log *l, const char *what)
{
    return lines_with_from(l->path, what, l->from);
}

/* Forks a child that exits at once (output flushed first, so the child
 * repeats none) and checks it ended with status 0; a hang in the fork
 * handlers ends at the caller's alarm. */
static inline void fork_bare_child(void)
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(0);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#endif
