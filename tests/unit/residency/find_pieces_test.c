/*
 * find_pieces_test.c — lms_residency_find over chunks managed in pieces
 * (a chunk over half the room: LMS_LIMIT=64M, meson.build) mixed with
 * whole ones, against a model of the find: a word adds the piece it
 * points into and the pieces after it up to where the next pointer into
 * the chunk starts (add_pieces: each piece remembers the lowest offset any
 * word pointed at in it, so the model keeps that state across launches).
 * Words at a chunk's and a piece's edges, one past the end, runs into one
 * piece and into one chunk, small id caps, chunks freed between rounds,
 * chunks of more than 256 pieces of 2 MiB (larger pieces).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/fake_chunks.h"
#include "options.h"
#include "residency.h"

#define NMAX 40
#define PMAX 256      /* MAX_PIECES (residency.c) */
#define WORDS 64
#define MiB (1ull << 20)
#define ROOM (64 * MiB)   /* LMS_LIMIT */

typedef struct span {
    uint64_t ptr, size, psize;   /* psize: the pieces' size (the chunk's when whole) */
    uint32_t id, k;              /* the first piece's id, the pieces */
    uint64_t start[PMAX];        /* each piece's lowest offset pointed at, plus one (0: none) */
    bool live;
} span;

/* A draw from the test's own generator (reproducible without libc's). */
static uint64_t draw(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Adds id to ids[0..*found) (sorted, unique) unless there are max. */
static void model_add(uint32_t *ids, int *found, int max, uint32_t id)
{
    int k = *found;
    while (k > 0 && ids[k - 1] > id)
        k--;
    if ((k > 0 && ids[k - 1] == id) || *found >= max)
        return;
    memmove(&ids[k + 1], &ids[k], (size_t)(*found - k) * sizeof *ids);
    ids[k] = id;
    (*found)++;
}

/* The pieces' size residency.c gives a chunk of `size` in a room of ROOM
 * with no device chunks (0: whole). */
static uint64_t piece_size(uint64_t size)
{
    if (size <= 4 * MiB || size <= ROOM / 2)
        return 0;
    uint64_t p = ((size - 1) / PMAX + 2 * MiB) / (2 * MiB) * (2 * MiB);
    return p > 2 * MiB ? p : 2 * MiB;
}

/* What the find must give for words[0..n) with room for max ids (sorted). */
static int reference(span *sp, int ns, const uint64_t *words, int n, uint32_t *out, int max)
{
    int found = 0;
    for (int w = 0; w < n && found < max; w++) {
        uint64_t v = words[w];
        for (int i = 0; i < ns; i++) {
            span *c = &sp[i];
            if (!c->live || v < c->ptr || v - c->ptr >= c->size)
                continue;
            if (c->k == 1) {
                model_add(out, &found, max, c->id);
                break;
            }
            uint32_t p = (uint32_t)((v - c->ptr) / c->psize);
            uint64_t off = v - (c->ptr + p * c->psize) + 1;
            if (c->start[p] == 0 || off < c->start[p])
                c->start[p] = off;
            model_add(out, &found, max, c->id + p);
            for (uint32_t j = p + 1; j < c->k && found < max; j++) {
                if (c->start[j] == 1)
                    break;   /* the next tensor starts with this piece */
                model_add(out, &found, max, c->id + j);
                if (c->start[j])
                    break;   /* ... inside it */
            }
            break;
        }
    }
    return found;
}

/* A word: mostly at or near a chunk's or a piece's edges, sometimes near
 * the word before, sometimes anywhere. */
static uint64_t pick_word(const span *sp, int ns, uint64_t *s, uint64_t prev)
{
    const span *c = &sp[draw(s) % (uint64_t)ns];
    uint64_t pb = c->ptr + (draw(s) % c->k) * c->psize;   /* a piece's base */
    switch (draw(s) % 11) {
    case 0: return c->ptr;
    case 1: return c->ptr + c->size - 1;
    case 2: return c->ptr + c->size;
    case 3: return c->ptr - 1;
    case 4: return c->ptr + draw(s) % c->size;
    case 5: return prev + draw(s) % 64;
    case 6: return prev;
    case 7: return pb;
    case 8: return pb - 1;
    case 9: return pb + draw(s) % 4096;
    default: return draw(s);
    }
}

static void find_pieces_matches_model(void)
{
    lms_options_load();
    fake_driver_install(NULL);
    static span sp[NMAX];
    uint64_t s = 0x12345678abcdefull;
    int pieced = 0;
    for (int layout = 0; layout < 120; layout++) {
        int ns = 1 + (int)(draw(&s) % NMAX);
        uint64_t at = 0x7f0000000000ull + (draw(&s) % 1024) * 2 * MiB;
        for (int i = 0; i < ns; i++) {
            uint64_t size;
            switch (draw(&s) % 4) {
            case 0: size = 1 + draw(&s) % (4 * MiB); break;
            case 1: size = 33 * MiB + draw(&s) % (64 * MiB); break;
            case 2: size = 600 * MiB + draw(&s) % (512 * MiB); break;   /* over 256 pieces of 2 MiB */
            default: size = 1 + draw(&s) % (40 * MiB); break;
            }
            int64_t id = lms_residency_add(at, size, 0);
            CHECK(id >= 0);
            uint64_t psize = piece_size(size);
            uint32_t k = psize ? (uint32_t)((size + psize - 1) / psize) : 1;
            sp[i] = (span){.ptr = at, .size = size, .psize = psize ? psize : size, .id = (uint32_t)id, .k = k,
                           .live = true};
            pieced += k > 1;
            if (i > 0)   /* the model's pieces are the engine's: ids follow */
                CHECK_EQ_U(sp[i].id, sp[i - 1].id + sp[i - 1].k);
            at += size + (draw(&s) % 3 == 0 ? 0 : draw(&s) % (8 * MiB));   /* a third back to back */
        }
        for (int round = 0; round < 4; round++) {
            for (int launch = 0; launch < 100; launch++) {
                uint64_t words[WORDS];
                int n = (int)(draw(&s) % WORDS);
                uint64_t prev = sp[0].ptr;
                for (int w = 0; w < n; w++)
                    prev = words[w] = pick_word(sp, ns, &s, prev);
                int max = draw(&s) % 4 == 0 ? 1 + (int)(draw(&s) % 8) : 4 * WORDS;
                uint32_t got[4 * WORDS], want[4 * WORDS];
                int ng = lms_residency_find(words, n, got, max);
                int nw = reference(sp, ns, words, n, want, max);
                CHECK_EQ_U(ng, nw);
                if (ng == nw)
                    CHECK(memcmp(got, want, (size_t)ng * sizeof *got) == 0);
            }
            for (int i = 0; i < ns; i++)   /* free about one in eight */
                if (sp[i].live && draw(&s) % 8 == 0) {
                    lms_residency_drop(lms_residency_take(sp[i].ptr));
                    sp[i].live = false;
                }
        }
        for (int i = 0; i < ns; i++)
            if (sp[i].live)
                lms_residency_drop(lms_residency_take(sp[i].ptr));
    }
    CHECK(pieced > 100);
}

static const test_case cases[] = {
    {"find_pieces_matches_model", find_pieces_matches_model},
};

TEST_MAIN(cases)
