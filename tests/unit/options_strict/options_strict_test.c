/*
 * options_strict_test.c — the exact forms sizes, fractions and budgets take
 * in LMS_* options: a fraction of a byte is refused, a fraction with a unit
 * is honoured, hex, signs and white space are refused alike, and a bare
 * integer budget under 1 MiB is read as bytes with a warning that says so.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../common/check.h"
#include "options.h"
#include "units.h"

/* Sizes: digits, an optional fraction only with a unit, an optional unit. */
static void sizes(void)
{
    uint64_t b = 7;
    CHECK(lms_parse_size("1.5G", &b) && b == 3ull << 29);
    CHECK(lms_parse_size("1.5K", &b) && b == 1536);
    CHECK(lms_parse_size("0.5MiB", &b) && b == 1ull << 19);
    CHECK(lms_parse_size("4096", &b) && b == 4096);
    CHECK(lms_parse_size("0", &b) && b == 0);
    static const char *const refused[] = {"1.5", "2.0", "0x10", "0X10", "\t5", " 5", "5 ", "5\n", "+5", "-5",
                                          "1e3", "1e3M", "inf", "nan", ".5G", "1.G", "1.5GG", "", "5 M"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        b = 7;
        if (lms_parse_size(refused[i], &b)) {
            fprintf(stderr, "size '%s' accepted as %llu\n", refused[i], (unsigned long long)b);
            exit(1);
        }
    }
}

/* Fractions and budgets: the same strict decimal form. */
static void fractions_and_limits(void)
{
    double f;
    lms_limit l;
    CHECK(lms_parse_fraction("0.25", &f) && f == 0.25);
    CHECK(lms_parse_fraction("1", &f) && f == 1.0);
    CHECK(lms_parse_fraction("0.3", &f) && f == 0.3);
    static const char *const bad_frac[] = {" 0.5", "\t0.5", "0x0.8", "nan", "inf", "5e-1", "+0.5", "0.5 "};
    for (size_t i = 0; i < sizeof bad_frac / sizeof bad_frac[0]; i++)
        if (lms_parse_fraction(bad_frac[i], &f)) {
            fprintf(stderr, "fraction '%s' accepted as %g\n", bad_frac[i], f);
            exit(1);
        }
    CHECK(lms_parse_limit("0.5", &l) && l.is_fraction && l.fraction == 0.5);
    CHECK(lms_parse_limit("1.5G", &l) && !l.is_fraction && l.bytes == 3ull << 29);
    CHECK(lms_parse_limit("2", &l) && !l.is_fraction && l.bytes == 2);
    static const char *const bad_limit[] = {"0x10", "1.5", "\t0.5", " 2G", "\t2G", "2G\t", "0x1p30"};
    for (size_t i = 0; i < sizeof bad_limit / sizeof bad_limit[0]; i++)
        if (lms_parse_limit(bad_limit[i], &l)) {
            fprintf(stderr, "limit '%s' accepted\n", bad_limit[i]);
            exit(1);
        }
}

/* Loads the options with one variable set and returns what went to stderr
 * (a static buffer). */
static const char *load_with(const char *var, const char *value)
{
    static char text[4096];
    static const char *const all[] = {"LMS_THRESHOLD", "LMS_LIMIT", "LMS_LIMIT_1", "LMS_STACKS", "LMS_LOG"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        unsetenv(all[i]);
    setenv(var, value, 1);
    char path[] = "/tmp/lms_options_strict_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    int saved = dup(2);
    dup2(fd, 2);
    lms_options_load();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    text[n > 0 ? n : 0] = 0;
    return text;
}

/* Counts the lines of a text. */
static int lines(const char *t)
{
    int n = 0;
    for (; *t; t++)
        n += *t == '\n';
    return n;
}

/* LMS_THRESHOLD=1.5 keeps the default with one line instead of 1 byte. */
static void threshold_fraction_refused(void)
{
    const char *err = load_with("LMS_THRESHOLD", "1.5");
    CHECK(lms_opt.threshold == 8ull << 20);
    CHECK(lines(err) == 1 && strstr(err, "LMS_THRESHOLD=1.5"));
    err = load_with("LMS_THRESHOLD", "1.5M");
    CHECK(lms_opt.threshold == 3ull << 19 && lines(err) == 0);
    err = load_with("LMS_THRESHOLD", "\t64M");
    CHECK(lms_opt.threshold == 8ull << 20 && lines(err) == 1);
    err = load_with("LMS_STACKS", " 8");
    CHECK(lms_opt.stacks == 0 && lines(err) == 1);
}

/* LMS_LIMIT=2 and LMS_LIMIT_1=512: bytes, each with one warning naming
 * how it was read; 0x10 is refused; 2G and 0.5 say nothing. */
static void small_budget_warns(void)
{
    const char *err = load_with("LMS_LIMIT", "2");
    CHECK(!lms_opt.limit.is_fraction && lms_opt.limit.bytes == 2);
    CHECK(lines(err) == 1 && strstr(err, "LMS_LIMIT=2 is read as a budget of 2 bytes") && strstr(err, "2G"));
    err = load_with("LMS_LIMIT_1", "512");
    CHECK(lms_opt.device_limit_set[1] && lms_opt.device_limit[1].bytes == 512);
    CHECK(lines(err) == 1 && strstr(err, "LMS_LIMIT_1=512 is read as a budget of 512 bytes"));
    err = load_with("LMS_LIMIT", "0x10");
    CHECK(lms_opt.limit.is_fraction && lms_opt.limit.fraction == 1.0);   /* the default */
    CHECK(lines(err) == 1 && strstr(err, "LMS_LIMIT=0x10 is not a valid value"));
    err = load_with("LMS_LIMIT", "2G");
    CHECK(lms_opt.limit.bytes == 2ull << 30 && lines(err) == 0);
    err = load_with("LMS_LIMIT", "0.5");
    CHECK(lms_opt.limit.is_fraction && lines(err) == 0);
    err = load_with("LMS_LIMIT", "512K");   /* a unit says what was meant */
    CHECK(lms_opt.limit.bytes == 512ull << 10 && lines(err) == 0);
}

static const test_case cases[] = {
    {"sizes", sizes},
    {"fractions_and_limits", fractions_and_limits},
    {"threshold_fraction_refused", threshold_fraction_refused},
    {"small_budget_warns", small_budget_warns},
};

TEST_MAIN(cases)
