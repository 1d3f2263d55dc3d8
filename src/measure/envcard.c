/* The environment card: everything that can confound an energy number, recorded and never changed. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "eco/measure.h"

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }
static json_t *str_or_null(const char *s) { return s && *s ? json_string(s) : json_null(); }
static json_t *int_or_null(long v, long unknown) { return v == unknown ? json_null() : json_integer(v); }

json_t *eco_env_gpu_json(const eco_gpu_card *c, const char *arch)
{
    json_t *g = json_object();
    json_object_set_new(g, "name", str_or_null(c->name));
    json_object_set_new(g, "arch", str_or_null(arch));
    json_object_set_new(g, "uuid", str_or_null(c->uuid));
    json_object_set_new(g, "serial", str_or_null(c->serial));
    json_object_set_new(g, "vbios", str_or_null(c->vbios));
    json_object_set_new(g, "pci_bus_id", str_or_null(c->pci_bus_id));
    json_object_set_new(g, "driver_version", str_or_null(c->driver_version));
    json_object_set_new(g, "nvml_version", str_or_null(c->nvml_version));
    json_object_set_new(g, "cuda_driver_version", int_or_null(c->cuda_driver_version, -1));
    json_object_set_new(g, "nvml_architecture_code", int_or_null(c->architecture_code, -1));
    json_object_set_new(g, "memory_total_gb", num_or_null(c->memory_total_gb));
    json_object_set_new(g, "power_limit_w", num_or_null(c->power_limit_w));
    json_object_set_new(g, "power_limit_default_w", num_or_null(c->power_limit_default_w));
    json_object_set_new(g, "power_limit_min_w", num_or_null(c->power_limit_min_w));
    json_object_set_new(g, "power_limit_max_w", num_or_null(c->power_limit_max_w));
    json_object_set_new(g, "power_limit_enforced_w", num_or_null(c->power_limit_enforced_w));
    json_object_set_new(g, "sm_clock_mhz", c->sm_clock_mhz ? json_integer(c->sm_clock_mhz) : json_null());
    json_object_set_new(g, "mem_clock_mhz", c->mem_clock_mhz ? json_integer(c->mem_clock_mhz) : json_null());
    json_object_set_new(g, "sm_clock_max_mhz", c->sm_clock_max_mhz ? json_integer(c->sm_clock_max_mhz) : json_null());
    json_object_set_new(g, "mem_clock_max_mhz", c->mem_clock_max_mhz ? json_integer(c->mem_clock_max_mhz) : json_null());
    json_object_set_new(g, "pstate", int_or_null(c->pstate, -1));
    json_object_set_new(g, "persistence_mode", int_or_null(c->persistence_mode, -1));
    json_object_set_new(g, "ecc_mode", int_or_null(c->ecc_mode, -1));
    json_object_set_new(g, "mig_mode", int_or_null(c->mig_mode, -1));
    json_object_set_new(g, "temperature_c", int_or_null(c->temp_c, -1));
    char reasons[160];
    eco_clock_event_reasons_str(c->clock_event_reasons, reasons, sizeof reasons);
    json_object_set_new(g, "clock_event_reasons", json_string(reasons));
    return g;
}

static void cpu_model(char *buf, size_t cap)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *colon = strchr(line, ':');
        if (!colon) break;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        snprintf(buf, cap, "%s", colon);
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    fclose(f);
}

json_t *eco_env_host_json(void)
{
    json_t *h = json_object();
    char name[256] = "";
    if (gethostname(name, sizeof name) == 0) name[sizeof name - 1] = '\0';
    json_object_set_new(h, "hostname", str_or_null(name));
    struct utsname u;
    if (uname(&u) == 0) {
        char os[600];
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
        json_object_set_new(h, "os", json_string(os));
    }
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    json_object_set_new(h, "cpu", str_or_null(cpu));
    json_object_set_new(h, "cpu_cores", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    return h;
}

json_t *eco_env_software_json(const char *engine_backend, const char *cuda_runtime, const char *engine_design)
{
    json_t *s = json_object();
    json_object_set_new(s, "tool", json_string("eco"));
    json_object_set_new(s, "version", json_string(ECO_VERSION));
    json_object_set_new(s, "build", json_string(ECO_BUILD_HASH));
    json_object_set_new(s, "compiler", json_string(__VERSION__));
    json_object_set_new(s, "engine_backend", str_or_null(engine_backend));
    json_object_set_new(s, "cuda_runtime", str_or_null(cuda_runtime));
    if (engine_design) json_object_set_new(s, "engine_design", json_string(engine_design));
    return s;
}
