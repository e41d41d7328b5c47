/*
 * ipc.c — the refusal to share chunks lmshim placed off the device (see ipc.h and docs/ARCHITECTURE.md "IPC").
 */
#include "ipc.h"

#include "chunks.h"
#include "log.h"
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
    lms_log(LMS_LEVEL_WARN,
            "%s: chunk 0x%llx (%s, device %d) was placed in %s memory by lmshim and CUDA cannot share "
            "it with another process; keep such chunks on the device with LMS_THRESHOLD=%s or a "
            "larger LMS_FRAC",
            call, (unsigned long long)ptr, size, (int)c.device, lms_place_names[c.place], above);
    return true;
}
