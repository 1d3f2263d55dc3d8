/* The decode engine as a measurement workload: one engine per precision, all resident, the same prompt
 * for every configuration, and same-run quality (teacher-forced KL / top-1 / perplexity against fp16). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eco/measure.h"
#include "eco/store.h"

struct eco_engine_workload {
    eco_engine *engines[ECO_MEASURE_MAX_CONFIGS];
    int n;
    int32_t *prompt, *out;
    int n_prompt, max_new;
    int32_t *quality_tokens;
    int n_quality;
    char quality_name[128];
    char quality_sha256[65];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

eco_err eco_engine_workload_create(const char *backend, eco_weights *w, const eco_engine_options *base,
                                   const eco_precision *precs, int n, const int32_t *prompt, int n_prompt, int max_new,
                                   eco_engine_workload **out)
{
    if (n < 1 || n > ECO_MEASURE_MAX_CONFIGS) return eco_fail(ECO_EINVAL, "workload: 1..%d precisions", ECO_MEASURE_MAX_CONFIGS);
    if (n_prompt < 1 || max_new < 1) return eco_fail(ECO_EINVAL, "workload: need a prompt and at least one new token");
    eco_engine_workload *wl = calloc(1, sizeof *wl);
    if (!wl) return eco_fail(ECO_ENOMEM, "out of memory");
    wl->prompt = malloc((size_t)n_prompt * sizeof *wl->prompt);
    wl->out = malloc((size_t)(max_new + 1) * sizeof *wl->out);
    if (!wl->prompt || !wl->out) { eco_engine_workload_free(wl); return eco_fail(ECO_ENOMEM, "out of memory"); }
    memcpy(wl->prompt, prompt, (size_t)n_prompt * sizeof *prompt);
    wl->n_prompt = n_prompt;
    wl->max_new = max_new;
    for (int i = 0; i < n; i++) {
        eco_engine_options o = *base;
        o.precision = precs[i];
        eco_err e = eco_engine_create(backend, w, &o, &wl->engines[i]);
        if (e) {
            eco_fail_context("loading %s: ", eco_precision_name(precs[i]));
            eco_engine_workload_free(wl);
            return e;
        }
        wl->n++;
    }
    *out = wl;
    return ECO_OK;
}

void eco_engine_workload_free(eco_engine_workload *wl)
{
    if (!wl) return;
    for (int i = 0; i < wl->n; i++) eco_engine_free(wl->engines[i]);
    free(wl->prompt);
    free(wl->out);
    free(wl->quality_tokens);
    free(wl);
}

eco_engine *eco_engine_workload_engine(eco_engine_workload *wl, int config)
{
    return config >= 0 && config < wl->n ? wl->engines[config] : NULL;
}

static eco_err generate(void *ctx, int config, int tokens, eco_generation *g)
{
    eco_engine_workload *wl = ctx;
    if (config < 0 || config >= wl->n) return eco_fail(ECO_EINVAL, "workload: no configuration %d", config);
    if (tokens > wl->max_new) return eco_fail(ECO_EINVAL, "workload: %d tokens asked, sized for %d", tokens, wl->max_new);
    eco_engine *e = wl->engines[config];
    memset(g, 0, sizeof *g);
    g->prompt_tokens = wl->n_prompt;
    if (tokens == 0) { /* prefill only: the prompt's forwards, nothing generated */
        float *logits = malloc((size_t)eco_engine_config(e)->vocab * sizeof *logits);
        if (!logits) return eco_fail(ECO_ENOMEM, "out of memory");
        eco_engine_reset(e);
        double t0 = now_s();
        eco_err err = ECO_OK;
        for (int i = 0; i < wl->n_prompt && !err; i++) err = eco_engine_step(e, wl->prompt[i], logits);
        g->prefill_s = now_s() - t0;
        free(logits);
        return err;
    }
    eco_decode_timing t;
    eco_err err = eco_engine_generate(e, wl->prompt, wl->n_prompt, tokens, wl->out, &t);
    if (err) return err;
    g->prefill_s = t.prefill_s;
    g->decode_s = t.decode_s;
    g->generated_tokens = t.generated;
    return ECO_OK;
}

eco_err eco_engine_workload_set_quality_tokens(eco_engine_workload *wl, const int32_t *tokens, int n, const char *name)
{
    free(wl->quality_tokens);
    wl->quality_tokens = NULL;
    wl->n_quality = 0;
    if (n < 2) return eco_fail(ECO_EINVAL, "quality needs at least 2 tokens");
    wl->quality_tokens = malloc((size_t)n * sizeof *tokens);
    if (!wl->quality_tokens) return eco_fail(ECO_ENOMEM, "out of memory");
    memcpy(wl->quality_tokens, tokens, (size_t)n * sizeof *tokens);
    wl->n_quality = n;
    snprintf(wl->quality_name, sizeof wl->quality_name, "%s", name);
    eco_sha256_hex(tokens, (size_t)n * sizeof *tokens, wl->quality_sha256);
    return ECO_OK;
}

/* Teacher-forced comparison of `config` with config 0 (fp16) over the quality tokens. */
static eco_err quality(void *ctx, int config, json_t **out)
{
    eco_engine_workload *wl = ctx;
    *out = NULL;
    if (!wl->n_quality) return ECO_OK;
    eco_engine *eq = wl->engines[config], *e0 = wl->engines[0];
    int vocab = eco_engine_config(eq)->vocab;
    float *lq = malloc((size_t)vocab * sizeof *lq), *l0 = malloc((size_t)vocab * sizeof *l0);
    double *pq = malloc((size_t)vocab * sizeof *pq), *p0 = malloc((size_t)vocab * sizeof *p0);
    eco_err err = (!lq || !l0 || !pq || !p0) ? eco_fail(ECO_ENOMEM, "out of memory") : ECO_OK;
    double kl_sum = 0, kl_max = 0, nll = 0;
    int agree = 0, positions = 0;
    eco_engine_reset(eq);
    if (e0 != eq) eco_engine_reset(e0);
    bool baseline = eq == e0; /* fp16 against itself: one pass, KL 0 and agreement 1 by definition */
    for (int t = 0; !err && t + 1 < wl->n_quality; t++) {
        if ((err = eco_engine_step(eq, wl->quality_tokens[t], lq))) break;
        if (baseline) memcpy(l0, lq, (size_t)vocab * sizeof *lq);
        else if ((err = eco_engine_step(e0, wl->quality_tokens[t], l0))) break;
        eco_log_softmax(lq, vocab, pq);
        eco_log_softmax(l0, vocab, p0);
        double kl = 0;
        for (int i = 0; i < vocab; i++) kl += exp(p0[i]) * (p0[i] - pq[i]);
        kl = kl < 0 ? 0 : kl; /* rounding can give -1e-17 */
        kl_sum += kl;
        if (kl > kl_max) kl_max = kl;
        agree += eco_argmax(lq, vocab) == eco_argmax(l0, vocab);
        nll -= pq[wl->quality_tokens[t + 1]];
        positions++;
    }
    free(lq); free(l0); free(pq); free(p0);
    if (err) return err;
    json_t *q = json_object();
    json_object_set_new(q, "kl_to_fp16", json_real(kl_sum / positions));
    json_object_set_new(q, "kl_max", json_real(kl_max));
    json_object_set_new(q, "top1_agreement", json_real((double)agree / positions));
    json_object_set_new(q, "perplexity", json_real(exp(nll / positions)));
    json_object_set_new(q, "nll_mean", json_real(nll / positions));
    json_object_set_new(q, "positions", json_integer(positions));
    json_object_set_new(q, "text_name", json_string(wl->quality_name));
    json_object_set_new(q, "text_sha256", json_string(wl->quality_sha256));
    *out = q;
    return ECO_OK;
}

eco_workload eco_engine_workload_iface(eco_engine_workload *wl)
{
    eco_workload w = {.ctx = wl, .generate = generate, .quality = quality};
    return w;
}
