/*
 * group.c — shared budgets (see group.h; the file layout in
 * src/common/groupfile.h; the protocol in docs/ARCHITECTURE.md "Groups").
 *
 * Charging: every change of a charge takes the header's robust,
 * process-shared mutex and updates the group's total and the member's slot
 * together. A member that dies holding the mutex leaves EOWNERDEAD to the
 * next taker, which recomputes the totals from the slots (the slots are the
 * truth) before going on.
 * Liveness: a member keeps an OFD record lock on its slot's first byte; a
 * slot in use whose lock nobody holds belongs to a dead process. The next
 * member that looks (on joining, on a charge that does not fit, on reading
 * the group's usage) takes that lock itself, gives the slot's charge back
 * and frees the slot. Slots never move.
 * GPUs: the group's per-GPU entries are keyed by the GPU's UUID; each
 * device of this process finds its GPU's entry, or claims a free one, under
 * the lock at its first use, and keeps the answer (entry_of).
 */
#include "group.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "account.h"
#include "driver.h"
#include "group_file.h"
#include "groupfile.h"
#include "log.h"

_Static_assert(LMS_GROUP_DEVICES == LMS_MAX_DEVICES, "one group budget per device");

atomic_bool lms_group_on;

static int fd = -1;                     /* the group file, O_CLOEXEC: this process's own open() of it */
static lms_group_header *hdr;           /* its mapping, LMS_GROUP_FILE_BYTES; never unmapped */
static char mapped_path[LMS_GROUP_PATH_MAX];           /* the path of that mapping */
static dev_t file_dev;                  /* the group file's identity, to know `fd` is still */
static ino_t file_ino;                  /* a descriptor of it */
static lms_group_slot *me;              /* this process's slot (read and written under hdr->lock) */
static int my_index = -1;               /* its index */
static uint64_t my_joined;              /* its joined_ns when claimed: still ours while equal */
static pthread_mutex_t local = PTHREAD_MUTEX_INITIALIZER;  /* joins and sweeps, one at a time here */
static _Atomic uint64_t next_sweep_ns;  /* CLOCK_MONOTONIC: no sweep before this */
static pid_t publisher_in;              /* the process whose publisher thread runs */
static bool exit_registered;
static atomic_uint budget_warned[LMS_GROUP_DEVICES];

/* A device's key in the group: its GPU's UUID, or its ordinal when the
 * driver cannot tell the UUID. Asked once per device and process. */
typedef struct gpu_key {
    atomic_int state;                   /* 0 not asked, 1 being asked, 2 known */
    uint32_t kind;                      /* LMS_GPU_UUID or LMS_GPU_INDEX */
    uint8_t bytes[LMS_GPU_KEY_BYTES];
} gpu_key;
static gpu_key keys[LMS_MAX_DEVICES];
/* The group's entry of each device of this process, plus one; 0 not found
 * yet; -1 none (every entry taken by other GPUs: the device keeps its own
 * budget). Valid while this process is the member it was when it found it. */
static atomic_int entry_of[LMS_MAX_DEVICES];

#define SWEEP_EVERY_NS 10000000ull      /* 10 ms between sweeps */
#define PUBLISH_EVERY_NS 250000000l     /* counters for `lmshim top`, 4 times a second */


/* True if `fd` is still a descriptor of the group file. A program may
 * close descriptors it does not own and get their numbers again for its own
 * files: lmshim must then never query, lock, unlock or close that number. */
static bool fd_is_ours(void)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == file_dev && st.st_ino == file_ino;
}

/* Before liveness queries and slot locks (the caller holds `local`): true
 * if `fd` is a descriptor of the group file, opening the file again when
 * the program closed ours. This process's own slot lock stays with the
 * first open file description, which its mapping keeps alive. */
static bool fd_usable(void)
{
    if (fd_is_ours())
        return true;
    static atomic_uint said;
    fd = -1;
    int f = open(mapped_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (f >= 0 && fstat(f, &st) == 0 && st.st_dev == file_dev && st.st_ino == file_ino) {
        fd = f;
        lms_log_capped(LMS_LEVEL_INFO, &said, 1, "group %s: the program closed lmshim's descriptor of %s; opened "
                       "it again", hdr->name, mapped_path);
        return true;
    }
    if (f >= 0)
        close(f);
    lms_log_capped(LMS_LEVEL_WARN, &said, 1, "group %s: the program closed lmshim's descriptor of %s and the file "
                   "is gone; this process no longer reclaims dead members' slots (the other members do)",
                   hdr->name, mapped_path);
    return false;
}

/* Recomputes the group's totals from the slots: called by the taker of a
 * mutex whose owner died, when no one else can be changing a charge. */
static void repair(void)
{
    for (int d = 0; d < LMS_GROUP_DEVICES; d++) {
        uint64_t sum = 0;
        for (int i = 0; i < LMS_GROUP_SLOTS; i++)
            sum += atomic_load_explicit(&lms_groupfile_slot(hdr, i)->charged[d], memory_order_relaxed);
        atomic_store_explicit(&hdr->charged[d], sum, memory_order_relaxed);
    }
    atomic_fetch_add(&hdr->repairs, 1);
    lms_log(LMS_LEVEL_INFO, "group %s: a member died holding the group's lock; totals recomputed", hdr->name);
}

/* Leaves the group after its lock became unusable: this process keeps
 * charging its own budget. */
static void broken(int err)
{
    static atomic_uint said;
    atomic_store(&lms_group_on, false);
    lms_log_capped(LMS_LEVEL_WARN, &said, 1, "group %s: its lock is unusable (%s); this process now keeps its "
                   "own budget (LMS_LIMIT)", hdr->name, strerror(err));
}

/* True while this thread takes, holds or gives back the group's lock (set
 * before, cleared after: a signal may come inside pthread_mutex_lock or
 * _unlock too): a signal handler that exits the process may run right
 * then (see leave()). */
static __thread bool holding __attribute__((tls_model("initial-exec")));

/* Takes the group's lock, repairing after a dead owner; false (and the
 * group left) if the lock cannot be taken. */
static bool lock_group(void)
{
    holding = true;
    int r = pthread_mutex_lock(&hdr->lock);
    if (r == EOWNERDEAD) {
        repair();
        r = pthread_mutex_consistent(&hdr->lock);
        if (r != 0)
            pthread_mutex_unlock(&hdr->lock);
    }
    if (r != 0) {
        holding = false;
        broken(r);
        return false;
    }
    return true;
}

static void unlock_group(void)
{
    pthread_mutex_unlock(&hdr->lock);
    holding = false;
}

/* Under hdr->lock: this process's slot, or NULL if it is not a member or
 * its slot was taken from it while it lived (which lmshim never does; a
 * damaged file or another program might). Then it never writes to that
 * slot again and keeps its own budget. */
static lms_group_slot *mine(void)
{
    if (me && (atomic_load_explicit(&me->state, memory_order_relaxed) != LMS_SLOT_LIVE || me->joined_ns != my_joined)) {
        static atomic_uint said;
        me = NULL;
        atomic_store(&lms_group_on, false);
        lms_log_capped(LMS_LEVEL_WARN, &said, 1, "group %s: this process's member slot was taken from it while "
                       "it lived; it now keeps its own budget (LMS_LIMIT)", hdr->name);
    }
    return me;
}

/* The key of device d: its GPU's UUID, asked of the real driver once per
 * process; its ordinal, after one warning, when the driver cannot tell the
 * UUID (no cuDeviceGetUuid_v2, or an error). Called without hdr->lock (it
 * calls the driver). The key lives in `keys`. */
static const gpu_key *key_of(int d)
{
    gpu_key *k = &keys[d];
    if (atomic_load_explicit(&k->state, memory_order_acquire) == 2)
        return k;
    int expect = 0;
    if (atomic_compare_exchange_strong(&k->state, &expect, 1)) {
        CUuuid u;
        CUresult r = lms_drv.cuDeviceGetUuid ? lms_drv.cuDeviceGetUuid(&u, d) : CUDA_ERROR_NOT_FOUND;
        memset(k->bytes, 0, sizeof k->bytes);
        if (r == CUDA_SUCCESS) {
            k->kind = LMS_GPU_UUID;
            memcpy(k->bytes, u.bytes, sizeof k->bytes);
        } else {
            static atomic_uint said;
            k->kind = LMS_GPU_INDEX;
            for (int i = 0; i < 4; i++)
                k->bytes[i] = (uint8_t)((unsigned)d >> (8 * i));
            lms_log_capped(LMS_LEVEL_WARN, &said, 1, "group %s: cannot get the UUID of device %d (%s %d); its "
                           "group budget goes by its CUDA ordinal: shared only with members that see the same "
                           "GPUs in the same order (CUDA_VISIBLE_DEVICES)", lms_opt.group, d,
                           lms_drv.cuDeviceGetUuid ? "cuDeviceGetUuid_v2 answered" : "no cuDeviceGetUuid_v2 in "
                           "the driver, error", (int)r);
        }
        atomic_store_explicit(&k->state, 2, memory_order_release);
        return k;
    }
    while (atomic_load_explicit(&k->state, memory_order_acquire) == 1)
        sched_yield();
    return k;
}

static bool sweep_locked(void);

/* Under hdr->lock: true if no member's slot in use (live, or dead and not
 * yet reclaimed) marks entry g or holds a charge on it, and the group has
 * none there: no member uses the entry, so it may stand for another GPU. */
static bool entry_unused_locked(int g)
{
    if (atomic_load_explicit(&hdr->charged[g], memory_order_relaxed) != 0)
        return false;
    for (int i = 0; i < LMS_GROUP_SLOTS; i++) {
        lms_group_slot *s = lms_groupfile_slot(hdr, i);
        if (atomic_load_explicit(&s->state, memory_order_relaxed) == LMS_SLOT_LIVE &&
            ((atomic_load_explicit(&s->entries, memory_order_relaxed) >> g & 1u) ||
             atomic_load_explicit(&s->charged[g], memory_order_relaxed) != 0))
            return false;
    }
    return true;
}

/* Under hdr->lock, for this member (`me`): the group's entry of the GPU
 * with key k: the entry that has that key, else the first free one, else
 * the first that no member uses (its GPU's members have all left), which
 * takes the key; the member's slot marks it as used. A claimed entry
 * starts afresh: made free, budget and peak zeroed, then the key's bytes,
 * then its kind (a death half-way leaves it free; whoever claims a free
 * entry zeroes its budget). -1 if every entry belongs to another GPU some
 * member uses. */
static int find_entry_locked(const gpu_key *k)
{
    int take = -1;
    for (int g = 0; g < LMS_GROUP_DEVICES && take < 0; g++) {
        uint32_t kind = atomic_load_explicit(&hdr->gpu_kind[g], memory_order_relaxed);
        if (kind == k->kind && memcmp(hdr->gpu_key[g], k->bytes, sizeof k->bytes) == 0)
            take = g;
    }
    bool found = take >= 0;
    for (int g = 0; g < LMS_GROUP_DEVICES && take < 0; g++)
        if (atomic_load_explicit(&hdr->gpu_kind[g], memory_order_relaxed) == LMS_GPU_FREE)
            take = g;
    for (int g = 0; g < LMS_GROUP_DEVICES && take < 0; g++)
        if (entry_unused_locked(g))
            take = g;
    if (take < 0)
        return -1;
    if (!found) {
        atomic_store_explicit(&hdr->gpu_kind[take], LMS_GPU_FREE, memory_order_release);
        atomic_store_explicit(&hdr->budget[take], 0, memory_order_relaxed);
        atomic_store_explicit(&hdr->peak[take], 0, memory_order_relaxed);
        memcpy(hdr->gpu_key[take], k->bytes, sizeof k->bytes);
        atomic_store_explicit(&hdr->gpu_kind[take], k->kind, memory_order_release);
    }
    atomic_fetch_or_explicit(&me->entries, 1u << take, memory_order_relaxed);
    return take;
}

/* The group's entry of this process's device d, found or claimed under the
 * lock at the device's first use and kept; -1 when it has none (its own
 * budget then) or this process is not a member. When every entry is taken
 * the slots of dead members are reclaimed first (their entries may come
 * free) and the search done again. */
static int entry(int d)
{
    int e = atomic_load_explicit(&entry_of[d], memory_order_acquire);
    if (e != 0)
        return e > 0 ? e - 1 : -1;
    const gpu_key *k = key_of(d);
    int g = -1;
    bool first = false;   /* this thread stored the answer (says it, once) */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt > 0) {
            pthread_mutex_lock(&local);
            sweep_locked();
            pthread_mutex_unlock(&local);
        }
        if (!lock_group())
            return -1;
        bool member = mine() != NULL;
        if (member) {
            g = find_entry_locked(k);
            int none = 0;
            if (g >= 0 || attempt > 0)
                first = atomic_compare_exchange_strong(&entry_of[d], &none, g >= 0 ? g + 1 : -1);
        }
        unlock_group();
        if (!member || g >= 0)
            break;
    }
    if (!first) {   /* another thread answered first, or this process is not a member */
        e = atomic_load_explicit(&entry_of[d], memory_order_acquire);
        return e > 0 ? e - 1 : -1;
    }
    if (g >= 0 && LMS_LOG_ON(LMS_LEVEL_INFO)) {
        char name[64];
        lms_groupfile_gpu_name(hdr, g, true, name, sizeof name);
        lms_log(LMS_LEVEL_INFO, "group %s: device %d is %s, the group's entry %d", hdr->name, d, name, g);
    } else if (g < 0) {
        lms_log(LMS_LEVEL_WARN, "group %s: all %d GPU entries of the group belong to GPUs that other members "
                "use; device %d keeps its own budget (LMS_LIMIT)", hdr->name, LMS_GROUP_DEVICES, d);
    }
    return g;
}

/* Takes (F_WRLCK) or drops (F_UNLCK) this process's record lock on slot i;
 * true on success. Never waits. */
static bool slot_lock(int i, short type)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(i), .l_len = 1};
    int r;
    while ((r = fcntl(fd, F_OFD_SETLK, &fl)) != 0 && errno == EINTR)
        ;
    return r == 0;
}

/* Under hdr->lock: gives a slot's charge back to the group and frees the
 * slot (its charges are zeroed before the totals drop, so a death half-way
 * leaves the slots right and repair() the totals). Returns the bytes. */
static uint64_t give_back(lms_group_slot *s)
{
    uint64_t all = 0;
    for (int d = 0; d < LMS_GROUP_DEVICES; d++) {
        uint64_t c = atomic_exchange_explicit(&s->charged[d], 0, memory_order_relaxed);
        if (!c)
            continue;
        uint64_t t = atomic_load_explicit(&hdr->charged[d], memory_order_relaxed);
        atomic_store_explicit(&hdr->charged[d], t - (c < t ? c : t), memory_order_relaxed);
        all += c;
    }
    atomic_store_explicit(&s->state, LMS_SLOT_FREE, memory_order_release);
    return all;
}

/* Reclaims the slots of dead members (the caller holds `local`); true if
 * any charge came back. */
static bool sweep_locked(void)
{
    bool freed = false;
    if (!fd_usable())
        return false;
    for (int i = 0; i < LMS_GROUP_SLOTS; i++) {
        lms_group_slot *s = lms_groupfile_slot(hdr, i);
        if (i == my_index || atomic_load_explicit(&s->state, memory_order_acquire) != LMS_SLOT_LIVE ||
            lms_groupfile_alive(fd, i) != 0 || !slot_lock(i, F_WRLCK))
            continue;
        /* Its member is dead and no one else is claiming the slot. */
        if (lock_group()) {
            if (atomic_load_explicit(&s->state, memory_order_relaxed) == LMS_SLOT_LIVE) {
                int pid = s->pid;
                uint64_t bytes = give_back(s);
                atomic_fetch_add(&hdr->reclaimed_bytes, bytes);
                atomic_fetch_add(&hdr->reclaimed_members, 1);
                freed |= bytes != 0;
                lms_log(LMS_LEVEL_INFO, "group %s: member pid %d is gone; %llu bytes of its charge given back",
                        hdr->name, pid, (unsigned long long)bytes);
            }
            unlock_group();
        }
        slot_lock(i, F_UNLCK);
    }
    return freed;
}

/* sweep_locked(), at most once per 10 ms and never waiting for another
 * thread's sweep; true if any charge came back. */
static bool sweep(void)
{
    uint64_t t = lms_group_clock_ns(CLOCK_MONOTONIC);
    if (t < atomic_load_explicit(&next_sweep_ns, memory_order_relaxed))
        return false;
    atomic_store_explicit(&next_sweep_ns, t + SWEEP_EVERY_NS, memory_order_relaxed);
    if (pthread_mutex_trylock(&local) != 0)
        return false;
    bool freed = sweep_locked();
    pthread_mutex_unlock(&local);
    return freed;
}

/* Copies this member's counters into its slot for `lmshim top`. */
static void publish(void)
{
    if (!atomic_load(&lms_group_on) || !lock_group())
        return;
    if (mine()) {
        for (int d = 0; d < LMS_GROUP_DEVICES && d < LMS_MAX_DEVICES; d++) {
            lms_account *a = &lms_accounts[d];
            int g = atomic_load(&entry_of[d]) - 1;   /* found at its first charge; none yet: nothing to show */
            if (atomic_load(&a->state) != 2 || g < 0)
                continue;
            uint64_t used = atomic_load(&a->used), chunks = 0;
            for (int p = 0; p < LMS_PLACE_COUNT; p++)
                chunks += atomic_load(&a->live_charged[p]);
            atomic_store(&me->device_bytes[g], atomic_load(&a->live_charged[LMS_PLACE_DEVICE]));
            atomic_store(&me->resident_bytes[g], used > chunks ? used - chunks : 0);
            atomic_store(&me->managed_bytes[g], atomic_load(&a->live_bytes[LMS_PLACE_MANAGED]));
            atomic_store(&me->fetched_bytes[g], atomic_load(&a->prefetched_bytes));
            atomic_store(&me->evicted_bytes[g], atomic_load(&a->evicted_bytes));
        }
        atomic_store(&me->published_ns, lms_group_clock_ns(CLOCK_REALTIME));
    }
    unlock_group();
}

/* Says once if the group file's path no longer names the file this
 * process maps: removed (systemd-logind's RemoveIPC=yes removes a user's
 * /dev/shm files when the user's last session ends; so do cleanup jobs)
 * or replaced. The members go on sharing the old file, but processes that
 * start now make a new group with a budget of its own. */
static void check_path(void)
{
    static bool said;
    struct stat st;
    if (said || !atomic_load(&lms_group_on))
        return;
    if (stat(mapped_path, &st) == 0 && st.st_dev == file_dev && st.st_ino == file_ino)
        return;
    said = true;
    lms_log(LMS_LEVEL_WARN, "group %s: %s was removed or replaced while this process is a member; processes "
            "that start now form a new group with a budget of its own (systemd's RemoveIPC=yes removes a user's "
            "files in /dev/shm at logout: set LMS_GROUP_DIR to a directory of the group's own)", hdr->name,
            mapped_path);
}

/* The publisher thread: publish() four times a second, for the process's
 * life, and the check that the group file is still in its place. */
static void *publisher(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = PUBLISH_EVERY_NS};
        while (nanosleep(&ts, &ts) != 0)
            ;
        publish();
        check_path();
    }
    return NULL;
}

static void start_publisher(void)
{
    if (publisher_in == getpid())
        return;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, publisher, NULL) == 0)
        publisher_in = getpid();
    pthread_attr_destroy(&attr);
}

/* At exit: this member's charge goes back (the driver frees a process's
 * device memory when it ends) and its slot is freed. */
static void leave(void)
{
    /* exit() from a signal handler that interrupted this thread's charge:
     * waiting for the lock it holds would never end. The process ends as
     * if killed: the next taker of the lock repairs the totals from the
     * slots, and this slot, whose record lock the kernel drops, is
     * reclaimed as a dead member's. */
    if (!hdr || !atomic_load(&lms_group_on) || holding)
        return;
    if (lock_group()) {
        if (me)
            give_back(me);
        me = NULL;
        unlock_group();
    }
    atomic_store(&lms_group_on, false);
    if (my_index >= 0 && fd_is_ours())
        slot_lock(my_index, F_UNLCK);
    my_index = -1;
}

/* Claims a free or dead slot for this process; false if all are live. */
static bool claim_slot(void)
{
    if (!fd_usable())
        return false;
    for (int i = 0; i < LMS_GROUP_SLOTS; i++) {
        lms_group_slot *s = lms_groupfile_slot(hdr, i);
        if ((atomic_load_explicit(&s->state, memory_order_acquire) == LMS_SLOT_LIVE &&
             lms_groupfile_alive(fd, i) != 0) || !slot_lock(i, F_WRLCK))
            continue;
        if (!lock_group()) {
            slot_lock(i, F_UNLCK);
            return false;
        }
        if (atomic_load_explicit(&s->state, memory_order_relaxed) == LMS_SLOT_LIVE) {
            uint64_t bytes = give_back(s);   /* a dead member's slot */
            atomic_fetch_add(&hdr->reclaimed_bytes, bytes);
            atomic_fetch_add(&hdr->reclaimed_members, 1);
        }
        memset((char *)s + sizeof s->state, 0, sizeof *s - sizeof s->state);
        s->pid = (int32_t)getpid();
        s->joined_ns = lms_group_clock_ns(CLOCK_REALTIME);
        my_joined = s->joined_ns;
        FILE *comm = fopen("/proc/self/comm", "re");
        if (comm) {
            if (fgets(s->command, sizeof s->command, comm))
                s->command[strcspn(s->command, "\n")] = 0;
            fclose(comm);
        }
        atomic_store_explicit(&s->state, LMS_SLOT_LIVE, memory_order_release);
        me = s;
        my_index = i;
        /* The only member of a group starts it afresh: no charge is left,
         * no GPU has an entry, and the budgets are fixed again by whoever
         * sets a GPU up first (this process, in lms_group_open, for the
         * devices it has set up already). */
        bool alone = true;
        for (int k = 0; k < LMS_GROUP_SLOTS && alone; k++)
            alone = k == i || atomic_load(&lms_groupfile_slot(hdr, k)->state) != LMS_SLOT_LIVE;
        if (alone)
            for (int g = 0; g < LMS_GROUP_DEVICES; g++) {
                atomic_store(&hdr->gpu_kind[g], LMS_GPU_FREE);
                memset(hdr->gpu_key[g], 0, sizeof hdr->gpu_key[g]);
                atomic_store(&hdr->budget[g], 0);
                atomic_store(&hdr->charged[g], 0);
                atomic_store(&hdr->peak[g], 0);
            }
        for (int d = 0; d < LMS_MAX_DEVICES; d++)
            atomic_store(&entry_of[d], 0);   /* a new member finds its GPUs again */
        unlock_group();
        return true;
    }
    return false;
}

void lms_group_open(void)
{
    if (!lms_opt.group[0] || atomic_load(&lms_group_on))
        return;
    char path[sizeof mapped_path];
    if (lms_opt.group_dir[0] && lms_opt.group_dir[0] != '/') {
        lms_log(LMS_LEVEL_WARN, "group %s: LMS_GROUP_DIR=%s is not an absolute path (processes started in other "
                "directories would form other groups); this process keeps its own budget (LMS_LIMIT)",
                lms_opt.group, lms_opt.group_dir);
        return;
    }
    if (lms_groupfile_path(lms_opt.group_dir, lms_opt.group, path, sizeof path) != 0) {
        lms_log(LMS_LEVEL_WARN, "group %s: the path under %s is too long; this process keeps its own budget "
                "(LMS_LIMIT)", lms_opt.group, lms_opt.group_dir);
        return;
    }
    if (!hdr) {
        const char *why = NULL;
        int f = -1;
        lms_group_header *h = lms_group_map_file(path, lms_opt.group, &f, &why);
        if (!h) {
            lms_log(LMS_LEVEL_WARN, "group %s: cannot use %s (%s); this process keeps its own budget (LMS_LIMIT)",
                    lms_opt.group, path, why);
            return;
        }
        struct stat st;
        fstat(f, &st);   /* it succeeded in lms_group_map_file() */
        file_dev = st.st_dev;
        file_ino = st.st_ino;
        fd = f;
        hdr = h;
        snprintf(mapped_path, sizeof mapped_path, "%s", path);
    }
    pthread_mutex_lock(&local);
    sweep_locked();
    bool ok = claim_slot();
    pthread_mutex_unlock(&local);
    if (!ok) {
        lms_log(LMS_LEVEL_WARN, "group %s: all %d member slots of %s are taken; this process keeps its own "
                "budget (LMS_LIMIT)", lms_opt.group, LMS_GROUP_SLOTS, path);
        return;
    }
    atomic_store(&lms_group_on, true);
    /* Devices set up before joining (a fork child's, inherited from a
     * parent that kept its own budget) take the group's budget now: the
     * budget is the limit every charge of this process is checked against. */
    for (int d = 0; d < LMS_GROUP_DEVICES; d++) {
        lms_account *a = &lms_accounts[d];
        if (atomic_load(&a->state) == 2)
            a->budget = lms_group_budget(d, a->budget);
    }
    start_publisher();
    if (!exit_registered) {
        exit_registered = true;
        atexit(leave);
    }
    lms_log(LMS_LEVEL_INFO, "group %s: joined %s as member %d", hdr->name, path, my_index);
}

uint64_t lms_group_budget(int device, uint64_t own)
{
    if (!atomic_load(&lms_group_on) || device < 0 || device >= LMS_GROUP_DEVICES || own == 0)
        return own;
    int g = entry(device);
    if (g < 0)
        return own;
    uint64_t have = 0;
    if (atomic_compare_exchange_strong(&hdr->budget[g], &have, own))
        return own;
    bool asked = lms_opt.source[LMS_OPT_limit] == LMS_SOURCE_ENV ||
                 (device < LMS_MAX_DEVICES && lms_opt.device_limit_set[device]);
    if (have != own && asked)
        lms_log_capped(LMS_LEVEL_WARN, &budget_warned[device], 1,
                       "group %s: device %d has the group's budget of %llu bytes, not the %llu asked here",
                       hdr->name, device, (unsigned long long)have, (unsigned long long)own);
    return have;
}

int lms_group_reserve(int device, uint64_t bytes, uint64_t limit)
{
    int g = entry(device);
    if (g < 0)
        return -1;
    for (int attempt = 0;; attempt++) {
        if (!lock_group())
            return -1;
        if (!mine()) {
            unlock_group();
            return -1;
        }
        uint64_t c = atomic_load_explicit(&hdr->charged[g], memory_order_relaxed);
        bool fits = bytes <= limit && c <= limit - bytes;
        if (fits) {
            atomic_store_explicit(&hdr->charged[g], c + bytes, memory_order_relaxed);
            atomic_store_explicit(&me->charged[g],
                                  atomic_load_explicit(&me->charged[g], memory_order_relaxed) + bytes,
                                  memory_order_relaxed);
            if (c + bytes > atomic_load_explicit(&hdr->peak[g], memory_order_relaxed))
                atomic_store_explicit(&hdr->peak[g], c + bytes, memory_order_relaxed);
        }
        unlock_group();
        if (fits)
            return 1;
        if (attempt > 0 || !sweep())
            return 0;
    }
}

bool lms_group_force(int device, uint64_t bytes)
{
    int g = entry(device);
    if (g < 0 || !lock_group())
        return false;
    bool member = mine() != NULL;
    if (member) {
        uint64_t c = atomic_load_explicit(&hdr->charged[g], memory_order_relaxed) + bytes;
        atomic_store_explicit(&hdr->charged[g], c, memory_order_relaxed);
        atomic_fetch_add_explicit(&me->charged[g], bytes, memory_order_relaxed);
        if (c > atomic_load_explicit(&hdr->peak[g], memory_order_relaxed))
            atomic_store_explicit(&hdr->peak[g], c, memory_order_relaxed);
    }
    unlock_group();
    return member;
}

bool lms_group_release(int device, uint64_t bytes)
{
    int g = entry(device);
    if (g < 0 || !lock_group())
        return false;
    bool member = mine() != NULL;
    if (member) {
        /* A fork child frees chunks it inherited: their charge is the
         * parent's, so never give back more than this member holds. */
        uint64_t held = atomic_load_explicit(&me->charged[g], memory_order_relaxed);
        uint64_t b = bytes < held ? bytes : held;
        uint64_t c = atomic_load_explicit(&hdr->charged[g], memory_order_relaxed);
        atomic_store_explicit(&me->charged[g], held - b, memory_order_relaxed);
        atomic_store_explicit(&hdr->charged[g], c - (b < c ? b : c), memory_order_relaxed);
    }
    unlock_group();
    return member;
}

uint64_t lms_group_used(int device)
{
    if (!hdr || device < 0 || device >= LMS_GROUP_DEVICES)
        return 0;
    int g = entry(device);
    if (g < 0)   /* no entry of the group: this process's own charge */
        return atomic_load_explicit(&lms_accounts[device].used, memory_order_relaxed);
    sweep();
    return atomic_load_explicit(&hdr->charged[g], memory_order_relaxed);
}

uint64_t lms_group_others(int device)
{
    lms_group_slot *s = me;   /* read once: a slot taken away or left clears it */
    if (!hdr || !s || device < 0 || device >= LMS_GROUP_DEVICES)
        return 0;
    int g = entry(device);
    if (g < 0)
        return 0;
    uint64_t all = atomic_load_explicit(&hdr->charged[g], memory_order_relaxed);
    uint64_t own = atomic_load_explicit(&s->charged[g], memory_order_relaxed);
    return all > own ? all - own : 0;
}

void lms_group_fork_child(void)
{
    /* The parent's slot lock belongs to its open file description, which
     * this copy of the descriptor and the copy of the mapping both hold:
     * dropped here, the parent alone holds it again (its slot stays its
     * own, and comes back if it dies before this child). The child maps
     * the file anew, with its own open(), when it joins. */
    if (hdr)
        munmap(hdr, LMS_GROUP_FILE_BYTES);
    if (fd_is_ours())
        close(fd);
    hdr = NULL;
    fd = -1;
    mapped_path[0] = 0;
    me = NULL;
    my_index = -1;
    atomic_store(&lms_group_on, false);
    pthread_mutex_init(&local, NULL);
    atomic_store(&next_sweep_ns, 0);
    for (int d = 0; d < LMS_MAX_DEVICES; d++) {
        atomic_store(&entry_of[d], 0);   /* found again once this child is a member */
        int asking = 1;                  /* a key the forking thread was asking for: asked again */
        atomic_compare_exchange_strong(&keys[d].state, &asking, 0);
    }
}
