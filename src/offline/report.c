/*
 * report.c — trace analysis and its three outputs (see report.h).
 *
 * Per rank (one trace file) and device it keeps the bytes now on the device
 * (device chunks at their charge, plus resident managed chunks), in managed
 * memory not resident, and in host memory; the peak; a sample after every
 * event that changes them; and fragmentation from the live device chunks'
 * addresses: holes = span - sum of sizes (chunks never overlap), rounding =
 * charges - sizes.
 */
#include "report.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "grow.h"
#include "jsonl.h"
#include "room.h"
#include "symbolize.h"
#include "trace_fields.h"
#include "units.h"

#define DEVS 16

typedef struct sample {
    double t;                       /* seconds since the file's first event */
    uint64_t device, resident, host;
    uint64_t holes, rounding;
} sample;

typedef struct mark { double t; char kind; } mark;   /* 'o': out of memory, 'f': fallback */

typedef struct move { double t; bool evict; uint64_t bytes; uint32_t id; } move;

typedef struct interval { uint64_t lo, size; } interval;

typedef struct dev_state {
    bool seen;
    uint64_t budget, physical;
    uint64_t device, resident, host, peak;
    uint64_t allocs[5], fallbacks, oom, prefetched, evicted, launches;
    uint64_t requested, charged;    /* live device chunks */
    uint64_t managed, managed_peak; /* live managed chunks' bytes (the engine's: with an id), and their most at once */
    uint64_t named;                 /* bytes of managed chunks named by launches (a chunk's size each time) */
    uint64_t device_at_peak;        /* the most device and VMM charges while the managed bytes were at their peak */
    uint64_t device_at_launch;      /* the same over the launches while they were at their peak */
    bool launched_at_peak;          /* a launch came while they were at their (latest) peak */
    interval *live;                 /* live device chunks sorted by address */
    size_t nlive, caplive;
    sample *samples;
    size_t nsamples, capsamples;
    mark *marks;
    size_t nmarks, capmarks;
    move *moves;
    size_t nmoves, capmoves;
} dev_state;

/* One frame of a site, Python or native, as the report names it. */
typedef struct site_frame {
    bool python;
    char *fn;                       /* function ("?" if unknown), owned */
    char *file;                     /* source file, or NULL; owned */
    int line;                       /* source line, 0 if unknown */
    char *module;                   /* native: full path of the object ("?"), owned; Python: NULL */
    uint64_t offset;                /* native: the return address in the module's file */
} site_frame;

typedef struct site {
    int id;
    char *text;                     /* one line per frame (Python frames first), newline-separated, owned */
    site_frame *frames;             /* the same frames, owned; innermost first within each kind */
    int nframes;
    uint64_t dropped;               /* frames the writer left out */
    uint64_t live, peak, count;
    uint64_t moved;                 /* bytes of its managed chunks fetched or evicted */
} site;

typedef struct alloc_rec {          /* a live allocation of the file */
    uint64_t ptr, size, charge;
    int dev, place, site;
    int64_t id;                     /* managed chunk id, or -1 */
    uint64_t resident;              /* bytes of it on the device (a chunk moved in pieces: part of it) */
} alloc_rec;

typedef struct file_state {
    char *path;
    int rank;
    double t0;                      /* first timestamp (s); <0 unknown */
    double frac;                    /* the run's LMS_FRAC (its header's options); <0 unknown */
    char frac_text[32];             /* the same as the header writes it ("" unknown) */
    bool no_fetch;                  /* its LMS_POLICY is "none": managed chunks are never fetched */
    dev_state dev[DEVS];
    site *sites;
    size_t nsites, capsites;
    lms_addrmap allocs;             /* ptr -> alloc_rec */
    lms_addrmap managed;            /* managed chunk id + 1 -> its ptr (uint64_t) */
    lms_addrmap site_index;         /* site id + 1 -> its index in sites (size_t), while reading */
    uint64_t lines, bad;
    lms_symbolizer *sym;            /* the report's */
} file_state;

struct lms_report {
    file_state **files;             /* one per trace file (a job may have thousands), owned */
    int nfiles;
    size_t capfiles;
    lms_symbolizer *sym;            /* names frames dladdr could not; owned */
};

static const char *const place_names[5] = {"device", "managed", "host", "vmm", "pinned"};

lms_report *lms_report_new(void)
{
    lms_report *r = calloc(1, sizeof(lms_report));
    if (r)
        r->sym = lms_symbolizer_new();
    return r;
}

/* Frees a site's frames and text. */
static void free_site(site *s)
{
    for (int i = 0; i < s->nframes; i++) {
        free(s->frames[i].fn);
        free(s->frames[i].file);
        free(s->frames[i].module);
    }
    free(s->frames);
    free(s->text);
    s->frames = NULL;
    s->nframes = 0;
    s->text = NULL;
}

void lms_report_free(lms_report *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nfiles; i++) {
        file_state *f = r->files[i];
        for (int d = 0; d < DEVS; d++) {
            free(f->dev[d].live);
            free(f->dev[d].samples);
            free(f->dev[d].marks);
            free(f->dev[d].moves);
        }
        for (size_t s = 0; s < f->nsites; s++)
            free_site(&f->sites[s]);
        free(f->sites);
        lms_addrmap_free(&f->allocs);
        lms_addrmap_free(&f->managed);
        lms_addrmap_free(&f->site_index);
        free(f->path);
        free(f);
    }
    lms_symbolizer_free(r->sym);
    free(r->files);
    free(r);
}

/* ---- reading ------------------------------------------------------------- */

/* The alloc record of a live managed chunk id, or NULL (through the id
 * index: a long run writes far more prefetch/evict lines than allocations,
 * and may keep many chunks alive). */
static alloc_rec *managed_by_id(file_state *f, int64_t id)
{
    uint64_t *ptr = id >= 0 ? lms_addrmap_get(&f->managed, (uint64_t)id + 1) : NULL;
    alloc_rec *a = ptr ? lms_addrmap_get(&f->allocs, *ptr) : NULL;
    return a && a->id == id ? a : NULL;
}

/* The site of an id (through the index: a trace may hold thousands of
 * sites and millions of lines naming them), created when `create`; NULL if
 * absent or out of memory. */
static site *site_of(file_state *f, int id, bool create)
{
    size_t *at = id >= 0 ? lms_addrmap_get(&f->site_index, (uint64_t)id + 1) : NULL;
    if (at)
        return &f->sites[*at];
    if (!create || id < 0 || !lms_grow((void **)&f->sites, &f->capsites, f->nsites + 1, sizeof *f->sites, 256) ||
        !lms_addrmap_put(&f->site_index, (uint64_t)id + 1, &f->nsites))
        return NULL;
    site *s = &f->sites[f->nsites++];
    *s = (site){.id = id};
    return s;
}

/* Inserts or removes a live device chunk in the sorted list. */
static void track_interval(dev_state *d, uint64_t lo, uint64_t size, bool add)
{
    size_t a = 0, b = d->nlive;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (d->live[m].lo < lo)
            a = m + 1;
        else
            b = m;
    }
    if (add) {
        if (!lms_grow((void **)&d->live, &d->caplive, d->nlive + 1, sizeof *d->live, 256))
            return;
        memmove(&d->live[a + 1], &d->live[a], (d->nlive - a) * sizeof *d->live);
        d->live[a] = (interval){lo, size};
        d->nlive++;
        d->requested += size;
    } else if (a < d->nlive && d->live[a].lo == lo) {
        d->requested -= d->live[a].size;
        memmove(&d->live[a], &d->live[a + 1], (d->nlive - a - 1) * sizeof *d->live);
        d->nlive--;
    }
}

/* Records the device's state after an event at time t. */
static void sample_now(dev_state *d, double t)
{
    uint64_t used = d->device + d->resident;
    if (used > d->peak)
        d->peak = used;
    if (!lms_grow((void **)&d->samples, &d->capsamples, d->nsamples + 1, sizeof *d->samples, 256))
        return;
    uint64_t span = d->nlive ? d->live[d->nlive - 1].lo + d->live[d->nlive - 1].size - d->live[0].lo : 0;
    d->samples[d->nsamples++] = (sample){t, d->device, d->resident, d->host,
                                         span > d->requested ? span - d->requested : 0,
                                         d->charged > d->requested ? d->charged - d->requested : 0};
}

static int place_index(const char *p)
{
    for (int i = 0; i < 5; i++)
        if (strcmp(place_names[i], p) == 0)
            return i;
    return -1;
}

/* Appends one formatted line to a growing text; false when out of memory. */
static bool add_text(char **text, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool add_text(char **text, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return false;
    if (*len + (size_t)n + 1 > *cap) {
        size_t ncap = (*len + (size_t)n + 1) * 2;
        char *t = realloc(*text, ncap);
        if (!t)
            return false;
        *text = t;
        *cap = ncap;
    }
    va_start(ap, fmt);
    vsnprintf(*text + *len, *cap - *len, fmt, ap);
    va_end(ap);
    *len += (size_t)n;
    return true;
}

/* The file name at the end of a path. */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Copies s into out (cap bytes) for the site's text, where a newline ends
 * a frame: control characters become visible escapes (\n, \t, \r, \xHH),
 * so that every frame, whatever its names hold, stays one line. Returns out. */
static const char *one_line(const char *s, char *out, size_t cap)
{
    size_t at = 0;
    for (; *s && at + 5 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != 0x7f)
            out[at++] = (char)c;
        else if (c == '\n' || c == '\t' || c == '\r') {
            out[at++] = '\\';
            out[at++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        } else
            at += (size_t)snprintf(out + at, cap - at, "\\x%02x", c);
    }
    out[at] = 0;
    return out;
}

/* Reads the frames of one list (Python or native) of a site line into st,
 * naming native frames dladdr could not name from the module's symbols and
 * debug information (symbolize.c). */
static bool take_frames(file_state *f, const lms_json *j, int list, bool python, site *st, char **text,
                        size_t *len, size_t *cap)
{
    if (list < 0 || j->nodes[list].type != LMS_JSON_ARRAY)
        return true;
    site_frame *fr = realloc(st->frames, (size_t)(st->nframes + j->nodes[list].count + 1) * sizeof *fr);
    if (!fr)
        return false;
    st->frames = fr;
    for (int c = j->nodes[list].first_child; c >= 0; c = j->nodes[c].next) {
        char fn[512] = "", file[1024] = "", mod[1024] = "?", off[32] = "0";
        long long line = 0;
        site_frame *x = &st->frames[st->nframes];
        *x = (site_frame){.python = python};
        if (python) {
            lms_json_string(j, c, LMS_TF(pyframe, fn, STR), fn, sizeof fn);
            lms_json_string(j, c, LMS_TF(pyframe, file, STR), file, sizeof file);
            lms_json_int(j, c, LMS_TF(pyframe, line, I64), 0, 1e9, &line);
        } else {
            lms_json_string(j, c, LMS_TF(frame, fn, STR), fn, sizeof fn);
            lms_json_string(j, c, LMS_TF(frame, module, STR), mod, sizeof mod);
            lms_json_string(j, c, LMS_TF(frame, offset, HEX), off, sizeof off);
            x->offset = strtoull(off, NULL, 16);
            lms_symbol sym;
            /* the return address follows the call: name the call */
            if (x->offset && lms_symbolize(f->sym, mod, x->offset - 1, &sym)) {
                if (!fn[0])
                    snprintf(fn, sizeof fn, "%s", sym.fn);
                snprintf(file, sizeof file, "%s", sym.file);
                line = sym.line;
            }
            x->module = strdup(mod);
            if (!x->module)
                return false;
        }
        x->fn = strdup(fn[0] ? fn : "?");
        x->file = file[0] ? strdup(file) : NULL;
        x->line = (int)line;
        st->nframes++;
        if (!x->fn)
            return false;
        bool ok;
        char sfn[4 * sizeof fn], sfile[4 * sizeof file], smod[4 * sizeof mod];
        one_line(x->fn, sfn, sizeof sfn);
        one_line(python ? (file[0] ? file : "?") : base_name(file), sfile, sizeof sfile);
        if (python)
            ok = add_text(text, len, cap, "%s (%s:%d) [python]\n", sfn, sfile, x->line);
        else if (file[0])
            ok = add_text(text, len, cap, "%s (%s:%d, %s+0x%llx)\n", sfn, sfile, x->line,
                          one_line(base_name(mod), smod, sizeof smod), (unsigned long long)x->offset);
        else
            ok = add_text(text, len, cap, "%s (%s+0x%llx)\n", sfn, one_line(base_name(mod), smod, sizeof smod),
                          (unsigned long long)x->offset);
        if (!ok)
            return false;
    }
    return true;
}

/* A site line: its frames, Python first, then native. */
static const char *take_site(file_state *f, const lms_json *j)
{
    long long iv, dropped = 0;
    int frames = lms_json_get(j, 0, LMS_TF(site, frames, FRAMES));
    if (!lms_json_int(j, 0, LMS_TF(site, id, I64), 0, 1e9, &iv) || frames < 0 ||
        j->nodes[frames].type != LMS_JSON_ARRAY)
        return "site without id or frames";
    site *st = site_of(f, (int)iv, true);
    if (!st)
        return "out of memory";
    free_site(st);
    lms_json_int(j, 0, LMS_TF(site, dropped, DROPPED), 0, 1e9, &dropped);
    st->dropped = (uint64_t)dropped;
    char *text = NULL;
    size_t len = 0, cap = 0;
    bool ok = add_text(&text, &len, &cap, "%s", "") &&
              take_frames(f, j, lms_json_get(j, 0, LMS_TF(site, py, PYFRAMES)), true, st, &text, &len, &cap) &&
              take_frames(f, j, frames, false, st, &text, &len, &cap) &&
              (!dropped || add_text(&text, &len, &cap, "(%lld more frames left out of the trace)\n", dropped));
    st->text = text;
    return ok ? NULL : "out of memory";
}

/* Reads the run's LMS_FRAC from node `node` of a header's options: a
 * string as lmshim writes options (digits and at most one point, no sign,
 * space or exponent, at most 1), whole (not cut by the buffer, no NUL);
 * anything else leaves it unknown (-1). */
static void take_frac(file_state *f, const lms_json *j, int node)
{
    char text[sizeof f->frac_text];
    double v;
    f->frac = -1;
    f->frac_text[0] = 0;
    if (j->nodes[node].type != LMS_JSON_STRING)
        return;
    size_t n = lms_json_unescape(j->nodes[node].str, j->nodes[node].str_len, text, sizeof text - 1);
    if (n >= sizeof text - 1)
        return;
    text[n] = 0;
    if (strlen(text) != n || !lms_parse_decimal(text, &v) || v > 1)
        return;
    f->frac = v;
    memcpy(f->frac_text, text, n + 1);
}

/* Takes a chunk the allocation map no longer holds (a) off its device's
 * bytes, its managed id and its site's live bytes, at time t. */
static void retire(file_state *f, const alloc_rec *a, double t)
{
    uint64_t *owner = a->id >= 0 ? lms_addrmap_get(&f->managed, (uint64_t)a->id + 1) : NULL;
    if (owner && *owner == a->ptr)
        lms_addrmap_take(&f->managed, (uint64_t)a->id + 1, NULL);
    dev_state *ad = &f->dev[a->dev];
    if (a->place == 0 || a->place == 3) {
        ad->device -= a->charge;
        if (a->place == 0) {
            ad->charged -= a->charge;
            track_interval(ad, a->ptr, a->size, false);
        }
    } else {
        ad->resident -= a->resident;
        ad->host -= a->size - a->resident;
        if (a->place == 1 && a->id >= 0)
            ad->managed -= a->size;
    }
    site *st = a->site >= 0 ? site_of(f, a->site, false) : NULL;
    if (st)
        st->live -= a->size;
    sample_now(ad, t);
}

/* Interprets one line of a trace. */
static const char *take(const lms_json *j, size_t lineno, void *ctx)
{
    (void)lineno;
    file_state *f = ctx;
    char type[16], s[64];
    double v, tt = 0;
    long long dv = 0, iv;
    if (j->nodes[0].type != LMS_JSON_OBJECT || !lms_json_string(j, 0, LMS_TF_TYPE, type, sizeof type))
        return "not an event (no \"type\")";
    if (strcmp(type, LMS_TE(header)) == 0) {
        if (lms_json_int(j, 0, LMS_TF(header, rank, I64), 0, 1e9, &iv))
            f->rank = (int)iv;
        if (lms_json_number(j, 0, LMS_TF(header, t, TIME), &v) && v >= 0 && v < 1e19)
            f->t0 = v / 1e9;
        int opts = lms_json_get(j, 0, LMS_TF(header, options, OPTIONS));
        int frac = opts >= 0 ? lms_json_get(j, opts, "LMS_FRAC") : -1;
        if (frac >= 0)
            take_frac(f, j, frac);
        char policy[16];
        if (opts >= 0 && lms_json_string(j, opts, "LMS_POLICY", policy, sizeof policy))
            f->no_fetch = strcmp(policy, "none") == 0;
        return NULL;
    }
    if (strcmp(type, LMS_TE(site)) == 0)
        return take_site(f, j);
    if (strcmp(type, LMS_TE(summary)) == 0)
        return NULL;
    if (!lms_json_int(j, 0, LMS_TF(alloc, dev, I64), 0, DEVS - 1, &dv))
        return "no valid \"dev\"";
    if (!lms_json_number(j, 0, LMS_TF(alloc, t, TIME), &tt) || !(tt >= 0 && tt < 1e19))
        return "no valid \"t\"";
    if (f->t0 < 0)
        f->t0 = tt / 1e9;
    double t = tt / 1e9 - f->t0;
    dev_state *d = &f->dev[(int)dv];
    d->seen = true;
    if (strcmp(type, LMS_TE(device)) == 0) {
        if (lms_json_int(j, 0, LMS_TF(device, budget, U64), 0, 9e18, &iv))
            d->budget = (uint64_t)iv;
        if (lms_json_int(j, 0, LMS_TF(device, physical, U64), 0, 9e18, &iv))
            d->physical = (uint64_t)iv;
        return NULL;
    }
    if (strcmp(type, LMS_TE(alloc)) == 0) {
        long long size, charge = 0, id = -1, site_id = -1;
        char place[16];
        if (!lms_json_string(j, 0, LMS_TF(alloc, ptr, HEX), s, sizeof s) ||
            !lms_json_int(j, 0, LMS_TF(alloc, size, U64), 0, 9e18, &size) ||
            !lms_json_string(j, 0, LMS_TF(alloc, place, STR), place, sizeof place))
            return "alloc without valid ptr, size or place";
        if ((lms_json_get(j, 0, LMS_TF(alloc, charge, U64)) >= 0 &&
             !lms_json_int(j, 0, LMS_TF(alloc, charge, U64), 0, 9e18, &charge)) ||
            (lms_json_get(j, 0, LMS_TF(alloc, id, I64)) >= 0 && !lms_json_int(j, 0, LMS_TF(alloc, id, I64), -1, 1e9, &id)) ||
            (lms_json_get(j, 0, LMS_TF(alloc, site, I64)) >= 0 &&
             !lms_json_int(j, 0, LMS_TF(alloc, site, I64), -1, 1e9, &site_id)))
            return "bad charge, id or site";
        int p = place_index(place);
        if (p < 0)
            return "unknown place";
        alloc_rec a = {.ptr = strtoull(s, NULL, 16), .size = (uint64_t)size, .charge = (uint64_t)charge,
                       .dev = (int)dv, .place = p, .site = (int)site_id, .id = (int64_t)id};
        if (!a.ptr)
            return "bad ptr";
        alloc_rec old;   /* live still: its free was not traced, and the address is this chunk's now */
        if (lms_addrmap_take(&f->allocs, a.ptr, &old))
            retire(f, &old, t);
        if (!lms_addrmap_put(&f->allocs, a.ptr, &a) ||
            (a.id >= 0 && !lms_addrmap_put(&f->managed, (uint64_t)a.id + 1, &a.ptr)))
            return "out of memory";
        d->allocs[p]++;
        if (p == 0 || p == 3) {
            d->device += a.charge;
            if (p == 0) {
                d->charged += a.charge;
                track_interval(d, a.ptr, a.size, true);
            }
        } else {
            d->host += a.size;
        }
        if (p == 1 && a.id >= 0)   /* the residency engine's (the program's own managed memory has no id) */
            d->managed += a.size;
        /* a new managed peak takes the device chunks of this moment; at
         * the peak still, more device chunks leave less room */
        if (p == 1 && d->managed > d->managed_peak) {
            d->managed_peak = d->managed;
            d->device_at_peak = d->device;
            d->device_at_launch = 0;
            d->launched_at_peak = false;
        } else if (d->managed_peak && d->managed == d->managed_peak && d->device > d->device_at_peak) {
            d->device_at_peak = d->device;
        }
        site *st = a.site >= 0 ? site_of(f, a.site, true) : NULL;
        if (st) {
            st->live += a.size;
            st->count++;
            if (st->live > st->peak)
                st->peak = st->live;
        }
        sample_now(d, t);
        return NULL;
    }
    if (strcmp(type, LMS_TE(free)) == 0) {
        alloc_rec a;
        if (!lms_json_string(j, 0, LMS_TF(free, ptr, HEX), s, sizeof s))
            return "free without ptr";
        if (lms_addrmap_take(&f->allocs, strtoull(s, NULL, 16), &a))
            retire(f, &a, t);
        return NULL;   /* else allocated before the trace began */
    }
    if (strcmp(type, LMS_TE(prefetch)) == 0 || strcmp(type, LMS_TE(evict)) == 0) {
        long long id, bytes;
        if (!lms_json_int(j, 0, LMS_TF2(prefetch, evict, id, U64), 0, 1e9, &id) ||
            !lms_json_int(j, 0, LMS_TF2(prefetch, evict, bytes, U64), 0, 9e18, &bytes))
            return "prefetch/evict without valid id or bytes";
        bool evict = type[0] == 'e';
        alloc_rec *a = managed_by_id(f, (int64_t)id);
        if (a && a->dev != (int)dv)
            return "prefetch/evict of a chunk of another device";   /* its bytes are counted there */
        if (a) {   /* a piece of a chunk moves its bytes only */
            uint64_t n = evict ? a->resident : a->size - a->resident;
            if ((uint64_t)bytes < n)
                n = (uint64_t)bytes;
            if (evict) {
                a->resident -= n;
                d->resident -= n;
                d->host += n;
            } else {
                a->resident += n;
                d->resident += n;
                d->host -= n;
            }
        }
        site *from = a && a->site >= 0 ? site_of(f, a->site, false) : NULL;
        if (from)
            from->moved += (uint64_t)bytes;
        if (evict)
            d->evicted += (uint64_t)bytes;
        else
            d->prefetched += (uint64_t)bytes;
        if (lms_grow((void **)&d->moves, &d->capmoves, d->nmoves + 1, sizeof *d->moves, 256))
            d->moves[d->nmoves++] = (move){t, evict, (uint64_t)bytes, (uint32_t)id};
        sample_now(d, t);
        return NULL;
    }
    if (strcmp(type, LMS_TE(oom)) == 0 || strcmp(type, LMS_TE(fallback)) == 0) {
        if (type[0] == 'o')
            d->oom++;
        else
            d->fallbacks++;
        if (lms_grow((void **)&d->marks, &d->capmarks, d->nmarks + 1, sizeof *d->marks, 256))
            d->marks[d->nmarks++] = (mark){t, type[0]};
        return NULL;
    }
    if (strcmp(type, LMS_TE(launch)) == 0) {
        d->launches++;
        if (d->managed_peak && d->managed == d->managed_peak) {   /* the room this launch ran in */
            d->launched_at_peak = true;
            if (d->device > d->device_at_launch)
                d->device_at_launch = d->device;
        }
        int arr = lms_json_get(j, 0, LMS_TF(launch, chunks, IDS));
        for (int c = arr >= 0 && j->nodes[arr].type == LMS_JSON_ARRAY ? j->nodes[arr].first_child : -1; c >= 0;
             c = j->nodes[c].next) {
            double v = j->nodes[c].num;
            alloc_rec *a = j->nodes[c].type == LMS_JSON_NUMBER && v >= 0 && v <= 1e9 && v == (double)(int64_t)v
                               ? managed_by_id(f, (int64_t)v) : NULL;
            if (a && a->dev == (int)dv)
                d->named = d->named > UINT64_MAX - a->size ? UINT64_MAX : d->named + a->size;
        }
        return NULL;
    }
    return NULL;   /* a newer event type */
}

int lms_report_add(lms_report *r, const char *path, FILE *errors)
{
    if (r->nfiles == INT32_MAX || !lms_grow((void **)&r->files, &r->capfiles, (size_t)r->nfiles + 1, sizeof *r->files, 256))
        return -1;
    file_state *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->path = strdup(path);
    f->rank = r->nfiles;
    f->t0 = -1;
    f->frac = -1;
    f->sym = r->sym;
    lms_addrmap_init(&f->allocs, sizeof(alloc_rec));
    lms_addrmap_init(&f->managed, sizeof(uint64_t));
    lms_addrmap_init(&f->site_index, sizeof(size_t));
    lms_jsonl_counts c = {0};
    if (!f->path || lms_jsonl_file(path, take, f, errors, &c) != 0) {
        free(f->path);
        free(f);
        return -1;
    }
    f->lines = c.lines;
    f->bad = c.bad;
    r->files[r->nfiles++] = f;
    return 0;
}

void lms_report_add_text(lms_report *r, const char *name, const char *text, size_t len, FILE *errors)
{
    if (r->nfiles == INT32_MAX || !lms_grow((void **)&r->files, &r->capfiles, (size_t)r->nfiles + 1, sizeof *r->files, 256))
        return;
    file_state *f = calloc(1, sizeof *f);
    if (!f)
        return;
    f->path = strdup(name);
    f->rank = r->nfiles;
    f->t0 = -1;
    f->frac = -1;
    f->sym = r->sym;
    lms_addrmap_init(&f->allocs, sizeof(alloc_rec));
    lms_addrmap_init(&f->managed, sizeof(uint64_t));
    lms_addrmap_init(&f->site_index, sizeof(size_t));
    lms_jsonl_counts c = {0};
    lms_jsonl_text(name, text, len, take, f, errors, &c);
    f->lines = c.lines;
    f->bad = c.bad;
    r->files[r->nfiles++] = f;
}

/* The sample printed after sample k of n, `step` apart: the last sample is
 * always printed; n when k was the last. */
static size_t next_sample(size_t k, size_t step, size_t n)
{
    if (k + 1 >= n)
        return n;
    return k + step < n ? k + step : n - 1;
}

/* ---- text ------------------------------------------------------------------ */

static const char *sz(char *buf, uint64_t b)
{
    lms_format_size(buf, 32, b);
    return buf;
}

static int by_peak(const void *a, const void *b)
{
    uint64_t x = ((const site *)a)->peak, y = ((const site *)b)->peak;
    return (x < y) - (x > y);
}

/* The room line and hint (src/common/room.c) of a device, from the trace:
 * the room is the budget less the most device chunks at a launch while the
 * managed chunks were at their peak (device chunks allocated after the
 * peak count, those freed before the first launch do not; without such a
 * launch, the most device chunks while they were at their peak). */
static void room_line(const dev_state *d, const file_state *f, FILE *out)
{
    lms_room r = {.budget = d->budget, .device = d->launched_at_peak ? d->device_at_launch : d->device_at_peak,
                  .managed_peak = d->managed_peak, .fetched = d->prefetched, .named = d->named, .frac = f->frac,
                  .frac_text = f->frac_text, .no_fetch = f->no_fetch};
    char text[1024];
    fputs(lms_room_text(text, sizeof text, "  ", &r) ? text : "", out);
}

void lms_report_text(const lms_report *r, FILE *out)
{
    char a[32], b[32], c[32], d2[32], e[32];
    fprintf(out, "%-5s %-4s %10s %10s %7s %8s %6s %7s %9s %4s %11s %10s %9s\n", "rank", "dev", "peak_used", "budget",
            "device", "managed", "host", "pinned", "fallbacks", "oom", "prefetched", "evicted", "launches");
    for (int i = 0; i < r->nfiles; i++)
        for (int dv = 0; dv < DEVS; dv++) {
            const dev_state *d = &r->files[i]->dev[dv];
            if (!d->seen)
                continue;
            fprintf(out, "%-5d %-4d %10s %10s %7llu %8llu %6llu %7llu %9llu %4llu %11s %10s %9llu\n",
                    r->files[i]->rank, dv, sz(a, d->peak), sz(b, d->budget), (unsigned long long)d->allocs[0],
                    (unsigned long long)d->allocs[1], (unsigned long long)d->allocs[2],
                    (unsigned long long)d->allocs[4], (unsigned long long)d->fallbacks, (unsigned long long)d->oom,
                    sz(c, d->prefetched), sz(d2, d->evicted), (unsigned long long)d->launches);
        }
    for (int i = 0; i < r->nfiles; i++) {
        file_state *f = r->files[i];
        fprintf(out, "\n== rank %d (%s): %llu lines, %llu skipped\n", f->rank, f->path, (unsigned long long)f->lines,
                (unsigned long long)f->bad);
        for (int dv = 0; dv < DEVS; dv++) {
            const dev_state *d = &f->dev[dv];
            if (!d->seen)
                continue;
            uint64_t max_holes = 0, max_round = 0;
            double at_holes = 0;
            for (size_t k = 0; k < d->nsamples; k++) {
                if (d->samples[k].holes > max_holes) {
                    max_holes = d->samples[k].holes;
                    at_holes = d->samples[k].t;
                }
                if (d->samples[k].rounding > max_round)
                    max_round = d->samples[k].rounding;
            }
            fprintf(out, "device %d: peak used %s of budget %s (device %s)\n", dv, sz(a, d->peak), sz(b, d->budget),
                    sz(c, d->physical));
            fprintf(out, "  fragmentation: most holes %s (at %.3f s), most rounding %s\n", sz(a, max_holes), at_holes,
                    sz(b, max_round));
            room_line(d, f, out);
            /* About eight samples spread over the run, and always the
             * last one: the state the trace ends in. */
            size_t step = d->nsamples > 8 ? d->nsamples / 8 : 1;
            for (size_t k = 0; k < d->nsamples; k = next_sample(k, step, d->nsamples)) {
                const sample *s = &d->samples[k];
                fprintf(out, "    t=%.3fs device=%s resident=%s host=%s holes=%s rounding=%s\n", s->t, sz(a, s->device),
                        sz(b, s->resident), sz(c, s->host), sz(d2, s->holes), sz(e, s->rounding));
            }
        }
        if (f->nsites) {
            qsort(f->sites, f->nsites, sizeof *f->sites, by_peak);
            for (size_t k = 0; k < f->nsites; k++)   /* the index follows (same keys: no allocation) */
                lms_addrmap_put(&f->site_index, (uint64_t)f->sites[k].id + 1, &k);
        }
        fprintf(out, "  top allocation sites by peak live bytes:\n");
        for (size_t s = 0; s < f->nsites && s < 5; s++) {
            fprintf(out, "    %zu. site %d: peak %s in %llu allocations\n", s + 1, f->sites[s].id,
                    sz(a, f->sites[s].peak), (unsigned long long)f->sites[s].count);
            const char *t = f->sites[s].text ? f->sites[s].text : "(no stack: LMS_STACKS=0)\n";
            for (const char *l = t; *l;) {
                const char *nl = strchr(l, '\n');
                size_t n = nl ? (size_t)(nl - l) : strlen(l);
                fprintf(out, "         %.*s\n", (int)n, l);
                l += n + (nl != NULL);
            }
        }
    }
}

/* ---- SVG timeline ------------------------------------------------------------ */

int lms_report_svg(const lms_report *r, const char *path)
{
    enum { W = 900, PH = 220, TOP = 30, LEFT = 80, RIGHT = 170 };
    int panels = 0;
    for (int i = 0; i < r->nfiles; i++)
        for (int dv = 0; dv < DEVS; dv++)
            panels += r->files[i]->dev[dv].seen;
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    int height = TOP + (panels ? panels : 1) * (PH + 40);
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
                 "font-size=\"12\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
                 "<text x=\"%d\" y=\"20\" font-size=\"15\">lmshim memory timeline</text>\n",
            W, height, W, height, LEFT);
    static const char *const names[3] = {"on device", "resident managed", "host"};
    static const char *const colors[3] = {"#1f77b4", "#2ca02c", "#ff7f0e"};
    int panel = 0;
    for (int i = 0; i < r->nfiles; i++)
        for (int dv = 0; dv < DEVS; dv++) {
            const dev_state *d = &r->files[i]->dev[dv];
            if (!d->seen)
                continue;
            double y0 = TOP + panel * (PH + 40) + 20, pw = W - LEFT - RIGHT;
            double tmax = 1e-9;
            uint64_t ymax = d->budget;
            for (size_t k = 0; k < d->nsamples; k++) {
                const sample *s = &d->samples[k];
                tmax = s->t > tmax ? s->t : tmax;
                uint64_t m = s->device > s->host ? s->device : s->host;
                m = s->resident > m ? s->resident : m;
                ymax = m > ymax ? m : ymax;
            }
            if (!ymax)
                ymax = 1;
            char a[32], b[32];
            fprintf(out, "<text x=\"%d\" y=\"%.0f\">rank %d, device %d (budget %s)</text>\n", LEFT, y0 - 6,
                    r->files[i]->rank, dv, sz(a, d->budget));
            fprintf(out, "<rect x=\"%d\" y=\"%.0f\" width=\"%.0f\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n",
                    LEFT, y0, pw, PH);
            fprintf(out, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">%s</text><text x=\"%d\" y=\"%.0f\" "
                         "text-anchor=\"end\">0</text><text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.3g %s</text>\n",
                    LEFT - 6, y0 + 10, sz(b, ymax), LEFT - 6, y0 + PH, LEFT + pw, y0 + PH + 16,
                    tmax >= 1 ? tmax : tmax * 1e3, tmax >= 1 ? "s" : "ms");
            if (d->budget && d->budget <= ymax) {
                double yb = y0 + PH - (double)d->budget / (double)ymax * PH;
                fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#999\" "
                             "stroke-dasharray=\"4 3\"/><text x=\"%.0f\" y=\"%.1f\" fill=\"#666\">budget</text>\n",
                        LEFT, yb, LEFT + pw, yb, LEFT + pw + 4, yb + 4);
            }
            for (int sidx = 0; sidx < 3; sidx++) {
                fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%d,%.1f ", colors[sidx],
                        LEFT, y0 + PH);
                uint64_t prev = 0;
                for (size_t k = 0; k < d->nsamples; k++) {
                    const sample *s = &d->samples[k];
                    uint64_t v = sidx == 0 ? s->device : sidx == 1 ? s->resident : s->host;
                    double x = LEFT + s->t / tmax * pw;
                    fprintf(out, "%.1f,%.1f %.1f,%.1f ", x, y0 + PH - (double)prev / (double)ymax * PH, x,
                            y0 + PH - (double)v / (double)ymax * PH);
                    prev = v;
                }
                fprintf(out, "%.1f,%.1f\"/>\n", LEFT + pw, y0 + PH - (double)prev / (double)ymax * PH);
                fprintf(out, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"3\"/>"
                             "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                        LEFT + pw + 12, y0 + 20 + sidx * 18, LEFT + pw + 32, y0 + 20 + sidx * 18, colors[sidx],
                        LEFT + pw + 36, y0 + 24 + sidx * 18, names[sidx]);
            }
            for (size_t k = 0; k < d->nmarks; k++) {
                double x = LEFT + d->marks[k].t / tmax * pw;
                fprintf(out, "<path d=\"M%.1f %.0f l-4 -8 h8 z\" fill=\"%s\"><title>%s</title></path>\n", x, y0,
                        d->marks[k].kind == 'o' ? "#d62728" : "#ff7f0e",
                        d->marks[k].kind == 'o' ? "out of memory" : "fallback");
            }
            panel++;
        }
    fputs("</svg>\n", out);
    return fclose(out) == 0 ? 0 : -1;
}

/* ---- Chrome trace ----------------------------------------------------------------- */

int lms_report_chrome(const lms_report *r, const char *path, double link_gbps)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", out);
    bool first = true;
#define SEP() (first ? (first = false, "") : ",\n")
    for (int i = 0; i < r->nfiles; i++) {
        const file_state *f = r->files[i];
        fprintf(out, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}}", SEP(),
                f->rank, f->rank);
        for (int dv = 0; dv < DEVS; dv++) {
            const dev_state *d = &f->dev[dv];
            if (!d->seen)
                continue;
            for (size_t k = 0; k < d->nsamples; k++) {
                const sample *s = &d->samples[k];
                fprintf(out, "%s{\"name\":\"memory dev %d\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%d,\"args\":"
                             "{\"device\":%llu,\"resident\":%llu,\"host\":%llu}}",
                        SEP(), dv, s->t * 1e6, f->rank, (unsigned long long)s->device,
                        (unsigned long long)s->resident, (unsigned long long)s->host);
            }
            for (size_t k = 0; k < d->nmoves; k++) {
                const move *m = &d->moves[k];
                fprintf(out, "%s{\"name\":\"%s\",\"cat\":\"residency\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                             "\"pid\":%d,\"tid\":%d,\"args\":{\"chunk\":%u,\"bytes\":%llu}}",
                        SEP(), m->evict ? "evict" : "prefetch", m->t * 1e6, (double)m->bytes / (link_gbps * 1e3),
                        f->rank, dv, m->id, (unsigned long long)m->bytes);
            }
        }
    }
#undef SEP
    fputs("\n]}\n", out);
    return fclose(out) == 0 ? 0 : -1;
}

/* ---- accessors (for the HTML report) ------------------------------------------ */

/* Each accessor reads one field or element (see report.h); strings stay the report's. */
int lms_report_nfiles(const lms_report *r) { return r->nfiles; }

const char *lms_report_path(const lms_report *r, int file) { return r->files[file]->path; }

int lms_report_rank(const lms_report *r, int file) { return r->files[file]->rank; }

/* Copies one device's totals and its array lengths into out. */
bool lms_report_device(const lms_report *r, int file, int dev, lms_report_dev *out)
{
    if (file < 0 || file >= r->nfiles || dev < 0 || dev >= DEVS || !r->files[file]->dev[dev].seen)
        return false;
    const dev_state *d = &r->files[file]->dev[dev];
    *out = (lms_report_dev){.budget = d->budget, .physical = d->physical, .peak = d->peak,
                            .fallbacks = d->fallbacks, .oom = d->oom, .prefetched = d->prefetched,
                            .evicted = d->evicted, .launches = d->launches, .nsamples = d->nsamples,
                            .nmarks = d->nmarks, .nmoves = d->nmoves};
    memcpy(out->allocs, d->allocs, sizeof out->allocs);
    return true;
}

void lms_report_sample_at(const lms_report *r, int file, int dev, size_t k, lms_report_sample *out)
{
    const sample *s = &r->files[file]->dev[dev].samples[k];
    *out = (lms_report_sample){s->t, s->device, s->resident, s->host, s->holes, s->rounding};
}

void lms_report_move_at(const lms_report *r, int file, int dev, size_t k, double *t, bool *evict, uint64_t *bytes)
{
    const move *m = &r->files[file]->dev[dev].moves[k];
    *t = m->t;
    *evict = m->evict;
    *bytes = m->bytes;
}

void lms_report_mark_at(const lms_report *r, int file, int dev, size_t k, double *t, char *kind)
{
    const mark *m = &r->files[file]->dev[dev].marks[k];
    *t = m->t;
    *kind = m->kind;
}

size_t lms_report_nsites(const lms_report *r, int file) { return r->files[file]->nsites; }

void lms_report_site_at(const lms_report *r, int file, size_t k, lms_report_site *out)
{
    const site *s = &r->files[file]->sites[k];
    *out = (lms_report_site){.id = s->id, .frames = s->text, .peak = s->peak, .count = s->count,
                             .moved = s->moved};
}
