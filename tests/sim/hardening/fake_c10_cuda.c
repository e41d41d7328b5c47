/*
 * fake_c10_cuda.c — an empty library named libc10_cuda.so, standing in for
 * PyTorch's CUDA allocator library so that LMS_OOM_RETRY=auto can be tested
 * without PyTorch.
 */
int lms_test_fake_c10_cuda(void);
int lms_test_fake_c10_cuda(void) { return 10; }
