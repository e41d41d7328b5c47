/*
 * price.c — the learned prices of reading in place (see price.h).
 *
 * A launch's slowdown, measured while some of its chunks were read over
 * the link, is spread over those chunks: each gets slowdown / remote bytes
 * for that signature, the lowest seen (a chunk read in place once without
 * cost is cheap there). The slowdown is the duration less a base: the
 * shortest duration of the signature or of the function with nothing
 * read in place, whichever is shorter (the function's launches of other
 * sizes make that base an estimate); with neither, the launch prices
 * nothing (its own duration as the base priced every read at zero, for
 * good). A launch reading in place that ran a quarter faster than the
 * base says the base is of an older phase (the kernel's compute fell):
 * the base and the launch's prices are forgotten, to be learned again
 * from the next launch on the device (the lowest price stays, so a read
 * hidden by the old compute kept reading in place for good). A launch on
 * the device a quarter faster than the signature's shortest there so far
 * says the same from the other side (with nothing read in place since,
 * its prices were never put to the test): the signature enters a new
 * phase, and prices learned in an older one are not answered. So does
 * every signature of a function one of whose launches on the device ran a
 * quarter faster than any of its launches there before (a signature whose
 * chunks are only ever read in place has no launch of its own on the
 * device to tell). A GEMM's operand read once per
 * tile row prices far above its output written once; a read the kernel's
 * compute hides prices zero. A chunk never read in place by a signature
 * has no price for it.
 *
 * A launch whose reads in place were (nearly all) of one chunk, named by
 * the parameter word `role`, also prices that position of its function
 * for every signature: the half-way mean of its latest such launches (a
 * low price reads in place, so it is measured again; a new signature
 * has a price there from its first launch), and the same mean of how far
 * each strayed from it (its spread). A launch that read several chunks in
 * place, all but one at positions priced, prices that one's position by
 * what its slowdown leaves over theirs (lms_price_learn_read: the caller
 * says which, price.h).
 *
 * Per grid class too. A kernel's grid follows the tiles of its output,
 * and which operand it re-reads follows the tiles: the same GEMM over the
 * same buffers with the other tiling re-reads the other one. A timed
 * launch also teaches its prices under its function in its grid's class
 * (launch.c, `cls`): its chunks' for the signature in the class, and its
 * position's (with a count of the launches the class's position stands
 * on). Asked, the class's price answers when it has one: a position's
 * once it stands on LMS_PRICE_CLASS_LAUNCHES launches that agree on it;
 * a chunk's own (lms_price_of_class) when learned in the class, else
 * none where the class prices the position (the signature's lowest
 * price may be of another tiling: the position's price decides), else
 * the signature's over every class (a grid that says nothing of the
 * passes splits a signature into classes that each learn slowly).
 *
 * The table is bounded: when half its slots are taken, and after every
 * RELEARN launches learned, it is cleared and learning starts over (a
 * step's prices come back within a step or two).
 */
#include "price.h"

#include <stdlib.h>
#include <string.h>

#define COUNT_TAG 0xffffffffu   /* the id that keys a signature's count */
#define RELEARN (1u << 16)      /* launches learned before the table starts over */
#define NOISE 16                /* a slowdown under 1/16 of the base is none */
#define CLEAR 1.5               /* a slice read in place priced over 1.5x what the compute may hide (partial_slowdown) */
#define STALE 4                 /* a launch reading in place 1/4 faster than the base: the base is stale */
#define BASE_TAG 0xfffffffeu    /* ... a signature's or a function's shortest duration (ns) */
#define LOCAL_TAG 0xfffffffdu   /* ... a signature's shortest duration with nothing read in place (ns) */
#define ROLE_TAG 0x524f4c45u    /* mixed into a function's key: the signature its roles' prices are kept under */
#define SPREAD_TAG 0x53505244u  /* ... and the one their spreads are kept under */

/* Mixes a value into a hash. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

bool lms_price_init(lms_price *p, uint32_t cap)
{
    *p = (lms_price){.cap = cap};
    void *t = NULL;
    if (cap < LMS_PRICE_LINE || (cap & (cap - 1)) != 0 ||   /* probes mask with cap - 1 */
        posix_memalign(&t, LMS_PRICE_LINE * sizeof *p->t, cap * sizeof *p->t) != 0)
        return false;   /* the table's lines are cache lines (sig_home) */
    memset(t, 0, cap * sizeof *p->t);
    p->t = t;
    return true;
}

void lms_price_destroy(lms_price *p)
{
    free(p->t);
    *p = (lms_price){0};
}

uint64_t lms_price_sig(uintptr_t fn, const uint32_t *ids, int n)
{
    uint64_t h = mix(0x7f4a7c15u, fn);
    for (int i = 0; i < n; i++)
        h = mix(h, ids[i]);
    return h;
}

/* Where a key's probe starts: the 32 bits from bit HOME_SHIFT. */
#define HOME_SHIFT 20
#define HOME_FIELD (0xffffffffull << HOME_SHIFT)

/* The home of signature sig's own keys (its count, base and local base):
 * the first slot of a 64-byte line of the table, the same for the three. */
static uint64_t sig_home(uint64_t sig)
{
    return (mix(sig, 0x484f4d45u) & ~(uint64_t)(LMS_PRICE_LINE - 1)) & 0xffffffffull;
}

/* The key of (sig, id); never 0. A signature's own keys (its COUNT,
 * BASE and LOCAL tags) start their probes at one line (sig_home): a
 * launch asks all three, and three lines of a table of a MiB were three
 * cache misses per launch at 10,000 chunks (bench/allocbench). A chunk's
 * keys stay spread: a launch of 200 chunks would make a run of 200. */
static uint64_t key_of(uint64_t sig, uint32_t id)
{
    uint64_t k = mix(sig, id);
    if (id >= LOCAL_TAG)
        k = (k & ~HOME_FIELD) | sig_home(sig) << HOME_SHIFT;
    return k | 1;
}

/* The slot where key's probe starts (the table has slots). */
static uint32_t home_of(const lms_price *p, uint64_t key)
{
    return (uint32_t)(key >> HOME_SHIFT) & (p->cap - 1);
}

/* The slot of key: where it is, or the empty slot that ends its probe
 * (NULL: the table is full of other keys). */
static lms_price_entry *probe(const lms_price *p, uint64_t key)
{
    if (!p->t)
        return NULL;
    uint32_t i = home_of(p, key);
    for (uint32_t k = 0; k < p->cap; k++, i = (i + 1) & (p->cap - 1))
        if (p->t[i].key == key || p->t[i].key == 0)
            return &p->t[i];
    return NULL;
}

/* Empties the table. */
static void clear(lms_price *p)
{
    for (uint32_t i = 0; i < p->cap; i++)
        p->t[i] = (lms_price_entry){0};
    p->used = 0;
}

/* The slot of key, made when absent (the table is cleared first when half
 * full), or NULL. */
static lms_price_entry *slot(lms_price *p, uint64_t key)
{
    lms_price_entry *e = probe(p, key);
    if (e && e->key == 0 && p->used + 1 > p->cap / 2) {
        clear(p);
        e = probe(p, key);
    }
    if (e && e->key == 0) {
        *e = (lms_price_entry){.key = key, .value = -1};
        p->used++;
    }
    return e;
}

/* The key of function fn's shortest duration on the device (its base). */
static uint64_t fn_key(uintptr_t fn)
{
    return key_of(lms_price_sig(fn, NULL, 0), BASE_TAG);
}

/* Function fn's phase: counted up each time one of fn's launches on the
 * device ran a quarter faster than any of fn's before (lms_price_learn). */
static uint32_t fn_phase(const lms_price *p, uintptr_t fn)
{
    const lms_price_entry *f = probe(p, fn_key(fn));
    return f && f->key ? f->phase : 0;
}

/* The phase of signature sig of function fn: counted up each time a
 * launch of sig on the device ran a quarter faster than any before, and
 * each time fn's phase was (lms_price_learn). */
static uint32_t phase_of(const lms_price *p, uintptr_t fn, uint64_t sig)
{
    const lms_price_entry *own = probe(p, key_of(sig, LOCAL_TAG));
    return (own && own->key ? own->phase : 0) + fn_phase(p, fn);
}

/* Lowers the shortest duration kept under key to ns; returns it. */
static double shortest(lms_price *p, uint64_t key, double ns)
{
    lms_price_entry *e = slot(p, key);
    if (!e)
        return ns;
    if (e->value < 0 || ns < e->value)
        e->value = (float)ns;
    return e->value;
}

/* The key of function fn's price for parameter word `role` (`tag`
 * ROLE_TAG), or of its spread (SPREAD_TAG): lms_price_role. */
static uint64_t role_key(uintptr_t fn, uint32_t tag, uint32_t role)
{
    return key_of(mix(lms_price_sig(fn, NULL, 0), tag), role);
}

/* Teaches position `role` of `key` (function fn, or fn in its grid's
 * class) a launch's price `pv` in fn's phase: the position's
 * price follows its latest launches (half each): a chunk it names is read
 * in place while that price is low, so every such launch measures it
 * again. Its spread is the same mean of how far each launch's price was
 * from it: a position whose launches read their chunk in different ways
 * (the operand re-read 16 times in some, once in others) has a wide one.
 * The launches it stands on are counted (lms_price_role_of_class). */
static void learn_position(lms_price *p, uintptr_t fn, uintptr_t key, uint32_t role, float pv)
{
    uint64_t rkey = role_key(key, ROLE_TAG, role), dkey = role_key(key, SPREAD_TAG, role),
             nkey = role_key(key, COUNT_TAG, role);
    lms_price_entry *r = slot(p, rkey), *d = slot(p, dkey), *k = slot(p, nkey);
    if (!r || !d || !k || r->key != rkey || d->key != dkey || k->key != nkey)
        return;   /* a later slot() cleared the table under an earlier one's entry */
    uint32_t phase = fn_phase(p, fn);   /* after slot(): a table cleared there started fn's phases over */
    if (r->phase != phase)   /* learned in an older phase of fn: starts over */
        r->value = d->value = -1, r->phase = phase;
    float off = r->value < 0 ? 0 : pv > r->value ? pv - r->value : r->value - pv;
    k->value = r->value < 0 || k->value < 0 ? 1 : k->value < 1e6f ? k->value + 1 : k->value;
    d->value = r->value < 0 || d->value < 0 ? off : (d->value + off) / 2;
    r->value = r->value < 0 ? pv : (r->value + pv) / 2;
}

/* The signature `sig` of a launch of fn in its grid's class `cls` (0 or
 * fn: none; then sig itself): its chunks' prices there. */
static uint64_t class_sig(uint64_t sig, uintptr_t fn, uintptr_t cls)
{
    return cls && cls != fn ? mix(sig, cls) : sig;
}

void lms_price_learn(lms_price *p, uintptr_t fn, uint64_t sig, const uint32_t *remote, int n, uint64_t bytes,
                     double ns, uint32_t role)
{
    lms_price_role_read r = {.role = role, .bytes = bytes};
    lms_price_learn_read(p, fn, sig, remote, n, bytes, ns, &r);
}

/* The slowdown that prices the position of a launch's reads in place
 * when they were under a quarter of its bytes (rr->partial; it took `ns`,
 * its base `base`), or -1 for none. A few pieces read in place hide
 * behind any compute, whatever the chunk would cost whole: what the
 * compute may hide is the longer of the base and the launch's expected
 * duration on the device (rr->compute: its function's launches differ in
 * size, and a base of the smallest let a launch of twice its compute
 * pass for a slowdown; an outside helper's 4-operand kernels). Reads that
 * slowed the launch by over CLEAR times that are the link's: what is
 * over it is the position's slowdown, a lower bound on what the whole
 * chunk costs (bench/shapes `operands` at 1.25x at the defaults: a third
 * of the re-read operand read in place at 7.5x the base, its position
 * unpriced). Not at once what could hide: a second helper's launches
 * reading a slice of an operand read once ran exactly twice a base the
 * line matched, and priced that position at 3x what whole reads did
 * (its `mops` at 1.4x over steps 25-36, 0.76 -> 2.32x the better of
 * `none` and `lru`; 0.75 with the margin). A smaller slowdown prices
 * the position only where its price says the reads could not have been
 * hidden (its price times the bytes twice what the compute may hide):
 * then it is the position's price that is wrong. Without that,
 * slowdowns too small to teach never pulled a price down: the helper's
 * random pairs whose re-read operand moves to the other position at
 * step 6 kept the dear price of the one now read once (seeds 1-30 at
 * 1.25x at the defaults: 1.03x the better of `none` and `lru` on
 * average, 0.84 with it; docs/PERFORMANCE.md, "Twenty-seventh round"). */
static double partial_slowdown(const lms_price *p, uintptr_t fn, const lms_price_role_read *rr, double ns,
                               double base)
{
    double hide = rr->compute > base ? rr->compute : base;
    double over = ns - hide;
    if (over > hide * CLEAR)
        return over;
    double was = lms_price_role(p, fn, rr->role, NULL);
    if (!(was > 0 && was * (double)rr->bytes >= 2 * hide))
        return -1;
    return over > hide / NOISE ? over : 0;
}

void lms_price_learn_read(lms_price *p, uintptr_t fn, uint64_t sig, const uint32_t *remote, int n, uint64_t bytes,
                          double ns, const lms_price_role_read *rr)
{
    uint32_t role = rr && rr->bytes > 0 ? rr->role : LMS_PRICE_NO_ROLE;
    if (++p->learned % RELEARN == 0)
        clear(p);   /* prices only fall: start over now and then */
    lms_price_entry *c = slot(p, key_of(sig, COUNT_TAG));
    if (c)
        c->value = c->value < 0 ? 1 : c->value < 1e6f ? c->value + 1 : c->value;
    if (!(ns > 0) || ns > 1e15)
        return;   /* no duration, or none a kernel takes (0: a timer's reading; as a base it priced
                     every later read in place at its whole duration) */
    uint64_t fkey = fn_key(fn);
    const lms_price_entry *f0 = probe(p, fkey);
    float fn_was = f0 && f0->key ? f0->value : -1;   /* before the next line: a launch naming no chunk is fn's signature */
    shortest(p, key_of(sig, BASE_TAG), ns);
    if (bytes == 0) {
        /* Nothing read in place: what sig takes on the device, and the
         * function. Far faster than ever before there: a new phase. */
        lms_price_entry *own = slot(p, key_of(sig, LOCAL_TAG));
        if (own && own->value >= 0 && ns < own->value - own->value / STALE)
            own->phase++;
        if (own && (own->value < 0 || ns < own->value))
            own->value = (float)ns;
        lms_price_entry *f = slot(p, fkey);
        if (f && fn_was >= 0 && ns < fn_was - fn_was / STALE)
            f->phase++;   /* the function's too: a signature read in place only has no launch of its own to tell */
        if (f && (f->value < 0 || ns < f->value))
            f->value = (float)ns;
        return;
    }
    /* The base (lms_price_local_base). Without one, no price: this
     * launch's own duration (every launch of sig read something in place
     * so far) would price its reads at nothing, and the lowest price
     * stays. */
    double base = lms_price_local_base(p, fn, sig);
    lms_price_entry *own = probe(p, key_of(sig, LOCAL_TAG)), *f = probe(p, fkey);
    if (base < 0)
        return;
    if (ns < base - base / STALE) {
        /* Faster reading in place than the base on the device: the base
         * is of an older phase (the kernel's compute fell), and so are
         * the prices learned against it, the lowest of which stays. All
         * are forgotten until a launch on the device sets a new base. */
        lms_price_entry *stale[2] = {own, f};
        for (int i = 0; i < 2; i++)
            if (stale[i] && stale[i]->key)
                stale[i]->value = -1;
        uint64_t csig = class_sig(sig, fn, rr ? rr->cls : 0);
        for (int i = 0; i < n; i++) {
            lms_price_entry *e = probe(p, key_of(sig, remote[i]));
            if (e && e->key)
                e->value = -1;
            e = csig != sig ? probe(p, key_of(csig, remote[i])) : NULL;
            if (e && e->key)
                e->value = -1;
        }
        uintptr_t keys[2] = {fn, rr && rr->cls ? rr->cls : fn};
        for (int i = 0; i < 2 && role != LMS_PRICE_NO_ROLE; i++) {
            lms_price_entry *r = probe(p, role_key(keys[i], ROLE_TAG, role));
            if (r && r->key)
                r->value = -1;
        }
        return;
    }
    double slow = ns - base;
    if (slow < base / NOISE)
        slow = 0;   /* within what launches of one signature vary by */
    float v = (float)(slow / (double)bytes);
    double mine = slow;   /* the position's slowdown */
    if (role != LMS_PRICE_NO_ROLE && rr->partial)
        mine = partial_slowdown(p, fn, rr, ns, base);
    if (!(mine >= 0))
        role = LMS_PRICE_NO_ROLE;
    if (role != LMS_PRICE_NO_ROLE && rr->known_n > 0) {
        /* The position's share. A kernel's reads over the link overlap
         * its compute (the base): one priced p alone took p x bytes + base
         * over the link, and together the launch took the sum of those
         * less the base once. What is left over the others' reads and the
         * base is this position's slowdown alone. It is learned only when
         * it is half the slowdown or more: the others' prices come from
         * other launches, which may have read those positions otherwise
         * (a position re-read in some launches and read once in others:
         * the share left a re-read one a fifteenth of its price); and
         * nothing left prices nothing (a zero would read in place for
         * good: nothing prices a position its launches always read
         * beside others). */
        mine = slow - rr->known_ns - rr->known_n * base;
        if (!(mine > 0) || mine < slow / 2)
            role = LMS_PRICE_NO_ROLE;
    }
    if (role != LMS_PRICE_NO_ROLE) {
        float pv = (float)(mine / (double)rr->bytes);
        learn_position(p, fn, fn, role, pv);
        if (rr->cls && rr->cls != fn)
            learn_position(p, fn, rr->cls, role, pv);
    }
    uint64_t csig = class_sig(sig, fn, rr ? rr->cls : 0);
    for (int i = 0; i < n; i++) {
        lms_price_entry *e = slot(p, key_of(sig, remote[i]));
        lms_price_entry *ce = csig != sig ? slot(p, key_of(csig, remote[i])) : NULL;
        uint32_t phase = phase_of(p, fn, sig);   /* after slot(): a table cleared there started sig's phases over */
        /* The lowest price of the phase stays (reads in place that the
         * kernel hid at one amount may show at a larger one: a price is
         * the best case seen, relearned when the table starts over). */
        lms_price_entry *es[2] = {e, ce};
        for (int j = 0; j < 2; j++)
            if (es[j] && es[j]->key && (es[j]->value < 0 || es[j]->phase != phase || v < es[j]->value))
                es[j]->value = v, es[j]->phase = phase;
    }
}

double lms_price_of(const lms_price *p, uintptr_t fn, uint64_t sig, uint32_t id)
{
    const lms_price_entry *e = probe(p, key_of(sig, id));
    if (!e || !e->key || e->value < 0)
        return -1;
    return e->phase == phase_of(p, fn, sig) ? e->value : -1;   /* learned in an older phase: none */
}

/* The price of position `role` of `key` learned in `phase` (its spread
 * in *spread, when not NULL), or -1. */
static double position_at(const lms_price *p, uintptr_t key, uint32_t role, uint32_t phase, double *spread)
{
    const lms_price_entry *e = role != LMS_PRICE_NO_ROLE ? probe(p, role_key(key, ROLE_TAG, role)) : NULL;
    const lms_price_entry *d = role != LMS_PRICE_NO_ROLE ? probe(p, role_key(key, SPREAD_TAG, role)) : NULL;
    if (spread)
        *spread = d && d->key && d->value >= 0 ? d->value : 0;
    return e && e->key && e->value >= 0 && e->phase == phase ? e->value : -1;   /* an older phase's: none */
}

double lms_price_role(const lms_price *p, uintptr_t fn, uint32_t role, double *spread)
{
    return position_at(p, fn, role, fn_phase(p, fn), spread);
}

/* The price of position `role` of fn in its grid's class `cls` when the
 * class has one of its own that stands on LMS_PRICE_CLASS_LAUNCHES
 * launches and its launches agree on it (its spread in *spread), else
 * -1: a grid that says only half the time which operand is re-read
 * gives each class both ways of reading, and a class taken on the few
 * launches of one way sent the other's reads in place (an outside
 * helper's GEMMs whose grid turned every 2 steps and passes every 4: at
 * 3x at the defaults 6.26 -> 7.40x in-memory; 6.54 agreeing). */
static double class_position(const lms_price *p, uintptr_t fn, uintptr_t cls, uint32_t role, double *spread)
{
    if (!cls || cls == fn || role == LMS_PRICE_NO_ROLE)
        return -1;
    const lms_price_entry *k = probe(p, role_key(cls, COUNT_TAG, role));
    if (!k || !k->key || k->value < LMS_PRICE_CLASS_LAUNCHES)
        return -1;
    double d = 0, price = position_at(p, cls, role, fn_phase(p, fn), &d);
    if (!lms_price_agrees(price, d))
        return -1;
    if (spread)
        *spread = d;
    return price;
}

double lms_price_role_of_class(const lms_price *p, uintptr_t fn, uintptr_t cls, uint32_t role, double *spread)
{
    double price = class_position(p, fn, cls, role, spread);
    return price >= 0 ? price : lms_price_role(p, fn, role, spread);
}

double lms_price_in_class(const lms_price *p, uintptr_t fn, uintptr_t cls, uint64_t sig, uint32_t id)
{
    uint64_t csig = class_sig(sig, fn, cls);
    if (csig == sig)
        return -1;   /* no class */
    const lms_price_entry *e = probe(p, key_of(csig, id));
    return e && e->key && e->value >= 0 && e->phase == phase_of(p, fn, sig) ? e->value : -1;
}

double lms_price_of_class(const lms_price *p, uintptr_t fn, uintptr_t cls, uint64_t sig, uint32_t id, uint32_t role)
{
    double own = lms_price_in_class(p, fn, cls, sig, id);
    if (own >= 0)
        return own;
    if (class_sig(sig, fn, cls) != sig && class_position(p, fn, cls, role, NULL) >= 0)
        return -1;   /* the class prices the position: the signature's lowest may be another tiling's */
    return lms_price_of(p, fn, sig, id);
}

double lms_price_local_base(const lms_price *p, uintptr_t fn, uint64_t sig)
{
    const lms_price_entry *own = probe(p, key_of(sig, LOCAL_TAG)), *f = probe(p, fn_key(fn));
    double base = own && own->key && own->value >= 0 ? own->value : -1;
    if (f && f->key && f->value >= 0 && (base < 0 || f->value < base))
        base = f->value;
    return base;
}

double lms_price_base(const lms_price *p, uintptr_t fn, uint64_t sig)
{
    const lms_price_entry *b = probe(p, key_of(sig, BASE_TAG));
    const lms_price_entry *f = probe(p, fn_key(fn));
    double base = b && b->key && b->value >= 0 ? b->value : -1;
    if (f && f->key && f->value >= 0 && (base < 0 || f->value < base))
        base = f->value;
    return base;
}

void lms_price_prefetch(const lms_price *p, uintptr_t fn, uintptr_t cls, uint64_t sig, const uint32_t *ids, int n)
{
    if (!p->t)
        return;
    __builtin_prefetch(&p->t[home_of(p, key_of(sig, COUNT_TAG))]);   /* the line of all three */
    uint64_t csig = class_sig(sig, fn, cls);
    for (int i = 0; i < n && i < LMS_PRICE_PREFETCH_IDS; i++) {
        __builtin_prefetch(&p->t[home_of(p, key_of(sig, ids[i]))]);
        if (csig != sig)
            __builtin_prefetch(&p->t[home_of(p, key_of(csig, ids[i]))]);
    }
}

uint32_t lms_price_seen(const lms_price *p, uint64_t sig)
{
    const lms_price_entry *e = probe(p, key_of(sig, COUNT_TAG));
    return e && e->key && e->value > 0 ? (uint32_t)e->value : 0;
}
