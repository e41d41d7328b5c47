/*
 * breakers_group_test.c — shared budgets (LMS_GROUP) attacked from outside:
 * a member that closes the group file's descriptor and reuses its number, a
 * group file left half-created by a killed creator, a full slot table, a
 * member that execs or spawns another member, files and links planted at
 * the group's path, and `lmshim top` on hostile member names and special
 * files. Members are this program again (`breakers_group_test member KIND
 * ARG`) with liblmshim.so preloaded; each case uses a fresh directory.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "groupfile.h"
#include "lmshim.h"
#include "simgpu.h"

extern char **environ;

#define GROUP_DIR_TEMPLATE "/tmp/lmshim-breakers-XXXXXX"
#include "../group/group_helpers.h"

/* ---- members ---- */

/* Holds `arg` MiB on the device, says so on fd 3, frees once released. */
static void member_hold(const char *arg)
{
    primary_context(0);
    CUdeviceptr p = 0;
    uint64_t size = (uint64_t)atoi(arg) * MiB;
    if (size) {
        OK(cuMemAlloc(&p, size));
        CHECK(is_managed(p) == 0);
    }
    CHECK(write(3, "r", 1) == 1);
    wait_release();
    if (p)
        OK(cuMemFree(p));
}

/* cuMemGetInfo says total `arg` MiB of which the MiB after the comma are
 * used by others. */
static void member_sees(const char *arg)
{
    primary_context(0);
    uint64_t total = (uint64_t)atoi(arg) * MiB, used = (uint64_t)atoi(strchr(arg, ',') + 1) * MiB;
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t, total);
    CHECK_EQ_U(f, total - used);
}

/* Holds 10 MiB, closes its descriptor of the group file as a careless
 * program may, and opens files until one gets the same number; then reads
 * the group's usage several times (each may sweep for dead members), and
 * forks (the child leaves the group and closes what lmshim opened). */
static void member_fd_reuse(const char *arg)
{
    (void)arg;
    primary_context(0);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 10 * MiB));
    char link[64], target[512];
    int closed = -1;
    for (int fd = 3; fd < 1024; fd++) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0 && (target[n] = 0, strstr(target, "lmshim-group-"))) {
            close(fd);
            closed = fd;
        }
    }
    CHECK(closed >= 0);
    char other[128];
    snprintf(other, sizeof other, "%s/unrelated", dir);
    int got = -1;
    for (int i = 0; i < 64 && got != closed; i++)
        CHECK((got = open(other, O_RDWR | O_CREAT, 0600)) >= 0);
    CHECK_EQ_U(got, closed);
    size_t f, t;
    for (int i = 0; i < 5; i++) {
        usleep(15000);
        OK(cuMemGetInfo(&f, &t));
    }
    CHECK_EQ_U(t, 256 * MiB);
    CHECK_EQ_U(f, (256 - 100 - 10) * MiB);   /* the holder's 100 MiB and its own 10 */
    /* A fork child leaves the group: it must not close the program's file. */
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(fcntl(got, F_GETFD) == -1 ? 3 : 0);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    OK(cuMemFree(p));
}

/* Renames itself (comm) to a hostile name, then holds 1 MiB. */
static void member_named(const char *arg)
{
    (void)arg;
    CHECK(prctl(PR_SET_NAME, "q\"b\\c\xff\xfe\x1b[2J\t", 0, 0, 0) == 0);
    member_hold("1");
}

/* Holds 30 MiB, then execs into a `hold 20` member (fds 3 and 4 go on). */
static void member_exec_hold(const char *arg)
{
    (void)arg;
    primary_context(0);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 30 * MiB));
    CHECK(is_managed(p) == 0);
    execl(self, self, "member", "hold", "20", (char *)NULL);
    _exit(127);
}

/* Holds 30 MiB and posix_spawns a `hold 20` member (which has fds 3 and 4);
 * waits for it. */
static void member_spawner(const char *arg)
{
    (void)arg;
    primary_context(0);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 30 * MiB));
    CHECK(is_managed(p) == 0);
    pid_t pid;
    char *argv[] = {self, "member", "hold", "20", NULL};
    CHECK(posix_spawn(&pid, self, NULL, NULL, argv, environ) == 0);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    OK(cuMemFree(p));
}

/* One thread of a churning member: allocates and frees 1-8 MiB at random
 * and reads the group's usage, for ever. */
static void *churn_thread(void *arg)
{
    CUcontext ctx = arg;
    OK(cuCtxSetCurrent(ctx));
    uint64_t seed = ((uint64_t)getpid() << 20 ^ (uint64_t)pthread_self()) | 1;
    CUdeviceptr p[8] = {0};
    for (;;) {
        int i = (int)(xorshift(&seed) % 8);
        if (p[i]) {
            OK(cuMemFree(p[i]));
            p[i] = 0;
        } else {
            OK(cuMemAlloc(&p[i], (1 + xorshift(&seed) % 8) * MiB));
        }
        size_t f, t;
        OK(cuMemGetInfo(&f, &t));
        CHECK(t == 256 * MiB && f <= t);
    }
    return NULL;
}

/* Churns with two threads and forks children (members of their own that
 * allocate, free and leave) while they do; until killed. */
static void member_churn(const char *arg)
{
    (void)arg;
    CUcontext ctx = primary_context(0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, churn_thread, ctx) == 0);
    for (;;) {
        usleep(20000);
#ifdef __SANITIZE_ADDRESS__
        continue;   /* AddressSanitizer's allocator is not fork-safe: a child can hang in malloc */
#endif
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            CUcontext c = primary_context(0);
            (void)c;
            CUdeviceptr p;
            OK(cuMemAlloc(&p, 2 * MiB));
            OK(cuMemFree(p));
            _exit(0);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
}

/* The process's first hooked call (cuInit): lmshim initialises there (and
 * joins the group, waiting for the group's lock, which the test holds). */
static void *first_call(void *arg)
{
    (void)arg;
    primary_context(0);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 4 * MiB));
    OK(cuMemFree(p));
    return NULL;
}

/* Forks while another thread is inside lmshim's initialisation (joining
 * the group): the child, a member of its own, must not inherit the
 * initialisation's locks. alarm() turns a deadlock into a failure. */
static void member_fork_in_init(const char *arg)
{
    (void)arg;
    alarm(8);
    pthread_t t;   /* no hooked call on this thread before the fork */
    CHECK(pthread_create(&t, NULL, first_call, NULL) == 0);
    usleep(300000);   /* that thread waits for the group's lock by now */
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(8);
        primary_context(0);
        CUdeviceptr p;
        OK(cuMemAlloc(&p, 2 * MiB));
        OK(cuMemFree(p));
        _exit(0);
    }
    CHECK(write(3, "r", 1) == 1);
    wait_release();
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "the fork child ended with status 0x%x\n", st);
        exit(1);
    }
    CHECK(pthread_join(t, NULL) == 0);
}

/* Four managed chunks of 32 MiB used two at a time by launches until fd 4
 * closes: its residency engine fetches and evicts within what the group
 * leaves; it never counts a budget violation. */
static void member_fetcher(const char *arg)
{
    (void)arg;
    primary_context(0);
    simgpu_kernel k = {"touch2", touch2, 3, {8, 8, 8}};
    OK(simgpu_register_kernel(&k));
    CUmodule m;
    CUfunction f;
    OK(cuModuleLoadData(&m, "x"));
    OK(cuModuleGetFunction(&f, m, "touch2"));
    CUdeviceptr c[4];
    fetch_until_released(f, 500, c);
    CHECK_EQ_U(stats(0).budget_violations, 0);
    for (int i = 0; i < 4; i++)
        OK(cuMemFree(c[i]));
}

/* Fills what the group leaves with 4 MiB device chunks (up to the first
 * that falls back to managed memory), frees them, again, until fd 4
 * closes. */
static void member_edge(const char *arg)
{
    (void)arg;
    primary_context(0);
    int fl = fcntl(4, F_GETFL);
    CHECK(fcntl(4, F_SETFL, fl | O_NONBLOCK) == 0);
    CHECK(write(3, "r", 1) == 1);
    CUdeviceptr p[64];
    char ch;
    while (read(4, &ch, 1) != 0) {
        int n = 0;
        while (n < 64) {
            OK(cuMemAlloc(&p[n], 4 * MiB));
            n++;
            if (is_managed(p[n - 1]))
                break;
        }
        usleep(2000);
        for (int i = 0; i < n; i++)
            OK(cuMemFree(p[i]));
    }
    CHECK_EQ_U(stats(0).budget_violations, 0);
}

/* Sets its device up outside the group (the test keeps every slot taken:
 * its own budget `arg`... MiB), says so on fd 3; once fd 4 closes (a slot
 * is free by then) forks a child, which joins the group and must get the
 * group's budget of 256 MiB, not the budget it inherited. */
static void member_fork_joins(const char *arg)
{
    primary_context(0);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 1 * MiB));
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t, (uint64_t)atoi(arg) * MiB);
    CHECK(write(3, "r", 1) == 1);
    wait_release();
    wait_published();
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        CUdeviceptr q;
        OK(cuMemAlloc(&q, 200 * MiB));   /* the holder has 100 of the group's 256 MiB */
        CHECK(is_managed(q) == 1);
        OK(cuMemGetInfo(&f, &t));
        CHECK_EQ_U(t, 256 * MiB);
        OK(cuMemFree(q));
        exit(0);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    OK(cuMemFree(p));
}

static void exit_now(int sig)
{
    (void)sig;
    exit(0);   /* not async-signal-safe, and common: a SIGTERM handler that exits */
}

/* Exits from a signal handler (SIGUSR1) that may interrupt a charge:
 * allocates and frees 4 KiB as fast as it can until then. */
static void member_exit_on_signal(const char *arg)
{
    (void)arg;
    primary_context(0);
    struct sigaction sa = {.sa_handler = exit_now};
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(write(3, "r", 1) == 1);
    for (;;) {
        CUdeviceptr p;
        OK(cuMemAlloc(&p, 4096));
        OK(cuMemFree(p));
    }
}

/* On device 1 (of two): 50 MiB of a group budget of 256 MiB there. */
static void member_dev1(const char *arg)
{
    (void)arg;
    primary_context(1);
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 50 * MiB));
    CHECK(is_managed(p) == 0);
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t, 256 * MiB);
    CHECK_EQ_U(f, 206 * MiB);
    OK(cuMemFree(p));
}

static const member_kind members[] = {
    {"hold", member_hold}, {"full_budget", member_full_budget}, {"sees", member_sees},
    {"fd_reuse", member_fd_reuse}, {"named", member_named}, {"exec_hold", member_exec_hold},
    {"spawner", member_spawner}, {"churn", member_churn},
    {"fork_in_init", member_fork_in_init}, {"fetcher", member_fetcher}, {"edge", member_edge},
    {"fork_joins", member_fork_joins}, {"dev1", member_dev1}, {"exit_on_signal", member_exit_on_signal},
};

/* ---- cases ---- */

/* Runs a `full_budget 64` member of group `group` (budget 64 MiB): it must
 * keep its own budget, after exactly one line about the group matching the
 * extended regex `why`. */
static void refused(const char *group, const char *why)
{
    char err[256], cmd[1024];
    snprintf(err, sizeof err, "%s.err", dir);
    reap(spawn(group, "64M", "full_budget", "64", err));
    snprintf(cmd, sizeof cmd, "test $(grep -ci group %s) = 1 && grep -Eq '%s' %s", err, why, err);
    expect(cmd, err, why);
    unlink(err);
}

/* A member that closes the group file's descriptor and opens another file
 * under the same number must not take that file for the group file: its
 * sweeps would find every other member "dead" there and reclaim the slot
 * and charge of a live one. */
static void fd_reused(void)
{
    fresh_dir();
    int release;
    pid_t holder = start_member("g", "256M", NULL, "hold", "100", &release);
    reap(spawn("g", "256M", "fd_reuse", "", NULL));
    lms_group_header *h = map_group("g");
    lms_group_slot *s = slot_of(h, holder);
    CHECK(s != NULL);
    CHECK_EQ_U(atomic_load(&s->charged[0]), 100 * MiB);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 100 * MiB);
    CHECK_EQ_U(atomic_load(&h->reclaimed_members), 0);
    close(release);
    reap(holder);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(live_slots(h), 0);
}

/* Writes a group file of the right size holding `header` bytes of `h`. */
static void write_file(const char *path, const lms_group_header *h)
{
    static char zeros[LMS_GROUP_FILE_BYTES];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(write(fd, zeros, sizeof zeros) == (ssize_t)sizeof zeros);
    CHECK(pwrite(fd, h, sizeof *h, 0) == (ssize_t)sizeof *h);
    close(fd);
}

/* A creator killed while writing the header (under the file's flock, before
 * `ready`) leaves a file that is neither zeros nor ready: the next opener
 * must set it up, not refuse the group for ever. */
static void half_created(void)
{
    fresh_dir();
    char path[256], err[256], cmd[1024];
    CHECK(lms_groupfile_path(dir, "half", path, sizeof path) == 0);
    snprintf(err, sizeof err, "%s.err", dir);
    static lms_group_header h;
    for (int stage = 0; stage < 2; stage++) {
        memset(&h, 0, sizeof h);
        h.version = LMS_GROUP_VERSION;   /* stage 0: killed after the first field */
        if (stage == 1) {                /* stage 1: killed after the magic, before `ready` */
            h.slots = LMS_GROUP_SLOTS;
            h.file_bytes = LMS_GROUP_FILE_BYTES;
            h.slot_bytes = LMS_GROUP_SLOT_BYTES;
            h.lock_bytes = sizeof(pthread_mutex_t);
            snprintf(h.name, sizeof h.name, "half");
            h.magic = LMS_GROUP_MAGIC;
        }
        write_file(path, &h);
        reap(spawn("half", "64M", "full_budget", "64", err));
        snprintf(cmd, sizeof cmd, "! grep -q 'cannot use' %s", err);
        expect(cmd, err, "the half-created group file set up again and joined");
        lms_group_header *m = map_group("half");
        CHECK_EQ_U(atomic_load(&m->budget[0]), 64 * MiB);
        CHECK_EQ_U(atomic_load(&m->peak[0]), 64 * MiB);
        CHECK_EQ_U(atomic_load(&m->charged[0]), 0);
        munmap(m, LMS_GROUP_FILE_BYTES);
        unlink(err);
    }
    /* A file of another program that happens to be all but zeros is not
     * ours to overwrite. */
    memset(&h, 0, sizeof h);
    h.magic = 0x1234;
    write_file(path, &h);
    refused("half", "cannot use .* \\(wrong magic\\)");
}

/* True if the n bytes at s are valid UTF-8 without control characters
 * other than the newlines at the end of lines. */
static bool clean_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        int more = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
        if (more < 0 || (c < 0x20 && c != '\n') || c == 0x7f || (more == 1 && c < 0xc2))
            return false;
        for (int k = 1; k <= more; k++)
            if (i + (size_t)k >= n || (s[i + k] & 0xc0) != 0x80)
                return false;
        i += 1 + (size_t)more;
    }
    return true;
}

/* Reads a whole file (up to 1 MiB) into a static buffer; its length in *n. */
static const unsigned char *slurp(const char *path, size_t *n)
{
    static unsigned char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    ssize_t r = read(fd, buf, sizeof buf - 1);
    CHECK(r >= 0);
    close(fd);
    buf[r] = 0;
    *n = (size_t)r;
    return buf;
}

/* `lmshim top` with a member whose name has quotes, backslashes, invalid
 * UTF-8 and terminal escapes, and a slot written by a foreign program whose
 * command has no terminating NUL: the JSON stays valid UTF-8 JSON and the
 * text view passes no control character to the terminal. */
static void top_hostile_names(void)
{
    fresh_dir();
    int release;
    pid_t named = start_member("hostile", "256M", NULL, "named", "", &release);
    lms_group_header *h = map_group("hostile");
    lms_group_slot *fake = lms_groupfile_slot(h, LMS_GROUP_SLOTS - 1);
    CHECK(atomic_load(&fake->state) == LMS_SLOT_FREE);
    fake->pid = 12345;
    memset(fake->command, 0xff, sizeof fake->command);
    for (int d = 0; d < LMS_GROUP_DEVICES; d++) {   /* no NUL byte for a long way after the command */
        atomic_store(&fake->device_bytes[d], 0x4141414141414141ull);
        atomic_store(&fake->resident_bytes[d], 0x4141414141414141ull);
        atomic_store(&fake->managed_bytes[d], 0x4141414141414141ull);
        atomic_store(&fake->fetched_bytes[d], 0x4141414141414141ull);
        atomic_store(&fake->evicted_bytes[d], 0x4141414141414141ull);
    }
    atomic_store(&fake->state, LMS_SLOT_LIVE);   /* no lock held: a dead member as top sees it */
    const char *cli = getenv("LMSHIM_CLI");
    CHECK(cli != NULL);
    char out[128], cmd[1024];
    snprintf(out, sizeof out, "%s/top.out", dir);
    for (int json = 1; json >= 0; json--) {
        snprintf(cmd, sizeof cmd, "'%s' top hostile --dir '%s' --once %s > '%s'", cli, dir, json ? "--json" : "", out);
        CHECK(system(cmd) == 0);
        size_t n;
        const unsigned char *text = slurp(out, &n);
        if (!clean_utf8(text, n)) {
            fwrite(text, 1, n, stderr);
            CHECK(!"top's output is valid UTF-8 without control characters");
        }
        if (json) {
            CHECK(strstr((const char *)text, "\"command\":\"q\\\"b\\\\c") != NULL);
            snprintf(cmd, sizeof cmd, "jq -e '.members | length == 2' '%s' > /dev/null", out);
            if (system("command -v jq > /dev/null") == 0)
                expect(cmd, out, "top --json is JSON with both members");
        }
        /* The foreign command is cut at its 47 bytes. */
        CHECK(strstr((const char *)text, "AAAA") == NULL);
    }
    atomic_store(&fake->state, LMS_SLOT_FREE);
    close(release);
    reap(named);
}

/* `lmshim top` on special files at group paths: a FIFO (opening it for
 * reading would wait for a writer for ever) named or found in the
 * directory, next to a good group; and a group file truncated while top
 * watches it (reading its mapping would be SIGBUS). */
static void top_special_files(void)
{
    fresh_dir();
    char path[256], out[128], cmd[1024];
    const char *cli = getenv("LMSHIM_CLI");
    CHECK(cli != NULL);
    snprintf(out, sizeof out, "%s/top.out", dir);
    CHECK(lms_groupfile_path(dir, "fifo", path, sizeof path) == 0);
    CHECK(mkfifo(path, 0600) == 0);
    snprintf(cmd, sizeof cmd, "timeout 10 '%s' top fifo --dir '%s' --once > '%s' 2>&1; test $? = 1", cli, dir, out);
    expect(cmd, out, "top refuses a FIFO at the group's path at once");
    reap(spawn("good", "64M", "full_budget", "64", NULL));
    snprintf(cmd, sizeof cmd, "timeout 10 '%s' top --dir '%s' --once --json > '%s' 2>/dev/null && grep -q '\"group\":\"good\"' '%s'",
             cli, dir, out, out);
    expect(cmd, out, "top shows the good group beside a FIFO");
    /* Truncated under a running top: it says so and ends (1: nothing left
     * to show) instead of dying of SIGBUS. */
    CHECK(lms_groupfile_path(dir, "good", path, sizeof path) == 0);
    snprintf(cmd, sizeof cmd, "timeout -s INT 4 '%s' top good --dir '%s' --json > '%s' 2>&1 & sleep 1.5; "
             ": > '%s'; wait $!; test $? = 1 && grep -q 'lmshim top: .*good: truncated' '%s'", cli, dir, out, path, out);
    expect(cmd, out, "top survives a truncated group file");
}

/* Takes every free slot of group `name` as a live fake member holding its
 * lock (one open() each, as members do); their descriptors in fds (-1 for
 * slots it did not take). Returns how many it took. */
static int fill_slots(lms_group_header *h, const char *name, int *fds)
{
    char path[256];
    CHECK(lms_groupfile_path(dir, name, path, sizeof path) == 0);
    int taken = 0;
    lock_group(h);
    for (int i = 0; i < LMS_GROUP_SLOTS; i++) {
        lms_group_slot *s = lms_groupfile_slot(h, i);
        fds[i] = -1;
        if (atomic_load(&s->state) == LMS_SLOT_LIVE)
            continue;
        fds[i] = open(path, O_RDWR | O_CLOEXEC);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(i), .l_len = 1};
        CHECK(fds[i] >= 0 && fcntl(fds[i], F_OFD_SETLK, &fl) == 0);
        s->pid = 1000000 + i;
        s->joined_ns = 1;
        snprintf(s->command, sizeof s->command, "fake");
        atomic_store(&s->state, LMS_SLOT_LIVE);
        taken++;
    }
    pthread_mutex_unlock(&h->lock);
    return taken;
}

/* A process that set its device up outside the group (all slots were
 * taken) forks a child that joins: the child charges the group against the
 * group's budget, not the bigger one it inherited, so the group's charge
 * never passes the budget. */
static void fork_child_budget(void)
{
    fresh_dir();
    int release, fork_release;
    pid_t holder = start_member("inherit", "256M", NULL, "hold", "100", &release);
    lms_group_header *h = map_group("inherit");
    int fds[LMS_GROUP_SLOTS];
    CHECK_EQ_U(fill_slots(h, "inherit", fds), LMS_GROUP_SLOTS - 1);
    pid_t pid = start_member("inherit", "512M", NULL, "fork_joins", "512", &fork_release);
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        if (fds[i] >= 0) {
            close(fds[i]);   /* one fake member gone: the child can join */
            fds[i] = -1;
            break;
        }
    close(fork_release);
    reap(pid);
    check_invariant(h);
    CHECK(atomic_load(&h->peak[0]) <= 256 * MiB);
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    close(release);
    reap(holder);
}

/* 64 live members (the test holds 63 slots' locks itself, as members do):
 * a 65th keeps its own budget after one line; once a slot's holder is gone,
 * the next member reclaims it and joins. */
static void slots_full(void)
{
    fresh_dir();
    int release;
    pid_t holder = start_member("full", "256M", NULL, "hold", "100", &release);
    lms_group_header *h = map_group("full");
    int fds[LMS_GROUP_SLOTS];
    CHECK_EQ_U(fill_slots(h, "full", fds), LMS_GROUP_SLOTS - 1);
    refused("full", "all 64 member slots .* are taken; this process keeps its own budget");
    CHECK_EQ_U(atomic_load(&h->charged[0]), 100 * MiB);
    CHECK_EQ_U(live_slots(h), LMS_GROUP_SLOTS);
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        if (fds[i] >= 0) {
            close(fds[i]);   /* the fake member is gone, its slot still in use */
            break;
        }
    reap(spawn("full", "256M", "sees", "256,100", NULL));
    CHECK_EQ_U(atomic_load(&h->reclaimed_members), 1);
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    close(release);
    reap(holder);
    reap(spawn("full", "256M", "full_budget", "256", NULL));
    CHECK_EQ_U(live_slots(h), 0);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
}

/* A member that execs another member program: the image before the exec
 * leaves (its charge goes, as its memory does), the new one joins; nothing
 * is counted twice. A member that posix_spawns one: both are members. */
static void exec_chain(void)
{
    fresh_dir();
    int release;
    pid_t pid = start_member("chain", "256M", NULL, "exec_hold", "", &release);
    lms_group_header *h = map_group("chain");
    CHECK_EQ_U(live_slots(h), 1);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 20 * MiB);
    lms_group_slot *s = slot_of(h, pid);
    CHECK(s != NULL && atomic_load(&s->charged[0]) == 20 * MiB);
    close(release);
    reap(pid);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    pid = start_member("chain", "256M", NULL, "spawner", "", &release);
    CHECK_EQ_U(live_slots(h), 2);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 50 * MiB);
    s = slot_of(h, pid);
    CHECK(s != NULL && atomic_load(&s->charged[0]) == 30 * MiB);
    close(release);
    reap(pid);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(live_slots(h), 0);
}

/* Things planted at or around the group's path: a symbolic link (never
 * followed: the file it points to stays as it was), a FIFO, a directory
 * that is missing, a file or relative, a group name with path characters.
 * Each: one line, and the process keeps its own budget. */
static void planted_paths(void)
{
    fresh_dir();
    char path[256], target[256], base[40];
    CHECK(lms_groupfile_path(dir, "planted", path, sizeof path) == 0);
    snprintf(target, sizeof target, "%s/precious", dir);
    int fd = open(target, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0 && write(fd, "precious", 8) == 8);
    close(fd);
    CHECK(symlink(target, path) == 0);
    refused("planted", "cannot use .*\\(Too many levels of symbolic links\\)");
    struct stat st;
    CHECK(stat(target, &st) == 0 && st.st_size == 8);
    unlink(path);
    CHECK(symlink("/nonexistent-lmshim-target", path) == 0);   /* dangling: O_CREAT would create its target */
    refused("planted", "cannot use .*\\(File exists|Too many levels of symbolic links\\)");
    CHECK(access("/nonexistent-lmshim-target", F_OK) != 0);
    unlink(path);
    CHECK(mkfifo(path, 0600) == 0);
    refused("planted", "cannot use .*\\(not a regular file\\)");
    unlink(path);
    CHECK(strlen(dir) < sizeof base);
    memcpy(base, dir, strlen(dir) + 1);
    snprintf(dir, sizeof dir, "%s/missing", base);
    refused("planted", "cannot use .*\\(No such file or directory\\)");
    snprintf(dir, sizeof dir, "%s/precious", base);
    refused("planted", "cannot use .*\\(Not a directory\\)");
    snprintf(dir, sizeof dir, "%s", base);
    refused("../planted", "LMS_GROUP");
    /* A relative directory names a different file in each working directory. */
    CHECK(chdir(base) == 0);
    snprintf(dir, sizeof dir, "relative");
    CHECK(mkdir(dir, 0700) == 0);
    refused("planted", "LMS_GROUP_DIR=relative is not an absolute path");
    CHECK(access("relative/lmshim-group-planted", F_OK) != 0);
    CHECK(chdir("/") == 0);
    snprintf(dir, sizeof dir, "%s", base);
}

/* Six churning members (two threads each, forking all the time) killed
 * with SIGKILL at random points for 4 s, some after a SIGSTOP (stopped
 * holding the lock, maybe): the group is never wedged nor inconsistent,
 * and once they are gone the next member has the whole budget. */
static void kill_storm(void)
{
    fresh_dir();
    CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);   /* the orphaned fork children come back here */
    enum { N = 6 };
    pid_t pid[N];
    for (int i = 0; i < N; i++)
        pid[i] = spawn("storm", "256M", "churn", "", NULL);
    lms_group_header *h = map_group("storm");
    uint64_t seed = 0x1234567 | (uint64_t)getpid() << 32, kills = 0, stopped = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        usleep((useconds_t)(10000 + xorshift(&seed) % 40000));
        int i = (int)(xorshift(&seed) % N);
        if (xorshift(&seed) % 3 == 0) {
            kill(pid[i], SIGSTOP);
            usleep(5000);
            stopped++;
        }
        kill(pid[i], SIGKILL);
        int st;
        CHECK(waitpid(pid[i], &st, 0) == pid[i]);
        if (!WIFSIGNALED(st)) {
            fprintf(stderr, "member %d ended with status 0x%x, not killed\n", (int)pid[i], st);
            exit(1);
        }
        kills++;
        pid[i] = spawn("storm", "256M", "churn", "", NULL);
        check_invariant(h);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < 4);
    for (int i = 0; i < N; i++)
        kill(pid[i], SIGKILL);
    /* The members and their orphaned fork children all end. */
    int st, waited = 0;
    pid_t w;
    while ((w = waitpid(-1, &st, WNOHANG)) >= 0 && waited < 10000) {
        if (w == 0) {
            usleep(1000);
            waited++;
        }
    }
    if (w >= 0) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "cat /proc/%d/task/*/children >&2", (int)getpid());
        fprintf(stderr, "fork children of members never ended:\n");
        CHECK(system(cmd) >= 0);
        exit(1);
    }
    check_invariant(h);
    reap(spawn("storm", "256M", "full_budget", "256", NULL));
    check_invariant(h);
    CHECK_EQ_U(live_slots(h), 0);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    printf("%llu members killed (%llu stopped first), %llu reclaimed, %llu lock repairs\n",
           (unsigned long long)kills, (unsigned long long)stopped,
           (unsigned long long)atomic_load(&h->reclaimed_members), (unsigned long long)atomic_load(&h->repairs));
}

/* A process forks while another of its threads is in lmshim's first call,
 * joining the group (held up here by the group's lock, which the test
 * holds for a while): both the process and the child end normally. */
static void fork_in_init(void)
{
    fresh_dir();
    reap(spawn("init", "256M", "full_budget", "256", NULL));   /* the group file exists */
    lms_group_header *h = map_group("init");
    lock_group(h);
    int release;
    pid_t pid = start_member("init", "256M", NULL, "fork_in_init", "", &release);
    usleep(300000);
    pthread_mutex_unlock(&h->lock);
    close(release);
    reap(pid);
    check_invariant(h);
    reap(spawn("init", "256M", "full_budget", "256", NULL));   /* the child's _exit leaves a dead slot */
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(live_slots(h), 0);
}

/* A group file planted by another user (anyone can write /dev/shm): one
 * writable by every user is refused unless LMS_GROUP_MODE here shares with
 * every user too; one shared with a Unix group this process is not in is
 * refused; this user's own file is used. Needs root (to be another user). */
static void foreign_owner(void)
{
    fresh_dir();
    if (geteuid() != 0) {
        printf("not root: a file of another user cannot be made here\n");
        fflush(stdout);
        _exit(77);   /* meson: skipped */
    }
    CHECK(chmod(dir, 01777) == 0);
    struct passwd *nobody = getpwnam("nobody");
    uid_t uid = nobody ? nobody->pw_uid : 65534;
    gid_t gid = nobody ? nobody->pw_gid : 65534;
    gid_t groups[256];
    int n = getgroups(256, groups);
    for (int i = 0; i < n; i++)
        if (groups[i] == gid || getegid() == gid) {
            printf("this process is in group %d: not checked\n", (int)gid);
            return;
        }
    reap(spawn("planted", "32M", "full_budget", "32", NULL));   /* a good group file, made by this user */
    char path[256];
    CHECK(lms_groupfile_path(dir, "planted", path, sizeof path) == 0);
    CHECK(chown(path, uid, gid) == 0 && chmod(path, 0666) == 0);   /* now the stranger's, writable by all */
    refused("planted", "cannot use .*another user.s file");
    setenv("LMS_GROUP_MODE", "0666", 1);   /* shared with every user on purpose */
    reap(spawn("planted", "32M", "full_budget", "32", NULL));
    unsetenv("LMS_GROUP_MODE");
    CHECK(chmod(path, 0660) == 0);   /* shared with a group this process is not in */
    refused("planted", "cannot use .*another user.s file");
    CHECK(chown(path, getuid(), gid) == 0);   /* this user's own again */
    reap(spawn("planted", "32M", "full_budget", "32", NULL));
}

/* The group file removed while a member runs (as systemd-logind's
 * RemoveIPC does in /dev/shm): the member says so once, since processes
 * starting now form a new group with a budget of its own. */
static void file_removed(void)
{
    fresh_dir();
    char err[256], path[256], cmd[1024];
    snprintf(err, sizeof err, "%s.err", dir);
    CHECK(lms_groupfile_path(dir, "gone", path, sizeof path) == 0);
    int release;
    int ready;
    pid_t pid = launch_member("gone", "256M", NULL, "hold", "100", err, &ready, &release);
    wait_ready(ready, pid);
    CHECK(unlink(path) == 0);
    usleep(700000);   /* the member looks four times a second */
    close(release);
    reap(pid);
    snprintf(cmd, sizeof cmd, "test $(grep -c 'was removed or replaced' %s) = 1", err);
    expect(cmd, err, "one line saying the group file was removed");
    unlink(err);
}

/* Three members whose residency engines fetch and evict managed chunks
 * (a working set of 64 MiB each) and one filling the rest of a 128 MiB
 * group with device memory again and again: the group's charge stays
 * within the budget and no member's engine counts a budget violation. */
static void residency_edge(void)
{
    fresh_dir();
    int release[4];
    pid_t pid[4];
    pid[0] = start_member("edge", "128M", NULL, "edge", "", &release[0]);
    for (int i = 1; i < 4; i++)
        pid[i] = start_member("edge", "128M", NULL, "fetcher", "", &release[i]);
    lms_group_header *h = map_group("edge");
    for (int i = 0; i < 1500; i++) {
        check_invariant(h);
        usleep(1000);
    }
    CHECK(atomic_load(&h->peak[0]) > 96 * MiB);
    for (int i = 0; i < 4; i++) {
        close(release[i]);
        reap(pid[i]);
    }
    check_invariant(h);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(live_slots(h), 0);
}

/* A member that exits from a signal handler, which may run while its
 * thread holds the group's lock in the middle of a charge: it must end
 * (not wait for ever for the lock its own thread holds), and the group
 * must come back to zero. 30 tries, the signal at random moments. */
static void exit_in_handler(void)
{
    fresh_dir();
    /* Under AddressSanitizer, the leak check at exit takes the allocator's
     * lock, which the handler may have interrupted (in malloc): the test's
     * own fault, not lmshim's, so no leak check in these members. */
    char asan[512];
    snprintf(asan, sizeof asan, "%s:detect_leaks=0", getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
    setenv("ASAN_OPTIONS", asan, 1);
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
    lms_group_header *h = NULL;
    for (int t = 0; t < 30; t++) {
        int release;
        pid_t pid = start_member("sig", "256M", NULL, "exit_on_signal", "", &release);
        if (!h)
            h = map_group("sig");
        usleep((useconds_t)(1000 + xorshift(&seed) % 5000));
        CHECK(kill(pid, SIGUSR1) == 0);
        int st = 0, waited = 0;
        pid_t w;
        while ((w = waitpid(pid, &st, WNOHANG)) == 0 && waited < 3000) {
            usleep(1000);
            waited++;
        }
        if (w == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fprintf(stderr, "try %d: the member never ended after exit() in its signal handler\n", t);
            exit(1);
        }
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        close(release);
    }
    reap(spawn("sig", "256M", "full_budget", "256", NULL));
    check_invariant(h);
    CHECK_EQ_U(live_slots(h), 0);
}

/* Members asking for other budgets, or none, or with two devices where
 * the others have one: each device's budget is the first one set; a
 * member that asked for another says so in exactly one line, one that
 * asked for none says nothing; a second device has its own budget. */
static void different_limits(void)
{
    fresh_dir();
    char err[256], cmd[1024];
    snprintf(err, sizeof err, "%s.err", dir);
    int release;
    pid_t holder = start_member("limits", "256M", NULL, "hold", "100", &release);
    lms_group_header *h = map_group("limits");
    reap(spawn("limits", "512M", "sees", "256,100", err));
    snprintf(cmd, sizeof cmd, "test $(grep -c 'group limits: device 0 has the group.s budget of 268435456 bytes, "
             "not the 536870912 asked here' %s) = 1 && test $(grep -c group %s) = 1", err, err);
    expect(cmd, err, "one line: the group's budget, not the one asked");
    reap(spawn("limits", "0.5", "sees", "256,100", err));   /* 8 GiB of the simulated 16 */
    snprintf(cmd, sizeof cmd, "grep -q 'not the 8589934592 asked here' %s", err);
    expect(cmd, err, "one line for a fraction too");
    reap(spawn("limits", NULL, "sees", "256,100", err));   /* no LMS_LIMIT: nothing asked, nothing said */
    snprintf(cmd, sizeof cmd, "! grep -q group %s", err);
    expect(cmd, err, "no line when no budget was asked");
    setenv("SIMGPU_DEVICES", "2", 1);
    reap(spawn("limits", "256M", "dev1", "", NULL));
    unsetenv("SIMGPU_DEVICES");
    CHECK_EQ_U(atomic_load(&h->budget[1]), 256 * MiB);
    CHECK_EQ_U(atomic_load(&h->peak[1]), 50 * MiB);
    CHECK_EQ_U(atomic_load(&h->charged[1]), 0);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 100 * MiB);
    CHECK_EQ_U(atomic_load(&h->budget[0]), 256 * MiB);
    close(release);
    reap(holder);
    unlink(err);
}

/* The group directory on a full tmpfs (a container's 64 MiB /dev/shm,
 * filled by data-loader workers): a file made with ftruncate has no pages,
 * and the first write to its mapping would kill the process with SIGBUS.
 * The member must say why in one line and keep its own budget. Needs a
 * mount namespace (root); skipped otherwise. */
static void shm_full(void)
{
    fresh_dir();
    char err[256], cmd[1024], fill[128];
    snprintf(err, sizeof err, "%s.err", dir);
    snprintf(fill, sizeof fill, "%s/fill", dir);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
            mount("tmpfs", dir, "tmpfs", 0, "size=64k") != 0)
            _exit(77);
        static char page[60 * 1024];
        int fd = open(fill, O_WRONLY | O_CREAT, 0600);   /* all but one page of the 64 KiB taken */
        if (fd < 0 || write(fd, page, sizeof page) != (ssize_t)sizeof page)
            _exit(76);
        close(fd);
        member_exec("full", "64M", "full_budget", "64", err);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
        printf("no mount namespace here: not checked\n");
        return;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "the member ended with status 0x%x (SIGBUS is 0x%x)\n", st, SIGBUS);
        exit(1);
    }
    snprintf(cmd, sizeof cmd, "test $(grep -c group %s) = 1 && grep -q 'cannot use .*No space left on device' %s", err,
             err);
    expect(cmd, err, "one line: no space for the group file");
    unlink(err);
}

static const test_case cases[] = {
    {"fd_reused", fd_reused},
    {"half_created", half_created},
    {"top_hostile_names", top_hostile_names},
    {"top_special_files", top_special_files},
    {"slots_full", slots_full},
    {"exec_chain", exec_chain},
    {"planted_paths", planted_paths},
    {"kill_storm", kill_storm},
    {"fork_in_init", fork_in_init},
    {"foreign_owner", foreign_owner},
    {"file_removed", file_removed},
    {"residency_edge", residency_edge},
    {"fork_child_budget", fork_child_budget},
    {"exit_in_handler", exit_in_handler},
    {"different_limits", different_limits},
    {"shm_full", shm_full},
};

int main(int argc, char **argv)
{
    return group_main(argc, argv, members, sizeof members / sizeof members[0], cases, sizeof cases / sizeof cases[0]);
}
