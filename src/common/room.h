/*
 * room.h — the residency engine's room against the managed chunks, and the
 * hint at a smaller LMS_FRAC: the rule and the words that both the at-exit
 * summary (engine/stats.c) and `lmshim report` (offline/report.c) print
 * (room.c). Each finds the numbers from where it stands: the live
 * counters, or the trace.
 */
#ifndef LMS_ROOM_H
#define LMS_ROOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the room line and the hint are made of, per device. */
typedef struct lms_room {
    uint64_t budget;        /* bytes */
    uint64_t device;        /* device and VMM charges the room is the budget less of */
    uint64_t managed_peak;  /* the managed chunks' most bytes at once */
    uint64_t fetched;       /* bytes fetched to the device */
    uint64_t named;         /* bytes of managed chunks named by launches (a chunk's each time) */
    double frac;            /* LMS_FRAC, negative when unknown */
    const char *frac_text;  /* ... as the run wrote it */
    bool no_fetch;          /* the policy never fetches (LMS_POLICY=none) */
} lms_room;

/* Whether to hint at a smaller LMS_FRAC: the room was under a quarter of
 * the managed chunks at their peak (exactly: 4 x room < peak), they were
 * fetched at least once over or named by launches at least twice over (a
 * room too small to fetch into leaves them read over the link), LMS_FRAC
 * was above 0.5 and the policy fetches. */
bool lms_room_hint(const lms_room *r);

/* Writes into out (len bytes, NUL-terminated, cut short if need be) the
 * line "<indent>residency room: ..." and, when lms_room_hint says so, a
 * second "<indent>hint: ..." line, each ending in a newline; nothing when
 * there were no managed chunks or no budget. Returns the length written. */
size_t lms_room_text(char *out, size_t len, const char *indent, const lms_room *r);

#endif
