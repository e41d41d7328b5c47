/*
 * missing_real.c — a hook whose real function the driver lacks answers
 * CUDA_ERROR_NOT_SUPPORTED and leaves the thread's hooks working: after a
 * cuMemAllocManaged that the driver (partialdrv) does not have,
 * cuMemGetInfo on the same thread still answers lmshim's budget
 * (LMS_LIMIT=1G) rather than the driver's 4 GiB.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t, unsigned);
    typedef CUresult (*info_fn)(size_t *, size_t *);
    alloc_fn alloc = (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAllocManaged");
    info_fn info = (info_fn)dlsym(RTLD_DEFAULT, "cuMemGetInfo_v2");
    if (!alloc || !info) {
        fprintf(stderr, "missing_real: lmshim is not preloaded\n");
        return 1;
    }
    size_t f = 0, t = 0;
    if (info(&f, &t) != CUDA_SUCCESS || t != 1ull << 30) {
        fprintf(stderr, "missing_real: before: total %zu, want the 1 GiB budget\n", t);
        return 1;
    }
    CUdeviceptr p;
    CUresult r = alloc(&p, 1 << 20, CU_MEM_ATTACH_GLOBAL);
    if (r != CUDA_ERROR_NOT_SUPPORTED) {
        fprintf(stderr, "missing_real: cuMemAllocManaged answered %d, want NOT_SUPPORTED\n", (int)r);
        return 1;
    }
    if (info(&f, &t) != CUDA_SUCCESS || t != 1ull << 30) {
        fprintf(stderr, "missing_real: after: total %zu, want the 1 GiB budget (hooks left off)\n", t);
        return 1;
    }
    return 0;
}
