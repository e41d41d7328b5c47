/*
 * driver.c — finding the real driver (see driver.h). The shim's own dlsym
 * filters lookups, so the real dlsym is called directly here.
 */
#include "driver.h"

#include <dlfcn.h>
#include <stddef.h>

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

int lms_driver_stream_device(CUstream stream)
{
    CUdevice d;
    if (stream && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD &&
        lms_drv.cuStreamGetDevice && lms_drv.cuStreamGetDevice(stream, &d) == CUDA_SUCCESS)
        return d;
    return lms_driver_current_device();
}
