/*
 * ipc.c — the hooks of memory sharing between processes. A chunk lmshim
 * placed off the device gets CUDA's answer for such memory (invalid value)
 * with one log line. (Pools created exportable are kept on the device: the
 * pool hooks in memory.c record them.)
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
