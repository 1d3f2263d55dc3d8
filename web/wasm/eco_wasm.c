/* The browser's entry points into src/fit (compiled to eco.wasm, a WASI reactor without main).
 *
 * Why a shim: src/fit has no I/O and no JSON, and jansson does not exist for wasm32 here, so the page parses
 * curves.json in JavaScript and hands every field over through the setters below (numbers as f64, JSON null as
 * NaN, strings as NUL-terminated UTF-8 in fixed slots). The doubles are the same ones jansson's reader produces
 * (both parsers round the decimal text to the nearest double), so the C structs are identical to those of
 * `eco serve` and the estimator computes the same numbers. Answers come back as JSON text in one output buffer,
 * shaped exactly like the service's responses (src/service/service.c) so one comparison covers every field.
 *
 * Protocol for JS (web/js/eco-wasm.js is the only caller):
 *   eco_wasm_str(i)  -> address of string slot i (WASM_STR_SLOTS slots of WASM_STR_CAP bytes)
 *   eco_wasm_f64()   -> address of WASM_F64_CAP doubles of scratch input/output
 *   eco_wasm_out()   -> address of the output text; functions return its length, or -(eco_err) on failure with
 *                       the output holding {"error":..., "field":..., "code":...}
 * Setters act on the last curve / fp16 baseline added, in curves.json order. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eco/fit.h"
#include "eco/model.h"
#include "eco/quant.h"
#include "eco/record.h"
#include "eco_wasm.h"

#define EXPORT(name) __attribute__((export_name(name)))
#define WASM_STR_SLOTS 8
#define WASM_STR_CAP 1024 /* STRING_MAX characters of up to 4 UTF-8 bytes, and the NUL */
#define WASM_F64_CAP (ECO_FIT_BOOT * 3 + 64)
#define WASM_OUT_CAP (256 * 1024)

/* same limits as the service's parameter specs, so the browser rejects what the API rejects */
#define PARAMS_IN_MAX 2e12
#define BATCH_MAX 1024
#define CTX_MAX 1048576
#define STRING_MAX 200

static char g_str[WASM_STR_SLOTS][WASM_STR_CAP];
static double g_f64[WASM_F64_CAP];
static char g_out[WASM_OUT_CAP];
static size_t g_len;
static bool g_overflow;
static eco_curve_set g_set;
static bool g_loaded;
static eco_estimate g_est;
static eco_optimize_result g_opt;

EXPORT("eco_wasm_str") char *eco_wasm_str(int i) { return i >= 0 && i < WASM_STR_SLOTS ? g_str[i] : NULL; }
EXPORT("eco_wasm_f64") double *eco_wasm_f64(void) { return g_f64; }
EXPORT("eco_wasm_out") char *eco_wasm_out(void) { return g_out; }
EXPORT("eco_wasm_str_cap") int eco_wasm_str_cap(void) { return WASM_STR_CAP; }
EXPORT("eco_wasm_f64_cap") int eco_wasm_f64_cap(void) { return WASM_F64_CAP; }

/* ---- a small JSON writer over g_out ---- */

static void out_reset(void) { g_len = 0; g_overflow = false; g_out[0] = '\0'; }

__attribute__((format(printf, 1, 2))) static void raw(const char *fmt, ...)
{
    if (g_overflow) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g_out + g_len, WASM_OUT_CAP - g_len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= WASM_OUT_CAP - g_len) { g_overflow = true; return; }
    g_len += (size_t)n;
}

static void comma(void)
{
    if (g_len && g_out[g_len - 1] != '{' && g_out[g_len - 1] != '[' && g_out[g_len - 1] != ':') raw(",");
}

static void jstr(const char *s)
{
    comma();
    raw("\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') raw("\\%c", *p);
        else if (*p < 0x20) raw("\\u%04x", *p);
        else raw("%c", *p);
    }
    raw("\"");
}

static void key(const char *k) { jstr(k); raw(":"); }
/* %.17g round-trips every double, so JS reads exactly the value C computed */
static void jnum(double v) { comma(); if (isfinite(v)) raw("%.17g", v); else raw("null"); }
static void jint(long long v) { comma(); raw("%lld", v); }
static void jbool(bool v) { comma(); raw(v ? "true" : "false"); }
static void jnull(void) { comma(); raw("null"); }
static void obj(void) { comma(); raw("{"); }
static void arr(void) { comma(); raw("["); }
static void end_obj(void) { raw("}"); }
static void end_arr(void) { raw("]"); }
static void kstr(const char *k, const char *v) { key(k); if (v) jstr(v); else jnull(); }
static void knum(const char *k, double v) { key(k); jnum(v); }
static void kint(const char *k, long long v) { key(k); jint(v); }
static void krange(const char *k, double lo, double hi) { key(k); arr(); jnum(lo); jnum(hi); end_arr(); }

static int finish(void)
{
    if (g_overflow) {
        out_reset();
        raw("{\"error\":\"output buffer too small\",\"field\":\"\",\"code\":\"ETOOBIG\"}");
        return -(int)ECO_ETOOBIG;
    }
    return (int)g_len;
}

static int fail_out(eco_err e)
{
    out_reset();
    obj();
    kstr("error", eco_last_error());
    kstr("field", eco_last_error_field());
    kstr("code", eco_err_name(e));
    end_obj();
    eco_clear_error();
    return -(int)e;
}

/* ---- loading curves.json ---- */

static eco_curve *cur_curve(void) { return g_set.n_curves ? &g_set.curves[g_set.n_curves - 1] : NULL; }
static eco_fp16_baseline *cur_fp16(void) { return g_set.n_fp16 ? &g_set.fp16[g_set.n_fp16 - 1] : NULL; }

static eco_err copy_str(char *dst, size_t cap, int slot, const char *what)
{
    size_t n = strnlen(g_str[slot], WASM_STR_CAP);
    if (n >= cap || n == WASM_STR_CAP) return eco_fail_field(ECO_EFORMAT, what, "curves.json: %s is too long", what);
    memcpy(dst, g_str[slot], n + 1);
    return ECO_OK;
}

#define TRY(x) do { eco_err e_ = (x); if (e_) return fail_out(e_); } while (0)

/* str0 = dataset; f64[0] = records */
EXPORT("eco_wasm_reset") int eco_wasm_reset(void)
{
    memset(&g_set, 0, sizeof g_set);
    g_loaded = false;
    TRY(copy_str(g_set.dataset, sizeof g_set.dataset, 0, "provenance.dataset"));
    g_set.n_records = g_f64[0] > 0 ? (size_t)g_f64[0] : 0;
    out_reset();
    return 0;
}

/* str: 0 arch, 1 precision, 2 protocol, 3 backend, 4 form, 5 weighting, 6 form_note, 7 card ("": the arch's pool)
 * f64: 0 anchor_compat, 1 A, 2 S, 3 nstar, 4 s_cap_pct, 5 n_min_b, 6 n_max_b, 7 resid_sd_pct, 8 crossover_b,
 *      9 crossover_dir, 10 n_distinct_sizes, 11 loo median_abs_pct, 12 loo mae_pct, 13 seed */
EXPORT("eco_wasm_curve_add") int eco_wasm_curve_add(void)
{
    if (g_set.n_curves >= ECO_FIT_MAX_CURVES) TRY(eco_fail(ECO_EFORMAT, "curves.json: too many curves"));
    eco_curve *c = &g_set.curves[g_set.n_curves];
    memset(c, 0, sizeof *c);
    TRY(copy_str(c->arch, sizeof c->arch, 0, "arch"));
    if (!eco_arch_is_known(c->arch)) TRY(eco_fail_field(ECO_EFORMAT, "arch", "curves.json: unknown arch '%s'", c->arch));
    if (eco_precision_parse(g_str[1], &c->precision) || c->precision == ECO_PREC_FP16)
        TRY(eco_fail_field(ECO_EFORMAT, "precision", "curves.json: bad precision '%s'", g_str[1]));
    TRY(copy_str(c->protocol, sizeof c->protocol, 2, "protocol"));
    TRY(copy_str(c->backend, sizeof c->backend, 3, "backend"));
    TRY(eco_curve_form_parse(g_str[4], &c->form));
    TRY(eco_weighting_parse(g_str[5], &c->weighting));
    TRY(copy_str(c->form_note, sizeof c->form_note, 6, "form_note"));
    TRY(copy_str(c->card, sizeof c->card, 7, "card"));
    const double *f = g_f64;
    for (int i = 1; i <= 6; i++)
        if (!isfinite(f[i])) TRY(eco_fail(ECO_EFORMAT, "curves.json: curve parameter %d is not a number", i));
    c->anchor_compat = f[0] != 0;
    c->A = f[1]; c->S = f[2]; c->nstar = f[3]; c->s_cap_pct = f[4];
    if (c->form == ECO_FORM_SATURATING && !(c->nstar > 0)) TRY(eco_fail_field(ECO_EFORMAT, "nstar", "curves.json: nstar must be > 0"));
    c->n_min_b = f[5]; c->n_max_b = f[6];
    if (!(c->n_min_b > 0) || c->n_max_b < c->n_min_b) TRY(eco_fail(ECO_EFORMAT, "curves.json: bad n_min_b/n_max_b"));
    c->resid_sd_pct = f[7]; c->crossover_b = f[8];
    c->crossover_dir = f[9] > 0 ? 1 : f[9] < 0 ? -1 : 0;
    c->n_distinct_sizes = f[10] > 0 ? (size_t)f[10] : 0;
    c->loo_median_abs_pct = f[11]; c->loo_mae_pct = f[12];
    c->seed = f[13] > 0 ? (uint64_t)f[13] : 0;
    if (eco_curve_set_find_exact(&g_set, c->arch, c->precision, c->card))
        TRY(eco_fail(ECO_EFORMAT, "curves.json: duplicate (arch, precision, card)"));
    if (c->card[0] && !eco_curve_set_find(&g_set, c->arch, c->precision))
        TRY(eco_fail_field(ECO_EFORMAT, "card", "curves.json: a card's curve before its arch's pooled one"));
    g_set.n_curves++;
    return 0;
}

/* str: 0 model, 1 gpu, 2 session, 3 source, 4 flags, 5 design ("" when none); f64: 0 params_b, 1 delta_pct, 2 sd_pct, 3 cv_pct,
 * 4 weight, 5 n_trials, 6 synthetic_weights (0 or 1) */
EXPORT("eco_wasm_curve_anchor") int eco_wasm_curve_anchor(void)
{
    eco_curve *c = cur_curve();
    if (!c || c->n_anchors >= ECO_FIT_MAX_ANCHORS) TRY(eco_fail(ECO_EFORMAT, "curves.json: anchor without a curve or too many anchors"));
    eco_anchor *a = &c->anchors[c->n_anchors];
    memset(a, 0, sizeof *a);
    const double *f = g_f64;
    if (!(f[0] > 0) || !isfinite(f[1]) || !isfinite(f[4])) TRY(eco_fail(ECO_EFORMAT, "curves.json: bad anchor numbers"));
    if (!(f[5] >= 1 && f[5] <= 1e6)) TRY(eco_fail(ECO_EFORMAT, "curves.json: anchor n_trials out of range"));
    a->params_b = f[0]; a->delta_pct = f[1]; a->sd_pct = f[2]; a->cv_pct = f[3]; a->weight = f[4]; a->n_trials = (int)f[5];
    a->synthetic_weights = f[6] != 0;
    TRY(copy_str(a->model, sizeof a->model, 0, "anchor model"));
    TRY(copy_str(a->gpu, sizeof a->gpu, 1, "anchor gpu"));
    TRY(copy_str(a->session, sizeof a->session, 2, "anchor session"));
    TRY(copy_str(a->source, sizeof a->source, 3, "anchor source"));
    TRY(copy_str(a->flags, sizeof a->flags, 4, "anchor flags"));
    TRY(copy_str(a->design, sizeof a->design, 5, "anchor design"));
    c->n_anchors++;
    return 0;
}

/* f64: n triples (A, S, nstar) */
EXPORT("eco_wasm_curve_boot") int eco_wasm_curve_boot(int n)
{
    eco_curve *c = cur_curve();
    if (!c || n < 0 || n > ECO_FIT_BOOT || c->n_boot + (size_t)n > ECO_FIT_BOOT) TRY(eco_fail(ECO_EFORMAT, "curves.json: bad boot array"));
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            if (!isfinite(g_f64[3 * i + k])) TRY(eco_fail(ECO_EFORMAT, "curves.json: boot values must be numbers"));
            c->boot[c->n_boot][k] = g_f64[3 * i + k];
        }
        if (c->form == ECO_FORM_SATURATING && !(c->boot[c->n_boot][2] > 0)) TRY(eco_fail(ECO_EFORMAT, "curves.json: boot nstar must be > 0"));
        c->n_boot++;
    }
    return 0;
}

/* f64: n LOO errors */
EXPORT("eco_wasm_curve_loo") int eco_wasm_curve_loo(int n)
{
    eco_curve *c = cur_curve();
    if (!c || n < 0 || c->loo_n + (size_t)n > ECO_FIT_MAX_ANCHORS) TRY(eco_fail(ECO_EFORMAT, "curves.json: bad loo array"));
    for (int i = 0; i < n; i++) c->loo_err_pct[c->loo_n++] = g_f64[i];
    return 0;
}

/* kind 0: session (str0), 1: pooled protocol (str0), 2: excluded row (str0 source, str1 reason, f64 0 params_b and
 * 1 delta_pct, NaN when unknown) */
EXPORT("eco_wasm_curve_item") int eco_wasm_curve_item(int kind)
{
    eco_curve *c = cur_curve();
    if (!c) TRY(eco_fail(ECO_EFORMAT, "curves.json: item without a curve"));
    if (kind == 0) {
        if (c->n_sessions >= ECO_FIT_MAX_SESSIONS) TRY(eco_fail(ECO_EFORMAT, "curves.json: too many sessions"));
        TRY(copy_str(c->sessions[c->n_sessions], sizeof c->sessions[0], 0, "session"));
        c->n_sessions++;
    } else if (kind == 1) {
        if (c->n_pooled >= ECO_FIT_MAX_PROTOCOLS) TRY(eco_fail(ECO_EFORMAT, "curves.json: too many pooled protocols"));
        TRY(copy_str(c->pooled_protocols[c->n_pooled], sizeof c->pooled_protocols[0], 0, "pooled protocol"));
        c->n_pooled++;
    } else if (kind == 2) {
        if (c->n_excluded >= ECO_FIT_MAX_EXCLUDED) TRY(eco_fail(ECO_EFORMAT, "curves.json: too many excluded rows"));
        eco_excluded *x = &c->excluded[c->n_excluded];
        TRY(copy_str(x->source, sizeof x->source, 0, "excluded source"));
        TRY(copy_str(x->reason, sizeof x->reason, 1, "excluded reason"));
        bool known = g_f64[0] > 0 && isfinite(g_f64[0]) && isfinite(g_f64[1]);
        x->params_b = known ? g_f64[0] : NAN;
        x->delta_pct = known ? g_f64[1] : NAN;
        c->n_excluded++;
    } else {
        TRY(eco_fail(ECO_EINVAL, "unknown item kind %d", kind));
    }
    return 0;
}

/* str: 0 arch, 1 protocol, 2 backend ("" when curves.json has none), 3 card ("": the arch's cards pooled) */
EXPORT("eco_wasm_fp16_add") int eco_wasm_fp16_add(void)
{
    if (g_set.n_fp16 >= sizeof g_set.fp16 / sizeof g_set.fp16[0]) TRY(eco_fail(ECO_EFORMAT, "curves.json: too many fp16 baselines"));
    eco_fp16_baseline *b = &g_set.fp16[g_set.n_fp16];
    memset(b, 0, sizeof *b);
    TRY(copy_str(b->arch, sizeof b->arch, 0, "fp16 arch"));
    if (!eco_arch_is_known(b->arch)) TRY(eco_fail(ECO_EFORMAT, "curves.json: fp16 baseline of unknown arch '%s'", b->arch));
    TRY(copy_str(b->protocol, sizeof b->protocol, 1, "fp16 protocol"));
    TRY(copy_str(b->backend, sizeof b->backend, 2, "fp16 backend"));
    TRY(copy_str(b->card, sizeof b->card, 3, "fp16 card"));
    g_set.n_fp16++;
    return 0;
}

/* str0 gpus; f64: 0 params_b, 1 e_mj, 2 e_min_mj, 3 e_max_mj, 4 n_rows */
EXPORT("eco_wasm_fp16_point") int eco_wasm_fp16_point(void)
{
    eco_fp16_baseline *b = cur_fp16();
    if (!b || b->n_points >= ECO_FIT_MAX_FP16) TRY(eco_fail(ECO_EFORMAT, "curves.json: fp16 point without a baseline or too many"));
    eco_fp16_point *p = &b->points[b->n_points];
    const double *f = g_f64;
    if (!(f[0] > 0) || !(f[1] > 0) || !(f[2] > 0) || !isfinite(f[3])) TRY(eco_fail(ECO_EFORMAT, "curves.json: fp16 values must be > 0"));
    if (b->n_points && f[0] <= b->points[b->n_points - 1].params_b) TRY(eco_fail(ECO_EFORMAT, "curves.json: fp16 points must be sorted"));
    p->params_b = f[0]; p->e_mj = f[1]; p->e_min_mj = f[2]; p->e_max_mj = f[3]; p->n_rows = (int)f[4];
    TRY(copy_str(p->gpus, sizeof p->gpus, 0, "fp16 gpus"));
    b->n_points++;
    return 0;
}

EXPORT("eco_wasm_loaded") int eco_wasm_loaded(void)
{
    g_loaded = g_set.n_curves > 0;
    return (int)g_set.n_curves;
}

/* ---- request glue, the same rules as src/service/service.c ---- */

static bool present(int slot) { return g_str[slot][0] != '\0'; }

static eco_err check_string(int slot, const char *name)
{
    if (eco_utf8_chars(g_str[slot], strnlen(g_str[slot], WASM_STR_CAP)) > STRING_MAX) /* as the API counts them */
        return eco_fail_field(ECO_EINVAL, name, "%s is longer than %d characters", name, STRING_MAX);
    return ECO_OK;
}

static eco_err check_number(double d, const char *name, double min, double max, bool integer)
{
    if (!isfinite(d)) return eco_fail_field(ECO_EINVAL, name, "%s must be finite", name);
    if (integer && d != floor(d)) return eco_fail_field(ECO_EINVAL, name, "%s must be an integer, got %.15g", name, d);
    if (d < min || d > max) return eco_fail_field(ECO_EINVAL, name, "%s must be between %.15g and %.15g, got %.15g", name, min, max, d);
    return ECO_OK;
}

static void anchor_json(const eco_anchor *a)
{
    obj();
    knum("params_b", a->params_b); knum("delta_pct", a->delta_pct); knum("weight", a->weight);
    kint("n_trials", a->n_trials); kstr("model", a->model); kstr("gpu", a->gpu); kstr("session", a->session);
    kstr("source", a->source); knum("cv_pct", a->cv_pct); kstr("flags", a->flags);
    key("synthetic_weights"); jbool(a->synthetic_weights); kstr("design", a->design);
    end_obj();
}

static void energy_json(const char *k, const eco_energy_value *v)
{
    key(k);
    obj();
    knum("value", v->value_mj); krange("range95", v->lo_mj, v->hi_mj);
    kstr("label", eco_label_name(v->label)); kstr("basis", v->basis_note ? v->basis_note : "");
    end_obj();
}

#define TRYF(x) do { eco_err e_ = (x); if (e_) return fail_out(e_); } while (0)

/* str: 0 gpu, 1 precision ("" = nf4), 2 model ("" = none); f64: 0 params_b (NaN = none), 1 batch (NaN = 1), 2 ctx (NaN = 2048) */
EXPORT("eco_wasm_estimate") int eco_wasm_estimate(void)
{
    if (!g_loaded) TRYF(eco_fail(ECO_ESTATE, "no curves loaded"));
    double pb = g_f64[0], bd = g_f64[1], cd = g_f64[2];
    TRYF(check_string(0, "gpu"));
    TRYF(check_string(1, "precision"));
    TRYF(check_string(2, "model"));
    if (!isnan(pb)) TRYF(check_number(pb, "params_b", 0, PARAMS_IN_MAX, false));
    if (!isnan(bd)) TRYF(check_number(bd, "batch", 1, BATCH_MAX, true));
    if (!isnan(cd)) TRYF(check_number(cd, "ctx", 1, CTX_MAX, true));
    if (!present(0)) TRYF(eco_fail_field(ECO_EINVAL, "gpu", "gpu is required (a card such as \"RTX 4090\" or an architecture)"));
    const char *arch;
    TRYF(eco_gpu_resolve_arch(g_str[0], &arch));
    eco_precision prec = ECO_PREC_NF4;
    if (present(1)) TRYF(eco_quantized_precision_parse(g_str[1], &prec));
    double N;
    const eco_model_config *preset;
    const char *model_in = present(2) ? g_str[2] : NULL;
    TRYF(eco_resolve_model_size(model_in, !isnan(pb), pb, &N, &preset));
    int batch = isnan(bd) ? 1 : (int)bd, ctxlen = isnan(cd) ? 2048 : (int)cd;
    const char *model = model_in ? (preset ? preset->name : model_in) : NULL;

    TRYF(eco_check_ctx(preset, ctxlen));
    eco_estimate_query q = {.arch = arch, .precision = prec, .params_b = N, .model = model, .batch = batch,
                            .card = eco_gpu_is_arch_name(g_str[0]) ? NULL : g_str[0],
                            .ctx = isnan(cd) ? 0 : ctxlen}; /* unasked, the measured short context */
    eco_estimate_query_model_bytes(&q, isnan(pb) ? preset : NULL); /* an explicit size is not the preset's shapes */
    TRYF(eco_estimate_run(&g_set, &q, &g_est));
    const eco_estimate *est = &g_est;
    const eco_curve *c = est->curve;

    out_reset();
    obj();
    key("input"); obj();
    kstr("gpu", g_str[0]); kstr("arch", arch); kstr("precision", eco_precision_name(prec)); knum("params_b", N);
    kstr("model", model); kint("batch", batch);
    key("ctx"); if (isnan(cd)) jnull(); else jint(ctxlen); /* null: the measured short context */
    end_obj();
    knum("delta_pct", est->delta_pct);
    krange("range95", est->lo_pct, est->hi_pct);
    kstr("label", eco_label_name(est->label));
    kint("n", est->n);
    kint("n_anchors", (long long)est->n_anchors);
    knum("cv_pct", est->cv_pct);
    key("sessions"); arr();
    for (size_t i = 0; i < est->n_anchors; i++) { /* first occurrence order, as the service lists them */
        const eco_anchor *a = &c->anchors[est->anchor_idx[i]];
        bool seen = !a->session[0];
        for (size_t k = 0; k < i && !seen; k++) seen = !strcmp(c->anchors[est->anchor_idx[k]].session, a->session);
        if (!seen) jstr(a->session);
    }
    end_arr();
    key("anchors"); arr();
    for (size_t i = 0; i < est->n_anchors; i++) anchor_json(&c->anchors[est->anchor_idx[i]]);
    end_arr();
    kstr("protocol", c->protocol);
    kstr("backend", c->backend);
    key("pooled_protocols"); arr();
    for (size_t i = 0; i < c->n_pooled; i++) jstr(c->pooled_protocols[i]);
    end_arr();
    kstr("arch_used", est->arch_used);
    key("proxy");
    if (est->proxy_reason) { obj(); kstr("arch", est->arch_used); kstr("precision", eco_precision_name(c->precision)); kstr("reason", est->proxy_reason); end_obj(); }
    else jnull();
    key("context"); /* as the service: a long context's rescaling of the data's ΔE */
    if (est->ctx_kv_share > 0) {
        obj(); knum("kv_share_fp16", est->ctx_kv_share); knum("short_delta_pct", est->short_delta_pct);
        krange("short_range95", est->short_lo_pct, est->short_hi_pct); kstr("short_label", eco_label_name(est->short_label));
        end_obj();
    } else {
        jnull();
    }
    kstr("recommendation", eco_recommendation_name(est->recommendation));
    knum("crossover_b", est->crossover_b);
    key("curve"); obj();
    kstr("form", eco_curve_form_name(c->form)); kstr("card", c->card[0] ? c->card : NULL); krange("range_b", c->n_min_b, c->n_max_b);
    knum("resid_sd_pct", c->resid_sd_pct); knum("loo_median_abs_pct", c->loo_median_abs_pct); knum("loo_mae_pct", c->loo_mae_pct);
    key("params"); obj(); knum("A", c->A); knum("S", c->S); knum("nstar", c->nstar); end_obj();
    kint("n_anchors", (long long)c->n_anchors); kstr("weighting", eco_weighting_name(c->weighting));
    end_obj();
    key("energy");
    if (est->has_energy) {
        obj();
        energy_json("fp16_mj_per_token", &est->e_fp16);
        energy_json("quant_mj_per_token", &est->e_quant);
        knum("batch_factor", est->batch_factor);
        kstr("batch_label", eco_label_name(est->batch_label));
        end_obj();
    } else {
        jnull();
    }
    key("notes"); arr();
    for (size_t i = 0; i < est->n_notes; i++) jstr(est->notes[i]);
    end_arr();
    end_obj();
    return finish();
}

static void cand_json(const eco_optimize_result *r, int idx)
{
    if (idx < 0) { jnull(); return; }
    const eco_candidate *c = &r->cand[idx];
    obj();
    kstr("precision", eco_precision_name(c->precision)); kint("batch", c->batch);
    knum("vram_gb", c->vram_gb); knum("weights_gb", c->weights_gb); knum("kv_gb", c->kv_gb);
    knum("latency_ms", c->latency_ms); knum("throughput_tok_s", c->throughput_tok_s); kstr("bound", c->bound);
    knum("delta_pct", c->delta_pct); krange("delta_range95", c->delta_lo_pct, c->delta_hi_pct);
    knum("energy_mj_per_token", c->energy_mj); knum("energy_rel_fp16", c->energy_rel_fp16);
    key("feasible"); jbool(c->feasible);
    kstr("reason", c->feasible ? NULL : c->reason);
    key("basis"); obj();
    kstr("delta", eco_label_name(c->delta_label)); kstr("energy", eco_label_name(c->energy_label));
    kstr("batch", eco_label_name(c->batch_label)); kstr("vram", "modelled"); kstr("latency", "modelled");
    end_obj();
    end_obj();
}

/* str: 0 gpu, 1 model ("" = none), 2 objective ("" = energy); f64: 0 params_b, 1 ctx, 2 max_vram_gb, 3 max_latency_ms,
 * 4 batch (NaN = none) */
EXPORT("eco_wasm_optimize") int eco_wasm_optimize(void)
{
    if (!g_loaded) TRYF(eco_fail(ECO_ESTATE, "no curves loaded"));
    double pb = g_f64[0], cd = g_f64[1], vr = g_f64[2], lat = g_f64[3], bt = g_f64[4];
    TRYF(check_string(0, "gpu"));
    TRYF(check_string(1, "model"));
    TRYF(check_string(2, "objective"));
    if (!isnan(pb)) TRYF(check_number(pb, "params_b", 0, PARAMS_IN_MAX, false));
    if (!isnan(cd)) TRYF(check_number(cd, "ctx", 1, CTX_MAX, true));
    if (!isnan(vr)) TRYF(check_number(vr, "max_vram_gb", 0.001, 1e5, false));
    if (!isnan(lat)) TRYF(check_number(lat, "max_latency_ms", 0.001, 1e7, false));
    if (!isnan(bt)) TRYF(check_number(bt, "batch", 1, ECO_OPT_MAX_BATCH, true));
    if (!present(0)) TRYF(eco_fail_field(ECO_EINVAL, "gpu", "gpu is required (a card such as \"RTX 4090\")"));
    const eco_gpu_spec *gpu;
    bool exact;
    TRYF(eco_gpu_find(g_str[0], &gpu, &exact));
    double N;
    const eco_model_config *preset;
    const char *model_in = present(1) ? g_str[1] : NULL;
    TRYF(eco_resolve_model_size(model_in, !isnan(pb), pb, &N, &preset));
    if (!isnan(cd)) TRYF(eco_check_ctx(preset, (int)cd));
    const eco_model_config *overridden = isnan(pb) ? NULL : preset;
    if (!isnan(pb)) preset = NULL; /* an explicit size wins over the preset's shapes */
    eco_objective objective = ECO_OBJ_ENERGY;
    if (present(2)) TRYF(eco_objective_parse(g_str[2], &objective));
    eco_optimize_query q = {.preset = preset, .params_b = N, .model = model_in, .gpu = gpu,
                            .card = eco_gpu_is_arch_name(g_str[0]) ? NULL : g_str[0],
                            .ctx = isnan(cd) ? 2048 : (int)cd, .max_vram_gb = isnan(vr) ? 0 : vr,
                            .max_latency_ms = isnan(lat) ? 0 : lat, .objective = objective, .batch = isnan(bt) ? 0 : (int)bt};
    TRYF(eco_optimize_run(&g_set, &q, &g_opt));
    eco_optimize_note_request(&g_opt, g_str[0], gpu, exact, !isnan(vr), overridden, N);
    const eco_optimize_result *r = &g_opt;

    out_reset();
    obj();
    key("input"); obj();
    kstr("gpu", g_str[0]); knum("params_b", N); kstr("model", preset ? preset->name : model_in); kint("ctx", q.ctx);
    knum("max_vram_gb", isnan(vr) ? NAN : vr); knum("max_latency_ms", isnan(lat) ? NAN : lat);
    kstr("objective", eco_objective_name(objective));
    key("batch"); if (q.batch) jint(q.batch); else jnull();
    end_obj();
    key("gpu"); obj();
    kstr("name", gpu->name); kstr("arch", gpu->arch); knum("vram_gb", gpu->vram_gb); knum("mem_bw_gbps", gpu->mem_bw_gbps);
    knum("fp16_tflops", gpu->fp16_tflops); knum("board_power_w", gpu->board_power_w); kstr("matched", exact ? "card" : "architecture");
    kstr("source", gpu->source);
    end_obj();
    knum("vram_budget_gb", r->vram_budget_gb);
    key("energy_absolute"); jbool(r->energy_absolute);
    key("recommended"); cand_json(r, r->best);
    key("alternatives"); arr();
    for (size_t i = 0; i < r->n_alt; i++) cand_json(r, r->alt[i]);
    end_arr();
    key("pareto_front"); arr();
    for (size_t i = 0; i < r->n_pareto; i++) cand_json(r, r->pareto[i]);
    end_arr();
    /* every precision neither recommended nor an alternative, with why (the service's wording) */
    key("rejected"); arr();
    for (int p = 0; p < ECO_PREC_COUNT; p++) {
        char why[300];
        if (eco_optimize_rejection(r, (eco_precision)p, objective, gpu->arch, why, sizeof why)) {
            obj(); kstr("precision", eco_precision_name((eco_precision)p)); kstr("reason", why); end_obj();
        }
    }
    end_arr();
    key("closest_infeasible"); cand_json(r, r->closest_infeasible);
    kint("feasible_count", (long long)r->n_feasible);
    kint("candidates_count", (long long)r->n);
    key("notes"); arr();
    for (size_t i = 0; i < r->n_notes; i++) jstr(r->notes[i]);
    if (r->best < 0) jstr("no configuration meets the budgets: closest_infeasible has the smallest total relative excess");
    end_arr();
    end_obj();
    return finish();
}

/* ---- curves for the charts ---- */

/* str0 arch, str1 precision, str2 card ("": the arch's pool): index of that curve, or -1 */
EXPORT("eco_wasm_curve_index") int eco_wasm_curve_index(void)
{
    eco_precision p;
    if (eco_precision_parse(g_str[1], &p)) { eco_clear_error(); return -1; }
    const eco_curve *c = eco_curve_set_find_exact(&g_set, g_str[0], p, g_str[2]);
    return c ? (int)(c - g_set.curves) : -1;
}

/* n points log-spaced over [x0, x1] of curve idx -> f64: x[n], y[n], lo[n], hi[n]: the fitted curve, and the 95%
 * range the estimator answers at each size for the curve's architecture (batch 1, the measured context). That is
 * the fit's own band widened as the answers are (extrapolation, measured neighbours, sessions' scatter), so a chart
 * never draws a surer band than the answer it overlays; where an answer fails, the fit's band. */
EXPORT("eco_wasm_curve_series") int eco_wasm_curve_series(int idx, int n, double x0, double x1)
{
    if (idx < 0 || (size_t)idx >= g_set.n_curves || n < 2 || 4 * n > WASM_F64_CAP || !(x0 > 0) || !(x1 > x0))
        TRY(eco_fail(ECO_EINVAL, "bad curve series request"));
    const eco_curve *c = &g_set.curves[idx];
    for (int i = 0; i < n; i++) {
        double x = exp(log(x0) + (log(x1) - log(x0)) * i / (n - 1)), lo, hi;
        eco_estimate_query q = {.arch = c->arch, .precision = c->precision, .params_b = x, .batch = 1,
                                .card = c->card[0] ? c->card : NULL};
        eco_estimate_query_model_bytes(&q, NULL);
        if (!eco_estimate_run(&g_set, &q, &g_est) && g_est.curve == c) {
            lo = g_est.lo_pct;
            hi = g_est.hi_pct;
        } else {
            eco_curve_band95(c, x, &lo, &hi);
        }
        eco_clear_error();
        g_f64[i] = x;
        g_f64[n + i] = eco_curve_eval(c, x);
        g_f64[2 * n + i] = lo;
        g_f64[3 * n + i] = hi;
    }
    return n;
}

/* ---- reference tables for the forms and the Methodology page (from the C tables, never retyped) ---- */

/* The architecture a card name maps to (eco_arch_from_gpu_name: the server's rule), or null: str 0 = name. */
EXPORT("eco_wasm_gpu_arch") int eco_wasm_gpu_arch(void)
{
    const char *arch = NULL;
    bool known = !eco_arch_from_gpu_name(g_str[0], &arch);
    eco_clear_error();
    out_reset();
    obj();
    key("arch");
    if (known) jstr(arch);
    else jnull();
    const char *outside = known ? NULL : eco_gpu_name_outside_classes(g_str[0]);
    kstr("outside", outside); /* what a card of no class is ("an AMD GPU"), else null */
    end_obj();
    return finish();
}

/* The speed no engine can pass (eco_decode_tokens_per_s_ceiling, the C check's): str 0 = card name, 1 = preset,
 * 2 = precision. {"ceiling": null} where no bound holds (a card or preset the table lacks, small weights). */
EXPORT("eco_wasm_tokens_per_s_ceiling") int eco_wasm_tokens_per_s_ceiling(int batch)
{
    const eco_gpu_spec *card = eco_gpu_exact(g_str[0]);
    const eco_model_config *preset = eco_preset_find(g_str[1]);
    eco_precision p;
    bool parsed = !eco_precision_parse(g_str[2], &p);
    eco_clear_error();
    double ceiling = parsed ? eco_decode_tokens_per_s_ceiling(card, preset, p, batch) : 0;
    out_reset();
    obj();
    knum("ceiling", ceiling > 0 ? ceiling : NAN);
    if (ceiling > 0) {
        kstr("card", card->name);
        kstr("model", preset->name);
        knum("gb_per_token", (double)eco_model_bytes_per_token(preset, p, 0, true) / 1e9);
    }
    end_obj();
    return finish();
}

EXPORT("eco_wasm_info") int eco_wasm_info(void)
{
    out_reset();
    obj();
    key("archs"); arr();
    for (size_t i = 0; i < eco_arch_count(); i++) {
        const char *a = eco_arch_at(i), *reason = NULL;
        bool weak = false;
        const char *proxy = eco_arch_proxy(a, &reason, &weak);
        obj(); kstr("arch", a); kstr("label", eco_arch_label(a)); kstr("proxy", proxy); kstr("proxy_reason", reason);
        key("proxy_weak"); jbool(weak); end_obj();
    }
    end_arr();
    key("precisions"); arr();
    for (int p = 0; p < ECO_PREC_COUNT; p++) {
        obj(); kstr("name", eco_precision_name((eco_precision)p));
        knum("bits_per_weight", eco_precision_bits_per_weight((eco_precision)p));
        knum("s_cap_pct", p == ECO_PREC_FP16 ? NAN : eco_precision_s_cap_pct((eco_precision)p));
        end_obj();
    }
    end_arr();
    key("gpus"); arr();
    for (size_t i = 0; i < eco_gpu_count(); i++) {
        const eco_gpu_spec *g = eco_gpu_at(i);
        obj(); kstr("name", g->name); kstr("arch", g->arch); knum("vram_gb", g->vram_gb); knum("mem_bw_gbps", g->mem_bw_gbps);
        knum("fp16_tflops", g->fp16_tflops); knum("board_power_w", g->board_power_w); kstr("source", g->source); end_obj();
    }
    end_arr();
    key("models"); arr();
    for (size_t i = 0; i < eco_preset_count(); i++) {
        const eco_model_config *m = eco_preset_at(i);
        obj(); kstr("name", m->name); kstr("hf_id", m->hf_id); knum("params_b", (double)eco_model_param_count(m) / 1e9);
        kint("layers", m->layers); kint("hidden", m->hidden); end_obj();
    }
    end_arr();
    key("batch_factors"); arr();
    for (int b = 1; b <= 64; b *= 2) { obj(); kint("batch", b); knum("factor", eco_batch_energy_factor(b)); end_obj(); }
    end_arr();
    key("labels"); arr();
    for (int l = 0; l <= ECO_LABEL_MODELLED; l++) jstr(eco_label_name((eco_label)l));
    end_arr();
    key("forms"); arr();
    for (int f = 0; f <= ECO_FORM_CONSTANT; f++) jstr(eco_curve_form_name((eco_curve_form)f));
    end_arr();
    kint("fit_boot", ECO_FIT_BOOT);
    kint("fit_default_seed", ECO_FIT_DEFAULT_SEED);
    end_obj();
    return finish();
}
