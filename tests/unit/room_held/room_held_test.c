/*
 * room_held_test.c — the residency engine's room (lms_account_room) is
 * the budget less what no managed chunk of this process can have: CUDA
 * arrays and the graph memory pool, over a fake driver, and in a group
 * the other members' charges (not this member's, made before it joined). Each comes back when it goes. Run with
 * LMS_LIMIT=256M (meson.build).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/fake_driver.h"
#include "account.h"
#include "arrays.h"
#include "graph.h"
#include "group.h"
#include "groupfile.h"
#include "options.h"

#define MiB (1ull << 20)

static size_t pool_reserved;   /* what the fake driver's graph pool holds */

static CUresult fake_ctx(CUcontext *c) { *c = (CUcontext)(uintptr_t)0x1; return CUDA_SUCCESS; }
static CUresult fake_ctx_device(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
static CUresult fake_destroy(CUarray a) { (void)a; return CUDA_SUCCESS; }

/* cuDeviceGetGraphMemAttribute: the pool's reserved bytes. */
static CUresult fake_graph_attr(CUdevice d, CUgraphMem_attribute attr, void *value)
{
    (void)d;
    if (attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)
        return CUDA_ERROR_INVALID_VALUE;
    *(cuuint64_t *)value = pool_reserved;
    return CUDA_SUCCESS;
}

/* A 16 MiB array and a 64 MiB graph pool each take their charge out of
 * the room, and give it back when they go. */
static void arrays_pools(void)
{
    lms_options_load();
    fake_driver_install(NULL);
    lms_drv.cuCtxGetCurrent = fake_ctx;
    lms_drv.cuCtxGetDevice = fake_ctx_device;
    lms_drv.cuDeviceGetGraphMemAttribute = fake_graph_attr;
    lms_account *a = lms_account_of(0);
    CHECK(a && a->budget == 256 * MiB);
    CHECK_EQ_U(lms_account_room(a), 256 * MiB);

    CUDA_ARRAY3D_DESCRIPTOR desc = {.Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CUarray arr = (CUarray)(uintptr_t)0x1000;
    CHECK_EQ_U(lms_array_created(arr, &desc, (lms_array_room){.device = -1}), CUDA_SUCCESS);
    CHECK_EQ_U(lms_account_used(a), 16 * MiB);
    CHECK_EQ_U(lms_account_room(a), 240 * MiB);

    pool_reserved = 64 * MiB;
    lms_graph_mem_sync(0, true);
    CHECK_EQ_U(lms_account_used(a), 80 * MiB);
    CHECK_EQ_U(lms_account_room(a), 176 * MiB);

    CHECK_EQ_U(lms_array_destroy(arr, fake_destroy), CUDA_SUCCESS);
    CHECK_EQ_U(lms_account_room(a), 192 * MiB);
    CHECK_EQ_U(lms_array_destroy(arr, fake_destroy), CUDA_SUCCESS);   /* not recorded any more: nothing changes */
    CHECK_EQ_U(lms_account_room(a), 192 * MiB);

    pool_reserved = 0;   /* trimmed */
    lms_graph_mem_sync(0, true);
    CHECK_EQ_U(lms_account_used(a), 0);
    CHECK_EQ_U(lms_account_room(a), 256 * MiB);
    CHECK_EQ_U(lms_account_room(&lms_accounts[LMS_MAX_DEVICES - 1]), 0);   /* never set up: no budget */
}

/* Sets the group `name` in a fresh directory (made into dir, a
 * mkdtemp template) for lms_options_load to read, and installs the fake
 * driver. */
static void group_env(char *dir, const char *name)
{
    CHECK(mkdtemp(dir) != NULL);
    setenv("LMS_GROUP", name, 1);
    setenv("LMS_GROUP_DIR", dir, 1);
    lms_options_load();
    fake_driver_install(NULL);
}

/* The group file of `name` in dir, mapped here as another member would
 * see it (the caller unmaps it). */
static lms_group_header *group_file(const char *dir, const char *name)
{
    char path[128];
    CHECK(lms_groupfile_path(dir, name, path, sizeof path) == 0);
    int gfd = open(path, O_RDWR);
    CHECK(gfd >= 0);
    lms_group_header *h = mmap(NULL, LMS_GROUP_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, gfd, 0);
    CHECK(h != MAP_FAILED);
    close(gfd);
    return h;
}

/* Unmaps h and removes the group's directory. */
static void group_done(lms_group_header *h, const char *dir)
{
    munmap(h, LMS_GROUP_FILE_BYTES);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* In a group, another member's 100 MiB on the device is not this
 * process's room; its own managed charge is (its chunks can leave). */
static void group_others(void)
{
    char dir[] = "/tmp/lmshim-room-held-XXXXXX";
    group_env(dir, "room");
    lms_group_open();
    CHECK(atomic_load(&lms_group_on));
    lms_account *a = lms_account_of(0);
    CHECK(a && a->budget == 256 * MiB);
    CHECK(lms_account_reserve(a, 10 * MiB, a->budget));   /* a resident managed chunk of its own */
    CHECK_EQ_U(lms_account_room(a), 256 * MiB);

    lms_group_header *h = group_file(dir, "room");
    CHECK_EQ_U(atomic_load(&h->charged[0]), 10 * MiB);
    atomic_fetch_add(&h->charged[0], 100 * MiB);   /* another member's charge */
    CHECK_EQ_U(lms_account_used(a), 110 * MiB);
    CHECK_EQ_U(lms_account_room(a), 156 * MiB);
    atomic_fetch_add(&h->charged[0], 200 * MiB);   /* the others past the budget: no room, not a wrap */
    CHECK_EQ_U(lms_account_room(a), 0);
    atomic_fetch_sub(&h->charged[0], 300 * MiB);
    lms_account_release(a, 10 * MiB);
    CHECK_EQ_U(lms_account_room(a), 256 * MiB);
    group_done(h, dir);
}

/* Charges made before joining the group (50 MiB here: a fork child's of
 * a parent that kept its own budget) are in `used` but not the group's:
 * the others' charge is the group's less this member's slot, so another
 * member's 100 MiB stays 100 MiB against the room. */
static void group_joined_late(void)
{
    char dir[] = "/tmp/lmshim-room-late-XXXXXX";
    group_env(dir, "late");
    lms_account *a = lms_account_of(0);
    CHECK(a && a->budget == 256 * MiB);
    CHECK(lms_account_reserve(a, 50 * MiB, a->budget));   /* before joining: its own budget */
    lms_group_open();
    CHECK(atomic_load(&lms_group_on));
    CHECK_EQ_U(lms_account_room(a), 256 * MiB);
    lms_group_header *h = group_file(dir, "late");
    CHECK(lms_account_reserve(a, 10 * MiB, a->budget));   /* the entry is found at the first charge in the group */
    CHECK_EQ_U(atomic_load(&h->charged[0]), 10 * MiB);
    atomic_fetch_add(&h->charged[0], 100 * MiB);   /* another member's charge */
    CHECK_EQ_U(lms_account_room(a), 156 * MiB);
    CHECK_EQ_U(lms_group_others(0), 100 * MiB);
    CHECK_EQ_U(lms_group_others(LMS_GROUP_DEVICES), 0);
    atomic_fetch_sub(&h->charged[0], 100 * MiB);
    group_done(h, dir);
}

static const test_case cases[] = {
    {"arrays_pools", arrays_pools},
    {"group_others", group_others},
    {"group_joined_late", group_joined_late},
};

int main(int argc, char **argv)
{
    return run_case(cases, sizeof cases / sizeof cases[0], argc, argv);
}
