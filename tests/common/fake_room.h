/*
 * fake_room.h — a device for the planner without CUDA (lms_plan_ops): room
 * for `room` units of charge, chunks 0..n-1 of charge 1 each, and counters
 * of what the planner did. A test's own fake may put a fake_room first and
 * add fields of its own (the ops get the test's pointer).
 */
#ifndef FAKE_ROOM_H
#define FAKE_ROOM_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

#define FAKE_ROOM_MAX 64

typedef struct fake_room {
    uint64_t room, used;                  /* units of charge */
    uint64_t fetches, evictions;          /* calls of ops.fetch and ops.evict */
    int last_evicted;                     /* id of the chunk evicted last; -1: none */
    uint32_t n;                           /* chunks in use: ids 0..n-1 */
    lms_plan_chunk chunks[FAKE_ROOM_MAX]; /* by id, owned here */
} fake_room;

/* Sets f up with room for `room` units and n chunks of charge 1, none evicted. */
static inline void fake_room_init(fake_room *f, uint64_t room, uint32_t n)
{
    *f = (fake_room){.room = room, .last_evicted = -1, .n = n};
    for (uint32_t i = 0; i < n; i++)
        f->chunks[i] = (lms_plan_chunk){.id = i, .charge = 1};
}

/* ops.reserve: charges bytes if they fit in the room. */
static inline bool fake_room_reserve(void *ctx, uint64_t bytes)
{
    fake_room *f = ctx;
    if (f->used + bytes > f->room)
        return false;
    f->used += bytes;
    return true;
}

/* ops.budget and ops.room: the room. */
static inline uint64_t fake_room_budget(void *ctx) { return ((fake_room *)ctx)->room; }

/* ops.managed: one unit per chunk. */
static inline uint64_t fake_room_managed(void *ctx) { return ((fake_room *)ctx)->n; }

/* ops.evict: gives the charge back and counts. */
static inline void fake_room_evict(void *ctx, lms_plan_chunk *c)
{
    fake_room *f = ctx;
    f->used -= c->charge;
    f->evictions++;
    f->last_evicted = (int)c->id;
}

/* ops.fetch: always succeeds and counts. */
static inline bool fake_room_fetch(void *ctx, lms_plan_chunk *c, bool ahead)
{
    (void)c, (void)ahead;
    ((fake_room *)ctx)->fetches++;
    return true;
}

/* ops.lookup: the chunk of an id, NULL past the last. */
static inline lms_plan_chunk *fake_room_lookup(void *ctx, uint32_t id)
{
    fake_room *f = ctx;
    return id < f->n ? &f->chunks[id] : NULL;
}

/* The ops above: reserve, budget, evict, fetch, lookup (no room/managed). */
static inline lms_plan_ops fake_room_ops(void)
{
    return (lms_plan_ops){.reserve = fake_room_reserve, .budget = fake_room_budget, .evict = fake_room_evict,
                          .fetch = fake_room_fetch, .lookup = fake_room_lookup};
}

#endif
