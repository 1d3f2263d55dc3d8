/* Quantizers and dequantizers: fp16, int8 (per-row absmax), int8-mixed (LLM.int8 weights), nf4 / nf4-dq
 * (bitsandbytes layout), fp8 e4m3 (per-row scale). Layouts and rounding rules: docs/FORMATS.md. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "quant_internal.h"

/* bitsandbytes' NF4 table (functional.get_4bit_type("nf4")); each literal is the float32 value's exact repr. */
#define NF4_VALUES                                                                                       \
    X(-1.0) X(-0.6961928009986877) X(-0.5250730514526367) X(-0.39491748809814453)                      \
    X(-0.28444138169288635) X(-0.18477343022823334) X(-0.09105003625154495) X(0.0)                     \
    X(0.07958029955625534) X(0.16093020141124725) X(0.24611230194568634) X(0.33791524171829224)        \
    X(0.44070982933044434) X(0.5626170039176941) X(0.7229568362236023) X(1.0)

#define X(v) (float)(v),
const float eco_nf4_codebook[16] = {NF4_VALUES};
#undef X

/* Decision thresholds of bitsandbytes' dQuantizeNF4: the midpoints of neighbouring codes, computed in double and
 * written into the CUDA source as decimal float literals (Python's shortest repr of the double). A compiler
 * rounds such a literal straight from decimal to float; where the double midpoint is itself halfway between
 * two floats (14|15: (0.7229568362236023 + 1) / 2) the truncated decimal decides the side, so these must be the
 * literals, not (float)midpoint. */
static const float nf4_thr[15] = {
    -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f, -0.33967943489551544f,
    -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f,
    0.1202552504837513f, 0.2035212516784668f, 0.2920137718319893f, 0.3893125355243683f,
    0.5016634166240692f, 0.6427869200706482f, 0.8614784181118011f};
static float dyn_map[256];
static float nf4_pairs[256][2];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* torch.linspace(0.1, 1, n) in float32 as torch's CPU kernel evaluates it: step = (end - start) / (n - 1);
 * the first half start + step*i, the second half end - step*(n-1-i), each a fused multiply-add (verified
 * bit-for-bit against torch 2.11's output). */
static float linspace_f32(int n, int i)
{
    float start = 0.1f, end = 1.0f, step = (end - start) / (float)(n - 1);
    if (i < n / 2) return fmaf(step, (float)i, start);
    return fmaf(-step, (float)(n - 1 - i), end);
}

static void init_tables(void)
{
    for (int b = 0; b < 256; b++) {
        nf4_pairs[b][0] = eco_nf4_codebook[b >> 4];
        nf4_pairs[b][1] = eco_nf4_codebook[b & 15];
    }
    /* create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for i = 0..6, the 2^i midpoints of
     * linspace(0.1, 1, 2^i + 1) times float(10^(i-6)), and their negatives; then 0 and 1; sorted. */
    int k = 0;
    for (int i = 0; i < 7; i++) {
        int n = (1 << i) + 1;
        float scale = (float)pow(10.0, i - 6);
        for (int j = 0; j + 1 < n; j++) {
            float mean = (linspace_f32(n, j) + linspace_f32(n, j + 1)) / 2.0f;
            float v = i == 6 ? mean : scale * mean; /* 10**0 is the integer 1: no multiply */
            dyn_map[k++] = v;
            dyn_map[k++] = -v;
        }
    }
    dyn_map[k++] = 0.0f;
    dyn_map[k++] = 1.0f;
    qsort(dyn_map, 256, sizeof dyn_map[0], cmp_float);
}

const float *eco_dynamic_map8(void)
{
    pthread_once(&tables_once, init_tables);
    return dyn_map;
}

const float (*eco_nf4_pair_lut(void))[2]
{
    pthread_once(&tables_once, init_tables);
    return (const float(*)[2])nf4_pairs;
}

uint8_t eco_nf4_quantize_value(float x)
{
    /* The thresholds are sorted, so the code is the number of them that x exceeds (strict '>'): the same
     * answer as bitsandbytes' decision tree, ties to the lower code and NaN to code 0. */
    unsigned code = 0;
    for (int i = 0; i < 15; i++) code += x > nf4_thr[i];
    return (uint8_t)code;
}

uint8_t eco_dynamic_quantize_value(const float *map, float x)
{
    /* 7-step binary search over the odd pivots 127, 63|191, ...; it ends on an even pivot whose value was not
     * yet compared, with the last pivots passed below (lo) and above (hi) as neighbours (the table ends when
     * none was passed). A midpoint test then picks the nearer one; a value on the midpoint keeps the pivot. */
    int pivot = 127, lo = 0, hi = 255;
    float lo_v = map[0], hi_v = map[255];
    for (int step = 64; step > 0; step >>= 1) {
        float v = map[pivot];
        if (x > v) {
            lo = pivot;
            lo_v = v;
            pivot += step;
        } else {
            hi = pivot;
            hi_v = v;
            pivot -= step;
        }
    }
    float v = map[pivot];
    if (x > v) return (uint8_t)(x > (hi_v + v) * 0.5f ? hi : pivot);
    return (uint8_t)(x < (lo_v + v) * 0.5f ? lo : pivot);
}

void eco_quant_options_default(eco_quant_options *o)
{
    if (!o) return;
    o->int8_threshold = ECO_INT8_MIXED_THRESHOLD;
    o->double_quant = false;
    o->nf4_blocksize = 64;
}

void eco_qweight_free(eco_qweight *q)
{
    if (!q) return;
    free(q->data);
    free(q->row_scale);
    free(q->absmax);
    free(q->absmax_q);
    free(q->absmax_q_scale);
    memset(q, 0, sizeof *q);
}

static bool is_nf4(eco_precision p)
{
    return p == ECO_PREC_NF4 || p == ECO_PREC_NF4_DQ;
}

static bool valid_blocksize(int bs)
{
    return bs >= 32 && bs <= 4096 && (bs & (bs - 1)) == 0;
}

static uint64_t data_bytes(eco_precision p, uint64_t n)
{
    switch (p) {
    case ECO_PREC_FP16: return 2 * n;
    case ECO_PREC_NF4:
    case ECO_PREC_NF4_DQ: return (n + 1) / 2;
    default: return n;
    }
}

eco_err eco_qweight_check(const eco_qweight *q, const char *what)
{
    if (!q) return eco_fail_field(ECO_EINVAL, what, "%s is NULL", what);
    if ((unsigned)q->format >= ECO_PREC_COUNT)
        return eco_fail_field(ECO_EINVAL, what, "%s has an unknown format %d", what, (int)q->format);
    if (q->rows == 0 || q->cols == 0 || q->rows > ECO_QUANT_MAX_ELEMS / q->cols)
        return eco_fail_field(ECO_EINVAL, what, "%s has a bad shape %llu x %llu", what,
                              (unsigned long long)q->rows, (unsigned long long)q->cols);
    if (!q->data) return eco_fail_field(ECO_EINVAL, what, "%s has no data", what);
    switch (q->format) {
    case ECO_PREC_INT8:
    case ECO_PREC_FP8:
        if (!q->row_scale) return eco_fail_field(ECO_EINVAL, what, "%s (%s) has no row_scale", what,
                                                 eco_precision_name(q->format));
        break;
    case ECO_PREC_INT8_MIXED:
        if (!q->row_scale) return eco_fail_field(ECO_EINVAL, what, "%s (int8-mixed) has no row_scale", what);
        if (!(q->int8_threshold >= 0.0f) || isinf(q->int8_threshold))
            return eco_fail_field(ECO_EINVAL, what, "%s int8_threshold must be finite and >= 0, got %g", what,
                                  (double)q->int8_threshold);
        if (q->cols > ECO_INT8_MAX_COLS)
            return eco_fail_field(ECO_EINVAL, what, "%s int8-mixed cols %llu exceed %u (int32 accumulator)", what,
                                  (unsigned long long)q->cols, ECO_INT8_MAX_COLS);
        break;
    case ECO_PREC_NF4:
        if (!valid_blocksize(q->blocksize))
            return eco_fail_field(ECO_EINVAL, what, "%s blocksize must be a power of two in 32..4096, got %d", what,
                                  q->blocksize);
        if (!q->absmax) return eco_fail_field(ECO_EINVAL, what, "%s (nf4) has no absmax", what);
        break;
    case ECO_PREC_NF4_DQ:
        if (!valid_blocksize(q->blocksize))
            return eco_fail_field(ECO_EINVAL, what, "%s blocksize must be a power of two in 32..4096, got %d", what,
                                  q->blocksize);
        if (!q->absmax_q || !q->absmax_q_scale)
            return eco_fail_field(ECO_EINVAL, what, "%s (nf4-dq) has no absmax_q / absmax_q_scale", what);
        break;
    default: break;
    }
    return ECO_OK;
}

float eco_nf4_block_absmax(const eco_qweight *q, uint64_t block)
{
    if (q->absmax) return q->absmax[block];
    const float *map = eco_dynamic_map8();
    float scaled = map[q->absmax_q[block]] * q->absmax_q_scale[block / ECO_DQ_GROUP];
    return scaled + q->absmax_offset;
}

void eco_nf4_decode(const eco_qweight *q, uint64_t e0, uint64_t count, float *out)
{
    const uint8_t *d = q->data;
    uint64_t bs = (uint64_t)q->blocksize, e = e0, end = e0 + count;
    while (e < end) {
        uint64_t b = e / bs, seg_end = (b + 1) * bs < end ? (b + 1) * bs : end;
        float a = eco_nf4_block_absmax(q, b);
        if (e & 1) { /* odd start: the low nibble of a byte (the second element of a pair) */
            *out++ = eco_nf4_codebook[d[e >> 1] & 15] * a;
            e++;
        }
        for (; e + 1 < seg_end; e += 2) { /* the first element of a pair is the high nibble */
            uint8_t byte = d[e >> 1];
            out[0] = eco_nf4_codebook[byte >> 4] * a;
            out[1] = eco_nf4_codebook[byte & 15] * a;
            out += 2;
        }
        if (e < seg_end) {
            *out++ = eco_nf4_codebook[d[e >> 1] >> 4] * a;
            e++;
        }
    }
}

/* Inputs are checked finite first, so a plain compare replaces fmaxf (a libm call without -ffast-math). */
static inline float max_abs(float m, float v)
{
    float a = fabsf(v);
    return a > m ? a : m;
}

/* ---- Fan-out: items [0, n) in contiguous ranges, one a thread (the caller runs the first). Every range's work
 * writes only its own outputs, so the bytes do not depend on the thread count. ---- */
#define QUANT_MAX_THREADS 64
#define QUANT_MIN_ELEMS_PER_THREAD ((uint64_t)1 << 18) /* below this a thread costs more than it saves */

typedef void (*range_fn)(void *ctx, uint64_t begin, uint64_t end);
typedef struct {
    range_fn fn;
    void *ctx;
    uint64_t begin, end;
} range_job;

static void *range_thread(void *arg)
{
    range_job *j = arg;
    j->fn(j->ctx, j->begin, j->end);
    return NULL;
}

/* `elems_per_item` sizes the fan-out: no more threads than QUANT_MIN_ELEMS_PER_THREAD elements each allow. A thread
 * that cannot be started leaves its range to the caller. */
static void run_ranges(int threads, uint64_t n, uint64_t elems_per_item, range_fn fn, void *ctx)
{
    uint64_t most = n * elems_per_item / QUANT_MIN_ELEMS_PER_THREAD;
    if (threads > QUANT_MAX_THREADS) threads = QUANT_MAX_THREADS;
    if ((uint64_t)threads > most) threads = most > 1 ? (int)most : 1;
    if ((uint64_t)threads > n) threads = (int)n;
    if (threads <= 1) {
        fn(ctx, 0, n);
        return;
    }
    range_job jobs[QUANT_MAX_THREADS];
    pthread_t th[QUANT_MAX_THREADS];
    bool started[QUANT_MAX_THREADS] = {false};
    for (int t = 0; t < threads; t++)
        jobs[t] = (range_job){fn, ctx, n * (uint64_t)t / (uint64_t)threads, n * (uint64_t)(t + 1) / (uint64_t)threads};
    for (int t = 1; t < threads; t++) started[t] = pthread_create(&th[t], NULL, range_thread, &jobs[t]) == 0;
    range_thread(&jobs[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(th[t], NULL);
        else range_thread(&jobs[t]);
    }
}

typedef struct {
    eco_precision p;
    const float *w;
    uint64_t rows, cols;
    eco_qweight *out;
    float *absmax;           /* nf4: the blocks' absmax, before double quant */
    uint64_t first_bad_any;  /* the finite check: the first bad element (UINT64_MAX: none) */
    pthread_mutex_t lock;
} quant_job;

static void finite_range(void *ctx, uint64_t begin, uint64_t end)
{
    quant_job *j = ctx;
    for (uint64_t i = begin; i < end; i++) {
        float v = j->w[i];
        if (!isfinite(v) || (j->p == ECO_PREC_FP16 && fabsf(v) > ECO_F16_MAX)) {
            pthread_mutex_lock(&j->lock);
            if (i < j->first_bad_any) j->first_bad_any = i;
            pthread_mutex_unlock(&j->lock);
            return;
        }
    }
}

static void fp16_range(void *ctx, uint64_t begin, uint64_t end)
{
    quant_job *j = ctx;
    uint16_t *h = j->out->data;
    for (uint64_t i = begin; i < end; i++) h[i] = eco_f32_to_f16(j->w[i]);
}

static void quantize_rowwise(eco_precision p, const float *w, uint64_t rows, uint64_t cols, eco_qweight *out)
{
    for (uint64_t r = 0; r < rows; r++) {
        const float *wr = w + r * cols;
        float amax = 0.0f;
        for (uint64_t c = 0; c < cols; c++) amax = max_abs(amax, wr[c]);
        if (p == ECO_PREC_FP8) {
            uint8_t *qr = (uint8_t *)out->data + r * cols;
            float s = amax / 448.0f; /* an all-zero row keeps scale 0 and codes 0 instead of 0/0 */
            out->row_scale[r] = s;
            for (uint64_t c = 0; c < cols; c++) qr[c] = amax > 0.0f ? eco_f32_to_e4m3(wr[c] / s) : 0;
        } else {
            int8_t *qr = (int8_t *)out->data + r * cols;
            /* bitsandbytes int8_vectorwise_quant: q = round-half-even(w * (127 / absmax)) */
            float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
            out->row_scale[r] = amax / 127.0f;
            for (uint64_t c = 0; c < cols; c++) qr[c] = (int8_t)rintf(wr[c] * inv);
        }
    }
}

static void rowwise_range(void *ctx, uint64_t begin, uint64_t end)
{
    quant_job *j = ctx;
    eco_qweight part = *j->out; /* rows [begin, end) as a weight of their own */
    part.data = (uint8_t *)j->out->data + begin * j->cols;
    part.row_scale = j->out->row_scale + begin;
    quantize_rowwise(j->p, j->w + begin * j->cols, end - begin, j->cols, &part);
}

/* nf4 blocks [begin, end): their absmax and codes. Blocks hold an even number of elements (blocksize >= 32), so each
 * starts a byte and no byte is shared between ranges. */
static void nf4_blocks_range(void *ctx, uint64_t begin, uint64_t end)
{
    quant_job *j = ctx;
    const float *w = j->w;
    uint64_t bs = (uint64_t)j->out->blocksize, n = j->rows * j->cols;
    uint8_t *d = j->out->data;
    for (uint64_t b = begin; b < end; b++) {
        uint64_t e0 = b * bs, e1 = e0 + bs < n ? e0 + bs : n;
        float amax = 0.0f;
        for (uint64_t e = e0; e < e1; e++) amax = max_abs(amax, w[e]);
        j->absmax[b] = amax;
        /* bitsandbytes multiplies by the fp32 reciprocal; an all-zero block gives 0 * inf = NaN -> code 0,
         * which dequantizes to -1 * 0 = 0 */
        float inv = 1.0f / amax;
        for (uint64_t e = e0; e < e1; e++) {
            uint8_t code = eco_nf4_quantize_value(w[e] * inv);
            if (e & 1) d[e >> 1] |= code;
            else d[e >> 1] = (uint8_t)(code << 4);
        }
    }
}

/* nf4-dq groups [begin, end) of ECO_DQ_GROUP blocks: their scale and the blocks' codes, from absmax less the offset. */
static void dq_groups_range(void *ctx, uint64_t begin, uint64_t end)
{
    quant_job *j = ctx;
    eco_qweight *out = j->out;
    uint64_t bs = (uint64_t)out->blocksize, n = j->rows * j->cols, nb = (n + bs - 1) / bs;
    float offset = out->absmax_offset, *absmax = j->absmax;
    const float *map = eco_dynamic_map8();
    for (uint64_t g = begin; g < end; g++) {
        uint64_t b0 = g * ECO_DQ_GROUP, b1 = b0 + ECO_DQ_GROUP < nb ? b0 + ECO_DQ_GROUP : nb;
        float gmax = 0.0f;
        for (uint64_t b = b0; b < b1; b++) {
            absmax[b] -= offset; /* torch: _absmax - offset in fp32 */
            gmax = fmaxf(gmax, fabsf(absmax[b]));
        }
        out->absmax_q_scale[g] = gmax;
        float inv = 1.0f / gmax;
        for (uint64_t b = b0; b < b1; b++) out->absmax_q[b] = eco_dynamic_quantize_value(map, absmax[b] * inv);
    }
}

static eco_err quantize_nf4(quant_job *j, bool dq, int threads)
{
    eco_qweight *out = j->out;
    uint64_t n = j->rows * j->cols, bs = (uint64_t)out->blocksize, nb = (n + bs - 1) / bs;
    float *absmax = malloc(nb * sizeof *absmax);
    if (!absmax) return eco_fail(ECO_ENOMEM, "nf4: out of memory for %llu absmax values", (unsigned long long)nb);
    j->absmax = absmax;
    run_ranges(threads, nb, bs, nf4_blocks_range, j);
    uint8_t *d = out->data;
    if (n & 1) d[n >> 1] |= 0x07; /* odd count: the missing low nibble is the zero code 0b0111 */
    if (!dq) {
        out->absmax = absmax;
        return ECO_OK;
    }
    uint64_t ng = (nb + ECO_DQ_GROUP - 1) / ECO_DQ_GROUP;
    out->absmax_q = malloc(nb);
    out->absmax_q_scale = malloc(ng * sizeof(float));
    if (!out->absmax_q || !out->absmax_q_scale) {
        free(absmax);
        return eco_fail(ECO_ENOMEM, "nf4-dq: out of memory for %llu absmax codes", (unsigned long long)nb);
    }
    double sum = 0.0; /* in block order whatever the threads: the offset is bit for bit the sequential one */
    for (uint64_t b = 0; b < nb; b++) sum += absmax[b];
    out->absmax_offset = (float)(sum / (double)nb);
    run_ranges(threads, ng, ECO_DQ_GROUP * 8, dq_groups_range, j); /* a block's code: a search of 8 steps */
    free(absmax);
    return ECO_OK;
}

eco_err eco_quantize(eco_precision p, const float *w, uint64_t rows, uint64_t cols, const eco_quant_options *o,
                     eco_qweight *out)
{
    return eco_quantize_threads(p, w, rows, cols, o, 1, out);
}

eco_err eco_quantize_threads(eco_precision p, const float *w, uint64_t rows, uint64_t cols, const eco_quant_options *o,
                             int threads, eco_qweight *out)
{
    if (!out) return eco_fail_field(ECO_EINVAL, "out", "eco_quantize: out is NULL");
    memset(out, 0, sizeof *out);
    eco_quant_options def;
    eco_quant_options_default(&def);
    if (!o) o = &def;
    if ((unsigned)p >= ECO_PREC_COUNT)
        return eco_fail_field(ECO_EINVAL, "precision", "eco_quantize: unknown precision %d", (int)p);
    if (!w) return eco_fail_field(ECO_EINVAL, "w", "eco_quantize: weights are NULL");
    if (rows == 0 || cols == 0)
        return eco_fail_field(ECO_EINVAL, "shape", "eco_quantize: shape %llu x %llu has a zero dimension",
                              (unsigned long long)rows, (unsigned long long)cols);
    if (rows > ECO_QUANT_MAX_ELEMS / cols)
        return eco_fail_field(ECO_ETOOBIG, "shape", "eco_quantize: shape %llu x %llu exceeds 2^40 elements",
                              (unsigned long long)rows, (unsigned long long)cols);
    if (p == ECO_PREC_NF4 && o->double_quant) p = ECO_PREC_NF4_DQ;
    if (is_nf4(p) && !valid_blocksize(o->nf4_blocksize))
        return eco_fail_field(ECO_EINVAL, "nf4_blocksize",
                              "eco_quantize: nf4 blocksize must be a power of two in 32..4096, got %d",
                              o->nf4_blocksize);
    if (p == ECO_PREC_INT8_MIXED) {
        if (!(o->int8_threshold >= 0.0f) || isinf(o->int8_threshold))
            return eco_fail_field(ECO_EINVAL, "int8_threshold",
                                  "eco_quantize: int8_threshold must be finite and >= 0, got %g",
                                  (double)o->int8_threshold);
        if (cols > ECO_INT8_MAX_COLS)
            return eco_fail_field(ECO_EINVAL, "cols",
                                  "eco_quantize: int8-mixed needs cols <= %u (int32 accumulation), got %llu",
                                  ECO_INT8_MAX_COLS, (unsigned long long)cols);
    }
    uint64_t n = rows * cols;
    quant_job job = {.p = p, .w = w, .rows = rows, .cols = cols, .out = out, .first_bad_any = UINT64_MAX};
    pthread_mutex_init(&job.lock, NULL);
    run_ranges(threads, n, 1, finite_range, &job); /* the first bad element overall, as one thread would find it */
    pthread_mutex_destroy(&job.lock);
    if (job.first_bad_any != UINT64_MAX) {
        uint64_t i = job.first_bad_any;
        return eco_fail_field(ECO_EINVAL, "w", "eco_quantize: w[%llu] (row %llu, col %llu) = %g is %s",
                              (unsigned long long)i, (unsigned long long)(i / cols), (unsigned long long)(i % cols),
                              (double)w[i], isfinite(w[i]) ? "outside the fp16 range" : "not finite");
    }
    out->format = p;
    out->rows = rows;
    out->cols = cols;
    out->blocksize = is_nf4(p) ? o->nf4_blocksize : 0;
    out->int8_threshold = p == ECO_PREC_INT8_MIXED ? o->int8_threshold : 0.0f;
    out->data = malloc(data_bytes(p, n));
    if (!out->data) return eco_fail(ECO_ENOMEM, "eco_quantize: out of memory for a %llu x %llu weight",
                                    (unsigned long long)rows, (unsigned long long)cols);
    eco_err err = ECO_OK;
    switch (p) {
    case ECO_PREC_FP16: run_ranges(threads, n, 1, fp16_range, &job); break;
    case ECO_PREC_INT8:
    case ECO_PREC_INT8_MIXED:
    case ECO_PREC_FP8:
        out->row_scale = malloc(rows * sizeof(float));
        if (out->row_scale) run_ranges(threads, rows, cols, rowwise_range, &job);
        else err = eco_fail(ECO_ENOMEM, "eco_quantize: out of memory for %llu row scales", (unsigned long long)rows);
        break;
    default: err = quantize_nf4(&job, p == ECO_PREC_NF4_DQ, threads); break;
    }
    if (err) eco_qweight_free(out);
    return err;
}

eco_err eco_dequantize_row(const eco_qweight *q, uint64_t row, float *out)
{
    eco_err err = eco_qweight_check(q, "q");
    if (err) return err;
    if (!out) return eco_fail_field(ECO_EINVAL, "out", "eco_dequantize_row: out is NULL");
    if (row >= q->rows)
        return eco_fail_field(ECO_EINVAL, "row", "eco_dequantize_row: row %llu out of range (rows = %llu)",
                              (unsigned long long)row, (unsigned long long)q->rows);
    uint64_t cols = q->cols, e0 = row * cols;
    switch (q->format) {
    case ECO_PREC_FP16: {
        const uint16_t *h = (const uint16_t *)q->data + e0;
        for (uint64_t c = 0; c < cols; c++) out[c] = eco_f16_to_f32(h[c]);
        break;
    }
    case ECO_PREC_INT8:
    case ECO_PREC_INT8_MIXED: {
        const int8_t *s = (const int8_t *)q->data + e0;
        float sc = q->row_scale[row];
        for (uint64_t c = 0; c < cols; c++) out[c] = (float)s[c] * sc;
        break;
    }
    case ECO_PREC_FP8: {
        const uint8_t *s = (const uint8_t *)q->data + e0;
        float sc = q->row_scale[row];
        for (uint64_t c = 0; c < cols; c++) out[c] = eco_e4m3_to_f32(s[c]) * sc;
        break;
    }
    default: eco_nf4_decode(q, e0, cols, out); break;
    }
    return ECO_OK;
}

eco_err eco_dequantize(const eco_qweight *q, float *w_out)
{
    eco_err err = eco_qweight_check(q, "q");
    if (err) return err;
    if (!w_out) return eco_fail_field(ECO_EINVAL, "w_out", "eco_dequantize: w_out is NULL");
    if (is_nf4(q->format)) {
        eco_nf4_decode(q, 0, q->rows * q->cols, w_out);
        return ECO_OK;
    }
    for (uint64_t r = 0; r < q->rows; r++)
        if ((err = eco_dequantize_row(q, r, w_out + r * q->cols))) return err;
    return ECO_OK;
}
