/*
 * fnprice.c — a function's price of reading in place, fitted from its
 * launches' durations (see fnprice.h).
 *
 * Each launch adds to its function's sums of its kind (on the device, or
 * reading in place), the older sums of that kind first scaled by DECAY:
 * each kind follows its recent launches, and a price once fitted stays
 * while only launches of one kind come. The
 * launches that read nothing in place fit fn's duration on the device as
 * c + a x bytes (least squares; when their sizes hardly differ, or the
 * slope comes out negative, a = 0 and c their mean: a kernel whose time
 * does not follow the bytes of its chunks, because its compute is set by
 * other operands, keeps a flat line). A launch that read r of its t bytes
 * in place ran y; had they all been on the device it would have run
 * c + a x t; so fn's price is
 *
 *     sum (y - c - a t) / sum r      over the launches that read in place
 *
 * (ns per byte; 0 when negative). A kernel whose compute hides its reads
 * in place prices near 0; a GEMM re-reading its operand p times over the
 * link, near p bytes' link time. Until both kinds of launch were seen the
 * price is unknown, and the caller is told which kind would teach it.
 */
#include "fnprice.h"

#include <stdlib.h>

#define DECAY (31.0 / 32.0)     /* the weight of older launches at each new one */
#define MIN_DEV 1.5             /* decayed launches on the device before the line is fitted (two) */
#define MIN_IN 0.9              /* ... that read in place (one) */
#define FLAT 0.05               /* sizes whose spread is under this share of their mean: a flat line */
#define MiB (1024.0 * 1024.0)

bool lms_fnprice_init(lms_fnprice *f, uint32_t cap)
{
    *f = (lms_fnprice){.cap = cap};
    f->t = calloc(cap, sizeof *f->t);
    return f->t != NULL;
}

void lms_fnprice_destroy(lms_fnprice *f)
{
    free(f->t);
    *f = (lms_fnprice){0};
}

/* The first slot to probe for fn. */
static uint32_t home(const lms_fnprice *f, uintptr_t fn)
{
    uint64_t h = (uint64_t)fn * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 40) & (f->cap - 1);
}

/* fn's slot, or the empty slot that ends its probe (NULL: none). */
static lms_fnprice_entry *probe(const lms_fnprice *f, uintptr_t fn)
{
    if (!f->t || fn == 0)
        return NULL;
    uint32_t i = home(f, fn);
    for (uint32_t k = 0; k < f->cap; k++, i = (i + 1) & (f->cap - 1))
        if (f->t[i].fn == fn || f->t[i].fn == 0)
            return &f->t[i];
    return NULL;
}

void lms_fnprice_learn(lms_fnprice *f, uintptr_t fn, uint64_t local, uint64_t remote, double ns)
{
    if ((local == 0 && remote == 0) || !(ns >= 0))
        return;
    lms_fnprice_entry *e = probe(f, fn);
    if (e && e->fn == 0 && f->used + 1 > f->cap / 2) {
        for (uint32_t i = 0; i < f->cap; i++)   /* half full: start over */
            f->t[i] = (lms_fnprice_entry){0};
        f->used = 0;
        e = probe(f, fn);
    }
    if (!e)
        return;
    if (e->fn == 0) {
        *e = (lms_fnprice_entry){.fn = fn};
        f->used++;
    }
    double l = (double)local / MiB, r = (double)remote / MiB;
    if (remote == 0) {
        e->n_dev = e->n_dev * DECAY + 1;
        e->l = e->l * DECAY + l;
        e->ll = e->ll * DECAY + l * l;
        e->y = e->y * DECAY + ns;
        e->ly = e->ly * DECAY + l * ns;
    } else {
        e->n_in = e->n_in * DECAY + 1;
        e->t = e->t * DECAY + l + r;
        e->r = e->r * DECAY + r;
        e->y_in = e->y_in * DECAY + ns;
    }
}

double lms_fnprice_of(const lms_fnprice *f, uintptr_t fn, int *learn)
{
    int want = 0;
    double price = -1;
    const lms_fnprice_entry *e = probe(f, fn);
    if (e && e->fn == fn) {
        if (e->n_dev < MIN_DEV) {
            want = 1;   /* a launch with its chunks on the device */
        } else if (e->n_in < MIN_IN || e->r <= 0) {
            want = -1;  /* a launch reading in place */
        } else {
            double ml = e->l / e->n_dev, my = e->y / e->n_dev;
            double var = e->ll / e->n_dev - ml * ml, a = 0;
            if (var > FLAT * FLAT * ml * ml)
                a = (e->ly / e->n_dev - ml * my) / var;
            if (a < 0)
                a = 0;
            double c = my - a * ml;
            double slow = (e->y_in - c * e->n_in - a * e->t) / e->r;   /* ns per MiB read in place */
            price = slow > 0 ? slow / MiB : 0;
        }
    }
    if (learn)
        *learn = want;
    return price;
}
