/*
 * group_helpers.h — what the shared-budget test programs (group_test,
 * breakers_group_test, group_uuid_test, breakers_uuid_test) share: the
 * group file as the test maps and locks it (its entries by GPU UUID), its
 * invariant, member processes (the program again, `PROGRAM member KIND
 * ARG`, started in a group of this test's directory), a fresh group
 * directory per case, a fetching member's launches, the members every
 * program has (holding memory per device, checking what cuMemGetInfo
 * shows, the whole budget free), and the main that runs a member or a
 * case.
 *
 * The including file defines GROUP_DIR_TEMPLATE (a mkdtemp template under
 * /tmp) before including this header.
 */
#ifndef TEST_GROUP_HELPERS_H
#define TEST_GROUP_HELPERS_H

#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "groupfile.h"
#include "simgpu.h"

static char self[4096];     /* this program */
static char dir[64];        /* the group directory of this case */

/* ---- the group file, as the test reads it ---- */

/* Maps group `name` of this case's directory when its file is there and
 * set up (a member killed while making it leaves one that is not: the
 * next member to open it sets it up again), else NULL; the mapping stays
 * for the life of the process. */
static inline lms_group_header *try_map_group(const char *name)
{
    char path[256];
    CHECK(lms_groupfile_path(dir, name, path, sizeof path) == 0);
    int fd = open(path, O_RDWR);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size == LMS_GROUP_FILE_BYTES) {
        void *m = mmap(NULL, LMS_GROUP_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        CHECK(m != MAP_FAILED);
        if (lms_groupfile_check(m, LMS_GROUP_FILE_BYTES) == NULL)
            return m;
        munmap(m, LMS_GROUP_FILE_BYTES);
    } else if (fd >= 0) {
        close(fd);
    }
    return NULL;
}

/* Maps group `name` of this case's directory (waiting up to 5 s for it:
 * try_map_group). */
static inline lms_group_header *map_group(const char *name)
{
    for (int i = 0; i < 500; i++) {
        lms_group_header *h = try_map_group(name);
        if (h)
            return h;
        usleep(10000);
    }
    fprintf(stderr, "group %s never appeared in %s\n", name, dir);
    exit(1);
}

/* Whether entry g of the group is keyed by the GPU UUID `hex` (32 hex
 * digits, as the members print it). */
static inline bool entry_has_uuid(lms_group_header *h, int g, const char *hex)
{
    if (atomic_load(&h->gpu_kind[g]) != LMS_GPU_UUID)
        return false;
    char k[33];
    for (int i = 0; i < 16; i++)
        snprintf(k + 2 * i, 3, "%02x", h->gpu_key[g][i]);
    return strcmp(k, hex) == 0;
}

/* Live slots (their members may be dead, not yet reclaimed). */
static inline int live_slots(lms_group_header *h)
{
    int n = 0;
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        n += atomic_load(&lms_groupfile_slot(h, i)->state) == LMS_SLOT_LIVE;
    return n;
}

/* The live slot of process `pid`, or NULL. */
static inline lms_group_slot *slot_of(lms_group_header *h, pid_t pid)
{
    for (int i = 0; i < LMS_GROUP_SLOTS; i++) {
        lms_group_slot *s = lms_groupfile_slot(h, i);
        if (atomic_load(&s->state) == LMS_SLOT_LIVE && s->pid == pid)
            return s;
    }
    return NULL;
}

/* The group's lock, taken as a member does (the slots are the truth after
 * a dead owner); fails if it cannot be had within 5 s (a wedged group). */
static inline void lock_group(lms_group_header *h)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    int r = pthread_mutex_timedlock(&h->lock, &until);
    if (r == EOWNERDEAD) {
        for (int d = 0; d < LMS_GROUP_DEVICES; d++) {
            uint64_t sum = 0;
            for (int i = 0; i < LMS_GROUP_SLOTS; i++)
                sum += atomic_load(&lms_groupfile_slot(h, i)->charged[d]);
            atomic_store(&h->charged[d], sum);
        }
        r = pthread_mutex_consistent(&h->lock);
    }
    CHECK_EQ_U(r, 0);
}

/* The budget invariant, group-wide, under the group's lock: the charge is
 * within the budget and is the sum of the members' charges. */
static inline void check_invariant(lms_group_header *h)
{
    lock_group(h);
    uint64_t sum = 0, charged = atomic_load(&h->charged[0]), budget = atomic_load(&h->budget[0]);
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        sum += atomic_load(&lms_groupfile_slot(h, i)->charged[0]);
    pthread_mutex_unlock(&h->lock);
    if (sum != charged || (budget && charged > budget)) {
        fprintf(stderr, "group invariant broken: charged %llu, slots %llu, budget %llu\n",
                (unsigned long long)charged, (unsigned long long)sum, (unsigned long long)budget);
        exit(1);
    }
}

/* ---- members ---- */

/* In a child: becomes `PROGRAM member kind arg` in group `group` with
 * budget `limit` (none when NULL); its stderr goes to `err` when given. */
static inline void member_exec(const char *group, const char *limit, const char *kind, const char *arg,
                               const char *err)
{
    setenv("LMS_GROUP", group, 1);
    setenv("LMS_GROUP_DIR", dir, 1);
    if (limit)
        setenv("LMS_LIMIT", limit, 1);
    else
        unsetenv("LMS_LIMIT");
    bool lms = strcmp(kind, "fetcher") == 0;   /* managed chunks, fetched by the residency engine */
    setenv("LMS_THRESHOLD", lms ? "16M" : "1T", 1);   /* else the LMS rule out of the way: the budget decides */
    setenv("LMS_FRAC", lms ? "0" : "1", 1);
    setenv("LMS_POLICY", "lru", 1);
    setenv("GROUP_TEST_DIR", dir, 1);
    if (err) {
        int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(126);
        close(fd);
    }
    execl(self, self, "member", kind, arg ? arg : "", (char *)NULL);
    _exit(127);
}

/* Starts a member process (see member_exec) and answers its pid. */
static inline pid_t spawn(const char *group, const char *limit, const char *kind, const char *arg, const char *err)
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        member_exec(group, limit, kind, arg, err);
    return pid;
}

/* Waits for a member; checks it exited with 0. */
static inline void reap(pid_t pid)
{
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "member %d ended with status 0x%x\n", (int)pid, st);
        exit(1);
    }
}

/* Starts a member (see member_exec; CUDA_VISIBLE_DEVICES=cvd in it unless
 * cvd is NULL) with fd 3 the pipe it writes a byte to when ready (*ready
 * gets the read end) and fd 4 the pipe whose closing lets it go (*release
 * gets the write end; with release NULL it is closed at once, and the
 * member never waits). Both pipes are close-on-exec, so that no other
 * member holds their ends. Does not wait; the caller closes its ends. */
static inline pid_t launch_member(const char *group, const char *limit, const char *cvd, const char *kind,
                                  const char *arg, const char *err, int *ready, int *release)
{
    int r[2], go[2];
    CHECK(pipe2(r, O_CLOEXEC) == 0 && pipe2(go, O_CLOEXEC) == 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(r[1], 3);
        dup2(go[0], 4);
        fcntl(3, F_SETFD, 0);   /* kept across exec even when dup2 found the pipe at 3 or 4 already */
        fcntl(4, F_SETFD, 0);
        if (cvd)
            setenv("CUDA_VISIBLE_DEVICES", cvd, 1);
        member_exec(group, limit, kind, arg, err);
    }
    close(r[1]);
    close(go[0]);
    *ready = r[0];
    if (release)
        *release = go[1];
    else
        close(go[1]);
    return pid;
}

/* Waits for a launched member's ready byte and closes `ready`; fails,
 * with the member's status, when it ended before it was ready. */
static inline void wait_ready(int ready, pid_t pid)
{
    char c;
    if (read(ready, &c, 1) != 1) {
        int st = 0;
        waitpid(pid, &st, 0);
        fprintf(stderr, "member %d ended before it was ready (status 0x%x)\n", (int)pid, st);
        CHECK(!"member ready");
    }
    close(ready);
}

/* launch_member (stderr as this process's) and wait_ready: the member is
 * ready when this returns; closing *release (when not NULL) lets it go on. */
static inline pid_t start_member(const char *group, const char *limit, const char *cvd, const char *kind,
                                 const char *arg, int *release)
{
    int ready;
    pid_t pid = launch_member(group, limit, cvd, kind, arg, NULL, &ready, release);
    wait_ready(ready, pid);
    return pid;
}

/* The GPU-identity tests' members, in a group of budget 256M seeing the
 * devices of CUDA_VISIBLE_DEVICES=cvd: start_member, and a run to the
 * member's end (it must exit with 0). */
static inline pid_t start_visible(const char *group, const char *cvd, const char *kind, const char *arg,
                                  int *release)
{
    return start_member(group, "256M", cvd, kind, arg, release);
}
static inline void run_visible(const char *group, const char *cvd, const char *kind, const char *arg)
{
    setenv("CUDA_VISIBLE_DEVICES", cvd, 1);
    reap(spawn(group, "256M", kind, arg, NULL));
    unsetenv("CUDA_VISIBLE_DEVICES");
}

/* Runs `cmd` through the shell (a line writing to `out`); on failure shows
 * `out` and fails with `what`. */
static inline void expect(const char *cmd, const char *out, const char *what)
{
    if (system(cmd) == 0)
        return;
    char show[512];
    snprintf(show, sizeof show, "cat '%s' >&2", out);
    CHECK(system(show) == 0);
    fprintf(stderr, "expected: %s\n", what);
    exit(1);
}

/* In a member: waits until fd 4 (the test's release pipe) is closed. */
static inline void wait_release(void)
{
    char c;
    while (read(4, &c, 1) > 0)
        ;
}

/* In a member, before a fork: waits until the publisher thread lmshim
 * started when this process joined its group has published (at once if it
 * holds no slot). That thread allocates as it starts, and
 * AddressSanitizer's allocator is not fork-safe: a child forked meanwhile
 * can inherit a lock that nobody holds (one hung at its exit, in the leak
 * check, and kept the test's output open until meson's timeout). */
static inline void wait_published(void)
{
    lms_group_header *h = map_group(getenv("LMS_GROUP"));
    lms_group_slot *s = slot_of(h, getpid());
    for (int i = 0; s && i < 500 && atomic_load(&s->published_ns) == 0; i++)
        usleep(10000);
    CHECK(!s || atomic_load(&s->published_ns) != 0);
}

/* ---- members' pieces ---- */

/* Parses "A,B,..." (MiB per visible ordinal) into bytes in out[], at most
 * max of them; answers how many. */
static inline int mib_list(const char *arg, uint64_t *out, int max)
{
    int n = 0;
    for (const char *s = arg; *s && n < max; n++) {
        out[n] = (uint64_t)atoi(s) * MiB;
        const char *c = strchr(s, ',');
        if (!c)
            return n + 1;
        s = c + 1;
    }
    return n;
}

/* In a member: holds size[d] bytes on visible device d for d < n (none
 * when 0), on the device itself (within the group's budget), touching the
 * devices in order; says so on fd 3, waits for fd 4 to close, frees. */
static inline void hold_per_device(const uint64_t *size, int n)
{
    CUdeviceptr p[16] = {0};
    CHECK(n <= 16);
    for (int d = 0; d < n; d++) {
        if (!size[d])
            continue;
        primary_context(d);
        OK(cuMemAlloc(&p[d], size[d]));
        CHECK(is_managed(p[d]) == 0);
    }
    CHECK(write(3, "r", 1) == 1);
    wait_release();
    for (int d = 0; d < n; d++)
        if (p[d]) {
            primary_context(d);
            OK(cuMemFree(p[d]));
        }
}

/* In a member, on visible device d (its primary context made current):
 * cuMemGetInfo says `total` bytes of which `used` are used (by the other
 * members), and all the rest can be had on the device, after which none
 * is free. Answers that allocation; the caller frees it. */
static inline CUdeviceptr sees_on_device(int d, uint64_t total, uint64_t used)
{
    primary_context(d);
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t, total);
    CHECK_EQ_U(f, total - used);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, f));
    CHECK(is_managed(p) == 0);
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, 0);
    return p;
}

/* The member "full_budget": the whole budget, `arg` MiB, is free on device
 * 0 and can be had there (dead members' charges have come back). */
static inline void member_full_budget(const char *arg)
{
    OK(cuMemFree(sees_on_device(0, (uint64_t)atoi(arg) * MiB, 0)));
}

/* touch2(a, b, bytes): the kernel of fetching members; reads both ranges. */
static inline void touch2(simgpu_launch *l, void **p)
{
    l->access(l, *(CUdeviceptr *)p[0], *(size_t *)p[2], SIMGPU_READ);
    l->access(l, *(CUdeviceptr *)p[1], *(size_t *)p[2], SIMGPU_READ);
}

/* In a member: allocates c[0..4), managed chunks of 32 MiB (the LMS rule
 * sends them off the device), says so on fd 3, and launches f (touch2) on
 * two of them at a time, `pause_us` apart, until fd 4 closes; then waits
 * for the launches. The caller frees the chunks. */
static inline void fetch_until_released(CUfunction f, unsigned pause_us, CUdeviceptr c[4])
{
    size_t bytes = 32 * MiB;
    for (int i = 0; i < 4; i++) {
        OK(cuMemAlloc(&c[i], bytes));
        CHECK(is_managed(c[i]) == 1);
    }
    int fl = fcntl(4, F_GETFL);
    CHECK(fcntl(4, F_SETFL, fl | O_NONBLOCK) == 0);
    CHECK(write(3, "r", 1) == 1);
    for (int n = 0;; n++) {
        void *args[] = {&c[n % 4], &c[(n + 1) % 4], &bytes};
        OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
        char ch;
        if (n % 16 == 0 && read(4, &ch, 1) == 0)
            break;   /* fd 4 closed */
        usleep(pause_us);
    }
    OK(cuCtxSynchronize());
}

/* A step of the xorshift64 generator on state *s (never 0). */
static inline uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ---- cases ---- */

/* Removes this case's group directory (at exit). */
static inline void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* A fresh group directory for this case, removed at exit. */
static inline void fresh_dir(void)
{
    snprintf(dir, sizeof dir, "%s", GROUP_DIR_TEMPLATE);
    CHECK(mkdtemp(dir) != NULL);
    atexit(cleanup);
}

/* A kind of member process and the function it runs with its argument. */
typedef struct member_kind {
    const char *kind;
    void (*fn)(const char *);
} member_kind;

/* The main of a group test program: `PROGRAM member KIND ARG` runs the
 * member of that kind (2 when unknown), anything else the named case. */
static inline int group_main(int argc, char **argv, const member_kind *members, size_t nmembers,
                             const test_case *cases, size_t ncases)
{
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    self[n] = 0;
    if (argc >= 3 && strcmp(argv[1], "member") == 0) {
        snprintf(dir, sizeof dir, "%s", getenv("GROUP_TEST_DIR"));
        for (size_t i = 0; i < nmembers; i++)
            if (strcmp(members[i].kind, argv[2]) == 0) {
                members[i].fn(argc > 3 ? argv[3] : "");
                return 0;
            }
        return 2;
    }
    return run_case(cases, ncases, argc, argv);
}

#endif
