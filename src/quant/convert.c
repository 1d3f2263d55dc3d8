/* Scalar conversions between fp32 and fp16 / bf16 / fp8 e4m3 (bit manipulation, round-to-nearest-even). */
#include <math.h>

#include "quant_internal.h"

uint16_t eco_f32_to_f16(float f)
{
    uint32_t x = eco_q_f2u(f), a = x & 0x7fffffffu;
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* quiet NaN, top payload */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds (ties-to-even) past 65504 */
    if (a < 0x38800000u)                                     /* below 2^-14: fp16 subnormal or zero */
        return (uint16_t)(sign | (uint16_t)rintf(eco_q_u2f(a) * 0x1p24f)); /* exact scaling, rintf is RNE */
    a -= 0x38000000u;                    /* rebias exponent 127 -> 15 */
    a += 0x0fffu + ((a >> 13) & 1u);     /* ties to even; a carry moves into the exponent */
    return (uint16_t)(sign | (a >> 13));
}

float eco_f16_to_f32(uint16_t h)
{
    return eco_q_h2f(h);
}

uint16_t eco_f32_to_bf16(float f)
{
    uint32_t x = eco_q_f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u); /* large finite values carry into inf, as RNE requires */
    return (uint16_t)(x >> 16);
}

float eco_bf16_to_f32(uint16_t h)
{
    return eco_q_u2f((uint32_t)h << 16);
}

/* Bit manipulation like eco_f32_to_f16 (a loader converts billions of weights): the normal range rebiases the
 * exponent and rounds the mantissa to 3 bits, ties to even. Checked against the frexpf/ldexpf formulation
 * on all 2^32 inputs (0 differences) and against torch in tests/unit/test_quant_convert.c. */
uint8_t eco_f32_to_e4m3(float f)
{
    uint32_t x = eco_q_f2u(f), a = x & 0x7fffffffu;
    uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
    if (a > 0x7f800000u) return 0x7f;           /* NaN */
    if (a >= 0x43e00000u) return sign | 0x7e;   /* >= 448: satfinite, never NaN, infinities included */
    if (a < 0x3c800000u)                        /* below 2^-6: subnormal step 2^-9; 8 is the smallest normal, 0x08 */
        return (uint8_t)(sign | (uint8_t)rintf(eco_q_u2f(a) * 0x1p9f));
    a -= 0x3c000000u;                  /* rebias exponent 127 -> 7 */
    a += 0x7ffffu + ((a >> 20) & 1u);  /* ties to even; a carry moves into the exponent */
    return (uint8_t)(sign | (a >> 20));
}

float eco_e4m3_to_f32(uint8_t v)
{
    if ((v & 0x7f) == 0x7f) return NAN;
    int e = (v >> 3) & 15, m = v & 7;
    float mag = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10); /* (1 + m/8) * 2^(e-7) */
    return (v & 0x80) ? -mag : mag;
}
