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
    lms_drv.get_proc_address = (PFN_cuGetProcAddress_v12000)real_dlsym(h, "cuGetProcAddress_v2");
    if (!lms_drv.get_proc_address) {
        lms_log(LMS_LEVEL_ERROR, "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than 12.0)");
        return false;
    }
#define LMS_DRIVER(name, version, pfn) lms_drv.name = (pfn)lms_driver_proc(#name, version, 0);
#include "driver.def"
#undef LMS_DRIVER
    return true;
}

void *lms_driver_proc(const char *name, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (!lms_drv.get_proc_address ||
        lms_drv.get_proc_address(name, &p, version, flags, &st) != CUDA_SUCCESS ||
        st != CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    return p;
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
