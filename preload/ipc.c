/*
 * ipc.c — the hooks of memory sharing between processes. A chunk lmshim
 * placed off the device gets CUDA's answer for such memory (invalid value)
 * with one log line; pools created exportable are remembered so that their
 * allocations never leave the device.
 */
#include "hooks.h"
#include "ipc.h"

#define PASS(sym, ...) (REAL(sym) ? REAL(sym)(__VA_ARGS__) : CUDA_ERROR_NOT_SUPPORTED)

LMS_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
    if (!lms_hook_enter() || !REAL(cuIpcGetMemHandle))
        return PASS(cuIpcGetMemHandle, h, p);
    CUresult r = lms_ipc_refuse("cuIpcGetMemHandle", p) ? CUDA_ERROR_INVALID_VALUE
                                                        : REAL(cuIpcGetMemHandle)(h, p);
    lms_hook_leave();
    return r;
}

LMS_EXPORT CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *out, CUdeviceptr p)
{
    if (!lms_hook_enter() || !REAL(cuMemPoolExportPointer))
        return PASS(cuMemPoolExportPointer, out, p);
    CUresult r = lms_ipc_refuse("cuMemPoolExportPointer", p) ? CUDA_ERROR_INVALID_VALUE
                                                             : REAL(cuMemPoolExportPointer)(out, p);
    lms_hook_leave();
    return r;
}

LMS_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (!lms_hook_enter() || !REAL(cuMemPoolCreate))
        return PASS(cuMemPoolCreate, pool, props);
    CUresult r = REAL(cuMemPoolCreate)(pool, props);
    if (r == CUDA_SUCCESS && pool)
        lms_ipc_pool_created(*pool, props);
    lms_hook_leave();
    return r;
}

LMS_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    if (!lms_hook_enter() || !REAL(cuMemPoolDestroy))
        return PASS(cuMemPoolDestroy, pool);
    CUresult r = REAL(cuMemPoolDestroy)(pool);
    if (r == CUDA_SUCCESS)
        lms_ipc_pool_destroyed(pool);
    lms_hook_leave();
    return r;
}
