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
#include <unistd.h>

#include "options.h"
#include "pystack.h"
#include "trace.h"

#define SITES 8192            /* distinct stacks remembered (open addressing) */

typedef struct site {
    uint64_t hash;            /* 0: empty */
    int32_t id;
    uint8_t depth, npy;
    uint32_t written;         /* the process generation whose trace has its line (see generation) */
    void *frames[LMS_STACK_MAX];
    lms_pyframe_key py[LMS_PY_MAX];   /* Python frames (pystack.c), innermost first */
} site;

static site *table;           /* SITES entries, allocated on first use, owned here */
static uintptr_t own_lo, own_hi;   /* lmshim's own code: frames there are skipped */
static int32_t next_id;
static uint32_t generation;   /* +1 in each fork child: its trace file is new, its sites undescribed */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* C++ demangling when the program carries libstdc++ (found at run time):
 * a malloc'd name the caller frees, or NULL. */
static char *demangle(const char *name)
{
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    static demangle_fn fn;
    static int looked;
    if (!looked) {
        fn = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        looked = 1;
    }
    if (!fn || strncmp(name, "_Z", 2) != 0)
        return NULL;
    int status = 0;
    char *d = fn(name, NULL, NULL, &status);
    if (d && status != 0) {
        free(d);
        d = NULL;
    }
    return d;
}

static char exe_path[4096];
static pthread_once_t exe_once = PTHREAD_ONCE_INIT;

static void read_exe(void)
{
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = 0;
}

/* The full path of the main program (dladdr gives argv[0], maybe relative). */
static const char *program_path(void)
{
    pthread_once(&exe_once, read_exe);
    return exe_path[0] ? exe_path : NULL;
}

/* Writes one site line: each native frame as return address, module path,
 * offset in the module's file and dladdr's name; the Python frames. The
 * line writer drops whole frames that do not fit and counts them. */
static void write_site(const site *s)
{
    lms_rec_frame fr[LMS_STACK_MAX];
    char *names[LMS_STACK_MAX];   /* demangled names, malloc'd, freed below */
    for (int i = 0; i < s->depth; i++) {
        Dl_info info;
        struct link_map *map = NULL;
        names[i] = NULL;
        fr[i] = (lms_rec_frame){.pc = (uint64_t)(uintptr_t)s->frames[i], .module = "?",
                                .offset = (uint64_t)(uintptr_t)s->frames[i], .fn = ""};
        /* The return address points after the call: look up the call itself. */
        if (dladdr1((char *)s->frames[i] - 1, &info, (void **)&map, RTLD_DL_LINKMAP) && map) {
            const char *path = map->l_name && map->l_name[0] ? map->l_name : program_path();
            fr[i].module = path ? path : info.dli_fname ? info.dli_fname : "?";
            fr[i].offset = (uint64_t)((uintptr_t)s->frames[i] - (uintptr_t)map->l_addr);
            if (info.dli_sname) {
                names[i] = demangle(info.dli_sname);
                fr[i].fn = names[i] ? names[i] : info.dli_sname;
            }
        }
    }
    lms_rec_pyframe py[LMS_PY_MAX];
    char strings[LMS_PY_MAX * 2 * 256];
    int npy = lms_pystack_describe(s->py, s->npy, py, strings, sizeof strings);
    lms_trace_write_site(&(lms_ev_site){.id = s->id, .frames = {fr, s->depth}, .py = {py, npy}});
    for (int i = 0; i < s->depth; i++)
        free(names[i]);
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
    lms_pyframe_key py[LMS_PY_MAX];
    int npy = lms_pystack_capture(py, depth < LMS_PY_MAX ? depth : LMS_PY_MAX);
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uintptr_t)raw[first + i]) * 1099511628211ull;
    for (int i = 0; i < npy; i++)
        h = (h ^ ((uint64_t)(uintptr_t)py[i].code + (uint64_t)py[i].line)) * 1099511628211ull;
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
            if (s->hash == h && s->depth == n && s->npy == npy &&
                memcmp(s->frames, raw + first, (size_t)n * sizeof(void *)) == 0 &&
                memcmp(s->py, py, (size_t)npy * sizeof *py) == 0) {
                id = s->id;
                if (s->written != generation) {   /* known from before a fork: not in this file */
                    s->written = generation;
                    fresh = *s;
                    is_new = true;
                }
                break;
            }
            if (!s->hash) {
                if (next_id < SITES - SITES / 8) {   /* keep the table from filling */
                    s->hash = h;
                    s->depth = (uint8_t)n;
                    s->npy = (uint8_t)npy;
                    memcpy(s->frames, raw + first, (size_t)n * sizeof(void *));
                    memcpy(s->py, py, (size_t)npy * sizeof *py);
                    lms_pystack_keep(py, npy);   /* its code objects stay: their addresses stay theirs */
                    s->id = id = next_id++;
                    s->written = generation;
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

void lms_stack_fork_prepare(void) { pthread_mutex_lock(&lock); }

void lms_stack_fork_parent(void) { pthread_mutex_unlock(&lock); }

/* The child's trace is a new file: sites are written again on first use
 * (entries change only when used: no page of the table is copied before). */
void lms_stack_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    generation++;
}
