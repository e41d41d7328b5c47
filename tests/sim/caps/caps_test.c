/*
 * caps_test.c — a device without concurrent managed access
 * (SIMGPU_CONCURRENT_MANAGED=0): the simulated driver's documented
 * behaviour (sim_* cases), and liblmshim.so keeping chunks that leave such
 * a device in pinned host memory with one warning (shim_* cases).
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "simgpu.h"

/* touch(p, bytes): reads the range, p[0] += 1. */
static void touch(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    if (bytes) {
        l->access(l, a, bytes, SIMGPU_READ_WRITE);
        (*(uint64_t *)(uintptr_t)a)++;
    }
}

static CUfunction f_touch;

static void setup(void)
{
    primary_context(0);
    f_touch = sim_function(&(simgpu_kernel){"touch", touch, 2, {8, 8}});
}

static CUresult run_touch(CUdeviceptr p, size_t bytes)
{
    void *args[] = {&p, &bytes};
    return cuLaunchKernel(f_touch, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
}

/* SIMGPU_CONCURRENT_MANAGED=0: no prefetch to the device, and every launch
 * moves all managed memory there and back. */
static void sim_no_concurrent(void)
{
    setup();
    int v = -1;
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0));
    CHECK_EQ_U(v, 0);
    CUdeviceptr m, d;
    OK(cuMemAllocManaged(&m, 8 * MiB, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemAlloc(&d, MiB));
    CUmemLocation dev0 = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST};
    CHECK_IS(cuMemPrefetchAsync(m, 8 * MiB, dev0, 0, NULL), CUDA_ERROR_INVALID_DEVICE);
    OK(cuMemPrefetchAsync(m, 8 * MiB, host, 0, NULL));
    OK(simgpu_reset_counters());
    OK(run_touch(d, 0));                 /* a kernel that never touches m */
    OK(run_touch(d, 0));
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.bytes_to_device, 2 * 8 * MiB);
    CHECK_EQ_U(c.bytes_to_host, 2 * 8 * MiB);
    CHECK(c.modeled_ns >= 4 * (8.0 * MiB / 55.0));   /* four copies at 55 GB/s */
    OK(cuMemFree(m));
    OK(cuMemFree(d));
}

/* The default device has it: nothing moves for a launch that does not touch. */
static void sim_concurrent(void)
{
    setup();
    int v = -1;
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0));
    CHECK_EQ_U(v, 1);
    CUdeviceptr m, d;
    OK(cuMemAllocManaged(&m, 8 * MiB, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemAlloc(&d, MiB));
    CUmemLocation dev0 = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    OK(cuMemPrefetchAsync(m, 8 * MiB, dev0, 0, NULL));
    OK(simgpu_reset_counters());
    OK(run_touch(d, 0));
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK_EQ_U(c.bytes_to_device + c.bytes_to_host, 0);
    OK(cuMemFree(m));
    OK(cuMemFree(d));
}

/* This process's lmshim log (LMS_LOG_FILE=CAPS_LOG_DIR/caps_<pid>.log), read
 * from where this process's lines begin. */
static pid_log log_of_run;

__attribute__((constructor)) static void note_log_start(void)
{
    pid_log_init(&log_of_run, "CAPS_LOG_DIR", "caps");
}

/* Lines of this process's lmshim log that contain `what`. */
static int log_lines_with(const char *what)
{
    CHECK(getenv("CAPS_LOG_DIR") != NULL);
    return pid_log_lines(&log_of_run, what);
}

/* lmshim on such a device: chunks that leave it are pinned host memory,
 * nothing is prefetched, results are right, one warning. */
static void shim_host_mode(void)
{
    setup();
    CUdeviceptr c[6];
    int host = 0;
    for (int i = 0; i < 6; i++) {
        OK(cuMemAlloc(&c[i], 64 * MiB));
        OK(cuMemsetD8(c[i], 0, 8));
        int managed = 1;
        unsigned type = 0;
        OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, c[i]));
        OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, c[i]));
        CHECK_EQ_U(managed, 0);
        host += type == CU_MEMORYTYPE_HOST;
    }
    CHECK(host >= 3);
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 6; i++)
            OK(run_touch(c[i], 64 * MiB));
    OK(cuCtxSynchronize());
    for (int i = 0; i < 6; i++) {
        uint64_t v = 0;
        OK(cuMemcpyDtoH(&v, c[i], sizeof v));
        CHECK_EQ_U(v, 3);
    }
    simgpu_counters k;
    OK(simgpu_get_counters(0, &k));
    CHECK_EQ_U(k.prefetch_bytes, 0);
    CHECK_EQ_U(log_lines_with("no concurrent managed access"), 1);
    for (int i = 0; i < 6; i++)
        OK(cuMemFree(c[i]));
}

static const test_case cases[] = {
    {"sim_no_concurrent", sim_no_concurrent},
    {"sim_concurrent", sim_concurrent},
    {"shim_host_mode", shim_host_mode},
};

TEST_MAIN(cases)
