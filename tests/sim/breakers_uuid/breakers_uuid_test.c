/*
 * breakers_uuid_test.c — shared budgets (LMS_GROUP) keyed by GPU UUID,
 * attacked from outside: many members joining at once with different
 * CUDA_VISIBLE_DEVICES orders, members killed while they claim entries,
 * every GPU entry taken while members still run, fork children and
 * processes that set their devices up before joining, threads charging
 * several devices at once, and group files whose entry table a program
 * wrote garbage into (for members and `lmshim top`, whose --json output
 * must parse in every case).
 *
 * Members are this program again (`breakers_uuid_test member KIND ARG`,
 * see tests/sim/group/group_helpers.h) with a group budget of 256 MiB per
 * GPU; SIMGPU_MEM is large, so what is checked is lmshim's accounting.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
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

#define GROUP_DIR_TEMPLATE "/tmp/lmshim-breakers-uuid-XXXXXX"
#include "../group/group_helpers.h"

#define MAX_VISIBLE 16

/* ---- members ---- */

/* Holds the i-th number of "A,B,..." MiB on its visible device i, on the
 * device itself (within the group's budget), touching the devices in the
 * order given; says so on fd 3, waits for fd 4 to close, frees, leaves. */
static void member_holdn(const char *arg)
{
    uint64_t size[MAX_VISIBLE];
    hold_per_device(size, mib_list(arg, size, MAX_VISIBLE));
}

/* For each visible device d of "U0,U1,...": cuMemGetInfo says a total of
 * 256 MiB of which Ud MiB are used (by the other members), and all the
 * rest, and no more, can be had on the device. */
static void member_sees(const char *arg)
{
    uint64_t used[MAX_VISIBLE];
    int n = mib_list(arg, used, MAX_VISIBLE);
    OK(cuInit(0));
    for (int d = 0; d < n; d++) {
        CUdeviceptr p = sees_on_device(d, 256 * MiB, used[d]), q;
        OK(cuMemAlloc(&q, 2 * MiB));   /* past the budget: off the device */
        CHECK(is_managed(q) == 1);
        OK(cuMemFree(q));
        OK(cuMemFree(p));
    }
}

/* Allocates and frees a few MiB on each visible device, over and over,
 * until it is killed (the kill storm's members). */
static void member_churn(const char *arg)
{
    (void)arg;
    OK(cuInit(0));
    int n;
    OK(cuDeviceGetCount(&n));
    for (unsigned i = 0;; i++) {
        int d = (int)(i % (unsigned)n);
        primary_context(d);
        CUdeviceptr p;
        OK(cuMemAlloc(&p, (1 + i % 3) * MiB));
        OK(cuMemFree(p));
    }
}

/* arg "P0,P1,C0,C1" or "P0,P1,C0,C1,late" (MiB): holds P0 on its device 0
 * and P1 on device 1 (late: while it cannot join, so it keeps its own
 * budget; then says 'a' on fd 3 and waits for a byte on fd 4: it may join
 * now), then forks a child that joins on its own at its first call and
 * holds C0 and C1 on the device, says so on fd 3 and waits for fd 4 to
 * close; the child frees and exits, then the parent. */
static void member_fork_holds(const char *arg)
{
    uint64_t size[MAX_VISIBLE] = {0};
    mib_list(arg, size, MAX_VISIBLE);
    bool late = strstr(arg, "late") != NULL;
    CUdeviceptr p[2], q[2];
    for (int d = 0; d < 2; d++) {
        primary_context(d);
        OK(cuMemAlloc(&p[d], size[d]));
    }
    char c;
    if (late)
        CHECK(write(3, "a", 1) == 1 && read(4, &c, 1) == 1);
    wait_published();
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (int d = 0; d < 2; d++) {
            primary_context(d);
            OK(cuMemAlloc(&q[d], size[2 + d]));
            CHECK(is_managed(q[d]) == 0);
            size_t f, t;
            OK(cuMemGetInfo(&f, &t));
            CHECK_EQ_U(t, 256 * MiB);   /* the group's budget */
        }
        CHECK(write(3, "r", 1) == 1);
        wait_release();
        for (int d = 0; d < 2; d++) {
            primary_context(d);
            OK(cuMemFree(q[d]));
        }
        exit(0);
    }
    close(3);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    for (int d = 0; d < 2; d++) {
        primary_context(d);
        OK(cuMemFree(p[d]));
    }
}

/* What a thread of member_threads does: on device `dev`, 400 steps of
 * cudaMalloc (8 MiB) or cudaFree of one it holds, chosen at random; keeps
 * what it holds at the end in `kept` (bytes). */
typedef struct churner {
    int dev;
    uint64_t seed;
    void *held[64];
    int n;
    uint64_t kept;
} churner;

static pthread_barrier_t churn_done;   /* the threads and the member's main thread */

/* The body of a churner thread (arg: its churner). */
static void *churn_thread(void *arg)
{
    churner *c = arg;
    CHECK(cudaSetDevice(c->dev) == cudaSuccess);
    for (int step = 0; step < 400; step++) {
        if (c->n > 0 && (c->n == 64 || xorshift(&c->seed) % 3 == 0)) {
            int k = (int)(xorshift(&c->seed) % (uint64_t)c->n);
            CHECK(cudaFree(c->held[k]) == cudaSuccess);
            c->held[k] = c->held[--c->n];
            continue;
        }
        void *p = NULL;
        cudaError_t e = cudaMalloc(&p, 8 * MiB);
        CHECK(e == cudaSuccess || e == cudaErrorMemoryAllocation);
        if (e == cudaSuccess)
            c->held[c->n++] = p;
        else
            cudaGetLastError();
    }
    c->kept = (uint64_t)c->n * 8 * MiB;
    pthread_barrier_wait(&churn_done);
    pthread_barrier_wait(&churn_done);   /* the release */
    CHECK(cudaSetDevice(c->dev) == cudaSuccess);
    for (int k = 0; k < c->n; k++)
        CHECK(cudaFree(c->held[k]) == cudaSuccess);
    return NULL;
}

/* Eight threads, thread t on visible device t mod (the device count),
 * allocate and free 8 MiB blocks with cudaMalloc against the group's
 * budget (LMS_ON_OOM=fail); then it writes "kept bytes" per visible device,
 * one a line, to the file `arg`, says so on fd 3, waits for fd 4 to close,
 * frees. */
static void member_threads(const char *arg)
{
    int n;
    CHECK(cudaGetDeviceCount(&n) == cudaSuccess);
    enum { T = 8 };
    churner c[T];
    pthread_t th[T];
    CHECK(pthread_barrier_init(&churn_done, NULL, T + 1) == 0);
    for (int t = 0; t < T; t++) {
        c[t] = (churner){.dev = t % n, .seed = 0x2545f4914f6cdd1dull * (uint64_t)(t + 1) + (uint64_t)getpid()};
        CHECK(pthread_create(&th[t], NULL, churn_thread, &c[t]) == 0);
    }
    pthread_barrier_wait(&churn_done);
    FILE *f = fopen(arg, "w");
    CHECK(f != NULL);
    for (int d = 0; d < n; d++) {
        uint64_t kept = 0;
        for (int t = 0; t < T; t++)
            kept += c[t].dev == d ? c[t].kept : 0;
        fprintf(f, "%llu\n", (unsigned long long)kept);
    }
    CHECK(fclose(f) == 0);
    CHECK(write(3, "r", 1) == 1);
    wait_release();
    pthread_barrier_wait(&churn_done);
    for (int t = 0; t < T; t++)
        CHECK(pthread_join(th[t], NULL) == 0);
}

/* Allocates 20 MiB on each visible device and frees it: anything but a
 * crash or a wrong answer is fine (the group file may be garbage); with
 * arg "device" the memory must be on the device. */
static void member_survives(const char *arg)
{
    OK(cuInit(0));
    int n;
    OK(cuDeviceGetCount(&n));
    for (int d = 0; d < n; d++) {
        primary_context(d);
        size_t f, t;
        OK(cuMemGetInfo(&f, &t));
        CHECK(f <= t);
        CUdeviceptr p;
        OK(cuMemAlloc(&p, 20 * MiB));
        if (strcmp(arg, "device") == 0)
            CHECK(is_managed(p) == 0);
        OK(cuMemFree(p));
    }
}

/* Prints what tells each visible device apart, one line each: UUID (hex),
 * PCI bus id, board group id (driver attributes), the runtime's
 * pciBusID, and the name. */
static void member_identity(const char *arg)
{
    (void)arg;
    OK(cuInit(0));
    int n;
    OK(cuDeviceGetCount(&n));
    for (int d = 0; d < n; d++) {
        CUuuid u;
        OK(cuDeviceGetUuid_v2(&u, d));
        for (int i = 0; i < 16; i++)
            printf("%02x", (unsigned char)u.bytes[i]);
        int bus, board;
        OK(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d));
        OK(cuDeviceGetAttribute(&board, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID, d));
        struct cudaDeviceProp prop;
        CHECK(cudaGetDeviceProperties(&prop, d) == cudaSuccess);
        char name[64];
        OK(cuDeviceGetName(name, sizeof name, d));
        printf(" %d %d %d %s\n", bus, board, prop.pciBusID, name);
    }
}

/* ---- what the cases share ---- */

static char uuid[MAX_VISIBLE][33];   /* the UUIDs of the physical devices, hex */
static int physical;                  /* how many */

static int identities(int n, const char *cvd, char out[][128]);

/* Reads the UUID of each of `n` physical devices (a member with every
 * device visible prints them), and sets SIMGPU_DEVICES=n for the members. */
static void read_uuids(int n)
{
    char lines[MAX_VISIBLE][128];
    physical = identities(n, NULL, lines);
    CHECK_EQ_U(physical, n);
    for (int d = 0; d < n; d++)
        snprintf(uuid[d], sizeof uuid[d], "%.32s", lines[d]);
    char count[8];
    snprintf(count, sizeof count, "%d", n);
    setenv("SIMGPU_DEVICES", count, 1);
}

/* The group's entry of physical device `dev`, or -1; checks that no
 * other entry has its UUID. */
static int entry_of(lms_group_header *h, int dev)
{
    int found = -1;
    for (int g = 0; g < LMS_GROUP_DEVICES; g++) {
        if (!entry_has_uuid(h, g, uuid[dev]))
            continue;
        if (found >= 0) {
            fprintf(stderr, "GPU %d has entries %d and %d\n", dev, found, g);
            CHECK(!"one entry per GPU");
        }
        found = g;
    }
    return found;
}

/* Every entry in use but `others` has the UUID of one of the physical
 * devices (never an ordinal, never two entries for one GPU), and the
 * group's charge on each is the sum of its members'. Under the group's
 * lock. */
static void check_table_but(lms_group_header *h, int others)
{
    lock_group(h);
    int used = 0;
    for (int d = 0; d < physical; d++)
        used += entry_of(h, d) >= 0;
    int taken = 0;
    for (int g = 0; g < LMS_GROUP_DEVICES; g++) {
        taken += atomic_load(&h->gpu_kind[g]) != LMS_GPU_FREE;
        uint64_t sum = 0;
        for (int i = 0; i < LMS_GROUP_SLOTS; i++)
            sum += atomic_load(&lms_groupfile_slot(h, i)->charged[g]);
        if (sum != atomic_load(&h->charged[g])) {
            fprintf(stderr, "entry %d: charged %llu, its members %llu\n", g,
                    (unsigned long long)atomic_load(&h->charged[g]), (unsigned long long)sum);
            CHECK(!"the group's charge is the sum of its members'");
        }
    }
    pthread_mutex_unlock(&h->lock);
    CHECK_EQ_U(taken, used + others);
}

static void check_table(lms_group_header *h) { check_table_but(h, 0); }

/* `lmshim top GROUP --once` succeeds (rc `want`), and with --json writes
 * JSON that python3's json.tool reads. */
static void top_parses(const char *group, int want)
{
    const char *cli = getenv("LMSHIM_CLI");
    CHECK(cli != NULL);
    char out[128], cmd[2048];
    snprintf(out, sizeof out, "%s/top.out", dir);
    snprintf(cmd, sizeof cmd, "timeout 20 '%s' top %s --dir '%s' --once > '%s' 2>&1; test $? = %d", cli, group, dir,
             out, want);
    expect(cmd, out, "top's text view");
    snprintf(cmd, sizeof cmd, "timeout 20 '%s' top %s --dir '%s' --once --json > '%s' 2>/dev/null; test $? = %d && "
             "python3 -m json.tool --json-lines '%s' > /dev/null 2>&1", cli, group, dir, out, want, out);
    expect(cmd, out, "top --json parses");
}

/* The physical device of visible ordinal i under the list cvd. */
static int physical_of(const char *cvd, int i)
{
    const char *s = cvd;
    for (int k = 0; k < i; k++)
        s = strchr(s, ',') + 1;
    return atoi(s);
}

/* How many devices the list cvd names (a valid list). */
static int count_of(const char *cvd)
{
    int n = 1;
    for (const char *s = cvd; *s; s++)
        n += *s == ',';
    return n;
}

/* ---- cases ---- */

/* Twelve members join at once, each seeing some of four GPUs in its own
 * order and holding a different amount on each: every GPU gets exactly one
 * entry (never two, never one shared by two GPUs), charged with what the
 * members hold on that GPU, and every member's slot says the same. Three
 * rounds; top reads the group in each. */
static void join_storm(void)
{
    fresh_dir();
    read_uuids(4);
    static const char *orders[] = {"0,1,2,3", "3,2,1,0", "1,3",   "2", "2,0,3,1", "3",
                                   "1,0",     "0,2",     "3,1,2,0", "1", "2,3,0",   "0"};
    enum { N = sizeof orders / sizeof orders[0] };
    lms_group_header *h = NULL;
    for (int round = 0; round < 3; round++) {
        pid_t pid[N];
        int ready[N], release[N];
        uint64_t want[MAX_VISIBLE] = {0};
        for (int m = 0; m < N; m++) {
            const char *cvd = orders[(m + round * 5) % N];
            char arg[64] = "";
            for (int i = 0; i < count_of(cvd); i++) {
                uint64_t mib = 2 * (uint64_t)(m + 1 + i);   /* even: no rounding */
                snprintf(arg + strlen(arg), sizeof arg - strlen(arg), "%s%llu", i ? "," : "", (unsigned long long)mib);
                want[physical_of(cvd, i)] += mib * MiB;
            }
            pid[m] = launch_member("storm", "256M", cvd, "holdn", arg, NULL, &ready[m], &release[m]);
        }
        for (int m = 0; m < N; m++)
            wait_ready(ready[m], pid[m]);
        if (!h)
            h = map_group("storm");
        check_table(h);
        for (int d = 0; d < 4; d++) {
            int g = entry_of(h, d);
            CHECK(g >= 0);
            CHECK_EQ_U(atomic_load(&h->charged[g]), want[d]);
            CHECK_EQ_U(atomic_load(&h->budget[g]), 256 * MiB);
        }
        top_parses("storm", 0);
        for (int m = 0; m < N; m++)
            close(release[m]);
        for (int m = 0; m < N; m++)
            reap(pid[m]);
        check_table(h);
        for (int d = 0; d < 4; d++)
            CHECK_EQ_U(atomic_load(&h->charged[entry_of(h, d)]), 0);
    }
}

/* Members killed (SIGKILL) at random moments of their start: while they
 * take the group's lock, claim a slot, find or claim their GPUs' entries,
 * charge. After the storm no GPU has two entries, no entry an unknown key,
 * and a member on each GPU, in any order, gets the whole budget. */
static void kill_claiming(void)
{
    fresh_dir();
    read_uuids(4);
    static const char *orders[] = {"3,2,1,0", "1,3", "2,0,3,1", "0,1,2,3", "3", "1,0,2"};
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    lms_group_header *h = NULL;
    for (int round = 0; round < 12; round++) {
        pid_t pid[6];
        for (int m = 0; m < 6; m++) {
            setenv("CUDA_VISIBLE_DEVICES", orders[(m + round) % 6], 1);
            pid[m] = spawn("kill", "256M", "churn", "", NULL);
        }
        unsetenv("CUDA_VISIBLE_DEVICES");
        for (int m = 0; m < 6; m++) {
            usleep((useconds_t)(xorshift(&seed) % 30000));
            kill(pid[m], SIGKILL);
        }
        for (int m = 0; m < 6; m++) {
            int st;
            CHECK(waitpid(pid[m], &st, 0) == pid[m]);
            CHECK(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
        }
        if (!h)
            h = try_map_group("kill");   /* not yet, or left half made by a member killed making it */
        if (h)
            check_table(h);
    }
    int release;
    pid_t keep = start_visible("kill", "2,1", "holdn", "10,20", &release);   /* GPU 2: 10 MiB, GPU 1: 20 MiB */
    if (!h)
        h = map_group("kill");
    run_visible("kill", "0,1,2,3", "sees", "0,20,10,0");
    run_visible("kill", "3,2,1,0", "sees", "0,10,20,0");
    check_table(h);
    top_parses("kill", 0);
    close(release);
    reap(keep);
}

/* Writes a key into every free entry of the group (under its lock), as
 * members on other GPUs (MIG instances, each with a UUID of its own) that
 * have all ended leave them; each such entry with a budget and no charge. */
static int fill_entries(lms_group_header *h)
{
    int n = 0;
    lock_group(h);
    for (int g = 0; g < LMS_GROUP_DEVICES; g++) {
        if (atomic_load(&h->gpu_kind[g]) != LMS_GPU_FREE)
            continue;
        for (int i = 0; i < LMS_GPU_KEY_BYTES; i++)
            h->gpu_key[g][i] = (uint8_t)(0xa0 + g + i);
        atomic_store(&h->budget[g], 256 * MiB);
        atomic_store(&h->peak[g], 100 * MiB);
        atomic_store(&h->gpu_kind[g], LMS_GPU_UUID);
        n++;
    }
    pthread_mutex_unlock(&h->lock);
    return n;
}

/* Takes a free slot of group `name` as a live fake member that uses the
 * entries of mask `entries` (the test holds its record lock: answers the
 * descriptor, -1 if no slot is free; closing it makes the member dead). */
static int fake_member(lms_group_header *h, const char *name, uint32_t entries)
{
    char path[256];
    CHECK(lms_groupfile_path(dir, name, path, sizeof path) == 0);
    lock_group(h);
    int fd = -1;
    for (int i = 0; i < LMS_GROUP_SLOTS && fd < 0; i++) {
        lms_group_slot *s = lms_groupfile_slot(h, i);
        if (atomic_load(&s->state) == LMS_SLOT_LIVE)
            continue;
        fd = open(path, O_RDWR | O_CLOEXEC);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(i), .l_len = 1};
        CHECK(fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) == 0);
        s->pid = 999999;
        s->joined_ns = 1;
        snprintf(s->command, sizeof s->command, "fake");
        atomic_store(&s->entries, entries);
        atomic_store(&s->state, LMS_SLOT_LIVE);
    }
    pthread_mutex_unlock(&h->lock);
    return fd;
}

/* Every entry has been claimed by some GPU, and the members on all but
 * one of them have ended, while that one member runs on: a newcomer on a
 * GPU the group has no entry for shares that GPU's budget with the other
 * members on it (an entry no member uses is taken for it, afresh), rather
 * than each such member keeping a budget of its own. While members use
 * all 16 entries a newcomer on another GPU keeps its own budget; once one
 * of them is dead, the next newcomer reclaims its slot and takes an entry
 * it used. */
static void entries_full(void)
{
    fresh_dir();
    read_uuids(3);
    int release;
    pid_t keep = start_visible("full", "0", "holdn", "10", &release);
    lms_group_header *h = map_group("full");
    int g0 = entry_of(h, 0);
    CHECK_EQ_U(fill_entries(h), LMS_GROUP_DEVICES - 1);
    int rel_a;
    pid_t a = start_visible("full", "1", "holdn", "200", &rel_a);
    int g1 = entry_of(h, 1);
    CHECK(g1 >= 0);
    CHECK_EQ_U(atomic_load(&h->charged[g1]), 200 * MiB);
    CHECK_EQ_U(atomic_load(&h->peak[g1]), 200 * MiB);   /* the entry starts afresh */
    run_visible("full", "1,0", "sees", "200,10");
    check_table_but(h, LMS_GROUP_DEVICES - 2);
    top_parses("full", 0);
    /* Every entry used by a running member. */
    int fake = fake_member(h, "full", 0xffffu & ~(1u << g0 | 1u << g1));
    CHECK(fake >= 0);
    run_visible("full", "2", "survives", "device");
    CHECK(entry_of(h, 2) < 0);
    close(fake);   /* that member dies */
    run_visible("full", "2,1", "sees", "0,200");
    int g2 = entry_of(h, 2);
    CHECK(g2 >= 0 && g2 != g0 && g2 != g1);
    CHECK_EQ_U(atomic_load(&h->reclaimed_members), 1);
    check_table_but(h, LMS_GROUP_DEVICES - 3);
    close(rel_a);
    reap(a);
    close(release);
    reap(keep);
    /* The group empty, the next member starts it afresh: its GPUs only. */
    run_visible("full", "1", "sees", "0");
    check_table(h);
    CHECK(entry_of(h, 1) >= 0);
}

/* A fork child of a member that sees the GPUs in another order than the
 * machine: the child joins on its own and charges each GPU's entry with
 * what it holds there; the parent's charge stays the parent's. */
static void fork_child(void)
{
    fresh_dir();
    read_uuids(2);
    int release;
    pid_t pid = start_visible("forked", "1,0", "fork_holds", "30,50,6,10", &release);
    lms_group_header *h = map_group("forked");
    int g0 = entry_of(h, 0), g1 = entry_of(h, 1);
    CHECK(g0 >= 0 && g1 >= 0);
    CHECK_EQ_U(atomic_load(&h->charged[g1]), 36 * MiB);
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 60 * MiB);
    lms_group_slot *parent = slot_of(h, pid);
    CHECK(parent != NULL);
    CHECK_EQ_U(atomic_load(&parent->charged[g1]), 30 * MiB);
    CHECK_EQ_U(atomic_load(&parent->charged[g0]), 50 * MiB);
    CHECK_EQ_U(live_slots(h), 2);
    check_table(h);
    top_parses("forked", 0);
    close(release);
    reap(pid);
    check_table(h);
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 0);
    CHECK_EQ_U(atomic_load(&h->charged[g1]), 0);
}

/* A process that set both its devices up outside the group (it could not
 * join) forks a child that joins: the child's devices, set up before it
 * joined, are charged to their GPUs' entries (its device 0 is GPU 1). */
static void late_join(void)
{
    fresh_dir();
    read_uuids(2);
    int release;
    pid_t keep = start_visible("late", "0", "holdn", "100", &release);   /* GPU 0: 100 MiB */
    lms_group_header *h = map_group("late");
    int fds[LMS_GROUP_SLOTS];
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        fds[i] = fake_member(h, "late", 0);
    CHECK(fds[LMS_GROUP_SLOTS - 2] >= 0 && fds[LMS_GROUP_SLOTS - 1] < 0);   /* every slot taken */
    int ready, go;
    pid_t pid = launch_member("late", "256M", "1,0", "fork_holds", "2,2,40,20,late", NULL, &ready, &go);
    char c;
    CHECK(read(ready, &c, 1) == 1 && c == 'a');
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        if (fds[i] >= 0) {
            close(fds[i]);   /* a fake member gone: its slot can be had */
            fds[i] = -1;
            break;
        }
    CHECK(write(go, "g", 1) == 1);
    wait_ready(ready, pid);
    int g0 = entry_of(h, 0), g1 = entry_of(h, 1);
    CHECK(g0 >= 0 && g1 >= 0);
    CHECK_EQ_U(atomic_load(&h->charged[g1]), 40 * MiB);
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 120 * MiB);
    check_table(h);
    for (int i = 0; i < LMS_GROUP_SLOTS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    close(go);
    reap(pid);
    close(release);
    reap(keep);
    check_table(h);
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 0);
    CHECK_EQ_U(atomic_load(&h->charged[g1]), 0);
}

/* Reads the n numbers (one a line) of file path. */
static void read_numbers(const char *path, uint64_t *out, int n)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    for (int i = 0; i < n; i++) {
        unsigned long long v;
        CHECK(fscanf(f, "%llu", &v) == 1);
        out[i] = v;
    }
    fclose(f);
}

/* Two members on three GPUs in different orders, eight threads each,
 * allocate and free with cudaMalloc on every device at once against the
 * group's budget: each GPU's charge is what the two hold on it, within the
 * budget, and each member's slot holds its own share. */
static void threads_devices(void)
{
    fresh_dir();
    read_uuids(3);
    setenv("LMS_ON_OOM", "fail", 1);
    static const char *orders[2] = {"2,0,1", "1,2,0"};
    for (int round = 0; round < 3; round++) {
        pid_t pid[2];
        int ready[2], release[2];
        char out[2][128];
        for (int m = 0; m < 2; m++) {
            snprintf(out[m], sizeof out[m], "%s/kept%d", dir, m);
            pid[m] = launch_member("thr", "256M", orders[m], "threads", out[m], NULL, &ready[m], &release[m]);
        }
        for (int m = 0; m < 2; m++)
            wait_ready(ready[m], pid[m]);
        lms_group_header *h = map_group("thr");
        check_table(h);
        uint64_t kept[2][3], want[3] = {0};
        for (int m = 0; m < 2; m++) {
            read_numbers(out[m], kept[m], 3);
            lms_group_slot *s = slot_of(h, pid[m]);
            CHECK(s != NULL);
            for (int i = 0; i < 3; i++) {
                int dev = physical_of(orders[m], i);
                want[dev] += kept[m][i];
                CHECK_EQ_U(atomic_load(&s->charged[entry_of(h, dev)]), kept[m][i]);
            }
        }
        for (int d = 0; d < 3; d++) {
            int g = entry_of(h, d);
            CHECK(g >= 0);
            CHECK_EQ_U(atomic_load(&h->charged[g]), want[d]);
            CHECK(want[d] <= 256 * MiB);
            CHECK(atomic_load(&h->peak[g]) <= 256 * MiB);
        }
        top_parses("thr", 0);
        for (int m = 0; m < 2; m++)
            close(release[m]);
        for (int m = 0; m < 2; m++)
            reap(pid[m]);
    }
    unsetenv("LMS_ON_OOM");
}

/* Writes garbage into every free entry of the group's table (kinds out of
 * range, ordinal keys past any device, a UUID key that two entries share,
 * budgets and charges that cannot be) and into the free slots (live dead
 * members with wild charges and names), under the group's lock. */
static void scribble(lms_group_header *h)
{
    uint64_t seed = 0x853c49e6748fea9bull;
    lock_group(h);
    int k = 0;
    for (int g = 0; g < LMS_GROUP_DEVICES; g++) {
        if (atomic_load(&h->gpu_kind[g]) != LMS_GPU_FREE)
            continue;
        static const uint32_t kinds[] = {3, 0xffffffffu, LMS_GPU_INDEX, LMS_GPU_UUID, 0x80000000u};
        uint32_t kind = kinds[k % 5];
        for (int i = 0; i < LMS_GPU_KEY_BYTES; i++)
            h->gpu_key[g][i] = (uint8_t)xorshift(&seed);
        if (k == 3 || k == 8)   /* a UUID of another machine's GPU, in two entries */
            memset(h->gpu_key[g], 0x5a, LMS_GPU_KEY_BYTES);
        atomic_store(&h->budget[g], xorshift(&seed));
        atomic_store(&h->charged[g], k % 2 ? UINT64_MAX : xorshift(&seed));
        atomic_store(&h->peak[g], UINT64_MAX - (uint64_t)k);
        atomic_store(&h->gpu_kind[g], kind);
        k++;
    }
    for (int i = 0; i < LMS_GROUP_SLOTS; i += 3) {
        lms_group_slot *s = lms_groupfile_slot(h, i);
        if (atomic_load(&s->state) == LMS_SLOT_LIVE)
            continue;
        s->pid = (int32_t)xorshift(&seed);
        s->joined_ns = xorshift(&seed);
        for (size_t b = 0; b < sizeof s->command; b++)
            s->command[b] = (char)(xorshift(&seed) | 0x80);
        for (int g = 0; g < LMS_GROUP_DEVICES; g++) {
            atomic_store(&s->charged[g], 0);
            atomic_store(&s->device_bytes[g], xorshift(&seed));
            atomic_store(&s->managed_bytes[g], xorshift(&seed));
            atomic_store(&s->resident_bytes[g], UINT64_MAX);
            atomic_store(&s->fetched_bytes[g], xorshift(&seed));
            atomic_store(&s->evicted_bytes[g], xorshift(&seed));
        }
        atomic_store(&s->state, LMS_SLOT_LIVE);
    }
    pthread_mutex_unlock(&h->lock);
}

/* A group file whose entry table and free slots a program wrote garbage
 * into while a member runs: members on either GPU join, allocate and
 * leave without a crash, the GPU of the running member keeps its entry,
 * and `lmshim top` reads it (text and JSON). The same for a copy that a
 * stranger (another user) owns: members refuse it, or use it when it and
 * they are shared with every user (LMS_GROUP_MODE=0666); top reads it. */
static void crafted(void)
{
    fresh_dir();
    read_uuids(2);
    int release;
    pid_t keep = start_visible("junk", "0", "holdn", "10", &release);
    lms_group_header *h = map_group("junk");
    int g0 = entry_of(h, 0);
    CHECK(g0 >= 0);
    scribble(h);
    top_parses("junk", 0);
    run_visible("junk", "1,0", "survives", "");
    run_visible("junk", "0", "survives", "device");
    CHECK_EQ_U(entry_of(h, 0), g0);
    CHECK_EQ_U(atomic_load(&h->charged[g0]), 10 * MiB);
    top_parses("junk", 0);
    /* A stranger's copy. */
    char from[256], to[256], cmd[2048];
    CHECK(lms_groupfile_path(dir, "junk", from, sizeof from) == 0);
    CHECK(lms_groupfile_path(dir, "alien", to, sizeof to) == 0);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod 0666 '%s' && chown 65534:65534 '%s'", from, to, to, to);
    CHECK(system(cmd) == 0);
    lms_group_header *a = map_group("alien");
    snprintf(a->name, sizeof a->name, "alien");
    run_visible("alien", "1,0", "survives", "device");   /* refused: its own budget, on the device */
    top_parses("alien", 0);
    scribble(a);
    uint64_t reclaimed = atomic_load(&a->reclaimed_members);
    setenv("LMS_GROUP_MODE", "0666", 1);   /* shared with every user on purpose: used */
    run_visible("alien", "1,0", "survives", "");
    CHECK(atomic_load(&a->reclaimed_members) > reclaimed);   /* it joined: the dead were reclaimed */
    unsetenv("LMS_GROUP_MODE");
    top_parses("alien", 0);
    top_parses("", 0);   /* every group of the directory: one line each */
    close(release);
    reap(keep);
    top_parses("junk", 0);
}

/* Hex digit value of c. */
static uint8_t hex_value(char c) { return (uint8_t)(c <= '9' ? c - '0' : c - 'a' + 10); }

/* A member that dies holding the group's lock half-way through taking an
 * entry for a GPU: in one entry it wrote the key's bytes and not its kind,
 * in another it had made the entry free and not yet zeroed its budget (as
 * a member that starts an empty group afresh frees every entry, kind
 * first).
 * The next member repairs, finds no entry for its GPU, takes a free one
 * afresh (the group's budget is its, not the stale one) and no GPU ends up
 * with two entries. */
static void dies_mid_claim(void)
{
    fresh_dir();
    read_uuids(2);
    int release;
    pid_t keep = start_visible("mid", "0", "holdn", "10", &release);
    lms_group_header *h = map_group("mid");
    uint64_t repairs = atomic_load(&h->repairs);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        lock_group(h);
        int done = 0;
        for (int g = 0; g < LMS_GROUP_DEVICES && done < 2; g++) {
            if (atomic_load(&h->gpu_kind[g]) != LMS_GPU_FREE)
                continue;
            for (int i = 0; i < LMS_GPU_KEY_BYTES; i++)   /* GPU 1's UUID, kind not yet written */
                h->gpu_key[g][i] = (uint8_t)(hex_value(uuid[1][2 * i]) << 4 | hex_value(uuid[1][2 * i + 1]));
            atomic_store(&h->budget[g], 7 * MiB);          /* a budget of the GPU it had before */
            atomic_store(&h->peak[g], 5 * MiB);
            done++;
        }
        _exit(0);   /* holding the lock */
    }
    reap(pid);
    run_visible("mid", "1,0", "sees", "0,10");
    CHECK_EQ_U(atomic_load(&h->repairs), repairs + 1);
    check_table(h);
    int g1 = entry_of(h, 1);
    CHECK(g1 >= 0);
    CHECK_EQ_U(atomic_load(&h->budget[g1]), 256 * MiB);
    CHECK_EQ_U(atomic_load(&h->peak[g1]), 256 * MiB);
    top_parses("mid", 0);
    close(release);
    reap(keep);
}

/* The lines member_identity prints with SIMGPU_DEVICES=n and
 * CUDA_VISIBLE_DEVICES=cvd (unset when NULL), into out[]; answers how many. */
static int identities(int n, const char *cvd, char out[][128])
{
    char cmd[4608];
    snprintf(cmd, sizeof cmd, "env -u CUDA_VISIBLE_DEVICES -u LMS_GROUP %s%s%s SIMGPU_DEVICES=%d GROUP_TEST_DIR=/tmp "
             "'%s' member identity x", cvd ? "CUDA_VISIBLE_DEVICES='" : "", cvd ? cvd : "", cvd ? "'" : "", n, self);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    int k = 0;
    while (k < MAX_VISIBLE && fgets(out[k], 128, p))
        k++;
    CHECK(pclose(p) == 0);
    return k;
}

/* What tells a GPU apart follows the physical device, not the ordinal
 * CUDA_VISIBLE_DEVICES gives it: its UUID, name, PCI bus id (driver
 * attribute and the runtime's property) and board group. A program that
 * matches GPUs between processes by bus id (as NCCL does) must see one
 * GPU as one. */
static void physical_identity(void)
{
    char all[MAX_VISIBLE][128], some[MAX_VISIBLE][128];
    CHECK_EQ_U(identities(3, NULL, all), 3);
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < i; k++)
            CHECK(strcmp(all[i] + 33, all[k] + 33) != 0);
    static const char *lists[] = {"2,0", "1", "2,1,0"};
    for (int l = 0; l < 3; l++) {
        int n = identities(3, lists[l], some);
        CHECK_EQ_U(n, count_of(lists[l]));
        for (int i = 0; i < n; i++)
            if (strcmp(some[i], all[physical_of(lists[l], i)]) != 0) {
                fprintf(stderr, "CUDA_VISIBLE_DEVICES=%s, device %d: %s  expected %s", lists[l], i, some[i],
                        all[physical_of(lists[l], i)]);
                CHECK(!"a device's identity is its physical device's");
            }
    }
}

static const member_kind members[] = {
    {"holdn", member_holdn}, {"sees", member_sees}, {"churn", member_churn},
    {"fork_holds", member_fork_holds}, {"threads", member_threads},
    {"survives", member_survives}, {"identity", member_identity},
};

static const test_case cases[] = {
    {"join_storm", join_storm},
    {"kill_claiming", kill_claiming},
    {"entries_full", entries_full},
    {"fork_child", fork_child},
    {"late_join", late_join},
    {"threads_devices", threads_devices},
    {"crafted", crafted},
    {"physical_identity", physical_identity},
    {"dies_mid_claim", dies_mid_claim},
};

int main(int argc, char **argv)
{
    return group_main(argc, argv, members, sizeof members / sizeof members[0], cases, sizeof cases / sizeof cases[0]);
}
