/*
 * breakers_groupfile_test.c — the replacement of a group file of another
 * lmshim layout (docs/ARCHITECTURE.md "Groups", src/engine/group.c
 * map_file), attacked from outside: good files of this layout (idle or in
 * use) that must be kept, files of another program, of a newer layout
 * still in use, cut short or grown, things that are not files at the
 * group's path, replacements that cannot be made (a full file system, a
 * size limit, the hidden name taken), a member killed while it makes the
 * fresh file, no /proc, a flock that is never given back, locks that are
 * not members', many members starting at once, a process of the older
 * lmshim still mapping the old file, `lmshim top` beside hidden files, and
 * the log lines each of these says.
 *
 * Members are this program again (`breakers_groupfile_test member KIND
 * ARG`, see tests/sim/group/group_helpers.h) with a budget of 256 MiB.
 */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "groupfile.h"
#include "simgpu.h"

#define GROUP_DIR_TEMPLATE "/tmp/lmshim-brk-groupfile-XXXXXX"
#include "../group/group_helpers.h"

/* clock_gettime for the whole process (lmshim's calls bind to it: the
 * program comes first in symbol lookup): the kernel's answer, except that
 * CLOCK_MONOTONIC reads BREAK_MONOTONIC_NS when that is set, so that a
 * case knows the hidden name a member gives its fresh file. */
int clock_gettime(clockid_t c, struct timespec *ts)
{
    long r = syscall(SYS_clock_gettime, c, ts);
    static const char *fixed;
    static int asked;
    if (!asked) {
        fixed = getenv("BREAK_MONOTONIC_NS");
        asked = 1;
    }
    if (r == 0 && c == CLOCK_MONOTONIC && fixed) {
        unsigned long long ns = strtoull(fixed, NULL, 10);
        ts->tv_sec = (time_t)(ns / 1000000000ull);
        ts->tv_nsec = (long)(ns % 1000000000ull);
    }
    return (int)r;
}

/* ---- members ---- */

/* Holds `arg` MiB on device 0 (on the device, within the budget); says so
 * on fd 3, waits for fd 4 to close, frees and leaves. */
static void member_hold(const char *arg)
{
    uint64_t size[1] = {(uint64_t)atoi(arg) * MiB};
    hold_per_device(size, 1);
}

/* Allocates and frees 1 MiB, and leaves at once. */
static void member_quick(const char *arg)
{
    (void)arg;
    CUdeviceptr p;
    primary_context(0);
    OK(cuMemAlloc(&p, MiB));
    OK(cuMemFree(p));
}

/* Sees a budget of 256 MiB of which `arg` MiB are used (by the other
 * members), and can have all the rest on device 0. */
static void member_sees(const char *arg)
{
    OK(cuMemFree(sees_on_device(0, 256 * MiB, (uint64_t)atoi(arg) * MiB)));
}

/* ---- the case's files ---- */

static char logs[64];   /* the members' logs, outside the group directory */

static void remove_logs(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", logs);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", logs);
}

/* fresh_dir() and a fresh directory for the members' logs. */
static void fresh_dirs(void)
{
    fresh_dir();
    snprintf(logs, sizeof logs, "/tmp/lmshim-brk-groupfile-log-XXXXXX");
    CHECK(mkdtemp(logs) != NULL);
    atexit(remove_logs);
}

/* The path of group `name` in this case's directory (one of 4 static
 * buffers, used in turn: a case asks for fewer paths). */
static const char *group_path(const char *name)
{
    static char paths[4][256];
    static int next;
    char *p = paths[next++ % 4];
    CHECK(lms_groupfile_path(dir, name, p, sizeof paths[0]) == 0);
    return p;
}

/* The path of member `tag`'s log into out (len bytes). */
static void log_path(char *out, size_t len, const char *tag)
{
    snprintf(out, len, "%s/%s.err", logs, tag);
}

/* The bytes of a group file to write: `size` bytes, the header of group
 * `name` with `magic`, `version` and `ready`, the layout fields of this
 * lmshim, the rest `fill`. Answers a malloc'd buffer (the caller frees). */
static char *file_bytes(size_t size, uint64_t magic, uint32_t version, uint32_t ready, const char *name, int fill)
{
    size_t room = size > LMS_GROUP_FILE_BYTES ? size : LMS_GROUP_FILE_BYTES;
    char *b = malloc(room);
    CHECK(b != NULL);
    memset(b, fill, room);
    lms_group_header *h = (lms_group_header *)b;
    h->magic = magic;
    h->version = version;
    h->slots = LMS_GROUP_SLOTS;
    h->file_bytes = LMS_GROUP_FILE_BYTES;
    h->slot_bytes = LMS_GROUP_SLOT_BYTES;
    h->lock_bytes = sizeof(pthread_mutex_t);
    memset(h->name, 0, sizeof h->name);
    snprintf(h->name, sizeof h->name, "%s", name);
    atomic_store(&h->ready, ready);
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        atomic_store(&lms_groupfile_slot(h, i)->state, LMS_SLOT_FREE);
    return b;
}

/* Writes the first `size` bytes of b to a new file at path (mode 0600). */
static void put_file(const char *path, const char *b, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0);
    CHECK(size == 0 || write(fd, b, size) == (ssize_t)size);
    close(fd);
}

/* Checks that path is a regular file of exactly `size` bytes holding b. */
static void unchanged(const char *path, const char *b, size_t size)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode));
    CHECK_EQ_U(st.st_size, size);
    char *now = malloc(size + 1);
    CHECK(now != NULL);
    CHECK(size == 0 || read(fd, now, size) == (ssize_t)size);
    close(fd);
    if (size && memcmp(now, b, size) != 0) {
        fprintf(stderr, "%s was changed\n", path);
        CHECK(!"the file unchanged");
    }
    free(now);
}

/* Entries of this case's group directory (without . and ..); dot-files
 * (hidden names) counted in *hidden. */
static int entries(int *hidden)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    char line[512];
    int n = 0, dots = 0;
    while (fgets(line, sizeof line, p)) {
        n++;
        dots += line[0] == '.';
    }
    CHECK(pclose(p) == 0);
    if (hidden)
        *hidden = dots;
    return n;
}

/* Shows a log on stderr and fails with `what`. */
static void fail_log(const char *log, const char *what)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cat '%s' >&2", log);
    if (system(cmd) != 0)
        fprintf(stderr, "(no log %s)\n", log);
    fprintf(stderr, "expected: %s\n", what);
    exit(1);
}

/* Runs a member of `group` to its end (LMS_LOG=level, or the default
 * when NULL), its stderr into `err`; it must exit with 0. */
static void run_member(const char *group, const char *kind, const char *arg, const char *level, const char *err)
{
    if (level)
        setenv("LMS_LOG", level, 1);
    reap(spawn(group, "256M", kind, arg, err));
    unsetenv("LMS_LOG");
}

/* The member's log says it kept its own budget, in exactly one line that
 * names `why`, and it did not join. */
static void refused_once(const char *err, const char *why)
{
    if (lines_with(err, "cannot use") != 1 || lines_with(err, why) != 1 || lines_with(err, "joined") != 0 ||
        lines_with(err, "replaced by a fresh one") != 0)
        fail_log(err, why);
}

/* The member's log says the file was replaced (one line) and it joined. */
static void replaced_once(const char *err)
{
    if (lines_with(err, "replaced by a fresh one") != 1 || lines_with(err, "joined") != 1 ||
        lines_with(err, "cannot use") != 0)
        fail_log(err, "one line: replaced, then joined");
}

/* Maps the file at path (which must be a good group file of this layout
 * now); the mapping stays. */
static lms_group_header *map_now(const char *path)
{
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    void *m = mmap(NULL, LMS_GROUP_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    CHECK(m != MAP_FAILED);
    CHECK(lms_groupfile_check(m, LMS_GROUP_FILE_BYTES) == NULL);
    return m;
}

static ino_t inode_of(const char *path)
{
    struct stat st;
    CHECK(lstat(path, &st) == 0);
    return st.st_ino;
}

/* ---- cases ---- */

/* A good file of this layout is never replaced: idle (its members have
 * all left), in use, or of another group's name. */
static void good_file_kept(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("g");
    run_member("g", "quick", "", NULL, err);
    ino_t ino = inode_of(path);
    lms_group_header *h = map_now(path);
    uint64_t created = h->created_ns;
    /* Idle: the next member joins the same file. */
    run_member("g", "quick", "", "info", err);
    if (lines_with(err, "joined") != 1 || lines_with(err, "replaced") != 0)
        fail_log(err, "an idle file of this layout joined, not replaced");
    CHECK(inode_of(path) == ino && h->created_ns == created);
    /* In use: a second member joins beside the first. */
    int release;
    pid_t a = start_member("g", "256M", NULL, "hold", "32", &release);
    run_member("g", "sees", "32", "info", err);
    CHECK(inode_of(path) == ino && h->created_ns == created);
    CHECK(slot_of(h, a) != NULL && live_slots(h) == 1);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 32 * MiB);
    close(release);
    reap(a);
    /* Another group's name in the file: refused, kept as it is. */
    const char *other = group_path("other");
    CHECK(link(path, other) == 0);   /* a good file of group "g" under the name of "other" */
    run_member("other", "full_budget", "256", "info", err);
    refused_once(err, "it belongs to another group");
    CHECK(inode_of(other) == ino && inode_of(path) == ino && h->created_ns == created);
    CHECK_EQ_U(entries(NULL), 2);
}

/* Files of another program (another magic, or too short to hold one) at
 * the group's path: refused in one line, never written, whatever their
 * size; nothing left beside them. */
static void foreign_files(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("f");
    static const size_t sizes[] = {LMS_GROUP_FILE_BYTES, 8, 100, LMS_GROUP_FILE_BYTES * 2};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *b = file_bytes(sizes[i], 0x5a5a5a5a5a5a5a5aull, 1, 0, "f", 0);   /* ready 0: never set up */
        put_file(path, b, sizes[i]);
        run_member("f", "full_budget", "256", "info", err);
        refused_once(err, sizes[i] == LMS_GROUP_FILE_BYTES ? "wrong magic" : "wrong size");
        unchanged(path, b, sizes[i]);
        CHECK_EQ_U(entries(NULL), 1);
        CHECK(unlink(path) == 0);
        free(b);
    }
    /* The first bytes of lmshim's magic only: not known to be lmshim's. */
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "f", 0);
    put_file(path, b, 5);
    run_member("f", "full_budget", "256", "info", err);
    refused_once(err, "wrong size");
    unchanged(path, b, 5);
    free(b);
}

/* A file of this size with lmshim's magic and another layout version
 * (a newer lmshim's, whose header need not hold `ready` where this one
 * does) still in use — or another user's: refused in one line and never
 * written. Set up again in place, it would wipe the members' charges and
 * slots from under them. Also a version-1 file in use whose `ready` reads
 * 0, a file of this version whose layout fields differ, and one of this
 * layout, not ready, that a process holds a lock on. */
static void other_layout_not_ready(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("n");
    struct {
        uint32_t version;
        const char *why;
        int layout_off;   /* 1: lock_bytes differs */
    } files[] = {{3, "wrong version", 0}, {1, "wrong version", 0}, {LMS_GROUP_VERSION, "wrong layout", 1},
                 {LMS_GROUP_VERSION, "not initialised", 0}};   /* this layout: set up again only when unused */
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, files[i].version, 0, "n", 0x11);
        atomic_store(&((lms_group_header *)b)->ready, 0);
        if (files[i].layout_off)
            ((lms_group_header *)b)->lock_bytes = 8;
        for (int s = 0; s < 3; s++) {   /* that lmshim's members, with their charges */
            lms_group_slot *sl = lms_groupfile_slot((lms_group_header *)b, s);
            atomic_store(&sl->state, LMS_SLOT_LIVE);
        }
        put_file(path, b, LMS_GROUP_FILE_BYTES);
        int held = open(path, O_RDWR);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(1),
                           .l_len = 1};
        CHECK(held >= 0 && fcntl(held, F_OFD_SETLK, &fl) == 0);   /* a live member of that lmshim */
        run_member("n", "full_budget", "256", "info", err);
        refused_once(err, files[i].why);
        if (files[i].version != LMS_GROUP_VERSION && lines_with(err, "a process of that lmshim still uses it") != 1)
            fail_log(err, "the line says a process still uses the file");
        unchanged(path, b, LMS_GROUP_FILE_BYTES);
        close(held);
        bool this_layout = files[i].version == LMS_GROUP_VERSION && !files[i].layout_off;
        if (geteuid() == 0 && !this_layout) {   /* another user's, shared with this user's group, no longer used */
            CHECK(chown(path, 65534, getegid()) == 0 && chmod(path, 0660) == 0);
            run_member("n", "full_budget", "256", "info", err);
            refused_once(err, files[i].why);
            /* No process uses it: the line must not say one does. */
            if (lines_with(err, "still uses it") != 0 ||
                (files[i].version != LMS_GROUP_VERSION && lines_with(err, "another user's file") != 1))
                fail_log(err, "the line says it is another user's file, not that a process uses it");
            unchanged(path, b, LMS_GROUP_FILE_BYTES);
        }
        CHECK_EQ_U(entries(NULL), 1);
        CHECK(unlink(path) == 0);
        free(b);
    }
}

/* Files of another layout cut short (down to the magic alone) or grown
 * (garbage after the header) that no process uses: replaced by a fresh
 * file, one line; the member joins it; nothing is left beside it. */
static void cut_and_grown(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("c");
    static const size_t sizes[] = {8, 12, 64, 4096, LMS_GROUP_FILE_BYTES - 1, LMS_GROUP_FILE_BYTES + 4096,
                                   LMS_GROUP_FILE_BYTES * 3};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint32_t version = i % 2 ? 1 : LMS_GROUP_VERSION;
        char *b = file_bytes(sizes[i], LMS_GROUP_MAGIC, version, 1, "c", 0xa5);
        put_file(path, b, sizes[i]);
        free(b);
        ino_t before = inode_of(path);
        run_member("c", "full_budget", "256", "info", err);
        replaced_once(err);
        /* The line names the old file's version when it holds one, and
         * never one it does not hold. */
        char said[64];
        bool has_version = sizes[i] >= offsetof(lms_group_header, version) + sizeof version;
        if (has_version)
            snprintf(said, sizeof said, "another lmshim layout (version %u", (unsigned)version);
        else
            snprintf(said, sizeof said, "another lmshim layout (%zu bytes", sizes[i]);
        if (lines_with(err, said) != 1)
            fail_log(err, said);
        CHECK(inode_of(path) != before);
        lms_group_header *h = map_now(path);
        CHECK(strcmp(h->name, "c") == 0 && live_slots(h) == 0);
        CHECK_EQ_U(atomic_load(&h->peak[0]), 256 * MiB);
        munmap(h, LMS_GROUP_FILE_BYTES);
        CHECK_EQ_U(entries(NULL), 1);
        CHECK(unlink(path) == 0);
    }
}

/* A symlink, a directory or a FIFO at the group's path: refused in one
 * line; the link and what it points to are left as they are, nothing is
 * made beside them. */
static void not_a_file(void)
{
    fresh_dirs();
    char err[128], target[128];
    log_path(err, sizeof err, "m");
    snprintf(target, sizeof target, "%s/old-target", logs);
    const char *path = group_path("s");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "s", 0);
    put_file(target, b, LMS_GROUP_FILE_BYTES);   /* an idle old file, reached through the link */
    CHECK(symlink(target, path) == 0);
    run_member("s", "full_budget", "256", "info", err);
    refused_once(err, "cannot use");
    unchanged(target, b, LMS_GROUP_FILE_BYTES);
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK_EQ_U(entries(NULL), 1);
    CHECK(unlink(path) == 0);
    free(b);
    CHECK(mkdir(path, 0700) == 0);
    run_member("s", "full_budget", "256", "info", err);
    refused_once(err, "cannot use");
    CHECK(lstat(path, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK_EQ_U(entries(NULL), 1);
    CHECK(rmdir(path) == 0);
    CHECK(mkfifo(path, 0600) == 0);
    run_member("s", "full_budget", "256", "info", err);
    refused_once(err, "not a regular file");
    CHECK(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK_EQ_U(entries(NULL), 1);
}

/* In the member's child before exec: files of at most 4096 bytes, and
 * SIGXFSZ ignored (the failing call answers EFBIG instead). */
static void small_files(void)
{
    struct rlimit r = {.rlim_cur = 4096, .rlim_max = 4096};
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &r);
}

/* spawn(), with setup() run in the child before it becomes the member. */
static pid_t spawn_with(void (*setup)(void), const char *group, const char *kind, const char *arg, const char *err)
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setup();
        member_exec(group, "256M", kind, arg, err);
    }
    return pid;
}

/* Checks, after a replacement that could not be made, that the member
 * said so in one line naming `reason`, kept its own budget, left the old
 * file as it was and nothing beside it. */
static void not_replaced(const char *err, const char *path, const char *b, const char *reason)
{
    refused_once(err, reason);
    unchanged(path, b, LMS_GROUP_FILE_BYTES);
    int hidden = 0;
    CHECK_EQ_U(entries(&hidden), 1);
    CHECK_EQ_U(hidden, 0);
}

/* An idle old file whose replacement cannot be made: the member's files
 * may not grow past 4096 bytes (as on a full file system), or the
 * directory is a tmpfs with no room for a second file. The member says so
 * in one line, with the reason, keeps its own budget, and leaves neither
 * a hidden file nor a changed old one. */
static void replace_fails(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("r");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "r", 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    setenv("LMS_LOG", "info", 1);
    reap(spawn_with(small_files, "r", "full_budget", "256", err));
    unsetenv("LMS_LOG");
    not_replaced(err, path, b, "replacing it failed: File too large");
    /* A tmpfs with room for the old file only, in a mount namespace of
     * this process's own. */
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("no mount namespace (%s): the full tmpfs not tried\n", strerror(errno));
        free(b);
        return;
    }
    CHECK(unlink(path) == 0);
    char opts[64];
    snprintf(opts, sizeof opts, "size=%u,mode=0700", LMS_GROUP_FILE_BYTES + 8192);
    CHECK(mount("tmpfs", dir, "tmpfs", 0, opts) == 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    run_member("r", "full_budget", "256", "info", err);
    not_replaced(err, path, b, "replacing it failed: No space left on device");
    CHECK(umount(dir) == 0);
    free(b);
}

/* In the member's child before exec: files of at most 4096 bytes, and
 * SIGXFSZ as it is by default: the process is killed at its first write
 * past that, as a member killed while it makes the fresh file. */
static void killed_past_4096(void)
{
    struct rlimit r = {.rlim_cur = 4096, .rlim_max = 4096};
    signal(SIGXFSZ, SIG_DFL);
    setrlimit(RLIMIT_FSIZE, &r);
}

/* A member killed while it makes the fresh file (SIGXFSZ as it sizes it)
 * leaves nothing behind: no hidden file that no one would ever remove
 * (neither `ls` nor `lmshim top` shows it); the old file stays until the
 * next member replaces it. */
static void killed_mid_replace(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("k");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "k", 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    pid_t pid = spawn_with(killed_past_4096, "k", "quick", "", err);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGXFSZ);
    unchanged(path, b, LMS_GROUP_FILE_BYTES);
    int hidden = 0;
    int n = entries(&hidden);
    if (n != 1 || hidden != 0) {
        char cmd[160];
        snprintf(cmd, sizeof cmd, "ls -la '%s' >&2", dir);
        CHECK(system(cmd) == 0);
        CHECK(!"nothing left beside the old file");
    }
    run_member("k", "quick", "", "info", err);
    replaced_once(err);
    CHECK_EQ_U(entries(NULL), 1);
    free(b);
}

/* In the member's child before exec: plants, at the hidden name this
 * process will give its fresh file (its pid, and the monotonic clock the
 * member reads, fixed), a symlink to a victim file. */
static char victim[128];
static void plant_hidden(void)
{
    char hidden[256];
    snprintf(hidden, sizeof hidden, "%s/.lmshim-group-h.%d.%s", dir, (int)getpid(), "123456789");
    setenv("BREAK_MONOTONIC_NS", "123456789", 1);
    if (symlink(victim, hidden) != 0)
        _exit(125);
}

/* The hidden name of the fresh file is taken already (a symlink planted
 * there): the member makes no file through it, removes nothing, says in
 * one line that the replacement failed, and keeps its own budget; the old
 * file and the victim are unchanged. */
static void hidden_name_taken(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    snprintf(victim, sizeof victim, "%s/victim", logs);
    const char *path = group_path("h");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "h", 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    put_file(victim, "victim", 6);
    setenv("LMS_LOG", "info", 1);
    pid_t pid = spawn_with(plant_hidden, "h", "quick", "", err);
    unsetenv("LMS_LOG");
    reap(pid);
    refused_once(err, "replacing it failed: File exists");
    unchanged(path, b, LMS_GROUP_FILE_BYTES);
    unchanged(victim, "victim", 6);
    int hidden = 0;
    CHECK_EQ_U(entries(&hidden), 2);
    CHECK_EQ_U(hidden, 1);   /* the planted link, left as it was */
    char link_path[256], to[256];
    snprintf(link_path, sizeof link_path, "%s/.lmshim-group-h.%d.123456789", dir, (int)pid);
    ssize_t n = readlink(link_path, to, sizeof to - 1);
    CHECK(n > 0);
    to[n] = 0;
    CHECK(strcmp(to, victim) == 0);
    free(b);
}

/* In the member's child before exec: an empty tmpfs over /proc, in a
 * mount namespace of its own, with only /proc/self/exe (members read it to
 * know their program); 77 when that cannot be had. */
static void hide_proc(void)
{
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", "/proc", "tmpfs", 0, "size=64k") != 0 || mkdir("/proc/self", 0755) != 0 ||
        symlink(self, "/proc/self/exe") != 0)
        _exit(77);
}

/* Without /proc an unnamed file cannot be linked: the fresh file is made
 * under its hidden name instead, renamed over the old one, and nothing
 * else is left. (Not under ASan, whose runtime reads /proc.) */
static void no_proc(void)
{
    if (getenv("LMS_TEST_ASAN")) {
        puts("ASan needs /proc: not tried");
        return;
    }
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("p");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "p", 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    free(b);
    ino_t before = inode_of(path);
    setenv("LMS_LOG", "info", 1);
    pid_t pid = spawn_with(hide_proc, "p", "quick", "", err);
    unsetenv("LMS_LOG");
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    if (WEXITSTATUS(st) == 77) {
        puts("no mount namespace: not tried");
        return;
    }
    CHECK_EQ_U(WEXITSTATUS(st), 0);
    replaced_once(err);
    CHECK(inode_of(path) != before);
    map_now(path);
    int hidden = 0;
    CHECK_EQ_U(entries(&hidden), 1);
    CHECK_EQ_U(hidden, 0);
}

/* Waits up to `seconds` for process pid to end (killing it then, and
 * failing); answers its status. */
static int wait_at_most(pid_t pid, int seconds)
{
    for (int i = 0; i < seconds * 100; i++) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        CHECK(r >= 0);
        if (r == pid)
            return st;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fprintf(stderr, "member %d still waited after %d s\n", (int)pid, seconds);
    CHECK(!"the member gives up waiting for the file's lock");
    return -1;
}

/* A process holds the group file's flock and never lets go (stopped
 * while it set the file up, or a stranger): a member does not wait for it
 * for ever at its first CUDA call; after a few seconds it says so in one
 * line, keeps its own budget and goes on. Then, the flock given back, the
 * next member replaces the old file as usual. */
static void flock_held(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("w");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "w", 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int st = wait_at_most(spawn("w", "256M", "full_budget", "256", err), 20);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(waited > 4.5 && waited < 10);
    refused_once(err, "another process has held its lock (flock) for 5 s");
    unchanged(path, b, LMS_GROUP_FILE_BYTES);
    close(fd);
    run_member("w", "quick", "", "info", err);
    replaced_once(err);
    free(b);
}

/* Locks that are not a member's slot lock — a classic POSIX lock on the
 * header, a read lock on the last byte, a lock past the end of the file —
 * still mean a process uses the old file: it is refused, never replaced. */
static void other_locks(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("l");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "l", 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    struct {
        int cmd;
        short type;
        off_t start;
    } locks[] = {{F_SETLK, F_WRLCK, 0},
                 {F_OFD_SETLK, F_RDLCK, LMS_GROUP_FILE_BYTES - 1},
                 {F_SETLK, F_RDLCK, LMS_GROUP_FILE_BYTES + 100}};
    for (size_t i = 0; i < sizeof locks / sizeof locks[0]; i++) {
        int fd = open(path, O_RDWR);
        struct flock fl = {.l_type = locks[i].type, .l_whence = SEEK_SET, .l_start = locks[i].start, .l_len = 1};
        CHECK(fd >= 0 && fcntl(fd, locks[i].cmd, &fl) == 0);
        run_member("l", "full_budget", "256", "info", err);
        refused_once(err, "wrong version");
        unchanged(path, b, LMS_GROUP_FILE_BYTES);
        CHECK_EQ_U(entries(NULL), 1);
        close(fd);   /* drops either kind of lock */
    }
    /* With every lock gone, the next member replaces it. */
    run_member("l", "full_budget", "256", "info", err);
    replaced_once(err);
    free(b);
}

/* Sixteen members start at once beside an idle old file, every other one
 * leaving as soon as it has joined: the file is replaced once (one line
 * in all the logs), every member joins the one fresh file, and nothing is
 * left beside it. */
static void storm(void)
{
    enum { N = 16 };
    fresh_dirs();
    const char *path = group_path("st");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "st", 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    free(b);
    setenv("LMS_LOG", "info", 1);
    pid_t pid[N];
    int ready[N], release[N];
    char err[N][128];
    for (int i = 0; i < N; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "m%d", i);
        log_path(err[i], sizeof err[i], tag);
        if (i % 2)
            pid[i] = spawn("st", "256M", "quick", "", err[i]);
        else
            pid[i] = launch_member("st", "256M", NULL, "hold", "8", err[i], &ready[i], &release[i]);
    }
    unsetenv("LMS_LOG");
    for (int i = 0; i < N; i += 2)
        wait_ready(ready[i], pid[i]);
    for (int i = 1; i < N; i += 2)
        reap(pid[i]);
    lms_group_header *h = map_now(path);
    CHECK_EQ_U(live_slots(h), N / 2);
    CHECK_EQ_U(atomic_load(&h->charged[0]), N / 2 * 8 * MiB);
    check_invariant(h);
    for (int i = 0; i < N; i += 2)
        close(release[i]);
    for (int i = 0; i < N; i += 2)
        reap(pid[i]);
    int replaced = 0;
    for (int i = 0; i < N; i++) {
        replaced += lines_with(err[i], "replaced by a fresh one");
        if (lines_with(err[i], "joined") != 1 || lines_with(err[i], "cannot use") != 0)
            fail_log(err[i], "every member joined the fresh file");
    }
    CHECK_EQ_U(replaced, 1);
    CHECK_EQ_U(live_slots(h), 0);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    int hidden = 0;
    CHECK_EQ_U(entries(&hidden), 1);
    CHECK_EQ_U(hidden, 0);
}

/* A process of the older lmshim that opened and mapped the old file but
 * had not yet locked a slot when a member replaced it: it keeps that file
 * to itself, and what it writes there never reaches the fresh file, which
 * the next members join. */
static void old_member_mapped(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("o");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "o", 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    free(b);
    int old = open(path, O_RDWR);
    CHECK(old >= 0);
    lms_group_header *o = mmap(NULL, LMS_GROUP_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, old, 0);
    CHECK(o != MAP_FAILED);
    int release;
    pid_t a = start_member("o", "256M", NULL, "hold", "40", &release);
    lms_group_header *h = map_now(path);   /* the fresh file */
    CHECK(slot_of(h, a) != NULL && h != o);
    /* Now the old process locks its slot and charges in its own file. */
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(0), .l_len = 1};
    CHECK(fcntl(old, F_OFD_SETLK, &fl) == 0);
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        atomic_store(&lms_groupfile_slot(o, i)->state, LMS_SLOT_LIVE);
    atomic_store(&o->charged[0], 200 * MiB);
    atomic_store(&o->budget[0], 1);
    run_member("o", "sees", "40", "info", err);   /* the first member's 40 MiB, not the old file's 200 */
    if (lines_with(err, "joined") != 1 || lines_with(err, "cannot use") != 0)
        fail_log(err, "the next member joins the fresh file");
    close(release);
    reap(a);
    CHECK(o->version == 1 && atomic_load(&o->charged[0]) == 200 * MiB);
    CHECK_EQ_U(live_slots(h), 0);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 0);
    CHECK_EQ_U(atomic_load(&h->budget[0]), 256 * MiB);
    CHECK_EQ_U(entries(NULL), 1);
    close(old);
}

/* `lmshim top` over the directory lists the fresh group, never a hidden
 * file (a planted one, or a fresh file not yet renamed). */
static void top_hidden(void)
{
    fresh_dirs();
    const char *path = group_path("t");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "t", 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    free(b);
    char ghost[256];
    snprintf(ghost, sizeof ghost, "%s/.lmshim-group-ghost.123.456", dir);
    int release;
    pid_t a = start_member("t", "256M", NULL, "hold", "24", &release);
    lms_group_header *h = map_now(path);
    CHECK(slot_of(h, a) != NULL);
    int in = open(path, O_RDONLY), out = open(ghost, O_WRONLY | O_CREAT | O_EXCL, 0600);   /* a good copy */
    static char copy[LMS_GROUP_FILE_BYTES];
    CHECK(in >= 0 && out >= 0 && read(in, copy, sizeof copy) == (ssize_t)sizeof copy);
    CHECK(write(out, copy, sizeof copy) == (ssize_t)sizeof copy);
    close(in);
    close(out);
    const char *cli = getenv("LMSHIM_CLI");
    CHECK(cli != NULL);
    char txt[128], cmd[1024];
    snprintf(txt, sizeof txt, "%s/top.json", logs);
    snprintf(cmd, sizeof cmd, "'%s' top --dir '%s' --once --json > '%s'", cli, dir, txt);
    CHECK(system(cmd) == 0);
    if (lines_with(txt, "\"group\":\"t\"") != 1 || lines_with(txt, "ghost") != 0 || lines_with(txt, "\n") != 1 ||
        lines_with(txt, "\"used\":25165824") != 1)
        fail_log(txt, "top shows the fresh group t, not the hidden file");
    close(release);
    reap(a);
}

/* At the default log level a successful replacement says nothing; a file
 * still in use is refused in exactly one line on stderr. */
static void quiet_default(void)
{
    fresh_dirs();
    char err[128];
    log_path(err, sizeof err, "m");
    const char *path = group_path("q");
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, "q", 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    int fd = open(path, O_RDWR);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(0), .l_len = 1};
    CHECK(fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) == 0);
    unsetenv("LMS_LOG");
    run_member("q", "quick", "", NULL, err);
    if (lines_with(err, "\n") != 1 || lines_with(err, "cannot use") != 1)
        fail_log(err, "one line on stderr: the file in use is refused");
    unchanged(path, b, LMS_GROUP_FILE_BYTES);
    close(fd);
    run_member("q", "quick", "", NULL, err);
    if (lines_with(err, "\n") != 0)
        fail_log(err, "nothing on stderr for a replacement at the default level");
    map_now(path);
    free(b);
}

/* The longest group name in a directory as long as the path allows: the
 * hidden name is not cut short, the replacement is made, nothing is left. */
static void long_names(void)
{
    fresh_dirs();
    char gdir[320], name[LMS_GROUP_NAME_MAX + 1], path[320], err[128];
    memset(name, 'n', LMS_GROUP_NAME_MAX);
    name[LMS_GROUP_NAME_MAX] = 0;
    log_path(err, sizeof err, "m");
    /* dir + "/" + d...d, such that the group file's path is 319 bytes: the
     * longest that fits lmshim's buffer. */
    size_t fixed = strlen(dir) + 1 + strlen("/lmshim-group-") + LMS_GROUP_NAME_MAX;
    CHECK(fixed < 319 - 10);
    size_t dlen = 319 - fixed;
    CHECK(dlen < 255);
    snprintf(gdir, sizeof gdir, "%s/", dir);
    memset(gdir + strlen(gdir), 'd', dlen);
    gdir[strlen(dir) + 1 + dlen] = 0;
    CHECK(strlen(gdir) <= 255);   /* LMS_GROUP_DIR's room */
    CHECK(mkdir(gdir, 0700) == 0);
    CHECK(lms_groupfile_path(gdir, name, path, sizeof path) == 0 && strlen(path) == 319);
    char *b = file_bytes(LMS_GROUP_FILE_BYTES, LMS_GROUP_MAGIC, 1, 1, name, 0);
    put_file(path, b, LMS_GROUP_FILE_BYTES);
    free(b);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setenv("LMS_LOG", "info", 1);
        setenv("LMS_GROUP", name, 1);
        setenv("LMS_GROUP_DIR", gdir, 1);
        setenv("LMS_LIMIT", "256M", 1);
        setenv("LMS_THRESHOLD", "1T", 1);
        setenv("LMS_FRAC", "1", 1);
        setenv("GROUP_TEST_DIR", "/tmp", 1);
        int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(126);
        execl(self, self, "member", "full_budget", "256", (char *)NULL);
        _exit(127);
    }
    reap(pid);
    replaced_once(err);
    map_now(path);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) = 1", gdir);
    CHECK(system(cmd) == 0);
}

static const member_kind members[] = {
    {"hold", member_hold}, {"quick", member_quick}, {"sees", member_sees}, {"full_budget", member_full_budget},
};

static const test_case cases[] = {
    {"good_file_kept", good_file_kept},
    {"foreign_files", foreign_files},
    {"other_layout_not_ready", other_layout_not_ready},
    {"cut_and_grown", cut_and_grown},
    {"not_a_file", not_a_file},
    {"replace_fails", replace_fails},
    {"killed_mid_replace", killed_mid_replace},
    {"hidden_name_taken", hidden_name_taken},
    {"no_proc", no_proc},
    {"flock_held", flock_held},
    {"other_locks", other_locks},
    {"storm", storm},
    {"old_member_mapped", old_member_mapped},
    {"top_hidden", top_hidden},
    {"quiet_default", quiet_default},
    {"long_names", long_names},
};

int main(int argc, char **argv)
{
    return group_main(argc, argv, members, sizeof members / sizeof members[0], cases, sizeof cases / sizeof cases[0]);
}
