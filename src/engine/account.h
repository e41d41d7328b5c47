/*
 * account.h — per-device accounting (account.c): the budget, the bytes this
 * process holds on the device, and counters by placement. Lock-free.
 */
#ifndef LMS_ACCOUNT_H
#define LMS_ACCOUNT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "chunks.h"
#include "options.h"

typedef struct lms_account {
    atomic_int state;                          /* 0 unknown, 1 setting up, 2 ready */
    uint64_t physical;                         /* bytes of device memory (the driver's total) */
    uint64_t budget;                           /* bytes: min(LMS_LIMIT, physical) */
    _Atomic uint64_t used;                     /* bytes charged: device chunks (+ resident managed) */
    _Atomic uint64_t peak;                     /* most bytes charged at once */
    _Atomic uint64_t live_chunks[LMS_PLACE_COUNT];
    _Atomic uint64_t live_bytes[LMS_PLACE_COUNT];
    _Atomic uint64_t live_charged[LMS_PLACE_COUNT]; /* bytes the live chunks hold charged (used - these = resident managed) */
    _Atomic uint64_t allocs[LMS_PLACE_COUNT];  /* chunks placed since start */
    _Atomic uint64_t frees;                    /* chunks freed */
    _Atomic uint64_t fallbacks;                /* device requests placed elsewhere */
    _Atomic uint64_t oom_failures;             /* requests answered OUT_OF_MEMORY */
    _Atomic uint64_t prefetched_bytes;         /* managed bytes fetched to the device */
    _Atomic uint64_t prefetches;               /* fetches issued (count) */
    _Atomic uint64_t evicted_bytes;            /* managed bytes sent back to the host */
    _Atomic uint64_t evictions;                /* evictions issued (count) */
    _Atomic uint64_t launches_scanned;         /* launches that went through residency */
    _Atomic uint64_t violations;               /* times used passed the budget (a bug) */
    _Atomic uint64_t managed_peak;             /* most bytes of live managed chunks at once */
    _Atomic uint64_t device_at_peak;           /* most device and VMM charges while managed_peak held */
    _Atomic uint64_t named_bytes;              /* bytes of managed chunks named by launches (each time) */
    _Atomic uint64_t program_managed;          /* bytes of the live managed chunks the program made itself */
} lms_account;

extern lms_account lms_accounts[LMS_MAX_DEVICES];

/* The account of a device, its budget set up on first use; NULL for a
 * device out of range, or while the driver cannot tell the device's memory
 * (before cuInit): the caller passes the call through, and the next call
 * tries again. */
lms_account *lms_account_of(int device);

/* Bytes a device allocation of `size` occupies: 512 B granules below 2 MiB,
 * 2 MiB pages from there on (what CUDA drivers round to). */
uint64_t lms_charge_of(uint64_t size);

/* Charges bytes if they fit under `limit`; false (nothing charged) if not.
 * In a group (LMS_GROUP, group.c) the group's charge must fit; `used` keeps
 * this process's own part either way. */
bool lms_account_reserve(lms_account *a, uint64_t bytes, uint64_t limit);
/* Charges bytes whatever the limit. */
void lms_account_force(lms_account *a, uint64_t bytes);
/* Returns charged bytes. */
void lms_account_release(lms_account *a, uint64_t bytes);
/* Counts a request of `size` bytes answered CUDA_ERROR_OUT_OF_MEMORY
 * because the budget had no room for it (LMS_ON_OOM=fail), with one info
 * line naming `what` was asked (a static string) and, when `trace`, an
 * `oom` trace line. */
void lms_account_refused(lms_account *a, uint64_t size, const char *what, bool trace);

/* Bytes charged against the budget: the group's on the device (every
 * member's) in a group, else `used`. What the LMS rule and cuMemGetInfo see. */
uint64_t lms_account_used(const lms_account *a);

/* The residency engine's room: the budget less what no managed chunk of
 * this process can have: the bytes of its live device chunks, its VMM,
 * CUDA array and graph pool charges, and in a group (LMS_GROUP) every
 * other member's charge on the device (0 when they fill it). */
uint64_t lms_account_room(const lms_account *a);

/* The bytes of the live managed chunks lmshim placed (the engine's: not
 * the program's own). */
uint64_t lms_account_engine_managed(const lms_account *a);

/* Counts a new live chunk / a chunk gone. */
void lms_account_add_chunk(lms_account *a, const lms_chunk *c);
void lms_account_drop_chunk(lms_account *a, const lms_chunk *c);

/* Forgets every device's setup (a fork child re-reads budgets lazily). */
void lms_account_reset_setup(void);

#endif
