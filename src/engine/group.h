/*
 * group.h — shared budgets (group.c): with LMS_GROUP=<name>, every process
 * of that name on the host charges its device bytes to one budget per
 * device, kept in a small shared-memory file (src/common/groupfile.h).
 * account.c calls in at its reserve/force/release points; without a group
 * nothing here runs but one relaxed load of lms_group_on.
 */
#ifndef LMS_GROUP_H
#define LMS_GROUP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* True while this process is a member of a group. */
extern atomic_bool lms_group_on;

/* Joins LMS_GROUP if set (once per process, again in a fork child): opens
 * or creates the group file and claims a slot. On any failure writes one
 * line and leaves the process on its own per-process budget. */
void lms_group_open(void);

/* The budget of a device: the group's if it has one for the device, else
 * `own` becomes the group's. Without a group: `own`. A member that asked
 * for a different budget gets one warning. */
uint64_t lms_group_budget(int device, uint64_t own);

/* Charges bytes to the group if its charge stays within `limit`: 1 charged,
 * 0 does not fit (dead members' charges are reclaimed first), -1 not a
 * member (the caller charges its own budget). */
int lms_group_reserve(int device, uint64_t bytes, uint64_t limit);

/* Charges bytes whatever the budget; false if not a member. */
bool lms_group_force(int device, uint64_t bytes);

/* Gives back bytes this member charged (never more than it holds); false if
 * not a member. */
bool lms_group_release(int device, uint64_t bytes);

/* Bytes charged to the group on a device (every member), after reclaiming
 * dead members' charges at most once per 10 ms. */
uint64_t lms_group_used(int device);

/* Bytes the group's other members hold on a device: the group's charge
 * less this member's own slot (not `used`: charges made before joining,
 * or a fork child's inherited ones, are not in the group's), 0 when not
 * a member or the device has no entry. Two counters read, no sweep: the
 * residency engine asks it on the launch path (lms_account_room). */
uint64_t lms_group_others(int device);

/* In a fork child: not a member until lms_group_open claims a new slot;
 * the parent's slot and charge stay the parent's. */
void lms_group_fork_child(void);

#endif
