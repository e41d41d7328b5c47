// oversub.cu — a CUDA C program built with nvcc's default (static) cudart:
// its kernels read and write N buffers of M MiB each (by default 8 x 512 MiB
// = 4 GiB, twice LMS_LIMIT=2G), and every result is checked on the CPU.
// Prints "ok <seconds>" on success.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_try.h"

__global__ void fill(float *x, size_t n, float seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = seed + (float)(i % 1000);
}

__global__ void axpy(float *y, const float *x, size_t n, float a)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}

int main(int argc, char **argv)
{
    int nbuf = argc > 1 ? std::atoi(argv[1]) : 8;
    size_t mib = argc > 2 ? (size_t)std::atoll(argv[2]) : 512;
    size_t n = mib << 18, bytes = n * sizeof(float);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<float *> buf(nbuf);
    for (int i = 0; i < nbuf; i++)
        TRY(cudaMalloc(&buf[i], bytes));
    for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < nbuf; i++)
            fill<<<1024, 256>>>(buf[i], n, (float)i);
        for (int i = 0; i < nbuf; i += 2)
            axpy<<<1024, 256>>>(buf[i], buf[i + 1], n, 2.0f);
    }
    TRY(cudaDeviceSynchronize());
    std::vector<float> host(n);
    size_t wrong = 0;
    for (int i = 0; i < nbuf; i++) {
        TRY(cudaMemcpy(host.data(), buf[i], bytes, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < n; k += 4099) {
            float v = (float)(k % 1000);
            float want = i % 2 ? (float)i + v : 2.0f * ((float)(i + 1) + v) + (float)i + v;
            wrong += host[k] != want;
        }
        TRY(cudaFree(buf[i]));
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (wrong) {
        std::printf("FAILED %zu\n", wrong);
        return 1;
    }
    std::printf("ok %.3f\n", s);
    return 0;
}
