/* Our measured energy.json -> eco_record rows (one per quantized precision against the same-run fp16), so runs
 * join the dataset and the fit like any reference row, with their own protocol and backend. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eco/measure.h"
#include "eco/model.h"
#include "eco/record.h"

static const char *str(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const json_t *result_of(const json_t *doc, const char *precision)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "results"), i, r) if (str(r, "precision") && !strcmp(str(r, "precision"), precision)) return r;
    return NULL;
}

static void append_flags(const json_t *result, const char *prefix, char *buf, size_t cap)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(result, "flags"), i, f) {
        const char *name = json_string_value(f);
        if (!name) continue;
        size_t at = strlen(buf);
        int n = snprintf(buf + at, cap - at, "%s%s%s", at ? " " : "", prefix, name);
        if (n < 0 || (size_t)n >= cap - at) { buf[at] = '\0'; return; } // whole flags only
    }
}

void eco_energy_record_flags(const json_t *doc, const char *precision, char *buf, size_t cap)
{
    if (!cap) return;
    buf[0] = '\0';
    append_flags(result_of(doc, precision), "", buf, cap);
    append_flags(result_of(doc, "fp16"), "fp16:", buf, cap);
}

eco_err eco_energy_records(const json_t *doc, const char *source, eco_record **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    const json_t *gpu = json_object_get(json_object_get(doc, "environment"), "gpu");
    const json_t *meter = json_object_get(doc, "meter"), *w = json_object_get(doc, "weights");
    const json_t *proto = json_object_get(doc, "protocol"), *sw = json_object_get(doc, "software");
    const char *basis = str(meter, "basis");
    if (!json_is_object(gpu) || !basis || strcmp(basis, "measured"))
        return eco_fail_field(ECO_EUNSUPPORTED, "meter.basis",
                              "%s: only runs whose meter basis is \"measured\" on a GPU become dataset rows (basis %s)",
                              source, basis ? basis : "missing");
    const char *backend = str(sw, "engine_backend");
    if (backend && !strncmp(backend, "cpu", 3))
        return eco_fail_field(ECO_EUNSUPPORTED, "software.engine_backend",
                              "%s: the workload ran on the CPU while NVML metered a GPU: a test of the harness, not a GPU "
                              "measurement", source);
    const json_t *qz = json_object_get(w, "quantization");
    const json_t *thr = json_object_get(qz, "int8_mixed_threshold");
    if (qz && ((thr && json_number_value(thr) != ECO_INT8_MIXED_THRESHOLD) || !str(qz, "lm_head") || strcmp(str(qz, "lm_head"), "fp16")))
        return eco_fail_field(ECO_EUNSUPPORTED, "weights.quantization",
                              "%s: the dataset's formats are LLM.int8() at threshold %.1f with an fp16 lm_head; this run used "
                              "threshold %g and a %s lm_head", source, ECO_INT8_MIXED_THRESHOLD,
                              thr ? json_number_value(thr) : ECO_INT8_MIXED_THRESHOLD, str(qz, "lm_head") ? str(qz, "lm_head") : "?");
    const json_t *base = result_of(doc, "fp16");
    double e16 = num(base, "mj_per_token_gross");
    if (!(e16 > 0)) return eco_fail_field(ECO_EINVAL, "results", "%s: no measured fp16 baseline", source);
    /* the arch and the size the rows are filed under come from what the document names, not only what it states:
     * an H200 filed as ampere would make an ampere fp8 curve, a 0.5B run filed as 70B a hopper 70B anchor */
    const char *arch, *named_arch;
    switch (eco_card_arch(str(gpu, "name"), str(gpu, "arch"), &arch, &named_arch)) {
    case ECO_CARD_ARCH_UNKNOWN:
        return eco_fail_field(ECO_EINVAL, "environment.gpu.arch", "%s: unknown arch '%s'", source, str(gpu, "arch"));
    case ECO_CARD_ARCH_NOT_THE_NAMES:
        return eco_fail_field(ECO_EINVAL, "environment.gpu.arch", "%s: arch '%s' is not the %s's (%s)", source,
                              str(gpu, "arch"), str(gpu, "name"), named_arch);
    case ECO_CARD_ARCH_NONE:
        return eco_fail_field(ECO_EINVAL, "environment.gpu.arch", "%s: no arch, and '%s' names none", source, str(gpu, "name"));
    case ECO_CARD_ARCH_OUTSIDE:
        return eco_fail_field(ECO_EINVAL, "environment.gpu.name", "%s: '%s' is %s, of no class the curves have", source,
                              str(gpu, "name"), named_arch);
    case ECO_CARD_ARCH_OK: break;
    }
    const eco_model_config *preset = str(w, "preset") ? eco_preset_find(str(w, "preset")) : NULL;
    double stated_b = num(w, "params_b"), preset_b;
    if (preset && !eco_params_match_preset(preset, stated_b, &preset_b))
        return eco_fail_field(ECO_EINVAL, "weights.params_b", "%s: params_b %g is not %s's %.4g", source, stated_b, preset->name, preset_b);
    /* names are stored whole or not at all: a cut run id would merge two runs, a cut model two models */
    const char *run_id = str(doc, "run_id"), *model = str(w, "preset") ? str(w, "preset") : str(w, "model");
    const char *gpu_name = str(gpu, "name");
    const struct { const char *field, *value; size_t cap; } names[] = {
        {"run_id", run_id, ECO_SESSION_SIZE}, {"environment.gpu.name", gpu_name, ECO_GPU_NAME_SIZE},
        {"weights.model", model, ECO_MODEL_NAME_SIZE}, {"file name", source, ECO_SOURCE_SIZE - 16}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (names[k].value && strlen(names[k].value) >= names[k].cap)
            return eco_fail_field(ECO_EINVAL, names[k].field, "%.80s: the %s is too long to store whole (%zu bytes at most)",
                                  source, names[k].field, names[k].cap - 1);
    const json_t *comps = json_object_get(doc, "comparisons");
    eco_record *rows = calloc(json_array_size(comps) + 1, sizeof *rows);
    if (!rows) return eco_fail(ECO_ENOMEM, "out of memory");
    size_t n = 0, i;
    json_t *c;
    json_array_foreach(comps, i, c) {
        const char *pname = str(c, "precision");
        const json_t *res = pname ? result_of(doc, pname) : NULL;
        eco_record *r = &rows[n];
        if (!res || !(num(res, "mj_per_token_gross") > 0) || eco_precision_parse(pname, &r->precision)) continue;
        snprintf(r->gpu, sizeof r->gpu, "%s", gpu_name);
        snprintf(r->arch, sizeof r->arch, "%s", arch);
        r->vram_gb = num(gpu, "memory_total_gb");
        snprintf(r->model, sizeof r->model, "%s", model ? model : "unknown");
        r->params_b = num(w, "params_b");
        r->batch = 1;
        r->e_fp16_mj = e16;
        r->e_quant_mj = num(res, "mj_per_token_gross");
        r->e_fp16_sd_mj = num(base, "sd_mj");
        r->e_quant_sd_mj = num(res, "sd_mj");
        r->cv_pct = num(res, "cv_pct");
        r->n_trials = (int)num(res, "n");
        r->n_iterations = 0;
        r->tokens = (int)num(proto, "tokens");
        r->basis = ECO_BASIS_GROSS;
        snprintf(r->method, sizeof r->method, "nvml-energy-counter");
        snprintf(r->backend, sizeof r->backend, "%s %s %s", str(sw, "tool") ? str(sw, "tool") : "eco",
                 str(sw, "version") ? str(sw, "version") : "?", str(sw, "engine_backend") ? str(sw, "engine_backend") : "?");
        r->origin = ECO_ORIGIN_RUN;
        snprintf(r->session, sizeof r->session, "%s", run_id ? run_id : source);
        snprintf(r->source, sizeof r->source, "%s#%s", source, pname);
        r->synthetic_weights = str(w, "source") && !strcmp(str(w, "source"), "synthetic");
        r->single_trial = r->n_trials < 2;
        eco_energy_record_flags(doc, pname, r->flags, sizeof r->flags);
        /* The kernel design moves energy as much as a format can: a reader of the row needs it. */
        const char *design = str(sw, "engine_design");
        snprintf(r->note, sizeof r->note, "eco measure (%s): decode energy from the NVML counter, prefill excluded, %d blocks "
                 "of >= %.0f s windows%s%s%s", str(proto, "version") ? str(proto, "version") : "?", r->n_trials,
                 num(proto, "min_window_s"), r->synthetic_weights ? "; synthetic weights of the model's exact shapes" : "",
                 design ? ECO_RECORD_DESIGN_MARK : "", design ? design : "");
        if (eco_record_check(r)) {
            free(rows);
            return eco_fail_context("%s (%s): ", source, pname);
        }
        n++;
    }
    *out = rows;
    *count = n;
    return ECO_OK;
}
