/*
 * room.c — the residency room line and the LMS_FRAC hint (see room.h).
 * The hint's conditions and words were measured on bench/shapes
 * (docs/PERFORMANCE.md, "Choosing LMS_FRAC"): a smaller fraction made some
 * steps far faster and others slower, so it says to compare, no more.
 */
#include <stdbool.h>
#include <stdio.h>

#include "room.h"
#include "units.h"

uint64_t lms_room_of(uint64_t budget, uint64_t device)
{
    return budget > device ? budget - device : 0;
}

bool lms_room_hint(uint64_t room, uint64_t managed_peak, uint64_t fetched, double frac)
{
    return managed_peak > 0 && room < managed_peak / 4 && fetched >= managed_peak && frac > 0.5;
}

size_t lms_room_text(char *out, size_t len, const char *indent, uint64_t budget, uint64_t device_at_peak,
                     uint64_t managed_peak, uint64_t fetched, double frac)
{
    if (!out || len == 0)
        return 0;
    out[0] = 0;
    if (!managed_peak || !budget)
        return 0;
    uint64_t room = lms_room_of(budget, device_at_peak);
    char a[32], b[32], c[32], e[32];
    lms_format_size(a, sizeof a, room);
    lms_format_size(b, sizeof b, device_at_peak);
    lms_format_size(c, sizeof c, managed_peak);
    lms_format_size(e, sizeof e, fetched);
    int n = snprintf(out, len, "%sresidency room: %s (the budget less %s of device chunks) for %s of managed "
                     "chunks at their peak; %s fetched\n", indent, a, b, c, e);
    if (n > 0 && (size_t)n < len && lms_room_hint(room, managed_peak, fetched, frac)) {
        int m = snprintf(out + n, len - (size_t)n, "%shint: that room is under a quarter of the managed chunks, "
                         "fetched over and over: a smaller LMS_FRAC than this run's %g (say 0.5) keeps fewer "
                         "chunks on the device for good and leaves the engine more room, up to 3x faster on some "
                         "steps and slower on others: compare a run at 0.5 (docs/PERFORMANCE.md, \"Choosing "
                         "LMS_FRAC\")\n", indent, frac);
        n = m > 0 ? n + m : n;
    }
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}
