/*
 * launch.c — the kernel launch hooks. With no managed chunk alive a launch
 * costs one atomic load on top of the real call; otherwise its parameters
 * are scanned and the residency engine runs before and after it. `f` may
 * be a CUfunction or a CUkernel cast to one, as CUDA allows.
 */
#include "capture.h"
#include "hooks.h"
#include "launch.h"

/* The stream a launch really runs on: NULL means the per-thread default
 * stream for the _ptsz variants. */
static CUstream effective(CUstream s, bool ptds)
{
    return !s && ptds ? CU_STREAM_PER_THREAD : s;
}

/* Residency work before a launch of gx x gy x gz blocks; the token goes
 * to after(). The parameters are read here, their chunks found by the
 * residency engine. */
static void before(CUfunction f, unsigned gx, unsigned gy, unsigned gz, CUstream s, void **params, void **extra,
                   lms_launch_token *tok)
{
    lms_scan scan = lms_launch_words(f, params, extra);
    scan.shape = lms_launch_shape(gx, gy, gz);
    scan.blocks = lms_launch_blocks(gx, gy, gz);
    lms_residency_before_scan(lms_driver_stream_device(s), s, (uintptr_t)f, &scan, tok);
}

#define LAUNCH_HOOK(sym, ptds)                                                                     \
    LMS_EXPORT CUresult sym(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,      \
                            unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,   \
                            void **extra)                                                          \
    {                                                                                              \
        if (!LMS_ENTER(sym))                                                       \
            return PASS(sym, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);                  \
        if (!lms_residency_any()) {                                                                \
            lms_capture_idle();                                                                    \
            lms_hook_leave();                                                                      \
            return REAL(sym)(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);                  \
        }                                                                                          \
        lms_launch_token tok;                                                                      \
        CUstream es = effective(s, ptds);                                                          \
        before(f, gx, gy, gz, es, params, extra, &tok);                                            \
        CUresult r = REAL(sym)(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);                \
        lms_residency_after(&tok, es);                                                             \
        lms_hook_leave();                                                                          \
        return r;                                                                                  \
    }

LAUNCH_HOOK(cuLaunchKernel, false)
LAUNCH_HOOK(cuLaunchKernel_ptsz, true)

#define LAUNCH_EX_HOOK(sym, ptds)                                                                  \
    LMS_EXPORT CUresult sym(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)    \
    {                                                                                              \
        if (!LMS_ENTER(sym))                                                       \
            return PASS(sym, c, f, params, extra);                                                 \
        if (!lms_residency_any() || !c) {                                                          \
            lms_capture_idle();                                                                    \
            lms_hook_leave();                                                                      \
            return REAL(sym)(c, f, params, extra);                                                 \
        }                                                                                          \
        lms_launch_token tok;                                                                      \
        CUstream es = effective(c->hStream, ptds);                                                 \
        before(f, c->gridDimX, c->gridDimY, c->gridDimZ, es, params, extra, &tok);                \
        CUresult r = REAL(sym)(c, f, params, extra);                                               \
        lms_residency_after(&tok, es);                                                             \
        lms_hook_leave();                                                                          \
        return r;                                                                                  \
    }

LAUNCH_EX_HOOK(cuLaunchKernelEx, false)
LAUNCH_EX_HOOK(cuLaunchKernelEx_ptsz, true)

#define LAUNCH_COOP_HOOK(sym, ptds)                                                                \
    LMS_EXPORT CUresult sym(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,      \
                            unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params)   \
    {                                                                                              \
        if (!LMS_ENTER(sym))                                                       \
            return PASS(sym, f, gx, gy, gz, bx, by, bz, shmem, s, params);                         \
        if (!lms_residency_any()) {                                                                \
            lms_capture_idle();                                                                    \
            lms_hook_leave();                                                                      \
            return REAL(sym)(f, gx, gy, gz, bx, by, bz, shmem, s, params);                         \
        }                                                                                          \
        lms_launch_token tok;                                                                      \
        CUstream es = effective(s, ptds);                                                          \
        before(f, gx, gy, gz, es, params, NULL, &tok);                                             \
        CUresult r = REAL(sym)(f, gx, gy, gz, bx, by, bz, shmem, s, params);                       \
        lms_residency_after(&tok, es);                                                             \
        lms_hook_leave();                                                                          \
        return r;                                                                                  \
    }

LAUNCH_COOP_HOOK(cuLaunchCooperativeKernel, false)
LAUNCH_COOP_HOOK(cuLaunchCooperativeKernel_ptsz, true)
