/*
 * registry.c — every live allocation of the simulated driver, sorted by base
 * address so that an interior pointer finds its allocation in O(log n).
 * All functions run under sim_lock; the registry owns the sim_alloc records.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

static sim_alloc **items;      /* sorted by base */
static size_t count, cap;
static uint64_t next_id = 1;

/* Index of the first item whose base is > p. */
static size_t upper_bound(uintptr_t p)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (items[mid]->base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Adds a record; the registry owns it from now on. Aborts only if the host
 * cannot grow a small array, which the callers treat as out of memory. */
void sim_registry_add(sim_alloc *a)
{
    if (count == cap) {
        size_t ncap = cap ? cap * 2 : 256;
        sim_alloc **n = realloc(items, ncap * sizeof *n);
        if (!n)
            abort();
        items = n;
        cap = ncap;
    }
    size_t i = upper_bound(a->base);
    memmove(&items[i + 1], &items[i], (count - i) * sizeof *items);
    items[i] = a;
    count++;
}

/* The allocation containing p, or NULL. */
sim_alloc *sim_registry_find(uintptr_t p)
{
    size_t i = upper_bound(p);
    if (i == 0)
        return NULL;
    sim_alloc *a = items[i - 1];
    size_t span = a->size ? a->size : 1;
    return p - a->base < span ? a : NULL;
}

/* The allocation starting exactly at p, or NULL. */
sim_alloc *sim_registry_find_base(uintptr_t p)
{
    sim_alloc *a = sim_registry_find(p);
    return a && a->base == p ? a : NULL;
}

/* An allocation overlapping [p, p+bytes), or NULL. */
sim_alloc *sim_registry_overlap(uintptr_t p, size_t bytes)
{
    sim_alloc *a = sim_registry_find(p);
    if (a)
        return a;
    size_t i = upper_bound(p);   /* the first one starting after p */
    return i < count && items[i]->base - p < bytes ? items[i] : NULL;
}

/* Removes a record (the caller then frees it). */
void sim_registry_remove(sim_alloc *a)
{
    size_t i = upper_bound(a->base);
    while (i > 0 && items[i - 1] != a)
        i--;
    if (i == 0)
        return;
    memmove(&items[i - 1], &items[i], (count - i) * sizeof *items);
    count--;
}

/* Every live allocation, sorted by base (valid until the registry changes). */
sim_alloc *const *sim_registry_all(size_t *n)
{
    *n = count;
    return items;
}

/* A fresh buffer id. */
uint64_t sim_next_buffer_id(void)
{
    return next_id++;
}
