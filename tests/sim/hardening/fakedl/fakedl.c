/*
 * fakedl.c — stands in for glibc's libdl.so.2 before 2.34: it defines
 * dlsym@GLIBC_2.2.5 (counting its calls in fakedl_calls) and forwards to the
 * C library's dlsym. The test renames it to libdl.so.2 in the loader's list.
 */
#include <dlfcn.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int fakedl_calls;
static void *(*libc_dlsym)(void *, const char *);

__attribute__((constructor)) static void find_libc_dlsym(void)
{
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (libc)
        libc_dlsym = (void *(*)(void *, const char *))dlvsym(libc, "dlsym", "GLIBC_2.34");
}

EXPORT void *fakedl_dlsym(void *handle, const char *name)
{
    __atomic_add_fetch(&fakedl_calls, 1, __ATOMIC_RELAXED);
    return libc_dlsym ? libc_dlsym(handle, name) : NULL;
}
__asm__(".symver fakedl_dlsym, dlsym@GLIBC_2.2.5");
