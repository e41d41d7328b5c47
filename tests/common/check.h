/*
 * check.h — the assertions and the case dispatcher shared by test programs.
 * A test program holds named cases; meson runs each case as its own test
 * (`prog CASE`). A failed check prints where and why, then exits 1.
 */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

/* A call that must return `want` (a CUresult or cudaError_t). */
#define CHECK_IS(call, want)                                                         \
    do {                                                                             \
        long got_ = (long)(call);                                                    \
        if (got_ != (long)(want)) {                                                  \
            fprintf(stderr, "%s:%d: %s returned %ld, expected %ld\n", __FILE__, __LINE__, \
                    #call, got_, (long)(want));                                      \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define OK(call) CHECK_IS(call, 0)

#define CHECK_EQ_U(a, b)                                                              \
    do {                                                                              \
        unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
        if (a_ != b_) {                                                               \
            fprintf(stderr, "%s:%d: %s = %llu, expected %s = %llu\n", __FILE__, __LINE__, \
                    #a, a_, #b, b_);                                                  \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

/* |a - b| <= tol * |b| */
#define CHECK_NEAR(a, b, tol)                                                         \
    do {                                                                              \
        double a_ = (double)(a), b_ = (double)(b);                                    \
        double d_ = a_ > b_ ? a_ - b_ : b_ - a_;                                      \
        if (d_ > (tol) * (b_ < 0 ? -b_ : b_) + 1e-9) {                                \
            fprintf(stderr, "%s:%d: %s = %.6f, expected %.6f\n", __FILE__, __LINE__, #a, a_, b_); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;

/* Runs the case named argv[1] (or lists the cases with no argument). */
static inline int run_case(const test_case *cases, size_t n, int argc, char **argv)
{
    if (argc < 2) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(cases[i].name, argv[1]) == 0) {
            cases[i].fn();
            return 0;
        }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}

#define TEST_MAIN(cases) \
    int main(int argc, char **argv) { return run_case(cases, sizeof cases / sizeof cases[0], argc, argv); }

#endif
