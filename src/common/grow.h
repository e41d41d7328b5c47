/*
 * grow.h — room in a growable array, shared by the engine, the offline
 * tools and the preload hooks (grow.c): one doubling rule for every table.
 */
#ifndef LMS_GROW_H
#define LMS_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* Makes room in *arr, an array of `elem`-byte entries with room for *cap,
 * for at least `need` entries: the room doubles (from `first` when there is
 * none) until it holds them, and *arr is reallocated. The array stays the
 * caller's. False when out of memory or when the bytes would overflow;
 * *arr and *cap are then unchanged. */
bool lms_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first);

#endif
