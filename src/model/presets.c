#include <string.h>
#include <strings.h>

#include "eco/model.h"

/* Shapes from the models' HF config.json files (see shared/research/anchor-kernels.md §5). */
static const eco_model_config presets[] = {
    {.name = "Qwen2.5-0.5B", .hf_id = "Qwen/Qwen2.5-0.5B", .family = ECO_FAMILY_QWEN2, .hidden = 896,
     .intermediate = 4864, .layers = 24, .heads = 14, .kv_heads = 2, .head_dim = 64, .vocab = 151936,
     .max_pos = 32768, .rope_theta = 1e6, .rms_eps = 1e-6, .tie_embeddings = true, .qkv_bias = true},
    {.name = "Qwen2.5-1.5B", .hf_id = "Qwen/Qwen2.5-1.5B", .family = ECO_FAMILY_QWEN2, .hidden = 1536,
     .intermediate = 8960, .layers = 28, .heads = 12, .kv_heads = 2, .head_dim = 128, .vocab = 151936,
     .max_pos = 32768, .rope_theta = 1e6, .rms_eps = 1e-6, .tie_embeddings = true, .qkv_bias = true},
    {.name = "Qwen2.5-3B", .hf_id = "Qwen/Qwen2.5-3B", .family = ECO_FAMILY_QWEN2, .hidden = 2048,
     .intermediate = 11008, .layers = 36, .heads = 16, .kv_heads = 2, .head_dim = 128, .vocab = 151936,
     .max_pos = 32768, .rope_theta = 1e6, .rms_eps = 1e-6, .tie_embeddings = true, .qkv_bias = true},
    {.name = "Qwen2.5-7B", .hf_id = "Qwen/Qwen2.5-7B", .family = ECO_FAMILY_QWEN2, .hidden = 3584,
     .intermediate = 18944, .layers = 28, .heads = 28, .kv_heads = 4, .head_dim = 128, .vocab = 152064,
     .max_pos = 32768, .rope_theta = 1e6, .rms_eps = 1e-6, .tie_embeddings = false, .qkv_bias = true},
    {.name = "Qwen2.5-14B", .hf_id = "Qwen/Qwen2.5-14B", .family = ECO_FAMILY_QWEN2, .hidden = 5120,
     .intermediate = 13824, .layers = 48, .heads = 40, .kv_heads = 8, .head_dim = 128, .vocab = 152064,
     .max_pos = 32768, .rope_theta = 1e6, .rms_eps = 1e-5, .tie_embeddings = false, .qkv_bias = true},
    {.name = "Llama-3.1-8B", .hf_id = "meta-llama/Llama-3.1-8B", .family = ECO_FAMILY_LLAMA, .hidden = 4096,
     .intermediate = 14336, .layers = 32, .heads = 32, .kv_heads = 8, .head_dim = 128, .vocab = 128256,
     .max_pos = 131072, .rope_theta = 5e5, .rms_eps = 1e-5, .rope_llama3 = true, .rope_factor = 8.0,
     .rope_low_freq_factor = 1.0, .rope_high_freq_factor = 4.0, .rope_original_max_pos = 8192},
    {.name = "Mistral-7B-v0.3", .hf_id = "mistralai/Mistral-7B-v0.3", .family = ECO_FAMILY_MISTRAL, .hidden = 4096,
     .intermediate = 14336, .layers = 32, .heads = 32, .kv_heads = 8, .head_dim = 128, .vocab = 32768,
     .max_pos = 32768, .rope_theta = 1e6, .rms_eps = 1e-5},
    {.name = "Phi-3-mini", .hf_id = "microsoft/Phi-3-mini-4k-instruct", .family = ECO_FAMILY_PHI3, .hidden = 3072,
     .intermediate = 8192, .layers = 32, .heads = 32, .kv_heads = 32, .head_dim = 96, .vocab = 32064,
     .max_pos = 4096, .rope_theta = 1e4, .rms_eps = 1e-5, .sliding_window = 2047},
    {.name = "TinyLlama-1.1B", .hf_id = "TinyLlama/TinyLlama-1.1B-Chat-v1.0", .family = ECO_FAMILY_LLAMA,
     .hidden = 2048, .intermediate = 5632, .layers = 22, .heads = 32, .kv_heads = 4, .head_dim = 64,
     .vocab = 32000, .max_pos = 2048, .rope_theta = 1e4, .rms_eps = 1e-5},
    {.name = "Yi-1.5-6B", .hf_id = "01-ai/Yi-1.5-6B", .family = ECO_FAMILY_LLAMA, .hidden = 4096,
     .intermediate = 11008, .layers = 32, .heads = 32, .kv_heads = 4, .head_dim = 128, .vocab = 64000,
     .max_pos = 4096, .rope_theta = 5e6, .rms_eps = 1e-6},
};

size_t eco_preset_count(void) { return sizeof presets / sizeof presets[0]; }

const eco_model_config *eco_preset_at(size_t i) { return i < eco_preset_count() ? &presets[i] : NULL; }

const eco_model_config *eco_preset_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < eco_preset_count(); i++) {
        const char *hf_short = strchr(presets[i].hf_id, '/');
        if (!strcasecmp(name, presets[i].name) || !strcasecmp(name, presets[i].hf_id) ||
            (hf_short && !strcasecmp(name, hf_short + 1)))
            return &presets[i];
    }
    return NULL;
}

bool eco_same_model(const char *a, const char *b)
{
    if (!a || !b) return false;
    if (!strcasecmp(a, b)) return true;
    const eco_model_config *p = eco_preset_find(a);
    return p && eco_preset_find(b) == p;
}

const char *eco_model_family_name(eco_model_family f)
{
    switch (f) {
    case ECO_FAMILY_LLAMA: return "llama";
    case ECO_FAMILY_QWEN2: return "qwen2";
    case ECO_FAMILY_MISTRAL: return "mistral";
    case ECO_FAMILY_PHI3: return "phi3";
    }
    return "unknown";
}

/* Per-layer linear shapes [out, in]; Phi-3's fused qkv/gate_up hold the same element counts. */
static uint64_t layer_linear_bytes(const eco_model_config *c, eco_precision p)
{
    uint64_t h = (uint64_t)c->hidden, q = (uint64_t)c->heads * c->head_dim, kv = (uint64_t)c->kv_heads * c->head_dim;
    uint64_t i = (uint64_t)c->intermediate;
    if (c->family == ECO_FAMILY_PHI3)
        return eco_precision_weight_bytes(p, q + 2 * kv, h) + eco_precision_weight_bytes(p, h, q) +
               eco_precision_weight_bytes(p, 2 * i, h) + eco_precision_weight_bytes(p, h, i);
    return eco_precision_weight_bytes(p, q, h) + 2 * eco_precision_weight_bytes(p, kv, h) +
           eco_precision_weight_bytes(p, h, q) + 2 * eco_precision_weight_bytes(p, i, h) +
           eco_precision_weight_bytes(p, h, i);
}

static uint64_t layer_small_params(const eco_model_config *c)
{
    uint64_t n = 2 * (uint64_t)c->hidden; /* two RMSNorm weights */
    if (c->qkv_bias) n += (uint64_t)(c->heads + 2 * c->kv_heads) * c->head_dim;
    return n;
}

uint64_t eco_model_param_count(const eco_model_config *c)
{
    uint64_t h = (uint64_t)c->hidden, q = (uint64_t)c->heads * c->head_dim, kv = (uint64_t)c->kv_heads * c->head_dim;
    uint64_t per_layer = q * h + 2 * kv * h + h * q + 3 * (uint64_t)c->intermediate * h + layer_small_params(c);
    uint64_t emb = (uint64_t)c->vocab * h;
    return (uint64_t)c->layers * per_layer + emb + (c->tie_embeddings ? 0 : emb) + h;
}

uint64_t eco_model_kv_bytes_per_position(const eco_model_config *c)
{
    return 2ull * (uint64_t)c->layers * (uint64_t)c->kv_heads * (uint64_t)c->head_dim * 2ull;
}

static uint64_t head_bytes(const eco_model_config *c, eco_precision p, bool quantize_lm_head)
{
    return eco_precision_weight_bytes(quantize_lm_head ? p : ECO_PREC_FP16, (uint64_t)c->vocab, (uint64_t)c->hidden);
}

uint64_t eco_model_bytes_per_token(const eco_model_config *c, eco_precision p, uint64_t ctx, bool quantize_lm_head)
{
    uint64_t small = (uint64_t)c->layers * layer_small_params(c) + (uint64_t)c->hidden;
    return (uint64_t)c->layers * layer_linear_bytes(c, p) + head_bytes(c, p, quantize_lm_head) +
           2ull * (uint64_t)c->hidden /* one embedding row */ + 2 * small + ctx * eco_model_kv_bytes_per_position(c);
}

uint64_t eco_model_weight_bytes(const eco_model_config *c, eco_precision p, bool quantize_lm_head)
{
    uint64_t small = (uint64_t)c->layers * layer_small_params(c) + (uint64_t)c->hidden;
    uint64_t emb = 2ull * (uint64_t)c->vocab * (uint64_t)c->hidden;
    /* a tied head shares the fp16 embedding, unless it is quantized: then the engine keeps a quantized copy too */
    bool own_head = !c->tie_embeddings || (quantize_lm_head && p != ECO_PREC_FP16);
    return (uint64_t)c->layers * layer_linear_bytes(c, p) + (own_head ? head_bytes(c, p, quantize_lm_head) : 0) + emb + 2 * small;
}
