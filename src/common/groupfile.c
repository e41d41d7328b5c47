/*
 * groupfile.c — the group file's layout checks and slot liveness (see
 * groupfile.h).
 */
#include "groupfile.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Static_assert(sizeof(lms_group_header) <= LMS_GROUP_HEADER_BYTES, "group header too large");
_Static_assert(sizeof(lms_group_slot) <= LMS_GROUP_SLOT_BYTES, "group slot too large");

int lms_groupfile_path(const char *dir, const char *name, char *out, size_t len)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > LMS_GROUP_NAME_MAX || name[0] == '.')
        return -1;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return -1;
    }
    int w = snprintf(out, len, "%s/lmshim-group-%s", dir && *dir ? dir : "/dev/shm", name);
    return w > 0 && (size_t)w < len ? 0 : -1;
}

const char *lms_groupfile_check(const lms_group_header *h, uint64_t size)
{
    if (size != LMS_GROUP_FILE_BYTES)
        return "wrong size";
    if (h->magic != LMS_GROUP_MAGIC)
        return "wrong magic";
    if (h->version != LMS_GROUP_VERSION)
        return "wrong version";
    if (h->file_bytes != LMS_GROUP_FILE_BYTES || h->slots != LMS_GROUP_SLOTS ||
        h->slot_bytes != LMS_GROUP_SLOT_BYTES || h->lock_bytes != sizeof(pthread_mutex_t))
        return "wrong layout";
    if (atomic_load_explicit(&((lms_group_header *)h)->ready, memory_order_acquire) != 1)
        return "not initialised";
    return NULL;
}

void lms_groupfile_gpu_name(const lms_group_header *h, int g, bool full, char *out, size_t len)
{
    lms_group_header *m = (lms_group_header *)h;
    uint32_t kind = g >= 0 && g < LMS_GROUP_DEVICES ? atomic_load_explicit(&m->gpu_kind[g], memory_order_acquire)
                                                    : LMS_GPU_FREE;
    if (kind == LMS_GPU_INDEX) {
        const uint8_t *k = h->gpu_key[g];
        snprintf(out, len, "index %u", (unsigned)k[0] | (unsigned)k[1] << 8 | (unsigned)k[2] << 16 |
                 (unsigned)k[3] << 24);
        return;
    }
    if (kind != LMS_GPU_UUID) {
        snprintf(out, len, "-");
        return;
    }
    char hex[2 * LMS_GPU_KEY_BYTES + 5];
    size_t o = 0;
    for (int i = 0; i < LMS_GPU_KEY_BYTES; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            hex[o++] = '-';
        o += (size_t)snprintf(hex + o, sizeof hex - o, "%02x", h->gpu_key[g][i]);
    }
    snprintf(out, len, "GPU-%.*s", full ? (int)o : 8, hex);
}

lms_group_slot *lms_groupfile_slot(lms_group_header *h, int i)
{
    return (lms_group_slot *)((char *)h + LMS_GROUP_HEADER_BYTES + (size_t)i * LMS_GROUP_SLOT_BYTES);
}

long lms_groupfile_lock_offset(int i)
{
    return (long)LMS_GROUP_HEADER_BYTES + (long)i * LMS_GROUP_SLOT_BYTES;
}

int lms_groupfile_alive(int fd, int i)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = lms_groupfile_lock_offset(i), .l_len = 1};
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
        return -1;
    return fl.l_type != F_UNLCK;
}
