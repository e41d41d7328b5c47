/*
 * kernels_test.c — kernel handles as the driver hands them out: modules
 * and libraries, CUfunction and CUkernel, handle values reused after an
 * unload, parameter layouts up to 32 KB. The sim_* cases check the
 * simulated driver alone; the others run with liblmshim.so preloaded and
 * check that each launch's chunks are found (lmshim's fetch count) and that
 * no scan reads past what the launch passed (a guard page after the
 * parameter). Settings per case are in meson.build.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "lmshim.h"
#include "simgpu.h"

#define CHUNK (8 * MiB)             /* > LMS_FRAC of the budget: always managed */
#define WIDE_BYTES 32760                 /* one parameter near CUDA's 32764-byte limit */
#define WIDE_WORDS (WIDE_BYTES / 8)

/* big4k(struct {CUdeviceptr p; char pad[4088];}): touches p. */
static void big4k(simgpu_launch *l, void **p)
{
    CUdeviceptr d;
    memcpy(&d, p[0], sizeof d);
    if (d)
        l->access(l, d, 4096, SIMGPU_READ_WRITE);
}

/* small8(CUdeviceptr p): touches p. */
static void small8(simgpu_launch *l, void **p)
{
    CUdeviceptr d = *(CUdeviceptr *)p[0];
    if (d)
        l->access(l, d, 4096, SIMGPU_READ_WRITE);
}

/* wide(CUdeviceptr table[WIDE_WORDS]): touches every non-zero entry. */
static void wide(simgpu_launch *l, void **p)
{
    const CUdeviceptr *t = p[0];
    for (int i = 0; i < WIDE_WORDS; i++)
        if (t[i])
            l->access(l, t[i], 4096, SIMGPU_READ);
}

/* scale(int *x): doubles x[0] (a result to check). */
static void scale(simgpu_launch *l, void **p)
{
    (void)l;
    int *x = (int *)(uintptr_t) * (CUdeviceptr *)p[0];
    x[0] *= 2;
}

static void register_all(void)
{
    simgpu_kernel k[] = {
        {"big4k", big4k, 1, {4096}}, {"small8", small8, 1, {8}},
        {"wide", wide, 1, {WIDE_BYTES}}, {"scale", scale, 1, {8}},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        OK(simgpu_register_kernel(&k[i]));
}

/* lmshim's fetch count of device 0. */
static uint64_t fetches(void)
{
    return stats(0).prefetches;
}

/* A managed chunk (the settings send every allocation there). */
static CUdeviceptr chunk(void)
{
    CUdeviceptr p;
    OK(cuMemAlloc(&p, CHUNK));
    int managed = 0;
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    CHECK(managed == 1);
    return p;
}

/* 8 bytes whose next byte is unreadable: a scan reading more faults. */
static CUdeviceptr *guarded_slot(void)
{
    long page = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    CHECK(mprotect(m + page, (size_t)page, PROT_NONE) == 0);
    return (CUdeviceptr *)(m + page - 8);
}

static CUresult launch(CUfunction f, void **args)
{
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
}

/* ---- the simulated driver alone ----------------------------------------- */

/* A module's functions die with it, and their values come back. */
static void sim_handle_reuse(void)
{
    primary_context(0);
    register_all();
    CUmodule m1, m2;
    CUfunction f1, f2, again;
    OK(cuModuleLoadData(&m1, "m1"));
    OK(cuModuleGetFunction(&f1, m1, "big4k"));
    OK(cuModuleGetFunction(&again, m1, "big4k"));
    CHECK(again == f1);
    OK(cuModuleUnload(m1));
    size_t off, size;
    CHECK_IS(cuFuncGetParamInfo(f1, 0, &off, &size), CUDA_ERROR_INVALID_HANDLE);
    CUdeviceptr zero = 0;
    void *args[] = {&zero};
    CHECK_IS(launch(f1, args), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuModuleUnload(NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cuModuleLoadData(&m2, "m2"));
    OK(cuModuleGetFunction(&f2, m2, "small8"));
    CHECK(f2 == f1);   /* the real driver reuses handle values too */
    OK(cuFuncGetParamInfo(f2, 0, &off, &size));
    CHECK(off == 0 && size == 8);
    CHECK_IS(cuFuncGetParamInfo(f2, 1, &off, &size), CUDA_ERROR_INVALID_VALUE);
    const char *name;
    OK(cuFuncGetName(&name, f2));
    CHECK(strcmp(name, "small8") == 0);
    OK(launch(f2, args));
    OK(cuModuleUnload(m2));
}

/* The library API and CUkernel handles, with CUDA's documented answers. */
static void sim_library(void)
{
    CUlibrary lib;
    CHECK_IS(cuLibraryLoadData(&lib, "x", NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_NOT_INITIALIZED);
    primary_context(0);
    register_all();
    CHECK_IS(cuLibraryLoadData(&lib, NULL, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuLibraryLoadData(&lib, "x", NULL, NULL, 1, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuLibraryLoadFromFile(&lib, NULL, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuLibraryLoadData(&lib, "image", NULL, NULL, 0, NULL, NULL, 0));
    CUkernel k, k2;
    CHECK_IS(cuLibraryGetKernel(&k, lib, "nope"), CUDA_ERROR_NOT_FOUND);
    CHECK_IS(cuLibraryGetKernel(&k, lib, NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cuLibraryGetKernel(&k, lib, "scale"));
    OK(cuLibraryGetKernel(&k2, lib, "scale"));
    CHECK(k2 == k);
    size_t off, size;
    OK(cuKernelGetParamInfo(k, 0, &off, &size));
    CHECK(off == 0 && size == 8);
    CHECK_IS(cuKernelGetParamInfo(k, 1, &off, &size), CUDA_ERROR_INVALID_VALUE);
    /* cuFuncGetParamInfo is documented for CUfunction only. */
    CHECK_IS(cuFuncGetParamInfo((CUfunction)(void *)k, 0, &off, &size), CUDA_ERROR_INVALID_HANDLE);
    const char *name;
    OK(cuKernelGetName(&name, k));
    CHECK(strcmp(name, "scale") == 0);
    int v = 0;
    OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0));
    CHECK(v == 1024);
    CHECK_IS(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 7), CUDA_ERROR_INVALID_DEVICE);
    CUfunction f, fm;
    OK(cuKernelGetFunction(&f, k));
    OK(cuFuncGetParamInfo(f, 0, &off, &size));
    CHECK_IS(cuKernelGetParamInfo((CUkernel)(void *)f, 0, &off, &size), CUDA_ERROR_INVALID_HANDLE);
    CUmodule m;
    OK(cuLibraryGetModule(&m, lib));
    OK(cuModuleGetFunction(&fm, m, "scale"));
    CHECK(fm == f);
    CHECK_IS(cuModuleUnload(m), CUDA_ERROR_NOT_PERMITTED);
    /* A CUkernel launches like the function it stands for. */
    CUdeviceptr x;
    OK(cuMemAlloc(&x, 4096));
    int three = 3, got = 0;
    OK(cuMemcpyHtoD(x, &three, sizeof three));
    void *args[] = {&x};
    OK(launch((CUfunction)(void *)k, args));
    OK(launch(f, args));
    OK(cuMemcpyDtoH(&got, x, sizeof got));
    CHECK(got == 12);
    OK(cuLibraryUnload(lib));
    CHECK_IS(cuKernelGetName(&name, k), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuFuncGetName(&name, f), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(launch((CUfunction)(void *)k, args), CUDA_ERROR_INVALID_HANDLE);
    CHECK_IS(cuLibraryUnload(lib), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuLibraryGetKernel(&k2, lib, "scale"), CUDA_ERROR_INVALID_HANDLE);
    /* Handle values come back with the next library. */
    CUlibrary lib2;
    OK(cuLibraryLoadFromFile(&lib2, "kernels.cubin", NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k2, lib2, "small8"));
    CHECK((void *)k2 == (void *)f || k2 == k);
    OK(cuLibraryUnload(lib2));
    OK(cuMemFree(x));
}

/* cuMemHostRegister/cuMemHostUnregister with CUDA's answers. */
static void sim_host_register(void)
{
    primary_context(0);
    size_t n = 1 << 20;
    char *buf = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(buf != MAP_FAILED);
    CHECK_IS(cuMemHostRegister(NULL, n, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemHostRegister(buf, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemHostRegister(buf, n, 0x100), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemHostRegister(buf, n, CU_MEMHOSTREGISTER_IOMEMORY), CUDA_ERROR_NOT_SUPPORTED);
    CHECK_IS(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    OK(cuMemHostRegister(buf, n, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE));
    CHECK_IS(cuMemHostRegister(buf + 4096, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    unsigned flags = 0;
    OK(cuMemHostGetFlags(&flags, buf + 10));
    CHECK(flags & CU_MEMHOSTREGISTER_PORTABLE);
    CUdeviceptr d;
    OK(cuMemHostGetDevicePointer(&d, buf, 0));
    CHECK(d == (CUdeviceptr)(uintptr_t)buf);
    unsigned type = 0;
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    CHECK(type == CU_MEMORYTYPE_HOST);
    CUdeviceptr dev;
    OK(cuMemAlloc(&dev, 4096));
    memset(buf, 7, 64);
    OK(cuMemcpyHtoD(dev, buf, 64));
    OK(cuMemcpyDtoH(buf + 64, dev, 64));
    CHECK(buf[64 + 63] == 7);
    CHECK_IS(cuMemFreeHost(buf), CUDA_ERROR_INVALID_VALUE);   /* not cuMemHostAlloc'd */
    CHECK_IS(cuMemHostUnregister(buf + 4096), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    OK(cuMemHostUnregister(buf));
    CHECK_IS(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CHECK(buf[0] == 7);   /* the memory stays the program's */
    void *pinned;
    OK(cuMemAllocHost(&pinned, 4096));
    CHECK_IS(cuMemHostRegister(pinned, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CHECK_IS(cuMemHostUnregister(pinned), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    OK(cuMemFreeHost(pinned));
    OK(cuMemFree(dev));
    munmap(buf, n);
}

/* SIMGPU_DRIVER_VERSION=12030: a 12.3 driver, without the 12.4 layout calls. */
static void sim_old_driver(void)
{
    int v = 0;
    OK(cuDriverGetVersion(&v));
    CHECK(v == 12030);
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st;
    OK(cuGetProcAddress_v2("cuFuncGetParamInfo", &fn, 12030, 0, &st));
    CHECK(fn == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    OK(cuGetProcAddress_v2("cuKernelGetName", &fn, 12030, 0, &st));
    CHECK(fn != NULL && st == CU_GET_PROC_ADDRESS_SUCCESS);
    CHECK_IS(cuGetProcAddress_v2("cuInit", &fn, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
}

/* ---- under lmshim -------------------------------------------------------- */

/* A kernel with a 4096-byte parameter is launched, its module unloaded, and
 * the same CUfunction value comes back for a kernel with an 8-byte one: the
 * next launch is scanned with the new layout (8 bytes, before a guard page). */
static void stale_layout_module(void)
{
    primary_context(0);
    register_all();
    CUdeviceptr c1 = chunk(), c2 = chunk();
    CUmodule m1, m2;
    CUfunction f1, f2;
    OK(cuModuleLoadData(&m1, "m1"));
    OK(cuModuleGetFunction(&f1, m1, "big4k"));
    struct { CUdeviceptr p; char pad[4088]; } big = {c1, {0}};
    void *a1[] = {&big};
    uint64_t before = fetches();
    OK(launch(f1, a1));
    CHECK_EQ_U(fetches() - before, 1);
    OK(cuModuleUnload(m1));
    OK(cuModuleLoadData(&m2, "m2"));
    OK(cuModuleGetFunction(&f2, m2, "small8"));
    CHECK(f2 == f1);
    CUdeviceptr *slot = guarded_slot();
    *slot = c2;
    void *a2[] = {slot};
    before = fetches();
    OK(launch(f2, a2));
    CHECK_EQ_U(fetches() - before, 1);   /* c2 found through the new layout */
    OK(cuCtxSynchronize());
    OK(cuModuleUnload(m2));
    OK(cuMemFree(c1));
    OK(cuMemFree(c2));
}

/* The same through the library API, launching CUkernel handles. */
static void stale_layout_library(void)
{
    primary_context(0);
    register_all();
    CUdeviceptr c1 = chunk(), c2 = chunk();
    CUlibrary l1, l2;
    CUkernel k1, k2;
    OK(cuLibraryLoadData(&l1, "l1", NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k1, l1, "big4k"));
    struct { CUdeviceptr p; char pad[4088]; } big = {c1, {0}};
    void *a1[] = {&big};
    uint64_t before = fetches();
    OK(launch((CUfunction)(void *)k1, a1));
    CHECK_EQ_U(fetches() - before, 1);   /* a CUkernel's parameters are scanned */
    OK(cuLibraryUnload(l1));
    OK(cuLibraryLoadData(&l2, "l2", NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k2, l2, "small8"));
    CHECK(k2 == k1);
    CUdeviceptr *slot = guarded_slot();
    *slot = c2;
    void *a2[] = {slot};
    before = fetches();
    OK(launch((CUfunction)(void *)k2, a2));
    CHECK_EQ_U(fetches() - before, 1);
    /* The CUfunction of the kernel is scanned too. */
    CUfunction f;
    OK(cuKernelGetFunction(&f, k2));
    CUdeviceptr c3 = chunk();
    *slot = c3;
    before = fetches();
    OK(launch(f, a2));
    CHECK_EQ_U(fetches() - before, 1);
    OK(cuCtxSynchronize());
    OK(cuLibraryUnload(l2));
    OK(cuMemFree(c1));
    OK(cuMemFree(c2));
    OK(cuMemFree(c3));
}

/* A layout the driver cannot give (a stale handle) is not remembered: once
 * the value is a live kernel again, its launches are scanned. */
static void failed_query_not_cached(void)
{
    primary_context(0);
    register_all();
    CUdeviceptr c = chunk();
    CUmodule m;
    CUfunction f, g;
    OK(cuModuleLoadData(&m, "m"));
    OK(cuModuleGetFunction(&f, m, "small8"));
    OK(cuModuleUnload(m));
    void *args[] = {&c};
    CHECK_IS(launch(f, args), CUDA_ERROR_INVALID_HANDLE);   /* the layout query fails too */
    OK(cuModuleLoadData(&m, "m"));
    OK(cuModuleGetFunction(&g, m, "small8"));
    CHECK(g == f);
    uint64_t before = fetches();
    OK(launch(g, args));
    CHECK_EQ_U(fetches() - before, 1);
    OK(cuCtxSynchronize());
    OK(cuModuleUnload(m));
    OK(cuMemFree(c));
}

/* One 32760-byte parameter holding 40 chunk pointers, up to its last word:
 * all 40 are found, in the kernelParams and in the extra form. */
static void wide_params(void)
{
    primary_context(0);
    register_all();
    CUmodule m;
    CUfunction f;
    OK(cuModuleLoadData(&m, "m"));
    OK(cuModuleGetFunction(&f, m, "wide"));
    CUdeviceptr *table = calloc(WIDE_WORDS, sizeof *table);
    CHECK(table != NULL);
    enum { N = 40 };
    CUdeviceptr c[N];
    for (int i = 0; i < N; i++) {
        c[i] = chunk();
        table[i == N - 1 ? WIDE_WORDS - 1 : i * 100] = c[i];
    }
    void *args[] = {table};
    uint64_t before = fetches();
    OK(launch(f, args));
    CHECK_EQ_U(fetches() - before, N);
    OK(cuCtxSynchronize());
    for (int i = 0; i < N; i++)
        OK(cuMemFree(c[i]));
    for (int i = 0; i < N; i++) {
        c[i] = chunk();
        table[i == N - 1 ? WIDE_WORDS - 1 : i * 100] = c[i];
    }
    size_t bytes = WIDE_BYTES;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, table, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                     CU_LAUNCH_PARAM_END};
    before = fetches();
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra));
    CHECK_EQ_U(fetches() - before, N);
    OK(cuCtxSynchronize());
    /* The extra form is read up to its given size, never further. */
    CUdeviceptr *slot = guarded_slot();
    CUdeviceptr c8 = chunk();
    *slot = c8;
    size_t eight = 8;
    CUfunction s8;
    OK(cuModuleGetFunction(&s8, m, "small8"));
    void *extra8[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, slot, CU_LAUNCH_PARAM_BUFFER_SIZE, &eight,
                      CU_LAUNCH_PARAM_END};
    before = fetches();
    OK(cuLaunchKernel(s8, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra8));
    CHECK_EQ_U(fetches() - before, 1);
    OK(cuCtxSynchronize());
    for (int i = 0; i < N; i++)
        OK(cuMemFree(c[i]));
    OK(cuMemFree(c8));
    OK(cuModuleUnload(m));
    free(table);
}

/* A 12.3 driver (SIMGPU_DRIVER_VERSION=12030) has no layout queries: the
 * kernelParams form is not scanned, the extra form is, and every result is
 * right. */
static void old_driver(void)
{
    primary_context(0);
    register_all();
    CUmodule m;
    CUfunction f;
    OK(cuModuleLoadData(&m, "m"));
    OK(cuModuleGetFunction(&f, m, "scale"));
    CUdeviceptr c = chunk();
    int three = 3, got = 0;
    OK(cuMemcpyHtoD(c, &three, sizeof three));
    void *args[] = {&c};
    uint64_t before = fetches();
    OK(launch(f, args));
    CHECK_EQ_U(fetches() - before, 0);
    size_t eight = 8;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &c, CU_LAUNCH_PARAM_BUFFER_SIZE, &eight,
                     CU_LAUNCH_PARAM_END};
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra));
    CHECK_EQ_U(fetches() - before, 1);
    OK(cuMemcpyDtoH(&got, c, sizeof got));
    CHECK(got == 12);
    OK(cuModuleUnload(m));
    OK(cuMemFree(c));
}

static const test_case cases[] = {
    {"sim_handle_reuse", sim_handle_reuse},
    {"sim_library", sim_library},
    {"sim_host_register", sim_host_register},
    {"sim_old_driver", sim_old_driver},
    {"stale_layout_module", stale_layout_module},
    {"stale_layout_library", stale_layout_library},
    {"failed_query_not_cached", failed_query_not_cached},
    {"wide_params", wide_params},
    {"old_driver", old_driver},
};

TEST_MAIN(cases)
