/*
 * find_test.c — lms_residency_find (the chunks a launch's parameter words
 * point into) against a plain scan of every chunk, over random layouts:
 * chunks of random sizes with and without gaps between them, some freed
 * again, and words at every edge (a chunk's first and last byte, one past
 * its end, one before its start), runs of pointers into one chunk and
 * words that point nowhere. Run with LMS_LIMIT=1G (meson.build): every
 * chunk is far under half the room, so none is managed in pieces.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/fake_chunks.h"
#include "options.h"
#include "residency.h"

#define NMAX 600
#define WORDS 96

typedef struct span {
    uint64_t ptr, size;
    uint32_t id;
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

/* What the find must give for words[0..n) with room for max ids: the
 * first max distinct live chunks the words point into, in word order,
 * then sorted by id. Returns how many; ids go to out. */
static int reference(const span *sp, int ns, const uint64_t *words, int n, uint32_t *out, int max)
{
    int found = 0;
    for (int w = 0; w < n && found < max; w++) {
        for (int i = 0; i < ns; i++) {
            if (!sp[i].live || words[w] < sp[i].ptr || words[w] - sp[i].ptr >= sp[i].size)
                continue;
            bool seen = false;
            for (int k = 0; k < found; k++)
                seen |= out[k] == sp[i].id;
            if (!seen)
                out[found++] = sp[i].id;
            break;
        }
    }
    for (int a = 1; a < found; a++)   /* insertion sort: a few dozen ids */
        for (int b = a; b > 0 && out[b - 1] > out[b]; b--) {
            uint32_t t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return found;
}

/* A word for a launch: mostly at or near a chunk's edges, sometimes the
 * chunk of the word before (a run into one segment), sometimes anywhere. */
static uint64_t pick_word(const span *sp, int ns, uint64_t *s, uint64_t prev)
{
    const span *c = &sp[draw(s) % (uint64_t)ns];
    switch (draw(s) % 8) {
    case 0: return c->ptr;
    case 1: return c->ptr + c->size - 1;
    case 2: return c->ptr + c->size;   /* one past the end: the next chunk's start, or a gap */
    case 3: return c->ptr - 1;
    case 4: return c->ptr + draw(s) % c->size;
    case 5: return prev + draw(s) % 64;   /* near the word before */
    case 6: return prev;
    default: return draw(s);   /* anywhere, mostly nowhere */
    }
}

/* Random layouts of up to NMAX chunks, each checked with many launches'
 * words, with a few chunks freed between rounds. */
static void find_matches_scan(void)
{
    lms_options_load();
    fake_driver_install(NULL);
    static span sp[NMAX];
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int layout = 0; layout < 24; layout++) {
        int ns = 1 + (int)(draw(&s) % NMAX);
        uint64_t at = 0x7f0000000000ull + (draw(&s) % 1024) * 4096;
        for (int i = 0; i < ns; i++) {
            uint64_t size = 1 + draw(&s) % (64 << 10);
            int64_t id = lms_residency_add(at, size, 0);
            CHECK(id >= 0);
            sp[i] = (span){.ptr = at, .size = size, .id = (uint32_t)id, .live = true};
            at += size + (draw(&s) % 3 == 0 ? 0 : draw(&s) % 8192);   /* a third back to back */
        }
        for (int round = 0; round < 4; round++) {
            for (int launch = 0; launch < 200; launch++) {
                uint64_t words[WORDS];
                int n = (int)(draw(&s) % WORDS);
                uint64_t prev = sp[0].ptr;
                for (int w = 0; w < n; w++)
                    prev = words[w] = pick_word(sp, ns, &s, prev);
                int max = draw(&s) % 4 == 0 ? 1 + (int)(draw(&s) % 8) : WORDS;
                uint32_t got[WORDS], want[WORDS];
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
}

static const test_case cases[] = {
    {"find_matches_scan", find_matches_scan},
};

TEST_MAIN(cases)
