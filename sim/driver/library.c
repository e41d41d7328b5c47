/*
 * library.c — the context-independent loading API of CUDA 12: libraries
 * (cuLibraryLoadData/FromFile, cuLibraryUnload), their kernels (CUkernel:
 * parameter info, name, attributes, the CUfunction of the current context)
 * and their modules. As with modules, every registered kernel is visible
 * through every library; a library's kernel handles, module and functions
 * are freed at its unload, and their handle values are reused.
 * A CUkernel is a pool handle of kind SIM_MAGIC_KERNEL (kernel.c), so the
 * launch entry points accept it cast to CUfunction.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

struct CUlib_st {
    uint32_t magic;           /* SIM_MAGIC_LIB; 0 once unloaded */
    CUmodule module;          /* made by the first cuLibraryGetModule/cuKernelGetFunction */
    CUfunction *kernels;      /* kernel handles handed out, kind SIM_MAGIC_KERNEL */
    int n, cap;
};

static CUlibrary *libs;       /* live libraries (sim_lock) */
static int nlibs, caplibs;

/* The live library l, or NULL. Under sim_lock. */
static CUlibrary lib_check(CUlibrary l)
{
    for (int i = 0; i < nlibs; i++)
        if (libs[i] == l)
            return l;
    return NULL;
}

/* Checks the options every load takes and makes the library. */
static CUresult lib_load(CUlibrary *out, bool have_source, const CUjit_option *jit_opts,
                         void *const *jit_vals, unsigned njit, const CUlibraryOption *lib_opts,
                         void *const *lib_vals, unsigned nlib)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || !have_source || (njit && (!jit_opts || !jit_vals)) || (nlib && (!lib_opts || !lib_vals)))
        return CUDA_ERROR_INVALID_VALUE;
    CUlibrary l = calloc(1, sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->magic = SIM_MAGIC_LIB;
    pthread_mutex_lock(&sim_lock);
    if (nlibs == caplibs) {
        int ncap = caplibs ? caplibs * 2 : 16;
        CUlibrary *n = realloc(libs, (size_t)ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&sim_lock);
            free(l);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        libs = n;
        caplibs = ncap;
    }
    libs[nlibs++] = l;
    pthread_mutex_unlock(&sim_lock);
    *out = l;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                      void **jitOptionsValues, unsigned numJitOptions,
                                      CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                      unsigned numLibraryOptions)
{
    return lib_load(library, code != NULL, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                    libraryOptionValues, numLibraryOptions);
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                          CUjit_option *jitOptions, void **jitOptionsValues,
                                          unsigned numJitOptions, CUlibraryOption *libraryOptions,
                                          void **libraryOptionValues, unsigned numLibraryOptions)
{
    return lib_load(library, fileName != NULL, jitOptions, jitOptionsValues, numJitOptions,
                    libraryOptions, libraryOptionValues, numLibraryOptions);
}

/* Frees the library, its kernels, its module and the module's functions. */
SIM_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    CUlibrary l = lib_check(library);
    if (l) {
        for (int i = 0; i < nlibs; i++)
            if (libs[i] == l)
                libs[i] = libs[--nlibs];
        for (int i = 0; i < l->n; i++)
            sim_handle_free(l->kernels[i]);
        if (l->module)
            sim_module_free(l->module);
        free(l->kernels);
        l->magic = 0;
        free(l);
    }
    pthread_mutex_unlock(&sim_lock);
    return l ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    CUlibrary l = lib_check(library);
    CUfunction k = NULL;
    for (int i = 0; l && i < l->n && !k; i++)
        if (strcmp(sim_handle_label(l->kernels[i]), name) == 0)
            k = l->kernels[i];
    if (!l) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (!k) {
        if (l->n == l->cap) {
            int ncap = l->cap ? l->cap * 2 : 8;
            CUfunction *n = realloc(l->kernels, (size_t)ncap * sizeof *n);
            if (n) {
                l->kernels = n;
                l->cap = ncap;
            }
        }
        if (l->n < l->cap && (k = sim_handle_new(name, SIM_MAGIC_KERNEL, l)))
            l->kernels[l->n++] = k;
        else
            r = CUDA_ERROR_NOT_FOUND;
    }
    if (k)
        *pKernel = (CUkernel)(void *)k;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

/* The library's module, made on first use (under sim_lock), or NULL. */
static CUmodule lib_module(CUlibrary l)
{
    if (!l->module)
        l->module = sim_module_new(l);
    return l->module;
}

SIM_EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    CUlibrary l = lib_check(library);
    CUmodule m = l ? lib_module(l) : NULL;
    if (m)
        *pMod = m;
    pthread_mutex_unlock(&sim_lock);
    return !l ? CUDA_ERROR_INVALID_HANDLE : m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* The CUfunction of a kernel in the current context: the function of the
 * same name in the library's module. */
SIM_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    CUfunction k = sim_handle_check(kernel, SIM_MAGIC_KERNEL);
    if (!k) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else {
        CUlibrary l = NULL;
        for (int i = 0; i < nlibs && !l; i++)
            for (int j = 0; j < libs[i]->n && !l; j++)
                if (libs[i]->kernels[j] == k)
                    l = libs[i];
        CUmodule m = l ? lib_module(l) : NULL;
        r = m ? sim_module_function(m, sim_handle_label(k), pFunc) : CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                                         size_t *paramSize)
{
    return sim_param_info(kernel, SIM_MAGIC_KERNEL, paramIndex, paramOffset, paramSize);
}

SIM_EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    return sim_handle_name(name, hfunc, SIM_MAGIC_KERNEL);
}

SIM_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    bool ok = sim_handle_check(kernel, SIM_MAGIC_KERNEL) != NULL;
    pthread_mutex_unlock(&sim_lock);
    return ok ? sim_func_attribute(pi, attrib) : CUDA_ERROR_INVALID_HANDLE;
}
