/*
 * caps.h — what each device can do (caps.c), asked of the driver once.
 */
#ifndef LMS_CAPS_H
#define LMS_CAPS_H

#include <stdbool.h>

/* True when managed memory can be prefetched to `device`
 * (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS). The first call for a
 * device asks the driver; a device without it gets one warning, and chunks
 * that leave it use pinned host memory instead. A driver that cannot say
 * counts as capable. */
bool lms_caps_managed_ok(int device);

#endif
