/*
 * procaddr.c — cuGetProcAddress (11.3 ABI) and cuGetProcAddress_v2 (12.0
 * ABI): base name + CUDA version + flags -> the matching ABI variant, as the
 * CUDA documentation specifies. cuGetExportTable answers "not found": the
 * simulator has no private tables.
 */
#include "sim.h"

#include <string.h>

/* Declarations of the simulator's own entry points listed in procs.def. */
CUresult simgpuFunctionForHost(CUfunction *out, const void *fn);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g);
CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *status);
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                                        CUgraph *g, const CUgraphNode **deps,
                                        const CUgraphEdgeData **edges, size_t *n);
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *out, CUgraph g,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *p);
CUresult cuGraphUpload_ptsz(CUgraphExec e, CUstream s);
CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s);

typedef struct proc {
    const char *name;   /* base name */
    int version;        /* CUDA version that introduced this ABI variant */
    void *fn;
    bool per_thread;    /* a _ptsz/_ptds variant */
} proc;

static const proc procs[] = {
#define SIM_PROC(name, version, symbol, ptds) {#name, version, (void *)&symbol, ptds},
#include "procs.def"
#undef SIM_PROC
};

/* Finds the variant of `name` for `version`; per_thread prefers the
 * per-thread variants and falls back to the legacy ones. *status gets a
 * CU_GET_PROC_ADDRESS_* value. Returns NULL when nothing fits. */
void *sim_proc_lookup(const char *name, int version, bool per_thread, int *status)
{
    const proc *best[2] = {NULL, NULL};   /* [0] legacy, [1] per-thread */
    bool known = false;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        const proc *p = &procs[i];
        if (strcmp(p->name, name) != 0 || p->version > sim_driver_version())
            continue;   /* a driver older than the variant does not know it */
        known = true;
        if (p->version > version)
            continue;
        const proc **slot = &best[p->per_thread];
        if (!*slot || p->version > (*slot)->version)
            *slot = p;
    }
    const proc *hit = per_thread && best[1] ? best[1] : best[0];
    *status = hit ? CU_GET_PROC_ADDRESS_SUCCESS
            : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                    : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return hit ? hit->fn : NULL;
}

SIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn || cudaVersion <= 0 ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        return CUDA_ERROR_INVALID_VALUE;
    if (cudaVersion > sim_driver_version())
        return CUDA_ERROR_INVALID_VALUE;
    int st;
    *pfn = sim_proc_lookup(symbol, cudaVersion,
                           (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, &st);
    if (status)
        *status = (CUdriverProcAddressQueryResult)st;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

SIM_EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    *table = NULL;
    return CUDA_ERROR_NOT_FOUND;
}
