/*
 * caps.c — device capabilities the engine depends on (see caps.h).
 *
 * Without concurrent managed access (Windows and WSL2, some virtual GPUs,
 * GPUs before Pascal) CUDA refuses cuMemPrefetchAsync to the device and
 * migrates all managed memory at every launch, so managed chunks would
 * cost every launch a copy of all of them. lmshim places chunks that leave
 * such a device in pinned, mapped host memory (as LMS_MODE=host does),
 * which kernels read over the link without migrations.
 */
#include "caps.h"

#include <stdatomic.h>

#include "driver.h"
#include "log.h"
#include "options.h"

enum { UNKNOWN, CAPABLE, NOT_CAPABLE };

static atomic_int state[LMS_MAX_DEVICES];

bool lms_caps_managed_ok(int device)
{
    if (device < 0 || device >= LMS_MAX_DEVICES)
        return true;
    int s = atomic_load_explicit(&state[device], memory_order_acquire);
    if (s != UNKNOWN)
        return s == CAPABLE;
    int v = 1;
    if (!lms_drv.cuDeviceGetAttribute ||
        lms_drv.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, device) !=
            CUDA_SUCCESS)
        v = 1;   /* cannot tell: assume what every Linux GPU since Pascal has */
    int expect = UNKNOWN;
    if (atomic_compare_exchange_strong(&state[device], &expect, v ? CAPABLE : NOT_CAPABLE) && !v &&
        lms_opt.mode != LMS_MODE_HOST)
        lms_log(LMS_LEVEL_WARN,
                "device %d has no concurrent managed access (Windows/WSL2, some virtual GPUs, "
                "GPUs before Pascal): managed memory cannot be prefetched there, so chunks that "
                "leave it use pinned host memory (as LMS_MODE=host)", device);
    return v != 0;
}
