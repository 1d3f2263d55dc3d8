/* energy.json (schema v2, data/schema/energy.schema.json) from a finished measurement. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eco/measure.h"

#define SCHEMA_ID "https://ecocompute.example/schema/energy/v2.json"
#define CV_FLAG_PCT 3.0
#define HOT_C 85

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }
static json_t *str_or_null(const char *s) { return s && *s ? json_string(s) : json_null(); }

#define IDLE_DRIFT_FRACTION 0.10

static json_t *interval_or_null(double lo, double hi)
{
    if (!isfinite(lo) || !isfinite(hi)) return json_null();
    return json_pack("[f, f]", lo, hi);
}

static void add_flag(json_t *flags, const char *f)
{
    size_t i;
    json_t *v;
    json_array_foreach(flags, i, v) if (!strcmp(json_string_value(v), f)) return;
    json_array_append_new(flags, json_string(f));
}

/* Flags of one configuration's windows: throttling other than idle, hot silicon, counter disagreement. */
static void window_flags(const eco_measurement *m, int config, json_t *flags)
{
    const eco_window *w = eco_measurement_windows(m);
    for (size_t i = 0; i < eco_measurement_window_count(m); i++) {
        if (w[i].config != config) continue;
        if (w[i].clock_event_reasons & ~1ull) add_flag(flags, "throttled");
        if (w[i].temp_end_c > HOT_C) add_flag(flags, "hot");
        if (isfinite(w[i].counter_vs_instant_ratio) && fabs(1.0 - w[i].counter_vs_instant_ratio) > 0.03)
            add_flag(flags, "counter-instant-disagree");
    }
}

static json_t *result_json(const eco_measurement *m, int c, const eco_config_summary *s, const char *basis,
                           const char *reason, json_t *run_flags)
{
    bool energy = !strcmp(basis, "measured") || !strcmp(basis, "unverified");
    json_t *r = json_object();
    json_object_set_new(r, "precision", json_string(eco_precision_name(s->precision)));
    json_object_set_new(r, "basis", json_string(basis));
    json_object_set_new(r, "n", json_integer(s->n));
    json_object_set_new(r, "mj_per_token_gross", energy ? num_or_null(s->mj_per_token_gross) : json_null());
    json_object_set_new(r, "mj_per_token_net", energy ? num_or_null(s->mj_per_token_net) : json_null());
    json_object_set_new(r, "e2e_mj_per_token_gross", energy ? num_or_null(s->e2e_mj_per_token_gross) : json_null());
    json_object_set_new(r, "sd_mj", energy && s->n >= 2 ? num_or_null(s->sd_mj) : json_null());
    json_object_set_new(r, "cv_pct", energy && s->n >= 2 ? num_or_null(s->cv_pct) : json_null());
    json_object_set_new(r, "ci95_mj", energy && s->n >= 2 ? interval_or_null(s->ci95_lo_mj, s->ci95_hi_mj) : json_null());
    json_object_set_new(r, "tokens_per_s", json_real(isfinite(s->tokens_per_s) ? s->tokens_per_s : 0));
    json_object_set_new(r, "mean_power_w", energy ? num_or_null(s->mean_power_w) : json_null());
    if (!energy) json_object_set_new(r, "energy_unavailable_reason", json_string(reason));
    json_t *samples = json_array();
    const eco_window *w = eco_measurement_windows(m);
    for (size_t i = 0; energy && i < eco_measurement_window_count(m); i++)
        if (w[i].config == c) json_array_append_new(samples, num_or_null(w[i].decode_mj_per_token_gross));
    json_object_set_new(r, "samples_mj_per_token", samples);
    json_t *q = eco_measurement_quality_json(m, c);
    /* a non-finite metric (NaN weights or logits) is dropped by jansson; the result then says so instead of
     * failing the schema after the whole measurement */
    bool quality_whole = q && json_is_number(json_object_get(q, "kl_to_fp16")) && json_is_number(json_object_get(q, "top1_agreement")) &&
                         json_is_number(json_object_get(q, "perplexity")) && json_is_string(json_object_get(q, "text_sha256"));
    json_object_set_new(r, "quality", quality_whole ? json_deep_copy(q) : json_null());
    json_t *flags = json_array();
    if (q && !quality_whole) add_flag(flags, "quality-non-finite");
    if (s->n < 2) add_flag(flags, "single-trial");
    if (energy && s->n >= 2 && s->cv_pct > CV_FLAG_PCT) add_flag(flags, "cv-over-3pct");
    window_flags(m, c, flags);
    size_t i;
    json_t *f;
    json_array_foreach(flags, i, f) add_flag(run_flags, json_string_value(f));
    json_object_set_new(r, "flags", flags);
    return r;
}

static json_t *comparison_json(const eco_config_summary *s, const char *basis, const char *reason)
{
    bool energy = (!strcmp(basis, "measured") || !strcmp(basis, "unverified")) && isfinite(s->delta_pct);
    json_t *c = json_object();
    json_object_set_new(c, "precision", json_string(eco_precision_name(s->precision)));
    json_object_set_new(c, "baseline", json_string("fp16"));
    json_object_set_new(c, "basis", json_string(energy || !strcmp(basis, "failed") ? basis : "unavailable"));
    json_object_set_new(c, "metric", json_string("mj_per_token_gross"));
    json_object_set_new(c, "delta_pct", energy ? json_real(s->delta_pct) : json_null());
    json_object_set_new(c, "ci95_pct", energy && s->n >= 2 ? interval_or_null(s->delta_ci95_lo, s->delta_ci95_hi) : json_null());
    json_object_set_new(c, "n_pairs", json_integer(energy ? s->n : 0));
    json_object_set_new(c, "method", json_string("paired-t-blocks"));
    const char *verdict = "unavailable";
    if (energy) verdict = s->n < 2 || !isfinite(s->delta_ci95_lo) || !isfinite(s->delta_ci95_hi) ? "inconclusive"
                          : s->delta_ci95_hi < 0 ? "saves" : s->delta_ci95_lo > 0 ? "costs" : "inconclusive";
    json_object_set_new(c, "verdict", json_string(verdict));
    if (!energy) json_object_set_new(c, "energy_unavailable_reason", json_string(reason));
    json_t *flags = json_array();
    if (s->n < 2) add_flag(flags, "single-trial");
    json_object_set_new(c, "flags", flags);
    return c;
}

static void make_run_id(const eco_energy_meta *meta, char *buf, size_t cap)
{
    char t[32];
    struct tm tm;
    gmtime_r(&meta->started, &tm);
    strftime(t, sizeof t, "%Y%m%dT%H%M%SZ", &tm);
    const char *model = meta->preset ? meta->preset : meta->model ? meta->model : "model";
    const char *slash = strrchr(model, '/');
    if (slash) model = slash + 1;
    char tail[96];
    int nt = snprintf(tail, sizeof tail, "-%s-%s", meta->gpu_arch ? meta->gpu_arch : meta->engine_backend, t);
    /* a long checkpoint folder name is cut so the id stays within the schema's length */
    int room = ECO_RUN_ID_MAX - (nt > 0 ? nt : 0);
    snprintf(buf, cap, "%.*s%s", room > 1 ? room : 1, model, tail);
    for (char *p = buf; *p; p++) /* ':' too, though the schema allows it: ids become file names */
        if (*p == ':' || !strchr(ECO_RUN_ID_CHARS, *p)) *p = '-';
}

eco_err eco_energy_json(const eco_measurement *m, const eco_energy_meta *meta, json_t **out)
{
    const char *basis = eco_measurement_basis(m);
    const char *failure = eco_measurement_failure(m);
    const char *reason = failure[0]                        ? failure
                         : meta->energy_unavailable_reason ? meta->energy_unavailable_reason
                                                           : "no energy meter";
    const eco_measure_options *o = eco_measurement_options(m);
    json_t *doc = json_object();
    char run_id[160], created[32];
    if (meta->run_id) snprintf(run_id, sizeof run_id, "%s", meta->run_id);
    else make_run_id(meta, run_id, sizeof run_id);
    struct tm tm;
    gmtime_r(&meta->started, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(doc, "$schema", json_string(SCHEMA_ID));
    json_object_set_new(doc, "schema_version", json_string("2.0.0"));
    json_object_set_new(doc, "example", json_false());
    json_object_set_new(doc, "run_id", json_string(run_id));
    json_object_set_new(doc, "created_utc", json_string(created));
    json_t *sw = eco_env_software_json(meta->engine_backend, meta->cuda_runtime, meta->engine_design);
    json_object_set_new(sw, "protocol_version", json_string(ECO_PROTOCOL_VERSION));
    json_object_set_new(doc, "software", sw);
    json_t *env = json_object();
    json_object_set_new(env, "gpu", meta->gpu ? eco_env_gpu_json(meta->gpu, meta->gpu_arch) : json_null());
    json_object_set_new(env, "host", eco_env_host_json());
    json_object_set_new(doc, "environment", env);
    json_object_set_new(doc, "meter", eco_measurement_meter_json(m));

    json_t *proto = json_object();
    json_object_set_new(proto, "version", json_string(ECO_PROTOCOL_VERSION));
    json_object_set_new(proto, "batch", json_integer(1));
    json_object_set_new(proto, "decoding", json_string("greedy"));
    json_object_set_new(proto, "tokens", json_integer(o->tokens));
    json_object_set_new(proto, "prompt_tokens", json_integer(meta->prompt_tokens > 0 ? meta->prompt_tokens : 1));
    json_object_set_new(proto, "warmups", json_integer(o->warmups));
    json_object_set_new(proto, "iterations", json_integer(o->iterations));
    json_object_set_new(proto, "blocks", json_integer(o->iterations));
    json_object_set_new(proto, "seed", json_integer((json_int_t)(o->seed & 0x7fffffffffffffffull)));
    json_object_set_new(proto, "order", json_string("interleaved-random"));
    json_object_set_new(proto, "min_window_s", json_real(o->min_window_s));
    json_object_set_new(proto, "idle_s", json_real(o->idle_s));
    json_object_set_new(proto, "prefill_excluded", json_true());
    json_object_set_new(proto, "context_length", json_integer(meta->prompt_tokens + o->tokens));
    json_object_set_new(doc, "protocol", proto);

    json_t *idle = json_object();
    json_object_set_new(idle, "before_w", num_or_null(eco_measurement_idle_before_w(m)));
    json_object_set_new(idle, "after_w", num_or_null(eco_measurement_idle_after_w(m)));
    json_object_set_new(idle, "seconds", json_real(strcmp(basis, "unavailable") ? o->idle_s : 0.0));
    json_object_set_new(doc, "idle", idle);

    json_t *wts = json_object();
    json_object_set_new(wts, "source", json_string(meta->weights_source ? meta->weights_source : "synthetic"));
    json_object_set_new(wts, "model", json_string(meta->model ? meta->model : "unknown"));
    json_object_set_new(wts, "params_b", json_real(meta->params_b));
    json_object_set_new(wts, "preset", str_or_null(meta->preset));
    json_object_set_new(wts, "revision", json_null());
    json_object_set_new(wts, "checkpoint_sha256", str_or_null(meta->checkpoint_sha256));
    if (meta->weights_source && !strcmp(meta->weights_source, "synthetic"))
        json_object_set_new(wts, "synthetic_seed", json_integer((json_int_t)(meta->synthetic_seed & 0x7fffffffffffffffull)));
    json_t *quant = json_pack("{s:s}", "lm_head", meta->lm_head_quantized ? "quantized" : "fp16");
    for (int c = 0; c < o->n_configs; c++) /* the threshold only where a precision used it */
        if (o->precisions[c] == ECO_PREC_INT8_MIXED) json_object_set_new(quant, "int8_mixed_threshold", json_real(meta->int8_mixed_threshold));
    json_object_set_new(wts, "quantization", quant);
    json_object_set_new(doc, "weights", wts);

    json_t *results = json_array(), *comparisons = json_array(), *run_flags = json_array();
    for (int c = 0; c < o->n_configs; c++) {
        eco_config_summary s;
        eco_err e = eco_measurement_summary(m, c, &s);
        if (e) { json_decref(doc); json_decref(results); json_decref(comparisons); json_decref(run_flags); return e; }
        json_array_append_new(results, result_json(m, c, &s, basis, reason, run_flags));
        if (c > 0) json_array_append_new(comparisons, comparison_json(&s, basis, reason));
    }
    json_object_set_new(doc, "results", results);
    json_object_set_new(doc, "comparisons", comparisons);
    json_object_set_new(doc, "windows", eco_measurement_windows_json(m));
    if (!strcmp(basis, "unverified") || !strcmp(basis, "failed")) add_flag(run_flags, "counter-check-failed");
    /* net energy subtracts the idle before the run: an idle that moved by more than 10% by the end makes it doubtful */
    double ib = eco_measurement_idle_before_w(m), ia = eco_measurement_idle_after_w(m);
    if (ib > 0 && ia > 0 && fabs(ia - ib) > IDLE_DRIFT_FRACTION * ib) add_flag(run_flags, "idle-drift");
    if (eco_measurement_windows_remeasured(m)) add_flag(run_flags, "window-remeasured");
    json_object_set_new(doc, "flags", run_flags);
    json_t *notes = json_array();
    if (meta->weights_source && !strcmp(meta->weights_source, "synthetic"))
        json_array_append_new(notes, json_string("synthetic weights of the model's exact shapes (seeded random values): "
                                                 "energy and speed are representative, quality metrics are not"));
    for (const char *const *n = meta->notes; n && *n; n++) json_array_append_new(notes, json_string(*n));
    json_object_set_new(doc, "notes", notes);
    *out = doc;
    return ECO_OK;
}
