/*
 * trials_engine_test.c — hostile programs against the timed steps
 * (src/common/plan.c, "Timed steps") with liblmshim.so preloaded over the
 * simulated GPU (settings in meson.build): steps of 16 launches and more,
 * their launches on several streams, streams destroyed between the points,
 * a period that flaps, a fork in the middle of the trials, graphs. Every
 * case checks the kernels' results and lmshim's budget.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "lmshim.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define CHUNK (4 * MiB)
#define NCH 16   /* 64 MiB over a budget of 24 MiB (meson.build) */

/* bump(p, bytes): reads [p, p+bytes), adds 1 to its first byte. */
static void bump(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    __atomic_fetch_add((uint8_t *)(uintptr_t)a, 1, __ATOMIC_RELAXED);
    l->compute(l, 2e5);
}

static CUfunction f_bump;
static CUmodule mod;
static int (*get_stats)(int, lms_device_stats *);
static CUdeviceptr ch[NCH];
static uint8_t want[NCH];

static void setup(void)
{
    primary_context(0);
    simgpu_kernel k = {"bump", bump, 2, {8, 8}};
    OK(simgpu_register_kernel(&k));
    OK(cuModuleLoadData(&mod, "x"));
    OK(cuModuleGetFunction(&f_bump, mod, "bump"));
    get_stats = (int (*)(int, lms_device_stats *))dlsym(RTLD_DEFAULT, "lms_get_stats");
    CHECK(get_stats != NULL);
    for (int i = 0; i < NCH; i++) {
        OK(cuMemAlloc(&ch[i], CHUNK));
        OK(cuMemsetD8(ch[i], 0, CHUNK));
        want[i] = 0;
    }
}

/* The budget held, and every chunk's count is what was launched. */
static void check_all(void)
{
    OK(cuCtxSynchronize());
    lms_device_stats s;
    CHECK(get_stats(0, &s) == 0);
    CHECK(s.used <= s.budget);
    CHECK_EQ_U(s.budget_violations, 0);
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    CHECK(c.peak_device_bytes <= s.budget);
    CHECK(s.launches_scanned > 0);   /* the engine saw the launches */
    CHECK(s.evictions > 0 || s.prefetches == 0);   /* 64 MiB over 24: what comes goes (none fetches nothing) */
    for (int i = 0; i < NCH; i++) {
        uint8_t v = 0;
        OK(cuMemcpyDtoH(&v, ch[i], 1));
        CHECK_EQ_U(v, want[i]);
    }
}

static CUresult bump_on(int i, CUstream s)
{
    size_t bytes = CHUNK;
    void *args[] = {&ch[i], &bytes};
    want[i]++;
    return cuLaunchKernel(f_bump, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

/* A step of `len` launches over the chunks in turn, launch k on
 * streams[k % ns]. */
static void step(int len, CUstream *streams, int ns)
{
    for (int k = 0; k < len; k++)
        OK(bump_on(k % NCH, streams[k % ns]));
}

/* Steps of exactly 16 launches, then of 48 on three streams (one of them
 * destroyed and made anew every step), then steps flapping between 24 and
 * 40 launches and between 16 and 100. */
static void streams_and_flaps(void)
{
    setup();
    CUstream s[3] = {NULL};
    OK(cuStreamCreate(&s[1], CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s[2], 0));
    for (int r = 0; r < 30; r++)
        step(16, s, 1);
    check_all();
    for (int r = 0; r < 30; r++) {
        step(48, s, 3);
        OK(cuStreamSynchronize(s[2]));
        OK(cuStreamDestroy(s[2]));
        OK(cuStreamCreate(&s[2], 0));
    }
    check_all();
    for (int r = 0; r < 40; r++)
        step(r % 2 ? 24 : 40, s, 2);
    for (int r = 0; r < 40; r++)
        step(r % 2 ? 16 : 100, s, 1);
    check_all();
    OK(cuStreamDestroy(s[1]));
    OK(cuStreamDestroy(s[2]));
}

/* A fork in the middle of the trials: the child runs steps of its own and
 * checks them; the parent goes on. */
static void fork_mid_trial(void)
{
    setup();
    CUstream s[1] = {NULL};
    for (int r = 0; r < 4; r++)
        step(32, s, 1);
    for (int k = 0; k < 13; k++)
        OK(bump_on(k, NULL));
    OK(cuCtxSynchronize());
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (int r = 0; r < 12; r++)
            for (int k = 0; k < 32; k++)
                if (bump_on(k % NCH, NULL) != CUDA_SUCCESS)
                    _exit(2);
        if (cuCtxSynchronize() != CUDA_SUCCESS)
            _exit(3);
        lms_device_stats st;
        if (get_stats(0, &st) != 0 || st.budget_violations || st.used > st.budget)
            _exit(4);
        for (int i = 0; i < NCH; i++) {
            uint8_t v = 0;
            if (cuMemcpyDtoH(&v, ch[i], 1) != CUDA_SUCCESS || v != want[i])
                _exit(5);
        }
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int r = 0; r < 12; r++)
        step(32, s, 1);
    check_all();
}

/* Graph launches among kernel launches: a captured step of 8 launches
 * launched once per step between 16 plain launches. */
static void graphs_in_steps(void)
{
    setup();
    CUstream cs;
    OK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int k = 0; k < 8; k++)
        OK(bump_on(8 + k, cs));
    CUgraph g;
    OK(cuStreamEndCapture(cs, &g));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    for (int k = 0; k < 8; k++)
        want[8 + k]--;   /* captured, not run */
    CUstream s[1] = {cs};
    for (int r = 0; r < 40; r++) {
        for (int k = 0; k < 16; k++)
            OK(bump_on(k % 8, cs));
        OK(cuGraphLaunch(e, cs));
        for (int k = 0; k < 8; k++)
            want[8 + k]++;
        step(0, s, 1);
    }
    check_all();
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
    OK(cuStreamDestroy(cs));
}

static const test_case cases[] = {
    {"streams_and_flaps", streams_and_flaps},
    {"fork_mid_trial", fork_mid_trial},
    {"graphs_in_steps", graphs_in_steps},
};

TEST_MAIN(cases)
