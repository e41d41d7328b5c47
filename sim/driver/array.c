/*
 * array.c — CUDA arrays of the simulated driver: cuArrayCreate,
 * cuArray3DCreate, their descriptors and cuArrayDestroy.
 *
 * An array is opaque device memory for textures and surfaces. The simulator
 * models what it costs and nothing of its contents: each array charges its
 * device the bytes of its elements (Width x Height x Depth x channels x
 * element size, rounded as a device allocation is), keeps its descriptor,
 * and goes when it is destroyed or its context ends. No copy, texture or
 * surface reaches an array's contents (docs/SIMULATOR.md, "Arrays").
 */
#include "sim.h"
#include "array_bytes.h"

#include <stdlib.h>

#define ARRAY_MAGIC 0x41525259u   /* "ARRY" */

struct CUarray_st {
    uint32_t magic;                     /* ARRAY_MAGIC while live */
    struct CUarray_st *next;            /* list of live arrays (under sim_lock) */
    CUDA_ARRAY3D_DESCRIPTOR desc;       /* as created */
    int device;
    CUcontext ctx;                      /* context it was made in */
    uint64_t charged;                   /* device bytes charged */
};

static struct CUarray_st *arrays;       /* live arrays, newest first (under sim_lock) */

/* Checks a descriptor against the rules of cuArray3DCreate's documentation
 * and computes the element bytes; INVALID_VALUE for a shape CUDA refuses,
 * NOT_SUPPORTED for what the simulator does not model (other formats,
 * sparse and deferred-mapping arrays). */
static CUresult check_desc(const CUDA_ARRAY3D_DESCRIPTOR *d, uint64_t *bytes)
{
    const unsigned known = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |
                           CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEPTH_TEXTURE |
                           CUDA_ARRAY3D_COLOR_ATTACHMENT | CUDA_ARRAY3D_SPARSE |
                           CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE;
    if (d->Flags & ~known)
        return CUDA_ERROR_INVALID_VALUE;
    if (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4)
        return CUDA_ERROR_INVALID_VALUE;
    if (d->Width == 0)
        return CUDA_ERROR_INVALID_VALUE;
    bool layered = d->Flags & CUDA_ARRAY3D_LAYERED, cube = d->Flags & CUDA_ARRAY3D_CUBEMAP;
    if (cube && (d->Width != d->Height || d->Depth == 0 || d->Depth % 6 != 0 ||
                 (!layered && d->Depth != 6)))
        return CUDA_ERROR_INVALID_VALUE;
    if (layered && d->Depth == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!layered && d->Height == 0 && d->Depth != 0)
        return CUDA_ERROR_INVALID_VALUE;   /* 1D arrays have neither */
    if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (lms_array_format_bytes(d->Format) == 0)
        return CUDA_ERROR_NOT_SUPPORTED;   /* the simulator models the classic eight formats */
    uint64_t n = lms_array_desc_bytes(d);
    if (n == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;   /* Width > 0 and a known format: only an overflow gives 0 */
    *bytes = n;
    return CUDA_SUCCESS;
}

/* Creates an array in the current context and charges its device; the
 * array is the driver's until cuArrayDestroy or its context's end. */
static CUresult create(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || !desc)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t bytes = 0;
    r = check_desc(desc, &bytes);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUarray_st *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->magic = ARRAY_MAGIC;
    a->desc = *desc;
    a->device = ctx->device;
    a->ctx = ctx;
    a->charged = bytes > SIZE_MAX ? bytes : sim_round_charge((size_t)bytes);
    pthread_mutex_lock(&sim_lock);
    r = sim_charge(a->device, a->charged);
    if (r == CUDA_SUCCESS) {
        a->next = arrays;
        arrays = a;
    }
    pthread_mutex_unlock(&sim_lock);
    if (r != CUDA_SUCCESS) {
        free(a);
        return r;
    }
    *out = a;
    return CUDA_SUCCESS;
}

/* The live array `h`, unlinked from the list when `unlink` (under sim_lock);
 * NULL when h is no live array. */
static struct CUarray_st *find(CUarray h, bool unlink)
{
    for (struct CUarray_st **p = &arrays; *p; p = &(*p)->next) {
        if (*p != h)
            continue;
        struct CUarray_st *a = *p;
        if (unlink)
            *p = a->next;
        return a;
    }
    return NULL;
}

/* Returns an array's charge and frees its record (under sim_lock, unlinked). */
static void drop(struct CUarray_st *a)
{
    sim_uncharge(a->device, a->charged);
    a->magic = 0;
    free(a);
}

SIM_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    return create(pHandle, pAllocateArray);
}

SIM_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    if (!pAllocateArray)
        return create(pHandle, NULL);
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = pAllocateArray->Width, .Height = pAllocateArray->Height,
                                 .Depth = 0, .Format = pAllocateArray->Format,
                                 .NumChannels = pAllocateArray->NumChannels, .Flags = 0};
    return create(pHandle, &d);
}

SIM_EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    struct CUarray_st *a = find(hArray, true);
    if (a)
        drop(a);
    pthread_mutex_unlock(&sim_lock);
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    struct CUarray_st *a = find(hArray, false);
    if (a)
        *pArrayDescriptor = a->desc;
    pthread_mutex_unlock(&sim_lock);
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    CUDA_ARRAY3D_DESCRIPTOR d;
    CUresult r = cuArray3DGetDescriptor_v2(pArrayDescriptor ? &d : NULL, hArray);
    if (r != CUDA_SUCCESS)
        return r;
    *pArrayDescriptor = (CUDA_ARRAY_DESCRIPTOR){.Width = d.Width, .Height = d.Height,
                                                .Format = d.Format, .NumChannels = d.NumChannels};
    return CUDA_SUCCESS;
}

/* Every array made in ctx goes with it (under sim_lock). */
void sim_arrays_drop_ctx(CUcontext ctx)
{
    struct CUarray_st **p = &arrays;
    while (*p) {
        struct CUarray_st *a = *p;
        if (a->ctx == ctx) {
            *p = a->next;
            drop(a);
        } else {
            p = &a->next;
        }
    }
}
