/*
 * run.c — `lmshim run [flags] -- cmd args...`: sets LD_PRELOAD (lmshim
 * first, what was there kept), the LMS_* variables from flags that map
 * one to one onto the option table and the frameworks' settings
 * (frameworks.c), then executes the command.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "units.h"

static void usage(FILE *f)
{
    fputs("usage: lmshim run [flags] -- cmd [args...]\n"
          "flags (each sets the LMS_ variable of the same name; see lmshim info):\n", f);
    for (int i = 0; i < LMS_OPT_COUNT; i++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", lms_option_name(i));
        for (char *c = flag; *c; c++)
            if (*c == '_')
                *c = '-';
        const char *def = lms_option_default(i);
        fprintf(f, "  %-16s %s (default %s)\n", flag, lms_option_doc(i), def[0] ? def : "unset");
    }
    fputs("  -lms KB          caffe's flag: LMS_THRESHOLD in kilobytes\n"
          "  -lms_frac F      caffe's flag: LMS_FRAC\n"
          "  --sim            run over the simulated GPU (build/sim) instead of a real driver\n"
          "  --sim-mem SIZE   memory of each simulated device (SIMGPU_MEM)\n"
          "  --sim-devices N  number of simulated devices (SIMGPU_DEVICES)\n"
          "boolean flags take no value (--stats) or one (--stats=0, --stats 0).\n"
          "Unless already set, the command also gets TF_FORCE_GPU_ALLOW_GROWTH=true,\n"
          "XLA_PYTHON_CLIENT_PREALLOCATE=false and a PYTORCH_CUDA_ALLOC_CONF without\n"
          "expandable_segments:True (README.md \"Frameworks\").\n", f);
}

/* The option of a flag name ("on-oom" -> on_oom), or -1. */
static int option_of(const char *flag)
{
    char name[64];
    size_t n = strcspn(flag, "=");
    if (n >= sizeof name)
        return -1;
    for (size_t k = 0; k < n; k++)
        name[k] = flag[k] == '-' ? '_' : flag[k];
    name[n] = 0;
    for (int i = 0; i < LMS_OPT_COUNT; i++)
        if (strcmp(lms_option_name(i), name) == 0)
            return i;
    return -1;
}

/* Sets the environment variable of option i to value after checking it;
 * `flag` names the flag in the complaint (NULL: --name, '_' as '-'). */
static int set_option(int i, const char *value, const char *flag)
{
    char env[64];
    if (!lms_option_valid(i, value)) {
        char name[64];
        snprintf(name, sizeof name, "--%s", lms_option_name(i));
        for (char *c = name; *c; c++)
            if (*c == '_')
                *c = '-';
        fprintf(stderr, "lmshim run: '%s' is not a valid value for %s\n", value, flag ? flag : name);
        return -1;
    }
    return setenv(lms_option_env(i, env, sizeof env), value, 1);
}

/* Puts liblmshim.so first in LD_PRELOAD. */
static int preload_shim(void)
{
    static const char *const where[] = {"../preload/liblmshim.so", LMS_REL_LIBDIR "/liblmshim.so",
                                        "../lib/liblmshim.so", "../lib/x86_64-linux-gnu/liblmshim.so", NULL};
    char lib[PATH_MAX];
    if (lms_cli_find(where, lib, sizeof lib) != 0) {
        fprintf(stderr, "lmshim run: cannot find liblmshim.so next to %s\n", lms_cli_self_dir());
        return -1;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t n = strlen(lib) + (old ? strlen(old) : 0) + 2;
    char *v = malloc(n);
    if (!v)
        return -1;
    snprintf(v, n, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
    int r = setenv("LD_PRELOAD", v, 1);
    free(v);
    return r;
}

/* Applies a flag that takes a value; *i advances past it. */
static int value_flag(int argc, char **argv, int *i, const char **value)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq) {
        *value = eq + 1;
        return 0;
    }
    if (*i + 1 >= argc || strcmp(argv[*i + 1], "--") == 0) {
        fprintf(stderr, "lmshim run: %s needs a value\n", argv[*i]);
        return -1;
    }
    *value = argv[++*i];
    return 0;
}

int lms_cmd_run(int argc, char **argv)
{
    bool sim = false;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i], *value;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "-lms") == 0 || strcmp(a, "-lms_frac") == 0) {
            if (value_flag(argc, argv, &i, &value) != 0)
                return 2;
            if (strcmp(a, "-lms") == 0) {
                char *end;
                errno = 0;
                unsigned long long kb = strtoull(value, &end, 10);
                char bytes[32];
                snprintf(bytes, sizeof bytes, "%llu", kb * 1024ull);
                if (errno || *value < '0' || *value > '9' || *end || kb > (1ull << 50) ||
                    set_option(LMS_OPT_threshold, bytes, "-lms") != 0) {
                    fprintf(stderr, "lmshim run: -lms takes kilobytes, not '%s'\n", value);
                    return 2;
                }
            } else if (set_option(LMS_OPT_frac, value, "-lms_frac") != 0) {
                return 2;
            }
            continue;
        }
        if (strncmp(a, "--sim", 5) == 0) {
            if (strcmp(a, "--sim") == 0) {
                sim = true;
                continue;
            }
            bool mem = strncmp(a, "--sim-mem", 9) == 0, dev = strncmp(a, "--sim-devices", 13) == 0;
            if (!mem && !dev)
                goto unknown;
            if (value_flag(argc, argv, &i, &value) != 0)
                return 2;
            setenv(mem ? "SIMGPU_MEM" : "SIMGPU_DEVICES", value, 1);
            sim = true;
            continue;
        }
        int opt = strncmp(a, "--", 2) == 0 ? option_of(a + 2) : -1;
        if (opt < 0)
            goto unknown;
        if (lms_option_is_bool(opt)) {
            /* --stats, --stats=0, or --stats 0 (the next word is a boolean) */
            if (strchr(a, '='))
                value = strchr(a, '=') + 1;
            else if (i + 1 < argc && lms_option_valid(opt, argv[i + 1]))
                value = argv[++i];
            else
                value = "1";
        } else if (value_flag(argc, argv, &i, &value) != 0) {
            return 2;
        }
        if (set_option(opt, value, NULL) != 0)
            return 2;
        continue;
    unknown:
        fprintf(stderr, "lmshim run: unknown flag '%s'\n"
                        "usage: lmshim run [flags] -- cmd [args...]   (lmshim run --help)\n", a);
        return 2;
    }
    if (i >= argc || i + 1 >= argc) {
        fprintf(stderr, "lmshim run: missing '-- cmd' after the flags\n"
                        "usage: lmshim run [flags] -- cmd [args...]   (lmshim run --help)\n");
        return 2;
    }
    if (sim) {
        const char *dir = lms_cli_sim_dir();
        if (!dir) {
            fprintf(stderr, "lmshim run: --sim: no simulated GPU (sim/libcuda.so.1 or %s/lmshim/sim) next to %s\n",
                    LMS_REL_LIBDIR, lms_cli_self_dir());
            return 2;
        }
        lms_cli_prepend_env("LD_LIBRARY_PATH", dir);
    }
    lms_cli_unknown_env(stderr, "lmshim run: ", " (lmshim info lists the options)");
    if (preload_shim() != 0 || lms_cli_frameworks_env(stderr) != 0)
        return 2;
    execvp(argv[i + 1], argv + i + 1);
    fprintf(stderr, "lmshim run: cannot run %s: %s\n", argv[i + 1], strerror(errno));
    return 127;
}
