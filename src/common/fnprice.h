/*
 * fnprice.h — what reading in place costs a function's launches, fitted
 * from their measured durations (fnprice.c). A chunk's own price (price.h)
 * is known only for a launch signature seen again; a program whose
 * chunks are new every step, or whose launches never repeat their chunk
 * sets, has none. Its functions still repeat: each timed launch of fn
 * teaches how long it ran with how many bytes of its chunks on the device
 * (local) and how many read in place (remote). The launches that read
 * nothing in place give fn's duration on the device as a line in its
 * bytes; the others, how much longer they ran than that line says for
 * their bytes: their slowdown per byte read in place is fn's price. No
 * CUDA here: tests teach it directly.
 */
#ifndef LMS_FNPRICE_H
#define LMS_FNPRICE_H

#include <stdbool.h>
#include <stdint.h>

/* One function's decayed sums (bytes in MiB, durations in ns): over its
 * launches on the device (l: local bytes, y: ns), and over those that
 * read in place (t: all their bytes, r: those read in place). */
typedef struct lms_fnprice_entry {
    uintptr_t fn;               /* 0: empty */
    double n_dev, l, ll, y, ly; /* on the device: count, sums of l, l^2, y, l x y */
    double n_in, t, r, y_in;    /* reading in place: count, sums of t, r, y */
    uint8_t odd_dev, odd_in;    /* launches in a row off the fit of their kind (fnprice.c, surprise) */
    uint16_t since_dev;         /* launches reading in place since the last on the device (saturating) */
    uint16_t ask_at;            /* since_dev at which a launch on the device is next asked for (REFRESH at first) */
    uint32_t seen;              /* launches taught (saturating) */
    uint32_t phase;             /* the table's pooled phase when its line last had a launch on the device */
} lms_fnprice_entry;

#define LMS_FNPRICE_FIRSTS 8    /* functions' first prices kept (lms_fnprice_prior) */

/* Two bounded open-addressing tables of functions, a current and an
 * older generation: when the current one is half full it becomes the
 * older one (the older one's entries are dropped), and an entry of the
 * older one is carried into the current one when its function is taught
 * again, so the functions in use keep their fits. */
typedef struct lms_fnprice {
    lms_fnprice_entry *t;       /* the current generation */
    lms_fnprice_entry *old;     /* the older generation: read, and carried over when taught */
    uint32_t cap, used;         /* slots per generation (a power of two), slots taken in t */
    double firsts[LMS_FNPRICE_FIRSTS];   /* the latest functions' first prices, a ring (ns per byte) */
    lms_fnprice_entry pooled;   /* every function's launches on the device under one line: its new phase empties the ring */
    uint32_t phase;             /* the pooled line's phases so far */
    uint32_t nfirsts, first_at; /* first prices in the ring (up to LMS_FNPRICE_FIRSTS), the slot of the next */
} lms_fnprice;

/* Sets up two generations of `cap` slots (a power of two); false without
 * memory. */
bool lms_fnprice_init(lms_fnprice *f, uint32_t cap);
/* Frees the tables' slots. */
void lms_fnprice_destroy(lms_fnprice *f);

/* A launch of fn took `ns` with `local` bytes of its chunks on the device
 * and `remote` bytes of them read in place (a launch with neither teaches
 * nothing). */
void lms_fnprice_learn(lms_fnprice *f, uintptr_t fn, uint64_t local, uint64_t remote, double ns);

/* fn's fitted price: ns of slowdown per byte read in place (0 or more), or
 * negative when it cannot be fitted yet. Then *learn (when not NULL) says
 * which launch would make it fit: +1 one whose chunks are on the device
 * (a fetch), -1 one that reads in place, 0 none (too few launches of fn,
 * or none can: fnprice.c). It is negative too, with *learn +1, for a few
 * launches after REFRESH launches reading in place with none on the
 * device (its line may be of an older phase), asked again at twice the
 * distance each time none came (fnprice.c). With a
 * price, *learn is 0, or 2 while it stands on fewer than four launches of
 * either kind (the first ones, or since a new phase). */
double lms_fnprice_of(lms_fnprice *f, uintptr_t fn, int *learn);

/* What a launch of fn with `bytes` of chunks, all on the device, is
 * expected to take (ns) by the line of fn's launches on the device, or
 * a negative number while fn has none (fnprice.c). */
double lms_fnprice_device_ns(lms_fnprice *f, uintptr_t fn, uint64_t bytes);

/* What a function not fitted yet may expect: the lowest (*lo) and the
 * highest (*hi) of the first prices of the latest LMS_FNPRICE_FIRSTS
 * functions fitted (each function's price when its first launch reading
 * in place was set against its line; each function counts once, however
 * often it is launched); false while fewer were fitted. */
bool lms_fnprice_prior(const lms_fnprice *f, double *lo, double *hi);

/* How many new phases the line pooled over every function's launches on
 * the device marked so far (every function's compute changed together). */
uint32_t lms_fnprice_phase(const lms_fnprice *f);

/* How many launches of fn were taught while its entry lasted (0: none). */
uint32_t lms_fnprice_seen(lms_fnprice *f, uintptr_t fn);

/* lms_fnprice_of for a launch of fn whose grid falls in the class keyed
 * `cls` (its own fit in the table `classes`, taught by the launches of
 * that class; a table apart, so that the classes of many functions do not
 * turn the functions' fits out): the class's
 * price, its reads in place set against fn's line of launches on the
 * device, where it stands on four launches of each kind or the class
 * holds four launches and an eighth of fn's; when it has none and asks
 * for a launch while that frequent, that ask; else fn's price and ask. */
double lms_fnprice_of_class(lms_fnprice *f, lms_fnprice *classes, uintptr_t fn, uintptr_t cls, int *learn);

#endif
