/*
 * group_uuid_test.c — shared budgets (LMS_GROUP) match GPUs by UUID, not by
 * CUDA ordinal: members that see the simulated GPUs through different
 * CUDA_VISIBLE_DEVICES lists charge each GPU's own budget. Also the
 * simulator's CUDA_VISIBLE_DEVICES (which devices are visible, in which
 * order, with which UUIDs) that these cases rely on, `lmshim top` naming
 * the GPUs by UUID, and a member refusing a group file of the older layout.
 *
 * Members are this program again (`group_uuid_test member KIND ARG`, see
 * tests/sim/group/group_helpers.h) with SIMGPU_DEVICES=2 and a group budget
 * of 256 MiB per GPU; each simulated device is the member's own (SIMGPU_MEM
 * is large), so what is checked is lmshim's accounting.
 */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "../../common/shim.h"
#include "groupfile.h"
#include "simgpu.h"

#define GROUP_DIR_TEMPLATE "/tmp/lmshim-group-uuid-test-XXXXXX"
#include "../group/group_helpers.h"

/* ---- members ---- */

/* Holds A MiB on its device 0 and B MiB on its device 1 (of "A,B"; none
 * when 0), on the device itself (within the group's budget); says so on
 * fd 3, waits for fd 4 to close, frees and leaves. */
static void member_hold2(const char *arg)
{
    uint64_t size[2] = {0, 0};
    mib_list(arg, size, 2);
    hold_per_device(size, 2);
}

/* For each visible device d (one or two): cuMemGetInfo says a total of
 * 256 MiB of which the d-th number of "U0,U1" MiB are used (by the other
 * members), and all the rest can be had on the device. */
static void member_sees2(const char *arg)
{
    uint64_t used[2] = {0, 0};
    mib_list(arg, used, 2);
    OK(cuInit(0));
    int n;
    OK(cuDeviceGetCount(&n));
    for (int d = 0; d < n && d < 2; d++) {
        OK(cuMemFree(sees_on_device(d, 256 * MiB, used[d])));
    }
}

/* Prints what the driver shows: "count N" (or "init E" when cuInit fails
 * with E), then per device its UUID in hex and its name. */
static void member_uuids(const char *arg)
{
    (void)arg;
    CUresult r = cuInit(0);
    if (r != CUDA_SUCCESS) {
        int n = -1;
        printf("init %d %d\n", (int)r, (int)cuDeviceGetCount(&n));
        return;
    }
    int n;
    OK(cuDeviceGetCount(&n));
    printf("count %d\n", n);
    for (int d = 0; d < n; d++) {
        CUuuid u;
        char name[64];
        OK(cuDeviceGetUuid_v2(&u, d));
        OK(cuDeviceGetName(name, sizeof name, d));
        for (int i = 0; i < 16; i++)
            printf("%02x", (unsigned char)u.bytes[i]);
        printf(" %s\n", name);
    }
    CHECK_IS(cuDeviceGetUuid_v2(&(CUuuid){0}, n), CUDA_ERROR_INVALID_DEVICE);
}

/* ---- what the simulated driver shows ---- */

typedef struct shown {
    char first[64];       /* "count N" or "init E C" */
    int count;
    char uuid[16][33];    /* hex */
    char name[16][64];
} shown;

/* Runs the uuids member with SIMGPU_DEVICES=physical and
 * CUDA_VISIBLE_DEVICES=cvd (unset when NULL) and reads what it prints. */
static shown visible(int physical, const char *cvd)
{
    shown s = {.count = 0};
    char cmd[4608];
    snprintf(cmd, sizeof cmd, "env -u CUDA_VISIBLE_DEVICES %s%s%s SIMGPU_DEVICES=%d GROUP_TEST_DIR=/tmp '%s' member uuids x",
             cvd ? "CUDA_VISIBLE_DEVICES='" : "", cvd ? cvd : "", cvd ? "'" : "", physical, self);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    CHECK(fgets(s.first, sizeof s.first, p) != NULL);
    s.first[strcspn(s.first, "\n")] = 0;
    char line[256];
    while (s.count < 16 && fgets(line, sizeof line, p)) {
        CHECK(sscanf(line, "%32s", s.uuid[s.count]) == 1);
        snprintf(s.name[s.count], sizeof s.name[0], "%s", strchr(line, ' ') + 1);
        s.name[s.count][strcspn(s.name[s.count], "\n")] = 0;
        s.count++;
    }
    CHECK(pclose(p) == 0);
    return s;
}

/* Checks that `cvd` shows the physical devices `want` (n of them, -1
 * ending), by UUID and name, of `all` (the machine seen without the
 * variable). */
static void expect_visible(const shown *all, const char *cvd, const int *want, int n)
{
    shown s = visible(all->count, cvd);
    char first[32];
    snprintf(first, sizeof first, "count %d", n);
    if (strcmp(s.first, first) != 0 || s.count != n) {
        fprintf(stderr, "CUDA_VISIBLE_DEVICES='%s': '%s', %d devices; expected %d\n", cvd, s.first, s.count, n);
        CHECK(!"the visible devices' count");
    }
    for (int i = 0; i < n; i++) {
        CHECK(strcmp(s.uuid[i], all->uuid[want[i]]) == 0);
        CHECK(strcmp(s.name[i], all->name[want[i]]) == 0);
    }
}

/* The simulator's CUDA_VISIBLE_DEVICES, as CUDA documents it for lists of
 * indices: the devices named, in the list's order; the list ends at the
 * first invalid entry; a list without a valid first entry means no device
 * (cuInit: CUDA_ERROR_NO_DEVICE). Every physical device has its own UUID,
 * the same in every process. */
static void visible_devices(void)
{
    shown all = visible(3, NULL);
    CHECK(strcmp(all.first, "count 3") == 0 && all.count == 3);
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < i; k++)
            CHECK(strcmp(all.uuid[i], all.uuid[k]) != 0);
    CHECK(strcmp(all.name[2], "lmshim simulated GPU 2") == 0);
    shown again = visible(3, NULL);   /* stable: another process, the same UUIDs */
    for (int i = 0; i < 3; i++)
        CHECK(strcmp(all.uuid[i], again.uuid[i]) == 0);
    shown two = visible(2, NULL);     /* a machine's device keeps its UUID whatever the count */
    CHECK(strcmp(two.uuid[1], all.uuid[1]) == 0);
    expect_visible(&all, "0,1,2", (int[]){0, 1, 2}, 3);
    expect_visible(&all, "1", (int[]){1}, 1);
    expect_visible(&all, "2,0", (int[]){2, 0}, 2);
    expect_visible(&all, "2,1,0", (int[]){2, 1, 0}, 3);
    expect_visible(&all, "0,2,-1,1", (int[]){0, 2}, 2);   /* CUDA's own example */
    expect_visible(&all, "1,x,0", (int[]){1}, 1);
    expect_visible(&all, "1,3,0", (int[]){1}, 1);         /* 3: no such device */
    expect_visible(&all, "1,,0", (int[]){1}, 1);          /* an empty entry */
    expect_visible(&all, "2,2,0", (int[]){2}, 1);         /* named twice */
    expect_visible(&all, "0,", (int[]){0}, 1);
    const char *none[] = {"", "x", "-1", "3", ",0", "GPU-0", NULL};
    for (int i = 0; none[i]; i++) {
        shown s = visible(3, none[i]);
        char want[64];
        snprintf(want, sizeof want, "init %d %d", (int)CUDA_ERROR_NO_DEVICE, (int)CUDA_ERROR_NOT_INITIALIZED);
        if (strcmp(s.first, want) != 0 || s.count != 0) {
            fprintf(stderr, "CUDA_VISIBLE_DEVICES='%s': '%s'\n", none[i], s.first);
            CHECK(!"no device: cuInit answers CUDA_ERROR_NO_DEVICE");
        }
    }
}

/* ---- groups ---- */

/* The group's entry of the GPU whose UUID is `hex`, or -1. */
static int entry_of(lms_group_header *h, const char *hex)
{
    for (int g = 0; g < LMS_GROUP_DEVICES; g++)
        if (entry_has_uuid(h, g, hex))
            return g;
    return -1;
}

/* Two members, one seeing only GPU 0 and the other only GPU 1 (each as its
 * device 0): each may use its GPU's whole budget. (Matched by ordinal they
 * were charged together: the second saw the first's 200 MiB.) */
static void separate_gpus(void)
{
    fresh_dir();
    shown all = visible(2, NULL);
    int release;
    pid_t a = start_visible("sep", "0", "hold2", "200,0", &release);
    run_visible("sep", "1", "sees2", "0,0");
    lms_group_header *h = map_group("sep");
    int g0 = entry_of(h, all.uuid[0]), g1 = entry_of(h, all.uuid[1]);
    CHECK(g0 >= 0 && g1 >= 0 && g0 != g1);
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 200 * MiB);
    CHECK_EQ_U(atomic_load(&h->charged[g1]), 0);
    CHECK_EQ_U(atomic_load(&h->peak[g1]), 256 * MiB);
    CHECK_EQ_U(atomic_load(&h->budget[g1]), 256 * MiB);
    /* The same GPU through another list is the same budget. */
    run_visible("sep", "1,0", "sees2", "0,200");
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 200 * MiB);
    close(release);
    reap(a);
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 0);
}

/* Two members seeing both GPUs in opposite orders: each one's device d is
 * charged to its own GPU's budget, and sees what the other holds there. */
static void reordered(void)
{
    fresh_dir();
    shown all = visible(2, NULL);
    int release;
    pid_t a = start_visible("order", "0,1", "hold2", "100,30", &release);   /* GPU 0: 100 MiB, GPU 1: 30 MiB */
    run_visible("order", "1,0", "sees2", "30,100");   /* its device 0 is GPU 1 */
    run_visible("order", "0,1", "sees2", "100,30");
    lms_group_header *h = map_group("order");
    int g0 = entry_of(h, all.uuid[0]), g1 = entry_of(h, all.uuid[1]);
    CHECK(g0 >= 0 && g1 >= 0 && g0 != g1);
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 100 * MiB);
    CHECK_EQ_U(atomic_load(&h->charged[g1]), 30 * MiB);
    int release_b;
    pid_t b = start_visible("order", "1,0", "hold2", "50,20", &release_b);   /* GPU 1: 50 MiB, GPU 0: 20 MiB */
    check_invariant(h);
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 120 * MiB);
    CHECK_EQ_U(atomic_load(&h->charged[g1]), 80 * MiB);
    lms_group_slot *sb = slot_of(h, b);
    CHECK(sb != NULL);
    CHECK_EQ_U(atomic_load(&sb->charged[g1]), 50 * MiB);
    CHECK_EQ_U(atomic_load(&sb->charged[g0]), 20 * MiB);
    /* Others, in either order, see both members' charges on each GPU. */
    run_visible("order", "0,1", "sees2", "120,80");
    run_visible("order", "1,0", "sees2", "80,120");
    close(release_b);
    reap(b);
    close(release);
    reap(a);
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 0);
    CHECK_EQ_U(atomic_load(&h->charged[g1]), 0);
}

/* `lmshim top` names the group's GPUs by UUID: the short form in the text
 * view, the full one in JSON, each with its own budget and usage. */
static void top_uuids(void)
{
    fresh_dir();
    shown all = visible(2, NULL);
    int release;
    pid_t a = start_visible("topu", "1,0", "hold2", "100,30", &release);   /* GPU 1: 100 MiB, GPU 0: 30 MiB */
    const char *cli = getenv("LMSHIM_CLI");
    CHECK(cli != NULL);
    char out[128], cmd[2048];
    snprintf(out, sizeof out, "%s/top.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' top topu --dir '%s' --once > '%s'", cli, dir, out);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd,
             "grep -q '^GPU-%.8s: budget 256M  used 100M (39%%)' '%s' && "
             "grep -q '^GPU-%.8s: budget 256M  used 30M (12%%)' '%s' && "
             "grep -Eq '^  [0-9]+ +group_uuid_test +GPU-%.8s +100M ' '%s' && "
             "grep -Eq '^  [0-9]+ +group_uuid_test +GPU-%.8s +30M ' '%s'",
             all.uuid[1], out, all.uuid[0], out, all.uuid[1], out, all.uuid[0], out);
    expect(cmd, out, "top shows each GPU by its UUID, with its usage");
    snprintf(cmd, sizeof cmd, "'%s' top topu --dir '%s' --once --json > '%s'", cli, dir, out);
    CHECK(system(cmd) == 0);
    char full[2][40];
    for (int i = 0; i < 2; i++)
        snprintf(full[i], sizeof full[i], "%.8s-%.4s-%.4s-%.4s-%.12s", all.uuid[i], all.uuid[i] + 8,
                 all.uuid[i] + 12, all.uuid[i] + 16, all.uuid[i] + 20);
    snprintf(cmd, sizeof cmd,
             "grep -q '\"used\":104857600,\"peak\":104857600,\"gpu\":\"GPU-%s\"}' '%s' && "
             "grep -q '\"used\":31457280,\"peak\":31457280,\"gpu\":\"GPU-%s\"}' '%s' && "
             "grep -q '\"charged\":104857600,[^}]*\"gpu\":\"GPU-%s\"}' '%s'",
             full[1], out, full[0], out, full[1], out);
    expect(cmd, out, "top --json shows each GPU's full UUID");
    close(release);
    reap(a);
}

/* Writes a group file of the older layout (version 1: devices by
 * ordinal) for group "old" into path, with its first member's budget of 64
 * MiB in it; its bytes go to file (LMS_GROUP_FILE_BYTES). */
static void write_old_file(const char *path, char *file)
{
    memset(file, 0, LMS_GROUP_FILE_BYTES);
    lms_group_header *h = (lms_group_header *)file;
    h->magic = LMS_GROUP_MAGIC;
    h->version = 1;
    h->slots = LMS_GROUP_SLOTS;
    h->file_bytes = LMS_GROUP_FILE_BYTES;
    h->slot_bytes = LMS_GROUP_SLOT_BYTES;
    h->lock_bytes = sizeof(pthread_mutex_t);
    snprintf(h->name, sizeof h->name, "old");
    atomic_store(&h->ready, 1);
    atomic_store(&h->budget[0], 64 * MiB);   /* what a version-1 member would have fixed */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0 && write(fd, file, LMS_GROUP_FILE_BYTES) == (ssize_t)LMS_GROUP_FILE_BYTES);
    close(fd);
}

/* A fresh directory holding an old-layout file for group "old" (its path
 * into path, its bytes into file), and the path of a member's stderr there
 * into err (256 bytes each). */
static void old_dir(char *path, char *err, char *file)
{
    fresh_dir();
    CHECK(lms_groupfile_path(dir, "old", path, 256) == 0);
    snprintf(err, 256, "%s/member.err", dir);
    write_old_file(path, file);
}

/* Runs a member of group "old" with its own 256 MiB (LMS_LIMIT) on GPU 0,
 * its log at info level into err. */
static void run_old_member(const char *err)
{
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    setenv("LMS_LOG", "info", 1);
    reap(spawn("old", "256M", "full_budget", "256", err));   /* its own 256 MiB, not the old file's 64 */
    unsetenv("LMS_LOG");
    unsetenv("CUDA_VISIBLE_DEVICES");
}

/* Checks that the file at path still holds exactly `file`. */
static void file_unchanged(const char *path, const char *file)
{
    int rd = open(path, O_RDONLY);
    static char after[LMS_GROUP_FILE_BYTES];
    CHECK(rd >= 0 && read(rd, after, sizeof after) == (ssize_t)sizeof after);
    close(rd);
    CHECK(memcmp(file, after, LMS_GROUP_FILE_BYTES) == 0);
}

/* A group file of the older layout still in use (a process holds the lock
 * a member holds on its slot): a member refuses it in one line that says
 * why, keeps its own budget (LMS_LIMIT), and never writes to it; lmshim
 * top says why it does not show it. */
static void old_layout_in_use(void)
{
    char path[256], err[256], cmd[2048];
    static char file[LMS_GROUP_FILE_BYTES];
    old_dir(path, err, file);
    int held = open(path, O_RDWR);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(3), .l_len = 1};
    CHECK(held >= 0 && fcntl(held, F_OFD_SETLK, &fl) == 0);   /* a live member of that lmshim */
    run_old_member(err);
    snprintf(cmd, sizeof cmd,
             "test $(grep -c 'group old: cannot use .*(wrong version: its layout is version 1, this lmshim.s is %u; "
             "a process of that lmshim still uses it (its owner.s next process replaces it once none does)); this "
             "process keeps its own budget' '%s') = 1 && test $(grep -c 'group old: cannot use' '%s') = 1 && "
             "! grep -q 'joined' '%s'",
             (unsigned)LMS_GROUP_VERSION, err, err, err);
    expect(cmd, err, "one line: the file's layout version is refused");
    file_unchanged(path, file);
    const char *cli = getenv("LMSHIM_CLI");
    snprintf(cmd, sizeof cmd, "'%s' top old --dir '%s' --once 2> '%s'; test $? = 1 && grep -q 'wrong version' '%s'",
             cli, dir, err, err);
    expect(cmd, err, "top refuses the older layout");
    close(held);
}

/* A group file of the older layout left behind (no process uses it): the
 * first member replaces it with a fresh file of this layout (one info
 * line), joins it and fixes its budget; nothing else is left in the
 * directory. Another user's such file is refused, never replaced. */
static void old_layout_left(void)
{
    char path[256], err[256], cmd[2048];
    static char file[LMS_GROUP_FILE_BYTES];
    old_dir(path, err, file);
    struct stat before;
    CHECK(stat(path, &before) == 0);
    run_old_member(err);
    snprintf(cmd, sizeof cmd,
             "test $(grep -c 'group old: .*lmshim-group-old was of another lmshim layout (version 1) and no process "
             "used it: replaced by a fresh one (version %u)' '%s') = 1 && grep -q 'group old: joined' '%s' && "
             "! grep -q 'cannot use' '%s' && test $(ls -A '%s' | grep -vc member.err) = 1",
             (unsigned)LMS_GROUP_VERSION, err, err, err, dir);
    expect(cmd, err, "the old file replaced, joined, nothing left beside it");
    int rd = open(path, O_RDONLY);
    static char now[LMS_GROUP_FILE_BYTES];
    CHECK(rd >= 0 && read(rd, now, sizeof now) == (ssize_t)sizeof now);
    close(rd);
    const lms_group_header *h = (const lms_group_header *)now;
    CHECK(lms_groupfile_check(h, sizeof now) == NULL && strcmp(h->name, "old") == 0);
    uint64_t fixed = 0;
    for (int g = 0; g < LMS_GROUP_DEVICES; g++)
        fixed = atomic_load(&h->budget[g]) ? atomic_load(&h->budget[g]) : fixed;
    CHECK_EQ_U(fixed, 256 * MiB);   /* the member's, in the fresh file */
    struct stat after;
    CHECK(stat(path, &after) == 0 && after.st_ino != before.st_ino && (after.st_mode & 0777) == 0600);
    /* Another user's old file (shared with this user's group): refused. */
    if (geteuid() != 0) {
        puts("not root: another user's file not tried");
        return;
    }
    CHECK(unlink(path) == 0);
    write_old_file(path, file);
    CHECK(chown(path, 65534, getegid()) == 0 && chmod(path, 0660) == 0);
    run_old_member(err);
    snprintf(cmd, sizeof cmd, "grep -q 'group old: cannot use .*wrong version' '%s' && ! grep -q 'replaced' '%s'",
             err, err);
    expect(cmd, err, "another user's old file is refused");
    file_unchanged(path, file);
}

/* Eight members start at once beside a group file of the older layout
 * that no process uses: one of them replaces it and all eight join that
 * one fresh file (an opener that waited for the old file's flock while it
 * was renamed over opens the path again), none keeps its own budget. */
static void old_layout_race(void)
{
    enum { N = 8 };
    fresh_dir();
    char path[256];
    CHECK(lms_groupfile_path(dir, "old", path, sizeof path) == 0);
    static char file[LMS_GROUP_FILE_BYTES];
    write_old_file(path, file);
    pid_t pid[N];
    int ready[N], release[N];
    for (int i = 0; i < N; i++)
        pid[i] = launch_member("old", "256M", "0", "hold2", "16,0", NULL, &ready[i], &release[i]);
    for (int i = 0; i < N; i++)
        wait_ready(ready[i], pid[i]);
    int rd = open(path, O_RDONLY);
    static char now[LMS_GROUP_FILE_BYTES];
    CHECK(rd >= 0 && read(rd, now, sizeof now) == (ssize_t)sizeof now);
    close(rd);
    lms_group_header *h = (lms_group_header *)now;
    CHECK(lms_groupfile_check(h, sizeof now) == NULL);
    int live = 0;
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        live += atomic_load(&lms_groupfile_slot(h, i)->state) == LMS_SLOT_LIVE;
    uint64_t charged = 0;
    for (int g = 0; g < LMS_GROUP_DEVICES; g++)
        charged += atomic_load(&h->charged[g]);
    CHECK(live == N);
    CHECK_EQ_U(charged, N * 16 * MiB);   /* every member's 16 MiB in the one file */
    for (int i = 0; i < N; i++)
        close(release[i]);
    for (int i = 0; i < N; i++)
        reap(pid[i]);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) = 1", dir);
    CHECK(system(cmd) == 0);   /* no hidden file left beside it */
}

static const member_kind members[] = {
    {"hold2", member_hold2}, {"sees2", member_sees2}, {"uuids", member_uuids}, {"full_budget", member_full_budget},
};

static const test_case cases[] = {
    {"visible_devices", visible_devices},
    {"separate_gpus", separate_gpus},
    {"reordered", reordered},
    {"top_uuids", top_uuids},
    {"old_layout_in_use", old_layout_in_use},
    {"old_layout_left", old_layout_left},
    {"old_layout_race", old_layout_race},
};

int main(int argc, char **argv)
{
    return group_main(argc, argv, members, sizeof members / sizeof members[0], cases, sizeof cases / sizeof cases[0]);
}
