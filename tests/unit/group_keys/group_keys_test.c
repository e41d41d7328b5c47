/*
 * group_keys_test.c — how a member keys its devices in the group file
 * (src/engine/group.c) over a fake driver: a device whose UUID the driver
 * cannot tell is keyed by its ordinal after exactly one warning line (for
 * all such devices), a device with a UUID by its UUID, each in an entry of
 * its own; with every entry held by other GPUs a device keeps its own
 * budget (one line) and the group's totals stay untouched, until the
 * member using them is gone: then an entry it used is the next GPU's,
 * afresh. Also the names
 * `lmshim top` gives entries (lms_groupfile_gpu_name). Run with
 * LMS_LIMIT=256M (meson.build); the group directory is made here.
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
#include "group.h"
#include "groupfile.h"
#include "options.h"

#define MiB (1ull << 20)

static const unsigned char uuid1[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                        0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe};

/* cuDeviceGetUuid_v2: device 1 has uuid1, device 4 one of its own; the
 * others fail as a driver that cannot tell may. */
static CUresult fake_uuid(CUuuid *u, CUdevice d)
{
    if (d != 1 && d != 4)
        return CUDA_ERROR_NOT_SUPPORTED;
    memcpy(u->bytes, uuid1, sizeof u->bytes);
    u->bytes[15] = (char)d;
    return CUDA_SUCCESS;
}

/* Lines of the file at path that contain `text`. */
static int lines_with(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, text) != NULL;
    fclose(f);
    return n;
}

static void keys(void)
{
    char dir[] = "/tmp/lmshim-group-keys-XXXXXX", err[64], path[128], cmd[128];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(err, sizeof err, "%s.err", dir);
    setenv("LMS_GROUP", "keys", 1);
    setenv("LMS_GROUP_DIR", dir, 1);
    lms_options_load();
    fake_driver_install(NULL);
    lms_drv.cuDeviceGetUuid = fake_uuid;
    fflush(stderr);
    int saved = dup(2), fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2);
    close(fd);

    lms_group_open();
    CHECK(atomic_load(&lms_group_on));
    lms_account *a0 = lms_account_of(0), *a1 = lms_account_of(1), *a2 = lms_account_of(2);
    CHECK(a0 && a1 && a2);
    CHECK_EQ_U(a0->budget, 256 * MiB);
    CHECK(lms_account_reserve(a0, 10 * MiB, a0->budget));
    CHECK(lms_account_reserve(a1, 20 * MiB, a1->budget));
    CHECK(lms_account_reserve(a2, 30 * MiB, a2->budget));

    CHECK(lms_groupfile_path(dir, "keys", path, sizeof path) == 0);
    int gfd = open(path, O_RDWR);
    CHECK(gfd >= 0);
    lms_group_header *h = mmap(NULL, LMS_GROUP_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, gfd, 0);
    CHECK(h != MAP_FAILED);
    close(gfd);
    /* Entries in the order of first use: device 0 by ordinal, 1 by UUID,
     * 2 by ordinal. */
    CHECK_EQ_U(atomic_load(&h->gpu_kind[0]), LMS_GPU_INDEX);
    CHECK_EQ_U(atomic_load(&h->gpu_kind[1]), LMS_GPU_UUID);
    CHECK_EQ_U(atomic_load(&h->gpu_kind[2]), LMS_GPU_INDEX);
    CHECK_EQ_U(atomic_load(&h->gpu_kind[3]), LMS_GPU_FREE);
    CHECK(memcmp(h->gpu_key[1], uuid1, 15) == 0 && h->gpu_key[1][15] == 1);
    CHECK_EQ_U(atomic_load(&h->charged[0]), 10 * MiB);
    CHECK_EQ_U(atomic_load(&h->charged[1]), 20 * MiB);
    CHECK_EQ_U(atomic_load(&h->charged[2]), 30 * MiB);
    CHECK_EQ_U(atomic_load(&h->budget[1]), 256 * MiB);
    char name[64];
    lms_groupfile_gpu_name(h, 0, true, name, sizeof name);
    CHECK(strcmp(name, "index 0") == 0);
    lms_groupfile_gpu_name(h, 2, false, name, sizeof name);
    CHECK(strcmp(name, "index 2") == 0);
    lms_groupfile_gpu_name(h, 1, true, name, sizeof name);
    CHECK(strcmp(name, "GPU-01234567-89ab-cdef-1032-547698badc01") == 0);
    lms_groupfile_gpu_name(h, 1, false, name, sizeof name);
    CHECK(strcmp(name, "GPU-01234567") == 0);
    lms_groupfile_gpu_name(h, 3, true, name, sizeof name);
    CHECK(strcmp(name, "-") == 0);

    /* Every other entry held by GPUs of another member (alive: its slot's
     * record lock held here): device 3 has no entry and keeps its own
     * budget; device 4's GPU is among them. */
    CHECK(pthread_mutex_lock(&h->lock) == 0);
    for (int g = 3; g < LMS_GROUP_DEVICES; g++) {
        memcpy(h->gpu_key[g], uuid1, sizeof uuid1);
        h->gpu_key[g][15] = (uint8_t)(0x40 + g);
        if (g == 5)
            h->gpu_key[g][15] = 4;   /* device 4's */
        atomic_store(&h->gpu_kind[g], LMS_GPU_UUID);
    }
    lms_group_slot *other = lms_groupfile_slot(h, LMS_GROUP_SLOTS - 1);
    int ofd = open(path, O_RDWR);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(LMS_GROUP_SLOTS - 1),
                       .l_len = 1};
    CHECK(ofd >= 0 && fcntl(ofd, F_OFD_SETLK, &fl) == 0);
    other->pid = 1;
    atomic_store(&other->entries, 0xffffu & ~7u);
    atomic_store(&other->state, LMS_SLOT_LIVE);
    CHECK(pthread_mutex_unlock(&h->lock) == 0);
    lms_account *a3 = lms_account_of(3), *a4 = lms_account_of(4);
    CHECK(a3 && a4);
    CHECK(lms_account_reserve(a3, 40 * MiB, a3->budget));
    CHECK(lms_account_reserve(a4, 50 * MiB, a4->budget));
    CHECK_EQ_U(lms_account_used(a3), 40 * MiB);   /* its own */
    CHECK_EQ_U(atomic_load(&h->charged[5]), 50 * MiB);
    uint64_t total = 0;
    for (int g = 0; g < LMS_GROUP_DEVICES; g++)
        total += atomic_load(&h->charged[g]);
    CHECK_EQ_U(total, 110 * MiB);
    lms_account_release(a3, 40 * MiB);
    CHECK_EQ_U(lms_account_used(a3), 0);
    /* That member gone (dead: its lock dropped), an entry only it used is
     * taken for the next GPU, afresh. */
    close(ofd);
    lms_account *a5 = lms_account_of(5);
    CHECK(a5);
    CHECK(lms_account_reserve(a5, 8 * MiB, a5->budget));
    int g5 = -1;
    for (int g = 0; g < LMS_GROUP_DEVICES; g++)
        if (atomic_load(&h->gpu_kind[g]) == LMS_GPU_INDEX && h->gpu_key[g][0] == 5)
            g5 = g;
    CHECK(g5 >= 3 && g5 != 5);   /* not device 4's entry: it has a charge */
    CHECK_EQ_U(atomic_load(&h->charged[g5]), 8 * MiB);
    CHECK_EQ_U(atomic_load(&h->budget[g5]), 256 * MiB);
    CHECK_EQ_U(atomic_load(&h->reclaimed_members), 1);

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    int uuid_lines = lines_with(err, "cannot get the UUID"), full_lines = lines_with(err, "GPU entries");
    if (uuid_lines != 1 || lines_with(err, "cannot get the UUID of device 0") != 1 || full_lines != 1 ||
        lines_with(err, "device 3 keeps its own budget") != 1) {
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", err);
        CHECK(system(cmd) == 0);
        CHECK(!"one line for the devices without a UUID, one for the device without an entry");
    }
    unlink(err);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

static const test_case cases[] = {
    {"keys", keys},
};

int main(int argc, char **argv)
{
    return run_case(cases, sizeof cases / sizeof cases[0], argc, argv);
}
