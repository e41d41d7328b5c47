/*
 * elf_symbol.c — finds a versioned symbol of an already loaded library by
 * reading its ELF dynamic tables, without calling dlsym, dlvsym or dlopen.
 *
 * An interposer that overrides dlsym needs glibc's real dlsym, and it may be
 * asked for it before anything else works: sanitizer runtimes call dlsym
 * while they initialise, when their own dlvsym/dlopen interceptors still
 * point nowhere. Walking the dynamic linker's list of loaded objects
 * (_r_debug) and the library's GNU hash table needs no libc call at all.
 */
#include "elf_symbol.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>

/* String helpers of our own: libc's may be intercepted, and the
 * interceptors may not be ready when this runs. */
LMS_UNINSTRUMENTED static bool same(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

LMS_UNINSTRUMENTED static const char *basename_of(const char *path)
{
    const char *base = path;
    for (const char *p = path; *p; p++)
        if (*p == '/')
            base = p + 1;
    return base;
}

/* An address in the object's dynamic section; glibc relocates most of these
 * in place, but an unrelocated one is still relative to the load base. */
LMS_UNINSTRUMENTED static const void *dyn_ptr(const struct link_map *m, ElfW(Addr) v)
{
    return (const void *)(v < m->l_addr ? v + m->l_addr : v);
}

/* The GNU hash of a symbol name. */
LMS_UNINSTRUMENTED static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = h * 33 + *p;
    return h;
}

/* True when the symbol at index i carries version `version`. */
LMS_UNINSTRUMENTED static bool has_version(const ElfW(Half) *versym, const ElfW(Verdef) *verdef, const char *strtab,
                        size_t i, const char *version)
{
    if (!versym || !verdef)
        return false;
    ElfW(Half) want = versym[i] & 0x7fff;
    const ElfW(Verdef) *d = verdef;
    for (;;) {
        if (d->vd_ndx == want) {
            const ElfW(Verdaux) *aux = (const ElfW(Verdaux) *)((const char *)d + d->vd_aux);
            return same(strtab + aux->vda_name, version);
        }
        if (!d->vd_next)
            return false;
        d = (const ElfW(Verdef) *)((const char *)d + d->vd_next);
    }
}

/* Looks `name`@`version` up in one object through its GNU hash table. */
LMS_UNINSTRUMENTED static void *lookup_in(const struct link_map *m, const char *name, const char *version)
{
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gnu = NULL;
    const ElfW(Half) *versym = NULL;
    const ElfW(Verdef) *verdef = NULL;
    for (const ElfW(Dyn) *d = m->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = dyn_ptr(m, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = dyn_ptr(m, d->d_un.d_ptr); break;
        case DT_GNU_HASH: gnu = dyn_ptr(m, d->d_un.d_ptr); break;
        case DT_VERSYM: versym = dyn_ptr(m, d->d_un.d_ptr); break;
        case DT_VERDEF: verdef = dyn_ptr(m, d->d_un.d_ptr); break;
        default: break;
        }
    }
    if (!symtab || !strtab || !gnu)
        return NULL;
    uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = gnu_hash(name);
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset)
        return NULL;
    for (;; i++) {
        uint32_t ch = chain[i - symoffset];
        const ElfW(Sym) *s = &symtab[i];
        if ((ch | 1) == (h | 1) && s->st_shndx != SHN_UNDEF && same(strtab + s->st_name, name) &&
            (!version || has_version(versym, verdef, strtab, i, version)))
            return (void *)(m->l_addr + s->st_value);
        if (ch & 1)
            return NULL;
    }
}

LMS_UNINSTRUMENTED void *lms_elf_symbol(const char *library, const char *name, const char *version)
{
    for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
        const char *path = m->l_name;
        if (!path || !*path)
            continue;
        if (!same(basename_of(path), library))
            continue;
        void *p = lookup_in(m, name, version);
        if (p)
            return p;
    }
    return NULL;
}

lms_dlsym_fn lms_real_dlsym(const char *version)
{
    /* glibc 2.34 and later define dlsym in libc.so.6; before, in libdl.so.2
     * (GLIBC_2.2.5 only), which every program that can call dlsym has loaded. */
    void *p = lms_elf_symbol("libc.so.6", "dlsym", version);
    if (!p)
        p = lms_elf_symbol("libdl.so.2", "dlsym", version);
    if (!p)
        p = lms_elf_symbol("libdl.so.2", "dlsym", "GLIBC_2.2.5");
    if (!p) {
        /* Neither table shows it (an unusual C library or loader): ask the
         * loader for the next definition after this object, through dlvsym,
         * which this object does not interpose. Only now, never at start-up
         * in the usual case, because sanitizer runtimes may not be ready. */
        p = dlvsym(RTLD_NEXT, "dlsym", version);
        if (!p)
            p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    }
    return (lms_dlsym_fn)p;
}
