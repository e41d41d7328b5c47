/*
 * fake_chunks.h — managed chunks in the residency engine over the fake
 * driver (fake_driver.h), for unit tests: n chunks of one size 4 GiB
 * apart from a base, launches that each use one of them, and their frees.
 */
#ifndef FAKE_CHUNKS_H
#define FAKE_CHUNKS_H

#include <stdint.h>

#include "check.h"
#include "fake_driver.h"
#include "residency.h"

#define FAKE_CHUNK_STRIDE (1ull << 32)

/* Adds n chunks of `size` bytes on device 0 at base + i x 4 GiB; their
 * ids go to ids[0..n). */
static inline void fake_chunks_add(uint64_t base, int n, uint64_t size, uint32_t *ids)
{
    for (int i = 0; i < n; i++) {
        int64_t id = lms_residency_add(base + (uint64_t)i * FAKE_CHUNK_STRIDE, size, 0);
        CHECK(id >= 0);
        ids[i] = (uint32_t)id;
    }
}

/* One launch of function fn (any number) on a fake stream, using chunk id. */
static inline void fake_chunks_launch(uint32_t id, uintptr_t fn)
{
    CUstream s = (CUstream)(uintptr_t)0x200;
    lms_launch_token tok;
    lms_residency_before(0, s, fn, &id, 1, &tok);
    lms_residency_after(&tok, s);
}

/* Frees the n chunks made by fake_chunks_add at base. */
static inline void fake_chunks_free(uint64_t base, int n)
{
    for (int i = 0; i < n; i++)
        lms_residency_drop(lms_residency_take(base + (uint64_t)i * FAKE_CHUNK_STRIDE));
}

#endif
