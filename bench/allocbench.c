/*
 * allocbench.c — what lmshim's hooks cost on the no-pressure path.
 *
 * One process loads the simulated driver (libcuda.so.1) and liblmshim.so
 * side by side, without LD_PRELOAD: the driver's own entry points are the
 * bare calls, the library's exported ones are the hooks. For each case it
 * times the same loop through both, interleaved over several rounds, and
 * prints the medians, their ratio and the nanoseconds the hooks add (in
 * the thread's CPU time). It runs itself again for two more rows: with a
 * trace and stacks on, and as the only member of a group (LMS_GROUP).
 *
 * The last row runs the 4 KiB pair from Python (libpython loaded at run
 * time), ten Python frames deep, with Python frames in the trace off and
 * on: the difference is what recording the Python stack costs.
 *
 * The eviction rows run in child processes with a budget that holds half
 * of N managed chunks, launching a kernel on chunk (i mod N): under lru
 * every launch fetches one chunk and evicts another (lookahead keeps some
 * chunks, as Belady's rule would, and evicts on most launches). The
 * kernel reads its chunk 32 times, so that reading it in place would cost
 * 32 link passes and the timed steps keep fetching (with a kernel that
 * touched nothing, reading in place cost nothing and was kept: no
 * eviction was left to measure). The
 * added time is the residency engine's decisions plus the driver calls it
 * makes (prefetches, events), with N = 10 and N = 10,000 live chunks.
 *
 * "launch, 64 chunks" passes 64 resident managed chunks to one launch (more
 * than a launch token holds inline).
 *
 * The graph rows run in a child process. "graph launch, untracked" launches
 * a one-node graph over device memory only, after 768 executable graphs
 * over a managed chunk were made and kept and 4,096 more made and
 * destroyed: the cost of finding that lmshim holds nothing for it in a
 * table full of live and removed entries. "graph launch, 1 chunk" launches
 * one of the kept graphs (the residency engine's launch, a hold on its
 * chunk until an event behind it completes). "node update, N nodes" sets
 * the parameters of the last kernel node of an executable graph of N
 * kernel nodes (cuGraphExecKernelNodeSetParams), alternating between two
 * managed chunks: the cost must not grow with N.
 *
 * usage: allocbench [rounds [iterations]]   (LD_LIBRARY_PATH must hold build/sim)
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdbool.h>
#include <unistd.h>

#include "simgpu.h"
#include "worker.h"

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*attr_fn)(void *, CUpointer_attribute, CUdeviceptr);
typedef CUresult (*info_fn)(size_t *, size_t *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

typedef struct api {
    alloc_fn alloc;
    free_fn free;
    attr_fn attr;
    info_fn info;
    launch_fn launch;
} api;

/* The body of the benchmark kernels: does nothing. */
static void empty_kernel(simgpu_launch *l, void **p)
{
    (void)l;
    (void)p;
}

#define EVICT_CHUNK (64 << 10)   /* bytes of each chunk of the eviction rows */

/* The body of the eviction rows' kernel: reads the chunk of its first
 * parameter 32 times (a GEMM's operand, re-read per tile: reading it in
 * place would cost a link pass per read, so fetching is what pays, as on
 * the workloads the eviction path serves). */
static void touch_kernel(simgpu_launch *l, void **p)
{
    l->access_passes(l, *(const CUdeviceptr *)p[0], EVICT_CHUNK, SIMGPU_READ, 32);
}

static CUfunction kernel, kernel_touch;
static void *kernel_args[10];
static CUdeviceptr kernel_ptrs[10];

/* The wide launch: 32 parameters of 16 bytes, each two pointers, so one
 * launch passes WIDE_CHUNKS managed chunks. */
#define WIDE_PARAMS 32
#define WIDE_CHUNKS (2 * WIDE_PARAMS)
static CUfunction kernel_wide;
static void *wide_args[WIDE_PARAMS];
static CUdeviceptr wide_ptrs[WIDE_CHUNKS];


/* CPU time of this thread, ns: on a shared machine, time-slicing by other
 * processes does not count (on an idle one it equals wall time here). */
static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Resolves the four entry points from a library handle. */
static int load(void *h, api *a)
{
    a->alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    a->free = (free_fn)dlsym(h, "cuMemFree_v2");
    a->attr = (attr_fn)dlsym(h, "cuPointerGetAttribute");
    a->info = (info_fn)dlsym(h, "cuMemGetInfo_v2");
    a->launch = (launch_fn)dlsym(h, "cuLaunchKernel");
    return a->alloc && a->free && a->attr && a->info && a->launch ? 0 : -1;
}

enum { CASE_PAIR_4K, CASE_PAIR_48K, CASE_QUERY, CASE_INFO, CASE_LAUNCH_FAST, CASE_LAUNCH_SCAN, CASE_LAUNCH_WIDE,
       CASES };
static const char *const case_names[CASES] = {"alloc+free 4 KiB", "alloc+free 48 KiB", "pointer query",
                                              "cuMemGetInfo", "launch, no managed", "launch, 10-param scan",
                                              "launch, 64 chunks"};

/* ns per operation of one case through one API; -1 on a CUDA error. */
static double run(const api *a, int which, long iters, CUdeviceptr probe)
{
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        CUdeviceptr p;
        int managed;
        size_t f, t;
        switch (which) {
        case CASE_PAIR_4K:
        case CASE_PAIR_48K:
            if (a->alloc(&p, which == CASE_PAIR_4K ? 4096 : 49152) != CUDA_SUCCESS || a->free(p) != CUDA_SUCCESS)
                return -1;
            break;
        case CASE_QUERY:
            if (a->attr(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, probe) != CUDA_SUCCESS)
                return -1;
            break;
        case CASE_INFO:
            if (a->info(&f, &t) != CUDA_SUCCESS)
                return -1;
            break;
        case CASE_LAUNCH_WIDE:
            if (a->launch(kernel_wide, 1, 1, 1, 32, 1, 1, 0, NULL, wide_args, NULL) != CUDA_SUCCESS)
                return -1;
            break;
        default:
            if (a->launch(kernel, 1, 1, 1, 32, 1, 1, 0, NULL, kernel_args, NULL) != CUDA_SUCCESS)
                return -1;
            break;
        }
    }
    return (now_ns() - t0) / (double)iters;
}

/* ns per launch over `iters` launches, each on chunk (start + i) mod n;
 * -1 on a CUDA error. */
static double run_evict(const api *a, const CUdeviceptr *chunks, long n, long start, long iters)
{
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        for (int k = 0; k < 10; k++)
            kernel_ptrs[k] = chunks[(start + i) % n];
        if (a->launch(kernel_touch, 1, 1, 1, 32, 1, 1, 0, NULL, kernel_args, NULL) != CUDA_SUCCESS)
            return -1;
    }
    return (now_ns() - t0) / (double)iters;
}

typedef CUresult (*instantiate_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*exec_destroy_fn)(CUgraphExec);
typedef CUresult (*node_set_fn)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v2 *);

/* The graph entry points of one library (the driver's, or the hooks). */
typedef struct graph_api {
    instantiate_fn instantiate;
    graph_launch_fn launch;
    exec_destroy_fn destroy;
    node_set_fn node_set;
} graph_api;

/* Resolves the graph entry points from a library handle. */
static int load_graph(void *h, graph_api *g)
{
    g->instantiate = (instantiate_fn)dlsym(h, "cuGraphInstantiateWithFlags");
    g->launch = (graph_launch_fn)dlsym(h, "cuGraphLaunch");
    g->destroy = (exec_destroy_fn)dlsym(h, "cuGraphExecDestroy");
    g->node_set = (node_set_fn)dlsym(h, "cuGraphExecKernelNodeSetParams_v2");
    return g->instantiate && g->launch && g->destroy && g->node_set ? 0 : -1;
}

/* ns per graph launch of e over `iters` launches; -1 on a CUDA error. */
static double run_graph_launch(const graph_api *g, CUgraphExec e, long iters)
{
    double t0 = now_ns();
    for (long i = 0; i < iters; i++)
        if (g->launch(e, NULL) != CUDA_SUCCESS)
            return -1;
    return (now_ns() - t0) / (double)iters;
}

/* ns per update of node n of e over `iters` updates, alternating between
 * the parameters p[0] and p[1]; -1 on a CUDA error. */
static double run_node_set(const graph_api *g, CUgraphExec e, CUgraphNode n,
                           const CUDA_KERNEL_NODE_PARAMS_v2 p[2], long iters)
{
    double t0 = now_ns();
    for (long i = 0; i < iters; i++)
        if (g->node_set(e, n, &p[i & 1]) != CUDA_SUCCESS)
            return -1;
    return (now_ns() - t0) / (double)iters;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Prints one row: the medians of the bare and hooked times of `rounds`
 * rounds (both arrays sorted in place), their ratio and the difference. */
static void row(const char *name, double *bare, double *hooked, int rounds)
{
    qsort(bare, (size_t)rounds, sizeof(double), cmp);
    qsort(hooked, (size_t)rounds, sizeof(double), cmp);
    double b = bare[rounds / 2], h = hooked[rounds / 2];
    printf("%-20s %10.1f %10.1f %8.3f %12.1f\n", name, b, h, h / b, h - b);
}

/* Runs this program again as `self rounds iters args...` (at most 3 args;
 * the shim's options are read once per process) with the n changes of env;
 * out NULL: the child prints its own row, else its output lands in out
 * (the caller's, size bytes). True when the child exited with status 0. */
static bool rerun(int rounds, long iters, const char *const args[3], const worker_env *env, size_t n, char *out,
                  size_t size)
{
    char self[4096], r[16], it[32];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return false;
    self[len] = 0;
    snprintf(r, sizeof r, "%d", rounds);
    snprintf(it, sizeof it, "%ld", iters);
    char *argv[] = {self, r, it, (char *)args[0], (char *)args[1], (char *)args[2], NULL};
    return worker_run(argv, env, n, out, size);
}

/* Runs `self rounds iters mode arg arg2` and lets the child print its row. */
static void child_run(int rounds, long iters, const char *mode, const char *arg, const char *arg2)
{
    rerun(rounds, iters, (const char *[3]){mode, arg, arg2}, NULL, 0, NULL, 0);
}

/* Runs this program again with extra options: `mode` "--traced" (a trace
 * and 16-frame stacks) or "--grouped" (a member of a group of its own); it
 * prints its alloc+free row. */
static void variant_run(int rounds, long iters, const char *mode)
{
    char group[64], dir[] = "/tmp/allocbench-XXXXXX";
    bool grouped = strcmp(mode, "--grouped") == 0;
    if (grouped && !mkdtemp(dir))
        return;
    snprintf(group, sizeof group, "allocbench-%d", (int)getpid());
    worker_env env[2] = {{"LMS_TRACE", "/dev/null"}, {"LMS_STACKS", "16"}};
    if (grouped) {
        env[0] = (worker_env){"LMS_GROUP", group};
        env[1] = (worker_env){"LMS_GROUP_DIR", dir};
    }
    rerun(rounds, iters, (const char *[3]){mode}, env, 2, NULL, 0);
    if (grouped) {
        char path[128];
        snprintf(path, sizeof path, "%s/lmshim-group-%s", dir, group);
        unlink(path);
        rmdir(dir);
    }
}

/* The script of the Python rows: alloc+free pairs through the hooks via
 * ctypes.PyDLL (the GIL held, as a framework's allocation holds it), ten
 * Python frames deep; prints the least ns per pair over the rounds (the
 * least is what the machine's load disturbs least). */
static const char py_script[] =
    "import ctypes, os, time\n"
    "lib = ctypes.PyDLL(os.environ['ALLOCBENCH_SHIM'])\n"
    "alloc, free = lib.cuMemAlloc_v2, lib.cuMemFree_v2\n"
    "alloc.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]\n"
    "free.argtypes = [ctypes.c_uint64]\n"
    "p = ctypes.c_uint64()\n"
    "ref = ctypes.byref(p)\n"
    "def loop(n):\n"
    "    t = time.perf_counter_ns()\n"
    "    for _ in range(n):\n"
    "        if alloc(ref, 4096) or free(p.value): raise SystemExit('a CUDA call failed')\n"
    "    return (time.perf_counter_ns() - t) / n\n"
    "def deep(k, n):\n"
    "    return deep(k - 1, n) if k else loop(n)\n"
    "rounds, iters = int(os.environ['ALLOCBENCH_ROUNDS']), int(os.environ['ALLOCBENCH_ITERS'])\n"
    "t = min(deep(10, iters) for _ in range(rounds))\n"
    "print(t, flush=True)\n";

static void *libpython;   /* loaded first in a --python child, before any hook runs */

/* Loads libpython (3.13 down to 3.8) into the global scope, where lmshim
 * finds it; NULL if there is none. */
static void *load_python(void)
{
    void *py = NULL;
    char name[64];
    for (int minor = 13; minor >= 8 && !py; minor--) {
        snprintf(name, sizeof name, "libpython3.%d.so.1.0", minor);
        py = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    }
    return py;
}

/* In a child started with --python: runs py_script in libpython and
 * prints its number; 1 when there is no Python. */
static int python_child(void)
{
    void (*init)(int) = libpython ? (void (*)(int))dlsym(libpython, "Py_InitializeEx") : NULL;
    int (*run_string)(const char *) = libpython ? (int (*)(const char *))dlsym(libpython, "PyRun_SimpleString") : NULL;
    if (!init || !run_string)
        return 1;
    init(0);
    fflush(stdout);
    return run_string(py_script) != 0;
}

/* The Python rows: ns per alloc+free pair from ten Python frames deep,
 * traced with 16-frame native stacks, Python frames off and on (two
 * children: options are read once per process). */
static void python_rows(int rounds, long iters, const char *shim_path)
{
    char r[16], n[32];
    snprintf(r, sizeof r, "%d", rounds * 3);
    snprintf(n, sizeof n, "%ld", iters / 8);
    double ns[2] = {-1, -1};
    for (int on = 0; on < 2; on++) {
        worker_env env[] = {{"LMS_TRACE", "/dev/null"}, {"LMS_STACKS", "16"}, {"LMS_PY_STACKS", on ? "1" : "0"},
                            {"ALLOCBENCH_SHIM", shim_path}, {"ALLOCBENCH_ROUNDS", r}, {"ALLOCBENCH_ITERS", n}};
        char out[64];
        if (rerun(1, 1, (const char *[3]){"--python"}, env, sizeof env / sizeof env[0], out, sizeof out) && out[0])
            ns[on] = atof(out);
    }
    if (ns[0] < 0 || ns[1] < 0) {
        printf("%-20s (no libpython3.8-3.13 to load)\n", "alloc+free, Python");
        return;
    }
    printf("%-20s %10.1f %10.1f %8.3f %12.1f\n", "alloc+free, Python", ns[0], ns[1], ns[1] / ns[0], ns[1] - ns[0]);
}

#define GRAPHS_KEPT 768      /* executable graphs over a managed chunk kept live */
#define GRAPHS_CHURNED 4096  /* and made and destroyed before the timed launches */

/* A kernel node's parameters: empty10 over the 10 pointers at args. */
static CUDA_KERNEL_NODE_PARAMS_v2 node_params(void **args)
{
    return (CUDA_KERNEL_NODE_PARAMS_v2){.func = kernel, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                        .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1,
                                        .kernelParams = args};
}

/* The graph rows (a child of main: lmshim's graph table starts empty).
 * Graphs are built with the driver's calls and instantiated through the
 * hooks, so lmshim holds what each one reads; the timed calls go through
 * both, interleaved. 0 on success. */
static int graph_rows(void *drv, const api *hooked, int rounds, long iters)
{
    graph_api bare_g, hook_g;
    CUresult (*create)(CUgraph *, unsigned) = (CUresult(*)(CUgraph *, unsigned))dlsym(drv, "cuGraphCreate");
    CUresult (*add)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS_v2 *) =
        (CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS_v2 *))
            dlsym(drv, "cuGraphAddKernelNode_v2");
    void *shim = dlopen(getenv("LMSHIM_LIBRARY") ? getenv("LMSHIM_LIBRARY") : "liblmshim.so",
                        RTLD_NOW | RTLD_LOCAL);
    if (!create || !add || !shim || load_graph(drv, &bare_g) || load_graph(shim, &hook_g))
        return 1;
    /* Two managed chunks (2 MiB, past LMS_THRESHOLD=1M) and the parameter
     * blocks naming them; kernel_args names device memory only. */
    static CUdeviceptr managed[2][10];
    static void *margs[2][10];
    for (int c = 0; c < 2; c++) {
        CUdeviceptr m;
        if (hooked->alloc(&m, 2 << 20) != CUDA_SUCCESS)
            return 1;
        for (int k = 0; k < 10; k++) {
            managed[c][k] = m;
            margs[c][k] = &managed[c][k];
        }
    }
    CUDA_KERNEL_NODE_PARAMS_v2 on[2] = {node_params(margs[0]), node_params(margs[1])};
    CUDA_KERNEL_NODE_PARAMS_v2 off = node_params(kernel_args);
    CUgraph tracked, untracked;
    CUgraphNode nt, nu;
    if (create(&tracked, 0) || add(&nt, tracked, NULL, 0, &on[0]) || create(&untracked, 0) ||
        add(&nu, untracked, NULL, 0, &off))
        return 1;
    static CUgraphExec kept[GRAPHS_KEPT];
    for (int i = 0; i < GRAPHS_KEPT; i++)
        if (hook_g.instantiate(&kept[i], tracked, 0))
            return 1;
    /* Each at a new address, as in a program whose heap moves on between
     * graphs: after each destroy four blocks of every small size class are
     * taken and held, so the allocator cannot hand the freed handle's
     * address out again (without them the same few addresses come back,
     * and a new handle finds its own removed slot). */
    enum { CLASSES = 64 };
    void **held = malloc(sizeof *held * GRAPHS_CHURNED * CLASSES);
    if (!held)
        return 1;
    for (int i = 0; i < GRAPHS_CHURNED; i++) {
        CUgraphExec e;
        if (hook_g.instantiate(&e, tracked, 0) || hook_g.destroy(e))
            return 1;
        for (int k = 0; k < CLASSES; k++)
            if (!(held[i * CLASSES + k] = malloc(16 * (size_t)(k / 4 + 1))))
                return 1;
    }
    for (int i = 0; i < GRAPHS_CHURNED * CLASSES; i++)
        free(held[i]);
    free(held);
    CUgraphExec eu;
    if (hook_g.instantiate(&eu, untracked, 0))
        return 1;
    double t[2][101];
    for (int r = 0; r < rounds; r++)
        for (int side = 0; side < 2; side++)
            if ((t[side][r] = run_graph_launch(side ? &hook_g : &bare_g, eu, iters / 4)) < 0)
                return 1;
    row("graph launch, untracked", t[0], t[1], rounds);
    for (int r = 0; r < rounds; r++)
        for (int side = 0; side < 2; side++)
            if ((t[side][r] = run_graph_launch(side ? &hook_g : &bare_g, kept[0], iters / 4)) < 0)
                return 1;
    row("graph launch, 1 chunk", t[0], t[1], rounds);
    static const int sizes[] = {16, 65536};
    for (int s = 0; s < 2; s++) {
        CUgraph g;
        CUgraphNode last = NULL;
        if (create(&g, 0))
            return 1;
        for (int i = 0; i < sizes[s]; i++)
            if (add(&last, g, NULL, 0, &on[0]))
                return 1;
        CUgraphExec e;
        if (hook_g.instantiate(&e, g, 0))
            return 1;
        for (int r = 0; r < rounds; r++)
            for (int side = 0; side < 2; side++)
                if ((t[side][r] = run_node_set(side ? &hook_g : &bare_g, e, last, on, iters / 4)) < 0)
                    return 1;
        char name[40];
        snprintf(name, sizeof name, "node update, %d nodes", sizes[s]);
        row(name, t[0], t[1], rounds);
        hook_g.destroy(e);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    long iters = argc > 2 ? atol(argv[2]) : 200000;
    /* --traced or --grouped: one row (a child of variant_run) */
    const char *variant = argc > 3 && (strcmp(argv[3], "--traced") == 0 || strcmp(argv[3], "--grouped") == 0)
                              ? argv[3] : NULL;
    bool python = argc > 3 && strcmp(argv[3], "--python") == 0;
    bool graphs = argc > 3 && strcmp(argv[3], "--graphs") == 0;
    long evict_n = argc > 5 && strcmp(argv[3], "--evict") == 0 ? atol(argv[4]) : 0;
    if (rounds < 1 || rounds > 101 || iters < 1 || (argc > 3 && !variant && !python && !graphs && evict_n < 2)) {
        fprintf(stderr, "usage: allocbench [rounds (1-101) [iterations]]\n");
        return 2;
    }
    /* lmshim's options, read at its first hook: allocations of 1 MiB or more
     * go to managed memory (so the scan case can make one); smaller ones,
     * which the cases below use, stay on the device path. The eviction rows
     * make every chunk managed and give the budget room for half of them. */
    if (python)
        libpython = load_python();
    setenv("LMS_THRESHOLD", evict_n ? "64K" : "1M", 1);
    setenv("LMS_FRAC", "0", 1);
    if (evict_n) {
        char limit[32];
        snprintf(limit, sizeof limit, "%ldK", evict_n / 2 * (EVICT_CHUNK >> 10));   /* with a unit: no small-budget warning */
        setenv("LMS_LIMIT", limit, 1);
        setenv("LMS_POLICY", argv[5], 1);
    }
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    const char *shim_path = getenv("LMSHIM_LIBRARY") ? getenv("LMSHIM_LIBRARY") : "liblmshim.so";
    void *shim = dlopen(shim_path, RTLD_NOW | RTLD_LOCAL);
    api bare, hooked;
    if (!drv || !shim || load(drv, &bare) || load(shim, &hooked)) {
        fprintf(stderr, "allocbench: cannot load libcuda.so.1 and %s: %s\n", shim_path, dlerror());
        return 1;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(drv, "cuInit");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))dlsym(drv, "cuDevicePrimaryCtxRetain");
    CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))dlsym(drv, "cuCtxSetCurrent");
    CUcontext ctx;
    if (init(0) || retain(&ctx, 0) || set(ctx)) {
        fprintf(stderr, "allocbench: no device\n");
        return 1;
    }
    CUdeviceptr probe;
    if (hooked.alloc(&probe, 64 << 10) != CUDA_SUCCESS)
        return 1;
    simgpu_kernel k = {"empty10", empty_kernel, 10, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8}};
    CUresult (*load_module)(CUmodule *, const void *) = (CUresult(*)(CUmodule *, const void *))dlsym(drv, "cuModuleLoadData");
    CUresult (*get_function)(CUfunction *, CUmodule, const char *) =
        (CUresult(*)(CUfunction *, CUmodule, const char *))dlsym(drv, "cuModuleGetFunction");
    simgpu_kernel kt = {"touch10", touch_kernel, 10, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8}};
    simgpu_kernel kw = {"empty_wide", empty_kernel, WIDE_PARAMS, {0}};
    for (int i = 0; i < WIDE_PARAMS; i++) {
        kw.param_sizes[i] = 2 * sizeof(CUdeviceptr);
        wide_args[i] = &wide_ptrs[2 * i];
    }
    CUmodule mod;
    if (simgpu_register_kernel(&k) || simgpu_register_kernel(&kt) || simgpu_register_kernel(&kw) ||
        load_module(&mod, "bench") || get_function(&kernel, mod, "empty10") ||
        get_function(&kernel_touch, mod, "touch10") || get_function(&kernel_wide, mod, "empty_wide"))
        return 1;
    for (int i = 0; i < 10; i++) {
        if (bare.alloc(&kernel_ptrs[i], 4096) != CUDA_SUCCESS)
            return 1;
        kernel_args[i] = &kernel_ptrs[i];
    }
    double t[2][CASES][101];
    CUdeviceptr managed = 0;
    if (python)   /* a child of python_rows */
        return python_child();
    if (graphs)   /* a child of main: the graph rows */
        return graph_rows(drv, &hooked, rounds, iters);
    if (evict_n) {   /* a child of child_run: one eviction row */
        CUdeviceptr *chunks = calloc((size_t)evict_n, sizeof *chunks);
        if (!chunks)
            return 1;
        for (long i = 0; i < evict_n; i++)
            if (hooked.alloc(&chunks[i], EVICT_CHUNK) != CUDA_SUCCESS)
                return 1;
        long per = iters / 4 > 2 * evict_n ? iters / 4 : 2 * evict_n, at = 0;
        /* Warm-up: two rounds over every chunk (the policy learns its cycle). */
        if (run_evict(&hooked, chunks, evict_n, at, 2 * evict_n) < 0)
            return 1;
        at += 2 * evict_n;
        for (int r = 0; r < rounds; r++)
            for (int side = 0; side < 2; side++) {
                t[side][0][r] = run_evict(side ? &hooked : &bare, chunks, evict_n, at, per);
                if (t[side][0][r] < 0)
                    return 1;
                at += per;
            }
        size_t free_b, total_b;
        hooked.info(&free_b, &total_b);
        char name[40];
        snprintf(name, sizeof name, "evict %ld, %s", evict_n, argv[5]);
        row(name, t[0][0], t[1][0], rounds);
        for (long i = 0; i < evict_n; i++)
            hooked.free(chunks[i]);
        free(chunks);
        return 0;
    }
    if (variant) {   /* the child of variant_run: one case, one row */
        for (int r = 0; r < rounds; r++)
            for (int side = 0; side < 2; side++)
                t[side][0][r] = run(side ? &hooked : &bare, CASE_PAIR_4K, iters / 4, probe);
        row(strcmp(variant, "--grouped") == 0 ? "alloc+free, group" : "alloc+free, traced", t[0][0], t[1][0],
            rounds);
        return 0;
    }
    for (int c = 0; c < CASES; c++) {
        if (c == CASE_LAUNCH_SCAN && hooked.alloc(&managed, 2 << 20) != CUDA_SUCCESS)
            return 1;   /* from now on a managed chunk exists: launches are scanned */
        for (int i = 0; c == CASE_LAUNCH_WIDE && i < WIDE_CHUNKS; i++)
            if (hooked.alloc(&wide_ptrs[i], 1 << 20) != CUDA_SUCCESS)
                return 1;   /* managed, and all fit: fetched by the first launch, then resident */
        for (int r = 0; r < rounds; r++)
            for (int side = 0; side < 2; side++) {        /* bare, then hooked, each round */
                t[side][c][r] = run(side ? &hooked : &bare, c, c < CASE_QUERY ? iters : iters * 4, probe);
                if (t[side][c][r] < 0) {
                    fprintf(stderr, "allocbench: a CUDA call failed\n");
                    return 1;
                }
            }
    }
    int managed_flag = 0;
    bare.attr(&managed_flag, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed);
    if (!managed_flag) {
        fprintf(stderr, "allocbench: the scan case has no managed chunk\n");
        return 1;
    }
    hooked.free(managed);
    for (int i = 0; i < WIDE_CHUNKS; i++)
        hooked.free(wide_ptrs[i]);
    printf("allocbench: %d rounds x %ld iterations, medians (ns per operation)\n", rounds, iters);
    printf("%-20s %10s %10s %8s %12s\n", "case", "bare", "lmshim", "ratio", "added (ns)");
    for (int c = 0; c < CASES; c++)
        row(case_names[c], t[0][c], t[1][c], rounds);
    hooked.free(probe);
    static const char *const evict_rows[][2] = {{"10", "lookahead"}, {"10000", "lookahead"}, {"10", "lru"}, {"10000", "lru"}};
    for (int i = 0; i < 4; i++)
        child_run(rounds, iters, "--evict", evict_rows[i][0], evict_rows[i][1]);
    printf("(evict N, policy: launches over N managed chunks of 64 KiB in turn, room for N/2:\n"
           " lru fetches and evicts one chunk per launch, lookahead about 2 in 3 launches)\n");
    child_run(rounds, iters, "--graphs", NULL, NULL);
    printf("(graph rows: untracked = a graph over device memory, looked up among %d kept and %d removed\n"
           " graphs over a managed chunk; node update = cuGraphExecKernelNodeSetParams of the last node)\n",
           GRAPHS_KEPT, GRAPHS_CHURNED);
    variant_run(rounds, iters, "--traced");
    variant_run(rounds, iters, "--grouped");
    printf("(traced: LMS_TRACE=/dev/null LMS_STACKS=16, 4 KiB pairs, one allocation site;\n"
           " group: LMS_GROUP of one member, 4 KiB pairs: compare with the alloc+free 4 KiB row)\n");
    python_rows(rounds, iters, shim_path);
    printf("(Python: ctypes calls ten Python frames deep, traced as above, fastest round; bare = LMS_PY_STACKS=0, "
           "lmshim = LMS_PY_STACKS=1)\n");
    return 0;
}
