/*
 * stream.c — the stream destroy hooks. The driver hands a destroyed
 * stream's handle to streams created later; the residency engine keys its
 * per-stream order (slots, event rings) by the handle, so it forgets the
 * stream first (src/engine/residency.c, lms_residency_stream_gone). Events
 * recorded on the stream stay valid, so nothing is waited for.
 */
#include "hooks.h"
#include "residency.h"

/* Forgets the stream before the real destroy: once that returns, another
 * thread may already get the handle for a new stream. A destroy that fails
 * (a bad handle) has cost the stream its slot: it waits for fetches again.
 * The cached devices of streams are dropped around the real call. */
#define STREAM_DESTROY_HOOK(sym)                                                   \
    LMS_EXPORT CUresult sym(CUstream s)                                            \
    {                                                                              \
        if (!LMS_ENTER(sym))                                       \
            return PASS(sym, s);                                                   \
        lms_residency_stream_gone(s);                                              \
        lms_driver_streams_end_begin();                                            \
        CUresult r = REAL(sym)(s);                                                 \
        lms_driver_streams_end_done();                                             \
        lms_hook_leave();                                                          \
        return r;                                                                  \
    }

STREAM_DESTROY_HOOK(cuStreamDestroy_v2)
STREAM_DESTROY_HOOK(cuStreamDestroy)
