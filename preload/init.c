/*
 * init.c — the hook table: resolving each hooked variant's real pointer
 * through the real cuGetProcAddress with that variant's own version and
 * flags, once per process (and again in a fork child), and the maps between
 * real pointers, names and hooks.
 */
#include <pthread.h>
#include <string.h>

#include "hooks.h"
#include "log.h"

void *lms_hook_real[LMS_HOOK_COUNT];
__thread int lms_hook_depth __attribute__((tls_model("initial-exec")));
__thread bool lms_hook_initializing __attribute__((tls_model("initial-exec")));

typedef struct hook_entry {
    const char *symbol;    /* exported name of the variant */
    const char *base;      /* cuGetProcAddress name */
    int version;
    bool per_thread;
    bool required;
    void *hook;
} hook_entry;

static const hook_entry entries[LMS_HOOK_COUNT] = {
#define LMS_HOOK(sym, base, version, ptds, required) {#sym, #base, version, ptds, required, (void *)&sym},
#include "hooks.def"
#undef LMS_HOOK
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool atfork_registered;

/* The child redoes the one-time initialisation on its next hook. */
static void fork_child(void) { once = (pthread_once_t)PTHREAD_ONCE_INIT; }

/* Sets up the engine and resolves every hooked variant. */
static void init_once(void)
{
    lms_hook_initializing = true;
    /* First: a thread may fork while this one initialises (opening and
     * joining a group takes locks and waits for the group's lock), and
     * the child must start afresh rather than inherit half of it. */
    if (!atfork_registered) {
        atfork_registered = true;
        lms_engine_fork_register();
        pthread_atfork(NULL, NULL, fork_child);
    }
    lms_engine_init();
    for (int i = 0; i < LMS_HOOK_COUNT; i++) {
        const hook_entry *e = &entries[i];
        cuuint64_t flags = e->per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                         : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
        lms_hook_real[i] = lms_driver_proc_exact(e->base, e->version, flags, e->symbol);
        if (!lms_hook_real[i] && e->required && lms_drv.handle)
            lms_log(LMS_LEVEL_ERROR, "the driver has no %s: calls to it will fail", e->symbol);
    }
    lms_hook_initializing = false;
}

void lms_hooks_init(void)
{
    pthread_once(&once, init_once);
}

void *lms_hook_for_real(void *real)
{
    if (!real)
        return real;
    for (int i = 0; i < LMS_HOOK_COUNT; i++)
        if (lms_hook_real[i] == real)
            return entries[i].hook;
    return real;
}

void *lms_hook_by_name(const char *name)
{
    for (int i = 0; i < LMS_HOOK_COUNT; i++)
        if (strcmp(entries[i].symbol, name) == 0)
            return entries[i].hook;
    return NULL;
}

/* The driver's start: once it succeeded, the driver has registered its
 * fork handlers, and lmshim's are registered again to run before them at
 * a fork (engine.h). No lock of lmshim's is held here. */
LMS_EXPORT CUresult cuInit(unsigned int flags)
{
    if (!LMS_ENTER(cuInit))
        return PASS(cuInit, flags);
    CUresult r = REAL(cuInit)(flags);
    if (r == CUDA_SUCCESS)
        lms_engine_driver_started();
    lms_hook_leave();
    return r;
}
