/*
 * ipc.c — the hooks of memory sharing between processes. A chunk lmshim
 * placed off the device gets CUDA's answer for such memory (invalid value)
 * with one log line. (Pools created exportable are kept on the device: the
 * pool hooks in memory.c record them.)
 */
#include "hooks.h"
#include "ipc.h"

/* A hook that exports device pointer p into *out: refused (invalid value,
 * one log line) for a chunk lmshim placed off the device, passed on
 * otherwise. */
#define EXPORT_HOOK(sym, out_type)                                                  \
    LMS_EXPORT CUresult sym(out_type *out, CUdeviceptr p)                           \
    {                                                                               \
        if (!LMS_ENTER(sym))                                        \
            return PASS(sym, out, p);                                               \
        CUresult r = lms_ipc_refuse(#sym, p) ? CUDA_ERROR_INVALID_VALUE             \
                                             : REAL(sym)(out, p);                   \
        lms_hook_leave();                                                           \
        return r;                                                                   \
    }

EXPORT_HOOK(cuIpcGetMemHandle, CUipcMemHandle)
EXPORT_HOOK(cuMemPoolExportPointer, CUmemPoolPtrExportData)
