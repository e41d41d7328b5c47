/*
 * residency.h — the residency engine (residency.c): which managed chunks
 * are on the device. Before each launch it fetches the chunks the policy
 * wants, evicting others to stay inside the budget; after it, it records
 * where each chunk was last used.
 */
#ifndef LMS_RESIDENCY_H
#define LMS_RESIDENCY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "driver.h"

/* Live managed chunks under lmshim's residency control (fast-path test). */
extern atomic_uint lms_residency_live;

/* True when some managed chunk exists: launches must be scanned. */
static inline bool lms_residency_any(void)
{
    return atomic_load_explicit(&lms_residency_live, memory_order_relaxed) != 0;
}

/* A managed chunk lmshim placed for `device` (size bytes at ptr); returns
 * its id, or -1 when it could not be tracked (then it is read over the link). */
int64_t lms_residency_add(uint64_t ptr, uint64_t size, int device);
/* A chunk's free, in two steps around the real call, which may fail.
 * take: launches no longer find the chunk at ptr and it is no victim (its
 * address may be another allocation's once the real free returns), but it
 * keeps its place and charge (NULL if unknown). Then drop (freed: forget it, return its
 * charge) or put_back (the free failed: as before take); one of the two for
 * each taken chunk. */
typedef struct lms_res_chunk lms_res_chunk;
lms_res_chunk *lms_residency_take(uint64_t ptr);
void lms_residency_drop(lms_res_chunk *taken);
void lms_residency_put_back(lms_res_chunk *taken);

/* Finds the chunks whose ranges contain any of words[0..n); writes their ids
 * (sorted, unique) and returns how many (at most max). */
int lms_residency_find(const uint64_t *words, int n, uint32_t *ids, int max);

/* A launch's parameter words to find chunks in (launch.c), and room for
 * the ids found; both the caller's. */
typedef struct lms_scan {
    const uint64_t *words;
    int n;                      /* words */
    uint32_t *room;             /* max entries */
    int max;
    uint64_t shape;             /* the launch's grid as a class (lms_launch_shape; 0: none) */
    uint64_t blocks;            /* the launch's blocks (lms_launch_blocks; 0: unknown or refused) */
} lms_scan;

#define LMS_TOKEN_FEW 16   /* chunk ids a token holds without allocating */

/* What before() handed to after() for one launch: every chunk id of the
 * launch, in `few` or (more than LMS_TOKEN_FEW) in `more`, the calling
 * thread's scratch (kept for its next launch: a token lives from before()
 * to after() on one thread, one at a time). Read them through
 * lms_token_ids(). */
typedef struct lms_launch_token {
    int device;                 /* -1: nothing to record */
    uint64_t seq;
    int n;
    int timed;                  /* the launch's timing handle (timing.h), 0: not timed */
    bool pieces;                /* some chunk of the launch is managed in pieces */
    uint32_t *more;             /* the thread's scratch when n > LMS_TOKEN_FEW, else NULL */
    uint32_t few[LMS_TOKEN_FEW];
} lms_launch_token;

/* The chunk ids of a token. */
static inline const uint32_t *lms_token_ids(const lms_launch_token *tok)
{
    return tok->more ? tok->more : tok->few;
}

/* Before a launch of fn on `device` and `stream` that uses chunks ids[0..n)
 * (any number; the token keeps its own copy): fetch, evict and order as the
 * policy decides. */
void lms_residency_before(int device, CUstream stream, uintptr_t fn, const uint32_t *ids, int n,
                          lms_launch_token *tok);
/* The same for a launch whose chunks are those scan->words point into:
 * they are found (into scan->room) under the launch's one hold of the
 * chunk map. */
void lms_residency_before_scan(int device, CUstream stream, uintptr_t fn, const lms_scan *scan,
                               lms_launch_token *tok);
/* Charges `bytes` to `device` for the caller when they fit in its budget,
 * else evicts resident managed chunks (the policy's victims) until they
 * do, so that a device allocation need not leave the device because
 * fetched chunks fill it. The room made is charged at once: no fetch of
 * another thread takes it between the eviction and the caller's use.
 * False (nothing charged) if it cannot; nothing is evicted then when
 * evicting every unpinned resident chunk could not make the room (the
 * request goes elsewhere or is refused anyway). */
bool lms_residency_reserve(int device, uint64_t bytes);

/* Waits on the host until the evictions still leaving `device` fit beside
 * what is charged to it: a device allocation whose charge was just taken
 * is on the device from its return on, while an eviction issued before it
 * (to make its room, or a launch's) may still wait for a kernel. Nothing
 * when no eviction is in flight past the room. */
void lms_residency_settle(int device);
/* The same for `bytes` the driver is about to take that are not charged
 * yet (an array's, charged once the driver made it): the host waits until
 * the evictions still leaving fit beside what is charged and them. */
void lms_residency_settle_room(int device, uint64_t bytes);
/* The same for a stream-ordered device allocation on `stream`, without
 * blocking the host: the stream waits (cuStreamWaitEvent) for the ledger
 * point past which the evictions still leaving `device` fit beside what is
 * charged, so the allocation's memory is used on its stream, and on any
 * stream ordered after it, only once they left. False when the wait could
 * not be enqueued (the caller waits on the host instead). */
bool lms_residency_settle_stream(int device, CUstream stream);

/* After the launch was issued on `stream`: record the chunks' last use. */
void lms_residency_after(lms_launch_token *tok, CUstream stream);

/* Adds delta to the pins of chunks ids[0..n) of `device`: a pinned chunk is
 * never chosen for eviction (graph launches in flight, graph.c). */
void lms_residency_pin(int device, const uint32_t *ids, int n, int delta);

/* Context ctx was destroyed or reset: the streams and events the engine
 * made in it are gone (the driver freed them), so they are forgotten, and
 * made again, in the context current then, before the next launch of their
 * device. Chunks keep their places; the caller drops the chunks the driver
 * freed (lms_residency_take and lms_residency_drop). */
void lms_residency_context_gone(CUcontext ctx);
/* cuStreamDestroy of `stream` (before the real call): a new stream that
 * gets the same handle starts with nothing of the old one's order. */
void lms_residency_stream_gone(CUstream stream);

/* fork: hold every lock across fork; the child gets fresh locks. */
void lms_residency_fork_prepare(void);
void lms_residency_fork_parent(void);
void lms_residency_fork_child(void);

#endif
