/*
 * GPU topology in the mock libnvidia-ml.so.1, for nvidia-device-plugin's GetPreferredAllocation
 * (go-gpuallocator): the common ancestor of two GPUs (the same GPU: INTERNAL; the same NUMA
 * node: NODE; else SYSTEM) and NVLinks (none: NOT_SUPPORTED, which go-gpuallocator passes over).
 * go-nvml calls a missing symbol through a NULL pointer, so every call it binds must be here.
 */
#include "mocknvml.h"

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                        nvmlGpuTopologyLevel_t *path) {
    DEVICE("nvmlDeviceGetTopologyCommonAncestor", device1, a);
    struct nvmlDevice_st *b = device_of(device2);
    if (!b) return NVML_ERROR_INVALID_ARGUMENT;
    NOT_NULL(path);
    FULL_GPU(a);
    FULL_GPU(b);
    if (a == b)
        *path = NVML_TOPOLOGY_INTERNAL;
    else if (a->has_numa && b->has_numa && a->numa == b->numa)
        *path = NVML_TOPOLOGY_NODE;
    else
        *path = NVML_TOPOLOGY_SYSTEM;
    return NVML_SUCCESS;
}

/* nvmlDeviceGetNvLinkState: health.c, from the profile's links (a GPU without NVLink answers
 * NOT_SUPPORTED there, as here before) */

static nvmlReturn_t nvlink_remote(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci) {
    DEVICE("nvmlDeviceGetNvLinkRemotePciInfo", device, d);
    (void)d;
    (void)link;
    NOT_NULL(pci);
    return NVML_ERROR_NOT_SUPPORTED;
}
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned int link, nvmlPciInfo_t *pci) {
    return nvlink_remote(d, link, pci);
}
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t d, unsigned int link, nvmlPciInfo_t *pci) {
    return nvlink_remote(d, link, pci);
}
