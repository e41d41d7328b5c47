/*
 * options.c — parsing lmshim's options from the environment, once.
 * getenv appears nowhere else in lmshim.
 */
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "groupfile.h"
#include "log.h"
#include "policy.h"
#include "stack.h"
#include "units.h"

lms_options lms_opt;

static const char *const names[] = {
#define LMS_OPTION(name, type, def, doc) #name,
#include "options.def"
#undef LMS_OPTION
};
static const char *const docs[] = {
#define LMS_OPTION(name, type, def, doc) doc,
#include "options.def"
#undef LMS_OPTION
};
static const char *const defaults[] = {
#define LMS_OPTION(name, type, def, doc) def,
#include "options.def"
#undef LMS_OPTION
};

static bool parse_SIZE(const char *s, void *out) { return lms_parse_size(s, out); }

bool lms_parse_fraction(const char *s, double *out)
{
    double v;
    if (!lms_parse_decimal(s, &v) || v > 1)
        return false;
    *out = v;
    return true;
}

static bool parse_FRACTION(const char *s, void *out) { return lms_parse_fraction(s, out); }

/* "0.5" (a fraction, <= 1) or "345M" / "2147483648" (bytes, > 1). */
bool lms_parse_limit(const char *s, lms_limit *out)
{
    double v;
    if (lms_parse_decimal(s, &v) && v > 0 && v <= 1) {
        *out = (lms_limit){.is_fraction = true, .fraction = v};
        return true;
    }
    uint64_t b;
    if (!lms_parse_size(s, &b) || b <= 1)
        return false;
    *out = (lms_limit){.bytes = b};
    return true;
}

/* A budget written as a bare integer under 1 MiB ("LMS_LIMIT=2") is almost
 * surely not meant as bytes: says how it was read. */
static void warn_small_limit(const char *env, const char *text, const lms_limit *l)
{
    if (l->is_fraction || l->bytes >= (1u << 20) || text[strspn(text, "0123456789")] != 0)
        return;
    lms_log(LMS_LEVEL_WARN,
            "%s=%s is read as a budget of %llu bytes; write %sG for gibibytes or a fraction such as 0.5 "
            "for part of the device's memory",
            env, text, (unsigned long long)l->bytes, text);
}

static bool parse_LIMIT(const char *s, void *out) { return lms_parse_limit(s, out); }

bool lms_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "yes", "on", "true"}, *const no[] = {"0", "no", "off", "false"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

static bool parse_BOOL(const char *s, void *out) { return lms_parse_bool(s, out); }

static bool parse_INT(const char *s, void *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);   /* digits only: no sign or white space strtol would take */
    if (*s < '0' || *s > '9' || errno || end == s || *end || v < 0 || v > 86400)
        return false;
    *(int *)out = (int)v;
    return true;
}

/* A number of stack frames: an INT of at most LMS_STACK_MAX (the frames a
 * site can hold), so a larger value is refused rather than cut silently. */
static bool parse_FRAMES(const char *s, void *out)
{
    int v;
    if (!parse_INT(s, &v) || v > LMS_STACK_MAX)
        return false;
    *(int *)out = v;
    return true;
}

/* Matches s against a list of words; the index is the enum value. */
static bool parse_word(const char *s, const char *const *words, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(s, words[i]) == 0) {
            *out = i;
            return true;
        }
    return false;
}

static const char *const mode_words[] = {"managed", "host"};
static const char *const oom_words[] = {"managed", "fail"};
static const char *const level_words[] = {"off", "error", "warn", "info", "debug"};
static const char *const auto_words[] = {"off", "on", "auto"};

static bool parse_MODE(const char *s, void *out)
{
    int v;
    if (!parse_word(s, mode_words, 2, &v))
        return false;
    *(lms_mode *)out = (lms_mode)v;
    return true;
}

static bool parse_ON_OOM(const char *s, void *out)
{
    int v;
    if (!parse_word(s, oom_words, 2, &v))
        return false;
    *(lms_on_oom *)out = (lms_on_oom)v;
    return true;
}

static bool parse_LEVEL(const char *s, void *out)
{
    int v;
    if (!parse_word(s, level_words, 5, &v))
        return false;
    *(lms_level *)out = (lms_level)v;
    return true;
}

static bool parse_AUTO(const char *s, void *out)
{
    int v;
    if (!parse_word(s, auto_words, 3, &v))
        return false;
    *(lms_auto *)out = (lms_auto)v;
    return true;
}

static bool parse_POLICY(const char *s, void *out)
{
    const lms_policy *p = lms_policy_find(s);
    if (!p)
        return false;
    *(lms_POLICY_t *)out = p;
    return true;
}

static bool parse_PATH(const char *s, void *out)
{
    size_t n = strlen(s);
    if (n >= sizeof(lms_PATH_t))
        return false;
    memcpy(out, s, n + 1);
    return true;
}

static bool parse_GROUP(const char *s, void *out)
{
    char path[160];
    if (*s && lms_groupfile_path("/", s, path, sizeof path) != 0)
        return false;
    snprintf(out, sizeof(lms_GROUP_t), "%s", s);
    return true;
}

static bool parse_OCTAL(const char *s, void *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 8);
    if (errno || end == s || *end || v < 0 || v > 0777)
        return false;
    *(unsigned *)out = (unsigned)v;
    return true;
}

/* Upper-cases name into "LMS_NAME". */
const char *lms_option_env(int i, char *buf, size_t len)
{
    if (i < 0 || i >= LMS_OPT_COUNT)
        return NULL;
    int n = snprintf(buf, len, "LMS_%s", names[i]);
    for (int k = 4; k < n && (size_t)k < len; k++)
        if (buf[k] >= 'a' && buf[k] <= 'z')
            buf[k] = (char)(buf[k] - 'a' + 'A');
    return buf;
}

const char *lms_option_name(int i) { return i >= 0 && i < LMS_OPT_COUNT ? names[i] : NULL; }
const char *lms_option_doc(int i) { return i >= 0 && i < LMS_OPT_COUNT ? docs[i] : NULL; }
const char *lms_option_default(int i) { return i >= 0 && i < LMS_OPT_COUNT ? defaults[i] : NULL; }

/* The parser of each option, in table order. */
static bool (*const parsers[])(const char *, void *) = {
#define LMS_OPTION(name, type, def, doc) parse_##type,
#include "options.def"
#undef LMS_OPTION
};

bool lms_option_valid(int i, const char *text)
{
    union { lms_limit limit; uint64_t size; double real; int word; bool flag; lms_PATH_t path;
            lms_POLICY_t policy; int integer; lms_GROUP_t group; unsigned octal; } scratch;
    return i >= 0 && i < LMS_OPT_COUNT && text && parsers[i](text, &scratch);
}

bool lms_option_is_bool(int i) { return i >= 0 && i < LMS_OPT_COUNT && parsers[i] == parse_BOOL; }

const char *lms_option_source(int i)
{
    return lms_opt.source[i] == LMS_SOURCE_ENV ? "environment" : "default";
}

/* Reads one option: the default first, then the environment if valid. */
static void load_one(int i, bool (*parse)(const char *, void *), void *field)
{
    char env[64];
    lms_option_env(i, env, sizeof env);
    if (!parse(defaults[i], field))
        abort();   /* a default in options.def that does not parse is a build defect */
    lms_opt.source[i] = LMS_SOURCE_DEFAULT;
    const char *s = getenv(env);
    if (!s)
        return;
    if (parse(s, field))
        lms_opt.source[i] = LMS_SOURCE_ENV;
    else {
        parse(defaults[i], field);
        char kept[300];
        lms_option_value(i, kept, sizeof kept);   /* "(none)", "(off)": an empty default in words */
        lms_log_bad_value(env, s, kept);
    }
}

void lms_options_load(void)
{
    memset(&lms_opt, 0, sizeof lms_opt);
#define LMS_OPTION(name, type, def, doc) load_one(LMS_OPT_##name, parsers[LMS_OPT_##name], &lms_opt.name);
#include "options.def"
#undef LMS_OPTION
    if (lms_opt.source[LMS_OPT_limit] == LMS_SOURCE_ENV)
        warn_small_limit("LMS_LIMIT", getenv("LMS_LIMIT"), &lms_opt.limit);
    for (int d = 0; d < LMS_MAX_DEVICES; d++) {
        char env[32];
        snprintf(env, sizeof env, "LMS_LIMIT_%d", d);
        const char *s = getenv(env);
        if (!s)
            continue;
        if (lms_parse_limit(s, &lms_opt.device_limit[d])) {
            lms_opt.device_limit_set[d] = true;
            warn_small_limit(env, s, &lms_opt.device_limit[d]);
        } else
            lms_log_bad_value(env, s, "LMS_LIMIT");
    }
}

/* Formats a limit as "0.5 of the device" or "345M". */
static void format_limit(const lms_limit *l, char *buf, size_t len)
{
    if (l->is_fraction)
        snprintf(buf, len, "%g", l->fraction);
    else
        lms_format_size(buf, len, l->bytes);
}

void lms_option_value(int i, char *buf, size_t len)
{
    switch ((lms_option_id)i) {
    case LMS_OPT_threshold: lms_format_size(buf, len, lms_opt.threshold); break;
    case LMS_OPT_frac: snprintf(buf, len, "%g", lms_opt.frac); break;
    case LMS_OPT_mode: snprintf(buf, len, "%s", mode_words[lms_opt.mode]); break;
    case LMS_OPT_limit: format_limit(&lms_opt.limit, buf, len); break;
    case LMS_OPT_on_oom: snprintf(buf, len, "%s", oom_words[lms_opt.on_oom]); break;
    case LMS_OPT_policy: snprintf(buf, len, "%s", lms_opt.policy ? lms_opt.policy->name : "?"); break;
    case LMS_OPT_oom_retry: snprintf(buf, len, "%s", auto_words[lms_opt.oom_retry]); break;
    case LMS_OPT_log: snprintf(buf, len, "%s", level_words[lms_opt.log]); break;
    case LMS_OPT_log_file: snprintf(buf, len, "%s", lms_opt.log_file[0] ? lms_opt.log_file : "(stderr)"); break;
    case LMS_OPT_trace: snprintf(buf, len, "%s", lms_opt.trace[0] ? lms_opt.trace : "(off)"); break;
    case LMS_OPT_stacks: snprintf(buf, len, "%d", lms_opt.stacks); break;
    case LMS_OPT_py_stacks: snprintf(buf, len, "%d", lms_opt.py_stacks); break;
    case LMS_OPT_stats_every: snprintf(buf, len, "%d", lms_opt.stats_every); break;
    case LMS_OPT_stats: snprintf(buf, len, "%d", lms_opt.stats); break;
    case LMS_OPT_group: snprintf(buf, len, "%s", lms_opt.group[0] ? lms_opt.group : "(none)"); break;
    case LMS_OPT_group_dir: snprintf(buf, len, "%s", lms_opt.group_dir); break;
    case LMS_OPT_group_mode: snprintf(buf, len, "0%o", lms_opt.group_mode); break;
    case LMS_OPT_disable: snprintf(buf, len, "%d", lms_opt.disable); break;
    case LMS_OPT_stream_order: snprintf(buf, len, "%d", lms_opt.stream_order); break;
    default: snprintf(buf, len, "?"); break;
    }
}

uint64_t lms_options_budget(int device, uint64_t physical)
{
    const lms_limit *l = &lms_opt.limit;
    if (device >= 0 && device < LMS_MAX_DEVICES && lms_opt.device_limit_set[device])
        l = &lms_opt.device_limit[device];
    uint64_t b = l->is_fraction ? (uint64_t)(l->fraction * (double)physical) : l->bytes;
    return b < physical || physical == 0 ? b : physical;
}

int lms_rank(void)
{
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *s = getenv(vars[i]);
        char *end;
        long r = s ? strtol(s, &end, 10) : -1;
        if (s && end != s && !*end && r >= 0 && r < 1 << 30)
            return (int)r;
    }
    return 0;
}
