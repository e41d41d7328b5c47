/*
 * breakers_arrays_test.c — edge cases of CUDA arrays in the simulator and
 * under lmshim (sizes whose charge overflows, odd sizes whose rounding must
 * agree, the primary context's reset, fork with live arrays), and of the
 * SIMGPU_TIMELINE file (a long kernel name keeps its line whole).
 *
 * sim_* cases run over the simulated driver alone; shim_* cases under
 * liblmshim.so with LMS_LIMIT=512M over a 1 GiB device (meson.build).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "simgpu.h"

/* An array whose element bytes are just under 2^64 (a 1D float array of
 * 2^62 - 2^18 elements) is refused, not charged nothing: its rounding to
 * whole 2 MiB pages must not wrap. A device allocation of SIZE_MAX bytes
 * likewise. */
static void sim_array_huge(void)
{
    primary_context(0);
    uint64_t base = sim_used();
    CUDA_ARRAY_DESCRIPTOR d = {.Width = (1ull << 62) - (1ull << 18), .Height = 0,
                               .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray a = NULL;
    CUresult r = cuArrayCreate(&a, &d);
    CHECK(r != CUDA_SUCCESS);
    if (r == CUDA_SUCCESS)
        OK(cuArrayDestroy(a));
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 1ull << 20, .Height = 1ull << 20, .Depth = (1ull << 22) - 1,
                                  .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    r = cuArray3DCreate(&a, &d3);
    CHECK(r != CUDA_SUCCESS);
    if (r == CUDA_SUCCESS)
        OK(cuArrayDestroy(a));
    CUdeviceptr p = 0;
    r = cuMemAlloc(&p, SIZE_MAX - 4096);
    CHECK(r != CUDA_SUCCESS);
    if (r == CUDA_SUCCESS)
        OK(cuMemFree(p));
    CHECK_EQ_U(sim_used(), base);
}

/* Arrays of sizes that are no multiple of the device's granules: what
 * lmshim charges (cuMemGetInfo) follows what the device holds, and both
 * come back to the start after cuArrayDestroy. Every format and channel
 * count, 1D, 2D, 3D, layered and cubemap shapes. */
static void shim_array_odd_sizes(void)
{
    primary_context(0);
    uint64_t base = sim_used();
    CHECK_EQ_U(info_used(), base);
    const CUarray_format fmts[] = {CU_AD_FORMAT_UNSIGNED_INT8, CU_AD_FORMAT_SIGNED_INT16,
                                   CU_AD_FORMAT_HALF, CU_AD_FORMAT_FLOAT};
    const unsigned chans[] = {1, 2, 4};
    const size_t shapes[][4] = {
        {3 * 1024 * 1024 + 1, 0, 0, 0},       /* 1D */
        {1000, 1001, 0, 0},                   /* 2D */
        {77, 99, 13, 0},                      /* 3D */
        {513, 0, 7, CUDA_ARRAY3D_LAYERED},    /* 1D layered */
        {300, 300, 12, CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP},
        {129, 129, 6, CUDA_ARRAY3D_CUBEMAP},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t f = 0; f < 4; f++)
            for (size_t c = 0; c < 3; c++) {
                CUDA_ARRAY3D_DESCRIPTOR d = {.Width = shapes[s][0], .Height = shapes[s][1],
                                             .Depth = shapes[s][2], .Format = fmts[f],
                                             .NumChannels = chans[c], .Flags = (unsigned)shapes[s][3]};
                CUarray a;
                OK(cuArray3DCreate(&a, &d));
                CHECK(sim_used() > base);
                CHECK_EQ_U(info_used(), sim_used());
                OK(cuArrayDestroy(a));
                CHECK_EQ_U(sim_used(), base);
                CHECK_EQ_U(info_used(), base);
            }
}

/* cuDevicePrimaryCtxReset frees the primary context's arrays: the device
 * and cuMemGetInfo both get their bytes back, and the stale handle is
 * refused without changing either. */
static void shim_array_primary_reset(void)
{
    primary_context(0);
    uint64_t base = sim_used();
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 2048, .Height = 2048, .Depth = 4,
                                 .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 2};
    CUarray a;
    OK(cuArray3DCreate(&a, &d));
    CHECK_EQ_U(info_used(), base + 128 * MiB);
    OK(cuDevicePrimaryCtxReset(0));
    CHECK_EQ_U(sim_used(), base);
    CHECK_EQ_U(info_used(), base);
    CHECK_IS(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
    CHECK_EQ_U(info_used(), base);
    /* The reset context is usable again. */
    OK(cuArray3DCreate(&a, &d));
    CHECK_EQ_U(info_used(), base + 128 * MiB);
    OK(cuArrayDestroy(a));
    CHECK_EQ_U(info_used(), base);
}

/* A fork while arrays are live: the child exits cleanly (no lock held in
 * it) and the parent destroys its arrays afterwards with every charge
 * returned. */
static void shim_array_fork(void)
{
    primary_context(0);
    uint64_t base = info_used();
    CUDA_ARRAY_DESCRIPTOR d = {.Width = 4096, .Height = 4096, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray a[4];
    for (int i = 0; i < 4; i++)
        OK(cuArrayCreate(&a[i], &d));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* The child only touches lmshim's own state through a hook that
         * takes the arrays' lock (a destroy of a bogus handle). */
        CUresult r = cuArrayDestroy((CUarray)(uintptr_t)0x10);
        _exit(r == CUDA_SUCCESS ? 1 : 0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 4; i++)
        OK(cuArrayDestroy(a[i]));
    CHECK_EQ_U(info_used(), base);
}

static const char *timeline_path;

/* A kernel that reads one range. */
static void reader(simgpu_launch *l, void **p)
{
    l->access(l, *(CUdeviceptr *)p[0], *(size_t *)p[1], SIMGPU_READ);
}

/* A kernel with a name of 127 characters (the longest the simulator
 * registers; C++ mangled names are often that long) writes one whole
 * timeline line: the name whole and the wait/stall/compute/remote fields
 * after it, ending in a newline. */
static void sim_timeline_long_name(void)
{
    primary_context(0);
    static char name[128];
    memset(name, 'k', 127);
    name[127] = 0;
    CUfunction f = sim_function(&(simgpu_kernel){name, reader, 2, {8, 8}});
    CUdeviceptr p;
    size_t bytes = 1 * MiB;
    OK(cuMemAlloc(&p, bytes));
    void *args[] = {&p, &bytes};
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
    OK(cuCtxSynchronize());
    FILE *fp = fopen(timeline_path, "r");
    CHECK(fp != NULL);
    if (!fp)
        return;
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    int lines = 0;
    for (char *s = buf, *nl; (nl = strchr(s, '\n')); s = nl + 1) {
        *nl = 0;
        lines++;
        CHECK(strstr(s, name) != NULL);
        CHECK(strstr(s, " wait=") != NULL && strstr(s, " remote=") != NULL);
    }
    CHECK_EQ_U(lines, 2);
}


/* The runtime's documented answers: cudaFreeArray of an array freed before
 * and cudaArrayGetInfo of one are cudaErrorInvalidValue (their only
 * documented error), as is a bogus handle; a 1D array's extent has height
 * and depth 0, a 2D array's depth 0; cudaMemGetInfo's used bytes come back
 * to the start. */
static void runtime_array_errors(void)
{
    OK(cudaSetDevice(0));
    size_t f0, t0;
    OK(cudaMemGetInfo(&f0, &t0));
    struct cudaChannelFormatDesc c4 = {8, 8, 8, 8, cudaChannelFormatKindSigned};
    cudaArray_t a, b;
    OK(cudaMallocArray(&a, &c4, 1000, 0, 0));
    OK(cudaMallocArray(&b, &c4, 1000, 10, cudaArraySurfaceLoadStore));
    struct cudaChannelFormatDesc got;
    struct cudaExtent ext = {9, 9, 9};
    unsigned flags = 0;
    OK(cudaArrayGetInfo(&got, &ext, &flags, a));
    CHECK(got.x == 8 && got.y == 8 && got.z == 8 && got.w == 8 && got.f == cudaChannelFormatKindSigned);
    CHECK(ext.width == 1000 && ext.height == 0 && ext.depth == 0 && flags == 0);
    OK(cudaArrayGetInfo(NULL, &ext, &flags, b));
    CHECK(ext.width == 1000 && ext.height == 10 && ext.depth == 0 && flags == cudaArraySurfaceLoadStore);
    OK(cudaFreeArray(a));
    CHECK_IS(cudaFreeArray(a), cudaErrorInvalidValue);
    CHECK_IS(cudaArrayGetInfo(&got, &ext, &flags, a), cudaErrorInvalidValue);
    CHECK_IS(cudaFreeArray((cudaArray_t)(uintptr_t)0x1000), cudaErrorInvalidValue);
    OK(cudaFreeArray(b));
    size_t f1, t1;
    OK(cudaMemGetInfo(&f1, &t1));
    CHECK_EQ_U(t1 - f1, t0 - f0);
    /* cudaDeviceReset frees the arrays of the device's primary context. */
    OK(cudaMallocArray(&a, &c4, 4096, 4096, 0));
    OK(cudaMemGetInfo(&f1, &t1));
    CHECK_EQ_U(t1 - f1, t0 - f0 + 64 * MiB);
    OK(cudaDeviceReset());
    OK(cudaMemGetInfo(&f1, &t1));
    CHECK_EQ_U(t1 - f1, t0 - f0);
    CHECK_EQ_U(sim_used(), t0 - f0);
}


/* With LMS_GROUP an array counts against the group's budget: while this
 * process holds a 384 MiB array, a second process of the group (exec'd
 * here, LMS_ON_OOM=fail) sees it in cuMemGetInfo and is refused a 256 MiB
 * array (640 MiB > 512 MiB), and gets one once the array is destroyed. */
static void group_child(void)
{
    primary_context(0);
    const char *want = getenv("BREAKERS_WANT");
    bool oom = want && strcmp(want, "oom") == 0;
    CHECK(oom ? info_used() >= 384 * MiB : info_used() == 0);
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 4096, .Height = 4096, .Depth = 4,
                                 .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};   /* 256 MiB */
    CUarray a;
    if (oom) {
        CHECK_IS(cuArray3DCreate(&a, &d), CUDA_ERROR_OUT_OF_MEMORY);
    } else {
        OK(cuArray3DCreate(&a, &d));
        OK(cuArrayDestroy(a));
    }
}

/* Runs this program's group_child case with BREAKERS_WANT=want; its status. */
static int run_child(const char *want)
{
    pid_t pid = fork();
    if (pid == 0) {
        setenv("BREAKERS_WANT", want, 1);
        execl("/proc/self/exe", "breakers_arrays_test", "group_child", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void shim_array_group(void)
{
    primary_context(0);
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 4096, .Height = 4096, .Depth = 6,
                                 .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};   /* 384 MiB */
    CUarray a;
    OK(cuArray3DCreate(&a, &d));
    CHECK_EQ_U(info_used(), 384 * MiB);
    CHECK_EQ_U(run_child("oom"), 0);
    OK(cuArrayDestroy(a));
    CHECK_EQ_U(info_used(), 0);
    CHECK_EQ_U(run_child("fits"), 0);
}


static CUarray thread_array;

/* Destroys thread_array from a thread with no current context. */
static void *destroy_elsewhere(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)cuArrayDestroy(thread_array);
}

/* An array made before cuInit is refused as CUDA does; one destroyed from
 * another thread (no current context there) returns its charge; the
 * cuDevicePrimaryCtxRelease that ends the primary context frees its
 * arrays and their charge. */
static void array_lifetimes(void)
{
    CUDA_ARRAY_DESCRIPTOR d = {.Width = 4096, .Height = 4096, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray a;
    CHECK_IS(cuArrayCreate(&a, &d), CUDA_ERROR_NOT_INITIALIZED);
    primary_context(0);
    uint64_t base = info_used();
    OK(cuArrayCreate(&thread_array, &d));
    CHECK_EQ_U(info_used(), base + 64 * MiB);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, destroy_elsewhere, NULL) == 0);
    void *r;
    pthread_join(t, &r);
    CHECK_EQ_U((intptr_t)r, CUDA_SUCCESS);
    CHECK_EQ_U(info_used(), base);
    OK(cuArrayCreate(&a, &d));
    OK(cuArrayCreate(&thread_array, &d));
    CHECK_EQ_U(info_used(), base + 128 * MiB);
    OK(cuDevicePrimaryCtxRelease(0));   /* the count primary_context took: now 0 */
    CUcontext ctx;
    OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    OK(cuCtxSetCurrent(ctx));
    CHECK_EQ_U(sim_used(), base);
    CHECK_EQ_U(info_used(), base);
    CHECK_IS(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
}

static const test_case cases[] = {
    {"sim_array_huge", sim_array_huge},
    {"shim_array_huge", sim_array_huge},
    {"shim_array_odd_sizes", shim_array_odd_sizes},
    {"sim_array_odd_sizes", shim_array_odd_sizes},
    {"shim_array_primary_reset", shim_array_primary_reset},
    {"sim_array_primary_reset", shim_array_primary_reset},
    {"shim_array_fork", shim_array_fork},
    {"sim_timeline_long_name", sim_timeline_long_name},
    {"sim_runtime_array_errors", runtime_array_errors},
    {"shim_array_group", shim_array_group},
    {"group_child", group_child},
    {"sim_array_lifetimes", array_lifetimes},
    {"shim_array_lifetimes", array_lifetimes},
    {"shim_runtime_array_errors", runtime_array_errors},
};

int main(int argc, char **argv)
{
    timeline_path = getenv("BREAKERS_TIMELINE");
    return run_case(cases, sizeof cases / sizeof *cases, argc, argv);
}
