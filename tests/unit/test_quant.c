/* Weight formats: NF4 codebook, packing and ties; double quant; int8 / fp8 rounding; error bounds on Gaussian
 * matrices; qmatvec against naive references (LLM.int8 decomposition written out independently here). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eco/quant.h"
#include "eco/err.h"
#include "eco_test.h"

/* The dynamic map as torch 2.11 computes bitsandbytes' create_dynamic_map() (float32 bits, sorted). */
static const uint32_t torch_dynamic_map[256] = {
0xbf7e3333, 0xbf7a999a, 0xbf770000, 0xbf736666, 0xbf6fcccd, 0xbf6c3333, 0xbf68999a, 0xbf650000,
0xbf616666, 0xbf5dcccd, 0xbf5a3333, 0xbf56999a, 0xbf530000, 0xbf4f6666, 0xbf4bcccd, 0xbf483333,
0xbf44999a, 0xbf410000, 0xbf3d6666, 0xbf39cccd, 0xbf363334, 0xbf32999a, 0xbf2f0000, 0xbf2b6666,
0xbf27cccd, 0xbf243334, 0xbf20999a, 0xbf1d0000, 0xbf196666, 0xbf15cccd, 0xbf123334, 0xbf0e999a,
0xbf0b0000, 0xbf076666, 0xbf03cccc, 0xbf003333, 0xbef93332, 0xbef20000, 0xbeeacccc, 0xbee3999a,
0xbedc6666, 0xbed53333, 0xbece0000, 0xbec6cccc, 0xbebf999a, 0xbeb86666, 0xbeb13333, 0xbeaa0000,
0xbea2cccc, 0xbe9b999a, 0xbe946666, 0xbe8d3334, 0xbe860000, 0xbe7d9999, 0xbe6f3333, 0xbe60cccd,
0xbe526666, 0xbe440000, 0xbe35999a, 0xbe273333, 0xbe18cccd, 0xbe0a6666, 0xbdf80000, 0xbddb3334,
0xbdc9eb85, 0xbdc428f7, 0xbdbe6667, 0xbdb8a3d7, 0xbdb2e148, 0xbdad1eb8, 0xbda75c2a, 0xbda1999a,
0xbd9bd70a, 0xbd96147b, 0xbd9051eb, 0xbd8a8f5d, 0xbd84cccd, 0xbd7e147b, 0xbd728f5d, 0xbd670a3d,
0xbd5b851f, 0xbd500000, 0xbd447ae1, 0xbd38f5c3, 0xbd2d70a3, 0xbd21eb85, 0xbd166667, 0xbd0ae148,
0xbcfeb852, 0xbce7ae15, 0xbcd0a3d7, 0xbcb9999a, 0xbca28f5d, 0xbc8b851f, 0xbc68f5c3, 0xbc3ae148,
0xbc1f3b64, 0xbc160418, 0xbc0ccccd, 0xbc039581, 0xbbf4bc6a, 0xbbe24dd3, 0xbbcfdf3b, 0xbbbd70a4,
0xbbab020d, 0xbb989374, 0xbb8624dd, 0xbb676c8a, 0xbb428f5c, 0xbb1db22d, 0xbaf1a9fc, 0xbaa7ef9d,
0xba7765ff, 0xba59e83e, 0xba3c6a80, 0xba1eecc1, 0xba016f01, 0xb9c7e283, 0xb98ce705, 0xb923d70b,
0xb8ba1f4b, 0xb88aefb3, 0xb8378034, 0xb7b24206, 0xb70205ff, 0xb65a1a94, 0xb513a3b7, 0x00000000,
0x3513a3b7, 0x365a1a94, 0x370205ff, 0x37b24206, 0x38378034, 0x388aefb3, 0x38ba1f4b, 0x3923d70b,
0x398ce705, 0x39c7e283, 0x3a016f01, 0x3a1eecc1, 0x3a3c6a80, 0x3a59e83e, 0x3a7765ff, 0x3aa7ef9d,
0x3af1a9fc, 0x3b1db22d, 0x3b428f5c, 0x3b676c8a, 0x3b8624dd, 0x3b989374, 0x3bab020d, 0x3bbd70a4,
0x3bcfdf3b, 0x3be24dd3, 0x3bf4bc6a, 0x3c039581, 0x3c0ccccd, 0x3c160418, 0x3c1f3b64, 0x3c3ae148,
0x3c68f5c3, 0x3c8b851f, 0x3ca28f5d, 0x3cb9999a, 0x3cd0a3d7, 0x3ce7ae15, 0x3cfeb852, 0x3d0ae148,
0x3d166667, 0x3d21eb85, 0x3d2d70a3, 0x3d38f5c3, 0x3d447ae1, 0x3d500000, 0x3d5b851f, 0x3d670a3d,
0x3d728f5d, 0x3d7e147b, 0x3d84cccd, 0x3d8a8f5d, 0x3d9051eb, 0x3d96147b, 0x3d9bd70a, 0x3da1999a,
0x3da75c2a, 0x3dad1eb8, 0x3db2e148, 0x3db8a3d7, 0x3dbe6667, 0x3dc428f7, 0x3dc9eb85, 0x3ddb3334,
0x3df80000, 0x3e0a6666, 0x3e18cccd, 0x3e273333, 0x3e35999a, 0x3e440000, 0x3e526666, 0x3e60cccd,
0x3e6f3333, 0x3e7d9999, 0x3e860000, 0x3e8d3334, 0x3e946666, 0x3e9b999a, 0x3ea2cccc, 0x3eaa0000,
0x3eb13333, 0x3eb86666, 0x3ebf999a, 0x3ec6cccc, 0x3ece0000, 0x3ed53333, 0x3edc6666, 0x3ee3999a,
0x3eeacccc, 0x3ef20000, 0x3ef93332, 0x3f003333, 0x3f03cccc, 0x3f076666, 0x3f0b0000, 0x3f0e999a,
0x3f123334, 0x3f15cccd, 0x3f196666, 0x3f1d0000, 0x3f20999a, 0x3f243334, 0x3f27cccd, 0x3f2b6666,
0x3f2f0000, 0x3f32999a, 0x3f363334, 0x3f39cccd, 0x3f3d6666, 0x3f410000, 0x3f44999a, 0x3f483333,
0x3f4bcccd, 0x3f4f6666, 0x3f530000, 0x3f56999a, 0x3f5a3333, 0x3f5dcccd, 0x3f616666, 0x3f650000,
0x3f68999a, 0x3f6c3333, 0x3f6fcccd, 0x3f736666, 0x3f770000, 0x3f7a999a, 0x3f7e3333, 0x3f800000,
};

/* The NF4 table in double (the float32 values' exact reprs), from the research notes §1.1. */
static const double nf4_ref[16] = {
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) /* splitmix64 -> [0, 1) */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}
static float gauss(void)
{
    double u = urand(), v = urand();
    return (float)(sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v));
}
static float *gauss_matrix(uint64_t n, float sd)
{
    float *w = malloc(n * sizeof *w);
    assert_non_null(w);
    for (uint64_t i = 0; i < n; i++) w[i] = gauss() * sd;
    return w;
}
static float h16(float x) { return eco_f16_to_f32(eco_f32_to_f16(x)); }

static void test_nf4_codebook(void **state)
{
    (void)state;
    for (int i = 0; i < 16; i++) assert_true(eco_nf4_codebook[i] == (float)nf4_ref[i]);
    assert_true(eco_nf4_codebook[7] == 0.0f && eco_nf4_codebook[0] == -1.0f && eco_nf4_codebook[15] == 1.0f);
    for (int i = 0; i < 16; i++) assert_int_equal(eco_nf4_quantize_value(eco_nf4_codebook[i]), i);
}

static void test_nf4_ties(void **state)
{
    (void)state;
    /* the two thresholds quoted in the notes (bitsandbytes' float literals): on the midpoint -> lower code */
    assert_int_equal(eco_nf4_quantize_value(0.03979014977812767f), 7);
    assert_int_equal(eco_nf4_quantize_value(nextafterf(0.03979014977812767f, 1.0f)), 8);
    assert_int_equal(eco_nf4_quantize_value(0.8614784181118011f), 14);
    assert_int_equal(eco_nf4_quantize_value(nextafterf(0.8614784181118011f, 2.0f)), 15);
    /* bitsandbytes' literals: decimal reprs of the double midpoints, rounded decimal -> float by the compiler */
    static const float lit[15] = {
        -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f, -0.33967943489551544f,
        -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f,
        0.1202552504837513f, 0.2035212516784668f, 0.2920137718319893f, 0.3893125355243683f,
        0.5016634166240692f, 0.6427869200706482f, 0.8614784181118011f};
    /* (0.7229568362236023 + 1) / 2 is exactly halfway between two floats; the literal lies below it */
    assert_true((double)lit[14] < (nf4_ref[14] + 1.0) / 2.0);
    assert_true(lit[14] == nextafterf((float)((nf4_ref[14] + 1.0) / 2.0), 0.0f));
    for (int k = 0; k < 15; k++) {
        float t = lit[k];
        assert_true(fabs(t - (nf4_ref[k] + nf4_ref[k + 1]) / 2.0) <= 6e-8);
        assert_int_equal(eco_nf4_quantize_value(t), k);
        assert_int_equal(eco_nf4_quantize_value(nextafterf(t, 2.0f)), k + 1);
        assert_int_equal(eco_nf4_quantize_value(nextafterf(t, -2.0f)), k);
    }
    assert_int_equal(eco_nf4_quantize_value(NAN), 0);
    assert_int_equal(eco_nf4_quantize_value(-5.0f), 0);
    assert_int_equal(eco_nf4_quantize_value(5.0f), 15);
    /* away from ties the code is the nearest codebook entry */
    for (int i = 0; i < 20000; i++) {
        float x = (float)(urand() * 2.2 - 1.1);
        int best = 0;
        for (int c = 1; c < 16; c++)
            if (fabs(x - nf4_ref[c]) < fabs(x - nf4_ref[best])) best = c;
        assert_int_equal(eco_nf4_quantize_value(x), best);
    }
}

static void test_nf4_packing(void **state)
{
    (void)state;
    /* one 64-element block: element i = 2 * codebook[i % 16]; absmax 2, codes i % 16, first element high */
    float w[64], back[64];
    for (int i = 0; i < 64; i++) w[i] = 2.0f * eco_nf4_codebook[i % 16];
    eco_qweight q;
    assert_int_equal(eco_quantize(ECO_PREC_NF4, w, 1, 64, NULL, &q), ECO_OK);
    assert_int_equal(q.format, ECO_PREC_NF4);
    assert_int_equal(q.blocksize, 64);
    assert_true(q.absmax[0] == 2.0f);
    static const uint8_t expect[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
    for (int j = 0; j < 32; j++) assert_int_equal(((uint8_t *)q.data)[j], expect[j % 8]);
    assert_int_equal(eco_dequantize(&q, back), ECO_OK);
    for (int i = 0; i < 64; i++) assert_true(back[i] == w[i]);
    eco_qweight_free(&q);

    /* hand example: absmax 1; 0.5 -> 12 (0.4407, midpoint 12|13 is 0.5017); 0.0398 (midpoint 7|8) -> 7;
     * -0.7 -> 1; 0.1 -> 8 */
    float v[64] = {0};
    v[0] = 1.0f; v[1] = 0.5f; v[2] = 0.03979014977812767f; v[3] = -0.7f; v[4] = 0.1f; v[5] = -1.0f;
    assert_int_equal(eco_quantize(ECO_PREC_NF4, v, 2, 32, NULL, &q), ECO_OK); /* the block spans two rows */
    const uint8_t *d = q.data;
    assert_int_equal(d[0], 0xfc);
    assert_int_equal(d[1], 0x71);
    assert_int_equal(d[2], 0x80);
    assert_int_equal(d[3], 0x77); /* zeros take the 0.0 code 7 */
    float row1[32];
    assert_int_equal(eco_dequantize_row(&q, 1, row1), ECO_OK);
    for (int i = 0; i < 32; i++) assert_true(row1[i] == 0.0f);
    eco_qweight_free(&q);

    /* odd element count: 3 x 3, blocksize 32; the last byte's low nibble is padding (code 7) */
    float o[9] = {1, 2, 3, 4, 5, 6, 7, 8, -9};
    eco_quant_options opt;
    eco_quant_options_default(&opt);
    opt.nf4_blocksize = 32;
    assert_int_equal(eco_quantize(ECO_PREC_NF4, o, 3, 3, &opt, &q), ECO_OK);
    assert_true(q.absmax[0] == 9.0f);
    assert_int_equal(((uint8_t *)q.data)[4], 0x07); /* -9 / 9 = -1 -> code 0, then pad 7 */
    float b9[9];
    assert_int_equal(eco_dequantize(&q, b9), ECO_OK);
    assert_true(b9[8] == -9.0f);
    eco_qweight_free(&q);

    /* an all-zero block: absmax 0, codes 0 (0 * inf = NaN), dequantizes to zeros */
    float z[64] = {0};
    assert_int_equal(eco_quantize(ECO_PREC_NF4, z, 1, 64, NULL, &q), ECO_OK);
    assert_true(q.absmax[0] == 0.0f);
    assert_int_equal(((uint8_t *)q.data)[0], 0x00);
    assert_int_equal(eco_dequantize(&q, back), ECO_OK);
    for (int i = 0; i < 64; i++) assert_true(back[i] == 0.0f);
    eco_qweight_free(&q);
}

static void test_dynamic_map(void **state)
{
    (void)state;
    const float *m = eco_dynamic_map8();
    for (int i = 0; i < 256; i++) {
        uint32_t u;
        memcpy(&u, &m[i], 4);
        if (u != torch_dynamic_map[i]) fail_msg("map[%d] = %08x, torch %08x", i, u, torch_dynamic_map[i]);
    }
    assert_true(m[255] == 1.0f && m[254] == 0.99296875f && m[127] == 0.0f);
    for (int i = 1; i < 256; i++) assert_true(m[i - 1] < m[i]);
    assert_true(m[0] > -1.0f);
    for (int i = 0; i < 256; i++) assert_int_equal(eco_dynamic_quantize_value(m, m[i]), i);
    /* ties next to zero go to the final pivot of the search: away from zero on both sides */
    assert_int_equal(eco_dynamic_quantize_value(m, m[128] / 2), 128);
    assert_int_equal(eco_dynamic_quantize_value(m, nextafterf(m[128] / 2, 0.0f)), 127);
    assert_int_equal(eco_dynamic_quantize_value(m, m[126] / 2), 126);
    assert_int_equal(eco_dynamic_quantize_value(m, 1.5f), 255);
    assert_int_equal(eco_dynamic_quantize_value(m, -1.5f), 0);
    for (int i = 0; i < 20000; i++) {
        float x = (float)(urand() * 2.0 - 1.0) * (float)pow(10.0, -6.0 * urand());
        int c = eco_dynamic_quantize_value(m, x);
        for (int j = 0; j < 256; j++)
            if (fabsf(x - m[j]) < fabsf(x - m[c])) fail_msg("x=%a -> %d, but %d is nearer", x, c, j);
    }
}

static void test_double_quant(void **state)
{
    (void)state;
    /* hand example: 4 blocks of 64 with absmax 1, 2, 3, 6: offset 3, deviations -2, -1, 0, 3, group absmax 3.
     * -2/3 -> nearest map value -0.66953125 (= -(0.1 + 0.9*40.5/64)), decoded -0.66953125*3 + 3 = 0.99140625 */
    float w[256] = {0};
    w[0] = 1.0f; w[64] = 2.0f; w[128] = 3.0f; w[192] = -6.0f;
    eco_quant_options o;
    eco_quant_options_default(&o);
    o.double_quant = true;
    eco_qweight q;
    assert_int_equal(eco_quantize(ECO_PREC_NF4, w, 2, 128, &o, &q), ECO_OK);
    assert_int_equal(q.format, ECO_PREC_NF4_DQ);
    assert_null(q.absmax);
    assert_true(q.absmax_offset == 3.0f);
    assert_true(q.absmax_q_scale[0] == 3.0f);
    const float *m = eco_dynamic_map8();
    assert_int_equal(q.absmax_q[2], 127);
    assert_int_equal(q.absmax_q[3], 255);
    assert_near(m[q.absmax_q[0]], -0.66953125, 1e-7);
    float back[256];
    assert_int_equal(eco_dequantize(&q, back), ECO_OK);
    assert_near(back[0], 0.99140625, 1e-6); /* the code of 1/absmax = 1 is 15 -> 1.0 * decoded absmax */
    assert_true(back[128] == 3.0f && back[192] == -6.0f);
    eco_qweight_free(&q);

    /* round trip on a Gaussian matrix: 2048 blocks, 8 groups. Decoded absmax within half the widest gap of
     * the map below 1 (0.9/64/2 = 0.00703125) times the group's absmax deviation. */
    uint64_t rows = 256, cols = 512, n = rows * cols;
    float *g = gauss_matrix(n, 0.02f), *deq = malloc(n * sizeof(float)), *deq4 = malloc(n * sizeof(float));
    eco_qweight q4, qd;
    assert_int_equal(eco_quantize(ECO_PREC_NF4, g, rows, cols, NULL, &q4), ECO_OK);
    assert_int_equal(eco_quantize(ECO_PREC_NF4_DQ, g, rows, cols, NULL, &qd), ECO_OK);
    assert_memory_equal(q4.data, qd.data, n / 2); /* the nibbles do not depend on double quant */
    double worst = 0;
    for (uint64_t b = 0; b < n / 64; b++) {
        float dec = m[qd.absmax_q[b]] * qd.absmax_q_scale[b / 256] + qd.absmax_offset;
        double err = fabs(dec - q4.absmax[b]) / qd.absmax_q_scale[b / 256];
        if (err > worst) worst = err;
    }
    assert_true(worst <= 0.00703125 + 1e-6);
    assert_true(worst > 0.0005); /* it is lossy */
    assert_int_equal(eco_dequantize(&q4, deq4), ECO_OK);
    assert_int_equal(eco_dequantize(&qd, deq), ECO_OK);
    double num = 0, den = 0;
    for (uint64_t i = 0; i < n; i++) {
        num += (deq[i] - deq4[i]) * (deq[i] - deq4[i]);
        den += (double)deq4[i] * deq4[i];
    }
    assert_true(sqrt(num / den) < 0.01); /* double quant adds < 1% relative RMS on top of nf4 */
    eco_qweight_free(&q4);
    eco_qweight_free(&qd);
    free(g);
    free(deq);
    free(deq4);
}

static void test_int8_fp8_rounding(void **state)
{
    (void)state;
    /* absmax 127 -> multiplier 1: round half to even */
    float w[8] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, -3.5f, 126.49f};
    eco_qweight q;
    assert_int_equal(eco_quantize(ECO_PREC_INT8, w, 1, 8, NULL, &q), ECO_OK);
    static const int8_t e[8] = {127, 0, 2, 2, 0, -2, -4, 126};
    assert_memory_equal(q.data, e, 8);
    assert_true(q.row_scale[0] == 1.0f);
    eco_qweight_free(&q);
    /* second row: absmax 254 -> multiplier 0.5, scale 2 */
    float w2[4] = {1, 3, -254, 0, };
    assert_int_equal(eco_quantize(ECO_PREC_INT8, w2, 2, 2, NULL, &q), ECO_OK);
    assert_true(q.row_scale[0] == 3.0f / 127.0f && q.row_scale[1] == 2.0f);
    assert_int_equal(((int8_t *)q.data)[2], -127);
    eco_qweight_free(&q);
    /* fp8: absmax 448 -> scale 1, e4m3 ties to even; an all-zero row gets scale 0 */
    float f[8] = {448.0f, 1.0625f, 1.1875f, -3.3f, 0, 0, 0, 0};
    assert_int_equal(eco_quantize(ECO_PREC_FP8, f, 2, 4, NULL, &q), ECO_OK);
    static const uint8_t fe[8] = {0x7e, 0x38, 0x3a, 0xc5, 0, 0, 0, 0};
    assert_memory_equal(q.data, fe, 8);
    assert_true(q.row_scale[0] == 1.0f && q.row_scale[1] == 0.0f);
    eco_qweight_free(&q);
}

static double rel_rms(const float *a, const float *b, uint64_t n)
{
    double num = 0, den = 0;
    for (uint64_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)a[i] * a[i];
    }
    return sqrt(num / den);
}

static void test_error_bounds(void **state)
{
    (void)state;
    uint64_t rows = 128, cols = 1024, n = rows * cols;
    float *w = gauss_matrix(n, 0.02f), *d = malloc(n * sizeof(float));
    /* measured on this matrix: fp16 2.1e-4, int8 0.0078, fp8 0.0265, nf4 0.0919, nf4-dq 0.0920 */
    static const struct { eco_precision p; double lo, hi; } cases[] = {
        {ECO_PREC_FP16, 1e-5, 4e-4}, {ECO_PREC_INT8, 0.005, 0.013},  {ECO_PREC_INT8_MIXED, 0.005, 0.013},
        {ECO_PREC_FP8, 0.015, 0.03}, {ECO_PREC_NF4, 0.07, 0.11},     {ECO_PREC_NF4_DQ, 0.07, 0.11},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        eco_qweight q;
        assert_int_equal(eco_quantize(cases[i].p, w, rows, cols, NULL, &q), ECO_OK);
        assert_int_equal(eco_dequantize(&q, d), ECO_OK);
        double e = rel_rms(w, d, n);
        printf("# %-10s relative RMS error %.5f\n", eco_precision_name(cases[i].p), e);
        if (!(e >= cases[i].lo && e <= cases[i].hi))
            fail_msg("%s: relative RMS error %g outside [%g, %g]", eco_precision_name(cases[i].p), e, cases[i].lo,
                     cases[i].hi);
        float row[1024];
        assert_int_equal(eco_dequantize_row(&q, 77, row), ECO_OK);
        assert_memory_equal(row, d + 77 * cols, sizeof row);
        eco_qweight_free(&q);
    }
    free(w);
    free(d);
}

/* y = dequant(W) * fp16(x) in double */
static void naive_matvec(const eco_qweight *q, const float *x, double *y)
{
    float *d = malloc(q->rows * q->cols * sizeof(float));
    assert_int_equal(eco_dequantize(q, d), ECO_OK);
    for (uint64_t r = 0; r < q->rows; r++) {
        double s = 0;
        for (uint64_t c = 0; c < q->cols; c++) s += (double)d[r * q->cols + c] * h16(x[c]);
        y[r] = s;
    }
    free(d);
}

static void test_qmatvec_vs_naive(void **state)
{
    (void)state;
    static const struct { uint64_t rows, cols; int bs; } shapes[] = {{64, 512, 64}, {33, 100, 32}, {7, 1000, 128}};
    for (size_t s = 0; s < 3; s++) {
        uint64_t rows = shapes[s].rows, cols = shapes[s].cols;
        float *w = gauss_matrix(rows * cols, 0.05f), *x = gauss_matrix(cols, 1.0f), *y = malloc(rows * 4);
        double *yr = malloc(rows * sizeof(double));
        double scale = 0; /* sum |w||x| bounds the rounding error of any summation order */
        for (uint64_t i = 0; i < rows * cols; i++) scale += fabs(w[i]) * fabs(x[i % cols]);
        scale /= (double)rows;
        for (int p = 0; p < ECO_PREC_COUNT; p++) {
            if (p == ECO_PREC_INT8_MIXED) continue; /* its own test below */
            eco_quant_options o;
            eco_quant_options_default(&o);
            o.nf4_blocksize = shapes[s].bs;
            eco_qweight q;
            assert_int_equal(eco_quantize((eco_precision)p, w, rows, cols, &o, &q), ECO_OK);
            assert_int_equal(eco_qmatvec(&q, x, y), ECO_OK);
            naive_matvec(&q, x, yr);
            for (uint64_t r = 0; r < rows; r++)
                if (fabs(y[r] - yr[r]) > 2e-6 * scale)
                    fail_msg("%s %llux%llu row %llu: %g vs naive %g", eco_precision_name((eco_precision)p),
                             (unsigned long long)rows, (unsigned long long)cols, (unsigned long long)r, y[r], yr[r]);
            /* the row-range variant writes only its rows and gives the same numbers */
            for (uint64_t r = 0; r < rows; r++) y[r] = -12345.0f;
            assert_int_equal(eco_qmatvec_rows(&q, x, y, 2, rows - 1), ECO_OK);
            for (uint64_t r = 0; r < rows; r++) {
                if (r < 2 || r == rows - 1) assert_true(y[r] == -12345.0f);
                else assert_true(fabs(y[r] - yr[r]) <= 2e-6 * scale);
            }
            eco_qweight_free(&q);
        }
        free(w);
        free(x);
        free(y);
        free(yr);
    }
}

/* LLM.int8() written out directly from the description (research notes §2), for one matvec. */
static void naive_llm_int8(const eco_qweight *q, const float *x, float thr, double *y)
{
    uint64_t K = q->cols;
    const int8_t *cb = q->data;
    float *a = malloc(K * sizeof(float));
    int *is_out = calloc(K, sizeof(int));
    int8_t *ca = malloc(K);
    float absmax = 0;
    for (uint64_t k = 0; k < K; k++) {
        a[k] = h16(x[k]);
        if (thr > 0 && fabsf(a[k]) >= thr) is_out[k] = 1;
        else if (fabsf(a[k]) > absmax) absmax = fabsf(a[k]);
    }
    for (uint64_t k = 0; k < K; k++) ca[k] = is_out[k] ? 0 : (int8_t)nearbyint((double)a[k] * 127.0 / absmax);
    for (uint64_t r = 0; r < q->rows; r++) {
        long long acc = 0;
        double outl = 0;
        for (uint64_t k = 0; k < K; k++) {
            acc += (long long)cb[r * K + k] * ca[k];
            if (is_out[k]) outl += (double)h16((float)cb[r * K + k] * q->row_scale[r]) * a[k];
        }
        y[r] = (double)acc * (absmax / 127.0) * q->row_scale[r] + outl;
    }
    free(a);
    free(is_out);
    free(ca);
}

static void test_int8_mixed(void **state)
{
    (void)state;
    uint64_t rows = 48, cols = 768;
    float *w = gauss_matrix(rows * cols, 0.05f), *x = gauss_matrix(cols, 1.0f);
    x[5] = 20.0f; x[100] = -8.5f; x[700] = 6.0f; /* outliers; 6.0 is exactly on the threshold (>=) */
    float y6[48], y0[48], yb[48];
    double r6[48], r0[48], exact[48];
    eco_quant_options o;
    eco_quant_options_default(&o);
    eco_qweight q6, q0;
    assert_int_equal(eco_quantize(ECO_PREC_INT8_MIXED, w, rows, cols, &o, &q6), ECO_OK);
    assert_true(q6.int8_threshold == 6.0f);
    o.int8_threshold = 0.0f;
    assert_int_equal(eco_quantize(ECO_PREC_INT8_MIXED, w, rows, cols, &o, &q0), ECO_OK);
    assert_memory_equal(q6.data, q0.data, rows * cols); /* same weights: only the activation path differs */
    assert_int_equal(eco_qmatvec(&q6, x, y6), ECO_OK);
    assert_int_equal(eco_qmatvec(&q0, x, y0), ECO_OK);
    naive_llm_int8(&q6, x, 6.0f, r6);
    naive_llm_int8(&q0, x, 0.0f, r0);
    naive_matvec(&q6, x, exact); /* dequantized int8 weights, fp16 activations, no activation quantization */
    double e6 = 0, e0 = 0, diff = 0;
    for (uint64_t r = 0; r < rows; r++) {
        assert_near(y6[r], r6[r], 1e-5 * (1 + fabs(r6[r])));
        assert_near(y0[r], r0[r], 1e-5 * (1 + fabs(r0[r])));
        e6 += (y6[r] - exact[r]) * (y6[r] - exact[r]);
        e0 += (y0[r] - exact[r]) * (y0[r] - exact[r]);
        diff += fabs(y6[r] - y0[r]);
    }
    printf("# int8-mixed RMS error vs W8A16: threshold 6: %.3g, threshold 0: %.3g\n", sqrt(e6 / rows),
           sqrt(e0 / rows));
    assert_true(diff > 0.01);     /* outliers present: the two paths differ */
    assert_true(e6 * 4 < e0);     /* and keeping outliers in fp16 is much more accurate */
    /* without outliers threshold 6 and 0 are the same computation */
    x[5] = 1.0f; x[100] = -1.0f; x[700] = 5.99f;
    assert_int_equal(eco_qmatvec(&q6, x, y6), ECO_OK);
    assert_int_equal(eco_qmatvec(&q0, x, y0), ECO_OK);
    assert_memory_equal(y6, y0, sizeof y6);
    assert_int_equal(eco_qmatvec_rows(&q6, x, yb, 0, rows), ECO_OK);
    assert_memory_equal(y6, yb, sizeof y6);
    /* a non-finite activation is rejected, naming x */
    x[3] = 1e6f; /* inf in fp16 */
    assert_int_equal(eco_qmatvec(&q6, x, y6), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "x");
    eco_qweight_free(&q6);
    eco_qweight_free(&q0);
    free(w);
    free(x);
}

static void expect_err(eco_err got, eco_err want, const char *field, const char *needle)
{
    assert_int_equal(got, want);
    assert_string_equal(eco_last_error_field(), field);
    if (!strstr(eco_last_error(), needle)) fail_msg("message '%s' lacks '%s'", eco_last_error(), needle);
}

static void test_bad_input(void **state)
{
    (void)state;
    float w[128] = {0};
    eco_qweight q;
    eco_quant_options o;
    eco_quant_options_default(&o);
    expect_err(eco_quantize(ECO_PREC_INT8, w, 0, 4, NULL, &q), ECO_EINVAL, "shape", "zero dimension");
    expect_err(eco_quantize(ECO_PREC_INT8, w, 4, 0, NULL, &q), ECO_EINVAL, "shape", "zero dimension");
    expect_err(eco_quantize(ECO_PREC_INT8, NULL, 4, 4, NULL, &q), ECO_EINVAL, "w", "NULL");
    expect_err(eco_quantize(ECO_PREC_INT8, w, 4, 4, NULL, NULL), ECO_EINVAL, "out", "NULL");
    expect_err(eco_quantize((eco_precision)99, w, 4, 4, NULL, &q), ECO_EINVAL, "precision", "unknown");
    expect_err(eco_quantize(ECO_PREC_INT8, w, UINT64_C(1) << 32, UINT64_C(1) << 32, NULL, &q), ECO_ETOOBIG,
               "shape", "2^40");
    o.nf4_blocksize = 48;
    expect_err(eco_quantize(ECO_PREC_NF4, w, 2, 64, &o, &q), ECO_EINVAL, "nf4_blocksize", "power of two");
    o.nf4_blocksize = 16;
    expect_err(eco_quantize(ECO_PREC_NF4_DQ, w, 2, 64, &o, &q), ECO_EINVAL, "nf4_blocksize", "got 16");
    o.nf4_blocksize = 8192;
    expect_err(eco_quantize(ECO_PREC_NF4, w, 2, 64, &o, &q), ECO_EINVAL, "nf4_blocksize", "32..4096");
    assert_int_equal(eco_quantize(ECO_PREC_INT8, w, 2, 64, &o, &q), ECO_OK); /* blocksize unused by int8 */
    eco_qweight_free(&q);
    eco_quant_options_default(&o);
    o.int8_threshold = -1.0f;
    expect_err(eco_quantize(ECO_PREC_INT8_MIXED, w, 2, 64, &o, &q), ECO_EINVAL, "int8_threshold", "got -1");
    o.int8_threshold = NAN;
    expect_err(eco_quantize(ECO_PREC_INT8_MIXED, w, 2, 64, &o, &q), ECO_EINVAL, "int8_threshold", ">= 0");
    w[70] = NAN;
    expect_err(eco_quantize(ECO_PREC_NF4, w, 2, 64, NULL, &q), ECO_EINVAL, "w", "w[70] (row 1, col 6)");
    w[70] = 70000.0f;
    expect_err(eco_quantize(ECO_PREC_FP16, w, 2, 64, NULL, &q), ECO_EINVAL, "w", "fp16 range");
    assert_int_equal(eco_quantize(ECO_PREC_FP8, w, 2, 64, NULL, &q), ECO_OK); /* fine in a scaled format */
    float y[2], x[64] = {0}, row[64];
    expect_err(eco_qmatvec(&q, NULL, y), ECO_EINVAL, "x", "NULL");
    expect_err(eco_qmatvec(&q, x, NULL), ECO_EINVAL, "y", "NULL");
    expect_err(eco_qmatvec(NULL, x, y), ECO_EINVAL, "q", "NULL");
    expect_err(eco_qmatvec_rows(&q, x, y, 1, 3), ECO_EINVAL, "rows", "[1, 3)");
    expect_err(eco_dequantize_row(&q, 2, row), ECO_EINVAL, "row", "out of range");
    expect_err(eco_dequantize(&q, NULL), ECO_EINVAL, "w_out", "NULL");
    eco_qweight broken = q;
    broken.row_scale = NULL;
    expect_err(eco_qmatvec(&broken, x, y), ECO_EINVAL, "q", "row_scale");
    eco_qweight_free(&q);
    assert_null(q.data);
    eco_qweight_free(&q); /* twice is fine */
    eco_qweight_free(NULL);
}

/* eco_quantize_threads gives eco_quantize's bytes at any thread count: weights large enough that every format fans
 * out (nf4-dq's groups too), an odd element count (nf4's last half byte), and the first bad element reported even when
 * a later range finds its own first. */
static void expect_same_qweight(const eco_qweight *a, const eco_qweight *b)
{
    uint64_t n = a->rows * a->cols, nb = a->blocksize ? (n + (uint64_t)a->blocksize - 1) / (uint64_t)a->blocksize : 0;
    assert_int_equal(a->format, b->format);
    size_t data = a->format == ECO_PREC_FP16 ? n * 2 : a->format == ECO_PREC_NF4 || a->format == ECO_PREC_NF4_DQ ? (n + 1) / 2 : n;
    assert_memory_equal(a->data, b->data, data);
    if (a->row_scale) assert_memory_equal(a->row_scale, b->row_scale, a->rows * sizeof(float));
    if (a->absmax) assert_memory_equal(a->absmax, b->absmax, nb * sizeof(float));
    if (a->absmax_q) {
        assert_memory_equal(a->absmax_q, b->absmax_q, nb);
        assert_memory_equal(a->absmax_q_scale, b->absmax_q_scale, (nb + 255) / 256 * sizeof(float));
        assert_memory_equal(&a->absmax_offset, &b->absmax_offset, sizeof(float));
    }
}

static void test_quantize_threads(void **state)
{
    (void)state;
    const uint64_t shapes[][2] = {{2048, 4096}, {1023, 2049}}; /* 8.4M elements (nf4-dq's 512 groups fan out); odd */
    const eco_precision formats[] = {ECO_PREC_FP16, ECO_PREC_INT8, ECO_PREC_INT8_MIXED, ECO_PREC_NF4, ECO_PREC_NF4_DQ, ECO_PREC_FP8};
    const int threads[] = {2, 3, 8};
    for (size_t sh = 0; sh < 2; sh++) {
        uint64_t rows = shapes[sh][0], cols = shapes[sh][1];
        float *w = gauss_matrix(rows * cols, 0.05f);
        for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
            if (sh == 1 && formats[f] == ECO_PREC_NF4_DQ) continue; /* the odd shape: nf4's half byte suffices */
            eco_qweight one, many;
            assert_int_equal(eco_quantize(formats[f], w, rows, cols, NULL, &one), ECO_OK);
            for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
                assert_int_equal(eco_quantize_threads(formats[f], w, rows, cols, NULL, threads[t], &many), ECO_OK);
                expect_same_qweight(&one, &many);
                eco_qweight_free(&many);
            }
            eco_qweight_free(&one);
        }
        free(w);
    }
    uint64_t rows = 1024, cols = 4096, n = rows * cols;
    float *w = gauss_matrix(n, 0.05f);
    w[n - 7] = INFINITY;         /* in the last range */
    w[n / 3 + 5] = NAN;          /* the first bad element: its row and column in the message */
    eco_qweight q;
    char want[64];
    snprintf(want, sizeof want, "w[%llu] (row %llu, col %llu)", (unsigned long long)(n / 3 + 5),
             (unsigned long long)((n / 3 + 5) / cols), (unsigned long long)((n / 3 + 5) % cols));
    for (int t = 1; t <= 8; t *= 2) {
        expect_err(eco_quantize_threads(ECO_PREC_NF4, w, rows, cols, NULL, t, &q), ECO_EINVAL, "w", want);
        assert_null(q.data);
    }
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nf4_codebook),     cmocka_unit_test(test_nf4_ties),
        cmocka_unit_test(test_nf4_packing),      cmocka_unit_test(test_dynamic_map),
        cmocka_unit_test(test_double_quant),     cmocka_unit_test(test_int8_fp8_rounding),
        cmocka_unit_test(test_error_bounds),     cmocka_unit_test(test_qmatvec_vs_naive),
        cmocka_unit_test(test_int8_mixed),       cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_quantize_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
