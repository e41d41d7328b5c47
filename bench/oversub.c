/*
 * oversub.c — the oversubscription benchmark: a synthetic training step
 * (L layers forward, then backward, then an update) whose working set is a
 * chosen multiple of the device budget, run in every mode side by side:
 *
 *   in-memory        all buffers in device memory on a device large enough
 *   plain-um         all buffers managed, no advice: the driver's faults
 *   zero-copy        all buffers pinned host memory, read over the link
 *   lmshim-<policy>  cudaMalloc under lmshim with each residency policy
 *
 * Each mode runs in its own process over the simulated GPU; the table gives
 * the modeled step time (after the warm-up steps, in which lmshim learns
 * the step and times its choices), its ratio to
 * in-memory, faults, migrated and remote bytes per step; the SVG chart
 * plots throughput relative to in-memory against the oversubscription
 * ratio. Compute time per step defaults to the time to move the step's
 * working set over the link once (--compute-scale 1).
 *
 * usage: oversub [--ratios 0.5,1,1.5,2,3] [--budget-mib 1024] [--steps 13] [--warmup 10]
 *                [--layers 8] [--compute-scale 1] [--frac 0.5] [--svg out.svg]
 *                [--trace out.jsonl]
 *        oversub --worker ...   (one mode in this process; used by the above)
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chart.h"
#include "simgpu.h"
#include "worker.h"

#define MiB (1ull << 20)
#define LINK_BYTES_PER_NS 55.0   /* the simulator's default link */

/* ---- the worker: one mode in this process --------------------------------- */

typedef struct step_args {
    double compute_ns_per_byte;
} step_args;

/* layer(outs..., ins..., nin, nout, compute/byte): reads ins, writes outs. */
static void layer_kernel(simgpu_launch *l, void **p)
{
    int nin = *(int *)p[0], nout = *(int *)p[1];
    size_t bytes = *(size_t *)p[2];
    double per_byte = *(double *)p[3];
    for (int i = 0; i < nin; i++)
        l->access(l, *(uint64_t *)p[4 + i], bytes, SIMGPU_READ);
    for (int i = 0; i < nout; i++) {
        uint64_t out = *(uint64_t *)p[4 + nin + i];
        l->access(l, out, bytes, SIMGPU_WRITE);
        *(float *)(uintptr_t)out += 1.0f;   /* real work, small: the bytes are the model's */
    }
    l->compute(l, per_byte * (double)bytes * (nin + nout));
}

typedef struct worker_opts {
    double ratio;
    size_t budget_mib;
    int layers, steps, warmup;   /* the first `warmup` steps are not measured (0: all but the last 3) */
    double compute_scale;
    const char *alloc;   /* device, managed, host */
    const char *frac;    /* LMS_FRAC of the lmshim modes */
} worker_opts;

/* Allocates one buffer the way the mode asks. */
static cudaError_t alloc_buffer(const char *how, size_t bytes, void **out)
{
    if (strcmp(how, "managed") == 0)
        return cudaMallocManaged(out, bytes, cudaMemAttachGlobal);
    if (strcmp(how, "host") == 0) {
        void *h;
        cudaError_t e = cudaHostAlloc(&h, bytes, cudaHostAllocMapped);
        return e != cudaSuccess ? e : cudaHostGetDevicePointer(out, h, 0);
    }
    return cudaMalloc(out, bytes);
}

/* Launches one layer kernel touching `in` and `out` buffers. */
static int launch(void **ins, int nin, void **outs, int nout, size_t bytes, double per_byte)
{
    void *slots[12] = {0};
    void *args[12];
    int n = 0;
    args[n++] = &nin;
    args[n++] = &nout;
    args[n++] = &bytes;
    args[n++] = &per_byte;
    for (int i = 0; i < nin; i++) {
        slots[i] = ins[i];
        args[n++] = &slots[i];
    }
    for (int i = 0; i < nout; i++) {
        slots[nin + i] = outs[i];
        args[n++] = &slots[nin + i];
    }
    while (n < 12) {                 /* unused pointer parameters are NULL */
        args[n] = &slots[n - 4 < 12 ? n - 4 : 0];
        n++;
    }
    dim3 grid = {256, 1, 1}, block = {256, 1, 1};
    return cudaLaunchKernel((const void *)layer_kernel, grid, block, args, 0, NULL);
}

static int worker(const worker_opts *o)
{
    simgpu_kernel k = {"layer", layer_kernel, 12, {4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8}};
    if (simgpu_register_kernel(&k) != 0) {
        fprintf(stderr, "oversub: needs the simulated GPU\n");
        return 1;
    }
    int L = o->layers;
    int nbuf = 4 * L + 2;
    size_t s = (size_t)(o->ratio * (double)(o->budget_mib * MiB) / nbuf);
    s = s / (2 * MiB) * (2 * MiB);   /* whole 2 MiB pages, never above the ratio */
    if (s == 0)
        s = 2 * MiB;
    /* W[L], dW[L], A[L+1], G[L+1] */
    void **W = calloc((size_t)nbuf, sizeof(void *)), **dW = W + L, **A = dW + L, **G = A + L + 1;
    for (int i = 0; i < nbuf; i++)
        if (alloc_buffer(o->alloc, s, &W[i]) != 0) {
            printf("RESULT oom=1\n");
            return 0;
        }
    /* Compute per byte touched so that a step computes for (working set / link). */
    double touched = 10.0 * (double)s * L;
    double per_byte = o->compute_scale * ((double)nbuf * (double)s / LINK_BYTES_PER_NS) / touched;
    simgpu_counters c0 = {0}, c1 = {0}, first = {0};
    double t_first = 0;
    for (int step = 0; step < o->steps; step++) {
        for (int i = 1; i <= L; i++) {                       /* forward */
            void *in[] = {W[i - 1], A[i - 1]}, *out[] = {A[i]};
            if (launch(in, 2, out, 1, s, per_byte))
                return 1;
        }
        for (int i = L; i >= 1; i--) {                       /* backward */
            void *in[] = {W[i - 1], A[i - 1], G[i]}, *out[] = {G[i - 1], dW[i - 1]};
            if (launch(in, 3, out, 2, s, per_byte))
                return 1;
        }
        for (int i = 0; i < L; i++) {                        /* update */
            void *in[] = {dW[i]}, *out[] = {W[i]};
            if (launch(in, 1, out, 1, s, per_byte))
                return 1;
        }
        if (cudaDeviceSynchronize() != cudaSuccess)
            return 1;
        if (step == 0) {
            simgpu_get_counters(-1, &first);
            t_first = first.modeled_ns;
        }
        if (step == o->warmup - 1)
            simgpu_get_counters(-1, &c0);
    }
    simgpu_get_counters(-1, &c1);
    int n = o->steps - o->warmup;
    printf("RESULT oom=0 chunk_mib=%llu first_ms=%.3f step_ms=%.3f faults=%.1f to_device_mib=%.1f "
           "to_host_mib=%.1f remote_mib=%.1f\n",
           (unsigned long long)(s / MiB), t_first / 1e6, (c1.modeled_ns - c0.modeled_ns) / 1e6 / n,
           (double)(c1.faults - c0.faults) / n, (double)(c1.bytes_to_device - c0.bytes_to_device) / MiB / n,
           (double)(c1.bytes_to_host - c0.bytes_to_host) / MiB / n,
           (double)(c1.remote_bytes - c0.remote_bytes) / MiB / n);
    for (int i = 0; i < nbuf; i++)
        if (strcmp(o->alloc, "host") != 0)
            cudaFree(W[i]);
    free(W);
    return 0;
}

/* ---- the driver: every mode at every ratio -------------------------------- */

typedef struct mode {
    const char *name;
    const char *alloc;
    const char *policy;     /* NULL: no lmshim */
    bool large_device;      /* the in-memory reference */
} mode;

static const mode modes[] = {
    {"in-memory", "device", NULL, true},
    {"plain-um", "managed", NULL, false},
    {"zero-copy", "host", NULL, false},
    {"lmshim-none", "device", "none", false},
    {"lmshim-lru", "device", "lru", false},
    {"lmshim-lookahead", "device", "lookahead", false},
};
#define NMODES (int)(sizeof modes / sizeof modes[0])

typedef struct result {
    bool ok, oom;
    double step_ms, first_ms, faults, to_device, to_host, remote;
} result;

/* Runs one mode at one ratio in a child process and parses its RESULT line. */
static result run_mode(const char *self, const mode *m, double ratio, const worker_opts *o,
                       const char *trace)
{
    result r = {0};
    worker_paths p;
    worker_paths_of(self, &p);
    char mem[32], ratio_s[32], budget_s[32], layers_s[16], steps_s[16], warm_s[16], scale_s[32];
    snprintf(mem, sizeof mem, "%zuM", m->large_device ? o->budget_mib * 16 : o->budget_mib);
    snprintf(ratio_s, sizeof ratio_s, "%g", ratio);
    snprintf(budget_s, sizeof budget_s, "%zu", o->budget_mib);
    snprintf(layers_s, sizeof layers_s, "%d", o->layers);
    snprintf(steps_s, sizeof steps_s, "%d", o->steps);
    snprintf(warm_s, sizeof warm_s, "%d", o->warmup);
    snprintf(scale_s, sizeof scale_s, "%g", o->compute_scale);
    worker_env env[8] = {{"LD_LIBRARY_PATH", p.sim}, {"SIMGPU_MEM", mem}, {"LD_PRELOAD", NULL}};
    size_t nenv = 3;
    if (m->policy) {
        env[nenv++] = (worker_env){"LD_PRELOAD", p.shim};
        env[nenv++] = (worker_env){"LMS_POLICY", m->policy};
        env[nenv++] = (worker_env){"LMS_FRAC", o->frac};
        env[nenv++] = (worker_env){"LMS_THRESHOLD", "1M"};
        if (trace)
            env[nenv++] = (worker_env){"LMS_TRACE", trace};
    }
    char *argv[] = {(char *)self, "--worker", "--ratio", ratio_s, "--budget-mib", budget_s, "--layers", layers_s,
                    "--steps", steps_s, "--warmup", warm_s, "--compute-scale", scale_s, "--alloc", (char *)m->alloc, NULL};
    char buf[1024];
    if (!worker_run(argv, env, nenv, buf, sizeof buf))
        return r;
    char *line = strstr(buf, "RESULT ");
    if (!line)
        return r;
    int oom = 0;
    size_t chunk;
    if (sscanf(line, "RESULT oom=%d chunk_mib=%zu first_ms=%lf step_ms=%lf faults=%lf to_device_mib=%lf "
                     "to_host_mib=%lf remote_mib=%lf",
               &oom, &chunk, &r.first_ms, &r.step_ms, &r.faults, &r.to_device, &r.to_host, &r.remote) >= 1) {
        r.ok = true;
        r.oom = oom != 0;
    }
    return r;
}

int main(int argc, char **argv)
{
    worker_opts o = {.ratio = 2, .budget_mib = 1024, .layers = 8, .steps = 13, .warmup = 0, .compute_scale = 1,
                     .alloc = "device", .frac = "0.5"};
    bool is_worker = false;
    const char *svg = NULL, *trace = NULL, *ratios_s = "0.5,1,1.5,2,3";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--worker") == 0) {
            is_worker = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "oversub: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--ratio") == 0) o.ratio = atof(v);
        else if (strcmp(a, "--ratios") == 0) ratios_s = v;
        else if (strcmp(a, "--budget-mib") == 0) o.budget_mib = (size_t)atoll(v);
        else if (strcmp(a, "--layers") == 0) o.layers = atoi(v);
        else if (strcmp(a, "--steps") == 0) o.steps = atoi(v);
        else if (strcmp(a, "--warmup") == 0) o.warmup = atoi(v);
        else if (strcmp(a, "--compute-scale") == 0) o.compute_scale = atof(v);
        else if (strcmp(a, "--alloc") == 0) o.alloc = v;
        else if (strcmp(a, "--frac") == 0) o.frac = v;
        else if (strcmp(a, "--svg") == 0) svg = v;
        else if (strcmp(a, "--trace") == 0) trace = v;
        else {
            fprintf(stderr, "oversub: unknown flag %s\n", a);
            return 2;
        }
    }
    if (o.warmup == 0)   /* not given: all but the last 3 steps, at least 1 */
        o.warmup = o.steps > 4 ? o.steps - 3 : 1;
    if (o.layers < 1 || o.layers > 64 || o.steps < 2 || o.warmup < 1 || o.warmup >= o.steps || o.budget_mib < 64 ||
        !(o.ratio > 0)) {
        fprintf(stderr, "oversub: bad sizes (layers 1-64, steps >= 2, 1 <= warmup < steps, budget >= 64 MiB)\n");
        return 2;
    }
    if (is_worker)
        return worker(&o);

    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return 1;
    self[sl] = 0;
    double ratios[16];
    int nr = worker_parse_ratios(ratios_s, ratios, 16);
    if (nr == 0) {
        fprintf(stderr, "oversub: bad --ratios\n");
        return 2;
    }
    static result res[16][NMODES];
    printf("oversub: %d layers, budget %zu MiB, %d steps (the first %d are warm-up), compute = %g x link time "
           "of the working set\n",
           o.layers, o.budget_mib, o.steps, o.warmup, o.compute_scale);
    printf("%-6s %-17s %10s %8s %9s %12s %12s %11s\n", "ratio", "mode", "step_ms", "vs_mem", "faults",
           "to_dev_MiB", "to_host_MiB", "remote_MiB");
    for (int i = 0; i < nr; i++) {
        for (int m = 0; m < NMODES; m++) {
            bool traced = trace && modes[m].policy && strcmp(modes[m].policy, "lookahead") == 0 && i == nr - 1;
            res[i][m] = run_mode(self, &modes[m], ratios[i], &o, traced ? trace : NULL);
            const result *r = &res[i][m];
            if (!r->ok || r->oom) {
                printf("%-6g %-17s %10s\n", ratios[i], modes[m].name, r->oom ? "OOM" : "failed");
                continue;
            }
            double mem = res[i][0].ok && !res[i][0].oom ? res[i][0].step_ms : 0;
            printf("%-6g %-17s %10.3f %8.3f %9.1f %12.1f %12.1f %11.1f\n", ratios[i], modes[m].name,
                   r->step_ms, mem > 0 ? r->step_ms / mem : 0, r->faults, r->to_device, r->to_host, r->remote);
        }
    }
    if (svg) {
        chart_series series[NMODES];
        double xs[NMODES][16], ys[NMODES][16];
        for (int m = 0; m < NMODES; m++) {
            int k = 0;
            for (int i = 0; i < nr; i++) {
                const result *r = &res[i][m], *mem = &res[i][0];
                if (r->ok && !r->oom && mem->ok && r->step_ms > 0) {
                    xs[m][k] = ratios[i];
                    ys[m][k] = mem->step_ms / r->step_ms;
                    k++;
                }
            }
            series[m] = (chart_series){modes[m].name, xs[m], ys[m], k};
        }
        if (chart_write_svg(svg, "Throughput relative to in-memory (simulated GPU)",
                            "working set / device budget", "throughput / in-memory", series, NMODES) != 0) {
            fprintf(stderr, "oversub: cannot write %s: %s\n", svg, strerror(errno));
            return 1;
        }
        printf("chart: %s\n", svg);
    }
    return 0;
}
