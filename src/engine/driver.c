/*
 * driver.c — finding the real driver (see driver.h). The shim's own dlsym
 * filters lookups, so the real dlsym is called directly here. Also the
 * device of a stream, cached per thread.
 */
#include "driver.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "elf_symbol.h"
#include "log.h"

lms_driver lms_drv;

bool lms_driver_open(void)
{
    lms_dlsym_fn real_dlsym = lms_real_dlsym("GLIBC_2.34");
    if (!real_dlsym)
        real_dlsym = lms_real_dlsym("GLIBC_2.2.5");
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        const char *why = dlerror();
        lms_log(LMS_LEVEL_ERROR,
                "no CUDA driver: cannot load libcuda.so.1 (%s); install the NVIDIA driver, or run over "
                "the simulated GPU with `lmshim run --sim` (`lmshim info --sim`). Until then lmshim passes "
                "every call through",
                why ? why : "not found");
        return false;
    }
    if (!real_dlsym) {
        lms_log(LMS_LEVEL_ERROR, "cannot find the C library's dlsym: lmshim passes every call through");
        return false;
    }
    lms_drv.handle = h;
    lms_drv.real_dlsym = real_dlsym;
    lms_drv.get_proc_address = (PFN_cuGetProcAddress_v12000)lms_driver_symbol("cuGetProcAddress_v2");
    if (!lms_drv.get_proc_address) {
        lms_log(LMS_LEVEL_ERROR, "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than 12.0)");
        return false;
    }
#define LMS_DRIVER(name, version, pfn) lms_drv.name = (pfn)lms_driver_proc(#name, version, 0);
#include "driver.def"
#undef LMS_DRIVER
    return true;
}

bool lms_driver_is_own(const void *p)
{
    Dl_info self, other;
    if (!p || !dladdr((const void *)&lms_driver_is_own, &self) || !dladdr(p, &other))
        return false;
    return self.dli_fbase == other.dli_fbase;
}

void *lms_driver_symbol(const char *symbol)
{
    if (!lms_drv.handle || !lms_drv.real_dlsym)
        return NULL;
    void *p = lms_drv.real_dlsym(lms_drv.handle, symbol);
    return lms_driver_is_own(p) ? NULL : p;
}

void *lms_driver_proc_exact(const char *name, int version, cuuint64_t flags, const char *symbol)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (!lms_drv.get_proc_address ||
        lms_drv.get_proc_address(name, &p, version, flags, &st) != CUDA_SUCCESS ||
        st != CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    if (lms_driver_is_own(p)) {
        /* The driver resolved the name through the global scope, where our
         * hook of the same name comes first: calling it would call itself. */
        lms_log(LMS_LEVEL_DEBUG, "the driver answers %s (version %d) with lmshim's own %p: %s", name, version, p,
                symbol ? "using the driver's exported symbol" : "treated as missing");
        return symbol ? lms_driver_symbol(symbol) : NULL;
    }
    return p;
}

void *lms_driver_proc(const char *name, int version, cuuint64_t flags)
{
    return lms_driver_proc_exact(name, version, flags, NULL);
}

int lms_driver_current_device(void)
{
    CUdevice d;
    if (!lms_drv.cuCtxGetDevice || lms_drv.cuCtxGetDevice(&d) != CUDA_SUCCESS)
        return -1;
    return d;
}

/* The device of the streams a thread asked about lately, so that a launch
 * need not ask the driver each time: a few entries per thread (direct
 * mapped by handle), each valid while `streams_gen` has not moved since it
 * was made. The driver hands a destroyed stream's handle to a later stream,
 * perhaps of another device, so every stream destroy and every context end
 * (which destroys the context's streams) moves it, before and after the
 * real call; while one is under way (`streams_ending`) the cache is neither
 * read nor filled. The default streams are not cached: they name the
 * current context's stream, and the thread's current context changes
 * without a call lmshim sees each time (cuCtxGetDevice answers it). */
#define STREAM_CACHE 4   /* entries per thread (96 bytes of static TLS) */

typedef struct stream_device {
    CUstream stream;
    uint64_t gen;             /* streams_gen when it was asked; 0: empty */
    int device;
} stream_device;

static __thread stream_device stream_cache[STREAM_CACHE] __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t streams_gen = 1;
static atomic_int streams_ending;   /* stream destroys and context ends under way */

void lms_driver_streams_end_begin(void)
{
    atomic_fetch_add(&streams_ending, 1);
    atomic_fetch_add(&streams_gen, 1);
}

void lms_driver_streams_end_done(void)
{
    atomic_fetch_add(&streams_gen, 1);
    atomic_fetch_sub(&streams_ending, 1);
}

int lms_driver_stream_device(CUstream stream)
{
    CUdevice d;
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD || !lms_drv.cuStreamGetDevice)
        return lms_driver_current_device();
    uint64_t gen = atomic_load(&streams_gen);
    bool quiet = atomic_load(&streams_ending) == 0;
    stream_device *e = &stream_cache[((uintptr_t)stream >> 4) % STREAM_CACHE];
    if (quiet && e->stream == stream && e->gen == gen)
        return e->device;
    if (lms_drv.cuStreamGetDevice(stream, &d) != CUDA_SUCCESS)
        return lms_driver_current_device();
    if (quiet)
        *e = (stream_device){.stream = stream, .gen = gen, .device = d};
    return d;
}
