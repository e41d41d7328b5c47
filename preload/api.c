/*
 * api.c — the public API of liblmshim.so (include/lmshim.h).
 */
#include "lmshim.h"
#include "stats.h"

LMS_API int lms_get_stats(int device, lms_device_stats *out)
{
    return lms_stats_snapshot(device, out);
}

LMS_API const char *lms_version(void) { return LMSHIM_VERSION; }
