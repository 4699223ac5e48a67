/*
 * NVML events in the mock libnvidia-ml.so.1: nvmlDeviceGetSupportedEventTypes,
 * nvmlEventSetCreate, nvmlDeviceRegisterEvents, nvmlEventSetWait[_v2] and nvmlEventSetFree,
 * as nvidia-device-plugin's health check uses them (an XID marks a GPU unhealthy).
 *
 * Events are injected through a control file, named by the data file's "events" record, else
 * by $NFD_MOCK_NVML_EVENTS (neither: no event ever happens). A test appends one line per event,
 * fields separated by blanks ('#' lines and blank lines are skipped):
 *
 *     TYPE  DEVICE  [DATA  [GI  CI]]
 *
 *   TYPE    xid (nvmlEventTypeXidCriticalError), sbe (SingleBitEccError), dbe (DoubleBitEccError),
 *           pstate, clock, or a number: the nvmlEventType* bit itself
 *   DEVICE  a GPU's index or UUID, or a MIG device's UUID (the event then names its parent GPU,
 *           with the MIG device's GPU and compute instance ids, as NVML reports MIG XIDs)
 *   DATA    eventData: the XID for xid (default 0)
 *   GI CI   gpuInstanceId and computeInstanceId (default 0xFFFFFFFF: not attributable)
 *
 * As with NVML, an event set sees only the events that happen after it was created: lines
 * appended after its nvmlEventSetCreate, each once, in order; a line for a GPU or an event type
 * the set did not register is passed over. nvmlEventSetWait looks at the file every 10 ms until
 * its timeout (milliseconds; 0: one look) and answers NVML_ERROR_TIMEOUT when nothing came; a
 * line without its newline yet is left for a later look. A malformed line is reported on stderr
 * and passed over. Every set is read independently, so two sets (two plugins, or one set per
 * resource) each receive every event. nvmlDeviceRegisterEvents says on stderr
 * "mock NVML: event set N: GPU I (UUID) registered for events 0xTYPES", so a test can wait for
 * that before it injects.
 */
#include "mocknvml.h"

#include <sys/stat.h>

#define MAX_EVENT_SETS 64

/* the event types a full GPU supports */
#define SUPPORTED_EVENTS \
    (nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeSingleBitEccError | \
     nvmlEventTypePState | nvmlEventTypeClock)

struct nvmlEventSet_st {
    int used;
    long long pos;                          /* the control file's bytes this set has read */
    unsigned long long types[MAX_GPUS];     /* the registered event types, by GPU index */
};

static struct nvmlEventSet_st event_sets[MAX_EVENT_SETS];

static const char *control_file(void) {
    if (S.events[0]) return S.events;
    const char *env = getenv("NFD_MOCK_NVML_EVENTS");
    return env && *env ? env : NULL;
}

static long long file_size(const char *path) {
    struct stat st;
    return path && stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static struct nvmlEventSet_st *set_of(nvmlEventSet_t set) {
    struct nvmlEventSet_st *p = set.handle;
    if (p < event_sets || p >= event_sets + MAX_EVENT_SETS) return NULL;
    return __atomic_load_n(&p->used, __ATOMIC_ACQUIRE) ? p : NULL;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *types) {
    DEVICE("nvmlDeviceGetSupportedEventTypes", device, d);
    NOT_NULL(types);
    FULL_GPU(d);
    *types = SUPPORTED_EVENTS;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    ENTER();
    NOT_NULL(set);
    nvmlReturn_t r = fault("nvmlEventSetCreate", -1);
    if (r != NVML_SUCCESS) return r;
    for (int i = 0; i < MAX_EVENT_SETS; i++) {
        int unused = 0;
        if (__atomic_compare_exchange_n(&event_sets[i].used, &unused, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            struct nvmlEventSet_st *s = &event_sets[i];
            memset(s->types, 0, sizeof s->types);
            s->pos = file_size(control_file()); /* what is there already happened before */
            __atomic_store_n(&s->used, 1, __ATOMIC_RELEASE);
            set->handle = s;
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_MEMORY;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types, nvmlEventSet_t set) {
    DEVICE("nvmlDeviceRegisterEvents", device, d);
    FULL_GPU(d);
    struct nvmlEventSet_st *s = set_of(set);
    if (!s) return NVML_ERROR_INVALID_ARGUMENT;
    if (types & ~(unsigned long long)SUPPORTED_EVENTS) return NVML_ERROR_NOT_SUPPORTED;
    s->types[d->index] |= types;
    /* a test waits for this line before it injects: an event set sees only later events */
    fprintf(stderr, "mock NVML: event set %d: GPU %d (%s) registered for events 0x%llx\n", (int)(s - event_sets),
            d->index, d->uuid, types);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    ENTER();
    struct nvmlEventSet_st *s = set_of(set);
    if (!s) return NVML_ERROR_INVALID_ARGUMENT;
    __atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
    return NVML_SUCCESS;
}

static int event_type(const char *name, unsigned long long *type) {
    static const struct { const char *name; unsigned long long type; } names[] = {
        {"xid", nvmlEventTypeXidCriticalError}, {"sbe", nvmlEventTypeSingleBitEccError},
        {"dbe", nvmlEventTypeDoubleBitEccError}, {"pstate", nvmlEventTypePState}, {"clock", nvmlEventTypeClock},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) {
            *type = names[i].type;
            return 0;
        }
    char *end;
    *type = strtoull(name, &end, 0);
    return *name && !*end && *type ? 0 : -1;
}

/* the GPU an event's DEVICE field names, and for a MIG device its instance ids */
static struct nvmlDevice_st *event_device(const char *name, unsigned int *gi, unsigned int *ci) {
    char *end;
    long index = strtol(name, &end, 10);
    if (*name && !*end) return index >= 0 && index < S.ngpus ? &S.gpus[index] : NULL;
    for (int i = 0; i < S.ngpus; i++)
        if (!strcmp(S.gpus[i].uuid, name)) return &S.gpus[i];
    for (int i = 0; i < S.nmigs; i++)
        if (!strcmp(S.migs[i].uuid, name)) {
            *gi = S.migs[i].gi_id;
            *ci = S.migs[i].ci_id;
            return S.migs[i].parent;
        }
    return NULL;
}

/* 1: the line is an event for this set, in *data; 0: passed over */
static int parse_event(struct nvmlEventSet_st *s, char *line, const char *path, nvmlEventData_t *data) {
    char *f[6];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t\r\n", &save); t && n < 6; t = strtok_r(NULL, " \t\r\n", &save))
        f[n++] = t;
    if (n == 0 || f[0][0] == '#') return 0;
    unsigned long long type;
    unsigned int gi = 0xFFFFFFFFu, ci = 0xFFFFFFFFu;
    struct nvmlDevice_st *g = n >= 2 && event_type(f[0], &type) == 0 ? event_device(f[1], &gi, &ci) : NULL;
    if (!g || n > 5 || n == 4) {
        fprintf(stderr, "mock NVML: %s: bad event line (TYPE DEVICE [DATA [GI CI]]): %s%s%s\n", path, f[0],
                n > 1 ? " " : "", n > 1 ? f[1] : "");
        return 0;
    }
    if (!(s->types[g->index] & type)) return 0;
    memset(data, 0, sizeof *data);
    data->device.handle = g;
    data->eventType = type;
    data->eventData = n >= 3 ? strtoull(f[2], NULL, 0) : 0;
    data->gpuInstanceId = n == 5 ? (unsigned int)strtoul(f[3], NULL, 0) : gi;
    data->computeInstanceId = n == 5 ? (unsigned int)strtoul(f[4], NULL, 0) : ci;
    return 1;
}

/* the next event for this set in the control file (1), or none yet (0) */
static int next_event(struct nvmlEventSet_st *s, nvmlEventData_t *data) {
    const char *path = control_file();
    if (!path) return 0;
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    if (file_size(path) < s->pos) s->pos = 0; /* truncated: a new file, read from its start */
    int found = 0;
    char line[1024];
    if (fseeko(fp, (off_t)s->pos, SEEK_SET) == 0) {
        while (!found && fgets(line, sizeof line, fp)) {
            size_t len = strlen(line);
            if (len == 0 || line[len - 1] != '\n') break; /* not complete yet */
            s->pos += (long long)len;
            found = parse_event(s, line, path, data);
        }
    }
    fclose(fp);
    return found;
}

static nvmlReturn_t event_wait(const char *call, nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms) {
    ENTER();
    struct nvmlEventSet_st *s = set_of(set);
    if (!s) return NVML_ERROR_INVALID_ARGUMENT;
    NOT_NULL(data);
    nvmlReturn_t r = fault(call, -1);
    if (r != NVML_SUCCESS) return r;
    struct timespec now, deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    for (;;) {
        if (next_event(s, data)) return NVML_SUCCESS;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long left_ns = (long long)(deadline.tv_sec - now.tv_sec) * 1000000000LL + (deadline.tv_nsec - now.tv_nsec);
        if (left_ns <= 0) return NVML_ERROR_TIMEOUT;
        struct timespec nap = {0, left_ns < 10000000LL ? (long)left_ns : 10000000L};
        nanosleep(&nap, NULL);
    }
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t s, nvmlEventData_t *d, unsigned int t) {
    return event_wait("nvmlEventSetWait", s, d, t);
}
EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t s, nvmlEventData_t *d, unsigned int t) {
    return event_wait("nvmlEventSetWait", s, d, t);
}
