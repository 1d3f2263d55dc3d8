/* Teacher-forced comparison of precisions against fp16: KL of the next-token distributions, top-1 agreement,
 * perplexity. The fp16 log-probabilities are kept (float) so each precision runs once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eco/engine.h"

#define QUALITY_MAX_TEACHER_BYTES (2ull << 30)

eco_err eco_quality_eval(const char *backend_name, eco_weights *w, const eco_engine_options *base,
                         const int32_t *tokens, int n_tokens, const eco_precision *precs, int n_precs,
                         eco_quality_result *out)
{
    const eco_model_config *c = eco_weights_config(w);
    if (n_tokens < 2) return eco_fail_field(ECO_EINVAL, "tokens", "quality: need at least 2 tokens, got %d", n_tokens);
    if (n_precs < 1) return eco_fail_field(ECO_EINVAL, "precisions", "quality: no precision to evaluate");
    for (int i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab)
            return eco_fail_field(ECO_EINVAL, "tokens", "quality: token %d at index %d outside the vocabulary (0..%d)", tokens[i], i, c->vocab - 1);
    int npos = n_tokens - 1, V = c->vocab;
    if ((uint64_t)npos * (uint64_t)V * sizeof(float) > QUALITY_MAX_TEACHER_BYTES)
        return eco_fail(ECO_ETOOBIG, "quality: %d positions x vocab %d of fp16 log-probabilities exceed %llu bytes", npos, V,
                        QUALITY_MAX_TEACHER_BYTES);
    eco_engine_options o;
    if (base) o = *base; else eco_engine_options_default(&o);
    if (o.max_seq > 0 && o.max_seq < n_tokens) o.max_seq = n_tokens;
    if (o.max_seq == 0) o.max_seq = n_tokens;

    float *teacher = malloc((size_t)npos * V * sizeof *teacher);
    int32_t *top16 = malloc((size_t)npos * sizeof *top16);
    float *logits = malloc((size_t)V * sizeof *logits);
    double *lp = malloc((size_t)V * sizeof *lp);
    eco_engine *eng = NULL;
    eco_err e = ECO_OK;
    double nll16 = 0;
    if (!teacher || !top16 || !logits || !lp) { e = eco_fail(ECO_ENOMEM, "quality: out of memory"); goto out; }

    o.precision = ECO_PREC_FP16;
    if ((e = eco_engine_create(backend_name, w, &o, &eng))) goto out;
    for (int p = 0; p < npos; p++) {
        if ((e = eco_engine_step(eng, tokens[p], logits))) goto out;
        eco_log_softmax(logits, V, lp);
        for (int i = 0; i < V; i++) teacher[(size_t)p * V + i] = (float)lp[i];
        top16[p] = eco_argmax(logits, V);
        nll16 -= lp[tokens[p + 1]];
    }
    eco_engine_free(eng);
    eng = NULL;

    for (int k = 0; k < n_precs; k++) {
        eco_quality_result *r = &out[k];
        memset(r, 0, sizeof *r);
        r->precision = precs[k];
        r->positions = npos;
        if (precs[k] == ECO_PREC_FP16) {
            r->top1_agreement = 1.0;
            r->nll_mean = nll16 / npos;
            r->perplexity = exp(r->nll_mean);
            continue;
        }
        o.precision = precs[k];
        if ((e = eco_engine_create(backend_name, w, &o, &eng))) goto out;
        double kl_sum = 0, nll = 0;
        int agree = 0;
        for (int p = 0; p < npos; p++) {
            if ((e = eco_engine_step(eng, tokens[p], logits))) goto out;
            eco_log_softmax(logits, V, lp);
            const float *t = teacher + (size_t)p * V;
            double kl = 0;
            for (int i = 0; i < V; i++) kl += exp((double)t[i]) * ((double)t[i] - lp[i]);
            if (kl < 0) kl = 0; /* rounding of the stored teacher can give -1e-9 */
            kl_sum += kl;
            if (kl > r->kl_max) r->kl_max = kl;
            agree += eco_argmax(logits, V) == top16[p];
            nll -= lp[tokens[p + 1]];
        }
        r->kl_mean = kl_sum / npos;
        r->top1_agreement = (double)agree / npos;
        r->nll_mean = nll / npos;
        r->perplexity = exp(r->nll_mean);
        eco_engine_free(eng);
        eng = NULL;
    }
out:
    eco_engine_free(eng);
    free(teacher);
    free(top16);
    free(logits);
    free(lp);
    return e;
}
