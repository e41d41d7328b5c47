/*
 * lookahead_shared_test.c — the lookahead policy alone on random launches
 * that share one chunk (a workspace every kernel reads): the shared chunk
 * comes exactly when predicted at every launch, which says nothing about
 * the others; the launches are still random, and the policy must stop
 * guessing as it does without the shared chunk
 * (tests/unit/lookahead_context random_no_guess).
 */
#include <stdbool.h>
#include <stdint.h>

#include "../../common/check.h"
#include "policy.h"

/* A small linear congruential generator (deterministic). */
static uint32_t rnd(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*x >> 33);
}

/* k distinct ids in [1, range], chosen at random, sorted, after id 0 (the
 * shared chunk) in ids[0]. */
static void pick(uint64_t *x, uint32_t range, uint32_t *ids, int k)
{
    ids[0] = 0;
    int n = 1;
    while (n < k + 1) {
        uint32_t v = 1 + rnd(x) % range;
        bool dup = false;
        for (int i = 1; i < n; i++)
            dup |= ids[i] == v;
        if (dup)
            continue;
        int j = n;
        while (j > 1 && ids[j - 1] > v) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = v;
        n++;
    }
}

/* Launches over the shared chunk and `k` of 8 others at random, from 4
 * functions: after a while the policy makes no guess about the random
 * chunks and names nothing ahead. */
static void shared_random(int k, bool shared)
{
    const lms_policy *p = lms_policy_find("lookahead");
    void *st = p->create();
    CHECK(st != NULL);
    lms_policy_memo memo[9] = {{{0}}};
    uint64_t x = 42;
    int guesses = 0, aheads = 0;
    for (uint64_t seq = 1; seq <= 4000; seq++) {
        uint32_t ids[4];
        pick(&x, 8, ids, k);
        lms_policy_memo *ms[4];
        for (int i = 0; i <= k; i++)
            ms[i] = &memo[ids[i]];
        if (shared)
            p->observe(st, seq, 1 + rnd(&x) % 4, ids, ms, k + 1);
        else
            p->observe(st, seq, 1 + rnd(&x) % 4, ids + 1, ms + 1, k);
        if (seq > 2000) {
            for (int i = 1; i < 9; i++)
                guesses += p->next_use(st, &memo[i], seq, seq) != LMS_NEXT_UNKNOWN;
            uint32_t a[9], d[9];
            aheads += p->ahead(st, a, d, 9, 1) > 0;
        }
    }
    CHECK(guesses < 2000 * 8 / 20);   /* under 5% of the answers guess */
    CHECK(aheads < 2000 / 20);
    p->destroy(st);
}

static void shared_one(void) { shared_random(1, true); }
static void shared_two(void) { shared_random(2, true); }
static void shared_three(void) { shared_random(3, true); }
static void alone_one(void) { shared_random(1, false); }
static void alone_two(void) { shared_random(2, false); }

static const test_case cases[] = {
    {"shared_one", shared_one},
    {"shared_two", shared_two},
    {"shared_three", shared_three},
    {"alone_one", alone_one},
    {"alone_two", alone_two},
};

TEST_MAIN(cases)
