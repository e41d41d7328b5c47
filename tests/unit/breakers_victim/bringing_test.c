/*
 * bringing_test.c — what pick_victim is told the fetch is (src/common/
 * plan.c, bring's p->bringing and make_room's distance) from outside:
 * the same demand bytes with prices known (bring_priced, which makes room
 * chunk by chunk without bring) and without; and acting deep, a fetch for
 * the next launch followed in its batch by fetches for launches further
 * ahead.
 */
#include <stdio.h>

#include "victim_room.h"

/* ---- 1. demand bytes with prices known ------------------------------------ */

/* Launch 8 reads two units it lacks, on demand, into a full room (two
 * units held outside the planner): `split` as chunks 8 and 9 of one unit,
 * else as chunk 10 of two; `priced` with ops->price known (1.0, above
 * zero: every chunk is fetched; bring_priced), else unknown (bring).
 * Launch 8 hides one unit: the two units outlast it. Victims to v[0..1]. */
static void demand_victims(bool split, bool priced, int v[2])
{
    victim_room f;
    lms_plan p;
    vr_scene(&f, &p, &vr_told_ahead, 16, 1, 9);
    f.hides = VR_UNIT;
    f.used += 2 * VR_UNIT;
    for (uint32_t i = 0; priced && i < f.n; i++)
        f.price[i] = 1.0;
    f.chunks[10].charge = 2 * VR_UNIT;
    uint32_t two[2] = {8, 9}, one = 10;
    vr_launch(&p, priced ? &vr_priced_ops : &vr_ops, &f, 8, split ? two : &one, split ? 2 : 1);
    CHECK_EQ_U(f.evictions, 2);
    v[0] = f.evicted[0], v[1] = f.evicted[1];
    printf("demand, %s, prices %s: evicted %d then %d\n", split ? "two chunks of one unit" : "one chunk of two units",
           priced ? "known" : "unknown", v[0], v[1]);
    lms_plan_destroy(&p);
}

static bool same_pair(const int a[2], const int b[2])
{
    return (a[0] == b[0] && a[1] == b[1]) || (a[0] == b[1] && a[1] == b[0]);
}

/* The same two units on demand for the same launch: the victims do not
 * depend on how they are cut into chunks, whether or not the launch's
 * prices are known (bring_priced, the path once prices are measured,
 * made room chunk by chunk with one chunk's charge: split and priced
 * evicted {5, 2}, the others {2, 3}). */
static void priced_split(void)
{
    int w[2], s[2], pw[2], ps[2];
    demand_victims(false, false, w);
    demand_victims(true, false, s);
    demand_victims(false, true, pw);
    demand_victims(true, true, ps);
    CHECK(same_pair(w, s));
    CHECK(same_pair(w, pw));
    CHECK(same_pair(pw, ps));
}

/* ---- 2. acting deep: the next launch's fetch in a batch reaching further - */

/* Launch 8 uses chunk 7 (fills the room but one unit, which is held
 * outside). Acting deep, it fetches ahead chunk 8 (one unit) for launch 9
 * and, when `far`, chunks 11 and 12 for launches 12 and 13 after it.
 * Launch 8 hides one unit: chunk 8 alone does not outlast it. Returns the
 * victim evicted for chunk 8 (the first eviction). */
static int deep_first_victim(bool far)
{
    victim_room f;
    lms_plan p;
    vr_scene(&f, &p, &vr_told_ahead, 16, 1, 9);
    p.mode = LMS_PLAN_DEEP;
    f.hides = VR_UNIT;
    f.used += VR_UNIT;
    f.ahead_ids[0] = 8, f.ahead_dist[0] = 1, f.nahead = 1;
    f.chunks[11].memo.w[0] = 12;
    f.chunks[12].memo.w[0] = 13;
    if (far) {
        f.ahead_ids[1] = 11, f.ahead_dist[1] = 4;
        f.ahead_ids[2] = 12, f.ahead_dist[2] = 5;
        f.nahead = 3;
    }
    uint32_t seven = 7;
    vr_launch(&p, &vr_ops, &f, 8, &seven, 1);
    CHECK(f.evictions >= 1);
    int v = f.evicted[0];
    printf("deep, chunk 8 for launch 9%s: first victim %d (%llu evictions, %llu fetches)\n",
           far ? " then 11, 12 for launches 12, 13" : " alone", v, (unsigned long long)f.evictions,
           (unsigned long long)f.fetches);
    lms_plan_destroy(&p);
    return v;
}

/* A need further than the next launch "has launches to hide behind"
 * (outlasts_launch), and the batch is fetched in order of need, so chunk
 * 8's copy ends before theirs begin: the victim made room for chunk 8
 * does not change because chunks for launches 12 and 13 follow it in the
 * batch (counted with them, it was 2, idle first, against 5 alone). */
static void deep_mixed(void)
{
    int alone = deep_first_victim(false), followed = deep_first_victim(true);
    CHECK_EQ_U(alone, 5);
    CHECK_EQ_U(followed, alone);
}

static const test_case cases[] = {
    {"priced_split", priced_split},
    {"deep_mixed", deep_mixed},
};

TEST_MAIN(cases)
