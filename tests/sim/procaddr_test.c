/*
 * procaddr_test.c — cuGetProcAddress / cuGetProcAddress_v2 of the simulated
 * driver: base name + version + flags pick the ABI variant; unknown names,
 * too-old and too-new versions answer as CUDA documents; and a program that
 * resolves everything this way (as static cudart does) works end to end.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdint.h>

#include "../common/check.h"

/* The address the driver library exports under `symbol`. */
static void *exported(const char *symbol)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(h != NULL);
    void *p = dlsym(h, symbol);
    dlclose(h);
    CHECK(p != NULL);
    return p;
}

/* Looks up name@version with flags; returns the pointer, checks the status. */
static void *lookup(const char *name, int version, cuuint64_t flags, int want_status)
{
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)99;
    OK(cuGetProcAddress(name, &fn, version, flags, &st));
    CHECK_EQ_U(st, want_status);
    return fn;
}

static void variants(void)
{
    OK(cuInit(0));
    const int ok = CU_GET_PROC_ADDRESS_SUCCESS;
    CHECK(lookup("cuMemAlloc", 3020, 0, ok) == exported("cuMemAlloc_v2"));
    CHECK(lookup("cuMemAlloc", 13000, 0, ok) == exported("cuMemAlloc_v2"));
    CHECK(lookup("cuMemAlloc", 2000, 0, ok) == exported("cuMemAlloc"));
    CHECK(lookup("cuMemAlloc", 3010, 0, ok) == exported("cuMemAlloc"));
    CHECK(lookup("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, ok) ==
          exported("cuLaunchKernel_ptsz"));
    CHECK(lookup("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, ok) ==
          exported("cuLaunchKernel"));
    CHECK(lookup("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_DEFAULT, ok) == exported("cuLaunchKernel"));
    CHECK(lookup("cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, ok) ==
          exported("cuMemcpyHtoD_v2_ptds"));
    /* No per-thread variant: the legacy one is returned. */
    CHECK(lookup("cuMemAlloc", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, ok) ==
          exported("cuMemAlloc_v2"));
    CHECK(lookup("cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, ok) ==
          exported("cuMemAllocAsync_ptsz"));
    CHECK(lookup("cuMemPrefetchAsync", 12000, 0, ok) == exported("cuMemPrefetchAsync"));
    CHECK(lookup("cuMemPrefetchAsync", 12020, 0, ok) == exported("cuMemPrefetchAsync_v2"));
    CHECK(lookup("cuMemPrefetchAsync", 12020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, ok) ==
          exported("cuMemPrefetchAsync_v2_ptsz"));
    CHECK(lookup("cuGetProcAddress", 12000, 0, ok) == exported("cuGetProcAddress_v2"));
    CHECK(lookup("cuGetProcAddress", 11030, 0, ok) == exported("cuGetProcAddress"));
    CHECK(lookup("cuEventElapsedTime", 12080, 0, ok) == exported("cuEventElapsedTime_v2"));
}

static void answers(void)
{
    OK(cuInit(0));
    CHECK(lookup("cuNoSuchFunction", 12000, 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) == NULL);
    CHECK(lookup("cuMemAllocAsync", 11000, 0, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) == NULL);
    void *fn;
    CUdriverProcAddressQueryResult st;
    CHECK_IS(cuGetProcAddress("cuMemAlloc", &fn, 14000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuGetProcAddress("cuMemAlloc", &fn, 12000, 8, &st), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuGetProcAddress(NULL, &fn, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    OK(cuGetProcAddress("cuMemAlloc", &fn, 12000, 0, NULL));   /* status is optional */
    const void *table = (const void *)1;
    CUuuid id = {{0}};
    CHECK_IS(cuGetExportTable(&table, &id), CUDA_ERROR_NOT_FOUND);
    /* The 11.3 ABI of cuGetProcAddress itself. */
    PFN_cuGetProcAddress_v11030 v1 = (PFN_cuGetProcAddress_v11030)exported("cuGetProcAddress");
    OK(v1("cuMemFree", &fn, 3020, 0));
    CHECK(fn == exported("cuMemFree_v2"));
}

/* A client in static-cudart style: dlopen + dlsym("cuGetProcAddress_v2"),
 * everything else through it, including per-thread-stream variants. */
static void static_cudart_style(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
    CHECK(gpa != NULL);
    CUdriverProcAddressQueryResult st;
    PFN_cuInit_v2000 init;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuCtxSetCurrent_v4000 set;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemFree_v3020 mfree;
    PFN_cuMemcpyHtoD_v7000_ptds h2d;
    PFN_cuMemcpyDtoH_v7000_ptds d2h;
    const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    OK(gpa("cuInit", (void **)&init, 12000, pt, &st));
    OK(gpa("cuDevicePrimaryCtxRetain", (void **)&retain, 12000, pt, &st));
    OK(gpa("cuCtxSetCurrent", (void **)&set, 12000, pt, &st));
    OK(gpa("cuMemAlloc", (void **)&alloc, 12000, pt, &st));
    OK(gpa("cuMemFree", (void **)&mfree, 12000, pt, &st));
    OK(gpa("cuMemcpyHtoD", (void **)&h2d, 12000, pt, &st));
    OK(gpa("cuMemcpyDtoH", (void **)&d2h, 12000, pt, &st));
    CHECK((void *)h2d == dlsym(h, "cuMemcpyHtoD_v2_ptds"));
    CUcontext ctx;
    OK(init(0));
    OK(retain(&ctx, 0));
    OK(set(ctx));
    CUdeviceptr p;
    OK(alloc(&p, 4096));
    int in[1024], out[1024];
    for (int i = 0; i < 1024; i++)
        in[i] = i * i;
    OK(h2d(p, in, sizeof in));
    OK(d2h(out, p, sizeof out));
    CHECK(memcmp(in, out, sizeof in) == 0);
    OK(mfree(p));
    dlclose(h);
}

static const test_case cases[] = {
    {"variants", variants},
    {"answers", answers},
    {"static_cudart_style", static_cudart_style},
};

TEST_MAIN(cases)
