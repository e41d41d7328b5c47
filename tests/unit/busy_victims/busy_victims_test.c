/*
 * busy_victims_test.c — the planner without CUDA: the victim of a fetch is
 * the chunk expected farthest ahead, unless the launch just before used it
 * (its eviction would wait for that kernel) and an idle chunk expected at
 * least half as far ahead is among the next candidates: then the farthest
 * of those, or, when the fetch outlasts the launch, the farthest of those
 * not used by the last few launches. A chunk the latest launch on another
 * stream used counts as used by the launch just before.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "plan.h"
#include "policy.h"

/* A policy whose next use of a chunk is what the test wrote in its memo. */
static uint64_t told_next(void *state, const lms_policy_memo *memo, uint64_t last_use, uint64_t now)
{
    (void)state, (void)last_use;
    return memo->w[0] > now ? memo->w[0] : LMS_NEXT_UNKNOWN;
}

static const lms_policy told = {.name = "told", .on_demand = true, .next_use = told_next};

/* What each launch hides (ops->hides), in bytes; chunks are charged 2. */
static uint64_t launch_hides;

/* The chunk the latest launch on another stream used (ops->busy), -1: none. */
static int other_stream_chunk = -1;

/* ops.busy: the chunk other_stream_chunk. */
static bool told_busy(void *ctx, const lms_plan_chunk *c)
{
    (void)ctx;
    return (int)c->id == other_stream_chunk;
}

/* ops.hides: launch_hides. */
static uint64_t told_hides(void *ctx)
{
    (void)ctx;
    return launch_hides;
}

/* Launches 1..n use chunks 0..n-1, one each, room for n-1 (chunks charged
 * 2); chunk i < n-1 is next needed at launch next[i]; the last launch
 * hides `hides` (0: unknown). Returns the chunk evicted for it. */
static int victim_for_last(const uint64_t *next, uint32_t n, uint64_t hides)
{
    fake_room f;
    fake_room_init(&f, 2 * (n - 1), n);
    for (uint32_t i = 0; i < n; i++)
        f.chunks[i].charge = 2;
    for (uint32_t i = 0; i + 1 < n; i++)
        f.chunks[i].memo.w[0] = next[i];
    lms_plan plan;
    CHECK(lms_plan_init(&plan, &told));
    lms_plan_ops ops = fake_room_ops();
    ops.hides = told_hides;
    ops.busy = told_busy;
    launch_hides = hides;
    for (uint64_t seq = 1; seq <= n; seq++) {
        uint32_t id = (uint32_t)(seq - 1);
        lms_plan_chunk *c = &f.chunks[id];
        lms_plan_pin(&plan, c);
        lms_plan_launch(&plan, &ops, &f, seq, 1, &id, 1, &c, 1);
        CHECK(c->resident);
        lms_plan_used(&plan, c, seq);
    }
    CHECK_EQ_U(f.evictions, 1);
    lms_plan_destroy(&plan);
    return f.last_evicted;
}

/* Launches 1 and 2 use chunks 0 and 1 (room for two); chunk 0 is next
 * needed at launch `next0`, chunk 1 at launch 150; launch 3 uses chunk 2.
 * Returns the chunk evicted for it. */
static int victim_for_third(uint64_t next0)
{
    const uint64_t next[2] = {next0, 150};
    return victim_for_last(next, 3, 0);
}

/* Chunk 1 is farther (150) but launch 2 used it; chunk 0 (100, idle, at
 * least half as far) goes. */
static void idle_victim_first(void)
{
    CHECK_EQ_U(victim_for_third(100), 0);
}

/* Chunk 0 is needed soon (20, under half as far): Belady's choice stands. */
static void busy_victim_when_alone(void)
{
    CHECK_EQ_U(victim_for_third(20), 1);
}

/* Launches 1..7 use chunks 0..6, one each, room for seven; chunk i is
 * next needed at launch next[i]; launch 8 uses chunk 7 and hides `hides`
 * (0: unknown). Returns the chunk evicted for it. */
static int victim_among_seven(const uint64_t next[7], uint64_t hides)
{
    return victim_for_last(next, 8, hides);
}

/* Chunk 6 (300) is farthest but launch 7 used it; chunks 0..5 (160..210)
 * are all at least half as far. Entered in that order, the heap holds
 * them as 190, 210, 160, 180, 170, 200 after its top: the first in the
 * array is chunk 3 (190). Chunk 5 (210) was used by launch 6, two before
 * launch 8. When launch 8 hides the fetch or its duration is unknown, the
 * farthest, chunk 5, goes; when the fetch outlasts it (it hides 1 byte),
 * whatever holds the fetch back shows: the farthest idle one, chunk 4
 * (200). */
static void farthest_victim(void)
{
    const uint64_t next[7] = {160, 170, 180, 190, 200, 210, 300};
    CHECK_EQ_U(victim_among_seven(next, 0), 5);
    CHECK_EQ_U(victim_among_seven(next, 2), 5);
    CHECK_EQ_U(victim_among_seven(next, 1), 4);
}

/* The same entered farthest first: the heap holds 200, 210, 180, 170,
 * 160, 190 after its top; the farthest, chunk 0 (210, idle), goes, not
 * the first in the array (chunk 1, 200), whatever launch 8 hides. */
static void farthest_victim_reversed(void)
{
    const uint64_t next[7] = {210, 200, 190, 180, 170, 160, 300};
    CHECK_EQ_U(victim_among_seven(next, 0), 0);
    CHECK_EQ_U(victim_among_seven(next, 1), 0);
}

/* Only chunk 5 (used by launch 6) is at least half as far: it goes,
 * recent or not, before the busy top. */
static void recent_when_alone(void)
{
    const uint64_t next[7] = {20, 30, 40, 50, 60, 210, 300};
    CHECK_EQ_U(victim_among_seven(next, 1), 5);
}

/* Chunk 0 is the farthest (300) and idle here, but the latest launch on
 * another stream used it (ops->busy): its eviction would wait for that
 * kernel. The farthest of the others at least half as far goes (chunk 5,
 * 210); with no other stream, chunk 0. */
static void other_stream_busy(void)
{
    const uint64_t next[7] = {300, 160, 170, 180, 190, 210, 150};
    CHECK_EQ_U(victim_among_seven(next, 0), 0);
    other_stream_chunk = 0;
    CHECK_EQ_U(victim_among_seven(next, 0), 5);
    other_stream_chunk = -1;
}

static const test_case cases[] = {
    {"farthest_victim", farthest_victim},
    {"farthest_victim_reversed", farthest_victim_reversed},
    {"recent_when_alone", recent_when_alone},
    {"idle_victim_first", idle_victim_first},
    {"busy_victim_when_alone", busy_victim_when_alone},
    {"other_stream_busy", other_stream_busy},
};

TEST_MAIN(cases)
