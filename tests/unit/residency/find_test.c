/*
 * find_test.c — lms_residency_find (the chunks a launch's parameter words
 * point into) against a model of it over random layouts: chunks of random
 * sizes with and without gaps between them, some freed again, and words at
 * every edge (a chunk's or a piece's first and last byte, one past its
 * end, one before its start), runs of pointers into one chunk or piece,
 * words that point nowhere and small id caps. Two cases (meson.build):
 * `find_matches_scan`, many small chunks in a room of 1 GiB (none in
 * pieces: the model is a plain scan of every chunk), and
 * `find_pieces_matches_model`, chunks of up to 1.1 GiB in a room of
 * 64 MiB mixed with whole ones (a chunk over half the room is managed in
 * pieces, up to 256 of them: a word adds the piece it points into and the
 * pieces after it up to where the next pointer into the chunk starts, as
 * residency.c's add_pieces does; each piece remembers the lowest offset
 * any word pointed at in it, so the model keeps that state across
 * launches).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/fake_chunks.h"
#include "options.h"
#include "residency.h"

#define NMAX 600
#define PMAX 256   /* MAX_PIECES (residency.c) */
#define WORDS 96
#define MiB (1ull << 20)

typedef struct span {
    uint64_t ptr, size, psize;   /* psize: the pieces' size (the chunk's when whole) */
    uint32_t id, k;              /* the first piece's id, the pieces */
    uint64_t start[PMAX];        /* each piece's lowest offset pointed at, plus one (0: none) */
    bool live;
} span;

/* One kind of layout: how many, how large, how far apart, in what room. */
typedef struct layout_kind {
    uint64_t seed, room, align, gap;   /* gap: at most this between chunks (a third of them back to back) */
    int layouts, nmax, launches;
    uint64_t (*size_of)(uint64_t *s);
} layout_kind;

/* A draw from the test's own generator (reproducible without libc's). */
static uint64_t draw(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The pieces' size residency.c gives a chunk of `size` in a room of
 * `room` with no device chunks (0: whole). */
static uint64_t piece_size(uint64_t size, uint64_t room)
{
    if (size <= 4 * MiB || size <= room / 2)
        return 0;
    uint64_t p = ((size - 1) / PMAX + 2 * MiB) / (2 * MiB) * (2 * MiB);
    return p > 2 * MiB ? p : 2 * MiB;
}

/* Appends id to out[0..*found) unless it is there or there are max. */
static void note_id(uint32_t *out, int *found, int max, uint32_t id)
{
    for (int k = 0; k < *found; k++)
        if (out[k] == id)
            return;
    if (*found < max)
        out[(*found)++] = id;
}

/* What the find must give for words[0..n) with room for max ids: the
 * first max distinct ids the words reach, in word order, then sorted.
 * Returns how many; ids go to out. */
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
                note_id(out, &found, max, c->id);
                break;
            }
            uint32_t p = (uint32_t)((v - c->ptr) / c->psize);
            uint64_t off = v - (c->ptr + p * c->psize) + 1;
            if (c->start[p] == 0 || off < c->start[p])
                c->start[p] = off;
            note_id(out, &found, max, c->id + p);
            for (uint32_t j = p + 1; j < c->k && found < max; j++) {
                if (c->start[j] == 1)
                    break;   /* the next tensor starts with this piece */
                note_id(out, &found, max, c->id + j);
                if (c->start[j])
                    break;   /* ... inside it */
            }
            break;
        }
    }
    for (int a = 1; a < found; a++)   /* insertion sort: a few hundred ids at most */
        for (int b = a; b > 0 && out[b - 1] > out[b]; b--) {
            uint32_t t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return found;
}

/* A word: mostly at or near a chunk's or a piece's edges, sometimes near
 * the word before or the same, sometimes anywhere (mostly nowhere). */
static uint64_t pick_word(const span *sp, int ns, uint64_t *s, uint64_t prev)
{
    const span *c = &sp[draw(s) % (uint64_t)ns];
    uint64_t pb = c->ptr + (draw(s) % c->k) * c->psize;   /* a piece's base */
    switch (draw(s) % 11) {
    case 0: return c->ptr;
    case 1: return c->ptr + c->size - 1;
    case 2: return c->ptr + c->size;   /* one past the end: the next chunk's start, or a gap */
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

/* Checks the find against the model over layouts of kind `lk`; returns
 * how many chunks were managed in pieces. */
static int check_layouts(const layout_kind *lk)
{
    lms_options_load();
    fake_driver_install(NULL);
    static span sp[NMAX];
    uint64_t s = lk->seed;
    int pieced = 0;
    for (int layout = 0; layout < lk->layouts; layout++) {
        int ns = 1 + (int)(draw(&s) % (uint64_t)lk->nmax);
        uint64_t at = 0x7f0000000000ull + (draw(&s) % 1024) * lk->align;
        for (int i = 0; i < ns; i++) {
            uint64_t size = lk->size_of(&s);
            int64_t id = lms_residency_add(at, size, 0);
            CHECK(id >= 0);
            uint64_t psize = piece_size(size, lk->room);
            uint32_t k = psize ? (uint32_t)((size + psize - 1) / psize) : 1;
            sp[i] = (span){.ptr = at, .size = size, .psize = psize ? psize : size, .id = (uint32_t)id, .k = k,
                           .live = true};
            pieced += k > 1;
            if (i > 0)   /* the model's pieces are the engine's: ids follow */
                CHECK_EQ_U(sp[i].id, sp[i - 1].id + sp[i - 1].k);
            at += size + (draw(&s) % 3 == 0 ? 0 : draw(&s) % lk->gap);
        }
        for (int round = 0; round < 4; round++) {
            for (int launch = 0; launch < lk->launches; launch++) {
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
    return pieced;
}

/* Up to 64 KiB: whole in a room of 1 GiB. */
static uint64_t small_size(uint64_t *s)
{
    return 1 + draw(s) % (64 << 10);
}

/* Small, a few MiB, over half of a 64 MiB room, or over 256 pieces of
 * 2 MiB (larger pieces). */
static uint64_t mixed_size(uint64_t *s)
{
    switch (draw(s) % 4) {
    case 0: return 1 + draw(s) % (4 * MiB);
    case 1: return 33 * MiB + draw(s) % (64 * MiB);
    case 2: return 600 * MiB + draw(s) % (512 * MiB);
    default: return 1 + draw(s) % (40 * MiB);
    }
}

/* Many small chunks (LMS_LIMIT=1G): none in pieces. */
static void find_matches_scan(void)
{
    layout_kind lk = {.seed = 0x9e3779b97f4a7c15ull, .room = 1024 * MiB, .align = 4096, .gap = 8192,
                      .layouts = 24, .nmax = NMAX, .launches = 200, .size_of = small_size};
    CHECK_EQ_U(check_layouts(&lk), 0);
}

/* Chunks in pieces beside whole ones (LMS_LIMIT=64M). */
static void find_pieces_matches_model(void)
{
    layout_kind lk = {.seed = 0x12345678abcdefull, .room = 64 * MiB, .align = 2 * MiB, .gap = 8 * MiB,
                      .layouts = 120, .nmax = 40, .launches = 100, .size_of = mixed_size};
    CHECK(check_layouts(&lk) > 100);
}

static const test_case cases[] = {
    {"find_matches_scan", find_matches_scan},
    {"find_pieces_matches_model", find_pieces_matches_model},
};

TEST_MAIN(cases)
