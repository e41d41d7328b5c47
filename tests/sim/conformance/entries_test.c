/*
 * entries_test.c — the driver entry points that the real cudart 13 (shared
 * and static) and the cudart copies in cuBLAS, cuDNN and NCCL ask for
 * (tests/conformance/driver_entries.txt), put to cuGetProcAddress_v2:
 *   sim LIST TYPEDEFS   the simulated driver alone: every answer is
 *                       CUDA_SUCCESS; an entry it implements comes back as
 *                       the ABI variant cudaTypedefs.h assigns to that
 *                       version and stream mode; one it lacks comes back NULL
 *                       with SYMBOL_NOT_FOUND or VERSION_NOT_SUFFICIENT.
 *   shim LIST           under liblmshim.so: each answer is lmshim's hook when
 *                       the driver's variant is one of preload/hooks.def, and
 *                       the driver's own pointer otherwise. The driver's
 *                       answers come from this program re-run without the
 *                       preload (mode `answers`).
 */

#include <ctype.h>
#include <stdbool.h>
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/check.h"

#define MAX_ENTRIES 2048

typedef struct entry {
    char name[96];
    int version;
    unsigned long long flags;
} entry;

static entry entries[MAX_ENTRIES];
static int nentries;

/* Reads the list: "name version flags asked-by" lines, '#' comments. */
static void read_list(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        CHECK(nentries < MAX_ENTRIES);
        entry *e = &entries[nentries];
        CHECK(sscanf(line, "%95s %d %llu", e->name, &e->version, &e->flags) == 3);
        nentries++;
    }
    fclose(f);
    CHECK(nentries > 400);   /* the list is the full one */
}

/* The exported name of the function at p, or "-" for NULL. */
static const char *symbol_of(void *p, const char **object)
{
    Dl_info info;
    if (object)
        *object = "";
    if (!p)
        return "-";
    CHECK(dladdr(p, &info) != 0 && info.dli_sname != NULL);
    if (object)
        *object = info.dli_fname;
    return info.dli_sname;
}

/* ---- sim: the ABI variants of cudaTypedefs.h ---------------------------- */

static char *typedefs;   /* the header's text */

/* The ABI versions cudaTypedefs.h declares for `name` (PFN_<name>_v<N>,
 * legacy or, with per_thread, _ptds/_ptsz), ascending; returns how many. */
static int abi_versions(const char *name, bool per_thread, int *out, int max)
{
    char key[128];
    int n = snprintf(key, sizeof key, "PFN_%s_v", name);
    int count = 0;
    for (const char *s = strstr(typedefs, key); s; s = strstr(s + 1, key)) {
        const char *d = s + n;
        if (!isdigit((unsigned char)*d))
            continue;
        int v = atoi(d);
        while (isdigit((unsigned char)*d))
            d++;
        bool pt = strncmp(d, "_ptds", 5) == 0 || strncmp(d, "_ptsz", 5) == 0;
        if (pt != per_thread || (!pt && (isalnum((unsigned char)*d) || *d == '_')))
            continue;
        bool dup = false;
        for (int i = 0; i < count; i++)
            dup |= out[i] == v;
        if (!dup && count < max)
            out[count++] = v;
    }
    for (int i = 1; i < count; i++)   /* insertion sort */
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return count;
}

/* Symbols that do not follow name, name_v2, name_v3...: cuda.h maps them. */
static const struct { const char *name; int version; const char *symbol; } renamed[] = {
    {"cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags"},
};

/* The symbol of the ABI variant CUDA assigns to (name, version, flags), or
 * NULL when cudaTypedefs.h lists no variant that old. */
static bool expected_symbol(const entry *e, char *out, size_t size)
{
    int legacy[16], pt[16];
    int nl = abi_versions(e->name, false, legacy, 16);
    int np = abi_versions(e->name, true, pt, 16);
    int use_pt = -1;
    if (e->flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        for (int i = 0; i < np; i++)
            if (pt[i] <= e->version)
                use_pt = pt[i];
    int limit = use_pt >= 0 ? use_pt : e->version;
    int idx = -1;
    for (int i = 0; i < nl; i++)
        if (legacy[i] <= limit)
            idx = i;
    if (idx < 0)
        return false;
    for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++)
        if (!strcmp(renamed[i].name, e->name) && renamed[i].version == legacy[idx]) {
            snprintf(out, size, "%s%s", renamed[i].symbol, use_pt >= 0 ? "_pt" : "");
            return true;
        }
    if (idx == 0)
        snprintf(out, size, "%s", e->name);
    else
        snprintf(out, size, "%s_v%d", e->name, idx + 1);
    if (use_pt >= 0)
        strncat(out, "_pt", size - strlen(out) - 1);   /* then ds or sz */
    return true;
}

/* True when `got` is `want`, where a trailing "_pt" stands for _ptds or
 * _ptsz (cuda.h names per-thread variants of synchronous calls _ptds). */
static bool same_symbol(const char *got, const char *want)
{
    size_t n = strlen(want);
    if (n > 3 && !strcmp(want + n - 3, "_pt"))
        return !strncmp(got, want, n) && (!strcmp(got + n, "ds") || !strcmp(got + n, "sz"));
    return !strcmp(got, want);
}

static void sim_mode(const char *list, const char *header)
{
    read_list(list);
    FILE *f = fopen(header, "r");
    CHECK(f != NULL);
    typedefs = calloc(1, 4 << 20);
    CHECK(typedefs != NULL);
    size_t len = fread(typedefs, 1, (4 << 20) - 1, f);
    fclose(f);
    CHECK(len > 0);
    int implemented = 0, missing = 0, bad = 0;
    for (int i = 0; i < nentries; i++) {
        const entry *e = &entries[i];
        void *p = (void *)1;
        CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
        CHECK_IS(cuGetProcAddress_v2(e->name, &p, e->version, e->flags, &st), CUDA_SUCCESS);
        if (!p) {
            missing++;
            if (st != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && st != CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) {
                fprintf(stderr, "%s %d %llu: NULL with status %d\n", e->name, e->version, e->flags, (int)st);
                bad++;
            }
            continue;
        }
        implemented++;
        char want[160];
        const char *got = symbol_of(p, NULL);
        if (st != CU_GET_PROC_ADDRESS_SUCCESS || !expected_symbol(e, want, sizeof want) || !same_symbol(got, want)) {
            fprintf(stderr, "%s %d %llu: got %s (status %d), want %s\n", e->name, e->version, e->flags, got,
                    (int)st, expected_symbol(e, want, sizeof want) ? want : "no variant");
            bad++;
        }
    }
    printf("%d entries: %d implemented, %d not (NULL + not-found status), %d wrong\n", nentries,
           implemented, missing, bad);
    CHECK(bad == 0);
    CHECK(implemented > 100);
    free(typedefs);
}

/* ---- shim: hooks for hooks.def variants, the driver's pointer otherwise -- */

static const char *const hooked[] = {
#define LMS_HOOK(sym, base, version, ptds, required) #sym,
#include "hooks.def"
#undef LMS_HOOK
};

static bool is_hooked(const char *symbol)
{
    for (size_t i = 0; i < sizeof hooked / sizeof hooked[0]; i++)
        if (!strcmp(hooked[i], symbol))
            return true;
    return false;
}

/* Prints the driver's answer to every entry: its symbol, or "-". */
static void answers_mode(const char *list)
{
    read_list(list);
    for (int i = 0; i < nentries; i++) {
        const entry *e = &entries[i];
        void *p = NULL;
        CUdriverProcAddressQueryResult st;
        CHECK_IS(cuGetProcAddress_v2(e->name, &p, e->version, e->flags, &st), CUDA_SUCCESS);
        printf("%s\n", symbol_of(p, NULL));
    }
}

static void shim_mode(const char *self, const char *list)
{
    CHECK(dlsym(RTLD_DEFAULT, "lms_get_stats") != NULL);   /* preloaded */
    read_list(list);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "env -u LD_PRELOAD '%s' answers '%s'", self, list);
    FILE *ref = popen(cmd, "r");
    CHECK(ref != NULL);
    int hooks = 0, own = 0, bad = 0;
    for (int i = 0; i < nentries; i++) {
        const entry *e = &entries[i];
        char want[160];
        CHECK(fgets(want, sizeof want, ref) != NULL);
        want[strcspn(want, "\n")] = 0;
        void *p = NULL;
        CUdriverProcAddressQueryResult st;
        CHECK_IS(cuGetProcAddress_v2(e->name, &p, e->version, e->flags, &st), CUDA_SUCCESS);
        const char *object;
        const char *got = symbol_of(p, &object);
        bool in_shim = strstr(object, "liblmshim") != NULL;
        bool ok = !strcmp(got, want) && in_shim == (strcmp(want, "-") && is_hooked(want));
        if (!ok) {
            fprintf(stderr, "%s %d %llu: got %s from %s, driver answers %s\n", e->name, e->version, e->flags,
                    got, object, want);
            bad++;
        }
        hooks += in_shim;
        own += !in_shim && p;
    }
    CHECK(pclose(ref) == 0);
    printf("%d entries: %d hooks, %d driver pointers, %d wrong\n", nentries, hooks, own, bad);
    CHECK(bad == 0);
    CHECK(hooks >= 20);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s sim LIST TYPEDEFS | shim LIST | answers LIST\n", argv[0]);
        return 2;
    }
    CHECK_IS(cuInit(0), CUDA_SUCCESS);
    if (!strcmp(argv[1], "sim") && argc == 4)
        sim_mode(argv[2], argv[3]);
    else if (!strcmp(argv[1], "shim"))
        shim_mode(argv[0], argv[2]);
    else if (!strcmp(argv[1], "answers"))
        answers_mode(argv[2]);
    else
        return 2;
    return 0;
}
