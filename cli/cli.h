/*
 * cli.h — the subcommands of the lmshim command and what they share.
 */
#ifndef LMS_CLI_H
#define LMS_CLI_H

#include <stddef.h>
#include <stdio.h>

/* The install's library directory relative to the directory of the lmshim
 * executable ("../lib/x86_64-linux-gnu"), set by cli/meson.build. */
#ifndef LMS_REL_LIBDIR
#define LMS_REL_LIBDIR "../lib"
#endif

int lms_cmd_run(int argc, char **argv);
int lms_cmd_info(int argc, char **argv);
int lms_cmd_replay(int argc, char **argv);
int lms_cmd_report(int argc, char **argv);
int lms_cmd_top(int argc, char **argv);

/* The directory of the lmshim executable (no trailing slash). */
const char *lms_cli_self_dir(void);

/* Finds a file of the build or install tree next to the executable: tries
 * each path (relative to the executable's directory, or absolute); returns
 * 0 and the absolute path in out, or -1. */
int lms_cli_find(const char *const *relative, char *out, size_t len);

/* The simulated GPU's library directory (build/sim), or NULL. */
const char *lms_cli_sim_dir(void);

/* Prepends dir to a ':'-separated variable, keeping what is there. */
int lms_cli_prepend_env(const char *var, const char *dir);

/* Sets the variables that make framework allocators work under lmshim
 * (frameworks.c), keeping what the user set, and says what it set in one
 * line on `say` (nothing if it set nothing). 0, or -1 out of memory. */
int lms_cli_frameworks_env(FILE *say);
/* Says in one line on `say` which LMS_* variables of the environment are
 * no lmshim option (a typo such as LMS_TRESHOLD is otherwise silently
 * ignored); `who` begins the line, `hint` ends it. Returns how many there
 * are. */
int lms_cli_unknown_env(FILE *say, const char *who, const char *hint);
/* Parses a link speed in GB/s: a finite number above 0; -1 otherwise. */
int lms_cli_parse_gbps(const char *text, double *gbps);

#endif
