/* Weight formats: names, storage cost, and (added by the engine work) CPU quantizers/dequantizers.
 * Pure C, no I/O. */
#ifndef ECO_QUANT_H
#define ECO_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eco/err.h"

typedef enum {
    ECO_PREC_FP16 = 0,
    ECO_PREC_INT8,       /* per-row absmax int8 weights, fp16 activations (W8A16) */
    ECO_PREC_INT8_MIXED, /* LLM.int8(): int8 x int8 with fp16 outlier columns (threshold 6.0) */
    ECO_PREC_NF4,        /* bitsandbytes NF4, blocksize 64, fp32 absmax */
    ECO_PREC_NF4_DQ,     /* NF4 with double-quantized absmax (blocks of 256, 8-bit dynamic map) */
    ECO_PREC_FP8,        /* fp8 e4m3, per-row scale, saturating */
    ECO_PREC_COUNT
} eco_precision;

/* Canonical lower-case name: "fp16", "int8", "int8-mixed", "nf4", "nf4-dq", "fp8". */
const char *eco_precision_name(eco_precision p);
/* Parses canonical names and common aliases, case-insensitive:
 * "llm.int8", "bnb-int8", "int8_default" -> int8-mixed; "int8-pure", "w8a16" -> int8; "nf4_dq", "nf4+dq" -> nf4-dq;
 * "fp8-e4m3", "e4m3" -> fp8; "float16", "half", "bf16"?: no (bf16 is a different baseline). */
eco_err eco_precision_parse(const char *name, eco_precision *out);
/* The same for a format compared against fp16 (an estimate's precision): ECO_ENOTFOUND, field "precision", naming
 * the quantized formats for an unknown name; ECO_EINVAL for fp16, the baseline every ΔE is measured against. */
eco_err eco_quantized_precision_parse(const char *name, eco_precision *out);
/* Storage cost of a [rows x cols] linear weight in this format, scales and codebooks included. */
uint64_t eco_precision_weight_bytes(eco_precision p, uint64_t rows, uint64_t cols);
/* Average bits per weight of a large matrix (for estimates when shapes are unknown). */
double eco_precision_bits_per_weight(eco_precision p);

/* ---- Quantized linear weights (CPU reference implementation; layouts and numerics in docs/FORMATS.md) ---- */

#define ECO_INT8_MIXED_THRESHOLD 6.0f /* LLM.int8()'s outlier threshold in the reference library */

typedef struct {
    float int8_threshold; /* LLM.int8 outlier threshold on |activation| (6.0 default; 0 = pure int8 x int8) */
    bool double_quant;    /* nf4: quantize the absmax values (blocks of 256, 8-bit dynamic map, mean offset) */
    int nf4_blocksize;    /* 64 (bitsandbytes default); allow 32..4096 powers of two */
} eco_quant_options;

/* threshold 6.0, no double quant, blocksize 64. */
void eco_quant_options_default(eco_quant_options *o);

typedef struct {              /* one [rows x cols] linear weight (HF layout: out x in, row-major) in a format */
    eco_precision format;
    uint64_t rows, cols;
    void *data;               /* fp16 (uint16), int8, packed nf4 nibbles or fp8 e4m3 bytes */
    float *row_scale;         /* int8 / int8-mixed / fp8: per-row scale (w ~= q * row_scale) */
    float *absmax;            /* nf4: per-block absmax (NULL when double-quantized) */
    uint8_t *absmax_q;        /* nf4-dq: 8-bit codes of (absmax - offset) */
    float *absmax_q_scale;    /* nf4-dq: per group of 256 blocks */
    float absmax_offset;      /* nf4-dq: mean subtracted before quantizing absmax */
    int blocksize;
    float int8_threshold;     /* int8-mixed */
} eco_qweight;

/* Quantize fp32 weights (the caller converts from bf16/fp16 checkpoint data). `o` may be NULL (defaults).
 * ECO_PREC_NF4 with o->double_quant, and ECO_PREC_NF4_DQ, both give a double-quantized weight (format NF4_DQ).
 * Non-finite weights are rejected. On success *out owns its buffers (eco_qweight_free). */
eco_err eco_quantize(eco_precision p, const float *w, uint64_t rows, uint64_t cols, const eco_quant_options *o,
                     eco_qweight *out);
/* eco_quantize over `threads` threads (at most 64; fewer for small weights): the same bytes whatever the count. */
eco_err eco_quantize_threads(eco_precision p, const float *w, uint64_t rows, uint64_t cols, const eco_quant_options *o,
                             int threads, eco_qweight *out);
eco_err eco_dequantize(const eco_qweight *q, float *w_out);                 /* whole matrix, fp32, rows*cols */
eco_err eco_dequantize_row(const eco_qweight *q, uint64_t row, float *out); /* one row, cols values */

/* y[rows] = W x[cols] with the reference numerics of the format. x is rounded to fp16 first (the reference stack
 * feeds fp16 activations); y is fp32 (no fp16 output rounding).
 *   fp16: fp16 weights * fp16 x, fp32 accumulate.
 *   int8 (W8A16): row_scale * sum(q * x16), fp32 accumulate.
 *   int8-mixed (LLM.int8): columns with |x16_j| >= threshold use fp16(q * row_scale) * x16 in fp32; the rest are
 *     quantized per token (absmax -> int8, round half even), int8 x int8 with int32 accumulation, then
 *     acc * (absmax_x / 127) * row_scale. threshold 0 = no outliers.
 *   nf4 / nf4-dq: codebook[nibble] * absmax (absmax decoded from the 8-bit code for nf4-dq) in fp32.
 *   fp8: row_scale * sum(e4m3(q) * x16). */
eco_err eco_qmatvec(const eco_qweight *q, const float *x, float *y);
/* The same for rows [row_begin, row_end) only: y is indexed by absolute row (y[row]), other entries untouched.
 * Calls on disjoint row ranges may run in parallel on one eco_qweight. */
eco_err eco_qmatvec_rows(const eco_qweight *q, const float *x, float *y, uint64_t row_begin, uint64_t row_end);
/* Frees the buffers and zeroes *q; NULL and zeroed structs are fine. */
void eco_qweight_free(eco_qweight *q);

/* Scalar conversions used by the engine and tests. */
#define ECO_F16_MAX 65504.0f /* the largest finite fp16 */
uint16_t eco_f32_to_f16(float f); /* round-to-nearest-even, subnormals, overflow -> inf, NaN stays NaN */
float eco_f16_to_f32(uint16_t h);
uint16_t eco_f32_to_bf16(float f); /* round-to-nearest-even, NaN stays NaN (quiet) */
float eco_bf16_to_f32(uint16_t h);
uint8_t eco_f32_to_e4m3(float f); /* OCP e4m3fn, RNE, saturating to +-448 (inf too), NaN -> 0x7f */
float eco_e4m3_to_f32(uint8_t v);  /* 0x7f / 0xff -> NaN */

/* Reference tables (exact float32 values). */
extern const float eco_nf4_codebook[16];
/* bitsandbytes' signed 8-bit dynamic map (create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8)),
 * sorted ascending, 256 entries; built once, thread-safe. */
const float *eco_dynamic_map8(void);
/* Nearest code of x (in [-1, 1] after scaling) as bitsandbytes picks it: strict '>' against midpoint thresholds
 * (a value on a midpoint takes the lower code; NaN -> code 0). */
uint8_t eco_nf4_quantize_value(float x);
/* bitsandbytes' dQuantize (binary search over the map, then a midpoint test against the neighbour). */
uint8_t eco_dynamic_quantize_value(const float *map256, float x);

#endif
