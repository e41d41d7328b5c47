/*
 * launch.c — parameter layouts and the scan of a launch's parameters
 * (see launch.h). A miss costs speed, never correctness: the GPU still
 * reaches a chunk it was not told about, over the link.
 */
#include "launch.h"

#include <pthread.h>
#include <string.h>

#include "log.h"

#define LAYOUTS 4096         /* functions remembered (open addressing) */
#define MAX_PARAMS 128       /* parameters scanned per function */
#define MAX_WORDS 512        /* 8-byte words scanned per launch */

typedef struct layout {
    CUfunction f;            /* NULL: empty slot */
    uint16_t n;              /* parameters */
    uint16_t offset[MAX_PARAMS], size[MAX_PARAMS];   /* bytes */
    const char *name;        /* the driver's, valid while f is */
} layout;

static layout layouts[LAYOUTS];
static pthread_mutex_t layout_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool said_no_info;

/* The cached layout of f, filled from cuFuncGetParamInfo the first time;
 * NULL when the driver cannot say. */
static const layout *layout_of(CUfunction f)
{
    if (!lms_drv.cuFuncGetParamInfo) {
        if (!atomic_exchange(&said_no_info, true))
            lms_log(LMS_LEVEL_INFO, "the driver has no cuFuncGetParamInfo: launches are not scanned");
        return NULL;
    }
    size_t h = ((uintptr_t)f >> 4) * 0x9e3779b97f4a7c15ull >> 52;   /* 12 bits */
    pthread_mutex_lock(&layout_lock);
    layout *l = NULL;
    for (size_t k = 0; k < LAYOUTS; k++) {
        layout *s = &layouts[(h + k) % LAYOUTS];
        if (s->f == f) {
            l = s;
            break;
        }
        if (!s->f) {
            s->n = 0;
            size_t off, size;
            while (s->n < MAX_PARAMS && lms_drv.cuFuncGetParamInfo(f, s->n, &off, &size) == CUDA_SUCCESS &&
                   off < 65536 && size < 65536) {
                s->offset[s->n] = (uint16_t)off;
                s->size[s->n] = (uint16_t)size;
                s->n++;
            }
            s->name = NULL;
            if (lms_drv.cuFuncGetName && lms_drv.cuFuncGetName(&s->name, f) != CUDA_SUCCESS)
                s->name = NULL;
            s->f = f;
            l = s;
            break;
        }
    }
    pthread_mutex_unlock(&layout_lock);
    return l;
}

/* Appends the 8-byte words of [p, p+len) to words (from the start of the
 * parameter: pointers inside parameters are 8-byte aligned). */
static int gather(const char *p, size_t len, uint64_t *words, int n)
{
    for (size_t o = 0; o + 8 <= len && n < MAX_WORDS; o += 8)
        memcpy(&words[n++], p + o, 8);
    return n;
}

int lms_launch_chunks(CUfunction f, void **params, void **extra, uint32_t *ids, int max)
{
    uint64_t words[MAX_WORDS];
    int n = 0;
    if (extra) {
        const char *buf = NULL;
        size_t len = 0;
        for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
                len = *(size_t *)extra[i + 1];
        }
        if (buf)
            n = gather(buf, len, words, n);
    } else if (params) {
        const layout *l = layout_of(f);
        if (!l)
            return 0;
        for (int i = 0; i < l->n && n < MAX_WORDS; i++)
            if (params[i])
                n = gather(params[i], l->size[i], words, n);
    }
    return n ? lms_residency_find(words, n, ids, max) : 0;
}

const char *lms_launch_name(CUfunction f)
{
    const layout *l = layout_of(f);
    return l && l->name ? l->name : "";
}
