/*
 * plan.h — the residency decisions (plan.c), apart from their mechanics.
 * The live engine (residency.c) runs them with CUDA prefetches, events and
 * a device account; `lmshim replay` runs the very same decisions over a
 * trace with counters. Policies (policies/policy.h) are consulted here.
 *
 * The resident chunks live in two indexed heaps: the victim order (the
 * policy's expected next use, farthest first, then least recently used)
 * and the expiry order (earliest expected next use first, to ask the policy
 * again about a chunk whose expected use passed). A chunk is in them while
 * it is resident and not pinned; every change costs O(log n).
 */
#ifndef LMS_PLAN_H
#define LMS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

/* A managed chunk as the planner sees it; embedded in the caller's record,
 * zeroed when the record is made. */
typedef struct lms_plan_chunk {
    uint32_t id;
    uint64_t charge;      /* bytes charged while resident */
    bool resident;
    int pins;             /* in use by launches not yet recorded */
    uint64_t last_use;    /* seq of its last recorded launch (0: none) */
    uint64_t next_use;    /* the policy's expected next use (seq), or LMS_NEXT_UNKNOWN */
    int vpos, epos;       /* 1 + index in the victim / expiry heap; 0: not in it */
    lms_policy_memo memo; /* the policy's words */
    uint32_t gave_to;     /* acting deep: 1 + the id of the chunk it gave its room to (0: none; plan.c, give_room) */
    bool kept;            /* ... its launch measured a loss after it gave: never offered again */
    float gave_gain;      /* ... the taker's measured slowdown the move saved (ns a step) */
    uint8_t losses;       /* ... launches in a row that measured a loss above it */
    float dear;           /* acting deep: its price at its last launch when read in place and dear (0: not) */
    float reread;         /* ... the price of its latest read in place known, when over FAR_OVER fetches (0: not):
                           * re-read by its kernel, it is no chunk to read in place once a step (plan.c, read_once) */
    uint64_t no_take_until; /* ... a take whose fetch failed: no other before this launch */
    uint32_t took;        /* ... 1 + the acting-deep round in which it took another's room (0: none):
                           * none other in that round unless a device request evicted it */
    uint64_t checked;     /* with nothing to act on: the launch that read it in place on its own price, timed (plan.c, time_read) */
    uint32_t fetched_n;   /* its fetches, ... */
    uint32_t used_n;      /* ... and the launches that used it, since it was made (lms_plan_dropped) */
} lms_plan_chunk;

/* The mechanics, supplied by the caller. */
typedef struct lms_plan_ops {
    /* Charges bytes against the budget; false (nothing charged) if they do not fit. */
    bool (*reserve)(void *ctx, uint64_t bytes);
    /* The budget the window of fetch-ahead is measured against, in bytes. */
    uint64_t (*budget)(void *ctx);
    /* Sends a resident chunk back to the host and returns its charge. */
    void (*evict)(void *ctx, lms_plan_chunk *c);
    /* Fetches a chunk whose charge is reserved (ahead: on the side stream).
     * On failure it returns the charge and answers false. */
    bool (*fetch)(void *ctx, lms_plan_chunk *c, bool ahead);
    /* The fetches of one batch are issued (ahead: on the side stream);
     * NULL when nothing needs it. */
    void (*fetched)(void *ctx, bool ahead);
    /* The launch about to run uses resident chunk c: order it after c's
     * fetch (NULL when nothing needs it). */
    void (*wait_ready)(void *ctx, lms_plan_chunk *c);
    /* The chunk of an id (of this device), or NULL. */
    lms_plan_chunk *(*lookup)(void *ctx, uint32_t id);
    /* Whether resident chunk c is used by the latest launch on another
     * stream than the one of the launch being planned (its kernel may
     * still run: c's eviction would wait for it); NULL: never. */
    bool (*busy)(void *ctx, const lms_plan_chunk *c);
    /* Bytes: what managed chunks may hold on the device (the budget less
     * the device chunks), and the live managed chunks' size (both NULL:
     * unknown; then missing chunks are always fetched). */
    uint64_t (*room)(void *ctx);
    uint64_t (*managed)(void *ctx);
    /* What reading c in place costs the launch being planned, learned from
     * measured durations (ns of slowdown per byte), or negative when
     * unknown (NULL: never known; then a launch's missing chunks are all
     * fetched, in id order). */
    double (*price)(void *ctx, lms_plan_chunk *c);
    /* ops->price learned on grids of the launch's class only (a GEMM's
     * passes follow its grid: a price from another grid may be far off),
     * or negative (NULL: never known). Where known, ops->price must give
     * it too (the engine's prefers the class's: price.c): acting deep's
     * trial fetches by this price what acting deep chosen fetches by
     * ops->price (plan.c, read_once_now). */
    double (*class_price)(void *ctx, lms_plan_chunk *c);
    /* What reading c in place costs the launch being planned, learned for
     * the parameter position that names c over its function's launches of
     * any signature (ns of slowdown per byte), or negative when unknown
     * (NULL: never known); *spread gets how far those launches' prices
     * stray from it. Asked with nothing to act on for a chunk without a
     * price of its own (plan.c, position_price). */
    double (*role_price)(void *ctx, lms_plan_chunk *c, double *spread);
    /* What reading in place costs the function of the launch being
     * planned, fitted over its measured launches (ns of slowdown per byte),
     * or negative when it cannot be fitted yet; then *learn says which
     * launch would teach it: +1 one that fetches, -1 one that reads in
     * place, 0 none; with a price, 0, or 2 while it stands on few
     * launches (NULL: never known). Asked when the policy has
     * nothing to act on (plan.c, blind_choice), and when acting, for
     * chunks without a price of their own (plan.c, hidden_price). */
    double (*fn_price)(void *ctx, int *learn);
    /* What a function not fitted yet may expect: the lowest and highest
     * of the first prices fitted for the latest functions (fnprice.h,
     * lms_fnprice_prior), each counted once; false while too few were
     * (NULL: never known). Asked when the policy has nothing to act on
     * (plan.c, blind_choice). */
    bool (*fn_prior)(void *ctx, double *lo, double *hi);
    /* How many launches of the function being launched its fit was
     * taught (NULL: never known). */
    uint32_t (*fn_seen)(void *ctx);
    /* How many new phases the functions' launches on the device marked
     * together so far (fnprice.h, lms_fnprice_phase; NULL: never known). */
    uint32_t (*fn_phase)(void *ctx);
    /* What fetching on demand holds a launch, in ns per byte fetched (the
     * link and the waits for evictions), or negative when unknown (NULL:
     * never known). */
    double (*fetch_cost)(void *ctx);
    /* Bytes carried to the device by fetches since the start (the link's
     * bytes, not charges); NULL: unknown (acting lean is not chosen). */
    uint64_t (*moved)(void *ctx);
    /* The bytes the launch being planned could read over the link while
     * it computes (its shortest measured duration at the link's measured
     * speed), or 0 when unknown (NULL: never known). */
    uint64_t (*hides)(void *ctx);
    /* Whether the launch being planned, timed, would price its reads in
     * place: a duration of its signature or its function with nothing
     * read in place is known to measure its slowdown against (NULL:
     * never). */
    bool (*priceable)(void *ctx);
    /* Whether the launches lately were all issued on the stream of the
     * one being planned (its duration is then likely its own, not shared
     * with or queued behind other streams' kernels: work issued earlier
     * on another stream may still run); NULL: taken as so. */
    bool (*alone)(void *ctx);
    /* Records a point on the launch's stream (a step's boundary) before
     * the launch; returns its number (> 0) or 0. With `like` > 0 only when
     * the launch's stream is that of point `like` (negative, nothing
     * recorded, when it is another: a later launch is asked). The device time in ns
     * between two points once both completed, else negative (never
     * waits). (Both NULL: steps are not timed; the policy always acts.) */
    int (*mark)(void *ctx, int like);
    double (*between)(void *ctx, int from, int to);
    /* Like mark, but the point completes once the work issued before it
     * on every stream of the device's launches has (one stream of the
     * engine's waits for each); never on another stream. NULL: mark. */
    int (*mark_all)(void *ctx, int like);
    /* The blocks the launch being planned runs (its grid's x * y * z), or
     * 0 when unknown (NULL: never known). The trials weigh a mode's timed
     * step by its launches' blocks (trials.c, faster). */
    uint64_t (*blocks)(void *ctx);
} lms_plan_ops;

#define LMS_TRIAL_POINTS 9   /* points of a timed step: its start and each eighth */

/* What the planner does with a launch's missing chunks: act on the policy
 * (fetch on demand and the next launch's chunks ahead, in its order); the
 * same fetching the next 8 launches' chunks ahead (deep); fetch them all
 * on demand only, in LRU order, prices aside; or read them in place. */
enum { LMS_PLAN_ACT, LMS_PLAN_DEEP, LMS_PLAN_DEMAND, LMS_PLAN_INPLACE, LMS_PLAN_MODES };
#define LMS_PLAN_DONORS 16   /* chunks offered by acting deep's launches that hide a read in place */
/* The stages of the timed steps (lms_plan.trial). */
enum { LMS_TRIAL_OFF, LMS_TRIAL_RUNNING, LMS_TRIAL_CHOSEN };
enum { LMS_SUM_MOVED, LMS_SUM_HIDDEN, LMS_SUM_ASKED, LMS_SUM_KNOWN, LMS_SUM_BLOCKS, LMS_SUMS };   /* a timed step's sums */

/* With nothing to act on, where the chunks that no price decides go
 * (blindways.c): as the rules say (plan.c, blind_choice), fetched, or
 * read in place, as measured over windows of launches; and where prices
 * were judged slower than that way for every chunk, every chunk goes
 * that way (`all`). */
enum { LMS_BWAY_RULES, LMS_BWAY_FETCH, LMS_BWAY_INPLACE };
#define LMS_BWAY_PARTS 4   /* parts of a timed window, each timed */
typedef struct lms_plan_bwindow {
    int pts[LMS_BWAY_PARTS + 1];       /* its points: the first, and each part's last (0: none) */
    uint64_t bytes[LMS_BWAY_PARTS];    /* the managed bytes each part's launches used, */
    uint64_t missing[LMS_BWAY_PARTS];  /* ... of which not on the device at the launch */
} lms_plan_bwindow;
/* What the timed parts of one way added up to. */
typedef struct lms_plan_bsums {
    double t;          /* device time, ns */
    uint64_t bytes;    /* managed bytes used, */
    uint64_t missing;  /* ... of which not on the device at their launch */
    double r, rr;      /* the parts' rates (ns per byte), summed, and their squares summed */
    int parts;         /* parts with bytes */
} lms_plan_bsums;
typedef struct lms_plan_blind {
    int way;                  /* LMS_BWAY_*: what those chunks do now */
    int stage;                /* what the current window is for (blindways.c) */
    lms_plan_bwindow cur;     /* the current window: its points and bytes so far */
    int part;                 /* its parts done */
    uint32_t n;               /* launches in the current part */
    uint64_t moved_from;      /* the bytes fetches had carried (ops->moved) at its first point */
    lms_plan_bwindow pending[4];   /* windows ended, not yet added up (no first point: none):
                                    * fetching's, reading in place's, the chosen way's, one way's for every chunk */
    lms_plan_bsums round[2];  /* ... added up: fetching's and reading in place's in this round, */
    lms_plan_bsums sums[2];   /* ... and over the rounds before it that agree with one another */
    int rounds, tried;        /* those rounds; all rounds timed */
    uint32_t waited;          /* launches the choice waited for its points */
    double dearer;            /* fetching chosen: reading in place's time per byte over fetching's, less one */
    double ref, ref_var, part_var;   /* the chosen way's ns per byte held to (0: none), the square of its
                                      * error's share, the variance of its parts' shares */
    int odd;                  /* windows in a row off it */
    uint32_t windows;         /* windows since the choice */
    uint64_t chosen_at;       /* `launches` at the choice */
    uint32_t phase;           /* the functions' phases seen (ops->fn_phase) ... */
    uint64_t phase_at;        /* ... the blind launches counted when the latest came */
    uint64_t launches;        /* launches with nothing to act on, counted */
    int chose;                /* the way the trials chose last (LMS_BWAY_*) ... */
    uint32_t retry;           /* ... the windows' launches after which they run again, */
    uint32_t quiet;           /* ... and the launches without a phase before one has them run again */
    bool held;                /* the latest phase came after such a quiet time (it has them run once it held) */
    double gaps;              /* the blind launches between phases, on average (the latest weighing a quarter; 0: none) */
    bool fragile;             /* reading in place chosen turned far dearer at once (until the next periodic trial) */
    double ref_part;          /* reading in place chosen: the device time of its measure's parts, on average, */
    double ref_miss;          /* ... and the share of their bytes not on the device */
    bool all;                 /* the way is every chunk's, priced or not (judged faster than prices deciding) */
    uint32_t decided;         /* missing chunks decided with prices deciding (halved now and then), ... */
    uint32_t fetched_against; /* ... of which prices fetched where the way read in place, */
    uint32_t read_against;    /* ... and read in place where it fetched */
    uint8_t cut;              /* trials cut by a phase in a row (cut_by_phase) */
    bool judged_once;         /* these trials judged a way for every chunk (start_judging) */
    bool judged_both;         /* ... and the other way after it lost (judged_lost) */
    int judged;               /* the way every chunk tries (LMS_BWAY_*; RULES: none), against prices deciding, */
    int judged_after;         /* ... the way the rounds chose, taken after (with prices deciding) unless it wins, */
    lms_plan_bsums judge;     /* ... and its windows added up */
    int late_way;             /* a judged way neither won nor lost, faster on average (RULES: none), ... */
    lms_plan_bsums late;      /* ... its windows added up, */
    lms_plan_bsums since;     /* ... and prices deciding's: the trials' windows and the chosen ones' since */
    uint32_t late_windows;    /* ... chosen windows added to `since` */
} lms_plan_blind;

/* One place in an indexed heap: the chunk and, beside it, the keys its
 * order compares (copies of the chunk's, kept equal to them while it is
 * in the heap), so that a sift compares without reaching into chunks
 * scattered in memory. */
typedef struct lms_plan_slot {
    uint64_t next_use, last_use;
    lms_plan_chunk *c;
    uint32_t id;
} lms_plan_slot;

/* A growable array of slots used as an indexed heap. */
typedef struct lms_plan_heap {
    lms_plan_slot *a;
    int n;
    size_t cap;
} lms_plan_heap;

typedef struct lms_plan {
    const lms_policy *policy;
    void *pstate;
    lms_plan_heap victims;           /* resident, unpinned: evict the top first */
    lms_plan_heap expiry;            /* resident, unpinned, next use known: earliest on top */
    int nresident;                   /* resident chunks, pinned or not */
    uint64_t victim_bytes;           /* bytes: the charges of those in `victims` (unpinned) */
    uint64_t now;                    /* seq of the latest launch observed */
    double life_fetches, life_uses;  /* chunks freed after a fetch: their fetches and uses, halved past
                                      * CHURN_KEPT fetches (lms_plan_dropped; plan.c, churning) */
    uint64_t epoch;                  /* the policy's epoch() last seen */
    lms_policy_memo **memos;         /* scratch for observe() (capmemos) */
    lms_plan_chunk **batch;          /* scratch for a batch of fetches (capbatch) */
    size_t capmemos, capbatch, cappriced;
    uint32_t *ahead;                 /* scratch for ahead(): ids, distances, batch distances */
    struct lms_plan_priced *priced;  /* scratch: a launch's chunks with their prices (cappriced) */
    /* The mode chosen by timing a learned step of each (trials.c, "Timed
     * steps"): LMS_PLAN_ACT, _DEEP, _DEMAND or _INPLACE. */
    int mode;
    int trial;                       /* the stage: LMS_TRIAL_OFF, _RUNNING or _CHOSEN */
    bool trial_decided;              /* the choice is made (else it waits for its points) */
    uint64_t trial_period;           /* the step length the trials time, launches */
    bool trial_confirmed;            /* ... confirmed by repetition (the policy's step()) */
    uint64_t held_period, held_since;   /* the latest period not confirmed (of TRIAL_MIN+), the launch it replaced another at (0: none) */
    uint64_t recheck_at;                /* no launch timed for an own price (time_read) before this one ... */
    uint64_t waiting, waiting2;         /* ... and then the stalest kept waiting, and the next: 1 + its `checked` (0: none) ... */
    uint32_t deferred;                  /* ... and the chunks turned away for it */
    bool explore;                       /* time the launch planned: shaped to teach its function's fit (blind_choice), or reading in place on a lent price or, now and then, its own (plan.c, time_read) */
    uint64_t short_step, short_since;   /* a step under TRIAL_MIN confirmed without a break, since launch (trials.c, trial_length) */
    uint64_t trial_short;               /* the step under TRIAL_MIN the trials timed whole steps of (0: one of TRIAL_MIN+) */
    bool trial_longer;               /* the trials started on a confirmed step over 2x the one timed before */
    uint64_t longer_period, longer_since; /* a confirmed step over 2x the trials' (after trial_longer), the launch it was first confirmed at (0: none) */
    uint64_t trial_sub;              /* launches between two points (at least; P/8 rounded down) */
    uint64_t trial_from;             /* seq of the current window's first point */
    uint64_t trial_at;               /* seq of the next point (or, chosen, of the next step) */
    uint32_t trial_steps;            /* steps since the choice */
    int trial_marks[LMS_PLAN_MODES][LMS_TRIAL_POINTS];   /* each mode's points (timing numbers) */
    int trial_n[LMS_PLAN_MODES];                         /* ... recorded */
    bool trial_done[LMS_PLAN_MODES];                     /* its timed step ran to the end */
    bool trial_settling;                                 /* the current mode's first (untimed) step */
    int trial_stopped;                                   /* a mode stopped early, acting to the end of its
                                                          * window (LMS_PLAN_ACT, never stopped: none) */
    bool trial_paused;                                   /* chosen, but the policy lost its period */
    double trial_ns[LMS_PLAN_MODES];                     /* each mode's timed step, once read (trials.c, step_time) */
    int trial_held;                                      /* 1 + the mode a disturbance held (0: none; trials.c) */
    uint64_t upset_at, upset_gap;                        /* the latest disturbance's first launch, launches since the one before */
    bool in_upset;                                       /* ... under way */
    int trial_best;                                      /* the mode chosen (when decided) */
    int trial_first;                                     /* the trials' first point: all on its stream */
    bool trial_once;      /* acting deep's trial held a chunk used once a step back (read it in
                           * place, or fetched it on demand only into free room) */
    bool deep_all;        /* acting deep fetches the chunks used once a step too (trials.c, trial_next) */
    bool deep_again;      /* acting deep's step against acting's was not complete at its end: judged
                           * with the choice (trial_decide) */
    bool deep_retry;      /* the choice asked for acting deep fetching all: tried from the next step */
    unsigned trial_tried; /* bit m: mode m tried in this round of trials */
    bool trial_whole;     /* the retry's rounds (after TRIAL_RETRY steps of a choice), until one reaches its
                           * choice: every mode runs until its points say it is behind */
    double dear_act;      /* acting's timed step per launch (ns) when prices last stopped a trial (0: unknown) */
    bool dear_held;       /* no trial of this round is stopped on prices: the costs changed (trials.c) */
    unsigned slow_modes;  /* bit m: mode m stopped far behind acting in a round of trials before this one, */
    bool slow_deep_all;   /* ... acting deep retried fetching every chunk, */
    uint64_t slow_until;  /* ... remembered until this launch (trials.c, remember_slow) */
    double slow_act;      /* ... acting's timed step per launch (ns) in the round that found them (0: unknown) */
    uint64_t pressed;     /* the last launch for which room was made by evicting (0: none; fetch_free) */
    uint32_t deep_round;  /* times acting deep began (give_room's takes count per round) */
    bool requesting;      /* inside lms_plan_make_room (a victim evicted then may take again) */
    uint64_t bringing;    /* bytes of the batch being brought (bring), 0 outside it */
    /* Acting on a saturated link (trials.c, "Acting lean"): fetch ahead
     * after the launch, into Belady's victims (plan.c, pick_victim). */
    bool lean;
    bool trial_lean;                           /* the choice was acting lean (kept through a pause) */
    int lean_marks[3], lean_n;                 /* acting lean's own timed step: points at the steps after
                                                * the choice (trials.c, lean_check); recorded */
    bool lean_checked;                         /* ... measured and kept, or dropped */
    uint64_t hidden_bytes;                     /* while trying: what the launches could hide (ops->hides) */
    uint64_t hides_asked, hides_known;         /* while trying: launches asked; ... whose answer was known */
    uint64_t grid_blocks;                      /* while trying: the launches' blocks (ops->blocks) */
    /* At the current timed window's first point, and over each mode's
     * timed step: bytes moved to the device (ops->moved), hidden_bytes,
     * hides_asked, hides_known, grid_blocks (LMS_SUM_*). */
    uint64_t sums_from[LMS_SUMS], trial_sums[LMS_PLAN_MODES][LMS_SUMS];
    /* Acting deep: resident chunks used once a step whose launch could
     * read them over the link unseen (plan.c, give_room): a ring. */
    struct lms_plan_donor { uint32_t id; uint64_t seq; } donors[LMS_PLAN_DONORS];
    int ndonors, donor_head;
    lms_plan_blind blind;   /* with nothing to act on: the way measured (blindways.c) ... */
    bool crowded;           /* ... while the managed chunks do not all fit the room, */
    uint64_t crowd_at;      /* ... asked again at this launch (every 64) */
} lms_plan;

/* Sets a planner up with a policy; false if the policy's state cannot be made. */
bool lms_plan_init(lms_plan *p, const lms_policy *policy);
/* Frees the planner's own memory (not the chunks). */
void lms_plan_destroy(lms_plan *p);

/* c is in use by a launch not yet recorded: it is no victim until then. */
void lms_plan_pin(lms_plan *p, lms_plan_chunk *c);
/* The launch `seq` that pinned c was issued: unpins c and records its use. */
void lms_plan_used(lms_plan *p, lms_plan_chunk *c, uint64_t seq);

/* Decides for launch `seq` of fn with chunk ids[0..n); mine[0..m) are the
 * chunks of those ids that the planner manages, already pinned. */
void lms_plan_launch(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t seq, uintptr_t fn,
                     const uint32_t *ids, int n, lms_plan_chunk **mine, int m);

/* Reserves `bytes` for a need now, evicting the policy's victims; false
 * when no victim qualifies (nothing reserved then). */
bool lms_plan_make_room(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t bytes);

/* After a launch was made and its chunks' uses recorded (lms_plan_used):
 * acting lean fetches ahead here, where the chunks the launch used can be
 * victims (their evictions wait for its kernel). */
void lms_plan_after(lms_plan *p, const lms_plan_ops *ops, void *ctx);

/* Whether the planner is timing the device by points after every
 * stream's work (ops->mark_all): a timed step under way, or a window of
 * the two ways open. A launch that uses no chunk leaves no record of its
 * own, and a point waits only for records: while this holds, the caller
 * records after such launches too. */
bool lms_plan_pointing(const lms_plan *p);

/* A chunk is gone (freed): drop it from the resident set. The caller
 * returns its charge. */
void lms_plan_forget(lms_plan *p, lms_plan_chunk *c);

/* Chunk c is being freed (before lms_plan_forget): the uses its fetches
 * served are counted, to tell whether fetching into free room pays. */
void lms_plan_dropped(lms_plan *p, const lms_plan_chunk *c);

#endif
