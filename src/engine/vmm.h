/*
 * vmm.h — physical memory of the VMM API (vmm.c): a cuMemCreate allocation
 * is charged to its device from creation until CUDA frees it, which is when
 * it has been released (cuMemRelease) AND its last mapping is gone
 * (cuMemUnmap). The hooks call these around the real calls.
 */
#ifndef LMS_VMM_H
#define LMS_VMM_H

#include <stdbool.h>
#include <stdint.h>

#include "driver.h"

/* True when cuMemCreate's arguments pass every check lmshim can ask the
 * driver about without creating anything: an output, properties the
 * driver answers a minimum granularity for, flags 0, and a size that is a
 * positive multiple of that granularity. */
bool lms_vmm_args_ok(const void *handle, uint64_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags);
/* Before (or, for arguments lms_vmm_args_ok does not pass, after) the
 * driver creates `size` bytes on `device`: charges them, SUCCESS, and sets
 * *charged to the bytes charged (0 when lmshim has no account for the
 * device: the creation is then not lmshim's). Fetched managed chunks are
 * evicted first when they hold the room. With LMS_ON_OOM=fail, one that
 * still passes the budget is not charged and answers OUT_OF_MEMORY. */
CUresult lms_vmm_charge(int device, uint64_t size, uint64_t *charged);
/* Gives back what lms_vmm_charge charged for a creation the driver refused. */
void lms_vmm_uncharge(int device, uint64_t charged);
/* Charges whatever the budget (a creation that could not be undone);
 * false when lmshim has no account for the device. */
bool lms_vmm_force(int device, uint64_t size);
/* After the driver made a creation that lms_vmm_charge (or lms_vmm_force)
 * charged `size` for (never one charged 0): records it, its charge going
 * when CUDA frees it (one warning when the device is past its budget:
 * physical memory cannot fall back). Not recorded (out of memory, or a
 * handle seen twice): the charge goes now and its calls pass through. */
void lms_vmm_created(uint64_t handle, int device, uint64_t size);

/* cuMemRelease, cuMemMap and cuMemUnmap through their real functions,
 * tracking releases and mappings; the charge goes when the memory does.
 * Handles lmshim did not see created pass through untracked. */
CUresult lms_vmm_release(uint64_t handle, CUresult (*real)(CUmemGenericAllocationHandle));
CUresult lms_vmm_map(CUdeviceptr va, size_t size, size_t offset, uint64_t handle,
                     unsigned long long flags,
                     CUresult (*real)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                      unsigned long long));
CUresult lms_vmm_unmap(CUdeviceptr va, size_t size, CUresult (*real)(CUdeviceptr, size_t));

/* fork: the table's lock is held across fork; the child gets a fresh one. */
void lms_vmm_fork_prepare(void);
void lms_vmm_fork_parent(void);
void lms_vmm_fork_child(void);

#endif
