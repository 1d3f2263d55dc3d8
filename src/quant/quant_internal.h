/* Internal helpers shared by the quant sources (not part of the public API). */
#ifndef ECO_QUANT_INTERNAL_H
#define ECO_QUANT_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "eco/quant.h"

/* Largest K for which an int8 x int8 dot product cannot overflow int32: K * 127 * 127 <= INT32_MAX. */
#define ECO_INT8_MAX_COLS 133144u
/* Upper bound on the elements of one weight (2^40): keeps every byte count far from overflow. */
#define ECO_QUANT_MAX_ELEMS (UINT64_C(1) << 40)
#define ECO_DQ_GROUP 256u /* absmax values per double-quant block, as bitsandbytes (nested blocksize 256) */

static inline uint32_t eco_q_f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float eco_q_u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* fp16 bits -> fp32, exact (inline so the matvec loops can vectorise it). The fp16 exponent/mantissa bits
 * shifted into a float are the value * 2^-112 (subnormals included, as float denormals); one exact multiply
 * restores it. Inf/NaN get the all-ones exponent. */
static inline float eco_q_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu;
    uint32_t r = eco_q_f2u(eco_q_u2f(em << 13) * 0x1p112f);
    r |= (uint32_t)-(int32_t)(em >= 0x7c00u) & 0x7f800000u; /* branch-free so loops vectorise */
    return eco_q_u2f(sign | r);
}

/* Absmax of NF4 block b, decoded from the 8-bit code for nf4-dq: map[code] * scale, then + offset, as two
 * separately rounded fp32 operations (bitsandbytes dequantizes, then torch adds the offset). */
float eco_nf4_block_absmax(const eco_qweight *q, uint64_t block);
/* Dequantizes `count` consecutive elements of a nf4 / nf4-dq weight starting at flat index e0. */
void eco_nf4_decode(const eco_qweight *q, uint64_t e0, uint64_t count, float *out);
/* Codebook pairs by packed byte: [b][0] = value of the high nibble (first element), [b][1] = the low one. */
const float (*eco_nf4_pair_lut(void))[2];
/* Validates the structure of a quantized weight before reading it; names `what` in the message. */
eco_err eco_qweight_check(const eco_qweight *q, const char *what);

#endif
