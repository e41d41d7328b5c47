/*
 * price.h — what reading a chunk in place costs a launch, learned from
 * measured kernel durations (price.c). The live engine times launches with
 * events (src/engine/timing.c) and teaches each measurement here; the
 * planner (plan.c) asks for the price of each chunk a launch needs when
 * the room does not hold them all. No CUDA here: the table is plain data,
 * so tests can teach it durations directly.
 */
#ifndef LMS_PRICE_H
#define LMS_PRICE_H

#include <stdbool.h>
#include <stdint.h>

/* One learned value: a (signature, chunk) price or a signature's count. */
typedef struct lms_price_entry {
    uint64_t key;        /* 0: empty */
    float value;         /* ns of slowdown per byte read in place; a count; a shortest duration (ns) */
    uint32_t phase;      /* a price: its signature's phase when learned (a position's: its function's); a signature's base on the device: its phase */
} lms_price_entry;

#define LMS_PRICE_LINE 4   /* entries of a 64-byte cache line */

/* A bounded open-addressing table (cleared when half full). */
typedef struct lms_price {
    lms_price_entry *t;
    uint32_t cap, used;  /* slots (a power of two), slots taken */
    uint64_t learned;    /* launches learned */
} lms_price;

/* Sets up a table of `cap` slots (a power of two, at least
 * LMS_PRICE_LINE); false without memory or for any other cap. */
bool lms_price_init(lms_price *p, uint32_t cap);
/* Frees the table's slots. */
void lms_price_destroy(lms_price *p);

/* The signature of a launch: its function and chunk ids. */
uint64_t lms_price_sig(uintptr_t fn, const uint32_t *ids, int n);

/* No role: the launch's reads in place are not those of one chunk at
 * one parameter position (lms_price_learn). */
#define LMS_PRICE_NO_ROLE 0xffffffffu

/* A launch of function fn and signature `sig` took `ns` while chunks
 * remote[0..n) (ids, unique) were read in place, `bytes` of them in all:
 * each of those chunks is priced at its slowdown over the base per byte
 * (see price.c). When `role` is not LMS_PRICE_NO_ROLE, those reads were
 * (nearly all) of one chunk that the launch's parameter word `role`
 * pointed into: the slowdown per byte is also fn's price for that
 * position (lms_price_role). Counts the signature's observations. */
void lms_price_learn(lms_price *p, uintptr_t fn, uint64_t sig, const uint32_t *remote, int n, uint64_t bytes,
                     double ns, uint32_t role);

/* What a launch's reads in place say of one parameter position: `role`
 * (LMS_PRICE_NO_ROLE: none), the `bytes` read in place of the chunk that
 * parameter word pointed into, and the launch's other reads in place:
 * `known_n` chunks at positions priced above zero, priced at `known_ns`
 * of slowdown in all (0 and 0 when it read none other). `partial`: the
 * reads in place were under a quarter of the launch's bytes, so the
 * compute may have hidden them: the position is priced only when they
 * slowed the launch by clearly more than its compute, or when its price
 * says they could not have been hidden (price.c); `compute` is what the
 * launch's bytes take on the device by its function's line (fnprice.h),
 * when known (else 0). */
typedef struct lms_price_role_read {
    uint32_t role;
    uint64_t bytes;
    double known_ns;
    int known_n;
    bool partial;
    double compute;
    uintptr_t cls;   /* the launch's function in its grid's class (launch.c; 0 or fn: none): prices learned for it too */
} lms_price_role_read;

/* lms_price_learn, with the position's share given by `r` (NULL: none):
 * with other reads, the position is priced at what the slowdown leaves
 * over theirs, as if each read overlapped the compute, when that is half
 * the slowdown or more (price.c). */
void lms_price_learn_read(lms_price *p, uintptr_t fn, uint64_t sig, const uint32_t *remote, int n, uint64_t bytes,
                          double ns, const lms_price_role_read *r);

/* The price (ns of slowdown per byte) of reading chunk `id` in place for
 * a launch of signature `sig`, or a negative number when unknown or
 * learned in an older phase of the signature (price.c). */
double lms_price_of(const lms_price *p, uintptr_t fn, uint64_t sig, uint32_t id);

/* The price of reading chunk `id` in place learned for signature `sig`
 * on grids of the class `cls` (its function's in that class), or a
 * negative number when none was, in the signature's phase, or `cls`
 * names no class (0 or fn). */
double lms_price_in_class(const lms_price *p, uintptr_t fn, uintptr_t cls, uint64_t sig, uint32_t id);

/* lms_price_of, for a launch whose function in its grid's class is
 * `cls`, of a chunk its parameter word `role` points into
 * (LMS_PRICE_NO_ROLE: none known): the price learned for the signature in
 * that class when known; else unknown where the class prices the
 * position (lms_price_role_of_class), else the signature's over every
 * class (price.c). */
double lms_price_of_class(const lms_price *p, uintptr_t fn, uintptr_t cls, uint64_t sig, uint32_t id, uint32_t role);

/* The price (ns of slowdown per byte) of reading in place the chunk that
 * parameter word `role` of a launch of fn points into, learned from fn's
 * launches of any signature (price.c), or negative when unknown; *spread
 * (when not NULL) gets how far those launches' prices stray from it (a
 * mean, in the same unit). */
double lms_price_role(const lms_price *p, uintptr_t fn, uint32_t role, double *spread);

/* lms_price_role, for a launch whose function in its grid's class is
 * `cls` (lms_price_role_read): the class's own price for the position
 * when it stands on LMS_PRICE_CLASS_LAUNCHES launches that agree on it
 * (lms_price_agrees), else the function's (price.c). */
#define LMS_PRICE_CLASS_LAUNCHES 2
double lms_price_role_of_class(const lms_price *p, uintptr_t fn, uintptr_t cls, uint32_t role, double *spread);

/* Whether the launches that priced a position agree on it: the spread
 * lms_price_role gives within half of the price. */
static inline bool lms_price_agrees(double price, double spread)
{
    return price >= 0 && spread <= price / 2;
}

/* The base a timed launch of `sig` (a launch of fn) prices its reads in
 * place against (lms_price_learn): the shortest duration (ns) of the
 * signature or of the function with nothing read in place, whichever is
 * shorter; negative when unknown (a timed launch prices nothing). */
double lms_price_local_base(const lms_price *p, uintptr_t fn, uint64_t sig);
/* The base a slowdown of `sig` (a launch of fn) is measured from: the
 * shortest duration (ns) of the signature, or of the function with
 * nothing read in place, whichever is shorter; negative when unknown. */
double lms_price_base(const lms_price *p, uintptr_t fn, uint64_t sig);

#define LMS_PRICE_PREFETCH_IDS 4   /* chunks of a launch whose prices lms_price_prefetch starts loading */

/* Starts loading the table's lines a launch of `sig` (fn, grid class
 * `cls`) will ask: its own count and bases, and the prices of its first
 * LMS_PRICE_PREFETCH_IDS chunks `ids`, for the signature and in the
 * class. A hint: the launch asks them after its other work. */
void lms_price_prefetch(const lms_price *p, uintptr_t fn, uintptr_t cls, uint64_t sig, const uint32_t *ids, int n);

/* How many launches of `sig` were learned (saturating). */
uint32_t lms_price_seen(const lms_price *p, uint64_t sig);

#endif
