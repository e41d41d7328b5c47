/*
 * recorder.c — a recording stand-in for libcuda.so.1 (built and used by
 * record_entries.sh, never by the test suite). Every cuGetProcAddress and
 * cuGetProcAddress_v2 query is appended to $REC_LOG as "symbol version
 * flags", and answered with a stub of its own, one per distinct query, so
 * that a caller which compares pointers sees distinct ABI variants. The stubs
 * return CUDA_ERROR_NOT_SUPPORTED; cuInit, cuDriverGetVersion,
 * cuDeviceGetCount (no devices) and cuGetExportTable (not found) answer
 * enough for a runtime to resolve its table and give up cleanly.
 */
#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define STUBS 2048

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct query {
    char name[96];
    int version;
    unsigned long long flags;
} query;

static query seen[STUBS];
static int nseen;

#define S1(i) static CUresult stub_##i(void) { return CUDA_ERROR_NOT_SUPPORTED; }
#define S4(i) S1(i##0) S1(i##1) S1(i##2) S1(i##3)
#define S16(i) S4(i##0) S4(i##1) S4(i##2) S4(i##3)
#define S64(i) S16(i##0) S16(i##1) S16(i##2) S16(i##3)
#define S256(i) S64(i##0) S64(i##1) S64(i##2) S64(i##3)
#define S1024(i) S256(i##0) S256(i##1) S256(i##2) S256(i##3)
S1024(0) S1024(1)
#define P1(i) (void *)stub_##i,
#define P4(i) P1(i##0) P1(i##1) P1(i##2) P1(i##3)
#define P16(i) P4(i##0) P4(i##1) P4(i##2) P4(i##3)
#define P64(i) P16(i##0) P16(i##1) P16(i##2) P16(i##3)
#define P256(i) P64(i##0) P64(i##1) P64(i##2) P64(i##3)
#define P1024(i) P256(i##0) P256(i##1) P256(i##2) P256(i##3)
static void *const stubs[STUBS] = {P1024(0) P1024(1)};

EXPORT CUresult cuInit(unsigned flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    const char *d = getenv("REC_DEVICES");   /* 1: claim a device, to go further */
    *n = d && *d == '1' ? 1 : 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    (void)id;
    if (table)
        *table = NULL;
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status);
EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);

/* Logs one query and returns its stub (the same one for a repeated query). */
static void *record(const char *symbol, int version, unsigned long long flags)
{
    pthread_mutex_lock(&lock);
    int i;
    for (i = 0; i < nseen; i++)
        if (seen[i].version == version && seen[i].flags == flags && strcmp(seen[i].name, symbol) == 0)
            break;
    if (i == nseen && nseen < STUBS) {
        snprintf(seen[i].name, sizeof seen[i].name, "%s", symbol);
        seen[i].version = version;
        seen[i].flags = flags;
        nseen++;
        const char *path = getenv("REC_LOG");
        int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT, 0644) : -1;
        if (fd >= 0) {
            char line[160];
            int n = snprintf(line, sizeof line, "%s %d %llu\n", symbol, version, flags);
            (void)!write(fd, line, (size_t)n);
            close(fd);
        }
    }
    void *p = i < STUBS ? stubs[i] : NULL;
    pthread_mutex_unlock(&lock);
    /* The entries the runtime must call to go on are the real ones here. */
    if (!strcmp(symbol, "cuInit"))
        p = (void *)cuInit;
    else if (!strcmp(symbol, "cuDriverGetVersion"))
        p = (void *)cuDriverGetVersion;
    else if (!strcmp(symbol, "cuDeviceGetCount"))
        p = (void *)cuDeviceGetCount;
    else if (!strcmp(symbol, "cuGetExportTable"))
        p = (void *)cuGetExportTable;
    else if (!strcmp(symbol, "cuGetProcAddress"))
        p = version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
    return p;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = record(symbol, version, flags);
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
