/*
 * shapes.c — the workload-shape benchmark: every shape of workloads.c at
 * every oversubscription ratio, in every mode side by side:
 *
 *   in-memory         all buffers in device memory on a device large enough
 *   plain-um          all buffers managed, no advice: the driver's faults
 *   zero-copy         all buffers pinned host memory, read over the link
 *   lmshim-<policy>   cudaMalloc under lmshim, LMS_FRAC=0.5, LMS_THRESHOLD=1M
 *   lmshim-defaults   cudaMalloc under lmshim with no setting but the budget
 *
 * Each mode runs in its own process over the simulated GPU, whose device
 * is the budget (lmshim modes: twice the budget, with LMS_LIMIT = the
 * budget, so that the peak shows any excess) and whose L2 is scaled to
 * the device as an H100's is to its memory (50 MiB per 80 GiB). The
 * working set is ratio x budget (1 GiB), except for the shapes of fixed
 * size (many-chunks, arenas: 17.6 GiB), whose budget is their size /
 * ratio. Per step after the warm-up (the steps in which lmshim learns
 * the step and times its choices: 12 of 18 by default, all but the last 6
 * of --steps, at least 1; a shape that sets its own step count keeps at
 * least its last step measured): modeled step
 * time, its ratio to in-memory, to the better of lmshim-none and
 * lmshim-lru at the same settings, and bytes moved.
 *
 * usage: shapes [--quick] [--shapes a,b] [--ratios 0.5,1,1.5,2,3] [--seeds 3] [--seed 1]
 *               (the seeded shapes run seeds --seed .. --seed + --seeds - 1)
 *               [--budget-mib 1024] [--steps 18] [--warmup 12] [--compute-scale 1] [--l2-mib M]
 *               [--frac F]   (LMS_FRAC of the -dflt and defaults modes; else lmshim's default)
 *               [--trace-dir D]   (lmshim-lookahead writes its trace there: the bytes against MIN)
 *               [--per-step]   (every mode's every step on stderr: "step LABEL RATIO MODE STEP ms
 *                               to_dev to_host remote launches measured", MiB; measured 1 after the warm-up)
 *        shapes --worker ...   (one mode of one shape in this process)
 */
#include <cuda_runtime_api.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simgpu.h"
#include "units.h"
#include "worker.h"
#include "workloads.h"

#define MiB (1ull << 20)
#define LINK_BYTES_PER_NS 55.0   /* the simulator's default link */
#define L2_PER_DEVICE_MIB (50.0 / 81920.0)

typedef struct opts {
    const char *shape, *alloc, *shapes, *ratios;
    const char *frac;           /* LMS_FRAC of the modes at the default settings (NULL: lmshim's default) */
    const char *trace_dir;      /* lmshim-lookahead's traces go here (NULL: none) */
    const char *step_label;     /* a worker prints each step's counters on stderr under it (NULL: not) */
    double ratio, scale, l2_mib;
    size_t budget_mib;
    int steps, warmup, seeds;   /* steps run, the first `warmup` not measured (0: all but the last 6) */
    unsigned seed;
    bool quick;
    bool per_step;              /* the driver asks its workers for each step's counters (--per-step) */
} opts;

/* ---- the worker: one mode of one shape ----------------------------------- */

static const wl_shape *find_shape(const char *name)
{
    for (int i = 0; i < wl_nshapes; i++)
        if (strcmp(wl_shapes[i].name, name) == 0)
            return &wl_shapes[i];
    return NULL;
}

/* Prints on stderr what step s (measured or not) added to the device's
 * counters since *before, under `label`, and moves *before on. */
static void step_line(const char *label, int s, bool measured, simgpu_counters *before)
{
    simgpu_counters now;
    simgpu_get_counters(-1, &now);
    fprintf(stderr, "step %s %d %.4f %.1f %.1f %.1f %llu %d\n", label, s, (now.modeled_ns - before->modeled_ns) / 1e6,
            (double)(now.bytes_to_device - before->bytes_to_device) / MiB,
            (double)(now.bytes_to_host - before->bytes_to_host) / MiB,
            (double)(now.remote_bytes - before->remote_bytes) / MiB,
            (unsigned long long)(now.launches - before->launches), measured);
    *before = now;
}

static int worker(const opts *o)
{
    const wl_shape *sh = find_shape(o->shape);
    if (!sh || wl_register_kernels() != 0) {
        fprintf(stderr, "shapes: no shape %s, or no simulated GPU\n", o->shape);
        return 1;
    }
    wl_ctx c = {.alloc = o->alloc, .ratio = o->ratio, .seed = o->seed, .quick = o->quick};
    c.working_set = sh->fixed_bytes ? sh->fixed_bytes : (uint64_t)(o->ratio * (double)(o->budget_mib * MiB));
    if (sh->setup(&c) != 0) {
        printf("RESULT ok=0 error=%d\n", c.error);
        return 0;
    }
    int steps = sh->steps ? sh->steps : o->steps;
    int warmup = o->warmup < steps ? o->warmup : steps - 1;   /* steps not measured */
    c.counting = true;                       /* calibrate compute on the last step */
    sh->step(&c, steps - 1);
    c.counting = false;
    c.ns_per_unit = c.units > 0 ? o->scale * ((double)c.working_set / LINK_BYTES_PER_NS) / c.units : 0;
    simgpu_counters c0 = {0}, c1 = {0}, before = {0};
    if (o->step_label)
        simgpu_get_counters(-1, &before);
    for (int s = 0; s < steps; s++) {
        if (sh->step(&c, s) != 0 || cudaDeviceSynchronize() != cudaSuccess) {
            printf("RESULT ok=0 error=%d\n", c.error);
            return 0;
        }
        if (s == warmup - 1)
            simgpu_get_counters(-1, &c0);
        if (o->step_label)
            step_line(o->step_label, s, s >= warmup, &before);
    }
    simgpu_get_counters(-1, &c1);
    double n = steps - warmup;
    printf("RESULT ok=1 step_ms=%.4f to_dev=%.1f to_host=%.1f remote=%.1f faults=%.1f peak=%.1f launches=%.0f "
           "ws=%.1f warm_launches=%llu\n",
           (c1.modeled_ns - c0.modeled_ns) / 1e6 / n, (double)(c1.bytes_to_device - c0.bytes_to_device) / MiB / n,
           (double)(c1.bytes_to_host - c0.bytes_to_host) / MiB / n,
           (double)(c1.remote_bytes - c0.remote_bytes) / MiB / n, (double)(c1.faults - c0.faults) / n,
           (double)c1.peak_device_bytes / MiB, (double)(c1.launches - c0.launches) / n,
           (double)c.allocated / MiB, (unsigned long long)c0.launches);
    return 0;
}

/* ---- the driver ------------------------------------------------------------ */

typedef struct mode {
    const char *name, *alloc;
    const char *policy;   /* NULL: no lmshim; "": lmshim at its defaults */
    bool defaults;        /* the policy at lmshim's default settings (else LMS_FRAC=0.5 LMS_THRESHOLD=1M) */
} mode;

static const mode modes[] = {
    {"in-memory", "device", NULL, false},          {"plain-um", "managed", NULL, false},
    {"zero-copy", "host", NULL, false},            {"lmshim-none", "device", "none", false},
    {"lmshim-lru", "device", "lru", false},        {"lmshim-lookahead", "device", "lookahead", false},
    {"lmshim-none-dflt", "device", "none", true},  {"lmshim-lru-dflt", "device", "lru", true},
    {"lmshim-defaults", "device", "", true},
};
enum { M_MEM, M_UM, M_ZC, M_NONE, M_LRU, M_LOOK, M_NONE_DEF, M_LRU_DEF, M_DEF, NMODES };

typedef struct result {
    bool ok;
    double step_ms, to_dev, to_host, remote, faults, peak, launches, ws, warm_launches;
} result;

/* The trace file of lmshim-lookahead for a shape, ratio and seed, under dir. */
static void trace_path(char *out, size_t n, const char *dir, const char *shape, double ratio, unsigned seed)
{
    snprintf(out, n, "%s/%s-%g-%u.jsonl", dir, shape, ratio, seed);
}

/* Runs one mode in a child process with its environment; parses RESULT.
 * With --per-step, the child prints its steps on stderr under the row's
 * label (`row_label`, the caller's), the ratio and the mode's name. */
static result run_mode(const char *self, const mode *m, const opts *o, double ratio, size_t budget_mib,
                       const char *shape, unsigned seed, const char *row_label)
{
    result r = {0};
    worker_paths p;
    worker_paths_of(self, &p);
    char mem[32], l2[32], limit[32], ratio_s[32], budget_s[32], steps_s[16], warm_s[16], scale_s[32], seed_s[16];
    char trace[PATH_MAX];
    size_t dev_mib = m->policy ? 2 * budget_mib : m == &modes[M_MEM] ? 16 * budget_mib : budget_mib;
    snprintf(mem, sizeof mem, "%zuM", dev_mib);
    snprintf(l2, sizeof l2, "%g", o->l2_mib >= 0 ? o->l2_mib : (double)budget_mib * L2_PER_DEVICE_MIB);
    snprintf(limit, sizeof limit, "%zuM", budget_mib);
    snprintf(ratio_s, sizeof ratio_s, "%g", ratio);
    snprintf(budget_s, sizeof budget_s, "%zu", budget_mib);
    snprintf(steps_s, sizeof steps_s, "%d", o->steps);
    snprintf(warm_s, sizeof warm_s, "%d", o->warmup);
    snprintf(scale_s, sizeof scale_s, "%g", o->scale);
    snprintf(seed_s, sizeof seed_s, "%u", seed);
    worker_env env[24] = {
        {"LD_LIBRARY_PATH", p.sim}, {"SIMGPU_MEM", mem}, {"SIMGPU_L2_MIB", l2},
        {"LD_PRELOAD", NULL}, {"LMS_POLICY", NULL}, {"LMS_FRAC", NULL}, {"LMS_THRESHOLD", NULL},
        {"LMS_LIMIT", NULL}, {"LMS_TRACE", NULL}, {"LMS_MODE", NULL}, {"LMS_DISABLE", NULL},
    };
    size_t nenv = 11;
    if (m->policy) {
        env[nenv++] = (worker_env){"LD_PRELOAD", p.shim};
        env[nenv++] = (worker_env){"LMS_LIMIT", limit};
        if (*m->policy)
            env[nenv++] = (worker_env){"LMS_POLICY", m->policy};
        if (!m->defaults) {
            env[nenv++] = (worker_env){"LMS_FRAC", "0.5"};
            env[nenv++] = (worker_env){"LMS_THRESHOLD", "1M"};
        } else if (o->frac) {
            env[nenv++] = (worker_env){"LMS_FRAC", o->frac};
        }
        if (o->trace_dir && m == &modes[M_LOOK]) {
            trace_path(trace, sizeof trace, o->trace_dir, shape, ratio, seed);
            env[nenv++] = (worker_env){"LMS_TRACE", trace};
        }
    }
    char label[160];   /* the row's label, its ratio and the mode: what each step line starts with */
    snprintf(label, sizeof label, "%s %g %s", row_label, ratio, m->name);
    char *argv[24] = {(char *)self, "--worker", "--shape", (char *)shape, "--ratio", ratio_s, "--budget-mib",
                      budget_s, "--steps", steps_s, "--warmup", warm_s, "--compute-scale", scale_s, "--seed", seed_s, "--alloc",
                      (char *)m->alloc};
    int na = 18;
    if (o->quick)
        argv[na++] = "--quick";
    if (o->per_step) {
        argv[na++] = "--step-label";
        argv[na++] = label;
    }
    argv[na] = NULL;
    char buf[1024];
    bool exited_ok = worker_run(argv, env, nenv, buf, sizeof buf);
    char *line = strstr(buf, "RESULT ok=1 ");
    if (line && exited_ok &&
        sscanf(line, "RESULT ok=1 step_ms=%lf to_dev=%lf to_host=%lf remote=%lf faults=%lf peak=%lf launches=%lf "
                     "ws=%lf warm_launches=%lf",
               &r.step_ms, &r.to_dev, &r.to_host, &r.remote, &r.faults, &r.peak, &r.launches, &r.ws,
               &r.warm_launches) == 9)
        r.ok = true;
    return r;
}

/* True when `name` is in the comma-separated list (or there is none). */
static bool listed(const char *list, const char *name)
{
    if (!list)
        return true;
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
            return true;
    return false;
}

/* Whether shape sh runs: in the list, or no list given and sh not one
 * that runs only where named (sh->named). */
static bool chosen(const char *list, const wl_shape *sh)
{
    return sh->named ? list && listed(list, sh->name) : listed(list, sh->name);
}

#define MAX_RATIOS 8

typedef struct row {
    char label[48];
    const char *shape;
    unsigned seed;
    int measured;             /* steps measured */
    double ratio;
    size_t budget_mib;
    result r[NMODES];
} row;

static double moved(const result *r)
{
    return r->to_dev + r->to_host + r->remote;
}

/* vs the better of none and lru at the same settings (0 when unknown). */
static double vs_best(const row *w, int m)
{
    bool dflt = modes[m].defaults;
    const result *a = &w->r[dflt ? M_NONE_DEF : M_NONE], *b = &w->r[dflt ? M_LRU_DEF : M_LRU];
    double best = a->ok && b->ok ? (a->step_ms < b->step_ms ? a->step_ms : b->step_ms) : a->ok ? a->step_ms : b->step_ms;
    return w->r[m].ok && best > 0 ? w->r[m].step_ms / best : 0;
}

/* The summary: one line per shape and ratio. */
static void summary(const row *rows, int nrows)
{
    printf("\nsummary: step time / in-memory per mode; lookahead and defaults / best of none,lru at the same "
           "settings; MiB moved per step\n");
    printf("%-17s %5s %9s | %6s %6s %6s %6s %6s %6s %6s %6s | %5s %5s | %8s %8s %8s %8s\n", "shape", "ratio",
           "mem_ms", "um", "zc", "none", "lru", "look", "none9", "lru9", "dflt", "look", "dflt", "none", "lru",
           "look", "dflt");
    for (int i = 0; i < nrows; i++) {
        const row *w = &rows[i];
        double mem = w->r[M_MEM].ok ? w->r[M_MEM].step_ms : 0;
        printf("%-17s %5g %9.2f |", w->label, w->ratio, mem);
        for (int m = M_UM; m < NMODES; m++)
            if (w->r[m].ok && mem > 0)
                printf(" %6.2f", w->r[m].step_ms / mem);
            else
                printf(" %6s", "fail");
        printf(" | %5.2f %5.2f |", vs_best(w, M_LOOK), vs_best(w, M_DEF));
        for (int m = M_NONE; m < NMODES; m++)
            if (m != M_NONE_DEF && m != M_LRU_DEF)
                printf(" %8.0f", w->r[m].ok ? moved(&w->r[m]) : -1.0);
        printf("\n");
    }
}

/* The totals: per shape (its seeds together) and ratio, the defaults'
 * step over the better of none and lru at the same settings (mean, worst,
 * rows over the 1.02 bar) and its step over in-memory (summed, the sum
 * the docs compare across changes); then the same over every row. Each
 * line starts "total" (no shape's name: scripts that read the summary's
 * rows by shape pass them by). */
static void totals(const row *rows, int nrows)
{
    printf("\ntotals: defaults / best of none,lru at the same settings (mean, worst, rows over 1.02); "
           "defaults / in-memory summed\n");
    printf("total %-17s %5s %5s | %6s %6s %5s | %9s\n", "shape", "ratio", "rows", "mean", "worst", "over", "sum");
    int all = 0, all_over = 0;
    double all_vs = 0, all_sum = 0;
    for (int i = 0; i < nrows; i++) {
        bool first = true;   /* the first row of its shape and ratio: it prints their line */
        for (int j = 0; j < i && first; j++)
            first = !(rows[j].shape == rows[i].shape && rows[j].ratio == rows[i].ratio);
        if (!first)
            continue;
        int n = 0, over = 0;
        double vs = 0, worst = 0, sum = 0;
        for (int j = i; j < nrows; j++) {
            const row *w = &rows[j];
            double v = vs_best(w, M_DEF), mem = w->r[M_MEM].ok ? w->r[M_MEM].step_ms : 0;
            if (w->shape != rows[i].shape || w->ratio != rows[i].ratio || v <= 0 || mem <= 0)
                continue;
            n++;
            vs += v;
            over += v > 1.02;
            worst = v > worst ? v : worst;
            sum += w->r[M_DEF].step_ms / mem;
        }
        if (n == 0)
            continue;
        printf("total %-17s %5g %5d | %6.3f %6.3f %5d | %9.2f\n", rows[i].shape, rows[i].ratio, n, vs / n, worst, over, sum);
        all += n, all_over += over, all_vs += vs, all_sum += sum;
    }
    if (all > 0)
        printf("total %-17s %5s %5d | %6.3f %6s %5d | %9.2f\n", "all", "", all, all_vs / all, "", all_over, all_sum);
}

/* With --trace-dir: where each row's lmshim-lookahead trace is, the
 * launches of its warm-up (what `lmshim replay --skip` leaves out), its
 * measured steps and the MiB a measured step moved to the device and read
 * over the link (to compare with the replay's optima). */
static void traces(const row *rows, int nrows, const char *dir)
{
    printf("\ntraces: lmshim-lookahead; replay with --skip warm_launches, per step = MiB / measured\n");
    for (int i = 0; i < nrows; i++) {
        const result *r = &rows[i].r[M_LOOK];
        if (!r->ok)
            continue;
        char path[PATH_MAX];
        trace_path(path, sizeof path, dir, rows[i].shape, rows[i].ratio, rows[i].seed);
        printf("trace %s %g %s warm_launches=%.0f measured=%d live_mib=%.1f\n", rows[i].label, rows[i].ratio, path,
               r->warm_launches, rows[i].measured, r->to_dev + r->remote);
    }
}

int main(int argc, char **argv)
{
    opts o = {.shape = "", .alloc = "device", .ratios = "0.5,1,1.5,2,3", .ratio = 1, .scale = 1, .l2_mib = -1,
              .budget_mib = 1024, .steps = 18, .warmup = 0, .seeds = 3, .seed = 1};
    bool is_worker = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--worker") == 0) {
            is_worker = true;
            continue;
        }
        if (strcmp(a, "--quick") == 0) {
            o.quick = true;
            continue;
        }
        if (strcmp(a, "--per-step") == 0) {
            o.per_step = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "shapes: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--shape") == 0) o.shape = v;
        else if (strcmp(a, "--shapes") == 0) o.shapes = v;
        else if (strcmp(a, "--ratio") == 0) o.ratio = atof(v);
        else if (strcmp(a, "--ratios") == 0) o.ratios = v;
        else if (strcmp(a, "--budget-mib") == 0) o.budget_mib = (size_t)atoll(v);
        else if (strcmp(a, "--steps") == 0) o.steps = atoi(v);
        else if (strcmp(a, "--warmup") == 0) o.warmup = atoi(v);
        else if (strcmp(a, "--seeds") == 0) o.seeds = atoi(v);
        else if (strcmp(a, "--seed") == 0) o.seed = (unsigned)atoi(v);
        else if (strcmp(a, "--compute-scale") == 0) o.scale = atof(v);
        else if (strcmp(a, "--l2-mib") == 0) o.l2_mib = atof(v);
        else if (strcmp(a, "--alloc") == 0) o.alloc = v;
        else if (strcmp(a, "--frac") == 0) o.frac = v;
        else if (strcmp(a, "--trace-dir") == 0) o.trace_dir = v;
        else if (strcmp(a, "--step-label") == 0) o.step_label = v;
        else {
            fprintf(stderr, "shapes: unknown flag %s\n", a);
            return 2;
        }
    }
    if (o.warmup == 0)   /* not given: all but the last 6 steps, at least 1 */
        o.warmup = o.steps > 7 ? o.steps - 6 : 1;
    /* lmshim's own grammar for LMS_FRAC (digits, one point, at most 1): the
     * workers get this text, and lmshim keeps its default for any other. */
    double frac;
    if (o.frac && (!lms_parse_decimal(o.frac, &frac) || frac > 1)) {
        fprintf(stderr, "shapes: --frac takes a fraction from 0 to 1 as LMS_FRAC does (digits, at most one point: 0.5)\n");
        return 2;
    }
    if (o.steps < 2 || o.warmup < 1 || o.warmup >= o.steps || o.budget_mib < 64 || !(o.ratio > 0) || o.seeds < 1 || !(o.scale > 0)) {
        fprintf(stderr, "shapes: bad sizes (steps >= 2, 1 <= warmup < steps, budget >= 64 MiB, seeds >= 1)\n");
        return 2;
    }
    if (is_worker)
        return worker(&o);
    if (o.step_label) {
        fprintf(stderr, "shapes: --step-label is what the bench passes its workers; --per-step asks for the steps\n");
        return 2;
    }
    if (o.quick && o.seeds == 3)
        o.seeds = 1;

    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return 1;
    self[sl] = 0;
    double ratios[MAX_RATIOS];
    int nr = worker_parse_ratios(o.ratios, ratios, MAX_RATIOS);
    if (nr == 0) {
        fprintf(stderr, "shapes: bad --ratios\n");
        return 2;
    }
    /* One row per listed shape, seed and ratio, all kept for the summary
     * (owned here, freed at the end). */
    size_t want = 0;
    for (int s = 0; s < wl_nshapes; s++)
        if (chosen(o.shapes, &wl_shapes[s]))
            want += (size_t)(wl_shapes[s].seeded ? o.seeds : 1) * (size_t)nr;
    row *rows = calloc(want ? want : 1, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "shapes: no memory for %zu rows\n", want);
        return 1;
    }
    int nrows = 0;
    printf("shapes: budget %zu MiB (fixed-size shapes: their size / ratio), %d steps (the first %d a warm-up), "
           "compute = %g x link time of the working set%s%s%s\n",
           o.budget_mib, o.steps, o.warmup, o.scale, o.quick ? ", quick" : "",
           o.frac ? "; the default settings with LMS_FRAC=" : "", o.frac ? o.frac : "");
    for (int s = 0; s < wl_nshapes; s++)
        if (chosen(o.shapes, &wl_shapes[s]))
            printf("  %-15s %s\n", wl_shapes[s].name, wl_shapes[s].what);
    printf("%-17s %5s %-17s %9s %6s %6s %9s %9s %9s %9s %8s %8s\n", "shape", "ratio", "mode", "step_ms", "vs_mem",
           "vs_best", "to_dev", "to_host", "remote", "faults", "peakMiB", "budget");
    for (int s = 0; s < wl_nshapes; s++) {
        const wl_shape *sh = &wl_shapes[s];
        if (!chosen(o.shapes, sh))
            continue;
        unsigned first = sh->seeded ? o.seed : 1;
        for (unsigned seed = first; seed - first < (unsigned)(sh->seeded ? o.seeds : 1); seed++)
            for (int i = 0; i < nr; i++) {
                row *w = &rows[nrows++];
                if (sh->seeded)
                    snprintf(w->label, sizeof w->label, "%s/%u", sh->name, seed);
                else
                    snprintf(w->label, sizeof w->label, "%s", sh->name);
                w->ratio = ratios[i];
                w->shape = sh->name;
                w->seed = seed;
                int steps = sh->steps ? sh->steps : o.steps;
                w->measured = steps - (o.warmup < steps ? o.warmup : steps - 1);
                w->budget_mib = sh->fixed_bytes ? (size_t)((double)sh->fixed_bytes / MiB / ratios[i])
                                                : o.budget_mib;
                for (int m = 0; m < NMODES; m++)
                    w->r[m] = run_mode(self, &modes[m], &o, ratios[i], w->budget_mib, sh->name, seed, w->label);
                for (int m = 0; m < NMODES; m++) {
                    const result *r = &w->r[m];
                    if (!r->ok) {
                        printf("%-17s %5g %-17s %9s\n", w->label, w->ratio, modes[m].name, "failed");
                        continue;
                    }
                    double mem = w->r[M_MEM].ok ? w->r[M_MEM].step_ms : 0;
                    printf("%-17s %5g %-17s %9.3f %6.3f %6.3f %9.1f %9.1f %9.1f %9.1f %8.0f %8zu\n", w->label,
                           w->ratio, modes[m].name, r->step_ms, mem > 0 ? r->step_ms / mem : 0,
                           m >= M_NONE ? vs_best(w, m) : 0, r->to_dev, r->to_host, r->remote, r->faults, r->peak,
                           w->budget_mib);
                }
                fflush(stdout);
            }
    }
    summary(rows, nrows);
    totals(rows, nrows);
    if (o.trace_dir)
        traces(rows, nrows, o.trace_dir);
    free(rows);
    return 0;
}
