/*
 * lmshim.h — the small public API of liblmshim.so, for programs that want
 * to read what lmshim is doing. `pkg-config liblmshim` gives the flags.
 * Every function is safe to call whether or not lmshim is active. Linking
 * with -llmshim makes it active in the program (as LD_PRELOAD would); to
 * read it only when the program is run under lmshim, look the functions up
 * with dlsym(RTLD_DEFAULT, "lms_get_stats") instead (NULL without lmshim).
 */
#ifndef LMSHIM_H
#define LMSHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LMS_API __attribute__((visibility("default")))
#define LMS_STATS_PLACES 5   /* device, managed, host, vmm, pinned */

/* A snapshot of one device's accounting. Bytes unless said otherwise. */
typedef struct lms_device_stats {
    uint64_t physical;                     /* the device's memory */
    uint64_t budget;                       /* lmshim's budget for this process */
    uint64_t used;                         /* charged now: device chunks (+ resident managed) */
    uint64_t peak;                         /* most charged at once */
    uint64_t live_chunks[LMS_STATS_PLACES];
    uint64_t live_bytes[LMS_STATS_PLACES]; /* bytes requested, by placement */
    uint64_t allocs[LMS_STATS_PLACES];     /* chunks placed since start (count) */
    uint64_t frees;                        /* chunks freed (count) */
    uint64_t fallbacks;                    /* device requests placed elsewhere (count) */
    uint64_t oom_failures;                 /* requests answered out-of-memory (count) */
    uint64_t prefetched_bytes;             /* managed bytes fetched to the device */
    uint64_t prefetches;                   /* fetches issued (count) */
    uint64_t evicted_bytes;                /* managed bytes sent back to the host */
    uint64_t evictions;                    /* evictions issued (count) */
    uint64_t launches_scanned;             /* launches whose chunks were looked at (count) */
    uint64_t budget_violations;            /* times the budget was passed: always 0 (count) */
} lms_device_stats;

/* Fills *out for `device`; 0 on success, -1 for a device lmshim has not
 * seen or when out is NULL. */
LMS_API int lms_get_stats(int device, lms_device_stats *out);

/* The version of liblmshim, e.g. "0.1.0". */
LMS_API const char *lms_version(void);

#ifdef __cplusplus
}
#endif
#endif
