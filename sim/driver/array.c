/*
 * array.c — CUDA arrays of the simulated driver: cuArrayCreate,
 * cuArray3DCreate, their descriptors and cuArrayDestroy; mipmapped arrays
 * (cuMipmappedArrayCreate, cuMipmappedArrayGetLevel, cuMipmappedArrayDestroy).
 *
 * An array is opaque device memory for textures and surfaces. The simulator
 * models what it costs and nothing of its contents: each array charges its
 * device the bytes of its elements (Width x Height x Depth x channels x
 * element size, rounded as a device allocation is), keeps its descriptor,
 * and goes when it is destroyed or its context ends. A mipmapped array
 * charges the bytes of all its levels, rounded once, and owns one array per
 * level (cuMipmappedArrayGetLevel hands them out; they go with it and
 * cuArrayDestroy refuses them). Sparse and deferred-mapping arrays take no
 * memory (it would come from cuMemCreate, mapped with cuMemMapArrayAsync,
 * which is not modeled). No copy, texture or surface reaches an array's
 * contents (docs/SIMULATOR.md, "Memory").
 */
#include "sim.h"
#include "array_bytes.h"

#include <stdlib.h>

#define ARRAY_MAGIC 0x41525259u    /* "ARRY" */
#define LEVEL_MAGIC 0x4c45564cu    /* "LEVL": a level of a mipmapped array */
#define MIPMAP_MAGIC 0x4d49504du   /* "MIPM" */

struct CUarray_st {
    uint32_t magic;                     /* ARRAY_MAGIC while live (LEVEL_MAGIC: a level) */
    struct CUarray_st *next;            /* list of live arrays (under sim_lock; not levels) */
    CUDA_ARRAY3D_DESCRIPTOR desc;       /* as created (a level: its own extents) */
    int device;
    CUcontext ctx;                      /* context it was made in */
    uint64_t charged;                   /* device bytes charged (a level: 0, its owner's) */
};

struct CUmipmappedArray_st {
    uint32_t magic;                     /* MIPMAP_MAGIC while live */
    struct CUmipmappedArray_st *next;   /* list of live mipmapped arrays (under sim_lock) */
    CUDA_ARRAY3D_DESCRIPTOR desc;       /* as created (level 0) */
    int device;
    CUcontext ctx;                      /* context it was made in */
    uint64_t charged;                   /* device bytes charged, for every level */
    unsigned levels;                    /* levels made (clamped as documented) */
    struct CUarray_st level[];          /* level l's array, owned here */
};

static struct CUarray_st *arrays;       /* live arrays, newest first (under sim_lock) */
static struct CUmipmappedArray_st *mipmaps;   /* live mipmapped arrays, newest first (under sim_lock) */

/* Checks a descriptor against the rules of cuArray3DCreate's (and
 * cuMipmappedArrayCreate's) documentation and computes the bytes of the
 * elements, of every level when `levels` is non-zero (mipmapped);
 * INVALID_VALUE for a shape CUDA refuses, NOT_SUPPORTED for formats the
 * simulator does not model. Sparse and deferred-mapping arrays take no
 * bytes. */
static CUresult check_desc(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels, uint64_t *bytes)
{
    if (!lms_array_desc_valid(d))
        return CUDA_ERROR_INVALID_VALUE;   /* array_bytes.h: the rules the engine checks too */
    if (lms_array_format_bytes(d->Format) == 0)
        return CUDA_ERROR_NOT_SUPPORTED;   /* the simulator models the classic eight formats */
    uint64_t n = levels ? lms_mipmap_bytes(d, levels) : lms_array_desc_bytes(d);
    if (n == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;   /* Width > 0 and a known format: only an overflow gives 0 */
    *bytes = d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING) ? 0 : n;
    return CUDA_SUCCESS;
}

/* Device bytes to charge for `bytes` of elements: rounded as cuMemAlloc
 * rounds (0 stays 0: nothing is taken). */
static uint64_t charge_of(uint64_t bytes)
{
    if (bytes == 0)
        return 0;
    return bytes > SIZE_MAX ? bytes : sim_round_charge((size_t)bytes);
}

/* The checks of an array's or a mipmapped array's creation, in CUDA's
 * order: a current context (into *ctx), the handle and descriptor
 * pointers, then the descriptor (check_desc, `levels` as there); *charge
 * gets the device bytes to charge. Nothing is allocated. */
static CUresult create_checks(const void *out, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels,
                              CUcontext *ctx, uint64_t *charge)
{
    CUresult r = sim_current_ctx(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || !desc)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t bytes = 0;
    r = check_desc(desc, levels, &bytes);
    *charge = charge_of(bytes);
    return r;
}

/* Creates an array in the current context and charges its device; the
 * array is the driver's until cuArrayDestroy or its context's end. */
static CUresult create(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    CUcontext ctx;
    uint64_t charge;
    CUresult r = create_checks(out, desc, 0, &ctx, &charge);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUarray_st *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->magic = ARRAY_MAGIC;
    a->desc = *desc;
    a->device = ctx->device;
    a->ctx = ctx;
    a->charged = charge;
    pthread_mutex_lock(&sim_lock);
    r = a->charged ? sim_charge(a->device, a->charged) : CUDA_SUCCESS;
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
    if (a->charged)
        sim_uncharge(a->device, a->charged);
    a->magic = 0;
    free(a);
}

/* The level array `h` of a live mipmapped array, or NULL (under sim_lock). */
static const struct CUarray_st *find_level(CUarray h)
{
    uintptr_t p = (uintptr_t)h;
    for (const struct CUmipmappedArray_st *m = mipmaps; m; m = m->next)
        if (p >= (uintptr_t)&m->level[0] && p < (uintptr_t)&m->level[m->levels])
            return (p - (uintptr_t)&m->level[0]) % sizeof m->level[0] == 0 ? h : NULL;
    return NULL;
}

/* Returns a mipmapped array's charge and frees it with its levels (under
 * sim_lock, unlinked). */
static void drop_mipmap(struct CUmipmappedArray_st *m)
{
    if (m->charged)
        sim_uncharge(m->device, m->charged);
    m->magic = 0;
    for (unsigned l = 0; l < m->levels; l++)
        m->level[l].magic = 0;
    free(m);
}

/* Creates a mipmapped array of the clamped number of levels in the current
 * context and charges its device every level's bytes; it and its level
 * arrays are the driver's until cuMipmappedArrayDestroy or the context's end. */
SIM_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                           unsigned int numMipmapLevels)
{
    const CUDA_ARRAY3D_DESCRIPTOR *d = pMipmappedArrayDesc;
    CUcontext ctx;
    uint64_t charge;
    CUresult r = create_checks(pHandle, d, numMipmapLevels ? numMipmapLevels : 1, &ctx, &charge);
    if (r != CUDA_SUCCESS)
        return r;
    unsigned levels = lms_mipmap_levels(d, numMipmapLevels);   /* clamped, as documented */
    struct CUmipmappedArray_st *m = calloc(1, sizeof *m + levels * sizeof m->level[0]);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->magic = MIPMAP_MAGIC;
    m->desc = *d;
    m->device = ctx->device;
    m->ctx = ctx;
    m->levels = levels;
    m->charged = charge;
    for (unsigned l = 0; l < levels; l++)
        m->level[l] = (struct CUarray_st){.magic = LEVEL_MAGIC, .desc = lms_mipmap_level(d, l),
                                          .device = m->device, .ctx = ctx};
    pthread_mutex_lock(&sim_lock);
    r = m->charged ? sim_charge(m->device, m->charged) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        m->next = mipmaps;
        mipmaps = m;
    }
    pthread_mutex_unlock(&sim_lock);
    if (r != CUDA_SUCCESS) {
        free(m);
        return r;
    }
    *pHandle = m;
    return CUDA_SUCCESS;
}

/* The live mipmapped array `h`, unlinked from the list when `unlink`
 * (under sim_lock); NULL when h is none. */
static struct CUmipmappedArray_st *find_mipmap(CUmipmappedArray h, bool unlink)
{
    for (struct CUmipmappedArray_st **p = &mipmaps; *p; p = &(*p)->next) {
        if (*p != h)
            continue;
        struct CUmipmappedArray_st *m = *p;
        if (unlink)
            *p = m->next;
        return m;
    }
    return NULL;
}

/* Answers level `level`'s array, owned by the mipmapped array (the same
 * handle each time). */
SIM_EXPORT CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray,
                                             unsigned int level)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    struct CUmipmappedArray_st *m = find_mipmap(hMipmappedArray, false);
    if (!m)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (!pLevelArray || level >= m->levels)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        *pLevelArray = &m->level[level];
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* Destroys a mipmapped array with its levels and returns its charge. */
SIM_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    struct CUmipmappedArray_st *m = find_mipmap(hMipmappedArray, true);
    if (m)
        drop_mipmap(m);
    pthread_mutex_unlock(&sim_lock);
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
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
    const struct CUarray_st *a = find(hArray, false);
    if (!a)
        a = find_level(hArray);
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

/* Every array and mipmapped array made in ctx goes with it (under sim_lock). */
void sim_arrays_drop_ctx(CUcontext ctx)
{
    struct CUmipmappedArray_st **q = &mipmaps;
    while (*q) {
        struct CUmipmappedArray_st *m = *q;
        if (m->ctx == ctx) {
            *q = m->next;
            drop_mipmap(m);
        } else {
            q = &m->next;
        }
    }
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
