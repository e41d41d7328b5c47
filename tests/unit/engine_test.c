/*
 * engine_test.c — the engine's modules alone, no CUDA library involved:
 * sizes, growable arrays, option parsing and defaults, the chunk map under
 * threads, budget accounting, log path expansion, the classes of launch
 * grids.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "../common/check.h"
#include "account.h"
#include "addrmap.h"
#include "chunks.h"
#include "grow.h"
#include "launch.h"
#include "log.h"
#include "options.h"
#include "units.h"

static void sizes(void)
{
    uint64_t b;
    CHECK(lms_parse_size("400M", &b) && b == 400ull << 20);
    CHECK(lms_parse_size("1.5G", &b) && b == 3ull << 29);
    CHECK(lms_parse_size("4096", &b) && b == 4096);
    CHECK(lms_parse_size("2KiB", &b) && b == 2048);
    CHECK(!lms_parse_size("4Q", &b) && !lms_parse_size("", &b) && !lms_parse_size("-1M", &b));
    CHECK(!lms_parse_size("99999999T", &b));
    char s[32];
    lms_format_size(s, sizeof s, 345ull << 20);
    CHECK(strcmp(s, "345M") == 0);
    lms_format_size(s, sizeof s, 1536ull << 20);
    CHECK(strcmp(s, "1.50G") == 0);
    lms_format_size(s, sizeof s, 512);
    CHECK(strcmp(s, "512") == 0);
}

/* Sets exactly the given LMS_ variables (NULL-terminated name/value pairs). */
static void env(const char *const *kv)
{
    static const char *const all[] = {"LMS_THRESHOLD", "LMS_FRAC", "LMS_MODE", "LMS_LIMIT", "LMS_LIMIT_1",
                                      "LMS_ON_OOM", "LMS_LOG", "LMS_LOG_FILE", "LMS_STATS", "LMS_DISABLE"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        unsetenv(all[i]);
    for (; kv && kv[0]; kv += 2)
        setenv(kv[0], kv[1], 1);
    lms_options_load();
}

static void option_defaults(void)
{
    env(NULL);
    CHECK_EQ_U(lms_opt.threshold, 8ull << 20);
    CHECK(lms_opt.frac == 0.9 && lms_opt.mode == LMS_MODE_MANAGED && lms_opt.on_oom == LMS_ON_OOM_MANAGED);
    CHECK(lms_opt.limit.is_fraction && lms_opt.limit.fraction == 1.0);
    CHECK(lms_opt.log == LMS_LEVEL_WARN && !lms_opt.stats && !lms_opt.disable);
    for (int i = 0; i < LMS_OPT_COUNT; i++)
        CHECK(strcmp(lms_option_source(i), "default") == 0);
    CHECK_EQ_U(lms_options_budget(0, 8ull << 30), 8ull << 30);
}

static void option_values(void)
{
    const char *const kv[] = {"LMS_THRESHOLD", "400M", "LMS_FRAC", "0.75", "LMS_MODE", "host",
                              "LMS_LIMIT", "0.5", "LMS_LIMIT_1", "345M", "LMS_ON_OOM", "fail",
                              "LMS_LOG", "debug", "LMS_STATS", "yes", "LMS_DISABLE", "off", NULL};
    env(kv);
    CHECK_EQ_U(lms_opt.threshold, 400ull << 20);
    CHECK(lms_opt.frac == 0.75 && lms_opt.mode == LMS_MODE_HOST && lms_opt.on_oom == LMS_ON_OOM_FAIL);
    CHECK(lms_opt.log == LMS_LEVEL_DEBUG && lms_opt.stats && !lms_opt.disable);
    CHECK_EQ_U(lms_options_budget(0, 8ull << 30), 4ull << 30);       /* half of the device */
    CHECK_EQ_U(lms_options_budget(1, 8ull << 30), 345ull << 20);     /* LMS_LIMIT_1 */
    CHECK_EQ_U(lms_options_budget(1, 100ull << 20), 100ull << 20);   /* never above the device */
    CHECK(strcmp(lms_option_source(LMS_OPT_frac), "environment") == 0);
    char v[64];
    lms_option_value(LMS_OPT_threshold, v, sizeof v);
    CHECK(strcmp(v, "400M") == 0);
}

/* Bad values keep the default and say so on stderr (checked by the
 * meson wrapper counting lines); the parsers reject what they must. */
static void option_bad_values(void)
{
    const char *const kv[] = {"LMS_FRAC", "banana", "LMS_THRESHOLD", "lots", "LMS_MODE", "disk",
                              "LMS_LIMIT", "-2", "LMS_LIMIT_1", "0", "LMS_STATS", "maybe", NULL};
    env(kv);
    CHECK(lms_opt.frac == 0.9);
    CHECK_EQ_U(lms_opt.threshold, 8ull << 20);
    CHECK(lms_opt.mode == LMS_MODE_MANAGED && lms_opt.limit.is_fraction && !lms_opt.stats);
    CHECK(!lms_opt.device_limit_set[1]);
    double f;
    lms_limit l;
    bool b;
    CHECK(!lms_parse_fraction("1.5", &f) && !lms_parse_fraction("-0.1", &f) && lms_parse_fraction("0", &f));
    CHECK(!lms_parse_limit("0", &l) && !lms_parse_limit("1.5", &l) && lms_parse_limit("2G", &l));
    CHECK(!lms_parse_bool("2", &b) && lms_parse_bool("TRUE", &b) && b);
    CHECK(lms_option_valid(LMS_OPT_mode, "host") && !lms_option_valid(LMS_OPT_mode, "hst"));
}

static void *insert_remove(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg << 32;
    for (int round = 0; round < 4; round++) {
        for (uint64_t i = 0; i < 20000; i++) {
            lms_chunk c = {.key = base + i * 256 + 4096, .size = i, .device = 0};
            if (!lms_chunks_insert(&c))
                return (void *)1;
        }
        for (uint64_t i = 0; i < 20000; i++) {
            lms_chunk c;
            if (!lms_chunks_find(base + i * 256 + 4096, &c) || c.size != i)
                return (void *)2;
            if (!lms_chunks_remove(base + i * 256 + 4096, &c) || c.size != i)
                return (void *)3;
            if (lms_chunks_find(base + i * 256 + 4096, &c))
                return (void *)4;
        }
    }
    return NULL;
}

static void chunk_map(void)
{
    lms_chunk c = {.key = 0x10000, .size = 5, .place = LMS_PLACE_MANAGED}, out;
    CHECK(lms_chunks_insert(&c));
    CHECK(lms_chunks_find(0x10000, &out) && out.size == 5 && out.place == LMS_PLACE_MANAGED);
    CHECK(!lms_chunks_find(0x10100, &out));
    CHECK(!lms_chunks_remove(0x10100, &out));
    CHECK(lms_chunks_remove(0x10000, &out));
    CHECK_EQ_U(lms_chunks_count(), 0);
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        CHECK(pthread_create(&th[i], NULL, insert_remove, (void *)(uintptr_t)(i + 1)) == 0);
    for (int i = 0; i < 8; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        CHECK(rc == NULL);
    }
    CHECK_EQ_U(lms_chunks_count(), 0);
}

static void *reserve_release(void *arg)
{
    lms_account *a = arg;
    for (int i = 0; i < 100000; i++) {
        if (lms_account_reserve(a, 3000, 10000)) {
            if (atomic_load(&a->used) > 10000)
                return (void *)1;
            lms_account_release(a, 3000);
        }
    }
    return NULL;
}

static void accounting(void)
{
    CHECK_EQ_U(lms_charge_of(1), 512);
    CHECK_EQ_U(lms_charge_of(1000), 1024);
    CHECK_EQ_U(lms_charge_of(2ull << 20), 2ull << 20);
    CHECK_EQ_U(lms_charge_of((3ull << 20) + 1), 4ull << 20);
    static lms_account a;
    CHECK(lms_account_reserve(&a, 600, 1000));
    CHECK(!lms_account_reserve(&a, 600, 1000));
    CHECK(!lms_account_reserve(&a, UINT64_MAX, 1000));
    lms_account_force(&a, 900);
    CHECK_EQ_U(atomic_load(&a.used), 1500);
    CHECK_EQ_U(atomic_load(&a.peak), 1500);
    lms_account_release(&a, 1500);
    CHECK_EQ_U(atomic_load(&a.used), 0);
    /* Eight threads never pass the limit together. */
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        CHECK(pthread_create(&th[i], NULL, reserve_release, &a) == 0);
    for (int i = 0; i < 8; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        CHECK(rc == NULL);
    }
    CHECK_EQ_U(atomic_load(&a.used), 0);
    CHECK(atomic_load(&a.peak) <= 10000);
}

static void log_paths(void)
{
    setenv("RANK", "3", 1);
    char out[256], want[256], host[200];
    lms_expand_path("/tmp/lms-%r-%p.log", out, sizeof out);
    snprintf(want, sizeof want, "/tmp/lms-3-%d.log", (int)getpid());
    CHECK(strcmp(out, want) == 0);
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    lms_expand_path("%h/%%/%x", out, sizeof out);
    snprintf(want, sizeof want, "%s/%%/%%x", host);
    CHECK(strcmp(out, want) == 0);
    unsetenv("RANK");
    setenv("SLURM_PROCID", "7", 1);
    CHECK(lms_rank() == 7);
    setenv("OMPI_COMM_WORLD_RANK", "5", 1);
    CHECK(lms_rank() == 5);   /* OMPI before SLURM */
}

/* The address map keeps every value through growth and deletions. */
static void address_map(void)
{
    lms_addrmap m;
    lms_addrmap_init(&m, sizeof(uint64_t));
    for (uint64_t k = 1; k <= 20000; k++) {
        uint64_t v = k * 7;
        CHECK(lms_addrmap_put(&m, k << 12, &v));
    }
    CHECK(!lms_addrmap_put(&m, 0, &m));           /* 0 is not a key */
    for (uint64_t k = 1; k <= 20000; k += 2)
        CHECK(lms_addrmap_take(&m, k << 12, NULL));
    CHECK(!lms_addrmap_take(&m, 1 << 12, NULL));  /* gone */
    for (uint64_t k = 2; k <= 20000; k += 2) {
        uint64_t v = 0;
        CHECK(lms_addrmap_take(&m, k << 12, &v));
        CHECK_EQ_U(v, k * 7);
    }
    CHECK_EQ_U(m.n, 0);
    lms_addrmap_free(&m);
}

/* A grid's class: each dimension itself up to 16, then a quarter of an
 * octave (grids a few blocks apart in one class, a fifth apart in two),
 * never 0, the dimensions in their places. */
static void launch_shape(void)
{
    for (unsigned g = 1; g <= 16; g++) {
        CHECK(lms_launch_shape(g, 1, 1) != 0);
        CHECK(lms_launch_shape(g, 1, 1) != lms_launch_shape(g + 1, 1, 1));   /* 16 and 17 too */
    }
    CHECK(lms_launch_shape(17, 1, 1) == lms_launch_shape(19, 1, 1));   /* 16..19: one class */
    CHECK(lms_launch_shape(19, 1, 1) != lms_launch_shape(20, 1, 1));
    CHECK(lms_launch_shape(1000, 1, 1) == lms_launch_shape(1023, 1, 1));   /* 896..1023 */
    CHECK(lms_launch_shape(1000, 1, 1) != lms_launch_shape(1200, 1, 1));
    CHECK(lms_launch_shape(4, 2, 1) != lms_launch_shape(2, 4, 1));
    CHECK(lms_launch_shape(4, 1, 2) != lms_launch_shape(4, 2, 1));
    CHECK(lms_launch_shape(0, 0, 0) != 0);
    CHECK(lms_launch_shape(0xffffffffu, 0xffffffffu, 0xffffffffu) != 0);
    CHECK(lms_launch_shape(0xffffffffu, 1, 1) != lms_launch_shape(0x7fffffffu, 1, 1));
    CHECK(lms_launch_shape(0xffffffffu, 1, 1) == lms_launch_shape(0xf0000000u, 1, 1));
}

/* lms_grow: the first room, doubling until the need is held, nothing
 * done when it is, and a refusal that leaves the array as it was where
 * the bytes would overflow. */
static void grow_rule(void)
{
    uint64_t *a = NULL;
    size_t cap = 0;
    CHECK(lms_grow((void **)&a, &cap, 1, sizeof *a, 8) && a && cap == 8);
    a[7] = 42;
    CHECK(lms_grow((void **)&a, &cap, 8, sizeof *a, 8) && cap == 8);   /* held: unchanged */
    CHECK(lms_grow((void **)&a, &cap, 9, sizeof *a, 8) && cap == 16 && a[7] == 42);
    CHECK(lms_grow((void **)&a, &cap, 100, sizeof *a, 8) && cap == 128 && a[7] == 42);
    uint64_t *was = a;
    CHECK(!lms_grow((void **)&a, &cap, SIZE_MAX / 4, sizeof *a, 8));   /* the bytes overflow */
    CHECK(!lms_grow((void **)&a, &cap, SIZE_MAX, 1, 8));               /* the count overflows */
    CHECK(a == was && cap == 128 && a[7] == 42);
    free(a);
    char *b = NULL;
    size_t bcap = 0;
    CHECK(lms_grow((void **)&b, &bcap, 3, 1, 0) && bcap == 4);   /* no first room: from one */
    free(b);
}

static const test_case cases[] = {
    {"address_map", address_map},
    {"launch_shape", launch_shape},
    {"sizes", sizes},
    {"grow_rule", grow_rule},
    {"option_defaults", option_defaults},
    {"option_values", option_values},
    {"option_bad_values", option_bad_values},
    {"chunk_map", chunk_map},
    {"accounting", accounting},
    {"log_paths", log_paths},
};

TEST_MAIN(cases)
