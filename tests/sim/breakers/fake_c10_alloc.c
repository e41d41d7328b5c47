/*
 * fake_c10_alloc.c — a library named libc10_cuda.so whose one function
 * allocates device memory, standing in for PyTorch's caching allocator so
 * that LMS_OOM_RETRY=auto can tell its requests from other code's.
 */
#include <cuda.h>

CUresult lms_test_c10_alloc(CUdeviceptr *p, size_t bytes);

/* Allocates as the caching allocator would; not a tail call, so that this
 * library's frame is on the stack during cuMemAlloc. */
CUresult lms_test_c10_alloc(CUdeviceptr *p, size_t bytes)
{
    volatile CUresult r = cuMemAlloc(p, bytes);
    return r;
}
