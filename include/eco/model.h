/* Model architectures: exact HF shapes (presets and config.json), parameter and byte accounting,
 * the safetensors reader/writer, and weight sources (checkpoints on disk or seeded synthetic weights). */
#ifndef ECO_MODEL_H
#define ECO_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eco/err.h"
#include "eco/quant.h"

typedef enum { ECO_FAMILY_LLAMA = 0, ECO_FAMILY_QWEN2, ECO_FAMILY_MISTRAL, ECO_FAMILY_PHI3 } eco_model_family;

typedef struct {
    char name[64];           /* preset name, e.g. "Qwen2.5-7B" */
    char hf_id[96];          /* e.g. "Qwen/Qwen2.5-7B" */
    eco_model_family family;
    int hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, max_pos;
    double rope_theta, rms_eps;
    bool tie_embeddings, qkv_bias;
    /* Llama-3.1 rope scaling (rope_type "llama3") */
    bool rope_llama3;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_pos;
    int sliding_window;      /* 0 = none; only applied for Mistral and Phi-3 (Qwen2 ships it disabled) */
    char torch_dtype[16];    /* from config.json ("bfloat16", ...); "" for presets */
    bool synthetic_checkpoint; /* config.json's "eco_synthetic_seed": written by eco model save (random values) */
    uint64_t synthetic_seed;
} eco_model_config;

size_t eco_preset_count(void);
const eco_model_config *eco_preset_at(size_t i);
/* Case-insensitive; accepts the preset name or the HF id ("Qwen/Qwen2.5-7B"). NULL when unknown. */
const eco_model_config *eco_preset_find(const char *name);
/* One model however it is spelled: the same name in any case, or one preset by its name, HF id or the id's short
 * name ("TinyLlama-1.1B" is "TinyLlama/TinyLlama-1.1B-Chat-v1.0" is "tinyllama-1.1b-chat-v1.0"). */
bool eco_same_model(const char *a, const char *b);
const char *eco_model_family_name(eco_model_family f);

uint64_t eco_model_param_count(const eco_model_config *c);
/* Bytes of fp16 K+V cached per position (all layers). */
uint64_t eco_model_kv_bytes_per_position(const eco_model_config *c);
/* Bytes read from memory to decode one token at batch 1 with `ctx` cached positions:
 * quantized linears (scales included), the lm_head (16-bit unless quantize_lm_head), one embedding row,
 * norms/biases, and the fp16 KV cache. */
uint64_t eco_model_bytes_per_token(const eco_model_config *c, eco_precision p, uint64_t ctx, bool quantize_lm_head);
/* Bytes of weights resident in memory (embeddings and lm_head 16-bit unless quantize_lm_head; a tied head quantized
 * is a copy beside the fp16 embedding, which the engine keeps for the lookup). */
uint64_t eco_model_weight_bytes(const eco_model_config *c, eco_precision p, bool quantize_lm_head);


/* ---- config.json ---- */

/* Parses an HF config.json for LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM or Phi3ForCausalLM.
 * `path_or_text` is JSON text when it starts with '{' (after blanks), otherwise a file path.
 * Errors: EUNSUPPORTED for other architectures / rope types / activations, EINVAL naming the missing or bad
 * field, EFORMAT for malformed JSON, EIO for an unreadable file. */
eco_err eco_model_config_from_json(const char *path_or_text, eco_model_config *out);
/* Checks shapes are positive, heads divisible by kv_heads, head_dim even, sizes bounded (so byte counts
 * cannot overflow). Called by the parser; call it on hand-made configs. */
eco_err eco_model_config_validate(const eco_model_config *c);
/* Writes an HF-style config.json for `c` (what eco_model_config_from_json reads back). Caller frees *out. */
eco_err eco_model_config_to_json(const eco_model_config *c, char **out);
/* RoPE inverse frequencies theta^(-2i/d), i < head_dim/2, with llama3 scaling applied when configured. */
void eco_rope_inv_freq(const eco_model_config *c, double *inv_freq);

/* ---- safetensors ---- */

typedef enum {
    ECO_DT_BOOL = 0, ECO_DT_U8, ECO_DT_I8, ECO_DT_F8_E4M3, ECO_DT_F8_E5M2, ECO_DT_I16, ECO_DT_U16, ECO_DT_F16,
    ECO_DT_BF16, ECO_DT_I32, ECO_DT_U32, ECO_DT_F32, ECO_DT_I64, ECO_DT_U64, ECO_DT_F64, ECO_DT_COUNT
} eco_dtype;

const char *eco_dtype_name(eco_dtype d);  /* "F16", ... as safetensors spells them */
unsigned eco_dtype_bytes(eco_dtype d);

#define ECO_ST_MAX_DIMS 8
#define ECO_ST_MAX_HEADER_BYTES 100000000ull /* the reference parser's limit */

typedef struct {
    const char *name;
    eco_dtype dtype;
    int ndim;
    uint64_t shape[ECO_ST_MAX_DIMS];
    uint64_t nelem;
    uint64_t begin_bytes, size_bytes; /* relative to the data buffer */
    const uint8_t *data;              /* not aligned: read with memcpy */
} eco_st_tensor;

typedef struct eco_safetensors eco_safetensors;

/* mmaps and validates a file: 8-byte LE header length N (sane, within the file), a JSON object starting
 * with '{', known dtypes (EUNSUPPORTED otherwise), shapes whose element count times dtype size equals
 * END-BEGIN, offsets within the data, no overlaps or holes, data exactly filling the file. */
eco_err eco_safetensors_open(const char *path, eco_safetensors **out);
/* The same checks over a buffer the caller keeps alive while the handle is used (fuzzing, tests). */
eco_err eco_safetensors_parse(const uint8_t *buf, size_t len, const char *label, eco_safetensors **out);
void eco_safetensors_close(eco_safetensors *st);
size_t eco_safetensors_count(const eco_safetensors *st);
const eco_st_tensor *eco_safetensors_at(const eco_safetensors *st, size_t i); /* in file order */
const eco_st_tensor *eco_safetensors_find(const eco_safetensors *st, const char *name);
/* Value of a __metadata__ key, NULL when absent. */
const char *eco_safetensors_metadata(const eco_safetensors *st, const char *key);
/* Converts elements [elem_begin, elem_begin+count) of an F16/BF16/F32 tensor to fp32. */
eco_err eco_st_tensor_read_f32(const eco_st_tensor *t, uint64_t elem_begin, uint64_t count, float *dst);

typedef struct {
    const char *name;
    eco_dtype dtype;
    int ndim;
    uint64_t shape[ECO_ST_MAX_DIMS];
    const void *data; /* nelem * dtype size bytes, little-endian */
} eco_st_write_tensor;

/* Writes a safetensors file (header padded with spaces to a multiple of 8, tensors in the given order).
 * `metadata` holds n_meta key/value string pairs (may be NULL when n_meta is 0). */
eco_err eco_safetensors_write(const char *path, const eco_st_write_tensor *tensors, size_t n,
                              const char *const *metadata, size_t n_meta);

/* ---- weights: logical tensors of a decoder, from a checkpoint or synthetic ---- */

typedef enum {
    ECO_W_EMBED = 0,  /* [vocab, hidden] */
    ECO_W_ATTN_NORM,  /* [hidden] per layer */
    ECO_W_Q, ECO_W_K, ECO_W_V, /* [heads*hd | kv*hd, hidden] per layer (Phi-3: rows of qkv_proj) */
    ECO_W_Q_BIAS, ECO_W_K_BIAS, ECO_W_V_BIAS, /* Qwen2 only */
    ECO_W_O,          /* [hidden, heads*hd] */
    ECO_W_MLP_NORM,   /* [hidden] */
    ECO_W_GATE, ECO_W_UP, /* [inter, hidden] (Phi-3: halves of gate_up_proj, gate first) */
    ECO_W_DOWN,       /* [hidden, inter] */
    ECO_W_FINAL_NORM, /* [hidden] */
    ECO_W_LM_HEAD,    /* [vocab, hidden]; when tied, the embedding */
    ECO_W_COUNT
} eco_weight_kind;

const char *eco_weight_kind_name(eco_weight_kind k); /* "q_proj", ... */
bool eco_weight_per_layer(eco_weight_kind k);
/* Whether the architecture has this tensor (biases: Qwen2; LM_HEAD always, tied or not). */
bool eco_weight_present(const eco_model_config *c, eco_weight_kind k);
/* [rows, cols] (cols = 1 for vectors). */
void eco_weight_shape(const eco_model_config *c, eco_weight_kind k, uint64_t *rows, uint64_t *cols);
/* The HF tensor holding it, e.g. "model.layers.3.self_attn.q_proj.weight" (Phi-3: the fused tensor;
 * tied LM_HEAD: "model.embed_tokens.weight"). */
eco_err eco_weight_hf_name(const eco_model_config *c, eco_weight_kind k, int layer, char *buf, size_t cap);

typedef struct eco_weights eco_weights;

/* Seeded synthetic weights of c's exact shapes, generated per tensor on demand (a 14B model never sits in
 * memory as fp32): linears N(0, 1/fan_in) (o/down scaled by 1/sqrt(2*layers) so the residual stays O(1)),
 * embeddings N(0, 4/hidden), norms 1 + 0.05 N(0,1), biases N(0, 0.02^2), and a few outlier hidden dims
 * (see eco_synthetic_outlier_dims) carrying a residual offset and a large norm gain, so post-norm
 * activations there exceed 6 like real LLMs' outlier features. Deterministic across platforms. */
eco_err eco_weights_synthetic(const eco_model_config *c, uint64_t seed, eco_weights **out);
/* Number of outlier dims for c and (up to cap of) their indices, ascending. */
int eco_synthetic_outlier_dims(const eco_model_config *c, uint64_t seed, int *dims, int cap);
/* Opens a checkpoint: a directory (config.json + model.safetensors or model.safetensors.index.json shards)
 * or one .safetensors file. `c` overrides the directory's config.json (required for a bare file).
 * Every tensor's presence, dtype (F16/BF16/F32) and shape are checked against the config up front. */
eco_err eco_weights_open(const char *path, const eco_model_config *c, eco_weights **out);
/* Whether a file name belongs to an HF checkpoint: config.json, model.safetensors.index.json, any *.safetensors. */
bool eco_checkpoint_file_name(const char *name);
const eco_model_config *eco_weights_config(const eco_weights *w);
/* The tensor as fp32 [rows*cols] in a new buffer (free()); layer is ignored for non-layer kinds. */
eco_err eco_weights_get(eco_weights *w, eco_weight_kind k, int layer, float **out, uint64_t *n);
/* eco_weights_get for the tensors the engines keep in 16 bits (norms, biases, the embedding): every value finite and
 * within fp16's range, else ECO_EFORMAT naming the tensor and index (a NaN norm had made every logit NaN), and
 * rounded to fp16 as a 16-bit checkpoint holds it. */
eco_err eco_weights_get_fp16(eco_weights *w, eco_weight_kind k, int layer, float **out, uint64_t *n);
void eco_weights_free(eco_weights *w);
/* Keeps every tensor fetched from now on in memory as fp32, so engines of several precisions built from the
 * same weights generate (or read) each tensor once. Costs 4 bytes per parameter of host memory. */
eco_err eco_weights_cache(eco_weights *w, bool on);
bool eco_weights_cached(const eco_weights *w);
/* With the cache on: a read-only view of the cached tensor (generated or read on first use), valid until
 * eco_weights_free; no copy, so loaders of large models avoid a serial pass over every tensor. Thread-safe.
 * ECO_EINVAL when the cache is off (use eco_weights_get). */
eco_err eco_weights_borrow(eco_weights *w, eco_weight_kind k, int layer, const float **out, uint64_t *n);
/* Writes dir/config.json and the tensors under HF names (Phi-3 fused), as `dtype` (F32, F16 or BF16),
 * in `shards` files with model.safetensors.index.json when shards > 1. */
eco_err eco_weights_save(eco_weights *w, const char *dir, eco_dtype dtype, int shards);

#endif
