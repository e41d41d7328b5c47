/*
 * fnprice_test.c — a function's fitted price of reading in place
 * (src/common/fnprice.c), and what the planner does with it when its
 * policy has nothing to act on (src/common/plan.c, blind_fetch) or when a
 * chunk has no price of its own (hidden_price); durations are taught
 * directly and a fake device with room for two chunks of one unit shows
 * what a launch fetches.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "fnprice.h"
#include "plan.h"
#include "policy.h"

#define FN 0x4321u
#define MIB (1024ull * 1024ull)

/* |a - b| within a thousandth of b. */
static int near(double a, double b)
{
    double d = a - b;
    return (d < 0 ? -d : d) <= (b < 0 ? -b : b) / 1000;
}

/* A GEMM re-reading a 32 MiB operand 8 times: 1 ms with it on the device,
 * 9 ms reading it in place: 8 ms more per 32 MiB. */
static void reread_priced(void)
{
    lms_fnprice f;
    CHECK(lms_fnprice_init(&f, 64));
    for (int i = 0; i < 3; i++)
        lms_fnprice_learn(&f, FN, 32 * MIB, 0, 1e6);
    lms_fnprice_learn(&f, FN, 0, 32 * MIB, 9e6);
    int learn = 7;
    CHECK(near(lms_fnprice_of(&f, FN, &learn), 8e6 / (32.0 * MIB)));
    CHECK(learn == 0);
    lms_fnprice_destroy(&f);
}

/* A kernel whose compute does not follow the bytes of its chunks (other
 * operands set it): launches on the device of 30 to 150 MiB all take
 * 1.8 ms, and one reading 30 MiB in place takes the same: no slowdown,
 * price 0 (a line through the origin would have priced it). */
static void flat_line_hidden(void)
{
    lms_fnprice f;
    CHECK(lms_fnprice_init(&f, 64));
    for (int k = 1; k <= 5; k++)
        lms_fnprice_learn(&f, FN, (uint64_t)(30 * k) * MIB, 0, 1.8e6);
    lms_fnprice_learn(&f, FN, 30 * MIB, 30 * MIB, 1.8e6);
    double p = lms_fnprice_of(&f, FN, NULL);
    CHECK(p >= 0 && p < 1e-9);
    lms_fnprice_destroy(&f);
}

/* Durations on the device grow with the bytes (1 ms + 10 us per MiB): a
 * launch of 100 MiB reading 50 of them in place that took 3 ms ran
 * 1 ms longer than the line says for 100 MiB: 1 ms per 50 MiB. */
static void line_in_bytes(void)
{
    lms_fnprice f;
    CHECK(lms_fnprice_init(&f, 64));
    for (int k = 1; k <= 4; k++)
        lms_fnprice_learn(&f, FN, (uint64_t)(20 * k) * MIB, 0, 1e6 + 1e4 * 20 * k);
    lms_fnprice_learn(&f, FN, 50 * MIB, 50 * MIB, 3e6);
    CHECK(near(lms_fnprice_of(&f, FN, NULL), 1e6 / (50.0 * MIB)));
    lms_fnprice_destroy(&f);
}

/* Which launch would teach an unknown price: none for a function never
 * seen; one on the device while those are too few; one reading in place
 * while none did; a launch with no chunks teaches nothing. */
static void learn_asks(void)
{
    lms_fnprice f;
    CHECK(lms_fnprice_init(&f, 64));
    int learn = 7;
    CHECK(lms_fnprice_of(&f, FN, &learn) < 0 && learn == 0);
    lms_fnprice_learn(&f, FN, 0, 0, 5e6);
    CHECK(lms_fnprice_of(&f, FN, &learn) < 0 && learn == 0);
    lms_fnprice_learn(&f, FN, 0, 8 * MIB, 5e6);
    CHECK(lms_fnprice_of(&f, FN, &learn) < 0 && learn == 1);
    lms_fnprice_learn(&f, FN, 8 * MIB, 0, 1e6);
    lms_fnprice_learn(&f, FN, 8 * MIB, 0, 1e6);
    CHECK(lms_fnprice_of(&f, FN, &learn) >= 0 && learn == 0);
    lms_fnprice g;
    CHECK(lms_fnprice_init(&g, 64));
    lms_fnprice_learn(&g, FN, 8 * MIB, 0, 1e6);
    lms_fnprice_learn(&g, FN, 8 * MIB, 0, 1e6);
    CHECK(lms_fnprice_of(&g, FN, &learn) < 0 && learn == -1);
    lms_fnprice_learn(&g, FN, 8 * MIB, 0, -1);   /* no duration: nothing learned */
    CHECK(lms_fnprice_of(&g, FN, &learn) < 0 && learn == -1);
    lms_fnprice_destroy(&f);
    lms_fnprice_destroy(&g);
}

/* Each kind of launch decays only with launches of its kind: a price
 * once fitted stays through 500 launches on the device, and follows a
 * program whose reads in place got dearer. */
static void price_stays(void)
{
    lms_fnprice f;
    CHECK(lms_fnprice_init(&f, 64));
    lms_fnprice_learn(&f, FN, 32 * MIB, 0, 1e6);
    lms_fnprice_learn(&f, FN, 32 * MIB, 0, 1e6);
    lms_fnprice_learn(&f, FN, 0, 32 * MIB, 3e6);
    double p = lms_fnprice_of(&f, FN, NULL);
    CHECK(near(p, 2e6 / (32.0 * MIB)));
    for (int i = 0; i < 500; i++)
        lms_fnprice_learn(&f, FN, 32 * MIB, 0, 1e6);
    CHECK(near(lms_fnprice_of(&f, FN, NULL), p));
    for (int i = 0; i < 500; i++)
        lms_fnprice_learn(&f, FN, 0, 32 * MIB, 9e6);
    CHECK(lms_fnprice_of(&f, FN, NULL) > 7.9e6 / (32.0 * MIB));
    lms_fnprice_destroy(&f);
}

/* The table never holds more than half its slots: many functions clear
 * it, and it keeps learning. */
static void bounded_table(void)
{
    lms_fnprice f;
    CHECK(lms_fnprice_init(&f, 16));
    for (uintptr_t fn = 1; fn < 500; fn++) {
        lms_fnprice_learn(&f, fn, MIB, 0, 100);
        CHECK(f.used <= f.cap / 2);
    }
    int learn = 0;
    CHECK(lms_fnprice_of(&f, 499, &learn) < 0 && learn == 1);
    lms_fnprice_destroy(&f);
}

/* ---- the planner with nothing to act on ---------------------------------- */

/* A fake device with a function price: fake_room's ops get a fake. */
typedef struct fake {
    fake_room dev;            /* first: the ops' ctx is the fake */
    double own;               /* every chunk's own price; negative: unknown */
    double fn_price;          /* the function's fitted price; negative: unknown */
    int learn;                /* ... then which launch would teach it */
    double fetch_cost;        /* ns per byte a demand fetch holds a launch */
} fake;

static double f_price(void *ctx, lms_plan_chunk *c)
{
    (void)c;
    return ((fake *)ctx)->own;
}

static double f_fn_price(void *ctx, int *learn)
{
    fake *f = ctx;
    if (learn)
        *learn = f->fn_price >= 0 ? 0 : f->learn;
    return f->fn_price;
}

static double f_fetch_cost(void *ctx) { return ((fake *)ctx)->fetch_cost; }

static uint64_t f_room(void *ctx) { return ((fake *)ctx)->dev.room; }

/* A policy on demand that says it has nothing to act on, and one that
 * acts (no guessing(): it always has). */
static bool never(void *p) { (void)p; return false; }
static const lms_policy blind_like = {.name = "blind-like", .on_demand = true, .guessing = never};
static const lms_policy acting_like = {.name = "acting-like", .on_demand = true};

/* One launch of chunk 0 on a device with room for `room` of `n` chunks
 * under policy pol; returns whether chunk 0 was fetched. */
static bool fetched(const lms_policy *pol, uint64_t room, uint32_t n, double own, double fn_price, int learn)
{
    fake f = {.own = own, .fn_price = fn_price, .learn = learn, .fetch_cost = 2};
    fake_room_init(&f.dev, room, n);
    lms_plan_ops ops = fake_room_ops();
    ops.price = f_price;
    ops.fn_price = f_fn_price;
    ops.fetch_cost = f_fetch_cost;
    ops.room = f_room;
    ops.managed = fake_room_managed;
    lms_plan plan;
    CHECK(lms_plan_init(&plan, pol));
    uint32_t id = 0;
    lms_plan_chunk *mine[1] = {&f.dev.chunks[0]};
    lms_plan_pin(&plan, mine[0]);
    lms_plan_launch(&plan, &ops, &f, 1, FN, &id, 1, mine, 1);
    lms_plan_used(&plan, mine[0], 1);
    bool in = f.dev.chunks[0].resident;
    CHECK_EQ_U(f.dev.fetches, in ? 1 : 0);
    lms_plan_destroy(&plan);
    return in;
}

/* Nothing to act on, room for 2 of 20 chunks (a tenth): a function whose
 * reads in place were measured dearer than a fetch (3 against 2 per
 * byte) has its chunk fetched, a cheaper one (1) read in place; a chunk's
 * own price comes first. */
static void blind_by_price(void)
{
    CHECK(fetched(&blind_like, 2, 20, -1, 3, 0));
    CHECK(!fetched(&blind_like, 2, 20, -1, 1, 0));
    CHECK(!fetched(&blind_like, 2, 20, 1, 3, 0));
    CHECK(fetched(&blind_like, 2, 20, 3, 1, 0));
}

/* No price at all: the room's share of the managed bytes decides (a
 * quarter or more: fetched), unless the function's fit lacks a kind of
 * launch: then that kind is made. */
static void blind_unknown(void)
{
    CHECK(!fetched(&blind_like, 2, 20, -1, -1, 0));
    CHECK(fetched(&blind_like, 5, 20, -1, -1, 0));
    CHECK(fetched(&blind_like, 2, 20, -1, -1, 1));
    CHECK(!fetched(&blind_like, 5, 20, -1, -1, -1));
}

/* Acting, a chunk without a price of its own takes its function's price
 * only when that says the function hides its reads in place (under an
 * eighth of a fetch's 2 per byte): read in place at 0.1, fetched at 1
 * (below a fetch, but an average over operands re-read and not). */
static void acting_hidden_only(void)
{
    CHECK(!fetched(&acting_like, 2, 20, -1, 0.1, 0));
    CHECK(fetched(&acting_like, 2, 20, -1, 1, 0));
    CHECK(fetched(&acting_like, 2, 20, -1, -1, -1));
}

static const test_case cases[] = {
    {"reread_priced", reread_priced},
    {"flat_line_hidden", flat_line_hidden},
    {"line_in_bytes", line_in_bytes},
    {"learn_asks", learn_asks},
    {"price_stays", price_stays},
    {"bounded_table", bounded_table},
    {"blind_by_price", blind_by_price},
    {"blind_unknown", blind_unknown},
    {"acting_hidden_only", acting_hidden_only},
};

TEST_MAIN(cases)
