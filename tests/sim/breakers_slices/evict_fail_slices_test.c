/*
 * evict_fail_slices_test.c — the residency engine over a fake driver whose
 * second prefetch to the host fails: an eviction in slices stops after its
 * first slice, returns that slice's charge only and keeps the rest (still
 * on the device); the chunk is fetched again whole and its kept charge
 * then goes back; freeing everything returns every charge. Run with
 * LMS_POLICY=lru and LMS_LIMIT=128M (meson.build).
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_driver.h"
#include "account.h"
#include "options.h"
#include "residency.h"

#define MiB (1ull << 20)

static uint64_t to_device, to_host;   /* bytes the fake moved */
static int host_calls;

static CUresult fake_prefetch(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags, CUstream s)
{
    (void)p, (void)flags, (void)s;
    if (loc.type == CU_MEM_LOCATION_TYPE_HOST) {
        if (++host_calls == 2)
            return CUDA_ERROR_INVALID_VALUE;   /* the first eviction's second slice */
        to_host += n;
        return CUDA_SUCCESS;
    }
    to_device += n;
    return CUDA_SUCCESS;
}

static void launch(uint32_t id, uintptr_t fn)
{
    lms_launch_token tok;
    lms_residency_before(0, (CUstream)(uintptr_t)0x200, fn, &id, 1, &tok);
    lms_residency_after(&tok, (CUstream)(uintptr_t)0x200);
}

/* A, B, C, D: 40 MiB each (three slices), budget 128 MiB. D's launch
 * evicts A (its second slice fails: 24 MiB stay charged) and then B.
 * A's launch evicts C and fetches A whole; A's kept charge goes back. */
static void partial_eviction(void)
{
    lms_options_load();
    fake_driver_install(fake_prefetch);
    lms_account *a = lms_account_of(0);
    CHECK(a && a->budget == 128 * MiB);
    uint64_t base = 0x7f0000000000ull;
    uint32_t ids[4];
    for (int i = 0; i < 4; i++) {
        int64_t id = lms_residency_add(base + (uint64_t)i * (1ull << 32), 40 * MiB, 0);
        CHECK(id >= 0);
        ids[i] = (uint32_t)id;
    }
    for (int i = 0; i < 4; i++)
        launch(ids[i], 0x10 + (uintptr_t)i);
    CHECK_EQ_U(to_device, 160 * MiB);
    CHECK_EQ_U(to_host, 16 * MiB + 40 * MiB);   /* A's first slice, B whole */
    CHECK_EQ_U(atomic_load(&a->used), 24 * MiB + 80 * MiB);   /* A's kept part, C, D */
    CHECK_EQ_U(atomic_load(&a->evictions), 2);
    CHECK_EQ_U(atomic_load(&a->evicted_bytes), 56 * MiB);
    launch(ids[0], 0x20);
    CHECK_EQ_U(to_device, 200 * MiB);
    CHECK_EQ_U(atomic_load(&a->used), 80 * MiB);   /* A and D */
    CHECK_EQ_U(atomic_load(&a->violations), 0);
    for (int i = 0; i < 4; i++)
        lms_residency_drop(lms_residency_take(base + (uint64_t)i * (1ull << 32)));
    CHECK_EQ_U(atomic_load(&a->used), 0);
}

static const test_case cases[] = {
    {"partial_eviction", partial_eviction},
};

TEST_MAIN(cases)
