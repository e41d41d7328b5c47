/*
 * spy_export.c — a preload library that only exports cuMemAlloc_v2 (the way
 * a naive interposer does) and counts calls. Under a runtime that reaches the
 * driver through cuGetProcAddress, it must see none.
 */
#include <cuda.h>
#include <dlfcn.h>

static int seen;

__attribute__((visibility("default"))) int spy_seen(void) { return seen; }

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    seen++;
    CUresult (*real)(CUdeviceptr *, size_t) =
        (CUresult (*)(CUdeviceptr *, size_t))dlsym(RTLD_NEXT, "cuMemAlloc_v2");
    return real ? real(p, n) : CUDA_ERROR_NOT_INITIALIZED;
}
