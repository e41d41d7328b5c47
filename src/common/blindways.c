/*
 * blindways.c — with nothing to act on, where the chunks that no price
 * decides go, measured. The planner (plan.c) calls lms_plan_blind_launch
 * at every launch, and blind_choice reads the way chosen
 * (lms_plan.blind.way). No CUDA here: the points and the times between
 * them come through lms_plan_ops.
 *
 * A chunk without a price of its own, of its parameter position or of
 * its function (a function launched once or twice: thousands of kernels
 * drawn at random) is decided by rules that guess: the first prices of
 * the latest functions fitted, else the room's share of the managed
 * bytes. They guess wrong where the functions fitted are not like the
 * ones that follow (a few cheap functions fitted, then thousands of dear
 * ones that are never fitted: read in place at 2.7x `lru`'s step on an
 * outside helper's program), and nothing a single launch shows corrects
 * them. What the launches take on the device does, so the two ways are
 * timed, by points after the work of every stream launched on
 * (ops->mark_all; a point on one of several busy streams completes when
 * that stream's last kernel did), in rounds of two
 * windows of LMS_BWAY_PARTS parts of BW_PART launches: fetching, then
 * reading in place (it evicts nothing: it keeps what fetching left). The
 * first round's fetching comes after a settling that lasts until fetches
 * carried as many bytes as the room holds (what the rules left in it is
 * gone). The device time per managed byte the launches used decides
 * (their sizes differ): after each round, a way faster than the other
 * by more than BW_MARGIN, and by more than BW_SURE times the error of
 * the two measures (the spread of their parts' rates over the square
 * root of their number: launches of random sizes and passes vary), is
 * taken for every chunk that no price decides; else another round adds
 * to the measures, and after BW_ROUNDS, one error (BW_SURE_LAST) is
 * enough, or the rules decide. While a round's points complete, the rules
 * decide.
 *
 * Once chosen, each window is timed too, and held to the chosen way's
 * measure once its points completed: BW_ODD_RUN windows in a row slower
 * by more than BW_ODD (and more than BW_SURE times the error of the two)
 * mean the kernels or the operands changed (a phase), and the ways are
 * tried again. A change that leaves the chosen way's time as it was and
 * moves only the other's shows in no window, but the functions show it:
 * a new phase of the line pooled over their launches on the device
 * (ops->fn_phase: their compute changed together) after BW_QUIET
 * launches without one starts the trials again, in any stage: at once
 * where the line was calm before (the gaps between its phases BW_CALM
 * launches or more on average, or none yet) or the quiet time lasted
 * BW_LONG times as long; else once BW_HELD launches passed without
 * another phase (phases that come every few launches are functions of
 * two kinds taking turns; twice as many launches each time the trials
 * chose what they chose before, up to BW_QUIET_MAX: where launches on
 * the device are few, the pooled line marks phases by chance). The
 * line's gaps between phases of chance are long-tailed: kernels of 8
 * streams run one at a time, each measured with its wait behind the
 * others', marked a phase every 4 launches (median), yet 12 of 30 runs
 * of blind_streams had a gap past 64 and started trials by chance (a
 * measured step at 3.7x the others'), while after each of those 18 gaps
 * the next phase came within 16 launches (a changed compute leaves a
 * line fitted anew, quiet again), and no gap of chance passed 90
 * launches in 3,402, where the gaps before it were 5-11 launches on
 * average. But kernels that turn from dear to a mix of dear and cheap
 * change the compute and then mark phases every few launches: held,
 * such a change after a calm line went unseen, and two outside helpers'
 * programs stayed fetching at 1.37-1.54x `none`'s step. And the ways
 * are tried again after BW_RETRY windows' launches
 * with nothing to act on, twice as many each time the trials chose what
 * they chose before, up to BW_RETRY_MAX (a trial's window of the other
 * way costs the launches it slows). A launch decided with something to
 * act on drops the window under way (its time is not the ways'): the way
 * chosen stays, and trials under way end, the rules deciding (the next
 * launch with nothing to act on starts them again).
 *
 * Prices judged. The trials time the two ways of the chunks no price
 * decides; a chunk with a price goes where its price says in both
 * windows. A price near a fetch's cost decides on a small margin, and
 * one that stands on launches whose compute varies from launch to
 * launch is biased (a slowdown is measured from the shortest duration
 * seen): kernels whose compute was drawn per launch priced one-pass
 * reads at 1-2x a fetch, and fetching what they named lost to both
 * simple ways (up to 1.32x the better of `none` and `lru`: tests/sim/
 * fitted_streams `random`). So where one chunk in BW_AGAINST of those
 * decided went against the way on such a margin (plan.c, blind_choice),
 * the way they went against is judged for every chunk, prices aside
 * (judge_way): at the end of the trials, or once BW_DECIDED_LATE chunks
 * were decided after a choice that had too few to tell. One to BW_JUDGE
 * windows against the trials' window of prices deciding with the way
 * chosen (priced_rate); taken for every chunk where faster by BW_MARGIN
 * and BW_SURE times the error of the two, ended after two parts where
 * BW_JUDGE_ABORT times dearer. Where it lost, the other way is judged
 * next, once (judged_lost): prices on a margin split the chunks between
 * the ways by chance, and the mix can be slower than either. A judging
 * that neither won nor lost is decided later by the chosen windows of
 * prices deciding, which are timed anyway (late_evidence). The same
 * kernels mark phases of the pooled line by chance every 100-300
 * launches: trials cut by a phase BW_CUTS times in a row, the next run
 * to their end (cut_by_phase).
 */
#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "plan_steps.h"

#define BW_PART 16        /* launches a part of a timed window */
#define BW_SETTLE 16      /* launches fetching before the first timed window, at least ... */
#define BW_SETTLE_MAX 256 /* ... and at most, while fetches have not carried the room's bytes */
#define BW_STRAY 256      /* launches a part waits for a launch on its window's stream (points of ops->mark) */
#define BW_ROUNDS 4       /* rounds of the two windows that agree, at most ... */
#define BW_TRIED 8        /* ... and rounds in all */
#define BW_MARGIN 0.02    /* a way faster per byte than the other by this share ... */
#define BW_SURE 1.5       /* ... and by this many times the error of the two measures is chosen ... */
#define BW_SURE_LAST 1.0  /* ... (this many after the last round) */
#define BW_ABORT 3.0      /* a part reading in place this many times dearer than fetching ends the trials */
#define BW_SUDDEN 2.5     /* a part reading in place chosen this many times dearer per byte than its measure ... */
#define BW_SUDDEN_TIME 2.0 /* ... and this many times longer than its parts, ... */
#define BW_SERVED 0.25    /* ... where the room served this share of its measure's bytes, and this share of that now */
#define BW_ODD 0.25       /* a window off the chosen way's measure by this share ... */
#define BW_ODD_RUN 2      /* ... this many in a row: the ways are tried again */
#define BW_RETRY 128      /* windows' launches after which they are tried again anyway, ... */
#define BW_RETRY_MAX 4096 /* ... twice as many each time they chose as before, up to this */
#define BW_QUIET 64       /* launches without a new phase of the functions before one tries the ways again, ... */
#define BW_QUIET_MAX 8192 /* ... twice as many each time the trials chose as before, up to this */
#define BW_HELD 16        /* ... and launches after it without another before the trials start, ... */
#define BW_LONG 4         /* ... but for one after this many times the quiet time, ... */
#define BW_CALM 16        /* ... or after gaps between phases this long on average: at once */
#define BW_WAIT 512       /* launches a choice waits for its points before the trials start over */
#define BW_DECIDED 32     /* missing chunks decided with prices deciding, at least, ... */
#define BW_AGAINST 4      /* ... one in this many by prices against the way: one way judged for every chunk */
#define BW_DECAY 1024     /* chunks decided before the counts halve */
#define BW_CUTS 2         /* trials cut by phases in a row before the next run to their end */
#define BW_DECIDED_LATE 128 /* chunks decided since a choice with prices deciding before it is judged */
#define BW_JUDGE 3        /* windows of one way for every chunk, at most, ... */
#define BW_JUDGE_ABORT 1.5 /* ... ended at once where this many times dearer per byte than prices deciding */
#define BW_LATE 32        /* chosen windows a judged way faster on average waits for prices deciding to lose */

/* What the current window is for. */
enum { BW_OFF, BW_SETTLING, BW_FETCHING, BW_READING, BW_WAITING, BW_CHOSEN, BW_JUDGING };
/* The windows ended (lms_plan_blind.pending) and the ways' sums. */
enum { W_FETCH, W_INPLACE, W_LAST, W_JUDGE };

static void add_sums(lms_plan_bsums *a, const lms_plan_bsums *b);
static void chosen(lms_plan_blind *b, int way, bool all, double dearer, const lms_plan_bsums *s);
static double dearer_now(const lms_plan_blind *b);

/* Whether one way is being judged for every chunk: its windows are under
 * way (plan.c's blind_choice then fetches the chunks priced far over a
 * fetch even while reading in place is judged). */
bool lms_plan_blind_judging(const lms_plan_blind *b)
{
    return b->stage == BW_JUDGING;
}

/* Opens no window: the next launch records its first point. */
static void no_window(lms_plan_blind *b)
{
    b->cur = (lms_plan_bwindow){0};
    b->part = 0;
    b->n = 0;
}

/* Starts the ways' trials: fetching, settling first (how much dearer
 * reading in place was, when fetching was chosen, still holds reads in
 * place asked by functions' fits back: forgotten, an outside helper's
 * retry read 6-8 GB a step over the link, 1.43x `lru`'s step). */
static void try_ways(lms_plan_blind *b)
{
    *b = (lms_plan_blind){.way = LMS_BWAY_FETCH, .stage = BW_SETTLING, .phase = b->phase,
                          .phase_at = b->phase_at, .launches = b->launches, .chose = b->chose, .retry = b->retry,
                          .quiet = b->quiet, .gaps = b->gaps, .dearer = b->dearer, .fragile = b->fragile,
                          .decided = b->decided, .fetched_against = b->fetched_against,
                          .read_against = b->read_against, .cut = b->cut};
}

/* Whether the current part has run its course: settling (one part), once
 * fetches carried as many bytes as the room holds after BW_SETTLE
 * launches, or at BW_SETTLE_MAX; a timed window's part at BW_PART. */
static bool part_full(const lms_plan_blind *b, const lms_plan_ops *ops, void *ctx)
{
    if (b->stage != BW_SETTLING)
        return b->n >= BW_PART;
    if (b->n < BW_SETTLE)
        return false;
    uint64_t room = ops->room ? ops->room(ctx) : ops->budget(ctx);
    return b->n >= BW_SETTLE_MAX || !ops->moved || ops->moved(ctx) - b->moved_from >= room;
}

/* Adds ended window w's parts to s once all its points completed, and
 * clears w; false while one has not (or one was recorded over, which
 * never completes). LMS_BWAY_PARTS driver queries. */
static bool add_up(lms_plan_bwindow *w, const lms_plan_ops *ops, void *ctx, lms_plan_bsums *s)
{
    double t[LMS_BWAY_PARTS];
    for (int j = 0; j < LMS_BWAY_PARTS; j++) {
        t[j] = ops->between(ctx, w->pts[j], w->pts[j + 1]);
        if (t[j] < 0)
            return false;
    }
    for (int j = 0; j < LMS_BWAY_PARTS; j++) {
        s->t += t[j];
        s->bytes += w->bytes[j];
        s->missing += w->missing[j];
        if (!w->bytes[j])
            continue;   /* launches of no managed chunk: no rate of their own */
        double r = t[j] / (double)w->bytes[j];
        s->r += r;
        s->rr += r * r;
        s->parts++;
    }
    *w = (lms_plan_bwindow){0};
    return true;
}

/* s's device time per byte (*rate), the square of its error's share of
 * it (*var) and the variance of its parts' shares (*part_var); false
 * without two parts with bytes. */
static bool rate_of(const lms_plan_bsums *s, double *rate, double *var, double *part_var)
{
    if (s->parts < 2 || !s->bytes || !(s->t > 0))
        return false;
    *rate = s->t / (double)s->bytes;
    double mean = s->r / s->parts, v = (s->rr - s->parts * mean * mean) / (s->parts - 1);
    *part_var = v > 0 ? v / (*rate * *rate) : 0;
    *var = *part_var / s->parts;
    return true;
}

/* Whether share d (>= 0) is more than `least` and more than `sure` times
 * the error whose square is `var` (squares compared). */
static bool beyond(double d, double least, double var, double sure)
{
    return d > least && d * d > sure * sure * var;
}

/* Whether rate a (squared error share av) is slower than rate b (bv) by
 * more than BW_MARGIN and `sure` times the error of the two. */
static bool slower(double a, double av, double b, double bv, double sure)
{
    return a > b && beyond(a / b - 1, BW_MARGIN, av + bv, sure);
}

/* The way of the faster of fetching (per byte `fetch`, squared error
 * share `fv`) and reading in place (`inplace`, `iv`) when faster by
 * BW_MARGIN and by `sure` times the error of the two; else the rules.
 * Reading in place `fragile` needs BW_ODD (sudden). */
static int faster(double fetch, double fv, double inplace, double iv, double sure, bool fragile)
{
    if (fetch > inplace && beyond(fetch / inplace - 1, fragile ? BW_ODD : BW_MARGIN, fv + iv, sure))
        return LMS_BWAY_INPLACE;
    if (inplace > fetch && beyond(inplace / fetch - 1, BW_MARGIN, fv + iv, sure))
        return LMS_BWAY_FETCH;
    return LMS_BWAY_RULES;
}

/* A judged way that neither won nor lost (judge: faster on average than
 * prices deciding, by less than the error of two measures that stand on
 * a few windows) is held as b->late_way while prices decide: each chosen
 * window of prices deciding, ended and added up in s, joins their
 * measure (`since`, from the trials' windows of the way chosen), and
 * where that measure is slower than the judged way's by more than
 * BW_MARGIN and BW_SURE times the error of the two, the judged way is
 * taken for every chunk; where it is faster so, or after BW_LATE
 * windows, the judged way is dropped. Windows of kernels whose sizes and
 * passes vary spread their parts' rates by 40% (tests/sim/mixed_parts
 * `sizes`: buffers of 2-32 MiB read 1-3 times), where the ways differ by
 * 10-25%: three windows of judging could not tell, and prices read
 * 1,356 MiB a step in place at 1.26x `lru`'s step, while the chosen
 * windows that followed told within two (1.08x). The judged way's
 * measure is older than the windows that tell, so a change of the
 * kernels between them can pass for prices losing (compute up by a fifth
 * in an outside helper's program: reading every chunk in place taken at
 * 1.145x the step before); judging it again against those windows before
 * taking it was tried, and lost more than it saved (4 cells over 5%
 * slower than before where this has 1, of the helper's 159; 10 of 36
 * such changes where this has 4: docs/PERFORMANCE.md, "Nineteenth
 * round"). True when the judged way was taken. */
static bool late_evidence(lms_plan_blind *b, const lms_plan_bsums *s)
{
    if (b->all) {
        b->late_way = LMS_BWAY_RULES;
        return false;
    }
    add_sums(&b->since, s);
    b->late_windows++;
    double sr = 0, sv = 0, sp = 0, lr = 0, lv = 0, lp = 0;
    if (rate_of(&b->since, &sr, &sv, &sp) && rate_of(&b->late, &lr, &lv, &lp)) {
        if (slower(sr, sv, lr, lv, BW_SURE)) {
            int way = b->late_way;
            b->late_way = LMS_BWAY_RULES;
            chosen(b, way, true, dearer_now(b), &b->late);
            return true;
        }
        if (slower(lr, lv, sr, sv, BW_SURE))
            b->late_way = LMS_BWAY_RULES;
    }
    if (b->late_windows >= BW_LATE)
        b->late_way = LMS_BWAY_RULES;
    return false;
}

/* Chosen, at each part's end: the latest window ended, once its points
 * completed, is held to the chosen way's measure (the rules chosen: the
 * second window after the choice sets it, the first may still be
 * settling); BW_ODD_RUN in a row slower start the trials again (a way
 * that became faster stays: the room it keeps improves after the
 * trials, and trying again then cost an outside helper's program 1.46x
 * `lru`'s step). Fetching chosen by a wide margin is held to half that
 * margin, if more than BW_ODD: slower by less, it is still the faster
 * way by what was measured of reading in place, and windows of kernels
 * that differ per launch (half of them dear in place, half cheap, on 8
 * streams side by side) were a third slower than the trials' measure
 * two in a row by chance, where reading in place had been 4x dearer:
 * trying again took a trial's slow window, 1.21x `lru`'s step. */
static void watch(lms_plan_blind *b, const lms_plan_ops *ops, void *ctx)
{
    lms_plan_bsums s = {0};
    double r = 0, v = 0, pv = 0;
    if (!b->pending[W_LAST].pts[0] || !add_up(&b->pending[W_LAST], ops, ctx, &s) || !rate_of(&s, &r, &v, &pv))
        return;
    if (b->late_way != LMS_BWAY_RULES && late_evidence(b, &s))
        return;   /* the judged way taken */
    if (b->ref <= 0) {
        if (b->windows >= 2)
            b->ref = r, b->ref_var = v, b->part_var = pv;
        return;
    }
    double least = b->way == LMS_BWAY_FETCH && b->dearer / 2 > BW_ODD ? b->dearer / 2 : BW_ODD;
    b->odd = beyond(r / b->ref - 1, least, b->ref_var + b->part_var / LMS_BWAY_PARTS, BW_SURE) ? b->odd + 1 : 0;
    if (b->odd >= BW_ODD_RUN)
        try_ways(b);
}

/* The current window ended at its last point: the next stage (a timed
 * window waits in `pending` for its points); its last point opens the
 * next window, but for a round's end, and the trials begun again. */
static void window_ended(lms_plan_blind *b)
{
    int last = b->cur.pts[b->part];
    switch (b->stage) {
    case BW_SETTLING:
        b->stage = BW_FETCHING;
        break;
    case BW_FETCHING:
        b->pending[W_FETCH] = b->cur;
        b->stage = BW_READING;
        b->way = LMS_BWAY_INPLACE;
        break;
    case BW_READING:
        b->pending[W_INPLACE] = b->cur;
        b->stage = BW_WAITING;
        b->way = LMS_BWAY_RULES;
        b->waited = 0;
        no_window(b);
        return;
    case BW_CHOSEN:
        b->pending[W_LAST] = b->cur;   /* one not yet held to the measure is passed over */
        b->windows++;
        break;
    case BW_JUDGING:
        b->pending[W_JUDGE] = b->cur;
        b->stage = BW_WAITING;
        b->waited = 0;
        no_window(b);
        return;
    }
    no_window(b);
    b->cur.pts[0] = last;
}

/* Whether the rates of a and b differ by more than BW_ODD and BW_SURE
 * times the error of the two (both known). */
static bool differ(const lms_plan_bsums *a, const lms_plan_bsums *b)
{
    double ra = 0, va = 0, pa = 0, rb = 0, vb = 0, pb = 0;
    if (!rate_of(a, &ra, &va, &pa) || !rate_of(b, &rb, &vb, &pb))
        return false;
    return beyond(ra > rb ? ra / rb - 1 : rb / ra - 1, BW_ODD, va + vb, BW_SURE);
}

/* Adds sums b to a. */
static void add_sums(lms_plan_bsums *a, const lms_plan_bsums *b)
{
    a->t += b->t;
    a->bytes += b->bytes;
    a->missing += b->missing;
    a->r += b->r;
    a->rr += b->rr;
    a->parts += b->parts;
}

/* A round's two windows were added up: they join the rounds before, or,
 * where either way's rate differs from theirs (the kernels or the
 * operands changed during the trials), replace them. */
static void round_done(lms_plan_blind *b)
{
    bool changed = b->rounds > 0 && (differ(&b->sums[W_FETCH], &b->round[W_FETCH]) ||
                                     differ(&b->sums[W_INPLACE], &b->round[W_INPLACE]));
    for (int w = W_FETCH; w <= W_INPLACE; w++) {
        if (changed)
            b->sums[w] = b->round[w];
        else
            add_sums(&b->sums[w], &b->round[w]);
        b->round[w] = (lms_plan_bsums){0};
    }
    b->rounds = changed ? 1 : b->rounds + 1;
    b->tried++;
}

/* The trials chose `way` for the chunks no price decides, or for every
 * chunk (`all`), by the measure `s` (NULL: none) of windows that ran so:
 * what the way is held to (its ns per byte, the square of its error's
 * share, its parts' variance, and for sudden() their time and the share
 * of their bytes missing). `dearer`: reading in place's time per byte
 * over fetching's, less one, where fetching is chosen. The next periodic
 * trial and the quiet time a phase needs double when the choice is the
 * one made before. */
static void chosen(lms_plan_blind *b, int way, bool all, double dearer, const lms_plan_bsums *s)
{
    b->way = way;
    b->all = all && way != LMS_BWAY_RULES;
    b->judged = LMS_BWAY_RULES;
    b->cut = 0;
    b->decided = b->fetched_against = b->read_against = 0;   /* counted again for judge_way */
    b->stage = BW_CHOSEN;
    int choice = way + (b->all ? 4 : 0);
    bool again = b->retry && choice == b->chose;   /* the trials chose what they chose before */
    b->retry = again ? (b->retry < BW_RETRY_MAX / 2 ? 2 * b->retry : BW_RETRY_MAX) : BW_RETRY;
    b->quiet = again ? (b->quiet < BW_QUIET_MAX / 2 ? 2 * b->quiet : BW_QUIET_MAX) : BW_QUIET;
    b->chose = choice;
    b->dearer = way == LMS_BWAY_FETCH ? dearer : 0;
    double r = 0, v = 0, pv = 0;
    if (way != LMS_BWAY_RULES && s && rate_of(s, &r, &v, &pv)) {
        b->ref = r, b->ref_var = v, b->part_var = pv;
        b->ref_part = s->t / s->parts;                      /* parts >= 2, */
        b->ref_miss = (double)s->missing / (double)s->bytes;   /* bytes > 0 */
    }
    b->odd = 0;
    b->windows = 0;
    b->chosen_at = b->launches;
    no_window(b);
}

/* The current window's device time per byte over its parts before the
 * last (their points had a part's time to complete), at the end of its
 * part k >= 2; negative when unknown. */
static double early_rate(const lms_plan_blind *b, const lms_plan_ops *ops, void *ctx)
{
    int k = b->part;
    uint64_t bytes = 0;
    for (int j = 0; j + 1 < k; j++)
        bytes += b->cur.bytes[j];
    if (k < 2 || !bytes)
        return -1;
    double t = ops->between(ctx, b->cur.pts[0], b->cur.pts[k - 1]);
    return t < 0 ? -1 : t / (double)bytes;
}

/* Reading in place, at the end of its part k (>= 2): its parts before
 * the last (their points had a part's time to complete) against
 * fetching's window of the round (added up once its points completed);
 * more than BW_ABORT times dearer per byte, fetching is chosen at once (a
 * trial's window of a way far dearer costs the launches it slows: an
 * outside helper's hot set of buffers that moves, 1.57x `lru`'s step
 * with whole windows; a single part differs from the next by up to 2x). */
static void reading_part(lms_plan_blind *b, const lms_plan_ops *ops, void *ctx)
{
    double r = early_rate(b, ops, ctx);
    if (r < 0)
        return;
    if (b->pending[W_FETCH].pts[0] && !add_up(&b->pending[W_FETCH], ops, ctx, &b->round[W_FETCH]))
        return;
    double fetch = 0, fv = 0, fp = 0;
    if (!rate_of(&b->round[W_FETCH], &fetch, &fv, &fp))
        return;
    if (r > BW_ABORT * fetch)
        chosen(b, LMS_BWAY_FETCH, false, r / fetch - 1, &b->round[W_FETCH]);
}

/* Reading in place chosen, at the end of part k of the current window:
 * its latest part whose points completed (k - 1, else k - 2) starts the
 * trials again at once when the room no longer serves the launches.
 * Reading in place keeps what the room held when it was chosen, and has
 * no bound once that is not what the launches use (an outside helper's
 * `hotset`, a hot set of buffers that moves: 2x under `lookahead` took
 * 1.75x `lru`'s step while two whole windows had to be slower first). So
 * a part is held to the measure it was chosen by: more than BW_SUDDEN
 * times dearer per byte, more than BW_SUDDEN_TIME times longer than its
 * parts on average (a part of few managed bytes has the rate of its
 * other launches: the first helper's `initdear` went over on the rate
 * alone, 1.06x), and the room serving less than BW_SERVED of the share of
 * the bytes it served then, a share of at least BW_SERVED (a burst of
 * long kernels is dearer with the room as it was: a third helper's
 * bursts at each step's start tried again and lost reading in place,
 * 1.04 -> 1.12x `none`; a part of 16 launches served half its share by
 * chance, and where the room served little, a part's share is chance).
 * Until the next periodic trial, reading in place is then chosen only
 * when faster by BW_ODD: its trial window rides on what fetching left in
 * the room (`hotset` chose it again, 9% faster, at each move of its set). */
static void sudden(lms_plan_blind *b, const lms_plan_ops *ops, void *ctx)
{
    int k = b->part;
    if (b->way != LMS_BWAY_INPLACE || b->ref <= 0 || k < 1)
        return;
    double t = ops->between(ctx, b->cur.pts[k - 1], b->cur.pts[k]);
    int j = k - 1;
    if (t < 0 && k >= 2) {
        j = k - 2;
        t = ops->between(ctx, b->cur.pts[j], b->cur.pts[j + 1]);
    }
    uint64_t bytes = b->cur.bytes[j];
    double miss = bytes ? (double)b->cur.missing[j] / (double)bytes : 0;
    if (t > BW_SUDDEN_TIME * b->ref_part && bytes && t / (double)bytes > BW_SUDDEN * b->ref &&
        1 - b->ref_miss >= BW_SERVED && 1 - miss < BW_SERVED * (1 - b->ref_miss)) {
        b->fragile = true;
        try_ways(b);
    }
}

/* The trials' sums of `way`'s windows (RULES: NULL). */
static const lms_plan_bsums *sums_of(const lms_plan_blind *b, int way)
{
    return way == LMS_BWAY_FETCH ? &b->sums[W_FETCH] : way == LMS_BWAY_INPLACE ? &b->sums[W_INPLACE] : NULL;
}

/* Reading in place's time per byte over fetching's in the trials, less
 * one, where both are known and reading in place is the dearer; else 0. */
static double dearer_now(const lms_plan_blind *b)
{
    double fetch = 0, inplace = 0, v, pv;
    bool known = rate_of(&b->sums[W_FETCH], &fetch, &v, &pv) && rate_of(&b->sums[W_INPLACE], &inplace, &v, &pv);
    return known && inplace > fetch ? inplace / fetch - 1 : 0;
}

/* The windows of the trials that measure prices deciding with `way` for
 * the chunks no price decides: that way's (RULES: the faster of the two). */
static const lms_plan_bsums *priced_sums(const lms_plan_blind *b, int way)
{
    if (way != LMS_BWAY_RULES)
        return sums_of(b, way);
    double fetch = 0, inplace = 0, v, pv;
    bool kf = rate_of(&b->sums[W_FETCH], &fetch, &v, &pv), ki = rate_of(&b->sums[W_INPLACE], &inplace, &v, &pv);
    return !kf || (ki && inplace < fetch) ? &b->sums[W_INPLACE] : &b->sums[W_FETCH];
}

/* Their device time per byte and the square of its error's share (as
 * rate_of); false while unknown. */
static bool priced_rate(const lms_plan_blind *b, int way, double *rate, double *var)
{
    double pv;
    return rate_of(priced_sums(b, way), rate, var, &pv);
}

/* Whether the rounds timed way x slower than `way` (a way they chose;
 * RULES: never) by more than BW_ODD, prices deciding in both. */
static bool timed_slower(const lms_plan_blind *b, int x, int way)
{
    double rx, vx, rw, vw;
    return way != LMS_BWAY_RULES && x != way && priced_rate(b, x, &rx, &vx) && priced_rate(b, way, &rw, &vw) &&
           rx > rw * (1 + BW_ODD);
}

/* The way judged for every chunk once the rounds chose `way` for the
 * chunks no price decides, or RULES (none): where prices went against
 * the way for one chunk in BW_AGAINST, the way they went against most
 * (reading in place where they fetched); not a way the rounds timed
 * slower by more than BW_ODD with prices deciding. Only prices within
 * a factor of a fetch's cost are counted (plan.c, blind_choice): a price
 * far from it decides on a wide margin (an operand re-read 8 times,
 * priced at 7x a fetch, is not judged: bench/shapes `churn`). */
static int judge_way(const lms_plan_blind *b, int way)
{
    uint32_t against = b->fetched_against + b->read_against;
    if (b->decided < BW_DECIDED || (uint64_t)against * BW_AGAINST < b->decided)
        return LMS_BWAY_RULES;
    int x = b->fetched_against >= b->read_against ? LMS_BWAY_INPLACE : LMS_BWAY_FETCH;
    return timed_slower(b, x, way) ? LMS_BWAY_RULES : x;
}

/* Starts judging way x for every chunk against prices deciding with
 * `after` for the chunks no price decides (the rounds' choice, taken
 * unless x wins: judge). Once per trials. */
static void start_judging(lms_plan_blind *b, int x, int after)
{
    b->judged = x;
    b->judged_after = after;
    b->judged_once = true;
    b->judge = (lms_plan_bsums){0};
    b->pending[W_LAST] = (lms_plan_bwindow){0};   /* a chosen way's window: not held to the next choice */
    b->stage = BW_JUDGING;
    b->way = x;
    b->all = true;
    no_window(b);
}

/* The judged way lost (judge, judging_part): the other way is judged
 * next, once per trials, where the rounds did not time it slower by more
 * than BW_ODD with prices deciding (judge_way's test); else the rounds'
 * choice is taken. Prices that decide on a margin split the chunks
 * between the two ways by chance, and such a mix can be slower than
 * either way for every chunk: an outside helper's kernels of one pass
 * with compute drawn per launch, in bursts with kernels of eight, ran
 * 1.26x `lru`'s step with the prices fetching what reading every chunk
 * in place had not beaten (fetching every chunk: 1.05x); on
 * tests/sim/fitted_streams `random` (RANDOM_SEEDS="0 1 2 3") the mean
 * over the better of `none` and `lru` went from 1.0269 to 1.0094.
 * tests/unit/blind_ways `other_way_judged` holds the rule. */
static void judged_lost(lms_plan_blind *b)
{
    int other = b->judged == LMS_BWAY_FETCH ? LMS_BWAY_INPLACE : LMS_BWAY_FETCH, after = b->judged_after;
    if (!b->judged_both && !timed_slower(b, other, after)) {
        start_judging(b, other, after);
        b->judged_both = true;
        return;
    }
    chosen(b, after, false, dearer_now(b), sums_of(b, after));
}

/* Judging b->judged for every chunk, its windows added up: taken where
 * prices deciding (with the way the rounds chose, b->judged_after) was
 * slower than it by more than BW_MARGIN and BW_SURE times the error of
 * the two; another window while neither is sure, up to BW_JUDGE; else
 * the rounds' choice (a judged way faster on average is held for the
 * chosen windows to tell: late_evidence). A price per chunk stands on
 * launches whose compute may vary: kernels whose compute is drawn per
 * launch price their reads far above what they cost, and fetching what
 * the prices named lost to both ways (1.30x `none`'s step on 8 streams
 * side by side: tests/sim/fitted_streams `random`). */
static void judge(lms_plan_blind *b)
{
    double a = 0, av = 0, ap = 0, pr = 0, pv = 0;
    bool ka = rate_of(&b->judge, &a, &av, &ap), kp = priced_rate(b, b->judged_after, &pr, &pv);
    if (ka && kp && slower(pr, pv, a, av, BW_SURE)) {
        chosen(b, b->judged, true, dearer_now(b), &b->judge);
        return;
    }
    if (kp && (!ka || !slower(a, av, pr, pv, BW_SURE)) && b->judge.parts < BW_JUDGE * LMS_BWAY_PARTS) {
        b->stage = BW_JUDGING;   /* another window */
        b->way = b->judged;
        b->all = true;
        no_window(b);
        return;
    }
    if (ka && kp && a < pr && b->late_way == LMS_BWAY_RULES) {
        b->late_way = b->judged;   /* neither won: the chosen windows tell (late_evidence) */
        b->late = b->judge;
        b->since = *priced_sums(b, b->judged_after);
        b->late_windows = 0;
    }
    judged_lost(b);
}

/* Judging, at the end of its part k (>= 2): its parts before the last
 * (early_rate) more than BW_JUDGE_ABORT times dearer per byte than prices
 * deciding end the judging at once, the rounds' choice taken (a window of
 * every chunk read in place where prices fetched the dear ones cost 2.4x
 * a window of prices deciding: bench/shapes `churn`). */
static void judging_part(lms_plan_blind *b, const lms_plan_ops *ops, void *ctx)
{
    double r = early_rate(b, ops, ctx), pr = 0, pv = 0;
    if (r >= 0 && priced_rate(b, b->judged_after, &pr, &pv) && r > BW_JUDGE_ABORT * pr)
        judged_lost(b);
}

/* Whether window pending[w] is added up into s (or none is pending);
 * false while its points have not completed, and after BW_WAIT launches
 * of that the trials start over. */
static bool added(lms_plan_blind *b, int w, lms_plan_bsums *s, const lms_plan_ops *ops, void *ctx)
{
    if (!b->pending[w].pts[0] || add_up(&b->pending[w], ops, ctx, s))
        return true;
    if (++b->waited >= BW_WAIT)
        try_ways(b);
    return false;
}

/* Waiting for a round's points (the rules deciding): once both windows
 * are added up (round_done), the faster way when sure of it, else
 * another round (the last, BW_ROUNDS agreeing or BW_TRIED in all: when
 * sure by one error, else the rules); after BW_WAIT launches without
 * them, the trials start over. Where prices went against the way often
 * (judge_way), one way is then judged for every chunk (judge). */
static void decide(lms_plan_blind *b, const lms_plan_ops *ops, void *ctx)
{
    if (b->judged != LMS_BWAY_RULES) {
        if (added(b, W_JUDGE, &b->judge, ops, ctx))
            judge(b);
        return;
    }
    if (!added(b, W_FETCH, &b->round[W_FETCH], ops, ctx) || !added(b, W_INPLACE, &b->round[W_INPLACE], ops, ctx))
        return;
    round_done(b);
    double fetch = 0, fv = 0, fp = 0, inplace = 0, iv = 0, ip = 0;
    bool known = rate_of(&b->sums[W_FETCH], &fetch, &fv, &fp) && rate_of(&b->sums[W_INPLACE], &inplace, &iv, &ip);
    bool last = b->rounds >= BW_ROUNDS || b->tried >= BW_TRIED;
    int way = known ? faster(fetch, fv, inplace, iv, last ? BW_SURE_LAST : BW_SURE, b->fragile) : LMS_BWAY_RULES;
    if (way == LMS_BWAY_RULES && !last) {
        b->stage = BW_FETCHING;   /* another round */
        b->way = LMS_BWAY_FETCH;
        no_window(b);
        return;
    }
    int x = known ? judge_way(b, way) : LMS_BWAY_RULES;
    if (x != LMS_BWAY_RULES) {
        start_judging(b, x, way);
        return;
    }
    chosen(b, way, false, dearer_now(b), sums_of(b, way));
}

/* A phase of the functions starts the trials (again); trials under way
 * that it cuts are counted (after BW_CUTS of them in a row, the next run
 * to their end whatever phases come: kernels whose compute is drawn per
 * launch mark phases of the pooled line by chance every 100-300 launches,
 * and trials cut each time never chose, their fetching windows
 * costing 1.18x `lru`'s step: tests/sim/fitted_streams `random`). */
static void cut_by_phase(lms_plan_blind *b)
{
    bool cut = b->stage != BW_CHOSEN && b->stage != BW_OFF;
    b->held = false;
    if (cut && b->cut >= BW_CUTS)
        return;   /* these run to their end */
    try_ways(b);
    if (cut && b->cut < 255)
        b->cut++;
}

void lms_plan_blind_decided(lms_plan *p, int against)
{
    lms_plan_blind *b = &p->blind;
    if (b->all)
        return;   /* the way decided every chunk */
    b->decided++;
    b->fetched_against += against == LMS_BWAY_FETCH;
    b->read_against += against == LMS_BWAY_INPLACE;
    if (b->decided >= BW_DECAY)
        b->decided /= 2, b->fetched_against /= 2, b->read_against /= 2;
}

void lms_plan_blind_launch(lms_plan *p, const lms_plan_ops *ops, void *ctx, bool blind, uint64_t bytes,
                           uint64_t missing)
{
    lms_plan_blind *b = &p->blind;
    if (!ops->mark || !ops->between)
        return;   /* never timed: the rules decide */
    if (!blind) {
        /* A launch decided with something to act on: a window's time is
         * not the ways' any more. Chosen, the way stays; trying, the
         * trials end and the rules decide. */
        if (b->stage == BW_CHOSEN)
            no_window(b);
        else if (b->stage != BW_OFF)
            *b = (lms_plan_blind){.phase = b->phase, .phase_at = b->phase_at, .launches = b->launches,
                                  .chose = b->chose, .retry = b->retry, .quiet = b->quiet, .gaps = b->gaps,
                                  .fragile = b->fragile, .decided = b->decided,
                                  .fetched_against = b->fetched_against, .read_against = b->read_against};
        return;
    }
    if (b->stage == BW_OFF) {
        try_ways(b);
        b->phase = ops->fn_phase ? ops->fn_phase(ctx) : 0;
    }
    b->launches++;
    uint32_t phase = ops->fn_phase ? ops->fn_phase(ctx) : 0;
    if (phase != b->phase) {
        /* Every function's compute changed together after a quiet time
         * (on a line calm before, at once; on a noisy one, once BW_HELD
         * launches pass without another phase): the kernels changed,
         * and what was measured is of the time before (phases that come
         * often are functions of two kinds taking turns, or chance). */
        uint64_t gap = b->launches - b->phase_at, quiet = b->quiet ? b->quiet : BW_QUIET;
        bool at_once = !(b->gaps > 0) || b->gaps >= BW_CALM || gap >= BW_LONG * quiet;
        b->gaps = b->gaps > 0 ? b->gaps + ((double)gap - b->gaps) / 4 : (double)gap;
        b->held = gap >= quiet && !at_once;   /* another phase drops it */
        b->phase = phase;
        b->phase_at = b->launches;
        if (gap >= quiet && at_once)
            cut_by_phase(b);   /* chosen, or trying: the trials (again) from now */
    }
    if (b->held && b->launches - b->phase_at >= BW_HELD)
        cut_by_phase(b);
    if (b->stage == BW_CHOSEN && b->launches - b->chosen_at >= (uint64_t)b->retry * LMS_BWAY_PARTS * BW_PART) {
        b->fragile = false;   /* a part slow by chance does not hold reading in place back for good */
        try_ways(b);
    }
    /* Chosen with prices deciding, and not judged in these trials: once
     * BW_DECIDED_LATE missing chunks were decided since, prices that went
     * against the way often start judging it (judge_way): the trials'
     * own windows may have decided too few to tell. */
    if (b->stage == BW_CHOSEN && !b->all && !b->judged_once && b->decided >= BW_DECIDED_LATE) {
        int x = judge_way(b, b->way);
        if (x != LMS_BWAY_RULES)
            start_judging(b, x, b->way);
    }
    if (b->stage == BW_WAITING) {
        decide(b, ops, ctx);
        if (b->stage == BW_WAITING)
            return;   /* no window while waiting */
    }
    int (*mark)(void *, int) = ops->mark_all ? ops->mark_all : ops->mark;
    if (!b->cur.pts[0]) {
        int k = mark(ctx, 0);
        if (k <= 0)
            return;   /* no point now: a later launch opens the window */
        b->cur.pts[0] = k;
        b->moved_from = ops->moved ? ops->moved(ctx) : 0;
    } else if (part_full(b, ops, ctx)) {
        int k = mark(ctx, b->cur.pts[0]);
        if (k == 0) {
            no_window(b);   /* its first point is gone: the window again */
            return;
        }
        if (k < 0 && b->n >= BW_STRAY) {
            /* The launches left the first point's stream: the window
             * cannot end. Chosen, the way stays; trying, the trials start
             * again on the stream launched on now. */
            if (b->stage == BW_CHOSEN)
                no_window(b);
            else
                try_ways(b);
            return;
        }
        if (k > 0) {   /* else on another stream: a later launch ends the part */
            b->cur.pts[++b->part] = k;
            b->n = 0;
            if (b->stage == BW_CHOSEN) {
                watch(b, ops, ctx);
                if (b->stage == BW_CHOSEN)
                    sudden(b, ops, ctx);
                if (b->stage != BW_CHOSEN)
                    return;   /* tried again: the next launch opens its window */
            } else if (b->stage == BW_READING) {
                reading_part(b, ops, ctx);
                if (b->stage != BW_READING)
                    return;   /* fetching chosen: the next launch opens its window */
            } else if (b->stage == BW_JUDGING) {
                judging_part(b, ops, ctx);
                if (b->stage != BW_JUDGING)
                    return;   /* the rounds' choice taken: the next launch opens its window */
            }
            if (b->stage == BW_SETTLING || b->part == LMS_BWAY_PARTS)
                window_ended(b);
            if (!b->cur.pts[0])
                return;
        }
    }
    b->n++;
    if (b->part < LMS_BWAY_PARTS) {
        b->cur.bytes[b->part] += bytes;
        b->cur.missing[b->part] += missing;
    }
}
