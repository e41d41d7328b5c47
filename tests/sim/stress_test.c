/*
 * stress_test.c — the simulated driver under threads and fork: eight threads
 * allocating and freeing at once return accounting exactly to its start; a
 * forked child allocates and frees on its own copy of the device.
 */
#include <cuda.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/context.h"

#define ROUNDS 10000
static CUcontext ctx;

/* One thread: mixed sizes, kinds and streams; data checked on each round. */
static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return (void *)1;
    CUdeviceptr held[8] = {0};
    bool managed[8] = {false};
    for (int i = 0; i < ROUNDS; i++) {
        seed = seed * 1103515245u + 12345u;
        int slot = (int)(seed >> 16) % 8;
        if (held[slot]) {
            uint32_t v = 0;
            if (cuMemcpyDtoH(&v, held[slot], 4) != CUDA_SUCCESS || v != (uint32_t)held[slot])
                return (void *)2;
            CUresult r = (seed & 1) || managed[slot] ? cuMemFree(held[slot])
                                                     : cuMemFreeAsync(held[slot], NULL);
            if (r != CUDA_SUCCESS)
                return (void *)3;
            held[slot] = 0;
        } else {
            size_t size = 64 + (seed >> 8) % (3u << 20);
            CUresult r = (seed & 2) ? cuMemAlloc(&held[slot], size)
                       : (seed & 4) ? cuMemAllocAsync(&held[slot], size, CU_STREAM_PER_THREAD)
                                    : cuMemAllocManaged(&held[slot], size, CU_MEM_ATTACH_GLOBAL);
            if (r != CUDA_SUCCESS)
                return (void *)4;
            managed[slot] = !(seed & 6);
            uint32_t v = (uint32_t)held[slot];
            if (cuMemcpyHtoD(held[slot], &v, 4) != CUDA_SUCCESS)
                return (void *)5;
        }
    }
    for (int s = 0; s < 8; s++)
        if (held[s] && cuMemFree(held[s]) != CUDA_SUCCESS)
            return (void *)6;
    return NULL;
}

static void eight_threads(void)
{
    ctx = primary_context(0);
    size_t f0, f1, t;
    OK(cuMemGetInfo(&f0, &t));
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        CHECK(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1)) == 0);
    for (int i = 0; i < 8; i++) {
        void *rc;
        CHECK(pthread_join(th[i], &rc) == 0);
        CHECK(rc == NULL);
    }
    OK(cuMemGetInfo(&f1, &t));
    CHECK_EQ_U(f1, f0);
}

static void fork_child(void)
{
    ctx = primary_context(0);
    CUdeviceptr parent;
    OK(cuMemAlloc(&parent, 1 << 20));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        CUdeviceptr p;
        size_t f, t;
        int bad = cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS;
        bad |= (cuMemsetD8(p, 1, 1 << 20) != CUDA_SUCCESS) << 1;
        bad |= (cuMemFree(p) != CUDA_SUCCESS) << 2;
        bad |= (cuMemFree(parent) != CUDA_SUCCESS) << 3;   /* the child's copy of the table */
        bad |= (cuMemGetInfo(&f, &t) != CUDA_SUCCESS || f != t) << 4;
        _exit(bad);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ_U(WEXITSTATUS(status), 0);
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(t - f, 1 << 20);                       /* the parent still holds its chunk */
    OK(cuMemFree(parent));
}

static const test_case cases[] = {
    {"eight_threads", eight_threads},
    {"fork_child", fork_child},
};

TEST_MAIN(cases)
