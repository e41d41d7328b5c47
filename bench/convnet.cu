// convnet.cu — the caffe example's shape on a real GPU: a GoogleNet-like
// stack of convolutions (with ReLU) over a batch of N x 3 x H x W images,
// forward and backward with cuDNN. Allocates every activation, gradient and
// weight with cudaMalloc, as a framework would, so that lmshim decides where
// each lives. Prints the footprint and images per second.
//
// usage: convnet [batch [height [width [iterations]]]]   (default 10 1200 1200 3)
#include <cudnn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA(call)                                                                        \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));              \
            std::exit(1);                                                                 \
        }                                                                                 \
    } while (0)
#define DNN(call)                                                                         \
    do {                                                                                  \
        cudnnStatus_t s_ = (call);                                                        \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                 \
            std::fprintf(stderr, "%s: %s\n", #call, cudnnGetErrorString(s_));             \
            std::exit(1);                                                                 \
        }                                                                                 \
    } while (0)

struct Layer {
    int cin, cout, k, stride, pad;
    int h, w, oh, ow;                       // input and output spatial size
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t f;
    cudnnConvolutionDescriptor_t conv;
    float *weight, *dweight, *out, *dout;   // device buffers
};

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 10;
    int H = argc > 2 ? std::atoi(argv[2]) : 1200;
    int W = argc > 3 ? std::atoi(argv[3]) : 1200;
    int iters = argc > 4 ? std::atoi(argv[4]) : 3;
    // (out channels, kernel, stride) of a GoogleNet-like stem and body.
    const int spec[][3] = {{64, 7, 2}, {64, 1, 1}, {192, 3, 1}, {96, 1, 1}, {128, 3, 1},
                           {16, 1, 1}, {32, 5, 1}, {128, 3, 1}, {192, 3, 1}};
    const int nl = sizeof spec / sizeof spec[0];
    cudnnHandle_t dnn;
    DNN(cudnnCreate(&dnn));
    std::vector<Layer> L(nl);
    float *input, *dinput;
    size_t footprint = 0;
    CUDA(cudaMalloc(&input, sizeof(float) * n * 3 * H * W));
    CUDA(cudaMalloc(&dinput, sizeof(float) * n * 3 * H * W));
    footprint += 2 * sizeof(float) * (size_t)n * 3 * H * W;
    int c = 3, h = H, w = W;
    size_t workspace = 0;
    for (int i = 0; i < nl; i++) {
        Layer &l = L[i];
        l.cin = c, l.cout = spec[i][0], l.k = spec[i][1], l.stride = spec[i][2], l.pad = spec[i][1] / 2;
        l.h = h, l.w = w;
        l.oh = (h + 2 * l.pad - l.k) / l.stride + 1, l.ow = (w + 2 * l.pad - l.k) / l.stride + 1;
        DNN(cudnnCreateTensorDescriptor(&l.x));
        DNN(cudnnCreateTensorDescriptor(&l.y));
        DNN(cudnnCreateFilterDescriptor(&l.f));
        DNN(cudnnCreateConvolutionDescriptor(&l.conv));
        DNN(cudnnSetTensor4dDescriptor(l.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, l.cin, l.h, l.w));
        DNN(cudnnSetTensor4dDescriptor(l.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, l.cout, l.oh, l.ow));
        DNN(cudnnSetFilter4dDescriptor(l.f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, l.cout, l.cin, l.k, l.k));
        DNN(cudnnSetConvolution2dDescriptor(l.conv, l.pad, l.pad, l.stride, l.stride, 1, 1,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        size_t wbytes = sizeof(float) * l.cout * l.cin * l.k * l.k;
        size_t ybytes = sizeof(float) * (size_t)n * l.cout * l.oh * l.ow;
        CUDA(cudaMalloc(&l.weight, wbytes));
        CUDA(cudaMalloc(&l.dweight, wbytes));
        CUDA(cudaMalloc(&l.out, ybytes));
        CUDA(cudaMalloc(&l.dout, ybytes));
        CUDA(cudaMemset(l.weight, 0, wbytes));
        footprint += 2 * wbytes + 2 * ybytes;
        size_t ws = 0;
        DNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, l.x, l.f, l.conv, l.y, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &ws));
        workspace = ws > workspace ? ws : workspace;
        DNN(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, l.f, l.y, l.conv, l.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, &ws));
        workspace = ws > workspace ? ws : workspace;
        DNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, l.x, l.y, l.conv, l.f, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, &ws));
        workspace = ws > workspace ? ws : workspace;
        c = l.cout, h = l.oh, w = l.ow;
    }
    void *ws = nullptr;
    if (workspace)
        CUDA(cudaMalloc(&ws, workspace));
    footprint += workspace;
    CUDA(cudaMemset(input, 0, sizeof(float) * n * 3 * H * W));
    const float one = 1.0f, zero = 0.0f;
    auto step = [&]() {
        const float *x = input;
        for (int i = 0; i < nl; i++) {   // forward: conv then ReLU in place
            Layer &l = L[i];
            DNN(cudnnConvolutionForward(dnn, &one, l.x, x, l.f, l.weight, l.conv,
                                        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, ws, workspace, &zero, l.y, l.out));
            x = l.out;
        }
        CUDA(cudaMemset(L[nl - 1].dout, 0, sizeof(float) * (size_t)n * L[nl - 1].cout * L[nl - 1].oh * L[nl - 1].ow));
        for (int i = nl - 1; i >= 0; i--) {   // backward
            Layer &l = L[i];
            const float *xin = i ? L[i - 1].out : input;
            float *dx = i ? L[i - 1].dout : dinput;
            DNN(cudnnConvolutionBackwardFilter(dnn, &one, l.x, xin, l.y, l.dout, l.conv,
                                               CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, ws, workspace, &zero, l.f, l.dweight));
            DNN(cudnnConvolutionBackwardData(dnn, &one, l.f, l.weight, l.y, l.dout, l.conv,
                                             CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, ws, workspace, &zero, l.x, dx));
        }
    };
    step();   // warm-up
    CUDA(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++)
        step();
    CUDA(cudaDeviceSynchronize());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("footprint_mib %zu images_per_s %.3f seconds %.3f\n", footprint >> 20, n * iters / s, s);
    return 0;
}
