// cuda_try.h — TRY(call) for the CUDA programs of tests/gpu: a runtime call
// that fails prints the call and CUDA's message on stderr and makes the
// enclosing function return 1.
#pragma once
#include <cstdio>

#define TRY(call)                                                                  \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        if (e_ != cudaSuccess) {                                                   \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));       \
            return 1;                                                              \
        }                                                                          \
    } while (0)
