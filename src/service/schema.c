/* JSON Schemas of each service operation, built in code from shared pieces (no $ref/$defs: every schema is
 * self-contained and uses only keywords common to draft-07 and 2020-12, so MCP clients and OpenAPI 3.1 take
 * them as they are). The contract tests validate every service response against these. */
#include <stdarg.h>
#include <string.h>

#include "eco/fit.h"
#include "eco/service.h"

#define DIALECT "https://json-schema.org/draft/2020-12/schema"

static json_t *t(const char *type) { return json_pack("{s:s}", "type", type); }
static json_t *tnull(const char *type) { return json_pack("{s:[s, s]}", "type", type, "null"); }
static json_t *num_min(double min) { return json_pack("{s:s, s:f}", "type", "number", "minimum", min); }
static json_t *num_excl(double min) { return json_pack("{s:s, s:f}", "type", "number", "exclusiveMinimum", min); }
static json_t *str_list(void) { return json_pack("{s:s, s:{s:s}}", "type", "array", "items", "type", "string"); }
static json_t *array_of(json_t *items) { return json_pack("{s:s, s:o}", "type", "array", "items", items); }

static json_t *enum_of(const char *first, ...)
{
    json_t *e = json_array();
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) json_array_append_new(e, json_string(s));
    va_end(ap);
    return json_pack("{s:s, s:o}", "type", "string", "enum", e);
}

static json_t *label(void) { return enum_of("measured", "interpolated", "extrapolated", "estimated", "modelled", NULL); }
static json_t *precision_enum(void) { return enum_of("int8", "int8-mixed", "nf4", "nf4-dq", "fp8", NULL); }
static json_t *any_precision(void) { return enum_of("fp16", "int8", "int8-mixed", "nf4", "nf4-dq", "fp8", NULL); }
static json_t *arch_enum(void) { return enum_of("turing", "ampere", "ada", "hopper", "blackwell", NULL); }
static json_t *range95(bool nullable)
{
    return json_pack("{s:s, s:o, s:i, s:i}", "type", "array", "items", nullable ? tnull("number") : t("number"), "minItems", 2,
                     "maxItems", 2);
}

/* An object whose listed properties are all required; NULL-terminated (name, schema) pairs. */
static json_t *obj(const char *first, ...)
{
    json_t *props = json_object(), *req = json_array();
    va_list ap;
    va_start(ap, first);
    for (const char *k = first; k; k = va_arg(ap, const char *)) {
        json_object_set_new(props, k, va_arg(ap, json_t *));
        json_array_append_new(req, json_string(k));
    }
    va_end(ap);
    return json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props, "required", req, "additionalProperties", 0);
}

static json_t *nullable(json_t *schema) { return json_pack("{s:[o, {s:s}]}", "anyOf", schema, "type", "null"); }

static json_t *described(json_t *s, const char *d)
{
    json_object_set_new(s, "description", json_string(d));
    return s;
}

static json_t *top(json_t *s, const char *name, const char *title)
{
    char id[128];
    snprintf(id, sizeof id, "https://ecocompute.dev/schema/%s.json", name);
    json_object_set_new(s, "$schema", json_string(DIALECT));
    json_object_set_new(s, "$id", json_string(id));
    json_object_set_new(s, "title", json_string(title));
    return s;
}

static json_t *params_b_schema(void)
{
    return described(json_pack("{s:s, s:[{s:f, s:f}, {s:f, s:f}]}", "type", "number", "anyOf", "minimum", ECO_PARAMS_B_MIN,
                               "maximum", ECO_PARAMS_B_MAX, "minimum", 1e6, "maximum", 2e12),
                     "Model size in billions (0.001 to 2000), or an absolute parameter count (>= 1e6, e.g. 7e9 = 7B).");
}

static json_t *request(json_t *props, const char *required_first, ...)
{
    json_t *req = json_array();
    va_list ap;
    va_start(ap, required_first);
    for (const char *k = required_first; k; k = va_arg(ap, const char *)) json_array_append_new(req, json_string(k));
    va_end(ap);
    return json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props, "required", req, "additionalProperties", 0);
}

static json_t *estimate_request(void)
{
    json_t *p = json_object();
    json_object_set_new(p, "gpu", described(json_pack("{s:s, s:i, s:i}", "type", "string", "minLength", 1, "maxLength", 200),
                                            "A card (\"RTX 4090\", \"H200\", \"A100\") or an architecture (turing, ampere, ada, hopper, blackwell)."));
    json_object_set_new(p, "precision", described(json_pack("{s:s, s:i, s:i, s:s}", "type", "string", "minLength", 1, "maxLength", 200,
                                                            "default", "nf4"),
                                                  "Quantized format: int8 (W8A16), int8-mixed (LLM.int8()), nf4, nf4-dq, fp8; aliases accepted."));
    json_object_set_new(p, "params_b", params_b_schema());
    json_object_set_new(p, "model", described(json_pack("{s:s, s:i, s:i}", "type", "string", "minLength", 1, "maxLength", 200),
                                              "A model preset (see /v1/models); gives the size when params_b is absent."));
    json_object_set_new(p, "batch", json_pack("{s:s, s:i, s:i, s:i}", "type", "integer", "minimum", 1, "maximum", 1024, "default", 1));
    json_object_set_new(p, "ctx", described(json_pack("{s:s, s:i, s:i}", "type", "integer", "minimum", 1, "maximum", 1048576),
                                            "Context positions; absent: the measured short context. A long one's KV cache, "
                                            "the same bytes in every format, shrinks ΔE and makes it and absolute energy "
                                            "estimated (see context in the answer)."));
    json_t *s = request(p, "gpu", NULL);
    json_object_set_new(s, "anyOf", json_pack("[{s:[s]}, {s:[s]}]", "required", "params_b", "required", "model"));
    return s;
}

static json_t *energy_value(void)
{
    return obj("value", t("number"), "range95", range95(false), "label", label(), "basis", t("string"), NULL);
}

static json_t *anchor(void)
{
    return obj("params_b", t("number"), "delta_pct", t("number"), "weight", t("number"), "n_trials", json_pack("{s:s, s:i}", "type", "integer", "minimum", 1),
               "model", t("string"), "gpu", t("string"), "session", t("string"), "source", t("string"), "cv_pct", tnull("number"),
               "flags", described(t("string"), "the measurement's flags, space-separated (\"\" when none); on a run's rows \"fp16:<flag>\" is its fp16 baseline's"),
               "synthetic_weights", described(t("boolean"), "measured on random values of the model's real shapes (EcoCompute's H200 runs): "
                                              "speed and energy follow the shapes, int8-mixed's outlier path the synthetic outlier columns"),
               "design", described(t("string"), "8 hex digits naming the engine's kernel design the run recorded (equal ids: the same "
                                   "described design; the build is the run's software.build); \"\" when the measurement names none "
                                   "(the reference dataset's rows)"),
               NULL);
}

static json_t *estimate_response(void)
{
    json_t *input = obj("gpu", t("string"), "arch", arch_enum(), "precision", precision_enum(), "params_b", num_excl(0), "model",
                        tnull("string"), "batch", json_pack("{s:s, s:i}", "type", "integer", "minimum", 1), "ctx",
                        described(json_pack("{s:[s,s], s:i}", "type", "integer", "null", "minimum", 1),
                                  "the context asked for; null when none was: the measured short context"), NULL);
    json_t *curve = obj("form", enum_of("saturating", "loglinear", "constant", NULL),
                        "card", described(tnull("string"), "the recorded GPU whose own measurements the curve is fitted to; "
                                                           "null: the architecture's cards pooled"),
                        "range_b", range95(false), "resid_sd_pct",
                        tnull("number"), "loo_median_abs_pct", tnull("number"), "loo_mae_pct", tnull("number"), "params",
                        obj("A", t("number"), "S", t("number"), "nstar", t("number"), NULL), "n_anchors",
                        json_pack("{s:s, s:i}", "type", "integer", "minimum", 1), "weighting",
                        enum_of("trials", "inverse-variance", "none", NULL), NULL);
    json_t *energy = obj("fp16_mj_per_token", energy_value(), "quant_mj_per_token", energy_value(), "batch_factor", num_excl(0),
                         "batch_label", label(), NULL);
    return obj("input", input, "delta_pct", described(t("number"), "ΔE% = (E_quant - E_fp16) / E_fp16 * 100; negative saves energy."),
               "range95", range95(false), "label", enum_of("measured", "interpolated", "extrapolated", "estimated", NULL), "n",
               json_pack("{s:s, s:i}", "type", "integer", "minimum", 1), "n_anchors", json_pack("{s:s, s:i}", "type", "integer", "minimum", 1),
               "cv_pct", tnull("number"), "sessions", str_list(), "anchors", array_of(anchor()), "protocol", t("string"),
               "backend", described(t("string"), "Software stack the curve was fitted on (\"\" when pooled)."),
               "pooled_protocols", str_list(), "arch_used", arch_enum(), "proxy",
               nullable(obj("arch", arch_enum(), "precision", t("string"), "reason", t("string"), NULL)), "context",
               described(nullable(obj("kv_share_fp16", t("number"), "short_delta_pct", t("number"), "short_range95", range95(false),
                                      "short_label", enum_of("measured", "interpolated", "extrapolated", "estimated", NULL), NULL)),
                         "Set when a long ctx rescaled ΔE (the KV cache, fp16 in every format, adds about the same energy to both): "
                         "the fp16 step's KV share at the batch asked (batch × the batch-1 share) beyond the measured context and the data's short-context ΔE; the answer is then "
                         "estimated from the architecture's own data, not a proxy."), "recommendation",
               enum_of("quantize", "do_not_quantize", "depends", NULL), "crossover_b", tnull("number"), "curve", curve, "energy",
               nullable(energy), "notes", str_list(), NULL);
}

static json_t *optimize_request(void)
{
    json_t *p = json_object();
    json_object_set_new(p, "gpu", described(json_pack("{s:s, s:i, s:i}", "type", "string", "minLength", 1, "maxLength", 200),
                                            "A card (see /v1/gpus); an unlisted card of a known architecture uses its closest table card (the architecture's "
                                            "reference card, or e.g. the H200 for a GH200), and a note says so first."));
    json_object_set_new(p, "params_b", params_b_schema());
    json_object_set_new(p, "model", described(json_pack("{s:s, s:i, s:i}", "type", "string", "minLength", 1, "maxLength", 200),
                                              "A model preset: exact weight and KV-cache bytes."));
    json_object_set_new(p, "ctx", json_pack("{s:s, s:i, s:i, s:i}", "type", "integer", "minimum", 1, "maximum", 1048576, "default", 2048));
    json_object_set_new(p, "max_vram_gb", described(json_pack("{s:s, s:f, s:f}", "type", "number", "minimum", 0.001, "maximum", 1e5),
                                                    "VRAM budget in GB (2^30 bytes); default: the card's memory."));
    json_object_set_new(p, "max_latency_ms", described(json_pack("{s:s, s:f, s:f}", "type", "number", "minimum", 0.001, "maximum", 1e7),
                                                       "Per-token step time budget (modelled)."));
    json_object_set_new(p, "objective", enum_of("energy", "latency", "balanced", NULL));
    json_object_set_new(json_object_get(p, "objective"), "default", json_string("energy"));
    json_object_set_new(p, "batch", described(json_pack("{s:s, s:i, s:i}", "type", "integer", "minimum", 1, "maximum", ECO_OPT_MAX_BATCH),
                                              "Pin the batch size and compare precisions only; absent: batch 1, 2, 4, ..., 64 are swept."));
    json_t *s = request(p, "gpu", NULL);
    json_object_set_new(s, "anyOf", json_pack("[{s:[s]}, {s:[s]}]", "required", "params_b", "required", "model"));
    return s;
}

static json_t *candidate(void)
{
    return obj("precision", any_precision(), "batch", json_pack("{s:s, s:i}", "type", "integer", "minimum", 1), "vram_gb", num_excl(0),
               "weights_gb", num_excl(0), "kv_gb", num_min(0), "latency_ms", num_excl(0), "throughput_tok_s", num_excl(0), "bound",
               enum_of("memory", "compute", "power", NULL), "delta_pct", t("number"), "delta_range95", range95(false),
               "energy_mj_per_token", tnull("number"), "energy_rel_fp16",
               described(num_excl(0), "Energy per token relative to fp16 at batch 1 and the measured short context: (1 + short-context "
                                      "ΔE/100 + the step's KV share) × the batch factor. Not this candidate's ΔE (delta_pct "
                                      "compares it with fp16 at its own batch and context): 0.13 is 87% less than fp16 at batch 1, "
                                      "1.6 at a long context is 60% more than fp16 at batch 1 and short context."),
               "feasible", t("boolean"), "reason",
               tnull("string"), "basis",
               obj("delta", label(), "energy", label(), "batch", label(), "vram", enum_of("modelled", NULL), "latency",
                   enum_of("modelled", NULL), NULL),
               NULL);
}

static json_t *optimize_response(void)
{
    json_t *input = obj("gpu", t("string"), "params_b", num_excl(0), "model", tnull("string"), "ctx",
                        json_pack("{s:s, s:i}", "type", "integer", "minimum", 1), "max_vram_gb", tnull("number"), "max_latency_ms",
                        tnull("number"), "objective", enum_of("energy", "latency", "balanced", NULL), "batch", tnull("integer"), NULL);
    json_t *gpu = obj("name", t("string"), "arch", arch_enum(), "vram_gb", num_excl(0), "mem_bw_gbps", num_excl(0), "fp16_tflops",
                      num_excl(0), "board_power_w", num_excl(0), "matched", enum_of("card", "architecture", NULL), "source", t("string"), NULL);
    return obj("input", input, "gpu", gpu, "vram_budget_gb", num_excl(0), "energy_absolute", t("boolean"), "recommended",
               nullable(candidate()), "alternatives", json_pack("{s:s, s:o, s:i}", "type", "array", "items", candidate(), "maxItems", 3),
               "pareto_front",
               described(json_pack("{s:s, s:o, s:i}", "type", "array", "items", candidate(), "maxItems", ECO_OPT_MAX_CANDIDATES),
                         "Feasible configurations that no other feasible one matches or beats on both energy and latency (central "
                         "estimates, except that a ΔE borrowed from another architecture (label estimated) counts at the top "
                         "of its range against one of this architecture's own data; each carries its ΔE range and labels), "
                         "by latency ascending"),
               "rejected", array_of(obj("precision", any_precision(), "reason", t("string"), NULL)), "closest_infeasible",
               nullable(candidate()), "feasible_count", json_pack("{s:s, s:i}", "type", "integer", "minimum", 0), "candidates_count",
               json_pack("{s:s, s:i}", "type", "integer", "minimum", 1), "notes", str_list(), NULL);
}

static json_t *architectures_response(void)
{
    json_t *prec = obj("precision", precision_enum(),
                       "card", described(tnull("string"), "null: the architecture's pooled curve; else one card's own curve"),
                       "form", enum_of("saturating", "loglinear", "constant", NULL), "protocol",
                       t("string"), "n_anchors", json_pack("{s:s, s:i}", "type", "integer", "minimum", 1), "range_b", range95(false),
                       "crossover_b", tnull("number"), "resid_sd_pct", tnull("number"), "loo_median_abs_pct", tnull("number"), NULL);
    json_t *arch = obj("arch", arch_enum(), "label", t("string"), "proxy", nullable(arch_enum()), "proxy_reason", tnull("string"),
                       "fp16_baseline", t("boolean"), "precisions", array_of(prec), "gpus", str_list(), NULL);
    return obj("architectures", array_of(arch), "provenance",
               obj("dataset", t("string"), "records", json_pack("{s:s, s:i}", "type", "integer", "minimum", 0), NULL), NULL);
}

static json_t *gpus_response(void)
{
    return obj("gpus", array_of(obj("name", t("string"), "arch", arch_enum(), "vram_gb", num_excl(0), "mem_bw_gbps", num_excl(0),
                                    "fp16_tflops", num_excl(0), "board_power_w", num_excl(0), "source", t("string"), NULL)),
               NULL);
}

static json_t *models_response(void)
{
    json_t *i = json_pack("{s:s, s:i}", "type", "integer", "minimum", 1);
    json_t *s = obj("models",
               array_of(obj("name", t("string"), "hf_id", t("string"), "family", enum_of("llama", "qwen2", "mistral", "phi3", NULL),
                            "params_b", num_excl(0), "layers", json_deep_copy(i), "hidden", json_deep_copy(i), "heads",
                            json_deep_copy(i), "kv_heads", json_deep_copy(i), "vocab", json_deep_copy(i), "kv_bytes_per_position",
                            json_deep_copy(i), "weight_bytes_fp16", json_deep_copy(i), "weight_bytes_nf4", json_deep_copy(i), NULL)),
               NULL);
    json_decref(i);
    return s;
}

static json_t *measurements_request(void)
{
    json_t *p = json_object();
    json_object_set_new(p, "arch", arch_enum());
    json_object_set_new(p, "precision", json_pack("{s:s, s:i, s:i}", "type", "string", "minLength", 1, "maxLength", 200));
    json_object_set_new(p, "gpu", json_pack("{s:s, s:i, s:i}", "type", "string", "minLength", 1, "maxLength", 200));
    json_object_set_new(p, "protocol", described(json_pack("{s:s, s:i, s:i}", "type", "string", "minLength", 1, "maxLength", 200),
                                                 "Protocol key, e.g. tok256/gross/nvml-power-poll."));
    json_object_set_new(p, "origin", enum_of("reference", "run", NULL)); /* replications are documents: /v1/replications */
    json_object_set_new(p, "model", json_pack("{s:s, s:i, s:i}", "type", "string", "minLength", 1, "maxLength", 200));
    return request(p, NULL);
}

static json_t *measurements_response(void)
{
    json_t *row = obj("gpu", t("string"), "arch", arch_enum(), "model", t("string"), "params_b", num_excl(0), "precision",
                      precision_enum(), "batch", t("integer"), "e_fp16_mj", num_excl(0), "e_quant_mj", num_excl(0), "e_fp16_sd_mj",
                      tnull("number"), "e_quant_sd_mj", tnull("number"), "delta_pct", t("number"), "cv_pct", tnull("number"),
                      "n_trials", json_pack("{s:s, s:i}", "type", "integer", "minimum", 1), "single_trial", t("boolean"), "protocol",
                      t("string"), "session", t("string"), "source", t("string"), "origin",
                      enum_of("reference", "run", "replication", NULL), "synthetic_weights", t("boolean"), "note", t("string"),
                      "flags", described(t("string"), "\"\" or e.g. \"throttled fp16:throttled\", \"fp16-back-derived\": read before comparing"),
                      "backend", described(t("string"), "Software stack measured (\"eco 0.1.0 cuda\", \"bitsandbytes ...\"; \"\" when not recorded)."),
                      NULL);
    return obj("measurements", array_of(row), "count", json_pack("{s:s, s:i}", "type", "integer", "minimum", 0), "attribution",
               described(t("string"), "Citation and licence (CC BY 4.0) of the reference rows."), NULL);
}

static json_t *replication_submit_response(void)
{
    json_t *err = obj("instance_path", described(t("string"), "JSON Pointer into the submitted document"), "keyword",
                      t("string"), "message", t("string"), NULL);
    return obj("accepted", described(t("boolean"), "valid against the published energy.json schema, and not an example"),
               "stored", described(t("boolean"), "false when the same document was stored before"), "id",
               described(tnull("integer"), "replication id in the store; null when not accepted"), "sha256",
               json_pack("{s:s, s:s}", "type", "string", "pattern", "^[0-9a-f]{64}$"), "validation", enum_of("valid", "invalid", NULL),
               "errors", array_of(err), NULL);
}

static json_t *replications_request(void)
{
    json_t *p = json_object();
    json_object_set_new(p, "offset", described(json_pack("{s:s, s:i, s:i, s:i}", "type", "integer", "minimum", 0, "maximum", 1000000000,
                                                         "default", 0),
                                               "Replications to skip, in id order (default 0)."));
    json_object_set_new(p, "limit", described(json_pack("{s:s, s:i, s:i, s:i}", "type", "integer", "minimum", 1, "maximum",
                                                        ECO_REPLICATIONS_PAGE_MAX, "default", ECO_REPLICATIONS_PAGE),
                                              "Replications in the page (default 100)."));
    return request(p, NULL);
}

static json_t *replications_response(void)
{
    json_t *row = obj("id", t("integer"), "name", t("string"), "sha256", t("string"), "validation",
                      enum_of("valid", "invalid", "unvalidated", NULL), "submitted_at", t("string"), "run_id",
                      tnull("string"), "gpu", tnull("string"), "model", tnull("string"), NULL);
    json_t *count = json_pack("{s:s, s:i}", "type", "integer", "minimum", 0);
    return obj("replications", array_of(row), "count", count, "total", json_deep_copy(count), "offset",
               json_deep_copy(count), "limit", json_pack("{s:s, s:i}", "type", "integer", "minimum", 1), NULL);
}

static json_t *problem(void)
{
    /* RFC 9457: extension members are allowed, so additionalProperties stays open */
    json_t *s = json_pack("{s:s, s:{s:{s:s, s:s}, s:o, s:{s:s, s:i, s:i}, s:o, s:o}, s:[s, s, s, s]}", "type", "object", "properties",
                          "type", "type", "string", "format", "uri-reference", "title", t("string"), "status", "type", "integer",
                          "minimum", 400, "maximum", 599, "detail", t("string"), "field",
                          described(t("string"), "The input field that was wrong, when one was."), "required", "type", "title",
                          "status", "detail");
    return s;
}

json_t *eco_service_schema(const char *name)
{
    static const struct { const char *name, *title; json_t *(*build)(void); } all[] = {
        {"estimate_request", "Estimate request", estimate_request},
        {"estimate_response", "Estimate: ΔE% of a quantized precision vs fp16, with label and range", estimate_response},
        {"optimize_request", "Optimize request", optimize_request},
        {"optimize_response", "Optimize: best precision x batch under budgets", optimize_response},
        {"architectures_response", "GPU architectures and their fitted curves", architectures_response},
        {"gpus_response", "GPU hardware table", gpus_response},
        {"models_response", "Model presets", models_response},
        {"measurements_request", "Measurements filter", measurements_request},
        {"measurements_response", "Measured comparisons", measurements_response},
        {"replication_submit_response", "Replication submission: accepted and stored, or the schema errors",
         replication_submit_response},
        {"replications_request", "A page of replications", replications_request},
        {"replications_response", "Submitted replications", replications_response},
        {"problem", "Problem details (RFC 9457)", problem},
    };
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(name, all[i].name)) return top(all[i].build(), all[i].name, all[i].title);
    return NULL;
}
