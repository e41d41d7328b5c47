/*
 * room.c — the residency room line and the LMS_FRAC hint (see room.h).
 * The hint's conditions and words were measured on bench/shapes
 * (docs/PERFORMANCE.md, "Choosing LMS_FRAC"): a smaller fraction made some
 * steps far faster and others slower, so it says to compare, no more;
 * under LMS_POLICY=none (which never fetches) a smaller fraction only
 * reads more over the link, so it says nothing there.
 */
#include <stdio.h>

#include "room.h"
#include "units.h"

/* The room: the budget less the device chunks (0 when they take it all). */
static uint64_t room_of(const lms_room *r)
{
    return r->budget > r->device ? r->budget - r->device : 0;
}

bool lms_room_hint(const lms_room *r)
{
    uint64_t room = room_of(r), peak = r->managed_peak;
    uint64_t quarter = peak / 4 + (peak % 4 != 0);   /* room < peak / 4 exactly */
    bool fetched = r->fetched >= peak, named = r->named / 2 >= peak;
    return peak > 0 && room < quarter && (fetched || named) && r->frac > 0.5 && !r->no_fetch;
}

size_t lms_room_text(char *out, size_t len, const char *indent, const lms_room *r)
{
    if (!out || len == 0)
        return 0;
    out[0] = 0;
    if (!r->managed_peak || !r->budget)
        return 0;
    char a[32], b[32], c[32], e[32];
    lms_format_size(a, sizeof a, room_of(r));
    lms_format_size(b, sizeof b, r->device);
    lms_format_size(c, sizeof c, r->managed_peak);
    lms_format_size(e, sizeof e, r->fetched);
    int n = snprintf(out, len, "%sresidency room: %s (the budget less %s of device chunks) for %s of managed "
                     "chunks at their peak; %s fetched\n", indent, a, b, c, e);
    if (n > 0 && (size_t)n < len && lms_room_hint(r)) {
        int m = snprintf(out + n, len - (size_t)n, "%shint: that room is under a quarter of the managed chunks, "
                         "%s: a smaller LMS_FRAC than this run's %s (say 0.5) keeps fewer chunks on the device for "
                         "good and leaves the engine more room, up to 3x faster on some steps and slower on "
                         "others: compare a run at 0.5 (docs/PERFORMANCE.md, \"Choosing LMS_FRAC\")\n", indent,
                         r->fetched >= r->managed_peak
                             ? "fetched over and over"
                             : "named by launches over and over but hardly fetched (read over the link)",
                         r->frac_text ? r->frac_text : "?");
        n = m > 0 ? n + m : n;
    }
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}
