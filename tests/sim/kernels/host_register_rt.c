/*
 * host_register_rt.c — cudaHostRegister/cudaHostUnregister through the
 * simulated runtime (linked to libcudart alone): registered memory copies
 * like pinned memory and keeps its bytes; the runtime's error codes.
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"

int main(void)
{
    size_t n = 1 << 20;
    char *buf = aligned_alloc(4096, n);
    CHECK(buf != NULL);
    memset(buf, 3, n);
    OK(cudaHostRegister(buf, n, cudaHostRegisterMapped));
    CHECK_IS(cudaHostRegister(buf, n, cudaHostRegisterDefault), cudaErrorHostMemoryAlreadyRegistered);
    void *dev;
    OK(cudaMalloc(&dev, n));
    OK(cudaMemcpy(dev, buf, n, cudaMemcpyHostToDevice));
    void *mapped;
    OK(cudaHostGetDevicePointer(&mapped, buf, 0));
    CHECK(mapped == buf);
    OK(cudaHostUnregister(buf));
    CHECK_IS(cudaHostUnregister(buf), cudaErrorHostMemoryNotRegistered);
    (void)cudaGetLastError();
    memset(buf, 0, n);
    OK(cudaMemcpy(buf, dev, n, cudaMemcpyDeviceToHost));
    CHECK(buf[0] == 3 && buf[n - 1] == 3);
    OK(cudaFree(dev));
    free(buf);
    return 0;
}
