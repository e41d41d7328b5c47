/*
 * options.h — lmshim's options (options.def), parsed once from the
 * environment into lms_opt. Nothing else in lmshim reads the environment
 * for an option.
 */
#ifndef LMS_OPTIONS_H
#define LMS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LMS_MAX_DEVICES 16

typedef enum { LMS_MODE_MANAGED, LMS_MODE_HOST } lms_mode;
typedef enum { LMS_ON_OOM_MANAGED, LMS_ON_OOM_FAIL } lms_on_oom;
typedef enum { LMS_AUTO_OFF, LMS_AUTO_ON, LMS_AUTO_AUTO } lms_auto;
typedef enum { LMS_LEVEL_OFF, LMS_LEVEL_ERROR, LMS_LEVEL_WARN, LMS_LEVEL_INFO, LMS_LEVEL_DEBUG } lms_level;

/* A budget: bytes, or a fraction of the device's physical memory. */
typedef struct lms_limit {
    bool is_fraction;
    double fraction;     /* 0 < fraction <= 1 when is_fraction */
    uint64_t bytes;      /* > 0 otherwise */
} lms_limit;

/* C types of the option types of options.def. */
typedef uint64_t lms_SIZE_t;
typedef double lms_FRACTION_t;
typedef lms_mode lms_MODE_t;
typedef lms_limit lms_LIMIT_t;
typedef lms_on_oom lms_ON_OOM_t;
typedef lms_level lms_LEVEL_t;
typedef lms_auto lms_AUTO_t;
typedef bool lms_BOOL_t;
typedef int lms_INT_t;
typedef int lms_FRAMES_t;     /* stack frames, 0..LMS_STACK_MAX */
typedef char lms_PATH_t[256];
typedef const struct lms_policy *lms_POLICY_t;
typedef char lms_GROUP_t[64];   /* "" (no group) or a valid group name */
typedef unsigned lms_OCTAL_t;    /* a file mode, 0..0777 */

typedef enum {
#define LMS_OPTION(name, type, def, doc) LMS_OPT_##name,
#include "options.def"
#undef LMS_OPTION
    LMS_OPT_COUNT
} lms_option_id;

typedef enum { LMS_SOURCE_DEFAULT, LMS_SOURCE_ENV } lms_source;

typedef struct lms_options {
#define LMS_OPTION(name, type, def, doc) lms_##type##_t name;
#include "options.def"
#undef LMS_OPTION
    lms_limit device_limit[LMS_MAX_DEVICES];    /* LMS_LIMIT_<n> */
    bool device_limit_set[LMS_MAX_DEVICES];
    lms_source source[LMS_OPT_COUNT];
} lms_options;

extern lms_options lms_opt;

/* Parses every option from the environment into lms_opt. A bad value
 * prints one line on stderr (variable, value, the default kept). Called once
 * per process (and again in a fork child); not thread-safe by itself. */
void lms_options_load(void);

/* Name ("threshold"), environment name ("LMS_THRESHOLD"), doc and default
 * of option i; NULL past the last. */
const char *lms_option_name(int i);
const char *lms_option_env(int i, char *buf, size_t len);
const char *lms_option_doc(int i);
const char *lms_option_default(int i);

/* True when text is a valid value for option i (nothing is changed). */
bool lms_option_valid(int i, const char *text);

/* True when option i is a boolean (a `lmshim run` flag that needs no value). */
bool lms_option_is_bool(int i);

/* Where option i's value came from: "default" or "environment". */
const char *lms_option_source(int i);

/* Writes the current value of option i as text. */
void lms_option_value(int i, char *buf, size_t len);

/* The budget of a device of `physical` bytes under the options. */
uint64_t lms_options_budget(int device, uint64_t physical);

/* The rank of this process in a parallel job (RANK, OMPI_COMM_WORLD_RANK,
 * PMI_RANK, SLURM_PROCID), or 0. */
int lms_rank(void);

/* Parsers shared with tests: true and *out set when text is valid. */
bool lms_parse_fraction(const char *text, double *out);
bool lms_parse_limit(const char *text, lms_limit *out);
bool lms_parse_bool(const char *text, bool *out);

#endif
