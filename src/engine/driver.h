/*
 * driver.h — the real CUDA driver as the engine sees it (driver.c): the
 * library handle, the real cuGetProcAddress_v2, and the functions of
 * driver.def. Nothing here is exported; the engine never calls a hook.
 */
#ifndef LMS_DRIVER_H
#define LMS_DRIVER_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdbool.h>

typedef struct lms_driver {
    void *handle;                                   /* dlopen("libcuda.so.1") */
    PFN_cuGetProcAddress_v12000 get_proc_address;   /* the real one */
    void *(*real_dlsym)(void *, const char *);      /* the C library's dlsym */
#define LMS_DRIVER(name, version, pfn) pfn name;
#include "driver.def"
#undef LMS_DRIVER
} lms_driver;

extern lms_driver lms_drv;

/* Loads the real driver and resolves driver.def. False (after one error
 * line) when there is no driver or no cuGetProcAddress_v2; entries the
 * driver lacks stay NULL and the engine checks before calling them. */
bool lms_driver_open(void);

/* The real pointer of one ABI variant: name, version, flags as cudart would
 * ask. NULL when the driver has none, or when it answers with a function of
 * lmshim itself (a driver that resolves names through the global scope
 * finds our hooks first): a real pointer is never one of our hooks. */
void *lms_driver_proc(const char *name, int version, cuuint64_t flags);

/* The same; when the driver answers with one of lmshim's functions, the
 * driver's own exported `symbol` (looked up on its handle) instead. */
void *lms_driver_proc_exact(const char *name, int version, cuuint64_t flags, const char *symbol);

/* The driver's own definition of an exported symbol (through its handle),
 * or NULL when absent or when it would be one of lmshim's functions. */
void *lms_driver_symbol(const char *symbol);

/* True when p is an address inside the object that holds lmshim's engine
 * (liblmshim.so, or the lmshim command). */
bool lms_driver_is_own(const void *p);

/* The device of the current context, or -1 (no context or no driver). */
int lms_driver_current_device(void);

/* The device of a stream (NULL: the current context's), or -1. An
 * explicit stream's answer is cached per thread until a stream or context
 * ends (the calls below). */
int lms_driver_stream_device(CUstream stream);

/* Around a real call that may destroy streams (cuStreamDestroy, the end of
 * a context): the driver may hand their handles to new streams, so the
 * cached answers of lms_driver_stream_device are dropped, and none is
 * cached or used while such a call is under way. begin before the real
 * call, done after it, whatever it returned. */
void lms_driver_streams_end_begin(void);
void lms_driver_streams_end_done(void);

#endif
