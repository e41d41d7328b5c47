/*
 * sim.h — shared state of the simulated driver (libcuda.so.1).
 *
 * One process-wide lock (sim_lock) guards every table below: the allocation
 * registry, device accounting, the residency of managed blocks and the time
 * model. Work is executed synchronously at issue time, which keeps every
 * stream's order; the time model then places each operation on a modeled
 * timeline (docs/SIMULATOR.md).
 */
#ifndef SIM_H
#define SIM_H

/* See every ABI variant (v1, _v2, _ptsz, _ptds) under its own name. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../simgpu.h"

#define SIM_EXPORT __attribute__((visibility("default")))
#define SIM_DRIVER_VERSION 13000
#define SIM_MAX_DEVICES 16
#define SIM_BLOCK_BYTES ((size_t)2 << 20)   /* managed-memory block: 2 MiB */
#define SIM_LOC_HOST (-1)                   /* block location: host memory */
#define SIM_LOC_NONE (-2)                   /* no preferred location */
#define SIM_MAX_PITCH ((size_t)2147483647)  /* CU_DEVICE_ATTRIBUTE_MAX_PITCH, bytes */

/* ---- configuration (config.c) ------------------------------------------ */

typedef struct sim_config {
    int devices;              /* visible devices: SIMGPU_DEVICES, filtered by CUDA_VISIBLE_DEVICES */
    int physical_devices;     /* SIMGPU_DEVICES: the machine's devices */
    int physical[SIM_MAX_DEVICES]; /* visible ordinal -> physical index (the device's identity, its UUID) */
    uint64_t mem_bytes;       /* SIMGPU_MEM, capacity of each device */
    double link_gbps;         /* SIMGPU_LINK_GBPS, host<->device GB/s (1e9 B/s) */
    double fault_us;          /* SIMGPU_FAULT_US, fixed cost of one fault batch */
    double fault_gbps;        /* SIMGPU_FAULT_GBPS, bandwidth of fault migration */
    double hbm_gbps;          /* SIMGPU_HBM_GBPS, device memory bandwidth */
    double launch_us;         /* SIMGPU_LAUNCH_US, fixed cost of one launch */
    uint64_t l2_bytes;        /* SIMGPU_L2_MIB, the L2 that serves re-reads of a range */
    bool report;              /* SIMGPU_REPORT=1 prints counters at exit */
    bool concurrent_managed;  /* SIMGPU_CONCURRENT_MANAGED (default 1): the device
                                 attribute CONCURRENT_MANAGED_ACCESS */
    bool concurrent;          /* SIMGPU_CONCURRENT=1: kernels of different streams overlap */
    int timeline_fd;          /* SIMGPU_TIMELINE=path: one line per modeled operation (-1: off) */
} sim_config;

extern sim_config sim_cfg;
void sim_config_load(void);

/* ---- objects ------------------------------------------------------------ */

typedef enum { SIM_MEM_DEVICE, SIM_MEM_MANAGED, SIM_MEM_HOST, SIM_MEM_VMM } sim_kind;

typedef struct sim_alloc sim_alloc;

/* One 2 MiB block of a managed allocation, with its location. */
typedef struct sim_block {
    struct sim_block *prev, *next;   /* LRU list of its device while resident */
    sim_alloc *owner;
    size_t bytes;                    /* bytes of the allocation in this block */
    int loc;                         /* SIM_LOC_HOST or a device ordinal */
    int preferred;                   /* SIM_LOC_NONE, SIM_LOC_HOST or a device */
    uint32_t accessed_by;            /* bit d: AccessedBy device d */
    double ready_ns;                 /* modeled time its copy to the device ends (-1: being issued) */
    double busy_ns;                  /* modeled end of the last kernel that touched it there */
} sim_block;

/* One live allocation; the registry owns it. */
struct sim_alloc {
    uintptr_t base;          /* first byte */
    size_t size;             /* bytes requested */
    size_t charged;          /* device bytes charged (rounded), 0 for host/managed */
    sim_kind kind;
    int device;              /* owning device; -1 for pinned host */
    CUcontext ctx;           /* context it was made in */
    bool mapped;             /* host: mapped into the device address space */
    bool owns_memory;        /* base must be released when freed */
    bool from_mmap;          /* released with munmap (else free) */
    CUmemoryPool pool;       /* stream-ordered allocations: their pool */
    unsigned host_flags;     /* cuMemHostAlloc / cuMemHostRegister flags */
    bool registered;         /* host: the program's memory, cuMemHostRegister */
    uint64_t id;             /* buffer id, unique per process */
    sim_block *blocks;       /* managed: one per 2 MiB */
    size_t nblocks;
    void *vmm_phys;          /* VMM mapping: the physical allocation mapped */
};

struct CUctx_st {
    uint32_t magic;
    int device;
    bool primary;
    unsigned flags;
    int refs;                /* primary: retain count */
};

/* A modeled execution engine: busy until this time (ns). */
typedef struct sim_engine { double busy_ns; } sim_engine;

enum { SIM_STREAM_USER, SIM_STREAM_LEGACY, SIM_STREAM_PER_THREAD };

#define SIM_MAX_DEPS 64      /* capture: dependencies a stream or event carries */
typedef struct sim_capture sim_capture;

struct CUstream_st {
    uint32_t magic;
    int device;
    CUcontext ctx;
    int kind;                 /* SIM_STREAM_* */
    unsigned flags;           /* CU_STREAM_DEFAULT / NON_BLOCKING */
    int priority;
    uint64_t id;
    double t_ns;              /* modeled completion of its last operation */
    sim_capture *cap;         /* capture it takes part in (capture.c), or NULL */
    CUgraphNode deps[SIM_MAX_DEPS];   /* capture: nodes its next node depends on */
    int ndeps;
    CUstream next_free;       /* destroyed: the next one whose handle comes back later */
};

struct CUevent_st {
    uint32_t magic;
    struct CUevent_st *prev, *next;   /* list of live events, or of dead ones (stream.c) */
    CUcontext ctx;            /* context it was made in */
    unsigned flags;
    bool recorded;
    int device;
    double t_ns;              /* modeled time of the last record */
    uint64_t cap_id;          /* recorded during this capture (0: outside any) */
    CUgraphNode deps[SIM_MAX_DEPS];   /* capture: the recording stream's nodes */
    int ndeps;
};

struct CUmemPoolHandle_st {
    uint32_t magic;
    int device;
    bool is_default;
    bool destroyed;           /* destroyed while allocations were live */
    size_t live;              /* allocations outstanding */
    uint64_t release_threshold;
    uint64_t used_bytes;      /* charged bytes outstanding */
    uint64_t used_high;       /* high-water mark of used_bytes */
    unsigned handle_types;    /* CUmemAllocationHandleType bits: exportable when not 0 */
};

typedef struct sim_device {
    int ordinal;
    uint64_t capacity;        /* bytes */
    uint64_t used;            /* bytes: device + pool + VMM + resident managed */
    struct CUctx_st primary;
    struct CUstream_st legacy;
    struct CUmemPoolHandle_st default_pool;
    CUmemoryPool current_pool;
    sim_engine compute, h2d, d2h;
    sim_block lru;            /* sentinel: lru.next is least recently used */
    simgpu_counters c;
} sim_device;

extern pthread_mutex_t sim_lock;
extern sim_device sim_devices[SIM_MAX_DEVICES];
extern bool sim_initialized;
extern double sim_host_ns;    /* modeled host clock: work cannot start before */

#define SIM_MAGIC_CTX    0x43545831u
#define SIM_MAGIC_STREAM 0x53545231u
#define SIM_MAGIC_EVENT  0x45564e31u
#define SIM_MAGIC_POOL   0x504f4f4cu
#define SIM_MAGIC_FUNC   0x46554e43u
#define SIM_MAGIC_MOD    0x4d4f4431u

/* ---- init / context (device.c, context.c) ------------------------------ */

CUresult sim_check_init(void);
CUresult sim_check_device(CUdevice dev);         /* init, then the ordinal */
CUresult sim_check_device_args(bool args_ok, CUdevice dev);   /* init, args (INVALID_VALUE), ordinal */
CUresult sim_current_ctx(CUcontext *out);          /* INVALID_CONTEXT if none */
CUresult sim_current_device(int *out);
bool sim_ctx_valid(CUcontext ctx);
/* The context a new allocation on `device` belongs to: the calling thread's
 * current one when it is on that device, else the device's primary. */
CUcontext sim_alloc_ctx(int device);
/* Destroying a context frees what it owns (context.c, takes sim_lock). */
void sim_ctx_free_resources(CUcontext ctx);
/* Streams and events of ctx go away with it (stream.c, under sim_lock). */
void sim_streams_drop_ctx(CUcontext ctx);
/* Arrays of ctx go away with it (array.c, under sim_lock). */
void sim_arrays_drop_ctx(CUcontext ctx);

/* ---- registry (registry.c) ---------------------------------------------- */

void sim_registry_add(sim_alloc *a);                /* takes ownership */
sim_alloc *sim_registry_find(uintptr_t p);          /* containing p, or NULL */
sim_alloc *sim_registry_find_base(uintptr_t p);     /* starting at p, or NULL */
sim_alloc *sim_registry_overlap(uintptr_t p, size_t bytes);   /* any in [p, p+bytes) */
void sim_registry_remove(sim_alloc *a);
uint64_t sim_next_buffer_id(void);
sim_alloc *const *sim_registry_all(size_t *n);      /* sorted; until the next change */

/* ---- memory (memory.c) -------------------------------------------------- */

size_t sim_round_charge(size_t bytes);
void *sim_host_memory(size_t bytes, bool *from_mmap, bool low32);
void sim_host_release(void *p, size_t bytes, bool from_mmap);
CUresult sim_charge(int device, uint64_t bytes);   /* evicts managed if needed */
void sim_uncharge(int device, uint64_t bytes);
CUresult sim_alloc_device(CUdeviceptr *dptr, size_t bytes, bool low32, CUmemoryPool pool,
                          int device);
CUresult sim_free_alloc(sim_alloc *a);

/* ---- residency (residency.c) ------------------------------------------- */

CUresult sim_managed_init(sim_alloc *a);
void sim_managed_release(sim_alloc *a);
bool sim_evict_lru(int device, double *cost_ns);    /* false when none resident */
void sim_touch(int device, uintptr_t p, size_t bytes, double start_ns, double *stall_ns, uint64_t *remote_bytes,
               double *arrive_ns);
uint64_t sim_pass_bytes(uint64_t remote, uint64_t range, unsigned passes);
void sim_mark_busy(int device, uintptr_t p, size_t bytes, double end_ns);
CUresult sim_prefetch(uintptr_t p, size_t bytes, int dst, double start_ns, double *copy_ns);
void sim_arrive(uintptr_t p, size_t bytes, double t_ns);
CUresult sim_advise(uintptr_t p, size_t bytes, int advice, int loc);
void sim_note_used(int device);
double sim_link_ns(uint64_t bytes);

/* ---- streams and time (stream.c) --------------------------------------- */

enum { SIM_ENGINE_COMPUTE, SIM_ENGINE_H2D, SIM_ENGINE_D2H };
CUresult sim_resolve_stream(CUstream s, bool per_thread, CUstream *out);
double sim_start_ns(CUstream s, int engine);
double sim_schedule(CUstream s, int engine, double duration_ns);
void sim_host_wait(double t_ns);
void sim_timeline(CUstream s, int engine, double start_ns, double end_ns, uint64_t bytes, const char *what);
double sim_device_idle_ns(int device);

/* ---- kernels, modules, libraries (kernel.c, library.c) ------------------ */

#define SIM_MAGIC_KERNEL 0x4b524e31u
#define SIM_MAGIC_LIB    0x4c494231u
CUfunction sim_handle_new(const char *name, uint32_t magic, const void *owner);
CUfunction sim_handle_check(const void *h, uint32_t magic);   /* 0: either kind */
void sim_handle_free(CUfunction h);
const char *sim_handle_label(CUfunction h);
CUmodule sim_module_new(CUlibrary library);
void sim_module_free(CUmodule m);
CUresult sim_module_function(CUmodule m, const char *name, CUfunction *out);
CUresult sim_param_info(const void *h, uint32_t magic, size_t index, size_t *offset, size_t *size);
CUresult sim_handle_name(const char **name, const void *h, uint32_t magic);
CUresult sim_func_attribute(int *pi, CUfunction_attribute attrib);
int sim_driver_version(void);   /* SIMGPU_DRIVER_VERSION, default SIM_DRIVER_VERSION */
/* ---- stream capture (capture.c) and graphs (graph.c) ------------------- */

/* One node to add to a graph; the graph copies what it needs. */
typedef struct sim_node_desc {
    CUgraphNodeType type;      /* KERNEL, MEMCPY, MEMSET, HOST, MEM_ALLOC, MEM_FREE, EMPTY,
                                  GRAPH or CONDITIONAL */
    CUfunction func;           /* kernel: a CUfunction, or a CUkernel cast to one */
    bool by_kernel;            /* kernel: func is a CUkernel; the node reports it as kern */
    CUcontext ctx;             /* kernel by CUkernel: the context it runs in (NULL: unknown) */
    unsigned grid[3], block[3], shmem;
    void **params;             /* kernel: one pointer per parameter */
    CUdeviceptr dst, src;      /* memcpy: bytes; memset: count elements of width;
                                  mem alloc/free: dst is the graph allocation */
    size_t bytes;
    unsigned value, width;
    size_t count;
    CUhostFn fn;               /* host */
    void *user;
    CUgraph child;             /* child graph: the embedded graph (a node owns its own clone) */
    CUgraph *bodies;           /* conditional: its nbodies body graphs (a node owns its own
                                  array and graphs; NULL in a new node's description) */
    unsigned nbodies;
    CUgraphConditionalNodeType cond_type;
    CUgraphConditionalHandle cond;   /* conditional: the handle whose value it reads */
} sim_node_desc;

/* Gate of every stream-ordered operation on st (takes sim_lock): success
 * with *record false runs it now; with *record true the stream is capturing
 * and the operation must become a node (sim_capture_add). An operation that
 * cannot be captured invalidates the capture and gets its error; work on the
 * legacy stream while a blocking stream of the device captures gets
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT. */
CUresult sim_capture_gate(CUstream st, bool capturable, bool *record);
/* Adds a node to st's capture after st's current dependencies (takes sim_lock). */
CUresult sim_capture_add(CUstream st, const sim_node_desc *d);
/* A synchronization of st (stream, event or context wait): refused with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED while st captures (takes sim_lock). */
CUresult sim_capture_sync_stream(CUstream st);
/* cuCtxSynchronize while a stream of the device captures (takes sim_lock). */
CUresult sim_capture_sync_device(int device);
/* An event recorded in a capture still in progress: it cannot be queried
 * or synchronized (CUDA_ERROR_CAPTURED_EVENT; under sim_lock). */
bool sim_capture_event_pending(CUevent e);
/* Event record and wait inside a capture (under sim_lock). */
void sim_capture_record(CUstream st, CUevent e);
CUresult sim_capture_wait(CUstream st, CUevent e, unsigned flags, bool *handled);
/* Calls that may synchronize (allocations, frees) under the capture modes:
 * refused while the calling thread's or a global capture forbids them. */
CUresult sim_capture_unsafe_call(void);
/* A stream going away ends its part in a capture (under sim_lock). */
void sim_capture_forget_stream(CUstream st);
/* Every stream taking part in capture c leaves it (stream.c, under sim_lock). */
void sim_stream_leave_capture(sim_capture *c);

/* Graphs (graph.c); these helpers run under sim_lock. */
CUgraph sim_graph_new(void);
CUresult sim_graph_add(CUgraph g, const CUgraphNode *deps, size_t ndeps,
                       const sim_node_desc *d, CUgraphNode *out);
CUgraphNode *sim_graph_nodes(CUgraph g, size_t *n);   /* the graph's own array */
bool sim_graph_has_dependents(CUgraphNode n);
void sim_graph_free(CUgraph g);
/* True when a launch of these dimensions fits the device's limits (at
 * least 1 each; grid x < 2^31, y and z <= 65535; block x, y <= 1024,
 * z <= 64, 1024 threads in all). */
bool sim_launch_dims_ok(const unsigned grid[3], const unsigned block[3]);
bool sim_graph_takes_memory_nodes(CUgraph g);          /* a live graph not embedded in a child node */
bool sim_graph_valid(CUgraph g);                       /* a live graph (under sim_lock) */

/* Conditional handles (conditional.c): whether h was made (under
 * sim_lock), the value it holds, and the start of a launch that uses it
 * (its default assigned again, when made so). */
bool sim_cond_valid(CUgraphConditionalHandle h);
unsigned sim_cond_value(CUgraphConditionalHandle h);
void sim_cond_launch_begins(CUgraphConditionalHandle h);

/* Graph memory (graphmem.c): an allocation or free node run by a graph
 * launch (takes sim_lock); whether p is a graph allocation (under sim_lock). */
CUresult sim_graphmem_run(const sim_node_desc *d);
bool sim_graphmem_is_alloc(CUdeviceptr p);
void sim_graphmem_drop_device(int device);   /* its primary context went (sim_lock) */
/* A stream-ordered allocation captured on st: a new graph allocation and
 * its allocation node (takes sim_lock). */
CUresult sim_graphmem_capture_alloc(CUstream st, size_t size, int device, CUdeviceptr *dptr);

/* Kernels (kernel.c): validity, layout and execution outside any capture. */
bool sim_kernel_valid(CUfunction f);
unsigned sim_kernel_layout(CUfunction f, size_t *offsets, size_t *sizes, size_t *total);
CUresult sim_kernel_run(CUfunction f, const unsigned grid[3], const unsigned block[3],
                        CUstream st, void **params);

/* The handle types a VMM handle may be exported as, and its memfd; false
 * for a handle the driver did not hand out (vmm.c, under sim_lock). */
bool sim_vmm_export_info(CUmemGenericAllocationHandle h, unsigned *types, int *fd);

/* Devices without concurrent managed access (SIMGPU_CONCURRENT_MANAGED=0,
 * legacy_um.c): all managed memory moves to the device before a launch and
 * back after it; returns the modeled time (takes sim_lock). */
double sim_legacy_um_launch(int device, bool before);

/* ---- lookup (procaddr.c) ------------------------------------------------ */

void *sim_proc_lookup(const char *name, int version, bool per_thread, int *status);

#endif
