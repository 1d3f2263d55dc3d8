/* libFuzzer target: HF config.json text through the config parser. Whatever it accepts must pass its own
 * validation, give finite byte and parameter counts (UBSan catches an overflow), positive RoPE frequencies,
 * and survive to_json -> from_json with the same shapes. Inputs that do not start with '{' are skipped: the
 * parser would take them for a file path. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eco/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_shape(const eco_model_config *a, const eco_model_config *b)
{
    if (a->family != b->family || a->hidden != b->hidden || a->intermediate != b->intermediate ||
        a->layers != b->layers || a->heads != b->heads || a->kv_heads != b->kv_heads || a->head_dim != b->head_dim ||
        a->vocab != b->vocab || a->tie_embeddings != b->tie_embeddings || a->qkv_bias != b->qkv_bias ||
        a->sliding_window != b->sliding_window || a->rope_llama3 != b->rope_llama3 || a->rope_theta != b->rope_theta)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 1 << 20 || data[0] != '{') return 0;
    char *text = malloc(size + 1); /* NUL-terminated private copy: ASan catches reads past it */
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    eco_model_config c;
    if (eco_model_config_from_json(text, &c) == ECO_OK) {
        if (eco_model_config_validate(&c) != ECO_OK) abort();
        if (eco_model_param_count(&c) == 0) abort();
        for (int p = 0; p < ECO_PREC_COUNT; p++) {
            if (eco_model_bytes_per_token(&c, (eco_precision)p, 4096, false) == 0) abort();
            (void)eco_model_weight_bytes(&c, (eco_precision)p, true);
        }
        double *inv = malloc(sizeof(double) * (size_t)(c.head_dim / 2 + 1));
        if (!inv) abort();
        eco_rope_inv_freq(&c, inv);
        for (int i = 0; i < c.head_dim / 2; i++)
            if (!(inv[i] > 0) || !isfinite(inv[i])) abort();
        free(inv);
        char *js;
        if (eco_model_config_to_json(&c, &js) != ECO_OK) abort();
        eco_model_config back;
        if (eco_model_config_from_json(js, &back) != ECO_OK) abort();
        same_shape(&c, &back);
        free(js);
    }
    free(text);
    return 0;
}
