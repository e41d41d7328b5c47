/*
 * trace_build.h — building lmshim traces (JSON lines) in memory for the
 * replay unit tests (bound_test, hostile_replay_test): a growing text
 * buffer, the header, managed chunk and launch events, a small
 * deterministic generator, and comparing a curve's result with a replay's.
 */
#ifndef TEST_TRACE_BUILD_H
#define TEST_TRACE_BUILD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "replay.h"

#define MiB 1048576ull

/* A trace being built: s (malloc'ed, the caller frees it) holds n bytes of
 * text in cap; seq numbers the launches. */
typedef struct tb {
    char *s;
    size_t n, cap;
    uint64_t seq;
} tb;

/* Appends one printf-formatted line (under 4 KiB) to the trace. */
static inline void put(tb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char line[4096];
    int len = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    CHECK(len > 0 && (size_t)len < sizeof line);
    if (b->n + (size_t)len + 1 > b->cap) {
        b->cap = (b->n + (size_t)len + 1) * 2;
        b->s = realloc(b->s, b->cap);
        CHECK(b->s);
    }
    memcpy(b->s + b->n, line, (size_t)len + 1);
    b->n += (size_t)len;
}

/* The trace's header and its device 0 with `physical` bytes and `budget`. */
static inline void trace_header(tb *b, uint64_t physical, uint64_t budget)
{
    put(b, "{\"type\":\"header\",\"format\":1,\"lmshim\":\"0.1.0\",\"pid\":1,\"rank\":0,\"t\":1}\n");
    put(b, "{\"type\":\"device\",\"t\":2,\"dev\":0,\"physical\":%llu,\"budget\":%llu}\n",
        (unsigned long long)physical, (unsigned long long)budget);
}

/* A managed chunk `id` of `size` bytes allocated or freed at the pointer
 * of slot `slot`. */
static inline void managed_at(tb *b, bool alloc, int slot, int id, uint64_t size)
{
    unsigned long long ptr = 0x7f0000000000ull + ((unsigned long long)slot << 32);
    if (alloc)
        put(b, "{\"type\":\"alloc\",\"t\":3,\"dev\":0,\"ptr\":\"0x%llx\",\"size\":%llu,\"charge\":0,"
               "\"place\":\"managed\",\"id\":%d,\"fallback\":false,\"site\":-1}\n", ptr, (unsigned long long)size, id);
    else
        put(b, "{\"type\":\"free\",\"t\":3,\"dev\":0,\"ptr\":\"0x%llx\",\"size\":%llu,\"place\":\"managed\"}\n", ptr,
            (unsigned long long)size);
}

/* A launch of function `fn` using the chunks ids[0..n). */
static inline void launch_fn(tb *b, uint64_t fn, const int *ids, int n)
{
    char list[2048] = "";
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", i ? "," : "", ids[i]);
    b->seq++;
    put(b, "{\"type\":\"launch\",\"t\":4,\"dev\":0,\"seq\":%llu,\"fn\":\"0x%llx\",\"name\":\"k\",\"stream\":\"0x0\","
           "\"chunks\":[%s]}\n", (unsigned long long)b->seq, (unsigned long long)fn, list);
}

/* Bytes a replay moved over the link: fetched plus read in place. */
static inline uint64_t link_of(const lms_replay_result *r)
{
    return r->fetched_bytes + r->remote_bytes;
}

/* A step of the xorshift64 generator on *state: a number below n. */
static inline uint64_t xorshift_below(uint64_t *state, uint64_t n)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state % n;
}

/* Checks that a curve's result `a` equals the replay's `b` at `budget`
 * (showing both when they differ). */
static inline void same_result(const lms_replay_result *a, const lms_replay_result *b, uint64_t budget)
{
    if (memcmp(a, b, sizeof *a) != 0)
        fprintf(stderr,
                "at %llu: one pass fetched %llu evicted %llu misses %llu remote %llu, replay %llu %llu %llu %llu\n",
                (unsigned long long)budget, (unsigned long long)a->fetched_bytes,
                (unsigned long long)a->evicted_bytes, (unsigned long long)a->misses,
                (unsigned long long)a->remote_bytes, (unsigned long long)b->fetched_bytes,
                (unsigned long long)b->evicted_bytes, (unsigned long long)b->misses,
                (unsigned long long)b->remote_bytes);
    CHECK_EQ_U(a->fetched_bytes, b->fetched_bytes);
    CHECK_EQ_U(a->evicted_bytes, b->evicted_bytes);
    CHECK_EQ_U(a->misses, b->misses);
    CHECK_EQ_U(a->remote_bytes, b->remote_bytes);
    CHECK_EQ_U(a->launches, b->launches);
}

#endif
