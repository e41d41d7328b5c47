/*
 * sim_config_test.c — the simulator's settings parser (sim/driver/config.c)
 * alone: sizes with suffixes, defaults, and bad values kept at defaults.
 */
#include <stdlib.h>

#include "../common/check.h"
#include "sim.h"

/* Loads the configuration with exactly the given SIMGPU_MEM and SIMGPU_DEVICES. */
static void load(const char *mem, const char *devices)
{
    unsetenv("SIMGPU_MEM");
    unsetenv("SIMGPU_DEVICES");
    if (mem)
        setenv("SIMGPU_MEM", mem, 1);
    if (devices)
        setenv("SIMGPU_DEVICES", devices, 1);
    sim_config_load();
}

static void defaults(void)
{
    load(NULL, NULL);
    CHECK_EQ_U(sim_cfg.mem_bytes, 4ull << 30);
    CHECK(sim_cfg.devices == 1);
    CHECK(sim_cfg.link_gbps == 55.0 && sim_cfg.fault_us == 30.0 && sim_cfg.fault_gbps == 10.0);
    CHECK(!sim_cfg.report);
}

static void sizes(void)
{
    const struct { const char *text; unsigned long long bytes; } cases[] = {
        {"4G", 4ull << 30}, {"512M", 512ull << 20}, {"1.5G", 3ull << 29}, {"2GiB", 2ull << 30},
        {"1048576", 1ull << 20}, {"8g", 8ull << 30}, {"1T", 1ull << 40}, {"345M", 345ull << 20},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        load(cases[i].text, NULL);
        CHECK_EQ_U(sim_cfg.mem_bytes, cases[i].bytes);
    }
}

static void bad_values(void)
{
    const char *bad[] = {"banana", "", "-4G", "4X", "12K", "4G4", "0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        load(bad[i], NULL);
        CHECK_EQ_U(sim_cfg.mem_bytes, 4ull << 30);
    }
}

static void devices(void)
{
    load(NULL, "3");
    CHECK(sim_cfg.devices == 3);
    load(NULL, "0");
    CHECK(sim_cfg.devices == 0);
    const char *bad[] = {"-1", "17", "two", "2x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        load(NULL, bad[i]);
        CHECK(sim_cfg.devices == 1);
    }
}

static void model_values(void)
{
    setenv("SIMGPU_LINK_GBPS", "25", 1);
    setenv("SIMGPU_FAULT_US", "nope", 1);
    setenv("SIMGPU_REPORT", "1", 1);
    load(NULL, NULL);
    CHECK(sim_cfg.link_gbps == 25.0);
    CHECK(sim_cfg.fault_us == 30.0);
    CHECK(sim_cfg.report);
}

static const test_case cases[] = {
    {"defaults", defaults},
    {"sizes", sizes},
    {"bad_values", bad_values},
    {"devices", devices},
    {"model_values", model_values},
};

TEST_MAIN(cases)
