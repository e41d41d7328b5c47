/* Initialises the CUDA runtime (linked shared or static) and prints what
 * cudaGetDeviceCount answered. Used by record_entries.sh. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    int n = -1;
    cudaError_t e = cudaGetDeviceCount(&n);
    printf("cudaGetDeviceCount returned %d (%d devices)\n", (int)e, n);
    return 0;
}
