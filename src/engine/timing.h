/*
 * timing.h — kernel durations the engine measures itself (timing.c): a
 * sampled launch gets an event recorded on its stream before it and one
 * after it; completed pairs are read without blocking (cuEventQuery, then
 * cuEventElapsedTime) and teach the device's price table (src/common/price.h)
 * what reading its remote chunks in place cost. Every call comes under
 * the device's residency lock.
 */
#ifndef LMS_TIMING_H
#define LMS_TIMING_H

#include <stdint.h>

#include "driver.h"
#include "price.h"

/* Starts loading what the launch of `sig` (fn, grid class `fit`, chunks
 * `ids`) on `device` will ask of the prices (lms_price_prefetch); nothing
 * else. */
void lms_timing_prefetch(int device, uintptr_t fn, uintptr_t fit, uint64_t sig, const uint32_t *ids, int n);
/* Whether a launch of signature `sig` (number `seq` of the device) is
 * sampled (`always`: whatever the sampling, a launch made to teach its
 * function's fit): asked before lms_timing_begin, so that a caller skips
 * what only a timed launch needs. */
bool lms_timing_wanted(int device, uint64_t seq, uint64_t sig, bool always);

/* Before a launch of function fn and signature `sig` on `stream` that
 * lms_timing_wanted said is sampled, after the engine's own work for it
 * on that stream: records the start event and keeps remote[0..n) (the
 * ids of the chunks it reads in place, `bytes` in all) and `local` (the
 * bytes of its chunks on the device) and `role` (the parameter position
 * those reads price, with its share of them, or NULL: price.h); `fit`:
 * the key its function's fit is kept under (fn and its grid's class).
 * Returns a handle for lms_timing_end, or 0 when not timed (timing not
 * ready, no pair free, a record failed). */
int lms_timing_begin(int device, CUstream stream, uintptr_t fn, uintptr_t fit, uint64_t sig, const uint32_t *remote,
                     int n, uint64_t bytes, uint64_t local, const lms_price_role_read *role);
/* After the launch was issued: records the end event of handle `h`. */
void lms_timing_end(int device, int h, CUstream stream);
/* Before the first demand fetch of a launch on its stream (before the
 * fetch's waits): when sampled, records the start of the batch; returns a
 * handle for lms_timing_fetch_end, or 0. */
int lms_timing_fetch_begin(int device, CUstream stream);
/* After the batch (`bytes` fetched) was issued: records its end. */
void lms_timing_fetch_end(int device, int h, CUstream stream, uint64_t bytes);
/* What a demand fetch holds its launch, in ns per byte fetched (its waits
 * for evictions included), or negative when not measured yet. */
double lms_timing_fetch_cost(int device);
/* Learns from the pairs that completed (never waits). */
void lms_timing_poll(int device);
/* The learned price (ns of slowdown per byte) of reading chunk `id` in
 * place for a launch of `sig` (of fn, in its grid's class: `fit`) whose
 * parameter word `role` points into it, or negative when unknown
 * (lms_price_of_class). */
double lms_timing_price(int device, uintptr_t fn, uintptr_t fit, uint64_t sig, uint32_t id, uint32_t role);
/* The price of reading chunk `id` in place learned for `sig` on grids of
 * the launch's class (`fit`) only, or negative (lms_price_in_class). */
double lms_timing_price_in_class(int device, uintptr_t fn, uintptr_t fit, uint64_t sig, uint32_t id);
/* The learned price (ns of slowdown per byte) of reading in place the
 * chunk that parameter word `role` of a launch of fn (in its grid's
 * class: `fit`) points into, or negative when unknown; *spread: how far
 * its launches stray from it (lms_price_role_of_class). */
double lms_timing_role_price(int device, uintptr_t fn, uintptr_t fit, uint32_t role, double *spread);

/* The price of reading in place for a launch of fn whose grid's class
 * gives the key `fit` (lms_timing_begin): fitted over the timed launches
 * of its class when that has a price, or asks for a launch and holds at
 * least an eighth of fn's timed launches; else over all of fn's (ns of
 * slowdown per byte, src/common/fnprice.h); negative when it cannot be
 * fitted yet; *learn (may be NULL) then says which launch would teach it
 * (+1 one with its chunks on the device, -1 one reading in place, 0 none). */
double lms_timing_fn_price(int device, uintptr_t fn, uintptr_t fit, int *learn);

/* How many of fn's launches its fit was taught (lms_fnprice_seen). */
uint32_t lms_timing_fn_seen(int device, uintptr_t fn);

/* What a function of the device not fitted yet may expect to pay for
 * reading in place: the lowest and highest first prices of the latest
 * functions fitted (lms_fnprice_prior); false while too few were. */
bool lms_timing_fn_prior(int device, double *lo, double *hi);

/* The new phases the device's launches marked together so far
 * (lms_fnprice_phase; 0 when not timed). */
uint32_t lms_timing_fn_phase(int device);

/* The base a timed launch of fn with signature `sig` would price its
 * reads in place against (lms_price_local_base), or negative when
 * unknown. */
double lms_timing_local_base(int device, uintptr_t fn, uint64_t sig);
/* The shortest duration (ns) measured for a launch of fn with signature
 * `sig` (see lms_price_base), or negative when unknown. */
double lms_timing_base(int device, uintptr_t fn, uint64_t sig);

/* Records a point on `stream` (a step's boundary); returns its number
 * (> 0), or 0 when it cannot (the record failed: no point; or point
 * `like` is gone). With `like` > 0, only on the stream of point `like`:
 * negative (nothing recorded) when `stream` is another. */
int lms_timing_mark(int device, CUstream stream, int like);

/* The stream that points after every stream's work are recorded on (made
 * on the first call from the points' events' context, non-blocking), or
 * NULL when there is none (residency.c, op_mark_all). Under the caller's
 * device lock. */
CUstream lms_timing_gauge(int device);
/* The device time in ns between two points, when both completed (never
 * waits); negative while either has not, or when they are gone (only the
 * latest MARKS are kept), failed, or were recorded on different streams. */
double lms_timing_between(int device, int from, int to);

/* The context ctx ended (under the context lock held exclusively, so no
 * launch's work runs meanwhile): events and streams made in it are
 * forgotten, the prices learnt stay, and the next timed launch makes its
 * pool again. */
void lms_timing_context_gone(CUcontext ctx);

#endif
