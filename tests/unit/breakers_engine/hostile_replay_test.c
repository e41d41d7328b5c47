/*
 * hostile_replay_test.c — `lmshim replay`'s replays, bound and curves on
 * traces a broken or hostile writer could leave: ids reused without a
 * free, frees of chunks never made, launches on freed and unknown chunks,
 * zero-size chunks, sizes a byte over 2 MiB multiples, a chunk larger than
 * any budget, and budgets of 1 byte to 2^63. Nothing crashes; the bound
 * stays at most MIN and every policy; the one-pass curves equal a replay
 * per budget.
 */
#include "../replay/trace_build.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(uint64_t n)
{
    return xorshift_below(&rng_state, n);
}

/* A launch of the chunks ids[0..n), its function one of eight. */
static void launch(tb *b, const int *ids, int n)
{
    launch_fn(b, 0x100ull + (uint64_t)(n ? ids[0] & 7 : 0), ids, n);
}

/* A hostile trace of `launches` launches over `slots` pointer slots. */
static void hostile_trace(tb *b, uint64_t budget, int slots, int launches)
{
    static const uint64_t sizes[] = {0, 1, 512, 2 * MiB - 1, 2 * MiB, 2 * MiB + 1, 4 * MiB + 1, 6 * MiB + 1, 9 * MiB};
    enum { NS = sizeof sizes / sizeof sizes[0] };
    trace_header(b, 1ull << 40, budget);
    int next_id = 0;
    int *id_of = calloc((size_t)slots, sizeof *id_of);
    uint64_t *sz = calloc((size_t)slots, sizeof *sz);
    CHECK(id_of && sz);
    for (int s = 0; s < slots; s++) {
        sz[s] = sizes[rnd(NS)];
        id_of[s] = next_id++;
        managed_at(b, true, s, id_of[s], sz[s]);
    }
    managed_at(b, true, slots, next_id++, 40 * MiB + 1);   /* larger than most budgets */
    for (int l = 0; l < launches; l++) {
        int r = (int)rnd(100);
        int s = (int)rnd((uint64_t)slots);
        if (r < 3) {           /* freed, and its id made again elsewhere without a free */
            managed_at(b, false, s, id_of[s], sz[s]);
            managed_at(b, true, s, id_of[(s + 1) % slots], sizes[rnd(NS)]);
        } else if (r < 5) {    /* a free of a chunk never made */
            managed_at(b, false, slots + 1 + (int)rnd(50), 0, 2 * MiB);
        } else if (r < 8) {    /* freed, then launched on anyway */
            managed_at(b, false, s, id_of[s], sz[s]);
        } else if (r < 10) {   /* the same pointer made again with a new id */
            sz[s] = sizes[rnd(NS)];
            id_of[s] = next_id++;
            managed_at(b, true, s, id_of[s], sz[s]);
        }
        int ids[40], n = (int)rnd(6);
        for (int i = 0; i < n; i++)
            ids[i] = rnd(4) ? id_of[(l + i) % (slots < 10 ? slots : 10)] : id_of[rnd((uint64_t)slots)];
        if (rnd(8) == 0)
            ids[n++] = next_id + 100;   /* never made */
        if (rnd(8) == 0)
            ids[n++] = next_id - 1;     /* the big one or the newest */
        if (n > 0 && rnd(10) == 0)
            for (int k = 0; k < 20; k++)
                ids[n++] = ids[0];   /* the same id many times */
        launch(b, ids, n);
    }
    free(id_of);
    free(sz);
}

static void load(tb *b, lms_trace_data *t)
{
    memset(t, 0, sizeof *t);
    FILE *devnull = fopen("/dev/null", "w");
    CHECK(devnull);
    lms_trace_load_text("test", b->s, b->n, t, devnull);
    fclose(devnull);
}

/* The bound is at most MIN and every policy, at budgets from 1 byte to 2^63. */
static void bound_below(void)
{
    static const uint64_t budgets[] = {1, 511, 512, 2 * MiB - 1, 2 * MiB, 2 * MiB + 1, 7 * MiB, 24 * MiB + 3,
                                       64 * MiB, 1ull << 40, 1ull << 63};
    for (int trial = 0; trial < 8; trial++) {
        tb b = {0};
        hostile_trace(&b, 16 * MiB, 12 + trial * 3, 400);
        lms_trace_data t;
        load(&b, &t);
        for (size_t k = 0; k < sizeof budgets / sizeof *budgets; k++) {
            uint64_t skip = trial % 3 == 1 ? 50 : 0;
            lms_replay_result bound, r;
            lms_replay_bound(&t, 0, budgets[k], skip, &bound);
            lms_replay(&t, 0, budgets[k], NULL, skip, &r);
            CHECK(r.launches >= 300);   /* the trace was read */
            if (k == 4 && trial == 0)
                fprintf(stderr, "2 MiB: bound %llu MIN %llu over the link, %llu launches, %llu bad lines\n",
                        (unsigned long long)link_of(&bound), (unsigned long long)link_of(&r),
                        (unsigned long long)r.launches, (unsigned long long)t.bad_lines);
            if (link_of(&bound) > link_of(&r))
                fprintf(stderr, "trial %d budget %llu: bound %llu above MIN %llu\n", trial,
                        (unsigned long long)budgets[k], (unsigned long long)link_of(&bound),
                        (unsigned long long)link_of(&r));
            CHECK(link_of(&bound) <= link_of(&r));
            for (int p = 0; lms_policy_at(p); p++) {
                lms_replay(&t, 0, budgets[k], lms_policy_at(p), skip, &r);
                if (link_of(&bound) > link_of(&r))
                    fprintf(stderr, "trial %d budget %llu: %s %llu below the bound %llu\n", trial,
                            (unsigned long long)budgets[k], lms_policy_at(p)->name,
                            (unsigned long long)link_of(&r), (unsigned long long)link_of(&bound));
                CHECK(link_of(&bound) <= link_of(&r));
                CHECK_EQ_U(bound.launches, r.launches);
            }
        }
        lms_trace_data_free(&t);
        free(b.s);
    }
}

/* The one-pass curves (lru, none) equal a replay at each budget. */
static void curve_equal(void)
{
    enum { NB = 24 };
    const lms_policy *lru = lms_policy_find("lru"), *none = lms_policy_find("none");
    CHECK(lru && none);
    for (int trial = 0; trial < 8; trial++) {
        tb b = {0};
        hostile_trace(&b, 16 * MiB, 10 + trial * 4, 400);
        lms_trace_data t;
        load(&b, &t);
        uint64_t budgets[NB];
        for (int i = 0; i < NB; i++)
            budgets[i] = i == 0 ? 1 : i == NB - 1 ? 1ull << 62 : (uint64_t)i * 3 * MiB + (uint64_t)(i % 4) * 511;
        lms_replay_result curve[NB], one;
        uint64_t skip = trial % 2 ? 30 : 0;
        const lms_policy *pols[] = {lru, none};
        for (int p = 0; p < 2; p++) {
            lms_replay_curve(&t, 0, LMS_SERIES_POLICY, pols[p], skip, budgets, NB, curve);
            for (int i = 0; i < NB; i++) {
                lms_replay(&t, 0, budgets[i], pols[p], skip, &one);
                same_result(&curve[i], &one, budgets[i]);
            }
        }
        lms_trace_data_free(&t);
        free(b.s);
    }
}

static const test_case cases[] = {
    {"bound_below", bound_below},
    {"curve_equal", curve_equal},
};

TEST_MAIN(cases)
