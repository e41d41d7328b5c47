/*
 * kernel.c — simulated kernels: registration (simgpu.h), the pool of kernel
 * handles, modules, functions, parameter layouts, and every launch entry
 * point (which also take a CUkernel of library.c cast to CUfunction).
 * Unloading a module frees its functions; their handle values come back
 * from later loads, as with the real driver.
 *
 * A launch runs the kernel's host body at once, in the calling thread, on
 * the real bytes. The body declares its accesses and compute time through
 * the simgpu_launch it is handed (how many passes it makes over each range,
 * for ranges read over the link); the launch is then placed on the compute
 * engine for stall + max(compute, remote streaming) (docs/SIMULATOR.md).
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KERNELS 1024
#define MAX_PARAM_BYTES 32764   /* CUDA 12.1+ on Volta and later */

/* A kernel handle of any kind: a registered kernel's template (owner NULL,
 * never freed), a module's CUfunction, or a library's CUkernel (handed out
 * cast to CUkernel). Handles live in one pool and are reused, most recently
 * freed first, as the real driver reuses them after an unload. */
struct CUfunc_st {
    uint32_t magic;                      /* SIM_MAGIC_FUNC or SIM_MAGIC_KERNEL; 0: free */
    simgpu_kernel desc;
    char name[128];
    size_t offset[SIMGPU_MAX_PARAMS];   /* byte offset of each parameter */
    size_t total;                        /* bytes of the parameter buffer */
    const void *owner;                   /* module or library; NULL: the registry's */
    CUfunction next_free;                /* free list link */
};

/* A module: the functions handed out through it, freed at its unload. */
struct CUmod_st {
    uint32_t magic;
    CUlibrary library;        /* owning library (cuLibraryGetModule), or NULL */
    CUfunction *funcs;
    int n, cap;
};

bool sim_launch_dims_ok(const unsigned grid[3], const unsigned block[3])
{
    /* The device's limits (attributes.c): each block dimension on its own
     * first, so the product cannot wrap. */
    if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2])
        return false;
    if (grid[0] > 2147483647u || grid[1] > 65535 || grid[2] > 65535 || block[0] > 1024 ||
        block[1] > 1024 || block[2] > 64)
        return false;
    return (uint64_t)block[0] * block[1] * block[2] <= 1024;
}

static CUfunction kernels[MAX_KERNELS];   /* registered templates (sim_lock) */
static int nkernels;
static CUfunction *pool;                  /* every handle ever made (sim_lock) */
static size_t npool, cappool;
static CUfunction free_handles;           /* LIFO */

/* Alignment of a parameter of `size` bytes: its largest power-of-two
 * divisor, at most 16 (as the C ABI lays out scalars and vectors). */
static size_t param_align(size_t size)
{
    size_t a = 1;
    while (a < 16 && size % (a * 2) == 0)
        a *= 2;
    return a;
}

/* A handle from the pool (the most recently freed one first), or NULL
 * when the host is out of memory. Under sim_lock. */
static CUfunction handle_alloc(void)
{
    CUfunction h = free_handles;
    if (h) {
        free_handles = h->next_free;
        memset(h, 0, sizeof *h);
        return h;
    }
    if (npool == cappool) {
        size_t ncap = cappool ? cappool * 2 : 256;
        CUfunction *n = realloc(pool, ncap * sizeof *n);
        if (!n)
            return NULL;
        pool = n;
        cappool = ncap;
    }
    h = calloc(1, sizeof *h);
    if (h)
        pool[npool++] = h;
    return h;
}

/* Returns a handle to the pool; its value may be handed out again. */
void sim_handle_free(CUfunction h)
{
    h->magic = 0;
    h->next_free = free_handles;
    free_handles = h;
}

/* A copy of the registered kernel `name` as a new handle of kind `magic`
 * owned by `owner`; NULL when no such kernel (or no memory). Under sim_lock. */
CUfunction sim_handle_new(const char *name, uint32_t magic, const void *owner)
{
    CUfunction t = NULL;
    for (int i = 0; i < nkernels && !t; i++)
        if (strcmp(kernels[i]->name, name) == 0)
            t = kernels[i];
    if (!t)
        return NULL;
    CUfunction h = handle_alloc();
    if (!h)
        return NULL;
    *h = *t;
    h->desc.name = h->name;
    h->magic = magic;
    h->owner = owner;
    h->next_free = NULL;
    return h;
}

/* The live handle h if it is of kind `magic` (0: either kind), else NULL.
 * Under sim_lock; never dereferences a pointer that is not a handle. */
CUfunction sim_handle_check(const void *h, uint32_t magic)
{
    if (!h)
        return NULL;
    for (size_t i = 0; i < npool; i++)
        if (pool[i] == h) {
            CUfunction f = pool[i];
            bool ok = magic ? f->magic == magic
                            : f->magic == SIM_MAGIC_FUNC || f->magic == SIM_MAGIC_KERNEL;
            return ok ? f : NULL;
        }
    return NULL;
}

/* The kernel name of a handle (valid while it is). */
const char *sim_handle_label(CUfunction h)
{
    return h->name;
}

/* Registers a kernel (or replaces the body of one with the same name). */
SIM_EXPORT int simgpuRegisterKernel(const simgpu_kernel *k)
{
    if (!k || !k->name || !k->fn || k->num_params > SIMGPU_MAX_PARAMS ||
        strlen(k->name) >= sizeof((struct CUfunc_st *)0)->name)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUfunc_st f = {.magic = SIM_MAGIC_FUNC, .desc = *k};
    strcpy(f.name, k->name);
    f.desc.name = NULL;
    size_t off = 0;
    for (unsigned i = 0; i < k->num_params; i++) {
        if (k->param_sizes[i] == 0 || k->param_sizes[i] > MAX_PARAM_BYTES)
            return CUDA_ERROR_INVALID_VALUE;
        size_t a = param_align(k->param_sizes[i]);
        off = (off + a - 1) / a * a;
        f.offset[i] = off;
        off += k->param_sizes[i];
    }
    if (off > MAX_PARAM_BYTES)
        return CUDA_ERROR_INVALID_VALUE;
    f.total = off;
    pthread_mutex_lock(&sim_lock);
    int r = CUDA_SUCCESS;
    int i;
    for (i = 0; i < nkernels; i++)
        if (strcmp(kernels[i]->name, f.name) == 0)
            break;
    CUfunction h = i < nkernels ? kernels[i] : nkernels < MAX_KERNELS ? handle_alloc() : NULL;
    if (!h) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        *h = f;                  /* same name: the new layout wins for later loads */
        h->desc.name = h->name;
        if (i == nkernels)
            kernels[nkernels++] = h;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* Runtime support: the CUfunction whose body is the host function fn (the
 * registry's own handle, as cudart's implicitly loaded module would give). */
SIM_EXPORT CUresult simgpuFunctionForHost(CUfunction *out, const void *fn)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || !fn)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    *out = NULL;
    for (int i = 0; i < nkernels && !*out; i++)
        if ((const void *)kernels[i]->desc.fn == fn)
            *out = kernels[i];
    pthread_mutex_unlock(&sim_lock);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* A new empty module owned by `library` (NULL: by the program). Under
 * sim_lock; NULL when out of memory. */
CUmodule sim_module_new(CUlibrary library)
{
    CUmodule m = calloc(1, sizeof *m);
    if (m) {
        m->magic = SIM_MAGIC_MOD;
        m->library = library;
    }
    return m;
}

/* Frees a module and every function handed out through it. Under sim_lock. */
void sim_module_free(CUmodule m)
{
    for (int i = 0; i < m->n; i++)
        sim_handle_free(m->funcs[i]);
    free(m->funcs);
    m->magic = 0;
    free(m);
}

/* The function `name` of module m: the one handed out before, or a new
 * handle. Under sim_lock. */
CUresult sim_module_function(CUmodule m, const char *name, CUfunction *out)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->funcs[i]->name, name) == 0) {
            *out = m->funcs[i];
            return CUDA_SUCCESS;
        }
    if (m->n == m->cap) {
        int ncap = m->cap ? m->cap * 2 : 8;
        CUfunction *n = realloc(m->funcs, (size_t)ncap * sizeof *n);
        if (!n)
            return CUDA_ERROR_OUT_OF_MEMORY;
        m->funcs = n;
        m->cap = ncap;
    }
    CUfunction f = sim_handle_new(name, SIM_MAGIC_FUNC, m);
    if (!f)
        return CUDA_ERROR_NOT_FOUND;
    m->funcs[m->n++] = f;
    *out = f;
    return CUDA_SUCCESS;
}

/* Loads a "module": every registered kernel is visible through it. */
static CUresult module_load(CUmodule *mod)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!mod)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    *mod = sim_module_new(NULL);
    pthread_mutex_unlock(&sim_lock);
    return *mod ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule *mod, const char *fname)
{
    return fname ? module_load(mod) : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuModuleLoadData(CUmodule *mod, const void *image)
{
    return image ? module_load(mod) : CUDA_ERROR_INVALID_VALUE;
}

/* Frees the module and its functions; their handle values are reused. A
 * library's module belongs to the library: NOT_PERMITTED. */
SIM_EXPORT CUresult cuModuleUnload(CUmodule mod)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!mod)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    if (mod->magic != SIM_MAGIC_MOD)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (mod->library)
        r = CUDA_ERROR_NOT_PERMITTED;
    else
        sim_module_free(mod);
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!f || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!mod || mod->magic != SIM_MAGIC_MOD)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    r = sim_module_function(mod, name, f);
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* Parameter `index` of a live handle of kind `magic`: INVALID_HANDLE for
 * anything else, INVALID_VALUE past the last parameter. */
CUresult sim_param_info(const void *h, uint32_t magic, size_t index, size_t *offset, size_t *size)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    CUfunction f = sim_handle_check(h, magic);
    if (!f)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (index >= f->desc.num_params)
        r = CUDA_ERROR_INVALID_VALUE;
    else {
        if (offset)
            *offset = f->offset[index];
        if (size)
            *size = f->desc.param_sizes[index];
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* The name of a live handle of kind `magic` (valid while the handle is). */
CUresult sim_handle_name(const char **name, const void *h, uint32_t magic)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    CUfunction f = sim_handle_check(h, magic);
    if (f)
        *name = f->name;
    pthread_mutex_unlock(&sim_lock);
    return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* A function attribute, the same for every simulated kernel: what a small
 * kernel compiled for sm_90 reports. INVALID_VALUE for the rest. */
CUresult sim_func_attribute(int *pi, CUfunction_attribute attrib)
{
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = 48 * 1024; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = -1; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size)
{
    return sim_param_info(f, SIM_MAGIC_FUNC, index, offset, size);
}

SIM_EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
    return sim_handle_name(name, f, SIM_MAGIC_FUNC);
}

SIM_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction f)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    bool ok = sim_handle_check(f, SIM_MAGIC_FUNC) != NULL;
    pthread_mutex_unlock(&sim_lock);
    return ok ? sim_func_attribute(pi, attrib) : CUDA_ERROR_INVALID_HANDLE;
}

/* A range a kernel body touched. */
typedef struct touched {
    uint64_t ptr;
    size_t bytes;
} touched;

/* What one launch accumulates while its body runs. */
typedef struct launch_state {
    double start_ns;      /* when the kernel would start, as issued */
    double stall_ns;      /* faults and evictions */
    double remote_ns;     /* streaming over the link */
    double read_ns;       /* ... of it, reads: the host-to-device direction */
    double write_ns;      /* ... of it, writes: the device-to-host direction */
    double compute_ns;    /* declared by the body */
    double arrive_ns;     /* latest end of a copy of a block it touched in flight */
    touched *ranges;      /* what it touched (to mark in use until it ends) */
    size_t nranges, capranges;
} launch_state;

/* simgpu_launch.access_passes: models `passes` passes of the body over a
 * device range. What is on the device costs nothing more; what is not
 * crosses the link as sim_pass_bytes says (the L2 holds part of it). */
static void launch_access_passes(simgpu_launch *l, uint64_t ptr, size_t bytes, int mode, unsigned passes)
{
    launch_state *st = l->internal;
    if (bytes == 0 || passes == 0)
        return;
    if (st->nranges == st->capranges) {
        size_t ncap = st->capranges ? st->capranges * 2 : 16;
        touched *n = realloc(st->ranges, ncap * sizeof *n);
        if (n) {
            st->ranges = n;
            st->capranges = ncap;
        }
    }
    if (st->nranges < st->capranges)
        st->ranges[st->nranges++] = (touched){ptr, bytes};
    uint64_t remote = 0;
    pthread_mutex_lock(&sim_lock);
    sim_touch(l->device, (uintptr_t)ptr, bytes, st->start_ns, &st->stall_ns, &remote, &st->arrive_ns);
    uint64_t link = sim_pass_bytes(remote, bytes, passes);
    sim_devices[l->device].c.remote_bytes += link;
    pthread_mutex_unlock(&sim_lock);
    double ns = sim_link_ns(link);
    st->remote_ns += ns;
    if (mode & SIMGPU_WRITE)
        st->write_ns += ns;
    if (!(mode & SIMGPU_WRITE) || (mode & SIMGPU_READ))
        st->read_ns += ns;
}

/* simgpu_launch.access: one pass over a device range. */
static void launch_access(simgpu_launch *l, uint64_t ptr, size_t bytes, int mode)
{
    launch_access_passes(l, ptr, bytes, mode, 1);
}

/* simgpu_launch.compute: adds modeled compute time. */
static void launch_compute(simgpu_launch *l, double ns)
{
    launch_state *st = l->internal;
    if (ns > 0)
        st->compute_ns += ns;
}

/* Builds the parameter pointer array from the `extra` buffer form. */
static CUresult params_from_extra(CUfunction f, void **extra, void **out)
{
    char *buf = NULL;
    size_t size = 0;
    bool sized = false;
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
            buf = extra[i + 1];
        } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
            sized = extra[i + 1] != NULL;
            if (sized)
                memcpy(&size, extra[i + 1], sizeof size);   /* at any address */
        } else {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (f->desc.num_params > 0 && (!buf || !sized || size < f->total))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < f->desc.num_params; i++)
        out[i] = buf + f->offset[i];
    return CUDA_SUCCESS;
}

/* Shared body of every launch entry point. */
static CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                       CUstream s, void **params, void **extra, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    CUfunction h = sim_handle_check(f, 0);   /* a CUfunction, or a CUkernel cast to one */
    bool by_kernel = h && h->magic == SIM_MAGIC_KERNEL;
    pthread_mutex_unlock(&sim_lock);
    if (!h)
        return CUDA_ERROR_INVALID_HANDLE;
    f = h;
    if (!sim_launch_dims_ok(grid, block))
        return CUDA_ERROR_INVALID_VALUE;
    void *built[SIMGPU_MAX_PARAMS];
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    if (extra) {
        r = params_from_extra(f, extra, built);
        if (r != CUDA_SUCCESS)
            return r;
        params = built;
    } else if (!params && f->desc.num_params > 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    bool record = false;
    r = sim_capture_gate(st, true, &record);
    if (r != CUDA_SUCCESS || record) {
        /* A CUkernel launch becomes a node that names the kernel (kern), in
         * the capturing stream's context. */
        sim_node_desc d = {.type = CU_GRAPH_NODE_TYPE_KERNEL, .func = f, .params = params,
                           .by_kernel = by_kernel, .ctx = st->ctx};
        memcpy(d.grid, grid, sizeof d.grid);
        memcpy(d.block, block, sizeof d.block);
        return r != CUDA_SUCCESS ? r : sim_capture_add(st, &d);
    }
    return sim_kernel_run(f, grid, block, st, params);
}

/* Runs a validated kernel on stream st now (a launch, or a graph's kernel
 * node): the body runs on the real bytes, then the time is modeled. */
CUresult sim_kernel_run(CUfunction f, const unsigned grid[3], const unsigned block[3],
                        CUstream st, void **params)
{
    launch_state state = {0};
    simgpu_launch l = {.device = st->device, .access = launch_access,
                       .compute = launch_compute, .internal = &state,
                       .access_passes = launch_access_passes};
    memcpy(l.grid, grid, sizeof l.grid);
    memcpy(l.block, block, sizeof l.block);
    pthread_mutex_lock(&sim_lock);
    state.start_ns = sim_start_ns(st, SIM_ENGINE_COMPUTE);
    pthread_mutex_unlock(&sim_lock);
    if (!sim_cfg.concurrent_managed)
        state.stall_ns += sim_legacy_um_launch(st->device, true);
    f->desc.fn(&l, params);
    if (!sim_cfg.concurrent_managed)
        state.stall_ns += sim_legacy_um_launch(st->device, false);
    pthread_mutex_lock(&sim_lock);
    sim_device *dev = &sim_devices[st->device];
    dev->c.launches++;
    /* A block still being copied in holds the kernel until it arrives. */
    double start = sim_start_ns(st, SIM_ENGINE_COMPUTE);
    double wait = state.arrive_ns > start ? state.arrive_ns - start : 0;
    double run = start + sim_cfg.launch_us * 1e3 + wait + state.stall_ns;
    /* Reads over the link share the host-to-device direction with the
     * copy engine, writes the other one: the streaming starts when the
     * copies issued before it in that direction are done, and holds the
     * direction while it runs (copies issued later wait for it). */
    double stream = run;
    if (state.read_ns > 0 && dev->h2d.busy_ns > stream)
        stream = dev->h2d.busy_ns;
    if (state.write_ns > 0 && dev->d2h.busy_ns > stream)
        stream = dev->d2h.busy_ns;
    double busy = state.compute_ns;
    if (state.remote_ns > 0 && stream - run + state.remote_ns > busy)
        busy = stream - run + state.remote_ns;
    if (state.read_ns > 0)
        dev->h2d.busy_ns = stream + state.read_ns;
    if (state.write_ns > 0)
        dev->d2h.busy_ns = stream + state.write_ns;
    double dur = run - start + busy;
    double end = sim_schedule(st, SIM_ENGINE_COMPUTE, dur);
    if (sim_cfg.timeline_fd >= 0) {
        char what[384];   /* a 127-character name and five numbers */
        double link_wait = state.remote_ns > 0 ? stream - run : 0;
        snprintf(what, sizeof what, "kernel %s wait=%.1f stall=%.1f compute=%.1f remote=%.1f link_wait=%.1f",
                 f->desc.name, wait / 1e3, state.stall_ns / 1e3, state.compute_ns / 1e3, state.remote_ns / 1e3,
                 link_wait / 1e3);
        sim_timeline(st, SIM_ENGINE_COMPUTE, end - dur, end, 0, what);
    }
    for (size_t i = 0; i < state.nranges; i++)
        sim_mark_busy(st->device, (uintptr_t)state.ranges[i].ptr, state.ranges[i].bytes, end);
    pthread_mutex_unlock(&sim_lock);
    free(state.ranges);
    return CUDA_SUCCESS;
}

/* True when f is a live kernel handle, a CUfunction or a CUkernel cast to
 * one (for graph nodes; takes sim_lock). */
bool sim_kernel_valid(CUfunction f)
{
    pthread_mutex_lock(&sim_lock);
    bool ok = sim_handle_check(f, 0) != NULL;
    pthread_mutex_unlock(&sim_lock);
    return ok;
}

/* A kernel's parameter layout: fills offsets[] and sizes[] (room for
 * SIMGPU_MAX_PARAMS each) and *total; returns the number of parameters. */
unsigned sim_kernel_layout(CUfunction f, size_t *offsets, size_t *sizes, size_t *total)
{
    for (unsigned i = 0; i < f->desc.num_params; i++) {
        offsets[i] = f->offset[i];
        sizes[i] = f->desc.param_sizes[i];
    }
    *total = f->total;
    return f->desc.num_params;
}

SIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                   CUstream s, void **params, void **extra)
{
    (void)shmem;
    return launch(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, s, params, extra, false);
}

SIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                        CUstream s, void **params, void **extra)
{
    (void)shmem;
    return launch(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, s, params, extra, true);
}

SIM_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                              unsigned bx, unsigned by, unsigned bz,
                                              unsigned shmem, CUstream s, void **params)
{
    (void)shmem;
    if (!params)
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_INVALID_VALUE;
    return launch(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, s, params, NULL, false);
}

SIM_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                   unsigned gz, unsigned bx, unsigned by,
                                                   unsigned bz, unsigned shmem, CUstream s,
                                                   void **params)
{
    (void)shmem;
    if (!params)
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_INVALID_VALUE;
    return launch(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, s, params, NULL, true);
}

/* Shared body of cuLaunchKernelEx and its _ptsz twin. */
static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra,
                          bool ptds)
{
    if (!c)
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_INVALID_VALUE;
    if (c->numAttrs && !c->attrs)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, (unsigned[3]){c->gridDimX, c->gridDimY, c->gridDimZ},
                  (unsigned[3]){c->blockDimX, c->blockDimY, c->blockDimZ}, c->hStream, params,
                  extra, ptds);
}

SIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
                                     void **extra)
{
    return launch_ex(c, f, params, extra, false);
}

SIM_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params,
                                          void **extra)
{
    return launch_ex(c, f, params, extra, true);
}
