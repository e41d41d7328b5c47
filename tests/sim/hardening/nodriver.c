/*
 * nodriver.c — a program that reaches the driver only through
 * cuGetProcAddress_v2 found at run time, as the runtime does: under
 * `lmshim run` on a machine without libcuda.so.1 it shows what lmshim says.
 * Prints the CUresult it got.
 */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*get_proc_fn)(const char *, void **, int, unsigned long long, int *);

int main(void)
{
    get_proc_fn get = (get_proc_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
    if (!get) {
        puts("no cuGetProcAddress_v2 in the process");
        return 1;
    }
    void *p = NULL;
    int status = 0;
    printf("cuGetProcAddress_v2 -> %d\n", get("cuInit", &p, 12000, 0, &status));
    return 0;
}
