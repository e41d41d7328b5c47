/*
 * graphs2_test.c — graph kernel nodes that name a CUkernel, and stream
 * handles the driver hands out again after cuStreamDestroy.
 *   kern_nodes_sim      the simulator alone: a CUkernel launch captured
 *                       into a graph, and a node added with `kern`, are
 *                       reported with func NULL and kern set; they run.
 *   kern_graph          under liblmshim.so (each policy, meson.build): a
 *                       graph of captured CUkernel launches over managed
 *                       chunks gets its chunks fetched at its launch, with
 *                       the right results.
 *   stream_reuse_sim    the simulator alone: a stream created after a
 *                       destroy gets the destroyed one's handle.
 *   stream_reuse        under liblmshim.so: a chunk fetched on stream A, A
 *                       destroyed, a new stream gets A's handle and uses
 *                       the chunk: it must wait for the fetch (the
 *                       simulator counts a kernel touching a block still
 *                       being copied in).
 *   graph_mem_sim       the simulator alone: graph allocation and free
 *                       nodes, the graph pool's attributes and trim.
 *   graph_mem           under liblmshim.so: what the graph pool reserves is
 *                       charged (lms_get_stats, cuMemGetInfo) and returned
 *                       after cuDeviceGraphMemTrim.
 *   graph_threads_sim   the simulator alone: graphs made and destroyed on
 *                       8 threads at once all succeed.
 *   child_graph_sim     the simulator alone: child graph nodes, joins of
 *                       many dependencies and kernel dimensions as cuda.h
 *                       says.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/check.h"
#include "../../common/context.h"
#include "lmshim.h"
#include "simgpu.h"

#define MiB (1ull << 20)
#define CHUNK (64 * MiB)
#define NCHUNKS 8

/* bump(p, bytes): p[0] += 1 (a 64-bit counter); touches the whole range. */
static void bump(simgpu_launch *l, void **p)
{
    CUdeviceptr a = *(CUdeviceptr *)p[0];
    size_t bytes = *(size_t *)p[1];
    l->access(l, a, bytes, SIMGPU_READ_WRITE);
    (*(uint64_t *)(uintptr_t)a)++;
    l->compute(l, 1e4);
}

static CUlibrary lib;
static CUkernel k_bump;     /* the library's kernel */
static CUfunction f_bump;   /* the same kernel through a module */

/* The context, the kernel registered, a library kernel and a module function. */
static void setup(void)
{
    primary_context(0);
    simgpu_kernel k = {"bump", bump, 2, {8, 8}};
    OK(simgpu_register_kernel(&k));
    OK(cuLibraryLoadData(&lib, "x", NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k_bump, lib, "bump"));
    CUmodule m;
    OK(cuModuleLoadData(&m, "x"));
    OK(cuModuleGetFunction(&f_bump, m, "bump"));
}

/* Launches bump over p on s through handle f (a CUkernel cast, or a CUfunction). */
static CUresult launch_bump(CUfunction f, CUdeviceptr p, CUstream s)
{
    size_t bytes = CHUNK;
    void *args[] = {&p, &bytes};
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

static uint64_t counter(CUdeviceptr p)
{
    uint64_t v = 0;
    OK(cuMemcpyDtoH(&v, p, sizeof v));
    return v;
}

/* ---- kernel nodes that name a CUkernel ---------------------------------- */

static void kern_nodes_sim(void)
{
    setup();
    CUdeviceptr p;
    OK(cuMemAlloc(&p, CHUNK));
    OK(cuMemsetD8(p, 0, 64));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(launch_bump((CUfunction)(void *)k_bump, p, s));
    OK(launch_bump(f_bump, p, s));
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphNode nodes[4];
    size_t n = 4;
    OK(cuGraphGetNodes(g, nodes, &n));
    CHECK_EQ_U(n, 2);
    CUDA_KERNEL_NODE_PARAMS_v2 kp;
    OK(cuGraphKernelNodeGetParams_v2(nodes[0], &kp));
    CHECK(kp.func == NULL);                /* named by its CUkernel */
    CHECK(kp.kern == k_bump);
    CUcontext cur;
    OK(cuCtxGetCurrent(&cur));
    CHECK(kp.ctx == cur);
    CHECK(kp.kernelParams != NULL && *(CUdeviceptr *)kp.kernelParams[0] == p);
    OK(cuGraphKernelNodeGetParams_v2(nodes[1], &kp));
    CHECK(kp.func == f_bump);              /* named by its CUfunction */
    CHECK(kp.kern == NULL && kp.ctx == NULL);
    CUresult (*get_v1)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1 *) = NULL;
    CUdriverProcAddressQueryResult q;
    OK(cuGetProcAddress("cuGraphKernelNodeGetParams", (void **)&get_v1, 11000, 0, &q));
    CUDA_KERNEL_NODE_PARAMS_v1 k1;         /* the v1 form has no kern: func carries it */
    OK(get_v1(nodes[0], &k1));
    CHECK(k1.func == (CUfunction)(void *)k_bump);

    /* Added by hand with kern (func NULL) into the same graph. */
    size_t bytes = CHUNK;
    void *args[] = {&p, &bytes};
    CUDA_KERNEL_NODE_PARAMS_v2 add = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                      .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1,
                                      .kernelParams = args, .kern = k_bump};
    CUgraphNode added;
    OK(cuGraphAddKernelNode_v2(&added, g, &nodes[1], 1, &add));
    OK(cuGraphKernelNodeGetParams_v2(added, &kp));
    CHECK(kp.func == NULL && kp.kern == k_bump && kp.ctx == cur);
    add.kern = (CUkernel)(void *)f_bump;   /* a CUfunction is no CUkernel */
    CHECK_IS(cuGraphAddKernelNode_v2(&added, g, NULL, 0, &add), CUDA_ERROR_INVALID_HANDLE);
    add.kern = NULL;                       /* neither */
    CHECK_IS(cuGraphAddKernelNode_v2(&added, g, NULL, 0, &add), CUDA_ERROR_INVALID_HANDLE);

    CUgraphExec e;
    OK(cuGraphInstantiateWithFlags(&e, g, 0));
    OK(cuGraphLaunch(e, s));
    OK(cuGraphLaunch(e, s));
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(counter(p), 6);             /* three nodes, two launches */
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
    OK(cuStreamDestroy(s));
    OK(cuMemFree(p));
    OK(cuLibraryUnload(lib));
}

static void kern_graph(void)
{
    setup();
    int (*get_stats)(int, lms_device_stats *) =
        (int (*)(int, lms_device_stats *))dlsym(RTLD_DEFAULT, "lms_get_stats");
    CHECK(get_stats != NULL);
    CUdeviceptr c[NCHUNKS];
    int managed = 0;
    for (int i = 0; i < NCHUNKS; i++) {
        OK(cuMemAlloc(&c[i], CHUNK));
        OK(cuMemsetD8(c[i], 0, 64));
        int m = 0;
        OK(cuPointerGetAttribute(&m, CU_POINTER_ATTRIBUTE_IS_MANAGED, c[i]));
        managed += m != 0;
    }
    CHECK(managed >= NCHUNKS / 2);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < NCHUNKS; i++)
        OK(launch_bump((CUfunction)(void *)k_bump, c[i], s));
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    OK(cuGraphInstantiateWithFlags(&e, g, 0));
    OK(cuGraphDestroy(g));
    lms_device_stats before, after;
    simgpu_counters c0, c1;
    CHECK(get_stats(0, &before) == 0);
    OK(simgpu_get_counters(0, &c0));
    for (int rep = 0; rep < 3; rep++)
        OK(cuGraphLaunch(e, s));
    OK(cuStreamSynchronize(s));
    CHECK(get_stats(0, &after) == 0);
    OK(simgpu_get_counters(0, &c1));
    CHECK_EQ_U(c1.launches - c0.launches, 3 * NCHUNKS);
    for (int i = 0; i < NCHUNKS; i++)
        CHECK_EQ_U(counter(c[i]), 3);
    CHECK(after.used <= after.budget);
    CHECK_EQ_U(after.budget_violations, 0);
    const char *policy = getenv("LMS_POLICY");
    printf("prefetches %llu -> %llu, prefetch_bytes %llu -> %llu, remote_bytes %llu -> %llu\n",
           (unsigned long long)before.prefetches, (unsigned long long)after.prefetches,
           (unsigned long long)c0.prefetch_bytes, (unsigned long long)c1.prefetch_bytes,
           (unsigned long long)c0.remote_bytes, (unsigned long long)c1.remote_bytes);
    if (policy && strcmp(policy, "none") == 0) {
        CHECK_EQ_U(after.prefetches, before.prefetches);
    } else {
        CHECK(after.prefetches > before.prefetches);   /* the graph's chunks were fetched */
        CHECK(c1.prefetch_bytes > c0.prefetch_bytes);
    }
    OK(cuGraphExecDestroy(e));
    OK(cuStreamDestroy(s));
    for (int i = 0; i < NCHUNKS; i++)
        OK(cuMemFree(c[i]));
    OK(cuLibraryUnload(lib));
}

/* ---- stream handles after cuStreamDestroy -------------------------------- */

static void stream_reuse_sim(void)
{
    setup();
    CUstream a, b, c;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, 0));
    OK(cuStreamDestroy(a));
    CHECK_IS(cuStreamQuery(a), CUDA_ERROR_INVALID_HANDLE);
    OK(cuStreamCreate(&c, 0));
    CHECK(c == a);                          /* the destroyed handle comes back */
    unsigned flags = 1;
    OK(cuStreamGetFlags(c, &flags));
    CHECK_EQ_U(flags, 0);                   /* a new stream, not the old one */
    OK(cuStreamQuery(c));
    OK(cuStreamDestroy(c));
    OK(cuStreamDestroy(b));
    CHECK_IS(cuStreamDestroy(b), CUDA_ERROR_INVALID_HANDLE);
}

static void stream_reuse(void)
{
    setup();
    CUdeviceptr x;
    OK(cuMemAlloc(&x, CHUNK));
    OK(cuMemsetD8(x, 0, CHUNK));
    int m = 0;
    OK(cuPointerGetAttribute(&m, CU_POINTER_ATTRIBUTE_IS_MANAGED, x));
    CHECK(m != 0);
    CUstream a, b;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(simgpu_reset_counters());
    OK(launch_bump(f_bump, x, a));          /* x fetched on a, then used there */
    OK(cuStreamDestroy(a));                 /* its work goes on */
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK(b == a);                          /* same handle, a new stream */
    OK(launch_bump(f_bump, x, b));          /* must wait for x's fetch */
    OK(cuCtxSynchronize());
    simgpu_counters c;
    OK(simgpu_get_counters(0, &c));
    printf("prefetch_bytes = %llu, inflight_waits = %llu\n", (unsigned long long)c.prefetch_bytes,
           (unsigned long long)c.inflight_waits);
    CHECK(c.prefetch_bytes >= CHUNK / 2);
    CHECK_EQ_U(c.inflight_waits, 0);
    CHECK_EQ_U(counter(x), 2);
    /* Later launches on the new stream and on others still order. */
    CUstream d;
    OK(cuStreamCreate(&d, CU_STREAM_NON_BLOCKING));
    OK(launch_bump(f_bump, x, d));
    OK(launch_bump(f_bump, x, b));
    OK(cuCtxSynchronize());
    CHECK_EQ_U(counter(x), 4);
    OK(cuStreamDestroy(b));
    OK(cuStreamDestroy(d));
    OK(cuMemFree(x));
    OK(cuLibraryUnload(lib));
}

/* ---- graph memory --------------------------------------------------------- */

/* A graph allocating `bytes` on device 0, bumping its first word, freeing
 * it (free_node) or not; *dptr gets the allocation's address. */
static CUgraph mem_graph(size_t bytes, bool free_node, CUdeviceptr *dptr)
{
    CUgraph g;
    OK(cuGraphCreate(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap = graph_alloc_params(bytes, 0);
    CUgraphNode an, kn, fn;
    OK(cuGraphAddMemAllocNode(&an, g, NULL, 0, &ap));
    CHECK(ap.dptr != 0);
    *dptr = ap.dptr;
    static size_t word = 8;
    static CUdeviceptr where;
    where = ap.dptr;
    void *args[] = {&where, &word};
    CUDA_KERNEL_NODE_PARAMS kp = {.func = f_bump, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1,
                                  .kernelParams = args};
    OK(cuGraphAddKernelNode(&kn, g, &an, 1, &kp));
    if (free_node)
        OK(cuGraphAddMemFreeNode(&fn, g, &kn, 1, ap.dptr));
    return g;
}

static uint64_t graph_attr(CUgraphMem_attribute attr)
{
    cuuint64_t v = 0;
    OK(cuDeviceGetGraphMemAttribute(0, attr, &v));
    return v;
}

/* A graph captured from cuMemAllocAsync, a bump of the memory and
 * cuMemFreeAsync on s; *e gets it instantiated. */
static CUgraph captured_mem_graph(CUstream s, size_t bytes, CUgraphExec *e)
{
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p;
    OK(cuMemAllocAsync(&p, bytes, s));
    size_t word = 8;
    void *args[] = {&p, &word};
    OK(cuLaunchKernel(f_bump, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    OK(cuMemFreeAsync(p, s));
    CUgraph g;
    OK(cuStreamEndCapture(s, &g));
    OK(cuGraphInstantiateWithFlags(e, g, 0));
    return g;
}

static void graph_mem_sim(void)
{
    setup();
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t f0, t0, f1, t1;
    OK(cuMemGetInfo(&f0, &t0));
    CUdeviceptr p, q;
    CUgraph g = mem_graph(100 * MiB, true, &p);
    CUgraphExec e;
    OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CHECK_EQ_U(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);   /* nothing before a launch */
    OK(cuGraphLaunch(e, s));
    OK(cuGraphLaunch(e, s));
    OK(cuStreamSynchronize(s));
    CHECK_EQ_U(*(uint64_t *)(uintptr_t)p, 2);
    CHECK_EQ_U(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 100 * MiB);   /* kept for reuse */
    CHECK_EQ_U(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
    CHECK_EQ_U(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), 100 * MiB);
    OK(cuMemGetInfo(&f1, &t1));
    CHECK_EQ_U(f0 - f1, 100 * MiB);   /* the device holds the pool's bytes */
    /* Without a free node the allocation stays in use: no second launch. */
    CUgraph h = mem_graph(50 * MiB, false, &q);
    CUgraphExec eh;
    OK(cuGraphInstantiateWithFlags(&eh, h, 0));
    OK(cuGraphLaunch(eh, s));
    CHECK_EQ_U(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 50 * MiB);
    CHECK_EQ_U(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 100 * MiB);   /* reused */
    CHECK_IS(cuGraphLaunch(eh, s), CUDA_ERROR_INVALID_VALUE);
    OK(cuDeviceGraphMemTrim(0));   /* gives back what no allocation holds */
    CHECK_EQ_U(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 50 * MiB);
    cuuint64_t zero = 0, one = 1;
    OK(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
    CHECK_EQ_U(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), 0);
    CHECK_IS(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &one),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &zero),
             CUDA_ERROR_INVALID_VALUE);
    cuuint64_t v;
    CHECK_IS(cuDeviceGetGraphMemAttribute(99, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v),
             CUDA_ERROR_INVALID_DEVICE);
    CUgraphNode bad;
    CHECK_IS(cuGraphAddMemFreeNode(&bad, g, NULL, 0, (CUdeviceptr)0x1000), CUDA_ERROR_INVALID_VALUE);
    CUgraphNode nodes[4];
    size_t n = 4;
    OK(cuGraphGetNodes(g, nodes, &n));
    CUgraphNodeType t;
    OK(cuGraphNodeGetType(nodes[0], &t));
    CHECK(t == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    OK(cuGraphNodeGetType(nodes[2], &t));
    CHECK(t == CU_GRAPH_NODE_TYPE_MEM_FREE);
    /* Stream-ordered allocation and free captured: memory nodes. */
    CUgraphExec ec;
    CUgraph c = captured_mem_graph(s, 64 * MiB, &ec);
    n = 4;
    OK(cuGraphGetNodes(c, nodes, &n));
    CHECK_EQ_U(n, 3);
    OK(cuGraphNodeGetType(nodes[0], &t));
    CHECK(t == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    OK(cuGraphNodeGetType(nodes[2], &t));
    CHECK(t == CU_GRAPH_NODE_TYPE_MEM_FREE);
    OK(cuGraphLaunch(ec, s));
    OK(cuGraphLaunch(ec, s));
    CHECK_EQ_U(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 114 * MiB);   /* 50 live + 64 */
    CHECK_EQ_U(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 50 * MiB);
    /* A free of memory from outside any graph still cannot be captured. */
    CUdeviceptr plain;
    OK(cuMemAlloc(&plain, MiB));
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_IS(cuMemFreeAsync(plain, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph dead;
    CHECK_IS(cuStreamEndCapture(s, &dead), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(cuMemFree(plain));
    OK(cuGraphExecDestroy(ec));
    OK(cuGraphDestroy(c));
    OK(cuGraphExecDestroy(e));
    OK(cuGraphExecDestroy(eh));
    OK(cuGraphDestroy(g));
    OK(cuGraphDestroy(h));
    OK(cuStreamDestroy(s));
    OK(cuLibraryUnload(lib));
}

/* Under lmshim: the graph pool's bytes are charged (stats, cuMemGetInfo)
 * after the launch that reserved them, and returned after a trim. */
static void graph_mem(void)
{
    setup();
    int (*get_stats)(int, lms_device_stats *) =
        (int (*)(int, lms_device_stats *))dlsym(RTLD_DEFAULT, "lms_get_stats");
    CHECK(get_stats != NULL);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr dev;
    OK(cuMemAlloc(&dev, 4 * MiB));   /* sets the account up */
    size_t f0, t0, f1, t1, f2, t2;
    lms_device_stats s0, s1, s2;
    OK(cuMemGetInfo(&f0, &t0));
    CHECK(get_stats(0, &s0) == 0);
    CUdeviceptr p;
    CUgraph g = mem_graph(128 * MiB, true, &p);
    CUgraphExec e;
    OK(cuGraphInstantiateWithFlags(&e, g, 0));
    OK(cuGraphLaunch(e, s));
    OK(cuGraphLaunch(e, s));
    OK(cuStreamSynchronize(s));
    CHECK(get_stats(0, &s1) == 0);
    OK(cuMemGetInfo(&f1, &t1));
    printf("used %llu -> %llu, free %zu -> %zu\n", (unsigned long long)s0.used,
           (unsigned long long)s1.used, f0, f1);
    CHECK_EQ_U(s1.used - s0.used, 128 * MiB);
    CHECK_EQ_U(f0 - f1, 128 * MiB);
    CHECK_EQ_U(t1, t0);
    OK(cuDeviceGraphMemTrim(0));
    CHECK(get_stats(0, &s2) == 0);
    OK(cuMemGetInfo(&f2, &t2));
    CHECK_EQ_U(s2.used, s0.used);
    CHECK_EQ_U(f2, f0);
    CHECK_EQ_U(s2.budget_violations, 0);
    /* Captured stream-ordered allocations are graph memory too. */
    CUgraphExec ec;
    CUgraph c = captured_mem_graph(s, 32 * MiB, &ec);
    OK(cuGraphLaunch(ec, s));
    CHECK(get_stats(0, &s2) == 0);
    CHECK_EQ_U(s2.used - s0.used, 32 * MiB);
    OK(cuGraphExecDestroy(ec));
    OK(cuGraphDestroy(c));
    OK(cuDeviceGraphMemTrim(0));
    CHECK(get_stats(0, &s2) == 0);
    CHECK_EQ_U(s2.used, s0.used);
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
    OK(cuStreamDestroy(s));
    OK(cuMemFree(dev));
    OK(cuLibraryUnload(lib));
}

/* One thread's round of graph making: create, add a kernel node,
 * destroy, many times (the context made current first). */
static void *make_graphs(void *arg)
{
    OK(cuCtxSetCurrent(*(CUcontext *)arg));
    size_t bytes = 8;
    CUdeviceptr a = 0;
    void *args[] = {&a, &bytes};
    CUDA_KERNEL_NODE_PARAMS p = {.func = f_bump, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                 .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1,
                                 .kernelParams = args};
    for (int i = 0; i < 5000; i++) {
        CUgraph g;
        CUgraphNode n;
        OK(cuGraphCreate(&g, 0));
        OK(cuGraphAddKernelNode(&n, g, NULL, 0, &p));
        OK(cuGraphDestroy(g));
    }
    return NULL;
}

/* The simulator alone: graphs made on 8 threads at once (each its own)
 * all succeed; the graph handle table is shared. */
static void graph_threads_sim(void)
{
    setup();
    CUcontext c;
    OK(cuCtxGetCurrent(&c));
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        CHECK(pthread_create(&t[i], NULL, make_graphs, &c) == 0);
    for (int i = 0; i < 8; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
}

/* A kernel node over nothing (a NULL counter the kernel never reads
 * when bytes is 0 is not needed: the node is never launched). */
static CUDA_KERNEL_NODE_PARAMS idle_node(void **args, unsigned gx, unsigned gy, unsigned bx, unsigned bz)
{
    return (CUDA_KERNEL_NODE_PARAMS){.func = f_bump, .gridDimX = gx, .gridDimY = gy, .gridDimZ = 1,
                                     .blockDimX = bx, .blockDimY = 1, .blockDimZ = bz,
                                     .kernelParams = args};
}

/* The simulator alone, against cuda.h: a child graph node's embedded
 * graph belongs to the node (cuGraphDestroy of it refused; allocation
 * nodes refused in it); a join node of 100 dependencies is copied whole
 * (an update from the graph instantiated from succeeds, and from one
 * listing the same edges in reverse order); one graph given to two child
 * graph nodes is updated in both through its node's handle; duplicate
 * dependencies are refused; kernel dimensions beyond the device's limits
 * are refused in a node as in a launch. */
static void child_graph_sim(void)
{
    setup();
    size_t bytes = 8;
    CUdeviceptr a = 0;
    void *args[] = {&a, &bytes};
    CUDA_KERNEL_NODE_PARAMS p = idle_node(args, 1, 1, 32, 1);
    CUgraph child, g;
    CUgraphNode k, node;
    OK(cuGraphCreate(&child, 0));
    OK(cuGraphAddKernelNode(&k, child, NULL, 0, &p));
    OK(cuGraphCreate(&g, 0));
    OK(cuGraphAddChildGraphNode(&node, g, NULL, 0, child));
    CUgraph embedded;
    OK(cuGraphChildGraphNodeGetGraph(node, &embedded));
    CHECK(embedded != child);   /* a clone */
    CHECK_IS(cuGraphDestroy(embedded), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEM_ALLOC_NODE_PARAMS mp = {.poolProps = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                                   .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE}},
                                     .bytesize = 1 << 20};
    CUgraphNode mnode;
    CHECK_IS(cuGraphAddMemAllocNode(&mnode, embedded, NULL, 0, &mp), CUDA_ERROR_INVALID_VALUE);
    CUgraphNode dup[2] = {node, node};
    CHECK_IS(cuGraphAddKernelNode(&k, g, dup, 2, &p), CUDA_ERROR_INVALID_VALUE);
    /* A join of 100 kernels (in a graph of its own: updates do not reach
     * into child graphs). */
    CUgraph wide;
    CUgraphNode fan[100], join;
    OK(cuGraphCreate(&wide, 0));
    for (int i = 0; i < 100; i++)
        OK(cuGraphAddKernelNode(&fan[i], wide, NULL, 0, &p));
    OK(cuGraphAddKernelNode(&join, wide, fan, 100, &p));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, wide, 0));
    CUgraphExecUpdateResultInfo info;
    OK(cuGraphExecUpdate(e, wide, &info));
    CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
    /* The same edges listed in another order: the same topology. */
    CUgraph again;
    CUgraphNode fan2[100], rev[100];
    OK(cuGraphCreate(&again, 0));
    for (int i = 0; i < 100; i++)
        OK(cuGraphAddKernelNode(&fan2[i], again, NULL, 0, &p));
    for (int i = 0; i < 100; i++)
        rev[i] = fan2[99 - i];
    OK(cuGraphAddKernelNode(&join, again, rev, 100, &p));
    OK(cuGraphExecUpdate(e, again, &info));
    CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
    OK(cuGraphDestroy(again));
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(wide));
    /* One graph given to two child graph nodes: an update naming its
     * kernel node reaches both. */
    CUdeviceptr ctr[3];
    for (int i = 0; i < 3; i++) {
        OK(cuMemAlloc(&ctr[i], 64));
        OK(cuMemsetD8(ctr[i], 0, 64));
    }
    CUgraph two, shared;
    CUgraphNode c1, c2, sk;
    OK(cuGraphCreate(&two, 0));
    OK(cuGraphAddChildGraphNode(&c1, two, NULL, 0, child));
    OK(cuGraphAddChildGraphNode(&c2, two, &c1, 1, child));
    OK(cuGraphInstantiate(&e, two, 0));
    a = ctr[0];
    OK(cuGraphCreate(&shared, 0));
    OK(cuGraphAddKernelNode(&sk, shared, NULL, 0, &p));
    OK(cuGraphExecChildGraphNodeSetParams(e, c1, shared));
    OK(cuGraphExecChildGraphNodeSetParams(e, c2, shared));
    a = ctr[1];
    OK(cuGraphExecKernelNodeSetParams(e, sk, &p));
    OK(cuGraphLaunch(e, NULL));
    CHECK_EQ_U(counter(ctr[0]), 0);
    CHECK_EQ_U(counter(ctr[1]), 2);
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(two));
    OK(cuGraphDestroy(shared));
    for (int i = 0; i < 3; i++)
        OK(cuMemFree(ctr[i]));
    /* Dimensions: block z 65, a block product that would wrap, grid y
     * 65536, grid x 2^31. */
    unsigned bad[][4] = {{1, 1, 1, 65}, {1, 1, 1u << 22, 1}, {1, 65536, 1, 1}, {1u << 31, 1, 1, 1}};
    for (int i = 0; i < 4; i++) {
        CUDA_KERNEL_NODE_PARAMS q = idle_node(args, bad[i][0], bad[i][1], bad[i][2], bad[i][3]);
        CHECK_IS(cuGraphAddKernelNode(&k, g, NULL, 0, &q), CUDA_ERROR_INVALID_VALUE);
        CHECK_IS(cuLaunchKernel(f_bump, q.gridDimX, q.gridDimY, 1, q.blockDimX, 1, q.blockDimZ, 0, NULL,
                                args, NULL), CUDA_ERROR_INVALID_VALUE);
    }
    OK(cuGraphDestroy(g));
    OK(cuGraphDestroy(child));
}

/* setc(handle, value): the conditional handle holds value (as
 * cudaGraphSetConditional on a GPU). */
static void setc(simgpu_launch *l, void **p)
{
    (void)l;
    OK(simgpu_set_conditional(*(unsigned long long *)p[0], (unsigned)*(uint64_t *)p[1]));
}

/* A conditional node of `type` with `size` bodies on handle h in g after
 * dep (or first): *bodies gets the bodies (the node's own array). */
static CUresult add_cond(CUgraphNode *out, CUgraph g, CUgraphNode dep, CUgraphConditionalHandle h,
                         CUgraphConditionalNodeType type, unsigned size, CUgraph **bodies)
{
    CUgraphNodeParams p = {.type = CU_GRAPH_NODE_TYPE_CONDITIONAL};
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = size;
    CUresult r = cuGraphAddNode(out, g, dep ? &dep : NULL, NULL, dep ? 1 : 0, &p);
    if (bodies)
        *bodies = p.conditional.phGraph_out;
    return r;
}

/* The simulator alone: conditional nodes as CUDA documents them. An IF of
 * two bodies runs the first when its handle is non-zero, else the second;
 * a SWITCH runs the body of the value's index, none past the last; a
 * handle made with CU_GRAPH_COND_ASSIGN_DEFAULT takes its default at each
 * launch, one made without keeps what a kernel set; a body belongs to its
 * node (cuGraphDestroy refused); wrong sizes, unknown handles and flags
 * are refused; a kernel node inside a body is updated through the
 * executable graph by its handle; a graph holding a conditional node is
 * refused as a child graph, and a conditional node in a child graph
 * node's graph; a created context is checked without a hang. */
static void conditional_sim(void)
{
    setup();
    CUfunction f_setc;
    OK(simgpu_register_kernel(&(simgpu_kernel){"setc", setc, 2, {8, 8}}));
    CUmodule m;
    OK(cuModuleLoadData(&m, "x"));
    OK(cuModuleGetFunction(&f_setc, m, "setc"));
    CUdeviceptr ctr[6];
    for (int i = 0; i < 6; i++) {
        OK(cuMemAlloc(&ctr[i], 64));
        OK(cuMemsetD8(ctr[i], 0, 64));
    }
    CUgraph g;
    OK(cuGraphCreate(&g, 0));
    CUgraphConditionalHandle h_if, h_sw, h_keep;
    CHECK_IS(cuGraphConditionalHandleCreate(&h_if, g, NULL, 0, 2), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(cuGraphConditionalHandleCreate(&h_if, NULL, NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuGraphConditionalHandleCreate(&h_if, g, NULL, 0, CU_GRAPH_COND_ASSIGN_DEFAULT));
    OK(cuGraphConditionalHandleCreate(&h_sw, g, NULL, 2, CU_GRAPH_COND_ASSIGN_DEFAULT));
    OK(cuGraphConditionalHandleCreate(&h_keep, g, NULL, 0, 0));
    CUgraphNode n, setter, if_node, sw_node, keep_node;
    CUgraph *bodies;
    CHECK_IS(add_cond(&n, g, NULL, h_if, CU_GRAPH_COND_TYPE_WHILE, 2, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(add_cond(&n, g, NULL, h_if, CU_GRAPH_COND_TYPE_IF, 3, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_IS(add_cond(&n, g, NULL, 12345, CU_GRAPH_COND_TYPE_IF, 1, NULL), CUDA_ERROR_INVALID_VALUE);
    /* setter: h_if and h_keep take `v` (changed through the executable graph) */
    uint64_t v = 0;
    void *sargs[] = {&h_if, &v};
    CUDA_KERNEL_NODE_PARAMS sp = {.func = f_setc, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .kernelParams = sargs};
    OK(cuGraphAddKernelNode(&setter, g, NULL, 0, &sp));
    OK(add_cond(&if_node, g, setter, h_if, CU_GRAPH_COND_TYPE_IF, 2, &bodies));
    CHECK(bodies != NULL);
    CHECK_IS(cuGraphDestroy(bodies[0]), CUDA_ERROR_INVALID_VALUE);
    size_t bytes = 8;
    CUgraphNode in_body[2];
    for (int b = 0; b < 2; b++) {
        void *args[] = {&ctr[b], &bytes};
        CUDA_KERNEL_NODE_PARAMS p = idle_node(args, 1, 1, 32, 1);
        OK(cuGraphAddKernelNode(&in_body[b], bodies[b], NULL, 0, &p));
    }
    OK(add_cond(&sw_node, g, if_node, h_sw, CU_GRAPH_COND_TYPE_SWITCH, 3, &bodies));
    for (int b = 0; b < 3; b++) {
        void *args[] = {b == 2 ? &ctr[2] : &ctr[5], &bytes};   /* only body 2 runs */
        CUDA_KERNEL_NODE_PARAMS p = idle_node(args, 1, 1, 32, 1);
        OK(cuGraphAddKernelNode(&n, bodies[b], NULL, 0, &p));
    }
    OK(add_cond(&keep_node, g, sw_node, h_keep, CU_GRAPH_COND_TYPE_IF, 1, &bodies));
    void *kargs[] = {&ctr[3], &bytes};
    CUDA_KERNEL_NODE_PARAMS kp = idle_node(kargs, 1, 1, 32, 1);
    OK(cuGraphAddKernelNode(&n, bodies[0], NULL, 0, &kp));
    CUgraphExec e;
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphLaunch(e, NULL));   /* v 0: the IF's second body; h_keep 0 */
    CHECK_EQ_U(counter(ctr[0]), 0);
    CHECK_EQ_U(counter(ctr[1]), 1);
    CHECK_EQ_U(counter(ctr[2]), 1);
    CHECK_EQ_U(counter(ctr[3]), 0);
    v = 1;
    OK(cuGraphExecKernelNodeSetParams(e, setter, &sp));
    OK(cuGraphLaunch(e, NULL));   /* the first body */
    CHECK_EQ_U(counter(ctr[0]), 1);
    CHECK_EQ_U(counter(ctr[1]), 1);
    OK(simgpu_set_conditional(h_sw, 7));   /* assigned its default again at the launch */
    OK(simgpu_set_conditional(h_keep, 1)); /* kept */
    /* A node inside a body, named by its handle: its counter moves. */
    void *args4[] = {&ctr[4], &bytes};
    CUDA_KERNEL_NODE_PARAMS p4 = idle_node(args4, 1, 1, 32, 1);
    OK(cuGraphExecKernelNodeSetParams(e, in_body[0], &p4));
    OK(cuGraphLaunch(e, NULL));
    CHECK_EQ_U(counter(ctr[0]), 1);
    CHECK_EQ_U(counter(ctr[4]), 1);
    CHECK_EQ_U(counter(ctr[2]), 3);
    CHECK_EQ_U(counter(ctr[3]), 1);
    CHECK_EQ_U(counter(ctr[5]), 0);
    /* A whole update does not reach into conditional nodes, and a graph
     * holding one cannot become a child graph. */
    CUgraphExecUpdateResultInfo info;
    CHECK_IS(cuGraphExecUpdate(e, g, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED);
    CUgraph outer;
    OK(cuGraphCreate(&outer, 0));
    CHECK_IS(cuGraphAddChildGraphNode(&n, outer, NULL, 0, g), CUDA_ERROR_INVALID_VALUE);
    CUgraph leaf, embedded;
    CUgraphNode holder;
    OK(cuGraphCreate(&leaf, 0));
    OK(cuGraphAddChildGraphNode(&holder, outer, NULL, 0, leaf));
    OK(cuGraphChildGraphNodeGetGraph(holder, &embedded));
    CHECK_IS(add_cond(&n, embedded, NULL, h_keep, CU_GRAPH_COND_TYPE_IF, 1, NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cuGraphDestroy(leaf));
    /* A handle and a node made with a created context (checked, no hang). */
    CUdevice d0;
    CUcontext mine;
    OK(cuDeviceGet(&d0, 0));
    OK(cuCtxCreate(&mine, NULL, 0, d0));
    CUgraphConditionalHandle h_mine;
    OK(cuGraphConditionalHandleCreate(&h_mine, outer, mine, 0, 0));
    CUgraphNodeParams mp = {.type = CU_GRAPH_NODE_TYPE_CONDITIONAL};
    mp.conditional.handle = h_mine;
    mp.conditional.type = CU_GRAPH_COND_TYPE_IF;
    mp.conditional.size = 1;
    mp.conditional.ctx = mine;
    OK(cuGraphAddNode(&n, outer, NULL, NULL, 0, &mp));
    OK(cuCtxDestroy(mine));
    primary_context(0);
    OK(cuGraphDestroy(outer));
    OK(cuGraphExecDestroy(e));
    OK(cuGraphDestroy(g));
    for (int i = 0; i < 6; i++)
        OK(cuMemFree(ctr[i]));
}

static const test_case cases[] = {
    {"graph_mem_sim", graph_mem_sim},
    {"graph_mem", graph_mem},
    {"graph_threads_sim", graph_threads_sim},
    {"child_graph_sim", child_graph_sim},
    {"conditional_sim", conditional_sim},
    {"kern_nodes_sim", kern_nodes_sim},
    {"kern_graph", kern_graph},
    {"stream_reuse_sim", stream_reuse_sim},
    {"stream_reuse", stream_reuse},
};

TEST_MAIN(cases)
