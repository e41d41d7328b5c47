/*
 * trials.c — the planner's timed steps: which mode (acting, acting deep,
 * on demand in LRU order, reading in place) runs a learned step fastest,
 * measured on the device with points recorded after the work of every
 * stream launched on (ops->mark_all, else on the launch stream). The
 * planner (plan.c) calls lms_plan_trial_launch at every launch; the
 * state lives in lms_plan (plan.h). No CUDA here: the points and the
 * times between them come through lms_plan_ops.
 */
#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "plan_steps.h"

/* ---- timed steps -------------------------------------------------------------
 *
 * Acting on the learned future (Belady's order, fetching ahead) is not
 * always the fastest: with a room far smaller than what a step touches,
 * each fetch may be evicted before its chunk is used again and cost the
 * link more than reading the chunk where it is; and where the learned
 * order keeps chunks whose reuse comes too late to matter, the plain
 * least-recently-used order on demand may do better. Which is fastest
 * depends on the workload, the room and the link, so it is measured: once
 * the policy knows the step's length P (at least TRIAL_MIN launches), each
 * mode runs two steps (acting; acting deep, fetching 8 launches ahead,
 * tried a second time fetching every chunk where reading the chunks used
 * once a step in place made it far slower: trial_next; on demand in LRU
 * order, every missing chunk fetched, prices aside; reading every missing
 * chunk in place): the
 * first lets the state the previous mode left settle (reading in place
 * evicts nothing: it keeps what the modes before it left resident, tried
 * and chosen alike), the second is timed on the device by points recorded
 * after every stream's work at each eighth of the step (point_offset: the
 * window is exactly P launches long). A mode stops early when, at one
 * of its points, it has taken more than TRIAL_ABORT times what the acting
 * step took to the same point (reading a re-read operand in place is far
 * dearer: a trial must not cost a whole slow step); acting runs the rest
 * of its window, so that the next mode's windows start where acting's
 * did (trial_stop). The fastest over
 * the whole step is kept for TRIAL_RETRY steps, then all are tried again; a
 * period that changes by more than 2x (the policy found the real step)
 * starts the trials over. Confidence lost or the period drifting holds
 * them, the modes timed kept ("trials through an upset"). The points are
 * read without waiting: a choice waits for its measurements to complete,
 * acting meanwhile. */

/* ---- slow modes remembered ---------------------------------------------------
 *
 * A step whose length varies with the data (an inference leaving after 6,
 * 12, 18 or 24 layers: bench/shapes `early-exit`) starts the trials over
 * at every change of the length found, each round trying every mode
 * again; where reading in place re-reads a weight 32 times over the link,
 * each try cost a step 1.6-3.2x what `lru` took for it (seed 12 at 2x:
 * four such steps in 42, 1.19x `lru`'s step on average). So a round
 * started before TRIAL_RETRY steps passed since a mode was stopped far
 * slower than acting does not try that mode, and acting deep starts
 * fetching every chunk where a round before had to (remember_slow). The
 * retry after TRIAL_RETRY steps of a choice tries every mode again, and
 * so does a round on a confirmed step over twice as long as the one
 * timed: the slow modes were timed over a part of it (`pytorch` at 2x,
 * compute x0.25, under `lookahead`: a layer of 672 launches, then the
 * step of 10,088; keeping them, 98.3 -> 136.5 ms a step). They are kept
 * only while acting's own timed step in the new round costs per launch
 * within SLOW_SAME of what it cost in the round that found them
 * (apply_slow): where the costs changed (reading in place 20x a fetch,
 * then a fetch 20x a read in place, on an outside helper's fake clock),
 * reading in place was found after 266 steps of the new costs, not 4. */

#define TRIAL_POINTS LMS_TRIAL_POINTS
#define TRIAL_RETRY 256   /* steps between trials */
#define TRIAL_ABORT 2.0   /* a mode this much slower than acting so far: stop trying it */
#define SLOW_SAME 2.0     /* acting's step per launch within this factor of a round's: its slow modes stay slow */
#define LEAN_LINK 0.8    /* acting's step this busy on the link, or more: act lean (saturated) */
#define LEAN_SLACK 1.02   /* acting lean's own step over acting's by more than this: acting (lean_check) */
#define SHORT_HOLD 128    /* launches a step under TRIAL_MIN holds before it is timed (trial_length) */
#define TRIAL_AGAIN 1.25  /* acting deep this much slower than acting over its step: try it fetching all (trial_next) */
#define BLOCKS_APART 3.0  /* two windows' blocks further apart than this: their grids do not follow the work (faster) */

#define TRIAL_OFF LMS_TRIAL_OFF
#define TRIAL_RUNNING LMS_TRIAL_RUNNING
#define TRIAL_CHOSEN LMS_TRIAL_CHOSEN

/* ---- dear reads known ----------------------------------------------------------
 *
 * A point is read once the device has passed it, and the host runs ahead:
 * a trial far slower than acting was stopped only several launches after
 * its first slow one. Where a chunk's price learned for the same launches
 * on grids of the same class already says its kernel re-reads it (over
 * FAR_OVER fetches: a GEMM's weight, once per tile row), the trials use
 * it: acting deep's trial fetches such a chunk, as acting deep chosen
 * does (plan.c, read_once_now), and reading in place's trial stops
 * before a launch whose chunks so priced cost, beyond fetching them, more
 * than an eighth of acting's timed step, the margin a point must be
 * behind by (lms_plan_trial_dear). Measured on bench/shapes `early-exit`
 * (24 layers inference leaving after 6, 12, 18 or 24, a round of trials
 * at each change of the step found), seed 1 at 3x at the defaults:
 * acting deep's trial read three weights in place (288 ms against 86 for
 * the same step acting), reading in place's one more (287 against 153)
 * before their points stopped them. A price from grids of another class
 * says little (a GEMM's passes follow its grid): stopped on the
 * signature's price over every grid, `seqlen` (the sequence drawn per
 * step) seed 8 at 3x never timed reading in place, the fastest there (186
 * -> 223 ms a step). Stopping acting deep's trial instead (a form tried)
 * judged it by reads acting deep chosen does not make: on an outside
 * helper's fake clock it lost the mode that won the step (1.13-1.36x the
 * clock). Reading in place's trial is not stopped where acting's step per
 * launch changed over SLOW_SAME times since prices last stopped one (they
 * may be stale), nor are the prices used in the rounds of the retry after
 * TRIAL_RETRY steps, until one reaches its choice (every mode runs until
 * its points say it is behind, and its reads in place price the chunks
 * again). */

/* Launch seq + n, or the last one when that is past it (a policy may name
 * any length). */
static uint64_t later(uint64_t seq, uint64_t n)
{
    return n > UINT64_MAX - seq ? UINT64_MAX : seq + n;
}

/* The device time from mode m's point `from` to its k-th, or negative. */
static double trial_span(const lms_plan *p, const lms_plan_ops *ops, void *ctx, int m, int from, int k)
{
    const int *marks = p->trial_marks[m];
    return from < k && k < p->trial_n[m] && marks[from] && marks[k] ? ops->between(ctx, marks[from], marks[k]) : -1;
}

/* The device time from mode m's first point to its k-th, or negative. */
static double trial_time(const lms_plan *p, const lms_plan_ops *ops, void *ctx, int m, int k)
{
    return trial_span(p, ops, ctx, m, 0, k);
}

/* Mode m's timed step (its whole window), once its window is done and
 * its last point completed; negative before. Kept the first time it is
 * read: points are a ring (ops->mark), and trials held through upsets
 * record more of them, so a mode timed early may find its points
 * recorded over by the choice (trial_decide waited for ever). */
static double step_time(lms_plan *p, const lms_plan_ops *ops, void *ctx, int m)
{
    if (p->trial_ns[m] < 0 && p->trial_done[m])
        p->trial_ns[m] = trial_time(p, ops, ctx, m, TRIAL_POINTS - 1);
    return p->trial_done[m] ? p->trial_ns[m] : -1;
}

/* ---- acting lean ---------------------------------------------------------------
 *
 * Acting fetches ahead before each launch, when the chunks that launch
 * uses cannot be evicted yet, and takes a victim its last launch did not
 * use when one is nearly as good (pick_victim): the fetch starts at once,
 * at the cost of evicting a chunk needed sooner than Belady's victim, so
 * of a fetch more later. Where the link has time to spare that fetch is
 * hidden and starting early is faster; where the link is the step's
 * bottleneck every byte shows in the step's time. So when acting is
 * chosen and its timed step was bound by the link (saturated), the
 * planner acts lean: it fetches ahead after each launch
 * (lms_plan_after), when that launch's chunks are victims too (their
 * evictions wait for its kernel), and passes Belady's victim over only
 * when the launch just made uses it, for one nearly as far (pick_victim). On
 * bench/shapes `train-eval` at 2x and 3x this moves Belady's MIN's bytes
 * (1.118x and 1.127x before) and shortens the step by 7% and 8%.
 *
 * Acting lean is not one of the modes tried: it is chosen from acting's
 * measurements. So it is timed itself once chosen (lean_check): a point
 * at each of the next three step boundaries, the first step letting
 * acting's state settle, the second timed (points taken again from the
 * next boundary when one falls on another stream or a pause comes
 * between them); when that step took more than
 * LEAN_SLACK times acting's timed step, acting lean is dropped for acting
 * until the next trials (bench/shapes `deep` at 3x with lmshim's defaults
 * and --compute-scale 0.3: 71.4 ms a step lean, 41.6 acting). */

/* Records a point of a timed step (like: as lms_plan_ops.mark): after
 * the work of every stream launched on, where the ops can (on one of
 * several busy streams, a point completes when that stream's last kernel
 * did: an outside helper's 24 buffers in a cycle over 8 streams kept
 * fetching every chunk, 695.7 ms where reading them in place takes 576.1,
 * and with these points chose 553.1), else on the launch's stream. */
static int step_mark(const lms_plan_ops *ops, void *ctx, int like)
{
    return (ops->mark_all ? ops->mark_all : ops->mark)(ctx, like);
}

/* The running sums a timed step is measured by (LMS_SUM_*), now. */
static void sums_now(const lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t out[LMS_SUMS])
{
    out[LMS_SUM_MOVED] = ops->moved ? ops->moved(ctx) : 0;
    out[LMS_SUM_HIDDEN] = p->hidden_bytes;
    out[LMS_SUM_ASKED] = p->hides_asked;
    out[LMS_SUM_KNOWN] = p->hides_known;
    out[LMS_SUM_BLOCKS] = p->grid_blocks;
}

/* Whether acting's timed step was bound by the link: the bytes it
 * fetched (ops->moved), at what a fetch was measured to hold a launch per
 * byte, took longer than its kernels could hide (ops->hides, summed over
 * the step, known for at least 9 launches in 10: a launch never timed,
 * as a graph's, hides nothing by that sum) and kept the link busy for at
 * least LEAN_LINK of the step's device time. Then a fetch that waits for its victim's kernel waits for the
 * link anyway, and each byte not moved shortens the step. */
static bool saturated(lms_plan *p, const lms_plan_ops *ops, void *ctx)
{
    double t = step_time(p, ops, ctx, LMS_PLAN_ACT);
    double per = ops->fetch_cost ? ops->fetch_cost(ctx) : -1;
    const uint64_t *sum = p->trial_sums[LMS_PLAN_ACT];
    uint64_t bytes = sum[LMS_SUM_MOVED], hidden = sum[LMS_SUM_HIDDEN];
    bool known = sum[LMS_SUM_ASKED] > 0 && sum[LMS_SUM_KNOWN] >= sum[LMS_SUM_ASKED] - sum[LMS_SUM_ASKED] / 10;
    return p->trial_done[LMS_PLAN_ACT] && ops->moved && known && t > 0 && per > 0 && bytes > hidden &&
           (double)bytes * per >= LEAN_LINK * t;
}

/* At a step boundary after the choice (trials.c, lms_plan_trial_launch):
 * times acting lean's step and drops it when it is slower than acting's
 * timed step (see "Acting lean" above). Records at most three points; a
 * comparison that cannot be read yet is asked again at the next boundary.
 */
static void lean_check(lms_plan *p, const lms_plan_ops *ops, void *ctx)
{
    if (!p->trial_decided || !p->trial_lean || p->lean_checked || !p->lean)
        return;
    if (p->lean_n < 3) {
        int mark = step_mark(ops, ctx, p->trial_first);
        if (mark <= 0) {   /* no point: not timed, kept; another stream: */
            p->lean_checked = mark == 0;
            p->lean_n = 0;   /* the points taken are no longer a step apart: taken again */
            return;
        }
        p->lean_marks[p->lean_n++] = mark;
        if (p->lean_n < 3)
            return;
    }
    double lean = ops->between(ctx, p->lean_marks[1], p->lean_marks[2]);
    double act = step_time(p, ops, ctx, LMS_PLAN_ACT);
    if (lean < 0 || act < 0)
        return;   /* not completed yet */
    p->lean_checked = true;
    if (lean > LEAN_SLACK * act)
        p->lean = p->trial_lean = false;
}

/* ---- steps whose work varies -------------------------------------------------
 *
 * Each mode is timed on one step, another step for each mode. Where the
 * steps do the same work that compares the modes; where a step's work is
 * drawn per step (a sequence length, a batch's tokens: each GEMM re-reads
 * its weight once per tile row of a grid that follows it) a mode timed on
 * a short step wins by its draw. The launch hooks know each launch's
 * blocks (its grid), and the steps' blocks tell how their work differed,
 * but not by how much time: the launches of few blocks (an optimizer's
 * updates, the elementwise kernels) and what a fetch costs do not follow
 * the blocks. Time per block favours the mode timed on the longer step
 * (those costs spread over more blocks), time alone the shorter: a mode
 * replaces the fastest so far only when it is faster by both (faster).
 * Where every window ran the same blocks the two are the same comparison
 * (the bench's shapes of fixed steps chose as before). Where two windows'
 * blocks are over BLOCKS_APART times apart, time alone decides: a drawn
 * length moves a step's blocks by a few times, and blocks further apart
 * come from grids that do not follow the work (an outside helper's grids
 * drawn from 1 to 4096 blocks for the same work, or a cheap launch of
 * 2^31 x 65535 x 65535 blocks, kept acting where reading in place was
 * 1.47x faster; the cap at 3x kept every `seqlen` row the rule moved).
 * Measured on bench/shapes `seqlen` (the sequence of 4-64 tiles drawn
 * per step), seeds 1-30 at 3x: the defaults 1.023 -> 1.019 of the better
 * of `none` and `lru`; choosing by time per block alone chose worse
 * (1.041: the thirtieth round of docs/PERFORMANCE.md), as did timing each
 * mode over 2 or 3 steps (1.030 and 1.101: the longer trials cost more
 * than they chose better over the bench's 30 measured steps). */

/* Whether mode m's timed step (t ns) beats mode b's (bt ns): shorter,
 * and shorter per block of its launches' grids where both windows' blocks
 * are known and within BLOCKS_APART of each other (see "Steps whose work
 * varies" above). */
static bool faster(const lms_plan *p, int m, double t, int b, double bt)
{
    double gm = (double)p->trial_sums[m][LMS_SUM_BLOCKS], gb = (double)p->trial_sums[b][LMS_SUM_BLOCKS];
    bool weigh = gm > 0 && gb > 0 && gm <= BLOCKS_APART * gb && gb <= BLOCKS_APART * gm;
    return t < bt && (!weigh || t * gb < bt * gm);
}

static uint64_t point_offset(const lms_plan *p, int k);

/* Acting's timed step in this round, per launch (ns): its window up to
 * the latest of its points that completed; negative while none did. */
static double act_per_launch(lms_plan *p, const lms_plan_ops *ops, void *ctx)
{
    for (int j = TRIAL_POINTS - 1; j > 0; j--) {
        double t = trial_span(p, ops, ctx, LMS_PLAN_ACT, 0, j);
        uint64_t n = point_offset(p, j);
        if (t >= 0 && n > 0)
            return t / (double)n;
    }
    return -1;
}

/* Remembers, for the rounds of trials that start before TRIAL_RETRY of
 * its steps pass, that mode m was far slower than acting (stopped early),
 * or that acting deep had to fetch every chunk (`deep_all`): see "Slow
 * modes remembered" above. */
static void remember_slow(lms_plan *p, const lms_plan_ops *ops, void *ctx, int m, bool deep_all)
{
    if (deep_all)
        p->slow_deep_all = true;
    else if (m != LMS_PLAN_ACT)
        p->slow_modes |= 1u << m;
    uint64_t P = p->trial_period;
    p->slow_until = later(p->now, P > UINT64_MAX / TRIAL_RETRY ? UINT64_MAX : P * TRIAL_RETRY);
    double a = act_per_launch(p, ops, ctx);
    if (a > 0)
        p->slow_act = a;
}

/* Once acting's timed step of a round is over: the modes remembered slow
 * are skipped in this round, and acting deep fetches every chunk where a
 * round before had to, only while acting's step costs per launch within
 * SLOW_SAME times what it cost when they were found slow; else (other
 * work, other costs) they are forgotten and every mode is tried. */
static void apply_slow(lms_plan *p, const lms_plan_ops *ops, void *ctx)
{
    if (!p->slow_modes && !p->slow_deep_all)
        return;
    double a = act_per_launch(p, ops, ctx);
    if (!(a > 0) || !(p->slow_act > 0))
        return;   /* not known yet: every mode is tried, the memory kept */
    if (a > p->slow_act * SLOW_SAME || a * SLOW_SAME < p->slow_act) {
        p->slow_modes = 0, p->slow_deep_all = false, p->slow_act = 0;
        return;
    }
    p->trial_tried |= p->slow_modes;
    if (p->slow_deep_all)
        p->deep_all = true;
}

/* Chooses once the measurements of every mode that ran a whole step can
 * be read: the fastest of them (acting on ties; faster). */
static void trial_decide(lms_plan *p, const lms_plan_ops *ops, void *ctx)
{
    if (p->trial != TRIAL_CHOSEN || p->trial_decided || p->deep_retry)
        return;
    int best = LMS_PLAN_ACT;
    double best_ns = -1;
    for (int m = 0; m < LMS_PLAN_MODES; m++) {
        if (!p->trial_done[m])
            continue;   /* stopped early, or never ran */
        double t = step_time(p, ops, ctx, m);
        if (t < 0)
            return;   /* not completed yet: act meanwhile */
        if (best_ns < 0 || faster(p, m, t, best, best_ns))
            best = m, best_ns = t;
    }
    if (p->deep_again) {   /* acting deep's step against acting's, complete now (trial_next) */
        p->deep_again = false;
        double b = step_time(p, ops, ctx, LMS_PLAN_DEEP);
        double a = step_time(p, ops, ctx, LMS_PLAN_ACT);
        if (!p->deep_all && p->trial_done[LMS_PLAN_DEEP] && a >= 0 && b > TRIAL_AGAIN * a) {
            p->deep_all = true;
            remember_slow(p, ops, ctx, LMS_PLAN_DEEP, true);
            p->deep_retry = true;   /* tried from the next step's boundary (trial_launch) */
            return;
        }
    }
    p->trial_decided = true;
    p->trial_best = best;
    lms_plan_set_mode(p, best);
    p->trial_lean = best == LMS_PLAN_ACT && saturated(p, ops, ctx);
    p->lean = p->trial_lean;
    p->lean_n = 0;
    p->lean_checked = false;
}

/* Where the k-th point of a window (0..TRIAL_POINTS-1) falls, in launches
 * after its first: k eighths of the step, rounded down, so that the last
 * point ends the window exactly one step after the first whatever the
 * step's length (with P/8 launches between points, a step of 38 launches
 * was timed over 32, each mode over another part of it). */
static uint64_t point_offset(const lms_plan *p, int k)
{
    uint64_t P = p->trial_period, parts = TRIAL_POINTS - 1;
    return P / parts * (uint64_t)k + P % parts * (uint64_t)k / parts;
}

/* Starts a window at launch seq: its first point is the one just
 * recorded; the next falls an eighth of a step later. */
static void window_from(lms_plan *p, uint64_t seq)
{
    p->trial_from = seq;
    p->trial_at = later(seq, point_offset(p, 1));
}

/* Whether mode m, from its point `from` to the latest of its points up to
 * k that completed, has taken more than `factor` times what acting took
 * between the same points, and more than an eighth of acting's step
 * longer (false while none completed, or acting's step was not timed).
 * An eighth alone varies: with kernels of 8 streams side by side, reading
 * in place took 2.3x acting's first eighth (0.73 against 0.32 ms) and was
 * stopped there, where its whole step was half of acting's (an outside
 * helper's `skew`, 1.86x the engine before's step). */
static bool behind(lms_plan *p, const lms_plan_ops *ops, void *ctx, int m, int from, int k, double factor)
{
    double step = step_time(p, ops, ctx, LMS_PLAN_ACT);
    for (int j = k; j > from && m != LMS_PLAN_ACT && p->trial_done[LMS_PLAN_ACT]; j--) {
        double b = trial_span(p, ops, ctx, m, from, j);
        if (b < 0)
            continue;   /* not completed yet */
        double a = trial_span(p, ops, ctx, LMS_PLAN_ACT, from, j);
        return a >= 0 && b > factor * a && b - a > step / (TRIAL_POINTS - 1);
    }
    return false;
}

/* The mode to try after m, whose trial ended at its point k (`stopped`
 * early or not): the next one not tried in this round, but acting deep
 * once more, fetching the chunks used once a step too, when it held such
 * chunks back (read them in place, or fetched them on demand only into
 * free room: fetched ahead by neither) and was stopped early (over
 * TRIAL_ABORT times slower than acting) or took over TRIAL_AGAIN times
 * what acting took over its step (when that step's time is not
 * complete yet, the device running
 * behind the host, it is judged with the choice: trial_decide asks for
 * the retry then, and it runs from the next step's boundary). A chunk re-read by its
 * kernel (a GEMM's weight in inference, once per tile row) costs a pass
 * over the link per read in place, and one timed step cannot tell that
 * from acting deep itself: without a second try, acting (one launch
 * ahead) was kept where acting deep fetching every chunk was faster
 * (bench/shapes decoder at 1.5x: 1.27x against 1.00x in-memory). Not
 * where acting deep was merely a little slower, so that the trials grow by
 * two steps only where the rule cost that much (data-dependent's acting
 * deep, 1.02x acting: trying again moved its choice, 1.18x -> 1.63x
 * in-memory at 2x). */
static int trial_next(lms_plan *p, const lms_plan_ops *ops, void *ctx, int m, int k, bool stopped)
{
    int next = m + 1;
    while (next < LMS_PLAN_MODES && (p->trial_tried >> next & 1u))
        next++;   /* tried in this round already (before acting deep's retry from the choice) */
    if (m != LMS_PLAN_DEEP || p->deep_all || !p->trial_once) {
        if (stopped)
            remember_slow(p, ops, ctx, m, false);
        return next;
    }
    if (!stopped) {
        double b = trial_time(p, ops, ctx, m, k), a = step_time(p, ops, ctx, LMS_PLAN_ACT);
        if (b < 0 || a < 0) {
            p->deep_again = true;   /* not complete yet (the device runs behind): judged with the choice */
            return next;
        }
        if (!(b > TRIAL_AGAIN * a))
            return next;
    }
    p->deep_all = true;
    remember_slow(p, ops, ctx, m, true);
    return m;
}

/* Records the next point of mode m's trial, on the stream of the trials'
 * first point (a reading between points on two streams is no step's
 * time): 1; -1 when this launch is on another stream (the next launch is
 * asked, for up to a point's interval); 0 when it cannot. A window's
 * points fall at its first point's launch plus point_offset(). */
static int trial_point(lms_plan *p, const lms_plan_ops *ops, void *ctx, int m, uint64_t seq)
{
    if (p->trial_n[m] >= TRIAL_POINTS)
        return 0;   /* never past the window's points */
    int mark = step_mark(ops, ctx, p->trial_first);
    if (mark < 0)
        return seq < later(p->trial_at, p->trial_sub) ? -1 : 0;
    if (!mark)
        return 0;
    if (!p->trial_first)
        p->trial_first = mark;
    p->trial_marks[m][p->trial_n[m]++] = mark;
    if (p->trial_n[m] == 1)
        window_from(p, seq);
    else
        p->trial_at = later(p->trial_from, point_offset(p, p->trial_n[m]));
    return 1;
}

/* Ends the trials: acting until the measurements say otherwise. */
static void trial_choose(lms_plan *p, uint64_t seq)
{
    p->trial = TRIAL_CHOSEN;
    p->trial_whole = false;   /* the retry's round is over */
    p->trial_stopped = LMS_PLAN_ACT;
    p->trial_decided = false;
    lms_plan_set_mode(p, LMS_PLAN_ACT);
    p->trial_at = later(seq, p->trial_period);
    p->trial_steps = 0;
}

/* Starts mode m's trial step at this launch, or the choice when m is past
 * the last mode. */
static void trial_start(lms_plan *p, const lms_plan_ops *ops, void *ctx, int m, uint64_t seq, int first_mark)
{
    if (m >= LMS_PLAN_MODES) {
        trial_choose(p, seq);
        return;
    }
    lms_plan_set_mode(p, m);
    p->trial_tried |= 1u << m;
    p->trial_stopped = LMS_PLAN_ACT;
    p->trial_n[m] = 0;
    p->trial_done[m] = false;
    p->trial_once = false;
    p->trial_settling = true;
    if (first_mark) {
        p->trial_marks[m][p->trial_n[m]++] = first_mark;   /* the previous mode's last point */
        window_from(p, seq);
    } else if (trial_point(p, ops, ctx, m, seq) != 1) {
        trial_choose(p, seq);
    }
}

/* Stops mode m's trial early: acting runs the rest of its window, whose
 * last point starts the next mode, so that every mode's windows start at
 * the same place of the step as acting's and its points are compared
 * with acting's over the same launches (a mode started where the one
 * before stopped was compared, launch for launch, with another part of
 * the step: a backward half against a forward one). */
static void trial_stop(lms_plan *p, int m)
{
    lms_plan_set_mode(p, LMS_PLAN_ACT);
    p->trial_stopped = m;
    p->trial_n[m] = TRIAL_POINTS - 1;   /* its next point is its window's last */
    p->trial_at = later(p->trial_from, point_offset(p, TRIAL_POINTS - 1));
}

/* A trial of reading in place about to read in place, at the launch being
 * planned, chunks whose prices on its grid class say that costs `dear`
 * ns more than fetching them (plan.c, trial_dear_ns): stopped as
 * behind() stops it (see "Dear reads known" above) when that alone is
 * more than an eighth of acting's timed step of this round, the margin
 * behind() asks of a point (acting's step not read yet: not stopped).
 * Not for the rest of the round where acting's step costs per launch
 * over SLOW_SAME times more or less than when prices last stopped a
 * trial (p->dear_act): the costs changed, and a price is relearned only
 * where a kernel reads its chunk in place again (an outside helper's
 * fake clock, reading in place 5,000 -> 10 ns and the step 20 -> 56
 * launches: reading in place found after 268 steps of the new costs
 * without this, 4 with it). */
void lms_plan_trial_dear(lms_plan *p, const lms_plan_ops *ops, void *ctx, double dear)
{
    if (p->trial != TRIAL_RUNNING || p->trial_whole || p->trial_stopped != LMS_PLAN_ACT || p->mode != LMS_PLAN_INPLACE)
        return;
    double act = step_time(p, ops, ctx, LMS_PLAN_ACT);
    if (p->dear_held || !(act > 0) || dear <= act / (TRIAL_POINTS - 1))
        return;
    double a = act_per_launch(p, ops, ctx);
    if (p->dear_act > 0 && a > 0 && (a > p->dear_act * SLOW_SAME || a * SLOW_SAME < p->dear_act)) {
        p->dear_held = true;   /* the costs changed since prices last stopped a trial: they may be stale */
        p->dear_act = 0;
        return;
    }
    if (a > 0)
        p->dear_act = a;
    trial_stop(p, LMS_PLAN_INPLACE);
}

/* The step the trials time: the planner's step length; for a step
 * shorter than TRIAL_MIN launches confirmed by repetition without a break
 * for SHORT_HOLD launches (a program of a few kernels a step), the fewest
 * whole steps that reach TRIAL_MIN, so that every mode's window times the
 * same launches. A short period held for less (a few launches of a longer
 * step that repeat: layers in a PyTorch step's first pass, bench/shapes
 * `pytorch`) is none (0): timing those chose for the step from them.
 * *timed_short: the short step timed, else 0. */
static uint64_t trial_length(lms_plan *p, uint64_t seq, bool *confirmed, uint64_t *timed_short)
{
    uint64_t len = lms_plan_step_length(p, confirmed);
    *timed_short = 0;
    if (len && len < TRIAL_MIN) {
        uint64_t step = p->policy->step ? p->policy->step(p->pstate) : 0;
        if (step != len || step != p->short_step)
            p->short_step = step == len ? step : 0, p->short_since = seq;
        *confirmed = p->short_step && seq - p->short_since >= SHORT_HOLD;
        *timed_short = *confirmed ? len : 0;
        return *confirmed ? len * ((TRIAL_MIN + len - 1) / len) : 0;
    }
    p->short_step = 0;
    return len;
}

/* ---- trials through an upset ---------------------------------------------------
 *
 * A learned step may hold a few launches in an order of their own (data
 * decides them: an upset): the policy's confidence falls there and its
 * period jumps to chance distances and back. Trials cut at each such
 * launch and started over from acting never reached reading in place
 * where a step of 240 launches had 40 random ones every third step
 * (tests/sim/mixed_parts `upset3`, 1.59x the better of `none` and `lru`
 * at the defaults, the step run acting and fetching every chunk). So a trial
 * a disturbance cuts is held (trial_held: the mode under way), the modes
 * timed before it kept; once the period the trials time is back, the held
 * mode starts a new window there (settling first, as every mode's), or,
 * when another period came, the trials start over. A mode stopped early
 * (behind) was held while acting ran its window's rest: the mode after it
 * runs then. A disturbance that comes back a whole number of steps after
 * the one before (within an eighth of the trials' period) is part of
 * the work: the trials, and the choice after them, go on through it. An
 * upset in every step held the trials for ever; one every sixth step of
 * 40 identical launches (a layer repeated) held them to windows clear of
 * it, and the choice, paused to acting at each upset and back, ran
 * 1.21x the step of the engine that never chose (an outside helper's
 * `layers6_u1`). */

/* Whether a disturbance (confidence lost, or the period drifting) at seq
 * came a whole number of steps after the one before (within an eighth of
 * a step) and is younger than a step (a period that keeps drifting is
 * no upset): records its first launch. */
static bool upset_in_step(lms_plan *p, uint64_t seq)
{
    if (!p->in_upset) {
        p->upset_gap = p->upset_at ? seq - p->upset_at : 0;
        p->upset_at = seq;
        p->in_upset = true;
    }
    uint64_t P = p->trial_period, g = p->upset_gap, r = P ? g % P : 0;
    return P && g && g + P / 8 >= P && (r <= P / 8 || P - r <= P / 8) && seq - p->upset_at < P;
}

/* Once no disturbance holds the trials (at a launch whose period is
 * `period`): starts the held mode's window again (true), or, under
 * another period, stops the trials so that they start over. */
static bool trial_resume(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t seq, uint64_t period)
{
    int m = p->trial_held - 1;
    p->trial_held = 0;
    if (p->trial != TRIAL_RUNNING)
        return false;
    if (period != p->trial_period) {
        p->trial = TRIAL_OFF;
        return false;
    }
    if (p->trial_stopped != LMS_PLAN_ACT) {   /* held while acting ran a stopped mode's window out */
        m = trial_next(p, ops, ctx, p->trial_stopped, p->trial_n[p->trial_stopped] - 1, true);
        p->trial_stopped = LMS_PLAN_ACT;
    }
    trial_start(p, ops, ctx, m, seq, 0);
    return true;
}

/* At each launch: runs the trials' stages at their points. O(1) but for
 * a switch into or out of the LRU order; one point recorded per eighth of
 * a step while trying, none otherwise. */
void lms_plan_trial_launch(lms_plan *p, const lms_plan_ops *ops, void *ctx, uint64_t seq)
{
    if (!ops->mark || !ops->between || !p->policy->period)
        return;
    /* The step confirmed by repetition, when the policy has one: a period
     * inside a step (a repeated training iteration) would time windows
     * that start at different places of the step. */
    bool confirmed;
    uint64_t timed_short;
    uint64_t period = trial_length(p, seq, &confirmed, &timed_short);
    /* A period not confirmed that replaced another within the last period
     * (a step that grows by a few launches every step: bench/shapes
     * `growing`) gives windows that time different work in each mode:
     * nothing is timed until it holds for a whole period. The first one
     * long enough to time is timed at once. Trials that timed a confirmed
     * step hold through it, as through any period not confirmed: a step
     * that varies (an extra kernel one step in three, a block gained every
     * other step) is confirmed between its changes, and trials cut at each
     * change never completed (acting throughout, where reading in place
     * was 3x cheaper: tests/unit/breakers_ctx). */
    if (!confirmed && period >= TRIAL_MIN && period != p->held_period) {
        p->held_since = p->held_period ? seq : 0;
        p->held_period = period;
    }
    /* The period back to the one the trials time is not a drift: a few
     * launches in a random order (upset) set it to a chance distance
     * and back, and each return held the trials off for a whole period.
     * Nor is twice it: the launches a step after an upset find random
     * ones a step back and match those two steps back, and the choice
     * made, paused for them, fetched on demand (tests/unit/timed_steps
     * `upset_every_fourth`: 18 fetches in the steps clear of upsets at
     * the end, none now). */
    bool back = p->trial != TRIAL_OFF && p->trial_period && (period == p->trial_period || period == 2 * p->trial_period);
    bool drifting = !confirmed && p->held_since && seq - p->held_since < period && !back &&
                    !(p->trial != TRIAL_OFF && p->trial_confirmed);   /* trials on a confirmed step hold */
    bool lost = period < TRIAL_MIN || drifting;
    if (!lost) {
        p->in_upset = false;
    } else if (p->trial != TRIAL_OFF && p->trial_period && upset_in_step(p, seq)) {
        period = p->trial_period;   /* part of the step: the trials and the choice go on through it */
        confirmed = p->trial_confirmed;
        lost = false;
    }
    if (lost) {   /* nothing learned, confidence lost, or drifting: the policy's own rules */
        if (p->trial == TRIAL_RUNNING && !p->trial_held)
            p->trial_held = 1 + (p->trial_stopped != LMS_PLAN_ACT ? p->trial_stopped : p->mode);   /* "trials through an upset" */
        if (p->mode != LMS_PLAN_ACT)
            lms_plan_set_mode(p, LMS_PLAN_ACT);
        p->lean = false;   /* the policy's own rules (a choice of acting lean comes back with the choice) */
        p->trial_paused = p->trial == TRIAL_CHOSEN;
        p->lean_n = 0;   /* acting lean's points, if any, would span the pause: taken again */
        return;
    }
    if (p->trial_paused) {   /* confidence back: the choice made holds again */
        p->trial_paused = false;
        if (p->trial_decided) {
            lms_plan_set_mode(p, p->trial_best);
            p->lean = p->trial_lean;
            p->trial_at = later(seq, p->trial_period);   /* step boundaries from here (lean_check's points) */
        }
    }
    /* A different step: try again. Trials that timed the policy's period
     * start again once a step is confirmed, or when the period changes by
     * more than 2x; trials that timed a confirmed step hold until their
     * retry (a step whose length varies, a data-dependent kernel, would
     * otherwise restart them for ever), unless a step more than 2x longer
     * is confirmed: the one confirmed first was a repeated part of it (a
     * layer), and what was fastest over a part need not be over the step
     * (bench/shapes `pytorch` at 2x: a layer of 672 launches confirmed
     * before its step of 10,088 chose reading in place, 2.9x the step of
     * acting deep chosen over the whole step). */
    bool longer = p->trial_period <= UINT64_MAX / 2 && period > 2 * p->trial_period;
    bool shorter = period <= UINT64_MAX / 2 && 2 * period < p->trial_period;
    bool lengthens = p->trial_confirmed && confirmed && longer;
    if (lengthens && p->trial_longer) {
        /* Once the trials moved to a longer step, a still longer one
         * moves them again only once it held a whole step more: a step
         * whose length varies (an extra kernel one step in three) repeats
         * by chance over two steps, later over four, ...; each move ran
         * a round of trials over windows twice as long (on a fake clock,
         * 1.48x the step of holding: tests/unit/breakers_ctx). */
        if (p->longer_period != period)
            p->longer_period = period, p->longer_since = seq;
        lengthens = seq - p->longer_since >= period;
    } else if (!lengthens) {
        p->longer_period = 0;
    }
    bool differs = p->trial_confirmed ? lengthens : (confirmed ? period != p->trial_period : longer || shorter);
    /* A short step other than the one timed, or one after a step of
     * TRIAL_MIN+ (or the other way): other work (a loop of 3 launches
     * after a step of 18 that chose reading in place, then resumed that
     * choice until the retry: 7.4x acting, an outside tester's program). */
    differs |= timed_short != p->trial_short;
    if (p->trial != TRIAL_OFF && differs)
        p->trial = TRIAL_OFF;
    if (p->trial_held && trial_resume(p, ops, ctx, seq, period))
        return;
    if (p->trial == TRIAL_OFF) {
        p->trial_held = 0;
        p->trial_longer = lengthens;
        p->longer_period = 0;
        p->trial_period = period;
        p->trial_confirmed = confirmed;
        p->trial_short = timed_short;
        p->trial_sub = period / (TRIAL_POINTS - 1);
        for (int m = 0; m < LMS_PLAN_MODES; m++)
            p->trial_n[m] = 0, p->trial_done[m] = false;
        p->trial = TRIAL_RUNNING;
        p->trial_first = 0;
        if (p->now >= p->slow_until || lengthens)   /* a longer step: the slow ones timed a part of it */
            p->slow_modes = 0, p->slow_deep_all = false, p->slow_act = 0;
        p->deep_all = false;   /* acting deep tries reading the chunks used once a step in place first */
        p->deep_again = p->deep_retry = false;
        p->trial_tried = 0;   /* ... the slow ones are skipped from acting's step on (apply_slow) */
        p->dear_held = false;
        trial_start(p, ops, ctx, LMS_PLAN_ACT, seq, 0);
        return;
    }
    if (seq < p->trial_at) {
        if (p->trial == TRIAL_CHOSEN && !p->trial_decided && seq % 64 == 0)
            trial_decide(p, ops, ctx);
        return;
    }
    if (p->trial == TRIAL_CHOSEN) {
        trial_decide(p, ops, ctx);
        if (p->deep_retry) {   /* the choice asked for acting deep fetching all: from this boundary */
            p->deep_retry = false;
            p->trial = TRIAL_RUNNING;
            trial_start(p, ops, ctx, LMS_PLAN_DEEP, seq, 0);
            return;
        }
        lean_check(p, ops, ctx);
        p->trial_at = later(seq, p->trial_period);
        if (++p->trial_steps >= TRIAL_RETRY) {
            p->trial = TRIAL_OFF;   /* the next launch starts the trials again, */
            p->slow_until = 0;      /* ... every mode, */
            p->trial_whole = true;  /* ... each until its points say it is behind */
        }
        return;
    }
    int m = p->trial_stopped != LMS_PLAN_ACT ? p->trial_stopped : p->mode;
    int r = trial_point(p, ops, ctx, m, seq);
    if (r < 0)
        return;   /* a launch on another stream: the point waits for one on the trials' */
    if (r == 0) {
        trial_choose(p, seq);
        return;
    }
    for (int d = 0; d < LMS_PLAN_MODES; d++)
        step_time(p, ops, ctx, d);   /* kept while their points are (step_time) */
    int k = p->trial_n[m] - 1;
    if (p->trial_stopped != LMS_PLAN_ACT) {   /* the stopped mode's window ended, acting */
        trial_start(p, ops, ctx, trial_next(p, ops, ctx, m, k, true), seq, p->trial_marks[m][k]);
        return;
    }
    /* Compared at the latest of its points that completed: the point just
     * recorded has not while the device runs behind the host (at most
     * eight readings per point). Acting deep tried again is compared from
     * its second point while it settles: it starts with nothing fetched
     * ahead (trial_next), and the first launches' fetches on demand cost
     * the decoder shape at 1.5x 2.6x what acting took to the first point,
     * then less than acting per point. */
    int from = m == LMS_PLAN_DEEP && p->deep_all && p->trial_settling ? 1 : 0;
    if (behind(p, ops, ctx, m, from, k, TRIAL_ABORT)) {   /* far slower already: on to the next mode */
        if (k == TRIAL_POINTS - 1)
            trial_start(p, ops, ctx, trial_next(p, ops, ctx, m, k, true), seq, p->trial_marks[m][k]);
        else
            trial_stop(p, m);   /* acting to its window's end first */
        return;
    }
    if (p->trial_n[m] == TRIAL_POINTS && p->trial_settling) {
        /* The step that left the previous mode's state behind is over:
         * the next one is measured. */
        p->trial_settling = false;
        p->trial_marks[m][0] = p->trial_marks[m][k];
        p->trial_n[m] = 1;
        window_from(p, seq);
        sums_now(p, ops, ctx, p->sums_from);
    } else if (p->trial_n[m] == TRIAL_POINTS) {
        p->trial_done[m] = true;
        p->trial_ns[m] = -1;   /* read once its last point completed (step_time) */
        if (m == LMS_PLAN_ACT)
            apply_slow(p, ops, ctx);
        uint64_t now[LMS_SUMS];
        sums_now(p, ops, ctx, now);
        for (int i = 0; i < LMS_SUMS; i++)
            p->trial_sums[m][i] = now[i] - p->sums_from[i];
        trial_start(p, ops, ctx, trial_next(p, ops, ctx, m, k, false), seq, p->trial_marks[m][k]);
    }
    if (p->trial == TRIAL_CHOSEN)
        trial_decide(p, ops, ctx);
}
