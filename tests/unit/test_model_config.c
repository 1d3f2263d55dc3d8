/* config.json parsing (Llama-3.1 rope scaling, Qwen2, Phi-3, Mistral), errors, round trips, RoPE frequencies. */
#include "eco_test.h"

#include <string.h>
#include <unistd.h>

#include "eco/model.h"

static const char *llama31 =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"hidden_size\":4096,"
    "\"intermediate_size\":14336,\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":8,"
    "\"vocab_size\":128256,\"max_position_embeddings\":131072,\"rope_theta\":500000.0,\"rms_norm_eps\":1e-05,"
    "\"rope_scaling\":{\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
    "\"original_max_position_embeddings\":8192,\"rope_type\":\"llama3\"},\"tie_word_embeddings\":false,"
    "\"hidden_act\":\"silu\",\"torch_dtype\":\"bfloat16\",\"attention_bias\":false,\"mlp_bias\":false}";

static const char *qwen05 =
    "{\"architectures\":[\"Qwen2ForCausalLM\"],\"hidden_size\":896,\"intermediate_size\":4864,"
    "\"num_hidden_layers\":24,\"num_attention_heads\":14,\"num_key_value_heads\":2,\"vocab_size\":151936,"
    "\"max_position_embeddings\":32768,\"rope_theta\":1000000.0,\"rms_norm_eps\":1e-06,\"sliding_window\":32768,"
    "\"use_sliding_window\":false,\"tie_word_embeddings\":true,\"torch_dtype\":\"bfloat16\",\"rope_scaling\":null}";

static const char *phi3 =
    "{\"architectures\":[\"Phi3ForCausalLM\"],\"hidden_size\":3072,\"intermediate_size\":8192,"
    "\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":32,\"vocab_size\":32064,"
    "\"max_position_embeddings\":4096,\"original_max_position_embeddings\":4096,\"rope_theta\":10000.0,"
    "\"rms_norm_eps\":1e-05,\"rope_scaling\":null,\"sliding_window\":2047,\"tie_word_embeddings\":false,"
    "\"hidden_act\":\"silu\",\"torch_dtype\":\"bfloat16\"}";

static void test_llama31(void **state)
{
    (void)state;
    eco_model_config c;
    assert_int_equal(eco_model_config_from_json(llama31, &c), ECO_OK);
    assert_int_equal(c.family, ECO_FAMILY_LLAMA);
    assert_int_equal(c.hidden, 4096);
    assert_int_equal(c.intermediate, 14336);
    assert_int_equal(c.layers, 32);
    assert_int_equal(c.heads, 32);
    assert_int_equal(c.kv_heads, 8);
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(c.vocab, 128256);
    assert_int_equal(c.max_pos, 131072);
    assert_near(c.rope_theta, 5e5, 0);
    assert_near(c.rms_eps, 1e-5, 1e-20);
    assert_false(c.tie_embeddings);
    assert_false(c.qkv_bias);
    assert_true(c.rope_llama3);
    assert_near(c.rope_factor, 8, 0);
    assert_near(c.rope_low_freq_factor, 1, 0);
    assert_near(c.rope_high_freq_factor, 4, 0);
    assert_int_equal(c.rope_original_max_pos, 8192);
    assert_string_equal(c.torch_dtype, "bfloat16");
    /* The preset has the same shapes and therefore the same parameter count (8.03B). */
    const eco_model_config *p = eco_preset_find("Llama-3.1-8B");
    assert_non_null(p);
    assert_true(eco_model_param_count(&c) == eco_model_param_count(p));
    assert_true(eco_model_param_count(&c) > 8020000000ull && eco_model_param_count(&c) < 8040000000ull);
}

/* inv_freq against values worked out here: high frequencies unchanged, low ones divided by 8, the band
 * between interpolated with s = (8192/wavelength - 1) / 3. */
static void test_llama3_inv_freq(void **state)
{
    (void)state;
    eco_model_config c;
    assert_int_equal(eco_model_config_from_json(llama31, &c), ECO_OK);
    double f[64];
    eco_rope_inv_freq(&c, f);
    assert_near(f[0], 1.0, 1e-15);                          /* wavelength 2*pi: kept */
    double base10 = pow(5e5, -20.0 / 128);                  /* wavelength ~ 48: kept */
    assert_near(f[10], base10, 1e-15 * base10);
    double base63 = pow(5e5, -126.0 / 128);                 /* wavelength ~ 2.5e6 > 8192: /8 */
    assert_near(f[63], base63 / 8, 1e-15 * base63);
    int medium = 0;
    for (int i = 0; i < 64; i++) {
        double b = pow(5e5, -2.0 * i / 128), wl = 2 * M_PI / b;
        if (wl >= 2048 && wl <= 8192) {
            double s = (8192.0 / wl - 1.0) / 3.0;
            assert_near(f[i], (1 - s) * b / 8 + s * b, 1e-12 * b);
            assert_true(f[i] < b && f[i] > b / 8);
            medium++;
        }
    }
    assert_true(medium >= 2); /* the band is exercised */
    /* Without scaling (Llama 3.0): plain theta^(-2i/d). */
    c.rope_llama3 = false;
    eco_rope_inv_freq(&c, f);
    assert_near(f[63], base63, 1e-15 * base63);
}

static void test_qwen2(void **state)
{
    (void)state;
    eco_model_config c;
    assert_int_equal(eco_model_config_from_json(qwen05, &c), ECO_OK);
    assert_int_equal(c.family, ECO_FAMILY_QWEN2);
    assert_true(c.qkv_bias);
    assert_true(c.tie_embeddings);
    assert_int_equal(c.head_dim, 64);
    assert_int_equal(c.sliding_window, 0); /* use_sliding_window=false */
    assert_false(c.rope_llama3);
    const eco_model_config *p = eco_preset_find("Qwen2.5-0.5B");
    assert_true(eco_model_param_count(&c) == eco_model_param_count(p));
}

static void expect_fail(const char *json, eco_err code, const char *field, const char *msg_part);

/* head + tail as config.json text, parsed; the test fails if it does not parse. */
static eco_model_config parsed(const char *head, const char *tail)
{
    char j[512];
    snprintf(j, sizeof j, "%s%s", head, tail);
    eco_model_config c;
    if (eco_model_config_from_json(j, &c)) fail_msg("%s: %s", j, eco_last_error());
    return c;
}

/* Qwen2 windows layers >= max_window_layers (HF): with 2 layers, 2 means none, 0 all, 1 a split the engine
 * refuses; "layer_types" says it per layer. mlp_bias has tensors the engine would ignore: refused. */
static void test_window_layers_and_biases(void **state)
{
    (void)state;
    static const char head[] = "{\"architectures\":[\"Qwen2ForCausalLM\"],\"hidden_size\":64,\"intermediate_size\":128,"
                               "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":100,\"sliding_window\":16";
    char j[512];
    eco_model_config c;
    c = parsed(head, ",\"use_sliding_window\":true,\"max_window_layers\":2}");
    assert_int_equal(c.sliding_window, 0);
    snprintf(j, sizeof j, "%s,\"use_sliding_window\":true}", head); /* default max_window_layers 28 >= 2 layers */
    assert_int_equal(eco_model_config_from_json(j, &c), ECO_OK);
    assert_int_equal(c.sliding_window, 0);
    c = parsed(head, ",\"use_sliding_window\":true,\"max_window_layers\":0}");
    assert_int_equal(c.sliding_window, 16);
    /* it writes back as it reads */
    char *out;
    eco_model_config back;
    assert_int_equal(eco_model_config_to_json(&c, &out), ECO_OK);
    assert_int_equal(eco_model_config_from_json(out, &back), ECO_OK);
    assert_int_equal(back.sliding_window, 16);
    free(out);
    snprintf(j, sizeof j, "%s,\"use_sliding_window\":true,\"max_window_layers\":1}", head);
    expect_fail(j, ECO_EUNSUPPORTED, "max_window_layers", "layers 1..1 of 2");
    c = parsed(head, ",\"use_sliding_window\":false,\"max_window_layers\":1}");
    assert_int_equal(c.sliding_window, 0);
    c = parsed(head, ",\"use_sliding_window\":true,\"layer_types\":[\"sliding_attention\",\"sliding_attention\"]}");
    assert_int_equal(c.sliding_window, 16);
    snprintf(j, sizeof j, "%s,\"use_sliding_window\":true,\"layer_types\":[\"full_attention\",\"sliding_attention\"]}", head);
    expect_fail(j, ECO_EUNSUPPORTED, "layer_types", "1 of 2 layers");
    snprintf(j, sizeof j, "%s,\"layer_types\":[\"full_attention\"]}", head);
    expect_fail(j, ECO_EINVAL, "layer_types", "one type per layer");
    snprintf(j, sizeof j, "%s,\"mlp_bias\":true}", head);
    expect_fail(j, ECO_EUNSUPPORTED, "mlp_bias", "mlp_bias=true is not supported");
    /* eco model save's mark of synthetic values reads back, and a bad one is refused */
    c = parsed(head, ",\"eco_synthetic_seed\":42}");
    assert_true(c.synthetic_checkpoint && c.synthetic_seed == 42);
    assert_int_equal(eco_model_config_to_json(&c, &out), ECO_OK);
    assert_non_null(strstr(out, "\"eco_synthetic_seed\": 42"));
    free(out);
    snprintf(j, sizeof j, "%s,\"eco_synthetic_seed\":-1}", head);
    expect_fail(j, ECO_EINVAL, "eco_synthetic_seed", "must be an integer >= 0");
    /* a split layer_types with no window in use is fine */
    c = parsed(head, ",\"use_sliding_window\":false,\"layer_types\":[\"full_attention\",\"sliding_attention\"]}");
    assert_int_equal(c.sliding_window, 0);
}

static void test_phi3(void **state)
{
    (void)state;
    eco_model_config c;
    assert_int_equal(eco_model_config_from_json(phi3, &c), ECO_OK);
    assert_int_equal(c.family, ECO_FAMILY_PHI3);
    assert_int_equal(c.head_dim, 96);
    assert_int_equal(c.kv_heads, 32);
    assert_int_equal(c.sliding_window, 2047);
    assert_false(c.qkv_bias);
    char name[128];
    assert_int_equal(eco_weight_hf_name(&c, ECO_W_K, 3, name, sizeof name), ECO_OK);
    assert_string_equal(name, "model.layers.3.self_attn.qkv_proj.weight");
    assert_int_equal(eco_weight_hf_name(&c, ECO_W_UP, 0, name, sizeof name), ECO_OK);
    assert_string_equal(name, "model.layers.0.mlp.gate_up_proj.weight");
    uint64_t r, cl;
    eco_weight_shape(&c, ECO_W_Q, &r, &cl);
    assert_true(r == 3072 && cl == 3072);
    /* Phi-3-mini is 3.82B parameters. */
    assert_true(eco_model_param_count(&c) > 3815000000ull && eco_model_param_count(&c) < 3825000000ull);
}

static void test_mistral_defaults(void **state)
{
    (void)state;
    eco_model_config c;
    const char *j = "{\"architectures\":[\"MistralForCausalLM\"],\"hidden_size\":64,\"intermediate_size\":128,"
                    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":100,\"sliding_window\":null}";
    assert_int_equal(eco_model_config_from_json(j, &c), ECO_OK);
    assert_int_equal(c.kv_heads, 4);   /* defaults to heads */
    assert_int_equal(c.head_dim, 16);  /* hidden / heads */
    assert_near(c.rope_theta, 1e4, 0);
    assert_int_equal(c.sliding_window, 0);
}

static void expect_fail(const char *json, eco_err code, const char *field, const char *msg_part)
{
    eco_model_config c;
    eco_err e = eco_model_config_from_json(json, &c);
    if (e != code) fail_msg("expected %s, got %s: %s", eco_err_name(code), eco_err_name(e), eco_last_error());
    if (field) assert_string_equal(eco_last_error_field(), field);
    if (!strstr(eco_last_error(), msg_part)) fail_msg("message \"%s\" lacks \"%s\"", eco_last_error(), msg_part);
}

static void test_errors(void **state)
{
    (void)state;
    expect_fail("{\"architectures\":[\"GPT2LMHeadModel\"],\"hidden_size\":64}", ECO_EUNSUPPORTED, "architectures", "GPT2LMHeadModel");
    expect_fail("{\"hidden_size\":64}", ECO_EINVAL, "architectures", "architectures");
    expect_fail("{\"architectures\":[\"LlamaForCausalLM\"],\"intermediate_size\":128,\"num_hidden_layers\":2,"
                "\"num_attention_heads\":4,\"vocab_size\":100}", ECO_EINVAL, "hidden_size", "missing required field \"hidden_size\"");
    expect_fail("{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":\"64\",\"intermediate_size\":128,"
                "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":100}", ECO_EINVAL, "hidden_size", "integer");
    expect_fail("{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"intermediate_size\":128,"
                "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":3,\"vocab_size\":100}",
                ECO_EINVAL, "num_key_value_heads", "multiple");
    expect_fail("{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"intermediate_size\":128,"
                "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":100,"
                "\"rope_scaling\":{\"rope_type\":\"yarn\",\"factor\":4.0}}", ECO_EUNSUPPORTED, "rope_scaling", "yarn");
    expect_fail("{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"intermediate_size\":128,"
                "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":100,"
                "\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8.0}}", ECO_EINVAL, "low_freq_factor", "low_freq_factor");
    expect_fail("{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"intermediate_size\":128,"
                "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":100,\"hidden_act\":\"gelu\"}",
                ECO_EUNSUPPORTED, "hidden_act", "silu");
    expect_fail("{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":0,\"intermediate_size\":128,"
                "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":100}", ECO_EINVAL, "hidden_size", "hidden_size");
    expect_fail("{\"architectures\":[\"LlamaForCausalLM\"], \"hidden_size\": 64,", ECO_EFORMAT, NULL, "invalid JSON");
    expect_fail("{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"hidden_size\":64}", ECO_EFORMAT, NULL, "duplicate");
    expect_fail("/nonexistent/config.json", ECO_EIO, NULL, "/nonexistent/config.json");
}

/* transformers >= 5: rope_theta and the scaling in one "rope_parameters" object, no top-level rope_theta. Read as
 * the old fields only, Llama-3.1 ran at theta 1e4 without its scaling and loaded without a word. */
#define SMALL_LLAMA "{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":64,\"intermediate_size\":128," \
                    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":100,"
static void test_transformers5_rope_parameters(void **state)
{
    (void)state;
    eco_model_config c, v4;
    assert_int_equal(eco_model_config_from_json(llama31, &v4), ECO_OK);
    char v5[2048];
    const char *cut = strstr(llama31, "\"rope_theta\"");
    const char *tail = strstr(llama31, "\"tie_word_embeddings\"");
    snprintf(v5, sizeof v5, "%.*s\"rms_norm_eps\":1e-05,\"rope_parameters\":{\"rope_type\":\"llama3\",\"rope_theta\":500000.0,"
             "\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,\"original_max_position_embeddings\":8192},%s",
             (int)(cut - llama31), llama31, tail);
    assert_int_equal(eco_model_config_from_json(v5, &c), ECO_OK);
    assert_near(c.rope_theta, 5e5, 0);
    assert_true(c.rope_llama3);
    assert_near(c.rope_factor, v4.rope_factor, 0);
    assert_near(c.rope_low_freq_factor, v4.rope_low_freq_factor, 0);
    assert_near(c.rope_high_freq_factor, v4.rope_high_freq_factor, 0);
    assert_int_equal(c.rope_original_max_pos, 8192);
    /* the default type, with or without its name */
    assert_int_equal(eco_model_config_from_json(SMALL_LLAMA "\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":1e6}}", &c), ECO_OK);
    assert_near(c.rope_theta, 1e6, 0);
    assert_false(c.rope_llama3);
    assert_int_equal(eco_model_config_from_json(SMALL_LLAMA "\"rope_parameters\":{\"rope_theta\":2e5}}", &c), ECO_OK);
    assert_near(c.rope_theta, 2e5, 0);
    /* both spellings at once: the same values pass, different ones are refused */
    assert_int_equal(eco_model_config_from_json(SMALL_LLAMA "\"rope_theta\":1e6,\"rope_parameters\":{\"rope_theta\":1e6}}", &c), ECO_OK);
    expect_fail(SMALL_LLAMA "\"rope_theta\":1e4,\"rope_parameters\":{\"rope_theta\":1e6}}", ECO_EINVAL, "rope_parameters", "disagree");
    expect_fail(SMALL_LLAMA "\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8,\"low_freq_factor\":1,\"high_freq_factor\":4,"
                "\"original_max_position_embeddings\":32},\"rope_parameters\":{\"rope_type\":\"default\"}}",
                ECO_EINVAL, "rope_parameters", "different scalings");
    /* what the old fields refuse, refused here too */
    expect_fail(SMALL_LLAMA "\"rope_parameters\":{\"rope_type\":\"yarn\",\"factor\":4.0}}", ECO_EUNSUPPORTED, "rope_parameters", "yarn");
    expect_fail(SMALL_LLAMA "\"rope_parameters\":{\"rope_theta\":1e4,\"partial_rotary_factor\":0.5}}", ECO_EUNSUPPORTED,
                "partial_rotary_factor", "partial_rotary_factor");
    expect_fail(SMALL_LLAMA "\"rope_parameters\":{\"full_attention\":{\"rope_type\":\"default\"}}}", ECO_EUNSUPPORTED,
                "rope_parameters", "per layer type");
    expect_fail(SMALL_LLAMA "\"rope_parameters\":[1]}", ECO_EINVAL, "rope_parameters", "object");
    expect_fail(SMALL_LLAMA "\"rope_parameters\":{\"rope_type\":\"llama3\",\"factor\":8}}", ECO_EINVAL, "low_freq_factor",
                "rope_parameters.low_freq_factor");
}

static void test_file_and_round_trip(void **state)
{
    (void)state;
    char path[] = "/tmp/eco_cfg_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, phi3, strlen(phi3)), (ssize_t)strlen(phi3));
    close(fd);
    eco_model_config c;
    assert_int_equal(eco_model_config_from_json(path, &c), ECO_OK);
    assert_int_equal(c.head_dim, 96);
    unlink(path);
    /* Every preset survives to_json -> from_json. */
    for (size_t i = 0; i < eco_preset_count(); i++) {
        const eco_model_config *p = eco_preset_at(i);
        char *js;
        assert_int_equal(eco_model_config_to_json(p, &js), ECO_OK);
        eco_model_config b;
        if (eco_model_config_from_json(js, &b)) fail_msg("%s: %s", p->name, eco_last_error());
        free(js);
        assert_int_equal(b.family, p->family);
        assert_int_equal(b.hidden, p->hidden);
        assert_int_equal(b.intermediate, p->intermediate);
        assert_int_equal(b.layers, p->layers);
        assert_int_equal(b.heads, p->heads);
        assert_int_equal(b.kv_heads, p->kv_heads);
        assert_int_equal(b.head_dim, p->head_dim);
        assert_int_equal(b.vocab, p->vocab);
        assert_int_equal(b.max_pos, p->max_pos);
        assert_near(b.rope_theta, p->rope_theta, 0);
        assert_near(b.rms_eps, p->rms_eps, 0);
        assert_int_equal(b.tie_embeddings, p->tie_embeddings);
        assert_int_equal(b.qkv_bias, p->qkv_bias);
        assert_int_equal(b.rope_llama3, p->rope_llama3);
        assert_int_equal(b.rope_original_max_pos, p->rope_original_max_pos);
        assert_int_equal(b.sliding_window, p->sliding_window);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama31),     cmocka_unit_test(test_llama3_inv_freq), cmocka_unit_test(test_qwen2),
        cmocka_unit_test(test_phi3), cmocka_unit_test(test_window_layers_and_biases),        cmocka_unit_test(test_mistral_defaults), cmocka_unit_test(test_errors),
        cmocka_unit_test(test_file_and_round_trip), cmocka_unit_test(test_transformers5_rope_parameters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
