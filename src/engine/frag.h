/*
 * frag.h — fragmentation as lmshim can see it from where it stands
 * (frag.c); every number is defined in docs/TRACE.md "Fragmentation".
 */
#ifndef LMS_FRAG_H
#define LMS_FRAG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct lms_frag {
    uint64_t requested;      /* bytes the program asked for, live device chunks */
    uint64_t reserved;       /* bytes charged for them (granularity rounding included) */
    uint64_t chunks;         /* live device chunks */
    uint64_t span;           /* from the lowest to the end of the highest device chunk */
    uint64_t holes;          /* bytes between live device chunks inside the span */
    uint64_t budget_free;    /* budget - used */
    bool driver_known;       /* the two below were read from the driver */
    uint64_t driver_free;    /* the driver's free memory (cuMemGetInfo) */
    uint64_t largest_grant;  /* the largest device request lmshim would grant on the device now */
    int64_t driver_gap;      /* budget_free - driver_free: memory the budget counts as free that
                              * the device does not have (other processes, the driver's own use) */
} lms_frag;

/* Measures device `dev` now. Walks every live chunk: meant for info-level
 * logging, status and the summary, not the hot path. */
void lms_frag_measure(int dev, lms_frag *out);

#endif
