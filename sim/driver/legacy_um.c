/*
 * legacy_um.c — managed memory on a device without concurrent managed
 * access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 0, as on Windows,
 * WSL2, some virtual GPUs and GPUs before Pascal; SIMGPU_CONCURRENT_MANAGED=0).
 * CUDA documents that such a device cannot have managed memory prefetched to
 * it (cuMemPrefetchAsync answers CUDA_ERROR_INVALID_DEVICE, prefetch.c) and
 * that managed memory migrates as a whole: every managed allocation goes to
 * the device when a kernel is launched and comes back for the host. The
 * model moves every managed block to the launch's device before the body
 * runs and back to the host after it, charging both copies to the launch.
 */
#include "sim.h"

double sim_legacy_um_launch(int device, bool before)
{
    double ns = 0;
    pthread_mutex_lock(&sim_lock);
    size_t n;
    sim_alloc *const *all = sim_registry_all(&n);
    for (size_t i = 0; i < n; i++)
        if (all[i]->kind == SIM_MEM_MANAGED) {
            /* The moves are part of the launch (its stall): blocks arrive
             * before the body runs and leave after it has ended. */
            sim_prefetch(all[i]->base, all[i]->size, before ? device : SIM_LOC_HOST, 1e300, &ns);
            if (before)
                sim_arrive(all[i]->base, all[i]->size, 0);
        }
    pthread_mutex_unlock(&sim_lock);
    return ns;
}
