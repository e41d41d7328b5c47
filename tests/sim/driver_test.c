/*
 * driver_test.c — conformance of the simulated driver's init, devices,
 * contexts, allocations, pointer queries, copies and errors, checked against
 * the CUDA driver API's documented behaviour. One case per meson test.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/context.h"
#include "../common/shim.h"

/* cuInit + the primary context of device 0 made current. */
static CUcontext setup(void) { return primary_context(0); }

static void init_required(void)
{
    CUdeviceptr p;
    int n;
    CHECK_IS(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_IS(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_IS(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    int v = 0;
    OK(cuDriverGetVersion(&v));
    CHECK(v == 13000);
    OK(cuInit(0));
    OK(cuInit(0));
    OK(cuDeviceGetCount(&n));
    CHECK(n == 1);
}

static void no_devices(void)   /* SIMGPU_DEVICES=0 */
{
    int n = -1;
    CHECK_IS(cuInit(0), CUDA_ERROR_NO_DEVICE);
    CHECK_IS(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CUdeviceptr p;
    CHECK_IS(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_IS(cuInit(0), CUDA_ERROR_NO_DEVICE);
}

static void device_query(void)
{
    OK(cuInit(0));
    CUdevice d;
    OK(cuDeviceGet(&d, 0));
    CHECK_IS(cuDeviceGet(&d, 1), CUDA_ERROR_INVALID_DEVICE);
    CHECK_IS(cuDeviceGet(&d, -1), CUDA_ERROR_INVALID_DEVICE);
    char name[64];
    OK(cuDeviceGetName(name, sizeof name, 0));
    CHECK(strstr(name, "simulated") != NULL);
    size_t total;
    OK(cuDeviceTotalMem(&total, 0));
    CHECK_EQ_U(total, 4 * GiB);
    int v;
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0));
    CHECK(v == 1);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0));
    CHECK(v == 1);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0));
    CHECK(v == 0);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    CHECK(v == 9);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
    CHECK(v == 0);
    CHECK_IS(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3), CUDA_ERROR_INVALID_DEVICE);
}

static void context_stack(void)
{
    OK(cuInit(0));
    CUdeviceptr p;
    CHECK_IS(cuMemAlloc(&p, 64), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext cur = (CUcontext)1, prim, mine, popped;
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == NULL);
    OK(cuDevicePrimaryCtxRetain(&prim, 0));
    unsigned flags;
    int active;
    OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 1);
    OK(cuCtxPushCurrent(prim));
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == prim);
    OK(cuCtxCreate(&mine, NULL, 0, 0));
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == mine && mine != prim);
    CUdevice dev = -1;
    OK(cuCtxGetDevice(&dev));
    CHECK(dev == 0);
    OK(cuCtxPopCurrent(&popped));
    CHECK(popped == mine);
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == prim);
    OK(cuCtxDestroy(mine));
    CHECK_IS(cuCtxDestroy(mine), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_IS(cuCtxPushCurrent((CUcontext)&dev), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuCtxPopCurrent(&popped));
    CHECK_IS(cuCtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuDevicePrimaryCtxRelease(0));
    CHECK_IS(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);   /* no context left */
}

static void alloc_free(void)
{
    setup();
    CUdeviceptr p;
    CHECK_IS(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemAlloc(&p, 1000));
    CHECK(p != 0 && p % 256 == 0);
    char in[1000], out[1000];
    for (int i = 0; i < 1000; i++)
        in[i] = (char)(i * 7);
    OK(cuMemcpyHtoD(p, in, sizeof in));
    OK(cuMemcpyDtoH(out, p, sizeof out));
    CHECK(memcmp(in, out, sizeof in) == 0);
    CHECK_IS(cuMemFree(p + 8), CUDA_ERROR_INVALID_VALUE);   /* not a base */
    OK(cuMemFree(p));
    CHECK_IS(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);       /* double free */
    CHECK_IS(cuMemFree((CUdeviceptr)(uintptr_t)in), CUDA_ERROR_INVALID_VALUE);
}

static void oom_at_capacity(void)   /* SIMGPU_MEM=64M */
{
    setup();
    size_t free_b, total;
    OK(cuMemGetInfo(&free_b, &total));
    CHECK_EQ_U(total, 64 * MiB);
    CHECK_EQ_U(free_b, 64 * MiB);
    CUdeviceptr a, b;
    OK(cuMemAlloc(&a, 48 * MiB));
    CHECK_IS(cuMemAlloc(&b, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_IS(cuMemAlloc(&b, 65 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemAlloc(&b, 16 * MiB));
    OK(cuMemGetInfo(&free_b, &total));
    CHECK_EQ_U(free_b, 0);
    OK(cuMemFree(a));
    OK(cuMemAlloc(&a, 32 * MiB));
    OK(cuMemFree(a));
    OK(cuMemFree(b));
    OK(cuMemGetInfo(&free_b, &total));
    CHECK_EQ_U(free_b, 64 * MiB);
}

static void mem_get_info(void)
{
    setup();
    size_t f0, f1, total;
    OK(cuMemGetInfo(&f0, &total));
    CUdeviceptr small, big;
    OK(cuMemAlloc(&small, 1000));          /* 512 B granules: charged 1024 */
    OK(cuMemAlloc(&big, 3 * MiB + 1));     /* 2 MiB pages: charged 4 MiB */
    OK(cuMemGetInfo(&f1, &total));
    CHECK_EQ_U(f0 - f1, 1024 + 4 * MiB);
    CHECK_IS(cuMemGetInfo(NULL, &total), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(small));
    OK(cuMemFree(big));
    OK(cuMemGetInfo(&f1, &total));
    CHECK_EQ_U(f1, f0);
}

static void pitch(void)
{
    setup();
    CUdeviceptr p;
    size_t pt = 0;
    OK(cuMemAllocPitch(&p, &pt, 1000, 10, 4));
    CHECK(pt == 1024);
    CHECK_IS(cuMemAllocPitch(&p, &pt, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemsetD8(p, 0xab, pt * 10));
    OK(cuMemFree(p));
}

static void managed_alloc(void)
{
    setup();
    CUdeviceptr p;
    size_t f0, f1, total;
    OK(cuMemGetInfo(&f0, &total));
    CHECK_IS(cuMemAllocManaged(&p, 4096, 7), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuMemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemAllocManaged(&p, 64 * MiB, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemGetInfo(&f1, &total));
    CHECK_EQ_U(f1, f0);                    /* not resident: not charged */
    int managed = 0;
    unsigned type = 0;
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p + 100));
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    CHECK(managed == 1 && type == CU_MEMORYTYPE_DEVICE);
    ((char *)(uintptr_t)p)[5] = 42;        /* host access of managed memory */
    char c;
    OK(cuMemcpyDtoH(&c, p + 5, 1));
    CHECK(c == 42);
    OK(cuMemFree(p));
}

static void host_alloc(void)
{
    setup();
    void *h;
    CHECK_IS(cuMemHostAlloc(&h, 4096, 0x80), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    unsigned type = 0;
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h));
    CHECK(type == CU_MEMORYTYPE_HOST);
    CUdeviceptr d;
    OK(cuMemHostGetDevicePointer(&d, (char *)h + 16, 0));
    CHECK(d == (CUdeviceptr)(uintptr_t)h + 16);
    CHECK_IS(cuMemHostGetDevicePointer(&d, h, 1), CUDA_ERROR_INVALID_VALUE);
    char stack;
    CHECK_IS(cuMemHostGetDevicePointer(&d, &stack, 0), CUDA_ERROR_INVALID_VALUE);
    unsigned flags = 0;
    OK(cuMemHostGetFlags(&flags, h));
    CHECK(flags & CU_MEMHOSTALLOC_PORTABLE);
    CHECK_IS(cuMemFree((CUdeviceptr)(uintptr_t)h), CUDA_ERROR_INVALID_VALUE);   /* wrong free */
    CUdeviceptr dev;
    OK(cuMemAlloc(&dev, 64));
    CHECK_IS(cuMemFreeHost((void *)(uintptr_t)dev), CUDA_ERROR_INVALID_VALUE);  /* wrong free */
    OK(cuMemFree(dev));
    size_t f0, f1, total;
    OK(cuMemGetInfo(&f0, &total));
    void *h2;
    OK(cuMemAllocHost(&h2, 8 * MiB));
    OK(cuMemGetInfo(&f1, &total));
    CHECK_EQ_U(f0, f1);                    /* pinned host memory is not device memory */
    OK(cuMemFreeHost(h2));
    OK(cuMemFreeHost(h));
    CHECK_IS(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
}

static void address_range(void)
{
    setup();
    CUdeviceptr p, base = 0;
    size_t size = 0;
    OK(cuMemAlloc(&p, 5000));
    OK(cuMemGetAddressRange(&base, &size, p + 4999));
    CHECK(base == p && size == 5000);
    CHECK_IS(cuMemGetAddressRange(&base, &size, p + 5000 + 1 * MiB), CUDA_ERROR_NOT_FOUND);
    OK(cuMemGetAddressRange(NULL, &size, p));
    OK(cuMemFree(p));
    CHECK_IS(cuMemGetAddressRange(&base, &size, p), CUDA_ERROR_NOT_FOUND);
}

static void pointer_attributes(void)
{
    CUcontext ctx = setup();
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 3000));
    CUcontext c = NULL;
    int ordinal = -1, managed = -1;
    CUdeviceptr start = 0;
    size_t size = 0;
    unsigned long long id1 = 0, id2 = 0;
    OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, p));
    OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 10));
    OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 10));
    OK(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    CHECK(c == ctx && ordinal == 0 && managed == 0 && start == p && size == 3000);
    void *hp;
    CHECK_IS(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, p), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr q;
    OK(cuMemAlloc(&q, 16));
    OK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, q));
    CHECK(id1 != id2);
    int local;
    CUdeviceptr lp = (CUdeviceptr)(uintptr_t)&local;
    CHECK_IS(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, lp), CUDA_ERROR_INVALID_VALUE);
    unsigned type = 99;
    ordinal = 99;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *data[] = {&type, &ordinal};
    OK(cuPointerGetAttributes(2, attrs, data, lp));   /* unknown pointer: defaults, no error */
    CHECK(type == 0 && ordinal == -2);
    OK(cuPointerGetAttributes(2, attrs, data, p));
    CHECK(type == CU_MEMORYTYPE_DEVICE && ordinal == 0);
    OK(cuMemFree(p));
    OK(cuMemFree(q));
}

static void memcpy_directions(void)
{
    setup();
    enum { N = 1 << 20 };
    CUdeviceptr a, b;
    OK(cuMemAlloc(&a, N));
    OK(cuMemAlloc(&b, N));
    unsigned char *h = malloc(N), *g = malloc(N);
    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i ^ (i >> 8));
    OK(cuMemcpyHtoD(a, h, N));
    OK(cuMemcpyDtoD(b, a, N));
    memset(g, 0, N);
    OK(cuMemcpyDtoH(g, b, N));
    CHECK(memcmp(h, g, N) == 0);
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    memset(g, 0, N);
    OK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)g, a, N, s));   /* unified addressing */
    OK(cuStreamSynchronize(s));
    CHECK(memcmp(h, g, N) == 0);
    OK(cuMemcpyHtoDAsync(b + 1, h, N - 1, s));
    OK(cuMemcpyDtoHAsync(g, b + 1, N - 1, s));
    OK(cuStreamSynchronize(s));
    CHECK(memcmp(h, g, N - 1) == 0);
    CHECK_IS(cuMemcpyHtoD(a + 1, h, N), CUDA_ERROR_INVALID_VALUE);   /* past the end */
    CHECK_IS(cuMemcpyDtoH(g, (CUdeviceptr)(uintptr_t)h, 16), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyHtoD(a, h, 0));
    OK(cuStreamDestroy(s));
    OK(cuMemFree(a));
    OK(cuMemFree(b));
    free(h);
    free(g);
}

static void memset_values(void)
{
    setup();
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 4096));
    OK(cuMemsetD8(p, 0x5a, 4096));
    unsigned char b[4096];
    OK(cuMemcpyDtoH(b, p, sizeof b));
    for (int i = 0; i < 4096; i++)
        CHECK(b[i] == 0x5a);
    OK(cuMemsetD16(p, 0x1234, 2048));
    unsigned short s[2048];
    OK(cuMemcpyDtoH(s, p, sizeof s));
    CHECK(s[0] == 0x1234 && s[2047] == 0x1234);
    OK(cuMemsetD32(p + 8, 0xdeadbeef, 10));
    unsigned int w[12];
    OK(cuMemcpyDtoH(w, p, sizeof w));
    CHECK(w[1] == 0x12341234u && w[2] == 0xdeadbeefu && w[11] == 0xdeadbeefu);
    CHECK_IS(cuMemsetD32(p + 2, 0, 4), CUDA_ERROR_INVALID_VALUE);   /* misaligned */
    CHECK_IS(cuMemsetD8(p, 0, 4097), CUDA_ERROR_INVALID_VALUE);     /* past the end */
    OK(cuMemsetD32Async(p, 7, 1024, NULL));
    OK(cuCtxSynchronize());
    OK(cuMemcpyDtoH(w, p, sizeof w));
    CHECK(w[0] == 7 && w[11] == 7);
    OK(cuMemFree(p));
}

static void error_names(void)
{
    const char *s = NULL;
    CUresult codes[] = {CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY,
                        CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NO_DEVICE, CUDA_ERROR_INVALID_DEVICE,
                        CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_NOT_FOUND,
                        CUDA_ERROR_NOT_SUPPORTED};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        OK(cuGetErrorName(codes[i], &s));
        CHECK(s && strncmp(s, "CUDA_", 5) == 0);
        OK(cuGetErrorString(codes[i], &s));
        CHECK(s && *s);
    }
    OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    CHECK(strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
    CHECK_IS(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    CHECK(s == NULL);
    CHECK_IS(cuGetErrorString((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
}

static void two_devices(void)   /* SIMGPU_DEVICES=2 SIMGPU_MEM=1G */
{
    OK(cuInit(0));
    int n;
    OK(cuDeviceGetCount(&n));
    CHECK(n == 2);
    CUcontext c0, c1;
    OK(cuDevicePrimaryCtxRetain(&c0, 0));
    OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CUdeviceptr p0, p1;
    OK(cuCtxSetCurrent(c0));
    OK(cuMemAlloc(&p0, 256 * MiB));
    OK(cuCtxSetCurrent(c1));
    OK(cuMemAlloc(&p1, 512 * MiB));
    size_t f, t;
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, 512 * MiB);
    OK(cuCtxSetCurrent(c0));
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, 768 * MiB);
    int o0, o1;
    OK(cuPointerGetAttribute(&o0, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p0));
    OK(cuPointerGetAttribute(&o1, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p1));
    CHECK(o0 == 0 && o1 == 1);
    OK(cuMemsetD8(p1, 3, 16));
    OK(cuMemcpyPeer(p0, c0, p1, c1, 16));
    char b[16];
    OK(cuMemcpyDtoH(b, p0, 16));
    CHECK(b[0] == 3 && b[15] == 3);
    OK(cuMemFree(p1));   /* a device-1 pointer freed from device 0's context */
    OK(cuCtxSetCurrent(c1));
    OK(cuMemGetInfo(&f, &t));
    CHECK_EQ_U(f, 1 * GiB);
    OK(cuMemFree(p0));
}

static void v1_abi(void)
{
    setup();
    void *fn;
    CUdriverProcAddressQueryResult st;
    OK(cuGetProcAddress("cuMemAlloc", &fn, 2000, 0, &st));
    /* The CUDA 2.0 ABI: 32-bit device pointers and sizes. */
    typedef CUresult (*alloc_v1_fn)(unsigned int *, unsigned int);
    typedef CUresult (*free_v1_fn)(unsigned int);
    typedef CUresult (*info_v1_fn)(unsigned int *, unsigned int *);
    alloc_v1_fn alloc_v1 = (alloc_v1_fn)fn;
    OK(cuGetProcAddress("cuMemFree", &fn, 2000, 0, &st));
    free_v1_fn free_v1 = (free_v1_fn)fn;
    OK(cuGetProcAddress("cuMemGetInfo", &fn, 2000, 0, &st));
    info_v1_fn info_v1 = (info_v1_fn)fn;
    unsigned int p = 0;
    OK(alloc_v1(&p, 4096));
    CHECK(p != 0);
    OK(cuMemsetD8((CUdeviceptr)p, 1, 4096));   /* the 32-bit pointer is a valid pointer */
    unsigned int f = 0, t = 0;
    OK(info_v1(&f, &t));
    CHECK(t == 0xffffffffu);                    /* 4 GiB saturates a 32-bit count */
    OK(free_v1(p));
    CHECK_IS(free_v1(p), CUDA_ERROR_INVALID_VALUE);
}

/* The CUDA 13 forms that name a context explicitly. */
static void ctx_cuda13(void)
{
    CUcontext prim = setup(), mine;
    OK(cuCtxCreate(&mine, NULL, 0, 0));
    CUdevice d = -1;
    OK(cuCtxGetDevice_v2(&d, prim));
    CHECK(d == 0);
    OK(cuCtxSynchronize_v2(prim));
    OK(cuCtxSynchronize_v2(NULL));
    OK(cuCtxDestroy(mine));
    CHECK_IS(cuCtxGetDevice_v2(&d, mine), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_IS(cuCtxSynchronize_v2(mine), CUDA_ERROR_INVALID_CONTEXT);
}

static const test_case cases[] = {
    {"ctx_cuda13", ctx_cuda13},
    {"init_required", init_required},
    {"no_devices", no_devices},
    {"device_query", device_query},
    {"context_stack", context_stack},
    {"alloc_free", alloc_free},
    {"oom_at_capacity", oom_at_capacity},
    {"mem_get_info", mem_get_info},
    {"pitch", pitch},
    {"managed_alloc", managed_alloc},
    {"host_alloc", host_alloc},
    {"address_range", address_range},
    {"pointer_attributes", pointer_attributes},
    {"memcpy_directions", memcpy_directions},
    {"memset_values", memset_values},
    {"error_names", error_names},
    {"two_devices", two_devices},
    {"v1_abi", v1_abi},
};

TEST_MAIN(cases)
