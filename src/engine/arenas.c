/*
 * arenas.c — allocators that suballocate (see arenas.h and
 * docs/ARCHITECTURE.md "Allocators that suballocate").
 *
 * A caching allocator (PyTorch's CUDACachingAllocator, CuPy's memory pool)
 * answers an out-of-memory from cudaMalloc by freeing cached blocks and
 * asking again for the same size. Under lmshim a request past the budget
 * never fails, so the cache is never emptied and new blocks go to managed
 * memory while cached ones hold the device. With LMS_OOM_RETRY, the first
 * request of a size that would leave the device is answered
 * CUDA_ERROR_OUT_OF_MEMORY and its size remembered (a few per device); the
 * same size asked again is the retry and goes where lmshim puts it, on the
 * device if the freed cache made room, else off it. A retry is never
 * answered out-of-memory, so a program that retries once never sees one.
 * With LMS_OOM_RETRY=auto only the allocator's own requests (its library's
 * code on the calling stack) are answered so.
 */
#include "arenas.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "log.h"
#include "options.h"

#define PENDING 8   /* sizes answered and not yet asked again, per device */

typedef struct pending {
    uint64_t charge[PENDING];   /* bytes; 0 = free slot */
    unsigned next;              /* slot to reuse when all are taken */
} pending;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pending pend[LMS_MAX_DEVICES];
static atomic_uint npending;       /* occupied slots, all devices: 0 = nothing to settle */
static atomic_bool caching_seen;   /* a known caching allocator is loaded */

/* True for the file of a caching allocator known to free its cache and
 * retry on out-of-memory. */
static bool caching_file(const char *n)
{
    return n && (strstr(n, "libc10_cuda.so") || strstr(n, "cupy/cuda/memory"));
}

/* dl_iterate_phdr callback: stops (1) at a caching allocator's library. */
static int is_caching(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size, (void)ctx;
    return caching_file(info->dlpi_name) ? 1 : 0;
}

/* True when the calling stack passes through a caching allocator's code:
 * the request is the allocator's, not that of other code in the process
 * (cuBLAS or cuDNN making a handle, NCCL, an extension calling cudaMalloc),
 * which does not retry and would die of the answer. */
static bool caching_caller(void)
{
    enum { FRAMES = 48 };   /* lmshim, cudart and the allocator's own frames */
    void *pc[FRAMES];
    int n = unw_backtrace(pc, FRAMES);
    for (int i = 0; i < n; i++) {
        Dl_info info;
        /* The return address points after the call: look up the call. */
        if (pc[i] && dladdr((char *)pc[i] - 1, &info) && caching_file(info.dli_fname))
            return true;
    }
    return false;
}

/* Whether the first-OOM answer applies to the calling request. */
static bool active(void)
{
    if (lms_opt.oom_retry != LMS_AUTO_AUTO)
        return lms_opt.oom_retry == LMS_AUTO_ON;
    /* Only on a request about to leave the device: a slow path anyway. A
     * process without such a library is told apart at one cheap look. */
    if (!atomic_load_explicit(&caching_seen, memory_order_relaxed)) {
        if (dl_iterate_phdr(is_caching, NULL) == 0)
            return false;
        atomic_store(&caching_seen, true);
    }
    return caching_caller();
}

bool lms_arenas_answer_oom(int device, uint64_t charge)
{
    if (device < 0 || device >= LMS_MAX_DEVICES || charge == 0 || !active())
        return false;
    pending *p = &pend[device];
    bool answer = true;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < PENDING; i++)
        if (p->charge[i] == charge) {
            p->charge[i] = 0;   /* the retry: it falls back */
            atomic_fetch_sub(&npending, 1);
            answer = false;
            break;
        }
    if (answer) {
        int slot = -1;
        for (int i = 0; i < PENDING && slot < 0; i++)
            if (!p->charge[i])
                slot = i;
        if (slot >= 0)
            atomic_fetch_add(&npending, 1);
        else
            slot = (int)(p->next++ % PENDING);   /* the oldest guess goes */
        p->charge[slot] = charge;
    }
    pthread_mutex_unlock(&lock);
    if (answer) {
        static atomic_uint said;
        lms_log_capped(LMS_LEVEL_INFO, &said, 4,
                       "dev=%d: %llu bytes would leave the device: answered out-of-memory so that the "
                       "program's allocator frees its cache (LMS_OOM_RETRY); the same size asked again "
                       "falls back", device, (unsigned long long)charge);
    }
    return answer;
}

void lms_arenas_placed(int device, uint64_t charge)
{
    if (device < 0 || device >= LMS_MAX_DEVICES ||
        atomic_load_explicit(&npending, memory_order_relaxed) == 0)
        return;   /* the common case: one load */
    pending *p = &pend[device];
    pthread_mutex_lock(&lock);
    for (int i = 0; i < PENDING; i++)
        if (p->charge[i] == charge) {
            p->charge[i] = 0;
            atomic_fetch_sub(&npending, 1);
        }
    pthread_mutex_unlock(&lock);
}

void lms_arenas_note_request(int device, uint64_t size, uint64_t budget)
{
    /* "Most of the budget": JAX preallocates 75% of what cuMemGetInfo
     * says (the budget under lmshim), TensorFlow's BFC nearly all of it.
     * Neither asks for more than that: a larger request is one big buffer
     * (or a size no device has), not an arena. */
    if (budget == 0 || (double)size < 0.7 * (double)budget || size > budget)
        return;
    static atomic_bool warned;   /* one line per process, however often */
    if (atomic_exchange(&warned, true))
        return;
    lms_log(LMS_LEVEL_WARN,
            "one allocation of %llu bytes takes %.0f%% of device %d's budget at once; "
            "TensorFlow and JAX take their whole arena this way, and lmshim cannot move what "
            "they place inside it: set TF_FORCE_GPU_ALLOW_GROWTH=true and "
            "XLA_PYTHON_CLIENT_PREALLOCATE=false (lmshim run does)",
            (unsigned long long)size, 100.0 * (double)size / (double)budget, device);
}

void lms_arenas_fork_prepare(void) { pthread_mutex_lock(&lock); }
void lms_arenas_fork_parent(void) { pthread_mutex_unlock(&lock); }
void lms_arenas_fork_child(void) { pthread_mutex_init(&lock, NULL); }
