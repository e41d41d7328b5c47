/*
 * module.c — the unload hooks. After cuModuleUnload or cuLibraryUnload the
 * driver may hand the same CUfunction/CUkernel values to other kernels, so
 * the parameter layouts cached for launches are dropped (src/engine/launch.c)
 * while no launch is being scanned.
 */
#include "hooks.h"
#include "launch.h"

/* A hook that unloads handle h: the cached layouts go when it succeeds. */
#define UNLOAD_HOOK(sym, handle_type)                                               \
    LMS_EXPORT CUresult sym(handle_type h)                                          \
    {                                                                               \
        if (!LMS_ENTER(sym))                                        \
            return PASS(sym, h);                                                    \
        lms_launch_unload_begin();                                                  \
        CUresult r = REAL(sym)(h);                                                  \
        lms_launch_unload_end(r == CUDA_SUCCESS);                                   \
        lms_hook_leave();                                                           \
        return r;                                                                   \
    }

UNLOAD_HOOK(cuModuleUnload, CUmodule)
UNLOAD_HOOK(cuLibraryUnload, CUlibrary)
