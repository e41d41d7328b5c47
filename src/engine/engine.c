/*
 * engine.c — engine start-up (see engine.h).
 */
#include "engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "account.h"
#include "arenas.h"
#include "capture.h"
#include "chunks.h"
#include "driver.h"
#include "graph.h"
#include "group.h"
#include "launch.h"
#include "log.h"
#include "place.h"
#include "residency.h"
#include "stats.h"
#include "status.h"
#include "stack.h"
#include "trace.h"
#include "pools.h"
#include "vmm.h"
#include "arrays.h"

bool lms_active;
static bool exit_registered;

/* At exit: the per-device summary when asked for. */
static void at_exit(void)
{
    if (lms_active && (lms_opt.stats || LMS_LOG_ON(LMS_LEVEL_INFO)))
        lms_stats_print();
    if (lms_trace_on) {
        lms_stats_trace_summary();
        lms_trace_flush();
    }
}

bool lms_engine_init(void)
{
    lms_options_load();
    if (lms_opt.disable)
        lms_opt.log = LMS_LEVEL_OFF;   /* pure pass-through: not a word either */
    lms_log_open();
    bool driver = lms_driver_open();
    lms_active = driver && !lms_opt.disable;
    if (lms_active) {
        lms_trace_open();
        lms_status_start();
        lms_group_open();
    }
    if (LMS_LOG_ON(LMS_LEVEL_DEBUG)) {
        for (int i = 0; i < LMS_OPT_COUNT; i++) {
            char v[300], env[64];
            lms_option_value(i, v, sizeof v);
            lms_log(LMS_LEVEL_DEBUG, "option %s=%s (%s)", lms_option_env(i, env, sizeof env), v,
                    lms_option_source(i));
        }
    }
    if (!exit_registered) {
        exit_registered = true;
        atexit(at_exit);
    }
    return lms_active;
}

/* The engine's handlers act once per fork however often they were
 * registered: a thread's depth counts the prepare calls of its fork. */
static __thread int fork_depth;

void lms_engine_fork_prepare(void)
{
    if (fork_depth++ > 0)
        return;
    lms_place_fork_prepare();   /* first: placements take the other locks under it */
    lms_capture_fork_prepare();   /* a leaf, taken under the context lock (a drain) */
    lms_graph_fork_prepare();
    lms_residency_fork_prepare();
    lms_launch_fork_prepare();   /* after the device locks: launches take it under them */
    lms_vmm_fork_prepare();
    lms_arrays_fork_prepare();
    lms_pools_fork_prepare();
    lms_arenas_fork_prepare();
    lms_chunks_lock_all();
    lms_stack_fork_prepare();   /* a leaf: nothing is locked under it */
    lms_trace_fork_prepare();   /* last: lines are written under the other locks */
}

void lms_engine_fork_parent(void)
{
    if (--fork_depth > 0)
        return;
    lms_trace_fork_parent();
    lms_stack_fork_parent();
    lms_chunks_unlock_all();
    lms_arenas_fork_parent();
    lms_pools_fork_parent();
    lms_arrays_fork_parent();
    lms_vmm_fork_parent();
    lms_launch_fork_parent();
    lms_residency_fork_parent();
    lms_graph_fork_parent();
    lms_capture_fork_parent();
    lms_place_fork_parent();
}

void lms_engine_fork_child(void)
{
    if (--fork_depth > 0)
        return;
    lms_trace_fork_child();
    lms_stack_fork_child();
    lms_chunks_reset_locks();
    lms_launch_fork_child();
    lms_residency_fork_child();
    lms_vmm_fork_child();
    lms_arrays_fork_child();
    lms_pools_fork_child();
    lms_arenas_fork_child();
    lms_account_reset_setup();
    lms_graph_fork_child();
    lms_capture_fork_child();
    lms_group_fork_child();
    lms_place_fork_child();
}

void lms_engine_fork_register(void)
{
    pthread_atfork(lms_engine_fork_prepare, lms_engine_fork_parent, lms_engine_fork_child);
}

void lms_engine_driver_started(void)
{
    static atomic_bool done;
    if (!atomic_exchange(&done, true))
        lms_engine_fork_register();
}
