/*
 * breakers_victim_test.c — pick_victim (src/common/plan.c) from outside:
 * the victim when the top of the victim heap was used by the last launch,
 * on heaps of every small size, with every candidate busy, after a launch
 * touching 120 chunks, at the first launches (last uses 0 and seqs 1..2),
 * acting lean, and on a cyclic step of once-a-step chunks (an inference
 * forward pass) where the bytes fetched are counted against Belady's MIN;
 * each where the fetch outlasts the launch being planned (ops->hides under
 * a chunk's charge: idle candidates first) and where it does not or that
 * is unknown (the farthest).
 */
#include <stdio.h>

#include "victim_room.h"

/* ---- safety: sizes, busy candidates, wide launches, first launches ------- */

/* n chunks (room n), one per launch 1..n; chunk n-1 (used by launch n) is
 * farthest (1000); the others at 600+i. Launch n+1 uses a new chunk. With
 * n == 1 there is no candidate: the busy top goes. Otherwise one of the
 * others goes, none past the heap's end: chunk 0 when it is the only one
 * (n == 2); else, when the fetch outlasts the launch, the farthest one
 * not used by the last two launches (n - 3), and when the launch hides
 * it or its duration is unknown, the farthest (n - 2, two launches back). */
static void small_heaps(void)
{
    const uint64_t hides[3] = {0, 1, VR_UNIT};   /* unknown, outlasted, hidden */
    for (int h = 0; h < 3; h++)
        for (uint32_t n = 1; n <= 7; n++) {
            victim_room f;
            vr_init(&f, n, n + 1);
            f.hides = hides[h];
            for (uint32_t i = 0; i + 1 < n; i++)
                f.chunks[i].memo.w[0] = 600 + i;
            f.chunks[n - 1].memo.w[0] = 1000;
            f.chunks[n].memo.w[0] = 2000;
            lms_plan p;
            CHECK(lms_plan_init(&p, &vr_told));
            for (uint32_t i = 0; i <= n; i++)
                vr_launch(&p, &vr_ops, &f, i + 1, &i, 1);
            CHECK_EQ_U(f.evictions, 1);
            int want = n <= 2 ? 0 : h == 1 ? (int)n - 3 : (int)n - 2;
            if (f.last_evicted != want)
                fprintf(stderr, "hides %llu n=%u: evicted %d, expected %d\n", (unsigned long long)hides[h], n,
                        f.last_evicted, want);
            CHECK_EQ_U(f.last_evicted, want);
            lms_plan_destroy(&p);
        }
}

/* One launch (seq 1) uses chunks 0..7 at once; launch 2 a new chunk: every
 * candidate was used by the last launch, so the top (chunk 7, farthest)
 * goes. */
static void all_candidates_busy(void)
{
    victim_room f;
    vr_init(&f, 8, 9);
    uint32_t ids[8];
    for (uint32_t i = 0; i < 8; i++) {
        ids[i] = i;
        f.chunks[i].memo.w[0] = 500 + i;
    }
    f.chunks[8].memo.w[0] = 2000;
    lms_plan p;
    CHECK(lms_plan_init(&p, &vr_told));
    vr_launch(&p, &vr_ops, &f, 1, ids, 8);
    uint32_t nine = 8;
    vr_launch(&p, &vr_ops, &f, 2, &nine, 1);
    CHECK_EQ_U(f.evictions, 1);
    CHECK_EQ_U(f.last_evicted, 7);
    lms_plan_destroy(&p);
}

/* A fused optimizer: launch 1 uses chunks 0..29, launch 2 chunks 30..149
 * (120 at once), expected farther (1000+) than the first 30 (700+).
 * Launch 3 uses chunks 150..159 (room 150: ten evictions; their next use
 * 10). Each victim is a chunk launch 2 used while the heap's top six are
 * all its chunks: the farthest of them, in order (149, 148, ...). Then
 * launch 4 needs ten more: launch 2's chunks are two launches back, not
 * busy: the farthest of them go again, straight from the top. */
static void fused_hundred(void)
{
    victim_room f;
    vr_init(&f, 150, 170);
    uint32_t a[30], b[120], c[10], d[10];
    for (uint32_t i = 0; i < 30; i++)
        a[i] = i, f.chunks[i].memo.w[0] = 700 + i;
    for (uint32_t i = 0; i < 120; i++)
        b[i] = 30 + i, f.chunks[30 + i].memo.w[0] = 1000 + i;
    for (uint32_t i = 0; i < 10; i++)
        c[i] = 150 + i, d[i] = 160 + i, f.chunks[150 + i].memo.w[0] = 10, f.chunks[160 + i].memo.w[0] = 5000;
    lms_plan p;
    CHECK(lms_plan_init(&p, &vr_told));
    vr_launch(&p, &vr_ops, &f, 1, a, 30);
    vr_launch(&p, &vr_ops, &f, 2, b, 120);
    CHECK_EQ_U(f.evictions, 0);
    vr_launch(&p, &vr_ops, &f, 3, c, 10);
    CHECK_EQ_U(f.evictions, 10);
    for (uint32_t i = 140; i < 150; i++)
        CHECK(!f.chunks[i].resident);
    vr_launch(&p, &vr_ops, &f, 4, d, 10);
    CHECK_EQ_U(f.evictions, 20);
    for (uint32_t i = 130; i < 140; i++)
        CHECK(!f.chunks[i].resident);
    CHECK_EQ_U(p.victims.n + 0u, 150);   /* every resident chunk a candidate again once recorded */
    lms_plan_destroy(&p);
}

/* Launches 1 and 2 at a room of one: at seq 2 the busy threshold is seq 1
 * and the chunk of launch 1 is the only victim: it goes (no underflow of
 * now - 1 at the first launches, no candidate past the heap). Then seq 1
 * again after 2 (a replayed seq lower than now) changes nothing. */
static void first_launches(void)
{
    victim_room f;
    vr_init(&f, 1, 2);
    f.chunks[0].memo.w[0] = 10;
    f.chunks[1].memo.w[0] = 11;
    lms_plan p;
    CHECK(lms_plan_init(&p, &vr_told));
    uint32_t id = 0;
    vr_launch(&p, &vr_ops, &f, 1, &id, 1);
    id = 1;
    vr_launch(&p, &vr_ops, &f, 2, &id, 1);
    CHECK_EQ_U(f.last_evicted, 0);
    id = 0;
    vr_launch(&p, &vr_ops, &f, 1, &id, 1);   /* seq not above now: now stays 2 */
    CHECK_EQ_U(p.now, 2);
    CHECK_EQ_U(f.last_evicted, 1);
    lms_plan_destroy(&p);
}

/* Acting lean: room 7, launches 1..7 use chunks 0..6 one each; chunk 6 at
 * 1000, chunk 5 (launch 6, two back from launch 8) at 990, chunk 2 (launch
 * 3, idle) at `idle_next`, the others at 100... Launch 8 uses chunk 6
 * again; after it, acting lean fetches chunk 7 (next use 9) ahead. The
 * top (chunk 6) was used by the launch just made: passed over only for
 * one at least 0.9 as far (next use 901 or more at now 8). `hides`: what
 * launch 8 hides (ops->hides). Returns the chunk evicted. */
static int lean_victim(uint64_t idle_next, uint64_t hides)
{
    victim_room f;
    vr_init(&f, 7, 8);
    f.hides = hides;
    for (uint32_t i = 0; i < 7; i++)
        f.chunks[i].memo.w[0] = 100 + i;
    f.chunks[2].memo.w[0] = idle_next;
    f.chunks[5].memo.w[0] = 990;
    f.chunks[6].memo.w[0] = 1000;
    f.chunks[7].memo.w[0] = 9;
    lms_plan p;
    CHECK(lms_plan_init(&p, &vr_told_ahead));
    for (uint32_t i = 0; i < 7; i++)
        vr_launch(&p, &vr_ops, &f, i + 1, &i, 1);
    CHECK_EQ_U(f.evictions, 0);
    p.mode = LMS_PLAN_ACT;
    p.lean = true;
    f.ahead_ids[0] = 7, f.nahead = 1;
    uint32_t six = 6;
    vr_launch(&p, &vr_ops, &f, 8, &six, 1);
    CHECK_EQ_U(f.evictions, 1);
    CHECK(f.chunks[7].resident);
    CHECK(f.chunks[6].resident);
    int v = f.last_evicted;
    lms_plan_destroy(&p);
    return v;
}

/* Acting lean keeps Belady's order among the candidates whatever launch 8
 * hides (on a saturated link every byte shows): chunk 5 (0.99 as far, two
 * launches back) goes before idle chunk 2 at 910 (0.91). At 890 (under
 * 0.9) chunk 2 does not qualify either. */
static void lean_bounds(void)
{
    CHECK_EQ_U(lean_victim(910, 1), 5);
    CHECK_EQ_U(lean_victim(910, VR_UNIT), 5);
    CHECK_EQ_U(lean_victim(910, 0), 5);
    CHECK_EQ_U(lean_victim(890, 1), 5);
}

/* ---- bytes: a cyclic forward pass ------------------------------------------- */

/* The fetches of a cycle of n chunks used once a step (vr_cycle_run), room
 * r, acting, on demand or fetched one launch ahead, each launch hiding
 * `hides`. */
static uint64_t cyclic_fetches(uint32_t n, uint64_t r, int steps, bool ahead, uint64_t hides)
{
    uint64_t out[3];
    vr_cycle_run(ahead ? &vr_told_ahead : &vr_told, LMS_PLAN_ACT, n, r, 1, hides, steps, out);
    return out[0];
}

/* 24 weights at rooms 8..20 (3x..1.2x), on demand and fetched one launch
 * ahead, each launch hiding a fetch or of unknown duration: the planner
 * moves at most 1.15x MIN's fetches. The top (the chunk of the launch
 * before) is busy at every fetch; the farthest candidate (two launches
 * back) is what MIN would evict next, an idle one (three back) is needed
 * sooner. With idle candidates first whatever the launch hides (f4580ea):
 * 1.20x at rooms 12..20 fetched ahead; the farthest: at most 1.110x. */
static void cyclic_inference(void)
{
    const int steps = 10;
    const uint64_t hides[2] = {0, VR_UNIT};
    for (int h = 0; h < 2; h++)
        for (int ahead = 0; ahead <= 1; ahead++)
            for (uint64_t r = 8; r <= 20; r += 4) {
                uint64_t got = cyclic_fetches(24, r, steps, ahead, hides[h]), min = vr_cyclic_min(24, r, steps);
                printf("hides %llu room %2llu ahead %d: %llu fetches, MIN %llu (%.3fx)\n",
                       (unsigned long long)hides[h], (unsigned long long)r, ahead, (unsigned long long)got,
                       (unsigned long long)min, (double)got / (double)min);
                CHECK(got * 100 <= min * 115);
            }
}

static const test_case cases[] = {
    {"small_heaps", small_heaps},
    {"all_candidates_busy", all_candidates_busy},
    {"fused_hundred", fused_hundred},
    {"first_launches", first_launches},
    {"lean_bounds", lean_bounds},
    {"cyclic_inference", cyclic_inference},
};

TEST_MAIN(cases)
