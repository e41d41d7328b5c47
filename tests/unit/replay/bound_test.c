/*
 * bound_test.c — `lmshim replay`'s bound that allows reading in place and
 * its curves, on traces built here:
 *   hand_bypass        a trace whose bound, MIN, LRU and `none` are worked
 *                      out by hand (the bound reads B in place, MIN cannot)
 *   hand_pages         a chunk larger than the room: the bound keeps two of
 *                      its three 2 MiB pages, every whole-chunk schedule
 *                      reads it all in place
 *   hand_warm          --skip: what comes before the counted launches is
 *                      free, so the bound starts from the best resident set
 *   exact_uniform      chunks of one size: the bound equals the optimum over
 *                      whole-chunk schedules (exhaustive search), 2,000 random
 *                      traces, some with room that grows part-way
 *   below_whole        chunks of many sizes: bound <= exhaustive optimum <= MIN
 *   below_policies     random traces with frees and device allocations: the
 *                      bound is at most MIN and every policy at every budget
 *   curve_one_pass     the curve's one pass equals a replay at every budget
 *                      (lru and none), and covers most budgets
 */
#include "trace_build.h"

/* ---- building traces ---------------------------------------------------------- */

static void header(tb *b, uint64_t budget)
{
    trace_header(b, 64 * budget, budget);
}

/* A managed chunk `id` of `size` bytes allocated or freed (callers never
 * reuse an id, so the pointer follows from it). */
static void managed(tb *b, bool alloc, int id, uint64_t size)
{
    managed_at(b, alloc, id, id, size);
}

/* A device allocation k that the engine does not move. */
static void device(tb *b, bool alloc, int k, uint64_t bytes)
{
    unsigned long long ptr = 0x500000000000ull + ((unsigned long long)k << 32);
    if (alloc)
        put(b, "{\"type\":\"alloc\",\"t\":3,\"dev\":0,\"ptr\":\"0x%llx\",\"size\":%llu,\"charge\":%llu,"
               "\"place\":\"device\",\"id\":-1,\"fallback\":false,\"site\":-1}\n", ptr, (unsigned long long)bytes,
            (unsigned long long)bytes);
    else
        put(b, "{\"type\":\"free\",\"t\":3,\"dev\":0,\"ptr\":\"0x%llx\",\"size\":%llu,\"place\":\"device\"}\n", ptr,
            (unsigned long long)bytes);
}

/* A launch of the chunks ids[0..n), its function named by the first. */
static void launch(tb *b, const int *ids, int n)
{
    launch_fn(b, 0x100ull + (uint64_t)(n ? ids[0] : 0), ids, n);
}

static void load(tb *b, lms_trace_data *t)
{
    memset(t, 0, sizeof *t);
    lms_trace_load_text("test", b->s, b->n, t, stderr);
    CHECK(t->bad_lines == 0);
}

/* A small deterministic generator. */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(uint64_t n)
{
    return xorshift_below(&rng_state, n);
}

/* ---- hand-computed traces ------------------------------------------------------- */

/* Chunks A (0) and B (1) of 2 MiB, one of them fits: launches A B A B A. */
static void ab_trace(tb *b)
{
    header(b, 2 * MiB);
    managed(b, true, 0, 2 * MiB);
    managed(b, true, 1, 2 * MiB);
    static const int order[] = {0, 1, 0, 1, 0};
    for (int i = 0; i < 5; i++)
        launch(b, &order[i], 1);
}

static void hand_bypass(void)
{
    tb b = {0};
    ab_trace(&b);
    lms_trace_data t;
    load(&b, &t);
    lms_replay_result bound, min, lru, none;
    lms_replay_bound(&t, 0, 2 * MiB, 0, &bound);
    lms_replay(&t, 0, 2 * MiB, NULL, 0, &min);
    lms_replay(&t, 0, 2 * MiB, lms_policy_find("lru"), 0, &lru);
    lms_replay(&t, 0, 2 * MiB, lms_policy_find("none"), 0, &none);
    /* Bound: A fetched; B needed later than A: read in place; A hit; B never
     * again: read in place; A hit. 2 MiB fetched, 4 MiB read, 3 misses. */
    CHECK_EQ_U(bound.fetched_bytes, 2 * MiB);
    CHECK_EQ_U(bound.remote_bytes, 4 * MiB);
    CHECK_EQ_U(bound.evicted_bytes, 0);
    CHECK_EQ_U(bound.misses, 3);
    CHECK_EQ_U(bound.launches, 5);
    /* MIN must fetch every miss: each launch evicts the other chunk. */
    CHECK_EQ_U(min.fetched_bytes, 10 * MiB);
    CHECK_EQ_U(min.evicted_bytes, 8 * MiB);
    CHECK_EQ_U(min.remote_bytes, 0);
    CHECK_EQ_U(lru.fetched_bytes, 10 * MiB);
    CHECK_EQ_U(lru.misses, 5);
    CHECK_EQ_U(none.remote_bytes, 10 * MiB);
    CHECK_EQ_U(none.fetched_bytes, 0);
    lms_trace_data_free(&t);
    free(b.s);
}

static void hand_pages(void)
{
    tb b = {0};
    header(&b, 4 * MiB);
    managed(&b, true, 0, 5 * MiB);   /* charged as three 2 MiB pages */
    int a = 0;
    for (int i = 0; i < 3; i++)
        launch(&b, &a, 1);
    lms_trace_data t;
    load(&b, &t);
    lms_replay_result bound, min, lru;
    lms_replay_bound(&t, 0, 4 * MiB, 0, &bound);
    lms_replay(&t, 0, 4 * MiB, NULL, 0, &min);
    lms_replay(&t, 0, 4 * MiB, lms_policy_find("lru"), 0, &lru);
    /* Two pages stay; the third is read in place each time. */
    CHECK_EQ_U(bound.fetched_bytes, 4 * MiB);
    CHECK_EQ_U(bound.remote_bytes, 2 * MiB + 2 * MiB + 2 * MiB);
    CHECK_EQ_U(bound.misses, 3);
    CHECK_EQ_U(min.remote_bytes, 18 * MiB);
    CHECK_EQ_U(min.fetched_bytes, 0);
    CHECK_EQ_U(lru.remote_bytes, 18 * MiB);
    /* A budget that is not a whole number of granules counts whole ones. */
    lms_replay_bound(&t, 0, 4 * MiB + 100, 0, &bound);
    CHECK_EQ_U(bound.fetched_bytes, 4 * MiB);
    lms_trace_data_free(&t);
    free(b.s);
}

static void hand_warm(void)
{
    tb b = {0};
    ab_trace(&b);
    lms_trace_data t;
    load(&b, &t);
    lms_replay_result bound, min;
    /* Counted: A B A. A is resident at no cost; B is read in place. */
    lms_replay_bound(&t, 0, 2 * MiB, 2, &bound);
    CHECK_EQ_U(link_of(&bound), 2 * MiB);
    CHECK_EQ_U(bound.remote_bytes, 2 * MiB);
    CHECK_EQ_U(bound.launches, 3);
    lms_replay(&t, 0, 2 * MiB, NULL, 2, &min);
    CHECK_EQ_U(link_of(&min), 6 * MiB);   /* B resident after launch 2: three misses */
    lms_trace_data_free(&t);
    free(b.s);
}

/* ---- exhaustive whole-chunk optimum ------------------------------------------------ */

#define XN 6        /* chunks */
#define XL 14       /* launches */

/* The fewest bytes over the link of any whole-chunk schedule: before each
 * launch the resident set R, after it any R' within R and the launch's
 * chunks S that fits room[l]; the launch costs the bytes of S not in R.
 * From launch `skip` on, starting from any set that fits. */
static uint64_t exhaustive(const uint64_t *charge, const unsigned *sets, int nl, const uint64_t *room, int skip)
{
    uint64_t cost[1 << XN], next[1 << XN], bytes[1 << XN];
    for (unsigned s = 0; s < (1u << XN); s++) {
        bytes[s] = 0;
        for (int c = 0; c < XN; c++)
            if (s >> c & 1)
                bytes[s] += charge[c];
        cost[s] = bytes[s] <= room[skip] && (skip > 0 || s == 0) ? 0 : UINT64_MAX;
    }
    for (int l = skip; l < nl; l++) {
        for (unsigned s = 0; s < (1u << XN); s++)
            next[s] = UINT64_MAX;
        for (unsigned r = 0; r < (1u << XN); r++) {
            if (cost[r] == UINT64_MAX)
                continue;
            uint64_t c = cost[r] + bytes[sets[l] & ~r];
            unsigned u = r | sets[l];
            for (unsigned s = u;; s = (s - 1) & u) {   /* every subset of u */
                if (bytes[s] <= room[l] && c < next[s])
                    next[s] = c;
                if (s == 0)
                    break;
            }
        }
        memcpy(cost, next, sizeof cost);
    }
    uint64_t best = UINT64_MAX;
    for (unsigned s = 0; s < (1u << XN); s++)
        best = cost[s] < best ? cost[s] : best;
    return best;
}

/* A random trace of XN chunks of the given sizes and XL launches of 1-3
 * chunks; sets[] gets each launch's chunks. Half the time device memory
 * takes part of `budget` until a random launch frees it, so the
 * room grows there; room[] gets the room at each launch. */
static void random_trace(tb *b, uint64_t budget, const uint64_t *size, unsigned *sets, uint64_t *room)
{
    header(b, budget);
    for (int c = 0; c < XN; c++)
        managed(b, true, c, size[c]);
    uint64_t unit = budget % (2 * MiB) ? MiB : 2 * MiB;   /* rooms stay whole chunks of 2 MiB where budgets are */
    uint64_t dev = rnd(2) ? unit * rnd(budget / unit) : 0;
    int freed_at = dev ? (int)rnd(XL) : -1;
    if (dev)
        device(b, true, 0, dev);
    for (int l = 0; l < XL; l++) {
        if (l == freed_at) {
            device(b, false, 0, dev);
            dev = 0;
        }
        room[l] = budget - dev;
        int ids[3], n = 1 + (int)rnd(3);
        sets[l] = 0;
        for (int i = 0; i < n; i++) {
            ids[i] = (int)rnd(XN);
            sets[l] |= 1u << ids[i];
        }
        launch(b, ids, n);
    }
}

static void exact_uniform(void)
{
    for (int trial = 0; trial < 2000; trial++) {
        uint64_t size[XN], charge[XN];
        for (int c = 0; c < XN; c++)
            size[c] = charge[c] = 2 * MiB;
        uint64_t room = (1 + rnd(4)) * 2 * MiB;
        int skip = (int)rnd(2) * 4;
        unsigned sets[XL];
        uint64_t rooms[XL];
        tb b = {0};
        random_trace(&b, room, size, sets, rooms);
        lms_trace_data t;
        load(&b, &t);
        lms_replay_result bound;
        lms_replay_bound(&t, 0, room, (uint64_t)skip, &bound);
        uint64_t opt = exhaustive(charge, sets, XL, rooms, skip);
        if (link_of(&bound) != opt)
            fprintf(stderr, "trial %d: room %llu MiB skip %d: bound %llu, optimum %llu\n", trial,
                    (unsigned long long)(room / MiB), skip, (unsigned long long)link_of(&bound),
                    (unsigned long long)opt);
        CHECK_EQ_U(link_of(&bound), opt);
        lms_trace_data_free(&t);
        free(b.s);
    }
}

static void below_whole(void)
{
    static const uint64_t sizes[] = {700 * 1024, 1 * MiB, 2 * MiB, 3 * MiB, 5 * MiB, 2 * MiB + 1};
    int strict = 0;
    for (int trial = 0; trial < 300; trial++) {
        uint64_t size[XN], charge[XN];
        for (int c = 0; c < XN; c++) {
            size[c] = sizes[rnd(6)];
            charge[c] = size[c] < 2 * MiB ? (size[c] + 511) / 512 * 512 : (size[c] + 2 * MiB - 1) / (2 * MiB) * 2 * MiB;
        }
        uint64_t room = (1 + rnd(12)) * MiB;
        int skip = (int)rnd(2) * 4;
        unsigned sets[XL];
        uint64_t rooms[XL];
        tb b = {0};
        random_trace(&b, room, size, sets, rooms);
        lms_trace_data t;
        load(&b, &t);
        lms_replay_result bound, min;
        lms_replay_bound(&t, 0, room, (uint64_t)skip, &bound);
        lms_replay(&t, 0, room, NULL, (uint64_t)skip, &min);
        uint64_t opt = exhaustive(charge, sets, XL, rooms, skip);
        CHECK(link_of(&bound) <= opt);
        if (skip == 0)
            CHECK(opt <= link_of(&min));   /* MIN is one whole-chunk schedule */
        strict += link_of(&bound) < opt;
        lms_trace_data_free(&t);
        free(b.s);
    }
    CHECK(strict > 0);   /* pages of a chunk on their own do help somewhere */
}

/* ---- random traces with frees and device memory ------------------------------------- */

/* A longer random trace: chunks of mixed sizes allocated and freed, device
 * allocations coming and going, launches of up to 6 chunks (some named
 * twice), a repeating core so that reuse is common. */
static void messy_trace(tb *b, uint64_t budget)
{
    enum { SLOTS = 24 };
    static const uint64_t sizes[] = {512 * 1024, 2 * MiB, 3 * MiB, 6 * MiB, 10 * MiB, 1 * MiB + 7};
    uint64_t sz[SLOTS];
    bool live[SLOTS] = {0};
    int next_id = 0, id_of[SLOTS];
    header(b, budget);
    for (int s = 0; s < SLOTS; s++) {
        sz[s] = sizes[rnd(6)];
        id_of[s] = next_id++;
        managed(b, true, id_of[s], sz[s]);
        live[s] = true;
    }
    bool dev_live[3] = {0};
    for (int l = 0; l < 600; l++) {
        int r = (int)rnd(100);
        if (r < 4) {   /* a chunk freed and another made in its slot */
            int s = (int)rnd(SLOTS);
            if (live[s])
                managed(b, false, id_of[s], sz[s]);
            sz[s] = sizes[rnd(6)];
            id_of[s] = next_id++;
            managed(b, true, id_of[s], sz[s]);
            live[s] = true;
        } else if (r < 6) {   /* device memory comes or goes */
            int k = (int)rnd(3);
            device(b, !dev_live[k], k, (uint64_t)(k + 1) * 4 * MiB);
            dev_live[k] = !dev_live[k];
        }
        int ids[8], n = 1 + (int)rnd(6);
        for (int i = 0; i < n; i++) {
            int s = rnd(3) ? (l + i) % 8 : (int)rnd(SLOTS);   /* mostly a cycle over 8 slots */
            ids[i] = id_of[s];
        }
        if (rnd(10) == 0)
            ids[n++] = ids[0];   /* named twice */
        launch(b, ids, n);
    }
}

static void below_policies(void)
{
    for (int trial = 0; trial < 6; trial++) {
        tb b = {0};
        messy_trace(&b, 64 * MiB);
        lms_trace_data t;
        load(&b, &t);
        for (uint64_t budget = 4 * MiB; budget <= 120 * MiB; budget += 12 * MiB) {
            lms_replay_result bound, r;
            uint64_t skip = trial % 2 ? 100 : 0;
            lms_replay_bound(&t, 0, budget, skip, &bound);
            lms_replay(&t, 0, budget, NULL, skip, &r);
            CHECK(link_of(&bound) <= link_of(&r));
            for (int p = 0; lms_policy_at(p); p++) {
                lms_replay(&t, 0, budget, lms_policy_at(p), skip, &r);
                if (link_of(&bound) > link_of(&r))
                    fprintf(stderr, "%s at %llu MiB: %llu below the bound %llu\n", lms_policy_at(p)->name,
                            (unsigned long long)(budget / MiB), (unsigned long long)link_of(&r),
                            (unsigned long long)link_of(&bound));
                CHECK(link_of(&bound) <= link_of(&r));
            }
            CHECK_EQ_U(bound.launches, r.launches);
        }
        lms_trace_data_free(&t);
        free(b.s);
    }
}

/* ---- curves ------------------------------------------------------------------------- */

static void curve_one_pass(void)
{
    enum { NB = 40 };
    const lms_policy *lru = lms_policy_find("lru"), *none = lms_policy_find("none");
    CHECK(lru && none);
    for (int trial = 0; trial < 6; trial++) {
        tb b = {0};
        messy_trace(&b, 64 * MiB);
        lms_trace_data t;
        load(&b, &t);
        uint64_t budgets[NB];
        for (int i = 0; i < NB; i++)   /* odd sizes too: not all whole pages */
            budgets[i] = 2 * MiB + (uint64_t)i * 4 * MiB + (uint64_t)(i % 3) * 4096 + (i % 5 == 0 ? 777 : 0);
        lms_replay_result curve[NB], one;
        uint64_t skip = trial % 2 ? 50 : 0;
        int passes = lms_replay_curve(&t, 0, LMS_SERIES_POLICY, lru, skip, budgets, NB, curve);
        fprintf(stderr, "trial %d: %d of %d budgets in one pass\n", trial, passes, NB);
        CHECK(passes >= NB / 2);   /* most budgets came from the one pass */
        for (int i = 0; i < NB; i++) {
            lms_replay(&t, 0, budgets[i], lru, skip, &one);
            same_result(&curve[i], &one, budgets[i]);
        }
        CHECK_EQ_U(lms_replay_curve(&t, 0, LMS_SERIES_POLICY, none, skip, budgets, NB, curve), NB);
        for (int i = 0; i < NB; i++) {
            lms_replay(&t, 0, budgets[i], none, skip, &one);
            same_result(&curve[i], &one, budgets[i]);
        }
        /* MIN and the bound: a replay per budget, the same as asked alone. */
        CHECK_EQ_U(lms_replay_curve(&t, 0, LMS_SERIES_BOUND, NULL, skip, budgets, 4, curve), 0);
        for (int i = 0; i < 4; i++) {
            lms_replay_bound(&t, 0, budgets[i], skip, &one);
            same_result(&curve[i], &one, budgets[i]);
        }
        lms_trace_data_free(&t);
        free(b.s);
    }
}

static const test_case cases[] = {
    {"hand_bypass", hand_bypass},       {"hand_pages", hand_pages},     {"hand_warm", hand_warm},
    {"exact_uniform", exact_uniform},   {"below_whole", below_whole},   {"below_policies", below_policies},
    {"curve_one_pass", curve_one_pass},
};

TEST_MAIN(cases)
