/*
 * device.c — initialisation, devices and their attributes, the model
 * counters, the exit report, and fork safety of the simulated driver.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;
sim_device sim_devices[SIM_MAX_DEVICES];
bool sim_initialized;
static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* Prints every device's counters to stderr at exit (SIMGPU_REPORT=1). */
static void report_at_exit(void)
{
    for (int d = 0; d < sim_cfg.devices; d++) {
        const simgpu_counters *c = &sim_devices[d].c;
        char line[512];
        int n = snprintf(line, sizeof line,
                         "simgpu: device %d: faults=%llu to_device=%llu to_host=%llu remote=%llu "
                         "prefetch=%llu evictions=%llu launches=%llu peak=%llu modeled_ms=%.3f\n",
                         d, (unsigned long long)c->faults, (unsigned long long)c->bytes_to_device,
                         (unsigned long long)c->bytes_to_host, (unsigned long long)c->remote_bytes,
                         (unsigned long long)c->prefetch_bytes, (unsigned long long)c->evictions,
                         (unsigned long long)c->launches, (unsigned long long)c->peak_device_bytes,
                         sim_device_idle_ns(d) / 1e6);
        if (n > 0)
            (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
}

/* Fork: the lock is held across fork so the child's copy of the tables is
 * consistent; the child gets a fresh mutex and keeps using its copy (more
 * permissive than a real driver, so that interposers can be tested there). */
static void before_fork(void) { pthread_mutex_lock(&sim_lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&sim_lock); }
static void after_fork_child(void) { pthread_mutex_init(&sim_lock, NULL); }

/* Sets up devices from the configuration; runs once per process. */
static void load_once(void)
{
    sim_config_load();
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    for (int d = 0; d < sim_cfg.devices; d++) {
        sim_device *dev = &sim_devices[d];
        dev->ordinal = d;
        dev->capacity = sim_cfg.mem_bytes;
        dev->primary = (struct CUctx_st){.magic = SIM_MAGIC_CTX, .device = d, .primary = true};
        dev->legacy = (struct CUstream_st){.magic = SIM_MAGIC_STREAM, .device = d,
                                           .ctx = &dev->primary, .kind = SIM_STREAM_LEGACY};
        dev->default_pool = (struct CUmemPoolHandle_st){.magic = SIM_MAGIC_POOL, .device = d,
                                                        .is_default = true};
        dev->current_pool = &dev->default_pool;
        dev->lru.next = dev->lru.prev = &dev->lru;
    }
    if (sim_cfg.report)
        atexit(report_at_exit);
    init_result = sim_cfg.devices > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

/* Returns CUDA_SUCCESS once cuInit has succeeded. */
CUresult sim_check_init(void)
{
    return sim_initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

SIM_EXPORT CUresult cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&config_once, load_once);
    if (init_result == CUDA_SUCCESS)
        sim_initialized = true;
    return init_result;
}

SIM_EXPORT CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = sim_driver_version();
    return CUDA_SUCCESS;
}

/* Validates an ordinal after init: NOT_INITIALIZED, INVALID_DEVICE or SUCCESS. */
CUresult sim_check_device(CUdevice dev)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    return dev >= 0 && dev < sim_cfg.devices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* As sim_check_device, with the call's other arguments checked between
 * init and the ordinal (the simulator's order: CUDA does not document
 * which error wins when both are wrong): INVALID_VALUE when !args_ok. */
CUresult sim_check_device_args(bool args_ok, CUdevice dev)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!args_ok)
        return CUDA_ERROR_INVALID_VALUE;
    return dev >= 0 && dev < sim_cfg.devices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

SIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= sim_cfg.devices)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetCount(int *count)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = sim_cfg.devices;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "lmshim simulated GPU %d", sim_cfg.physical[dev]);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = sim_devices[dev].capacity;
    return CUDA_SUCCESS;
}

/* v1 ABI: 32-bit byte count, saturated. */
SIM_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    size_t b;
    CUresult r = cuDeviceTotalMem_v2(bytes ? &b : NULL, dev);
    if (r == CUDA_SUCCESS)
        *bytes = b > 0xffffffffu ? 0xffffffffu : (unsigned int)b;
    return r;
}

/* One step of the splitmix64 generator: a well-mixed 64-bit value of x. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The UUID of a visible device: a function of its physical index alone, so
 * a GPU keeps its UUID whatever CUDA_VISIBLE_DEVICES makes its ordinal, in
 * every process and run, and no two physical devices share one. */
SIM_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t seed = 0x6c6d7368696d0000ull + (uint64_t)sim_cfg.physical[dev];   /* "lmshim" */
    uint64_t half[2] = {mix64(seed), mix64(~seed)};
    for (int i = 0; i < 16; i++)
        uuid->bytes[i] = (char)(half[i / 8] >> (8 * (7 - i % 8)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid_v2(uuid, dev);
}

SIM_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    CUresult r = sim_check_device(dev);
    if (r == CUDA_SUCCESS)
        r = sim_check_device(peer);
    if (r != CUDA_SUCCESS)
        return r;
    if (!can)
        return CUDA_ERROR_INVALID_VALUE;
    *can = dev != peer;
    return CUDA_SUCCESS;
}

/* ---- counters ----------------------------------------------------------- */

/* Reads one device's counters, or all summed when device < 0. */
SIM_EXPORT int simgpuGetCounters(int device, simgpu_counters *out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (device >= sim_cfg.devices)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&sim_lock);
    memset(out, 0, sizeof *out);
    for (int d = 0; d < sim_cfg.devices; d++) {
        if (device >= 0 && d != device)
            continue;
        const simgpu_counters *c = &sim_devices[d].c;
        out->faults += c->faults;
        out->bytes_to_device += c->bytes_to_device;
        out->bytes_to_host += c->bytes_to_host;
        out->remote_bytes += c->remote_bytes;
        out->prefetch_bytes += c->prefetch_bytes;
        out->evictions += c->evictions;
        out->launches += c->launches;
        out->peak_device_bytes += c->peak_device_bytes;
        out->inflight_waits += c->inflight_waits;
        out->busy_evictions += c->busy_evictions;
        out->stale_events += c->stale_events;
        out->used_device_bytes += sim_devices[d].used;
        double t = sim_device_idle_ns(d);
        if (t > out->modeled_ns)
            out->modeled_ns = t;
    }
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

/* Zeroes every counter; peaks restart from the bytes in use now. */
SIM_EXPORT int simgpuResetCounters(void)
{
    if (!sim_initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&sim_lock);
    for (int d = 0; d < sim_cfg.devices; d++) {
        memset(&sim_devices[d].c, 0, sizeof sim_devices[d].c);
        sim_devices[d].c.peak_device_bytes = sim_devices[d].used;
    }
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}
