/* GPU power meter: NVML loaded with dlopen (own prototypes, no NVML header), the total-energy counter
 * as the headline signal, a sampler thread for the power timeline, and the environment card fields.
 * ECO_NVML_LIBRARY overrides the library path (tests load a fake that plays a scripted power curve). */
#ifndef ECO_POWER_H
#define ECO_POWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eco/err.h"

typedef struct eco_nvml eco_nvml;

/* Loads the library (ECO_NVML_LIBRARY or libnvidia-ml.so.1), initialises NVML and opens device `index`.
 * Fails with ECO_EDEVICE and the NVML error string, or ECO_EUNSUPPORTED when the energy counter is absent:
 * there is never a silent fallback to polled power or a TDP guess. */
eco_err eco_nvml_open(unsigned index, eco_nvml **out);
void eco_nvml_close(eco_nvml *m);

/* One read of the total-energy counter with CLOCK_MONOTONIC_RAW timestamps taken around the call. */
typedef struct {
    uint64_t energy_mj;
    double t_before_s, t_after_s; /* monotonic seconds */
} eco_counter_read;
eco_err eco_nvml_read_counter(eco_nvml *m, eco_counter_read *out);
/* Spins on the counter until its value changes (<= timeout_s): the read then sits on an update edge,
 * which removes the up-to-one-step quantisation error at that window edge. An edge whose reads were
 * preempted around the update is passed over for the next one (taken only if no clean one comes in time). */
eco_err eco_nvml_read_counter_edge(eco_nvml *m, double timeout_s, eco_counter_read *out);

/* Cheap cached power fields (mW -> W); NAN where the driver does not report the field. */
typedef struct {
    double t_s;            /* monotonic seconds of the query */
    double instant_w;      /* field 186 (~25 ms boxcar, sampled every ~100 ms: aliases) */
    double average_w;      /* field 185 = nvmlDeviceGetPowerUsage on Hopper: a 1 s average */
    double memory_w;       /* field 185, scope 2 (memory rail average) */
    unsigned sm_mhz, mem_mhz;
    int temp_c;            /* -1 if unknown */
    uint64_t clock_event_reasons;
} eco_power_sample;
eco_err eco_nvml_sample(eco_nvml *m, eco_power_sample *out);

/* Environment card: recorded, never changed. Strings are "" and numbers NAN/-1 where unavailable. */
typedef struct {
    char name[96], uuid[96], serial[32], vbios[32], pci_bus_id[32];
    char driver_version[80], nvml_version[80];
    int cuda_driver_version;     /* e.g. 13000; -1 unknown */
    int architecture_code;       /* NVML: 7 Ampere, 8 Ada, 9 Hopper, 10 Blackwell; -1 unknown */
    double memory_total_gb;
    double power_limit_w, power_limit_default_w, power_limit_min_w, power_limit_max_w, power_limit_enforced_w;
    unsigned sm_clock_mhz, mem_clock_mhz, sm_clock_max_mhz, mem_clock_max_mhz;
    int pstate, persistence_mode, ecc_mode, mig_mode, temp_c;
    uint64_t clock_event_reasons;
    bool has_instant_field, has_average_field, has_memory_field;
} eco_gpu_card;
eco_err eco_nvml_card(eco_nvml *m, eco_gpu_card *out);
/* "idle", "sw_power_cap", "hw_slowdown", ... joined by '|' into buf. */
void eco_clock_event_reasons_str(uint64_t reasons, char *buf, size_t cap);

/* Sampler thread: reads eco_nvml_sample every period into a preallocated ring; no allocation or I/O in
 * the loop, and it never touches the decode loop. Used for the timeline and cross-checks only. */
typedef struct eco_sampler eco_sampler;
eco_err eco_sampler_start(eco_nvml *m, unsigned period_ms, size_t capacity, eco_sampler **out);
/* Stops the thread; samples stay readable until eco_sampler_free. */
void eco_sampler_stop(eco_sampler *s);
size_t eco_sampler_count(const eco_sampler *s);
const eco_power_sample *eco_sampler_samples(const eco_sampler *s);
size_t eco_sampler_dropped(const eco_sampler *s); /* ticks lost to a full ring or failed reads */
void eco_sampler_free(eco_sampler *s);

/* Trapezoid of a power field over [t0, t1] (J), from samples sorted by time; field 0 instant, 1 average, 2 memory. */
double eco_power_trapz_j(const eco_power_sample *s, size_t n, double t0, double t1, int field);

double eco_monotonic_s(void); /* CLOCK_MONOTONIC_RAW seconds */

#endif
