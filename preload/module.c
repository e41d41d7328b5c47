/*
 * module.c — the unload hooks. After cuModuleUnload or cuLibraryUnload the
 * driver may hand the same CUfunction/CUkernel values to other kernels, so
 * the parameter layouts cached for launches are dropped (src/engine/launch.c)
 * while no launch is being scanned.
 */
#include "hooks.h"
#include "launch.h"

#define PASS(sym, ...) (REAL(sym) ? REAL(sym)(__VA_ARGS__) : CUDA_ERROR_NOT_SUPPORTED)

LMS_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
    if (!lms_hook_enter() || !REAL(cuModuleUnload))
        return PASS(cuModuleUnload, hmod);
    lms_launch_unload_begin();
    CUresult r = REAL(cuModuleUnload)(hmod);
    lms_launch_unload_end(r == CUDA_SUCCESS);
    lms_hook_leave();
    return r;
}

LMS_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    if (!lms_hook_enter() || !REAL(cuLibraryUnload))
        return PASS(cuLibraryUnload, library);
    lms_launch_unload_begin();
    CUresult r = REAL(cuLibraryUnload)(library);
    lms_launch_unload_end(r == CUDA_SUCCESS);
    lms_hook_leave();
    return r;
}
