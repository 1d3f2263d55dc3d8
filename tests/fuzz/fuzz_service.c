/* libFuzzer target: arbitrary parameters through the service layer's estimate and optimize, as a JSON body (or
 * MCP arguments) and as a query string's strings, over curves fitted at start from rows of several
 * architectures, cards and precisions (hopper with two cards of five sizes each, so per-card curves exist).
 * An answer must be an object whose ΔE is finite and inside its range, with one of the four labels; a refusal
 * must be one of the service's documented codes with a message. The first byte picks the call. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eco/fit.h"
#include "eco/json.h"
#include "eco/record.h"
#include "eco/service.h"
#include "service/curves_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static eco_service *svc;

static void row(eco_record *r, const char *arch, const char *gpu, eco_precision p, double N, double delta, const char *model)
{
    memset(r, 0, sizeof *r);
    snprintf(r->arch, sizeof r->arch, "%s", arch);
    snprintf(r->gpu, sizeof r->gpu, "%s", gpu);
    snprintf(r->model, sizeof r->model, "%s", model);
    snprintf(r->method, sizeof r->method, "nvml-energy-counter");
    snprintf(r->session, sizeof r->session, "fuzz-%s-%s", arch, gpu);
    snprintf(r->source, sizeof r->source, "fuzz:%s:%s:%d:%g", gpu, eco_precision_name(p), (int)p, N);
    r->precision = p;
    r->params_b = N;
    r->e_fp16_mj = 350.0 * N + 80;
    r->e_quant_mj = r->e_fp16_mj * (1 + delta / 100);
    r->e_quant_sd_mj = r->e_fp16_sd_mj = NAN;
    r->cv_pct = 1.5;
    r->n_trials = 3;
    r->tokens = 256;
    r->basis = ECO_BASIS_GROSS;
    r->batch = 1;
}

static void open_once(void)
{
    if (svc) return;
    static const char *const models[5] = {"Qwen2.5-0.5B", "Qwen2.5-1.5B", "Qwen2.5-3B", "Qwen2.5-7B", "Qwen2.5-14B"};
    static const double sizes[5] = {0.494, 1.544, 3.086, 7.616, 14.77};
    eco_record rows[64];
    size_t n = 0;
    for (int i = 0; i < 5; i++) {
        row(&rows[n++], "hopper", "NVIDIA H200", ECO_PREC_NF4, sizes[i], -27 - 5 * i, models[i]);
        row(&rows[n++], "hopper", "NVIDIA H100 80GB HBM3", ECO_PREC_NF4, sizes[i], -26 - 7 * i, models[i]);
        row(&rows[n++], "hopper", "NVIDIA H200", ECO_PREC_INT8, sizes[i], -21 - 4 * i, models[i]);
        row(&rows[n++], "ada", "RTX 4090", ECO_PREC_NF4, sizes[i], 30 - 14 * i, models[i]);
    }
    for (int i = 2; i < 5; i++) row(&rows[n++], "ampere", "A800", ECO_PREC_INT8_MIXED, sizes[i], 120 - 5 * i, models[i]);
    eco_curve_set *set = calloc(1, sizeof *set);
    eco_fit_options o;
    eco_fit_options_default(&o);
    if (!set || eco_fit_all(rows, n, &o, set)) abort();
    snprintf(set->dataset, sizeof set->dataset, "fuzz");
    char path[64];
    snprintf(path, sizeof path, "/tmp/eco_fuzz_curves_%d.json", (int)getpid());
    if (eco_curves_write_file(set, path)) abort();
    free(set);
    eco_service_config cfg = {.curves_path = path, .db_path = NULL};
    if (eco_service_open(&cfg, &svc)) abort();
    unlink(path);
}

static void check_estimate(const json_t *r)
{
    const json_t *d = json_object_get(r, "delta_pct"), *range = json_object_get(r, "range95");
    const char *label = json_string_value(json_object_get(r, "label"));
    if (!json_is_number(d) || !isfinite(json_number_value(d))) abort();
    if (!label || (strcmp(label, "measured") && strcmp(label, "interpolated") && strcmp(label, "extrapolated") &&
                   strcmp(label, "estimated")))
        abort();
    if (!json_is_array(range) || json_array_size(range) != 2) abort();
    double lo = json_number_value(json_array_get(range, 0)), hi = json_number_value(json_array_get(range, 1)),
           x = json_number_value(d);
    if (!(lo <= x + 1e-9 && x <= hi + 1e-9)) abort();
}

static void call(int which, const json_t *params, eco_params_origin origin)
{
    json_t *r = NULL;
    eco_clear_error();
    eco_err e = which ? eco_service_optimize(svc, params, origin, &r) : eco_service_estimate(svc, params, origin, &r);
    if (e == ECO_OK) {
        if (!json_is_object(r)) abort();
        if (!which) check_estimate(r);
        char *text = json_dumps(r, JSON_COMPACT); /* every answer serialises (valid UTF-8, no NaN) */
        if (!text) abort();
        free(text);
        json_decref(r);
        return;
    }
    if (r) abort();
    if (e != ECO_EINVAL && e != ECO_ENOTFOUND && e != ECO_EUNSUPPORTED && e != ECO_ETOOBIG) abort();
    if (!*eco_last_error()) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    open_once();
    if (size < 1) return 0;
    json_t *params;
    if (eco_json_loadb((const char *)data + 1, size - 1, "fuzz", 1 << 16, &params)) return 0;
    if (json_is_object(params)) {
        int which = data[0] & 1;
        call(which, params, ECO_PARAMS_JSON);
        /* the same values as a query string gives them: strings only */
        json_t *strings = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(params, k, v) {
            char buf[64];
            if (json_is_string(v)) json_object_set(strings, k, v);
            else if (json_is_integer(v)) { snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v)); json_object_set_new(strings, k, json_string(buf)); }
            else if (json_is_real(v)) { snprintf(buf, sizeof buf, "%.17g", json_real_value(v)); json_object_set_new(strings, k, json_string(buf)); }
            else if (json_is_boolean(v)) json_object_set_new(strings, k, json_string(json_is_true(v) ? "true" : "false"));
        }
        call(which, strings, ECO_PARAMS_STRINGS);
        json_decref(strings);
    }
    json_decref(params);
    return 0;
}
