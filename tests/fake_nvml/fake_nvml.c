/* A scripted stand-in for libnvidia-ml.so.1, loaded through ECO_NVML_LIBRARY.
 *
 * True power p(t) follows ECO_FAKE_NVML_POWER (t = seconds since the library was loaded):
 *   "const:W" | "square:LOW:HIGH:PERIOD_MS:DUTY" | "steps:T0=W0,T1=W1,..." (piecewise constant)
 * It mimics what was measured on an H200 (shared/research/anchor-measurement.md §2.3):
 *   - the total-energy counter (mJ) is the exact integral of p, updated every ECO_FAKE_NVML_COUNTER_MS (100);
 *   - field 186 "instant" is a 25 ms boxcar of p refreshed every 100 ms (so it aliases periodic loads);
 *   - field 185 / GetPowerUsage is a 1 s boxcar refreshed every 100 ms; scope 2 (memory) = 0.4 x that;
 *   - a counter read costs ECO_FAKE_NVML_READ_US microseconds (2000);
 *   - ECO_FAKE_NVML_STALL_MS (0): a read that begins within that long before an odd-numbered update stalls until
 *     after it, then samples, as a thread preempted across the update would: the reader's timestamp before the
 *     read is up to STALL_MS before the update it sees.
 * fake_nvml_true_energy_j(t0, t1) gives the truth over CLOCK_MONOTONIC_RAW times, and fake_nvml_last_tick_s()
 * when the update of the last value read happened, for tests. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_STEPS 64

static enum { P_CONST, P_SQUARE, P_STEPS } kind = P_CONST;
static double p_const = 100, sq_low, sq_high, sq_period, sq_duty;
static double step_t[MAX_STEPS], step_w[MAX_STEPS];
static int n_steps;
static double origin, counter_period = 0.1, read_us = 2000, stall_ms = 0, last_tick = -1;
#define COUNTER_BASE_MJ 123456789ull

double fake_nvml_origin_s(void);
double fake_nvml_last_tick_s(void);
double fake_nvml_true_energy_j(double t0_mono, double t1_mono);
double fake_nvml_true_power_w(double t_mono);

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void parse_script(void)
{
    const char *s = getenv("ECO_FAKE_NVML_POWER");
    const char *cp = getenv("ECO_FAKE_NVML_COUNTER_MS");
    const char *ru = getenv("ECO_FAKE_NVML_READ_US"), *st = getenv("ECO_FAKE_NVML_STALL_MS");
    if (st) stall_ms = atof(st);
    if (cp) counter_period = atof(cp) / 1000.0;
    if (ru) read_us = atof(ru);
    if (!s) return;
    if (!strncmp(s, "const:", 6)) {
        kind = P_CONST;
        p_const = atof(s + 6);
    } else if (!strncmp(s, "square:", 7)) {
        kind = P_SQUARE;
        double period_ms = 100;
        sscanf(s + 7, "%lf:%lf:%lf:%lf", &sq_low, &sq_high, &period_ms, &sq_duty);
        sq_period = period_ms / 1000.0;
    } else if (!strncmp(s, "steps:", 6)) {
        kind = P_STEPS;
        const char *p = s + 6;
        while (*p && n_steps < MAX_STEPS) {
            double t, w;
            int used = 0;
            if (sscanf(p, "%lf=%lf%n", &t, &w, &used) != 2) break;
            step_t[n_steps] = t;
            step_w[n_steps++] = w;
            p += used;
            if (*p == ',') p++;
        }
    }
}

__attribute__((constructor)) static void fake_init(void)
{
    origin = now_mono();
    parse_script();
}

/* Steps added by the test itself through fake_nvml_add_power, at the moment it calls it: a spike placed exactly
 * in one part of the protocol, which a script of wall-clock times cannot do. */
#define MAX_ADDED 16
static double added_t[MAX_ADDED], added_w[MAX_ADDED];
static int n_added;

void fake_nvml_add_power(double watts);
void fake_nvml_add_power(double watts)
{
    int i = __atomic_load_n(&n_added, __ATOMIC_ACQUIRE);
    if (i == MAX_ADDED) return;
    added_t[i] = now_mono() - origin;
    added_w[i] = watts;
    __atomic_store_n(&n_added, i + 1, __ATOMIC_RELEASE); /* the sampler thread reads these */
}

static double scripted_energy_to(double t);

/* Integral of p over [0, t] in joules (t relative to origin). */
static double energy_to(double t)
{
    double e = scripted_energy_to(t);
    int n = __atomic_load_n(&n_added, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (t > added_t[i]) e += added_w[i] * (t - added_t[i]);
    return e;
}

static double scripted_energy_to(double t)
{
    if (t <= 0) return 0;
    switch (kind) {
    case P_CONST: return p_const * t;
    case P_SQUARE: {
        double n = floor(t / sq_period), r = t - n * sq_period, high = sq_duty * sq_period;
        double per = high * sq_high + (sq_period - high) * sq_low;
        return n * per + (r < high ? r * sq_high : high * sq_high + (r - high) * sq_low);
    }
    case P_STEPS: {
        double e = 0;
        for (int i = 0; i < n_steps; i++) {
            double a = step_t[i], b = i + 1 < n_steps ? step_t[i + 1] : INFINITY;
            if (t <= a) break;
            e += step_w[i] * ((t < b ? t : b) - a);
        }
        return e;
    }
    }
    return 0;
}

double fake_nvml_origin_s(void) { return origin; }
double fake_nvml_true_energy_j(double t0_mono, double t1_mono) { return energy_to(t1_mono - origin) - energy_to(t0_mono - origin); }
double fake_nvml_true_power_w(double t_mono)
{
    double t = t_mono - origin, dt = 1e-6;
    return (energy_to(t + dt) - energy_to(t)) / dt;
}

/* Boxcar mean of p over `width` seconds ending at the last 100 ms refresh before now. */
static double refreshed_boxcar_w(double width)
{
    double t = now_mono() - origin;
    double t_ref = floor(t / 0.1) * 0.1;
    double a = t_ref - width;
    return (energy_to(t_ref) - energy_to(a > 0 ? a : 0)) / (t_ref - (a > 0 ? a : 0) > 0 ? t_ref - (a > 0 ? a : 0) : 1);
}

/* ---- the NVML surface ---- */
typedef struct fake_device *nvmlDevice_t;
static struct fake_device { int dummy; } the_device;

typedef union { double d; int si; unsigned ui; unsigned long ul; unsigned long long ull; long long sll; unsigned short us; } nvml_value;
typedef struct { unsigned field_id, scope_id; long long timestamp, latency_us; int value_type, nvml_return; nvml_value value; } nvml_field_value;
typedef struct { unsigned long long total, free, used; } nvml_memory;

int nvmlInit_v2(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int r);
int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev);
int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj);
int nvmlDeviceGetFieldValues(nvmlDevice_t dev, int count, nvml_field_value *values);
int nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned *mw);
int nvmlDeviceGetName(nvmlDevice_t dev, char *buf, unsigned len);
int nvmlDeviceGetUUID(nvmlDevice_t dev, char *buf, unsigned len);
int nvmlSystemGetDriverVersion(char *buf, unsigned len);
int nvmlSystemGetCudaDriverVersion_v2(int *v);
int nvmlDeviceGetArchitecture(nvmlDevice_t dev, unsigned *arch);
int nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvml_memory *m);
int nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev, unsigned *mw);
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned *mw);
int nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *mhz);
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned *mhz);
int nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *c);
int nvmlDeviceGetPerformanceState(nvmlDevice_t dev, int *p);
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *r);
int nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, int *mode);

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int r) { return r == 0 ? "Success" : r == 3 ? "Not Supported" : "Unknown Error"; }

int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev)
{
    if (index != 0) return 2; /* INVALID_ARGUMENT */
    *dev = &the_device;
    return 0;
}

#ifndef FAKE_NVML_NO_ENERGY
int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj)
{
    (void)dev;
    double t = now_mono() - origin;
    double t_update = floor(t / counter_period) * counter_period;
    long next = lround(t_update / counter_period) + 1;
    if (stall_ms > 0 && next % 2 && (double)next * counter_period - t < stall_ms / 1000.0) {
        struct timespec stall = {0, (long)(stall_ms * 1e6)};
        nanosleep(&stall, NULL);
        t = now_mono() - origin;
        t_update = floor(t / counter_period) * counter_period;
    }
    last_tick = t_update;
    struct timespec cost = {0, (long)(read_us * 1000)};
    nanosleep(&cost, NULL);
    *mj = COUNTER_BASE_MJ + (unsigned long long)llround(energy_to(t_update) * 1000.0);
    return 0;
}
#endif

int nvmlDeviceGetFieldValues(nvmlDevice_t dev, int count, nvml_field_value *values)
{
    (void)dev;
    for (int i = 0; i < count; i++) {
        nvml_field_value *f = &values[i];
        f->value_type = 1;
        f->nvml_return = 0;
        if (f->field_id == 186 && f->scope_id == 0) f->value.ui = (unsigned)llround(refreshed_boxcar_w(0.025) * 1000);
        else if (f->field_id == 185 && f->scope_id == 0) f->value.ui = (unsigned)llround(refreshed_boxcar_w(1.0) * 1000);
        else if (f->field_id == 185 && f->scope_id == 2) f->value.ui = (unsigned)llround(0.4 * refreshed_boxcar_w(1.0) * 1000);
        else f->nvml_return = 3;
    }
    return 0;
}

int nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned *mw)
{
    (void)dev;
    *mw = (unsigned)llround(refreshed_boxcar_w(1.0) * 1000);
    return 0;
}

int nvmlDeviceGetName(nvmlDevice_t dev, char *buf, unsigned len) { (void)dev; snprintf(buf, len, "NVIDIA H200 (fake NVML)"); return 0; }
int nvmlDeviceGetUUID(nvmlDevice_t dev, char *buf, unsigned len) { (void)dev; snprintf(buf, len, "GPU-00000000-fake-0000-0000-000000000000"); return 0; }
int nvmlSystemGetDriverVersion(char *buf, unsigned len) { snprintf(buf, len, "580.00-fake"); return 0; }
int nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = 13000; return 0; }
int nvmlDeviceGetArchitecture(nvmlDevice_t dev, unsigned *arch) { (void)dev; *arch = 9; return 0; }
int nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvml_memory *m) { (void)dev; m->total = 150754820096ull; m->free = m->total; m->used = 0; return 0; }
int nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev, unsigned *mw) { (void)dev; *mw = 700000; return 0; }
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned *mw) { (void)dev; *mw = 700000; return 0; }
/* ECO_FAKE_NVML_THROTTLE="period_ms:duty:sm_mhz:reasons": for the first `duty` of every period the SM clock
 * reads sm_mhz and the clock-event reasons `reasons` (e.g. 4, software power cap); otherwise 1980 MHz, none. */
static bool throttled_now(unsigned *sm_mhz, unsigned long long *reasons)
{
    const char *t = getenv("ECO_FAKE_NVML_THROTTLE");
    double period_ms, duty;
    unsigned mhz;
    unsigned long long r;
    if (!t || sscanf(t, "%lf:%lf:%u:%llu", &period_ms, &duty, &mhz, &r) != 4 || period_ms <= 0) return false;
    double phase = fmod((now_mono() - origin) * 1000.0, period_ms) / period_ms;
    if (phase >= duty) return false;
    if (sm_mhz) *sm_mhz = mhz;
    if (reasons) *reasons = r;
    return true;
}

int nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *mhz)
{
    (void)dev;
    *mhz = type == 2 ? 3201 : 1980;
    if (type != 2) throttled_now(mhz, NULL);
    return 0;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned *mhz) { (void)dev; *mhz = type == 2 ? 3201 : 1980; return 0; }
int nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *c) { (void)dev; (void)sensor; *c = 41; return 0; }
int nvmlDeviceGetPerformanceState(nvmlDevice_t dev, int *p) { (void)dev; *p = 0; return 0; }
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *r)
{
    (void)dev;
    *r = 0;
    throttled_now(NULL, r);
    return 0;
}
int nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, int *mode) { (void)dev; *mode = 1; return 0; }

double fake_nvml_last_tick_s(void) { return origin + last_tick; }
