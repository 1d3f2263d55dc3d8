/* HF config.json -> eco_model_config, the reverse, validation, and RoPE frequencies. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "eco/model.h"

#define CONFIG_MAX_BYTES (4u << 20) /* config.json files are a few KB */
#define DIM_MAX (1 << 20)           /* keeps every byte count of eco_model_bytes_per_token within u64 */

static const struct {
    const char *arch;
    eco_model_family family;
} archs[] = {
    {"LlamaForCausalLM", ECO_FAMILY_LLAMA},
    {"Qwen2ForCausalLM", ECO_FAMILY_QWEN2},
    {"MistralForCausalLM", ECO_FAMILY_MISTRAL},
    {"Phi3ForCausalLM", ECO_FAMILY_PHI3},
};

static const char *family_arch(eco_model_family f)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (archs[i].family == f) return archs[i].arch;
    return "?";
}

eco_err eco_model_config_validate(const eco_model_config *c)
{
    if (!c) return eco_fail(ECO_EINVAL, "model config: NULL");
    const struct { const char *name; int v; } dims[] = {
        {"hidden_size", c->hidden}, {"intermediate_size", c->intermediate}, {"num_hidden_layers", c->layers},
        {"num_attention_heads", c->heads}, {"num_key_value_heads", c->kv_heads}, {"head_dim", c->head_dim},
        {"vocab_size", c->vocab}, {"max_position_embeddings", c->max_pos},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].v <= 0 || dims[i].v > DIM_MAX)
            return eco_fail_field(ECO_EINVAL, dims[i].name, "model config: %s must be in 1..%d, got %d", dims[i].name,
                                  DIM_MAX, dims[i].v);
    if (c->layers > 4096) return eco_fail_field(ECO_EINVAL, "num_hidden_layers", "model config: num_hidden_layers %d > 4096", c->layers);
    if (c->heads % c->kv_heads)
        return eco_fail_field(ECO_EINVAL, "num_key_value_heads",
                              "model config: num_attention_heads %d is not a multiple of num_key_value_heads %d",
                              c->heads, c->kv_heads);
    if (c->head_dim % 2)
        return eco_fail_field(ECO_EINVAL, "head_dim", "model config: head_dim %d must be even (RoPE pairs)", c->head_dim);
    if ((uint64_t)c->heads * (uint64_t)c->head_dim > DIM_MAX)
        return eco_fail_field(ECO_EINVAL, "head_dim", "model config: heads*head_dim too large");
    if (!(c->rope_theta > 1.0) || !isfinite(c->rope_theta))
        return eco_fail_field(ECO_EINVAL, "rope_theta", "model config: rope_theta must be > 1, got %g", c->rope_theta);
    if (!(c->rms_eps > 0.0) || !(c->rms_eps < 1.0))
        return eco_fail_field(ECO_EINVAL, "rms_norm_eps", "model config: rms_norm_eps must be in (0, 1), got %g", c->rms_eps);
    if (c->sliding_window < 0)
        return eco_fail_field(ECO_EINVAL, "sliding_window", "model config: sliding_window must be >= 0");
    if (c->qkv_bias && c->family != ECO_FAMILY_QWEN2)
        return eco_fail_field(ECO_EINVAL, "attention_bias", "model config: q/k/v biases are only supported for Qwen2");
    if (c->rope_llama3) {
        if (!(c->rope_factor >= 1.0) || !(c->rope_low_freq_factor > 0) ||
            !(c->rope_high_freq_factor > c->rope_low_freq_factor) || c->rope_original_max_pos <= 0)
            return eco_fail_field(ECO_EINVAL, "rope_scaling",
                                  "model config: llama3 rope_scaling needs factor >= 1, 0 < low_freq_factor < "
                                  "high_freq_factor and original_max_position_embeddings > 0");
    }
    return ECO_OK;
}

static eco_err get_int(json_t *root, const char *key, bool required, int def, int *out)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        if (required) return eco_fail_field(ECO_EINVAL, key, "missing required field \"%s\"", key);
        *out = def;
        return ECO_OK;
    }
    if (!json_is_integer(v))
        return eco_fail_field(ECO_EINVAL, key, "\"%s\" must be an integer", key);
    json_int_t x = json_integer_value(v);
    if (x < 0 || x > 0x7fffffff)
        return eco_fail_field(ECO_EINVAL, key, "\"%s\" out of range: %lld", key, (long long)x);
    *out = (int)x;
    return ECO_OK;
}

static eco_err get_num(json_t *obj, const char *ctx, const char *key, bool required, double def, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required) return eco_fail_field(ECO_EINVAL, key, "missing required field \"%s%s\"", ctx, key);
        *out = def;
        return ECO_OK;
    }
    if (!json_is_number(v)) return eco_fail_field(ECO_EINVAL, key, "\"%s%s\" must be a number", ctx, key);
    *out = json_number_value(v);
    return ECO_OK;
}

static eco_err get_bool(json_t *root, const char *key, bool def, bool *out)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) { *out = def; return ECO_OK; }
    if (!json_is_boolean(v)) return eco_fail_field(ECO_EINVAL, key, "\"%s\" must be true or false", key);
    *out = json_is_true(v);
    return ECO_OK;
}

/* rope_scaling (transformers < 5) or rope_parameters (>= 5), named `field` in errors and before its keys. */
static eco_err parse_rope_scaling(json_t *rs, const char *field, eco_model_config *c)
{
    if (!rs || json_is_null(rs)) return ECO_OK;
    char ctx[32];
    snprintf(ctx, sizeof ctx, "%s.", field);
    if (!json_is_object(rs)) return eco_fail_field(ECO_EINVAL, field, "%s must be an object or null", field);
    json_t *t = json_object_get(rs, "rope_type");
    if (!t) t = json_object_get(rs, "type"); /* transformers < 4.45 */
    if (!t && !strcmp(field, "rope_parameters")) {
        /* transformers >= 5 may leave the type out for the default; one entry per layer type is another model */
        const char *k;
        json_t *v;
        json_object_foreach(rs, k, v)
            if (json_is_object(v))
                return eco_fail_field(ECO_EUNSUPPORTED, field, "rope_parameters per layer type (\"%s\") is not supported", k);
        return ECO_OK;
    }
    if (!json_is_string(t)) return eco_fail_field(ECO_EINVAL, field, "%s has no rope_type", field);
    const char *type = json_string_value(t);
    if (!strcmp(type, "default")) return ECO_OK;
    if (strcmp(type, "llama3"))
        return eco_fail_field(ECO_EUNSUPPORTED, field, "%s type \"%s\" is not supported (only \"llama3\" and \"default\")",
                              field, type);
    eco_err e;
    double orig = 0;
    c->rope_llama3 = true;
    if ((e = get_num(rs, ctx, "factor", true, 0, &c->rope_factor)) ||
        (e = get_num(rs, ctx, "low_freq_factor", true, 0, &c->rope_low_freq_factor)) ||
        (e = get_num(rs, ctx, "high_freq_factor", true, 0, &c->rope_high_freq_factor)) ||
        (e = get_num(rs, ctx, "original_max_position_embeddings", true, 0, &orig)))
        return e;
    if (!(orig >= 1 && orig <= 1e9 && orig == floor(orig)))
        return eco_fail_field(ECO_EINVAL, field, "%soriginal_max_position_embeddings must be a positive integer", ctx);
    c->rope_original_max_pos = (int)orig;
    return ECO_OK;
}

/* transformers >= 5 writes rope_theta, the scaling and partial_rotary_factor into one "rope_parameters" object, and
 * no top-level rope_theta: read as the top-level fields were, a Llama-3.1 config would run at theta 1e4 without its
 * scaling and load without a word. A value given both ways must agree. */
static eco_err parse_rope_parameters(json_t *root, eco_model_config *c)
{
    json_t *rp = json_object_get(root, "rope_parameters");
    if (!rp || json_is_null(rp)) return ECO_OK;
    if (!json_is_object(rp)) return eco_fail_field(ECO_EINVAL, "rope_parameters", "rope_parameters must be an object or null");
    eco_err e;
    double theta = 0, prf = 1.0;
    if (json_object_get(rp, "rope_theta")) {
        if ((e = get_num(rp, "rope_parameters.", "rope_theta", true, 0, &theta))) return e;
        json_t *top = json_object_get(root, "rope_theta");
        if (json_is_number(top) && json_number_value(top) != theta)
            return eco_fail_field(ECO_EINVAL, "rope_parameters", "rope_theta %g and rope_parameters.rope_theta %g disagree",
                                  json_number_value(top), theta);
        c->rope_theta = theta;
    }
    if ((e = get_num(rp, "rope_parameters.", "partial_rotary_factor", false, 1.0, &prf))) return e;
    if (prf != 1.0)
        return eco_fail_field(ECO_EUNSUPPORTED, "partial_rotary_factor", "rope_parameters.partial_rotary_factor != 1 is not supported");
    json_t *rs = json_object_get(root, "rope_scaling");
    eco_model_config scaled = *c; /* the scaling rope_parameters alone describes */
    scaled.rope_llama3 = false;
    scaled.rope_factor = scaled.rope_low_freq_factor = scaled.rope_high_freq_factor = 0;
    scaled.rope_original_max_pos = 0;
    if ((e = parse_rope_scaling(rp, "rope_parameters", &scaled))) return e;
    if (rs && !json_is_null(rs) &&
        (scaled.rope_llama3 != c->rope_llama3 ||
         (c->rope_llama3 && (scaled.rope_factor != c->rope_factor || scaled.rope_low_freq_factor != c->rope_low_freq_factor ||
                             scaled.rope_high_freq_factor != c->rope_high_freq_factor ||
                             scaled.rope_original_max_pos != c->rope_original_max_pos))))
        return eco_fail_field(ECO_EINVAL, "rope_parameters", "rope_scaling and rope_parameters describe different scalings");
    *c = scaled;
    return ECO_OK;
}

/* Which layers the window applies to. The engine windows all layers or none, as Mistral and Phi-3 do. Qwen2 windows
 * only layers >= max_window_layers (HF Qwen2Config; default 28), and newer configs list "layer_types" per layer: a
 * split between windowed and full layers is refused rather than run as all-windowed. */
static eco_err parse_window_layers(json_t *root, const eco_model_config *c, bool windowed, bool *use_sw)
{
    int first = 0; /* first windowed layer */
    json_t *types = json_object_get(root, "layer_types");
    eco_err e;
    if (types && !json_is_null(types)) {
        if (!json_is_array(types) || json_array_size(types) != (size_t)c->layers)
            return eco_fail_field(ECO_EINVAL, "layer_types", "layer_types must list one type per layer (%d)", c->layers);
        int sliding = 0;
        for (size_t i = 0; i < json_array_size(types); i++) {
            const char *t = json_string_value(json_array_get(types, i));
            if (!t || (strcmp(t, "sliding_attention") && strcmp(t, "full_attention")))
                return eco_fail_field(ECO_EINVAL, "layer_types", "layer_types[%zu] must be \"full_attention\" or \"sliding_attention\"", i);
            sliding += !strcmp(t, "sliding_attention");
        }
        if (windowed && sliding && sliding < c->layers)
            return eco_fail_field(ECO_EUNSUPPORTED, "layer_types", "a sliding window on %d of %d layers is not supported "
                                  "(only on all layers or none)", sliding, c->layers);
        *use_sw = windowed && sliding == c->layers;
        return ECO_OK;
    }
    if (c->family != ECO_FAMILY_QWEN2 || !windowed) { *use_sw = windowed; return ECO_OK; }
    if ((e = get_int(root, "max_window_layers", false, 28, &first))) return e;
    if (first > 0 && first < c->layers)
        return eco_fail_field(ECO_EUNSUPPORTED, "max_window_layers", "a sliding window on layers %d..%d of %d "
                              "(max_window_layers %d) is not supported (only on all layers or none)", first, c->layers - 1, c->layers, first);
    *use_sw = first <= 0;
    return ECO_OK;
}

static eco_err parse_root(json_t *root, eco_model_config *out)
{
    eco_model_config c;
    memset(&c, 0, sizeof c);
    if (!json_is_object(root)) return eco_fail(ECO_EFORMAT, "top level must be an object");

    json_t *arr = json_object_get(root, "architectures");
    const char *arch = NULL;
    if (json_is_array(arr) && json_array_size(arr) > 0 && json_is_string(json_array_get(arr, 0)))
        arch = json_string_value(json_array_get(arr, 0));
    if (!arch)
        return eco_fail_field(ECO_EINVAL, "architectures", "missing \"architectures\" (e.g. [\"LlamaForCausalLM\"])");
    bool found = false;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(arch, archs[i].arch)) { c.family = archs[i].family; found = true; }
    if (!found)
        return eco_fail_field(ECO_EUNSUPPORTED, "architectures",
                              "architecture \"%s\" is not supported (LlamaForCausalLM, Qwen2ForCausalLM, "
                              "MistralForCausalLM, Phi3ForCausalLM)", arch);

    eco_err e;
    if ((e = get_int(root, "hidden_size", true, 0, &c.hidden)) ||
        (e = get_int(root, "intermediate_size", true, 0, &c.intermediate)) ||
        (e = get_int(root, "num_hidden_layers", true, 0, &c.layers)) ||
        (e = get_int(root, "num_attention_heads", true, 0, &c.heads)) ||
        (e = get_int(root, "vocab_size", true, 0, &c.vocab)))
        return e;
    if (c.heads <= 0) return eco_fail_field(ECO_EINVAL, "num_attention_heads", "num_attention_heads must be > 0");
    /* HF defaults per architecture (configuration_*.py). */
    int def_max_pos = c.family == ECO_FAMILY_QWEN2 ? 32768 : c.family == ECO_FAMILY_MISTRAL ? 131072
                    : c.family == ECO_FAMILY_PHI3 ? 4096 : 2048;
    double def_eps = c.family == ECO_FAMILY_PHI3 ? 1e-5 : 1e-6;
    if ((e = get_int(root, "num_key_value_heads", false, c.heads, &c.kv_heads)) ||
        (e = get_int(root, "head_dim", false, c.hidden / c.heads, &c.head_dim)) ||
        (e = get_int(root, "max_position_embeddings", false, def_max_pos, &c.max_pos)) ||
        (e = get_num(root, "", "rope_theta", false, 10000.0, &c.rope_theta)) ||
        (e = get_num(root, "", "rms_norm_eps", false, def_eps, &c.rms_eps)) ||
        (e = get_bool(root, "tie_word_embeddings", false, &c.tie_embeddings)))
        return e;
    if (c.hidden % c.heads && !json_object_get(root, "head_dim"))
        return eco_fail_field(ECO_EINVAL, "head_dim", "hidden_size %d is not a multiple of num_attention_heads %d "
                              "and no head_dim is given", c.hidden, c.heads);

    json_t *act = json_object_get(root, "hidden_act");
    if (act && (!json_is_string(act) || strcmp(json_string_value(act), "silu")))
        return eco_fail_field(ECO_EUNSUPPORTED, "hidden_act", "hidden_act must be \"silu\"");
    bool attn_bias = false, mlp_bias = false, use_sw = true;
    if ((e = get_bool(root, "attention_bias", false, &attn_bias))) return e;
    if (attn_bias) return eco_fail_field(ECO_EUNSUPPORTED, "attention_bias", "attention_bias=true is not supported");
    if ((e = get_bool(root, "mlp_bias", false, &mlp_bias))) return e;
    if (mlp_bias) return eco_fail_field(ECO_EUNSUPPORTED, "mlp_bias", "mlp_bias=true is not supported (its bias tensors would be ignored)");
    double prf = 1.0;
    if ((e = get_num(root, "", "partial_rotary_factor", false, 1.0, &prf))) return e;
    if (prf != 1.0) return eco_fail_field(ECO_EUNSUPPORTED, "partial_rotary_factor", "partial_rotary_factor != 1 is not supported");
    c.qkv_bias = c.family == ECO_FAMILY_QWEN2;

    /* Qwen2 ships sliding_window with use_sliding_window=false; Mistral/Phi-3 apply it when set. */
    if ((e = get_bool(root, "use_sliding_window", c.family != ECO_FAMILY_QWEN2, &use_sw))) return e;
    int sw = 0;
    if ((e = get_int(root, "sliding_window", false, 0, &sw))) return e;
    if ((e = parse_window_layers(root, &c, use_sw && sw > 0, &use_sw))) return e;
    c.sliding_window = use_sw ? sw : 0;

    if ((e = parse_rope_scaling(json_object_get(root, "rope_scaling"), "rope_scaling", &c)) ||
        (e = parse_rope_parameters(root, &c)))
        return e;

    json_t *dt = json_object_get(root, "torch_dtype");
    if (!dt) dt = json_object_get(root, "dtype"); /* transformers >= 4.56 */
    if (json_is_string(dt)) snprintf(c.torch_dtype, sizeof c.torch_dtype, "%s", json_string_value(dt));
    json_t *seed = json_object_get(root, "eco_synthetic_seed");
    if (seed) {
        if (!json_is_integer(seed) || json_integer_value(seed) < 0)
            return eco_fail_field(ECO_EINVAL, "eco_synthetic_seed", "\"eco_synthetic_seed\" must be an integer >= 0");
        c.synthetic_checkpoint = true;
        c.synthetic_seed = (uint64_t)json_integer_value(seed);
    }
    json_t *nm = json_object_get(root, "_name_or_path");
    snprintf(c.name, sizeof c.name, "%s", json_is_string(nm) && *json_string_value(nm) ? json_string_value(nm) : "config.json");
    snprintf(c.hf_id, sizeof c.hf_id, "%s", json_is_string(nm) ? json_string_value(nm) : "");

    if ((e = eco_model_config_validate(&c))) return e;
    *out = c;
    return ECO_OK;
}

eco_err eco_model_config_from_json(const char *path_or_text, eco_model_config *out)
{
    if (!path_or_text || !out) return eco_fail(ECO_EINVAL, "config.json: NULL argument");
    const char *p = path_or_text;
    while (isspace((unsigned char)*p)) p++;
    json_error_t jerr;
    json_t *root;
    const char *label;
    if (*p == '{') {
        label = "config.json text";
        root = json_loads(p, JSON_REJECT_DUPLICATES, &jerr);
    } else {
        label = path_or_text;
        struct stat st;
        if (stat(path_or_text, &st) == 0 && S_ISDIR(st.st_mode))
            return eco_fail(ECO_EINVAL, "config.json %s: is a folder (give its config.json)", path_or_text);
        FILE *f = fopen(path_or_text, "rb");
        if (!f) return eco_fail(ECO_EIO, "config.json %s: %s", path_or_text, strerror(errno));
        char *buf = malloc(CONFIG_MAX_BYTES + 1);
        if (!buf) { fclose(f); return eco_fail(ECO_ENOMEM, "config.json: out of memory"); }
        size_t n = fread(buf, 1, CONFIG_MAX_BYTES + 1, f);
        fclose(f);
        if (n > CONFIG_MAX_BYTES) { free(buf); return eco_fail(ECO_ETOOBIG, "config.json %s: larger than %u bytes", path_or_text, CONFIG_MAX_BYTES); }
        root = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &jerr);
        free(buf);
    }
    if (!root) return eco_fail(ECO_EFORMAT, "%s: invalid JSON at line %d: %s", label, jerr.line, jerr.text);
    eco_err e = parse_root(root, out);
    json_decref(root);
    if (e) return eco_fail_context("%s: ", label);
    return ECO_OK;
}

eco_err eco_model_config_to_json(const eco_model_config *c, char **out)
{
    eco_err e = eco_model_config_validate(c);
    if (e) return e;
    json_t *r = json_object();
    json_object_set_new(r, "architectures", json_pack("[s]", family_arch(c->family)));
    json_object_set_new(r, "model_type", json_string(eco_model_family_name(c->family)));
    json_object_set_new(r, "_name_or_path", json_string(c->hf_id[0] ? c->hf_id : c->name));
    json_object_set_new(r, "hidden_size", json_integer(c->hidden));
    json_object_set_new(r, "intermediate_size", json_integer(c->intermediate));
    json_object_set_new(r, "num_hidden_layers", json_integer(c->layers));
    json_object_set_new(r, "num_attention_heads", json_integer(c->heads));
    json_object_set_new(r, "num_key_value_heads", json_integer(c->kv_heads));
    json_object_set_new(r, "head_dim", json_integer(c->head_dim));
    json_object_set_new(r, "vocab_size", json_integer(c->vocab));
    json_object_set_new(r, "max_position_embeddings", json_integer(c->max_pos));
    json_object_set_new(r, "rope_theta", json_real(c->rope_theta));
    json_object_set_new(r, "rms_norm_eps", json_real(c->rms_eps));
    json_object_set_new(r, "tie_word_embeddings", json_boolean(c->tie_embeddings));
    json_object_set_new(r, "hidden_act", json_string("silu"));
    if (c->sliding_window) json_object_set_new(r, "sliding_window", json_integer(c->sliding_window));
    else json_object_set_new(r, "sliding_window", json_null());
    if (c->synthetic_checkpoint) json_object_set_new(r, "eco_synthetic_seed", json_integer((json_int_t)(c->synthetic_seed & 0x7fffffffffffffffull)));
    if (c->family == ECO_FAMILY_QWEN2) { /* Qwen2 windows layers >= max_window_layers: all of them, or none */
        json_object_set_new(r, "use_sliding_window", json_boolean(c->sliding_window > 0));
        json_object_set_new(r, "max_window_layers", json_integer(c->sliding_window > 0 ? 0 : c->layers));
    }
    if (c->rope_llama3)
        json_object_set_new(r, "rope_scaling",
                            json_pack("{s:s, s:f, s:f, s:f, s:i}", "rope_type", "llama3", "factor", c->rope_factor,
                                      "low_freq_factor", c->rope_low_freq_factor, "high_freq_factor",
                                      c->rope_high_freq_factor, "original_max_position_embeddings",
                                      c->rope_original_max_pos));
    else
        json_object_set_new(r, "rope_scaling", json_null());
    json_object_set_new(r, "torch_dtype", json_string(c->torch_dtype[0] ? c->torch_dtype : "float32"));
    char *s = json_dumps(r, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(r);
    if (!s) return eco_fail(ECO_ENOMEM, "config.json: out of memory");
    *out = s;
    return ECO_OK;
}

void eco_rope_inv_freq(const eco_model_config *c, double *inv_freq)
{
    int half = c->head_dim / 2;
    for (int i = 0; i < half; i++) {
        double f = pow(c->rope_theta, -2.0 * i / c->head_dim);
        if (c->rope_llama3) {
            /* transformers _compute_llama3_parameters: long wavelengths slowed by `factor`, short ones kept,
             * the band between interpolated on old_ctx / wavelength. */
            double old_ctx = c->rope_original_max_pos;
            double low_wl = old_ctx / c->rope_low_freq_factor, high_wl = old_ctx / c->rope_high_freq_factor;
            double wl = 2.0 * M_PI / f;
            if (wl > low_wl) {
                f = f / c->rope_factor;
            } else if (wl >= high_wl) {
                double s = (old_ctx / wl - c->rope_low_freq_factor) / (c->rope_high_freq_factor - c->rope_low_freq_factor);
                f = (1.0 - s) * f / c->rope_factor + s * f;
            }
        }
        inv_freq[i] = f;
    }
}
