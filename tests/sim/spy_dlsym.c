/*
 * spy_dlsym.c — a preload library that overrides dlsym the way an
 * interposer must (src/engine/dlsym_override.c) and counts the lookups of
 * cuGetProcAddress_v2. Used to prove that the simulated runtime reaches the
 * driver through that lookup.
 */
#include <stdbool.h>
#include <string.h>

#include "dlsym_override.h"

static int seen;

__attribute__((visibility("default"))) int spy_seen(void) { return seen; }

/* Counts, never answers: glibc's dlsym answers every lookup. */
bool lms_dlsym_filter(void *handle, const char *name, lms_dlsym_fn real, void **answer)
{
    (void)handle;
    (void)real;
    (void)answer;
    if (name && strcmp(name, "cuGetProcAddress_v2") == 0)
        __atomic_add_fetch(&seen, 1, __ATOMIC_RELAXED);
    return false;
}
