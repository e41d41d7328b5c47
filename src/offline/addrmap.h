/*
 * addrmap.h — a map from nonzero 64-bit keys (addresses) to fixed-size
 * values held inline (addrmap.c): open addressing, backward-shift deletion.
 * Used by the trace readers to follow live allocations.
 */
#ifndef LMS_ADDRMAP_H
#define LMS_ADDRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lms_addrmap {
    uint64_t *keys;           /* 0: empty */
    unsigned char *values;    /* cap * vsize bytes */
    size_t vsize, cap, n;
} lms_addrmap;

/* An empty map of values of vsize bytes (no allocation until the first put). */
void lms_addrmap_init(lms_addrmap *m, size_t vsize);
void lms_addrmap_free(lms_addrmap *m);
/* Sets key's value (copied in); false when out of memory. */
bool lms_addrmap_put(lms_addrmap *m, uint64_t key, const void *value);
/* Copies key's value to out (if not NULL) and removes it; false if absent. */
bool lms_addrmap_take(lms_addrmap *m, uint64_t key, void *out);
/* key's value, in the map (valid until the next put or take), or NULL. */
void *lms_addrmap_get(const lms_addrmap *m, uint64_t key);
/* Slot i's value, or NULL if the slot is empty (i < m->cap): for walking. */
void *lms_addrmap_slot(const lms_addrmap *m, size_t i);

#endif
