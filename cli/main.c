/*
 * main.c — the lmshim command: `lmshim run`, `lmshim info`, and the paths
 * of the library and the simulated GPU relative to the executable.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"

static void usage(FILE *f)
{
    fputs("usage: lmshim <command> [options]\n"
          "  run  [flags] -- cmd args...   run a program with large model support\n"
          "  info [--sim ...]              devices, driver, and every option with its value\n"
          "  report trace.jsonl...         per-device report of traces (one per rank), SVG and Chrome outputs\n"
          "  top [GROUP] [--once] [--json]  live view of the shared budgets of LMS_GROUP groups\n"
          "  replay trace.jsonl...         replay traced launches through each policy, next to Belady's MIN\n"
          "  <command> --help              help of one command\n", f);
}

const char *lms_cli_self_dir(void)
{
    static char dir[PATH_MAX];
    if (!dir[0]) {
        ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
        if (n <= 0)
            return ".";
        dir[n] = 0;
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
    }
    return dir;
}

int lms_cli_find(const char *const *relative, char *out, size_t len)
{
    for (int i = 0; relative[i]; i++) {
        char path[PATH_MAX];
        int n = relative[i][0] == '/' ? snprintf(path, sizeof path, "%s", relative[i])
                                      : snprintf(path, sizeof path, "%s/%s", lms_cli_self_dir(), relative[i]);
        if (n < 0 || (size_t)n >= sizeof path)
            continue;
        if (realpath(path, out) && access(out, R_OK) == 0 && strlen(out) < len)
            return 0;
    }
    return -1;
}

const char *lms_cli_sim_dir(void)
{
    static char dir[PATH_MAX];
    static const char *const where[] = {"../sim/libcuda.so.1", LMS_REL_LIBDIR "/lmshim/sim/libcuda.so.1",
                                        "../lib/lmshim/sim/libcuda.so.1", NULL};
    if (lms_cli_find(where, dir, sizeof dir) != 0)
        return NULL;
    *strrchr(dir, '/') = 0;
    return dir;
}

int lms_cli_prepend_env(const char *var, const char *dir)
{
    const char *old = getenv(var);
    size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
    char *v = malloc(n);
    if (!v)
        return -1;
    snprintf(v, n, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    int r = setenv(var, v, 1);
    free(v);
    return r;
}

/* True when `name` (up to '=') is an option's variable or LMS_LIMIT_<n>. */
static bool known_variable(const char *name, size_t len)
{
    char env[64];
    for (int i = 0; i < LMS_OPT_COUNT; i++)
        if (strlen(lms_option_env(i, env, sizeof env)) == len && strncmp(env, name, len) == 0)
            return true;
    for (int d = 0; d < LMS_MAX_DEVICES; d++) {
        int n = snprintf(env, sizeof env, "LMS_LIMIT_%d", d);
        if ((size_t)n == len && strncmp(env, name, len) == 0)
            return true;
    }
    return false;
}

int lms_cli_unknown_env(FILE *say, const char *who, const char *hint)
{
    int count = 0;
    for (char **e = environ; *e; e++) {
        size_t len = strcspn(*e, "=");
        if (strncmp(*e, "LMS_", 4) != 0 || known_variable(*e, len))
            continue;
        fprintf(say, "%s%.*s", count++ ? ", " : who, (int)(len > 64 ? 64 : len), *e);
    }
    if (count)
        fprintf(say, ": %s, ignored%s\n", count > 1 ? "not lmshim options" : "not an lmshim option", hint);
    return count;
}

int lms_cli_parse_gbps(const char *text, double *gbps)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v > 0) || v > 1e9)   /* also refuses nan and inf */
        return -1;
    *gbps = v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "run") == 0)
        return lms_cmd_run(argc - 1, argv + 1);
    if (strcmp(argv[1], "info") == 0)
        return lms_cmd_info(argc - 1, argv + 1);
    if (strcmp(argv[1], "replay") == 0)
        return lms_cmd_replay(argc - 1, argv + 1);
    if (strcmp(argv[1], "top") == 0)
        return lms_cmd_top(argc - 1, argv + 1);
    if (strcmp(argv[1], "report") == 0)
        return lms_cmd_report(argc - 1, argv + 1);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "lmshim: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
