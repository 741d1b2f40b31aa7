/*
 * A fake libnvidia-ml.so.1 for tests on machines without a GPU.
 *
 * Build:  gcc -shared -fPIC -O1 -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 fake_nvml.c
 *
 * The GPUs come from the JSON file named by FAKE_NVML_CONFIG. The file is stat()ed on every call
 * and re-parsed when its inode, size or mtime changed, so a test may rewrite it (ideally by atomic
 * rename) while a program runs. A file that does not parse keeps the last good configuration.
 *
 *   {"driver_version": "550.54.15", "cuda_version": 12040,
 *    "gpus": [{"uuid": "GPU-...", "name": "...", "memory_total": N, "memory_used": N,
 *              "memory_reserved": N, "pci_bus_id": "00000000:07:00.0", "pci_device_id": N,
 *              "cc_major": 8, "cc_minor": 0, "utilization": 37, "memory_utilization": 5,
 *              "temperature": 45, "power_mw": 250000, "lost": false, "error": false,
 *              "nvswitch_links": 0, "processes": [{"pid": 1234, "used_memory": N}]}],
 *    "topology": [[0, 10], [10, 0]],   NVML_TOPOLOGY_* levels, default SYSTEM (50)
 *    "p2p": [[1, 1], [1, 1]],          1: P2P OK, 0: not supported; default OK up to HOSTBRIDGE
 *    "nvlink": [[0, 4], [4, 0]]}       active NVLinks between GPU pairs (optional)
 *
 * "lost": true makes per-device calls return NVML_ERROR_GPU_IS_LOST, "error": true
 * NVML_ERROR_UNKNOWN. A GPU removed from "gpus" leaves the count; handles to it then return
 * NVML_ERROR_GPU_IS_LOST. Handles name a GPU by UUID, so they survive reordering.
 *
 * Struct layouts follow nvml.h as used by nvidia-ml-py 13.615.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef int nvmlReturn_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

enum { TOPO_HOSTBRIDGE = 30, TOPO_SYSTEM = 50 };
enum { P2P_OK = 0, P2P_IOH_TOPOLOGY_NOT_SUPPORTED = 3, P2P_NOT_SUPPORTED = 5 };

#define MAX_GPUS 64
#define MAX_PROCS 64
#define MAX_LINKS 18
#define MAX_SLOTS 256
#define STR_LEN 96

/* ---- public structs (nvml.h) ---- */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t; /* 68 bytes */

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t; /* 40 bytes, version 2 */

typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t; /* 24 bytes (nvmlProcessInfo_v2_t) */

typedef struct {
    unsigned int version;
    unsigned int sensorType;
    int temperature;
} nvmlTemperature_t; /* 12 bytes, version 1 */

#define STRUCT_VERSION(type, ver) ((unsigned int)(sizeof(type) | ((ver) << 24U)))

typedef struct {
    char uuid[STR_LEN];
} slot_t;
typedef slot_t *nvmlDevice_t;

/* ---- configuration ---- */
typedef struct {
    unsigned int pid;
    unsigned long long mem;
} fproc_t;

typedef struct {
    char uuid[STR_LEN], name[STR_LEN], pci[32];
    unsigned long long mem_total, mem_used, mem_reserved;
    unsigned int pci_device_id, util, mem_util, power_mw;
    int cc_major, cc_minor, temp, lost, error, nvswitch_links, nproc;
    fproc_t procs[MAX_PROCS];
} fgpu_t;

typedef struct {
    char driver[80];
    int cuda, ngpu, has_topo, has_p2p;
    fgpu_t gpus[MAX_GPUS];
    int topo[MAX_GPUS][MAX_GPUS], p2p[MAX_GPUS][MAX_GPUS], nvlink[MAX_GPUS][MAX_GPUS];
} fconfig_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fconfig_t cfg, scratch;
static int cfg_loaded, refcount;
static struct stat cfg_stat;
static slot_t slots[MAX_SLOTS];
static int nslots;

/* ---- a small tolerant JSON parser into a node tree ---- */
enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

typedef struct {
    int type, child, next; /* child/next: node indices, -1 for none */
    const char *key;       /* member name inside an object */
    const char *str;
    double num;
    long long inum;
} jnode_t;

typedef struct {
    const char *p, *end;
    jnode_t *nodes;
    int n, cap;
    char *strs;
    size_t slen;
} jparser_t;

static void j_ws(jparser_t *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int j_new(jparser_t *j, int type) {
    if (j->n == j->cap) {
        int cap = j->cap ? j->cap * 2 : 256;
        jnode_t *nodes = realloc(j->nodes, (size_t)cap * sizeof(jnode_t));
        if (!nodes) return -1;
        j->nodes = nodes;
        j->cap = cap;
    }
    jnode_t *n = &j->nodes[j->n];
    memset(n, 0, sizeof(*n));
    n->type = type;
    n->child = n->next = -1;
    return j->n++;
}

/* Reads a string literal into the string arena (never longer than the input). */
static const char *j_string(jparser_t *j) {
    if (j->p >= j->end || *j->p != '"') return NULL;
    j->p++;
    char *out = j->strs + j->slen, *w = out;
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if (c == '\\' && j->p < j->end) {
            c = *j->p++;
            switch (c) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': j->p += (j->end - j->p >= 4) ? 4 : 0; c = '?'; break;
            default: break; /* \" \\ \/ */
            }
        }
        *w++ = c;
    }
    if (j->p >= j->end) return NULL;
    j->p++;
    *w++ = '\0';
    j->slen += (size_t)(w - out);
    return out;
}

static int j_value(jparser_t *j, int depth);

static int j_container(jparser_t *j, int type, int depth) {
    int self = j_new(j, type), last = -1;
    char close = type == J_OBJ ? '}' : ']';
    if (self < 0) return -1;
    j->p++;
    for (;;) {
        j_ws(j);
        if (j->p >= j->end) return -1;
        if (*j->p == close) { j->p++; return self; }
        if (*j->p == ',') { j->p++; continue; } /* tolerant: stray or trailing commas */
        const char *key = NULL;
        if (type == J_OBJ) {
            if (!(key = j_string(j))) return -1;
            j_ws(j);
            if (j->p >= j->end || *j->p != ':') return -1;
            j->p++;
        }
        int child = j_value(j, depth + 1);
        if (child < 0) return -1;
        j->nodes[child].key = key;
        if (last < 0) j->nodes[self].child = child;
        else j->nodes[last].next = child;
        last = child;
    }
}

static int j_value(jparser_t *j, int depth) {
    if (depth > 32) return -1;
    j_ws(j);
    if (j->p >= j->end) return -1;
    char c = *j->p;
    if (c == '{') return j_container(j, J_OBJ, depth);
    if (c == '[') return j_container(j, J_ARR, depth);
    if (c == '"') {
        const char *s = j_string(j);
        int n = s ? j_new(j, J_STR) : -1;
        if (n >= 0) j->nodes[n].str = s;
        return n;
    }
    static const char *words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(words[i]);
        if ((size_t)(j->end - j->p) >= len && !strncmp(j->p, words[i], len)) {
            int n = j_new(j, i == 2 ? J_NULL : J_BOOL);
            if (n >= 0) j->nodes[n].inum = j->nodes[n].num = (i == 0);
            j->p += len;
            return n;
        }
    }
    char *stop;
    double d = strtod(j->p, &stop);
    if (stop == j->p) return -1;
    int n = j_new(j, J_NUM);
    if (n < 0) return -1;
    j->nodes[n].num = d;
    j->nodes[n].inum = (long long)d;
    int integral = 1;
    for (const char *q = j->p; q < stop; q++)
        if (*q == '.' || *q == 'e' || *q == 'E') integral = 0;
    if (integral) j->nodes[n].inum = strtoll(j->p, NULL, 10);
    j->p = stop;
    return n;
}

static const jnode_t *j_at(const jparser_t *j, int i) { return i >= 0 ? &j->nodes[i] : NULL; }

static const jnode_t *j_get(const jparser_t *j, const jnode_t *obj, const char *key) {
    if (!obj || obj->type != J_OBJ) return NULL;
    for (const jnode_t *c = j_at(j, obj->child); c; c = j_at(j, c->next))
        if (c->key && !strcmp(c->key, key)) return c;
    return NULL;
}

static long long j_int(const jparser_t *j, const jnode_t *obj, const char *key, long long dflt) {
    const jnode_t *v = j_get(j, obj, key);
    return v && (v->type == J_NUM || v->type == J_BOOL) ? v->inum : dflt;
}

static void j_str(const jparser_t *j, const jnode_t *obj, const char *key, char *out, size_t n) {
    const jnode_t *v = j_get(j, obj, key);
    if (v && v->type == J_STR) snprintf(out, n, "%s", v->str);
}

static void j_matrix(const jparser_t *j, const jnode_t *m, int out[MAX_GPUS][MAX_GPUS]) {
    int r = 0;
    for (const jnode_t *row = j_at(j, m ? m->child : -1); row && r < MAX_GPUS;
         row = j_at(j, row->next), r++) {
        int c = 0;
        for (const jnode_t *v = j_at(j, row->child); v && c < MAX_GPUS; v = j_at(j, v->next), c++)
            out[r][c] = (int)v->inum;
    }
}

static int parse_config(const char *text, size_t len, fconfig_t *out) {
    jparser_t j = {text, text + len, NULL, 0, 0, malloc(len + 1), 0};
    int ok = 0;
    if (!j.strs) return 0;
    int root = j_value(&j, 0);
    const jnode_t *r = root >= 0 ? &j.nodes[root] : NULL;
    if (r && r->type == J_OBJ) {
        memset(out, 0, sizeof(*out));
        snprintf(out->driver, sizeof(out->driver), "550.54.15");
        j_str(&j, r, "driver_version", out->driver, sizeof(out->driver));
        out->cuda = (int)j_int(&j, r, "cuda_version", 12040);
        const jnode_t *gpus = j_get(&j, r, "gpus");
        for (const jnode_t *g = j_at(&j, gpus ? gpus->child : -1); g && out->ngpu < MAX_GPUS;
             g = j_at(&j, g->next)) {
            fgpu_t *f = &out->gpus[out->ngpu];
            snprintf(f->uuid, sizeof(f->uuid), "GPU-fake-%d", out->ngpu);
            snprintf(f->name, sizeof(f->name), "Fake GPU");
            snprintf(f->pci, sizeof(f->pci), "00000000:%02X:00.0", out->ngpu + 1);
            j_str(&j, g, "uuid", f->uuid, sizeof(f->uuid));
            j_str(&j, g, "name", f->name, sizeof(f->name));
            j_str(&j, g, "pci_bus_id", f->pci, sizeof(f->pci));
            f->mem_total = (unsigned long long)j_int(&j, g, "memory_total", 0);
            f->mem_used = (unsigned long long)j_int(&j, g, "memory_used", 0);
            f->mem_reserved = (unsigned long long)j_int(&j, g, "memory_reserved", 0);
            f->pci_device_id = (unsigned int)j_int(&j, g, "pci_device_id", 0x20B510DE);
            f->cc_major = (int)j_int(&j, g, "cc_major", 8);
            f->cc_minor = (int)j_int(&j, g, "cc_minor", 0);
            f->util = (unsigned int)j_int(&j, g, "utilization", 0);
            f->mem_util = (unsigned int)j_int(&j, g, "memory_utilization", 0);
            f->temp = (int)j_int(&j, g, "temperature", 40);
            f->power_mw = (unsigned int)j_int(&j, g, "power_mw", 0);
            f->lost = (int)j_int(&j, g, "lost", 0);
            f->error = (int)j_int(&j, g, "error", 0);
            f->nvswitch_links = (int)j_int(&j, g, "nvswitch_links", 0);
            const jnode_t *procs = j_get(&j, g, "processes");
            for (const jnode_t *p = j_at(&j, procs ? procs->child : -1); p && f->nproc < MAX_PROCS;
                 p = j_at(&j, p->next)) {
                f->procs[f->nproc].pid = (unsigned int)j_int(&j, p, "pid", 0);
                f->procs[f->nproc].mem = (unsigned long long)j_int(&j, p, "used_memory", 0);
                f->nproc++;
            }
            out->ngpu++;
        }
        const jnode_t *topo = j_get(&j, r, "topology"), *p2p = j_get(&j, r, "p2p");
        out->has_topo = topo && topo->type == J_ARR;
        out->has_p2p = p2p && p2p->type == J_ARR;
        j_matrix(&j, topo, out->topo);
        j_matrix(&j, p2p, out->p2p);
        j_matrix(&j, j_get(&j, r, "nvlink"), out->nvlink);
        ok = 1;
    }
    free(j.nodes);
    free(j.strs);
    return ok;
}

/* Re-reads the config when the file changed. Caller holds the lock. Returns 0 when there is no
 * config file (nvmlInit then fails as without a driver); device calls keep the last good one. */
static int refresh(void) {
    const char *path = getenv("FAKE_NVML_CONFIG");
    struct stat st;
    if (!path || stat(path, &st) != 0) return 0;
    if (cfg_loaded && st.st_ino == cfg_stat.st_ino && st.st_size == cfg_stat.st_size &&
        st.st_mtim.tv_sec == cfg_stat.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == cfg_stat.st_mtim.tv_nsec)
        return 1;
    FILE *f = fopen(path, "rb");
    if (!f) return cfg_loaded;
    char *buf = malloc((size_t)st.st_size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (buf && n == (size_t)st.st_size && parse_config(buf, n, &scratch)) {
        memcpy(&cfg, &scratch, sizeof(cfg));
        cfg_stat = st;
        cfg_loaded = 1;
    }
    free(buf);
    return cfg_loaded;
}

static int find_gpu(const char *uuid) {
    for (int i = 0; i < cfg.ngpu; i++)
        if (!strcmp(cfg.gpus[i].uuid, uuid)) return i;
    return -1;
}

static nvmlDevice_t slot_for(const char *uuid) {
    for (int i = 0; i < nslots; i++)
        if (!strcmp(slots[i].uuid, uuid)) return &slots[i];
    if (nslots == MAX_SLOTS) return NULL;
    snprintf(slots[nslots].uuid, STR_LEN, "%s", uuid);
    return &slots[nslots++];
}

/* Resolves a handle to its GPU's position in cfg. Caller holds the lock. */
static nvmlReturn_t resolve(nvmlDevice_t dev, int *index) {
    if (!refcount) return NVML_ERROR_UNINITIALIZED;
    refresh();
    if (!dev || dev < slots || dev >= slots + nslots) return NVML_ERROR_INVALID_ARGUMENT;
    int i = find_gpu(dev->uuid);
    if (i < 0 || cfg.gpus[i].lost) return NVML_ERROR_GPU_IS_LOST;
    if (cfg.gpus[i].error) return NVML_ERROR_UNKNOWN;
    *index = i;
    return NVML_SUCCESS;
}

#define LOCKED(expr)                  \
    do {                              \
        pthread_mutex_lock(&lock);    \
        nvmlReturn_t rc_ = (expr);    \
        pthread_mutex_unlock(&lock);  \
        return rc_;                   \
    } while (0)

/* Body helpers run with the lock held and `g` resolved. */
#define DEVICE_CALL(dev, body)                        \
    do {                                              \
        int i_;                                       \
        pthread_mutex_lock(&lock);                    \
        nvmlReturn_t rc_ = resolve((dev), &i_);       \
        if (rc_ == NVML_SUCCESS) {                    \
            const fgpu_t *g = &cfg.gpus[i_];          \
            (void)g;                                  \
            body                                      \
        }                                             \
        pthread_mutex_unlock(&lock);                  \
        return rc_;                                   \
    } while (0)

static nvmlReturn_t copy_str(char *out, unsigned int len, const char *s) {
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

/* ---- init, errors, system ---- */
static nvmlReturn_t do_init(void) {
    if (!refresh()) return NVML_ERROR_DRIVER_NOT_LOADED;
    refcount++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; LOCKED(do_init()); }
nvmlReturn_t nvmlInit_v2(void) { LOCKED(do_init()); }
nvmlReturn_t nvmlInit(void) { LOCKED(do_init()); }

static nvmlReturn_t do_shutdown(void) {
    if (!refcount) return NVML_ERROR_UNINITIALIZED;
    refcount--;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) { LOCKED(do_shutdown()); }

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

#define SYSTEM_CALL(body)                                          \
    do {                                                           \
        pthread_mutex_lock(&lock);                                 \
        nvmlReturn_t rc_ = NVML_ERROR_UNINITIALIZED;               \
        if (refcount) {                                            \
            refresh();                                             \
            rc_ = NVML_SUCCESS;                                    \
            body                                                   \
        }                                                          \
        pthread_mutex_unlock(&lock);                               \
        return rc_;                                                \
    } while (0)

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    SYSTEM_CALL(rc_ = copy_str(version, length, cfg.driver););
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    SYSTEM_CALL(char buf[96]; snprintf(buf, sizeof(buf), "%d.%s", cfg.cuda / 1000, cfg.driver);
                rc_ = copy_str(version, length, buf););
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    SYSTEM_CALL(if (!v) rc_ = NVML_ERROR_INVALID_ARGUMENT; else *v = cfg.cuda;);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

/* ---- enumeration ---- */
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    SYSTEM_CALL(if (!count) rc_ = NVML_ERROR_INVALID_ARGUMENT; else *count = (unsigned)cfg.ngpu;);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

static nvmlReturn_t handle_of(int i, nvmlDevice_t *device) {
    if (cfg.gpus[i].lost) return NVML_ERROR_GPU_IS_LOST;
    if (cfg.gpus[i].error) return NVML_ERROR_UNKNOWN;
    return (*device = slot_for(cfg.gpus[i].uuid)) ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    SYSTEM_CALL(if (!device || index >= (unsigned)cfg.ngpu) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else rc_ = handle_of((int)index, device););
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    SYSTEM_CALL(int i = uuid ? find_gpu(uuid) : -1;
                if (!device || !uuid) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else if (i < 0) rc_ = NVML_ERROR_NOT_FOUND;
                else rc_ = handle_of(i, device););
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *index) {
    DEVICE_CALL(dev, if (!index) rc_ = NVML_ERROR_INVALID_ARGUMENT; else *index = (unsigned)i_;);
}

/* ---- static facts ---- */
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length) {
    DEVICE_CALL(dev, rc_ = copy_str(name, length, g->name););
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length) {
    DEVICE_CALL(dev, rc_ = copy_str(uuid, length, g->uuid););
}

static void fill_pci(const char *bus_id, unsigned int device_id, nvmlPciInfo_t *pci) {
    unsigned int domain = 0, bus = 0, devno = 0, fn = 0;
    memset(pci, 0, sizeof(*pci));
    sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &devno, &fn);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = devno;
    pci->pciDeviceId = device_id;
    pci->pciSubSystemId = 0x145F10DE;
    snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.%X", domain, bus, devno, fn);
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X", domain & 0xFFFF,
             bus & 0xFF, devno & 0xFF, fn & 0xF);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci) {
    DEVICE_CALL(dev, if (!pci) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else fill_pci(g->pci, g->pci_device_id, pci););
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor) {
    DEVICE_CALL(dev, if (!major || !minor) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else { *major = g->cc_major; *minor = g->cc_minor; });
}

/* ---- telemetry ---- */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m) {
    DEVICE_CALL(dev, if (!m) rc_ = NVML_ERROR_INVALID_ARGUMENT; else {
        m->total = g->mem_total;
        m->used = g->mem_used + g->mem_reserved; /* v1 counts reserved memory as used */
        m->free = m->total > m->used ? m->total - m->used : 0;
    });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m) {
    DEVICE_CALL(dev, if (!m) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else if (m->version != STRUCT_VERSION(nvmlMemory_v2_t, 2U))
                    rc_ = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
                else {
                    m->total = g->mem_total;
                    m->reserved = g->mem_reserved;
                    m->used = g->mem_used;
                    unsigned long long taken = g->mem_used + g->mem_reserved;
                    m->free = g->mem_total > taken ? g->mem_total - taken : 0;
                });
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u) {
    DEVICE_CALL(dev, if (!u) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else { u->gpu = g->util; u->memory = g->mem_util; });
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, unsigned int sensor, unsigned int *temp) {
    DEVICE_CALL(dev, if (!temp || sensor != 0) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else *temp = (unsigned)g->temp;);
}

nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t dev, nvmlTemperature_t *t) {
    DEVICE_CALL(dev, if (!t || t->sensorType != 0) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else if (t->version != STRUCT_VERSION(nvmlTemperature_t, 1U))
                    rc_ = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
                else t->temperature = g->temp;);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *power) {
    DEVICE_CALL(dev, if (!power) rc_ = NVML_ERROR_INVALID_ARGUMENT; else *power = g->power_mw;);
}

/* Two-call protocol: with too small a buffer, *count gets the needed size. */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
                                                     nvmlProcessInfo_t *infos) {
    DEVICE_CALL(dev, if (!count) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else if (*count < (unsigned)g->nproc || (!infos && g->nproc)) {
                    *count = (unsigned)g->nproc;
                    rc_ = NVML_ERROR_INSUFFICIENT_SIZE;
                } else {
                    for (int k = 0; k < g->nproc; k++) {
                        infos[k].pid = g->procs[k].pid;
                        infos[k].usedGpuMemory = g->procs[k].mem;
                        infos[k].gpuInstanceId = 0xFFFFFFFFU; /* no MIG */
                        infos[k].computeInstanceId = 0xFFFFFFFFU;
                    }
                    *count = (unsigned)g->nproc;
                });
}

/* ---- topology ---- */
static nvmlReturn_t resolve_pair(nvmlDevice_t a, nvmlDevice_t b, int *i, int *j) {
    nvmlReturn_t rc = resolve(a, i);
    return rc == NVML_SUCCESS ? resolve(b, j) : rc;
}

static int level_of(int i, int j) {
    return cfg.has_topo ? cfg.topo[i][j] : (i == j ? 0 : TOPO_SYSTEM);
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b,
                                                 unsigned int *level) {
    int i, j;
    pthread_mutex_lock(&lock);
    nvmlReturn_t rc = resolve_pair(a, b, &i, &j);
    if (rc == NVML_SUCCESS && !level) rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS) *level = (unsigned)level_of(i, j);
    pthread_mutex_unlock(&lock);
    return rc;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, unsigned int index,
                                    unsigned int *status) {
    int i, j;
    pthread_mutex_lock(&lock);
    nvmlReturn_t rc = resolve_pair(a, b, &i, &j);
    if (rc == NVML_SUCCESS && (!status || index > 6)) rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS) {
        if (cfg.has_p2p) *status = cfg.p2p[i][j] ? P2P_OK : P2P_NOT_SUPPORTED;
        else *status = level_of(i, j) <= TOPO_HOSTBRIDGE ? P2P_OK : P2P_IOH_TOPOLOGY_NOT_SUPPORTED;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Links of GPU i: first its direct links to GPUs in order, then its NVSwitch links.
 * Returns the remote GPU's position, -2 for a switch, -1 for an inactive link. */
static int link_remote(int i, unsigned int link) {
    unsigned int k = 0;
    for (int j = 0; j < cfg.ngpu; j++)
        for (int n = 0; n < cfg.nvlink[i][j]; n++, k++)
            if (k == link) return j;
    return link < k + (unsigned)cfg.gpus[i].nvswitch_links ? -2 : -1;
}

static int has_links(int i) {
    if (cfg.gpus[i].nvswitch_links > 0) return 1;
    for (int j = 0; j < cfg.ngpu; j++)
        if (cfg.nvlink[i][j] > 0) return 1;
    return 0;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link, unsigned int *active) {
    DEVICE_CALL(dev, if (!active || link >= MAX_LINKS) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else if (!has_links(i_)) rc_ = NVML_ERROR_NOT_SUPPORTED;
                else *active = link_remote(i_, link) != -1;);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned int link,
                                                 nvmlPciInfo_t *pci) {
    DEVICE_CALL(dev, int r = link < MAX_LINKS ? link_remote(i_, link) : -1;
                if (!pci || r == -1) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else if (r == -2) fill_pci("00000000:C1:00.0", 0x22A310DE, pci);
                else fill_pci(cfg.gpus[r].pci, cfg.gpus[r].pci_device_id, pci););
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t dev, unsigned int link,
                                                 unsigned int *type) {
    DEVICE_CALL(dev, int r = link < MAX_LINKS ? link_remote(i_, link) : -1;
                if (!type || r == -1) rc_ = NVML_ERROR_INVALID_ARGUMENT;
                else *type = r == -2 ? 2U : 0U;);
}
