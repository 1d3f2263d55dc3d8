/* Core: error reporting, statistics, precision names, model presets and byte accounting. */
#include <string.h>

#include "eco_test.h"

#include "eco/err.h"
#include "eco/model.h"
#include "eco/quant.h"
#include "eco/stats.h"

static void test_error_message_and_field(void **state)
{
    (void)state;
    assert_int_equal(eco_fail_field(ECO_EINVAL, "params_b", "params_b must be > 0, got %g", -1.0), ECO_EINVAL);
    assert_string_equal(eco_last_error(), "params_b must be > 0, got -1");
    assert_string_equal(eco_last_error_field(), "params_b");
    eco_fail_context("request: ");
    assert_string_equal(eco_last_error(), "request: params_b must be > 0, got -1");
    /* Re-raising the current message (and field) as a new error must not corrupt it. */
    eco_fail_field(ECO_EINVAL, eco_last_error_field(), "%s", eco_last_error());
    assert_string_equal(eco_last_error(), "request: params_b must be > 0, got -1");
    assert_string_equal(eco_last_error_field(), "params_b");
    eco_clear_error();
    assert_string_equal(eco_last_error(), "");
    assert_int_equal(eco_last_error_code(), ECO_OK);
}

static void test_summaries(void **state)
{
    (void)state;
    double x[] = {2, 4, 4, 4, 5, 5, 7, 9}, scratch[8];
    assert_near(eco_mean(x, 8), 5.0, 1e-12);
    assert_near(eco_sd(x, 8), sqrt(32.0 / 7.0), 1e-12);
    assert_near(eco_cv_pct(x, 8), 100.0 * sqrt(32.0 / 7.0) / 5.0, 1e-9);
    assert_near(eco_quantile(x, 8, 0.5, scratch), 4.5, 1e-12);
    assert_near(eco_quantile(x, 8, 0.25, scratch), 4.0, 1e-12);
    assert_near(x[7], 9.0, 0); /* input untouched */
    assert_near(eco_t975(1), 12.706, 1e-9);
    assert_near(eco_t975(9), 2.262, 1e-9);
    assert_near(eco_t975(60), 2.0003, 2e-4);
    assert_near(eco_t975(1000), 1.9623, 2e-4);
    eco_interval ci = eco_mean_ci95(x, 8);
    assert_near(ci.hi - ci.point, 2.365 * sqrt(32.0 / 7.0) / sqrt(8.0), 1e-9);
}

static void test_rng_reproducible_and_uniform(void **state)
{
    (void)state;
    eco_rng a, b;
    eco_rng_seed(&a, 42);
    eco_rng_seed(&b, 42);
    for (int i = 0; i < 100; i++) assert_true(eco_rng_next(&a) == eco_rng_next(&b));
    int counts[10] = {0};
    for (int i = 0; i < 100000; i++) counts[eco_rng_below(&a, 10)]++;
    for (int i = 0; i < 10; i++) assert_in_range(counts[i], 9500, 10500);
    double s = 0, s2 = 0;
    for (int i = 0; i < 100000; i++) { double z = eco_rng_normal(&a); s += z; s2 += z * z; }
    assert_true(fabs(s / 100000) < 0.02);
    assert_true(fabs(s2 / 100000 - 1.0) < 0.02);
}

static void test_paired_delta(void **state)
{
    (void)state;
    double base[] = {100, 102, 98, 101, 99}, quant[] = {80, 81.6, 78.4, 80.8, 79.2}; /* exactly -20% each */
    eco_interval d = eco_paired_delta_pct_t95(quant, base, 5);
    assert_near(d.point, -20.0, 1e-9);
    assert_near(d.lo, -20.0, 1e-9); /* pairs move together: no spread */
    assert_near(d.hi, -20.0, 1e-9);
    /* a paired t on log ratios: ratios 0.85 0.735 0.837 0.772 0.808 */
    double q2[] = {85, 75, 82, 78, 80};
    eco_interval d2 = eco_paired_delta_pct_t95(q2, base, 5);
    double lr[5], m = 0, ss = 0;
    for (int i = 0; i < 5; i++) m += (lr[i] = log(q2[i] / base[i])) / 5;
    for (int i = 0; i < 5; i++) ss += (lr[i] - m) * (lr[i] - m);
    double half = 2.776 * sqrt(ss / 4) / sqrt(5.0);
    assert_near(d2.lo, 100 * (exp(m - half) - 1), 1e-6);
    assert_near(d2.hi, 100 * (exp(m + half) - 1), 1e-6);
    assert_true(d2.lo < d2.point && d2.point < d2.hi);
    /* two blocks at -23% and -31%: the data cannot exclude 0 (a percentile bootstrap gave [-31, -23], "saves") */
    double b2[] = {100, 100}, q3[] = {77, 69};
    eco_interval d3 = eco_paired_delta_pct_t95(q3, b2, 2);
    assert_near(d3.point, -27.0, 1e-9);
    assert_true(d3.lo < -60 && d3.hi > 0);
    /* a window with no positive energy has no interval */
    double q4[] = {77, -1};
    eco_interval d4 = eco_paired_delta_pct_t95(q4, b2, 2);
    assert_true(isnan(d4.lo) && isnan(d4.hi));
    eco_interval d5 = eco_paired_delta_pct_t95(q3, b2, 1);
    assert_near(d5.lo, -23.0, 1e-9);
    assert_near(d5.hi, -23.0, 1e-9);
}

static void test_precision_names(void **state)
{
    (void)state;
    eco_precision p;
    assert_int_equal(eco_precision_parse("NF4", &p), ECO_OK);
    assert_int_equal(p, ECO_PREC_NF4);
    assert_int_equal(eco_precision_parse("LLM.int8", &p), ECO_OK);
    assert_int_equal(p, ECO_PREC_INT8_MIXED);
    assert_int_equal(eco_precision_parse("fp8-e4m3", &p), ECO_OK);
    assert_int_equal(p, ECO_PREC_FP8);
    assert_int_equal(eco_precision_parse("int3", &p), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "precision");
    assert_int_equal(eco_precision_parse(" nf4\t", &p), ECO_OK); /* blanks around it, as numbers are read */
    assert_int_equal(p, ECO_PREC_NF4);
    assert_int_equal(eco_precision_parse("n f4", &p), ECO_EINVAL);
    assert_int_equal(eco_precision_parse("   ", &p), ECO_EINVAL);
    assert_int_equal(eco_quantized_precision_parse("bogus", &p), ECO_ENOTFOUND);
    assert_int_equal(eco_quantized_precision_parse("FP16", &p), ECO_EINVAL);
    assert_int_equal(eco_quantized_precision_parse("e4m3", &p), ECO_OK);
    assert_int_equal(p, ECO_PREC_FP8);
    /* 4096 x 4096 nf4: 8 MiB of nibbles + one fp32 absmax per 64 weights */
    assert_int_equal(eco_precision_weight_bytes(ECO_PREC_NF4, 4096, 4096), 8388608 + 4 * 262144);
    assert_int_equal(eco_precision_weight_bytes(ECO_PREC_INT8, 4096, 4096), 16777216 + 4 * 4096);
}

static void test_presets_match_published_sizes(void **state)
{
    (void)state;
    struct { const char *name; double billions; } expect[] = {
        {"Qwen2.5-0.5B", 0.494}, {"Qwen2.5-1.5B", 1.544}, {"Qwen2.5-3B", 3.086}, {"Qwen2.5-7B", 7.616},
        {"Qwen2.5-14B", 14.77},  {"Llama-3.1-8B", 8.030}, {"Mistral-7B-v0.3", 7.248}, {"Phi-3-mini", 3.821},
        {"TinyLlama-1.1B", 1.100}, {"Yi-1.5-6B", 6.061}};
    assert_int_equal(eco_preset_count(), 10);
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        const eco_model_config *c = eco_preset_find(expect[i].name);
        assert_non_null(c);
        double b = (double)eco_model_param_count(c) / 1e9;
        assert_true(fabs(b - expect[i].billions) < 0.006);
    }
    assert_ptr_equal(eco_preset_find("qwen/qwen2.5-7b"), eco_preset_find("Qwen2.5-7B"));
    assert_null(eco_preset_find("GPT-5"));
    const eco_model_config *mistral = eco_preset_find("Mistral-7B-v0.3");
    assert_int_equal(eco_model_kv_bytes_per_position(mistral), 128 * 1024);
    /* research §6: Mistral fp16 weights-only bytes/token 14.23 GB, nf4 4.20 GB (lm_head 16-bit) */
    assert_true(fabs((double)eco_model_bytes_per_token(mistral, ECO_PREC_FP16, 0, false) / 1e9 - 14.23) < 0.25);
    assert_true(fabs((double)eco_model_bytes_per_token(mistral, ECO_PREC_NF4, 0, false) / 1e9 - 4.20) < 0.10);
}

/* A message cut at its buffer's end inside a UTF-8 character loses that character, not its validity. */
static void test_utf8_cut_partial(void **state)
{
    (void)state;
    const struct { const char *in, *out; } cases[] = {
        {"", ""}, {"abc", "abc"}, {"a\xC3\xBC", "a\xC3\xBC"}, {"a\xC3", "a"}, {"a\xE2\x82", "a"},
        {"a\xE2\x82\xAC", "a\xE2\x82\xAC"}, {"a\xF0\x9F\x98", "a"}, {"a\xF0\x9F\x98\x80", "a\xF0\x9F\x98\x80"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[16];
        snprintf(buf, sizeof buf, "%s", cases[i].in);
        eco_utf8_cut_partial(buf);
        assert_string_equal(buf, cases[i].out);
    }
    /* through eco_fail: a message of 150 'ü' past the buffer stays valid UTF-8 */
    char big[1024] = "";
    for (int i = 0; i < 400; i++) strcat(big, "\xC3\xBC");
    eco_fail(ECO_EINVAL, "x%s", big);
    const char *m = eco_last_error();
    size_t n = strlen(m);
    assert_true(n > 0 && ((unsigned char)m[n - 1] == 0xBC));
    eco_clear_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_message_and_field), cmocka_unit_test(test_summaries), cmocka_unit_test(test_utf8_cut_partial),
        cmocka_unit_test(test_rng_reproducible_and_uniform), cmocka_unit_test(test_paired_delta),
        cmocka_unit_test(test_precision_names), cmocka_unit_test(test_presets_match_published_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
