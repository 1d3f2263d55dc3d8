/* NVML through dlopen with our own prototypes (layouts from the NVML API-13 header, checked on x86-64). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eco/power.h"

typedef int nvml_ret;
typedef struct nvml_device_st *nvml_device;

typedef union {
    double d;
    int si;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    unsigned short us;
} nvml_value;

typedef struct { /* nvmlFieldValue_t, 40 bytes */
    unsigned field_id, scope_id;
    long long timestamp, latency_us;
    int value_type, nvml_return;
    nvml_value value;
} nvml_field_value;

typedef struct { unsigned long long total, free, used; } nvml_memory;

typedef struct { /* nvmlPciInfo_t (v3) */
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci_info;

enum { NVML_SUCCESS = 0, NVML_ERROR_NOT_SUPPORTED = 3 };
enum { FI_POWER_AVERAGE = 185, FI_POWER_INSTANT = 186, SCOPE_GPU = 0, SCOPE_MEMORY = 2 };
enum { CLOCK_SM = 1, CLOCK_MEM = 2 };

#define NVML_FUNCTIONS(X)                                                                              \
    X(init, nvml_ret, (void), "nvmlInit_v2", 1)                                                        \
    X(shutdown, nvml_ret, (void), "nvmlShutdown", 1)                                                   \
    X(error_string, const char *, (nvml_ret), "nvmlErrorString", 1)                                   \
    X(handle_by_index, nvml_ret, (unsigned, nvml_device *), "nvmlDeviceGetHandleByIndex_v2", 1)        \
    X(total_energy, nvml_ret, (nvml_device, unsigned long long *), "nvmlDeviceGetTotalEnergyConsumption", 1) \
    X(field_values, nvml_ret, (nvml_device, int, nvml_field_value *), "nvmlDeviceGetFieldValues", 0)   \
    X(power_usage, nvml_ret, (nvml_device, unsigned *), "nvmlDeviceGetPowerUsage", 0)                  \
    X(name, nvml_ret, (nvml_device, char *, unsigned), "nvmlDeviceGetName", 0)                        \
    X(uuid, nvml_ret, (nvml_device, char *, unsigned), "nvmlDeviceGetUUID", 0)                        \
    X(serial, nvml_ret, (nvml_device, char *, unsigned), "nvmlDeviceGetSerial", 0)                    \
    X(vbios, nvml_ret, (nvml_device, char *, unsigned), "nvmlDeviceGetVbiosVersion", 0)               \
    X(pci_info, nvml_ret, (nvml_device, nvml_pci_info *), "nvmlDeviceGetPciInfo_v3", 0)               \
    X(driver_version, nvml_ret, (char *, unsigned), "nvmlSystemGetDriverVersion", 0)                  \
    X(nvml_version, nvml_ret, (char *, unsigned), "nvmlSystemGetNVMLVersion", 0)                      \
    X(cuda_version, nvml_ret, (int *), "nvmlSystemGetCudaDriverVersion_v2", 0)                        \
    X(architecture, nvml_ret, (nvml_device, unsigned *), "nvmlDeviceGetArchitecture", 0)             \
    X(memory_info, nvml_ret, (nvml_device, nvml_memory *), "nvmlDeviceGetMemoryInfo", 0)             \
    X(power_limit, nvml_ret, (nvml_device, unsigned *), "nvmlDeviceGetPowerManagementLimit", 0)      \
    X(power_limit_default, nvml_ret, (nvml_device, unsigned *), "nvmlDeviceGetPowerManagementDefaultLimit", 0) \
    X(power_limit_constraints, nvml_ret, (nvml_device, unsigned *, unsigned *),                       \
      "nvmlDeviceGetPowerManagementLimitConstraints", 0)                                              \
    X(power_limit_enforced, nvml_ret, (nvml_device, unsigned *), "nvmlDeviceGetEnforcedPowerLimit", 0) \
    X(clock_info, nvml_ret, (nvml_device, int, unsigned *), "nvmlDeviceGetClockInfo", 0)             \
    X(max_clock_info, nvml_ret, (nvml_device, int, unsigned *), "nvmlDeviceGetMaxClockInfo", 0)      \
    X(temperature, nvml_ret, (nvml_device, int, unsigned *), "nvmlDeviceGetTemperature", 0)          \
    X(pstate, nvml_ret, (nvml_device, int *), "nvmlDeviceGetPerformanceState", 0)                    \
    X(clock_events, nvml_ret, (nvml_device, unsigned long long *), "nvmlDeviceGetCurrentClocksEventReasons", 0) \
    X(clock_throttle, nvml_ret, (nvml_device, unsigned long long *), "nvmlDeviceGetCurrentClocksThrottleReasons", 0) \
    X(persistence, nvml_ret, (nvml_device, int *), "nvmlDeviceGetPersistenceMode", 0)                \
    X(ecc_mode, nvml_ret, (nvml_device, int *, int *), "nvmlDeviceGetEccMode", 0)                    \
    X(mig_mode, nvml_ret, (nvml_device, unsigned *, unsigned *), "nvmlDeviceGetMigMode", 0)

struct eco_nvml {
    void *lib;
    nvml_device dev;
    bool field_power_ok; /* one GetFieldValues call returns instant/average/memory power */
#define NVML_MEMBER(field, ret, args, sym, required) ret(*field) args;
    NVML_FUNCTIONS(NVML_MEMBER)
#undef NVML_MEMBER
};

double eco_monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *nvml_error(const eco_nvml *m, nvml_ret r)
{
    const char *s = m->error_string ? m->error_string(r) : NULL;
    return s ? s : "unknown NVML error";
}

static eco_err load_symbols(eco_nvml *m, const char *path)
{
    union { void *obj; void (*fn)(void); } cast; /* ISO C forbids object->function pointer casts */
#define NVML_LOAD(field, ret, args, sym, required)                                                     \
    cast.obj = dlsym(m->lib, sym);                                                                     \
    if (!cast.obj && required)                                                                         \
        return eco_fail(strstr(sym, "Energy") ? ECO_EUNSUPPORTED : ECO_EDEVICE,                        \
                        "%s: NVML symbol %s is missing%s", path, sym,                                  \
                        strstr(sym, "Energy") ? " (no total-energy counter: this driver/GPU cannot be measured)" : ""); \
    m->field = (ret(*) args)cast.fn;
    NVML_FUNCTIONS(NVML_LOAD)
#undef NVML_LOAD
    return ECO_OK;
}

eco_err eco_nvml_open(unsigned index, eco_nvml **out)
{
    const char *path = getenv("ECO_NVML_LIBRARY");
    if (!path || !*path) path = "libnvidia-ml.so.1";
    eco_nvml *m = calloc(1, sizeof *m);
    if (!m) return eco_fail(ECO_ENOMEM, "out of memory");
    m->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!m->lib) {
        const char *why = dlerror();
        free(m);
        return eco_fail(ECO_EDEVICE, "cannot load NVML (%s): %s; energy cannot be measured on this machine", path,
                        why ? why : "unknown error");
    }
    eco_err e = load_symbols(m, path);
    if (e) { dlclose(m->lib); free(m); return e; }
    nvml_ret r = m->init();
    if (r != NVML_SUCCESS) {
        e = eco_fail(ECO_EDEVICE, "nvmlInit_v2 failed: %s", nvml_error(m, r));
        dlclose(m->lib);
        free(m);
        return e;
    }
    r = m->handle_by_index(index, &m->dev);
    if (r != NVML_SUCCESS) {
        e = eco_fail(ECO_EDEVICE, "GPU %u: nvmlDeviceGetHandleByIndex_v2 failed: %s", index, nvml_error(m, r));
        eco_nvml_close(m);
        return e;
    }
    unsigned long long mj;
    r = m->total_energy(m->dev, &mj);
    if (r != NVML_SUCCESS) {
        e = eco_fail(r == NVML_ERROR_NOT_SUPPORTED ? ECO_EUNSUPPORTED : ECO_EDEVICE,
                     "GPU %u: the total-energy counter is unavailable (%s); refusing to estimate energy from polled power",
                     index, nvml_error(m, r));
        eco_nvml_close(m);
        return e;
    }
    eco_power_sample probe;
    m->field_power_ok = true;
    if (eco_nvml_sample(m, &probe) != ECO_OK || (isnan(probe.instant_w) && isnan(probe.average_w)))
        m->field_power_ok = false;
    *out = m;
    return ECO_OK;
}

void eco_nvml_close(eco_nvml *m)
{
    if (!m) return;
    if (m->shutdown) m->shutdown();
    if (m->lib) dlclose(m->lib);
    free(m);
}

eco_err eco_nvml_read_counter(eco_nvml *m, eco_counter_read *out)
{
    unsigned long long mj = 0;
    out->t_before_s = eco_monotonic_s();
    nvml_ret r = m->total_energy(m->dev, &mj);
    out->t_after_s = eco_monotonic_s();
    if (r != NVML_SUCCESS) return eco_fail(ECO_EDEVICE, "reading the energy counter failed: %s", nvml_error(m, r));
    out->energy_mj = mj;
    return ECO_OK;
}

/* The update fell between the previous read and this one, so that bracket bounds the edge time's error. A
 * bracket wider than three reads and EDGE_SLACK_S means the thread was preempted around the update (a loaded
 * host), and the stamp may be off by the preemption: such an edge is passed over for the next one (~100 ms
 * later); if no clean edge comes before the timeout, the narrowest one seen is taken. With a fake that stalls a
 * read 30 ms across every other update, stamps were up to 29.5 ms off before this and 2 ms after
 * (tests/unit/test_power.c). */
#define EDGE_SLACK_S 0.0005

eco_err eco_nvml_read_counter_edge(eco_nvml *m, double timeout_s, eco_counter_read *out)
{
    eco_counter_read prev, cur, narrowest;
    double narrowest_s = INFINITY;
    eco_err e = eco_nvml_read_counter(m, &prev);
    if (e) return e;
    double deadline = prev.t_after_s + timeout_s, read_s = prev.t_after_s - prev.t_before_s;
    do {
        if ((e = eco_nvml_read_counter(m, &cur))) return e;
        if (cur.energy_mj < prev.energy_mj)
            return eco_fail(ECO_EDEVICE, "energy counter went backwards (%llu -> %llu mJ): driver reloaded?",
                            (unsigned long long)prev.energy_mj, (unsigned long long)cur.energy_mj);
        if (cur.t_after_s - cur.t_before_s < read_s) read_s = cur.t_after_s - cur.t_before_s;
        if (cur.energy_mj != prev.energy_mj) {
            double bracket_s = cur.t_after_s - prev.t_before_s;
            if (bracket_s <= 3 * read_s + EDGE_SLACK_S) {
                *out = cur;
                return ECO_OK;
            }
            if (bracket_s < narrowest_s) narrowest = cur, narrowest_s = bracket_s;
        }
        prev = cur;
    } while (cur.t_after_s < deadline);
    if (isfinite(narrowest_s)) {
        *out = narrowest;
        return ECO_OK;
    }
    return eco_fail(ECO_EDEVICE, "energy counter did not change within %.3f s", timeout_s);
}

static double field_w(const nvml_field_value *f)
{
    if (f->nvml_return != NVML_SUCCESS) return NAN;
    switch (f->value_type) {
    case 1: return f->value.ui / 1000.0;
    case 2: return (double)f->value.ul / 1000.0;
    case 3: return (double)f->value.ull / 1000.0;
    case 0: return f->value.d / 1000.0;
    default: return NAN;
    }
}

eco_err eco_nvml_sample(eco_nvml *m, eco_power_sample *out)
{
    out->t_s = eco_monotonic_s();
    out->instant_w = out->average_w = out->memory_w = NAN;
    if (m->field_values && m->field_power_ok) {
        nvml_field_value f[3];
        memset(f, 0, sizeof f);
        f[0].field_id = FI_POWER_INSTANT; f[0].scope_id = SCOPE_GPU;
        f[1].field_id = FI_POWER_AVERAGE; f[1].scope_id = SCOPE_GPU;
        f[2].field_id = FI_POWER_AVERAGE; f[2].scope_id = SCOPE_MEMORY;
        if (m->field_values(m->dev, 3, f) == NVML_SUCCESS) {
            out->instant_w = field_w(&f[0]);
            out->average_w = field_w(&f[1]);
            out->memory_w = field_w(&f[2]);
        }
    }
    if (isnan(out->average_w) && m->power_usage) {
        unsigned mw;
        if (m->power_usage(m->dev, &mw) == NVML_SUCCESS) out->average_w = mw / 1000.0;
    }
    out->sm_mhz = out->mem_mhz = 0;
    if (m->clock_info) {
        m->clock_info(m->dev, CLOCK_SM, &out->sm_mhz);
        m->clock_info(m->dev, CLOCK_MEM, &out->mem_mhz);
    }
    unsigned t;
    out->temp_c = m->temperature && m->temperature(m->dev, 0, &t) == NVML_SUCCESS ? (int)t : -1;
    unsigned long long reasons = 0;
    if (m->clock_events) m->clock_events(m->dev, &reasons);
    else if (m->clock_throttle) m->clock_throttle(m->dev, &reasons);
    out->clock_event_reasons = reasons;
    return ECO_OK;
}

#define CALL_OK(fn, ...) (m->fn && m->fn(__VA_ARGS__) == NVML_SUCCESS)

eco_err eco_nvml_card(eco_nvml *m, eco_gpu_card *c)
{
    memset(c, 0, sizeof *c);
    if (!CALL_OK(name, m->dev, c->name, sizeof c->name)) c->name[0] = '\0';
    if (!CALL_OK(uuid, m->dev, c->uuid, sizeof c->uuid)) c->uuid[0] = '\0';
    if (!CALL_OK(serial, m->dev, c->serial, sizeof c->serial)) c->serial[0] = '\0';
    if (!CALL_OK(vbios, m->dev, c->vbios, sizeof c->vbios)) c->vbios[0] = '\0';
    nvml_pci_info pci;
    if (CALL_OK(pci_info, m->dev, &pci)) snprintf(c->pci_bus_id, sizeof c->pci_bus_id, "%.31s", pci.bus_id);
    if (!CALL_OK(driver_version, c->driver_version, sizeof c->driver_version)) c->driver_version[0] = '\0';
    if (!CALL_OK(nvml_version, c->nvml_version, sizeof c->nvml_version)) c->nvml_version[0] = '\0';
    if (!CALL_OK(cuda_version, &c->cuda_driver_version)) c->cuda_driver_version = -1;
    unsigned arch;
    c->architecture_code = CALL_OK(architecture, m->dev, &arch) ? (int)arch : -1;
    nvml_memory mem;
    c->memory_total_gb = CALL_OK(memory_info, m->dev, &mem) ? (double)mem.total / 1e9 : NAN;
    unsigned v, v2;
    c->power_limit_w = CALL_OK(power_limit, m->dev, &v) ? v / 1000.0 : NAN;
    c->power_limit_default_w = CALL_OK(power_limit_default, m->dev, &v) ? v / 1000.0 : NAN;
    if (CALL_OK(power_limit_constraints, m->dev, &v, &v2)) {
        c->power_limit_min_w = v / 1000.0;
        c->power_limit_max_w = v2 / 1000.0;
    } else {
        c->power_limit_min_w = c->power_limit_max_w = NAN;
    }
    c->power_limit_enforced_w = CALL_OK(power_limit_enforced, m->dev, &v) ? v / 1000.0 : NAN;
    if (!CALL_OK(max_clock_info, m->dev, CLOCK_SM, &c->sm_clock_max_mhz)) c->sm_clock_max_mhz = 0;
    if (!CALL_OK(max_clock_info, m->dev, CLOCK_MEM, &c->mem_clock_max_mhz)) c->mem_clock_max_mhz = 0;
    int iv, iv2;
    c->pstate = CALL_OK(pstate, m->dev, &iv) ? iv : -1;
    c->persistence_mode = CALL_OK(persistence, m->dev, &iv) ? iv : -1;
    c->ecc_mode = CALL_OK(ecc_mode, m->dev, &iv, &iv2) ? iv : -1;
    unsigned mig, mig2;
    c->mig_mode = CALL_OK(mig_mode, m->dev, &mig, &mig2) ? (int)mig : -1;
    eco_power_sample s;
    eco_nvml_sample(m, &s);
    c->sm_clock_mhz = s.sm_mhz;
    c->mem_clock_mhz = s.mem_mhz;
    c->temp_c = s.temp_c;
    c->clock_event_reasons = s.clock_event_reasons;
    c->has_instant_field = !isnan(s.instant_w);
    c->has_average_field = !isnan(s.average_w);
    c->has_memory_field = !isnan(s.memory_w);
    return ECO_OK;
}

void eco_clock_event_reasons_str(uint64_t reasons, char *buf, size_t cap)
{
    static const char *const names[] = {"idle", "applications_clocks", "sw_power_cap", "hw_slowdown", "sync_boost",
                                         "sw_thermal", "hw_thermal", "hw_power_brake", "display_clock"};
    size_t used = 0;
    buf[0] = '\0';
    if (!reasons) { snprintf(buf, cap, "none"); return; }
    for (unsigned i = 0; i < 64; i++) {
        if (!(reasons & (1ull << i))) continue;
        char other[24];
        const char *n = i < sizeof names / sizeof names[0] ? names[i] : (snprintf(other, sizeof other, "bit%u", i), other);
        int w = snprintf(buf + used, cap > used ? cap - used : 0, "%s%s", used ? "|" : "", n);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
    }
}
