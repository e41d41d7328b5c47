/*
 * chunks.h — the chunk map: every pointer (or VMM handle) lmshim has seen
 * handed out, with where it lives (chunks.c). Lookups by base address.
 */
#ifndef LMS_CHUNKS_H
#define LMS_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    LMS_PLACE_DEVICE,    /* device memory, as the program asked */
    LMS_PLACE_MANAGED,   /* unified memory: lmshim's placement or the program's own */
    LMS_PLACE_HOST,      /* pinned, mapped host memory standing in for device memory */
    LMS_PLACE_VMM,       /* a cuMemCreate physical allocation (key: its handle) */
    LMS_PLACE_PINNED,    /* the program's own pinned host memory */
    LMS_PLACE_COUNT
} lms_place;

extern const char *const lms_place_names[LMS_PLACE_COUNT];

enum {
    LMS_CHUNK_FALLBACK = 1,   /* asked for device memory, placed elsewhere */
    LMS_CHUNK_ASYNC = 2,      /* from a stream-ordered allocation */
    LMS_CHUNK_PROGRAM = 4,    /* the program asked for this kind itself */
};

typedef struct lms_chunk {
    uint64_t key;        /* base pointer; for VMM the handle | LMS_VMM_TAG */
    uint64_t size;       /* bytes requested */
    uint64_t charged;    /* bytes counted against the device budget */
    int16_t device;      /* -1: none */
    uint8_t place;       /* lms_place */
    uint8_t flags;       /* LMS_CHUNK_* */
} lms_chunk;

#define LMS_VMM_TAG (1ull << 63)

/* Adds a chunk; false if out of memory, or when its key is present (the
 * map unchanged: the caller finishes that stale chunk first). */
bool lms_chunks_insert(const lms_chunk *c);
/* Copies the chunk with this key into *out; false if unknown. */
bool lms_chunks_find(uint64_t key, lms_chunk *out);
/* Removes the chunk with this key, copying it to *out; false if unknown. */
bool lms_chunks_remove(uint64_t key, lms_chunk *out);
/* What lms_chunks_peek or lms_chunks_take found for a key. */
typedef enum lms_take {
    LMS_TAKE_NONE,    /* no chunk, and no free of the key under way */
    LMS_TAKE_FOUND,   /* the chunk (copied out) */
    LMS_TAKE_BUSY,    /* no chunk: a free of the key is under way */
} lms_take;

/* Copies the chunk with this key to *out, as lms_chunks_find, telling
 * apart an unknown key and one whose free is under way (BUSY). */
lms_take lms_chunks_peek(uint64_t key, lms_chunk *out);

/* For a free: copies the chunk with this key to *out and takes it out of
 * the map, marking the key as being freed until lms_chunks_settle (a
 * concurrent free of the key then finds BUSY, never a moment with neither
 * chunk nor mark). Without memory for the mark the chunk is taken all the
 * same, unmarked. */
lms_take lms_chunks_take(uint64_t key, lms_chunk *out);

/* Ends a take: puts `back` into the map first when not NULL (the free
 * failed: still allocated), then unmarks the key. False when `back` could
 * not be put back (no memory). */
bool lms_chunks_settle(uint64_t key, const lms_chunk *back);

/* Calls fn for every live chunk (each shard locked in turn; fn must not
 * touch the map). */
void lms_chunks_foreach(void (*fn)(const lms_chunk *c, void *ctx), void *ctx);

/* Live chunks. */
size_t lms_chunks_count(void);

/* fork support: hold every shard across fork; the child reinitialises. */
void lms_chunks_lock_all(void);
void lms_chunks_unlock_all(void);
void lms_chunks_reset_locks(void);

#endif
