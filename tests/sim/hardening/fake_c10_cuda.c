/*
 * fake_c10_cuda.c — a library named libc10_cuda.so, standing in for
 * PyTorch's CUDA allocator library so that LMS_OOM_RETRY=auto can be tested
 * without PyTorch: its one function allocates device memory as the caching
 * allocator would (LMS_OOM_RETRY=auto answers only requests made from such
 * a library's code).
 */
#include <cuda.h>

CUresult lms_test_c10_alloc(CUdeviceptr *p, size_t bytes);

/* cuMemAlloc from this library's code; not a tail call, so that this
 * library's frame is on the stack during it. */
CUresult lms_test_c10_alloc(CUdeviceptr *p, size_t bytes)
{
    volatile CUresult r = cuMemAlloc(p, bytes);
    return r;
}
