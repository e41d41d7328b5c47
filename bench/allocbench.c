/*
 * allocbench.c — what lmshim's hooks cost on the no-pressure path.
 *
 * One process loads the simulated driver (libcuda.so.1) and liblmshim.so
 * side by side, without LD_PRELOAD: the driver's own entry points are the
 * bare calls, the library's exported ones are the hooks. For each case it
 * times the same loop through both, interleaved over several rounds, and
 * prints the medians, their ratio and the nanoseconds the hooks add (in
 * the thread's CPU time). It runs itself again for two more rows: with a
 * trace and stacks on, and as the only member of a group (LMS_GROUP).
 *
 * usage: allocbench [rounds [iterations]]   (LD_LIBRARY_PATH must hold build/sim)
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simgpu.h"

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*attr_fn)(void *, CUpointer_attribute, CUdeviceptr);
typedef CUresult (*info_fn)(size_t *, size_t *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

typedef struct api {
    alloc_fn alloc;
    free_fn free;
    attr_fn attr;
    info_fn info;
    launch_fn launch;
} api;

/* A kernel with ten pointer parameters that does nothing. */
static void empty_kernel(simgpu_launch *l, void **p)
{
    (void)l;
    (void)p;
}

static CUfunction kernel;
static void *kernel_args[10];
static CUdeviceptr kernel_ptrs[10];

/* CPU time of this thread, ns: on a shared machine, time-slicing by other
 * processes does not count (on an idle one it equals wall time here). */
static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Resolves the four entry points from a library handle. */
static int load(void *h, api *a)
{
    a->alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    a->free = (free_fn)dlsym(h, "cuMemFree_v2");
    a->attr = (attr_fn)dlsym(h, "cuPointerGetAttribute");
    a->info = (info_fn)dlsym(h, "cuMemGetInfo_v2");
    a->launch = (launch_fn)dlsym(h, "cuLaunchKernel");
    return a->alloc && a->free && a->attr && a->info && a->launch ? 0 : -1;
}

enum { CASE_PAIR_4K, CASE_PAIR_48K, CASE_QUERY, CASE_INFO, CASE_LAUNCH_FAST, CASE_LAUNCH_SCAN, CASES };
static const char *const case_names[CASES] = {"alloc+free 4 KiB", "alloc+free 48 KiB", "pointer query",
                                              "cuMemGetInfo", "launch, no managed", "launch, 10-param scan"};

/* ns per operation of one case through one API; -1 on a CUDA error. */
static double run(const api *a, int which, long iters, CUdeviceptr probe)
{
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        CUdeviceptr p;
        int managed;
        size_t f, t;
        switch (which) {
        case CASE_PAIR_4K:
        case CASE_PAIR_48K:
            if (a->alloc(&p, which == CASE_PAIR_4K ? 4096 : 49152) != CUDA_SUCCESS || a->free(p) != CUDA_SUCCESS)
                return -1;
            break;
        case CASE_QUERY:
            if (a->attr(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, probe) != CUDA_SUCCESS)
                return -1;
            break;
        case CASE_INFO:
            if (a->info(&f, &t) != CUDA_SUCCESS)
                return -1;
            break;
        default:
            if (a->launch(kernel, 1, 1, 1, 32, 1, 1, 0, NULL, kernel_args, NULL) != CUDA_SUCCESS)
                return -1;
            break;
        }
    }
    return (now_ns() - t0) / (double)iters;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Runs this program again with extra options (the shim's options are read
 * once per process): `mode` "--traced" (a trace and 16-frame stacks) or
 * "--grouped" (a member of a group of its own); it prints its alloc+free row. */
static void variant_run(int rounds, long iters, const char *mode)
{
    char self[4096], r[16], n[32];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return;
    self[len] = 0;
    snprintf(r, sizeof r, "%d", rounds);
    snprintf(n, sizeof n, "%ld", iters);
    fflush(stdout);
    char group[64], dir[] = "/tmp/allocbench-XXXXXX";
    bool grouped = strcmp(mode, "--grouped") == 0;
    if (grouped && !mkdtemp(dir))
        return;
    snprintf(group, sizeof group, "allocbench-%d", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        if (grouped) {
            setenv("LMS_GROUP", group, 1);
            setenv("LMS_GROUP_DIR", dir, 1);
        } else {
            setenv("LMS_TRACE", "/dev/null", 1);
            setenv("LMS_STACKS", "16", 1);
        }
        execl(self, self, r, n, mode, (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    if (grouped) {
        char path[128];
        snprintf(path, sizeof path, "%s/lmshim-group-%s", dir, group);
        unlink(path);
        rmdir(dir);
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    long iters = argc > 2 ? atol(argv[2]) : 200000;
    const char *variant = argc > 3 ? argv[3] : NULL;   /* --traced or --grouped: one row */
    if (rounds < 1 || rounds > 101 || iters < 1) {
        fprintf(stderr, "usage: allocbench [rounds (1-101) [iterations]]\n");
        return 2;
    }
    /* lmshim's options, read at its first hook: allocations of 1 MiB or more
     * go to managed memory (so the scan case can make one); smaller ones,
     * which the cases below use, stay on the device path. */
    setenv("LMS_THRESHOLD", "1M", 1);
    setenv("LMS_FRAC", "0", 1);
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    const char *shim_path = getenv("LMSHIM_LIBRARY") ? getenv("LMSHIM_LIBRARY") : "liblmshim.so";
    void *shim = dlopen(shim_path, RTLD_NOW | RTLD_LOCAL);
    api bare, hooked;
    if (!drv || !shim || load(drv, &bare) || load(shim, &hooked)) {
        fprintf(stderr, "allocbench: cannot load libcuda.so.1 and %s: %s\n", shim_path, dlerror());
        return 1;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(drv, "cuInit");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))dlsym(drv, "cuDevicePrimaryCtxRetain");
    CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))dlsym(drv, "cuCtxSetCurrent");
    CUcontext ctx;
    if (init(0) || retain(&ctx, 0) || set(ctx)) {
        fprintf(stderr, "allocbench: no device\n");
        return 1;
    }
    CUdeviceptr probe;
    if (hooked.alloc(&probe, 64 << 10) != CUDA_SUCCESS)
        return 1;
    simgpu_kernel k = {"empty10", empty_kernel, 10, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8}};
    CUresult (*load_module)(CUmodule *, const void *) = (CUresult(*)(CUmodule *, const void *))dlsym(drv, "cuModuleLoadData");
    CUresult (*get_function)(CUfunction *, CUmodule, const char *) =
        (CUresult(*)(CUfunction *, CUmodule, const char *))dlsym(drv, "cuModuleGetFunction");
    CUmodule mod;
    if (simgpu_register_kernel(&k) || load_module(&mod, "bench") || get_function(&kernel, mod, "empty10"))
        return 1;
    for (int i = 0; i < 10; i++) {
        if (bare.alloc(&kernel_ptrs[i], 4096) != CUDA_SUCCESS)
            return 1;
        kernel_args[i] = &kernel_ptrs[i];
    }
    double t[2][CASES][101];
    CUdeviceptr managed = 0;
    if (variant) {   /* the child of variant_run: one case, one row */
        for (int r = 0; r < rounds; r++)
            for (int side = 0; side < 2; side++)
                t[side][0][r] = run(side ? &hooked : &bare, CASE_PAIR_4K, iters / 4, probe);
        qsort(t[0][0], (size_t)rounds, sizeof(double), cmp);
        qsort(t[1][0], (size_t)rounds, sizeof(double), cmp);
        double b = t[0][0][rounds / 2], h = t[1][0][rounds / 2];
        printf("%-20s %10.1f %10.1f %8.3f %12.1f\n",
               strcmp(variant, "--grouped") == 0 ? "alloc+free, group" : "alloc+free, traced", b, h, h / b, h - b);
        return 0;
    }
    for (int c = 0; c < CASES; c++) {
        if (c == CASE_LAUNCH_SCAN && hooked.alloc(&managed, 2 << 20) != CUDA_SUCCESS)
            return 1;   /* from now on a managed chunk exists: launches are scanned */
        for (int r = 0; r < rounds; r++)
            for (int side = 0; side < 2; side++) {        /* bare, then hooked, each round */
                t[side][c][r] = run(side ? &hooked : &bare, c, c < CASE_QUERY ? iters : iters * 4, probe);
                if (t[side][c][r] < 0) {
                    fprintf(stderr, "allocbench: a CUDA call failed\n");
                    return 1;
                }
            }
    }
    int managed_flag = 0;
    bare.attr(&managed_flag, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed);
    if (!managed_flag) {
        fprintf(stderr, "allocbench: the scan case has no managed chunk\n");
        return 1;
    }
    hooked.free(managed);
    printf("allocbench: %d rounds x %ld iterations, medians (ns per operation)\n", rounds, iters);
    printf("%-20s %10s %10s %8s %12s\n", "case", "bare", "lmshim", "ratio", "added (ns)");
    for (int c = 0; c < CASES; c++) {
        qsort(t[0][c], (size_t)rounds, sizeof(double), cmp);
        qsort(t[1][c], (size_t)rounds, sizeof(double), cmp);
        double b = t[0][c][rounds / 2], h = t[1][c][rounds / 2];
        printf("%-20s %10.1f %10.1f %8.3f %12.1f\n", case_names[c], b, h, h / b, h - b);
    }
    hooked.free(probe);
    variant_run(rounds, iters, "--traced");
    variant_run(rounds, iters, "--grouped");
    printf("(traced: LMS_TRACE=/dev/null LMS_STACKS=16, 4 KiB pairs, one allocation site;\n"
           " group: LMS_GROUP of one member, 4 KiB pairs: compare with the alloc+free 4 KiB row)\n");
    return 0;
}
