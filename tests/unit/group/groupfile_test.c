/*
 * groupfile_test.c — the group file's names, layout checks and slot
 * liveness (src/common/groupfile.c), and the group options' parsers.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/check.h"
#include "groupfile.h"
#include "options.h"

/* Names: [A-Za-z0-9._-], 1..63 characters, not starting with '.'. */
static void names(void)
{
    char p[128];
    CHECK(lms_groupfile_path("/dev/shm", "team-a.1_X", p, sizeof p) == 0);
    CHECK(strcmp(p, "/dev/shm/lmshim-group-team-a.1_X") == 0);
    CHECK(lms_groupfile_path("", "x", p, sizeof p) == 0 && strcmp(p, "/dev/shm/lmshim-group-x") == 0);
    const char *bad[] = {"", "a/b", "..", ".hidden", "sp ace", "tab\t", "x$", NULL};
    for (int i = 0; bad[i]; i++)
        CHECK(lms_groupfile_path("/dev/shm", bad[i], p, sizeof p) != 0);
    char longname[80];
    memset(longname, 'a', sizeof longname);
    longname[64] = 0;
    CHECK(lms_groupfile_path("/dev/shm", longname, p, sizeof p) != 0);
    longname[63] = 0;
    CHECK(lms_groupfile_path("/dev/shm", longname, p, sizeof p) == 0);
    CHECK(lms_groupfile_path("/dev/shm", "x", p, 20) != 0);   /* does not fit */
}

/* The checks refuse every field that differs from this build's layout. */
static void layout_checks(void)
{
    static _Alignas(4096) char buf[LMS_GROUP_FILE_BYTES];
    lms_group_header *h = (lms_group_header *)buf;
    CHECK(strcmp(lms_groupfile_check(h, sizeof buf), "wrong magic") == 0);
    CHECK(strcmp(lms_groupfile_check(h, 100), "wrong size") == 0);
    h->magic = LMS_GROUP_MAGIC;
    CHECK(strcmp(lms_groupfile_check(h, sizeof buf), "wrong version") == 0);
    h->version = LMS_GROUP_VERSION;
    CHECK(strcmp(lms_groupfile_check(h, sizeof buf), "wrong layout") == 0);
    h->file_bytes = LMS_GROUP_FILE_BYTES;
    h->slots = LMS_GROUP_SLOTS;
    h->slot_bytes = LMS_GROUP_SLOT_BYTES;
    h->lock_bytes = sizeof(pthread_mutex_t);
    CHECK(strcmp(lms_groupfile_check(h, sizeof buf), "not initialised") == 0);
    atomic_store(&h->ready, 1);
    CHECK(lms_groupfile_check(h, sizeof buf) == NULL);
    h->slots = LMS_GROUP_SLOTS + 1;
    CHECK(strcmp(lms_groupfile_check(h, sizeof buf), "wrong layout") == 0);
    CHECK((char *)lms_groupfile_slot(h, 1) - buf == LMS_GROUP_HEADER_BYTES + LMS_GROUP_SLOT_BYTES);
}

/* A slot is alive while another open() of the file holds its lock, and
 * dead as soon as the process holding it is gone. */
static void liveness(void)
{
    char path[] = "/tmp/lmshim-groupfile-test-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && ftruncate(fd, LMS_GROUP_FILE_BYTES) == 0);
    CHECK(lms_groupfile_alive(fd, 3) == 0);
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int own = open(path, O_RDWR);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(3), .l_len = 1};
        if (own < 0 || fcntl(own, F_OFD_SETLK, &fl) != 0)
            _exit(1);
        if (write(go[1], "r", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c;
    CHECK(read(go[0], &c, 1) == 1);
    CHECK(lms_groupfile_alive(fd, 3) == 1);
    CHECK(lms_groupfile_alive(fd, 4) == 0);
    kill(pid, SIGKILL);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(lms_groupfile_alive(fd, 3) == 0);
    close(fd);
    unlink(path);
}

/* LMS_GROUP takes a valid name or nothing; LMS_GROUP_MODE an octal mode. */
static void options(void)
{
    int g = -1, m = -1;
    for (int i = 0; lms_option_name(i); i++) {
        if (strcmp(lms_option_name(i), "group") == 0)
            g = i;
        if (strcmp(lms_option_name(i), "group_mode") == 0)
            m = i;
    }
    CHECK(g >= 0 && m >= 0);
    CHECK(lms_option_valid(g, "") && lms_option_valid(g, "team-a"));
    CHECK(!lms_option_valid(g, "../etc") && !lms_option_valid(g, "a b"));
    CHECK(lms_option_valid(m, "0660") && lms_option_valid(m, "600") && lms_option_valid(m, "0"));
    CHECK(!lms_option_valid(m, "0800") && !lms_option_valid(m, "1777") && !lms_option_valid(m, "rw"));
    setenv("LMS_GROUP_MODE", "0640", 1);
    lms_options_load();
    CHECK_EQ_U(lms_opt.group_mode, 0640);
    CHECK(lms_opt.group[0] == 0);
    CHECK(strcmp(lms_opt.group_dir, "/dev/shm") == 0);
}

static const test_case cases[] = {
    {"names", names},
    {"layout_checks", layout_checks},
    {"liveness", liveness},
    {"options", options},
};

TEST_MAIN(cases)
