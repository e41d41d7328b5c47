/*
 * runtime_graph_test.c — a program that knows only the runtime API
 * captures a training-step-like sequence of launches into a CUDA graph and
 * replays it, as torch.cuda.graphs does. Run over the simulator alone and
 * with liblmshim.so in front of it (buffers then partly managed).
 */
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "../../common/check.h"
#include "../../common/shim.h"
#include "simgpu.h"

#define NBUF 6
#define N 1024

/* axpy(x, y, n, a): y[i] += a * x[i]. */
static void axpy(simgpu_launch *l, void **p)
{
    const float *x = *(float **)p[0];
    float *y = *(float **)p[1];
    int n = *(int *)p[2];
    float a = *(float *)p[3];
    l->access(l, (uint64_t)(uintptr_t)x, (size_t)n * 4, SIMGPU_READ);
    l->access(l, (uint64_t)(uintptr_t)y, (size_t)n * 4, SIMGPU_READ_WRITE);
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

static void runtime_graph(void)
{
    simgpu_kernel k = {"axpy", axpy, 4, {8, 8, 4, 4}};
    OK(simgpu_register_kernel(&k));
    float *buf[NBUF];
    for (int i = 0; i < NBUF; i++) {
        OK(cudaMalloc((void **)&buf[i], 64 * MiB));
        float init[N];
        for (int j = 0; j < N; j++)
            init[j] = (float)i;
        OK(cudaMemcpy(buf[i], init, sizeof init, cudaMemcpyHostToDevice));
    }
    cudaStream_t s;
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    int n = N;
    float a = 0.5f;
    for (int i = 0; i + 1 < NBUF; i++) {
        void *args[] = {&buf[i], &buf[i + 1], &n, &a};
        OK(cudaLaunchKernel((const void *)axpy, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, s));
    }
    enum cudaStreamCaptureStatus st;
    unsigned long long id = 0;
    OK(cudaStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL));
    CHECK(st == cudaStreamCaptureStatusActive && id != 0);
    cudaGraph_t g;
    OK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t e;
    OK(cudaGraphInstantiate(&e, g, 0));
    OK(cudaGraphUpload(e, s));
    for (int rep = 0; rep < 2; rep++)
        OK(cudaGraphLaunch(e, s));
    OK(cudaStreamSynchronize(s));
    /* Two replays of the chain y_{i+1} += 0.5 y_i, sequential in i. */
    float v[NBUF];
    for (int i = 0; i < NBUF; i++)
        v[i] = (float)i;
    for (int rep = 0; rep < 2; rep++)
        for (int i = 0; i + 1 < NBUF; i++)
            v[i + 1] += 0.5f * v[i];
    for (int i = 0; i < NBUF; i++) {
        float got[N];
        OK(cudaMemcpy(got, buf[i], sizeof got, cudaMemcpyDeviceToHost));
        CHECK(got[0] == v[i] && got[N - 1] == v[i]);
    }
    cudaIpcMemHandle_t h;
    cudaError_t ipc = cudaIpcGetMemHandle(&h, buf[0]);
    CHECK(ipc == cudaSuccess);
    OK(cudaGraphExecDestroy(e));
    OK(cudaGraphDestroy(g));
    OK(cudaStreamDestroy(s));
    for (int i = 0; i < NBUF; i++)
        OK(cudaFree(buf[i]));
}

static const test_case cases[] = {
    {"runtime_graph", runtime_graph},
};

TEST_MAIN(cases)
