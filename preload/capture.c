/*
 * capture.c — the hooks of a stream capture's begin and end. A launch does
 * no residency work on a capturing stream, which it would have to ask the
 * driver about each time (cuStreamIsCapturing); counting the captures
 * begun and not yet ended lets it skip that question while there is none
 * (src/engine/capture.c, lms_capture_busy). Every begin is counted, even
 * one that passes through (a call from inside another hook): a capture
 * missed would let a launch work on a capturing stream. cudaStreamBeginCapture
 * reaches these hooks through the runtime's cuGetProcAddress lookups.
 */
#include "capture.h"
#include "hooks.h"

/* Counts the capture before the real begin (a launch the program orders
 * after the begin sees the count), and takes it back if the begin failed. */
#define BEGIN_CAPTURE_HOOK(sym, params, ...)                                       \
    LMS_EXPORT CUresult sym params                                                 \
    {                                                                              \
        bool entered = LMS_ENTER(sym);                                             \
        lms_capture_begin_call();                                                  \
        CUresult r = PASS(sym, __VA_ARGS__);                                       \
        if (r != CUDA_SUCCESS)                                                     \
            lms_capture_begin_failed();                                            \
        if (entered)                                                               \
            lms_hook_leave();                                                      \
        return r;                                                                  \
    }

BEGIN_CAPTURE_HOOK(cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode mode), s, mode)
BEGIN_CAPTURE_HOOK(cuStreamBeginCapture_v2_ptsz, (CUstream s, CUstreamCaptureMode mode), s, mode)
BEGIN_CAPTURE_HOOK(cuStreamBeginCapture, (CUstream s), s)
BEGIN_CAPTURE_HOOK(cuStreamBeginCapture_ptsz, (CUstream s), s)
BEGIN_CAPTURE_HOOK(cuStreamBeginCaptureToGraph,
                   (CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,
                    CUstreamCaptureMode mode),
                   s, g, deps, edges, n, mode)
BEGIN_CAPTURE_HOOK(cuStreamBeginCaptureToGraph_ptsz,
                   (CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,
                    CUstreamCaptureMode mode),
                   s, g, deps, edges, n, mode)

/* A capture is counted off when the stream captured before the real end,
 * the end says it ended one, and the stream no longer captures after it
 * (an end that fails may leave it capturing; one that lost a race with
 * another thread's end of the same capture ended nothing).
 * NULL is the per-thread default stream for the _ptsz variant. */
#define END_CAPTURE_HOOK(sym, ptds)                                                \
    LMS_EXPORT CUresult sym(CUstream s, CUgraph *g)                                \
    {                                                                              \
        bool entered = LMS_ENTER(sym);                                             \
        CUstream es = !s && (ptds) ? CU_STREAM_PER_THREAD : s;                     \
        bool was = lms_capture_active(es);                                         \
        CUresult r = PASS(sym, s, g);                                              \
        lms_capture_end_call(es, was, r);                                          \
        if (entered)                                                               \
            lms_hook_leave();                                                      \
        return r;                                                                  \
    }

END_CAPTURE_HOOK(cuStreamEndCapture, false)
END_CAPTURE_HOOK(cuStreamEndCapture_ptsz, true)
