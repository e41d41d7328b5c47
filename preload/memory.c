/*
 * memory.c — the allocation, free, info and pointer-query hooks. Each one
 * guards, translates its arguments into a request, calls the engine
 * (src/engine/place.c) and returns the CUresult; no policy lives here.
 */
#include "arrays.h"
#include "chunks.h"
#include "graph.h"
#include "hooks.h"
#include "ipc.h"
#include "place.h"
#include "pools.h"
#include "stack.h"
#include "vmm.h"

/* The stream a stream-ordered call really uses: NULL in a _ptsz variant is
 * the calling thread's per-thread default stream, which the engine must
 * name as such (it synchronizes and queries through the plain variants). */
static CUstream effective(CUstream s, bool ptds)
{
    return !s && ptds ? CU_STREAM_PER_THREAD : s;
}

/* ---- device allocations ------------------------------------------------- */

typedef struct alloc_args {
    void *real;              /* the real entry point of the calling hook */
    size_t size;
    CUstream stream;
    CUmemoryPool pool;
    size_t *pitch;           /* pitched: where the pitch goes */
    size_t width, height;
    unsigned elem;
} alloc_args;

static CUresult native_alloc(void *ctx, CUdeviceptr *out)
{
    alloc_args *a = ctx;
    return ((__typeof__(&cuMemAlloc_v2))a->real)(out, a->size);
}

static CUresult native_alloc_async(void *ctx, CUdeviceptr *out)
{
    alloc_args *a = ctx;
    return ((__typeof__(&cuMemAllocAsync))a->real)(out, a->size, a->stream);
}

static CUresult native_alloc_pool(void *ctx, CUdeviceptr *out)
{
    alloc_args *a = ctx;
    return ((__typeof__(&cuMemAllocFromPoolAsync))a->real)(out, a->size, a->pool, a->stream);
}

static CUresult native_alloc_pitch(void *ctx, CUdeviceptr *out)
{
    alloc_args *a = ctx;
    return ((__typeof__(&cuMemAllocPitch_v2))a->real)(out, a->pitch, a->width, a->height, a->elem);
}

/* Places one device request made through a hook whose real entry is `real`. */
static CUresult place(CUdeviceptr *out, int device, bool async, lms_native_alloc native,
                      alloc_args *args, bool device_only)
{
    lms_alloc_request r = {.size = args->size, .device = device, .stream = args->stream,
                           .async = async, .native = native, .native_ctx = args,
                           .device_only = device_only || lms_pool_exportable(args->pool),
                           .site = lms_stack_site(0)};
    return lms_place_alloc(&r, out);
}

LMS_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (!lms_hook_enter())
        return PASS(cuMemAlloc_v2, dptr, bytesize);
    CUresult r;
    alloc_args a = {.real = (void *)REAL(cuMemAlloc_v2), .size = bytesize};
    if (!a.real)
        r = CUDA_ERROR_NOT_SUPPORTED;
    else if (!dptr || bytesize == 0)
        r = REAL(cuMemAlloc_v2)(dptr, bytesize);           /* CUDA answers bad arguments */
    else
        r = place(dptr, lms_driver_current_device(), false, native_alloc, &a, false);
    lms_hook_leave();
    return r;
}

LMS_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t width, size_t height,
                                       unsigned int elem)
{
    if (!lms_hook_enter())
        return PASS(cuMemAllocPitch_v2, dptr, pPitch, width, height, elem);
    CUresult r;
    alloc_args a = {.real = (void *)REAL(cuMemAllocPitch_v2), .pitch = pPitch, .width = width,
                    .height = height, .elem = elem};
    if (!a.real)
        r = CUDA_ERROR_NOT_SUPPORTED;
    else if (!dptr || !pPitch || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16) ||
             width > SIZE_MAX - 511 || (width + 511) / 512 * 512 > SIZE_MAX / height)
        r = REAL(cuMemAllocPitch_v2)(dptr, pPitch, width, height, elem);   /* or no size_t holds it */
    else {
        *pPitch = (width + 511) / 512 * 512;       /* the layout if it leaves the device */
        a.size = *pPitch * height;
        r = place(dptr, lms_driver_current_device(), false, native_alloc_pitch, &a, false);
    }
    lms_hook_leave();
    return r;
}

/* Shared body of the stream-ordered allocation hooks. The memory is where
 * the pool is: the current pool of the stream's device, or the given pool's
 * location (which need not be the stream's device); a pool of host memory
 * is not device memory and passes through. */
static CUresult alloc_async(void *real, CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                            CUstream stream)
{
    alloc_args a = {.real = real, .size = size, .stream = stream, .pool = pool};
    if (!dptr || size == 0)
        return pool ? native_alloc_pool(&a, dptr) : native_alloc_async(&a, dptr);
    int device = pool ? lms_pool_device(pool) : LMS_POOL_UNKNOWN;
    if (device == LMS_POOL_NOT_DEVICE)
        return native_alloc_pool(&a, dptr);
    if (device == LMS_POOL_UNKNOWN)
        device = lms_driver_stream_device(stream);   /* the best guess left */
    /* No pool given: the device's current pool, which may be exportable. */
    bool exportable = !pool && lms_pool_current_exportable(device);
    return place(dptr, device, true, pool ? native_alloc_pool : native_alloc_async, &a, exportable);
}

#define ASYNC_ALLOC_HOOK(sym, ptds)                                                    \
    LMS_EXPORT CUresult sym(CUdeviceptr *dptr, size_t size, CUstream stream)          \
    {                                                                                 \
        if (!LMS_ENTER(sym))                                          \
            return PASS(sym, dptr, size, stream);                                     \
        CUresult r = alloc_async((void *)REAL(sym), dptr, size, NULL,                 \
                                 effective(stream, ptds));                            \
        lms_hook_leave();                                                             \
        return r;                                                                     \
    }

#define POOL_ALLOC_HOOK(sym, ptds)                                                             \
    LMS_EXPORT CUresult sym(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream) \
    {                                                                                          \
        if (!LMS_ENTER(sym))                                                   \
            return PASS(sym, dptr, size, pool, stream);                                        \
        CUresult r = pool ? alloc_async((void *)REAL(sym), dptr, size, pool,                   \
                                        effective(stream, ptds))                               \
                          : REAL(sym)(dptr, size, pool, stream);                               \
        lms_hook_leave();                                                                      \
        return r;                                                                              \
    }

ASYNC_ALLOC_HOOK(cuMemAllocAsync, false)
ASYNC_ALLOC_HOOK(cuMemAllocAsync_ptsz, true)
POOL_ALLOC_HOOK(cuMemAllocFromPoolAsync, false)
POOL_ALLOC_HOOK(cuMemAllocFromPoolAsync_ptsz, true)

/* Pools: their location is known only at creation. */
LMS_HOOK_THEN(cuMemPoolCreate, (CUmemoryPool *pool, const CUmemPoolProps *props), (pool, props),
              lms_pool_created(*pool, props))

LMS_HOOK_THEN(cuMemPoolDestroy, (CUmemoryPool pool), (pool), lms_pool_destroyed(pool))

/* ---- frees --------------------------------------------------------------- */

LMS_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    if (!LMS_ENTER(cuMemFree_v2))
        return PASS(cuMemFree_v2, dptr);
    lms_free_op op = {.sync_free = REAL(cuMemFree_v2)};
    CUresult r = lms_place_free(dptr, &op);
    lms_hook_leave();
    return r;
}

#define ASYNC_FREE_HOOK(sym, ptds)                                               \
    LMS_EXPORT CUresult sym(CUdeviceptr dptr, CUstream stream)                   \
    {                                                                            \
        if (!LMS_ENTER2(sym, cuMemFree_v2))              \
            return PASS(sym, dptr, stream);                                      \
        lms_free_op op = {.sync_free = REAL(cuMemFree_v2), .async_free = REAL(sym), \
                          .stream = effective(stream, ptds)};                    \
        CUresult r = lms_place_free(dptr, &op);                                  \
        lms_hook_leave();                                                        \
        return r;                                                                \
    }

ASYNC_FREE_HOOK(cuMemFreeAsync, false)
ASYNC_FREE_HOOK(cuMemFreeAsync_ptsz, true)

/* ---- the 32-bit ABI: budget and accounting only (no fallback fits in a
 *      32-bit pointer) ------------------------------------------------------ */

static CUresult native_alloc_v1(void *ctx, CUdeviceptr *out)
{
    alloc_args *a = ctx;
    CUdeviceptr_v1 p = 0;
    CUresult r = REAL(cuMemAlloc)(&p, (unsigned int)a->size);
    *out = p;
    return r;
}

static CUresult free_v1(CUdeviceptr p) { return REAL(cuMemFree)((CUdeviceptr_v1)p); }

LMS_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    if (!LMS_ENTER(cuMemAlloc))
        return PASS(cuMemAlloc, dptr, bytesize);
    CUresult r;
    if (!dptr || bytesize == 0) {
        r = REAL(cuMemAlloc)(dptr, bytesize);
    } else {
        alloc_args a = {.size = bytesize};
        lms_alloc_request req = {.size = bytesize, .device = lms_driver_current_device(),
                                 .device_only = true, .native = native_alloc_v1, .native_ctx = &a,
                                 .site = -1};
        CUdeviceptr p = 0;
        r = lms_place_alloc(&req, &p);
        if (r == CUDA_SUCCESS)
            *dptr = (CUdeviceptr_v1)p;
    }
    lms_hook_leave();
    return r;
}

LMS_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    if (!LMS_ENTER(cuMemFree))
        return PASS(cuMemFree, dptr);
    lms_free_op op = {.sync_free = free_v1};
    CUresult r = lms_place_free(dptr, &op);
    lms_hook_leave();
    return r;
}

/* ---- memory the program asks for in other kinds ------------------------- */

LMS_HOOK_THEN(cuMemAllocManaged, (CUdeviceptr *dptr, size_t bytesize, unsigned int flags),
              (dptr, bytesize, flags),
              lms_place_note_program(*dptr, bytesize, lms_driver_current_device(), LMS_PLACE_MANAGED))

LMS_HOOK_THEN(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int flags), (pp, bytesize, flags),
              lms_place_note_program((uintptr_t)*pp, bytesize, lms_driver_current_device(), LMS_PLACE_PINNED))

LMS_HOOK_THEN(cuMemAllocHost_v2, (void **pp, size_t bytesize), (pp, bytesize),
              lms_place_note_program((uintptr_t)*pp, bytesize, lms_driver_current_device(), LMS_PLACE_PINNED))

static CUresult free_host(CUdeviceptr p) { return REAL(cuMemFreeHost)((void *)(uintptr_t)p); }

LMS_EXPORT CUresult cuMemFreeHost(void *p)
{
    if (!LMS_ENTER(cuMemFreeHost))
        return PASS(cuMemFreeHost, p);
    lms_free_op op = {.sync_free = free_host, .host_free = true};
    CUresult r = lms_place_free((uintptr_t)p, &op);
    lms_hook_leave();
    return r;
}

/* ---- physical memory of the VMM API -------------------------------------- */

/* A creation made before its charge (arguments lms_vmm_args_ok does not
 * pass): charged now; one LMS_ON_OOM=fail refuses is released again and
 * answers out-of-memory, or stays charged when the release fails. */
static CUresult create_made(CUresult r, CUmemGenericAllocationHandle *handle, size_t size, int device)
{
    uint64_t charged = 0;
    if (r != CUDA_SUCCESS)
        return r;
    if (lms_vmm_charge(device, size, &charged) != CUDA_SUCCESS) {
        if (REAL(cuMemRelease) && REAL(cuMemRelease)(*handle) == CUDA_SUCCESS)
            return CUDA_ERROR_OUT_OF_MEMORY;
        if (lms_vmm_force(device, size))   /* it stays: so does its charge */
            charged = size;
    }
    if (charged)
        lms_vmm_created(*handle, device, size);
    return r;
}

LMS_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (!LMS_ENTER(cuMemCreate))
        return PASS(cuMemCreate, handle, size, prop, flags);
    /* The device comes from the properties, and only from a device location.
     * Arguments the driver's own answers pass are charged before the
     * driver's call, so that the device never holds memory the budget
     * refuses (an allocation the budget let in could find it taken); one
     * LMS_ON_OOM=fail refuses is answered without the driver. Any other
     * arguments go to the driver first, so that they get CUDA's error
     * whatever the size. */
    int device = prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
    CUresult r;
    uint64_t charged = 0;
    if (device < 0) {
        r = REAL(cuMemCreate)(handle, size, prop, flags);
    } else if (!lms_vmm_args_ok(handle, size, prop, flags)) {
        r = create_made(REAL(cuMemCreate)(handle, size, prop, flags), handle, size, device);
    } else if (lms_vmm_charge(device, size, &charged) != CUDA_SUCCESS) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        r = REAL(cuMemCreate)(handle, size, prop, flags);
        if (r == CUDA_SUCCESS && charged)
            lms_vmm_created(*handle, device, size);
        else if (r != CUDA_SUCCESS)
            lms_vmm_uncharge(device, charged);
    }
    lms_hook_leave();
    return r;
}

LMS_HOOK_BY(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle),
            lms_vmm_release(handle, REAL(cuMemRelease)))

LMS_HOOK_BY(cuMemMap,
            (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
             unsigned long long flags),
            (ptr, size, offset, handle, flags),
            lms_vmm_map(ptr, size, offset, handle, flags, REAL(cuMemMap)))

LMS_HOOK_BY(cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size),
            lms_vmm_unmap(ptr, size, REAL(cuMemUnmap)))

/* ---- CUDA arrays --------------------------------------------------------- */

/* The record and the destroy of one kind of array, over the caller's
 * handle slot (a CUarray * or a CUmipmappedArray *). */
typedef CUresult (*array_record_fn)(void *slot, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels,
                                    lms_array_room room);
typedef CUresult (*array_destroy_fn)(void *slot);

/* The driver answers first (bad descriptors get CUDA's error; the room
 * held for the array goes back); an array that LMS_ON_OOM=fail refuses is
 * destroyed again. `r` is the driver's answer, `slot` the handle it wrote. */
static CUresult array_made(CUresult r, void *slot, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels,
                           lms_array_room room, array_record_fn record, array_destroy_fn destroy)
{
    if (r != CUDA_SUCCESS)
        lms_arrays_room_release(room);
    else if (record(slot, desc, levels, room) != CUDA_SUCCESS && destroy(slot) == CUDA_SUCCESS)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    return r;
}

/* Records the CUarray in *slot (levels unused). */
static CUresult record_array(void *slot, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels, lms_array_room room)
{
    (void)levels;
    return lms_array_created(*(CUarray *)slot, desc, room);
}

/* Destroys the CUarray in *slot with the real call. */
static CUresult destroy_array(void *slot)
{
    return REAL(cuArrayDestroy) ? REAL(cuArrayDestroy)(*(CUarray *)slot) : CUDA_ERROR_NOT_INITIALIZED;
}

/* Records the CUmipmappedArray in *slot, of `levels` levels. */
static CUresult record_mipmapped(void *slot, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels,
                                 lms_array_room room)
{
    return lms_mipmapped_created(*(CUmipmappedArray *)slot, desc, levels, room);
}

/* Destroys the CUmipmappedArray in *slot with the real call. */
static CUresult destroy_mipmapped(void *slot)
{
    return REAL(cuMipmappedArrayDestroy) ? REAL(cuMipmappedArrayDestroy)(*(CUmipmappedArray *)slot)
                                         : CUDA_ERROR_NOT_INITIALIZED;
}

LMS_EXPORT CUresult cuArrayCreate_v2(CUarray *handle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    if (!LMS_ENTER(cuArrayCreate_v2))
        return PASS(cuArrayCreate_v2, handle, desc);
    CUDA_ARRAY3D_DESCRIPTOR d = {0};
    if (desc)
        d = (CUDA_ARRAY3D_DESCRIPTOR){.Width = desc->Width, .Height = desc->Height,
                                      .Format = desc->Format, .NumChannels = desc->NumChannels};
    lms_array_room room = lms_arrays_make_room(desc ? &d : NULL, 0, false);
    CUresult r = array_made(REAL(cuArrayCreate_v2)(handle, desc), handle, &d, 0, room, record_array, destroy_array);
    lms_hook_leave();
    return r;
}

LMS_EXPORT CUresult cuArray3DCreate_v2(CUarray *handle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    if (!LMS_ENTER(cuArray3DCreate_v2))
        return PASS(cuArray3DCreate_v2, handle, desc);
    lms_array_room room = lms_arrays_make_room(desc, 0, false);
    CUresult r = array_made(REAL(cuArray3DCreate_v2)(handle, desc), handle, desc, 0, room, record_array,
                            destroy_array);
    lms_hook_leave();
    return r;
}

LMS_HOOK_BY(cuArrayDestroy, (CUarray handle), (handle), lms_array_destroy(handle, REAL(cuArrayDestroy)))

/* A mipmapped array is charged every level's bytes; one that
 * LMS_ON_OOM=fail refuses is destroyed again. */
LMS_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *handle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                           unsigned int levels)
{
    if (!LMS_ENTER(cuMipmappedArrayCreate))
        return PASS(cuMipmappedArrayCreate, handle, desc, levels);
    lms_array_room room = lms_arrays_make_room(desc, levels, true);
    CUresult r = array_made(REAL(cuMipmappedArrayCreate)(handle, desc, levels), handle, desc, levels, room,
                            record_mipmapped, destroy_mipmapped);
    lms_hook_leave();
    return r;
}

/* The charge of every level goes back once the driver destroyed it. */
LMS_HOOK_BY(cuMipmappedArrayDestroy, (CUmipmappedArray handle), (handle),
            lms_mipmapped_destroy(handle, REAL(cuMipmappedArrayDestroy)))

/* ---- memory info ---------------------------------------------------------- */

LMS_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    if (!LMS_ENTER(cuMemGetInfo_v2))
        return PASS(cuMemGetInfo_v2, free_bytes, total);
    lms_graph_mem_sync(lms_driver_current_device(), false);   /* the graph pool, as it is now */
    CUresult r = lms_place_mem_info(free_bytes, total, REAL(cuMemGetInfo_v2));
    lms_hook_leave();
    return r;
}

LMS_EXPORT CUresult cuMemGetInfo(unsigned int *free_bytes, unsigned int *total)
{
    if (!LMS_ENTER(cuMemGetInfo_v2))
        return PASS(cuMemGetInfo, free_bytes, total);
    lms_graph_mem_sync(lms_driver_current_device(), false);
    size_t f, t;
    CUresult r = free_bytes && total ? lms_place_mem_info(&f, &t, REAL(cuMemGetInfo_v2))
                                     : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        *free_bytes = f > 0xffffffffu ? 0xffffffffu : (unsigned int)f;
        *total = t > 0xffffffffu ? 0xffffffffu : (unsigned int)t;
    }
    lms_hook_leave();
    return r;
}

/* The device's memory as this process sees it: its budget. */
LMS_HOOK_BY(cuDeviceTotalMem_v2, (size_t *bytes, CUdevice dev), (bytes, dev),
            lms_place_total_mem(bytes, dev, REAL(cuDeviceTotalMem_v2)))

LMS_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    if (!LMS_ENTER(cuDeviceTotalMem_v2))
        return PASS(cuDeviceTotalMem, bytes, dev);
    size_t b = 0;
    CUresult r = bytes ? lms_place_total_mem(&b, dev, REAL(cuDeviceTotalMem_v2)) : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        *bytes = b > 0xffffffffu ? 0xffffffffu : (unsigned int)b;
    lms_hook_leave();
    return r;
}

/* ---- pointer queries: the driver tells the truth about every placement
 *      (a managed chunk is managed memory); hooked so that every path to
 *      them is seen and measured ------------------------------------------- */

LMS_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr dptr)
{
    lms_hooks_init();
    return PASS(cuMemGetAddressRange_v2, base, size, dptr);
}

LMS_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    lms_hooks_init();
    return PASS(cuPointerGetAttribute, data, attribute, ptr);
}

LMS_EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attributes, void **data,
                                           CUdeviceptr ptr)
{
    lms_hooks_init();
    return PASS(cuPointerGetAttributes, n, attributes, data, ptr);
}
