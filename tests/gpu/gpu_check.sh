#!/bin/sh
# gpu_check.sh — skips (77) without a GPU; with one, builds and runs a small
# CUDA program with nvcc and checks its result.
set -u
if [ ! -e /dev/nvidiactl ] || ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "no NVIDIA GPU here: skipped"
    exit 77
fi
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "no nvcc: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/k.cu" <<'CU'
#include <cstdio>
__global__ void add(int *x) { x[threadIdx.x] += threadIdx.x; }
int main() {
    int *x, h[64];
    if (cudaMallocManaged(&x, sizeof h) != cudaSuccess) return 2;
    for (int i = 0; i < 64; i++) x[i] = 1;
    add<<<1, 64>>>(x);
    if (cudaDeviceSynchronize() != cudaSuccess) return 3;
    for (int i = 0; i < 64; i++) if (x[i] != 1 + i) return 4;
    std::puts("gpu ok");
    return 0;
}
CU
"$NVCC" -o "$dir/k" "$dir/k.cu" && "$dir/k"
