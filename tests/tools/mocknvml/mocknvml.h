/*
 * The mock libnvidia-ml.so.1's internals, shared by its source files (mocknvml.c: the data file
 * and the device queries; events.c: NVML events; topology.c: GPU topology; health.c: the health
 * reads; state.c: faults that change while NVML stays initialised). Every *.c in this directory
 * is compiled into the one library (tests/support/mocknvml.py).
 */
#ifndef NFD_MOCKNVML_H
#define NFD_MOCKNVML_H

#define NVML_NO_UNVERSIONED_FUNC_DEFS 1
#include "nvml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

#define MAX_GPUS 64
#define MAX_MIGS 16
#define MAX_PROFILES 32
#define MAX_ERRORS 128
#define STR 128

enum { KIND_GPU = 1, KIND_MIG = 2 };

typedef struct {
    int supported;
    unsigned int id, slices, instances, sms, ce, dec, enc, jpeg, ofa;
    unsigned long long mem_mb;
    int index;
    char name[STR];
} profile_t;

struct nvmlGpuInstance_st;
struct nvmlComputeInstance_st;

struct nvmlDevice_st {
    int kind;
    int index; /* GPU index; slot for a MIG device */
    struct nvmlDevice_st *parent;
    char name[STR], uuid[STR];
    /* full GPUs */
    int has_brand, has_arch, has_mem, has_cc, has_numa;
    unsigned int brand, arch, numa;
    unsigned long long mem_total;
    int cc_major, cc_minor;
    char bus_id[32];
    unsigned int pci_device_id;
    int mig_capable;
    unsigned int mig_current, mig_pending, max_mig;
    int has_fabric;
    unsigned int fabric_state, fabric_status, fabric_clique, fabric_health_mask;
    unsigned char fabric_uuid[NVML_GPU_FABRIC_UUID_LEN];
    profile_t gip[MAX_PROFILES];
    int ngip;
    profile_t cip[MAX_PROFILES];
    int ncip;
    struct nvmlDevice_st *migs[MAX_MIGS];
    int nmigs;
    /* MIG devices */
    unsigned int gi_id, ci_id, gi_profile_id, ci_profile_id, gi_slices;
    nvmlDeviceAttributes_t attrs;
    struct nvmlGpuInstance_st *gi;
    struct nvmlComputeInstance_st *ci;
};

struct nvmlGpuInstance_st {
    struct nvmlDevice_st *gpu;
    unsigned int id, profile_id, slices;
};

struct nvmlComputeInstance_st {
    struct nvmlGpuInstance_st *gi;
    struct nvmlDevice_st *mig;
    unsigned int id, profile_id, slices;
};

typedef struct {
    char call[STR];
    int device, times, after, fired, seen;
    nvmlReturn_t code;
} fault_t;

typedef struct {
    int refcount;
    char driver[STR], nvml_version[STR];
    int cuda;
    struct nvmlDevice_st gpus[MAX_GPUS];
    int ngpus;
    struct nvmlDevice_st migs[MAX_GPUS * MAX_MIGS];
    int nmigs;
    struct nvmlGpuInstance_st gis[MAX_GPUS * MAX_MIGS];
    int ngis;
    struct nvmlComputeInstance_st cis[MAX_GPUS * MAX_MIGS];
    int ncis;
    fault_t faults[MAX_ERRORS];
    int nfaults;
    char events[4096]; /* the event control file: "events" record, else $NFD_MOCK_NVML_EVENTS */
    char state[4096];  /* the runtime state file: "state" record, else $NFD_MOCK_NVML_STATE */
} mock_state_t;

/* the library's state: the data file's answers, loaded at the first nvmlInit */
extern mock_state_t S;

/* ---- shared by the source files (hidden: -fvisibility=hidden) ------------------------------ */

nvmlReturn_t fault(const char *call, int device);
struct nvmlDevice_st *device_of(nvmlDevice_t d);
int gpu_index(struct nvmlDevice_st *d);
void put(char *dst, size_t size, const char *src);
nvmlReturn_t put_string(char *buf, unsigned int length, const char *value);
/* the prologue of a call on a full GPU (initialised, a known handle of a full GPU, no injected
 * error for CALL on it): NVML_SUCCESS and the GPU's index, or the error to return */
nvmlReturn_t mock_full_gpu(const char *call, nvmlDevice_t handle, int *index);
/* health.c: a "health" record of the data file for GPU INDEX (0, or -1 if malformed), and the
 * reset before the data file is read again */
int mock_health_record(int index, char **fields, int n);
void mock_health_reset(void);
/* health.c: the data file's health records kept aside (after a load) and put back (state.c) */
void mock_health_snapshot(void);
void mock_health_restore(void);
int mock_split_tabs(char *line, char **f, int max);
/* a "fabric" record (FIELDS[0] the record's name) for GPU G: 0, or -1 if malformed */
int mock_fabric_record(struct nvmlDevice_st *g, char **fields, int n);
/* state.c: the runtime state file. _loaded after the data file is read, _refresh where a caller
 * starts with GPUs, _lost(INDEX) for every device call; the lock guards what the file changes
 * (health readings, fabric fields) against a refresh in another thread */
void mock_state_loaded(void);
void mock_state_refresh(void);
int mock_state_lost(int index);
void mock_state_lock(void);
void mock_state_unlock(void);

/* the prologue of a call: initialised; of a device call also a known handle, no injected error */
#define ENTER() \
    do { if (S.refcount == 0) return NVML_ERROR_UNINITIALIZED; } while (0)
#define DEVICE(call, handle, var)                                       \
    ENTER();                                                            \
    struct nvmlDevice_st *var = device_of(handle);                      \
    if (!var) return NVML_ERROR_INVALID_ARGUMENT;                       \
    do {                                                                \
        nvmlReturn_t r_ = fault(call, gpu_index(var));                  \
        if (r_ != NVML_SUCCESS) return r_;                              \
    } while (0)
#define FULL_GPU(var) \
    do { if ((var)->kind != KIND_GPU) return NVML_ERROR_NOT_SUPPORTED; } while (0)
#define NOT_NULL(p) \
    do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

#endif
