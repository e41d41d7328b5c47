/*
 * lookahead.c — learns the repeating launch sequence of a training step and
 * uses it as the future: it names the chunks of the next launch so that
 * the engine prefetches them on a side stream while the current kernel
 * runs, and tells the planner when each chunk is needed next, so that the
 * planner evicts the chunk whose next use is farthest away (Belady's rule
 * with the learned future).
 *
 * Learning: each launch has a signature (its function and chunk ids). The
 * launches that followed the previous occurrence of the current signature
 * are the prediction for the launches to come; the distance between the
 * two occurrences is the period. Until a signature repeats (the first
 * step) there is no prediction and the planner's order is LRU. A
 * signature that repeats inside a step (the same kernel on the same chunks
 * forward and backward) is told apart by its context: the launch one
 * period earlier, else the pair (previous signature, signature), else,
 * when the previous launch was never seen before (a kernel on a chunk
 * allocated this step), the pair (latest signature seen before, signature);
 * see observe().
 *
 * Nothing to learn: the policy scores each launch as a hit when the
 * signature it predicted for it came, or when its chunks came about when
 * their predicted next uses said (a step that grows by a few launches
 * shifts the signatures but keeps the order of next uses); when fewer
 * than 35% of recent launches hit it makes no guess and names nothing
 * ahead (LRU, on demand), until 60% do. Between the two, a launch that
 * missed with the score under 70% names nothing ahead until one hits: a
 * program that alternates learnable steps with steps in a random order
 * kept fetching ahead the 19 launches confidence took to fall in each
 * random step, evicting for chunks it then fetched again (an outside
 * tester's `alt`, 1.16x lru at 2x); a step that grows keeps its score
 * above 70% through the few launches its growth shifts. The score is one
 * for the whole step, so a part of a step in a random order is told apart
 * by each position's miss level (launch.misses): ahead() does not name a
 * launch whose position missed step after step.
 * Doubt held longer than a period, or through DOUBT_MISSED launches that
 * missed a prediction made for them, tells the planner there is nothing
 * to act on (guessing()): it then reads in place when fetching would
 * rarely hit (src/common/plan.c).
 *
 * Cost: every launch's ids go to a pool where each entry learns, when its
 * chunk is used again, how many launches later that was. A chunk's memo
 * points at its latest entry. So when launch `seq` matches launch `match`,
 * the next use of its i-th chunk is seq + (the next-use distance of the
 * i-th entry of `match`): O(1) per id, whatever the period. The history,
 * the pool and the signature table are rings and an open-addressing table
 * that grow (up to the limits below) when a step is longer than they hold.
 */
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define HIST_MIN (1u << 12)      /* launches remembered at first (a ring) */
#define HIST_MAX (1u << 18)      /* ... at most: two steps of SIG_KEEP launches */
#define SIG_KEEP (1u << 17)      /* signatures kept this many launches: steps up to 131K launches */
#define POOL_MIN (1u << 14)      /* chunk ids remembered at first (a ring) */
#define POOL_MAX (1u << 23)      /* ... at most (8 bytes each: 64 MiB) */
#define DOUBT (65536u * 35 / 100) /* a score under this ends confidence: above the third of launches of one
                                   * chunk used at random that hit by their next uses (chunks_came) */
#define SHAKEN (65536u * 7 / 10) /* a score under this after a miss: nothing named ahead until a hit */
#define MISSES_MAX 3             /* a position's miss level at most (launch.misses) */
#define MISSES_SKIP 2            /* ... from which ahead() does not name the launch */
#define DOUBT_MISSED 64         /* launches in doubt that missed a prediction made for them: nothing to act on (guessing()) */
#define PERIOD_FLOOR 16          /* a period taken back to a shorter one: not under this (observe(); the planner's TRIAL_MIN) */
#define BLANK_FOR 64             /* launches with nothing learned before they count as misses (score) */
#define NAMED_MAX (1u << 22)     /* ids ahead() names once each at most (more: repeats stay in) */
/* Memo words: 1 + pool index of the chunk's latest entry, the seq of that
 * launch, the predicted next use (0: none), and the first use since the
 * last one that had a prediction (0: the latest had one). */
enum { M_ENTRY, M_SEQ, M_NEXT, M_RUN };

typedef struct launch {
    uint64_t seq;             /* the launch this slot holds (0: empty) */
    uint64_t sig;
    uint64_t first;           /* pool index of its first id */
    uint32_t n;               /* ids */
    uint8_t misses;           /* its position's miss level (observe(), ahead()) */
} launch;

typedef struct entry {
    uint32_t id;
    uint32_t next;            /* launches until the id's next use (0: not yet) */
} entry;

typedef struct sigslot {
    uint64_t sig, seq;        /* sig 0: empty */
} sigslot;

typedef struct state {
    uint64_t sig1;            /* signature of the launch before this one (0: none) */
    uint64_t sigk;            /* ... of the latest launch whose signature had been seen before it (0: none) */
    uint64_t predicted;       /* signature the latest match predicted for this launch (0: none) */
    uint32_t score;           /* recent predictions that came true, in 1/65536 (an average over ~16) */
    uint64_t doubt_since;     /* the launch confidence was last lost at, ... */
    uint64_t doubt_wait;      /* ... and the launches of doubt after it that still guess (guessing()) */
    uint32_t doubt_missed;    /* launches since that missed a prediction made for them (guessing()) */
    bool confident;           /* the score says the learned future is worth acting on */
    bool missed;              /* the latest launch scored was a miss (ahead(): SHAKEN) */
    uint64_t confidences;     /* times confidence was regained: the epoch */
    launch *hist;             /* ring: seq % hcap */
    uint64_t hcap;
    entry *pool;              /* ring: index % pcap; indices grow forever */
    uint64_t pcap, ptotal;
    sigslot *map;             /* signature -> latest seq */
    uint64_t mcap, nsigs;
    uint64_t seq;             /* the launch being observed */
    bool matched;             /* a previous occurrence exists */
    uint64_t match;           /* its seq */
    uint64_t period;          /* seq - match of the latest match (0: none yet) */
    uint64_t rep, rep_run;    /* a candidate step length; launches in a row that repeated the one rep earlier */
    uint64_t cand, cand_left; /* a shorter period the current one is a multiple of (0: none), launches left to judge it */
    uint64_t cand_hits, per_hits;   /* ... launches so far that repeated the one that far back, and one period back */
    uint64_t *named;          /* ahead()'s set of ids named in one call: (call << 32 | id) words */
    uint32_t named_cap, named_call;
} state;

/* Frees the state and its rings and table. */
static void destroy(void *p)
{
    state *s = p;
    if (!s)
        return;
    free(s->hist);
    free(s->pool);
    free(s->map);
    free(s->named);
    free(s);
}

/* A state with the rings and table at their first sizes (the caller frees
 * it with destroy), or NULL. */
static void *create(void)
{
    state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->hcap = HIST_MIN;
    s->score = 65536;   /* trusted until predictions fail */
    s->confident = true;
    s->pcap = POOL_MIN;
    s->mcap = 4 * HIST_MIN;
    s->hist = calloc(s->hcap, sizeof *s->hist);
    s->pool = calloc(s->pcap, sizeof *s->pool);
    s->map = calloc(s->mcap, sizeof *s->map);
    if (!s->hist || !s->pool || !s->map) {
        destroy(s);
        return NULL;
    }
    return s;
}

/* Mixes a value into a hash. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* The context key of a launch of signature `sig` after one of `before`. */
static uint64_t ctx_of(uint64_t before, uint64_t sig)
{
    return mix(mix(0x6a09e667f3bcc909ull, before), sig) | 1;
}

/* How far launch `at` is from one period before launch seq, in launches. */
static uint64_t off_period(const state *s, uint64_t seq, uint64_t at)
{
    uint64_t d = seq - at;
    return d > s->period ? d - s->period : s->period - d;
}

/* Index i's place in a ring of `cap` slots: the history's and the pool's
 * sizes are powers of two (HIST_MIN and POOL_MIN doubled, up to HIST_MAX
 * and POOL_MAX), so a mask does a division's work (a division per ring
 * read was most of what the walk ahead cost, at 10,000 chunks). */
static uint64_t ring(uint64_t i, uint64_t cap)
{
    return i & (cap - 1);
}

/* True while pool entry `i` has not been overwritten. */
static bool entry_live(const state *s, uint64_t i)
{
    return i < s->ptotal && s->ptotal - i <= s->pcap;
}

/* The history slot of launch `seq`, or NULL when it is no longer held. */
static const launch *launch_of(const state *s, uint64_t seq)
{
    const launch *l = &s->hist[ring(seq, s->hcap)];
    return l->seq == seq && seq && (l->n == 0 || entry_live(s, l->first)) ? l : NULL;
}

/* Grows the history ring to `cap` launches (keeping what it holds). */
static void grow_hist(state *s, uint64_t cap)
{
    launch *h = calloc(cap, sizeof *h);
    if (!h)
        return;   /* keeps learning at the old size */
    for (uint64_t i = 0; i < s->hcap; i++)
        if (s->hist[i].seq)
            h[ring(s->hist[i].seq, cap)] = s->hist[i];
    free(s->hist);
    s->hist = h;
    s->hcap = cap;
}

/* Grows the pool ring to `cap` entries (keeping what it holds). */
static void grow_pool(state *s, uint64_t cap)
{
    entry *p = calloc(cap, sizeof *p);
    if (!p)
        return;
    uint64_t from = s->ptotal > s->pcap ? s->ptotal - s->pcap : 0;
    for (uint64_t i = from; i < s->ptotal; i++)
        p[ring(i, cap)] = s->pool[ring(i, s->pcap)];
    free(s->pool);
    s->pool = p;
    s->pcap = cap;
}

/* The map slot of sig: where it is, or the empty slot that ends its probe. */
static sigslot *probe(const state *s, uint64_t sig)
{
    size_t i = (size_t)(sig & (s->mcap - 1));
    while (s->map[i].sig && s->map[i].sig != sig)
        i = (i + 1) & (s->mcap - 1);
    return &s->map[i];
}

/* Rebuilds the signature table without the signatures last seen more than
 * SIG_KEEP launches ago (no period that long is learned; this bounds the
 * table at 8 x SIG_KEEP slots, 16 MiB), at least 4x as large as what it
 * keeps. A signature that fell out of the history ring stays, so that its
 * next occurrence tells the ring to grow. */
static void rebuild_map(state *s)
{
    uint64_t live = 0;
    for (uint64_t i = 0; i < s->mcap; i++)
        live += s->map[i].sig && s->seq - s->map[i].seq < SIG_KEEP;
    uint64_t cap = s->mcap;
    while (cap < 4 * (live + 1))
        cap *= 2;
    sigslot *old = s->map, *m = calloc(cap, sizeof *m);
    if (!m)
        return;
    uint64_t oldcap = s->mcap;
    s->map = m;
    s->mcap = cap;
    s->nsigs = 0;
    for (uint64_t i = 0; i < oldcap; i++)
        if (old[i].sig && s->seq - old[i].seq < SIG_KEEP) {
            *probe(s, old[i].sig) = old[i];
            s->nsigs++;
        }
    free(old);
}

/* Remembers that `key` was last seen at launch seq; false when the table
 * is full and cannot grow (the key is then not learned). */
static bool remember(state *s, uint64_t key, uint64_t seq)
{
    sigslot *e = probe(s, key);
    if (e->sig != key && s->nsigs + 1 > s->mcap / 2) {
        rebuild_map(s);
        e = probe(s, key);
    }
    if (e->sig != key && s->nsigs + 1 > s->mcap / 2)
        return false;
    s->nsigs += e->sig != key;
    *e = (sigslot){key, seq};
    return true;
}

/* The latest launch seen with `key` (0: none). */
static uint64_t seen_at(const state *s, uint64_t key)
{
    const sigslot *e = probe(s, key);
    return e->sig == key ? e->seq : 0;
}

/* Scores whether the launch the latest match predicted is the one that
 * came (sig), or the launch's chunks came when predicted (chunks_came:
 * 1 they did, 0 they did not, -1 none had a prediction), and turns
 * confidence on above 60% and off below 35% (the
 * gap keeps it from flapping). True when the launch missed a prediction
 * that was made (a launch or a chunk's use). Before anything was learned (no match, no
 * period) a launch is not scored for its first BLANK_FOR launches (a first
 * step), and counts as a miss after them: a program whose launches never
 * repeat loses the confidence it started with. Without confidence the policy makes no
 * guess and fetches nothing ahead: the planner's order is then LRU, which
 * is what a workload with nothing to learn (random access) deserves. */
static bool score(state *s, uint64_t sig, int chunks_came)
{
    if (!s->predicted && !s->period && s->seq < BLANK_FOR)
        return false;   /* nothing learned yet (a first step): nothing to score */
    int64_t hit = (s->predicted && s->predicted == sig) || chunks_came > 0 ? 65536 : 0;
    s->missed = hit == 0;
    s->score = (uint32_t)((int64_t)s->score + (hit - (int64_t)s->score) / 16);
    if (!s->confident && s->score > 65536u * 6 / 10) {
        s->confident = true;
        s->confidences++;
    } else if (s->confident && s->score < DOUBT) {
        s->confident = false;
        s->doubt_since = s->seq + 1;
        s->doubt_wait = s->period > 64 ? s->period : 64;
        s->doubt_missed = 0;
    }
    bool miss = !hit && (s->predicted || chunks_came == 0);
    if (!s->confident && miss && s->predicted && s->doubt_missed < UINT32_MAX)
        s->doubt_missed++;
    return miss;
}

/* Whether the uses the launch's chunks had predicted came about when
 * predicted: more than half of its chunks that had a prediction farther
 * than the next launch are used no earlier than an eighth of the
 * predicted distance before it and no later than half of it after it (a
 * step that grows by a few launches keeps its order of next uses, which
 * is all eviction needs). A chunk used at random comes that close to a
 * prediction made from its previous reuse distance about a third of the
 * time, so a launch of two such chunks has one of them come more than
 * half of the time: both must. A chunk predicted for the very next launch
 * (a workspace every kernel reads) comes whatever the rest does and says
 * nothing of it: it is not counted. 1 when they came, 0 when they did
 * not, -1 when no chunk had such a prediction. O(n). */
static int chunks_came(lms_policy_memo *const *memos, int n, uint64_t seq)
{
    int predicted = 0, came = 0;
    for (int i = 0; i < n; i++) {
        const lms_policy_memo *m = memos[i];
        if (!m || !m->w[M_NEXT] || m->w[M_NEXT] <= m->w[M_SEQ] + 1)
            continue;
        uint64_t p = m->w[M_NEXT], dist = p - m->w[M_SEQ];
        predicted++;
        came += seq + dist / 8 >= p && seq <= p + dist / 2;
    }
    return predicted == 0 ? -1 : 2 * came > predicted;
}

/* Judges the candidate shorter period (s->cand) at launch seq of
 * signature sig: over as many launches as it is long, it takes the
 * period's place when as many of them repeated the launch that far back
 * as repeated the launch one period back. A period of 18 steps, set by a
 * chance match in a step's random launches, held through every step
 * after (the step's own repeats as well), and the trials timed windows of
 * 18 steps; a repeat inside the step (22 launches of a 242-launch step,
 * tests/unit/breakers_ctx `overflow_step`) repeats for a few launches
 * only, and is dropped. O(1). */
static void shorter_check(state *s, uint64_t seq, uint64_t sig)
{
    if (!s->cand)
        return;
    const launch *a = seq > s->cand ? launch_of(s, seq - s->cand) : NULL;
    const launch *b = s->period && seq > s->period ? launch_of(s, seq - s->period) : NULL;
    s->cand_hits += a && a->sig == sig;
    s->per_hits += b && b->sig == sig;
    if (--s->cand_left > 0)
        return;
    if (s->period && s->period % s->cand == 0 && s->cand_hits + s->cand / 8 >= s->per_hits)
        s->period = s->cand;
    s->cand = 0;
}

/* Starts loading what observing the next launch will read far apart in
 * the tables when the step repeats: the ids of the launch after the
 * match (nx, already read; NULL: none), the history slot after it, and
 * the map slots of the signature predicted for the next launch and of
 * its context. At 10,000 chunks each was a cache miss of a ring or a
 * table of a MiB or more, every launch (bench/allocbench's eviction
 * rows); started now, the loads overlap the engine's work until then. A
 * hint only: nothing is read here. */
static void prefetch_next(const state *s, const launch *nx)
{
    if (nx) {
        __builtin_prefetch(&s->hist[ring(nx->seq + 1, s->hcap)]);
        if (nx->n)
            __builtin_prefetch(&s->pool[ring(nx->first, s->pcap)]);
    }
    if (s->predicted) {
        __builtin_prefetch(&s->map[s->predicted & (s->mcap - 1)]);
        __builtin_prefetch(&s->map[ctx_of(s->sig1, s->predicted) & (s->mcap - 1)]);
    }
}

/* Learns launch seq: appends its ids to the pool, teaches each chunk's
 * previous entry this use, matches it with an earlier launch and predicts
 * each chunk's next use from the matched launch's entries.
 *
 * The match, in order of trust: the launch one period earlier when it has
 * the same signature (the step repeats); else the latest launch with the
 * same signature after the same previous signature (the context: a step
 * that runs the same kernel on the same chunks forward and backward has
 * repeated signatures, but not repeated pairs); else, when the previous
 * launch's signature was new, the latest launch with the same signature
 * after the latest signature seen before (a step that gains a launch on a
 * new chunk, a cache block, keeps its context: bench/shapes `growing`,
 * whose layers all start with the same two signatures, was matched with
 * the layer before in the same step), when that lies about one period
 * back; else the latest launch with the same signature. Only the first
 * three set the period. */
static void observe(void *p, uint64_t seq, uintptr_t fn, const uint32_t *ids, lms_policy_memo *const *memos,
                    int n)
{
    state *s = p;
    uint64_t sig = mix(0x12345, fn);
    for (int i = 0; i < n; i++)
        sig = mix(sig, ids[i]);
    sig |= 1;   /* 0 marks an empty slot */
    uint64_t ctx = ctx_of(s->sig1, sig);
    /* The two slots asked below are far apart in a table of many
     * signatures: start both loads now, behind the scoring. */
    __builtin_prefetch(&s->map[sig & (s->mcap - 1)]);
    __builtin_prefetch(&s->map[ctx & (s->mcap - 1)]);
    bool missed = score(s, sig, chunks_came(memos, n, seq));
    s->seq = seq;
    s->matched = false;
    uint64_t prev_sig = seen_at(s, sig), prev_ctx = seen_at(s, ctx);
    /* The miss level of the launch's position in the step: the level of
     * the launch one period earlier, up one when this launch missed a
     * prediction made for it, down one when not; a launch never seen
     * before (new: a step that grows) is at 0. A first miss (a new order,
     * a step whose repeated signatures are still being learned) leaves it
     * under MISSES_SKIP; a position that misses step after step (launches
     * in a random order, which hit by chance now and then) stays at it. */
    const launch *before = s->period && seq > s->period ? launch_of(s, seq - s->period) : NULL;
    uint8_t was = before ? before->misses : 0, misses = 0;
    if (prev_sig)
        misses = missed ? (uint8_t)(was < MISSES_MAX ? was + 1 : MISSES_MAX) : (uint8_t)(was ? was - 1 : 0);
    if (!prev_ctx && s->sigk && s->sigk != s->sig1) {   /* a launch never seen before came between */
        /* Taken as one step back only: at least half a period back, and
         * no farther from one period back than the signature's latest
         * launch. Among launches of one signature (GEMMs on weights on
         * the device) the pair is found a launch or two back, and set
         * the period there: under 16 launches, the planner's trials
         * stopped (varstep `fresh`: tests/unit/breakers_ctx). */
        uint64_t alt = seen_at(s, ctx_of(s->sigk, sig));
        if (alt && (!s->period || (seq - alt >= s->period / 2 &&
                                   (!prev_sig || off_period(s, seq, alt) <= off_period(s, seq, prev_sig)))))
            prev_ctx = alt;
    }
    uint64_t far = prev_ctx ? prev_ctx : prev_sig;
    if (far && seq - far >= s->hcap && s->hcap < HIST_MAX) {
        /* A step longer than the ring: hold two of them from now on. */
        uint64_t cap = s->hcap, pcap = s->pcap;
        while (cap < 2 * (seq - far) && cap < HIST_MAX) {
            cap *= 2;
            pcap = pcap < POOL_MAX ? 2 * pcap : pcap;   /* the pool in proportion */
        }
        grow_hist(s, cap);
        if (pcap > s->pcap)
            grow_pool(s, pcap);
    }
    /* The pool must hold the ids of every launch the ring holds (from the
     * oldest one's first id, whether or not those are still there). */
    uint64_t oldest = seq + 1 > s->hcap ? seq + 1 - s->hcap : 1;
    const launch *o = &s->hist[ring(oldest, s->hcap)];
    uint64_t from = o->seq == oldest ? o->first : 0;
    if (s->ptotal + (uint64_t)n - from > s->pcap && s->pcap < POOL_MAX) {
        uint64_t cap = s->pcap;
        while (cap < s->ptotal + (uint64_t)n - from && cap < POOL_MAX)
            cap *= 2;
        grow_pool(s, cap);
    }
    uint64_t first = s->ptotal;
    for (int i = 0; i < n; i++) {
        s->pool[ring(s->ptotal, s->pcap)] = (entry){.id = ids[i]};
        lms_policy_memo *m = memos[i];
        if (m) {
            uint64_t last = m->w[M_ENTRY];   /* teach the chunk's previous entry this use */
            if (last && entry_live(s, last - 1) && s->pool[ring(last - 1, s->pcap)].id == ids[i] &&
                seq - m->w[M_SEQ] <= UINT32_MAX)
                s->pool[ring(last - 1, s->pcap)].next = (uint32_t)(seq - m->w[M_SEQ]);
            m->w[M_ENTRY] = s->ptotal + 1;
            m->w[M_SEQ] = seq;
            m->w[M_NEXT] = 0;
        }
        s->ptotal++;
    }
    s->hist[ring(seq, s->hcap)] = (launch){.seq = seq, .sig = sig, .first = first, .n = (uint32_t)n, .misses = misses};
    /* The step by repetition: a candidate length holds while each launch
     * repeats the one that many earlier; on a launch that does not, the
     * candidate becomes the distance to its signature's last launch (this
     * launch counts when that one is held and alike: the table's keys are
     * hashes, and two may collide). */
    const launch *back = s->rep && seq > s->rep ? launch_of(s, seq - s->rep) : NULL;
    if (back && back->sig == sig) {
        s->rep_run++;
    } else {
        uint64_t last = prev_ctx ? prev_ctx : prev_sig;   /* a context repeats less often inside a step */
        const launch *was = last && last < seq ? launch_of(s, last) : NULL;
        s->rep = last && last < seq ? seq - last : 0;
        s->rep_run = was && was->sig == sig ? 1 : 0;
    }
    uint64_t prev = 0;
    bool sets_period = true;
    const launch *l = NULL;
    shorter_check(s, seq, sig);
    if (s->period && seq > s->period && (l = launch_of(s, seq - s->period)) && l->sig == sig) {
        prev = seq - s->period;
        /* A period that is a multiple of the step repeats too: a chance
         * match (a launch of a random part) set it there and nothing took
         * it back. The context's latest launch nearer, at a distance the
         * period is a multiple of, is a candidate (shorter_check()). */
        if (!s->cand && prev_ctx > prev && seq - prev_ctx >= PERIOD_FLOOR && s->period % (seq - prev_ctx) == 0)
            s->cand = seq - prev_ctx, s->cand_left = s->cand, s->cand_hits = s->per_hits = 0;
    } else if (prev_ctx)
        prev = prev_ctx;
    else
        prev = prev_sig, sets_period = false;
    l = prev ? launch_of(s, prev) : NULL;
    s->predicted = 0;
    const launch *nx = NULL;
    if (l && l->sig == sig && l->n == (uint32_t)n && prev < seq) {
        s->matched = true;
        s->match = prev;
        if (sets_period || !s->period)
            s->period = seq - prev;
        for (int i = 0; i < n; i++) {
            const entry *pe = &s->pool[ring(l->first + (uint64_t)i, s->pcap)];
            if (memos[i] && pe->id == ids[i] && pe->next)
                memos[i]->w[M_NEXT] = seq + pe->next;
        }
        nx = launch_of(s, prev + 1);
        s->predicted = nx && prev + 1 < seq ? nx->sig : 0;
    }
    for (int i = 0; i < n; i++)
        if (memos[i])
            memos[i]->w[M_RUN] = memos[i]->w[M_NEXT] ? 0 : memos[i]->w[M_RUN] ? memos[i]->w[M_RUN] : seq;
    s->sig1 = sig;
    if (prev_sig)
        s->sigk = sig;
    if (remember(s, sig, seq))
        remember(s, ctx, seq);
    prefetch_next(s, nx);
}

/* The next-use distance that the entry of `id` in launch `seq` learned
 * (ids of a launch are sorted: a binary search), or 0. */
static uint64_t learned_in(const state *s, uint64_t seq, uint32_t id)
{
    const launch *l = launch_of(s, seq);
    if (!l)
        return 0;
    uint32_t lo = 0, hi = l->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint32_t v = s->pool[ring(l->first + mid, s->pcap)].id;
        if (v == id)
            return s->pool[ring(l->first + mid, s->pcap)].next;
        if (v < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* The predicted next use of a chunk: the one learned when it was last used
 * while it lies ahead; once it passed without the use (a step that grew),
 * as many launches after now as it is late, plus one, for up to half a
 * period; for a use no match predicted, what followed the same
 * chunk one period earlier, else one period after the first of its uses
 * without a prediction (the first step: its first use in the window of the
 * last period); else one period after its last use; each while it lies
 * ahead. */
static uint64_t next_use(void *p, const lms_policy_memo *memo, uint64_t last_use, uint64_t now)
{
    state *s = p;
    if (!s->confident)
        return LMS_NEXT_UNKNOWN;
    if (memo->w[M_NEXT] > now)
        return memo->w[M_NEXT];
    if (memo->w[M_NEXT] && s->period && now - memo->w[M_NEXT] < s->period / 2)
        return now + 1 + (now - memo->w[M_NEXT]);   /* late (the step grew): soon, later each time it passes */
    uint64_t u = memo->w[M_SEQ];
    if (!memo->w[M_NEXT] && s->period && u > s->period && memo->w[M_ENTRY] &&
        entry_live(s, memo->w[M_ENTRY] - 1)) {
        uint64_t d = learned_in(s, u - s->period, s->pool[ring(memo->w[M_ENTRY] - 1, s->pcap)].id);
        if (d && u + d > now)
            return u + d;
    }
    if (!memo->w[M_NEXT] && s->period && memo->w[M_RUN] && memo->w[M_RUN] + s->period > now)
        return memo->w[M_RUN] + s->period;
    if (s->period && last_use && last_use + s->period > now)
        return last_use + s->period;
    return LMS_NEXT_UNKNOWN;
}

/* Bumped when the first period is learned and each time confidence is
 * regained: chunks the planner holds as "no guess" may have one now. */
static uint64_t epoch(void *p)
{
    const state *s = p;
    return s->confidences + (s->period != 0);
}

/* Readies the set of ids named by one call of ahead() for up to `max`
 * ids (at most half full; 1 <= max <= NAMED_MAX); false without memory.
 * O(1) but for growth and the wrap of the call number every 2^32 calls. */
static bool named_reset(state *s, uint64_t max)
{
    uint32_t want = 64;
    while (want < 2 * max)
        want *= 2;
    if (want > s->named_cap) {
        uint64_t *t = calloc(want, sizeof *t);
        if (!t)
            return false;
        free(s->named);
        s->named = t;
        s->named_cap = want;
        s->named_call = 0;
    }
    if (++s->named_call == 0) {   /* wrapped: every word would look current */
        memset(s->named, 0, s->named_cap * sizeof *s->named);
        s->named_call = 1;
    }
    return true;
}

/* Whether this call of ahead() named id already; records it if not. */
static bool named_before(state *s, uint32_t id)
{
    uint64_t key = (uint64_t)s->named_call << 32 | id;
    uint32_t mask = s->named_cap - 1;
    for (uint32_t i = (uint32_t)mix(0, id) & mask;; i = (i + 1) & mask) {
        if (s->named[i] == key)
            return true;
        if (s->named[i] >> 32 != s->named_call) {
            s->named[i] = key;
            return false;
        }
    }
}

/* The chunks of the next `launches` predicted launches, read straight
 * from the history, each id once (at its first need): ids of one launch
 * are unique, and over several launches a set of the ids named so far
 * drops repeats in O(1) each (without its memory, repeats stay in: the
 * planner skips a chunk it has already taken). A launch whose position
 * misses step after step (its miss level at MISSES_SKIP or more: a part
 * of the step in a random order) is not named and does not count toward
 * the launches asked for, so the launch after it is named instead; the
 * walk ends once such launches outnumber the others by two. An outside
 * tester's `seqrand` (a fixed half, then a random half of one kernel)
 * named the successors of wherever a random launch matched, evicting for
 * chunks not then used (1.11x `lru` at 2x at the defaults, 1.06x now);
 * a helper's ordered layers each followed by a launch on a random
 * buffer named the random one and never the next layer (1.05x, 0.92x
 * now). */
static int ahead(void *p, uint32_t *ids, uint32_t *distance, int max, uint32_t launches)
{
    state *s = p;
    int n = 0;
    if (!s->matched || !s->confident || (s->missed && s->score < SHAKEN) || max <= 0)
        return 0;
    /* The set is sized for what can be named: the launches' ids, up to max. */
    uint64_t held = 0;
    uint64_t reach = 2 * (uint64_t)launches + 2;   /* launches walked at most (skipped ones included) */
    for (uint64_t k = 1; launches > 1 && k <= reach && k <= s->period; k++) {
        const launch *l = launch_of(s, s->match + k);
        if (!l)
            break;
        held += l->n;
    }
    if (held > (uint64_t)max)
        held = (uint64_t)max;
    bool dedup = launches > 1 && held > 0 && held <= NAMED_MAX && named_reset(s, held);
    uint64_t skipped = 0, walk = launches;
    for (uint64_t k = 1; k <= walk && k <= s->period; k++) {
        const launch *l = launch_of(s, s->match + k);
        if (!l)
            break;
        if (l->misses >= MISSES_SKIP) {
            skipped++;
            if (skipped > k - skipped + 1)   /* skipped outnumber the others by two */
                break;
            if (walk < reach)
                walk++;   /* a skipped launch is not one of those asked for */
            continue;
        }
        for (uint32_t j = 0; j < l->n && n < max; j++) {
            uint32_t id = s->pool[ring(l->first + j, s->pcap)].id;
            if (dedup && named_before(s, id))
                continue;
            ids[n] = id;
            distance[n++] = (uint32_t)k;
        }
    }
    return n;
}

/* Whether the policy has anything to act on: not once confidence has
 * been lost for longer than the period learned when it was (at least 64
 * launches), so that a step whose launches are new (a first step, a
 * changed allocation) is not taken for one with nothing to learn. The
 * wait is fixed when the doubt starts: the period measured while in
 * doubt follows chance repeats and flipped the answer launch by launch,
 * and a wait that grew with the launches before it (half of them) kept
 * a program that alternates learnable parts with random ones guessing
 * through every random part after the first (tests/sim/mixed_parts
 * `alt`, 1,200 launches of each, at 3x on 8 streams side by side, seed
 * 1: 1.53x `none`'s step, 1.08x then). Nor once DOUBT_MISSED launches of
 * the doubt missed a prediction made for them: launches that are new
 * make none, launches in a random order that repeat by chance make
 * wrong ones, and the period learned when the doubt began is a chance
 * distance too, often thousands of launches (the random part's first
 * launches set it), so that `alt`'s random parts were fetched on demand
 * from the third on (at 1.5x at the defaults, 8 streams side by side:
 * 1.32x `none`'s step over the last 30 of 240 steps, 1.03x now). */
static bool guessing(void *p)
{
    const state *s = p;
    return s->confident || (s->seq - s->doubt_since < s->doubt_wait && s->doubt_missed < DOUBT_MISSED);
}

/* The learned period while confident, else 0. */
static uint64_t period(void *p)
{
    const state *s = p;
    return s->confident ? s->period : 0;
}

/* The step's length once a whole one repeated the one before it, else 0. */
static uint64_t step(void *p)
{
    const state *s = p;
    return s->rep && s->rep_run >= s->rep ? s->rep : 0;
}

const lms_policy lms_policy_lookahead = {
    .name = "lookahead",
    .doc = "learn the step's launch sequence; prefetch the next launches' chunks, evict the farthest next use",
    .on_demand = true,
    .create = create,
    .destroy = destroy,
    .observe = observe,
    .next_use = next_use,
    .epoch = epoch,
    .guessing = guessing,
    .ahead = ahead,
    .period = period,
    .step = step,
};
