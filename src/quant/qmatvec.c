/* y = W x for quantized weights, with each format's reference numerics (see eco_qmatvec in eco/quant.h).
 * Dot products keep 16 fp32 partial sums (lane k takes columns k, k+16, ...), combined pairwise at the end:
 * fixed-length inner loops the compiler turns into SIMD without reassociating anything. */
#include <math.h>
#include <stdlib.h>

#include "quant_internal.h"

#define LANES 16
#define TILE 512 /* nf4 decode tile (floats) */

static float reduce_lanes(float acc[LANES])
{
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int k = 0; k < w; k++) acc[k] += acc[k + w];
    return acc[0];
}

/* acc[k] += a[i] * b[i] for i = k mod 16 (columns counted from the start of the row: off = index of a[0]). */
static void dot_acc(float acc[LANES], const float *a, const float *b, uint64_t n, uint64_t off)
{
    uint64_t i = 0;
    if (off % LANES == 0)
        for (; i + LANES <= n; i += LANES)
            for (int k = 0; k < LANES; k++) acc[k] += a[i + k] * b[i + k];
    for (; i < n; i++) acc[(off + i) % LANES] += a[i] * b[i];
}

static float row_fp16(const uint16_t *h, const float *x, uint64_t n)
{
    float acc[LANES] = {0};
    uint64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += eco_q_h2f(h[i + k]) * x[i + k];
    for (; i < n; i++) acc[i % LANES] += eco_q_h2f(h[i]) * x[i];
    return reduce_lanes(acc);
}

static float row_int8(const int8_t *q, const float *x, uint64_t n)
{
    float acc[LANES] = {0};
    uint64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += (float)q[i + k] * x[i + k];
    for (; i < n; i++) acc[i % LANES] += (float)q[i] * x[i];
    return reduce_lanes(acc);
}

static float row_fp8(const uint8_t *q, const float *lut, const float *x, uint64_t n)
{
    float acc[LANES] = {0};
    uint64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += lut[q[i + k]] * x[i + k];
    for (; i < n; i++) acc[i % LANES] += lut[q[i]] * x[i];
    return reduce_lanes(acc);
}

static int32_t row_i8i8(const int8_t *q, const int8_t *xq, uint64_t n)
{
    int32_t acc[LANES] = {0};
    uint64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += (int32_t)q[i + k] * (int32_t)xq[i + k];
    for (; i < n; i++) acc[i % LANES] += (int32_t)q[i] * (int32_t)xq[i];
    int32_t s = 0; /* exact: integer order does not matter */
    for (int k = 0; k < LANES; k++) s += acc[k];
    return s;
}

/* Rows made of whole blocks (cols % blocksize == 0): decode 16 weights at a time from the byte-pair table,
 * w = codebook * absmax in fp32, straight into the 16 lanes. */
static float row_nf4_blocks(const eco_qweight *q, uint64_t row, const float *x, const float (*pairs)[2])
{
    float acc[LANES] = {0}, wv[LANES];
    uint64_t bs = (uint64_t)q->blocksize, cols = q->cols, b0 = row * cols / bs;
    const uint8_t *d = (const uint8_t *)q->data + row * cols / 2;
    for (uint64_t b = 0; b < cols / bs; b++) {
        float a = eco_nf4_block_absmax(q, b0 + b);
        const uint8_t *db = d + b * bs / 2;
        const float *xb = x + b * bs;
        for (uint64_t i = 0; i < bs; i += LANES) {
            for (int k = 0; k < LANES / 2; k++) {
                const float *pr = pairs[db[i / 2 + (uint64_t)k]];
                wv[2 * k] = pr[0] * a;
                wv[2 * k + 1] = pr[1] * a;
            }
            for (int k = 0; k < LANES; k++) acc[k] += wv[k] * xb[i + (uint64_t)k];
        }
    }
    return reduce_lanes(acc);
}

static float row_nf4(const eco_qweight *q, uint64_t row, const float *x)
{
    float acc[LANES] = {0}, tile[TILE];
    uint64_t cols = q->cols, e0 = row * cols;
    for (uint64_t c = 0; c < cols; c += TILE) {
        uint64_t n = cols - c < TILE ? cols - c : TILE;
        eco_nf4_decode(q, e0 + c, n, tile);
        dot_acc(acc, tile, x + c, n, c);
    }
    return reduce_lanes(acc);
}

eco_err eco_qmatvec_rows(const eco_qweight *q, const float *x, float *y, uint64_t row_begin, uint64_t row_end)
{
    eco_err err = eco_qweight_check(q, "q");
    if (err) return err;
    if (!x) return eco_fail_field(ECO_EINVAL, "x", "eco_qmatvec: x is NULL");
    if (!y) return eco_fail_field(ECO_EINVAL, "y", "eco_qmatvec: y is NULL");
    if (row_begin > row_end || row_end > q->rows)
        return eco_fail_field(ECO_EINVAL, "rows", "eco_qmatvec: row range [%llu, %llu) is not within 0..%llu",
                              (unsigned long long)row_begin, (unsigned long long)row_end,
                              (unsigned long long)q->rows);
    uint64_t cols = q->cols;
    bool mixed = q->format == ECO_PREC_INT8_MIXED;
    /* x16: activations rounded to fp16; for int8-mixed also the int8 codes and the outlier column list */
    size_t bytes = cols * sizeof(float) + (mixed ? cols * (sizeof(int8_t) + sizeof(uint32_t)) : 0);
    float *xh = malloc(bytes);
    if (!xh) return eco_fail(ECO_ENOMEM, "eco_qmatvec: out of memory for %llu activations", (unsigned long long)cols);
    for (uint64_t c = 0; c < cols; c++) xh[c] = eco_q_h2f(eco_f32_to_f16(x[c]));

    switch (q->format) {
    case ECO_PREC_FP16:
        for (uint64_t r = row_begin; r < row_end; r++) y[r] = row_fp16((const uint16_t *)q->data + r * cols, xh, cols);
        break;
    case ECO_PREC_INT8:
        for (uint64_t r = row_begin; r < row_end; r++)
            y[r] = row_int8((const int8_t *)q->data + r * cols, xh, cols) * q->row_scale[r];
        break;
    case ECO_PREC_FP8: {
        float lut[256];
        for (int v = 0; v < 256; v++) lut[v] = eco_e4m3_to_f32((uint8_t)v);
        for (uint64_t r = row_begin; r < row_end; r++)
            y[r] = row_fp8((const uint8_t *)q->data + r * cols, lut, xh, cols) * q->row_scale[r];
        break;
    }
    case ECO_PREC_INT8_MIXED: {
        uint32_t *outl = (uint32_t *)(xh + cols);
        int8_t *xq = (int8_t *)(outl + cols);
        uint64_t n_out = 0;
        float thr = q->int8_threshold, sx = 0.0f;
        for (uint64_t c = 0; c < cols; c++) {
            if (!isfinite(xh[c])) {
                free(xh);
                return eco_fail_field(ECO_EINVAL, "x", "eco_qmatvec: x[%llu] = %g is not finite in fp16",
                                      (unsigned long long)c, (double)x[c]);
            }
            if (thr > 0.0f && fabsf(xh[c]) >= thr) outl[n_out++] = (uint32_t)c;
            else sx = fmaxf(sx, fabsf(xh[c]));
        }
        /* per-token absmax over the non-outlier columns; outlier columns hold 0 in the int8 vector */
        float inv = sx > 0.0f ? 127.0f / sx : 0.0f, sx127 = sx / 127.0f;
        /* outlier columns hold 0: never converted, since |x| * inv can pass 127 there (a float-to-int8 overflow) */
        for (uint64_t c = 0, k = 0; c < cols; c++) {
            bool outlier = k < n_out && outl[k] == c;
            k += outlier;
            xq[c] = outlier ? 0 : (int8_t)rintf(xh[c] * inv);
        }
        for (uint64_t r = row_begin; r < row_end; r++) {
            const int8_t *qr = (const int8_t *)q->data + r * cols;
            float rs = q->row_scale[r];
            float main_part = (float)row_i8i8(qr, xq, cols) * sx127 * rs;
            float outlier_part = 0.0f; /* fp16 dequantized weight column times fp16 activation, fp32 sum */
            for (uint64_t k = 0; k < n_out; k++)
                outlier_part += eco_q_h2f(eco_f32_to_f16((float)qr[outl[k]] * rs)) * xh[outl[k]];
            y[r] = main_part + outlier_part;
        }
        break;
    }
    default:
        if (q->cols % (uint64_t)q->blocksize == 0) {
            const float(*pairs)[2] = eco_nf4_pair_lut();
            for (uint64_t r = row_begin; r < row_end; r++) y[r] = row_nf4_blocks(q, r, xh, pairs);
        } else {
            for (uint64_t r = row_begin; r < row_end; r++) y[r] = row_nf4(q, r, xh);
        }
        break;
    }
    free(xh);
    return ECO_OK;
}

eco_err eco_qmatvec(const eco_qweight *q, const float *x, float *y)
{
    eco_err err = eco_qweight_check(q, "q");
    if (err) return err;
    return eco_qmatvec_rows(q, x, y, 0, q->rows);
}
