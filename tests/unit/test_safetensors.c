/* Safetensors reader/writer: a valid file written here, each kind of broken file with its specific error,
 * and checkpoint loading (sharded, Phi-3 fused tensors, shape checks against the config). */
#include "eco_test.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eco/model.h"
#include "eco/quant.h"

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/eco_st_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd);
}

static const char *tpath(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    return buf;
}

/* A file made of a header (length prefix computed, or forced) and `data_len` bytes of data. */
static void write_raw(const char *path, const char *header, uint64_t forced_len, size_t data_len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t n = forced_len ? forced_len : strlen(header);
    uint8_t lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (uint8_t)(n >> (8 * i));
    fwrite(lb, 1, 8, f);
    fwrite(header, 1, strlen(header), f);
    for (size_t i = 0; i < data_len; i++) fputc((int)(i & 0xff), f);
    fclose(f);
}

static void expect_open_fail(const char *path, eco_err code, const char *msg_part)
{
    eco_safetensors *st = NULL;
    eco_err e = eco_safetensors_open(path, &st);
    if (e != code) fail_msg("%s: expected %s, got %s (%s)", path, eco_err_name(code), eco_err_name(e), eco_last_error());
    assert_null(st);
    if (!strstr(eco_last_error(), msg_part)) fail_msg("message \"%s\" lacks \"%s\"", eco_last_error(), msg_part);
    if (!strstr(eco_last_error(), path)) fail_msg("message \"%s\" does not name the file", eco_last_error());
}

static void test_valid_round_trip(void **state)
{
    (void)state;
    char p[256];
    float a[6] = {1.5f, -2.25f, 3.0f, 0.0f, -0.125f, 65504.0f};
    uint16_t h[4], b[3];
    float hv[4] = {0.5f, -1.0f, 2.0f, 1e-3f}, bv[3] = {1.0f, -3.5f, 1e20f};
    for (int i = 0; i < 4; i++) h[i] = eco_f32_to_f16(hv[i]);
    for (int i = 0; i < 3; i++) b[i] = eco_f32_to_bf16(bv[i]);
    int8_t q[5] = {1, -2, 3, -4, 5};
    eco_st_write_tensor t[4] = {
        {.name = "a", .dtype = ECO_DT_F32, .ndim = 2, .shape = {2, 3}, .data = a},
        {.name = "h", .dtype = ECO_DT_F16, .ndim = 1, .shape = {4}, .data = h},
        {.name = "b.weight", .dtype = ECO_DT_BF16, .ndim = 1, .shape = {3}, .data = b},
        {.name = "q", .dtype = ECO_DT_I8, .ndim = 1, .shape = {5}, .data = q},
    };
    const char *meta[] = {"format", "pt", "note", "x"};
    assert_int_equal(eco_safetensors_write(tpath("ok.safetensors", p, sizeof p), t, 4, meta, 2), ECO_OK);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);

    eco_safetensors *st;
    assert_int_equal(eco_safetensors_open(p, &st), ECO_OK);
    assert_int_equal(eco_safetensors_count(st), 4);
    assert_string_equal(eco_safetensors_at(st, 0)->name, "a"); /* file order */
    assert_string_equal(eco_safetensors_at(st, 3)->name, "q");
    assert_string_equal(eco_safetensors_metadata(st, "format"), "pt");
    assert_string_equal(eco_safetensors_metadata(st, "note"), "x");
    assert_null(eco_safetensors_metadata(st, "missing"));
    assert_null(eco_safetensors_find(st, "nope"));
    const eco_st_tensor *ta = eco_safetensors_find(st, "a");
    assert_non_null(ta);
    assert_int_equal(ta->ndim, 2);
    assert_true(ta->shape[0] == 2 && ta->shape[1] == 3 && ta->nelem == 6 && ta->size_bytes == 24 && ta->begin_bytes == 0);
    float out[6];
    assert_int_equal(eco_st_tensor_read_f32(ta, 0, 6, out), ECO_OK);
    for (int i = 0; i < 6; i++) assert_true(out[i] == a[i]);
    assert_int_equal(eco_st_tensor_read_f32(ta, 3, 3, out), ECO_OK); /* a row slice */
    assert_true(out[0] == 0.0f && out[2] == 65504.0f);
    assert_int_equal(eco_st_tensor_read_f32(ta, 4, 3, out), ECO_EINVAL);
    const eco_st_tensor *th = eco_safetensors_find(st, "h");
    assert_int_equal(th->dtype, ECO_DT_F16);
    assert_int_equal(eco_st_tensor_read_f32(th, 0, 4, out), ECO_OK);
    for (int i = 0; i < 4; i++) assert_true(out[i] == eco_f16_to_f32(h[i]));
    assert_near(out[3], 1e-3, 1e-6);
    const eco_st_tensor *tb = eco_safetensors_find(st, "b.weight");
    assert_int_equal(eco_st_tensor_read_f32(tb, 0, 3, out), ECO_OK);
    assert_true(out[0] == 1.0f && out[1] == -3.5f);
    assert_near(out[2], 1e20, 1e18);
    const eco_st_tensor *tq = eco_safetensors_find(st, "q");
    assert_int_equal(eco_st_tensor_read_f32(tq, 0, 5, out), ECO_EUNSUPPORTED);
    eco_safetensors_close(st);

    /* header length field: the data offset 8 + N is a multiple of 8 */
    FILE *f = fopen(p, "rb");
    uint8_t lb[8];
    assert_int_equal(fread(lb, 1, 8, f), 8);
    fclose(f);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | lb[i];
    assert_int_equal((8 + n) % 8, 0);
    assert_int_equal((uint64_t)sb.st_size, 8 + n + 24 + 8 + 6 + 5);
}

static void test_truncated(void **state)
{
    (void)state;
    char p[256], p2[256];
    float a[4] = {1, 2, 3, 4};
    eco_st_write_tensor t = {.name = "w", .dtype = ECO_DT_F32, .ndim = 1, .shape = {4}, .data = a};
    assert_int_equal(eco_safetensors_write(tpath("t.safetensors", p, sizeof p), &t, 1, NULL, 0), ECO_OK);
    struct stat sb;
    stat(p, &sb);
    assert_int_equal(truncate(p, sb.st_size - 3), 0);
    expect_open_fail(p, ECO_EFORMAT, "truncated");
    /* shorter than the length prefix */
    FILE *f = fopen(tpath("tiny.safetensors", p2, sizeof p2), "wb");
    fwrite("\x10\x00\x00", 1, 3, f);
    fclose(f);
    expect_open_fail(p2, ECO_EFORMAT, "truncated");
    /* empty file */
    f = fopen(tpath("empty.safetensors", p2, sizeof p2), "wb");
    fclose(f);
    expect_open_fail(p2, ECO_EFORMAT, "truncated");
}

static void test_lying_headers(void **state)
{
    (void)state;
    char p[256];
    const char *ok = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    write_raw(tpath("len.safetensors", p, sizeof p), ok, 1000, 8);
    expect_open_fail(p, ECO_EFORMAT, "runs past the end");
    write_raw(tpath("huge.safetensors", p, sizeof p), ok, 200000000, 8);
    expect_open_fail(p, ECO_ETOOBIG, "exceeds");
    write_raw(tpath("oob.safetensors", p, sizeof p), "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 0, 8);
    expect_open_fail(p, ECO_EFORMAT, "out of bounds");
    write_raw(tpath("mismatch.safetensors", p, sizeof p), "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 0, 8);
    expect_open_fail(p, ECO_EFORMAT, "size mismatch");
    write_raw(tpath("mismatch16.safetensors", p, sizeof p), "{\"w\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 0, 16);
    expect_open_fail(p, ECO_EFORMAT, "size mismatch");
    write_raw(tpath("overlap.safetensors", p, sizeof p),
              "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 0, 12);
    expect_open_fail(p, ECO_EFORMAT, "overlap");
    write_raw(tpath("dtype.safetensors", p, sizeof p), "{\"w\":{\"dtype\":\"Q4_K\",\"shape\":[2],\"data_offsets\":[0,8]}}", 0, 8);
    expect_open_fail(p, ECO_EUNSUPPORTED, "unknown dtype \"Q4_K\"");
    write_raw(tpath("hole.safetensors", p, sizeof p),
              "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 0, 12);
    expect_open_fail(p, ECO_EFORMAT, "belong to no tensor");
    write_raw(tpath("trail.safetensors", p, sizeof p), ok, 0, 12);
    expect_open_fail(p, ECO_EFORMAT, "trailing");
    write_raw(tpath("brace.safetensors", p, sizeof p), "[1, 2]", 0, 0);
    expect_open_fail(p, ECO_EFORMAT, "starting with '{'");
    write_raw(tpath("json.safetensors", p, sizeof p), "{\"w\":{\"dtype\":\"F32\",", 0, 0);
    expect_open_fail(p, ECO_EFORMAT, "not valid JSON");
    write_raw(tpath("dup.safetensors", p, sizeof p),
              "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 0, 8);
    expect_open_fail(p, ECO_EFORMAT, "not valid JSON");
    write_raw(tpath("neg.safetensors", p, sizeof p), "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 0, 4);
    expect_open_fail(p, ECO_EFORMAT, "shape[0]");
    write_raw(tpath("rev.safetensors", p, sizeof p), "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 0, 4);
    expect_open_fail(p, ECO_EFORMAT, "end before begin");
    write_raw(tpath("meta.safetensors", p, sizeof p), "{\"__metadata__\":{\"k\":1}}", 0, 0);
    expect_open_fail(p, ECO_EFORMAT, "must be a string");
    write_raw(tpath("ovf.safetensors", p, sizeof p),
              "{\"w\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 0, 8);
    expect_open_fail(p, ECO_EFORMAT, "overflow");
    expect_open_fail(tpath("absent.safetensors", p, sizeof p), ECO_EIO, "No such file");
    /* trailing spaces in the header and an empty tensor are fine */
    write_raw(tpath("pad.safetensors", p, sizeof p),
              "{\"e\":{\"dtype\":\"F16\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
              "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}    ", 0, 4);
    eco_safetensors *st;
    if (eco_safetensors_open(p, &st)) fail_msg("%s", eco_last_error());
    assert_int_equal(eco_safetensors_count(st), 2);
    assert_int_equal(eco_safetensors_find(st, "s")->nelem, 1);
    assert_int_equal(eco_safetensors_find(st, "e")->nelem, 0);
    eco_safetensors_close(st);
}

static eco_model_config tiny(eco_model_family fam)
{
    eco_model_config c = {.family = fam, .hidden = 32, .intermediate = 48, .layers = 2, .heads = 4, .kv_heads = 2,
                          .head_dim = 8, .vocab = 50, .max_pos = 64, .rope_theta = 1e4, .rms_eps = 1e-5};
    snprintf(c.name, sizeof c.name, "tiny-%s", eco_model_family_name(fam));
    if (fam == ECO_FAMILY_QWEN2) c.qkv_bias = c.tie_embeddings = true;
    if (fam == ECO_FAMILY_PHI3) c.kv_heads = 4;
    return c;
}

/* Every logical tensor read back from the checkpoint equals the source, bit for bit (F32). */
static void assert_same_weights(eco_weights *a, eco_weights *b)
{
    const eco_model_config *c = eco_weights_config(a);
    for (int k = 0; k < ECO_W_COUNT; k++) {
        if (!eco_weight_present(c, (eco_weight_kind)k)) continue;
        int nl = eco_weight_per_layer((eco_weight_kind)k) ? c->layers : 1;
        for (int l = 0; l < nl; l++) {
            float *x, *y;
            uint64_t nx, ny;
            assert_int_equal(eco_weights_get(a, (eco_weight_kind)k, l, &x, &nx), ECO_OK);
            if (eco_weights_get(b, (eco_weight_kind)k, l, &y, &ny)) fail_msg("%s", eco_last_error());
            assert_true(nx == ny);
            if (memcmp(x, y, nx * sizeof *x)) fail_msg("%s layer %d differs", eco_weight_kind_name((eco_weight_kind)k), l);
            free(x);
            free(y);
        }
    }
}

/* A text file of a checkpoint folder, NUL-terminated (cut at cap - 1 bytes). */
static void read_text(const char *dir, const char *name, char *buf, size_t cap)
{
    char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
}

static void test_checkpoint_round_trip(void **state)
{
    (void)state;
    const eco_model_family fams[] = {ECO_FAMILY_LLAMA, ECO_FAMILY_QWEN2, ECO_FAMILY_PHI3};
    for (size_t f = 0; f < 3; f++) {
        eco_model_config c = tiny(fams[f]);
        eco_weights *syn, *ck;
        assert_int_equal(eco_weights_synthetic(&c, 7, &syn), ECO_OK);
        char dir[256];
        snprintf(dir, sizeof dir, "%s/ck-%s", tmpdir, eco_model_family_name(fams[f]));
        int shards = f == 0 ? 1 : 3;
        if (eco_weights_save(syn, dir, ECO_DT_F32, shards)) fail_msg("%s", eco_last_error());
        if (eco_weights_open(dir, NULL, &ck)) fail_msg("%s", eco_last_error());
        const eco_model_config *cc = eco_weights_config(ck);
        assert_int_equal(cc->family, c.family);
        assert_int_equal(cc->tie_embeddings, c.tie_embeddings);
        assert_same_weights(syn, ck);
        eco_weights_free(ck);
        if (fams[f] == ECO_FAMILY_PHI3) { /* really fused on disk */
            char buf[8192];
            read_text(dir, "model.safetensors.index.json", buf, sizeof buf);
            assert_non_null(strstr(buf, "model.layers.1.self_attn.qkv_proj.weight"));
            assert_non_null(strstr(buf, "model.layers.0.mlp.gate_up_proj.weight"));
            assert_null(strstr(buf, "q_proj"));
        }
        eco_weights_free(syn);
    }
}

/* Opening the checkpoint in dir (with config c, or its config.json) fails with code and a message holding msg. */
static void expect_open_error(const char *dir, const eco_model_config *c, eco_err code, const char *msg)
{
    eco_weights *ck = NULL;
    assert_int_equal(eco_weights_open(dir, c, &ck), code);
    assert_null(ck);
    if (!strstr(eco_last_error(), msg)) fail_msg("\"%s\" lacks \"%s\"", eco_last_error(), msg);
}

static void test_checkpoint_errors(void **state)
{
    (void)state;
    eco_model_config c = tiny(ECO_FAMILY_LLAMA);
    eco_weights *syn, *ck = NULL;
    assert_int_equal(eco_weights_synthetic(&c, 3, &syn), ECO_OK);
    char dir[256], p[300];
    snprintf(dir, sizeof dir, "%s/ck-err", tmpdir);
    assert_int_equal(eco_weights_save(syn, dir, ECO_DT_BF16, 2), ECO_OK);
    /* bf16 checkpoint reads back as bf16-rounded values */
    assert_int_equal(eco_weights_open(dir, NULL, &ck), ECO_OK);
    float *x, *y;
    uint64_t n;
    assert_int_equal(eco_weights_get(syn, ECO_W_DOWN, 1, &x, &n), ECO_OK);
    assert_int_equal(eco_weights_get(ck, ECO_W_DOWN, 1, &y, &n), ECO_OK);
    for (uint64_t i = 0; i < n; i++) assert_true(y[i] == eco_bf16_to_f32(eco_f32_to_bf16(x[i])));
    free(x);
    free(y);
    eco_weights_free(ck);
    ck = NULL;
    /* config disagreeing with the tensors */
    eco_model_config wrong = c;
    wrong.intermediate = 40;
    expect_open_error(dir, &wrong, ECO_EFORMAT, "does not match the config's [40, 32]");
    wrong = c;
    wrong.layers = 3;
    expect_open_error(dir, &wrong, ECO_ENOTFOUND, "model.layers.2.");
    wrong = c;
    wrong.family = ECO_FAMILY_QWEN2;
    wrong.qkv_bias = true;
    expect_open_error(dir, &wrong, ECO_ENOTFOUND, "q_proj.bias");
    /* an index that puts a tensor in the wrong shard */
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    FILE *f = fopen(p, "w");
    fputs("{\"weight_map\":{\"model.norm.weight\":\"model-00001-of-00002.safetensors\"}}", f);
    fclose(f);
    assert_int_equal(eco_weights_open(dir, NULL, &ck), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "does not hold it"));
    f = fopen(p, "w");
    fputs("{\"weight_map\":{\"model.norm.weight\":\"../x.safetensors\"}}", f);
    fclose(f);
    assert_int_equal(eco_weights_open(dir, NULL, &ck), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "plain file name"));
    /* no weights at all */
    snprintf(p, sizeof p, "%s/empty", tmpdir);
    mkdir(p, 0777);
    assert_int_equal(eco_weights_open(p, &c, &ck), ECO_ENOTFOUND);
    /* saving over a checkpoint is refused (its old index would be read with the new config), an empty folder is fine */
    assert_int_equal(eco_weights_save(syn, dir, ECO_DT_F32, 1), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "already holds a checkpoint"));
    assert_int_equal(eco_weights_save(syn, p, ECO_DT_F32, 1), ECO_OK);
    assert_int_equal(eco_weights_save(syn, p, ECO_DT_F32, 1), ECO_EINVAL);
    /* more shards than tensors: refused, and nothing is left behind */
    snprintf(p, sizeof p, "%s/too-many-shards", tmpdir);
    assert_int_equal(eco_weights_save(syn, p, ECO_DT_F32, 64), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "64 shards for"));
    struct stat st;
    assert_int_not_equal(stat(p, &st), 0);
    eco_weights_free(syn);
}

/* What a checkpoint holds beyond what its config reads is refused, not silently dropped: a layer the config does not
 * count, a bias it does not add, and a tensor in two shards. */
static void test_checkpoint_unread_tensors(void **state)
{
    (void)state;
    eco_model_config c = tiny(ECO_FAMILY_QWEN2), llama = c;
    eco_weights *syn, *ck = NULL;
    assert_int_equal(eco_weights_synthetic(&c, 5, &syn), ECO_OK);
    char dir[256], p[400];
    snprintf(dir, sizeof dir, "%s/ck-unread", tmpdir);
    assert_int_equal(eco_weights_save(syn, dir, ECO_DT_F32, 1), ECO_OK);
    eco_weights_free(syn);
    assert_int_equal(eco_weights_open(dir, NULL, &ck), ECO_OK);
    eco_weights_free(ck);
    ck = NULL;
    /* one layer fewer in the config than in the checkpoint */
    eco_model_config fewer = c;
    fewer.layers = 1;
    expect_open_error(dir, &fewer, ECO_EFORMAT, "the checkpoint has layer 1, the config's num_hidden_layers is 1");
    /* Qwen2's q/k/v biases under a Llama config of the same shapes */
    llama.family = ECO_FAMILY_LLAMA;
    llama.qkv_bias = false;
    expect_open_error(dir, &llama, ECO_EUNSUPPORTED, "q_proj.bias\" is not part of the llama layer the config describes (no bias there)");
    /* a second file holding a copy of model.norm.weight, listed in an index with the first */
    eco_safetensors *st;
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    assert_int_equal(eco_safetensors_open(p, &st), ECO_OK);
    const eco_st_tensor *norm = eco_safetensors_find(st, "model.norm.weight");
    assert_non_null(norm);
    eco_st_write_tensor copy[2] = {
        {.name = "model.norm.weight", .dtype = norm->dtype, .ndim = 1, .shape = {norm->shape[0]}, .data = norm->data},
        {.name = "extra.weight", .dtype = norm->dtype, .ndim = 1, .shape = {norm->shape[0]}, .data = norm->data}};
    snprintf(p, sizeof p, "%s/extra.safetensors", dir);
    assert_int_equal(eco_safetensors_write(p, copy, 2, NULL, 0), ECO_OK);
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"weight_map\":{\"extra.weight\":\"extra.safetensors\"", f);
    for (size_t i = 0; i < eco_safetensors_count(st); i++)
        fprintf(f, ",\"%s\":\"model.safetensors\"", eco_safetensors_at(st, i)->name);
    fputs("}}", f);
    fclose(f);
    eco_safetensors_close(st);
    expect_open_error(dir, NULL, ECO_EFORMAT, "\"model.norm.weight\" is in two shards");
}

/* Shards hold about equal bytes (the embedding is one of many tensors), and config.json names the files' dtype. */
static void test_checkpoint_shards_balanced(void **state)
{
    (void)state;
    eco_model_config c = tiny(ECO_FAMILY_LLAMA);
    c.layers = 12; /* tensors of several sizes, grouped by kind on disk */
    eco_weights *syn;
    assert_int_equal(eco_weights_synthetic(&c, 5, &syn), ECO_OK);
    char dir[256], p[300];
    snprintf(dir, sizeof dir, "%s/ck-balanced", tmpdir);
    const int shards = 3;
    assert_int_equal(eco_weights_save(syn, dir, ECO_DT_F16, shards), ECO_OK);
    long size[3], total = 0, largest_tensor = (long)c.vocab * c.hidden * 2 + 1024; /* + a header's share */
    for (int s = 0; s < shards; s++) {
        snprintf(p, sizeof p, "%s/model-%05d-of-%05d.safetensors", dir, s + 1, shards);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        size[s] = (long)st.st_size;
        total += size[s];
    }
    for (int s = 0; s < shards; s++) /* within one tensor of an even split */
        assert_true(labs(size[s] - total / shards) <= largest_tensor);
    char buf[4096];
    read_text(dir, "config.json", buf, sizeof buf);
    assert_non_null(strstr(buf, "\"torch_dtype\": \"float16\""));
    eco_weights_free(syn);
}

static void test_synthetic(void **state)
{
    (void)state;
    eco_model_config c = tiny(ECO_FAMILY_LLAMA);
    eco_weights *a, *b, *d;
    assert_int_equal(eco_weights_synthetic(&c, 11, &a), ECO_OK);
    assert_int_equal(eco_weights_synthetic(&c, 11, &b), ECO_OK);
    assert_int_equal(eco_weights_synthetic(&c, 12, &d), ECO_OK);
    float *x, *y, *z;
    uint64_t n;
    assert_int_equal(eco_weights_get(a, ECO_W_GATE, 1, &x, &n), ECO_OK);
    assert_int_equal(eco_weights_get(b, ECO_W_GATE, 1, &y, &n), ECO_OK);
    assert_int_equal(eco_weights_get(d, ECO_W_GATE, 1, &z, &n), ECO_OK);
    assert_int_equal(memcmp(x, y, n * 4), 0);  /* same seed, same bits */
    assert_true(memcmp(x, z, n * 4) != 0);     /* another seed differs */
    double s = 0, s2 = 0;
    for (uint64_t i = 0; i < n; i++) { s += x[i]; s2 += (double)x[i] * x[i]; }
    double sd = sqrt(s2 / n - (s / n) * (s / n));
    assert_near(sd, 1.0 / sqrt(32.0), 0.015); /* N(0, 1/fan_in) */
    assert_near(s / n, 0, 0.02);
    /* Pinned values: the generator is integer-only, so these hold on every platform. */
    assert_near(x[0], 0.0531853437, 1e-9);
    assert_near(x[1], -0.179810673, 1e-9);
    free(x); free(y); free(z);
    int dims[8];
    int k = eco_synthetic_outlier_dims(&c, 11, dims, 8);
    assert_int_equal(k, 2);
    assert_true(dims[0] < dims[1] && dims[1] < 32);
    assert_int_equal(eco_weights_get(a, ECO_W_ATTN_NORM, 0, &x, &n), ECO_OK);
    for (uint64_t i = 0; i < n; i++) {
        bool out = (int)i == dims[0] || (int)i == dims[1];
        if (out) assert_true(x[i] > 4.5f); else assert_true(x[i] > 0.7f && x[i] < 1.3f);
    }
    free(x);
    assert_int_equal(eco_weights_get(a, ECO_W_Q_BIAS, 0, &x, &n), ECO_ENOTFOUND); /* llama has no biases */
    assert_int_equal(eco_weights_get(a, ECO_W_Q, 2, &x, &n), ECO_EINVAL);
    eco_weights_free(a); eco_weights_free(b); eco_weights_free(d);
}

/* The cache gives the same bits by copy (get) and in place (borrow); borrowing without it is refused. */
static void test_weights_cache_borrow(void **state)
{
    (void)state;
    eco_model_config c = tiny(ECO_FAMILY_LLAMA);
    eco_weights *a, *b;
    assert_int_equal(eco_weights_synthetic(&c, 11, &a), ECO_OK);
    assert_int_equal(eco_weights_synthetic(&c, 11, &b), ECO_OK);
    const float *view, *again;
    uint64_t n, m;
    assert_false(eco_weights_cached(a));
    assert_int_equal(eco_weights_borrow(a, ECO_W_UP, 0, &view, &n), ECO_EINVAL);
    assert_int_equal(eco_weights_cache(a, true), ECO_OK);
    assert_true(eco_weights_cached(a));
    assert_int_equal(eco_weights_borrow(a, ECO_W_UP, 0, &view, &n), ECO_OK);
    assert_int_equal(eco_weights_borrow(a, ECO_W_UP, 0, &again, &m), ECO_OK);
    assert_ptr_equal(view, again); /* one copy, generated once */
    float *fresh, *copy;
    assert_int_equal(eco_weights_get(b, ECO_W_UP, 0, &fresh, &m), ECO_OK);
    assert_int_equal(m, n);
    assert_int_equal(memcmp(view, fresh, n * 4), 0);
    assert_int_equal(eco_weights_get(a, ECO_W_UP, 0, &copy, &m), ECO_OK);
    assert_true(copy != view);
    assert_int_equal(memcmp(copy, fresh, n * 4), 0);
    assert_int_equal(eco_weights_borrow(a, ECO_W_Q_BIAS, 0, &view, &n), ECO_ENOTFOUND);
    assert_int_equal(eco_weights_borrow(a, ECO_W_UP, 9, &view, &n), ECO_EINVAL);
    free(fresh);
    free(copy);
    eco_weights_free(a);
    eco_weights_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_round_trip), cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_lying_headers),    cmocka_unit_test(test_checkpoint_round_trip),
        cmocka_unit_test(test_checkpoint_errors), cmocka_unit_test(test_checkpoint_unread_tensors), cmocka_unit_test(test_checkpoint_shards_balanced), cmocka_unit_test(test_synthetic), cmocka_unit_test(test_weights_cache_borrow),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
