// prefetch_fresh.cu — what the first prefetch to the GPU of managed memory
// that nobody has touched costs, beside the same prefetch of managed memory
// the host wrote (its pages made on the host, so they cross the link). The
// simulated GPU charges both the link (docs/SIMULATOR.md, "Not modeled");
// this measures what a real driver does. Built with nvcc by meson (static
// cudart), run by tests/gpu/run.sh; no lmshim.
//
// usage: prefetch_fresh [MIB]   (default 2048: four ranges of MIB each, two
// of each kind, timed touched, fresh, fresh, touched)
// Prints "fresh_s X" and "touched_s Y" (the two prefetches of each kind
// together), each prefetch's time, "fresh_gbps A", "touched_gbps B", and
// exits 0, or 1 on a CUDA error or when the host's bytes did not arrive.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_try.h"

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
    long long arg = argc > 1 ? std::atoll(argv[1]) : 2048;
    if (arg < 2 || arg > (1ll << 20)) {
        std::fprintf(stderr, "usage: prefetch_fresh [MIB, 2 to 1048576]\n");
        return 2;
    }
    size_t bytes = (size_t)arg << 20;
    int dev = 0;
    TRY(cudaSetDevice(dev));
    cudaStream_t s;
    TRY(cudaStreamCreate(&s));
    char *warm, *fresh[2], *touched[2];
    float ms_warm = 0, ms_fresh[2] = {0, 0}, ms_touched[2] = {0, 0};
    TRY(cudaMallocManaged(&warm, 2u << 20));   // the first prefetch's own costs, not counted
    std::memset(warm, 0, 2u << 20);
    if (timed_prefetch(warm, 2u << 20, dev, s, &ms_warm))
        return 1;
    for (int k = 0; k < 2; k++) {
        TRY(cudaMallocManaged(&fresh[k], bytes));
        TRY(cudaMallocManaged(&touched[k], bytes));
        std::memset(touched[k], 0x5a + k, bytes);
    }
    // Each kind once first and once last, so that a cost of the first
    // large prefetch falls on both: touched, fresh, fresh, touched.
    if (timed_prefetch(touched[0], bytes, dev, s, &ms_touched[0]) ||
        timed_prefetch(fresh[0], bytes, dev, s, &ms_fresh[0]) ||
        timed_prefetch(fresh[1], bytes, dev, s, &ms_fresh[1]) ||
        timed_prefetch(touched[1], bytes, dev, s, &ms_touched[1]))
        return 1;
    for (int k = 0; k < 2; k++) {
        unsigned char last = 0;
        TRY(cudaMemcpy(&last, touched[k] + bytes - 1, 1, cudaMemcpyDeviceToHost));
        if (last != 0x5a + k) {
            std::fprintf(stderr, "the host's bytes did not arrive: 0x%02x\n", last);
            return 1;
        }
    }
    double gb = 2.0 * (double)bytes / 1e9, f = (ms_fresh[0] + ms_fresh[1]) / 1e3, t = (ms_touched[0] + ms_touched[1]) / 1e3;
    std::printf("fresh_s %.6f\ntouched_s %.6f\n", f, t);
    std::printf("fresh_each_s %.6f %.6f\ntouched_each_s %.6f %.6f\n", ms_fresh[0] / 1e3, ms_fresh[1] / 1e3,
                ms_touched[0] / 1e3, ms_touched[1] / 1e3);
    std::printf("fresh_gbps %.1f\ntouched_gbps %.1f\n", f > 0 ? gb / f : 0.0, t > 0 ? gb / t : 0.0);
    for (int k = 0; k < 2; k++) {
        TRY(cudaFree(fresh[k]));
        TRY(cudaFree(touched[k]));
    }
    TRY(cudaFree(warm));
    TRY(cudaStreamDestroy(s));
    return 0;
}
