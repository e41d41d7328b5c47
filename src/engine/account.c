/*
 * account.c — per-device accounting (see account.h).
 */
#include "account.h"

#include <sched.h>

#include "arrays.h"
#include "caps.h"
#include "driver.h"
#include "graph.h"
#include "group.h"
#include "log.h"
#include "trace.h"

lms_account lms_accounts[LMS_MAX_DEVICES];

/* Reads the device's memory and sets its budget. False (nothing set) when
 * the driver cannot say yet: before cuInit, or without a context. */
static bool setup(lms_account *a, int device)
{
    size_t total = 0;
    if (!lms_drv.cuDeviceTotalMem || lms_drv.cuDeviceTotalMem(&total, device) != CUDA_SUCCESS)
        return false;
    a->physical = total;
    a->budget = lms_group_budget(device, lms_options_budget(device, total));
    lms_caps_managed_ok(device);   /* asked once, at the device's start */
    if (lms_trace_on)
        lms_trace_device(device, a->physical, a->budget);
    if (LMS_LOG_ON(LMS_LEVEL_INFO)) {
        lms_log(LMS_LEVEL_INFO, "device %d: memory=%llu budget=%llu frac=%g threshold=%llu", device,
                (unsigned long long)a->physical, (unsigned long long)a->budget, lms_opt.frac,
                (unsigned long long)lms_opt.threshold);
    }
    return true;
}

lms_account *lms_account_of(int device)
{
    if (device < 0 || device >= LMS_MAX_DEVICES)
        return NULL;
    lms_account *a = &lms_accounts[device];
    int st = atomic_load_explicit(&a->state, memory_order_acquire);
    if (st == 2)
        return a;
    int expect = 0;
    if (atomic_compare_exchange_strong(&a->state, &expect, 1)) {
        /* A failed query leaves the account unset, to be asked again. */
        bool ok = setup(a, device);
        atomic_store_explicit(&a->state, ok ? 2 : 0, memory_order_release);
        return ok ? a : NULL;
    }
    while ((st = atomic_load_explicit(&a->state, memory_order_acquire)) == 1)
        sched_yield();
    return st == 2 ? a : NULL;
}

/* Raises the peak to at least `now`. */
static void note_peak(lms_account *a, uint64_t now)
{
    uint64_t p = atomic_load_explicit(&a->peak, memory_order_relaxed);
    while (now > p && !atomic_compare_exchange_weak_explicit(&a->peak, &p, now, memory_order_relaxed,
                                                             memory_order_relaxed))
        ;
}

/* ---- groups: with LMS_GROUP the group decides (group.c); `used` still
 * counts this process's own charge. ---- */

/* The device of an account of lms_accounts. */
static int device_of(const lms_account *a) { return (int)(a - lms_accounts); }

uint64_t lms_account_used(const lms_account *a)
{
    if (atomic_load_explicit(&lms_group_on, memory_order_relaxed))
        return lms_group_used(device_of(a));
    return atomic_load_explicit(&a->used, memory_order_relaxed);
}

uint64_t lms_account_room(const lms_account *a)
{
    int device = device_of(a);
    uint64_t held = atomic_load_explicit(&a->live_bytes[LMS_PLACE_DEVICE], memory_order_relaxed) +
                    atomic_load_explicit(&a->live_charged[LMS_PLACE_VMM], memory_order_relaxed) +
                    lms_arrays_charged(device) + lms_graph_mem_charged(device);
    if (atomic_load_explicit(&lms_group_on, memory_order_relaxed))
        held += lms_group_others(device);   /* their managed chunks' charges too */
    return a->budget > held ? a->budget - held : 0;
}

uint64_t lms_account_engine_managed(const lms_account *a)
{
    uint64_t all = atomic_load_explicit(&a->live_bytes[LMS_PLACE_MANAGED], memory_order_relaxed);
    uint64_t own = atomic_load_explicit(&a->program_managed, memory_order_relaxed);
    return all > own ? all - own : 0;
}

bool lms_account_reserve(lms_account *a, uint64_t bytes, uint64_t limit)
{
    int g = atomic_load_explicit(&lms_group_on, memory_order_relaxed)
                ? lms_group_reserve(device_of(a), bytes, limit) : -1;
    if (g == 0)
        return false;
    if (g == 1) {
        note_peak(a, atomic_fetch_add_explicit(&a->used, bytes, memory_order_relaxed) + bytes);
        return true;
    }
    /* ---- end of groups ---- */
    uint64_t u = atomic_load_explicit(&a->used, memory_order_relaxed);
    do {
        if (bytes > limit || u > limit - bytes)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&a->used, &u, u + bytes, memory_order_relaxed,
                                                    memory_order_relaxed));
    note_peak(a, u + bytes);
    return true;
}

void lms_account_force(lms_account *a, uint64_t bytes)
{
    if (atomic_load_explicit(&lms_group_on, memory_order_relaxed))
        lms_group_force(device_of(a), bytes);   /* groups */
    uint64_t now = atomic_fetch_add_explicit(&a->used, bytes, memory_order_relaxed) + bytes;
    note_peak(a, now);
}

void lms_account_release(lms_account *a, uint64_t bytes)
{
    if (atomic_load_explicit(&lms_group_on, memory_order_relaxed))
        lms_group_release(device_of(a), bytes);   /* groups */
    atomic_fetch_sub_explicit(&a->used, bytes, memory_order_relaxed);
}

void lms_account_refused(lms_account *a, uint64_t size, const char *what, bool trace)
{
    atomic_fetch_add(&a->oom_failures, 1);
    uint64_t used = lms_account_used(a);
    if (trace && lms_trace_on)
        lms_trace_oom(device_of(a), size, used, a->budget);
    lms_log(LMS_LEVEL_INFO, "oom dev=%d %s of %llu bytes (used=%llu budget=%llu): failing as LMS_ON_OOM=fail asks",
            device_of(a), what, (unsigned long long)size, (unsigned long long)used, (unsigned long long)a->budget);
}

/* The device and VMM charges of a now. */
static uint64_t device_charges(const lms_account *a)
{
    return atomic_load_explicit(&a->live_charged[LMS_PLACE_DEVICE], memory_order_relaxed) +
           atomic_load_explicit(&a->live_charged[LMS_PLACE_VMM], memory_order_relaxed);
}

/* Keeps the managed peak and the most device charges while it holds (the
 * residency room of the summary at exit, src/common/room.c): a managed
 * chunk that raises the peak notes the device charges then, a device or
 * VMM chunk placed while the managed bytes are at their peak raises them.
 * Two allocations racing may leave the pair of either. */
static void note_room(lms_account *a, const lms_chunk *c)
{
    if (c->place == LMS_PLACE_MANAGED) {
        uint64_t managed = atomic_load_explicit(&a->live_bytes[LMS_PLACE_MANAGED], memory_order_relaxed);
        uint64_t was = atomic_load_explicit(&a->managed_peak, memory_order_relaxed);
        while (managed > was)
            if (atomic_compare_exchange_weak_explicit(&a->managed_peak, &was, managed, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                atomic_store_explicit(&a->device_at_peak, device_charges(a), memory_order_relaxed);
                return;
            }
    } else if ((c->place == LMS_PLACE_DEVICE || c->place == LMS_PLACE_VMM) &&
               atomic_load_explicit(&a->managed_peak, memory_order_relaxed) != 0 &&
               atomic_load_explicit(&a->live_bytes[LMS_PLACE_MANAGED], memory_order_relaxed) ==
                   atomic_load_explicit(&a->managed_peak, memory_order_relaxed)) {
        uint64_t dev = device_charges(a), was = atomic_load_explicit(&a->device_at_peak, memory_order_relaxed);
        while (dev > was && !atomic_compare_exchange_weak_explicit(&a->device_at_peak, &was, dev,
                                                                   memory_order_relaxed, memory_order_relaxed))
            ;
    }
}

void lms_account_add_chunk(lms_account *a, const lms_chunk *c)
{
    atomic_fetch_add_explicit(&a->live_chunks[c->place], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->live_bytes[c->place], c->size, memory_order_relaxed);
    if (c->charged)
        atomic_fetch_add_explicit(&a->live_charged[c->place], c->charged, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->allocs[c->place], 1, memory_order_relaxed);
    if (c->place == LMS_PLACE_MANAGED && (c->flags & LMS_CHUNK_PROGRAM))
        atomic_fetch_add_explicit(&a->program_managed, c->size, memory_order_relaxed);
    note_room(a, c);
    if (c->flags & LMS_CHUNK_FALLBACK)
        atomic_fetch_add_explicit(&a->fallbacks, 1, memory_order_relaxed);
}

void lms_account_drop_chunk(lms_account *a, const lms_chunk *c)
{
    atomic_fetch_sub_explicit(&a->live_chunks[c->place], 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&a->live_bytes[c->place], c->size, memory_order_relaxed);
    if (c->charged)
        atomic_fetch_sub_explicit(&a->live_charged[c->place], c->charged, memory_order_relaxed);
    if (c->place == LMS_PLACE_MANAGED && (c->flags & LMS_CHUNK_PROGRAM))
        atomic_fetch_sub_explicit(&a->program_managed, c->size, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->frees, 1, memory_order_relaxed);
}

void lms_account_reset_setup(void)
{
    for (int d = 0; d < LMS_MAX_DEVICES; d++)
        if (atomic_load(&lms_accounts[d].state) == 1)
            atomic_store(&lms_accounts[d].state, 0);
}
