/*
 * frag.c — fragmentation measures (see frag.h).
 */
#include "frag.h"

#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "chunks.h"
#include "driver.h"
#include "grow.h"

typedef struct range { uint64_t lo, hi; } range;

typedef struct collect {
    int dev;
    range *r;
    size_t n, cap;
    uint64_t requested, reserved;
    bool oom;
} collect;

static void take(const lms_chunk *c, void *ctx)
{
    collect *k = ctx;
    if (c->device != k->dev || c->place != LMS_PLACE_DEVICE)
        return;
    k->requested += c->size;
    k->reserved += c->charged;
    if (!lms_grow((void **)&k->r, &k->cap, k->n + 1, sizeof *k->r, 256)) {
        k->oom = true;
        return;
    }
    k->r[k->n++] = (range){c->key, c->key + c->size};
}

static int by_lo(const void *a, const void *b)
{
    uint64_t x = ((const range *)a)->lo, y = ((const range *)b)->lo;
    return (x > y) - (x < y);
}

void lms_frag_measure(int dev, lms_frag *out)
{
    memset(out, 0, sizeof *out);
    collect k = {.dev = dev};
    lms_chunks_foreach(take, &k);
    out->requested = k.requested;
    out->reserved = k.reserved;
    out->chunks = k.n;
    if (k.n && !k.oom) {
        qsort(k.r, k.n, sizeof *k.r, by_lo);
        uint64_t end = k.r[0].hi;
        for (size_t i = 1; i < k.n; i++) {
            if (k.r[i].lo > end)
                out->holes += k.r[i].lo - end;
            if (k.r[i].hi > end)
                end = k.r[i].hi;
        }
        out->span = end - k.r[0].lo;
    }
    free(k.r);
    lms_account *a = dev >= 0 && dev < LMS_MAX_DEVICES && atomic_load(&lms_accounts[dev].state) == 2
                         ? &lms_accounts[dev] : NULL;
    if (!a)
        return;
    uint64_t used = lms_account_used(a);
    out->budget_free = used < a->budget ? a->budget - used : 0;
    size_t f, t;
    if (lms_drv.cuMemGetInfo && lms_driver_current_device() == dev && lms_drv.cuMemGetInfo(&f, &t) == CUDA_SUCCESS) {
        out->driver_known = true;
        out->driver_free = f;
        out->largest_grant = out->budget_free < f ? out->budget_free : f;
        out->driver_gap = (int64_t)out->budget_free - (int64_t)f;
    } else {
        out->largest_grant = out->budget_free;
    }
}
