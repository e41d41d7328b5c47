/*
 * info.c — `lmshim info`: the driver and its devices (name, memory,
 * managed-memory support), and every option with its value and source.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "driver.h"
#include "options.h"
#include "units.h"

static void usage(FILE *f)
{
    fputs("usage: lmshim info [--sim] [--sim-mem SIZE] [--sim-devices N]\n"
          "Prints the CUDA driver, its devices and every lmshim option (value, source, meaning).\n"
          "--sim* look at the simulated GPU instead of the real driver.\n", f);
}

/* Prints the driver and its devices; 0 when a driver answered. */
static int print_devices(void)
{
    /* The engine's own complaint speaks to a program it runs in; this
     * command says it once, in its own words. */
    lms_level level = lms_opt.log;
    lms_opt.log = LMS_LEVEL_OFF;
    bool opened = lms_driver_open();
    lms_opt.log = level;
    if (!opened || !lms_drv.cuInit || !lms_drv.cuDeviceGetCount) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW);
        const char *why = h ? "it has no cuGetProcAddress_v2: a driver older than CUDA 12" : dlerror();
        printf("driver: none (%s): install the NVIDIA driver, "
               "or look at the simulated GPU with `lmshim info --sim`\n", why ? why : "libcuda.so.1 not found");
        return 1;
    }
    int version = 0, n = 0;
    if (lms_drv.cuDriverGetVersion)
        lms_drv.cuDriverGetVersion(&version);
    printf("driver: CUDA %d.%d\n", version / 1000, version % 1000 / 10);
    CUresult r = lms_drv.cuInit(0);
    if (r != CUDA_SUCCESS || lms_drv.cuDeviceGetCount(&n) != CUDA_SUCCESS) {
        printf("devices: none (cuInit returned %d)\n", (int)r);
        return 1;
    }
    for (int d = 0; d < n; d++) {
        char name[256] = "?", mem[32];
        size_t total = 0;
        int managed = 0;
        lms_drv.cuDeviceGetName(name, sizeof name, d);
        lms_drv.cuDeviceTotalMem(&total, d);
        lms_drv.cuDeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, d);
        lms_format_size(mem, sizeof mem, total);
        printf("device %d: %s, memory %s (%zu bytes), managed memory %s\n", d, name, mem, total,
               managed ? "yes" : "no");
    }
    return 0;
}

int lms_cmd_info(int argc, char **argv)
{
    bool sim = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--sim") == 0) {
            sim = true;
        } else if (strcmp(argv[i], "--sim-mem") == 0 || strcmp(argv[i], "--sim-devices") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "lmshim info: %s needs a value\n", argv[i]);
                return 2;
            }
            setenv(argv[i][6] == 'm' ? "SIMGPU_MEM" : "SIMGPU_DEVICES", argv[i + 1], 1);
            sim = true;
            i++;
        } else {
            fprintf(stderr, "lmshim info: unknown flag '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (sim) {
        /* The loader reads LD_LIBRARY_PATH at start: run again with it set. */
        const char *dir = lms_cli_sim_dir();
        if (!dir) {
            fprintf(stderr, "lmshim info: no simulated GPU next to %s\n", lms_cli_self_dir());
            return 2;
        }
        lms_cli_prepend_env("LD_LIBRARY_PATH", dir);
        char *again[] = {"lmshim", "info", NULL};
        execv("/proc/self/exe", again);
        perror("lmshim info");
        return 1;
    }
    lms_options_load();
    print_devices();
    printf("options (environment variable, value, source):\n");
    for (int i = 0; i < LMS_OPT_COUNT; i++) {
        char env[64], value[300];
        lms_option_value(i, value, sizeof value);
        printf("  %-16s %-10s %-11s %s\n", lms_option_env(i, env, sizeof env), value,
               lms_option_source(i), lms_option_doc(i));
    }
    for (int d = 0; d < LMS_MAX_DEVICES; d++) {   /* per-device budgets that were given */
        if (!lms_opt.device_limit_set[d])
            continue;
        char env[32], value[32];
        const lms_limit *l = &lms_opt.device_limit[d];
        snprintf(env, sizeof env, "LMS_LIMIT_%d", d);
        if (l->is_fraction)
            snprintf(value, sizeof value, "%g", l->fraction);
        else
            lms_format_size(value, sizeof value, l->bytes);
        printf("  %-16s %-10s %-11s device %d's budget, in place of LMS_LIMIT\n", env, value, "environment", d);
    }
    lms_cli_unknown_env(stdout, "also set: ", "");
    return 0;
}
