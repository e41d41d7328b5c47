/*
 * place.h — placement (place.c): where a new chunk goes under the LMS rule
 * and the budget, how each placement is freed, and the budget's view of
 * cuMemGetInfo. The hooks call these; these call only the real driver.
 */
#ifndef LMS_PLACE_H
#define LMS_PLACE_H

#include "chunks.h"
#include "driver.h"

/* The allocation the program asked for, made by the real entry point of the
 * hook that was called (cuMemAlloc_v2, cuMemAllocAsync_ptsz, ...). */
typedef CUresult (*lms_native_alloc)(void *ctx, CUdeviceptr *out);

typedef struct lms_alloc_request {
    uint64_t size;             /* bytes asked for */
    int device;                /* where the program wants them */
    CUstream stream;           /* stream-ordered allocations: their stream */
    bool async;                /* a stream-ordered allocation */
    bool device_only;          /* never off the device (32-bit ABI): budget only */
    int32_t site;              /* allocation site (stack.h), or -1 */
    lms_native_alloc native;   /* makes the device allocation as asked */
    void *native_ctx;
} lms_alloc_request;

/* Places a device-memory request: on the device as asked, or in LMS_MODE
 * memory by the LMS rule or on out-of-memory. Returns the CUresult the
 * program gets; *out is the pointer it uses in every case. */
CUresult lms_place_alloc(const lms_alloc_request *r, CUdeviceptr *out);

/* The real frees of the hook that was called. */
typedef struct lms_free_op {
    CUresult (*sync_free)(CUdeviceptr);              /* cuMemFree_v2 (cuMemFreeHost's for host_free) */
    CUresult (*async_free)(CUdeviceptr, CUstream);   /* cuMemFreeAsync(_ptsz), or NULL */
    CUstream stream;                                 /* never NULL for the per-thread stream */
    bool host_free;                                  /* cuMemFreeHost: frees pinned host memory */
} lms_free_op;

/* Frees a pointer the way its placement needs; unknown pointers go to the
 * real free unchanged (CUDA answers). The free must be the one that matches
 * what the program allocated (cuMemFreeHost for its pinned memory, a device
 * free for the rest, wherever lmshim placed it); another one gets CUDA's
 * INVALID_VALUE (from the driver, where it holds the memory as asked). A failed free changes nothing: accounting, the chunk map
 * and residency change only once the real free succeeded. */
CUresult lms_place_free(CUdeviceptr p, const lms_free_op *op);

/* True when the driver no longer has an allocation starting at `key`
 * (asked with cuPointerGetAttribute; false when it cannot be asked). */
bool lms_place_driver_forgot(uint64_t key);

/* Frees an off-device chunk whose free a capture deferred (capture.c; it
 * is already out of the chunk map): the memory, then its residency entry
 * and charge. On an error they stay and the error is returned. */
CUresult lms_place_release(const lms_chunk *c);

/* The bookkeeping of a chunk the driver freed itself (its context was
 * destroyed or reset; already out of the chunk map): its residency entry
 * and pieces, its charge and its trace free event go, without a real free. */
void lms_place_gone(const lms_chunk *c);

/* Around a context's destruction or reset and the dropping of its chunks:
 * no placement runs meanwhile (the same address could be handed out again
 * before its chunk is known). fork: the lock is held across it. */
void lms_place_context_begin(void);
void lms_place_context_end(void);
/* Placements, frees, the residency engine's work before or after a
 * launch, room made for physical memory, arrays and graph pools, and the
 * release of captured frees that are due (capture.c, which takes its own
 * lock under this one): held shared, so that a context's end (above)
 * never runs in their middle. Holds may nest; the thread is not cancelled
 * while it holds the lock (context_begin too). */
void lms_place_shared_begin(void);
void lms_place_shared_end(void);
void lms_place_fork_prepare(void);
void lms_place_fork_parent(void);
void lms_place_fork_child(void);

/* Records memory the program allocated itself in a non-device kind
 * (LMS_PLACE_MANAGED / LMS_PLACE_PINNED): tracked, never charged. */
void lms_place_note_program(uint64_t ptr, uint64_t size, int device, int place);

/* cuMemGetInfo under the budget: total = min(budget, physical), free =
 * clamp(total - used, 0, the driver's free). `real` answers first. */
CUresult lms_place_mem_info(size_t *free_bytes, size_t *total, CUresult (*real)(size_t *, size_t *));

/* cuDeviceTotalMem under the budget: min(budget, physical). */
CUresult lms_place_total_mem(size_t *bytes, CUdevice dev, CUresult (*real)(size_t *, CUdevice));

#endif
