/*
 * capture.h — stream capture as the engine sees it (capture.c). While a
 * stream captures, its work becomes a graph instead of running: residency
 * work (prefetches, event records and waits) must not touch it, and a free
 * must not synchronize it.
 */
#ifndef LMS_CAPTURE_H
#define LMS_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "chunks.h"
#include "driver.h"

/* Before residency work for a launch on `stream`: releases deferred frees
 * and graph pins that are due, then returns true when the engine must leave
 * the stream alone (it captures, or is the legacy stream tied to a capture). */
bool lms_capture_before_work(CUstream stream);

/* True when `stream` captures or cannot be asked (no residency work on it).
 * Without a capture begun through the hooks and not yet ended, false at
 * once: no stream captures then. */
bool lms_capture_busy(CUstream stream);

/* The hooks of cuStreamBeginCapture* (every variant, counted even when the
 * hook passes through): begin_call before the real call, begin_failed
 * after it when it failed. */
void lms_capture_begin_call(void);
void lms_capture_begin_failed(void);

/* A begin entry point went to the program without a hook (a variant
 * hooks.def lacks): captures may begin unseen, so lms_capture_busy asks
 * the driver from now on. Only an atomic store: safe inside dlsym. */
void lms_capture_untracked(void);

/* True when `stream` captures (or its capture was invalidated), by the
 * driver; false on an error. */
bool lms_capture_active(CUstream stream);

/* After a real cuStreamEndCapture* on `stream`, which captured before it
 * when `was`, that answered r: a capture that this call ended is counted
 * off. Two threads may end one capture at once, both having seen it
 * capture: only the one whose answer says it ended a capture counts. */
void lms_capture_end_call(CUstream stream, bool was, CUresult r);

/* A stream-ordered free of an off-device chunk `c` (managed or pinned host,
 * already out of the chunk map) on `stream`. Returns false when the stream
 * does not capture (the caller synchronizes and frees). Otherwise *r gets
 * the answer: on a capturing stream the free becomes a host node of the
 * capture, and the memory is released once a launch of the graph has
 * passed that point, then lms_place_released(c) gives back its residency
 * entry and charge; on the legacy stream tied to a capture, CUDA's error
 * (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT), that capture invalidated as the
 * driver's refusal would (false when it ended meanwhile). */
bool lms_capture_free_async(const lms_chunk *c, CUstream stream, CUresult *r);

/* What lms_capture_claim found for an address not in the chunk map. */
typedef enum lms_claim {
    LMS_CLAIM_NONE,    /* no captured free holds it: the driver answers */
    LMS_CLAIM_TWICE,   /* a captured free of it ran: a double free */
    LMS_CLAIM_TAKEN,   /* captured frees hold it and none ran: the program frees it itself */
    LMS_CLAIM_BUSY,    /* a free of it is under way (a drain's release, another thread's claim):
                        * the caller waits and looks again, from the chunk map (the memory may
                        * be back there, or the address a new chunk's) */
} lms_claim;

/* True when a captured free that has not been released holds `key` (the
 * chunk is copied to *c). One atomic load when none is pending. */
bool lms_capture_holds(uint64_t key, lms_chunk *c);

/* A free of `key`, which is not in the chunk map: when captured frees of
 * it exist and none has run (their graphs not launched, destroyed, or
 * their capture invalidated), the memory is still the program's. Then
 * they are held for this free (LMS_CLAIM_TAKEN, *c gets the chunk) until
 * lms_capture_claim_end says what it did. One atomic load when no
 * captured free is pending. */
lms_claim lms_capture_claim(uint64_t key, lms_chunk *c);

/* After a LMS_CLAIM_TAKEN free of `key`: `freed` (the memory went back)
 * ends the held records, whose nodes then do nothing; otherwise (the free
 * failed, or was itself captured) they are as they were, due when their
 * node ran meanwhile. */
void lms_capture_claim_end(uint64_t key, bool freed);

/* True for the errors a capture gives a call it forbids
 * (CUDA_ERROR_STREAM_CAPTURE_*): the program gets them unchanged. */
static inline bool lms_capture_refused(CUresult r)
{
    return r >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && r <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
}

/* The calling thread's capture mode, saved by lms_capture_relax. */
typedef struct lms_capture_mode {
    CUstreamCaptureMode mode;
    bool saved;               /* false: nothing to put back */
} lms_capture_mode;

/* Sets the calling thread's capture mode to relaxed for the calls lmshim
 * makes in place of a stream-ordered request (a managed allocation, a
 * synchronous free), which CUDA allows during any capture: another thread's
 * global capture must not be invalidated by lmshim's substitutes. */
lms_capture_mode lms_capture_relax(void);

/* Puts back the mode lms_capture_relax saved. */
void lms_capture_restore(lms_capture_mode m);

/* Releases the frees whose point in a graph has been reached. Called by
 * the launch hooks (lms_capture_idle) and by every allocation, free and
 * memory query (lms_place_*): one atomic load when none is due. */
void lms_capture_drain(void);

/* A context ended (under the context lock held exclusively): each
 * captured free whose memory the driver freed with it (`forgot` says so
 * of its address) gives back its residency entry and charge now and is
 * never released. */
void lms_capture_context_gone(bool (*forgot)(uint64_t key));

/* What a launch hook owes even when no residency work runs (no managed
 * chunk alive, e.g. LMS_MODE=host): the frees that are due and the pins of
 * graph launches that completed. Two atomic loads when there is nothing. */
void lms_capture_idle(void);

/* fork: the list's lock is held across fork; the child gets a fresh one.
 * A leaf: taken after the context lock (place.h), as lms_capture_drain
 * takes it. */
void lms_capture_fork_prepare(void);
void lms_capture_fork_parent(void);
void lms_capture_fork_child(void);

#endif
