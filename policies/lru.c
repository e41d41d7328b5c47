/*
 * lru.c — fetch a launch's missing chunks on demand, on its stream; make
 * room by evicting the least recently used chunk.
 */
#include <stddef.h>

#include "policy.h"

/* The least recently used chunk, whatever the distance of the need. */
static int victim(void *state, const lms_policy_chunk *resident, int n, uint32_t distance)
{
    (void)state;
    (void)distance;
    return lms_policy_lru_victim(resident, n);
}

const lms_policy lms_policy_lru = {
    .name = "lru",
    .doc = "prefetch on demand, evict the least recently used chunk",
    .on_demand = true,
    .victim = victim,
};
