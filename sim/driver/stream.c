/*
 * stream.c — streams, events and the modeled timeline.
 *
 * Work runs synchronously when it is issued, so each stream's order holds
 * trivially. The timeline is modeled: every operation occupies one engine of
 * its device (compute, host-to-device copy, device-to-host copy) and starts
 * at the latest of its stream's last completion, the engine's availability,
 * the modeled host clock and, for the legacy default stream, the completion
 * of every blocking stream of the device (docs/SIMULATOR.md).
 */
#include "sim.h"

#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

double sim_host_ns;

static CUstream *streams;        /* live user and per-thread streams (sim_lock) */
static size_t nstreams, capstreams;
static uint64_t next_stream_id = 16;
static CUstream free_streams;    /* destroyed user streams, most recent first (sim_lock):
                                    their handle values come back, as the driver's do */
static __thread CUstream per_thread[SIM_MAX_DEVICES];
static pthread_key_t per_thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* Adds a stream to the live list (under sim_lock). */
static bool list_add(CUstream s)
{
    if (nstreams == capstreams) {
        size_t ncap = capstreams ? capstreams * 2 : 32;
        CUstream *n = realloc(streams, ncap * sizeof *n);
        if (!n)
            return false;
        streams = n;
        capstreams = ncap;
    }
    streams[nstreams++] = s;
    return true;
}

/* Removes a stream from the live list; false if it was not there. */
static bool list_remove(CUstream s)
{
    for (size_t i = 0; i < nstreams; i++)
        if (streams[i] == s) {
            streams[i] = streams[--nstreams];
            return true;
        }
    return false;
}

/* Thread exit: the thread's per-thread default streams go away. */
static void per_thread_destroy(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&sim_lock);
    for (int d = 0; d < SIM_MAX_DEVICES; d++)
        if (per_thread[d]) {
            sim_capture_forget_stream(per_thread[d]);
            list_remove(per_thread[d]);
            free(per_thread[d]);
            per_thread[d] = NULL;
        }
    pthread_mutex_unlock(&sim_lock);
}

/* Without a key (the program took them all) per-thread streams live until
 * exit: no key but our own may be written. */
static bool have_key;
static void make_key(void) { have_key = pthread_key_create(&per_thread_key, per_thread_destroy) == 0; }

/* The calling thread's per-thread default stream on `device` (lazily made). */
static CUstream per_thread_stream(int device)
{
    if (per_thread[device])
        return per_thread[device];
    pthread_once(&key_once, make_key);
    CUstream s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    *s = (struct CUstream_st){.magic = SIM_MAGIC_STREAM, .device = device,
                              .ctx = &sim_devices[device].primary, .kind = SIM_STREAM_PER_THREAD};
    pthread_mutex_lock(&sim_lock);
    s->id = next_stream_id++;
    bool ok = list_add(s);
    pthread_mutex_unlock(&sim_lock);
    if (!ok) {
        free(s);
        return NULL;
    }
    per_thread[device] = s;
    if (have_key)
        pthread_setspecific(per_thread_key, s);
    return s;
}

/* Turns a stream argument into a stream object: NULL is the legacy default
 * stream, or the per-thread one for _ptsz/_ptds entry points. */
CUresult sim_resolve_stream(CUstream s, bool ptds, CUstream *out)
{
    int d;
    CUresult r = sim_current_device(&d);
    if (r != CUDA_SUCCESS)
        return r;
    if (s == CU_STREAM_PER_THREAD || (!s && ptds)) {
        *out = per_thread_stream(d);
        return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!s || s == CU_STREAM_LEGACY) {
        *out = &sim_devices[d].legacy;
        return CUDA_SUCCESS;
    }
    bool found = false;
    pthread_mutex_lock(&sim_lock);
    for (size_t i = 0; i < nstreams && !found; i++)
        found = streams[i] == s;
    pthread_mutex_unlock(&sim_lock);
    if (!found || s->magic != SIM_MAGIC_STREAM)
        return CUDA_ERROR_INVALID_HANDLE;
    *out = s;
    return CUDA_SUCCESS;
}

/* Live events (sentinel), and those of destroyed contexts: kept allocated
 * so that a stale handle still reads its (cleared) magic. */
static struct CUevent_st live_events = {.prev = &live_events, .next = &live_events};
static struct CUevent_st dead_events = {.prev = &dead_events, .next = &dead_events};

/* Moves an event to the front of a list (under sim_lock). */
static void event_link(CUevent e, CUevent list)
{
    e->next = list->next;
    e->prev = list;
    list->next->prev = e;
    list->next = e;
}

/* Takes an event out of its list (under sim_lock). */
static void event_unlink(CUevent e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
}

/* A context goes away: its streams are freed and its events die; their
 * handles answer INVALID_HANDLE. */
void sim_streams_drop_ctx(CUcontext ctx)
{
    for (CUevent e = live_events.next, next; e != &live_events; e = next) {
        next = e->next;
        if (e->ctx == ctx) {
            event_unlink(e);
            e->magic = 0;
            event_link(e, &dead_events);
        }
    }
    for (size_t i = 0; i < nstreams;) {
        CUstream s = streams[i];
        if (s->ctx == ctx && s->kind == SIM_STREAM_USER) {
            sim_capture_forget_stream(s);
            streams[i] = streams[--nstreams];
            s->magic = 0;
            free(s);
        } else {
            i++;
        }
    }
}

/* Every stream taking part in capture c leaves it (under sim_lock). */
void sim_stream_leave_capture(sim_capture *c)
{
    for (size_t i = 0; i < nstreams; i++)
        if (streams[i]->cap == c) {
            streams[i]->cap = NULL;
            streams[i]->ndeps = 0;
        }
}

/* Latest completion among the blocking streams of a device (under lock). */
static double blocking_done(int device)
{
    double t = sim_devices[device].legacy.t_ns;
    for (size_t i = 0; i < nstreams; i++)
        if (streams[i]->device == device && !(streams[i]->flags & CU_STREAM_NON_BLOCKING) &&
            streams[i]->t_ns > t)
            t = streams[i]->t_ns;
    return t;
}

/* The engine of a device that runs operations of kind `engine`. */
static sim_engine *engine_of(sim_device *dev, int engine)
{
    return engine == SIM_ENGINE_COMPUTE ? &dev->compute : engine == SIM_ENGINE_H2D ? &dev->h2d : &dev->d2h;
}

/* When an operation issued now on stream s and one engine would start
 * (under sim_lock). */
double sim_start_ns(CUstream s, int engine)
{
    sim_device *dev = &sim_devices[s->device];
    sim_engine *e = engine_of(dev, engine);
    double start = s->t_ns;
    if (e->busy_ns > start && !(engine == SIM_ENGINE_COMPUTE && sim_cfg.concurrent))
        start = e->busy_ns;
    if (sim_host_ns > start)
        start = sim_host_ns;
    if (s->kind == SIM_STREAM_LEGACY) {
        double b = blocking_done(s->device);
        if (b > start)
            start = b;
    } else if (!(s->flags & CU_STREAM_NON_BLOCKING) && dev->legacy.t_ns > start) {
        start = dev->legacy.t_ns;
    }
    return start;
}

/* Places an operation of `duration_ns` on stream s and one engine; returns
 * its modeled completion time (under sim_lock). */
double sim_schedule(CUstream s, int engine, double duration_ns)
{
    sim_engine *e = engine_of(&sim_devices[s->device], engine);
    double end = sim_start_ns(s, engine) + duration_ns;
    s->t_ns = end;
    if (end > e->busy_ns)
        e->busy_ns = end;
    return end;
}

/* Writes one line of the SIMGPU_TIMELINE file: device, engine, stream,
 * modeled start and end (µs), bytes and what it was (under sim_lock; a
 * debugging aid: the file is written with one write per line). */
void sim_timeline(CUstream s, int engine, double start_ns, double end_ns, uint64_t bytes, const char *what)
{
    if (sim_cfg.timeline_fd < 0)
        return;
    static const char *names[] = {"compute", "h2d", "d2h"};
    char line[512];
    int n = snprintf(line, sizeof line, "%d %s %p %.3f %.3f %llu %s\n", s->device,
                     engine >= 0 && engine < 3 ? names[engine] : "?", (void *)s, start_ns / 1e3, end_ns / 1e3,
                     (unsigned long long)bytes, what);
    if (n <= 0)
        return;
    if ((size_t)n >= sizeof line) {   /* cut short, but still one line */
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    (void)!write(sim_cfg.timeline_fd, line, (size_t)n);
}

/* The host waits until t_ns (a synchronize). */
void sim_host_wait(double t_ns)
{
    if (t_ns > sim_host_ns)
        sim_host_ns = t_ns;
}

/* When every engine and stream of a device is done (under sim_lock). */
double sim_device_idle_ns(int device)
{
    sim_device *dev = &sim_devices[device];
    double t = blocking_done(device);
    const double e[3] = {dev->compute.busy_ns, dev->h2d.busy_ns, dev->d2h.busy_ns};
    for (int i = 0; i < 3; i++)
        if (e[i] > t)
            t = e[i];
    for (size_t i = 0; i < nstreams; i++)
        if (streams[i]->device == device && streams[i]->t_ns > t)
            t = streams[i]->t_ns;
    return t;
}

/* ---- streams ----------------------------------------------------------- */

SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    CUstream s = free_streams;   /* the handle of the stream destroyed last, if any */
    if (s)
        free_streams = s->next_free;
    else
        s = malloc(sizeof *s);
    if (!s) {
        pthread_mutex_unlock(&sim_lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *s = (struct CUstream_st){.magic = SIM_MAGIC_STREAM, .device = ctx->device, .ctx = ctx,
                              .kind = SIM_STREAM_USER, .flags = flags,
                              .priority = priority < -5 ? -5 : priority > 0 ? 0 : priority};
    s->id = next_stream_id++;
    s->t_ns = sim_host_ns;
    bool ok = list_add(s);
    if (!ok) {
        s->magic = 0;
        s->next_free = free_streams;
        free_streams = s;
    }
    pthread_mutex_unlock(&sim_lock);
    if (!ok)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phStream = s;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int flags)
{
    return cuStreamCreateWithPriority(phStream, flags, 0);
}

SIM_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    bool found = false;
    pthread_mutex_lock(&sim_lock);
    for (size_t i = 0; i < nstreams && !found; i++)
        found = streams[i] == s && s->kind == SIM_STREAM_USER;
    if (found) {
        sim_capture_forget_stream(s);
        list_remove(s);
        s->magic = 0;
        s->next_free = free_streams;   /* kept: a later stream gets this handle */
        free_streams = s;
    }
    pthread_mutex_unlock(&sim_lock);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuStreamDestroy(CUstream s) { return cuStreamDestroy_v2(s); }

/* Shared body of cuStreamSynchronize and its _ptsz twin. */
static CUresult stream_sync(CUstream s, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r == CUDA_SUCCESS)
        r = sim_capture_sync_stream(st);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    sim_host_wait(st->kind == SIM_STREAM_LEGACY ? blocking_done(st->device) : st->t_ns);
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamSynchronize(CUstream s) { return stream_sync(s, false); }
SIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) { return stream_sync(s, true); }

/* Work is done when issued, so a valid stream is always idle; a capturing
 * stream cannot be queried. */
static CUresult stream_query(CUstream s, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    return r == CUDA_SUCCESS ? sim_capture_sync_stream(st) : r;
}

SIM_EXPORT CUresult cuStreamQuery(CUstream s) { return stream_query(s, false); }
SIM_EXPORT CUresult cuStreamQuery_ptsz(CUstream s) { return stream_query(s, true); }

/* Validates an event handle (live events carry their magic). An event of
 * a context that ended is still allocated (sim_streams_drop_ctx): a call
 * naming it is counted in its device's `stale_events`. */
static bool event_valid(CUevent e)
{
    if (e && e->magic == 0 && e->device >= 0 && e->device < SIM_MAX_DEVICES)
        __atomic_fetch_add(&sim_devices[e->device].c.stale_events, 1, __ATOMIC_RELAXED);
    return e && e->magic == SIM_MAGIC_EVENT;
}

/* Shared body of cuStreamWaitEvent and its _ptsz twin. */
static CUresult stream_wait_event(CUstream s, CUevent e, unsigned flags, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (!event_valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    bool handled;
    r = sim_capture_wait(st, e, flags, &handled);
    if (!handled && e->recorded && e->t_ns > st->t_ns)
        st->t_ns = e->t_ns;
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    return stream_wait_event(s, e, flags, false);
}

SIM_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags)
{
    return stream_wait_event(s, e, flags, true);
}

/* Shared body of the stream property queries. */
static CUresult stream_props(CUstream s, bool ptds, unsigned *flags, CUdevice *device,
                             CUcontext *ctx, int *priority, unsigned long long *id)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags)
        *flags = st->flags;
    if (device)
        *device = st->device;
    if (ctx)
        *ctx = st->ctx;
    if (priority)
        *priority = st->priority;
    if (id)
        *id = st->id;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamGetFlags(CUstream s, unsigned int *flags)
{
    return flags ? stream_props(s, false, flags, NULL, NULL, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream s, unsigned int *flags)
{
    return flags ? stream_props(s, true, flags, NULL, NULL, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT CUresult cuStreamGetDevice(CUstream s, CUdevice *device)
{
    return device ? stream_props(s, false, NULL, device, NULL, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT CUresult cuStreamGetDevice_ptsz(CUstream s, CUdevice *device)
{
    return device ? stream_props(s, true, NULL, device, NULL, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT CUresult cuStreamGetCtx(CUstream s, CUcontext *ctx)
{
    return ctx ? stream_props(s, false, NULL, NULL, ctx, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream s, CUcontext *ctx)
{
    return ctx ? stream_props(s, true, NULL, NULL, ctx, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT CUresult cuStreamGetPriority(CUstream s, int *priority)
{
    return priority ? stream_props(s, false, NULL, NULL, NULL, priority, NULL)
                    : CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT CUresult cuStreamGetId(CUstream s, unsigned long long *id)
{
    return id ? stream_props(s, false, NULL, NULL, NULL, NULL, id) : CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT CUresult cuStreamGetId_ptsz(CUstream s, unsigned long long *id)
{
    return id ? stream_props(s, true, NULL, NULL, NULL, NULL, id) : CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream s, int *priority)
{
    return priority ? stream_props(s, true, NULL, NULL, NULL, priority, NULL)
                    : CUDA_ERROR_INVALID_VALUE;
}
/* CUDA 12.5: the context and the green context (none in the simulator). */
static CUresult stream_ctx_v2(CUstream s, bool ptds, CUcontext *ctx, CUgreenCtx *green)
{
    if (!ctx || !green)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_props(s, ptds, NULL, NULL, ctx, NULL, NULL);
    if (r == CUDA_SUCCESS)
        *green = NULL;
    return r;
}
SIM_EXPORT CUresult cuStreamGetCtx_v2(CUstream s, CUcontext *ctx, CUgreenCtx *green)
{
    return stream_ctx_v2(s, false, ctx, green);
}
SIM_EXPORT CUresult cuStreamGetCtx_v2_ptsz(CUstream s, CUcontext *ctx, CUgreenCtx *green)
{
    return stream_ctx_v2(s, true, ctx, green);
}

/* Shared body of cuLaunchHostFunc: the function runs in stream order,
 * which (work being synchronous) is now. */
static CUresult launch_host_func(CUstream s, CUhostFn fn, void *user, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    bool record;
    r = sim_capture_gate(st, true, &record);
    if (r == CUDA_SUCCESS && record)
        return sim_capture_add(st, &(sim_node_desc){.type = CU_GRAPH_NODE_TYPE_HOST, .fn = fn,
                                                    .user = user});
    if (r == CUDA_SUCCESS)
        fn(user);
    return r;
}

SIM_EXPORT CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *user)
{
    return launch_host_func(s, fn, user, false);
}

SIM_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *user)
{
    return launch_host_func(s, fn, user, true);
}

/* ---- events ------------------------------------------------------------ */

SIM_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int flags)
{
    CUcontext ctx;
    CUresult r = sim_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    CUevent e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *e = (struct CUevent_st){.magic = SIM_MAGIC_EVENT, .flags = flags, .device = ctx->device, .ctx = ctx};
    pthread_mutex_lock(&sim_lock);
    event_link(e, &live_events);
    pthread_mutex_unlock(&sim_lock);
    *phEvent = e;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    bool valid = event_valid(e);
    if (valid) {
        e->magic = 0;
        event_unlink(e);
    }
    pthread_mutex_unlock(&sim_lock);
    if (!valid)
        return CUDA_ERROR_INVALID_HANDLE;
    free(e);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventDestroy(CUevent e) { return cuEventDestroy_v2(e); }

/* Shared body of the cuEventRecord entry points. */
static CUresult event_record(CUevent e, CUstream s, bool ptds)
{
    CUstream st;
    CUresult r = sim_resolve_stream(s, ptds, &st);
    if (r != CUDA_SUCCESS)
        return r;
    if (!event_valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    bool record;
    r = sim_capture_gate(st, true, &record);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    if (record) {
        sim_capture_record(st, e);
        pthread_mutex_unlock(&sim_lock);
        return CUDA_SUCCESS;
    }
    e->cap_id = 0;
    double t = st->kind == SIM_STREAM_LEGACY ? blocking_done(st->device) : st->t_ns;
    if (sim_host_ns > t)
        t = sim_host_ns;
    st->t_ns = t > st->t_ns ? t : st->t_ns;
    e->t_ns = t;
    e->recorded = true;
    e->device = st->device;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventRecord(CUevent e, CUstream s) { return event_record(e, s, false); }
SIM_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { return event_record(e, s, true); }

/* cuEventRecordWithFlags: a flag other than CU_EVENT_RECORD_EXTERNAL is INVALID_VALUE. */
static CUresult event_record_flags(CUevent e, CUstream s, unsigned flags, bool ptds)
{
    return flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL ? CUDA_ERROR_INVALID_VALUE : event_record(e, s, ptds);
}

SIM_EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags)
{ return event_record_flags(e, s, flags, false); }
SIM_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags)
{ return event_record_flags(e, s, flags, true); }

/* cuEventQuery (wait false) and cuEventSynchronize (wait true): an event
 * recorded during a capture answers CAPTURED_EVENT; otherwise a wait lets
 * the modeled host clock reach the event's time (nothing to wait for when
 * it was never recorded). A query answers as if the work were done
 * (never NOT_READY). */
static CUresult event_done(CUevent e, bool wait)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!event_valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    bool pending = sim_capture_event_pending(e);
    if (wait && e->recorded && !pending)
        sim_host_wait(e->t_ns);
    pthread_mutex_unlock(&sim_lock);
    return pending ? CUDA_ERROR_CAPTURED_EVENT : CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventQuery(CUevent e) { return event_done(e, false); }
SIM_EXPORT CUresult cuEventSynchronize(CUevent e) { return event_done(e, true); }

SIM_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    if (!event_valid(start) || !event_valid(end))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!start->recorded || !end->recorded ||
        ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    *ms = (float)((end->t_ns - start->t_ns) / 1e6);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
    return cuEventElapsedTime_v2(ms, start, end);
}
