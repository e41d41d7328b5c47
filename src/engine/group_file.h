/*
 * group_file.h — opening the file of an LMS_GROUP (group_file.c); its
 * layout is in src/common/groupfile.h, its use in group.c.
 */
#ifndef LMS_GROUP_FILE_H
#define LMS_GROUP_FILE_H

#include <stdint.h>
#include <time.h>

#include "groupfile.h"

#define LMS_GROUP_PATH_MAX 320   /* bytes of a group file's path, its NUL included */

/* Now on clock c, in ns. */
uint64_t lms_group_clock_ns(clockid_t c);

/* Opens (creating it if needed) and maps the group file at path for group
 * `name` (LMS_GROUP_FILE_BYTES, shared); NULL, with why not in *why (a
 * static string). The file's flock serializes creation: a creator that
 * died half-way leaves a file that is not `ready`, which the next opener
 * sets up again. A file of another lmshim layout that this user owns and
 * no process uses any more is replaced by a fresh one; one still in use is
 * refused. An opener that finds the path renamed over while it waited for
 * the flock opens it again. It waits 5 s at most for the flock, all tries
 * together. The caller owns *out_fd and the mapping. */
lms_group_header *lms_group_map_file(const char *path, const char *name, int *out_fd, const char **why);

#endif
