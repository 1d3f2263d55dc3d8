/* Decode engine: a backend interface (load weights at a precision, forward one token, reset the KV cache),
 * the CPU fp32 reference backend, greedy decoding with prefill/decode timing, and quality metrics
 * (KL to fp16, top-1 agreement, perplexity). Numerics and supported models: docs/ENGINE.md. */
#ifndef ECO_ENGINE_H
#define ECO_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eco/err.h"
#include "eco/model.h"
#include "eco/quant.h"

#define ECO_ENGINE_MAX_CPU_THREADS 64

typedef struct {
    eco_precision precision;  /* format of every linear layer (fp16 too: an ECO_PREC_FP16 eco_qweight) */
    eco_quant_options quant;  /* passed to eco_quantize */
    bool quantize_lm_head;    /* default false: the lm_head stays fp16 as in the reference stack */
    int threads;              /* CPU worker threads, 0..ECO_ENGINE_MAX_CPU_THREADS; 0 = online CPUs (capped there) */
    int max_seq;              /* KV cache capacity in positions; 0 = min(max_position_embeddings, 4096) */
    bool kv_f16;              /* store K/V rounded to fp16 (as the GPU does); default fp32 */
} eco_engine_options;

/* fp16, default quant options, lm_head fp16, all CPUs, max_seq 0, fp32 KV. */
void eco_engine_options_default(eco_engine_options *o);

/* A backend implements this table; state is the backend's own. `weights` is only read during create (each
 * tensor is fetched, converted and freed), so a 14B synthetic model never exists in fp32 all at once. */
typedef struct eco_backend {
    const char *name; /* "cpu", "cuda" */
    eco_err (*create)(const eco_model_config *c, eco_weights *weights, const eco_engine_options *o, void **state);
    /* logits[vocab] (fp32) for `token` at position `pos`; positions must go 0, 1, 2, ... after a reset. */
    eco_err (*forward)(void *state, int32_t token, int pos, float *logits);
    void (*reset)(void *state); /* forget the KV cache */
    void (*destroy)(void *state);
    uint64_t (*resident_bytes)(const void *state); /* weights + KV cache held by the backend */
    /* Optional: forward + argmax on the device, returning only the next token id (greedy decoding without
     * moving the logits to the host). NULL: the engine uses forward and eco_argmax. */
    eco_err (*greedy)(void *state, int32_t token, int pos, int32_t *next);
    /* Optional: n greedy steps from `token` at `pos`, each step's argmax fed to the next on the device, so
     * the host is not in the loop between tokens; out[i] is the token step i produced. Same tokens as n
     * calls of greedy. NULL: the engine calls greedy per token. */
    eco_err (*greedy_run)(void *state, int32_t token, int pos, int n, int32_t *out);
} eco_backend;

extern const eco_backend eco_backend_cpu;
/* Defined by the CUDA backend when it is built in (weak: NULL otherwise). */
extern const eco_backend eco_backend_cuda __attribute__((weak));

/* "cpu" or "cuda"; ENOTFOUND / EUNSUPPORTED when not built. */
eco_err eco_backend_find(const char *name, const eco_backend **out);

typedef struct eco_engine eco_engine;

/* Loads `w` at o->precision (o may be NULL: defaults) on backend `backend_name` ("cpu" when NULL). */
eco_err eco_engine_create(const char *backend_name, eco_weights *w, const eco_engine_options *o, eco_engine **out);
/* The same on a backend given directly (one outside this library, or a wrapper in a test). */
eco_err eco_engine_create_on(const eco_backend *be, eco_weights *w, const eco_engine_options *o, eco_engine **out);
void eco_engine_free(eco_engine *e);
const eco_model_config *eco_engine_config(const eco_engine *e);
const eco_engine_options *eco_engine_options_of(const eco_engine *e);
uint64_t eco_engine_resident_bytes(const eco_engine *e);
int eco_engine_position(const eco_engine *e); /* positions cached so far */

/* Feeds one token at the next position and writes logits[vocab]. Errors: EINVAL for a token outside the
 * vocab, ETOOBIG when the KV cache is full. */
eco_err eco_engine_step(eco_engine *e, int32_t token, float *logits);
void eco_engine_reset(eco_engine *e);

/* Index of the largest logit; ties go to the lowest index (as torch.argmax). */
int32_t eco_argmax(const float *logits, int n);

typedef struct {
    int prefill_tokens;  /* forwards of the prompt (the last one yields the first generated token) */
    int decode_forwards; /* forwards after the prompt: generated - 1 */
    int generated;
    double prefill_s, decode_s;
    double decode_tok_per_s; /* decode_forwards / decode_s */
} eco_decode_timing;

/* Greedy decoding after a reset: prefill the prompt token by token, then generate n_new tokens into out
 * (n_new >= 1; the prompt must hold at least one token). timing may be NULL. */
eco_err eco_engine_generate(eco_engine *e, const int32_t *prompt, int n_prompt, int n_new, int32_t *out,
                            eco_decode_timing *timing);

/* ---- quality (src/engine/quality.c) ---- */

typedef struct {
    eco_precision precision;
    int positions;         /* next-token predictions compared: n_tokens - 1 */
    double kl_mean;        /* mean over positions of KL(p_fp16 || p_prec), nats */
    double kl_max;
    double top1_agreement; /* fraction of positions whose argmax equals fp16's */
    double perplexity;     /* exp(mean NLL of tokens[1..n-1]) under this precision */
    double nll_mean;
} eco_quality_result;

/* Teacher-forces `tokens` through an fp16 engine and one engine per precision (built from `base`, only the
 * precision changed), comparing the next-token distributions at every position. out[i] is for precs[i];
 * fp16 may be listed (KL 0, agreement 1). n_tokens >= 2. */
eco_err eco_quality_eval(const char *backend_name, eco_weights *w, const eco_engine_options *base,
                         const int32_t *tokens, int n_tokens, const eco_precision *precs, int n_precs,
                         eco_quality_result *out);
/* Same on a text: encodes it with the tokenizer.json at tokenizer_path (eco/tokenizer.h), keeping at most
 * max_tokens ids (0 = all). */
eco_err eco_quality_eval_text(const char *backend_name, eco_weights *w, const eco_engine_options *base,
                              const char *tokenizer_path, const char *text, size_t text_len, int max_tokens,
                              const eco_precision *precs, int n_precs, eco_quality_result *out);

/* log-softmax in double of logits[n] into out[n] (for metrics and tests). */
void eco_log_softmax(const float *logits, int n, double *out);

#endif
