/*
 * procaddr_self.c — a client of the recording driver (fakedrv/): it finds
 * cuGetProcAddress_v2 on the driver's handle (lmshim's hook under
 * LD_PRELOAD) and asks it for cuInit, cuDriverGetVersion and
 * cuGetProcAddress itself (v2 and v1), then calls what it got. The driver answers with whatever the global scope
 * holds, lmshim's hooks among them; every call must reach the driver once
 * and return, never call the hook again.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../common/check.h"

typedef int (*gpa2_fn)(const char *, void **, int, unsigned long long, int *);
typedef int (*gpa1_fn)(const char *, void **, int, unsigned long long);

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    CHECK(h);
    int *calls = dlsym(h, "fake_calls");
    CHECK(calls);   /* the recording driver, not the simulator */
    gpa2_fn gpa2 = (gpa2_fn)dlsym(h, "cuGetProcAddress_v2");
    CHECK(gpa2);

    void *p = NULL;
    int status = -1;
    OK(gpa2("cuInit", &p, 12000, 0, &status));
    CHECK(p && status == 0);
    OK(((int (*)(unsigned))p)(0));
    CHECK(calls[0] == 1);

    void *again = NULL;
    OK(gpa2("cuGetProcAddress", &again, 12000, 0, &status));
    CHECK(again);
    int before = calls[2];
    p = NULL;
    OK(((gpa2_fn)again)("cuDriverGetVersion", &p, 12000, 0, &status));
    CHECK(p && calls[2] == before + 1);
    int v = 0;
    OK(((int (*)(int *))p)(&v));
    CHECK(v == 13000 && calls[1] == 1);

    /* The v1 entry: the driver exports none, its answer is lmshim's own. */
    gpa1_fn gpa1 = NULL;
    OK(gpa2("cuGetProcAddress", (void **)&gpa1, 11030, 0, &status));
    CHECK(gpa1);
    p = NULL;
    OK(gpa1("cuInit", &p, 12000, 0));
    CHECK(p);
    OK(((int (*)(unsigned))p)(0));
    CHECK(calls[0] == 2);
    puts("ok");
    return 0;
}
