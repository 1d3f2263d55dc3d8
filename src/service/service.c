/* The request layer: parameter validation (naming the field), the estimator/optimizer of src/fit, JSON answers.
 * Read-only after open, so one eco_service serves many threads at once (the store has its own locking). */
#include "eco/service.h"
#include "eco/paths.h"
#include "eco/jsonschema.h"
#include "eco/json.h"

#include <ctype.h>
#include <errno.h>
#include <sys/stat.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "eco/fit.h"
#include "eco/measure.h"
#include "eco/model.h"
#include "eco/store.h"
#include "service/curves_io.h"

struct eco_service {
    eco_curve_set *set;
    eco_store *store;
    pthread_mutex_t store_lock;
    eco_schema *energy_schema; /* NULL when the schema file cannot be found: submissions are then refused */
};

eco_err eco_service_open(const eco_service_config *cfg, eco_service **out)
{
    *out = NULL;
    if (!cfg || !cfg->curves_path || !*cfg->curves_path)
        return eco_fail_field(ECO_EINVAL, "curves_path", "a curves.json path is required (written by `eco fit`)");
    eco_service *s = calloc(1, sizeof *s);
    if (!s) return eco_fail(ECO_ENOMEM, "service: out of memory");
    s->set = malloc(sizeof *s->set);
    if (!s->set) { free(s); return eco_fail(ECO_ENOMEM, "service: out of memory"); }
    eco_err e = eco_curves_read_file(cfg->curves_path, s->set);
    struct stat st;
    if (!e && cfg->db_path && access(cfg->db_path, R_OK | W_OK) != 0) { /* a mistyped path must not become an empty store */
        if (errno == ENOENT)
            e = eco_fail_field(ECO_ENOTFOUND, "db", "%s: no such file (make the store with `eco import --db %s data/reference`)",
                               cfg->db_path, cfg->db_path);
        else
            e = eco_fail_field(ECO_EIO, "db", "%s: %s (the server reads and writes the store, and its folder for the "
                               "write-ahead log)", cfg->db_path, strerror(errno));
    } else if (!e && cfg->db_path && stat(cfg->db_path, &st) == 0 && st.st_size == 0) {
        e = eco_fail_field(ECO_EFORMAT, "db", "%s: an empty file, not a store (make it with `eco import --db %s data/reference`)",
                           cfg->db_path, cfg->db_path);
    } else if (!e && cfg->db_path) {
        e = eco_store_open(cfg->db_path, &s->store);
        /* a damaged file is found at start, not by the first request that reads the damaged page */
        if (!e) e = eco_store_check_integrity(s->store);
        if (e) {
            eco_fail_context("opening %s: ", cfg->db_path);
            eco_store_close(s->store);
        }
    }
    if (e) { free(s->set); free(s); return e; }
    pthread_mutex_init(&s->store_lock, NULL);
    char schema_path[4096];
    if (eco_find_data_file(ECO_ENERGY_SCHEMA_REL, "ECO_SCHEMA", schema_path, sizeof schema_path) &&
        eco_schema_compile_file(schema_path, 0, &s->energy_schema))
        s->energy_schema = NULL; /* reported on each submission instead of failing the whole service */
    *out = s;
    return ECO_OK;
}

void eco_service_close(eco_service *s)
{
    if (!s) return;
    if (s->store) eco_store_close(s->store);
    eco_schema_free(s->energy_schema);
    pthread_mutex_destroy(&s->store_lock);
    free(s->set);
    free(s);
}

/* ---- parameters ---- */

typedef enum { P_STRING, P_NUMBER, P_INT } ptype;
typedef struct {
    const char *name;
    ptype type;
    double min, max; /* inclusive, numbers only */
} pspec;
typedef struct {
    bool present;
    const char *s;
    double d;
} pval;

static eco_err check_unknown(const json_t *params, const pspec *spec, size_t n)
{
    const char *key;
    json_t *v;
    char unknown[256] = "";
    const char *first = NULL;
    size_t len = 0;
    json_object_foreach((json_t *)params, key, v) {
        bool ok = false;
        for (size_t i = 0; i < n && !ok; i++) ok = !strcmp(key, spec[i].name);
        if (ok) continue;
        if (!first) first = key;
        if (len < sizeof unknown) len += (size_t)snprintf(unknown + len, sizeof unknown - len, "%s'%s'", len ? ", " : "", key);
    }
    if (!first) return ECO_OK;
    char known[256];
    size_t kl = 0;
    for (size_t i = 0; i < n; i++) kl += (size_t)snprintf(known + kl, sizeof known - kl, "%s%s", i ? ", " : "", spec[i].name);
    return eco_fail_field(ECO_EINVAL, first, "unknown parameter%s %s (accepted: %s)", strchr(unknown, ',') ? "s" : "", unknown, known);
}

static eco_err parse_params(const json_t *params, eco_params_origin origin, const pspec *spec, size_t n, pval *out)
{
    memset(out, 0, n * sizeof *out);
    if (!params) return ECO_OK;
    if (!json_is_object(params)) return eco_fail_field(ECO_EINVAL, "", "parameters must be a JSON object");
    eco_err e = check_unknown(params, spec, n);
    if (e) return e;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(params, spec[i].name);
        const char *name = spec[i].name;
        if (!v || json_is_null(v)) continue;
        out[i].present = true;
        if (spec[i].type == P_STRING) {
            if (!json_is_string(v)) return eco_fail_field(ECO_EINVAL, name, "%s must be a string", name);
            out[i].s = json_string_value(v);
            if (!*out[i].s) return eco_fail_field(ECO_EINVAL, name, "%s is empty", name);
            if (eco_utf8_chars(out[i].s, json_string_length(v)) > 200) return eco_fail_field(ECO_EINVAL, name, "%s is longer than 200 characters", name);
            continue;
        }
        double d;
        if (json_is_number(v)) {
            d = json_number_value(v);
        } else if (json_is_string(v) && origin == ECO_PARAMS_STRINGS) {
            const char *s = json_string_value(v);
            char *end;
            errno = 0;
            /* decimal only: strtod also reads hex ("0x10" = 16) and "inf"/"nan", which no caller means */
            d = strpbrk(s, "xXiInN") ? (end = (char *)s, 0) : strtod(s, &end);
            while (isspace((unsigned char)*end)) end++;
            if (end == s || *end || errno == ERANGE)
                return eco_fail_field(ECO_EINVAL, name, "%s must be a number, got '%s'", name, s);
        } else {
            return eco_fail_field(ECO_EINVAL, name, "%s must be %s", name, spec[i].type == P_INT ? "an integer" : "a number");
        }
        if (!isfinite(d)) return eco_fail_field(ECO_EINVAL, name, "%s must be finite", name);
        if (spec[i].type == P_INT && d != floor(d)) return eco_fail_field(ECO_EINVAL, name, "%s must be an integer, got %.15g", name, d);
        if (d < spec[i].min || d > spec[i].max)
            return eco_fail_field(ECO_EINVAL, name, "%s must be between %.15g and %.15g, got %.15g", name, spec[i].min, spec[i].max, d);
        out[i].d = d;
    }
    return ECO_OK;
}

/* Model size: params_b (billions or a count), else the named preset's exact count (eco_resolve_model_size). */
static eco_err resolve_size(const pval *pb, const pval *model, double *params_b, const eco_model_config **preset)
{
    return eco_resolve_model_size(model->present ? model->s : NULL, pb->present, pb->d, params_b, preset);
}

/* An unknown precision name is a lookup failure (400 with the list), not a malformed value. */
static eco_err not_found_precision(void)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", eco_last_error()); /* the message buffer is reused by eco_fail */
    return eco_fail_field(ECO_ENOTFOUND, "precision", "%s", msg);
}

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }
static json_t *range(double lo, double hi) { return json_pack("[o, o]", num(lo), num(hi)); }
static json_t *notes_json(const char (*notes)[ECO_EST_NOTE_BYTES], size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(notes[i]));
    return a;
}

static json_t *anchor_json(const eco_anchor *a)
{
    return json_pack("{s:o, s:o, s:o, s:i, s:s, s:s, s:s, s:s, s:o, s:s, s:b, s:s}", "params_b", num(a->params_b), "delta_pct", num(a->delta_pct),
                     "weight", num(a->weight), "n_trials", a->n_trials, "model", a->model, "gpu", a->gpu, "session", a->session,
                     "source", a->source, "cv_pct", num(a->cv_pct), "flags", a->flags, "synthetic_weights", a->synthetic_weights,
                     "design", a->design);
}

static json_t *energy_json(const eco_energy_value *v)
{
    return json_pack("{s:o, s:o, s:s, s:s}", "value", num(v->value_mj), "range95", range(v->lo_mj, v->hi_mj), "label",
                     eco_label_name(v->label), "basis", v->basis_note ? v->basis_note : "");
}

static const pspec estimate_spec[] = {
    {"gpu", P_STRING, 0, 0},           {"precision", P_STRING, 0, 0}, {"params_b", P_NUMBER, 0, 2e12},
    {"model", P_STRING, 0, 0},         {"batch", P_INT, 1, 1024},     {"ctx", P_INT, 1, 1048576},
};

eco_err eco_service_estimate(eco_service *svc, const json_t *params, eco_params_origin origin, json_t **result)
{
    *result = NULL;
    pval v[6];
    eco_err e = parse_params(params, origin, estimate_spec, 6, v);
    if (e) return e;
    if (!v[0].present) return eco_fail_field(ECO_EINVAL, "gpu", "gpu is required (a card such as \"RTX 4090\" or an architecture)");
    const char *arch;
    if ((e = eco_gpu_resolve_arch(v[0].s, &arch))) return e;
    eco_precision prec = ECO_PREC_NF4;
    if (v[1].present && (e = eco_quantized_precision_parse(v[1].s, &prec))) return e;
    double N;
    const eco_model_config *preset;
    if ((e = resolve_size(&v[2], &v[3], &N, &preset))) return e;
    int batch = v[4].present ? (int)v[4].d : 1, ctxlen = v[5].present ? (int)v[5].d : 2048;
    if ((e = eco_check_ctx(preset, ctxlen))) return e;
    const char *model = v[3].present ? (preset ? preset->name : v[3].s) : NULL;

    eco_estimate est;
    eco_estimate_query q = {.arch = arch, .precision = prec, .params_b = N, .model = model, .batch = batch,
                            .card = eco_gpu_is_arch_name(v[0].s) ? NULL : v[0].s,
                            .ctx = v[5].present ? ctxlen : 0}; /* unasked, the measured short context */
    eco_estimate_query_model_bytes(&q, v[2].present ? NULL : preset); /* an explicit size is not the preset's shapes */
    if ((e = eco_estimate_run(svc->set, &q, &est))) return e;
    const eco_curve *c = est.curve;

    json_t *anchors = json_array(), *sessions = json_array();
    for (size_t i = 0; i < est.n_anchors; i++) {
        const eco_anchor *a = &c->anchors[est.anchor_idx[i]];
        json_array_append_new(anchors, anchor_json(a));
        bool seen = !a->session[0];
        for (size_t k = 0; k < json_array_size(sessions) && !seen; k++) seen = !strcmp(json_string_value(json_array_get(sessions, k)), a->session);
        if (!seen) json_array_append_new(sessions, json_string(a->session));
    }
    json_t *pooled = json_array();
    for (size_t i = 0; i < c->n_pooled; i++) json_array_append_new(pooled, json_string(c->pooled_protocols[i]));
    json_t *r = json_object();
    json_object_set_new(r, "input", json_pack("{s:s, s:s, s:s, s:o, s:o, s:i, s:o}", "gpu", v[0].s, "arch", arch, "precision",
                                              eco_precision_name(prec), "params_b", num(N), "model",
                                              model ? json_string(model) : json_null(), "batch", batch, "ctx",
                                              v[5].present ? json_integer(ctxlen) : json_null())); /* null: the measured short context */
    json_object_set_new(r, "delta_pct", num(est.delta_pct));
    json_object_set_new(r, "range95", range(est.lo_pct, est.hi_pct));
    json_object_set_new(r, "label", json_string(eco_label_name(est.label)));
    json_object_set_new(r, "n", json_integer(est.n));
    json_object_set_new(r, "n_anchors", json_integer((json_int_t)est.n_anchors));
    json_object_set_new(r, "cv_pct", num(est.cv_pct));
    json_object_set_new(r, "sessions", sessions);
    json_object_set_new(r, "anchors", anchors);
    json_object_set_new(r, "protocol", json_string(c->protocol));
    json_object_set_new(r, "backend", json_string(c->backend));
    json_object_set_new(r, "pooled_protocols", pooled);
    json_object_set_new(r, "arch_used", json_string(est.arch_used));
    json_object_set_new(r, "proxy", est.proxy_reason ? json_pack("{s:s, s:s, s:s}", "arch", est.arch_used, "precision",
                                                                 eco_precision_name(c->precision), "reason", est.proxy_reason)
                                                     : json_null());
    /* a long context rescaled the data's ΔE: by how much, and from what (an own curve's figure, not a proxy's) */
    json_object_set_new(r, "context", est.ctx_kv_share > 0
                                          ? json_pack("{s:o, s:o, s:o, s:s}", "kv_share_fp16", num(est.ctx_kv_share), "short_delta_pct",
                                                      num(est.short_delta_pct), "short_range95", range(est.short_lo_pct, est.short_hi_pct),
                                                      "short_label", eco_label_name(est.short_label))
                                          : json_null());
    json_object_set_new(r, "recommendation", json_string(eco_recommendation_name(est.recommendation)));
    json_object_set_new(r, "crossover_b", num(est.crossover_b));
    json_object_set_new(r, "curve", json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:s}", "form", eco_curve_form_name(c->form),
                                              "card", c->card[0] ? json_string(c->card) : json_null(),
                                              "range_b", range(c->n_min_b, c->n_max_b), "resid_sd_pct", num(c->resid_sd_pct),
                                              "loo_median_abs_pct", num(c->loo_median_abs_pct), "loo_mae_pct", num(c->loo_mae_pct),
                                              "params", json_pack("{s:o, s:o, s:o}", "A", num(c->A), "S", num(c->S), "nstar", num(c->nstar)),
                                              "n_anchors", (int)c->n_anchors, "weighting", eco_weighting_name(c->weighting)));
    json_object_set_new(r, "energy",
                        est.has_energy ? json_pack("{s:o, s:o, s:o, s:s}", "fp16_mj_per_token", energy_json(&est.e_fp16),
                                                   "quant_mj_per_token", energy_json(&est.e_quant), "batch_factor",
                                                   num(est.batch_factor), "batch_label", eco_label_name(est.batch_label))
                                       : json_null());
    json_t *notes = notes_json((const char (*)[ECO_EST_NOTE_BYTES])est.notes, est.n_notes);
    json_object_set_new(r, "notes", notes);
    *result = r;
    return ECO_OK;
}

/* ---- optimize ---- */

static const pspec optimize_spec[] = {
    {"gpu", P_STRING, 0, 0},          {"params_b", P_NUMBER, 0, 2e12},        {"model", P_STRING, 0, 0},
    {"ctx", P_INT, 1, 1048576},       {"max_vram_gb", P_NUMBER, 0.001, 1e5}, {"max_latency_ms", P_NUMBER, 0.001, 1e7},
    {"objective", P_STRING, 0, 0},    {"batch", P_INT, 1, ECO_OPT_MAX_BATCH},
};

static json_t *cand_json(const eco_optimize_result *r, int idx)
{
    if (idx < 0) return json_null();
    const eco_candidate *c = &r->cand[idx];
    return json_pack("{s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:b, s:o, s:{s:s, s:s, s:s, s:s, s:s}}",
                     "precision", eco_precision_name(c->precision), "batch", c->batch, "vram_gb", num(c->vram_gb), "weights_gb",
                     num(c->weights_gb), "kv_gb", num(c->kv_gb), "latency_ms", num(c->latency_ms), "throughput_tok_s",
                     num(c->throughput_tok_s), "bound", c->bound, "delta_pct", num(c->delta_pct), "delta_range95",
                     range(c->delta_lo_pct, c->delta_hi_pct), "energy_mj_per_token", num(c->energy_mj), "energy_rel_fp16",
                     num(c->energy_rel_fp16), "feasible", c->feasible, "reason", c->feasible ? json_null() : json_string(c->reason),
                     "basis", "delta", eco_label_name(c->delta_label), "energy", eco_label_name(c->energy_label), "batch",
                     eco_label_name(c->batch_label), "vram", "modelled", "latency", "modelled");
}

eco_err eco_service_optimize(eco_service *svc, const json_t *params, eco_params_origin origin, json_t **result)
{
    *result = NULL;
    pval v[8];
    eco_err e = parse_params(params, origin, optimize_spec, 8, v);
    if (e) return e;
    if (!v[0].present) return eco_fail_field(ECO_EINVAL, "gpu", "gpu is required (a card such as \"RTX 4090\")");
    const eco_gpu_spec *gpu;
    bool exact;
    if ((e = eco_gpu_find(v[0].s, &gpu, &exact))) return e;
    double N;
    const eco_model_config *preset;
    if ((e = resolve_size(&v[1], &v[2], &N, &preset))) return e;
    if (v[3].present && (e = eco_check_ctx(preset, (int)v[3].d))) return e;
    const eco_model_config *overridden = v[1].present ? preset : NULL;
    if (v[1].present) preset = NULL; /* an explicit size wins over the preset's shapes */
    eco_objective obj = ECO_OBJ_ENERGY;
    if (v[6].present && (e = eco_objective_parse(v[6].s, &obj))) return e;
    eco_optimize_query q = {.preset = preset, .params_b = N, .model = v[2].present ? v[2].s : NULL, .gpu = gpu,
                            .card = eco_gpu_is_arch_name(v[0].s) ? NULL : v[0].s,
                            .ctx = v[3].present ? (int)v[3].d : 2048, .max_vram_gb = v[4].present ? v[4].d : 0,
                            .max_latency_ms = v[5].present ? v[5].d : 0, .objective = obj, .batch = v[7].present ? (int)v[7].d : 0};
    eco_optimize_result *r = malloc(sizeof *r);
    if (!r) return eco_fail(ECO_ENOMEM, "optimize: out of memory");
    if ((e = eco_optimize_run(svc->set, &q, r))) { free(r); return e; }
    eco_optimize_note_request(r, v[0].s, gpu, exact, v[4].present, overridden, N);

    json_t *alts = json_array(), *rejected = json_array(), *front = json_array();
    for (size_t i = 0; i < r->n_alt; i++) json_array_append_new(alts, cand_json(r, r->alt[i]));
    for (size_t i = 0; i < r->n_pareto; i++) json_array_append_new(front, cand_json(r, r->pareto[i]));
    /* every precision that is neither recommended nor an alternative, with why */
    for (int p = 0; p < ECO_PREC_COUNT; p++) {
        char why[300];
        if (eco_optimize_rejection(r, (eco_precision)p, obj, gpu->arch, why, sizeof why))
            json_array_append_new(rejected, json_pack("{s:s, s:s}", "precision", eco_precision_name((eco_precision)p), "reason", why));
    }
    json_t *notes = notes_json((const char (*)[ECO_EST_NOTE_BYTES])r->notes, r->n_notes);
    if (r->best < 0) json_array_append_new(notes, json_string("no configuration meets the budgets: closest_infeasible has the smallest total relative excess"));
    json_t *out = json_object();
    json_object_set_new(out, "input", json_pack("{s:s, s:o, s:o, s:i, s:o, s:o, s:s, s:o}", "gpu", v[0].s, "params_b", num(N), "model",
                                                preset ? json_string(preset->name) : v[2].present ? json_string(v[2].s) : json_null(),
                                                "ctx", q.ctx, "max_vram_gb", v[4].present ? num(v[4].d) : json_null(),
                                                "max_latency_ms", v[5].present ? num(v[5].d) : json_null(), "objective",
                                                eco_objective_name(obj), "batch", q.batch ? json_integer(q.batch) : json_null()));
    json_object_set_new(out, "gpu", json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:s, s:s}", "name", gpu->name, "arch", gpu->arch, "vram_gb",
                                              num(gpu->vram_gb), "mem_bw_gbps", num(gpu->mem_bw_gbps), "fp16_tflops",
                                              num(gpu->fp16_tflops), "board_power_w", num(gpu->board_power_w), "matched",
                                              exact ? "card" : "architecture", "source", gpu->source));
    json_object_set_new(out, "vram_budget_gb", num(r->vram_budget_gb));
    json_object_set_new(out, "energy_absolute", json_boolean(r->energy_absolute));
    json_object_set_new(out, "recommended", cand_json(r, r->best));
    json_object_set_new(out, "alternatives", alts);
    json_object_set_new(out, "pareto_front", front);
    json_object_set_new(out, "rejected", rejected);
    json_object_set_new(out, "closest_infeasible", cand_json(r, r->closest_infeasible));
    json_object_set_new(out, "feasible_count", json_integer((json_int_t)r->n_feasible));
    json_object_set_new(out, "candidates_count", json_integer((json_int_t)r->n));
    json_object_set_new(out, "notes", notes);
    free(r);
    *result = out;
    return ECO_OK;
}

/* ---- listings ---- */

eco_err eco_service_architectures(eco_service *svc, json_t **result)
{
    json_t *archs = json_array();
    for (size_t i = 0; i < eco_arch_count(); i++) {
        const char *a = eco_arch_at(i), *reason = NULL;
        bool weak = false;
        const char *proxy = eco_arch_proxy(a, &reason, &weak);
        json_t *precs = json_array(), *cards = json_array();
        for (size_t k = 0; k < svc->set->n_curves; k++) {
            const eco_curve *c = &svc->set->curves[k];
            if (strcmp(c->arch, a)) continue;
            json_array_append_new(precs, json_pack("{s:s, s:o, s:s, s:s, s:i, s:o, s:o, s:o, s:o}", "precision",
                                                   eco_precision_name(c->precision), "card",
                                                   c->card[0] ? json_string(c->card) : json_null(), "form", eco_curve_form_name(c->form),
                                                   "protocol", c->protocol, "n_anchors", (int)c->n_anchors, "range_b",
                                                   range(c->n_min_b, c->n_max_b), "crossover_b", num(c->crossover_b),
                                                   "resid_sd_pct", num(c->resid_sd_pct), "loo_median_abs_pct",
                                                   num(c->loo_median_abs_pct)));
        }
        for (size_t g = 0; g < eco_gpu_count(); g++)
            if (!strcmp(eco_gpu_at(g)->arch, a)) json_array_append_new(cards, json_string(eco_gpu_at(g)->name));
        json_array_append_new(archs, json_pack("{s:s, s:s, s:o, s:o, s:b, s:o, s:o}", "arch", a, "label", eco_arch_label(a),
                                               "proxy", proxy ? json_string(proxy) : json_null(), "proxy_reason",
                                               reason ? json_string(reason) : json_null(), "fp16_baseline",
                                               eco_curve_set_fp16(svc->set, a) != NULL, "precisions", precs, "gpus", cards));
    }
    *result = json_pack("{s:o, s:{s:s, s:I}}", "architectures", archs, "provenance", "dataset", svc->set->dataset, "records",
                        (json_int_t)svc->set->n_records);
    return ECO_OK;
}

eco_err eco_service_gpus(eco_service *svc, json_t **result)
{
    (void)svc;
    json_t *a = json_array();
    for (size_t i = 0; i < eco_gpu_count(); i++) {
        const eco_gpu_spec *g = eco_gpu_at(i);
        json_array_append_new(a, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:s}", "name", g->name, "arch", g->arch, "vram_gb",
                                           num(g->vram_gb), "mem_bw_gbps", num(g->mem_bw_gbps), "fp16_tflops",
                                           num(g->fp16_tflops), "board_power_w", num(g->board_power_w), "source", g->source));
    }
    *result = json_pack("{s:o}", "gpus", a);
    return ECO_OK;
}

eco_err eco_service_models(eco_service *svc, json_t **result)
{
    (void)svc;
    json_t *a = json_array();
    for (size_t i = 0; i < eco_preset_count(); i++) {
        const eco_model_config *m = eco_preset_at(i);
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:o, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I}", "name", m->name,
                                           "hf_id", m->hf_id, "family", eco_model_family_name(m->family), "params_b",
                                           num((double)eco_model_param_count(m) / 1e9), "layers", m->layers, "hidden", m->hidden,
                                           "heads", m->heads, "kv_heads", m->kv_heads, "vocab", m->vocab, "kv_bytes_per_position",
                                           (json_int_t)eco_model_kv_bytes_per_position(m), "weight_bytes_fp16",
                                           (json_int_t)eco_model_weight_bytes(m, ECO_PREC_FP16, false), "weight_bytes_nf4",
                                           (json_int_t)eco_model_weight_bytes(m, ECO_PREC_NF4, false)));
    }
    *result = json_pack("{s:o}", "models", a);
    return ECO_OK;
}

static const pspec measurement_spec[] = {
    {"arch", P_STRING, 0, 0}, {"precision", P_STRING, 0, 0}, {"gpu", P_STRING, 0, 0},
    {"protocol", P_STRING, 0, 0}, {"origin", P_STRING, 0, 0}, {"model", P_STRING, 0, 0},
};

eco_err eco_service_measurements(eco_service *svc, const json_t *filter, eco_params_origin origin, json_t **result)
{
    *result = NULL;
    pval v[6];
    eco_err e = parse_params(filter, origin, measurement_spec, 6, v);
    if (e) return e;
    if (!svc->store) return eco_fail(ECO_EUNSUPPORTED, "no measurement database is configured for this service");
    eco_record_filter f = eco_record_filter_any();
    if (v[0].present) { /* any case, as the other filters */
        for (size_t i = 0; i < eco_arch_count() && !f.arch; i++)
            if (!strcasecmp(v[0].s, eco_arch_at(i))) f.arch = eco_arch_at(i);
        if (!f.arch) return eco_fail_field(ECO_ENOTFOUND, "arch", "unknown arch '%s' (turing, ampere, ada, hopper, blackwell)", v[0].s);
    }
    eco_precision p;
    if (v[1].present) {
        if (eco_precision_parse(v[1].s, &p)) return not_found_precision();
        f.precision = eco_precision_name(p);
    }
    /* gpu and model as the estimator takes them: a card by any of its names ("H200" finds "NVIDIA H200"), a model
     * whatever its case; filtered below, since the rows hold the names as recorded */
    const eco_gpu_spec *card = NULL, *any;
    if (v[2].present && eco_gpu_find(v[2].s, &any, NULL)) return eco_last_error_code(); /* no GPU at all: 400 listing the cards */
    if (v[2].present) card = eco_gpu_exact(v[2].s); /* else a GPU outside the table: matched by its recorded name only */
    if (v[3].present) f.protocol = v[3].s;
    if (v[4].present) {
        if (!strcmp(v[4].s, "reference")) f.origin = ECO_ORIGIN_REFERENCE;
        else if (!strcmp(v[4].s, "run")) f.origin = ECO_ORIGIN_RUN;
        else if (!strcmp(v[4].s, "replication"))
            return eco_fail_field(ECO_EINVAL, "origin", "submitted replications are stored as documents, not measurement rows: "
                                                        "GET /v1/replications lists them");
        else return eco_fail_field(ECO_EINVAL, "origin", "origin must be reference or run, got '%s'", v[4].s);
    }
    eco_record *rows = NULL;
    size_t n = 0;
    pthread_mutex_lock(&svc->store_lock);
    e = eco_store_query_records(svc->store, &f, &rows, &n);
    pthread_mutex_unlock(&svc->store_lock);
    if (e) return e;
    json_t *a = json_array();
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const eco_record *r = &rows[i];
        if (v[2].present && strcasecmp(r->gpu, v[2].s) && !(card && eco_gpu_exact(r->gpu) == card)) continue;
        if (v[5].present && !eco_same_model(r->model, v[5].s)) continue;
        kept++;
        char key[96];
        eco_record_protocol_key(r, key, sizeof key);
        json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:b, s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:s}",
                              "gpu", r->gpu, "arch", r->arch, "model", r->model, "params_b", num(r->params_b), "precision",
                              eco_precision_name(r->precision), "batch", r->batch, "e_fp16_mj", num(r->e_fp16_mj), "e_quant_mj",
                              num(r->e_quant_mj), "e_fp16_sd_mj", num(r->e_fp16_sd_mj), "e_quant_sd_mj", num(r->e_quant_sd_mj),
                              "delta_pct", num(eco_record_delta_pct(r)), "cv_pct", num(r->cv_pct), "n_trials", r->n_trials,
                              "single_trial", r->n_trials < 2, "protocol", key, "session", r->session, "source", r->source,
                              "origin", eco_record_origin_name(r->origin), "synthetic_weights", r->synthetic_weights, "note", r->note,
                              "flags", r->flags, "backend", r->backend);
        json_array_append_new(a, o);
    }
    free(rows);
    *result = json_pack("{s:o, s:I, s:s}", "measurements", a, "count", (json_int_t)kept, "attribution", eco_reference_attribution());
    return ECO_OK;
}

/* ---- replications ---- */

eco_err eco_service_submit_replication(eco_service *svc, const char *doc, size_t len, json_t **result)
{
    *result = NULL;
    if (!svc->store) return eco_fail(ECO_EUNSUPPORTED, "this server keeps no store (start it with --db) for replications");
    if (!svc->energy_schema)
        return eco_fail(ECO_EUNSUPPORTED, "this server cannot find %s to validate replications", ECO_ENERGY_SCHEMA_REL);
    json_t *j;
    eco_err e = eco_json_loadb(doc, len, "energy.json", ECO_SERVICE_MAX_REPLICATION_BYTES, &j);
    if (e) return e == ECO_ETOOBIG ? e : eco_fail_field(ECO_EINVAL, "body", "%s", eco_last_error());
    if (!json_is_object(j)) {
        json_decref(j);
        return eco_fail_field(ECO_EINVAL, "body", "an energy.json must be a JSON object");
    }
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    bool valid = eco_energy_validate(svc->energy_schema, j, &errs) == ECO_OK; /* the schema, then its figures' consistency */
    eco_clear_error();
    json_t *errors = json_array();
    for (size_t i = 0; i < errs.count; i++)
        json_array_append_new(errors, json_pack("{s:s, s:s, s:s}", "instance_path", errs.items[i].instance_path, "keyword",
                                                errs.items[i].keyword, "message", errs.items[i].message));
    eco_schema_errors_free(&errs);
    if (valid && eco_energy_is_example(j)) {
        valid = false;
        json_array_append_new(errors, json_pack("{s:s, s:s, s:s}", "instance_path", "/example", "keyword", "const", "message",
                                                "an example document (example: true, or the shipped examples' GPU UUID or "
                                                "host) is never stored as data"));
    }
    char sha[65];
    eco_sha256_hex(doc, len, sha);
    int64_t id = 0;
    bool stored = false;
    if (valid) {
        const char *name = json_string_value(json_object_get(j, "run_id"));
        pthread_mutex_lock(&svc->store_lock);
        e = eco_store_add_replication(svc->store, name ? name : "submission", doc, len, ECO_VALIDATION_VALID, "", &id, &stored);
        pthread_mutex_unlock(&svc->store_lock);
        if (e) { json_decref(errors); json_decref(j); return e; }
    }
    json_decref(j);
    *result = json_pack("{s:b, s:b, s:o, s:s, s:s, s:o}", "accepted", valid, "stored", stored, "id",
                        valid ? json_integer(id) : json_null(), "sha256", sha, "validation", valid ? "valid" : "invalid",
                        "errors", errors);
    return *result ? ECO_OK : eco_fail(ECO_ENOMEM, "out of memory");
}

static const pspec replications_spec[] = {{"offset", P_INT, 0, 1e9}, {"limit", P_INT, 1, ECO_REPLICATIONS_PAGE_MAX}};

eco_err eco_service_replications(eco_service *svc, const json_t *params, eco_params_origin origin, json_t **result)
{
    *result = NULL;
    pval v[2];
    eco_err e = parse_params(params, origin, replications_spec, 2, v);
    if (e) return e;
    size_t offset = v[0].present ? (size_t)v[0].d : 0, limit = v[1].present ? (size_t)v[1].d : ECO_REPLICATIONS_PAGE;
    json_t *list = json_array();
    size_t total = 0;
    if (svc->store) {
        eco_replication *r = NULL;
        size_t n = 0;
        /* the metadata columns only: a listing reads no document, so a large store does not hold the lock long */
        pthread_mutex_lock(&svc->store_lock);
        e = eco_store_list_replications(svc->store, offset, limit, &r, &n, &total);
        pthread_mutex_unlock(&svc->store_lock);
        if (e) { json_decref(list); return e; }
        for (size_t i = 0; i < n && !e; i++) {
            json_t *row = json_pack("{s:I, s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "id", (json_int_t)r[i].id, "name",
                                                  r[i].name, "sha256", r[i].sha256, "validation",
                                                  eco_validation_name(r[i].validation), "submitted_at", r[i].submitted_at,
                                                  "run_id", r[i].run_id[0] ? json_string(r[i].run_id) : json_null(),
                                                  "gpu", r[i].gpu[0] ? json_string(r[i].gpu) : json_null(), "model",
                                                  r[i].model[0] ? json_string(r[i].model) : json_null());
            /* a row that cannot be written is an error, never silently left out of the page */
            if (!row || json_array_append_new(list, row)) e = eco_fail(ECO_ENOMEM, "listing replication #%lld", (long long)r[i].id);
        }
        eco_store_free_replications(r, n);
        if (e) { json_decref(list); return e; }
    }
    *result = json_pack("{s:o, s:I, s:I, s:I, s:I}", "replications", list, "count", (json_int_t)json_array_size(list), "total",
                        (json_int_t)total, "offset", (json_int_t)offset, "limit", (json_int_t)limit);
    return *result ? ECO_OK : eco_fail(ECO_ENOMEM, "out of memory");
}

eco_err eco_service_replication_doc(eco_service *svc, int64_t id, char **doc, size_t *len)
{
    *doc = NULL;
    *len = 0;
    if (!svc->store) return eco_fail(ECO_EUNSUPPORTED, "no measurement database is configured for this service");
    eco_replication r;
    pthread_mutex_lock(&svc->store_lock);
    eco_err e = eco_store_get_replication(svc->store, id, &r);
    pthread_mutex_unlock(&svc->store_lock);
    if (e) return e;
    *doc = r.doc;
    *len = strlen(r.doc);
    return ECO_OK;
}
