/*
 * ipc.c — sharing memory with other processes: legacy IPC handles
 * (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle), pointers
 * exported from pools (cuMemPoolExportPointer) and shareable VMM handles
 * (cuMemExportToShareableHandle), with CUDA's documented answers: IPC
 * handles exist only for cuMemAlloc memory, pool pointers only from pools
 * created with handle types, shareable handles only of the types requested
 * at cuMemCreate. The simulator's device memory is host memory private to
 * the process, so opening a handle in another process is not modeled
 * (docs/SIMULATOR.md).
 */
#include "sim.h"

#include <string.h>
#include <unistd.h>

#define IPC_MAGIC 0x49504331u

/* What a simulated IPC handle carries (inside its 64 reserved bytes). */
typedef struct ipc_payload {
    uint32_t magic;
    int32_t pid;             /* the exporting process */
    uint64_t base, size;     /* the allocation */
    uint64_t id;             /* its buffer id */
} ipc_payload;

_Static_assert(sizeof(ipc_payload) <= CU_IPC_HANDLE_SIZE, "payload fits a handle");

SIM_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!h)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = sim_registry_find_base((uintptr_t)p);
    /* cuMemAlloc memory only: not managed, host, VMM or pool memory. */
    if (!a || a->kind != SIM_MEM_DEVICE || a->pool) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        ipc_payload pl = {.magic = IPC_MAGIC, .pid = (int32_t)getpid(), .base = a->base,
                          .size = a->size, .id = a->id};
        memset(h, 0, sizeof *h);
        memcpy(h->reserved, &pl, sizeof pl);
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
        return CUDA_ERROR_INVALID_VALUE;
    ipc_payload pl;
    memcpy(&pl, h.reserved, sizeof pl);
    if (pl.magic != IPC_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    if (pl.pid == (int32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT;   /* a process cannot open its own handle */
    return CUDA_ERROR_NOT_SUPPORTED;         /* another process's memory: not modeled */
}

SIM_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags)
{
    return cuIpcOpenMemHandle_v2(p, h, flags);
}

/* Nothing is ever opened (see cuIpcOpenMemHandle), so nothing can be closed. */
SIM_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
    CUresult r = sim_check_init();
    (void)p;
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *out, CUdeviceptr p)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    sim_alloc *a = sim_registry_find_base((uintptr_t)p);
    if (!a || a->kind != SIM_MEM_DEVICE || !a->pool || !a->pool->handle_types) {
        r = CUDA_ERROR_INVALID_VALUE;   /* not from an exportable pool */
    } else {
        ipc_payload pl = {.magic = IPC_MAGIC, .pid = (int32_t)getpid(), .base = a->base,
                          .size = a->size, .id = a->id};
        memset(out, 0, sizeof *out);
        memcpy(out->reserved, &pl, sizeof pl);
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle h,
                                                 CUmemAllocationHandleType type,
                                                 unsigned long long flags)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || flags)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned types = 0;
    int fd = -1;
    pthread_mutex_lock(&sim_lock);
    bool known = sim_vmm_export_info(h, &types, &fd);
    pthread_mutex_unlock(&sim_lock);
    if (!known || !(types & (unsigned)type))
        return CUDA_ERROR_INVALID_VALUE;   /* not requested at cuMemCreate */
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    int dup_fd = dup(fd);
    if (dup_fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *(int *)out = dup_fd;
    return CUDA_SUCCESS;
}
