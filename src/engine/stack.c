/*
 * stack.c — allocation sites (see stack.h).
 */
#include "stack.h"

#include <dlfcn.h>
#include <link.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "trace.h"

#define SITES 8192            /* distinct stacks remembered (open addressing) */

typedef struct site {
    uint64_t hash;            /* 0: empty */
    int32_t id;
    uint8_t depth;
    void *frames[LMS_STACK_MAX];
} site;

static site *table;           /* SITES entries, allocated on first use, owned here */
static uintptr_t own_lo, own_hi;   /* lmshim's own code: frames there are skipped */
static int32_t next_id;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* C++ demangling when the program carries libstdc++ (found at run time). */
static const char *demangle(const char *name, char *buf, size_t len)
{
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    static demangle_fn fn;
    static int looked;
    if (!looked) {
        fn = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        looked = 1;
    }
    if (!fn || strncmp(name, "_Z", 2) != 0)
        return name;
    int status = 0;
    char *d = fn(name, NULL, NULL, &status);
    if (!d || status != 0)
        return name;
    snprintf(buf, len, "%s", d);
    free(d);
    return buf;
}

/* Writes one site line: every frame as address, module+offset and name. */
static void write_site(const site *s)
{
    char frames[8192];
    size_t at = 0;
    for (int i = 0; i < s->depth && at + 512 < sizeof frames; i++) {
        Dl_info info;
        const char *module = "?", *name = "";
        uintptr_t off = (uintptr_t)s->frames[i];
        char dem[256];
        /* The return address points after the call: look up the call itself. */
        if (dladdr((char *)s->frames[i] - 1, &info) && info.dli_fname) {
            module = strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1 : info.dli_fname;
            off = (uintptr_t)s->frames[i] - (uintptr_t)info.dli_fbase;
            if (info.dli_sname)
                name = demangle(info.dli_sname, dem, sizeof dem);
        }
        char clean[256];
        size_t k = 0;
        for (const char *c = name; *c && k + 1 < sizeof clean; c++)
            if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20)
                clean[k++] = *c;
        clean[k] = 0;
        at += (size_t)snprintf(frames + at, sizeof frames - at, "%s{\"pc\":\"0x%llx\",\"module\":\"%s\",\"offset\":\"0x%llx\",\"fn\":\"%s\"}",
                               i ? "," : "", (unsigned long long)(uintptr_t)s->frames[i], module,
                               (unsigned long long)off, clean);
    }
    frames[at] = 0;
    lms_trace_site(s->id, frames);
}

/* Finds the executable segment of the object that holds this code. */
static int find_own(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t me = (uintptr_t)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < hi) {
            own_lo = lo;
            own_hi = hi;
            return 1;
        }
    }
    return 0;
}

int32_t lms_stack_site(int skip)
{
    int depth = lms_opt.stacks;
    if (depth <= 0 || !lms_trace_on)
        return -1;
    if (depth > LMS_STACK_MAX)
        depth = LMS_STACK_MAX;
    if (!own_hi)
        dl_iterate_phdr(find_own, (void *)(uintptr_t)&lms_stack_site);
    void *raw[LMS_STACK_MAX + 16];
    int n = unw_backtrace(raw, depth + skip + 16 < LMS_STACK_MAX + 16 ? depth + skip + 16 : LMS_STACK_MAX + 16);
    int first = skip;
    while (first < n && (uintptr_t)raw[first] >= own_lo && (uintptr_t)raw[first] < own_hi)
        first++;                                   /* lmshim's own frames */
    n -= first;
    if (n > depth)
        n = depth;
    if (n <= 0)
        return -1;
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uintptr_t)raw[first + i]) * 1099511628211ull;
    h |= 1;
    int32_t id = -1;
    site fresh;
    bool is_new = false;
    pthread_mutex_lock(&lock);
    if (!table)
        table = calloc(SITES, sizeof *table);
    if (table) {
        for (size_t k = 0, i = h % SITES; k < SITES; k++, i = (i + 1) % SITES) {
            site *s = &table[i];
            if (s->hash == h && s->depth == n && memcmp(s->frames, raw + first, (size_t)n * sizeof(void *)) == 0) {
                id = s->id;
                break;
            }
            if (!s->hash) {
                if (next_id < SITES - SITES / 8) {   /* keep the table from filling */
                    s->hash = h;
                    s->depth = (uint8_t)n;
                    memcpy(s->frames, raw + first, (size_t)n * sizeof(void *));
                    s->id = id = next_id++;
                    fresh = *s;
                    is_new = true;
                }
                break;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    if (is_new)
        write_site(&fresh);   /* symbolized outside the lock: dladdr takes the loader's */
    return id;
}
