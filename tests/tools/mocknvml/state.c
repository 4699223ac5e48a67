/*
 * Runtime state of the mock libnvidia-ml.so.1: GPU faults that come and go while a process keeps
 * NVML initialised. The data file is read once, at the first nvmlInit of a process (again only
 * after a full nvmlShutdown), and nfd-worker never shuts NVML down fully while its XID watcher
 * holds a reference; a fault injected into a running worker (tests/e2e/test_node_gpu_health.py)
 * comes through this file instead.
 *
 * The state file is named by the data file's "state" record, else by $NFD_MOCK_NVML_STATE
 * (neither, or no such file: the data file's answers). One record a line, fields separated by
 * tabs, INDEX a GPU's index ('#' lines and blank lines are skipped):
 *
 *   health  INDEX  ECC  PAGESPENDING  REMAPCORR  REMAPUNC  REMAPPENDING  REMAPFAILED  CLOCKS
 *                  PCIEWIDTH  PCIEMAXWIDTH  PCIEGEN  PCIEMAXGEN  NVLINKS     (health.c's record)
 *   fabric  INDEX  STATE  STATUS  CLIQUE  UUIDHEX32  HEALTHMASK            (the data file's record)
 *   fabric  INDEX  !                                                       (NOT_SUPPORTED)
 *   lost    INDEX                           (every call on the GPU answers NVML_ERROR_GPU_IS_LOST)
 *
 * The file is looked at (stat: inode, size, modification and change times) where a caller starts
 * with GPUs: nvmlDeviceGetCount and the nvmlDeviceGetHandleBy* calls, so every read of one pass
 * over the GPUs sees one state. When it changed, or went, every GPU goes back to what the data
 * file says and the file's records apply on top: a record left out is a fault cleared. A writer
 * replaces the file whole (write a temporary file, rename it over): tests/support/mocknvml.py's
 * set_state. A malformed record is reported on stderr and passed over.
 */
#include "mocknvml.h"

#include <pthread.h>
#include <sys/stat.h>

typedef struct {
    int has;
    unsigned int state, status, clique, mask;
    unsigned char uuid[NVML_GPU_FABRIC_UUID_LEN];
} fabric_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fabric_t base_fabric[MAX_GPUS]; /* the data file's, restored before the state file applies */
static int lost[MAX_GPUS];
static struct {
    int valid; /* 0: look again (after a load) */
    int exists;
    long long ino, size, mtime_s, mtime_ns, ctime_s, ctime_ns;
} seen;

void mock_state_lock(void) { pthread_mutex_lock(&lock); }
void mock_state_unlock(void) { pthread_mutex_unlock(&lock); }

static const char *state_file(void) {
    if (S.state[0]) return S.state;
    const char *env = getenv("NFD_MOCK_NVML_STATE");
    return env && *env ? env : NULL;
}

/* the data file was (re)loaded: its answers are the base; the state file applies again */
void mock_state_loaded(void) {
    pthread_mutex_lock(&lock);
    memset(lost, 0, sizeof lost);
    memset(base_fabric, 0, sizeof base_fabric);
    for (int i = 0; i < S.ngpus && i < MAX_GPUS; i++) {
        struct nvmlDevice_st *g = &S.gpus[i];
        fabric_t *b = &base_fabric[i];
        b->has = g->has_fabric;
        b->state = g->fabric_state;
        b->status = g->fabric_status;
        b->clique = g->fabric_clique;
        b->mask = g->fabric_health_mask;
        memcpy(b->uuid, g->fabric_uuid, sizeof b->uuid);
    }
    mock_health_snapshot();
    seen.valid = 0;
    pthread_mutex_unlock(&lock);
}

int mock_state_lost(int index) {
    return index >= 0 && index < MAX_GPUS && __atomic_load_n(&lost[index], __ATOMIC_ACQUIRE);
}

static void restore(void) {
    for (int i = 0; i < S.ngpus && i < MAX_GPUS; i++) {
        struct nvmlDevice_st *g = &S.gpus[i];
        const fabric_t *b = &base_fabric[i];
        g->has_fabric = b->has;
        g->fabric_state = b->state;
        g->fabric_status = b->status;
        g->fabric_clique = b->clique;
        g->fabric_health_mask = b->mask;
        memcpy(g->fabric_uuid, b->uuid, sizeof b->uuid);
        __atomic_store_n(&lost[i], 0, __ATOMIC_RELEASE);
    }
    mock_health_restore();
}

static int apply(char **f, int n) {
    if (n < 2) return -1;
    char *end;
    long index = strtol(f[1], &end, 10);
    if (*end || index < 0 || index >= S.ngpus) return -1;
    struct nvmlDevice_st *g = &S.gpus[index];
    if (!strcmp(f[0], "health")) return mock_health_record((int)index, f + 1, n - 1);
    if (!strcmp(f[0], "lost") && n == 2) {
        __atomic_store_n(&lost[index], 1, __ATOMIC_RELEASE);
        return 0;
    }
    if (!strcmp(f[0], "fabric") && n == 3 && !strcmp(f[2], "!")) {
        g->has_fabric = 0;
        return 0;
    }
    if (!strcmp(f[0], "fabric")) return mock_fabric_record(g, f + 1, n - 1);
    return -1;
}

static void read_state(const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) return; /* gone between stat and open: the data file's answers */
    char line[4096];
    int lineno = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        char *f[32];
        int n = mock_split_tabs(line, f, 32);
        if (apply(f, n) != 0) fprintf(stderr, "mock NVML: %s:%d: bad state record %s\n", path, lineno, f[0]);
    }
    fclose(fp);
}

/* look at the state file; apply it if it changed since the last look */
void mock_state_refresh(void) {
    const char *path = state_file();
    if (!path) return;
    struct stat st;
    int exists = stat(path, &st) == 0;
    pthread_mutex_lock(&lock);
    int same = seen.valid && seen.exists == exists &&
               (!exists || (seen.ino == (long long)st.st_ino && seen.size == (long long)st.st_size &&
                            seen.mtime_s == (long long)st.st_mtim.tv_sec && seen.mtime_ns == st.st_mtim.tv_nsec &&
                            seen.ctime_s == (long long)st.st_ctim.tv_sec && seen.ctime_ns == st.st_ctim.tv_nsec));
    if (!same) {
        seen.valid = 1;
        seen.exists = exists;
        if (exists) {
            seen.ino = (long long)st.st_ino;
            seen.size = (long long)st.st_size;
            seen.mtime_s = (long long)st.st_mtim.tv_sec;
            seen.mtime_ns = st.st_mtim.tv_nsec;
            seen.ctime_s = (long long)st.st_ctim.tv_sec;
            seen.ctime_ns = st.st_ctim.tv_nsec;
        }
        restore();
        if (exists) read_state(path);
    }
    pthread_mutex_unlock(&lock);
}
