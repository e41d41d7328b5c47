/*
 * taken_chunk_test.c — a chunk taken out of the residency map for its
 * free (lms_residency_take, before the real cuMemFree) is no victim any
 * more: between the real free and lms_residency_drop the driver may hand
 * its address to a new allocation, and an eviction then would move the
 * new allocation's memory and give back a charge twice. Over a fake
 * driver that records prefetches to the host. Run with LMS_POLICY=lru and
 * LMS_LIMIT=1G (meson.build).
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/check.h"
#include "../../common/fake_chunks.h"
#include "account.h"
#include "options.h"
#include "residency.h"

#define MiB (1ull << 20)

static uint64_t evicted_at[64];
static int nevicted;

/* Records each prefetch to the host's address; all succeed. */
static CUresult fake_prefetch(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags, CUstream s)
{
    (void)n, (void)flags, (void)s;
    if (loc.type == CU_MEM_LOCATION_TYPE_HOST && nevicted < 64)
        evicted_at[nevicted++] = p;
    return CUDA_SUCCESS;
}

/* Two 400 MiB chunks fill 800 of the 1 GiB; the first (least recently
 * used) is taken for its free; a third chunk's launch needs room: the
 * second is evicted, never the taken one. */
static void taken_is_no_victim(void)
{
    lms_options_load();
    fake_driver_install(fake_prefetch);
    lms_account *a = lms_account_of(0);
    CHECK(a && a->budget == 1ull << 30);
    uint64_t base = 0x7f0000000000ull;
    uint32_t ids[3];
    fake_chunks_add(base, 3, 400 * MiB, ids);
    for (int i = 0; i < 2; i++)
        fake_chunks_launch(ids[i], 0x10 + (uintptr_t)i);
    CHECK_EQ_U(nevicted, 0);
    lms_res_chunk *taken = lms_residency_take(base);   /* its free is under way */
    CHECK(taken != NULL);
    fake_chunks_launch(ids[2], 0x12);
    for (int i = 0; i < nevicted; i++)
        CHECK(evicted_at[i] != base);
    CHECK(nevicted >= 1);                       /* the second made the room */
    CHECK_EQ_U(atomic_load(&a->used), 800 * MiB);   /* the taken one (still charged) and the third */
    lms_residency_drop(taken);
    CHECK_EQ_U(atomic_load(&a->used), 400 * MiB);   /* the third: the taken one's charge went once */
    fake_chunks_free(base, 3);   /* the first is taken already: no chunk there any more */
    CHECK_EQ_U(atomic_load(&a->used), 0);
}

/* A take whose free failed puts the chunk back: it is a victim again. */
static void put_back_is_victim(void)
{
    lms_options_load();
    fake_driver_install(fake_prefetch);
    uint64_t base = 0x7e0000000000ull;
    uint32_t ids[3];
    fake_chunks_add(base, 3, 400 * MiB, ids);
    for (int i = 0; i < 2; i++)
        fake_chunks_launch(ids[i], 0x10 + (uintptr_t)i);
    lms_residency_put_back(lms_residency_take(base));
    fake_chunks_launch(ids[2], 0x12);
    CHECK(nevicted >= 1);
    CHECK_EQ_U(evicted_at[0], base);   /* the least recently used, back in the order */
    fake_chunks_free(base, 3);
}

static const test_case cases[] = {
    {"taken_is_no_victim", taken_is_no_victim},
    {"put_back_is_victim", put_back_is_victim},
};

TEST_MAIN(cases)
