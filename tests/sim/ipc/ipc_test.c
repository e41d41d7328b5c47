/*
 * ipc_test.c — memory shared between processes: the simulated driver's
 * documented answers (sim_* cases) and liblmshim.so in front of them
 * (shim_* cases, LD_PRELOAD and settings in meson.build).
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"

static void sim_ipc_handles(void)
{
    primary_context(0);
    CUdeviceptr d, m, a;
    void *h;
    OK(cuMemAlloc(&d, 4 * MiB));
    OK(cuMemAllocManaged(&m, 4 * MiB, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemAllocHost(&h, 4096));
    OK(cuMemAllocAsync(&a, MiB, NULL));
    CUipcMemHandle ih;
    OK(cuIpcGetMemHandle(&ih, d));
    CHECK_IS(cuIpcGetMemHandle(&ih, m), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuIpcGetMemHandle(&ih, (CUdeviceptr)(uintptr_t)h), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuIpcGetMemHandle(&ih, a), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuIpcGetMemHandle(&ih, d + 256), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuIpcGetMemHandle(NULL, d), CUDA_ERROR_INVALID_VALUE);
    OK(cuIpcGetMemHandle(&ih, d));
    CUdeviceptr opened;
    CHECK_IS(cuIpcOpenMemHandle(&opened, ih, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
             CUDA_ERROR_INVALID_CONTEXT);   /* not in the exporting process */
    CUipcMemHandle junk = {{0}};
    CHECK_IS(cuIpcOpenMemHandle(&opened, junk, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuIpcCloseMemHandle(d), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(d));
    OK(cuMemFree(m));
    OK(cuMemFreeHost(h));
    OK(cuMemFreeAsync(a, NULL));
}

static void sim_pool_and_vmm_export(void)
{
    primary_context(0);
    CUmemoryPool ex = make_pool(0, true), plain = make_pool(0, false);
    CUdeviceptr pe, pp, pd, m;
    OK(cuMemAllocFromPoolAsync(&pe, MiB, ex, NULL));
    OK(cuMemAllocFromPoolAsync(&pp, MiB, plain, NULL));
    OK(cuMemAllocAsync(&pd, MiB, NULL));
    OK(cuMemAllocManaged(&m, MiB, CU_MEM_ATTACH_GLOBAL));
    CUmemPoolPtrExportData data;
    OK(cuMemPoolExportPointer(&data, pe));
    CHECK_IS(cuMemPoolExportPointer(&data, pp), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemPoolExportPointer(&data, pd), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemPoolExportPointer(&data, m), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFreeAsync(pe, NULL));
    OK(cuMemFreeAsync(pp, NULL));
    OK(cuMemFreeAsync(pd, NULL));
    OK(cuMemFree(m));

    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle h0, h1;
    OK(cuMemCreate(&h0, 2 * MiB, &prop, 0));
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    OK(cuMemCreate(&h1, 2 * MiB, &prop, 0));
    int fd = -1;
    CHECK_IS(cuMemExportToShareableHandle(&fd, h0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemExportToShareableHandle(&fd, (CUmemGenericAllocationHandle)0x1000,
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             CUDA_ERROR_INVALID_VALUE);
    OK(cuMemExportToShareableHandle(&fd, h1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    struct stat sb;
    CHECK(fd >= 0 && fstat(fd, &sb) == 0 && (uint64_t)sb.st_size == 2 * MiB);
    close(fd);
    OK(cuMemRelease(h0));
    OK(cuMemRelease(h1));
}

/* This process's lmshim log (LMS_LOG_FILE=IPC_LOG_DIR/ipc_<pid>.log), read
 * from where this process's lines begin. */
static pid_log log_of_run;

__attribute__((constructor)) static void note_log_start(void)
{
    pid_log_init(&log_of_run, "IPC_LOG_DIR", "ipc");
}

/* Lines of this process's lmshim log that contain `what`. */
static int log_lines_with(const char *what)
{
    CHECK(getenv("IPC_LOG_DIR") != NULL);
    return pid_log_lines(&log_of_run, what);
}

/* A chunk placed off the device: CUDA's error and one line that says why. */
static void shim_refuses_offdevice(void)
{
    primary_context(0);
    CUdeviceptr c[4];
    for (int i = 0; i < 4; i++)
        OK(cuMemAlloc(&c[i], 64 * MiB));
    CHECK(!is_managed(c[0]) && is_managed(c[3]));
    CUipcMemHandle ih;
    OK(cuIpcGetMemHandle(&ih, c[0]));
    CHECK_IS(cuIpcGetMemHandle(&ih, c[3]), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ_U(log_lines_with("cuIpcGetMemHandle"), 1);
    CHECK_EQ_U(log_lines_with("LMS_THRESHOLD="), 1);
    char ptr[32];
    snprintf(ptr, sizeof ptr, "0x%llx", (unsigned long long)c[3]);
    CHECK_EQ_U(log_lines_with(ptr), 1);
    CHECK_EQ_U(log_lines_with("64M"), 1);
    for (int i = 0; i < 4; i++)
        OK(cuMemFree(c[i]));
}

/* Exportable pools never leave the device; plain pools may. */
static void shim_exportable_pool(void)
{
    primary_context(0);
    CUmemoryPool ex = make_pool(0, true), plain = make_pool(0, false);
    CUdeviceptr e[4], p;
    for (int i = 0; i < 4; i++) {
        OK(cuMemAllocFromPoolAsync(&e[i], 64 * MiB, ex, NULL));
        CHECK(!is_managed(e[i]));
        CUmemPoolPtrExportData data;
        OK(cuMemPoolExportPointer(&data, e[i]));
    }
    OK(cuMemAllocFromPoolAsync(&p, 64 * MiB, plain, NULL));
    CHECK(is_managed(p));   /* past LMS_FRAC: off the device */
    CUmemPoolPtrExportData data;
    CHECK_IS(cuMemPoolExportPointer(&data, p), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ_U(log_lines_with("cuMemPoolExportPointer"), 1);
    for (int i = 0; i < 4; i++)
        OK(cuMemFreeAsync(e[i], NULL));
    OK(cuMemFreeAsync(p, NULL));
    OK(cuCtxSynchronize());
    OK(cuMemPoolDestroy(ex));
    OK(cuMemPoolDestroy(plain));
}

static const test_case cases[] = {
    {"sim_ipc_handles", sim_ipc_handles},
    {"sim_pool_and_vmm_export", sim_pool_and_vmm_export},
    {"shim_refuses_offdevice", shim_refuses_offdevice},
    {"shim_exportable_pool", shim_exportable_pool},
};

TEST_MAIN(cases)
