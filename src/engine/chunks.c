/*
 * chunks.c — the chunk map (see chunks.h): 64 shards, each an
 * open-addressing hash table with its own mutex, so threads allocating at
 * once rarely meet. Entries live inline; tables grow by rehashing.
 */
#include "chunks.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define SHARDS 64
#define EMPTY 0ull
#define TOMB 1ull     /* a removed entry; keys 0 and 1 are never pointers */

const char *const lms_place_names[LMS_PLACE_COUNT] = {"device", "managed", "host", "vmm", "pinned"};

typedef struct shard {
    pthread_mutex_t lock;
    lms_chunk *slots;     /* cap entries, owned by the shard */
    size_t cap;           /* a power of two, or 0 */
    size_t used;          /* live + tombstones */
    size_t live;
    uint64_t *taken;      /* keys taken by frees under way (a multiset), owned by the shard */
    size_t ntaken, captaken;
} shard;

static shard shards[SHARDS] = {[0 ... SHARDS - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER}};

/* Mixes a pointer into a well spread hash. */
static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static shard *shard_of(uint64_t key) { return &shards[mix(key) & (SHARDS - 1)]; }

/* Index of key's slot, or of the first free slot on its probe path. */
static size_t probe(const shard *s, uint64_t key, bool for_insert)
{
    size_t mask = s->cap - 1, i = (mix(key) >> 6) & mask, tomb = SIZE_MAX;
    for (;;) {
        uint64_t k = s->slots[i].key;
        if (k == key)
            return i;
        if (k == EMPTY)
            return for_insert && tomb != SIZE_MAX ? tomb : i;
        if (k == TOMB && tomb == SIZE_MAX)
            tomb = i;
        i = (i + 1) & mask;
    }
}

/* Rehashes into a table of ncap slots; false if out of memory. */
static bool grow(shard *s, size_t ncap)
{
    lms_chunk *old = s->slots;
    size_t ocap = s->cap;
    lms_chunk *n = calloc(ncap, sizeof *n);
    if (!n)
        return false;
    s->slots = n;
    s->cap = ncap;
    s->used = s->live;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].key > TOMB)
            s->slots[probe(s, old[i].key, true)] = old[i];
    free(old);
    return true;
}

bool lms_chunks_insert(const lms_chunk *c)
{
    shard *s = shard_of(c->key);
    pthread_mutex_lock(&s->lock);
    bool ok = true;
    if ((s->used + 1) * 4 > s->cap * 3)
        ok = grow(s, s->cap ? (s->live * 4 > s->cap ? s->cap * 2 : s->cap) : 64);
    if (ok) {
        size_t i = probe(s, c->key, true);
        if (s->slots[i].key == c->key) {
            ok = false;   /* present: a stale chunk the caller must finish first */
        } else {
            if (s->slots[i].key == EMPTY)
                s->used++;
            s->live++;
            s->slots[i] = *c;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Copies the chunk with this key to *out (if not NULL), removing it when
 * `remove`; false if unknown. Find and remove share this one path. */
static bool lookup(uint64_t key, lms_chunk *out, bool remove)
{
    shard *s = shard_of(key);
    pthread_mutex_lock(&s->lock);
    bool found = false;
    if (s->cap) {
        size_t i = probe(s, key, false);
        if (s->slots[i].key == key) {
            if (out)
                *out = s->slots[i];
            if (remove) {
                s->slots[i].key = TOMB;
                s->live--;
            }
            found = true;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

bool lms_chunks_find(uint64_t key, lms_chunk *out) { return lookup(key, out, false); }

/* Whether key is in s's taken multiset (under its lock). */
static bool is_taken(const shard *s, uint64_t key)
{
    for (size_t i = 0; i < s->ntaken; i++)
        if (s->taken[i] == key)
            return true;
    return false;
}

/* Copies the chunk with this key to *out; with `take` also takes it out
 * of the map and marks the key (lms_chunks_take). Peek and take share
 * this one path. */
static lms_take find_copy(uint64_t key, lms_chunk *out, bool take)
{
    shard *s = shard_of(key);
    lms_take t = LMS_TAKE_NONE;
    pthread_mutex_lock(&s->lock);
    size_t i = s->cap ? probe(s, key, false) : 0;
    if (s->cap && s->slots[i].key == key) {
        t = LMS_TAKE_FOUND;
        *out = s->slots[i];
        if (take) {
            if (lms_grow((void **)&s->taken, &s->captaken, s->ntaken + 1, sizeof *s->taken, 8))
                s->taken[s->ntaken++] = key;   /* else (no memory) taken unmarked, as a plain remove */
            s->slots[i].key = TOMB;
            s->live--;
        }
    } else if (is_taken(s, key)) {
        t = LMS_TAKE_BUSY;
    }
    pthread_mutex_unlock(&s->lock);
    return t;
}

lms_take lms_chunks_peek(uint64_t key, lms_chunk *out) { return find_copy(key, out, false); }

lms_take lms_chunks_take(uint64_t key, lms_chunk *out) { return find_copy(key, out, true); }

bool lms_chunks_settle(uint64_t key, const lms_chunk *back)
{
    shard *s = shard_of(key);
    bool ok = true;
    if (back)
        ok = lms_chunks_insert(back);   /* before the mark goes: no moment without either */
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->ntaken; i++)
        if (s->taken[i] == key) {
            s->taken[i] = s->taken[--s->ntaken];
            break;
        }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

bool lms_chunks_remove(uint64_t key, lms_chunk *out) { return lookup(key, out, true); }

void lms_chunks_foreach(void (*fn)(const lms_chunk *c, void *ctx), void *ctx)
{
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_lock(&shards[i].lock);
        for (size_t k = 0; k < shards[i].cap; k++)
            if (shards[i].slots[k].key > TOMB)
                fn(&shards[i].slots[k], ctx);
        pthread_mutex_unlock(&shards[i].lock);
    }
}

size_t lms_chunks_count(void)
{
    size_t n = 0;
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_lock(&shards[i].lock);
        n += shards[i].live;
        pthread_mutex_unlock(&shards[i].lock);
    }
    return n;
}

void lms_chunks_lock_all(void)
{
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_lock(&shards[i].lock);
}

void lms_chunks_unlock_all(void)
{
    for (int i = SHARDS - 1; i >= 0; i--)
        pthread_mutex_unlock(&shards[i].lock);
}

void lms_chunks_reset_locks(void)
{
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_init(&shards[i].lock, NULL);
        shards[i].ntaken = 0;   /* no free is under way in a fresh child (none is at a fork) */
    }
}
