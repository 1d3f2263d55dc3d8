/* Backend dispatch, position bookkeeping and greedy decoding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eco/engine.h"

struct eco_engine {
    const eco_backend *be;
    void *state;
    eco_model_config cfg;
    eco_engine_options opt;
    int pos;
};

void eco_engine_options_default(eco_engine_options *o)
{
    memset(o, 0, sizeof *o);
    o->precision = ECO_PREC_FP16;
    eco_quant_options_default(&o->quant);
}

eco_err eco_backend_find(const char *name, const eco_backend **out)
{
    if (!name || !strcmp(name, "cpu")) { *out = &eco_backend_cpu; return ECO_OK; }
    if (!strcmp(name, "cuda")) {
        if (!&eco_backend_cuda) return eco_fail_field(ECO_EUNSUPPORTED, "backend", "backend \"cuda\" is not part of this build");
        *out = &eco_backend_cuda;
        return ECO_OK;
    }
    return eco_fail_field(ECO_ENOTFOUND, "backend", "unknown backend \"%s\" (cpu, cuda)", name);
}

eco_err eco_engine_create(const char *backend_name, eco_weights *w, const eco_engine_options *o, eco_engine **out)
{
    const eco_backend *be = NULL;
    eco_err e = eco_backend_find(backend_name, &be);
    if (e) return e;
    return eco_engine_create_on(be, w, o, out);
}

eco_err eco_engine_create_on(const eco_backend *be, eco_weights *w, const eco_engine_options *o, eco_engine **out)
{
    eco_err e;
    if (!be || !be->create || !be->forward || !be->reset || !be->destroy)
        return eco_fail_field(ECO_EINVAL, "backend", "a backend needs create, forward, reset and destroy");
    eco_engine_options def;
    if (!o) { eco_engine_options_default(&def); o = &def; }
    if ((unsigned)o->precision >= ECO_PREC_COUNT) return eco_fail_field(ECO_EINVAL, "precision", "precision %d out of range", (int)o->precision);
    if (o->threads < 0 || o->threads > ECO_ENGINE_MAX_CPU_THREADS)
        return eco_fail(ECO_EINVAL, "engine options: threads must be 0..%d (0 = the online CPUs), got %d", ECO_ENGINE_MAX_CPU_THREADS, o->threads);
    if (o->max_seq < 0) return eco_fail(ECO_EINVAL, "engine options: max_seq must be >= 0");
    const eco_model_config *c = eco_weights_config(w);
    if ((e = eco_model_config_validate(c))) return e;
    eco_engine *eng = calloc(1, sizeof *eng);
    if (!eng) return eco_fail(ECO_ENOMEM, "engine: out of memory");
    eng->be = be;
    eng->cfg = *c;
    eng->opt = *o;
    if ((e = be->create(c, w, o, &eng->state))) {
        free(eng);
        return eco_fail_context("%s backend, %s, %s: ", be->name, c->name, eco_precision_name(o->precision));
    }
    *out = eng;
    return ECO_OK;
}

void eco_engine_free(eco_engine *e)
{
    if (!e) return;
    e->be->destroy(e->state);
    free(e);
}

const eco_model_config *eco_engine_config(const eco_engine *e) { return &e->cfg; }
const eco_engine_options *eco_engine_options_of(const eco_engine *e) { return &e->opt; }
uint64_t eco_engine_resident_bytes(const eco_engine *e) { return e->be->resident_bytes ? e->be->resident_bytes(e->state) : 0; }
int eco_engine_position(const eco_engine *e) { return e->pos; }

eco_err eco_engine_step(eco_engine *e, int32_t token, float *logits)
{
    eco_err err = e->be->forward(e->state, token, e->pos, logits);
    if (err) return err;
    e->pos++;
    return ECO_OK;
}

void eco_engine_reset(eco_engine *e)
{
    e->be->reset(e->state);
    e->pos = 0;
}

int32_t eco_argmax(const float *logits, int n)
{
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i; /* strict: ties keep the lower index */
    return best;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static eco_err step_greedy(eco_engine *e, int32_t token, int32_t *next)
{
    if (token < 0 || token >= e->cfg.vocab)
        return eco_fail(ECO_EINVAL, "token %d is outside the vocabulary (0..%d)", token, e->cfg.vocab - 1);
    eco_err err = e->be->greedy(e->state, token, e->pos, next);
    if (!err) e->pos++;
    return err;
}

/* Greedy decoding on a backend that takes the argmax itself: the same tokens, only ids cross to the host. */
static eco_err generate_on_device(eco_engine *e, const int32_t *prompt, int n_prompt, int n_new, int32_t *out,
                                  eco_decode_timing *timing)
{
    eco_decode_timing t = {0};
    eco_engine_reset(e);
    eco_err err = ECO_OK;
    int32_t next = 0;
    double t0 = now_s();
    for (int i = 0; i < n_prompt && !err; i++) err = step_greedy(e, prompt[i], &next);
    double t1 = now_s();
    t.prefill_tokens = n_prompt;
    t.prefill_s = t1 - t0;
    if (!err) out[t.generated++] = next;
    if (!err && e->be->greedy_run && n_new > 1) {
        /* the whole decode on the device: one host round trip for n_new - 1 tokens */
        int n = n_new - 1;
        if (!(err = e->be->greedy_run(e->state, next, e->pos, n, out + 1))) {
            e->pos += n;
            t.decode_forwards = n;
            t.generated += n;
        }
    }
    while (!err && t.generated < n_new) {
        if (!(err = step_greedy(e, out[t.generated - 1], &next))) {
            t.decode_forwards++;
            out[t.generated++] = next;
        }
    }
    t.decode_s = now_s() - t1;
    t.decode_tok_per_s = t.decode_forwards > 0 && t.decode_s > 0 ? t.decode_forwards / t.decode_s : 0;
    if (timing) *timing = t;
    return err;
}

eco_err eco_engine_generate(eco_engine *e, const int32_t *prompt, int n_prompt, int n_new, int32_t *out,
                            eco_decode_timing *timing)
{
    if (n_prompt < 1 || n_new < 1) return eco_fail(ECO_EINVAL, "generate: need at least one prompt token and one new token");
    if (e->be->greedy) return generate_on_device(e, prompt, n_prompt, n_new, out, timing);
    float *logits = malloc((size_t)e->cfg.vocab * sizeof *logits);
    if (!logits) return eco_fail(ECO_ENOMEM, "generate: out of memory");
    eco_decode_timing t = {0};
    eco_engine_reset(e);
    eco_err err = ECO_OK;
    double t0 = now_s();
    for (int i = 0; i < n_prompt && !err; i++) err = eco_engine_step(e, prompt[i], logits);
    double t1 = now_s();
    t.prefill_tokens = n_prompt;
    t.prefill_s = t1 - t0;
    if (!err) out[t.generated++] = eco_argmax(logits, e->cfg.vocab);
    while (!err && t.generated < n_new) {
        if (!(err = eco_engine_step(e, out[t.generated - 1], logits))) {
            t.decode_forwards++;
            out[t.generated++] = eco_argmax(logits, e->cfg.vocab);
        }
    }
    t.decode_s = now_s() - t1;
    t.decode_tok_per_s = t.decode_forwards > 0 && t.decode_s > 0 ? t.decode_forwards / t.decode_s : 0;
    free(logits);
    if (timing) *timing = t;
    return err;
}

void eco_log_softmax(const float *logits, int n, double *out)
{
    double mx = -INFINITY;
    for (int i = 0; i < n; i++) if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    double lse = mx + log(sum);
    for (int i = 0; i < n; i++) out[i] = (double)logits[i] - lse;
}
