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

/* ---- configuration (config.c) ------------------------------------------ */

typedef struct sim_config {
    int devices;              /* SIMGPU_DEVICES */
    uint64_t mem_bytes;       /* SIMGPU_MEM, capacity of each device */
    double link_gbps;         /* SIMGPU_LINK_GBPS, host<->device GB/s (1e9 B/s) */
    double fault_us;          /* SIMGPU_FAULT_US, fixed cost of one fault batch */
    double fault_gbps;        /* SIMGPU_FAULT_GBPS, bandwidth of fault migration */
    double hbm_gbps;          /* SIMGPU_HBM_GBPS, device memory bandwidth */
    double launch_us;         /* SIMGPU_LAUNCH_US, fixed cost of one launch */
    uint64_t l2_bytes;        /* SIMGPU_L2_MIB, the L2 that serves re-reads of a range */
    bool report;              /* SIMGPU_REPORT=1 prints counters at exit */
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
    unsigned host_flags;     /* cuMemHostAlloc flags */
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

struct CUstream_st {
    uint32_t magic;
    int device;
    CUcontext ctx;
    int kind;                 /* SIM_STREAM_* */
    unsigned flags;           /* CU_STREAM_DEFAULT / NON_BLOCKING */
    int priority;
    uint64_t id;
    double t_ns;              /* modeled completion of its last operation */
};

struct CUevent_st {
    uint32_t magic;
    unsigned flags;
    bool recorded;
    int device;
    double t_ns;              /* modeled time of the last record */
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
CUresult sim_current_ctx(CUcontext *out);          /* INVALID_CONTEXT if none */
CUresult sim_current_device(int *out);
bool sim_ctx_valid(CUcontext ctx);

/* ---- registry (registry.c) ---------------------------------------------- */

void sim_registry_add(sim_alloc *a);                /* takes ownership */
sim_alloc *sim_registry_find(uintptr_t p);          /* containing p, or NULL */
sim_alloc *sim_registry_find_base(uintptr_t p);     /* starting at p, or NULL */
void sim_registry_remove(sim_alloc *a);
uint64_t sim_next_buffer_id(void);

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
double sim_device_idle_ns(int device);

/* ---- lookup (procaddr.c) ------------------------------------------------ */

void *sim_proc_lookup(const char *name, int version, bool per_thread, int *status);

#endif
