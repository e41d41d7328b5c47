/*
 * config.c — the simulated GPU's settings, read once from SIMGPU_* variables.
 *
 * A bad value prints one line on stderr naming the variable, the value and
 * the default kept; the simulator then runs with that default.
 */
#include "sim.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

sim_config sim_cfg;

/* Writes one diagnostic line to stderr without allocating. */
static void complain(const char *name, const char *value, const char *why, const char *kept)
{
    char line[512];
    int n = snprintf(line, sizeof line, "simgpu: %s=%s: %s; using %s\n", name, value, why, kept);
    if (n > 0)
        (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Parses a positive finite number. */
static bool parse_positive(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0) || v > 1e12)
        return false;
    *out = v;
    return true;
}

/* Reads a positive real setting, keeping `def` on a bad value. */
static double real_setting(const char *name, double def)
{
    const char *s = getenv(name);
    double v;
    if (!s)
        return def;
    if (parse_positive(s, &v))
        return v;
    char kept[64];
    snprintf(kept, sizeof kept, "the default %g", def);
    complain(name, s, "not a positive number", kept);
    return def;
}

/* Parses CUDA_VISIBLE_DEVICES as CUDA documents it for lists of indices:
 * the physical devices named, in the list's order; the list ends at the
 * first entry that is not a device index of this machine (not a decimal
 * number, out of range, or named before). Unset: every device in order;
 * set but empty: none. Fills sim_cfg.physical and answers the count. */
static int visible_devices(int physical)
{
    const char *s = getenv("CUDA_VISIBLE_DEVICES");
    if (!s) {
        for (int d = 0; d < physical; d++)
            sim_cfg.physical[d] = d;
        return physical;
    }
    int n = 0;
    bool named[SIM_MAX_DEVICES] = {false};
    while (n < physical) {
        const char *end = s + strcspn(s, ",");
        long v = 0;
        bool ok = end > s && end - s <= 4;
        for (const char *c = s; ok && c < end; c++) {
            ok = *c >= '0' && *c <= '9';
            v = v * 10 + (*c - '0');
        }
        if (!ok || v >= physical || named[v])
            break;
        named[v] = true;
        sim_cfg.physical[n++] = (int)v;
        if (!*end)
            break;
        s = end + 1;
    }
    return n;
}

/* Loads every SIMGPU_* setting into sim_cfg (called once, under cuInit). */
void sim_config_load(void)
{
    sim_cfg.devices = 1;
    sim_cfg.mem_bytes = 4ull << 30;
    const char *s = getenv("SIMGPU_DEVICES");
    if (s) {
        char *end;
        errno = 0;
        long n = strtol(s, &end, 10);
        if (errno || end == s || *end || n < 0 || n > SIM_MAX_DEVICES) {
            complain("SIMGPU_DEVICES", s, "not a device count from 0 to 16", "the default 1");
        } else {
            sim_cfg.devices = (int)n;
            if (n == 0)
                complain("SIMGPU_DEVICES", s, "no simulated devices",
                         "none: cuInit returns CUDA_ERROR_NO_DEVICE");
        }
    }
    sim_cfg.physical_devices = sim_cfg.devices;
    sim_cfg.devices = visible_devices(sim_cfg.physical_devices);
    s = getenv("SIMGPU_MEM");
    if (s) {
        uint64_t v;
        if (!lms_parse_size(s, &v) || v < (1ull << 20))
            complain("SIMGPU_MEM", s, "not a size of at least 1M (e.g. 4G, 512M)",
                     "the default 4G");
        else
            sim_cfg.mem_bytes = v;
    }
    sim_cfg.link_gbps = real_setting("SIMGPU_LINK_GBPS", 55.0);
    sim_cfg.fault_us = real_setting("SIMGPU_FAULT_US", 30.0);
    sim_cfg.fault_gbps = real_setting("SIMGPU_FAULT_GBPS", 10.0);
    sim_cfg.hbm_gbps = real_setting("SIMGPU_HBM_GBPS", 2000.0);
    s = getenv("SIMGPU_LAUNCH_US");
    sim_cfg.launch_us = 0.0;
    if (s && strcmp(s, "0") != 0)
        sim_cfg.launch_us = real_setting("SIMGPU_LAUNCH_US", 0.0);
    s = getenv("SIMGPU_L2_MIB");
    sim_cfg.l2_bytes = 50ull << 20;
    if (s) {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !(v >= 0) || v > 1e6)
            complain("SIMGPU_L2_MIB", s, "not a size in MiB from 0 to 1000000", "the default 50");
        else
            sim_cfg.l2_bytes = (uint64_t)(v * (double)(1ull << 20));
    }
    s = getenv("SIMGPU_REPORT");
    sim_cfg.report = s && *s && strcmp(s, "0") != 0;
    s = getenv("SIMGPU_CONCURRENT_MANAGED");
    sim_cfg.concurrent_managed = true;
    if (s && strcmp(s, "0") == 0)
        sim_cfg.concurrent_managed = false;
    else if (s && strcmp(s, "1") != 0)
        complain("SIMGPU_CONCURRENT_MANAGED", s, "not 0 or 1", "the default 1");
    s = getenv("SIMGPU_CONCURRENT");
    sim_cfg.concurrent = s && *s && strcmp(s, "0") != 0;
    s = getenv("SIMGPU_TIMELINE");
    sim_cfg.timeline_fd = s && *s ? open(s, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644) : -1;
    if (s && *s && sim_cfg.timeline_fd < 0)
        complain("SIMGPU_TIMELINE", s, "cannot be opened", "no timeline");
}

static int driver_version;
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

/* Reads SIMGPU_DRIVER_VERSION (a CUDA version such as 12030, from 12000 to
 * the simulator's own), which models an older driver. */
static void load_version(void)
{
    driver_version = SIM_DRIVER_VERSION;
    const char *s = getenv("SIMGPU_DRIVER_VERSION");
    if (!s)
        return;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 12000 || v > SIM_DRIVER_VERSION)
        complain("SIMGPU_DRIVER_VERSION", s, "not a CUDA version from 12000 to 13000",
                 "the default 13000");
    else
        driver_version = (int)v;
}

/* The CUDA version the simulated driver implements: cuDriverGetVersion's
 * answer; cuGetProcAddress knows no entry point newer than it. Read on first
 * use, which may come before cuInit. */
int sim_driver_version(void)
{
    pthread_once(&version_once, load_version);
    return driver_version;
}
