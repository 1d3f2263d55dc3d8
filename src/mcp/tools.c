/* The four EcoCompute tools: thin adapters from MCP arguments to the service layer, plus a short text summary
 * that always states the label, n and range, so a client that shows only text never sees an estimate passed off
 * as a measurement. Validation and numbers come from the service; nothing is recomputed here. */
#include "eco/mcp.h"
#include "eco/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- a tiny string builder over open_memstream ---- */

typedef struct {
    char *buf;
    size_t len;
    FILE *f;
} sbuf;

static bool sb_open(sbuf *s)
{
    s->buf = NULL;
    s->len = 0;
    s->f = open_memstream(&s->buf, &s->len);
    return s->f != NULL;
}

static void sb_printf(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(s->f, fmt, ap);
    va_end(ap);
}

static char *sb_close(sbuf *s)
{
    if (fclose(s->f) != 0) {
        free(s->buf);
        return NULL;
    }
    return s->buf;
}

/* ---- reading the service's JSON ---- */

static const json_t *at(const json_t *o, const char *key)
{
    return json_object_get(o, key);
}

static double numv(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *strv(const json_t *o, const char *key, const char *dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* "12.3" or "n/a" (the service writes non-finite values as null). */
static void put_num(sbuf *s, const char *fmt, double v)
{
    if (isfinite(v)) sb_printf(s, fmt, v);
    else sb_printf(s, "n/a");
}

/* Three significant digits without exponents for the magnitudes we print (mJ, GB, ms). */
static void put_amount(sbuf *s, double v)
{
    if (!isfinite(v)) sb_printf(s, "n/a");
    else if (fabs(v) >= 100) sb_printf(s, "%.0f", v);
    else sb_printf(s, "%.3g", v);
}

static void put_range_pct(sbuf *s, const json_t *range)
{
    sb_printf(s, "95%% range ");
    put_num(s, "%+.1f", json_is_number(json_array_get(range, 0)) ? json_number_value(json_array_get(range, 0)) : NAN);
    sb_printf(s, " to ");
    put_num(s, "%+.1f%%", json_is_number(json_array_get(range, 1)) ? json_number_value(json_array_get(range, 1)) : NAN);
}

/* A card's own curve answered (curve.card): say whose, as the label's reading rests on that card's sizes alone. */
static void put_card_curve(sbuf *s, const json_t *est)
{
    const char *card = strv(at(est, "curve"), "card", NULL);
    if (card) sb_printf(s, " of the %s's own measurements", card);
}

/* Whether the anchors behind an answer used synthetic weights: said with it, as a trained checkpoint's would be read. */
static void put_synthetic(sbuf *s, const json_t *est)
{
    const json_t *anchors = at(est, "anchors"), *a;
    size_t i, n = json_array_size(anchors), k = 0;
    json_array_foreach(anchors, i, a) k += json_is_true(at(a, "synthetic_weights"));
    if (k) sb_printf(s, ", %s on synthetic weights of the models' real shapes (speed and energy follow the shapes)", k == n ? "all" : "some");
}

/* A long context's rescaling of ΔE (the answer's "context"), said after what it rescaled. */
static void put_rescaled(sbuf *s, const json_t *ctx)
{
    put_num(s, ", rescaled for a KV cache that adds %.0f%% to an fp16 step's bytes", 100 * numv(ctx, "kv_share_fp16"));
}

/* What a label means, said plainly: only "measured" is a measurement. */
static void put_label_meaning(sbuf *s, const char *label, const json_t *est)
{
    const json_t *ctx = at(est, "context");
    if (!strcmp(label, "estimated") && json_is_object(ctx) && !json_is_object(at(est, "proxy"))) {
        /* the architecture's own data, rescaled for a long context's KV cache: say which data and by how much */
        sb_printf(s, "an estimate, not a measurement: %s's own short-context %s figure of ",
                  strv(at(est, "curve"), "card", strv(est, "arch_used", "?")), strv(ctx, "short_label", ""));
        put_num(s, "%+.1f%%", numv(ctx, "short_delta_pct"));
        put_rescaled(s, ctx);
        put_synthetic(s, est);
        return;
    }
    if (!strcmp(label, "measured")) {
        /* what was measured, where: the asked size or card may differ (another size of the same model, another
         * card of the architecture, labels being per architecture), and a text-only client sees only this */
        const json_t *anchors = at(est, "anchors"), *a0 = json_array_get(anchors, 0), *a;
        size_t i, n = json_array_size(anchors);
        double lo = INFINITY, hi = -INFINITY, asked = numv(at(est, "input"), "params_b");
        bool one_model = true, one_gpu = true;
        json_array_foreach(anchors, i, a) {
            double b = numv(a, "params_b");
            if (b < lo) lo = b;
            if (b > hi) hi = b;
            one_model &= !strcmp(strv(a, "model", ""), strv(a0, "model", ""));
            one_gpu &= !strcmp(strv(a, "gpu", ""), strv(a0, "gpu", ""));
        }
        if (!n) {
            sb_printf(s, "measured");
            return;
        }
        sb_printf(s, "measured: %s%s at ", strv(a0, "model", "?"), one_model ? "" : " and other models");
        put_num(s, "%.4gB", lo);
        if (hi > lo) put_num(s, "-%.4gB", hi);
        sb_printf(s, " on %s%s (%zu measurement%s)", strv(a0, "gpu", "?"), one_gpu ? "" : " and other cards", n, n == 1 ? "" : "s");
        put_synthetic(s, est);
        if (isfinite(asked) && (asked < lo * (1 - 1e-6) || asked > hi * (1 + 1e-6)))
            put_num(s, "; they stand for the %.4gB asked (the same model within 15%% of its size), not a measurement at it", asked);
    } else if (!strcmp(label, "interpolated")) {
        sb_printf(s, "an estimate read from the curve fitted between measured sizes");
        put_card_curve(s, est);
        sb_printf(s, ", not a measurement");
    } else if (!strcmp(label, "extrapolated")) {
        const json_t *rb = at(at(est, "curve"), "range_b");
        sb_printf(s, "an estimate outside the measured sizes");
        put_card_curve(s, est);
        if (json_is_number(json_array_get(rb, 0)) && json_is_number(json_array_get(rb, 1)))
            sb_printf(s, " (%.3g-%.3gB)", json_number_value(json_array_get(rb, 0)), json_number_value(json_array_get(rb, 1)));
        sb_printf(s, ", not a measurement");
    } else if (!strcmp(label, "estimated")) {
        const json_t *proxy = at(est, "proxy");
        sb_printf(s, "an estimate borrowed from the %s %s curve", strv(proxy, "arch", strv(est, "arch_used", "proxy")),
                  strv(proxy, "precision", ""));
        if (strv(proxy, "reason", NULL)) sb_printf(s, " (%s)", strv(proxy, "reason", ""));
        if (json_is_object(ctx)) put_rescaled(s, ctx);
        sb_printf(s, ", not a measurement");
    } else {
        sb_printf(s, "modelled, not measured");
    }
}

/* ---- the tools ---- */

static char *estimate_summary(const json_t *r)
{
    sbuf s;
    if (!sb_open(&s)) return NULL;
    const json_t *in = at(r, "input");
    const char *label = strv(r, "label", "unknown");
    const json_t *n = at(r, "n");
    sb_printf(&s, "%s vs FP16 on %s (%s), ", strv(in, "precision", "?"), strv(in, "gpu", "?"), strv(in, "arch", "?"));
    put_num(&s, "%.3gB parameters", numv(in, "params_b"));
    if (strv(in, "model", NULL)) sb_printf(&s, " (%s)", strv(in, "model", ""));
    /* the conditions the answer is for, where they are not the measurements' (batch 1, a short context) */
    if (json_integer_value(at(in, "batch")) > 1) sb_printf(&s, ", batch %lld", (long long)json_integer_value(at(in, "batch")));
    if (json_is_integer(at(in, "ctx"))) sb_printf(&s, ", context %lld", (long long)json_integer_value(at(in, "ctx")));
    sb_printf(&s, ": energy per token ");
    put_num(&s, "%+.1f%%", numv(r, "delta_pct"));
    sb_printf(&s, " (");
    put_range_pct(&s, at(r, "range95"));
    sb_printf(&s, "). Label: %s, n=%lld trial%s: ", label, (long long)json_integer_value(n),
              json_integer_value(n) == 1 ? "" : "s");
    put_label_meaning(&s, label, r);
    sb_printf(&s, ". Recommendation: %s.", strv(r, "recommendation", "depends"));
    const json_t *e = at(r, "energy");
    if (json_is_object(e)) {
        const json_t *q = at(e, "quant_mj_per_token"), *f = at(e, "fp16_mj_per_token");
        sb_printf(&s, " Energy: ");
        put_amount(&s, numv(q, "value"));
        sb_printf(&s, " mJ/token (");
        put_amount(&s, json_is_number(json_array_get(at(q, "range95"), 0)) ? json_number_value(json_array_get(at(q, "range95"), 0)) : NAN);
        sb_printf(&s, "-");
        put_amount(&s, json_is_number(json_array_get(at(q, "range95"), 1)) ? json_number_value(json_array_get(at(q, "range95"), 1)) : NAN);
        sb_printf(&s, ", %s) vs FP16 ", strv(q, "label", "unknown"));
        put_amount(&s, numv(f, "value"));
        sb_printf(&s, " mJ/token (%s).", strv(f, "label", "unknown"));
    }
    return sb_close(&s);
}

static eco_err tool_estimate(void *ctx, const json_t *args, json_t **structured, char **summary)
{
    eco_service *svc = ctx; /* borrowed from eco_mcp_add_eco_tools */
    eco_err e = eco_service_estimate(svc, args, ECO_PARAMS_JSON, structured);
    if (e) return e;
    if (!(*summary = estimate_summary(*structured))) return eco_fail(ECO_ENOMEM, "out of memory");
    return ECO_OK;
}

static void put_candidate(sbuf *s, const json_t *c)
{
    const json_t *basis = at(c, "basis");
    sb_printf(s, "%s at batch %lld: ", strv(c, "precision", "?"), (long long)json_integer_value(at(c, "batch")));
    if (isfinite(numv(c, "energy_mj_per_token"))) {
        put_amount(s, numv(c, "energy_mj_per_token"));
        sb_printf(s, " mJ/token");
    } else {
        put_num(s, "%.3gx", numv(c, "energy_rel_fp16"));
        sb_printf(s, " the FP16 batch-1 energy per token");
    }
    sb_printf(s, " (%s), ", strv(basis, "energy", "unknown"));
    if (!strcmp(strv(c, "precision", ""), "fp16")) {
        sb_printf(s, "the FP16 baseline");
    } else {
        sb_printf(s, "ΔE ");
        put_num(s, "%+.1f%%", numv(c, "delta_pct"));
        sb_printf(s, " vs FP16 (");
        put_range_pct(s, at(c, "delta_range95"));
        sb_printf(s, ", %s)", strv(basis, "delta", "unknown"));
    }
    sb_printf(s, ", latency ");
    put_amount(s, numv(c, "latency_ms"));
    sb_printf(s, " ms/token and VRAM ");
    put_amount(s, numv(c, "vram_gb"));
    sb_printf(s, " GB (modelled)");
}

/* n behind the recommended precision's ΔE: the optimizer's candidates do not carry it, the estimator does. */
static void put_recommended_n(sbuf *s, eco_service *svc, const json_t *r)
{
    const json_t *best = at(r, "recommended"), *in = at(r, "input");
    const char *prec = strv(best, "precision", NULL);
    if (!prec || !strcmp(prec, "fp16")) return;
    json_t *q = json_pack("{s:s, s:s}", "gpu", strv(in, "gpu", ""), "precision", prec);
    if (!q) return;
    /* the size as the optimizer took it: a preset's own (its shapes), or an explicit size (no preset's shapes) */
    const char *model = strv(in, "model", NULL);
    const eco_model_config *preset = model ? eco_preset_find(model) : NULL;
    double asked = numv(in, "params_b");
    if (model) json_object_set_new(q, "model", json_string(model));
    if (!preset || fabs(asked - (double)eco_model_param_count(preset) / 1e9) > 1e-9 * asked)
        json_object_set_new(q, "params_b", json_real(asked));
    /* the context the optimizer answered for (2048 when none was asked): a long one rescales ΔE there too */
    if (json_is_integer(at(in, "ctx"))) json_object_set_new(q, "ctx", json_integer(json_integer_value(at(in, "ctx"))));
    /* and at the recommended batch: a long context's KV share, and so ΔE and its label, grow with it */
    if (json_is_integer(at(best, "batch"))) json_object_set_new(q, "batch", json_integer(json_integer_value(at(best, "batch"))));
    json_t *est = NULL;
    if (eco_service_estimate(svc, q, ECO_PARAMS_JSON, &est) == ECO_OK) {
        const char *label = strv(est, "label", "unknown");
        long long n = (long long)json_integer_value(at(est, "n"));
        sb_printf(s, " The %s ΔE is %s (n=%lld trial%s): ", prec, label, n, n == 1 ? "" : "s");
        put_label_meaning(s, label, est);
        sb_printf(s, ".");
    }
    eco_clear_error();
    json_decref(est);
    json_decref(q);
}

static char *optimize_summary(eco_service *svc, const json_t *r, bool ctx_asked)
{
    sbuf s;
    if (!sb_open(&s)) return NULL;
    const json_t *in = at(r, "input"), *gpu = at(r, "gpu"), *best = at(r, "recommended");
    const char *model = strv(in, "model", NULL);
    char size[1024]; /* a model name is at most 200 characters, 800 bytes */
    if (model && isfinite(numv(in, "params_b"))) snprintf(size, sizeof size, "%s (%.3gB)", model, numv(in, "params_b"));
    else if (model) snprintf(size, sizeof size, "%s", model);
    else if (isfinite(numv(in, "params_b"))) snprintf(size, sizeof size, "a %.3gB model", numv(in, "params_b"));
    else snprintf(size, sizeof size, "the model");
    char at_ctx[160] = ""; /* the KV cache is sized for it, so energies differ from an estimate at the short context */
    if (json_is_integer(at(in, "ctx")))
        snprintf(at_ctx, sizeof at_ctx, " at a context of %lld positions%s", (long long)json_integer_value(at(in, "ctx")),
                 ctx_asked ? "" : " (the default; estimate_energy without ctx answers at the measured short context)");
    if (json_is_object(best)) {
        sb_printf(&s, "Best for %s: %s on %s%s is ", strv(in, "objective", "energy"), size, strv(gpu, "name", "?"), at_ctx);
        put_candidate(&s, best);
        sb_printf(&s, ".");
        put_recommended_n(&s, svc, r);
        const json_t *dr = at(best, "delta_range95");
        if (strcmp(strv(best, "precision", "fp16"), "fp16") && json_array_size(dr) == 2 &&
            json_number_value(json_array_get(dr, 0)) < 0 && json_number_value(json_array_get(dr, 1)) > 0)
            sb_printf(&s, " Its ΔE range includes 0: the data cannot tell its energy from FP16's at the same batch.");
        sb_printf(&s, " %lld of %lld configurations fit the budgets", (long long)json_integer_value(at(r, "feasible_count")),
                  (long long)json_integer_value(at(r, "candidates_count")));
        sb_printf(&s, " (VRAM <= ");
        put_num(&s, "%.3g GB", numv(r, "vram_budget_gb"));
        if (isfinite(numv(in, "max_latency_ms"))) put_num(&s, ", latency <= %.3g ms/token", numv(in, "max_latency_ms"));
        sb_printf(&s, ").");
        const json_t *alts = at(r, "alternatives");
        for (size_t i = 0; i < json_array_size(alts); i++) {
            sb_printf(&s, i ? "; " : " Alternatives: ");
            put_candidate(&s, json_array_get(alts, i));
        }
        if (json_array_size(alts)) sb_printf(&s, ".");
    } else {
        sb_printf(&s, "No configuration of %s on %s%s meets the budgets (VRAM <= ", size, strv(gpu, "name", "?"), at_ctx);
        put_num(&s, "%.3g GB", numv(r, "vram_budget_gb"));
        if (isfinite(numv(in, "max_latency_ms"))) put_num(&s, ", latency <= %.3g ms/token", numv(in, "max_latency_ms"));
        sb_printf(&s, ").");
        const json_t *c = at(r, "closest_infeasible");
        if (json_is_object(c)) {
            sb_printf(&s, " Closest: ");
            put_candidate(&s, c);
            if (strv(c, "reason", NULL)) sb_printf(&s, " (%s)", strv(c, "reason", ""));
            sb_printf(&s, ".");
        }
    }
    if (json_is_false(at(r, "energy_absolute")))
        sb_printf(&s, " No FP16 energy baseline for this GPU: energies are relative to FP16 at batch 1.");
    return sb_close(&s);
}

static eco_err tool_recommend(void *ctx, const json_t *args, json_t **structured, char **summary)
{
    eco_service *svc = ctx; /* borrowed from eco_mcp_add_eco_tools */
    eco_err e = eco_service_optimize(svc, args, ECO_PARAMS_JSON, structured);
    if (e) return e;
    if (!(*summary = optimize_summary(svc, *structured, json_object_get(args, "ctx") != NULL))) return eco_fail(ECO_ENOMEM, "out of memory");
    return ECO_OK;
}

static eco_err no_arguments(const char *tool, const json_t *args)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)args, key, v) {
        return eco_fail_field(ECO_EINVAL, key, "%s takes no arguments, got '%s'", tool, key);
    }
    return ECO_OK;
}

static eco_err tool_list_gpus(void *ctx, const json_t *args, json_t **structured, char **summary)
{
    eco_service *svc = ctx; /* borrowed from eco_mcp_add_eco_tools */
    eco_err e = no_arguments("list_gpus", args);
    if (e || (e = eco_service_gpus(svc, structured))) return e;
    sbuf s;
    if (!sb_open(&s)) return eco_fail(ECO_ENOMEM, "out of memory");
    const json_t *gpus = at(*structured, "gpus");
    sb_printf(&s, "%zu GPUs in the hardware table (datasheet figures, not measurements): ", json_array_size(gpus));
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        const json_t *g = json_array_get(gpus, i);
        sb_printf(&s, "%s%s (%s, ", i ? ", " : "", strv(g, "name", "?"), strv(g, "arch", "?"));
        put_num(&s, "%.3g GB)", numv(g, "vram_gb"));
    }
    sb_printf(&s, ". Pass a name (or an architecture) as `gpu`.");
    if (!(*summary = sb_close(&s))) return eco_fail(ECO_ENOMEM, "out of memory");
    return ECO_OK;
}

static eco_err tool_list_models(void *ctx, const json_t *args, json_t **structured, char **summary)
{
    eco_service *svc = ctx; /* borrowed from eco_mcp_add_eco_tools */
    eco_err e = no_arguments("list_models", args);
    if (e || (e = eco_service_models(svc, structured))) return e;
    sbuf s;
    if (!sb_open(&s)) return eco_fail(ECO_ENOMEM, "out of memory");
    const json_t *models = at(*structured, "models");
    sb_printf(&s, "%zu model presets (exact architecture shapes): ", json_array_size(models));
    for (size_t i = 0; i < json_array_size(models); i++) {
        const json_t *m = json_array_get(models, i);
        sb_printf(&s, "%s%s (", i ? ", " : "", strv(m, "name", "?"));
        put_num(&s, "%.3gB)", numv(m, "params_b"));
    }
    sb_printf(&s, ". Pass a name as `model`, or give `params_b` instead.");
    if (!(*summary = sb_close(&s))) return eco_fail(ECO_ENOMEM, "out of memory");
    return ECO_OK;
}

/* ---- registration ---- */

/* A copy of a service schema fit for MCP: the top level must be an object schema. For inputs, top-level
 * combinators ("params_b or model") are dropped: several LLM tool-calling APIs reject them, the tool description
 * states the rule, and the service still enforces it with an error naming the field. */
static eco_err tool_schema(const char *name, bool input, json_t **out)
{
    json_t *s = eco_service_schema(name);
    if (!s) return eco_fail(ECO_ESTATE, "the service has no JSON Schema named '%s'", name);
    json_t *copy = json_deep_copy(s);
    json_decref(s);
    if (!copy) return eco_fail(ECO_ENOMEM, "out of memory");
    const json_t *type = json_object_get(copy, "type");
    if (!type) {
        json_object_set_new(copy, "type", json_string("object"));
    } else if (!json_is_string(type) || strcmp(json_string_value(type), "object")) {
        json_decref(copy);
        return eco_fail(ECO_ESTATE, "service schema '%s' is not an object schema; MCP needs \"type\":\"object\"", name);
    }
    /* Common-subset schemas read the same in both dialects; without "$schema" a 2025-06-18 client's draft-07
     * validator takes them as they are (with it, Ajv's draft-07 meta-validation refuses the 2020-12 URI). */
    json_object_del(copy, "$schema");
    if (input) {
        json_object_del(copy, "anyOf");
        json_object_del(copy, "oneOf");
        json_object_del(copy, "allOf");
    }
    *out = copy;
    return ECO_OK;
}

static const char recommend_desc[] =
    "Recommend the weight precision (fp16, int8, int8-mixed / LLM.int8(), nf4, fp8) and batch size for running an LLM "
    "on a GPU, under optional VRAM and per-token latency budgets, optimizing energy, latency or a balance. Give the "
    "model as a preset name (`model`, see list_models) or a size in billions (`params_b`), and `gpu` (a card name, "
    "see list_gpus); `batch` pins the batch size. Returns the best configuration, alternatives, the Pareto front of energy vs latency (every "
    "feasible configuration no other one beats on both; a borrowed ΔE counts at the top of its range), precisions rejected with reasons, and for every "
    "number a label (measured | interpolated | extrapolated | estimated | modelled) and a 95% range. Latency and VRAM "
    "are modelled (roofline, byte accounting), not measured.";

static const char estimate_desc[] =
    "Estimate how much a quantized precision changes GPU energy per generated token versus FP16 (ΔE%, negative = "
    "saves energy) for a model size on a GPU, and the absolute energy per token when an FP16 baseline exists. The "
    "answer carries a label: measured (a measurement exists at this size, n trials), interpolated or extrapolated "
    "(read from the fitted curve) or estimated (borrowed from a proxy architecture, or rescaled for a long context), a 95% range, the anchors "
    "(measurements) behind it, and a recommendation (quantize | do_not_quantize | depends).";

eco_err eco_mcp_add_eco_tools(eco_mcp_server *srv, eco_service *svc)
{
    struct {
        const char *name, *title, *desc, *in, *out;
        eco_mcp_tool_fn fn;
    } defs[] = {
        {"recommend_config", "Recommend a precision and batch", recommend_desc, "optimize_request", "optimize_response",
         tool_recommend},
        {"estimate_energy", "Estimate energy per token vs FP16", estimate_desc, "estimate_request", "estimate_response",
         tool_estimate},
        {"list_gpus", "List GPUs", "List the GPUs in the hardware table (name, architecture, VRAM, memory bandwidth, "
                                   "FP16 TFLOPS, datasheet source). Names are valid `gpu` arguments.",
         NULL, "gpus_response", tool_list_gpus},
        {"list_models", "List model presets", "List the model presets (exact Hugging Face shapes: parameters, layers, "
                                               "heads, KV bytes, weight bytes). Names are valid `model` arguments.",
         NULL, "models_response", tool_list_models},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        json_t *in = NULL, *out = NULL;
        eco_err e = defs[i].in ? tool_schema(defs[i].in, true, &in) : ECO_OK;
        if (!e && !defs[i].in)
            e = (in = json_pack("{s:s, s:{}, s:b}", "type", "object", "properties", "additionalProperties", 0))
                    ? ECO_OK
                    : eco_fail(ECO_ENOMEM, "out of memory");
        if (!e) e = tool_schema(defs[i].out, false, &out);
        if (!e) {
            eco_mcp_tool t = {.name = defs[i].name, .title = defs[i].title, .description = defs[i].desc,
                              .input_schema = in, .output_schema = out, .read_only = true, .idempotent = true,
                              .open_world = false, .fn = defs[i].fn, .ctx = svc};
            e = eco_mcp_server_add_tool(srv, &t);
        }
        json_decref(in);
        json_decref(out);
        if (e) return eco_fail_context("registering MCP tool %s: ", defs[i].name);
    }
    return ECO_OK;
}
