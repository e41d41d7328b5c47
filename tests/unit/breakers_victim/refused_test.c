/*
 * refused_test.c — p->bringing (src/common/plan.c, bring and
 * bring_priced) on the paths around a demand fetch: a fetch that fails
 * (op_fetch refuses a chunk a launch reads over the link, or the driver
 * fails), the demotion of a launch's own chunk, and whether the total is
 * zero after every return.
 */
#include <stdio.h>

#include "victim_room.h"

/* policy.period and policy.step: 16 launches (TRIAL_MIN), so that acting
 * deep reads chunks used once a step in place. */
static uint64_t sixteen(void *state)
{
    (void)state;
    return 16;
}
static const lms_policy stepped = {.name = "stepped", .on_demand = true, .next_use = vr_next, .period = sixteen,
                                   .step = sixteen};

/* Launch 8 reads chunk 8 (one unit) and chunk 10 (two units) on demand
 * into a full room; the launch hides two units. `fail`: chunk 8's fetch
 * is refused after its room was made (one unit free again). Returns the
 * victim evicted for chunk 10 (the second eviction). */
static int second_victim(bool priced, bool fail, bool only10)
{
    victim_room f;
    lms_plan p;
    vr_scene(&f, &p, &vr_told, 16, 1, 2000);
    f.hides = 2 * VR_UNIT;
    f.used += 2 * VR_UNIT;
    f.chunks[10].charge = 2 * VR_UNIT;
    if (priced)
        f.price[8] = 2.0, f.price[10] = 1.0;   /* chunk 8 first (dearer) */
    f.fails[8] = fail;
    uint32_t ids[2] = {8, 10};
    if (only10) {
        f.used -= VR_UNIT;   /* the unit chunk 8's refused fetch left free */
        vr_launch(&p, priced ? &vr_priced_ops : &vr_ops, &f, 8, &ids[1], 1);
    } else {
        vr_launch(&p, priced ? &vr_priced_ops : &vr_ops, &f, 8, ids, 2);
    }
    int v = f.evicted[only10 ? 0 : 1];
    printf("%s, chunk 8 %s: victims", priced ? "priced" : "unpriced",
           only10 ? "absent" : fail ? "refused" : "fetched");
    for (uint64_t i = 0; i < f.evictions; i++)
        printf(" %d", f.evicted[i]);
    printf(" (victim for chunk 10: %d; bringing at evictions up to %llu units)\n", v,
           (unsigned long long)(f.max_bringing / VR_UNIT));
    lms_plan_destroy(&p);
    return v;
}

/* A chunk whose fetch was refused is read in place: the copy for the
 * launch is then chunk 10's two units, which the launch hides, and the
 * victim for chunk 10 is the one chosen for those two units alone (the
 * farthest, 5). (Counting chunk 8's unit still, the fetch "outlasted" the
 * launch and the idle one, 3, went.) */
static void refused_fetch(void)
{
    int alone[2], refused[2];
    for (int priced = 1; priced >= 0; priced--) {
        alone[priced] = second_victim(priced, false, true);
        refused[priced] = second_victim(priced, true, false);
        second_victim(priced, false, false);
    }
    for (int priced = 1; priced >= 0; priced--) {
        CHECK_EQ_U(alone[priced], 5);
        CHECK_EQ_U(refused[priced], alone[priced]);
    }
}

/* The launch's own resident chunk 1 (cheap) is sent back so that chunk 2
 * (dear) is fetched: the room is full of the launch's chunks, no victim.
 * p->bringing is zero after the return (vr_launch checks it), and the
 * demotion path never asked pick_victim (no eviction but chunk 1's). */
static void demoted(void)
{
    victim_room f;
    lms_plan p;
    vr_init(&f, 2, 4);
    for (uint32_t i = 0; i < f.n; i++)
        f.chunks[i].memo.w[0] = 2000;
    f.pinned_evictions = true;   /* the launch's own chunk 1 is sent back */
    f.hides = VR_UNIT;
    f.p = &p;
    CHECK(lms_plan_init(&p, &vr_told));
    uint32_t a[2] = {0, 1};
    vr_launch(&p, &vr_ops, &f, 1, a, 2);
    CHECK_EQ_U(f.used, 2 * VR_UNIT);
    f.fetches = 0;
    p.mode = LMS_PLAN_ACT;
    f.price[0] = 5.0, f.price[1] = 0.5, f.price[2] = 4.0, f.price[3] = 0.0;
    uint32_t b[4] = {0, 1, 2, 3};
    vr_launch(&p, &vr_priced_ops, &f, 2, b, 4);
    printf("demoted: evictions %llu (first %d), fetches %llu, bringing up to %llu units\n",
           (unsigned long long)f.evictions, f.evicted[0], (unsigned long long)f.fetches,
           (unsigned long long)(f.max_bringing / VR_UNIT));
    CHECK_EQ_U(f.evictions, 1);
    CHECK_EQ_U(f.evicted[0], 1);
    CHECK_EQ_U(f.fetches, 1);
    CHECK(f.chunks[2].resident);
    CHECK_EQ_U(f.max_bringing, VR_UNIT);   /* chunk 2 only: chunk 3 (price 0) is read in place */
    lms_plan_destroy(&p);
}

/* Launch 18 (acting deep, or acting) lacks chunk 11, last used at launch
 * 1 (once a step: acting deep fetches it on demand into the one free unit,
 * fetch_free), and chunk 12 (never used: through bring). Launches 11..17
 * used chunks 0..6 as in vr_scene(). The launch hides one unit; the copy it
 * waits for is two units either way (both on the launch's stream). Returns
 * the victim evicted for chunk 12. */
static int free_then_bring(bool deep)
{
    victim_room f;
    lms_plan p;
    vr_scene(&f, &p, &stepped, 16, 11, 2000);
    p.mode = deep ? LMS_PLAN_DEEP : LMS_PLAN_ACT;
    f.chunks[11].last_use = 1;
    f.used += VR_UNIT;   /* one unit free */
    f.hides = VR_UNIT;
    uint32_t ids[2] = {11, 12};
    vr_launch(&p, &vr_ops, &f, 18, ids, 2);
    printf("%s: fetches %llu, evictions %llu (first %d), bringing up to %llu units\n", deep ? "deep" : "act",
           (unsigned long long)f.fetches - 7, (unsigned long long)f.evictions, f.evicted[0],
           (unsigned long long)(f.max_bringing / VR_UNIT));
    CHECK(f.chunks[11].resident && f.chunks[12].resident);
    CHECK_EQ_U(f.evictions, 1);
    int v = f.evicted[0];
    lms_plan_destroy(&p);
    return v;
}

/* The same two units copied on demand for the same launch: the victim
 * does not depend on whether one of them went into free room first. */
static void free_room_counted(void)
{
    int act = free_then_bring(false), deep = free_then_bring(true);
    CHECK_EQ_U(act, 2);
    CHECK_EQ_U(deep, act);
}

static const test_case cases[] = {
    {"free_room_counted", free_room_counted},
    {"refused_fetch", refused_fetch},
    {"demoted", demoted},
};

TEST_MAIN(cases)
