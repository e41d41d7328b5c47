/* Loads one library and calls its initialisation, which starts the copy of
 * cudart linked into it: argv[1] = cublas | cudnn | nccl. Used by
 * record_entries.sh. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "";
    void *h = NULL, *obj = NULL;
    int r = -1;
    if (!strcmp(which, "cublas")) {
        h = dlopen("libcublas.so.13", RTLD_NOW);
        int (*create)(void **) = h ? (int (*)(void **))dlsym(h, "cublasCreate_v2") : NULL;
        r = create ? create(&obj) : -2;
    } else if (!strcmp(which, "cudnn")) {
        h = dlopen("libcudnn.so.9", RTLD_NOW);
        int (*create)(void **) = h ? (int (*)(void **))dlsym(h, "cudnnCreate") : NULL;
        r = create ? create(&obj) : -2;
    } else if (!strcmp(which, "nccl")) {
        h = dlopen("libnccl.so.2", RTLD_NOW);
        void *comms[1];
        int dev[1] = {0};
        int (*init)(void **, int, const int *) =
            h ? (int (*)(void **, int, const int *))dlsym(h, "ncclCommInitAll") : NULL;
        r = init ? init(comms, 1, dev) : -2;
    }
    printf("%s: %s, initialisation returned %d\n", which, h ? "loaded" : dlerror(), r);
    return 0;
}
