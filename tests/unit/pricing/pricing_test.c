/*
 * pricing_test.c — the price table and the planner's priced decisions,
 * without CUDA: durations are taught directly, and a fake device with room
 * for two chunks of one unit shows what a launch of three fetches, reads
 * in place and sends back.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_room.h"
#include "plan.h"
#include "policy.h"
#include "price.h"

#define FN 0x1234u

/* A slowdown over the function's time on the device is priced per byte;
 * one within the noise (1/16 of the base) is none; a chunk never read in
 * place has no price; the lowest price seen stays. */
static void learn_slowdown(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    uint32_t ids[2] = {7, 9};
    uint64_t sig = lms_price_sig(FN, ids, 2);
    lms_price_learn(&p, FN, lms_price_sig(FN, NULL, 0) ^ 5, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);   /* on the device: 1000 ns */
    lms_price_learn(&p, FN, sig, &ids[0], 1, 100, 5000, LMS_PRICE_NO_ROLE);   /* chunk 7 in place: 4000 ns more for 100 B */
    CHECK(lms_price_of(&p, FN, sig, 7) > 39.9 && lms_price_of(&p, FN, sig, 7) < 40.1);
    CHECK(lms_price_of(&p, FN, sig, 9) < 0);
    lms_price_learn(&p, FN, sig, &ids[1], 1, 100, 1050, LMS_PRICE_NO_ROLE);   /* chunk 9 in place: within the noise */
    CHECK(lms_price_of(&p, FN, sig, 9) == 0);
    lms_price_learn(&p, FN, sig, &ids[0], 1, 100, 3000, LMS_PRICE_NO_ROLE);   /* a cheaper look at chunk 7 */
    CHECK(lms_price_of(&p, FN, sig, 7) > 19.9 && lms_price_of(&p, FN, sig, 7) < 20.1);
    lms_price_learn(&p, FN, sig, &ids[0], 1, 100, 9000, LMS_PRICE_NO_ROLE);   /* a dearer one: the best case stays */
    CHECK(lms_price_of(&p, FN, sig, 7) > 19.9 && lms_price_of(&p, FN, sig, 7) < 20.1);
    CHECK_EQ_U(lms_price_seen(&p, sig), 4);
    lms_price_destroy(&p);
}

/* Two launches of one function on the same chunks in other roles (a
 * convolution a -> b, then b -> a) have prices of their own. */
static void roles_apart(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    uint32_t ids[2] = {1, 2};
    uint64_t fwd = lms_price_sig(FN, ids, 2) ^ 11, back = lms_price_sig(FN, ids, 2) ^ 12;
    lms_price_learn(&p, FN, 99, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);
    lms_price_learn(&p, FN, fwd, &ids[1], 1, 100, 9000, LMS_PRICE_NO_ROLE);   /* 2 is read 8 times in place */
    lms_price_learn(&p, FN, back, &ids[1], 1, 100, 1000, LMS_PRICE_NO_ROLE);  /* 2 is written once, hidden */
    CHECK(lms_price_of(&p, FN, fwd, 2) > 79);
    CHECK(lms_price_of(&p, FN, back, 2) == 0);
    CHECK(lms_price_of(&p, FN, fwd, 1) < 0);
    lms_price_destroy(&p);
}

/* A launch whose reads in place were of one chunk at parameter word
 * `role` also prices that position of its function, for any signature:
 * the half-way mean of its launches (a low price reads in place, and so
 * is measured again), with the same mean of how far each strayed from
 * it (the spread); a launch with no role prices none; another
 * function's position is its own; a launch reading in place a quarter
 * faster than the base forgets the position's price with the rest. */
static void position_priced(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    uint32_t id7 = 7, id9 = 9;
    lms_price_learn(&p, FN, 99, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);   /* on the device: 1000 ns */
    CHECK(lms_price_role(&p, FN, 2, NULL) < 0);
    lms_price_learn(&p, FN, 101, &id7, 1, 100, 5000, 2);   /* word 2's chunk in place: 4000 ns for 100 B */
    CHECK(lms_price_role(&p, FN, 2, NULL) > 39.9 && lms_price_role(&p, FN, 2, NULL) < 40.1);
    CHECK(lms_price_role(&p, FN, 3, NULL) < 0);
    CHECK(lms_price_role(&p, FN + 1, 2, NULL) < 0);
    lms_price_learn(&p, FN, 102, &id9, 1, 100, 1050, 3);   /* word 3's chunk in place: within the noise */
    CHECK(lms_price_role(&p, FN, 3, NULL) == 0);
    double spread = -1;
    CHECK(lms_price_role(&p, FN, 2, &spread) > 39.9 && spread == 0);
    lms_price_learn(&p, FN, 103, &id9, 1, 100, 3000, 2);   /* another signature, word 2 again: 20 per byte */
    CHECK(lms_price_role(&p, FN, 2, &spread) > 29.9 && lms_price_role(&p, FN, 2, NULL) < 30.1);
    CHECK(spread > 9.9 && spread < 10.1);   /* half of |20 - 40| */
    lms_price_learn(&p, FN, 104, &id7, 1, 100, 9000, LMS_PRICE_NO_ROLE);   /* no role: no position priced */
    CHECK(lms_price_role(&p, FN, 2, NULL) > 29.9 && lms_price_role(&p, FN, 2, NULL) < 30.1);
    CHECK(lms_price_role(&p, FN, LMS_PRICE_NO_ROLE, NULL) < 0);
    lms_price_learn(&p, FN, 105, &id7, 1, 100, 500, 2);   /* faster than the base: all of it stale */
    CHECK(lms_price_role(&p, FN, 2, NULL) < 0);
    CHECK(lms_price_role(&p, FN, 3, NULL) == 0);
    lms_price_destroy(&p);
}

/* Launches of one function in two grid classes (one re-reads the
 * chunk at word 1 16 times, the other reads it once): each class's
 * position answers for its own launches once it stands on two launches
 * (the function's mixes both); a chunk's own price answers per class;
 * for a class that has none, the signature's lowest over the classes
 * answers unless the class prices the position; a launch faster than
 * the base forgets the class's prices with the function's. */
static void grid_classes(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    const uintptr_t wide = FN ^ 0x100, narrow = FN ^ 0x200, other = FN ^ 0x300;   /* FN in three grid classes */
    uint32_t ids[2] = {7, 9};
    uint64_t sig = lms_price_sig(FN, ids, 2);
    lms_price_learn(&p, FN, 99, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);   /* on the device: 1000 ns */
    lms_price_role_read r = {.role = 1, .bytes = 100, .cls = wide};
    lms_price_learn_read(&p, FN, sig, &ids[1], 1, 100, 9000, &r);   /* wide: 80 per byte */
    CHECK(lms_price_of_class(&p, FN, wide, sig, 9, 1) > 79.9 && lms_price_of_class(&p, FN, wide, sig, 9, 1) < 80.1);
    CHECK(lms_price_role_of_class(&p, FN, wide, 1, NULL) > 79.9);   /* one launch: the function's, the same */
    r.cls = narrow;
    lms_price_learn_read(&p, FN, sig, &ids[1], 1, 100, 1500, &r);   /* narrow: 5 per byte */
    CHECK(lms_price_of(&p, FN, sig, 9) > 4.9 && lms_price_of(&p, FN, sig, 9) < 5.1);   /* the signature's lowest */
    CHECK(lms_price_of_class(&p, FN, wide, sig, 9, 1) > 79.9);   /* the class's own */
    CHECK(lms_price_of_class(&p, FN, narrow, sig, 9, 1) > 4.9 && lms_price_of_class(&p, FN, narrow, sig, 9, 1) < 5.1);
    double spread = 0, mean = lms_price_role(&p, FN, 1, &spread);
    CHECK(mean > 42 && mean < 43 && !lms_price_agrees(mean, spread));   /* the function mixes the two */
    double o = lms_price_of_class(&p, FN, other, sig, 9, 1);
    CHECK(o > 4.9 && o < 5.1);   /* no price in its class: the signature's lowest */
    r.cls = wide;
    lms_price_learn_read(&p, FN, sig ^ 1, &ids[0], 1, 100, 9000, &r);   /* wide again, another signature */
    double w = lms_price_role_of_class(&p, FN, wide, 1, &spread);
    CHECK(w > 79.9 && w < 80.1 && spread == 0);   /* the class's, on two launches */
    CHECK(lms_price_role_of_class(&p, FN, narrow, 1, NULL) == lms_price_role(&p, FN, 1, NULL));   /* one: the function's */
    CHECK(lms_price_of_class(&p, FN, wide, sig ^ 1, 9, 1) < 0);   /* a chunk it never read in place: none */
    CHECK(lms_price_of_class(&p, FN, wide, sig ^ 2, 9, 1) < 0);   /* the class prices the position: not a lowest elsewhere */
    r.cls = narrow;
    lms_price_learn_read(&p, FN, sig ^ 3, &ids[0], 1, 100, 9000, &r);   /* narrow read at 80 now: the class disagrees */
    CHECK(lms_price_role_of_class(&p, FN, narrow, 1, NULL) == lms_price_role(&p, FN, 1, NULL));
    CHECK(lms_price_of_class(&p, FN, narrow, sig ^ 4, 9, 1) < 0);   /* nothing learned: none either way */
    lms_price_learn_read(&p, FN, sig ^ 4, &ids[1], 1, 100, 1500, &r);   /* ... 5 in a signature of its own */
    lms_price_learn_read(&p, FN, sig ^ 5, &ids[1], 1, 100, 1500, &r);
    CHECK(lms_price_of_class(&p, FN, other, sig ^ 4, 9, 1) > 4.9);   /* no class position: the signature's lowest */
    r.cls = wide;
    lms_price_learn_read(&p, FN, sig, &ids[1], 1, 100, 500, &r);   /* faster than the base: all of it stale */
    CHECK(lms_price_of_class(&p, FN, wide, sig, 9, LMS_PRICE_NO_ROLE) < 0);
    CHECK(lms_price_role_of_class(&p, FN, wide, 1, NULL) < 0);
    lms_price_destroy(&p);
}

/* A launch whose reads in place were of two chunks, one at a position
 * priced, prices the other position at what its slowdown leaves over the
 * priced one's and the base (each read overlapping the compute:
 * lms_price_learn_read); less than half the slowdown left, or nothing,
 * prices nothing (not zero); the chunks' own prices still share the
 * whole slowdown; a share of no bytes prices no position. */
static void position_share(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    uint32_t ids[2] = {7, 9};
    lms_price_learn(&p, FN, 99, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);   /* on the device: 1000 ns */
    lms_price_learn(&p, FN, 101, &ids[0], 1, 100, 1500, 0);              /* word 0 alone: 5 per byte */
    CHECK(lms_price_role(&p, FN, 0, NULL) > 4.9 && lms_price_role(&p, FN, 0, NULL) < 5.1);
    /* Both in place, 100 B each: 34,000 ns of slowdown; word 0's read
     * alone took 500 + 1000 over the link, so word 1's took 33,500,
     * 32,500 over the compute. */
    lms_price_role_read r = {.role = 1, .bytes = 100, .known_ns = 500, .known_n = 1};
    lms_price_learn_read(&p, FN, 102, ids, 2, 200, 35000, &r);
    CHECK(lms_price_role(&p, FN, 1, NULL) > 324.9 && lms_price_role(&p, FN, 1, NULL) < 325.1);
    CHECK(lms_price_role(&p, FN, 0, NULL) > 4.9 && lms_price_role(&p, FN, 0, NULL) < 5.1);   /* word 0 untouched */
    CHECK(lms_price_of(&p, FN, 102, 7) > 169.9 && lms_price_of(&p, FN, 102, 7) < 170.1);     /* the chunks: the whole spread */
    /* Nothing left over the others and the base: no price, not a zero. */
    r = (lms_price_role_read){.role = 2, .bytes = 100, .known_ns = 500, .known_n = 1};
    lms_price_learn_read(&p, FN, 103, ids, 2, 200, 2400, &r);
    CHECK(lms_price_role(&p, FN, 2, NULL) < 0);
    CHECK(lms_price_of(&p, FN, 103, 7) > 6.9 && lms_price_of(&p, FN, 103, 7) < 7.1);
    /* 2,500 ns of slowdown, 1,000 left: under half, no price. */
    lms_price_learn_read(&p, FN, 106, ids, 2, 200, 3500, &r);
    CHECK(lms_price_role(&p, FN, 2, NULL) < 0);
    /* 3,000 ns of slowdown, 1,500 left: half, 15 per byte. */
    lms_price_learn_read(&p, FN, 107, ids, 2, 200, 4000, &r);
    CHECK(lms_price_role(&p, FN, 2, NULL) > 14.9 && lms_price_role(&p, FN, 2, NULL) < 15.1);
    r = (lms_price_role_read){.role = 3, .bytes = 0};
    lms_price_learn_read(&p, FN, 104, ids, 2, 200, 4000, &r);
    CHECK(lms_price_role(&p, FN, 3, NULL) < 0);
    lms_price_learn_read(&p, FN, 105, ids, 2, 200, 4000, NULL);
    CHECK(lms_price_role(&p, FN, 1, NULL) > 324.9 && lms_price_role(&p, FN, 1, NULL) < 325.1);
    lms_price_destroy(&p);
}

/* A launch that read in place only a few pieces (under a quarter of its
 * bytes: `partial`) prices their position only when the slowdown is what
 * clearly over what the compute may hide (half as much again): the
 * base, or the launch's expected duration on the device where longer
 * (`compute`), and then at what is over that. A smaller slowdown prices it only where the position's
 * price says such reads could not have been hidden (its price times the
 * bytes twice what the compute may hide): it pulls that price down and
 * spreads it. The chunks' own prices are learned either way. */
static void position_partial(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    uint32_t id7 = 7;
    double spread = -1;
    lms_price_learn(&p, FN, 99, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);   /* on the device: 1000 ns */
    lms_price_role_read r = {.role = 1, .bytes = 100, .partial = true};
    lms_price_learn_read(&p, FN, 101, &id7, 1, 100, 1900, &r);   /* 900 ns of slowdown: under the base */
    CHECK(lms_price_role(&p, FN, 1, NULL) < 0);
    CHECK(lms_price_of(&p, FN, 101, 7) > 8.9 && lms_price_of(&p, FN, 101, 7) < 9.1);
    lms_price_learn_read(&p, FN, 102, &id7, 1, 100, 7000, &r);   /* 6,000 ns over the base: 60 per byte */
    CHECK(lms_price_role(&p, FN, 1, NULL) > 59.9 && lms_price_role(&p, FN, 1, NULL) < 60.1);
    /* 200 ns: the price said 6,000 ns, three times what could hide. */
    lms_price_learn_read(&p, FN, 103, &id7, 1, 100, 1200, &r);
    CHECK(lms_price_role(&p, FN, 1, &spread) > 30.9 && lms_price_role(&p, FN, 1, NULL) < 31.1);
    CHECK(spread > 28.9 && spread < 29.1 && !lms_price_agrees(lms_price_role(&p, FN, 1, NULL), spread));
    /* A position priced 15 per byte: 1,500 ns for 100 B might have hidden. */
    lms_price_learn(&p, FN, 104, &id7, 1, 100, 2500, 3);
    r.role = 3;
    lms_price_learn_read(&p, FN, 105, &id7, 1, 100, 1200, &r);
    CHECK(lms_price_role(&p, FN, 3, NULL) > 14.9 && lms_price_role(&p, FN, 3, NULL) < 15.1);
    /* A launch expected to take 3,000 ns on the device: 2,000 over it is
     * its compute's, none the link's; 5,000 over it prices 50 per byte. */
    r = (lms_price_role_read){.role = 4, .bytes = 100, .partial = true, .compute = 3000};
    lms_price_learn_read(&p, FN, 106, &id7, 1, 100, 5000, &r);
    CHECK(lms_price_role(&p, FN, 4, NULL) < 0);
    lms_price_learn_read(&p, FN, 107, &id7, 1, 100, 8000, &r);
    CHECK(lms_price_role(&p, FN, 4, NULL) > 49.9 && lms_price_role(&p, FN, 4, NULL) < 50.1);
    /* Exactly twice what could hide: not clear of it, no price. */
    r = (lms_price_role_read){.role = 5, .bytes = 100, .partial = true};
    lms_price_learn_read(&p, FN, 109, &id7, 1, 100, 2000, &r);
    CHECK(lms_price_role(&p, FN, 5, NULL) < 0);
    r = (lms_price_role_read){.role = 2, .bytes = 100};   /* a quarter or more: priced at any slowdown */
    lms_price_learn_read(&p, FN, 108, &id7, 1, 100, 1900, &r);
    CHECK(lms_price_role(&p, FN, 2, NULL) > 8.9 && lms_price_role(&p, FN, 2, NULL) < 9.1);
    lms_price_destroy(&p);
}

/* A signature whose launches all read in place, of a function never
 * seen on the device, has no base (lms_price_local_base; its shortest
 * duration, lms_price_base, read in place): no price (its own duration as the
 * base priced its reads at nothing, and the lowest price stayed). Once
 * the function ran on the device, the next launch prices them. */
static void no_base_no_price(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    uint32_t id = 4;
    uint64_t sig = lms_price_sig(FN, &id, 1);
    lms_price_learn(&p, FN, sig, &id, 1, 100, 9000, LMS_PRICE_NO_ROLE);
    lms_price_learn(&p, FN, sig, &id, 1, 100, 9000, LMS_PRICE_NO_ROLE);
    CHECK(lms_price_of(&p, FN, sig, 4) < 0);
    CHECK(lms_price_base(&p, FN, sig) == 9000);   /* the signature's shortest, read in place ... */
    CHECK(lms_price_local_base(&p, FN, sig) < 0); /* ... is no base to price against (plan.c, can_price) */
    lms_price_learn(&p, FN, sig ^ 1, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);   /* another launch of FN, on the device */
    CHECK(lms_price_local_base(&p, FN, sig) == 1000);
    lms_price_learn(&p, FN, sig, &id, 1, 100, 9000, LMS_PRICE_NO_ROLE);
    CHECK(lms_price_of(&p, FN, sig, 4) > 79.9 && lms_price_of(&p, FN, sig, 4) < 80.1);
    lms_price_destroy(&p);
}

/* A read hidden by a heavy compute prices zero; the compute then falls
 * (a launch on the device a quarter faster than the signature ever ran
 * there): the zero is of an older phase and is not answered, and the
 * next read in place prices against the new phase, dearer or not. A
 * launch on the device only a little faster is no new phase. */
static void compute_fell_price_forgotten(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    uint32_t id = 6;
    uint64_t sig = lms_price_sig(FN, &id, 1);
    lms_price_learn(&p, FN, sig, NULL, 0, 0, 12000, LMS_PRICE_NO_ROLE);        /* on the device: 12000 ns of compute */
    lms_price_learn(&p, FN, sig, &id, 1, 100, 12100, LMS_PRICE_NO_ROLE);       /* in place: hidden */
    CHECK(lms_price_of(&p, FN, sig, 6) == 0);
    lms_price_learn(&p, FN, sig, NULL, 0, 0, 10000, LMS_PRICE_NO_ROLE);        /* 1/6 faster: the same phase */
    CHECK(lms_price_of(&p, FN, sig, 6) == 0);
    lms_price_learn(&p, FN, sig, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);         /* 10x faster: the compute fell */
    CHECK(lms_price_of(&p, FN, sig, 6) < 0);
    lms_price_learn(&p, FN, sig, &id, 1, 100, 9000, LMS_PRICE_NO_ROLE);        /* in place now: 8000 ns more for 100 B */
    CHECK(lms_price_of(&p, FN, sig, 6) > 79.9 && lms_price_of(&p, FN, sig, 6) < 80.1);
    lms_price_learn(&p, FN, sig, &id, 1, 100, 5000, LMS_PRICE_NO_ROLE);        /* the lowest of the phase stays */
    CHECK(lms_price_of(&p, FN, sig, 6) > 39.9 && lms_price_of(&p, FN, sig, 6) < 40.1);
    lms_price_destroy(&p);
}

/* A signature whose chunk is only ever read in place has no launch on
 * the device of its own to tell that the compute fell: its function's
 * launches tell it. The function's shortest launch on the device (here a
 * launch naming no managed chunk, whose signature is the function's own)
 * falls by a quarter or more: a new phase for every signature of it, and
 * the zero learned under the heavier compute is not answered; a fall of
 * a sixth is none (an outside tester's `phase`, milder, at the defaults:
 * 8 launches a step read in place for good, 1.35x `lru` over 60 steps). */
static void function_compute_fell(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    uint32_t id = 6;
    uint64_t sig = lms_price_sig(FN, &id, 1), fn_sig = lms_price_sig(FN, NULL, 0);
    lms_price_learn(&p, FN, fn_sig, NULL, 0, 0, 12000, LMS_PRICE_NO_ROLE);   /* the function on the device */
    lms_price_learn(&p, FN, sig, &id, 1, 100, 12100, LMS_PRICE_NO_ROLE);      /* sig in place: hidden */
    CHECK(lms_price_of(&p, FN, sig, 6) == 0);
    lms_price_learn(&p, FN, fn_sig, NULL, 0, 0, 10000, LMS_PRICE_NO_ROLE);   /* 1/6 faster: the same phase */
    CHECK(lms_price_of(&p, FN, sig, 6) == 0);
    lms_price_learn(&p, FN, fn_sig, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);    /* 10x faster: the compute fell */
    CHECK(lms_price_of(&p, FN, sig, 6) < 0);
    CHECK(lms_price_of(&p, FN + 1, sig, 6) == 0);   /* another function's phases are its own */
    lms_price_learn(&p, FN, sig, &id, 1, 100, 9000, LMS_PRICE_NO_ROLE);       /* in place now: 8000 ns for 100 B */
    CHECK(lms_price_of(&p, FN, sig, 6) > 79.9 && lms_price_of(&p, FN, sig, 6) < 80.1);
    lms_price_destroy(&p);
}

/* A position's price is its function's phase's: learned hidden while the
 * compute was heavy, it is none once the function's compute fell (an
 * outside tester's GEMMs re-reading their operands 1 to 8 times with
 * compute falling from 12x to 0.3x the link: the old zero read them in
 * place a whole step, 1.32x the best), and the new phase learns it
 * afresh, its spread too. */
static void position_compute_fell(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    uint32_t id = 6;
    uint64_t sig = lms_price_sig(FN, &id, 1), fn_sig = lms_price_sig(FN, NULL, 0);
    lms_price_learn(&p, FN, fn_sig, NULL, 0, 0, 12000, LMS_PRICE_NO_ROLE);   /* the function on the device */
    lms_price_learn(&p, FN, sig, &id, 1, 100, 12100, 2);                     /* word 2 in place: hidden */
    CHECK(lms_price_role(&p, FN, 2, NULL) == 0);
    lms_price_learn(&p, FN, fn_sig, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);    /* 10x faster: the compute fell */
    CHECK(lms_price_role(&p, FN, 2, NULL) < 0);
    CHECK(lms_price_role(&p, FN + 1, 2, NULL) < 0);
    lms_price_learn(&p, FN, sig ^ 1, &id, 1, 100, 9000, 2);                  /* in place now: 8000 ns for 100 B */
    double spread = -1;
    CHECK(lms_price_role(&p, FN, 2, &spread) > 79.9 && lms_price_role(&p, FN, 2, NULL) < 80.1 && spread == 0);
    lms_price_destroy(&p);
}

/* A launch on the device timed at 0 ns (a timer's reading, no kernel's)
 * is no base, of its signature or of its function (a launch naming no
 * chunk has the function's own signature): a read in place just over
 * the real base stays within the noise (it priced the whole duration as
 * slowdown, and counted a phase). */
static void zero_duration_no_base(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1024));
    uint32_t id = 3;
    uint64_t sig = lms_price_sig(FN, &id, 1);
    lms_price_learn(&p, FN, sig, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);
    lms_price_learn(&p, FN, sig, NULL, 0, 0, 0, LMS_PRICE_NO_ROLE);
    lms_price_learn(&p, FN, lms_price_sig(FN, NULL, 0), NULL, 0, 0, 0, LMS_PRICE_NO_ROLE);
    lms_price_learn(&p, FN, sig, &id, 1, 100, 1050, LMS_PRICE_NO_ROLE);
    CHECK(lms_price_of(&p, FN, sig, 3) == 0);
    lms_price_destroy(&p);
}

/* A table half full is cleared inside a learn's loop over the chunks
 * read in place: the prices written after the clear are of the
 * signature's phase as the cleared table has it (none: 0), and answered. */
static void cleared_in_learn(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 16));
    uint32_t ids[5] = {1, 2, 3, 4, 5};
    uint64_t sig = lms_price_sig(FN, ids, 5);
    lms_price_learn(&p, FN, sig, NULL, 0, 0, 12000, LMS_PRICE_NO_ROLE);
    lms_price_learn(&p, FN, sig, NULL, 0, 0, 1000, LMS_PRICE_NO_ROLE);   /* a new phase (1); 4 slots taken */
    lms_price_learn(&p, FN, sig, ids, 5, 500, 9000, LMS_PRICE_NO_ROLE);   /* the fifth chunk's slot clears the table */
    CHECK(lms_price_of(&p, FN, sig, 5) > 15.9 && lms_price_of(&p, FN, sig, 5) < 16.1);
    lms_price_destroy(&p);
}

/* ---- the planner with prices --------------------------------------------- */

/* The fake device with prices: fake_room's ops get a fake. */
typedef struct fake {
    fake_room dev;            /* first: the ops' ctx is the fake */
    double price[3];          /* per chunk; negative: unknown */
    double fetch_cost;        /* ns per byte a demand fetch holds a launch; negative: unknown */
    bool priced;              /* ops.price is given */
} fake;

static double f_price(void *ctx, lms_plan_chunk *c) { return ((fake *)ctx)->price[c->id]; }

static double f_fetch_cost(void *ctx) { return ((fake *)ctx)->fetch_cost; }

static const lms_policy lru_like = {.name = "lru-like", .on_demand = true};

/* Runs launch `seq` over chunks ids[0..n) of f. */
static void launch(lms_plan *plan, fake *f, uint64_t seq, const uint32_t *ids, int n)
{
    lms_plan_ops ops = fake_room_ops();
    ops.price = f->priced ? f_price : NULL;
    ops.fetch_cost = f->priced ? f_fetch_cost : NULL;
    lms_plan_chunk *mine[3];
    for (int i = 0; i < n; i++) {
        mine[i] = &f->dev.chunks[ids[i]];
        lms_plan_pin(plan, mine[i]);
    }
    lms_plan_launch(plan, &ops, f, seq, FN, ids, n, mine, n);
    for (int i = 0; i < n; i++)
        lms_plan_used(plan, mine[i], seq);
}

/* A fake with room for two of three chunks of one unit, with prices. */
static fake make(double p0, double p1, double p2)
{
    fake f = {.price = {p0, p1, p2}, .priced = true, .fetch_cost = -1};
    fake_room_init(&f.dev, 2, 3);
    return f;
}

/* Room for two of a launch's three chunks: the two dearest to read in
 * place are fetched, the cheapest is read where it is (in id order
 * without prices: chunk 2 would be read in place). */
static void dearest_fetched_first(void)
{
    fake f = make(0.5, 5, 3);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, &lru_like));
    launch(&plan, &f, 1, (uint32_t[]){0, 1, 2}, 3);
    CHECK(!f.dev.chunks[0].resident);
    CHECK(f.dev.chunks[1].resident);
    CHECK(f.dev.chunks[2].resident);
    lms_plan_destroy(&plan);
}

/* Chunks 0 and 1 are resident from an earlier launch; the next launch
 * also needs chunk 2, whose reads in place cost 10 per byte: chunk 0
 * (1 per byte) is sent back and read in place, chunk 1 (8, more than
 * half of 10) stays. */
static void cheap_own_chunk_sent_back(void)
{
    fake f = make(1, 8, 10);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, &lru_like));
    launch(&plan, &f, 1, (uint32_t[]){0, 1}, 2);
    CHECK(f.dev.chunks[0].resident && f.dev.chunks[1].resident);
    launch(&plan, &f, 2, (uint32_t[]){0, 1, 2}, 3);
    CHECK(!f.dev.chunks[0].resident);
    CHECK(f.dev.chunks[1].resident);
    CHECK(f.dev.chunks[2].resident);
    CHECK_EQ_U(f.dev.evictions, 1);
    lms_plan_destroy(&plan);
}

/* Reading chunk 2 in place was measured to cost nothing (its reads hide
 * behind the kernel's compute): nothing is sent back for it. */
static void hidden_reads_stay(void)
{
    fake f = make(1, 8, 0);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, &lru_like));
    launch(&plan, &f, 1, (uint32_t[]){0, 1}, 2);
    launch(&plan, &f, 2, (uint32_t[]){0, 1, 2}, 3);
    CHECK(f.dev.chunks[0].resident && f.dev.chunks[1].resident);
    CHECK(!f.dev.chunks[2].resident);
    CHECK_EQ_U(f.dev.evictions, 0);
    lms_plan_destroy(&plan);
}

/* A demand fetch was measured to hold a launch 2 ns per byte: chunk 0
 * (1 per byte in place) is read where it is, though it fits; chunk 1 (3)
 * is fetched. Before the fetch cost is known both are fetched. */
static void cheap_reads_stay_in_place(void)
{
    fake f = make(1, 3, -1);
    lms_plan plan;
    CHECK(lms_plan_init(&plan, &lru_like));
    launch(&plan, &f, 1, (uint32_t[]){0, 1}, 2);
    CHECK(f.dev.chunks[0].resident && f.dev.chunks[1].resident);
    fake g = make(1, 3, -1);
    g.fetch_cost = 2;
    lms_plan plan2;
    CHECK(lms_plan_init(&plan2, &lru_like));
    launch(&plan2, &g, 1, (uint32_t[]){0, 1}, 2);
    CHECK(!g.dev.chunks[0].resident);
    CHECK(g.dev.chunks[1].resident);
    lms_plan_destroy(&plan);
    lms_plan_destroy(&plan2);
}

/* The table never holds more than half its slots: many signatures clear
 * it and it keeps learning. */
static void bounded_table(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 64));
    uint32_t id = 3;
    for (uint64_t s = 1; s < 1000; s++) {
        lms_price_learn(&p, FN, s * 7919, NULL, 0, 0, 50, LMS_PRICE_NO_ROLE);   /* on the device: the base */
        lms_price_learn(&p, FN, s * 7919, &id, 1, 10, 100, LMS_PRICE_NO_ROLE);
        CHECK(p.used <= p.cap / 2);
    }
    CHECK(lms_price_seen(&p, 999 * 7919) == 2);
    CHECK(lms_price_of(&p, FN, 999 * 7919, 3) >= 0);
    lms_price_destroy(&p);
}

/* A policy that never names a future: nothing to act on. */
static bool never_sure(void *s) { (void)s; return false; }
static const lms_policy guessing_like = {.name = "guessing-like", .on_demand = true, .guessing = never_sure};

/* With nothing to act on (a policy always guessing) and room for every
 * chunk: chunk 0 is made afresh, used `uses` times and freed, `rounds`
 * times over, each time priced at 1 per byte in place against a demand
 * fetch's 2 (cheaper in place, not hidden). Returns how many of the
 * rounds fetched it. */
static uint64_t made_afresh(int rounds, int uses, bool *kept_fetched)
{
    fake f = make(1, 1, 1);
    f.fetch_cost = 2;
    fake_room_init(&f.dev, 8, 3);   /* room for all: not crowded */
    lms_plan_ops ops = fake_room_ops();
    ops.room = fake_room_budget;
    ops.managed = fake_room_managed;
    ops.price = f_price;
    ops.fetch_cost = f_fetch_cost;
    lms_plan plan;
    CHECK(lms_plan_init(&plan, &guessing_like));
    uint64_t seq = 0, fetched = 0;
    uint32_t id = 0;
    for (int r = 0; r < rounds; r++) {
        lms_plan_chunk *c = &f.dev.chunks[0];
        *c = (lms_plan_chunk){.id = 0, .charge = 1};   /* allocated afresh */
        uint64_t before = f.dev.fetches;
        for (int u = 0; u < uses; u++) {
            lms_plan_pin(&plan, c);
            lms_plan_launch(&plan, &ops, &f, ++seq, FN, &id, 1, &c, 1);
            lms_plan_used(&plan, c, seq);
        }
        fetched += f.dev.fetches > before;
        lms_plan_dropped(&plan, c);   /* freed */
        if (c->resident) {
            lms_plan_forget(&plan, c);
            f.dev.used -= c->charge;
        }
    }
    /* Then chunk 1, kept: its first use as any new chunk's, its second
     * fetched into free room (*kept_fetched: resident after the second
     * and not after the first). */
    lms_plan_chunk *k = &f.dev.chunks[1];
    uint32_t kid = 1;
    bool after[2];
    for (int u = 0; u < 2; u++) {
        lms_plan_pin(&plan, k);
        lms_plan_launch(&plan, &ops, &f, ++seq, FN, &kid, 1, &k, 1);
        lms_plan_used(&plan, k, seq);
        after[u] = k->resident;
    }
    *kept_fetched = !after[0] && after[1];
    lms_plan_destroy(&plan);
    return fetched;
}

/* Chunks made afresh and used once each, a fetch into free room serves
 * one use: after CHURN_MIN (8) of them, one priced cheaper in place than
 * a fetch is read in place though it fits, on its first use; a chunk
 * used again is fetched into the free room. Used twice each, a fetch
 * serves two: every one is fetched into the free room at once. */
static void churn_reads_in_place(void)
{
    bool kept;
    CHECK_EQ_U(made_afresh(20, 1, &kept), 8);
    CHECK(kept);
    CHECK_EQ_U(made_afresh(20, 2, &kept), 20);
    CHECK(!kept);   /* not churning: fetched at its first use */
}

/* A signature's own count, base and local base start their probes at
 * one 64-byte line of the table (three lookups a launch, one cache miss;
 * a key that finds the line taken lies in the next), the table's lines
 * are cache lines, and the values read back as stored. Each of 200
 * signatures learned once on the device adds its three keys within the
 * line and the next (three keys spread at random over 65,536 slots would
 * fall so close about once in 20 million). The hint that loads them
 * (lms_price_prefetch) reads nothing: it is harmless with no table and
 * with more chunks than it loads. A table of fewer slots than a line, or
 * not a power of two, is refused. */
static void own_keys_share_line(void)
{
    lms_price p;
    CHECK(lms_price_init(&p, 1u << 16));
    CHECK_EQ_U((uintptr_t)p.t % (LMS_PRICE_LINE * sizeof *p.t), 0);
    uint32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    lms_price_prefetch(&p, FN, FN ^ 0x40, 99, ids, 8);
    bool *had = calloc(p.cap, sizeof *had);
    CHECK(had != NULL);
    for (uint32_t k = 0; k < 200; k++) {
        uint32_t id = 1000 + k;
        uint64_t sig = lms_price_sig(FN, &id, 1);
        lms_price_learn(&p, FN, sig, NULL, 0, 0, 1000 + k, LMS_PRICE_NO_ROLE);
        CHECK_EQ_U(lms_price_seen(&p, sig), 1);
        CHECK(lms_price_local_base(&p, FN, sig) == 1000);   /* the function's shortest: its first launch */
        uint32_t lo = p.cap, hi = 0, added = 0;
        for (uint32_t i = 0; i < p.cap; i++)
            if (p.t[i].key && !had[i]) {
                had[i] = true;
                added++;
                lo = i < lo ? i : lo;
                hi = i > hi ? i : hi;
            }
        if (k == 0)
            continue;   /* the function's base came too */
        CHECK_EQ_U(added, 3);
        CHECK(hi - lo < 2 * LMS_PRICE_LINE);
    }
    free(had);
    lms_price_destroy(&p);
    lms_price empty = {0};
    lms_price_prefetch(&empty, FN, 0, 1, ids, 8);
    CHECK(!lms_price_init(&p, 0) && !lms_price_init(&p, 2) && !lms_price_init(&p, 6) && !lms_price_init(&p, 12));
    CHECK(p.t == NULL);
    CHECK(lms_price_init(&p, LMS_PRICE_LINE));
    lms_price_destroy(&p);
}

static const test_case cases[] = {
    {"learn_slowdown", learn_slowdown},
    {"roles_apart", roles_apart},
    {"position_priced", position_priced},
    {"grid_classes", grid_classes},
    {"position_share", position_share},
    {"position_partial", position_partial},
    {"no_base_no_price", no_base_no_price},
    {"compute_fell_price_forgotten", compute_fell_price_forgotten},
    {"function_compute_fell", function_compute_fell},
    {"position_compute_fell", position_compute_fell},
    {"zero_duration_no_base", zero_duration_no_base},
    {"cleared_in_learn", cleared_in_learn},
    {"dearest_fetched_first", dearest_fetched_first},
    {"cheap_own_chunk_sent_back", cheap_own_chunk_sent_back},
    {"hidden_reads_stay", hidden_reads_stay},
    {"cheap_reads_stay_in_place", cheap_reads_stay_in_place},
    {"bounded_table", bounded_table},
    {"churn_reads_in_place", churn_reads_in_place},
    {"own_keys_share_line", own_keys_share_line},
};

TEST_MAIN(cases)
