/*
 * kernel.c — simulated kernels: registration (simgpu.h), modules, functions,
 * parameter layouts, and every launch entry point.
 *
 * A launch runs the kernel's host body at once, in the calling thread, on
 * the real bytes. The body declares its accesses and compute time through
 * the simgpu_launch it is handed (how many passes it makes over each range,
 * for ranges read over the link); the launch is then placed on the compute
 * engine for stall + max(compute, remote streaming) (docs/SIMULATOR.md).
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

#define MAX_KERNELS 1024

struct CUfunc_st {
    uint32_t magic;
    simgpu_kernel desc;
    char name[128];
    size_t offset[SIMGPU_MAX_PARAMS];   /* byte offset of each parameter */
    size_t total;                        /* bytes of the parameter buffer */
};

struct CUmod_st { uint32_t magic; };

static CUfunction kernels[MAX_KERNELS];   /* registered (sim_lock), never freed */
static int nkernels;

/* Alignment of a parameter of `size` bytes: its largest power-of-two
 * divisor, at most 16 (as the C ABI lays out scalars and vectors). */
static size_t param_align(size_t size)
{
    size_t a = 1;
    while (a < 16 && size % (a * 2) == 0)
        a *= 2;
    return a;
}

/* Registers a kernel (or replaces the body of one with the same name). */
SIM_EXPORT int simgpuRegisterKernel(const simgpu_kernel *k)
{
    if (!k || !k->name || !k->fn || k->num_params > SIMGPU_MAX_PARAMS ||
        strlen(k->name) >= sizeof((struct CUfunc_st *)0)->name)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < k->num_params; i++)
        if (k->param_sizes[i] == 0 || k->param_sizes[i] > 4096)
            return CUDA_ERROR_INVALID_VALUE;
    CUfunction f = calloc(1, sizeof *f);
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    f->magic = SIM_MAGIC_FUNC;
    f->desc = *k;
    strcpy(f->name, k->name);
    f->desc.name = f->name;
    size_t off = 0;
    for (unsigned i = 0; i < k->num_params; i++) {
        size_t a = param_align(k->param_sizes[i]);
        off = (off + a - 1) / a * a;
        f->offset[i] = off;
        off += k->param_sizes[i];
    }
    f->total = off;
    pthread_mutex_lock(&sim_lock);
    int r = CUDA_SUCCESS;
    int i;
    for (i = 0; i < nkernels; i++)
        if (strcmp(kernels[i]->name, f->name) == 0)
            break;
    if (i < nkernels) {
        *kernels[i] = *f;               /* same name: the new layout wins */
        kernels[i]->desc.name = kernels[i]->name;
        free(f);
    } else if (nkernels == MAX_KERNELS) {
        free(f);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        kernels[nkernels++] = f;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* Finds a registered kernel by name or by body (under sim_lock). */
static CUfunction find_kernel(const char *name, const void *fn)
{
    for (int i = 0; i < nkernels; i++)
        if ((name && strcmp(kernels[i]->name, name) == 0) ||
            (fn && (const void *)kernels[i]->desc.fn == fn))
            return kernels[i];
    return NULL;
}

/* Runtime support: the CUfunction whose body is the host function fn. */
SIM_EXPORT CUresult simgpuFunctionForHost(CUfunction *out, const void *fn)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || !fn)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    *out = find_kernel(NULL, fn);
    pthread_mutex_unlock(&sim_lock);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* True when f is a registered kernel. */
static bool func_valid(CUfunction f)
{
    bool ok = false;
    pthread_mutex_lock(&sim_lock);
    for (int i = 0; i < nkernels && !ok; i++)
        ok = kernels[i] == f;
    pthread_mutex_unlock(&sim_lock);
    return ok;
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
    *mod = calloc(1, sizeof **mod);
    if (!*mod)
        return CUDA_ERROR_OUT_OF_MEMORY;
    (*mod)->magic = SIM_MAGIC_MOD;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule *mod, const char *fname)
{
    return fname ? module_load(mod) : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuModuleLoadData(CUmodule *mod, const void *image)
{
    return image ? module_load(mod) : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuModuleUnload(CUmodule mod)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!mod || mod->magic != SIM_MAGIC_MOD)
        return CUDA_ERROR_INVALID_HANDLE;
    mod->magic = 0;
    free(mod);
    return CUDA_SUCCESS;
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
    *f = find_kernel(name, NULL);
    pthread_mutex_unlock(&sim_lock);
    return *f ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

SIM_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!func_valid(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (index >= f->desc.num_params)
        return CUDA_ERROR_INVALID_VALUE;
    if (offset)
        *offset = f->offset[index];
    if (size)
        *size = f->desc.param_sizes[index];
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_valid(f))
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->name;
    return CUDA_SUCCESS;
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
    (void)mode;
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
    st->remote_ns += sim_link_ns(link);
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
    size_t *size = NULL;
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            size = extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (f->desc.num_params > 0 && (!buf || !size || *size < f->total))
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
    if (!func_valid(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2] ||
        (uint64_t)block[0] * block[1] * block[2] > 1024)
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
    launch_state state = {0};
    simgpu_launch l = {.device = st->device, .access = launch_access,
                       .compute = launch_compute, .internal = &state,
                       .access_passes = launch_access_passes};
    memcpy(l.grid, grid, sizeof l.grid);
    memcpy(l.block, block, sizeof l.block);
    pthread_mutex_lock(&sim_lock);
    state.start_ns = sim_start_ns(st, SIM_ENGINE_COMPUTE);
    pthread_mutex_unlock(&sim_lock);
    f->desc.fn(&l, params);
    double busy = state.compute_ns > state.remote_ns ? state.compute_ns : state.remote_ns;
    pthread_mutex_lock(&sim_lock);
    sim_devices[st->device].c.launches++;
    /* A block still being copied in holds the kernel until it arrives. */
    double start = sim_start_ns(st, SIM_ENGINE_COMPUTE);
    double wait = state.arrive_ns > start ? state.arrive_ns - start : 0;
    double end = sim_schedule(st, SIM_ENGINE_COMPUTE, sim_cfg.launch_us * 1e3 + wait + state.stall_ns + busy);
    for (size_t i = 0; i < state.nranges; i++)
        sim_mark_busy(st->device, (uintptr_t)state.ranges[i].ptr, state.ranges[i].bytes, end);
    pthread_mutex_unlock(&sim_lock);
    free(state.ranges);
    return CUDA_SUCCESS;
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
