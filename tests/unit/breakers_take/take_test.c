/*
 * take_test.c — acting deep's room moves under hostile conditions
 * (src/common/plan.c, give_room and take_back): a donor larger than its
 * taker, a chain of moves, a taker evicted or pinned, noisy prices, a
 * failing fetch, and random workloads checked for exact accounting. One
 * case per meson test.
 */
#include <stdlib.h>
#include "plan_steps.h"
#include "rig.h"

#define STEPS 12

/* ---- baseline: the room_taken_back setup in the rig ---------------------- */
/* L0 = B on {1,2}; L1 = A on {0}. A: 5 when off; B's: 1 with both off. */
static double rereads_price(rig *r, lms_plan_chunk *c)
{
    int off = rig_off(r);
    return c->id == 0 ? (off ? 5 : 0) : off >= 2 ? 1 : 0;
}
static uint64_t hides_one(rig *r) { (void)r; return 1; }

static void setup_rereads(rig *r, uint64_t room, uint32_t n)
{
    rig_init(r, room, n);
    r->nl = 2;
    r->n[0] = 2, r->ids[0][0] = 1, r->ids[0][1] = 2;
    r->n[1] = 1, r->ids[1][0] = 0;
    r->price = rereads_price;
    r->hides = hides_one;
}

static void baseline(void)
{
    static rig r;
    double cost[STEPS];
    uint64_t moved[STEPS];
    setup_rereads(&r, 1, 3);
    rig_run(&r, STEPS, cost, moved);
    for (int s = 6; s < STEPS; s++) {
        CHECK_NEAR(cost[s], 2, 0);   /* B's two chunks at 1 each: the original's "1" */
        CHECK_EQ_U(moved[s], 0);
    }
    CHECK(!r.bad);
}

/* ---- a donor larger than its taker takes its room back ------------------- */
/* A (chunk 0) is 2 units, B's chunks 1 unit each, room 2. A's launch says it
 * hides 2 (it re-reads: 5 per unit when off), B's launch hides 1. */
static uint64_t hides_by_launch(rig *r) { return r->j == 1 ? 2 : r->j == 0 ? 1 : 0; }

static void bigger_donor(void)
{
    static rig r;
    double cost[STEPS];
    uint64_t moved[STEPS];
    setup_rereads(&r, 2, 3);
    r.f.chunks[0].charge = 2;
    r.hides = hides_by_launch;
    rig_run(&r, STEPS, cost, moved);
    CHECK(!r.bad);
    /* A takes its room back (its loss 10 a step > the 1 the move saved):
     * B's two chunks read in place again, 1 each */
    CHECK(r.f.chunks[0].resident);
    CHECK_NEAR(cost[STEPS - 1], 2, 0);
}

/* ---- a chain of moves A -> B -> C: A takes the room back from C ---------- */
/* Chunks A=0, B=1, C=2 of 2 units each, room 2; launches LB, LC, LA, one
 * chunk each. LA says it hides 2 (it re-reads A: 5 per unit off, its
 * price learned from step 6), LB and LC hide 1 (each 1 per unit off), LB
 * 2 from step 4 (its hides re-measured). */
static double chain_price(rig *r, lms_plan_chunk *c)
{
    if (c->id == 0)
        return r->s < 6 ? -1 : 5;
    return 1;
}
static uint64_t chain_hides(rig *r)
{
    return r->j == 2 ? 2 : r->j == 0 && r->s >= 4 ? 2 : r->j < 2 ? 1 : 0;
}
static void setup_chain(rig *r)
{
    rig_init(r, 2, 3);
    for (int i = 0; i < 3; i++)
        r->f.chunks[i].charge = 2;
    r->nl = 3;
    r->n[0] = 1, r->ids[0][0] = 1;   /* LB */
    r->n[1] = 1, r->ids[1][0] = 2;   /* LC */
    r->n[2] = 1, r->ids[2][0] = 0;   /* LA */
    r->price = chain_price;
    r->hides = chain_hides;
}
static void chain(void)
{
    static rig r;
    double cost[STEPS];
    uint64_t moved[STEPS];
    setup_chain(&r);
    rig_run(&r, STEPS, cost, moved);
    CHECK(!r.bad);
    /* A's loss (10 a step) over what its move saved (2) brings A back */
    CHECK(cost[STEPS - 1] < 10);
}

/* ---- a taker pinned for a moment: the donor asks again later ------------- */
/* The baseline, with B's chunk 1 pinned (a launch on another thread, not
 * yet recorded; or a free under way, put back) while A's launch of step 2
 * is planned: A is marked kept, nothing moves, A pays 5 a step for good. */
static void pin_one(rig *r)
{
    lms_plan_chunk *b = &r->f.chunks[1];
    if (r->s == 2 && r->j == 1)
        lms_plan_pin(&r->plan, b);
    if (r->s == 2 && r->j == 2)
        lms_plan_used(&r->plan, b, b->last_use);   /* the pin let go, its use as it was */
}
static void transient_pin(void)
{
    static rig r;
    double cost[STEPS];
    uint64_t moved[STEPS];
    setup_rereads(&r, 1, 3);
    r.before = pin_one;
    rig_run(&r, STEPS, cost, moved);
    CHECK(!r.bad);
    CHECK_NEAR(cost[STEPS - 1], 2, 0);   /* as the baseline, A takes back at a later step */
}

/* ---- one noisy price does not undo a move -------------------------------- */
/* A's true cost off the device is 0.5 (below the 1 B's move saves: the move
 * is right), measured 5 once (step 6). */
static double noisy_a_price(rig *r, lms_plan_chunk *c)
{
    int off = rig_off(r);
    if (c->id == 0)
        return !off ? 0 : r->s == 6 ? 5 : 0.5;
    return off >= 2 ? 1 : 0;
}
static void noisy_take_back(void)
{
    static rig r;
    double cost[STEPS];
    uint64_t moved[STEPS];
    setup_rereads(&r, 1, 3);
    r.price = noisy_a_price;
    rig_run(&r, STEPS, cost, moved);
    CHECK(!r.bad);
    CHECK_NEAR(cost[5], 0.5, 0);          /* A reads in place at 0.5, B none */
    CHECK_NEAR(cost[STEPS - 1], 0.5, 0);  /* one outlier does not undo it for good */
}

/* ---- one noisy gain does not block a take-back --------------------------- */
/* A re-reads (5 when off) but its price is learned only from step 6; B's
 * price, measured at the take (step 2), was 50 once (else 1). */
static double noisy_gain_price(rig *r, lms_plan_chunk *c)
{
    int off = rig_off(r);
    if (c->id == 0)
        return r->s < 6 ? -1 : off ? 5 : 0;
    return off >= 2 ? (r->s == 2 ? 50 : 1) : 0;
}
static void noisy_gain(void)
{
    static rig r;
    double cost[STEPS];
    uint64_t moved[STEPS];
    setup_rereads(&r, 1, 3);
    r.price = noisy_gain_price;
    rig_run(&r, STEPS, cost, moved);
    CHECK(!r.bad);
    CHECK_NEAR(cost[STEPS - 1], 2, 0);   /* A (5) takes back from B (1 a chunk) */
}

/* ---- a taker whose fetch fails does not evict a donor every step --------- */
/* Donors D0..D3 (chunks 0-3, 2 units, their launches hide 2), room 4: two
 * resident. Taker T (chunk 4, 2 units, its launch hides 1, price 1 off)
 * cannot be fetched (ops.fetch fails for it). */
static double ff_price(rig *r, lms_plan_chunk *c) { (void)r; return c->id == 4 ? 1 : -1; }
static uint64_t ff_hides(rig *r) { return r->j == 0 ? 1 : 2; }
static void fetch_fails(void)
{
    static rig r;
    double cost[STEPS];
    uint64_t moved[STEPS];
    rig_init(&r, 4, 5);
    for (int i = 0; i < 5; i++)
        r.f.chunks[i].charge = 2;
    r.nl = 5;
    for (int j = 0; j < 5; j++)
        r.n[j] = 1, r.ids[j][0] = j == 0 ? 4 : (uint32_t)j - 1;   /* T first, then D0..D3 */
    r.price = ff_price;
    r.hides = ff_hides;
    r.fail_fetch[4] = true;
    rig_run(&r, 3, cost, moved);   /* the room filled, the first take tried (step 2) */
    uint64_t ev0 = r.f.evictions, fe0 = r.f.fetches;
    rig_run(&r, STEPS, cost, moved);
    if (r.verbose)
        fprintf(stderr, "fetch_fails: %llu evictions, %llu fetches over %d more steps\n",
                (unsigned long long)(r.f.evictions - ev0), (unsigned long long)(r.f.fetches - fe0), STEPS);
    CHECK(!r.bad);
    CHECK_EQ_U(r.f.evictions - ev0, 0);   /* a failed take is not repeated every step (the old code: one a step) */
}

/* ---- random workloads: the budget and the resident set stay exact ----- */
static uint64_t rng_s;
static uint32_t rnd(uint32_t n)
{
    rng_s = rng_s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_s >> 33) % n;
}

/* Draws launch j's r->n[j] chunk ids among n, distinct within the launch. */
static void draw_ids(rig *r, int j, uint32_t n)
{
    for (int i = 0; i < r->n[j]; i++) {
        uint32_t id;
        bool dup;
        do {
            id = rnd(n);
            dup = false;
            for (int k = 0; k < i; k++)
                dup |= r->ids[j][k] == id;
        } while (dup);
        r->ids[j][i] = id;
    }
}

typedef struct fz {
    rig r;                     /* first */
    bool dead[FAKE_ROOM_MAX];
    int mode;                  /* price mode */
} fz;
static lms_plan_chunk *fz_lookup(void *ctx, uint32_t id)
{
    fz *z = ctx;
    return id < z->r.f.n && !z->dead[id] ? &z->r.f.chunks[id] : NULL;
}
static double fz_price(rig *r, lms_plan_chunk *c)
{
    fz *z = (fz *)r;
    static const double v[] = {-1, 0, 0.5, 1, 5, 1e9, 1e-9};
    switch (z->mode) {
    case 0: return v[rnd(7)];
    case 1: return (r->s % 2 ? 1 : -1) * (double)(1 + c->id % 3);   /* flips sign every step */
    default: return rig_off(r) ? 1 + (double)(c->id % 2) : 0;
    }
}
static uint64_t fz_hides(rig *r) { (void)r; return rnd(5); }
static void fz_check(fz *z, const char *where)
{
    rig *r = &z->r;
    uint64_t sum = 0, vb = 0;
    int nres = 0, nv = 0;
    for (uint32_t i = 0; i < r->f.n; i++) {
        lms_plan_chunk *c = &r->f.chunks[i];
        if (z->dead[i] || !c->resident)
            continue;
        sum += c->charge, nres++;
        if (c->pins == 0)
            vb += c->charge, nv++;
    }
    if (sum != r->f.used || r->f.used > r->f.room || nres != r->plan.nresident || vb != r->plan.victim_bytes ||
        nv != r->plan.victims.n || r->plan.ndonors < 0 || r->plan.ndonors > LMS_PLAN_DONORS) {
        fprintf(stderr, "fuzz seed %llu %s step %d j %d: used %llu sum %llu room %llu nres %d/%d vb %llu/%llu nv %d/%d\n",
                (unsigned long long)rng_s, where, r->s, r->j, (unsigned long long)r->f.used, (unsigned long long)sum,
                (unsigned long long)r->f.room, nres, r->plan.nresident, (unsigned long long)vb,
                (unsigned long long)r->plan.victim_bytes, nv, r->plan.victims.n);
        exit(1);
    }
}
static uint64_t fz_gave, fz_kept;
static void fz_one(uint64_t seed)
{
    static fz z;
    rng_s = seed;
    memset(&z, 0, sizeof z);
    rig *r = &z.r;
    uint32_t n = 4 + rnd(16);
    rig_init(r, 2 + rnd(8), n);
    for (uint32_t i = 0; i < n; i++)
        r->f.chunks[i].charge = 1 + rnd(3), r->fail_fetch[i] = rnd(10) == 0;
    r->nl = 2 + rnd(RIG_MAXL - 1);
    for (int j = 0; j < r->nl; j++) {
        r->n[j] = 1 + (int)rnd(3);
        draw_ids(r, j, n);
    }
    z.mode = (int)rnd(3);
    r->price = fz_price;
    r->hides = fz_hides;
    lms_plan_ops ops = fake_room_ops();
    ops.fetch = rig_fetch, ops.evict = rig_evict, ops.price = rig_price, ops.hides = rig_hides;
    ops.lookup = fz_lookup;
    int steps = 10 + (int)rnd(20);
    uint32_t pinned = UINT32_MAX;
    for (int s = 0; s < steps; s++) {
        r->s = s;
        for (int j = 0; j < r->nl + RIG_FILL; j++) {
            r->j = j;
            /* events between launches */
            uint32_t e = rnd(40);
            if (e == 0) {   /* free a chunk */
                uint32_t id = rnd(n);
                if (!z.dead[id] && id != pinned && r->f.chunks[id].pins == 0) {
                    lms_plan_chunk *c = &r->f.chunks[id];
                    if (c->resident)
                        r->f.used -= c->charge;
                    lms_plan_forget(&r->plan, c);
                    z.dead[id] = true;
                }
            } else if (e == 1) {   /* an id made again (reused), zeroed */
                uint32_t id = rnd(n);
                if (z.dead[id]) {
                    z.dead[id] = false;
                    r->f.chunks[id] = (lms_plan_chunk){.id = id, .charge = 1 + rnd(3)};
                }
            } else if (e == 2 && pinned == UINT32_MAX) {   /* another launch in flight */
                uint32_t id = rnd(n);
                if (!z.dead[id]) {
                    pinned = id;
                    lms_plan_pin(&r->plan, &r->f.chunks[id]);
                }
            } else if (e == 3 && pinned != UINT32_MAX) {
                lms_plan_used(&r->plan, &r->f.chunks[pinned], r->seq);
                pinned = UINT32_MAX;
            } else if (e == 4) {   /* a device request */
                uint64_t b = 1 + rnd(3);
                if (lms_plan_make_room(&r->plan, &ops, r, b))
                    r->f.used -= b;   /* and freed again at once */
            } else if (e == 5) {
                r->f.room = 2 + rnd(8);   /* the room changes */
                while (r->f.used > r->f.room && r->plan.victims.n > 0) {   /* shrink: evict */
                    if (!lms_plan_make_room(&r->plan, &ops, r, 0)) break;
                    break;
                }
                if (r->f.used > r->f.room)
                    r->f.room = r->f.used;
            }
            fz_check(&z, "event");
            int k = 0;
            lms_plan_chunk *mine[4] = {0};
            uint32_t ids[4];
            if (j < r->nl)
                for (int i = 0; i < r->n[j]; i++)
                    if (!z.dead[r->ids[j][i]]) {
                        ids[k] = r->ids[j][i];
                        mine[k] = &r->f.chunks[ids[k]];
                        lms_plan_pin(&r->plan, mine[k]);
                        k++;
                    }
            r->mine = mine, r->m = k;
            r->plan.mode = rnd(20) ? LMS_PLAN_DEEP : (int)rnd(LMS_PLAN_MODES);
            lms_plan_launch(&r->plan, &ops, r, ++r->seq, 300 + (uintptr_t)j, ids, k, mine, k);
            fz_check(&z, "launch");
            for (int i = 0; i < k; i++)
                lms_plan_used(&r->plan, mine[i], r->seq);
            fz_check(&z, "used");
        }
    }
    for (uint32_t i = 0; i < n; i++)
        fz_gave += r->f.chunks[i].gave_to != 0, fz_kept += r->f.chunks[i].kept;
    lms_plan_destroy(&r->plan);
}
static void fuzz(void)
{
    const char *e = getenv("FUZZ_N");
    int runs = e ? atoi(e) : 3000;
    for (int i = 0; i < runs; i++)
        fz_one(0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1));
    fprintf(stderr, "fuzz: %d runs, %llu chunks left giving, %llu kept\n", runs, (unsigned long long)fz_gave,
            (unsigned long long)fz_kept);
}

/* ---- a taker evicted for another reason: the room is made again ---------- */
/* The baseline with A's price learned late (step 6), launch B's chunks
 * listed {2, 1} from step 4; at step 3 a device request holds one unit
 * (evicting the taker, chunk 1) and lets it go at step 4: chunk 2 comes back into the free
 * unit (fetch_free), so A's room is held by B's launch again, but not by
 * the chunk A remembers. */
static double late_a_price(rig *r, lms_plan_chunk *c)
{
    int off = rig_off(r);
    if (c->id == 0)
        return r->s < 6 ? -1 : off ? 5 : 0;
    return off >= 2 ? 1 : 0;
}
static lms_plan_ops *te_ops;
static void te_before(rig *r)
{
    if (r->j != 5)
        return;
    if (r->s == 3) {
        CHECK(lms_plan_make_room(&r->plan, te_ops, r, 1));   /* held */
        r->held = 1;
        r->ids[0][0] = 2, r->ids[0][1] = 1;   /* B's launch lists chunk 2 first from now on */
    }
    if (r->s == 4)
        r->f.used -= 1, r->held = 0;   /* released */
}
static void taker_evicted(void)
{
    static rig r;
    double cost[STEPS];
    uint64_t moved[STEPS];
    setup_rereads(&r, 1, 3);
    r.price = late_a_price;
    r.before = te_before;
    static lms_plan_ops ops;
    ops = fake_room_ops();
    ops.fetch = rig_fetch, ops.evict = rig_evict, ops.price = rig_price, ops.hides = rig_hides;
    te_ops = &ops;
    rig_run(&r, STEPS, cost, moved);
    CHECK_NEAR(cost[STEPS - 1], 2, 0);   /* A (5) takes the room back from B (1 a chunk) */
}

/* ---- two chunks with launches that hide each one's read, on a dip ---------- */
/* X (0) and Z (1), 2 units each, room 2; L0 = {X}, L1 = {Z}; each reads its
 * chunk in place at 1 a unit when off (its loss equals the move's gain:
 * no take-back). Each launch hides 2 but dips to 1 now and then (what a
 * launch hides moves with the measured cost of a fetch): L0 at steps 4k,
 * L1 at steps 4k+2. A chunk that gave its room comes back only by a
 * take-back: the room moves once, not on every dip (the old code: 50
 * fetches in 100 steps). */
static double pp_price(rig *r, lms_plan_chunk *c)
{
    (void)c;
    return rig_off(r) ? 1 : 0;
}
static uint64_t pp_hides(rig *r)
{
    if (r->j >= 2)
        return 0;
    return (r->j == 0 && r->s % 4 == 0) || (r->j == 1 && r->s % 4 == 2) ? 1 : 2;
}
static void ping_pong(void)
{
    enum { N = 200 };
    static rig r;
    static double cost[N];
    static uint64_t moved[N];
    rig_init(&r, 2, 2);
    r.f.chunks[0].charge = r.f.chunks[1].charge = 2;
    r.nl = 2;
    r.n[0] = 1, r.ids[0][0] = 0;
    r.n[1] = 1, r.ids[1][0] = 1;
    r.price = pp_price;
    r.hides = pp_hides;
    rig_run(&r, N, cost, moved);
    uint64_t late = 0;
    for (int s = N / 2; s < N; s++)
        late += moved[s];
    CHECK(!r.bad);
    CHECK_EQ_U(late, 0);
}

/* ---- the room's holder is a chunk of the asking launch --------------------- */
/* A=0, B=1, C=2, D=3, 2 units each, room 4; LB = {B}, LD = {D}, LA = {A, C}.
 * Each reads its chunks in place at 1 a unit when off; A's price is
 * unknown until step 6, then 5 (a kernel re-reading A: a loss of 10 over
 * the 2 its move saved). What the launches hide moves A -> B (step 2),
 * C -> D (step 3), B -> C (step 4): the room A gave is held by C, which
 * A's own launch pins. A takes its room back (from elsewhere) instead of
 * asking again for ever (the old code: 12 a step for good). */
static double own_price(rig *r, lms_plan_chunk *c)
{
    if (c->id == 0)
        return r->s < 6 ? -1 : 5;
    return rig_off(r) ? 1 : 0;
}
static uint64_t own_hides(rig *r)
{
    switch (r->j) {
    case 0: return r->s < 4 ? 1 : 2;
    case 1: return 1;
    case 2: return r->s < 4 ? 4 : 2;
    default: return 0;
    }
}
static void own_holder(void)
{
    enum { N = 40 };
    static rig r;
    double cost[N];
    uint64_t moved[N];
    rig_init(&r, 4, 4);
    for (int i = 0; i < 4; i++)
        r.f.chunks[i].charge = 2;
    r.nl = 3;
    r.n[0] = 1, r.ids[0][0] = 1;
    r.n[1] = 1, r.ids[1][0] = 3;
    r.n[2] = 2, r.ids[2][0] = 0, r.ids[2][1] = 2;
    r.price = own_price;
    r.hides = own_hides;
    rig_run(&r, N, cost, moved);
    CHECK(!r.bad);
    CHECK(r.f.chunks[0].resident && r.f.chunks[0].kept);
    CHECK(cost[N - 1] < 12);
}

/* ---- a dear price from before a mode switch -------------------------------- */
/* X=0 (L0, hides 2: offered) and T=1 (L1, hides 1), 2 units each, room 2.
 * T's reads in place are hidden (price 0) but measured 5 at step 3 and
 * step 12 (noise); steps 4-11 run acting (as a timed step of another mode
 * does). Two launches in a row are two of acting deep's: no take at step
 * 12 (the old code took, on the two outliers nine steps apart). */
static double sd_price(rig *r, lms_plan_chunk *c)
{
    if (c->id == 1)
        return rig_off(r) && (r->s == 3 || r->s == 12) ? 5 : 0;
    return 0;
}
static uint64_t sd_hides(rig *r)
{
    return r->j == 0 ? 2 : r->j == 1 ? 1 : 0;
}
static int sd_mode(rig *r)
{
    return r->s >= 4 && r->s < 12 ? LMS_PLAN_ACT : LMS_PLAN_DEEP;
}
static void stale_dear(void)
{
    static rig r;
    rig_init(&r, 2, 2);
    r.f.chunks[0].charge = r.f.chunks[1].charge = 2;
    r.nl = 2;
    r.n[0] = 1, r.ids[0][0] = 0;
    r.n[1] = 1, r.ids[1][0] = 1;
    r.price = sd_price;
    r.hides = sd_hides;
    r.mode_of = sd_mode;
    uint64_t ev_late = 0;
    for (int s = 0; s < 16; s++) {
        r.s = s;
        uint64_t e0 = r.f.evictions;
        rig_step(&r, NULL, &r.seq);
        if (s >= 12)
            ev_late += r.f.evictions - e0;
    }
    CHECK(!r.bad);
    CHECK_EQ_U(ev_late, 0);
}

/* ---- fixed random workloads settle --------------------------------------------- */
/* Workloads drawn from a seed (chunks of 1-4 units, a room of 2-13, 2-8
 * launches of 1-4 chunks, prices fixed per chunk, rising with the chunks
 * read in place or halving past two, what each launch hides fixed), run
 * 300 steps: over the last 150 no chunk gives or takes back (which chunk
 * gave its room and which were kept stay the same at each step's end). Workload
 * 2784 churned before: a giver came back into free room once its taker was
 * evicted for another reason, and gave again, every other step. */
typedef struct fixed {
    rig r;                         /* first */
    double base[FAKE_ROOM_MAX];
    uint64_t hide[RIG_MAXL];
    int pmode;
} fixed;
static double fixed_price(rig *r, lms_plan_chunk *c)
{
    fixed *w = (fixed *)r;
    int off = rig_off(r);
    return w->pmode == 0 ? w->base[c->id] : w->pmode == 1 ? w->base[c->id] * off
                                                            : off >= 2 ? w->base[c->id] : w->base[c->id] / 4;
}
static uint64_t fixed_hides(rig *r)
{
    return r->j < r->nl ? ((fixed *)r)->hide[r->j] : 0;
}
static bool fixed_settles(uint64_t seed)
{
    static fixed w;
    memset(&w, 0, sizeof w);
    rng_s = seed;
    rig *r = &w.r;
    uint32_t n = 4 + rnd(20);
    rig_init(r, 2 + rnd(12), n);
    static const double v[] = {-1, 0, 0.5, 1, 2, 5, 20};
    for (uint32_t i = 0; i < n; i++) {
        r->f.chunks[i].charge = 1 + rnd(4);
        w.base[i] = v[rnd(7)];
    }
    r->nl = 2 + rnd(RIG_MAXL - 1);
    for (int j = 0; j < r->nl; j++) {
        r->n[j] = 1 + (int)rnd(4);
        w.hide[j] = rnd(8);
        draw_ids(r, j, n);
    }
    w.pmode = (int)rnd(3);
    r->price = fixed_price;
    r->hides = fixed_hides;
    uint32_t gave[FAKE_ROOM_MAX];
    bool kept[FAKE_ROOM_MAX], settled = true;
    for (int s = 0; s < 300; s++) {
        r->s = s;
        rig_step(r, NULL, &r->seq);
        for (uint32_t i = 0; i < n; i++) {
            lms_plan_chunk *c = &r->f.chunks[i];
            if (s > 150 && (c->gave_to != gave[i] || c->kept != kept[i]))
                settled = false;
            gave[i] = c->gave_to, kept[i] = c->kept;
        }
    }
    CHECK(!r->bad);
    lms_plan_destroy(&r->plan);
    return settled;
}
static void settles(void)
{
    int moving = 0;
    for (uint64_t i = 0; i < 300; i++)
        moving += !fixed_settles(0x9e3779b97f4a7c15ULL * (i + 7));
    CHECK(fixed_settles(0x9e3779b97f4a7c15ULL * (2784 + 7)));
    CHECK_EQ_U(moving, 0);
}

/* ---- a giver whose taker is gone -------------------------------------------- */
/* B=1 (L0, hides 1), A=0 (L1, hides 2), 2 units each, room 2. Off the
 * device A costs 0.9 a unit (a loss of 1.8, under the 2 its move saves B:
 * no take-back while B holds the room), B 1 a unit. A gives to B (step 2).
 * At step 10 B is freed (forgotten, its charge back, its id gone), or
 * (`evicted`) evicted by a device request and not used again; L0 then
 * runs on nothing. The room is held by no one: A comes back into it (the
 * first rules: A paid 1.8 a step for good, the device empty). */
static bool tg_dead;
static lms_plan_chunk *tg_lookup(void *ctx, uint32_t id)
{
    rig *r = ctx;
    return id < r->f.n && !(id == 1 && tg_dead) ? &r->f.chunks[id] : NULL;
}
static double tg_price(rig *r, lms_plan_chunk *c)
{
    return !rig_off(r) ? 0 : c->id == 0 ? 0.9 : 1;
}
static uint64_t tg_hides(rig *r)
{
    return r->j == 1 ? 2 : r->j == 0 ? 1 : 0;
}
static void taker_gone_by(bool freed)
{
    enum { N = 40, GONE = 10 };
    static rig r;
    rig_init(&r, 2, 2);
    r.f.chunks[0].charge = r.f.chunks[1].charge = 2;
    r.nl = 2;
    r.n[0] = 1, r.ids[0][0] = 1;   /* L0 = {B} */
    r.n[1] = 1, r.ids[1][0] = 0;   /* L1 = {A} */
    r.price = tg_price;
    r.hides = tg_hides;
    static lms_plan_ops ops;
    ops = rig_ops();
    ops.lookup = tg_lookup;
    r.ops = &ops;
    tg_dead = false;
    double cost = 0;
    for (int s = 0; s < N; s++) {
        r.s = s;
        if (s == GONE) {
            lms_plan_chunk *b = &r.f.chunks[1];
            if (freed) {
                if (b->resident)
                    r.f.used -= b->charge;
                lms_plan_forget(&r.plan, b);
                tg_dead = true;
            } else {
                CHECK(lms_plan_make_room(&r.plan, &ops, &r, 2));
                r.f.used -= 2;   /* the request freed again */
            }
            r.n[0] = 0;
        }
        rig_step(&r, &cost, &r.seq);
    }
    CHECK(!r.bad);
    CHECK(r.f.chunks[0].resident);
    CHECK_NEAR(cost, 0, 0);
}
static void taker_gone(void)
{
    taker_gone_by(true);
}
static void taker_gone_evicted(void)
{
    taker_gone_by(false);
}

/* ---- a giver takes another donor's room ---------------------------------- */
/* B=1 (L0, hides 1, 1 a unit off), X=2 (L1, 3 units, hides 3, its reads
 * hidden: price 0 once known), A=0 (L2, hides 2 until step 6, then 1; 0.9
 * a unit off), A and B 2 units, room 5. A gives its room to B (step 2, a
 * gain of 2); from step 6 A's launch pays 1.8 a step, under that gain (no
 * take-back). X offers its room every step and costs nothing off the
 * device: A takes X's room (a giver takes, but not from its own holder;
 * the second rules barred every giver: 1.8 a step for good). */
static double bd_price(rig *r, lms_plan_chunk *c)
{
    if (c->id == 2)
        return r->s < 3 ? -1 : 0;
    return !rig_off(r) ? 0 : c->id == 0 ? 0.9 : 1;
}
static uint64_t bd_hides(rig *r)
{
    switch (r->j) {
    case 0: return 1;
    case 1: return 3;
    case 2: return r->s < 6 ? 2 : 1;
    default: return 0;
    }
}
static void better_donor(void)
{
    enum { N = 40 };
    static rig r;
    double cost[N];
    uint64_t moved[N];
    rig_init(&r, 5, 3);
    for (int i = 0; i < 3; i++)
        r.f.chunks[i].charge = i == 2 ? 3 : 2;
    r.nl = 3;
    r.n[0] = 1, r.ids[0][0] = 1;   /* LB */
    r.n[1] = 1, r.ids[1][0] = 2;   /* LX */
    r.n[2] = 1, r.ids[2][0] = 0;   /* LA */
    r.price = bd_price;
    r.hides = bd_hides;
    rig_run(&r, N, cost, moved);
    CHECK(!r.bad);
    CHECK_NEAR(cost[N - 1], 0, 0);
}

/* ---- three chunks and rotating dips ------------------------------------------ */
/* Three chunks of 2 units, one launch each, room 4; each read in place at 1
 * a unit when off, each launch hiding 2 but 1 every sixth step in turn.
 * A chunk takes once: the room settles (with givers allowed to take from
 * others and no such limit, 50 fetches in the last 100 steps). */
static double r3_price(rig *r, lms_plan_chunk *c)
{
    (void)c;
    return rig_off(r) ? 1 : 0;
}
static uint64_t r3_hides(rig *r)
{
    return r->j >= 3 ? 0 : r->s % 6 == 2 * r->j ? 1 : 2;
}
static void ring3(void)
{
    enum { N = 200 };
    static rig r;
    static double cost[N];
    static uint64_t moved[N];
    rig_init(&r, 4, 3);
    for (int i = 0; i < 3; i++)
        r.f.chunks[i].charge = 2, r.n[i] = 1, r.ids[i][0] = (uint32_t)i;
    r.nl = 3;
    r.price = r3_price;
    r.hides = r3_hides;
    rig_run(&r, N, cost, moved);
    uint64_t late = 0;
    for (int s = N / 2; s < N; s++)
        late += moved[s];
    CHECK(!r.bad);
    CHECK_EQ_U(late, 0);
}

static lms_plan_ops g_ops;

static void show(rig *r, int s, double cost, uint64_t mv)
{
    if (!r->verbose)
        return;
    fprintf(stderr, "s%3d m%d cost %5.2f mv %llu used %llu/%llu held %llu:", s, r->plan.mode, cost,
            (unsigned long long)mv, (unsigned long long)r->f.used, (unsigned long long)r->f.room,
            (unsigned long long)r->held);
    for (uint32_t i = 0; i < r->f.n; i++) {
        lms_plan_chunk *c = &r->f.chunks[i];
        fprintf(stderr, " %u%s%s", i, c->resident ? "R" : "-", c->kept ? "k" : "");
        if (c->gave_to)
            fprintf(stderr, ">%u", c->gave_to - 1);
        if (c->took)
            fprintf(stderr, "t");
    }
    fprintf(stderr, "\n");
}
static void setup_ops(void)
{
    g_ops = rig_ops();
}

/* ---- a taker evicted by device requests takes again -------------------------
 * Donors D0..D(k-1) (ids 0..k-1, launches L0..L(k-1), one each, hiding 2,
 * their reads hidden: price 0) and T (id k, launch Lk, hides 1, 1 a unit
 * off), 2 units each, room 2k. T appears at step 2 (fetched on demand).
 * At steps 8 and 14 a device request takes 2 units for good, made while
 * T is the only victim (its launch's turn is next, the others pinned... it
 * is the one the request evicts). After the first, T takes a donor's room;
 * after the second (or, `held_mode_switch`, after 4 steps of acting in
 * place of the second; `held_transient`, the second released a step
 * later) a donor is still offered every step: T takes again (a chunk
 * that took once took no other: 2 a step for good). */
static int a_k = 3, a_second = 1, a_other = -1, a_transient = 0, a_rel_s = 15, a_rel_j = 0;
static double a_price(rig *r, lms_plan_chunk *c)
{
    if ((int)c->id == a_k)
        return rig_off(r) ? 1 : 0;
    return 0;
}
static uint64_t a_hides(rig *r) { return r->j == a_k ? 1 : r->j < a_k ? 2 : 0; }
static void a_hook(rig *r)
{
    r->n[a_k] = r->s < 2 ? 0 : 1;
    if ((r->s == 8 || (r->s == 14 && a_second)) && r->j == a_k) {
        /* T pinned now: pin the donors instead and unpin T so that T is the victim */
        lms_plan_chunk *t = &r->f.chunks[a_k];
        if (t->resident) {
            for (int i = 0; i < a_k; i++) lms_plan_pin(&r->plan, &r->f.chunks[i]);
            lms_plan_used(&r->plan, t, t->last_use);
            CHECK(lms_plan_make_room(&r->plan, &g_ops, r, 2));
            lms_plan_pin(&r->plan, t);
            for (int i = 0; i < a_k; i++) lms_plan_used(&r->plan, &r->f.chunks[i], r->f.chunks[i].last_use);
            r->held += 2;
        }
    }
    if (a_transient && r->s == a_rel_s && r->j == a_rel_j && r->held == 4) {
        r->f.used -= 2, r->held -= 2;   /* the second request freed: 2 units free */
    }
}
static int a_mode(rig *r)
{
    return a_other >= 0 && r->s >= 12 && r->s < 16 ? a_other : LMS_PLAN_DEEP;
}
static double held_request(int N)
{
    static rig r;
    rig_init(&r, (uint64_t)(2 * a_k), (uint32_t)a_k + 1);
    for (int i = 0; i <= a_k; i++)
        r.f.chunks[i].charge = 2, r.n[i] = 1, r.ids[i][0] = (uint32_t)i;
    r.nl = a_k + 1;
    r.price = a_price;
    r.hides = a_hides;
    setup_ops();
    r.before = a_hook;
    r.mode_of = a_mode;
    r.ops = &g_ops;
    double cost = 0;
    for (int s = 0; s < N; s++) {
        uint64_t mv;
        r.s = s;
        mv = rig_step(&r, &cost, &r.seq);
        show(&r, s, cost, mv);
    }
    CHECK(!r.bad);
    return cost;
}

/* ---- a giver ahead of a dear chunk in its launch ------------------------------
 * A=0, X=1, T=2, 2 units each, room 2. L0 = {X}, L1 = {A, T}. Until step
 * 4: L0 hides 1 (X costs 1 a unit off: it takes A's room), L1 hides 4
 * (A offered). From step 4: L0 hides 2 (X offered, its reads hidden:
 * price 0 off), L1 hides 1: A costs 0.9 a unit off (1.8, under the 2 its
 * move saved X: no take-back), T 5 a unit (10). A is listed first: a
 * giver, whose only donor is its own holder X, found none; T, after it,
 * still takes X's room (the first version ended the launch's takes
 * there: 11.8 a step for good against 1.8). */
static double b_price(rig *r, lms_plan_chunk *c)
{
    if (!rig_off(r) || c->resident)
        return 0;
    switch (c->id) {
    case 0: return 0.9;
    case 1: return r->s < 4 ? 1 : 0;
    default: return 5;
    }
}
static uint64_t b_hides(rig *r)
{
    if (r->j == 0) return r->s < 4 ? 1 : 2;
    if (r->j == 1) return r->s < 4 ? 4 : 1;
    return 0;
}
static double giver_first(int N, bool t_first)
{
    static rig r;
    rig_init(&r, 2, 3);
    for (int i = 0; i < 3; i++)
        r.f.chunks[i].charge = 2;
    r.nl = 2;
    r.n[0] = 1, r.ids[0][0] = 1;
    r.n[1] = 2, r.ids[1][0] = t_first ? 2 : 0, r.ids[1][1] = t_first ? 0 : 2;
    r.price = b_price;
    r.hides = b_hides;
    setup_ops();
    double cost = 0;
    for (int s = 0; s < N; s++) {
        uint64_t mv;
        r.s = s;
        r.ops = &g_ops;
        mv = rig_step(&r, &cost, &r.seq);
        show(&r, s, cost, mv);
    }
    CHECK(!r.bad);
    return cost;
}

static void held(void)
{
    CHECK_NEAR(held_request(40), 0, 0);
}
static void held_mode_switch(void)
{
    a_other = LMS_PLAN_ACT, a_second = 0;
    CHECK_NEAR(held_request(40), 0, 0);
}
static void held_transient(void)
{
    a_transient = 1, a_rel_s = 16, a_rel_j = 0;
    CHECK_NEAR(held_request(40), 0, 0);
}
static void giver_first_case(void)
{
    CHECK_NEAR(giver_first(30, false), 1.8, 1e-9);   /* A's own 1.8 (under its move's gain); T resident */
}

static const test_case cases[] = {
    {"taker_evicted", taker_evicted},
    {"fuzz", fuzz},
    {"transient_pin", transient_pin},
    {"noisy_take_back", noisy_take_back},
    {"noisy_gain", noisy_gain},
    {"fetch_fails", fetch_fails},
    {"chain", chain},
    {"baseline", baseline},
    {"bigger_donor", bigger_donor},
    {"ping_pong", ping_pong},
    {"own_holder", own_holder},
    {"stale_dear", stale_dear},
    {"settles", settles},
    {"taker_gone", taker_gone},
    {"taker_gone_evicted", taker_gone_evicted},
    {"better_donor", better_donor},
    {"ring3", ring3},
    {"held", held},
    {"held_mode_switch", held_mode_switch},
    {"held_transient", held_transient},
    {"giver_first", giver_first_case},
};

TEST_MAIN(cases)
