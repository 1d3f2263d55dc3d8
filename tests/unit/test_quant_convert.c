/* fp16 / bf16 / fp8-e4m3 scalar conversions: hand vectors, every code, every rounding tie. */
#include <string.h>

#include "eco/quant.h"
#include "eco_test.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void test_f16_vectors(void **state)
{
    (void)state;
    assert_int_equal(eco_f32_to_f16(0.0f), 0x0000);
    assert_int_equal(eco_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(eco_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(eco_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(eco_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(eco_f32_to_f16(65519.996f), 0x7bff); /* just below the midpoint to 65536 */
    assert_int_equal(eco_f32_to_f16(65520.0f), 0x7c00);   /* midpoint: ties to even = 65536 = overflow -> inf */
    assert_int_equal(eco_f32_to_f16(1e10f), 0x7c00);
    assert_int_equal(eco_f32_to_f16(-INFINITY), 0xfc00);
    uint16_t nan = eco_f32_to_f16(NAN);
    assert_int_equal(nan & 0x7c00, 0x7c00);
    assert_true((nan & 0x3ff) != 0);
    assert_int_equal(eco_f32_to_f16(0x1p-14f), 0x0400);           /* smallest normal */
    assert_int_equal(eco_f32_to_f16(0x1p-24f), 0x0001);           /* smallest subnormal */
    assert_int_equal(eco_f32_to_f16(1023 * 0x1p-24f), 0x03ff);    /* largest subnormal */
    assert_int_equal(eco_f32_to_f16(0x1p-25f), 0x0000);           /* tie between 0 and 2^-24 -> even (0) */
    assert_int_equal(eco_f32_to_f16(3 * 0x1p-25f), 0x0002);       /* tie between 1 and 2 ulps -> 2 */
    assert_int_equal(eco_f32_to_f16(0x1.002p0f), 0x3c00);         /* 1 + 2^-11: tie -> even mantissa 0 */
    assert_int_equal(eco_f32_to_f16(0x1.006p0f), 0x3c02);         /* 1 + 3*2^-11: tie -> 2 */
    assert_int_equal(eco_f32_to_f16(0x1.0021p0f), 0x3c01);        /* just above the tie */
    assert_int_equal(eco_f32_to_f16(1023.5f * 0x1p-24f), 0x0400); /* subnormal rounding up into the normals */
    assert_near(eco_f16_to_f32(0x3555), 0.333251953125, 0);
    assert_near(eco_f16_to_f32(0x0001), 5.9604644775390625e-08, 0);
    assert_true(isinf(eco_f16_to_f32(0x7c00)) && eco_f16_to_f32(0xfc00) < 0);
    assert_true(isnan(eco_f16_to_f32(0x7e00)));
}

static void test_f16_every_code_and_tie(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = eco_f16_to_f32((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            assert_true(isnan(f));
            assert_true(isnan(eco_f16_to_f32(eco_f32_to_f16(f))));
            continue;
        }
        assert_int_equal(eco_f32_to_f16(f), h);
    }
    /* Every midpoint between neighbouring positive finite values goes to the even code; one float ulp either
     * side goes to the nearer one. Signs are symmetric. */
    for (uint32_t h = 0; h < 0x7bff; h++) {
        float a = eco_f16_to_f32((uint16_t)h), b = eco_f16_to_f32((uint16_t)(h + 1));
        float mid = (a + b) / 2; /* exact in fp32 */
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        assert_int_equal(eco_f32_to_f16(mid), even);
        assert_int_equal(eco_f32_to_f16(-mid), even | 0x8000);
        assert_int_equal(eco_f32_to_f16(nextafterf(mid, 0.0f)), h);
        assert_int_equal(eco_f32_to_f16(nextafterf(mid, INFINITY)), h + 1);
    }
}

static void test_bf16(void **state)
{
    (void)state;
    assert_int_equal(eco_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(eco_f32_to_bf16(0x1.01p0f), 0x3f80);  /* 1 + 2^-8: tie -> even */
    assert_int_equal(eco_f32_to_bf16(0x1.03p0f), 0x3f82);  /* 1 + 3*2^-8: tie -> even (2) */
    assert_int_equal(eco_f32_to_bf16(0x1.0101p0f), 0x3f81);
    assert_int_equal(eco_f32_to_bf16(3.4028235e38f), 0x7f80); /* FLT_MAX rounds to inf */
    assert_int_equal(eco_f32_to_bf16(-INFINITY), 0xff80);
    assert_int_equal(eco_f32_to_bf16(0x1p-133f), 0x0001);    /* subnormal bf16 */
    uint16_t nan = eco_f32_to_bf16(NAN);
    assert_true((nan & 0x7f80) == 0x7f80 && (nan & 0x7f));
    assert_int_equal(bits(eco_bf16_to_f32(0xc049)), 0xc0490000u);
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = eco_bf16_to_f32((uint16_t)h);
        if (isnan(f)) continue;
        assert_int_equal(eco_f32_to_bf16(f), h);
    }
}

/* Value of an e4m3fn code from its definition, written as a table walk instead of the formula: positive codes
 * 0..7 step by 2^-9, then each binade [2^(e-7), 2^(e-6)) holds 8 values stepping by 2^(e-10). */
static double e4m3_expected(int code)
{
    double v = 0.0;
    for (int c = 1; c <= (code & 0x7f); c++) {
        int eprev = (c - 1) >> 3; /* the step up to code c is the spacing of the binade holding c - 1 */
        v += ldexp(1.0, (eprev == 0 ? 1 : eprev) - 10);
    }
    return (code & 0x80) ? -v : v;
}

static void test_e4m3_every_code(void **state)
{
    (void)state;
    assert_near(eco_e4m3_to_f32(0x01), 0.001953125, 0);
    assert_near(eco_e4m3_to_f32(0x07), 0.013671875, 0);
    assert_near(eco_e4m3_to_f32(0x08), 0.015625, 0);
    assert_near(eco_e4m3_to_f32(0x38), 1.0, 0);
    assert_near(eco_e4m3_to_f32(0x3f), 1.875, 0);
    assert_near(eco_e4m3_to_f32(0x40), 2.0, 0);
    assert_near(eco_e4m3_to_f32(0x77), 240.0, 0);
    assert_near(eco_e4m3_to_f32(0x78), 256.0, 0);
    assert_near(eco_e4m3_to_f32(0x7e), 448.0, 0);
    assert_near(eco_e4m3_to_f32(0xfe), -448.0, 0);
    assert_true(isnan(eco_e4m3_to_f32(0x7f)) && isnan(eco_e4m3_to_f32(0xff)));
    assert_true(signbit(eco_e4m3_to_f32(0x80)) && eco_e4m3_to_f32(0x80) == 0.0f);
    for (int v = 0; v < 256; v++) {
        if ((v & 0x7f) == 0x7f) continue;
        float f = eco_e4m3_to_f32((uint8_t)v);
        assert_near(f, e4m3_expected(v), 0);
        assert_int_equal(eco_f32_to_e4m3(f), v); /* encode(decode(v)) == v, -0 included */
    }
}

static void test_e4m3_rounding(void **state)
{
    (void)state;
    assert_int_equal(eco_f32_to_e4m3(449.0f), 0x7e); /* saturating, never NaN */
    assert_int_equal(eco_f32_to_e4m3(464.0f), 0x7e);
    assert_int_equal(eco_f32_to_e4m3(1e30f), 0x7e);
    assert_int_equal(eco_f32_to_e4m3(INFINITY), 0x7e);
    assert_int_equal(eco_f32_to_e4m3(-INFINITY), 0xfe);
    assert_int_equal(eco_f32_to_e4m3(NAN), 0x7f);
    assert_int_equal(eco_f32_to_e4m3(1.0625f), 0x38);          /* tie 1 | 1.125 -> even 0x38 */
    assert_int_equal(eco_f32_to_e4m3(1.1875f), 0x3a);          /* tie 1.125 | 1.25 -> even 0x3a */
    assert_int_equal(eco_f32_to_e4m3(0.5f * 0x1p-9f), 0x00);   /* tie 0 | smallest subnormal -> 0 */
    assert_int_equal(eco_f32_to_e4m3(1.5f * 0x1p-9f), 0x02);   /* subnormal tie -> even */
    assert_int_equal(eco_f32_to_e4m3(7.5f * 0x1p-9f), 0x08);   /* subnormal tie into the smallest normal */
    assert_int_equal(eco_f32_to_e4m3(0x1p-12f), 0x00);         /* underflow */
    assert_int_equal(eco_f32_to_e4m3(-0x1p-12f), 0x80);
    assert_int_equal(eco_f32_to_e4m3(-3.3f), 0xc5);            /* 3.25 (0x45) is nearest to 3.3 */
    /* every midpoint between neighbouring finite codes goes to the even code, one ulp off goes to the nearer */
    for (int v = 0; v < 0x7e; v++) {
        float a = eco_e4m3_to_f32((uint8_t)v), b = eco_e4m3_to_f32((uint8_t)(v + 1)), mid = (a + b) / 2;
        int even = (v & 1) ? v + 1 : v;
        assert_int_equal(eco_f32_to_e4m3(mid), even);
        assert_int_equal(eco_f32_to_e4m3(-mid), even | 0x80);
        assert_int_equal(eco_f32_to_e4m3(nextafterf(mid, 0.0f)), v);
        assert_int_equal(eco_f32_to_e4m3(nextafterf(mid, INFINITY)), v + 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_vectors),     cmocka_unit_test(test_f16_every_code_and_tie),
        cmocka_unit_test(test_bf16),            cmocka_unit_test(test_e4m3_every_code),
        cmocka_unit_test(test_e4m3_rounding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
