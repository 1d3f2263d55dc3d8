/* CPU reference backend: fp32 residual stream, norms, RoPE, softmax and accumulators; every linear layer is an
 * eco_qweight run through eco_qmatvec_rows (threads split output rows). Numerics: docs/ENGINE.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/cpu/cpu_pool.h"
#include "eco/engine.h"

typedef struct {
    eco_qweight q, k, v, o, gate, up, down;
    float *attn_norm, *mlp_norm, *bq, *bk, *bv;
} cpu_layer;

typedef struct {
    eco_model_config c;
    eco_engine_options o;
    cpu_layer *layers;
    const uint16_t *embed; /* fp16 [vocab, hidden]; aliases lm_head.data when tied and the head is fp16 */
    uint16_t *embed_own;
    eco_qweight lm_head;
    float *final_norm;
    double *inv_freq;
    int max_seq, kv_dim, q_dim;
    float *kcache, *vcache; /* [layer][max_seq][kv_dim] */
    float *x, *xb, *q, *k, *v, *att, *scores, *hb, *hb2, *y;
    float *rope_cos, *rope_sin;
    cpu_pool *pool;
    uint64_t resident;
} cpu_state;

/* ---------------- parallel kernels ---------------- */

typedef struct {
    const eco_qweight *w[3];
    const float *x;
    float *y[3];
    int n;
    eco_err err[64];
} matvec_task;

static void matvec_worker(void *arg, int tid, int nt)
{
    matvec_task *t = arg;
    t->err[tid] = ECO_OK;
    for (int i = 0; i < t->n; i++) {
        uint64_t rows = t->w[i]->rows;
        uint64_t r0 = rows * (uint64_t)tid / (uint64_t)nt, r1 = rows * (uint64_t)(tid + 1) / (uint64_t)nt;
        if (r0 < r1) {
            eco_err e = eco_qmatvec_rows(t->w[i], t->x, t->y[i], r0, r1);
            if (e && !t->err[tid]) t->err[tid] = e;
        }
    }
}

/* y_i = W_i x for up to three weights sharing the input (q/k/v, gate/up), one dispatch. */
static eco_err matvecs(cpu_state *s, const float *x, int n, const eco_qweight *w0, float *y0, const eco_qweight *w1,
                       float *y1, const eco_qweight *w2, float *y2)
{
    matvec_task t = {.w = {w0, w1, w2}, .x = x, .y = {y0, y1, y2}, .n = n};
    cpu_pool_run(s->pool, matvec_worker, &t);
    for (int i = 0; i < cpu_pool_threads(s->pool); i++)
        if (t.err[i]) /* messages are per thread: redo serially here to report the worker's failure */
            for (int j = 0; j < n; j++) {
                eco_err e = eco_qmatvec(t.w[j], x, t.y[j]);
                if (e) return eco_fail_context("cpu backend matvec: ");
            }
    return ECO_OK;
}

typedef struct {
    cpu_state *s;
    int layer, pos, t0;
} attn_task;

static void attn_worker(void *arg, int tid, int nt)
{
    attn_task *a = arg;
    cpu_state *s = a->s;
    const eco_model_config *c = &s->c;
    int hd = c->head_dim, group = c->heads / c->kv_heads;
    int h0 = c->heads * tid / nt, h1 = c->heads * (tid + 1) / nt;
    double scale = 1.0 / sqrt((double)hd);
    const float *kc = s->kcache + (size_t)a->layer * s->max_seq * s->kv_dim;
    const float *vc = s->vcache + (size_t)a->layer * s->max_seq * s->kv_dim;
    for (int h = h0; h < h1; h++) {
        const float *qh = s->q + (size_t)h * hd;
        int kvh = h / group;
        float *sc = s->scores + (size_t)h * s->max_seq;
        float mx = -INFINITY;
        for (int t = a->t0; t <= a->pos; t++) {
            const float *kt = kc + (size_t)t * s->kv_dim + (size_t)kvh * hd;
            float dot = 0.0f;
            for (int i = 0; i < hd; i++) dot += qh[i] * kt[i];
            sc[t] = (float)(dot * scale);
            if (sc[t] > mx) mx = sc[t];
        }
        double sum = 0.0;
        for (int t = a->t0; t <= a->pos; t++) {
            sc[t] = expf(sc[t] - mx);
            sum += sc[t];
        }
        float inv = (float)(1.0 / sum);
        float *out = s->att + (size_t)h * hd;
        memset(out, 0, (size_t)hd * sizeof *out);
        for (int t = a->t0; t <= a->pos; t++) {
            const float *vt = vc + (size_t)t * s->kv_dim + (size_t)kvh * hd;
            float p = sc[t] * inv;
            for (int i = 0; i < hd; i++) out[i] += p * vt[i];
        }
    }
}

/* ---------------- math ---------------- */

static void rmsnorm(float *out, const float *x, const float *w, int n, double eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float r = (float)(1.0 / sqrt(ss / n + eps));
    for (int i = 0; i < n; i++) out[i] = w[i] * (x[i] * r);
}

/* HF rotate-half: element i pairs with i + d/2, both at frequency i. */
static void rope(float *v, int nheads, int hd, const float *cs, const float *sn)
{
    int half = hd / 2;
    for (int h = 0; h < nheads; h++) {
        float *p = v + (size_t)h * hd;
        for (int i = 0; i < half; i++) {
            float a = p[i], b = p[i + half];
            p[i] = a * cs[i] - b * sn[i];
            p[i + half] = b * cs[i] + a * sn[i];
        }
    }
}

static float fp16_round(float f) { return eco_f16_to_f32(eco_f32_to_f16(f)); }

/* ---------------- loading ---------------- */

static eco_err load_vec(eco_weights *w, eco_weight_kind k, int layer, float **out)
{
    uint64_t n;
    return eco_weights_get_fp16(w, k, layer, out, &n); /* a 16-bit checkpoint's values */
}

static eco_err load_linear(cpu_state *s, eco_weights *w, eco_weight_kind k, int layer, eco_precision p, eco_qweight *q)
{
    float *f;
    uint64_t n, rows, cols;
    eco_err e = eco_weights_get(w, k, layer, &f, &n);
    if (e) return e;
    eco_weight_shape(&s->c, k, &rows, &cols);
    e = eco_quantize_threads(p, f, rows, cols, &s->o.quant, cpu_pool_threads(s->pool), q);
    free(f);
    if (e) return eco_fail_context("quantizing %s (layer %d) to %s: ", eco_weight_kind_name(k), layer, eco_precision_name(p));
    s->resident += eco_precision_weight_bytes(q->format, rows, cols);
    return ECO_OK;
}

static void cpu_destroy(void *state)
{
    cpu_state *s = state;
    if (!s) return;
    for (int l = 0; s->layers && l < s->c.layers; l++) {
        cpu_layer *L = &s->layers[l];
        eco_qweight *qs[] = {&L->q, &L->k, &L->v, &L->o, &L->gate, &L->up, &L->down};
        for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) eco_qweight_free(qs[i]);
        free(L->attn_norm); free(L->mlp_norm); free(L->bq); free(L->bk); free(L->bv);
    }
    free(s->layers);
    eco_qweight_free(&s->lm_head);
    free(s->embed_own);
    free(s->final_norm);
    free(s->inv_freq);
    free(s->kcache); free(s->vcache);
    free(s->x); free(s->xb); free(s->q); free(s->k); free(s->v); free(s->att); free(s->scores);
    free(s->hb); free(s->hb2); free(s->y); free(s->rope_cos); free(s->rope_sin);
    cpu_pool_free(s->pool);
    free(s);
}

static eco_err cpu_create(const eco_model_config *c, eco_weights *w, const eco_engine_options *o, void **out)
{
    cpu_state *s = calloc(1, sizeof *s);
    if (!s) return eco_fail(ECO_ENOMEM, "cpu backend: out of memory");
    s->c = *c;
    s->o = *o;
    s->q_dim = c->heads * c->head_dim;
    s->kv_dim = c->kv_heads * c->head_dim;
    s->max_seq = o->max_seq > 0 ? o->max_seq : (c->max_pos < 4096 ? c->max_pos : 4096);
    if (s->max_seq > c->max_pos) s->max_seq = c->max_pos;
    int nt = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (nt < 1) nt = 1;
    if (nt > ECO_ENGINE_MAX_CPU_THREADS) nt = ECO_ENGINE_MAX_CPU_THREADS;
    eco_err e;
    if ((e = cpu_pool_create(nt, &s->pool))) { free(s); return e; }

    size_t H = (size_t)c->hidden, I = (size_t)c->intermediate, kvsz = (size_t)c->layers * s->max_seq * s->kv_dim;
    s->layers = calloc((size_t)c->layers, sizeof *s->layers);
    s->inv_freq = malloc((size_t)c->head_dim / 2 * sizeof *s->inv_freq);
    s->kcache = calloc(kvsz, sizeof(float));
    s->vcache = calloc(kvsz, sizeof(float));
    s->x = malloc(H * sizeof(float));
    s->xb = malloc((H > (size_t)s->q_dim ? H : (size_t)s->q_dim) * sizeof(float));
    s->q = malloc((size_t)s->q_dim * sizeof(float));
    s->k = malloc((size_t)s->kv_dim * sizeof(float));
    s->v = malloc((size_t)s->kv_dim * sizeof(float));
    s->att = malloc((size_t)s->q_dim * sizeof(float));
    s->scores = malloc((size_t)c->heads * s->max_seq * sizeof(float));
    s->hb = malloc(I * sizeof(float));
    s->hb2 = malloc(I * sizeof(float));
    s->y = malloc(H * sizeof(float));
    s->rope_cos = malloc((size_t)c->head_dim / 2 * sizeof(float));
    s->rope_sin = malloc((size_t)c->head_dim / 2 * sizeof(float));
    if (!s->layers || !s->inv_freq || !s->kcache || !s->vcache || !s->x || !s->xb || !s->q || !s->k || !s->v || !s->att ||
        !s->scores || !s->hb || !s->hb2 || !s->y || !s->rope_cos || !s->rope_sin) {
        cpu_destroy(s);
        return eco_fail(ECO_ENOMEM, "cpu backend: out of memory for buffers (KV cache %zu MiB)", 2 * kvsz * 4 >> 20);
    }
    s->resident = 2 * kvsz * sizeof(float);
    eco_rope_inv_freq(c, s->inv_freq);

    eco_precision p = o->precision;
    for (int l = 0; l < c->layers; l++) {
        cpu_layer *L = &s->layers[l];
        if ((e = load_vec(w, ECO_W_ATTN_NORM, l, &L->attn_norm)) || (e = load_vec(w, ECO_W_MLP_NORM, l, &L->mlp_norm)) ||
            (e = load_linear(s, w, ECO_W_Q, l, p, &L->q)) || (e = load_linear(s, w, ECO_W_K, l, p, &L->k)) ||
            (e = load_linear(s, w, ECO_W_V, l, p, &L->v)) || (e = load_linear(s, w, ECO_W_O, l, p, &L->o)) ||
            (e = load_linear(s, w, ECO_W_GATE, l, p, &L->gate)) || (e = load_linear(s, w, ECO_W_UP, l, p, &L->up)) ||
            (e = load_linear(s, w, ECO_W_DOWN, l, p, &L->down)))
            goto fail;
        if (c->qkv_bias && ((e = load_vec(w, ECO_W_Q_BIAS, l, &L->bq)) || (e = load_vec(w, ECO_W_K_BIAS, l, &L->bk)) ||
                            (e = load_vec(w, ECO_W_V_BIAS, l, &L->bv))))
            goto fail;
        s->resident += (2 * H + (c->qkv_bias ? (size_t)s->q_dim + 2 * (size_t)s->kv_dim : 0)) * 2;
    }
    if ((e = load_vec(w, ECO_W_FINAL_NORM, 0, &s->final_norm))) goto fail;
    if ((e = load_linear(s, w, ECO_W_LM_HEAD, 0, o->quantize_lm_head ? p : ECO_PREC_FP16, &s->lm_head))) goto fail;
    s->resident += 2 * H;
    if (c->tie_embeddings && s->lm_head.format == ECO_PREC_FP16) {
        s->embed = s->lm_head.data; /* one fp16 table serves both, as in the checkpoint */
    } else {
        float *f;
        uint64_t n;
        if ((e = eco_weights_get_fp16(w, ECO_W_EMBED, 0, &f, &n))) goto fail;
        s->embed_own = malloc(n * sizeof *s->embed_own);
        if (!s->embed_own) { free(f); e = eco_fail(ECO_ENOMEM, "cpu backend: out of memory for the embedding"); goto fail; }
        for (uint64_t i = 0; i < n; i++) s->embed_own[i] = eco_f32_to_f16(f[i]);
        free(f);
        s->embed = s->embed_own;
        s->resident += n * 2;
    }
    *out = s;
    return ECO_OK;
fail:
    cpu_destroy(s);
    return e;
}

static void cpu_reset(void *state) { (void)state; /* positions restart at 0; stale KV rows are overwritten before use */ }

static uint64_t cpu_resident(const void *state) { return ((const cpu_state *)state)->resident; }

static eco_err cpu_forward(void *state, int32_t token, int pos, float *logits)
{
    cpu_state *s = state;
    const eco_model_config *c = &s->c;
    int H = c->hidden, hd = c->head_dim, half = hd / 2;
    if (token < 0 || token >= c->vocab) return eco_fail(ECO_EINVAL, "token %d outside the vocabulary (0..%d)", token, c->vocab - 1);
    if (pos < 0 || pos >= s->max_seq) return eco_fail(ECO_ETOOBIG, "position %d beyond the KV cache (%d positions)", pos, s->max_seq);
    eco_err e;

    const uint16_t *erow = s->embed + (size_t)token * H;
    for (int i = 0; i < H; i++) s->x[i] = eco_f16_to_f32(erow[i]);
    for (int i = 0; i < half; i++) {
        double ang = (double)pos * s->inv_freq[i];
        s->rope_cos[i] = (float)cos(ang);
        s->rope_sin[i] = (float)sin(ang);
    }
    int t0 = c->sliding_window > 0 && pos - c->sliding_window + 1 > 0 ? pos - c->sliding_window + 1 : 0;

    for (int l = 0; l < c->layers; l++) {
        cpu_layer *L = &s->layers[l];
        rmsnorm(s->xb, s->x, L->attn_norm, H, c->rms_eps);
        if ((e = matvecs(s, s->xb, 3, &L->q, s->q, &L->k, s->k, &L->v, s->v))) return e;
        if (L->bq) {
            for (int i = 0; i < s->q_dim; i++) s->q[i] += L->bq[i];
            for (int i = 0; i < s->kv_dim; i++) { s->k[i] += L->bk[i]; s->v[i] += L->bv[i]; }
        }
        rope(s->q, c->heads, hd, s->rope_cos, s->rope_sin);
        rope(s->k, c->kv_heads, hd, s->rope_cos, s->rope_sin);
        size_t off = ((size_t)l * s->max_seq + (size_t)pos) * s->kv_dim;
        for (int i = 0; i < s->kv_dim; i++) {
            s->kcache[off + i] = s->o.kv_f16 ? fp16_round(s->k[i]) : s->k[i];
            s->vcache[off + i] = s->o.kv_f16 ? fp16_round(s->v[i]) : s->v[i];
        }
        attn_task at = {.s = s, .layer = l, .pos = pos, .t0 = t0};
        cpu_pool_run(s->pool, attn_worker, &at);
        if ((e = matvecs(s, s->att, 1, &L->o, s->y, NULL, NULL, NULL, NULL))) return e;
        for (int i = 0; i < H; i++) s->x[i] += s->y[i];

        rmsnorm(s->xb, s->x, L->mlp_norm, H, c->rms_eps);
        if ((e = matvecs(s, s->xb, 2, &L->gate, s->hb, &L->up, s->hb2, NULL, NULL))) return e;
        for (int i = 0; i < c->intermediate; i++) {
            float g = s->hb[i];
            s->hb[i] = g / (1.0f + expf(-g)) * s->hb2[i];
        }
        if ((e = matvecs(s, s->hb, 1, &L->down, s->y, NULL, NULL, NULL, NULL))) return e;
        for (int i = 0; i < H; i++) s->x[i] += s->y[i];
    }
    rmsnorm(s->xb, s->x, s->final_norm, H, c->rms_eps);
    return matvecs(s, s->xb, 1, &s->lm_head, logits, NULL, NULL, NULL, NULL);
}

const eco_backend eco_backend_cpu = {
    .name = "cpu",
    .create = cpu_create,
    .forward = cpu_forward,
    .reset = cpu_reset,
    .destroy = cpu_destroy,
    .resident_bytes = cpu_resident,
};
