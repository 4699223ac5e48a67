/*
 * A mock libnvidia-ml.so.1: NVML's C ABI, compiled against go-nvml's nvml.h (fetched from the
 * Go module proxy at build time, never stored here), answering from a device profile.
 *
 * The data file is written by tests/support/mocknvml.py from a profile of
 * nfd/nvml_fake/device_profiles (the same answers nfd.nvml_fake.FakeNvml gives); its path is
 * in NFD_MOCK_NVML_DATA, read at the first nvmlInit of the process (again after a full
 * nvmlShutdown). Without it nvmlInit answers NVML_ERROR_DRIVER_NOT_LOADED, as on a machine
 * without the driver.
 *
 * Format: one record a line, fields separated by tabs; "!" as a value means the call answers
 * NVML_ERROR_NOT_SUPPORTED.
 *   system  DRIVER  CUDA  NVMLVERSION
 *   gpu     NAME  UUID  BRAND  ARCH  MEMTOTAL  CCMAJOR  CCMINOR  BUSID  PCIDEVID  NUMA  MIGCAP  MIGCUR  MIGPEND  MAXMIG
 *   fabric  STATE  STATUS  CLIQUE  UUIDHEX32          (of the last gpu; absent: NOT_SUPPORTED)
 *   gip     INDEX  ID  SLICES  INSTANCES  SMS  CE  DEC  ENC  JPEG  OFA  MEMMB  NAME   (last gpu)
 *   cip     INDEX  ID  SLICES  INSTANCES  SMS  CE  DEC  ENC  JPEG  OFA  NAME         (last gpu)
 *   mig     SLOT  UUID  GIID  CIID  GIPROFILEID  CIPROFILEID  GISLICES  SMS  CE  DEC  ENC  JPEG  OFA  CISLICES  MEMMB  NAME
 *   fabric  ... HEALTHMASK                           (optional sixth field: v2/v3 healthMask)
 *   error   CALL  DEVICE(-1 any)  CODE  TIMES(-1 forever)  AFTER    (CALL "*": every call on DEVICE)
 *   health  ...                                       (of the last gpu; health.c reads it)
 *   events  PATH                                     (the event control file: events.c)
 *   state   PATH                                     (the runtime state file: state.c)
 *
 * Behaviour copied from the real library: reference-counted init, UNINITIALIZED before it,
 * INVALID_ARGUMENT for NULL outputs and unknown handles, INSUFFICIENT_SIZE for short string
 * buffers, ARGUMENT_VERSION_MISMATCH for a versioned struct whose version field is wrong,
 * NOT_SUPPORTED for what the model lacks, and per-call, per-GPU errors from the profile.
 */
#include "mocknvml.h"

#include <pthread.h>

mock_state_t S;

/* ---- the data file ------------------------------------------------------------------------- */

/* the fields of one tab-separated line, split in place (the data file's and the state file's) */
int mock_split_tabs(char *line, char **f, int max) {
    int n = 0;
    char *p = line;
    while (n < max) {
        f[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = '\0';
        p = tab + 1;
    }
    return n;
}

static unsigned long long num(const char *s) { return strtoull(s, NULL, 0); }
static int na(const char *s) { return strcmp(s, "!") == 0; }

/* a NUL-terminated copy, cut to the destination's size */
void put(char *dst, size_t size, const char *src) {
    size_t n = strlen(src);
    if (n >= size) n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void copy(char *dst, const char *src) { put(dst, STR, src); }

static int parse_profile(profile_t *p, char **f, int n, int with_mem) {
    if (n < (with_mem ? 13 : 12)) return -1;
    p->supported = 1;
    p->index = (int)num(f[1]);
    p->id = num(f[2]);
    p->slices = num(f[3]);
    p->instances = num(f[4]);
    p->sms = num(f[5]);
    p->ce = num(f[6]);
    p->dec = num(f[7]);
    p->enc = num(f[8]);
    p->jpeg = num(f[9]);
    p->ofa = num(f[10]);
    if (with_mem) {
        p->mem_mb = num(f[11]);
        copy(p->name, f[12]);
    } else {
        copy(p->name, f[11]);
    }
    return 0;
}

static struct nvmlGpuInstance_st *gi_of(struct nvmlDevice_st *g, unsigned int id, unsigned int profile,
                                        unsigned int slices) {
    for (int i = 0; i < S.ngis; i++)
        if (S.gis[i].gpu == g && S.gis[i].id == id) return &S.gis[i];
    struct nvmlGpuInstance_st *gi = &S.gis[S.ngis++];
    gi->gpu = g;
    gi->id = id;
    gi->profile_id = profile;
    gi->slices = slices;
    return gi;
}

static nvmlReturn_t load(void) {
    const char *path = getenv("NFD_MOCK_NVML_DATA");
    if (!path || !*path) return NVML_ERROR_DRIVER_NOT_LOADED;
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "mock NVML: %s: %s\n", path, strerror(errno));
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    memset(&S, 0, sizeof S);
    mock_health_reset();
    char line[4096];
    int lineno = 0;
    struct nvmlDevice_st *g = NULL;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        char *f[32];
        int n = mock_split_tabs(line, f, 32);
        int bad = 0;
        if (!strcmp(f[0], "system") && n >= 4) {
            copy(S.driver, f[1]);
            S.cuda = (int)num(f[2]);
            copy(S.nvml_version, f[3]);
        } else if (!strcmp(f[0], "gpu") && n >= 15 && S.ngpus < MAX_GPUS) {
            g = &S.gpus[S.ngpus];
            g->kind = KIND_GPU;
            g->index = S.ngpus++;
            copy(g->name, f[1]);
            copy(g->uuid, f[2]);
            if ((g->has_brand = !na(f[3]))) g->brand = num(f[3]);
            if ((g->has_arch = !na(f[4]))) g->arch = num(f[4]);
            if ((g->has_mem = !na(f[5]))) g->mem_total = num(f[5]);
            if ((g->has_cc = !na(f[6]))) {
                g->cc_major = (int)num(f[6]);
                g->cc_minor = (int)num(f[7]);
            }
            put(g->bus_id, sizeof g->bus_id, f[8]);
            g->pci_device_id = num(f[9]);
            if ((g->has_numa = !na(f[10]))) g->numa = num(f[10]);
            g->mig_capable = (int)num(f[11]);
            g->mig_current = num(f[12]);
            g->mig_pending = num(f[13]);
            g->max_mig = num(f[14]);
        } else if (!strcmp(f[0], "fabric") && g) {
            bad = mock_fabric_record(g, f, n);
        } else if (!strcmp(f[0], "health") && g) {
            bad = mock_health_record(g->index, f, n);
        } else if (!strcmp(f[0], "gip") && g && g->ngip < MAX_PROFILES) {
            bad = parse_profile(&g->gip[g->ngip++], f, n, 1);
        } else if (!strcmp(f[0], "cip") && g && g->ncip < MAX_PROFILES) {
            bad = parse_profile(&g->cip[g->ncip++], f, n, 0);
        } else if (!strcmp(f[0], "mig") && g && n >= 17 && g->nmigs < MAX_MIGS) {
            struct nvmlDevice_st *m = &S.migs[S.nmigs++];
            m->kind = KIND_MIG;
            m->parent = g;
            m->index = (int)num(f[1]);
            copy(m->uuid, f[2]);
            m->gi_id = num(f[3]);
            m->ci_id = num(f[4]);
            m->gi_profile_id = num(f[5]);
            m->ci_profile_id = num(f[6]);
            m->gi_slices = num(f[7]);
            m->attrs.multiprocessorCount = num(f[8]);
            m->attrs.sharedCopyEngineCount = num(f[9]);
            m->attrs.sharedDecoderCount = num(f[10]);
            m->attrs.sharedEncoderCount = num(f[11]);
            m->attrs.sharedJpegCount = num(f[12]);
            m->attrs.sharedOfaCount = num(f[13]);
            m->attrs.gpuInstanceSliceCount = m->gi_slices;
            m->attrs.computeInstanceSliceCount = num(f[14]);
            m->attrs.memorySizeMB = num(f[15]);
            copy(m->name, f[16]);
            m->gi = gi_of(g, m->gi_id, m->gi_profile_id, m->gi_slices);
            struct nvmlComputeInstance_st *ci = &S.cis[S.ncis++];
            ci->gi = m->gi;
            ci->mig = m;
            ci->id = m->ci_id;
            ci->profile_id = m->ci_profile_id;
            ci->slices = m->attrs.computeInstanceSliceCount;
            m->ci = ci;
            g->migs[g->nmigs++] = m;
        } else if (!strcmp(f[0], "events") && n >= 2) {
            put(S.events, sizeof S.events, f[1]);
        } else if (!strcmp(f[0], "state") && n >= 2) {
            put(S.state, sizeof S.state, f[1]);
        } else if (!strcmp(f[0], "error") && n >= 6 && S.nfaults < MAX_ERRORS) {
            fault_t *e = &S.faults[S.nfaults++];
            copy(e->call, f[1]);
            e->device = (int)strtol(f[2], NULL, 0);
            e->code = (nvmlReturn_t)num(f[3]);
            e->times = (int)strtol(f[4], NULL, 0);
            e->after = (int)strtol(f[5], NULL, 0);
        } else {
            bad = 1;
        }
        if (bad) {
            fprintf(stderr, "mock NVML: %s:%d: bad record %s\n", path, lineno, f[0]);
            fclose(fp);
            memset(&S, 0, sizeof S);
            return NVML_ERROR_UNKNOWN;
        }
    }
    fclose(fp);
    mock_state_loaded();
    return NVML_SUCCESS;
}

/* a "fabric" record: FIELDS[1..] STATE STATUS CLIQUE UUIDHEX32 [HEALTHMASK] (also state.c's) */
int mock_fabric_record(struct nvmlDevice_st *g, char **f, int n) {
    if (n < 5 || strlen(f[4]) != 2 * NVML_GPU_FABRIC_UUID_LEN) return -1;
    g->has_fabric = 1;
    g->fabric_state = num(f[1]);
    g->fabric_status = num(f[2]);
    g->fabric_clique = num(f[3]);
    for (int i = 0; i < NVML_GPU_FABRIC_UUID_LEN; i++) {
        char hex[3] = {f[4][2 * i], f[4][2 * i + 1], 0};
        g->fabric_uuid[i] = (unsigned char)strtoul(hex, NULL, 16);
    }
    g->fabric_health_mask = n >= 6 ? num(f[5]) : 0;
    return 0;
}

/* ---- checks every entry point makes ------------------------------------------------------- */

nvmlReturn_t fault(const char *call, int device) {
    if (mock_state_lost(device)) return NVML_ERROR_GPU_IS_LOST; /* the state file's "lost" (state.c) */
    for (int i = 0; i < S.nfaults; i++) {
        fault_t *e = &S.faults[i];
        int any = e->call[0] == '*' && e->call[1] == '\0' && e->device >= 0;
        if ((!any && strcmp(e->call, call) != 0) || (e->device >= 0 && e->device != device)) continue;
        e->seen++;
        if (e->seen <= e->after || (e->times >= 0 && e->fired >= e->times)) continue;
        e->fired++;
        return e->code;
    }
    return NVML_SUCCESS;
}

struct nvmlDevice_st *device_of(nvmlDevice_t d) {
    struct nvmlDevice_st *p = d.handle;
    if (p >= S.gpus && p < S.gpus + S.ngpus) return p;
    if (p >= S.migs && p < S.migs + S.nmigs) return p;
    return NULL;
}

static struct nvmlGpuInstance_st *gi_handle(nvmlGpuInstance_t h) {
    struct nvmlGpuInstance_st *p = h.handle;
    return (p >= S.gis && p < S.gis + S.ngis) ? p : NULL;
}

static struct nvmlComputeInstance_st *ci_handle(nvmlComputeInstance_t h) {
    struct nvmlComputeInstance_st *p = h.handle;
    return (p >= S.cis && p < S.cis + S.ncis) ? p : NULL;
}

int gpu_index(struct nvmlDevice_st *d) { return d->kind == KIND_MIG ? d->parent->index : d->index; }

nvmlReturn_t put_string(char *buf, unsigned int length, const char *value) {
    if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, value, strlen(value) + 1);
    return NVML_SUCCESS;
}

/* for health.c (mocknvml.h) */
nvmlReturn_t mock_full_gpu(const char *call, nvmlDevice_t handle, int *index) {
    DEVICE(call, handle, d);
    FULL_GPU(d);
    *index = d->index;
    return NVML_SUCCESS;
}

/* ---- init, errors, system ----------------------------------------------------------------- */

/* init and shutdown are thread-safe, as NVML's (a process may initialise from several threads:
 * the health source's XID watcher and the source itself) */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

static nvmlReturn_t init_locked(void) {
    if (S.refcount == 0) {
        nvmlReturn_t r = load();
        if (r != NVML_SUCCESS) return r;
    }
    nvmlReturn_t r = fault("nvmlInit", -1);
    if (r != NVML_SUCCESS) return r;
    S.refcount++;
    return NVML_SUCCESS;
}

static nvmlReturn_t init(void) {
    pthread_mutex_lock(&init_lock);
    nvmlReturn_t r = init_locked();
    pthread_mutex_unlock(&init_lock);
    return r;
}

EXPORT nvmlReturn_t nvmlInit_v2(void) { return init(); }
EXPORT nvmlReturn_t nvmlInit(void) { return init(); }
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    return init();
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
    pthread_mutex_lock(&init_lock);
    nvmlReturn_t r = S.refcount == 0 ? NVML_ERROR_UNINITIALIZED : fault("nvmlShutdown", -1);
    if (r == NVML_SUCCESS) S.refcount--;
    pthread_mutex_unlock(&init_lock);
    return r;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED: return "Deprecated";
    case NVML_ERROR_NOT_READY: return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND: return "No GPUs found";
    case NVML_ERROR_INVALID_STATE: return "Invalid state";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Unknown Error";
    }
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    ENTER();
    nvmlReturn_t r = fault("nvmlSystemGetDriverVersion", -1);
    return r != NVML_SUCCESS ? r : put_string(version, length, S.driver);
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    ENTER();
    nvmlReturn_t r = fault("nvmlSystemGetNVMLVersion", -1);
    return r != NVML_SUCCESS ? r : put_string(version, length, S.nvml_version);
}

static nvmlReturn_t cuda_version(int *v) {
    ENTER();
    NOT_NULL(v);
    nvmlReturn_t r = fault("nvmlSystemGetCudaDriverVersion", -1);
    if (r != NVML_SUCCESS) return r;
    *v = S.cuda;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { return cuda_version(v); }
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return cuda_version(v); }

/* ---- enumeration -------------------------------------------------------------------------- */

static nvmlReturn_t count(unsigned int *n) {
    ENTER();
    NOT_NULL(n);
    mock_state_refresh();
    nvmlReturn_t r = fault("nvmlDeviceGetCount", -1);
    if (r != NVML_SUCCESS) return r;
    *n = (unsigned int)S.ngpus;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { return count(n); }
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *n) { return count(n); }

static nvmlReturn_t by_index(unsigned int index, nvmlDevice_t *device) {
    ENTER();
    mock_state_refresh();
    NOT_NULL(device);
    if (index >= (unsigned int)S.ngpus) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = fault("nvmlDeviceGetHandleByIndex", (int)index);
    if (r != NVML_SUCCESS) return r;
    device->handle = &S.gpus[index];
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) { return by_index(i, d); }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d) { return by_index(i, d); }

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    ENTER();
    mock_state_refresh();
    NOT_NULL(uuid);
    NOT_NULL(device);
    for (int i = 0; i < S.ngpus; i++)
        if (!strcmp(S.gpus[i].uuid, uuid)) {
            nvmlReturn_t r = fault("nvmlDeviceGetHandleByUUID", i);
            if (r != NVML_SUCCESS) return r;
            device->handle = &S.gpus[i];
            return NVML_SUCCESS;
        }
    for (int i = 0; i < S.nmigs; i++)
        if (!strcmp(S.migs[i].uuid, uuid)) {
            nvmlReturn_t r = fault("nvmlDeviceGetHandleByUUID", S.migs[i].parent->index);
            if (r != NVML_SUCCESS) return r;
            device->handle = &S.migs[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t by_bus_id(const char *bus_id, nvmlDevice_t *device) {
    ENTER();
    mock_state_refresh();
    NOT_NULL(bus_id);
    NOT_NULL(device);
    for (int i = 0; i < S.ngpus; i++)
        if (!strcasecmp(S.gpus[i].bus_id, bus_id) ||
            (strlen(S.gpus[i].bus_id) == 16 && !strcasecmp(S.gpus[i].bus_id + 4, bus_id))) {
            nvmlReturn_t r = fault("nvmlDeviceGetHandleByPciBusId", i);
            if (r != NVML_SUCCESS) return r;
            device->handle = &S.gpus[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *b, nvmlDevice_t *d) { return by_bus_id(b, d); }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *b, nvmlDevice_t *d) { return by_bus_id(b, d); }

/* ---- device queries ----------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    DEVICE("nvmlDeviceGetName", device, d);
    return put_string(name, length, d->name);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    DEVICE("nvmlDeviceGetUUID", device, d);
    return put_string(uuid, length, d->uuid);
}

EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type) {
    DEVICE("nvmlDeviceGetBrand", device, d);
    NOT_NULL(type);
    if (d->kind == KIND_MIG) d = d->parent;
    if (!d->has_brand) return NVML_ERROR_NOT_SUPPORTED;
    *type = (nvmlBrandType_t)d->brand;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch) {
    DEVICE("nvmlDeviceGetArchitecture", device, d);
    NOT_NULL(arch);
    if (d->kind == KIND_MIG) d = d->parent;
    if (!d->has_arch) return NVML_ERROR_NOT_SUPPORTED;
    *arch = d->arch;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    DEVICE("nvmlDeviceGetMemoryInfo", device, d);
    NOT_NULL(memory);
    if (d->kind == KIND_MIG) {
        memory->total = d->attrs.memorySizeMB << 20;
    } else {
        if (!d->has_mem) return NVML_ERROR_NOT_SUPPORTED;
        memory->total = d->mem_total;
    }
    memory->free = memory->total;
    memory->used = 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    DEVICE("nvmlDeviceGetMemoryInfo", device, d);
    NOT_NULL(memory);
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    nvmlMemory_t m;
    if (d->kind == KIND_MIG) {
        m.total = d->attrs.memorySizeMB << 20;
    } else {
        if (!d->has_mem) return NVML_ERROR_NOT_SUPPORTED;
        m.total = d->mem_total;
    }
    memory->total = m.total;
    memory->reserved = 0;
    memory->free = m.total;
    memory->used = 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    DEVICE("nvmlDeviceGetCudaComputeCapability", device, d);
    NOT_NULL(major);
    NOT_NULL(minor);
    if (d->kind == KIND_MIG) d = d->parent;
    if (!d->has_cc) return NVML_ERROR_NOT_SUPPORTED;
    *major = d->cc_major;
    *minor = d->cc_minor;
    return NVML_SUCCESS;
}

static nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    DEVICE("nvmlDeviceGetPciInfo", device, d);
    NOT_NULL(pci);
    if (d->kind == KIND_MIG) d = d->parent;
    memset(pci, 0, sizeof *pci);
    put(pci->busId, sizeof pci->busId, d->bus_id);
    /* legacy: the 4-digit-domain form, "0000:18:00.0" */
    put(pci->busIdLegacy, sizeof pci->busIdLegacy, strlen(d->bus_id) == 16 ? d->bus_id + 4 : d->bus_id);
    unsigned int domain = 0, bus = 0, dev = 0, fn = 0;
    if (sscanf(d->bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) == 4) {
        pci->domain = domain;
        pci->bus = bus;
        pci->device = dev;
    }
    pci->pciDeviceId = d->pci_device_id;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) { return pci_info(d, p); }
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *p) { return pci_info(d, p); }

EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node) {
    DEVICE("nvmlDeviceGetNumaNodeId", device, d);
    NOT_NULL(node);
    if (d->kind == KIND_MIG) d = d->parent;
    if (!d->has_numa) return NVML_ERROR_NOT_SUPPORTED;
    *node = d->numa;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor) {
    DEVICE("nvmlDeviceGetMinorNumber", device, d);
    NOT_NULL(minor);
    FULL_GPU(d);
    *minor = (unsigned int)d->index;
    return NVML_SUCCESS;
}

/* ---- fabric ------------------------------------------------------------------------------- */

static nvmlReturn_t fabric_common(struct nvmlDevice_st *d) {
    if (d->kind == KIND_MIG) return NVML_ERROR_NOT_SUPPORTED;
    return d->has_fabric ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *info) {
    DEVICE("nvmlDeviceGetGpuFabricInfo", device, d);
    NOT_NULL(info);
    mock_state_lock();
    nvmlReturn_t r = fabric_common(d);
    if (r == NVML_SUCCESS) {
        memcpy(info->clusterUuid, d->fabric_uuid, sizeof info->clusterUuid);
        info->status = (nvmlReturn_t)d->fabric_status;
        info->cliqueId = d->fabric_clique;
        info->state = (nvmlGpuFabricState_t)d->fabric_state;
    }
    mock_state_unlock();
    return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t *info) {
    DEVICE("nvmlDeviceGetGpuFabricInfoV", device, d);
    NOT_NULL(info);
    /* v2 and v3 share their layout up to healthMask; v3 adds healthSummary */
    if (info->version != nvmlGpuFabricInfo_v2 && info->version != nvmlGpuFabricInfo_v3)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    mock_state_lock();
    nvmlReturn_t r = fabric_common(d);
    if (r == NVML_SUCCESS) {
        memcpy(info->clusterUuid, d->fabric_uuid, sizeof info->clusterUuid);
        info->status = (nvmlReturn_t)d->fabric_status;
        info->cliqueId = d->fabric_clique;
        info->state = (nvmlGpuFabricState_t)d->fabric_state;
        info->healthMask = d->fabric_health_mask;
        if (info->version == nvmlGpuFabricInfo_v3) info->healthSummary = 0;
    }
    mock_state_unlock();
    return r;
}

/* ---- MIG ---------------------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending) {
    DEVICE("nvmlDeviceGetMigMode", device, d);
    NOT_NULL(current);
    NOT_NULL(pending);
    FULL_GPU(d);
    if (!d->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    *current = d->mig_current;
    *pending = d->mig_pending;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *n) {
    DEVICE("nvmlDeviceGetMaxMigDeviceCount", device, d);
    NOT_NULL(n);
    FULL_GPU(d);
    if (!d->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    *n = d->max_mig;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *mig) {
    DEVICE("nvmlDeviceGetMigDeviceHandleByIndex", device, d);
    NOT_NULL(mig);
    if (d->kind != KIND_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    for (int i = 0; i < d->nmigs; i++)
        if ((unsigned int)d->migs[i]->index == index) {
            mig->handle = d->migs[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *is_mig) {
    DEVICE("nvmlDeviceIsMigDeviceHandle", device, d);
    NOT_NULL(is_mig);
    *is_mig = d->kind == KIND_MIG;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t device, nvmlDevice_t *parent) {
    DEVICE("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", device, d);
    NOT_NULL(parent);
    if (d->kind != KIND_MIG) return NVML_ERROR_INVALID_ARGUMENT;
    parent->handle = d->parent;
    return NVML_SUCCESS;
}

static nvmlReturn_t attributes(nvmlDevice_t device, nvmlDeviceAttributes_t *attrs) {
    DEVICE("nvmlDeviceGetAttributes", device, d);
    NOT_NULL(attrs);
    if (d->kind != KIND_MIG) return NVML_ERROR_NOT_SUPPORTED;
    *attrs = d->attrs;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t d, nvmlDeviceAttributes_t *a) { return attributes(d, a); }
EXPORT nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t d, nvmlDeviceAttributes_t *a) { return attributes(d, a); }

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
    DEVICE("nvmlDeviceGetGpuInstanceId", device, d);
    NOT_NULL(id);
    if (d->kind != KIND_MIG) return NVML_ERROR_INVALID_ARGUMENT;
    *id = d->gi_id;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
    DEVICE("nvmlDeviceGetComputeInstanceId", device, d);
    NOT_NULL(id);
    if (d->kind != KIND_MIG) return NVML_ERROR_INVALID_ARGUMENT;
    *id = d->ci_id;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gi) {
    DEVICE("nvmlDeviceGetGpuInstanceById", device, d);
    NOT_NULL(gi);
    if (d->kind != KIND_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    for (int i = 0; i < S.ngis; i++)
        if (S.gis[i].gpu == d && S.gis[i].id == id) {
            gi->handle = &S.gis[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t handle, nvmlGpuInstanceInfo_t *info) {
    ENTER();
    struct nvmlGpuInstance_st *gi = gi_handle(handle);
    if (!gi) return NVML_ERROR_INVALID_ARGUMENT;
    NOT_NULL(info);
    nvmlReturn_t r = fault("nvmlGpuInstanceGetInfo", gi->gpu->index);
    if (r != NVML_SUCCESS) return r;
    memset(info, 0, sizeof *info);
    info->device.handle = gi->gpu;
    info->id = gi->id;
    info->profileId = gi->profile_id;
    info->placement.size = gi->slices;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t handle, unsigned int id,
                                                          nvmlComputeInstance_t *ci) {
    ENTER();
    struct nvmlGpuInstance_st *gi = gi_handle(handle);
    if (!gi) return NVML_ERROR_INVALID_ARGUMENT;
    NOT_NULL(ci);
    nvmlReturn_t r = fault("nvmlGpuInstanceGetComputeInstanceById", gi->gpu->index);
    if (r != NVML_SUCCESS) return r;
    for (int i = 0; i < S.ncis; i++)
        if (S.cis[i].gi == gi && S.cis[i].id == id) {
            ci->handle = &S.cis[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t ci_info(nvmlComputeInstance_t handle, nvmlComputeInstanceInfo_t *info) {
    ENTER();
    struct nvmlComputeInstance_st *ci = ci_handle(handle);
    if (!ci) return NVML_ERROR_INVALID_ARGUMENT;
    NOT_NULL(info);
    nvmlReturn_t r = fault("nvmlComputeInstanceGetInfo", ci->gi->gpu->index);
    if (r != NVML_SUCCESS) return r;
    memset(info, 0, sizeof *info);
    info->device.handle = ci->gi->gpu;
    info->gpuInstance.handle = ci->gi;
    info->id = ci->id;
    info->profileId = ci->profile_id;
    info->placement.size = ci->slices;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t c, nvmlComputeInstanceInfo_t *i) { return ci_info(c, i); }
EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t c, nvmlComputeInstanceInfo_t *i) { return ci_info(c, i); }

/* GPU-instance profile `profile` of the device: INVALID_ARGUMENT out of range, NOT_SUPPORTED
 * when the model has no such profile (or no MIG at all) */
static nvmlReturn_t gi_profile(const char *call, nvmlDevice_t device, unsigned int profile, profile_t **out) {
    DEVICE(call, device, d);
    if (d->kind != KIND_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    for (int i = 0; i < d->ngip; i++)
        if ((unsigned int)d->gip[i].index == profile) {
            *out = &d->gip[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                        nvmlGpuInstanceProfileInfo_t *info) {
    if (S.refcount == 0) return NVML_ERROR_UNINITIALIZED;
    NOT_NULL(info);
    profile_t *p = NULL;
    nvmlReturn_t r = gi_profile("nvmlDeviceGetGpuInstanceProfileInfo", device, profile, &p);
    if (r != NVML_SUCCESS) return r;
    memset(info, 0, sizeof *info);
    info->id = p->id;
    info->sliceCount = p->slices;
    info->instanceCount = p->instances;
    info->multiprocessorCount = p->sms;
    info->copyEngineCount = p->ce;
    info->decoderCount = p->dec;
    info->encoderCount = p->enc;
    info->jpegCount = p->jpeg;
    info->ofaCount = p->ofa;
    info->memorySizeMB = p->mem_mb;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                         nvmlGpuInstanceProfileInfo_v2_t *info) {
    if (S.refcount == 0) return NVML_ERROR_UNINITIALIZED;
    NOT_NULL(info);
    if (info->version != nvmlGpuInstanceProfileInfo_v2 && info->version != nvmlGpuInstanceProfileInfo_v3)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    profile_t *p = NULL;
    nvmlReturn_t r = gi_profile("nvmlDeviceGetGpuInstanceProfileInfoV", device, profile, &p);
    if (r != NVML_SUCCESS) return r;
    if (info->version == nvmlGpuInstanceProfileInfo_v3) {
        nvmlGpuInstanceProfileInfo_v3_t *v3 = (nvmlGpuInstanceProfileInfo_v3_t *)info;
        memset(v3, 0, sizeof *v3);
        v3->version = nvmlGpuInstanceProfileInfo_v3;
        v3->id = p->id;
        v3->sliceCount = p->slices;
        v3->instanceCount = p->instances;
        v3->multiprocessorCount = p->sms;
        v3->copyEngineCount = p->ce;
        v3->decoderCount = p->dec;
        v3->encoderCount = p->enc;
        v3->jpegCount = p->jpeg;
        v3->ofaCount = p->ofa;
        v3->memorySizeMB = p->mem_mb;
        put(v3->name, sizeof v3->name, p->name);
        return NVML_SUCCESS;
    }
    memset(info, 0, sizeof *info);
    info->version = nvmlGpuInstanceProfileInfo_v2;
    info->id = p->id;
    info->sliceCount = p->slices;
    info->instanceCount = p->instances;
    info->multiprocessorCount = p->sms;
    info->copyEngineCount = p->ce;
    info->decoderCount = p->dec;
    info->encoderCount = p->enc;
    info->jpegCount = p->jpeg;
    info->ofaCount = p->ofa;
    info->memorySizeMB = p->mem_mb;
    put(info->name, sizeof info->name, p->name);
    return NVML_SUCCESS;
}

/* compute-instance profile `profile` of a GPU instance: the model's table, sizes that fit */
static nvmlReturn_t ci_profile(const char *call, nvmlGpuInstance_t handle, unsigned int profile,
                               unsigned int eng, profile_t **out) {
    ENTER();
    struct nvmlGpuInstance_st *gi = gi_handle(handle);
    if (!gi) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = fault(call, gi->gpu->index);
    if (r != NVML_SUCCESS) return r;
    if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT || eng >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nvmlDevice_st *d = gi->gpu;
    for (int i = 0; i < d->ncip; i++)
        if ((unsigned int)d->cip[i].index == profile && d->cip[i].slices <= gi->slices) {
            *out = &d->cip[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_SUPPORTED;
}

static void fill_ci(nvmlComputeInstanceProfileInfo_t *info, const profile_t *p) {
    memset(info, 0, sizeof *info);
    info->id = p->id;
    info->sliceCount = p->slices;
    info->instanceCount = p->instances;
    info->multiprocessorCount = p->sms;
    info->sharedCopyEngineCount = p->ce;
    info->sharedDecoderCount = p->dec;
    info->sharedEncoderCount = p->enc;
    info->sharedJpegCount = p->jpeg;
    info->sharedOfaCount = p->ofa;
}

EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gi, unsigned int profile,
                                                                 unsigned int eng,
                                                                 nvmlComputeInstanceProfileInfo_t *info) {
    if (S.refcount == 0) return NVML_ERROR_UNINITIALIZED;
    NOT_NULL(info);
    profile_t *p = NULL;
    nvmlReturn_t r = ci_profile("nvmlGpuInstanceGetComputeInstanceProfileInfo", gi, profile, eng, &p);
    if (r != NVML_SUCCESS) return r;
    fill_ci(info, p);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t gi, unsigned int profile,
                                                                  unsigned int eng,
                                                                  nvmlComputeInstanceProfileInfo_v2_t *info) {
    if (S.refcount == 0) return NVML_ERROR_UNINITIALIZED;
    NOT_NULL(info);
    unsigned int version = info->version;
    if (version != nvmlComputeInstanceProfileInfo_v2 && version != nvmlComputeInstanceProfileInfo_v3)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    profile_t *p = NULL;
    nvmlReturn_t r = ci_profile("nvmlGpuInstanceGetComputeInstanceProfileInfoV", gi, profile, eng, &p);
    if (r != NVML_SUCCESS) return r;
    nvmlComputeInstanceProfileInfo_t v1;
    fill_ci(&v1, p);
    /* v2 and v3 are v1 with the version in front and the name behind (v3: then capabilities) */
    memset(info, 0, version == nvmlComputeInstanceProfileInfo_v3 ? sizeof(nvmlComputeInstanceProfileInfo_v3_t)
                                                                  : sizeof(nvmlComputeInstanceProfileInfo_v2_t));
    info->version = version;
    info->id = v1.id;
    info->sliceCount = v1.sliceCount;
    info->instanceCount = v1.instanceCount;
    info->multiprocessorCount = v1.multiprocessorCount;
    info->sharedCopyEngineCount = v1.sharedCopyEngineCount;
    info->sharedDecoderCount = v1.sharedDecoderCount;
    info->sharedEncoderCount = v1.sharedEncoderCount;
    info->sharedJpegCount = v1.sharedJpegCount;
    info->sharedOfaCount = v1.sharedOfaCount;
    put(info->name, sizeof info->name, p->name);
    return NVML_SUCCESS;
}

/* ---- processes (the device plugin's health check; its events are in events.c) ---------------- */

static nvmlReturn_t no_processes(const char *call, nvmlDevice_t device, unsigned int *count, void *infos) {
    DEVICE(call, device, d);
    (void)d;
    NOT_NULL(count);
    (void)infos;
    *count = 0; /* no process runs on a mock GPU */
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_t *p) {
    return no_processes("nvmlDeviceGetComputeRunningProcesses", d, n, p);
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_t *p) {
    return no_processes("nvmlDeviceGetGraphicsRunningProcesses", d, n, p);
}
