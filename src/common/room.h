/*
 * room.h — the residency engine's room against the managed chunks, and the
 * hint at a smaller LMS_FRAC, in the words both the at-exit summary
 * (engine/stats.c) and `lmshim report` (offline/report.c) print (room.c).
 */
#ifndef LMS_ROOM_H
#define LMS_ROOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The room: the budget less the device chunks' charges (0 when they take
 * it all). */
uint64_t lms_room_of(uint64_t budget, uint64_t device);

/* Whether to hint at a smaller LMS_FRAC: the room was under a quarter of
 * the managed chunks' bytes at their peak, those were fetched at least once
 * over, and LMS_FRAC (frac; negative when unknown) was above 0.5. */
bool lms_room_hint(uint64_t room, uint64_t managed_peak, uint64_t fetched, double frac);

/* Writes into out (len bytes, NUL-terminated, cut short if need be) the
 * line "<indent>residency room: ..." and, when lms_room_hint says so, a
 * second "<indent>hint: ..." line, each ending in a newline; nothing when
 * there were no managed chunks or no budget. Returns the length written. */
size_t lms_room_text(char *out, size_t len, const char *indent, uint64_t budget, uint64_t device_at_peak,
                     uint64_t managed_peak, uint64_t fetched, double frac);

#endif
