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

uint8_t eco_f32_to_e4m3(float f)
{
    if (isnan(f)) return 0x7f;
    uint8_t sign = signbit(f) ? 0x80 : 0x00;
    float a = fabsf(f);
    if (a >= 448.0f) return sign | 0x7e; /* satfinite: never NaN, infinities included */
    if (a < 0x1p-6f) /* subnormal step 2^-9; a result of 8 is the smallest normal, code 0x08 */
        return (uint8_t)(sign | (uint8_t)rintf(a * 0x1p9f));
    int e;
    (void)frexpf(a, &e);
    int exp2 = e - 1;                      /* a in [2^exp2, 2^(exp2+1)), exp2 in -6..8 */
    int m = (int)rintf(ldexpf(a, 3 - exp2)); /* 8..16; 16 carries into the exponent below */
    return (uint8_t)(sign | (uint8_t)(((exp2 + 7) << 3) + m - 8));
}

float eco_e4m3_to_f32(uint8_t v)
{
    if ((v & 0x7f) == 0x7f) return NAN;
    int e = (v >> 3) & 15, m = v & 7;
    float mag = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10); /* (1 + m/8) * 2^(e-7) */
    return (v & 0x80) ? -mag : mag;
}
