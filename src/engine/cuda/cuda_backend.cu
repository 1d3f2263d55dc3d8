// The CUDA backend (eco_backend_cuda): weights quantized on the host by src/quant (so the formats are the
// CPU reference's, bit for bit), uploaded once; the whole token captured as a CUDA graph with the token
// and position passed through device memory. A "reference-stack" mode replays launches one by one and
// adds the host syncs the reference library does, so a report can separate the cost of a format from the
// cost of a kernel design.
#include <cuda_runtime.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_kernels.cuh"

extern "C" {
#include "eco/engine.h"
#include "eco/err.h"
#include "eco/model.h"
#include "eco/quant.h"
#include "eco/cuda.h"
}

using namespace eco_cuda;

namespace {

constexpr int kMaxOutliers = 1024;
constexpr int kQuantThreads = 16;

struct Linear {
    DeviceLinear d;
    void *buffers[5];
    int n_buffers;
};

struct Layer {
    Linear qkv, o, gate_up, down;
    float *attn_norm, *mlp_norm, *qkv_bias;
    __half *k_cache, *v_cache;
};

struct State {
    eco_model_config cfg;
    eco_engine_options opt;
    bool reference_stack;
    bool fp8_hw; /* ECO_CUDA_FP8=hw: e4m3 through the hardware conversion instead of bit moves (to compare both) */
    Layer *layers;
    __half *embed;
    Linear lm_head;
    bool lm_head_is_embed;
    float *final_norm, *inv_freq;
    float *x, *qkv, *gate_up, *logits;
    __half *xn, *attn_out, *act;
    int8_t *xq;
    float *x_absmax;
    int *outliers, *n_outliers;
    int *d_token, *d_pos, *d_next;
    int *h_io;       // pinned: token, pos, next
    float *h_logits; // pinned
    cudaStream_t stream;
    cudaGraphExec_t graph;
    bool graph_ready;
    uint64_t resident;
    size_t attn_smem;
};

eco_err cuda_fail(cudaError_t e, const char *what)
{
    return eco_fail(ECO_EDEVICE, "CUDA %s: %s", what, cudaGetErrorString(e));
}

#define CK(call)                                                   \
    do {                                                           \
        cudaError_t ck_ = (call);                                  \
        if (ck_ != cudaSuccess) return cuda_fail(ck_, #call);      \
    } while (0)

template <typename T> eco_err dalloc(State *s, T **p, size_t count)
{
    CK(cudaMalloc((void **)p, count * sizeof(T) + 16));
    s->resident += count * sizeof(T);
    return ECO_OK;
}

template <typename T> eco_err upload(State *s, T **p, const void *host, size_t bytes)
{
    CK(cudaMalloc((void **)p, bytes + 16));
    CK(cudaMemcpy(*p, host, bytes, cudaMemcpyHostToDevice));
    s->resident += bytes;
    return ECO_OK;
}

size_t qweight_data_bytes(const eco_qweight *q)
{
    uint64_t n = q->rows * q->cols;
    switch (q->format) {
    case ECO_PREC_FP16: return n * 2;
    case ECO_PREC_NF4:
    case ECO_PREC_NF4_DQ: return (n + 1) / 2;
    default: return n;
    }
}

eco_err upload_qweight(State *s, const eco_qweight *q, Linear *out)
{
    memset(out, 0, sizeof *out);
    DeviceLinear &d = out->d;
    d.format = q->format;
    d.rows = (int)q->rows;
    d.cols = (int)q->cols;
    d.blocksize = q->blocksize;
    d.absmax_offset = q->absmax_offset;
    void *w;
    eco_err e = upload(s, (uint8_t **)&w, q->data, qweight_data_bytes(q));
    if (e) return e;
    d.w = w;
    out->buffers[out->n_buffers++] = w;
    if (q->row_scale) {
        float *p;
        if ((e = upload(s, &p, q->row_scale, q->rows * sizeof(float)))) return e;
        d.row_scale = p;
        out->buffers[out->n_buffers++] = p;
    }
    uint64_t blocks = q->blocksize ? (q->rows * q->cols + q->blocksize - 1) / q->blocksize : 0;
    if (q->absmax) {
        float *p;
        if ((e = upload(s, &p, q->absmax, blocks * sizeof(float)))) return e;
        d.absmax = p;
        out->buffers[out->n_buffers++] = p;
    }
    if (q->absmax_q) {
        uint8_t *p;
        float *qs;
        if ((e = upload(s, &p, q->absmax_q, blocks))) return e;
        d.absmax_q = p;
        out->buffers[out->n_buffers++] = p;
        if ((e = upload(s, &qs, q->absmax_q_scale, ((blocks + 255) / 256) * sizeof(float)))) return e;
        d.absmax_q_scale = qs;
        out->buffers[out->n_buffers++] = qs;
    }
    return ECO_OK;
}

// Quantizes row slices in parallel: every format but nf4-dq is row-local (nf4 blocks never straddle rows
// for the shapes we accept), so slices give the same bytes as one whole-matrix call.
struct QuantJob {
    eco_precision p;
    const float *w;
    uint64_t rows, cols;
    const eco_quant_options *o;
    eco_qweight out;
    eco_err err;
};

void *quant_job_main(void *arg)
{
    QuantJob *j = (QuantJob *)arg;
    j->err = eco_quantize(j->p, j->w, j->rows, j->cols, j->o, &j->out);
    return NULL;
}

eco_err quantize_parallel(eco_precision p, const float *w, uint64_t rows, uint64_t cols, const eco_quant_options *o,
                          eco_qweight *out)
{
    bool whole = p == ECO_PREC_NF4_DQ || (p == ECO_PREC_NF4 && o->double_quant) || rows < 2 * kQuantThreads;
    if (whole) return eco_quantize(p, w, rows, cols, o, out);
    QuantJob jobs[kQuantThreads];
    pthread_t th[kQuantThreads];
    uint64_t per = (rows + kQuantThreads - 1) / kQuantThreads;
    int n = 0;
    for (uint64_t r = 0; r < rows; r += per, n++) {
        uint64_t cnt = rows - r < per ? rows - r : per;
        jobs[n] = QuantJob{p, w + r * cols, cnt, cols, o, eco_qweight(), ECO_OK};
        memset(&jobs[n].out, 0, sizeof jobs[n].out);
    }
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, quant_job_main, &jobs[i])) quant_job_main(&jobs[i]), th[i] = 0;
    for (int i = 0; i < n; i++)
        if (th[i]) pthread_join(th[i], NULL);
    eco_err err = ECO_OK;
    for (int i = 0; i < n && !err; i++) err = jobs[i].err;
    if (!err) {
        // Stitch the slices into one eco_qweight.
        eco_qweight q;
        memset(&q, 0, sizeof q);
        q.format = jobs[0].out.format;
        q.rows = rows;
        q.cols = cols;
        q.blocksize = jobs[0].out.blocksize;
        q.int8_threshold = jobs[0].out.int8_threshold;
        size_t elem_bytes = q.format == ECO_PREC_FP16 ? 2 : 1;
        bool nibbles = q.format == ECO_PREC_NF4;
        size_t data_bytes = nibbles ? (rows * cols + 1) / 2 : rows * cols * elem_bytes;
        q.data = malloc(data_bytes);
        if (jobs[0].out.row_scale) q.row_scale = (float *)malloc(rows * sizeof(float));
        uint64_t blocks = q.blocksize ? rows * cols / q.blocksize : 0;
        if (jobs[0].out.absmax) q.absmax = (float *)malloc(blocks * sizeof(float));
        if (!q.data || (jobs[0].out.row_scale && !q.row_scale) || (jobs[0].out.absmax && !q.absmax)) {
            eco_qweight_free(&q);
            err = eco_fail(ECO_ENOMEM, "out of memory stitching a quantized weight");
        } else {
            uint64_t row = 0;
            for (int i = 0; i < n; i++) {
                const eco_qweight &s = jobs[i].out;
                size_t off = nibbles ? row * cols / 2 : row * cols * elem_bytes;
                memcpy((uint8_t *)q.data + off, s.data, qweight_data_bytes(&s));
                if (q.row_scale) memcpy(q.row_scale + row, s.row_scale, s.rows * sizeof(float));
                if (q.absmax) memcpy(q.absmax + row * cols / q.blocksize, s.absmax, s.rows * cols / q.blocksize * sizeof(float));
                row += s.rows;
            }
            *out = q;
        }
    }
    for (int i = 0; i < n; i++) eco_qweight_free(&jobs[i].out);
    return err;
}

eco_err check_shape(const eco_model_config *c, eco_precision p, const eco_quant_options *o, uint64_t cols, const char *what)
{
    if (cols % 16)
        return eco_fail(ECO_EUNSUPPORTED, "CUDA backend: %s has %llu input features, not a multiple of 16", what,
                        (unsigned long long)cols);
    if ((p == ECO_PREC_NF4 || p == ECO_PREC_NF4_DQ) && (cols % (uint64_t)o->nf4_blocksize || o->nf4_blocksize % 32))
        return eco_fail(ECO_EUNSUPPORTED, "CUDA backend: nf4 blocks of %d must divide %s's %llu columns and be a multiple of 32",
                        o->nf4_blocksize, what, (unsigned long long)cols);
    (void)c;
    return ECO_OK;
}

// Fetches kinds k[0..nk) of one layer, stacks their rows, quantizes and uploads them as one linear.
eco_err load_linear(State *s, eco_weights *w, const eco_weight_kind *kinds, int nk, int layer, eco_precision p, Linear *out)
{
    uint64_t total_rows = 0, cols = 0, rows[3];
    for (int i = 0; i < nk; i++) {
        uint64_t r, c;
        eco_weight_shape(&s->cfg, kinds[i], &r, &c);
        rows[i] = r;
        total_rows += r;
        cols = c;
    }
    eco_err e = check_shape(&s->cfg, p, &s->opt.quant, cols, eco_weight_kind_name(kinds[0]));
    if (e) return e;
    float *stack = (float *)malloc(total_rows * cols * sizeof(float));
    if (!stack) return eco_fail(ECO_ENOMEM, "out of memory for layer %d %s", layer, eco_weight_kind_name(kinds[0]));
    uint64_t off = 0;
    for (int i = 0; i < nk && !e; i++) {
        float *t;
        uint64_t n;
        if (!(e = eco_weights_get(w, kinds[i], layer, &t, &n))) {
            memcpy(stack + off, t, n * sizeof(float));
            off += rows[i] * cols;
            free(t);
        }
    }
    eco_qweight q;
    memset(&q, 0, sizeof q);
    if (!e) e = quantize_parallel(p, stack, total_rows, cols, &s->opt.quant, &q);
    free(stack);
    if (!e) e = upload_qweight(s, &q, out);
    eco_qweight_free(&q);
    return e;
}

eco_err load_vector(State *s, eco_weights *w, eco_weight_kind k, int layer, float **out)
{
    float *t;
    uint64_t n;
    eco_err e = eco_weights_get(w, k, layer, &t, &n);
    if (e) return e;
    e = upload(s, out, t, n * sizeof(float));
    free(t);
    return e;
}

eco_err load_half_table(State *s, eco_weights *w, eco_weight_kind k, __half **out)
{
    float *t;
    uint64_t n;
    eco_err e = eco_weights_get(w, k, -1, &t, &n);
    if (e) return e;
    uint16_t *h = (uint16_t *)malloc(n * sizeof(uint16_t));
    if (!h) { free(t); return eco_fail(ECO_ENOMEM, "out of memory for %s", eco_weight_kind_name(k)); }
    for (uint64_t i = 0; i < n; i++) h[i] = eco_f32_to_f16(t[i]);
    free(t);
    e = upload(s, out, h, n * sizeof(uint16_t));
    free(h);
    return e;
}

unsigned grid_for(int rows) { return (unsigned)((rows + kRowsPerBlock - 1) / kRowsPerBlock); }

eco_err launch_linear(State *s, const Linear &l, const __half *x, float *y, int mode)
{
    const DeviceLinear &d = l.d;
    dim3 grid(grid_for(d.rows)), block(kWarpsPerBlock * kWarp);
    const uint8_t *w = (const uint8_t *)d.w;
    switch (d.format) {
    case ECO_PREC_FP16:
        matvec<W_F16, false, 2><<<grid, block, 0, s->stream>>>(w, NULL, NULL, NULL, NULL, 0.f, 0, x, y, d.rows, d.cols, mode);
        break;
    case ECO_PREC_INT8:
        matvec<W_I8, false, 2><<<grid, block, 0, s->stream>>>(w, d.row_scale, NULL, NULL, NULL, 0.f, 0, x, y, d.rows, d.cols, mode);
        break;
    case ECO_PREC_FP8:
        if (s->fp8_hw)
            matvec<W_FP8_HW, false, 2><<<grid, block, 0, s->stream>>>(w, d.row_scale, NULL, NULL, NULL, 0.f, 0, x, y, d.rows,
                                                                      d.cols, mode);
        else
            matvec<W_FP8, false, 2><<<grid, block, 0, s->stream>>>(w, d.row_scale, NULL, NULL, NULL, 0.f, 0, x, y, d.rows,
                                                                   d.cols, mode);
        break;
    case ECO_PREC_NF4:
        matvec<W_NF4, false, 2><<<grid, block, 0, s->stream>>>(w, NULL, d.absmax, NULL, NULL, 0.f, d.blocksize, x, y, d.rows,
                                                               d.cols, mode);
        break;
    case ECO_PREC_NF4_DQ:
        matvec<W_NF4, true, 2><<<grid, block, 0, s->stream>>>(w, NULL, NULL, d.absmax_q, d.absmax_q_scale, d.absmax_offset,
                                                              d.blocksize, x, y, d.rows, d.cols, mode);
        break;
    case ECO_PREC_INT8_MIXED:
        quantize_activations<<<1, 1024, 0, s->stream>>>(x, d.cols, s->opt.quant.int8_threshold, s->xq, s->x_absmax,
                                                         s->outliers, s->n_outliers, kMaxOutliers);
        if (s->reference_stack) {
            // bitsandbytes finds outlier columns with a data-dependent op that syncs with the host.
            int n_out;
            CK(cudaMemcpyAsync(&n_out, s->n_outliers, sizeof n_out, cudaMemcpyDeviceToHost, s->stream));
            CK(cudaStreamSynchronize(s->stream));
        }
        matvec_i8_mixed<<<grid, block, 0, s->stream>>>((const int8_t *)d.w, d.row_scale, s->xq, s->x_absmax, s->outliers,
                                                        s->n_outliers, x, y, d.rows, d.cols, mode);
        break;
    default: return eco_fail(ECO_EUNSUPPORTED, "CUDA backend: format %d", d.format);
    }
    CK(cudaGetLastError());
    return ECO_OK;
}

// The launches of one token. Token and position are read from device memory, so a captured graph replays.
eco_err enqueue_token(State *s)
{
    const eco_model_config &c = s->cfg;
    int window = (c.family == ECO_FAMILY_MISTRAL || c.family == ECO_FAMILY_PHI3) ? c.sliding_window : 0;
    eco_err e;
    embed<<<(c.hidden + 255) / 256, 256, 0, s->stream>>>(s->embed, s->d_token, s->x, c.hidden);
    for (int l = 0; l < c.layers; l++) {
        Layer &L = s->layers[l];
        rmsnorm<<<1, 1024, 0, s->stream>>>(s->x, L.attn_norm, s->xn, c.hidden, (float)c.rms_eps);
        if ((e = launch_linear(s, L.qkv, s->xn, s->qkv, 0))) return e;
        rope_kv<<<((c.heads + c.kv_heads) * c.head_dim / 2 + 255) / 256, 256, 0, s->stream>>>(
            s->qkv, L.qkv_bias, s->inv_freq, s->d_pos, L.k_cache, L.v_cache, c.heads, c.kv_heads, c.head_dim);
        attention<<<c.heads, 256, s->attn_smem, s->stream>>>(s->qkv, L.k_cache, L.v_cache, s->d_pos, s->attn_out, c.heads,
                                                             c.kv_heads, c.head_dim, window);
        if ((e = launch_linear(s, L.o, s->attn_out, s->x, 1))) return e;
        rmsnorm<<<1, 1024, 0, s->stream>>>(s->x, L.mlp_norm, s->xn, c.hidden, (float)c.rms_eps);
        if ((e = launch_linear(s, L.gate_up, s->xn, s->gate_up, 0))) return e;
        swiglu<<<(c.intermediate + 255) / 256, 256, 0, s->stream>>>(s->gate_up, s->act, c.intermediate);
        if ((e = launch_linear(s, L.down, s->act, s->x, 1))) return e;
    }
    rmsnorm<<<1, 1024, 0, s->stream>>>(s->x, s->final_norm, s->xn, c.hidden, (float)c.rms_eps);
    if ((e = launch_linear(s, s->lm_head, s->xn, s->logits, 0))) return e;
    argmax<<<1, 1024, 0, s->stream>>>(s->logits, c.vocab, s->d_next);
    CK(cudaGetLastError());
    return ECO_OK;
}

eco_err run_token(State *s, int32_t token, int pos)
{
    if (token < 0 || token >= s->cfg.vocab)
        return eco_fail(ECO_EINVAL, "token %d is outside the vocabulary (0..%d)", token, s->cfg.vocab - 1);
    if (pos >= s->opt.max_seq) return eco_fail(ECO_ETOOBIG, "KV cache full (%d positions)", s->opt.max_seq);
    s->h_io[0] = token;
    s->h_io[1] = pos;
    CK(cudaMemcpyAsync(s->d_token, s->h_io, 2 * sizeof(int), cudaMemcpyHostToDevice, s->stream));
    if (s->reference_stack) return enqueue_token(s);
    if (!s->graph_ready) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
        eco_err e = enqueue_token(s);
        cudaError_t ce = cudaStreamEndCapture(s->stream, &g);
        if (e) return e;
        if (ce != cudaSuccess) return cuda_fail(ce, "cudaStreamEndCapture");
        CK(cudaGraphInstantiate(&s->graph, g, 0));
        cudaGraphDestroy(g);
        s->graph_ready = true;
    }
    CK(cudaGraphLaunch(s->graph, s->stream));
    return ECO_OK;
}

eco_err cuda_create(const eco_model_config *c, eco_weights *w, const eco_engine_options *o, void **state)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
        return eco_fail(ECO_EDEVICE, "CUDA backend: no CUDA device is available");
    State *s = (State *)calloc(1, sizeof(State));
    if (!s) return eco_fail(ECO_ENOMEM, "out of memory");
    s->cfg = *c;
    s->opt = *o;
    s->reference_stack = eco_cuda_reference_stack_requested();
    const char *fp8_mode = getenv("ECO_CUDA_FP8");
    s->fp8_hw = fp8_mode && !strcmp(fp8_mode, "hw");
    if (s->opt.max_seq <= 0) s->opt.max_seq = c->max_pos < 4096 ? c->max_pos : 4096;
    eco_precision p = o->precision;
    if (p == ECO_PREC_NF4 && o->quant.double_quant) p = ECO_PREC_NF4_DQ;
    *state = s;
    eco_err e;
    CK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    CK(cudaMemcpyToSymbol(c_nf4, eco_nf4_codebook, sizeof(float) * 16));
    CK(cudaMemcpyToSymbol(c_dynamic_map, eco_dynamic_map8(), sizeof(float) * 256));
    s->layers = (Layer *)calloc((size_t)c->layers, sizeof(Layer));
    if (!s->layers) return eco_fail(ECO_ENOMEM, "out of memory");
    int kv_dim = c->kv_heads * c->head_dim, q_dim = c->heads * c->head_dim;
    const eco_weight_kind qkv[3] = {ECO_W_Q, ECO_W_K, ECO_W_V}, gate_up[2] = {ECO_W_GATE, ECO_W_UP};
    const eco_weight_kind o_kind = ECO_W_O, down_kind = ECO_W_DOWN;
    for (int l = 0; l < c->layers; l++) {
        Layer &L = s->layers[l];
        if ((e = load_linear(s, w, qkv, 3, l, p, &L.qkv))) return e;
        if ((e = load_linear(s, w, &o_kind, 1, l, p, &L.o))) return e;
        if ((e = load_linear(s, w, gate_up, 2, l, p, &L.gate_up))) return e;
        if ((e = load_linear(s, w, &down_kind, 1, l, p, &L.down))) return e;
        if ((e = load_vector(s, w, ECO_W_ATTN_NORM, l, &L.attn_norm))) return e;
        if ((e = load_vector(s, w, ECO_W_MLP_NORM, l, &L.mlp_norm))) return e;
        if (c->qkv_bias) {
            float *bias = (float *)malloc((size_t)(q_dim + 2 * kv_dim) * sizeof(float));
            if (!bias) return eco_fail(ECO_ENOMEM, "out of memory");
            const eco_weight_kind bk[3] = {ECO_W_Q_BIAS, ECO_W_K_BIAS, ECO_W_V_BIAS};
            size_t off = 0;
            for (int i = 0; i < 3 && !e; i++) {
                float *t;
                uint64_t n;
                if (!(e = eco_weights_get(w, bk[i], l, &t, &n))) {
                    memcpy(bias + off, t, n * sizeof(float));
                    off += n;
                    free(t);
                }
            }
            if (!e) e = upload(s, &L.qkv_bias, bias, off * sizeof(float));
            free(bias);
            if (e) return e;
        }
        if ((e = dalloc(s, &L.k_cache, (size_t)s->opt.max_seq * kv_dim))) return e;
        if ((e = dalloc(s, &L.v_cache, (size_t)s->opt.max_seq * kv_dim))) return e;
    }
    if ((e = load_half_table(s, w, ECO_W_EMBED, &s->embed))) return e;
    if ((e = load_vector(s, w, ECO_W_FINAL_NORM, -1, &s->final_norm))) return e;
    if (!o->quantize_lm_head && c->tie_embeddings) {
        s->lm_head_is_embed = true;
        s->lm_head.d.format = ECO_PREC_FP16;
        s->lm_head.d.rows = c->vocab;
        s->lm_head.d.cols = c->hidden;
        s->lm_head.d.w = s->embed;
    } else {
        const eco_weight_kind head = ECO_W_LM_HEAD;
        if ((e = load_linear(s, w, &head, 1, -1, o->quantize_lm_head ? p : ECO_PREC_FP16, &s->lm_head))) return e;
    }
    double *inv = (double *)malloc(sizeof(double) * (size_t)(c->head_dim / 2));
    float *invf = (float *)malloc(sizeof(float) * (size_t)(c->head_dim / 2));
    if (!inv || !invf) { free(inv); free(invf); return eco_fail(ECO_ENOMEM, "out of memory"); }
    eco_rope_inv_freq(c, inv);
    for (int i = 0; i < c->head_dim / 2; i++) invf[i] = (float)inv[i];
    e = upload(s, &s->inv_freq, invf, sizeof(float) * (size_t)(c->head_dim / 2));
    free(inv);
    free(invf);
    if (e) return e;
    int widest = c->hidden > c->intermediate ? c->hidden : c->intermediate;
    if (q_dim > widest) widest = q_dim;
    if ((e = dalloc(s, &s->x, (size_t)c->hidden)) || (e = dalloc(s, &s->qkv, (size_t)(q_dim + 2 * kv_dim))) ||
        (e = dalloc(s, &s->gate_up, (size_t)2 * c->intermediate)) || (e = dalloc(s, &s->logits, (size_t)c->vocab)) ||
        (e = dalloc(s, &s->xn, (size_t)widest)) || (e = dalloc(s, &s->attn_out, (size_t)q_dim)) ||
        (e = dalloc(s, &s->act, (size_t)c->intermediate)) || (e = dalloc(s, &s->xq, (size_t)widest)) ||
        (e = dalloc(s, &s->x_absmax, 1)) || (e = dalloc(s, &s->outliers, kMaxOutliers)) ||
        (e = dalloc(s, &s->n_outliers, 1)) || (e = dalloc(s, &s->d_token, 3)))
        return e;
    s->d_pos = s->d_token + 1;
    s->d_next = s->d_token + 2;
    CK(cudaMallocHost((void **)&s->h_io, 4 * sizeof(int)));
    CK(cudaMallocHost((void **)&s->h_logits, (size_t)c->vocab * sizeof(float)));
    s->attn_smem = (size_t)s->opt.max_seq * sizeof(float);
    if (s->attn_smem > 48 * 1024) CK(cudaFuncSetAttribute(attention, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)s->attn_smem));
    CK(cudaStreamSynchronize(s->stream));
    return ECO_OK;
}

eco_err cuda_forward(void *state, int32_t token, int pos, float *logits)
{
    State *s = (State *)state;
    eco_err e = run_token(s, token, pos);
    if (e) return e;
    CK(cudaMemcpyAsync(s->h_logits, s->logits, (size_t)s->cfg.vocab * sizeof(float), cudaMemcpyDeviceToHost, s->stream));
    CK(cudaStreamSynchronize(s->stream));
    memcpy(logits, s->h_logits, (size_t)s->cfg.vocab * sizeof(float));
    return ECO_OK;
}

void cuda_reset(void *state) { (void)state; /* positions restart at 0 and overwrite the cache */ }

void free_linear(Linear &l)
{
    for (int i = 0; i < l.n_buffers; i++) cudaFree(l.buffers[i]);
}

void cuda_destroy(void *state)
{
    State *s = (State *)state;
    if (!s) return;
    if (s->stream) cudaStreamSynchronize(s->stream);
    if (s->graph_ready) cudaGraphExecDestroy(s->graph);
    for (int l = 0; s->layers && l < s->cfg.layers; l++) {
        Layer &L = s->layers[l];
        free_linear(L.qkv);
        free_linear(L.o);
        free_linear(L.gate_up);
        free_linear(L.down);
        cudaFree(L.attn_norm);
        cudaFree(L.mlp_norm);
        cudaFree(L.qkv_bias);
        cudaFree(L.k_cache);
        cudaFree(L.v_cache);
    }
    free(s->layers);
    if (!s->lm_head_is_embed) free_linear(s->lm_head);
    void *bufs[] = {s->embed, s->final_norm, s->inv_freq, s->x, s->qkv, s->gate_up, s->logits, s->xn, s->attn_out,
                    s->act, s->xq, s->x_absmax, s->outliers, s->n_outliers, s->d_token};
    for (void *b : bufs) cudaFree(b);
    cudaFreeHost(s->h_io);
    cudaFreeHost(s->h_logits);
    if (s->stream) cudaStreamDestroy(s->stream);
    free(s);
}

uint64_t cuda_resident_bytes(const void *state) { return ((const State *)state)->resident; }

} // namespace

extern "C" {

const eco_backend eco_backend_cuda = {"cuda", cuda_create, cuda_forward, cuda_reset, cuda_destroy, cuda_resident_bytes,
                                      eco_cuda_greedy_step};

static bool reference_stack_flag;
void eco_cuda_set_reference_stack(bool on) { reference_stack_flag = on; }
bool eco_cuda_reference_stack_requested(void) { return reference_stack_flag; }

eco_err eco_cuda_greedy_step(void *state, int32_t token, int pos, int32_t *next)
{
    State *s = (State *)state;
    eco_err e = run_token(s, token, pos);
    if (e) return e;
    CK(cudaMemcpyAsync(&s->h_io[2], s->d_next, sizeof(int), cudaMemcpyDeviceToHost, s->stream));
    CK(cudaStreamSynchronize(s->stream));
    *next = s->h_io[2];
    return ECO_OK;
}

eco_err eco_cuda_sync(void *state)
{
    CK(cudaStreamSynchronize(((State *)state)->stream));
    return ECO_OK;
}

eco_err eco_cuda_stream_bandwidth(double seconds, double *gb_per_s)
{
    size_t bytes = (size_t)8 << 30;
    uint4 *buf;
    unsigned *sink;
    CK(cudaMalloc((void **)&buf, bytes));
    CK(cudaMalloc((void **)&sink, sizeof(unsigned)));
    CK(cudaMemset(buf, 1, bytes));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    unsigned grid = (unsigned)prop.multiProcessorCount * 8;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    stream_read<<<grid, 512>>>(buf, bytes / 16, sink); // warm
    CK(cudaDeviceSynchronize());
    int reps = 0;
    float ms_total = 0;
    while (ms_total < seconds * 1000.0f) {
        CK(cudaEventRecord(a));
        stream_read<<<grid, 512>>>(buf, bytes / 16, sink);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        ms_total += ms;
        reps++;
    }
    *gb_per_s = (double)bytes * reps / (ms_total / 1000.0) / 1e9;
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(buf);
    cudaFree(sink);
    return ECO_OK;
}

eco_err eco_cuda_device_name(char *buf, size_t cap)
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    snprintf(buf, cap, "%s (sm_%d%d, %d SMs, CUDA runtime %d)", prop.name, prop.major, prop.minor,
             prop.multiProcessorCount, rt);
    return ECO_OK;
}

} // extern "C"
