/*
 * spy_dlsym.c — a preload library that overrides dlsym (both glibc symbol
 * versions, as an interposer must) and counts lookups of
 * cuGetProcAddress_v2. Used to prove the simulated runtime reaches the
 * driver through that lookup.
 */
#include <dlfcn.h>
#include <string.h>

static int seen;
typedef void *(*dlsym_fn)(void *, const char *);

__attribute__((visibility("default"))) int spy_seen(void) { return seen; }

/* Forwards to glibc's dlsym after counting the lookups of interest. */
static void *spy(void *handle, const char *name, const char *version)
{
    static dlsym_fn real;
    if (!real)
        real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", version);
    if (name && strcmp(name, "cuGetProcAddress_v2") == 0)
        seen++;
    return real(handle, name);
}

__attribute__((visibility("default"))) void *spy_dlsym_234(void *h, const char *n)
{ return spy(h, n, "GLIBC_2.34"); }
__attribute__((visibility("default"))) void *spy_dlsym_225(void *h, const char *n)
{ return spy(h, n, "GLIBC_2.2.5"); }
__asm__(".symver spy_dlsym_234, dlsym@@GLIBC_2.34");
__asm__(".symver spy_dlsym_225, dlsym@GLIBC_2.2.5");
