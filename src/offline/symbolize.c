/*
 * symbolize.c — offline symbolization with libdwfl (see symbolize.h).
 * Each module is reported to its own Dwfl session as an offline file; the
 * standard callbacks find separate debug information (.gnu_debuglink,
 * build-id under /usr/lib/debug) when the file has none of its own.
 */
#include "symbolize.h"

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MODULES 256

typedef struct module {
    char *path;            /* owned */
    Dwfl *dwfl;            /* NULL: the file could not be read */
    Dwfl_Module *mod;
} module;

struct lms_symbolizer {
    module mods[MODULES];
    int n;
};

static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

lms_symbolizer *lms_symbolizer_new(void)
{
    return calloc(1, sizeof(lms_symbolizer));
}

void lms_symbolizer_free(lms_symbolizer *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        if (s->mods[i].dwfl)
            dwfl_end(s->mods[i].dwfl);
        free(s->mods[i].path);
    }
    free(s);
}

/* The module of `path`, opened on first use; NULL when the cache is full. */
static module *open_module(lms_symbolizer *s, const char *path)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->mods[i].path, path) == 0)
            return &s->mods[i];
    if (s->n == MODULES)
        return NULL;
    module *m = &s->mods[s->n];
    *m = (module){.path = strdup(path)};
    if (!m->path)
        return NULL;
    s->n++;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return m;   /* only regular files: a trace may name anything */
    m->dwfl = dwfl_begin(&callbacks);
    if (m->dwfl) {
        dwfl_report_begin(m->dwfl);
        m->mod = dwfl_report_offline(m->dwfl, path, path, -1);
        dwfl_report_end(m->dwfl, NULL, NULL);
        if (!m->mod) {
            dwfl_end(m->dwfl);
            m->dwfl = NULL;
        }
    }
    return m;
}

bool lms_symbolize(lms_symbolizer *s, const char *module_path, uint64_t offset, lms_symbol *out)
{
    memset(out, 0, sizeof *out);
    if (!s || !module_path || module_path[0] != '/')
        return false;
    module *m = open_module(s, module_path);
    if (!m || !m->dwfl)
        return false;
    GElf_Addr bias = 0;
    if (!dwfl_module_getelf(m->mod, &bias))
        return false;
    GElf_Addr addr = (GElf_Addr)offset + bias;
    const char *name = dwfl_module_addrname(m->mod, addr);
    if (name)
        snprintf(out->fn, sizeof out->fn, "%s", name);
    Dwfl_Line *line = dwfl_module_getsrc(m->mod, addr);
    int lineno = 0;
    const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (file) {
        snprintf(out->file, sizeof out->file, "%s", file);
        out->line = lineno;
    }
    return name || file;
}
