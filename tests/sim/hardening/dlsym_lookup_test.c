/*
 * dlsym_lookup_test.c — finding the C library's dlsym (elf_symbol.c) on a
 * loader layout like glibc before 2.34, simulated by renaming objects in the
 * loader's list: libc.so.6 without dlsym in its tables, and either a
 * libdl.so.2 that has it (fakedl/, renamed) or none at all. The lookup must
 * find libdl's, or fall back to a working dlsym, never answer NULL.
 */
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "../../common/check.h"
#include "elf_symbol.h"

extern int fakedl_calls;   /* (the reference also keeps libfakedl.so loaded) */

/* Renames the first loaded object whose file name ends in `from`. */
static void rename_object(const char *from, const char *to)
{
    for (struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
        size_t n = strlen(m->l_name), k = strlen(from);
        if (n >= k && strcmp(m->l_name + n - k, from) == 0) {
            m->l_name = (char *)to;
            return;
        }
    }
}

/* Hides libc.so.6 (and a real libdl.so.2) from lookups by file name. */
static void hide_libc(void)
{
    rename_object("/libc.so.6", "/hidden/libc-hidden.so.6");
    rename_object("/libdl.so.2", "/hidden/libdl-hidden.so.2");
}

/* A dlsym that works: it finds a symbol of the fake library. */
static void check_works(lms_dlsym_fn d)
{
    CHECK(d);
    void *self = dlopen("libfakedl.so", RTLD_NOW | RTLD_NOLOAD);
    CHECK(self);
    void *want = dlvsym(self, "fakedl_calls", "GLIBC_2.2.5");   /* a lookup not under test */
    CHECK(want && d(self, "fakedl_calls") == want);
}

/* glibc < 2.34: dlsym lives in libdl.so.2 (GLIBC_2.2.5 only). */
static void in_libdl(void)
{
    hide_libc();
    rename_object("/libfakedl.so", "/old-glibc/libdl.so.2");
    lms_dlsym_fn d = lms_real_dlsym("GLIBC_2.2.5");
    CHECK(d);
    int before = fakedl_calls;
    check_works(d);
    CHECK(fakedl_calls == before + 1);   /* it was libdl's */
    check_works(lms_real_dlsym("GLIBC_2.34"));
}

/* Neither libc.so.6 nor libdl.so.2 shows dlsym: a working one anyway. */
static void in_neither(void)
{
    hide_libc();
    check_works(lms_real_dlsym("GLIBC_2.2.5"));
    check_works(lms_real_dlsym("GLIBC_2.34"));
}

static const test_case cases[] = {
    {"in_libdl", in_libdl},
    {"in_neither", in_neither},
};

TEST_MAIN(cases)
