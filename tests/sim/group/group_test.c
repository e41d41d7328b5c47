/*
 * group_test.c — shared budgets (LMS_GROUP) over the simulated GPU. Each
 * case starts member processes (this program again, `group_test member
 * KIND`, with liblmshim.so preloaded) in a group whose file lives in a
 * fresh directory (LMS_GROUP_DIR), and reads the group file itself
 * (src/common/groupfile.h) to check the group's accounting. Every member
 * process has its own simulated device (SIMGPU_MEM is large), so what is
 * checked is lmshim's accounting: the group's charge never passes the
 * budget, and comes back to zero when the members are gone, however they go.
 */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
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

#define GROUP_DIR_TEMPLATE "/tmp/lmshim-group-test-XXXXXX"
#include "group_helpers.h"

/* ---- members ---- */

/* Allocates and frees at random for `arg` seconds, checking after every
 * operation its own charge in its slot, what cuMemGetInfo says and the
 * group-wide invariant; ends with everything freed and a charge of 0. */
static void member_random(const char *arg)
{
    primary_context(0);
    size_t f, total;
    OK(cuMemGetInfo(&f, &total));   /* lmshim starts at its first hook, and joins */
    lms_group_header *h = map_group(getenv("LMS_GROUP"));
    double seconds = atof(arg);
    uint64_t seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull | 1;
    enum { HELD = 24 };
    CUdeviceptr p[HELD] = {0};
    uint64_t charge[HELD] = {0}, mine = 0, ops = 0, fallbacks = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    lms_group_slot *s = NULL;
    do {
        int i = (int)(xorshift(&seed) % HELD);
        if (p[i]) {
            OK(cuMemFree(p[i]));
            mine -= charge[i];
            p[i] = 0;
        } else {
            /* 2 MiB pages (charged as asked) or 4 KiB (one 512 B granule
             * multiple): the charge of each is known exactly. */
            uint64_t size = xorshift(&seed) % 4 == 0 ? 4096 : (1 + xorshift(&seed) % 8) * 2 * MiB;
            OK(cuMemAlloc(&p[i], size));
            charge[i] = is_managed(p[i]) ? 0 : size;   /* managed: the group was full */
            fallbacks += charge[i] == 0;
            mine += charge[i];
        }
        if (!s)
            s = slot_of(h, getpid());
        CHECK(s != NULL);
        CHECK_EQ_U(atomic_load(&s->charged[0]), mine);
        OK(cuMemGetInfo(&f, &total));
        CHECK_EQ_U(total, atomic_load(&h->budget[0]));
        CHECK(f <= total && total - f >= mine);   /* the group's usage includes this member's */
        check_invariant(h);
        ops++;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 < seconds);
    for (int i = 0; i < HELD; i++)
        if (p[i])
            OK(cuMemFree(p[i]));
    CHECK_EQ_U(atomic_load(&s->charged[0]), 0);
    check_invariant(h);
    printf("member %d: %llu operations, %llu placed off the device (group full)\n", (int)getpid(),
           (unsigned long long)ops, (unsigned long long)fallbacks);
}

/* Allocates `arg` MiB on the device (and, for "N,M", M MiB more that must
 * fall back to managed memory), says so on fd 3, waits for fd 4 to close,
 * then frees and leaves. */
static void member_hold(const char *arg)
{
    primary_context(0);
    CUdeviceptr p = 0, q = 0;
    uint64_t size = (uint64_t)atoi(arg) * MiB;
    if (size) {
        OK(cuMemAlloc(&p, size));
        CHECK(is_managed(p) == 0);
    }
    if (strchr(arg, ',')) {
        OK(cuMemAlloc(&q, (uint64_t)atoi(strchr(arg, ',') + 1) * MiB));
        CHECK(is_managed(q) == 1);
    }
    CHECK(write(3, "r", 1) == 1);
    wait_release();
    if (p)
        OK(cuMemFree(p));
    if (q)
        OK(cuMemFree(q));
}

/* Holds `arg` MiB, then dies as if killed in the middle of a charge: it
 * takes the group's lock, adds to the group's total as a charge does first,
 * and is killed before its slot and the unlock. */
static void member_die_charging(const char *arg)
{
    primary_context(0);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, (uint64_t)atoi(arg) * MiB));
    CHECK(is_managed(p) == 0);
    lms_group_header *h = map_group(getenv("LMS_GROUP"));
    CHECK(pthread_mutex_lock(&h->lock) == 0);
    atomic_fetch_add(&h->charged[0], 64 * MiB);
    raise(SIGKILL);
}

/* Holds 100 MiB and closes its descriptors of the group file (as a
 * daemonizing program may): that must not end its membership. Then, once
 * fd 4 closes, its slot has been taken from it behind its back (as a peer
 * compacting slots would): it must never write to that slot again, and
 * keeps its own budget. */
static void member_close_fds(const char *arg)
{
    (void)arg;
    primary_context(0);
    CUdeviceptr p, q;
    OK(cuMemAlloc(&p, 100 * MiB));
    CHECK(is_managed(p) == 0);
    char link[64], target[512];
    for (int fd = 5; fd < 1024; fd++) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0 && (target[n] = 0, strstr(target, "lmshim-group-")))
            close(fd);
    }
    CHECK(write(3, "r", 1) == 1);
    wait_release();
    lms_group_header *h = map_group(getenv("LMS_GROUP"));
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    OK(cuMemFree(p));
    OK(cuMemAlloc(&q, 200 * MiB));                  /* its own 256 MiB budget now */
    CHECK(is_managed(q) == 0);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(live_slots(h), 0);
    OK(cuMemFree(q));
}

/* Holds 40 MiB, starts a fork child that holds 8 MiB as its own member
 * (and waits for fd 4 to close), and is killed once the child is in. */
static void member_fork_then_die(const char *arg)
{
    (void)arg;
    primary_context(0);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 40 * MiB));
    int in[2];
    CHECK(pipe(in) == 0);
    wait_published();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        CUdeviceptr q;
        OK(cuMemAlloc(&q, 8 * MiB));
        CHECK(write(in[1], "r", 1) == 1);
        wait_release();
        OK(cuMemFree(q));
        exit(0);
    }
    char c;
    CHECK(read(in[0], &c, 1) == 1);
    CHECK(write(3, "r", 1) == 1);
    raise(SIGKILL);
}

/* Four managed chunks of 32 MiB (the LMS rule sends them off the device)
 * used two at a time by launches until fd 4 closes: the residency engine
 * fetches and evicts them within what the group leaves. */
static void member_fetcher(const char *arg)
{
    (void)arg;
    primary_context(0);
    CUfunction f = sim_function(&(simgpu_kernel){"touch2", touch2, 3, {8, 8, 8}});
    CUdeviceptr c[4];
    fetch_until_released(f, 1000, c);
    for (int i = 0; i < 4; i++)
        OK(cuMemFree(c[i]));
}

/* Four threads allocating and freeing small and 2 MiB chunks as fast as they
 * can, until killed. */
static void *hammer_thread(void *arg)
{
    uint64_t seed = (uintptr_t)arg * 7919 + 1;
    CUcontext ctx = primary_context(0);
    (void)ctx;
    for (;;) {
        CUdeviceptr p;
        uint64_t size = xorshift(&seed) % 2 ? 4096 : 2 * MiB;
        if (cuMemAlloc(&p, size) == CUDA_SUCCESS)
            cuMemFree(p);
    }
    return NULL;
}

static void member_hammer(const char *arg)
{
    (void)arg;
    primary_context(0);
    CUdeviceptr keep;
    OK(cuMemAlloc(&keep, 32 * MiB));
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, hammer_thread, (void *)i) == 0);
    CHECK(write(3, "r", 1) == 1);
    for (;;)
        pause();
}

/* Finds the group empty (nothing held by anyone), holds
 * 8 MiB and sees it in cuMemGetInfo, then leaves without freeing: by exit
 * ("exit") or by _exit, which runs no exit handler ("_exit"). */
static void member_short(const char *arg)
{
    primary_context(0);
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, t);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 8 * MiB));
    CHECK(is_managed(p) == 0);
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, t - 8 * MiB);
    fflush(NULL);
    if (strcmp(arg, "_exit") == 0)
        _exit(0);
    exit(0);
}

/* Checks cuMemGetInfo: total `arg` MiB, of which what others hold is used
 * (the byte count after the comma, in MiB). */
static void member_sees(const char *arg)
{
    uint64_t total = (uint64_t)atoi(arg) * MiB, used = (uint64_t)atoi(strchr(arg, ',') + 1) * MiB;
    OK(cuMemFree(sees_on_device(0, total, used)));
}

/* ---- cases ---- */

/* Starts a `hold` member and waits until it holds its bytes; *release is
 * the pipe end whose closing lets it go. */
static pid_t start_holder(const char *group, const char *limit, const char *mib, int *release)
{
    return start_member(group, limit, NULL, "hold", mib, release);
}

/* (1) Eight members allocating and freeing at random in one 256 MiB group
 * (GROUP_TEST_SECONDS, default 10 s) end at exactly zero; the invariant is
 * checked by every member after every operation and by this process
 * meanwhile. */
static void eight_random(void)
{
    fresh_dir();
    const char *secs = getenv("GROUP_TEST_SECONDS") ? getenv("GROUP_TEST_SECONDS") : "10";
    pid_t pid[8];
    for (int i = 0; i < 8; i++)
        pid[i] = spawn("eight", "256M", "random", secs, NULL);
    lms_group_header *h = map_group("eight");
    int alive = 8;
    uint64_t checks = 0;
    while (alive > 0) {
        check_invariant(h);
        checks++;
        usleep(1000);
        int st;
        pid_t w;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "member %d ended with status 0x%x\n", (int)w, st);
                exit(1);
            }
            alive--;
        }
    }
    (void)pid;
    check_invariant(h);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(live_slots(h), 0);
    CHECK_EQ_U(atomic_load(&h->budget[0]), 256 * MiB);
    CHECK(atomic_load(&h->peak[0]) > 128 * MiB && atomic_load(&h->peak[0]) <= 256 * MiB);
    printf("eight members: peak %llu of 256 MiB, %llu checks from outside\n",
           (unsigned long long)atomic_load(&h->peak[0]), (unsigned long long)checks);
}

/* (2) A member killed with SIGKILL holding the group's lock in the middle
 * of a charge, and one killed at random while four threads charge: the next
 * member that looks gives their charges back and has the whole budget. */
static void sigkill_reclaimed(void)
{
    fresh_dir();
    int release;
    pid_t holder = start_holder("killed", "256M", "16", &release);
    pid_t pid = spawn("killed", "256M", "die_charging", "100", NULL);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    lms_group_header *h = map_group("killed");
    CHECK_EQ_U(atomic_load(&h->charged[0]), (16 + 100 + 64) * MiB);   /* the dead one's charge, and half a charge */
    /* The next member: what is left of the budget is what the holder holds. */
    reap(spawn("killed", "256M", "sees", "256,16", NULL));
    CHECK(atomic_load(&h->repairs) >= 1);
    CHECK(atomic_load(&h->reclaimed_members) >= 1);
    close(release);
    reap(holder);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    /* Killed at random moments while charging from four threads. */
    srand((unsigned)getpid());
    for (int k = 0; k < 6; k++) {
        pid = start_member("killed", "256M", NULL, "hammer", "", NULL);
        usleep((useconds_t)(20000 + rand() % 100000));
        kill(pid, SIGKILL);
        CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st));
        check_invariant(h);
        CHECK(atomic_load(&h->charged[0]) >= 32 * MiB);   /* its 32 MiB at least, until someone looks */
    }
    reap(spawn("killed", "256M", "full_budget", "256", NULL));
    check_invariant(h);
    /* A member that closes its descriptors of the group file stays one;
     * one whose slot is taken from it never writes to it again. */
    int go;
    pid = start_member("killed", "256M", NULL, "close_fds", "", &go);
    reap(spawn("killed", "256M", "sees", "256,100", NULL));
    lock_group(h);
    for (int i = 0; i < LMS_GROUP_SLOTS; i++) {
        lms_group_slot *s = lms_groupfile_slot(h, i);
        if (atomic_load(&s->state) == LMS_SLOT_LIVE && s->pid == pid) {
            atomic_fetch_sub(&h->charged[0], atomic_exchange(&s->charged[0], 0));
            atomic_store(&s->state, LMS_SLOT_FREE);
        }
    }
    pthread_mutex_unlock(&h->lock);
    close(go);
    reap(pid);
    check_invariant(h);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    /* A member killed while its fork child (a member of its own) lives on:
     * the parent's charge comes back, the child's stays. */
    pid = start_member("killed", "256M", NULL, "fork_then_die", "", &go);
    CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st));
    reap(spawn("killed", "256M", "sees", "256,8", NULL));
    close(go);   /* the orphaned child frees and exits */
    for (int i = 0; i < 500 && atomic_load(&h->charged[0]) != 0; i++)
        usleep(10000);
    check_invariant(h);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(live_slots(h), 0);
    printf("reclaimed %llu members, %llu bytes; %llu lock repairs\n",
           (unsigned long long)atomic_load(&h->reclaimed_members),
           (unsigned long long)atomic_load(&h->reclaimed_bytes), (unsigned long long)atomic_load(&h->repairs));
}

/* (3) 1,000 short-lived members one after the other (GROUP_TEST_MEMBERS),
 * fork children of a member holding 32 MiB: each joins as its own member (its own slot, the
 * parent's charge stays the parent's), sees the group's usage in
 * cuMemGetInfo, and goes away by freeing, by exit without freeing, or by
 * _exit (no exit handler at all). The group ends at exactly zero. */
static void member_sequential(const char *arg)
{
    (void)arg;
    primary_context(0);
    CUdeviceptr keep;
    OK(cuMemAlloc(&keep, 32 * MiB));
    lms_group_header *h = map_group("seq");
    lms_group_slot *parent = slot_of(h, getpid());
    CHECK(parent != NULL);
    wait_published();
    int n = getenv("GROUP_TEST_MEMBERS") ? atoi(getenv("GROUP_TEST_MEMBERS")) : 1000;
    for (int i = 0; i < n; i++) {
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            CUdeviceptr p;
            size_t f, t;
            int bad = cuMemAlloc(&p, 8 * MiB) != CUDA_SUCCESS || is_managed(p);
            lms_group_slot *s = slot_of(h, getpid());
            bad |= (s == NULL || s == parent || atomic_load(&s->charged[0]) != 8 * MiB) << 1;
            bad |= (atomic_load(&parent->charged[0]) != 32 * MiB) << 2;
            bad |= (cuMemGetInfo(&f, &t) != CUDA_SUCCESS || t != 128 * MiB || f != 88 * MiB) << 3;
            if (i % 3 == 0)
                bad |= (cuMemFree(p) != CUDA_SUCCESS) << 4;
            if (i % 3 == 2)
                _exit(bad);   /* no exit handlers: the slot is reclaimed by the next one */
            exit(bad);
        }
        reap(pid);
    }
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t, 128 * MiB);
    CHECK_EQ_U(f, 96 * MiB);
    OK(cuMemFree(keep));
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, 128 * MiB);
    check_invariant(h);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(live_slots(h), 1);   /* this process */
    CHECK(atomic_load(&h->reclaimed_members) >= (uint64_t)n / 3 - 1);
}

static void thousand_sequential(void)
{
    fresh_dir();
    reap(spawn("seq", "128M", "sequential", "", NULL));
    /* Then processes of their own, one after the other, each alone in the
     * group: each finds it empty, whether the last one left by exit or
     * by _exit (its slot then reclaimed by the next). */
    for (int i = 0; i < 60; i++)
        reap(spawn("seq", "128M", "short", i % 2 ? "exit" : "_exit", NULL));
    lms_group_header *h = map_group("seq");
    reap(spawn("seq", "128M", "full_budget", "128", NULL));
    check_invariant(h);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(live_slots(h), 0);
}

/* (4) Two groups in one directory do not see each other; a member asking
 * for another budget than its group's gets the group's and one line. */
static void two_groups_isolated(void)
{
    fresh_dir();
    int release_a;
    pid_t a = start_holder("alpha", "256M", "200", &release_a);
    reap(spawn("beta", "128M", "sees", "128,0", NULL));
    lms_group_header *ha = map_group("alpha"), *hb = map_group("beta");
    CHECK_EQ_U(atomic_load(&ha->charged[0]), 200 * MiB);
    CHECK_EQ_U(atomic_load(&hb->charged[0]), 0);
    CHECK_EQ_U(atomic_load(&hb->budget[0]), 128 * MiB);
    /* Another budget asked in alpha: alpha's, with one warning. */
    char err[128];
    snprintf(err, sizeof err, "%s/err", dir);
    reap(spawn("alpha", "512M", "sees", "256,200", err));
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test $(grep -c \"group alpha: device 0 has the group's budget\" %s) = 1", err);
    CHECK(system(cmd) == 0);
    close(release_a);
    reap(a);
    CHECK_EQ_U(atomic_load(&ha->charged[0]), 0);
}

/* In a child about to become another user: exits 77 if that user cannot
 * run this program (a build tree under a private home directory). */
static void other_user_can_run(void)
{
    if (access(self, X_OK) != 0)
        _exit(77);
}

/* Runs a member that must keep its own 64 MiB budget after one line of
 * stderr containing `why`, as `uid` when not -1; false if that user cannot
 * run this program. */
static bool check_refused(const char *why, uid_t uid)
{
    char err[128], cmd[512];
    snprintf(err, sizeof err, "/tmp/lmshim-group-refused-%d", (int)getpid());
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (uid != (uid_t)-1) {
            if (setuid(uid) != 0)
                _exit(125);
            other_user_can_run();
        }
        member_exec("solo", "64M", "full_budget", "64", err);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    if (WEXITSTATUS(st) == 77) {
        unlink(err);
        return false;
    }
    CHECK_EQ_U(WEXITSTATUS(st), 0);
    snprintf(cmd, sizeof cmd,
             "test $(grep -c group %s) = 1 && grep -q 'group solo: cannot use .*%s.*keeps its own budget' %s", err, why,
             err);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "cat %s >&2", err);
        CHECK(system(cmd) == 0);
        CHECK(!"one line saying why, and its own budget");
    }
    unlink(err);
    return true;
}

/* (5) A group file that cannot be opened, or is not a group file: one line,
 * and the process keeps its own budget (checked by the member: total 64 MiB,
 * the whole of it on the device, then nothing left). */
static void unreadable_file(void)
{
    fresh_dir();
    char path[256];
    CHECK(lms_groupfile_path(dir, "solo", path, sizeof path) == 0);
    /* Created by its owner with mode 0600; another user cannot open it. */
    reap(spawn("solo", "32M", "full_budget", "32", NULL));
    struct passwd *nobody = getpwnam("nobody");
    uid_t other = nobody ? nobody->pw_uid : 65534;
    if (geteuid() == 0) {
        CHECK(chmod(dir, 0755) == 0);
        if (!check_refused("Permission denied", other)) {
            printf("user %d cannot run %s: a directory in the group file's place instead\n", (int)other, self);
            CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0);
            check_refused("Is a directory", (uid_t)-1);
            CHECK(rmdir(path) == 0);
            reap(spawn("solo", "32M", "full_budget", "32", NULL));
        }
    } else {
        CHECK(chmod(path, 0) == 0);
        check_refused("Permission denied", (uid_t)-1);
    }
    /* Wrong magic, wrong size, wrong version (a file of a future version
     * still in use: one that no process uses is replaced). */
    static char junk[LMS_GROUP_FILE_BYTES];
    memset(junk, 0xab, sizeof junk);
    struct {
        size_t size;
        const char *why;
    } bad[] = {{sizeof junk, "wrong magic"}, {100, "wrong size"}, {0, "wrong version"}};
    for (int i = 0; i < 3; i++) {
        unlink(path);
        int held = -1;
        if (bad[i].size) {
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            CHECK(fd >= 0 && write(fd, junk, bad[i].size) == (ssize_t)bad[i].size);
            close(fd);
        } else {   /* a good file of a future version */
            reap(spawn("solo", "32M", "full_budget", "32", NULL));
            lms_group_header *h = map_group("solo");
            h->version = LMS_GROUP_VERSION + 1;
            munmap(h, LMS_GROUP_FILE_BYTES);
            held = open(path, O_RDWR);   /* a live member of that version: its slot lock */
            struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(0),
                               .l_len = 1};
            CHECK(held >= 0 && fcntl(held, F_OFD_SETLK, &fl) == 0);
        }
        check_refused(bad[i].why, (uid_t)-1);
        if (held >= 0)
            close(held);
    }
}

static const member_kind members[] = {
    {"random", member_random}, {"hold", member_hold}, {"die_charging", member_die_charging},
    {"hammer", member_hammer}, {"full_budget", member_full_budget}, {"sees", member_sees},
    {"sequential", member_sequential}, {"close_fds", member_close_fds},
    {"fork_then_die", member_fork_then_die}, {"fetcher", member_fetcher}, {"short", member_short},
};

/* (6) `lmshim top`: a member's pid, command, device and off-device bytes,
 * in JSON and in text, and the group's budget and usage. */
static void top_view(void)
{
    fresh_dir();
    int release;
    pid_t holder = start_holder("watch", "128M", "100,64", &release);
    const char *cli = getenv("LMSHIM_CLI");
    CHECK(cli != NULL);
    char out[128], cmd[1024];
    snprintf(out, sizeof out, "%s/top.json", dir);
    snprintf(cmd, sizeof cmd, "'%s' top watch --dir '%s' --once --json > '%s'", cli, dir, out);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd,
             "grep -q '\"devices\":\\[{\"entry\":0,\"budget\":134217728,\"used\":104857600' '%s' && "
             "grep -q '\"command\":\"group_test\",\"alive\":true,\"devices\":\\[{\"entry\":0,"
             "\"charged\":104857600,\"device_bytes\":104857600,\"resident\":0,\"off_device\":67108864,' '%s'",
             out, out);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", out);
        CHECK(system(cmd) == 0);
        CHECK(!"top --json shows the group and its member");
    }
    /* Text: every group of the directory, the member's row. */
    snprintf(cmd, sizeof cmd, "'%s' top --dir '%s' --once > '%s'", cli, dir, out);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "grep -Eq '^GPU-[0-9a-f]{8}: budget 128M  used 100M \\(78%%\\)' '%s' && "
             "grep -Eq '^  [0-9]+ +group_test +GPU-[0-9a-f]{8} +100M +0 +64M ' '%s'", out, out);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", out);
        CHECK(system(cmd) == 0);
        CHECK(!"top shows the group and its member");
    }
    close(release);
    reap(holder);
    /* A member whose residency engine fetches and evicts, next to one
     * holding half the budget: the engine stays within what the group
     * leaves it, and top shows its rates. */
    holder = start_holder("watch", "128M", "64", &release);
    int go;
    pid_t fetcher = start_member("watch", "128M", NULL, "fetcher", "", &go);
    lms_group_header *h = map_group("watch");
    for (int i = 0; i < 300; i++) {   /* 0.3 s of launches, the invariant checked meanwhile */
        check_invariant(h);
        usleep(1000);
    }
    snprintf(cmd, sizeof cmd, "'%s' top watch --dir '%s' --once --json > '%s'", cli, dir, out);
    CHECK(system(cmd) == 0);
    check_invariant(h);
    snprintf(cmd, sizeof cmd,
             "grep -Eq '\"charged\":[1-9][0-9]*,\"device_bytes\":0,\"resident\":[1-9][0-9]*,"
             "\"off_device\":[1-9][0-9]*,\"fetched_per_s\":[1-9][0-9]*,\"evicted_per_s\":[1-9]' '%s'", out);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", out);
        CHECK(system(cmd) == 0);
        CHECK(!"top --json shows the fetching member's resident bytes and rates");
    }
    close(go);
    reap(fetcher);
    close(release);
    reap(holder);
    check_invariant(h);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
}

/* (7) Modes: a new group file is 0600 whatever the umask; with
 * LMS_GROUP_MODE=0660 it is 0660, and (as root, where another user can be
 * had) a member of the file's Unix group who is not its owner joins it and
 * sees the owner's usage. */
static void file_modes(void)
{
    fresh_dir();
    CHECK(chmod(dir, 0755) == 0);
    umask(0);
    reap(spawn("private", "64M", "full_budget", "64", NULL));
    char path[256];
    struct stat st;
    CHECK(lms_groupfile_path(dir, "private", path, sizeof path) == 0 && stat(path, &st) == 0);
    CHECK_EQ_U(st.st_mode & 0777, 0600);
    umask(077);
    setenv("LMS_GROUP_MODE", "0660", 1);
    int release;
    pid_t holder = start_holder("shared", "256M", "100", &release);
    unsetenv("LMS_GROUP_MODE");
    CHECK(lms_groupfile_path(dir, "shared", path, sizeof path) == 0 && stat(path, &st) == 0);
    CHECK_EQ_U(st.st_mode & 0777, 0660);
    if (geteuid() == 0) {
        struct passwd *nobody = getpwnam("nobody");
        uid_t uid = nobody ? nobody->pw_uid : 65534;
        gid_t gid = nobody ? nobody->pw_gid : 65534;
        CHECK(chown(path, 0, gid) == 0);
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
                _exit(125);
            other_user_can_run();
            member_exec("shared", "256M", "sees", "256,100", NULL);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
        if (WEXITSTATUS(st) == 77)
            printf("user %d cannot run %s: joining as another user not checked\n", (int)uid, self);
        else
            CHECK_EQ_U(WEXITSTATUS(st), 0);
    }
    close(release);
    reap(holder);
    lms_group_header *h = map_group("shared");
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(atomic_load(&h->reclaimed_members), 0);   /* both left by themselves */
}

static const test_case cases[] = {
    {"eight_random", eight_random},
    {"sigkill_reclaimed", sigkill_reclaimed},
    {"thousand_sequential", thousand_sequential},
    {"two_groups_isolated", two_groups_isolated},
    {"unreadable_file", unreadable_file},
    {"top_view", top_view},
    {"file_modes", file_modes},
};

int main(int argc, char **argv)
{
    return group_main(argc, argv, members, sizeof members / sizeof members[0], cases, sizeof cases / sizeof cases[0]);
}
