/*
 * fakecuda.c — a recording libcuda.so.1 whose cuGetProcAddress_v2 answers
 * every name with dlsym(RTLD_DEFAULT, name), as an interposable driver
 * would: in a process with liblmshim.so preloaded, that is lmshim's own
 * hook wherever lmshim exports the name. It defines cuInit,
 * cuDriverGetVersion and cuGetProcAddress_v2 and counts their calls
 * (fake_calls, read by the test program).
 */
#include <dlfcn.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int fake_calls[3];   /* cuInit, cuDriverGetVersion, cuGetProcAddress_v2 */

EXPORT int cuInit(unsigned int flags)
{
    (void)flags;
    __atomic_add_fetch(&fake_calls[0], 1, __ATOMIC_RELAXED);
    return 0;
}

EXPORT int cuDriverGetVersion(int *version)
{
    __atomic_add_fetch(&fake_calls[1], 1, __ATOMIC_RELAXED);
    *version = 13000;
    return 0;
}

EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status)
{
    (void)flags;
    __atomic_add_fetch(&fake_calls[2], 1, __ATOMIC_RELAXED);
    const char *name = symbol;
    if (strcmp(symbol, "cuGetProcAddress") == 0 && version >= 12000)
        name = "cuGetProcAddress_v2";
    *pfn = dlsym(RTLD_DEFAULT, name);
    if (status)
        *status = *pfn ? 0 : 1;   /* CU_GET_PROC_ADDRESS_SUCCESS / _SYMBOL_NOT_FOUND */
    return *pfn ? 0 : 500;        /* CUDA_ERROR_NOT_FOUND */
}
