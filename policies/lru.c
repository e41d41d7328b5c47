/*
 * lru.c — fetch a launch's missing chunks on demand, on its stream; make
 * room by evicting the least recently used chunk (the planner's order when
 * a policy makes no guess about next uses).
 */
#include <stddef.h>

#include "policy.h"

const lms_policy lms_policy_lru = {
    .name = "lru",
    .doc = "prefetch on demand, evict the least recently used chunk",
    .on_demand = true,
};
