/*
 * lookup.c — the two ways a program finds driver functions without linking
 * them: cuGetProcAddress(_v2), answered by the real one with each hooked
 * variant's real pointer swapped for its hook; and dlsym on the driver's
 * handle, answered with the hook of a hooked name.
 */
#include <string.h>

#include "capture.h"
#include "dlsym_override.h"
#include "elf_symbol.h"
#include "hooks.h"

/* A capture's begin handed out as the driver's own pointer (a variant
 * without a hook) would begin captures lmshim does not count: from then on
 * every launch asks the driver whether its stream captures. */
static void check_begin(const char *symbol, void *answer, void *hook)
{
    if (answer && answer == hook && symbol && strncmp(symbol, "cuStreamBeginCapture", 20) == 0 &&
        !lms_driver_is_own(answer))
        lms_capture_untracked();
}

LMS_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    lms_hooks_init();
    if (!REAL(cuGetProcAddress_v2))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = REAL(cuGetProcAddress_v2)(symbol, pfn, cudaVersion, flags, status);
    if (r == CUDA_SUCCESS && pfn && lms_active) {
        void *real = *pfn;
        *pfn = lms_hook_for_real(real);
        check_begin(symbol, real, *pfn);
    }
    return r;
}

LMS_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    lms_hooks_init();
    if (!REAL(cuGetProcAddress))
        return REAL(cuGetProcAddress_v2) ? REAL(cuGetProcAddress_v2)(symbol, pfn, cudaVersion, flags, NULL)
                                         : CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = REAL(cuGetProcAddress)(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS && pfn && lms_active) {
        void *real = *pfn;
        *pfn = lms_hook_for_real(real);
        check_begin(symbol, real, *pfn);
    }
    return r;
}

/* dlsym(handle, "cuX") for a hooked name: the hook, if the real lookup
 * finds the name there at all. Everything else: glibc answers. Sanitizer
 * runtimes look names up before their shadow memory exists, so the test
 * that lets their lookups through is not instrumented. */
LMS_UNINSTRUMENTED static bool maybe_hooked(const char *name)
{
    return name && name[0] == 'c' && name[1] == 'u';
}

bool lms_dlsym_filter(void *handle, const char *name, lms_dlsym_fn real, void **answer)
{
    if (!maybe_hooked(name) || lms_hook_initializing)
        return false;
    void *hook = lms_hook_by_name(name);
    if (!hook) {
        if (strncmp(name, "cuStreamBeginCapture", 20) == 0 && real(handle, name))
            lms_capture_untracked();   /* a begin variant without a hook */
        return false;
    }
    void *found = real(handle, name);
    lms_hooks_init();
    *answer = found && lms_active ? hook : found;
    return true;
}
