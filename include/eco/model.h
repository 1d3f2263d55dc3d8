/* Model architectures: exact HF shapes (presets and config.json), parameter and byte accounting.
 * The engine work adds config.json parsing, the safetensors reader and synthetic weights here. */
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
    int sliding_window;      /* 0 = none */
} eco_model_config;

size_t eco_preset_count(void);
const eco_model_config *eco_preset_at(size_t i);
/* Case-insensitive; accepts the preset name or the HF id ("Qwen/Qwen2.5-7B"). NULL when unknown. */
const eco_model_config *eco_preset_find(const char *name);
const char *eco_model_family_name(eco_model_family f);

uint64_t eco_model_param_count(const eco_model_config *c);
/* Bytes of fp16 K+V cached per position (all layers). */
uint64_t eco_model_kv_bytes_per_position(const eco_model_config *c);
/* Bytes read from memory to decode one token at batch 1 with `ctx` cached positions:
 * quantized linears (scales included), the lm_head (16-bit unless quantize_lm_head), one embedding row,
 * norms/biases, and the fp16 KV cache. */
uint64_t eco_model_bytes_per_token(const eco_model_config *c, eco_precision p, uint64_t ctx, bool quantize_lm_head);
/* Bytes of weights resident in memory (embeddings and lm_head 16-bit unless quantize_lm_head). */
uint64_t eco_model_weight_bytes(const eco_model_config *c, eco_precision p, bool quantize_lm_head);

#endif
