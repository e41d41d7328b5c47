// prefetch_fresh.cu — what the first prefetch to the GPU of managed memory
// that nobody has touched costs, beside the same prefetch of managed memory
// the host wrote (its pages made on the host, so they cross the link). The
// simulated GPU charges both the link (docs/SIMULATOR.md, "Not modeled");
// this measures what a real driver does. Built with nvcc by meson (static
// cudart), run by tests/gpu/run.sh; no lmshim.
//
// usage: prefetch_fresh [MIB]   (default 2048: two ranges of MIB each)
// Prints "fresh_s X", "touched_s Y", "fresh_gbps A", "touched_gbps B" and
// exits 0, or 1 on a CUDA error or when the host's bytes did not arrive.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define TRY(call)                                                                  \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        if (e_ != cudaSuccess) {                                                   \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));       \
            return 1;                                                              \
        }                                                                          \
    } while (0)

// Prefetches [p, p + bytes) to device `dev` on stream s and puts the time
// the stream took for it, in ms, in *ms (two events of its own, destroyed).
static int timed_prefetch(void *p, size_t bytes, int dev, cudaStream_t s, float *ms)
{
    cudaEvent_t a, b;
    TRY(cudaEventCreate(&a));
    TRY(cudaEventCreate(&b));
    cudaMemLocation to = {};
    to.type = cudaMemLocationTypeDevice;
    to.id = dev;
    TRY(cudaEventRecord(a, s));
    TRY(cudaMemPrefetchAsync(p, bytes, to, 0, s));
    TRY(cudaEventRecord(b, s));
    TRY(cudaEventSynchronize(b));
    TRY(cudaEventElapsedTime(ms, a, b));
    TRY(cudaEventDestroy(a));
    TRY(cudaEventDestroy(b));
    return 0;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)std::atoll(argv[1]) : 2048;
    if (mib < 2) {
        std::fprintf(stderr, "usage: prefetch_fresh [MIB >= 2]\n");
        return 2;
    }
    size_t bytes = mib << 20;
    int dev = 0;
    TRY(cudaSetDevice(dev));
    cudaStream_t s;
    TRY(cudaStreamCreate(&s));
    char *warm, *fresh, *touched;
    float ms_warm = 0, ms_fresh = 0, ms_touched = 0;
    TRY(cudaMallocManaged(&warm, 2u << 20));   // the first prefetch's own costs, not counted
    std::memset(warm, 0, 2u << 20);
    if (timed_prefetch(warm, 2u << 20, dev, s, &ms_warm))
        return 1;
    TRY(cudaMallocManaged(&fresh, bytes));
    TRY(cudaMallocManaged(&touched, bytes));
    std::memset(touched, 0x5a, bytes);
    if (timed_prefetch(fresh, bytes, dev, s, &ms_fresh) || timed_prefetch(touched, bytes, dev, s, &ms_touched))
        return 1;
    unsigned char last = 0;
    TRY(cudaMemcpy(&last, touched + bytes - 1, 1, cudaMemcpyDeviceToHost));
    if (last != 0x5a) {
        std::fprintf(stderr, "the host's bytes did not arrive: 0x%02x\n", last);
        return 1;
    }
    double gb = (double)bytes / 1e9;
    std::printf("fresh_s %.6f\ntouched_s %.6f\n", ms_fresh / 1e3, ms_touched / 1e3);
    std::printf("fresh_gbps %.1f\ntouched_gbps %.1f\n", ms_fresh > 0 ? gb / (ms_fresh / 1e3) : 0.0,
                ms_touched > 0 ? gb / (ms_touched / 1e3) : 0.0);
    TRY(cudaFree(fresh));
    TRY(cudaFree(touched));
    TRY(cudaFree(warm));
    TRY(cudaStreamDestroy(s));
    return 0;
}
