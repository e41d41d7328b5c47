/*
 * ipc.c — exportable pools and the refusal to share chunks lmshim placed
 * off the device (see ipc.h and docs/ARCHITECTURE.md "IPC").
 */
#include "ipc.h"

#include <pthread.h>

#include "chunks.h"
#include "log.h"
#include "units.h"

#define POOLS 256   /* exportable pools remembered at once */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUmemoryPool exportable[POOLS];   /* under lock; NULL: free slot */
static atomic_uint said_full;

void lms_ipc_pool_created(CUmemoryPool pool, const CUmemPoolProps *props)
{
    if (!pool || !props || props->handleTypes == CU_MEM_HANDLE_TYPE_NONE)
        return;
    bool kept = false;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < POOLS && !kept; i++)
        if (!exportable[i]) {
            exportable[i] = pool;
            kept = true;
        }
    pthread_mutex_unlock(&lock);
    if (!kept)
        lms_log_capped(LMS_LEVEL_WARN, &said_full, 1,
                       "more than %d exportable pools: allocations from the others may leave the device",
                       POOLS);
}

void lms_ipc_pool_destroyed(CUmemoryPool pool)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < POOLS; i++)
        if (exportable[i] == pool)
            exportable[i] = NULL;
    pthread_mutex_unlock(&lock);
}

void lms_ipc_fork_prepare(void) { pthread_mutex_lock(&lock); }
void lms_ipc_fork_parent(void) { pthread_mutex_unlock(&lock); }
void lms_ipc_fork_child(void) { pthread_mutex_init(&lock, NULL); }

bool lms_ipc_pool_exportable(CUmemoryPool pool)
{
    bool found = false;
    if (!pool)
        return false;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < POOLS && !found; i++)
        found = exportable[i] == pool;
    pthread_mutex_unlock(&lock);
    return found;
}

bool lms_ipc_refuse(const char *call, uint64_t ptr)
{
    lms_chunk c;
    if (!ptr || !lms_chunks_find(ptr, &c) || (c.flags & LMS_CHUNK_PROGRAM) ||
        (c.place != LMS_PLACE_MANAGED && c.place != LMS_PLACE_HOST))
        return false;
    char size[32], above[32];
    lms_format_size(size, sizeof size, c.size);
    lms_format_size(above, sizeof above, c.size + 1);
    lms_log(LMS_LEVEL_WARN,
            "%s: chunk 0x%llx (%s, device %d) was placed in %s memory by lmshim and CUDA cannot share "
            "it with another process; keep such chunks on the device with LMS_THRESHOLD=%s or a "
            "larger LMS_FRAC",
            call, (unsigned long long)ptr, size, (int)c.device, lms_place_names[c.place], above);
    return true;
}
