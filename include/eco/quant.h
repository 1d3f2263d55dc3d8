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
/* Storage cost of a [rows x cols] linear weight in this format, scales and codebooks included. */
uint64_t eco_precision_weight_bytes(eco_precision p, uint64_t rows, uint64_t cols);
/* Average bits per weight of a large matrix (for estimates when shapes are unknown). */
double eco_precision_bits_per_weight(eco_precision p);

#endif
