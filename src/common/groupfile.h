/*
 * groupfile.h — the layout of a group's shared-memory file (groupfile.c):
 * the file that lets the processes of one LMS_GROUP share one budget per
 * device. The engine (src/engine/group.c) charges through it; `lmshim top`
 * (cli/top.c) reads it. docs/ARCHITECTURE.md "Groups" has the protocol.
 *
 * One file per group, <dir>/lmshim-group-<name>, fixed size:
 *   [0, 4096)                  the header: identity, per-GPU budget and
 *                              charged bytes, the robust lock, and the GPU
 *                              (UUID) each per-GPU entry stands for
 *   [4096 + i*1024, +1024)     slot i: one live member, its own charge and
 *                              the counters `lmshim top` shows
 * A member holds an open-file-description record lock (fcntl F_OFD_SETLK,
 * write) on the first byte of its slot for as long as it lives; the kernel
 * drops that lock when the process dies however it dies, so "slot in use
 * but unlocked" means "member dead", in every pid namespace that maps the
 * file. (OFD locks, unlike classic POSIX ones, survive the program closing
 * another descriptor of the same file, and belong to one open() only.)
 *
 * Per-GPU entries: every array of LMS_GROUP_DEVICES (the header's budget,
 * charged, peak; a slot's counters) is indexed by the group's entry g, not
 * by a member's CUDA device ordinal: entry g counts for the GPU whose key
 * (gpu_kind[g], gpu_key[g]) a member found or claimed under the lock. The
 * key is the GPU's UUID (cuDeviceGetUuid_v2), so members that see the GPUs
 * under different ordinals (CUDA_VISIBLE_DEVICES) charge the same GPU's
 * entry. A member marks the entries it uses in its slot (`entries`): an
 * entry that no live slot marks, with no charge, may be taken for another
 * GPU when none is free. Version 1 files indexed by ordinal and had no keys.
 */
#ifndef LMS_GROUPFILE_H
#define LMS_GROUPFILE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LMS_GROUP_MAGIC 0x0150524753534d4cull   /* "LMSSGRP\1" read little-endian */
#define LMS_GROUP_VERSION 2u   /* 2: per-GPU entries keyed by UUID */
#define LMS_GROUP_DEVICES 16
#define LMS_GROUP_SLOTS 64
#define LMS_GROUP_NAME_MAX 63
#define LMS_GROUP_HEADER_BYTES 4096u
#define LMS_GROUP_SLOT_BYTES 1024u
#define LMS_GROUP_FILE_BYTES (LMS_GROUP_HEADER_BYTES + LMS_GROUP_SLOTS * LMS_GROUP_SLOT_BYTES)

enum { LMS_SLOT_FREE = 0, LMS_SLOT_LIVE = 1 };

/* What the key of a per-GPU entry is: no GPU yet, the GPU's UUID, or (when
 * a member could not get the UUID) the member's device ordinal, as a
 * little-endian uint32 in the key's first 4 bytes. */
enum { LMS_GPU_FREE = 0, LMS_GPU_UUID = 1, LMS_GPU_INDEX = 2 };
#define LMS_GPU_KEY_BYTES 16

/* One member's slot. `charged` changes only under the header's lock; the
 * other counters are the member's own, published about once a second. */
typedef struct lms_group_slot {
    _Atomic uint32_t state;                           /* LMS_SLOT_FREE or LMS_SLOT_LIVE */
    int32_t pid;                                      /* in the member's own pid namespace */
    uint64_t joined_ns;                               /* CLOCK_REALTIME at join, ns */
    _Atomic uint64_t published_ns;                    /* CLOCK_REALTIME of the last publication, ns */
    char command[48];                                 /* the member's comm, NUL-terminated */
    _Atomic uint64_t charged[LMS_GROUP_DEVICES];      /* bytes this member holds against the budget */
    _Atomic uint64_t device_bytes[LMS_GROUP_DEVICES]; /* bytes of its device chunks */
    _Atomic uint64_t resident_bytes[LMS_GROUP_DEVICES]; /* managed bytes fetched to the device */
    _Atomic uint64_t managed_bytes[LMS_GROUP_DEVICES];  /* managed bytes, on and off the device */
    _Atomic uint64_t fetched_bytes[LMS_GROUP_DEVICES];  /* managed bytes fetched since join (total) */
    _Atomic uint64_t evicted_bytes[LMS_GROUP_DEVICES];  /* managed bytes evicted since join (total) */
    _Atomic uint32_t entries;                         /* bit g: the member uses per-GPU entry g (set under lock) */
} lms_group_slot;

/* The header. Fields above `ready` are written once by the creator. */
typedef struct lms_group_header {
    uint64_t magic;                                   /* LMS_GROUP_MAGIC */
    uint32_t version;                                 /* LMS_GROUP_VERSION */
    uint32_t slots;                                   /* LMS_GROUP_SLOTS */
    uint64_t file_bytes;                              /* LMS_GROUP_FILE_BYTES */
    uint32_t slot_bytes;                              /* LMS_GROUP_SLOT_BYTES */
    uint32_t lock_bytes;                              /* sizeof(pthread_mutex_t) of the creator */
    char name[LMS_GROUP_NAME_MAX + 1];                /* the group's name */
    uint64_t created_ns;                              /* CLOCK_REALTIME at creation, ns */
    _Atomic uint32_t ready;                           /* 1 once the creator is done */
    uint32_t unused;
    _Atomic uint64_t budget[LMS_GROUP_DEVICES];       /* bytes; 0 until the first member using the device fixes it */
    _Atomic uint64_t charged[LMS_GROUP_DEVICES];      /* bytes: the sum of the slots' charged (under lock) */
    _Atomic uint64_t peak[LMS_GROUP_DEVICES];         /* most bytes charged at once */
    _Atomic uint64_t reclaimed_bytes;                 /* bytes given back for dead members */
    _Atomic uint64_t reclaimed_members;               /* dead members whose slots were reclaimed */
    _Atomic uint64_t repairs;                         /* times a member died holding the lock */
    _Alignas(64) pthread_mutex_t lock;                /* process-shared, robust */
    /* Version 2. Written under `lock`: the key's bytes, then its kind
     * (release); cleared when a member joins an otherwise empty group. */
    _Atomic uint32_t gpu_kind[LMS_GROUP_DEVICES];     /* LMS_GPU_FREE, _UUID or _INDEX */
    uint8_t gpu_key[LMS_GROUP_DEVICES][LMS_GPU_KEY_BYTES]; /* the GPU's UUID (or ordinal) */
} lms_group_header;

/* Builds <dir>/lmshim-group-<name> into out; -1 if the name is empty, too
 * long, or has a character outside [A-Za-z0-9._-] (or starts with '.'). */
int lms_groupfile_path(const char *dir, const char *name, char *out, size_t len);

/* Why a mapped file of `size` bytes is not a usable group file ("wrong
 * magic", "wrong version", "wrong size", "not initialised"), or NULL. A
 * file of another layout version is never read further than its version. */
const char *lms_groupfile_check(const lms_group_header *h, uint64_t size);

/* Writes the name of per-GPU entry g into out (len bytes): "GPU-" and the
 * UUID as nvidia-smi writes it (full: 8-4-4-4-12 hex digits; short: the
 * first 8), "index N" for an ordinal key, "-" for a free entry. */
void lms_groupfile_gpu_name(const lms_group_header *h, int g, bool full, char *out, size_t len);

/* Slot i of a mapped group file. */
lms_group_slot *lms_groupfile_slot(lms_group_header *h, int i);

/* Offset of the byte a member of slot i keeps locked. */
long lms_groupfile_lock_offset(int i);

/* 1 if another open file description holds slot i's lock (the member is
 * alive), 0 if none does (or `fd`'s own description does), -1 if the kernel
 * cannot say. Never takes the lock. */
int lms_groupfile_alive(int fd, int i);

#endif
