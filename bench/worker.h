/*
 * worker.h — what the benchmarks that run each mode in its own process
 * share (worker.c): the paths of the simulated GPU and of liblmshim.so next
 * to the benchmark, running one worker with its environment and reading its
 * output, and the list of ratios on the command line.
 */
#ifndef LMS_BENCH_WORKER_H
#define LMS_BENCH_WORKER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* Where a benchmark built in <build>/bench finds the simulated driver
 * (<build>/sim) and the shim (<build>/preload/liblmshim.so). */
typedef struct worker_paths {
    char sim[PATH_MAX + 8];
    char shim[PATH_MAX + 32];
} worker_paths;

/* One change to a worker's environment: value NULL unsets the name. */
typedef struct worker_env {
    const char *name, *value;
} worker_env;

/* Fills *p from the path of the running benchmark, `self`. */
void worker_paths_of(const char *self, worker_paths *p);

/* Runs argv (argv[0]: the program; NULL-terminated) in a child process
 * with the n changes of env applied in order and its standard output into
 * buf (at most size - 1 bytes, NUL-terminated; the caller owns buf), or
 * this process's standard output when buf is NULL.
 * Answers true when the child ran and exited with status 0. */
bool worker_run(char *const argv[], const worker_env *env, size_t n, char *buf, size_t size);

/* Parses "0.5,1,2" into at most max ratios > 0; answers how many (0 on a
 * bad list). */
int worker_parse_ratios(const char *s, double *out, int max);

#endif
