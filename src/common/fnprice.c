/*
 * fnprice.c — a function's price of reading in place, fitted from its
 * launches' durations (see fnprice.h).
 *
 * Each launch adds to its function's sums of its kind (on the device, or
 * reading in place), the older sums of that kind first scaled by DECAY:
 * each kind follows its recent launches, and a price once fitted stays
 * while only launches of one kind come. The launches on the device fit
 * fn's duration as c + a x bytes (least squares; when their sizes hardly
 * differ, or the slope comes out negative, a = 0 and c their mean: a
 * kernel whose compute is set by operands that are not managed chunks
 * keeps a flat line; when c comes out negative, a duration growing faster
 * than the bytes, a line through the origin). A launch that read r of its
 * t bytes in place ran y; had they all been on the device it would have
 * run c + a x t; so fn's price is
 *
 *     sum (y - c - a t) / sum r      over the launches that read in place
 *
 * (ns per byte; 0 when negative, and at most their durations per byte).
 * A kernel whose compute hides its reads in place prices near 0; a GEMM
 * re-reading its operand p times over the link, near p bytes' link time.
 *
 * Phases: two launches in a row whose durations are off what the fit
 * expects of their kind by more than a quarter mark a new phase (the
 * kernel's compute changed: a batch that shrank; one alone is an outlier,
 * a kernel that waited for a fetch): the older sums on the device are
 * forgotten, those reading in place scaled by a quarter (launches of one
 * function reading in place differ by the operands they read: forgetting
 * them made the price follow the last one). Launches in place that ran a
 * quarter faster than the line says the device would have (the line is
 * of an older phase, and only reads in place came since) leave the price
 * unknown and ask for a launch on the device. Until both kinds of launch
 * were seen the price is unknown, and the caller is told which kind would
 * teach it.
 *
 * Refresh: a line not refreshed by a launch on the device for REFRESH
 * launches reading in place may be of an older phase that nothing else
 * would reveal (a compute that fell while only reads in place came, each
 * about as long as the old line says: their price fitted near zero
 * against it, and they went on reading two passes over the link where a
 * fetch was cheaper). The price is then unknown for REASK launches,
 * asking for one on the device; when none came (a launch whose chunks
 * never all fit: each ask fetched half the budget for nothing, 1.06x
 * `none` at 2x on an outside tester's program), the next ask is twice as
 * far, 32, 64, 128, ... launches, and none past 32,768.
 *
 * Grid classes: the caller teaches each launch to its function's key and
 * to the key of the function with its grid's class; lms_fnprice_of_class
 * prices by the class where it stands on four launches of each kind or
 * is frequent (CLASS_MIN launches and 1/CLASS_SHARE of its function's),
 * its reads in place set against the function's line of launches on the
 * device (which follows the function's phases); else by the function.
 *
 * First prices: when a function's first launch reading in place is set
 * against its line, its price is kept in a ring of the latest ones
 * (lms_fnprice_prior): what a function seen too seldom to be fitted may
 * expect, each function counted once (a price pooled over launches is
 * the frequent functions' price). Every launch on the device also
 * teaches one line pooled over all functions, for its phases only: when
 * it marks a new phase (every function's compute changed together), the
 * ring is emptied, and a first price set against a function's line that
 * had no launch on the device since is not kept.
 *
 * Generations: the keys live in two tables; when the current one is half
 * full it becomes the older one (the older one's keys are dropped), and a
 * key taught or read while in the older one is carried into the current
 * one.
 */
#include "fnprice.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DECAY (31.0 / 32.0)     /* the weight of older launches at each new one */
#define MIN_DEV 0.99            /* decayed launches on the device before the line is fitted (one) */
#define MIN_IN 0.9              /* ... that read in place (one) */
#define FLAT 0.05               /* sizes whose spread is under this share of their mean: a flat line */
#define SURPRISE 0.25           /* a launch off its kind's expected duration by more than this share ... */
#define ODD_RUN 2               /* ... in a row (one alone: an outlier, a fetch's wait) ... */
#define FORGET_DEV 0.0          /* ... scales the older sums on the device by this (a new phase: forgotten) */
#define FORGET_IN 0.25          /* ... and those reading in place by this (they vary with the operands read) */
#define GIVE_UP 8.0             /* decayed launches in place after which one on the device is no longer asked for */
#define SETTLED 3.5             /* decayed launches of each kind before a price is settled (four) */
#define STALE 0.25              /* launches in place faster than the line by this share: it is stale */
#define REFRESH 32              /* launches reading in place with none on the device: one is asked for ... */
#define REASK 4                 /* ... over this many launches (then twice as far while none comes) */
#define CLASS_SHARE 8           /* a grid class with an eighth of its function's launches ... */
#define CLASS_MIN 4             /* ... and at least this many asks for its own */
#define MiB (1024.0 * 1024.0)

bool lms_fnprice_init(lms_fnprice *f, uint32_t cap)
{
    *f = (lms_fnprice){.cap = cap};
    f->t = calloc(cap, sizeof *f->t);
    f->old = calloc(cap, sizeof *f->old);
    if (f->t && f->old)
        return true;
    lms_fnprice_destroy(f);
    return false;
}

void lms_fnprice_destroy(lms_fnprice *f)
{
    free(f->t);
    free(f->old);
    *f = (lms_fnprice){0};
}

/* The first slot to probe for fn. */
static uint32_t home(const lms_fnprice *f, uintptr_t fn)
{
    uint64_t h = (uint64_t)fn * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 40) & (f->cap - 1);
}

/* fn's slot in generation t, or the empty slot that ends its probe
 * (NULL: none). */
static lms_fnprice_entry *probe(const lms_fnprice *f, lms_fnprice_entry *t, uintptr_t fn)
{
    if (!t || fn == 0)
        return NULL;
    uint32_t i = home(f, fn);
    for (uint32_t k = 0; k < f->cap; k++, i = (i + 1) & (f->cap - 1))
        if (t[i].fn == fn || t[i].fn == 0)
            return &t[i];
    return NULL;
}

/* fn's entry in the current generation, made when absent: carried over
 * from the older one, else new; the current generation becomes the older
 * one first when it is half full. NULL for fn 0. */
static lms_fnprice_entry *entry_for(lms_fnprice *f, uintptr_t fn)
{
    lms_fnprice_entry *e = probe(f, f->t, fn);
    if (!e || e->fn == fn)
        return e;
    const lms_fnprice_entry *o = probe(f, f->old, fn);
    lms_fnprice_entry carried = o && o->fn == fn ? *o : (lms_fnprice_entry){.fn = fn, .ask_at = REFRESH};
    if (f->used + 1 > f->cap / 2) {   /* half full: it becomes the older generation */
        lms_fnprice_entry *t = f->old;
        memset(t, 0, (size_t)f->cap * sizeof *t);
        f->old = f->t;
        f->t = t;
        f->used = 0;
        e = probe(f, f->t, fn);
    }
    *e = carried;
    f->used++;
    return e;
}

/* fn's entry when it has one, carried into the current generation when
 * found in the older one (a fit read is in use), or NULL. */
static const lms_fnprice_entry *in_use(lms_fnprice *f, uintptr_t fn)
{
    const lms_fnprice_entry *e = probe(f, f->t, fn);
    if (e && e->fn == fn)
        return e;
    const lms_fnprice_entry *o = probe(f, f->old, fn);
    return o && o->fn == fn ? entry_for(f, fn) : NULL;
}

/* The line of e's launches on the device: ns = *c + *a x MiB; false while
 * they are too few. */
static bool line_of(const lms_fnprice_entry *e, double *c, double *a)
{
    if (e->n_dev < MIN_DEV)
        return false;
    double ml = e->l / e->n_dev, my = e->y / e->n_dev;
    double var = e->ll / e->n_dev - ml * ml;
    *a = var > FLAT * FLAT * ml * ml ? (e->ly / e->n_dev - ml * my) / var : 0;
    if (*a < 0)
        *a = 0;
    *c = my - *a * ml;
    if (*c < 0) {   /* a duration growing faster than the bytes (a GEMM's n^3 over n^2): in proportion */
        *a = ml > 0 ? my / ml : 0;
        *c = ml > 0 ? 0 : my;
    }
    return true;
}

/* e's slowdown per MiB read in place over its line (c, a), from its
 * launches reading in place (they must be there). */
static double slow_of(const lms_fnprice_entry *e, double c, double a)
{
    return (e->y_in - c * e->n_in - a * e->t) / e->r;
}

/* Whether a duration of ns is off the expected one by more than SURPRISE
 * of it. */
static bool surprise(double ns, double expected)
{
    double d = ns - expected;
    return expected > 0 && (d < 0 ? -d : d) > SURPRISE * expected;
}

static double price_with(const lms_fnprice_entry *e, const lms_fnprice_entry *ln, int *learn);

/* Adds a launch of `l` MiB on the device that ran `ns` to e's line;
 * true when it marked a new phase (the second launch in a row off the
 * line by more than SURPRISE: the older launches are forgotten). */
static bool learn_on_device(lms_fnprice_entry *e, double l, double ns)
{
    double c, a;
    bool line = line_of(e, &c, &a), phase = false;
    e->odd_dev = line && surprise(ns, c + a * l) ? e->odd_dev + 1 : 0;
    if (e->odd_dev >= ODD_RUN) {   /* a new phase: the older launches count for little */
        e->n_dev *= FORGET_DEV, e->l *= FORGET_DEV, e->ll *= FORGET_DEV, e->y *= FORGET_DEV, e->ly *= FORGET_DEV;
        e->odd_dev = 0;
        phase = true;
    }
    e->n_dev = e->n_dev * DECAY + 1;
    e->l = e->l * DECAY + l;
    e->ll = e->ll * DECAY + l * l;
    e->y = e->y * DECAY + ns;
    e->ly = e->ly * DECAY + l * ns;
    return phase;
}

void lms_fnprice_learn(lms_fnprice *f, uintptr_t fn, uint64_t local, uint64_t remote, double ns)
{
    if ((local == 0 && remote == 0) || !(ns > 0) || !isfinite(ns))
        return;
    lms_fnprice_entry *e = entry_for(f, fn);
    if (!e)
        return;
    e->seen += e->seen < UINT32_MAX;
    double l = (double)local / MiB, r = (double)remote / MiB;
    if (remote == 0) {
        e->since_dev = 0;
        e->ask_at = REFRESH;
    } else {
        e->since_dev += e->since_dev < UINT16_MAX;
        if (e->since_dev == (uint32_t)e->ask_at + REASK)   /* asked, and none came: ask twice as far */
            e->ask_at = e->ask_at <= UINT16_MAX / 2 ? (uint16_t)(2 * e->ask_at) : UINT16_MAX;
    }
    if (remote == 0) {
        if (learn_on_device(&f->pooled, l, ns))
            f->nfirsts = 0, f->phase++;   /* every function's launches on the device in a new phase: the first prices are of the old one */
        learn_on_device(e, l, ns);
        e->phase = f->phase;
    } else {
        double c, a;
        bool line = line_of(e, &c, &a);
        bool first = e->n_in < MIN_IN;   /* its first launch in place (a phase's forgetting below is not) */
        bool odd = false;
        if (line && e->n_in >= MIN_IN && e->r > 0) {
            double slow = slow_of(e, c, a);
            odd = surprise(ns, c + a * (l + r) + (slow > 0 ? slow : 0) * r);
        }
        e->odd_in = odd ? e->odd_in + 1 : 0;
        if (e->odd_in >= ODD_RUN) {
            e->n_in *= FORGET_IN, e->t *= FORGET_IN, e->r *= FORGET_IN, e->y_in *= FORGET_IN;
            e->odd_in = 0;
        }
        e->n_in = e->n_in * DECAY + 1;
        e->t = e->t * DECAY + l + r;
        e->r = e->r * DECAY + r;
        e->y_in = e->y_in * DECAY + ns;
        /* A first price against a line older than the pooled phase (a
         * function not launched on the device since) is of the old phase. */
        double price = first && line && e->phase == f->phase ? price_with(e, e, NULL) : -1;
        if (price >= 0) {
            f->firsts[f->first_at] = price;
            f->first_at = (f->first_at + 1) % LMS_FNPRICE_FIRSTS;
            f->nfirsts += f->nfirsts < LMS_FNPRICE_FIRSTS;
        }
    }
}

bool lms_fnprice_prior(const lms_fnprice *f, double *lo, double *hi)
{
    if (f->nfirsts < LMS_FNPRICE_FIRSTS)
        return false;
    *lo = *hi = f->firsts[0];
    for (int i = 1; i < LMS_FNPRICE_FIRSTS; i++) {
        *lo = f->firsts[i] < *lo ? f->firsts[i] : *lo;
        *hi = f->firsts[i] > *hi ? f->firsts[i] : *hi;
    }
    return true;
}

uint32_t lms_fnprice_phase(const lms_fnprice *f)
{
    return f->phase;
}

/* Whether e's line is asked to be refreshed now: REASK launches from
 * its ask_at (none once that reached UINT16_MAX). */
static bool refresh(const lms_fnprice_entry *e)
{
    uint32_t at = e->ask_at;
    return at < UINT16_MAX && e->since_dev >= at && e->since_dev < at + REASK;
}

/* The price of e's launches reading in place against the line of `ln`'s
 * launches on the device (e itself, or its function's for a grid class:
 * lms_fnprice_of_class), as lms_fnprice_of says. */
static double price_with(const lms_fnprice_entry *e, const lms_fnprice_entry *ln, int *learn)
{
    int want = 0;
    double price = -1, c, a;
    if (e) {
        if (!line_of(ln, &c, &a)) {
            /* A launch with its chunks on the device; not asked for after
             * GIVE_UP launches that read in place (its chunks may never
             * all fit: the fetches asked for would only be partial). */
            want = e->n_in < GIVE_UP ? 1 : 0;
        } else if (e->n_in < MIN_IN || e->r <= 0) {
            want = -1;  /* a launch reading in place */
        } else {
            double slow = slow_of(e, c, a);   /* ns per MiB read in place */
            double base = c + a * e->t / e->n_in;   /* their mean duration on the device, by the line */
            double most = e->y_in / e->r;   /* a slowdown is no longer than the launches */
            if (slow * e->r / e->n_in < -STALE * base) {   /* per launch, against its duration */
                want = 1;   /* faster in place than on the device: the line is of an older phase */
            } else {
                price = slow > 0 ? (slow < most ? slow : most) / MiB : 0;
                if (ln->n_dev < SETTLED || e->n_in < SETTLED)
                    want = 2;   /* from few launches (a new phase, or the first ones) */
                if (refresh(ln))
                    price = -1, want = 1;   /* the line is old: a launch on the device again */
            }
        }
    }
    if (learn)
        *learn = want;
    return price;
}

double lms_fnprice_device_ns(lms_fnprice *f, uintptr_t fn, uint64_t bytes)
{
    const lms_fnprice_entry *e = in_use(f, fn);
    double c, a;
    return e && line_of(e, &c, &a) ? c + a * ((double)bytes / MiB) : -1;
}

uint32_t lms_fnprice_seen(lms_fnprice *f, uintptr_t fn)
{
    const lms_fnprice_entry *e = in_use(f, fn);
    return e ? e->seen : 0;
}

double lms_fnprice_of(lms_fnprice *f, uintptr_t fn, int *learn)
{
    const lms_fnprice_entry *e = in_use(f, fn);
    return price_with(e, e, learn);
}

double lms_fnprice_of_class(lms_fnprice *f, lms_fnprice *classes, uintptr_t fn, uintptr_t cls, int *learn)
{
    const lms_fnprice_entry *e = in_use(f, fn), *k = cls != fn ? in_use(classes, cls) : NULL;
    int fn_want = 0, want = 0;
    double fn_price = price_with(e, e, &fn_want);
    if (k && fn_want != 1) {   /* fn's asking for a launch on the device (a new phase, an old line) overrides */
        double price = price_with(k, e ? e : k, &want);
        bool frequent = !e || (k->seen >= CLASS_MIN && (uint64_t)k->seen * CLASS_SHARE >= e->seen);
        if (price >= 0 ? want == 0 || frequent : want != 0 && frequent) {
            if (learn)
                *learn = want;
            return price;
        }
    }
    if (learn)
        *learn = fn_want;
    return fn_price;
}
