/*
 * evict_fail_test.c — the residency engine over a fake driver whose
 * prefetches to the host fail: a failed eviction keeps its charge (the
 * bytes are still on the device), and the charge goes back when the chunk
 * is freed. Run with LMS_POLICY=lru and LMS_LIMIT=1G (meson.build).
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_chunks.h"
#include "account.h"
#include "options.h"
#include "residency.h"

#define MiB (1ull << 20)

static uint64_t to_device;   /* bytes prefetched to the device (large chunks move in slices) */
static int to_host_failed;

static CUresult fake_prefetch(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags, CUstream s)
{
    (void)p, (void)flags, (void)s;
    if (loc.type == CU_MEM_LOCATION_TYPE_HOST) {
        to_host_failed++;
        return CUDA_ERROR_INVALID_VALUE;
    }
    to_device += n;
    return CUDA_SUCCESS;
}

static void failed_eviction_keeps_charge(void)
{
    lms_options_load();
    fake_driver_install(fake_prefetch);
    lms_account *a = lms_account_of(0);
    CHECK(a && a->budget == 1ull << 30);
    uint64_t base = 0x7f0000000000ull;
    uint32_t ids[3];
    fake_chunks_add(base, 3, 400 * MiB, ids);
    for (int i = 0; i < 3; i++)
        fake_chunks_launch(ids[i], 0x10 + (uintptr_t)i);
    CHECK_EQ_U(to_device, 800 * MiB);      /* two chunks: the third found no room */
    CHECK(to_host_failed >= 1);
    CHECK_EQ_U(atomic_load(&a->used), 800 * MiB);   /* both still charged */
    CHECK_EQ_U(atomic_load(&a->evictions), 0);
    CHECK_EQ_U(atomic_load(&a->violations), 0);
    fake_chunks_free(base, 3);
    CHECK_EQ_U(atomic_load(&a->used), 0);
}

static const test_case cases[] = {
    {"failed_eviction_keeps_charge", failed_eviction_keeps_charge},
};

TEST_MAIN(cases)
