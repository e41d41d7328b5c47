/*
 * partialcuda.c — a libcuda.so.1 that lacks some entry points lmshim hooks
 * (cuMemAllocManaged among them): enough of a driver for lmshim to start
 * and answer cuMemGetInfo, nothing more. Its cuGetProcAddress_v2 answers
 * from its own table only, so a hook whose real function is missing sees
 * NULL, as it would with an old or stripped-down driver.
 */
#include <stddef.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define GiB (1ull << 30)

typedef int CUresult_;

static CUresult_ init(unsigned flags) { (void)flags; return 0; }
static CUresult_ version(int *v) { *v = 13000; return 0; }
static CUresult_ ctx_device(int *d) { *d = 0; return 0; }
static CUresult_ count(int *n) { *n = 1; return 0; }
static CUresult_ total(size_t *bytes, int dev) { (void)dev; *bytes = 4 * GiB; return 0; }
static CUresult_ info(size_t *free_b, size_t *total_b) { *free_b = *total_b = 4 * GiB; return 0; }

EXPORT CUresult_ cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, unsigned long long flags,
                                      int *status);

/* The driver's whole table: base name and function. */
static const struct { const char *name; void *fn; } table[] = {
    {"cuInit", (void *)init}, {"cuDriverGetVersion", (void *)version},
    {"cuCtxGetDevice", (void *)ctx_device}, {"cuDeviceGetCount", (void *)count},
    {"cuDeviceTotalMem", (void *)total}, {"cuMemGetInfo", (void *)info},
    {"cuGetProcAddress", (void *)cuGetProcAddress_v2},
};

EXPORT CUresult_ cuInit(unsigned flags) { return init(flags); }

EXPORT CUresult_ cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, unsigned long long flags,
                                      int *status)
{
    (void)ver, (void)flags;
    *pfn = NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, symbol) == 0)
            *pfn = table[i].fn;
    if (status)
        *status = *pfn ? 0 : 1;   /* CU_GET_PROC_ADDRESS_SUCCESS / _SYMBOL_NOT_FOUND */
    return 0;
}
