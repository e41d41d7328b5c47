/*
 * hooks.h — what the hook files share: the real-pointer table generated
 * from hooks.def, one-time initialisation, and the per-thread guard.
 */
#ifndef LMS_HOOKS_H
#define LMS_HOOKS_H

#include "driver.h"   /* cuda.h with every ABI variant declared */
#include "engine.h"

#define LMS_EXPORT __attribute__((visibility("default")))

/* Per-thread variants that cuda.h does not declare under
 * __CUDA_API_VERSION_INTERNAL (cudaTypedefs.h has their PFN types). */
CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *out, CUgraph g,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS *p);
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec e, CUstream s);
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                  const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream s, CUgraph *g);
/* CUDA 12 variants that cuda.h declares only under their base names (its
 * macros map those to these). */
CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
                                                   const CUDA_KERNEL_NODE_PARAMS_v2 *p);
CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info);

typedef enum {
#define LMS_HOOK(sym, base, version, ptds, required) LMS_HOOK_##sym,
#include "hooks.def"
#undef LMS_HOOK
    LMS_HOOK_COUNT
} lms_hook_id;

/* The real driver's pointer for each hooked variant (NULL if it has none). */
extern void *lms_hook_real[LMS_HOOK_COUNT];

/* The real function of a hooked symbol, typed. */
#define REAL(sym) ((__typeof__(&sym))lms_hook_real[LMS_HOOK_##sym])

/* Runs the one-time initialisation (again after fork). */
void lms_hooks_init(void);

/* Per-thread depth of hook calls; a hook entered from a hook passes through. */
extern __thread int lms_hook_depth __attribute__((tls_model("initial-exec")));
/* True while this thread initialises (lookups then pass through). */
extern __thread bool lms_hook_initializing __attribute__((tls_model("initial-exec")));

/* Enters a hook: initialises if needed; true when the body should run,
 * false when the call must go straight to the real function. */
static inline bool lms_hook_enter(void)
{
    lms_hooks_init();
    if (!lms_active || lms_hook_depth)
        return false;
    lms_hook_depth = 1;
    return true;
}

/* Leaves a hook entered with lms_hook_enter() == true. */
static inline void lms_hook_leave(void) { lms_hook_depth = 0; }

/* Enters a hook that calls the real functions of variants `id` and `id2`
 * (-1: none): as lms_hook_enter(), but false — with nothing entered — when
 * the driver lacks either; the caller then passes the call through, and the
 * thread's later hooks still run. */
static inline bool lms_hook_enter_with(int id, int id2)
{
    if (!lms_hook_enter())
        return false;
    if (lms_hook_real[id] && (id2 < 0 || lms_hook_real[id2]))
        return true;
    lms_hook_leave();
    return false;
}

/* lms_hook_enter_with for one hooked symbol, or for two. */
#define LMS_ENTER(sym) lms_hook_enter_with(LMS_HOOK_##sym, -1)
#define LMS_ENTER2(sym, sym2) lms_hook_enter_with(LMS_HOOK_##sym, LMS_HOOK_##sym2)

/* The real call behind a hook, or NOT_SUPPORTED when the driver lacks it;
 * PASS_ARGS takes the arguments parenthesised. */
#define PASS_ARGS(sym, args) (REAL(sym) ? REAL(sym) args : CUDA_ERROR_NOT_SUPPORTED)
#define PASS(sym, ...) PASS_ARGS(sym, (__VA_ARGS__))

/* Defines the exported hook `sym` (`params`: its parenthesised parameter
 * list, `args`: the parenthesised arguments) that makes the real call and,
 * when it succeeds, runs `then` (tells the engine what was made or
 * destroyed; the memory stays the program's). */
#define LMS_HOOK_THEN(sym, params, args, then)                                    \
    LMS_EXPORT CUresult sym params                                                \
    {                                                                             \
        if (!LMS_ENTER(sym))                                                      \
            return PASS_ARGS(sym, args);                                          \
        CUresult r = REAL(sym) args;                                              \
        if (r == CUDA_SUCCESS) {                                                  \
            then;                                                                 \
        }                                                                         \
        lms_hook_leave();                                                         \
        return r;                                                                 \
    }

/* Defines the exported hook `sym` (as LMS_HOOK_THEN) whose work is one
 * engine call, `call`, given REAL(sym) to make the real call itself; the
 * hook returns what `call` returns. */
#define LMS_HOOK_BY(sym, params, args, call)                                      \
    LMS_EXPORT CUresult sym params                                                \
    {                                                                             \
        if (!LMS_ENTER(sym))                                                      \
            return PASS_ARGS(sym, args);                                          \
        CUresult r = call;                                                        \
        lms_hook_leave();                                                         \
        return r;                                                                 \
    }

/* The hook for a real pointer, or the pointer itself when not hooked. */
void *lms_hook_for_real(void *real);
/* The hook exported under `name`, or NULL. */
void *lms_hook_by_name(const char *name);

#endif
