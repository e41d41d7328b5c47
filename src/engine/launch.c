/*
 * launch.c — parameter layouts and the scan of a launch's parameters
 * (see launch.h and docs/ARCHITECTURE.md "Kernel handles and parameter layouts").
 * A miss costs speed, never correctness: the GPU still reaches a chunk it
 * was not told about, over the link.
 *
 * Layouts are cached per handle value, a CUfunction or a CUkernel alike,
 * and only when the driver gave a definite answer. The driver reuses handle
 * values after cuModuleUnload/cuLibraryUnload, so an unload empties the
 * cache. `layout_lock` is a read-write lock: scans that find their layout
 * cached read it together (a read hold); a miss, which fills the cache, and
 * an unload, which runs the real call and empties the cache, hold it
 * alone, so no scan reads parameters with the layout of an unloaded kernel.
 * Writers are preferred (a stream of scans from many threads cannot starve
 * an unload); no thread takes a read hold twice, which that would forbid.
 */
#include "launch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "log.h"
#include "scratch.h"

#define LAYOUTS 4096                   /* handles remembered (open addressing) */
#define MAX_PARAM_BYTES 32768          /* CUDA 12.1+ passes up to 32764 bytes */
#define MAX_WORDS (MAX_PARAM_BYTES / 8)

/* A parameter wide enough to hold a pointer. */
typedef struct wide {
    uint32_t index;           /* position in kernelParams */
    uint32_t size;            /* bytes */
} wide;

typedef struct layout {
    uintptr_t h;              /* handle value; 0: empty slot */
    uint32_t params;          /* parameters the driver listed */
    uint32_t n;               /* entries of p */
    wide *p;                  /* owned; NULL when no parameter holds a pointer */
    const char *name;         /* the driver's, valid while h is loaded */
} layout;

static layout layouts[LAYOUTS];
static int nlayouts;
static pthread_rwlock_t layout_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static atomic_bool said_no_info;
static atomic_uint said_unsure;

/* A launch's scratch: the words of its parameters and the chunk ids found,
 * one per thread (scratch.c: made on first use, freed at thread exit). */
typedef struct scratch {
    uint64_t words[MAX_WORDS];
    uint32_t ids[MAX_WORDS];
} scratch;

/* This thread's scratch (owned by scratch.c), or NULL when it cannot be
 * made: without a pthread key nothing would free it at thread exit. */
static scratch *thread_scratch(void)
{
    scratch *s = lms_scratch_get(LMS_SCRATCH_LAUNCH, sizeof *s, NULL);
    if (!s && lms_scratch_no_key()) {
        static atomic_bool said;
        if (!atomic_exchange(&said, true))
            lms_log(LMS_LEVEL_WARN, "no pthread key left for the launch scratch: launches are not "
                                    "scanned (their chunks are reached over the link)");
    }
    return s;
}

/* Empties the cache (under layout_lock). */
static void forget_all(void)
{
    for (int i = 0; i < LAYOUTS; i++) {
        free(layouts[i].p);
        layouts[i] = (layout){0};
    }
    nlayouts = 0;
}

typedef CUresult (*param_fn)(uintptr_t h, size_t index, size_t *offset, size_t *size);

static CUresult func_param(uintptr_t h, size_t i, size_t *off, size_t *size)
{
    return lms_drv.cuFuncGetParamInfo((CUfunction)h, i, off, size);
}

static CUresult kernel_param(uintptr_t h, size_t i, size_t *off, size_t *size)
{
    return lms_drv.cuKernelGetParamInfo((CUkernel)h, i, off, size);
}

/* Asks `get` for every parameter of h: SUCCESS for each one, then
 * INVALID_VALUE past the last. Fills l (its p owned by the caller) and
 * returns CUDA_SUCCESS only for such a definite answer; otherwise the first
 * other error (a wrong handle kind, no context, ...), and l holds nothing. */
static CUresult ask(param_fn get, uintptr_t h, layout *l)
{
    *l = (layout){.h = h};
    size_t cap = 0;
    for (size_t i = 0; i < MAX_PARAM_BYTES; i++) {
        size_t off = 0, size = 0;
        CUresult r = get(h, i, &off, &size);
        if (r == CUDA_ERROR_INVALID_VALUE)
            return CUDA_SUCCESS;             /* past the last parameter */
        if (r != CUDA_SUCCESS) {
            free(l->p);
            *l = (layout){0};
            return r;
        }
        l->params++;
        if (off >= MAX_PARAM_BYTES || size > MAX_PARAM_BYTES - off)
            return CUDA_SUCCESS;             /* beyond what any launch passes */
        if (size < 8)
            continue;                        /* cannot hold a pointer */
        if (!lms_grow((void **)&l->p, &cap, (size_t)l->n + 1, sizeof *l->p, 8)) {
            free(l->p);
            *l = (layout){0};
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        l->p[l->n++] = (wide){(uint32_t)i, (uint32_t)size};
    }
    return CUDA_SUCCESS;
}

/* Reads h's layout from the driver, as a CUfunction first, then as a
 * CUkernel. True with l filled for a definite answer. */
static bool read_layout(uintptr_t h, layout *l)
{
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    layout as_func = {0};
    if (lms_drv.cuFuncGetParamInfo && (r = ask(func_param, h, &as_func)) == CUDA_SUCCESS &&
        (as_func.params > 0 || !lms_drv.cuKernelGetParamInfo)) {
        *l = as_func;
        if (!lms_drv.cuFuncGetName || lms_drv.cuFuncGetName(&l->name, (CUfunction)h) != CUDA_SUCCESS)
            l->name = NULL;
        return true;
    }
    /* Not a CUfunction, or one without parameters: a driver that took a
     * CUkernel for a parameterless function would say so too, so a kernel
     * handle's own answer, if any, wins. */
    CUresult rk = CUDA_ERROR_NOT_SUPPORTED;
    if (lms_drv.cuKernelGetParamInfo && (rk = ask(kernel_param, h, l)) == CUDA_SUCCESS) {
        free(as_func.p);
        if (!lms_drv.cuKernelGetName || lms_drv.cuKernelGetName(&l->name, (CUkernel)h) != CUDA_SUCCESS)
            l->name = NULL;
        return true;
    }
    if (r == CUDA_SUCCESS) {   /* a function without parameters */
        *l = as_func;
        if (!lms_drv.cuFuncGetName || lms_drv.cuFuncGetName(&l->name, (CUfunction)h) != CUDA_SUCCESS)
            l->name = NULL;
        return true;
    }
    lms_log_capped(LMS_LEVEL_INFO, &said_unsure, 3,
                   "no parameter layout for kernel handle %p (errors %d, %d): its launches are not "
                   "scanned until the driver answers",
                   (void *)h, (int)r, (int)rk);
    return false;
}

/* The first slot to probe for h. */
static size_t home_of(uintptr_t h)
{
    return ((h >> 4) * 0x9e3779b97f4a7c15ull >> 52) % LAYOUTS;   /* 12 bits */
}

/* The cached layout of h, or NULL (a miss, or no layout can be had). Under
 * a read or write hold of layout_lock; valid until it is released. */
static const layout *cached(uintptr_t h)
{
    if (!h || (!lms_drv.cuFuncGetParamInfo && !lms_drv.cuKernelGetParamInfo))
        return NULL;
    size_t at = home_of(h);
    for (size_t k = 0; k < LAYOUTS; k++) {
        layout *s = &layouts[(at + k) % LAYOUTS];
        if (s->h == h)
            return s;
        if (!s->h)
            break;
    }
    return NULL;
}

/* The cached layout of h, read from the driver on a miss; NULL when the
 * driver cannot say (then nothing is cached, and the next launch asks
 * again). Under a write hold of layout_lock; valid until it is released. */
static const layout *layout_of(uintptr_t h)
{
    if (!lms_drv.cuFuncGetParamInfo && !lms_drv.cuKernelGetParamInfo) {
        if (!atomic_exchange(&said_no_info, true))
            lms_log(LMS_LEVEL_INFO, "the driver predates CUDA 12.4 (no cuFuncGetParamInfo): launches "
                                    "through kernelParams are not scanned; the extra form still is");
        return NULL;
    }
    if (!h)
        return NULL;
    const layout *hit = cached(h);
    if (hit)
        return hit;
    size_t at = home_of(h);
    layout l;
    if (!read_layout(h, &l))
        return NULL;
    if (nlayouts >= LAYOUTS * 3 / 4)
        forget_all();   /* a full table starts over rather than probing forever */
    for (size_t k = 0;; k++) {
        layout *s = &layouts[(at + k) % LAYOUTS];
        if (!s->h) {
            *s = l;
            nlayouts++;
            return s;
        }
    }
}

/* Appends the 8-byte words of [p, p+len) to words (from the start of the
 * parameter: pointers inside parameters are 8-byte aligned). */
static int gather(const char *p, size_t len, uint64_t *words, int n)
{
    for (size_t o = 0; o + 8 <= len && n < MAX_WORDS; o += 8)
        memcpy(&words[n++], p + o, 8);
    return n;
}

/* Appends to words the words of the parameters of h that can hold a
 * pointer, by its layout (none when it cannot be had). A cached layout is
 * read under a read hold of layout_lock; a miss takes the write hold. */
static int gather_params(uintptr_t h, void **params, uint64_t *words)
{
    if (!h || (!lms_drv.cuFuncGetParamInfo && !lms_drv.cuKernelGetParamInfo)) {
        (void)layout_of(h);   /* no layout to read: it says why, once */
        return 0;
    }
    int n = 0;
    pthread_rwlock_rdlock(&layout_lock);
    const layout *l = cached(h);
    if (!l) {   /* ask the driver, alone: no unload meanwhile */
        pthread_rwlock_unlock(&layout_lock);
        pthread_rwlock_wrlock(&layout_lock);
        l = layout_of(h);
    }
    for (uint32_t i = 0; l && i < l->n && n < MAX_WORDS; i++)
        if (params[l->p[i].index])
            n = gather(params[l->p[i].index], l->p[i].size, words, n);
    pthread_rwlock_unlock(&layout_lock);
    return n;
}

/* The words of a launch's parameters into s->words; returns how many. */
static int gather_launch(scratch *s, CUfunction f, void **params, void **extra)
{
    int n = 0;
    if (extra) {
        /* The buffer form says its own size: exactly that much is read. */
        const char *buf = NULL;
        size_t len = 0;
        for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
                memcpy(&len, extra[i + 1], sizeof len);   /* wherever the program put it */
        }
        if (buf)
            n = gather(buf, len < MAX_PARAM_BYTES ? len : MAX_PARAM_BYTES, s->words, n);
    } else if (params) {
        n = gather_params((uintptr_t)f, params, s->words);
    }
    return n;
}

int lms_launch_chunks(CUfunction f, void **params, void **extra, const uint32_t **ids)
{
    scratch *s = thread_scratch();
    *ids = s ? s->ids : NULL;
    if (!s)
        return 0;
    int n = gather_launch(s, f, params, extra);
    return n ? lms_residency_find(s->words, n, s->ids, MAX_WORDS) : 0;
}

lms_scan lms_launch_words(CUfunction f, void **params, void **extra)
{
    scratch *s = thread_scratch();
    if (!s)
        return (lms_scan){0};
    return (lms_scan){.words = s->words, .n = gather_launch(s, f, params, extra), .room = s->ids, .max = MAX_WORDS};
}

/* A grid dimension's class (lms_launch_shape): g itself up to 16, then
 * 4 classes per octave. */
static uint64_t dim_class(unsigned g)
{
    if (g <= 16)
        return g;
    int b = 31 - __builtin_clz(g);   /* 4 or more */
    return 17 + (uint64_t)(b - 4) * 4 + ((g >> (b - 2)) & 3);
}

uint64_t lms_launch_shape(unsigned gx, unsigned gy, unsigned gz)
{
    uint64_t k = (dim_class(gx) << 42 | dim_class(gy) << 21 | dim_class(gz)) * 0x9e3779b97f4a7c15ull;
    return (k ^ k >> 29) | 1;
}

uint64_t lms_launch_blocks(unsigned gx, unsigned gy, unsigned gz)
{
    bool valid = gx && gx <= 0x7fffffffu && gy && gy <= 65535 && gz && gz <= 65535;
    return valid ? (uint64_t)gx * gy * gz : 0;
}

const char *lms_launch_name(CUfunction f)
{
    if (!f)
        return "";   /* a graph's launch: no kernel, nothing to look up (and no write lock) */
    pthread_rwlock_rdlock(&layout_lock);
    const layout *l = cached((uintptr_t)f);
    if (!l) {
        pthread_rwlock_unlock(&layout_lock);
        pthread_rwlock_wrlock(&layout_lock);
        l = layout_of((uintptr_t)f);
    }
    const char *name = l && l->name ? l->name : "";
    pthread_rwlock_unlock(&layout_lock);
    return name;
}

void lms_launch_unload_begin(void)
{
    pthread_rwlock_wrlock(&layout_lock);
}

void lms_launch_unload_end(bool unloaded)
{
    if (unloaded)
        forget_all();
    pthread_rwlock_unlock(&layout_lock);
}

void lms_launch_fork_prepare(void) { pthread_rwlock_wrlock(&layout_lock); }
void lms_launch_fork_parent(void) { pthread_rwlock_unlock(&layout_lock); }

void lms_launch_fork_child(void)
{
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&layout_lock, &attr);
    pthread_rwlockattr_destroy(&attr);
}
