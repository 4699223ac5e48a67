/*
 * The mock's GPU health reads (nfd's nvml.health features; docs/gpu-health.md), answering from
 * the data file's "health" records, which tests/support/mocknvml.py writes from what the Python
 * fake answers for the profile's `health:` keys:
 *
 *   health  ECC  PAGESPENDING  REMAPCORR  REMAPUNC  REMAPPENDING  REMAPFAILED  CLOCKS
 *           PCIEWIDTH  PCIEMAXWIDTH  PCIEGEN  PCIEMAXGEN  NVLINKS
 *
 * "!" answers NVML_ERROR_NOT_SUPPORTED (for the four remap fields: REMAPPENDING); NVLINKS is a
 * string of 0/1, one character a link (link N past it: INVALID_ARGUMENT, as NVML answers for a
 * link the GPU lacks), or "!" for a GPU without NVLink. A GPU without a record answers as a
 * healthy GPU with ECC and PCIe Gen5 x16 and no NVLink. The runtime state file (state.c) replaces
 * a GPU's record while a process runs ("health INDEX ..."), and the data file's comes back when
 * the state file no longer says so.
 */
#define NVML_NO_UNVERSIONED_FUNC_DEFS 1
#include "mocknvml.h"

#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 64
#define NA (-1LL)

typedef struct {
    int present;
    long long ecc, pages, rcorr, runc, rpend, rfail, clocks, pw, pwmax, pg, pgmax;
    char nvlinks[NVML_NVLINK_MAX_LINKS + 1];
    int has_nvlink;
} health_t;

static health_t H[MAX_GPUS];
static health_t BASE[MAX_GPUS]; /* the data file's records: what the state file's changes go back to */

static long long field(const char *s) { return strcmp(s, "!") == 0 ? NA : (long long)strtoull(s, NULL, 0); }

void mock_health_reset(void) { memset(H, 0, sizeof H); }
void mock_health_snapshot(void) { memcpy(BASE, H, sizeof H); }
void mock_health_restore(void) { memcpy(H, BASE, sizeof H); }

int mock_health_record(int index, char **f, int n) {
    if (index < 0 || index >= MAX_GPUS || n < 13) return -1;
    if (strcmp(f[12], "!") != 0 && strlen(f[12]) > NVML_NVLINK_MAX_LINKS) return -1; /* nothing changed */
    health_t *h = &H[index];
    h->present = 1;
    h->ecc = field(f[1]);
    h->pages = field(f[2]);
    h->rcorr = field(f[3]);
    h->runc = field(f[4]);
    h->rpend = field(f[5]);
    h->rfail = field(f[6]);
    h->clocks = field(f[7]);
    h->pw = field(f[8]);
    h->pwmax = field(f[9]);
    h->pg = field(f[10]);
    h->pgmax = field(f[11]);
    h->has_nvlink = strcmp(f[12], "!") != 0;
    if (h->has_nvlink) strcpy(h->nvlinks, f[12]);
    return 0;
}

static const health_t DEFAULT = {1, 0, 0, 0, 0, 0, 0, 0, 16, 16, 5, 5, "", 0};

/* GPU INDEX's health as of now: a copy, taken under the state lock (state.c may change H) */
static health_t of(int index) {
    mock_state_lock();
    health_t h = H[index].present ? H[index] : DEFAULT;
    mock_state_unlock();
    return h;
}

/* the prologue of every read here: a full GPU's health, or the error to answer */
#define GPU_HEALTH(call, device, out, var)                    \
    int idx_;                                                 \
    nvmlReturn_t r_ = mock_full_gpu(call, device, &idx_);     \
    if (r_ != NVML_SUCCESS) return r_;                        \
    if (!(out)) return NVML_ERROR_INVALID_ARGUMENT;           \
    const health_t var##_copy = of(idx_);                     \
    const health_t *var = &var##_copy

static nvmlReturn_t value(long long v, unsigned int *out) {
    if (v == NA) return NVML_ERROR_NOT_SUPPORTED;
    *out = (unsigned int)v;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t type,
                                                nvmlEccCounterType_t counter, unsigned long long *count) {
    GPU_HEALTH("nvmlDeviceGetTotalEccErrors", device, count, h);
    if (type != NVML_MEMORY_ERROR_TYPE_UNCORRECTED || counter != NVML_VOLATILE_ECC) {
        if (type > NVML_MEMORY_ERROR_TYPE_UNCORRECTED || counter > NVML_AGGREGATE_ECC) return NVML_ERROR_INVALID_ARGUMENT;
        if (h->ecc == NA) return NVML_ERROR_NOT_SUPPORTED;
        *count = 0; /* only the volatile uncorrected counter is in the profile */
        return NVML_SUCCESS;
    }
    if (h->ecc == NA) return NVML_ERROR_NOT_SUPPORTED;
    *count = (unsigned long long)h->ecc;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *pending) {
    GPU_HEALTH("nvmlDeviceGetRetiredPagesPendingStatus", device, pending, h);
    if (h->pages == NA) return NVML_ERROR_NOT_SUPPORTED;
    *pending = h->pages ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corr, unsigned int *unc,
                                              unsigned int *pending, unsigned int *failed) {
    GPU_HEALTH("nvmlDeviceGetRemappedRows", device, corr, h);
    if (!unc || !pending || !failed) return NVML_ERROR_INVALID_ARGUMENT;
    if (h->rpend == NA) return NVML_ERROR_NOT_SUPPORTED;
    *corr = (unsigned int)h->rcorr;
    *unc = (unsigned int)h->runc;
    *pending = (unsigned int)h->rpend;
    *failed = (unsigned int)h->rfail;
    return NVML_SUCCESS;
}

static nvmlReturn_t clocks(const char *call, nvmlDevice_t device, unsigned long long *reasons) {
    GPU_HEALTH(call, device, reasons, h);
    if (h->clocks == NA) return NVML_ERROR_NOT_SUPPORTED;
    *reasons = (unsigned long long)h->clocks;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *reasons) {
    return clocks("nvmlDeviceGetCurrentClocksEventReasons", device, reasons);
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *reasons) {
    return clocks("nvmlDeviceGetCurrentClocksThrottleReasons", device, reasons);
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *v) {
    GPU_HEALTH("nvmlDeviceGetCurrPcieLinkWidth", device, v, h);
    return value(h->pw, v);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *v) {
    GPU_HEALTH("nvmlDeviceGetMaxPcieLinkWidth", device, v, h);
    return value(h->pwmax, v);
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *v) {
    GPU_HEALTH("nvmlDeviceGetCurrPcieLinkGeneration", device, v, h);
    return value(h->pg, v);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *v) {
    GPU_HEALTH("nvmlDeviceGetMaxPcieLinkGeneration", device, v, h);
    return value(h->pgmax, v);
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *active) {
    GPU_HEALTH("nvmlDeviceGetNvLinkState", device, active, h);
    if (!h->has_nvlink) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= strlen(h->nvlinks)) return NVML_ERROR_INVALID_ARGUMENT;
    *active = h->nvlinks[link] == '1' ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}
