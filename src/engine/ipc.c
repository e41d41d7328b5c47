/*
 * ipc.c — the refusal to share chunks lmshim placed off the device (see ipc.h and docs/ARCHITECTURE.md "IPC").
 */
#include "ipc.h"

#include <stdio.h>

#include "chunks.h"
#include "log.h"
#include "options.h"
#include "units.h"

bool lms_ipc_refuse(const char *call, uint64_t ptr)
{
    lms_chunk c;
    if (!ptr || !lms_chunks_find(ptr, &c) || (c.flags & LMS_CHUNK_PROGRAM) ||
        (c.place != LMS_PLACE_MANAGED && c.place != LMS_PLACE_HOST))
        return false;
    /* A threshold above the size that reads back exactly: the next whole
     * MiB (size + 1 would print rounded, e.g. "64.00M", which is 64M and
     * would leave a 64M chunk where it is). */
    char size[32], above[32];
    lms_format_size(size, sizeof size, c.size);
    lms_format_size(above, sizeof above, (c.size / (1ull << 20) + 1) << 20);
    /* What keeps such a chunk on the device: where the budget was full,
     * more of it; under LMS_THRESHOLD (the engine's room kept, place.c
     * keeps_room), LMS_FRAC=0 (no large chunk stays to fill the budget, no
     * room kept from small ones) or more budget; above it, a larger
     * fraction, or the threshold above it with LMS_FRAC=0. */
    char keep[160];
    if (c.flags & LMS_CHUNK_FALLBACK)
        snprintf(keep, sizeof keep, "a larger LMS_LIMIT (the budget was full)");
    else if (c.size < lms_opt.threshold)
        snprintf(keep, sizeof keep, "LMS_FRAC=0 (chunks under LMS_THRESHOLD stay, larger ones leave) or a larger LMS_LIMIT");
    else
        snprintf(keep, sizeof keep, "a larger LMS_FRAC, or LMS_THRESHOLD=%s with LMS_FRAC=0", above);
    lms_log(LMS_LEVEL_WARN,
            "%s: chunk 0x%llx (%s, device %d) was placed in %s memory by lmshim and CUDA cannot share "
            "it with another process; keep such chunks on the device with %s",
            call, (unsigned long long)ptr, size, (int)c.device, lms_place_names[c.place], keep);
    return true;
}
