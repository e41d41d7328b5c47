/*
 * group_file.c — opening a group's file (see group_file.h): creating it,
 * checking who owns it and which layout it has, setting up one its creator
 * left half-made, and putting a fresh file in place of an abandoned one of
 * another lmshim layout (docs/ARCHITECTURE.md, "Groups"). Runs inside the
 * program, once per process at its first use of the group.
 */
#include "group_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "options.h"

uint64_t lms_group_clock_ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Fills a fresh header and empties every slot (under the file's flock,
 * before `ready`; a creator that died half-way may have left anything). */
static bool init_header(lms_group_header *h, const char *name)
{
    memset(h, 0, LMS_GROUP_FILE_BYTES);
    h->version = LMS_GROUP_VERSION;
    h->slots = LMS_GROUP_SLOTS;
    h->file_bytes = LMS_GROUP_FILE_BYTES;
    h->slot_bytes = LMS_GROUP_SLOT_BYTES;
    h->lock_bytes = sizeof(pthread_mutex_t);
    snprintf(h->name, sizeof h->name, "%s", name);
    h->created_ns = lms_group_clock_ns(CLOCK_REALTIME);
    pthread_mutexattr_t at;
    bool ok = pthread_mutexattr_init(&at) == 0 &&
              pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED) == 0 &&
              pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST) == 0 && pthread_mutex_init(&h->lock, &at) == 0;
    pthread_mutexattr_destroy(&at);
    if (!ok)
        return false;
    h->magic = LMS_GROUP_MAGIC;
    atomic_store_explicit(&h->ready, 1, memory_order_release);
    return true;
}

/* True if this process may take part in a group file with this owner and
 * mode. Its own file, yes. Another user's only when that user shared it on
 * purpose: writable by its Unix group, which this process is in; or
 * writable by every user when LMS_GROUP_MODE here says so too. Anyone can
 * plant a file in /dev/shm: a stranger's file would set the budget, or
 * hold the lock for ever. */
static bool trusted(const struct stat *st)
{
    if (st->st_uid == geteuid())
        return true;
    if (st->st_mode & S_IWOTH)
        return (lms_opt.group_mode & S_IWOTH) != 0;
    if (!(st->st_mode & S_IWGRP))
        return false;
    if (st->st_gid == getegid())
        return true;
    gid_t groups[256];
    int n = getgroups(256, groups);
    for (int i = 0; i < n; i++)
        if (groups[i] == st->st_gid)
            return true;
    return false;
}

/* Whether the file open as f (stat st) is an lmshim group file of another
 * layout: its magic is lmshim's, its size, version or layout not this
 * lmshim's (a file left by an older or newer lmshim). */
static bool other_layout(int f, const struct stat *st)
{
    lms_group_header h;
    memset(&h, 0, sizeof h);
    size_t want = (uint64_t)st->st_size < sizeof h ? (size_t)st->st_size : sizeof h;
    if (want < sizeof h.magic || pread(f, &h, want, 0) != (ssize_t)want || h.magic != LMS_GROUP_MAGIC)
        return false;
    const char *w = lms_groupfile_check(&h, (uint64_t)st->st_size);
    return w && (strcmp(w, "wrong size") == 0 || strcmp(w, "wrong version") == 0 || strcmp(w, "wrong layout") == 0);
}

/* Whether no process holds a lock on any byte of the file open as f: every
 * member, of this layout or an older one, holds an OFD write lock on its
 * slot for as long as it lives. */
static bool abandoned(int f)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    return fcntl(f, F_OFD_GETLK, &fl) == 0 && fl.l_type == F_UNLCK;
}

/* Whether path still names the file whose stat is st (it was not replaced
 * between this process's open and its flock). */
static bool still_named(const char *path, const struct stat *st)
{
    struct stat now;
    return lstat(path, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino;
}

/* Makes a fresh group file of this layout for group `name` and gives it
 * the name tmp, in directory dir: unnamed (O_TMPFILE) while it is sized
 * and set up, so that a process killed meanwhile leaves nothing behind,
 * then linked under tmp; or, when `unnamed` is false, created under tmp
 * at once. 0 when done, else the error (an errno value); then nothing is
 * left under tmp by this call (a file already there is not touched). */
static int make_fresh(const char *dir, const char *tmp, const char *name, bool unnamed)
{
    unsigned mode = lms_opt.group_mode;
    int f = unnamed ? open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode)
                    : open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (f < 0)
        return errno;
    bool named = !unnamed;
    int err = fchmod(f, mode) == 0 ? posix_fallocate(f, 0, LMS_GROUP_FILE_BYTES) : errno;
    if (err == 0) {
        void *m = mmap(NULL, LMS_GROUP_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
        if (m == MAP_FAILED) {
            err = errno;
        } else {
            err = init_header(m, name) ? 0 : ENOTRECOVERABLE;
            munmap(m, LMS_GROUP_FILE_BYTES);
        }
    }
    if (err == 0 && unnamed) {
        char self_fd[32];
        snprintf(self_fd, sizeof self_fd, "/proc/self/fd/%d", f);
        if (linkat(AT_FDCWD, self_fd, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0)
            named = true;
        else
            err = errno;
    }
    if (err != 0 && named)
        unlink(tmp);
    close(f);
    return err;
}

/* Puts a fresh group file of this layout at path, in place of an abandoned
 * one of another layout: made under a hidden name in the same directory
 * (no group's name starts with a dot) and renamed over it, so that a
 * process still mapping the old file keeps that file to itself. The file
 * has that name only once it is set up (make_fresh); where the directory
 * cannot hold unnamed files (or /proc is missing) it is made under the
 * name. 0 when done, else the error (an errno value); nothing is left
 * behind when not. */
static int fresh_file(const char *path, const char *name)
{
    char tmp[LMS_GROUP_PATH_MAX + 48], dir[LMS_GROUP_PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash || snprintf(tmp, sizeof tmp, "%.*s/.%s.%d.%llu", (int)(slash - path), path, slash + 1,
                           (int)getpid(), (unsigned long long)lms_group_clock_ns(CLOCK_MONOTONIC)) >= (int)sizeof tmp)
        return ENAMETOOLONG;
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int err = make_fresh(dir, tmp, name, true);
    if (err != 0 && err != EEXIST)
        err = make_fresh(dir, tmp, name, false);
    if (err == 0 && rename(tmp, path) != 0) {
        err = errno;
        unlink(tmp);
    }
    return err;
}

/* Writes what the file open as f (stat st), of another layout, is into
 * out (len bytes): "version N", or its size when it is too short to hold
 * a version. */
static void old_layout_name(int f, const struct stat *st, char *out, size_t len)
{
    uint32_t v;
    if (pread(f, &v, sizeof v, offsetof(lms_group_header, version)) == (ssize_t)sizeof v)
        snprintf(out, len, "version %u", (unsigned)v);
    else
        snprintf(out, len, "%lld bytes, too short for a version", (long long)st->st_size);
}

/* Whether the mapped header h, not `ready`, is one that this lmshim's
 * creator left half-made — no magic yet, or the magic after every field
 * of this layout (init_header writes them first) — in a file no process
 * holds a lock on (open as f): only such a file is set up again in place.
 * A file of another layout does not keep `ready` where this one does, and
 * its members may be using it. */
static bool half_made(int f, const lms_group_header *h)
{
    bool ours = h->magic == 0 ||
                (h->magic == LMS_GROUP_MAGIC && h->version == LMS_GROUP_VERSION && h->slots == LMS_GROUP_SLOTS &&
                 h->file_bytes == LMS_GROUP_FILE_BYTES && h->slot_bytes == LMS_GROUP_SLOT_BYTES &&
                 h->lock_bytes == sizeof(pthread_mutex_t));
    return ours && abandoned(f);
}

#define FLOCK_WAIT_NS 5000000000ull   /* the longest an opener waits for the file's flock, 5 s */

/* Takes the flock of the file open as f, waiting until `until`
 * (CLOCK_MONOTONIC, ns) at most: its holder sets the file up in far less,
 * but may be stopped (a job stopped with ^Z, a debugger) or a stranger's
 * process, and the program's first CUDA call must not wait for ever. 0,
 * or an errno value (EWOULDBLOCK: the time is up). */
static int lock_file(int f, uint64_t until)
{
    long pause_ns = 100000;   /* 0.1 ms, doubling up to 10 ms */
    for (;;) {
        if (flock(f, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return errno;
        if (lms_group_clock_ns(CLOCK_MONOTONIC) >= until)
            return EWOULDBLOCK;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = pause_ns};
        nanosleep(&ts, NULL);
        pause_ns = pause_ns < 10000000 ? pause_ns * 2 : 10000000;
    }
}

lms_group_header *lms_group_map_file(const char *path, const char *name, int *out_fd, const char **why)
{
    uint64_t until = lms_group_clock_ns(CLOCK_MONOTONIC) + FLOCK_WAIT_NS;
    for (int tries = 0;; tries++) {
        unsigned mode = lms_opt.group_mode;
        int f = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (f >= 0)
            fchmod(f, mode);   /* exactly LMS_GROUP_MODE, whatever the umask */
        else if (errno == EEXIST)
            f = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (f < 0) {
            *why = strerror(errno);
            return NULL;
        }
        int r = lock_file(f, until);
        struct stat st;
        bool again = false;
        lms_group_header *h = NULL;
        *why = NULL;
        if (r == EWOULDBLOCK) {
            close(f);
            *why = "another process has held its lock (flock) for 5 s";
            return NULL;
        } else if (r != 0 || fstat(f, &st) != 0) {
            *why = strerror(r ? r : errno);
        } else if (!S_ISREG(st.st_mode)) {
            *why = "not a regular file";
        } else if (!trusted(&st)) {
            *why = "another user's file that is not shared with this user's groups (share a group between users "
                   "with LMS_GROUP_MODE=0660 and a common group id)";
        } else if (!still_named(path, &st)) {
            again = tries < 8;   /* renamed over while this process waited for the flock */
            *why = "replaced while it was opened, again and again";
        } else if (st.st_size != 0 && st.st_uid == geteuid() && other_layout(f, &st) && abandoned(f)) {
            char old[64];
            old_layout_name(f, &st, old, sizeof old);
            int err = fresh_file(path, name);
            if (err == 0) {
                lms_log(LMS_LEVEL_INFO, "group %s: %s was of another lmshim layout (%s) and no process used it: "
                        "replaced by a fresh one (version %u)", name, path, old, (unsigned)LMS_GROUP_VERSION);
                again = tries < 8;
                *why = "replaced while it was opened, again and again";
            } else {
                static char said[200];
                snprintf(said, sizeof said, "a file of another lmshim layout (%s) that no process uses; "
                         "replacing it failed: %s", old, strerror(err));
                *why = said;
            }
        } else if (st.st_size != 0 && (uint64_t)st.st_size != LMS_GROUP_FILE_BYTES) {
            *why = "wrong size";
        } else if ((r = posix_fallocate(f, 0, LMS_GROUP_FILE_BYTES)) != 0) {
            *why = strerror(r);   /* every page now, not at a first write to the mapping (SIGBUS on a full tmpfs) */
        }
        if (!*why) {
            void *m = mmap(NULL, LMS_GROUP_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
            if (m == MAP_FAILED) {
                *why = strerror(errno);
            } else {
                h = m;
                /* Not ready under the flock: its creator died before the end
                 * (before or after writing the magic, the last field but
                 * `ready`). Another program's file keeps its own magic;
                 * another layout's, or one in use, is left as it is. */
                if (atomic_load(&h->ready) == 0 && half_made(f, h) && !init_header(h, name))
                    *why = "cannot set up its lock";
                else if (!*why)
                    *why = lms_groupfile_check(h, LMS_GROUP_FILE_BYTES);
                if (*why && h->magic == LMS_GROUP_MAGIC && h->version != LMS_GROUP_VERSION) {
                    /* Another lmshim's layout (version 1 matched devices by
                     * ordinal), still in use or another user's: never read
                     * further than the version. */
                    static char said[200];
                    snprintf(said, sizeof said, "wrong version: its layout is version %u, this lmshim's is %u; %s",
                             (unsigned)h->version, (unsigned)LMS_GROUP_VERSION,
                             abandoned(f) ? "another user's file that no process uses (its owner's next process "
                                            "replaces it)"
                                          : "a process of that lmshim still uses it (its owner's next process "
                                            "replaces it once none does)");
                    *why = said;
                }
                if (!*why && strcmp(h->name, name) != 0)
                    *why = "it belongs to another group";
                if (*why) {
                    munmap(m, LMS_GROUP_FILE_BYTES);
                    h = NULL;
                }
            }
        }
        flock(f, LOCK_UN);
        if (!h) {
            close(f);
            if (again)
                continue;
            return NULL;
        }
        *out_fd = f;
        return h;
    }
}

