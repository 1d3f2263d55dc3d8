/* Logical decoder tensors from a checkpoint (safetensors, sharded or not) or from a seed (synthetic). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

#include <jansson.h>

#include "eco/model.h"
#include "eco/quant.h"
#include "eco/stats.h"

#define MAX_SHARDS 256

static const char *const kind_names[ECO_W_COUNT] = {
    "embed_tokens", "input_layernorm", "q_proj", "k_proj", "v_proj", "q_proj.bias", "k_proj.bias", "v_proj.bias",
    "o_proj", "post_attention_layernorm", "gate_proj", "up_proj", "down_proj", "norm", "lm_head",
};

const char *eco_weight_kind_name(eco_weight_kind k) { return (unsigned)k < ECO_W_COUNT ? kind_names[k] : "?"; }

bool eco_weight_per_layer(eco_weight_kind k)
{
    return k != ECO_W_EMBED && k != ECO_W_FINAL_NORM && k != ECO_W_LM_HEAD;
}

bool eco_weight_present(const eco_model_config *c, eco_weight_kind k)
{
    if (k == ECO_W_Q_BIAS || k == ECO_W_K_BIAS || k == ECO_W_V_BIAS) return c->qkv_bias;
    return (unsigned)k < ECO_W_COUNT;
}

void eco_weight_shape(const eco_model_config *c, eco_weight_kind k, uint64_t *rows, uint64_t *cols)
{
    uint64_t h = (uint64_t)c->hidden, q = (uint64_t)c->heads * c->head_dim, kv = (uint64_t)c->kv_heads * c->head_dim;
    uint64_t i = (uint64_t)c->intermediate, v = (uint64_t)c->vocab;
    uint64_t r = h, cl = 1;
    switch (k) {
    case ECO_W_EMBED: case ECO_W_LM_HEAD: r = v; cl = h; break;
    case ECO_W_ATTN_NORM: case ECO_W_MLP_NORM: case ECO_W_FINAL_NORM: r = h; break;
    case ECO_W_Q: r = q; cl = h; break;
    case ECO_W_K: case ECO_W_V: r = kv; cl = h; break;
    case ECO_W_Q_BIAS: r = q; break;
    case ECO_W_K_BIAS: case ECO_W_V_BIAS: r = kv; break;
    case ECO_W_O: r = h; cl = q; break;
    case ECO_W_GATE: case ECO_W_UP: r = i; cl = h; break;
    case ECO_W_DOWN: r = h; cl = i; break;
    case ECO_W_COUNT: r = 0; cl = 0; break;
    }
    *rows = r;
    *cols = cl;
}

eco_err eco_weight_hf_name(const eco_model_config *c, eco_weight_kind k, int layer, char *buf, size_t cap)
{
    bool phi3 = c->family == ECO_FAMILY_PHI3;
    const char *s;
    switch (k) {
    case ECO_W_EMBED: snprintf(buf, cap, "model.embed_tokens.weight"); return ECO_OK;
    case ECO_W_FINAL_NORM: snprintf(buf, cap, "model.norm.weight"); return ECO_OK;
    case ECO_W_LM_HEAD: snprintf(buf, cap, c->tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight"); return ECO_OK;
    case ECO_W_ATTN_NORM: s = "input_layernorm.weight"; break;
    case ECO_W_MLP_NORM: s = "post_attention_layernorm.weight"; break;
    case ECO_W_Q: s = phi3 ? "self_attn.qkv_proj.weight" : "self_attn.q_proj.weight"; break;
    case ECO_W_K: s = phi3 ? "self_attn.qkv_proj.weight" : "self_attn.k_proj.weight"; break;
    case ECO_W_V: s = phi3 ? "self_attn.qkv_proj.weight" : "self_attn.v_proj.weight"; break;
    case ECO_W_Q_BIAS: s = "self_attn.q_proj.bias"; break;
    case ECO_W_K_BIAS: s = "self_attn.k_proj.bias"; break;
    case ECO_W_V_BIAS: s = "self_attn.v_proj.bias"; break;
    case ECO_W_O: s = "self_attn.o_proj.weight"; break;
    case ECO_W_GATE: s = phi3 ? "mlp.gate_up_proj.weight" : "mlp.gate_proj.weight"; break;
    case ECO_W_UP: s = phi3 ? "mlp.gate_up_proj.weight" : "mlp.up_proj.weight"; break;
    case ECO_W_DOWN: s = "mlp.down_proj.weight"; break;
    default: return eco_fail(ECO_EINVAL, "weight kind %d out of range", (int)k);
    }
    if (layer < 0 || layer >= c->layers) return eco_fail(ECO_EINVAL, "layer %d out of range (0..%d)", layer, c->layers - 1);
    snprintf(buf, cap, "model.layers.%d.%s", layer, s);
    return ECO_OK;
}

/* Row offset of a logical tensor inside the fused Phi-3 tensor ([q; k; v] and [gate; up]), and the fused row count. */
static void fused_rows(const eco_model_config *c, eco_weight_kind k, uint64_t *row0, uint64_t *fused)
{
    uint64_t q = (uint64_t)c->heads * c->head_dim, kv = (uint64_t)c->kv_heads * c->head_dim, i = (uint64_t)c->intermediate;
    *row0 = 0;
    *fused = 0;
    if (c->family != ECO_FAMILY_PHI3) return;
    switch (k) {
    case ECO_W_Q: *fused = q + 2 * kv; break;
    case ECO_W_K: *row0 = q; *fused = q + 2 * kv; break;
    case ECO_W_V: *row0 = q + kv; *fused = q + 2 * kv; break;
    case ECO_W_GATE: *fused = 2 * i; break;
    case ECO_W_UP: *row0 = i; *fused = 2 * i; break;
    default: break;
    }
}

struct eco_weights {
    eco_model_config cfg;
    bool synthetic;
    uint64_t seed;
    eco_safetensors *shard[MAX_SHARDS];
    int n_shards;
    float **cache; /* [kind * (layers + 1) + layer + 1] when eco_weights_cache is on */
    pthread_mutex_t cache_lock;
};

const eco_model_config *eco_weights_config(const eco_weights *w) { return &w->cfg; }

void eco_weights_free(eco_weights *w)
{
    if (!w) return;
    for (int i = 0; i < w->n_shards; i++) eco_safetensors_close(w->shard[i]);
    if (w->cache) {
        for (size_t i = 0; i < (size_t)ECO_W_COUNT * (size_t)(w->cfg.layers + 1); i++) free(w->cache[i]);
        free(w->cache);
        pthread_mutex_destroy(&w->cache_lock);
    }
    free(w);
}

eco_err eco_weights_cache(eco_weights *w, bool on)
{
    if (on && !w->cache) {
        w->cache = calloc((size_t)ECO_W_COUNT * (size_t)(w->cfg.layers + 1), sizeof *w->cache);
        if (!w->cache) return eco_fail(ECO_ENOMEM, "weights cache: out of memory");
        pthread_mutex_init(&w->cache_lock, NULL);
    }
    return ECO_OK;
}

static float **cache_slot(eco_weights *w, eco_weight_kind k, int layer)
{
    if (!w->cache) return NULL;
    int l = eco_weight_per_layer(k) ? layer : -1;
    return &w->cache[(size_t)k * (size_t)(w->cfg.layers + 1) + (size_t)(l + 1)];
}

/* ---------------- synthetic ---------------- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27; x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Approximately standard normal from integer arithmetic only (Irwin-Hall over eight 16-bit uniforms), so every
 * platform produces the same bits; tails end at +-4.9 sd, which is fine for synthetic weights. */
static float det_normal(eco_rng *r)
{
    uint64_t a = eco_rng_next(r), b = eco_rng_next(r);
    uint32_t s = 0;
    for (int i = 0; i < 4; i++) s += (uint32_t)(a >> (16 * i) & 0xffff) + (uint32_t)(b >> (16 * i) & 0xffff);
    /* mean 8 * 32767.5, variance 8 * (65536^2 - 1) / 12 */
    return (float)(((double)s - 262140.0) * (1.0 / 53509.6254));
}

static int n_outliers(const eco_model_config *c)
{
    int k = c->hidden / 32;
    return k < 2 ? (c->hidden >= 2 ? 2 : 1) : k > 8 ? 8 : k;
}

int eco_synthetic_outlier_dims(const eco_model_config *c, uint64_t seed, int *dims, int cap)
{
    int k = n_outliers(c), got = 0;
    int buf[8];
    eco_rng r;
    eco_rng_seed(&r, mix64(seed ^ 0x6f75746c69657273ull));
    while (got < k) {
        int d = (int)eco_rng_below(&r, (size_t)c->hidden);
        bool dup = false;
        for (int i = 0; i < got; i++) dup |= buf[i] == d;
        if (!dup) buf[got++] = d;
    }
    for (int i = 1; i < k; i++) /* insertion sort, ascending */
        for (int j = i; j > 0 && buf[j - 1] > buf[j]; j--) { int t = buf[j]; buf[j] = buf[j - 1]; buf[j - 1] = t; }
    for (int i = 0; i < k && i < cap; i++) dims[i] = buf[i];
    return k;
}

#define SYN_CHUNK 65536u /* elements per independently seeded chunk: parallel fill, same bits */
#ifndef SYN_OUTLIER_OFFSET
#define SYN_OUTLIER_OFFSET 3.0f
#endif
#ifndef SYN_OUTLIER_GAIN
#define SYN_OUTLIER_GAIN 6.0f
#endif

typedef struct {
    const eco_weights *w;
    eco_weight_kind kind;
    int layer;
    float *out;
    uint64_t n, cols;
    double sd;
    int nthreads, tid;
} syn_job;

static void syn_fill_range(const syn_job *j, uint64_t chunk0, uint64_t chunk1)
{
    for (uint64_t ch = chunk0; ch < chunk1; ch++) {
        eco_rng r;
        eco_rng_seed(&r, mix64(j->w->seed ^ mix64(((uint64_t)j->kind << 48) ^ ((uint64_t)(j->layer + 1) << 32) ^ ch)));
        uint64_t e1 = (ch + 1) * SYN_CHUNK < j->n ? (ch + 1) * SYN_CHUNK : j->n;
        for (uint64_t e = ch * SYN_CHUNK; e < e1; e++) j->out[e] = (float)(j->sd * det_normal(&r));
    }
}

static void *syn_thread(void *arg)
{
    const syn_job *j = arg;
    uint64_t chunks = (j->n + SYN_CHUNK - 1) / SYN_CHUNK;
    syn_fill_range(j, chunks * (uint64_t)j->tid / (uint64_t)j->nthreads, chunks * (uint64_t)(j->tid + 1) / (uint64_t)j->nthreads);
    return NULL;
}

#define SYN_MAX_THREADS 32

static eco_err synth(const eco_weights *w, eco_weight_kind k, int layer, float *out, uint64_t rows, uint64_t cols)
{
    const eco_model_config *c = &w->cfg;
    uint64_t n = rows * cols;
    bool norm = k == ECO_W_ATTN_NORM || k == ECO_W_MLP_NORM || k == ECO_W_FINAL_NORM;
    double sd;
    if (k == ECO_W_EMBED || k == ECO_W_LM_HEAD) sd = 2.0 / sqrt((double)c->hidden);
    else if (norm) sd = 0.05;
    else if (k == ECO_W_Q_BIAS || k == ECO_W_K_BIAS || k == ECO_W_V_BIAS) sd = 0.02;
    else sd = 1.0 / sqrt((double)cols);
    if (k == ECO_W_O || k == ECO_W_DOWN) sd /= sqrt(2.0 * c->layers);
    syn_job base = {.w = w, .kind = k, .layer = eco_weight_per_layer(k) ? layer : -1, .out = out, .n = n, .cols = cols, .sd = sd};
    /* Chunk-seeded, so the values do not depend on the thread count: use every core (a 14B model is 15e9 normals). */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = n >= 8u * SYN_CHUNK ? (int)(cores < 1 ? 1 : cores > SYN_MAX_THREADS ? SYN_MAX_THREADS : cores) : 1;
    if (nt > 1) {
        pthread_t th[SYN_MAX_THREADS];
        syn_job jobs[SYN_MAX_THREADS];
        int started = 0;
        for (int t = 0; t < nt; t++) {
            jobs[t] = base;
            jobs[t].nthreads = nt;
            jobs[t].tid = t;
            if (pthread_create(&th[t], NULL, syn_thread, &jobs[t])) break;
            started++;
        }
        for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
        for (int t = started; t < nt; t++) syn_thread(&jobs[t]); /* thread creation failed: finish inline */
    } else {
        base.nthreads = 1;
        syn_thread(&base);
    }
    if (norm)
        for (uint64_t i = 0; i < n; i++) out[i] += 1.0f;
    int dims[8];
    int nd = eco_synthetic_outlier_dims(c, w->seed, dims, 8);
    if (k == ECO_W_ATTN_NORM || k == ECO_W_MLP_NORM) /* large gains on outlier dims: post-norm |x| well above 6 */
        for (int i = 0; i < nd; i++) out[dims[i]] *= SYN_OUTLIER_GAIN;
    /* Outlier columns keep full-size weights at real widths (their products dominate, as in real LLMs), but in
     * tiny test models, where a few dims are a large share of the row, they are scaled so the outliers carry at
     * most ~30% of the output variance and the network stays well conditioned. */
    if (k == ECO_W_Q || k == ECO_W_K || k == ECO_W_V || k == ECO_W_GATE || k == ECO_W_UP) {
        float sc = (float)(sqrt(0.3 * c->hidden / nd) / 15.0);
        if (sc < 1.0f)
            for (uint64_t r = 0; r < rows; r++)
                for (int i = 0; i < nd; i++) out[r * cols + (uint64_t)dims[i]] *= sc;
    }
    if (k == ECO_W_FINAL_NORM) /* the logits should follow the token, not the constant outlier offset */
        for (int i = 0; i < nd; i++) out[dims[i]] *= 1.0f / (SYN_OUTLIER_OFFSET * SYN_OUTLIER_OFFSET);
    if (k == ECO_W_EMBED) /* a constant residual offset keeps the outlier dims large at every position */
        for (uint64_t r = 0; r < rows; r++)
            for (int i = 0; i < nd; i++) out[r * cols + (uint64_t)dims[i]] += (i % 2 ? -1.0f : 1.0f) * SYN_OUTLIER_OFFSET;
    return ECO_OK;
}

eco_err eco_weights_synthetic(const eco_model_config *c, uint64_t seed, eco_weights **out)
{
    eco_err e = eco_model_config_validate(c);
    if (e) return e;
    eco_weights *w = calloc(1, sizeof *w);
    if (!w) return eco_fail(ECO_ENOMEM, "out of memory");
    w->cfg = *c;
    w->synthetic = true;
    w->seed = seed;
    *out = w;
    return ECO_OK;
}

/* ---------------- checkpoints ---------------- */

static const eco_st_tensor *find_tensor(const eco_weights *w, const char *name)
{
    for (int i = 0; i < w->n_shards; i++) {
        const eco_st_tensor *t = eco_safetensors_find(w->shard[i], name);
        if (t) return t;
    }
    return NULL;
}

static eco_err check_tensor(const eco_weights *w, eco_weight_kind k, int layer)
{
    const eco_model_config *c = &w->cfg;
    char name[160];
    eco_err e = eco_weight_hf_name(c, k, layer, name, sizeof name);
    if (e) return e;
    const eco_st_tensor *t = find_tensor(w, name);
    if (!t) return eco_fail(ECO_ENOTFOUND, "tensor \"%s\" is missing from the checkpoint", name);
    if (t->dtype != ECO_DT_F16 && t->dtype != ECO_DT_BF16 && t->dtype != ECO_DT_F32)
        return eco_fail(ECO_EUNSUPPORTED, "tensor \"%s\": dtype %s is not supported (F16, BF16, F32; pre-quantized checkpoints are not read)",
                        name, eco_dtype_name(t->dtype));
    uint64_t rows, cols, row0, fused;
    eco_weight_shape(c, k, &rows, &cols);
    fused_rows(c, k, &row0, &fused);
    if (fused) rows = fused;
    bool vec = cols == 1 && k != ECO_W_EMBED && k != ECO_W_LM_HEAD;
    bool ok = vec ? (t->ndim == 1 && t->shape[0] == rows) : (t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols);
    if (!ok) {
        char got[128] = "";
        size_t off = 0;
        for (int d = 0; d < t->ndim && off < sizeof got; d++)
            off += (size_t)snprintf(got + off, sizeof got - off, "%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
        if (vec)
            return eco_fail(ECO_EFORMAT, "tensor \"%s\": shape [%s] does not match the config's [%llu]", name, got, (unsigned long long)rows);
        return eco_fail(ECO_EFORMAT, "tensor \"%s\": shape [%s] does not match the config's [%llu, %llu]", name, got,
                        (unsigned long long)rows, (unsigned long long)cols);
    }
    return ECO_OK;
}

static eco_err check_all(const eco_weights *w)
{
    const eco_model_config *c = &w->cfg;
    for (int k = 0; k < ECO_W_COUNT; k++) {
        if (!eco_weight_present(c, (eco_weight_kind)k)) continue;
        int nl = eco_weight_per_layer((eco_weight_kind)k) ? c->layers : 1;
        for (int l = 0; l < nl; l++) {
            eco_err e = check_tensor(w, (eco_weight_kind)k, l);
            if (e) return e;
        }
    }
    return ECO_OK;
}

/* Whether `name` is a tensor the config reads at this layer. */
static bool read_at_layer(const eco_model_config *c, int layer, const char *name)
{
    char want[160];
    for (int k = 0; k < ECO_W_COUNT; k++)
        if (eco_weight_present(c, (eco_weight_kind)k) && eco_weight_per_layer((eco_weight_kind)k) &&
            !eco_weight_hf_name(c, (eco_weight_kind)k, layer, want, sizeof want) && !strcmp(want, name))
            return true;
    return false;
}

/* What the checkpoint holds beyond what the config reads. HF ignores a layer's rotary_emb.inv_freq and a tied
 * model's lm_head.weight, and so does this; but a layer the config does not count, a bias it does not add or a
 * per-layer weight it does not know would make the measured model another than the checkpoint without a word (a
 * 2-layer checkpoint under num_hidden_layers 1 ran as one layer): refused. A tensor in two shards is ambiguous. */
static eco_err check_unread(const eco_weights *w)
{
    const eco_model_config *c = &w->cfg;
    for (int s = 0; s < w->n_shards; s++)
        for (size_t i = 0; i < eco_safetensors_count(w->shard[s]); i++) {
            const eco_st_tensor *t = eco_safetensors_at(w->shard[s], i);
            const char *name = t->name;
            if (find_tensor(w, name) != t) /* the copy every read takes is an earlier shard's */
                return eco_fail(ECO_EFORMAT, "tensor \"%s\" is in two shards: which one to read is ambiguous", name);
            static const char prefix[] = "model.layers.";
            if (strncmp(name, prefix, sizeof prefix - 1)) continue;
            char *end;
            errno = 0;
            long layer = strtol(name + sizeof prefix - 1, &end, 10); /* strtol, not sscanf: a 30-digit index is no UB */
            if (!isdigit((unsigned char)name[sizeof prefix - 1]) || *end != '.')
                return eco_fail(ECO_EFORMAT, "tensor \"%s\": its layer index is not a number", name);
            int at = (int)(end + 1 - name);
            if (errno || layer >= c->layers)
                return eco_fail(ECO_EFORMAT, "tensor \"%s\": the checkpoint has layer %ld, the config's num_hidden_layers is %d",
                                name, layer, c->layers);
            if (read_at_layer(c, (int)layer, name) || !strcmp(name + at, "self_attn.rotary_emb.inv_freq")) continue;
            return eco_fail(ECO_EUNSUPPORTED, "tensor \"%s\" is not part of the %s layer the config describes (%s): it "
                            "would be ignored and the model run would not be the checkpoint's", name,
                            eco_model_family_name(c->family), strstr(name + at, ".bias") ? "no bias there" : "an unknown weight");
        }
    return ECO_OK;
}

static bool is_file(const char *p)
{
    struct stat sb;
    return !stat(p, &sb) && S_ISREG(sb.st_mode);
}

static eco_err add_shard(eco_weights *w, const char *path)
{
    if (w->n_shards >= MAX_SHARDS) return eco_fail(ECO_ETOOBIG, "more than %d shards", MAX_SHARDS);
    return eco_safetensors_open(path, &w->shard[w->n_shards++]) ? (w->n_shards--, eco_last_error_code()) : ECO_OK;
}

/* model.safetensors.index.json: {"weight_map": {tensor: file}}; opens each distinct file once and checks that
 * every mapped tensor is in the file the index names. */
static eco_err open_index(eco_weights *w, const char *dir, const char *index_path)
{
    json_error_t jerr;
    json_t *root = json_load_file(index_path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return eco_fail(ECO_EFORMAT, "%s: invalid JSON at line %d: %s", index_path, jerr.line, jerr.text);
    eco_err e = ECO_OK;
    json_t *map = json_object_get(root, "weight_map");
    if (!json_is_object(map)) { e = eco_fail(ECO_EFORMAT, "%s: missing object \"weight_map\"", index_path); goto out; }
    const char *files[MAX_SHARDS];
    int nf = 0;
    const char *name;
    json_t *v;
    json_object_foreach(map, name, v) {
        if (!json_is_string(v)) { e = eco_fail(ECO_EFORMAT, "%s: weight_map[\"%s\"] must be a file name", index_path, name); goto out; }
        const char *f = json_string_value(v);
        if (strchr(f, '/') || !strcmp(f, "..") || !*f) { e = eco_fail(ECO_EFORMAT, "%s: shard name \"%s\" must be a plain file name", index_path, f); goto out; }
        int idx = -1;
        for (int i = 0; i < nf; i++) if (!strcmp(files[i], f)) idx = i;
        if (idx < 0) {
            if (nf >= MAX_SHARDS) { e = eco_fail(ECO_ETOOBIG, "%s: more than %d shards", index_path, MAX_SHARDS); goto out; }
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, f);
            if ((e = add_shard(w, path))) goto out;
            files[nf] = f;
            idx = nf++;
        }
        if (!eco_safetensors_find(w->shard[idx], name)) {
            e = eco_fail(ECO_EFORMAT, "%s: weight_map puts \"%s\" in %s, which does not hold it", index_path, name, f);
            goto out;
        }
    }
out:
    json_decref(root);
    return e;
}

eco_err eco_weights_open(const char *path, const eco_model_config *c, eco_weights **out)
{
    eco_weights *w = calloc(1, sizeof *w);
    if (!w) return eco_fail(ECO_ENOMEM, "out of memory");
    eco_err e = ECO_OK;
    char buf[4096];
    if (is_file(path)) {
        if (!c) { e = eco_fail(ECO_EINVAL, "%s: a single safetensors file needs a model config (--config path/to/config.json)", path); goto fail; }
        w->cfg = *c;
        if ((e = add_shard(w, path))) goto fail;
    } else {
        if (c) {
            w->cfg = *c;
        } else {
            snprintf(buf, sizeof buf, "%s/config.json", path);
            if ((e = eco_model_config_from_json(buf, &w->cfg))) goto fail;
        }
        snprintf(buf, sizeof buf, "%s/model.safetensors.index.json", path);
        if (is_file(buf)) {
            if ((e = open_index(w, path, buf))) goto fail;
        } else {
            snprintf(buf, sizeof buf, "%s/model.safetensors", path);
            if (!is_file(buf)) { e = eco_fail(ECO_ENOTFOUND, "%s: neither model.safetensors nor model.safetensors.index.json found", path); goto fail; }
            if ((e = add_shard(w, buf))) goto fail;
        }
    }
    if ((e = eco_model_config_validate(&w->cfg)) || (e = check_all(w)) || (e = check_unread(w))) goto fail;
    *out = w;
    return ECO_OK;
fail:
    eco_weights_free(w);
    eco_fail_context("loading weights from %s: ", path);
    return e;
}

/* Checks k/layer, resolves a tied lm_head and gives the tensor's shape. */
static eco_err resolve(const eco_weights *w, eco_weight_kind *k, int layer, uint64_t *rows, uint64_t *cols)
{
    const eco_model_config *c = &w->cfg;
    if ((unsigned)*k >= ECO_W_COUNT || !eco_weight_present(c, *k))
        return eco_fail(ECO_ENOTFOUND, "weight %s is not part of a %s model", eco_weight_kind_name(*k), eco_model_family_name(c->family));
    if (eco_weight_per_layer(*k) && (layer < 0 || layer >= c->layers))
        return eco_fail(ECO_EINVAL, "weight %s: layer %d out of range (0..%d)", eco_weight_kind_name(*k), layer, c->layers - 1);
    if (*k == ECO_W_LM_HEAD && c->tie_embeddings) *k = ECO_W_EMBED;
    eco_weight_shape(c, *k, rows, cols);
    return ECO_OK;
}

/* A fresh fp32 buffer with the tensor (generated or read). */
static eco_err produce(eco_weights *w, eco_weight_kind k, int layer, uint64_t rows, uint64_t cols, float **out)
{
    const eco_model_config *c = &w->cfg;
    float *buf = malloc(rows * cols * sizeof *buf);
    if (!buf) return eco_fail(ECO_ENOMEM, "weight %s: out of memory for %llu floats", eco_weight_kind_name(k), (unsigned long long)(rows * cols));
    eco_err e;
    if (w->synthetic) {
        e = synth(w, k, layer, buf, rows, cols);
    } else {
        char name[160];
        uint64_t row0, fused;
        fused_rows(c, k, &row0, &fused);
        if (!(e = eco_weight_hf_name(c, k, layer, name, sizeof name))) {
            const eco_st_tensor *t = find_tensor(w, name);
            e = t ? eco_st_tensor_read_f32(t, row0 * cols, rows * cols, buf)
                  : eco_fail(ECO_ENOTFOUND, "tensor \"%s\" is missing from the checkpoint", name);
        }
    }
    if (e) { free(buf); return e; }
    *out = buf;
    return ECO_OK;
}

bool eco_weights_cached(const eco_weights *w) { return w && w->cache; }

eco_err eco_weights_borrow(eco_weights *w, eco_weight_kind k, int layer, const float **out, uint64_t *n)
{
    if (!w->cache) return eco_fail(ECO_EINVAL, "weights: borrowing needs the cache on (eco_weights_cache)");
    uint64_t rows = 0, cols = 0;
    eco_err e = resolve(w, &k, layer, &rows, &cols);
    if (e) return e;
    float **slot = cache_slot(w, k, layer);
    pthread_mutex_lock(&w->cache_lock);
    float *hit = *slot;
    pthread_mutex_unlock(&w->cache_lock);
    if (!hit) {
        float *buf;
        if ((e = produce(w, k, layer, rows, cols, &buf))) return e;
        pthread_mutex_lock(&w->cache_lock);
        if (!*slot) *slot = buf; /* another thread may have produced it meanwhile: keep the first */
        else free(buf);
        hit = *slot;
        pthread_mutex_unlock(&w->cache_lock);
    }
    *out = hit;
    *n = rows * cols;
    return ECO_OK;
}

eco_err eco_weights_get(eco_weights *w, eco_weight_kind k, int layer, float **out, uint64_t *n)
{
    eco_err e;
    if (w->cache) { /* a copy of the cached tensor (borrow resolves k and layer) */
        const float *view = NULL;
        uint64_t cnt = 0;
        if ((e = eco_weights_borrow(w, k, layer, &view, &cnt))) return e;
        float *copy = malloc(cnt * sizeof *copy);
        if (!copy) return eco_fail(ECO_ENOMEM, "weight %s: out of memory", eco_weight_kind_name(k));
        memcpy(copy, view, cnt * sizeof *copy);
        *out = copy;
        *n = cnt;
        return ECO_OK;
    }
    uint64_t rows = 0, cols = 0;
    if ((e = resolve(w, &k, layer, &rows, &cols)) || (e = produce(w, k, layer, rows, cols, out))) return e;
    *n = rows * cols;
    return ECO_OK;
}

eco_err eco_weights_get_fp16(eco_weights *w, eco_weight_kind k, int layer, float **out, uint64_t *n)
{
    eco_err e = eco_weights_get(w, k, layer, out, n);
    if (e) return e;
    float *v = *out;
    for (uint64_t i = 0; i < *n; i++) {
        if (isfinite(v[i]) && fabsf(v[i]) <= ECO_F16_MAX) {
            v[i] = eco_f16_to_f32(eco_f32_to_f16(v[i]));
            continue;
        }
        char name[160];
        eco_weight_hf_name(&w->cfg, k, layer < 0 ? 0 : layer, name, sizeof name);
        e = eco_fail(ECO_EFORMAT, "%s[%llu] = %g is %s", name, (unsigned long long)i, (double)v[i],
                     isfinite(v[i]) ? "outside the fp16 range the engines keep it in" : "not finite");
        free(v);
        *out = NULL;
        return e;
    }
    return ECO_OK;
}

/* ---------------- saving (fixtures, round trips) ---------------- */

typedef struct {
    char name[160];
    eco_weight_kind kinds[3];
    int nk, layer;
    uint64_t rows, cols;
    void *data;
} save_item;

static eco_err save_item_fill(eco_weights *w, save_item *it, eco_dtype dt)
{
    unsigned eb = eco_dtype_bytes(dt);
    it->data = malloc(it->rows * it->cols * eb + 1);
    if (!it->data) return eco_fail(ECO_ENOMEM, "out of memory");
    uint64_t off = 0;
    for (int i = 0; i < it->nk; i++) {
        float *f;
        uint64_t n;
        eco_err e = eco_weights_get(w, it->kinds[i], it->layer, &f, &n);
        if (e) return e;
        uint8_t *dst = (uint8_t *)it->data + off * eb;
        for (uint64_t j = 0; j < n; j++) {
            if (dt == ECO_DT_F32) memcpy(dst + 4 * j, &f[j], 4);
            else {
                uint16_t h = dt == ECO_DT_F16 ? eco_f32_to_f16(f[j]) : eco_f32_to_bf16(f[j]);
                memcpy(dst + 2 * j, &h, 2);
            }
        }
        off += n;
        free(f);
    }
    return ECO_OK;
}

bool eco_checkpoint_file_name(const char *name)
{
    size_t len = strlen(name);
    return !strcmp(name, "config.json") || !strcmp(name, "model.safetensors.index.json") ||
           (len > 12 && !strcmp(name + len - 12, ".safetensors"));
}

/* A folder that already holds a checkpoint's files: writing into it would mix two checkpoints (the loader reads an
 * old index and its shards before a new model.safetensors). */
static eco_err refuse_checkpoint_folder(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? ECO_OK : eco_fail(ECO_EIO, "%s: %s", dir, strerror(errno));
    char found[256] = "";
    for (struct dirent *ent; (ent = readdir(d)) && !found[0];)
        if (eco_checkpoint_file_name(ent->d_name)) snprintf(found, sizeof found, "%s", ent->d_name);
    closedir(d);
    if (found[0])
        return eco_fail(ECO_EINVAL, "%s already holds a checkpoint (%s): save into a new or empty folder, so no file of "
                                    "another checkpoint is read with this one", dir, found);
    return ECO_OK;
}

/* Enumerate the HF tensors of a config: Phi-3 fuses q/k/v and gate/up; biases and the untied head as it says. */
static save_item *save_items(const eco_model_config *c, size_t *count)
{
    size_t cap = (size_t)c->layers * ECO_W_COUNT + ECO_W_COUNT, n = 0;
    save_item *items = calloc(cap, sizeof *items);
    if (!items) return NULL;
    bool phi3 = c->family == ECO_FAMILY_PHI3;
    for (int k = 0; k < ECO_W_COUNT; k++) {
        eco_weight_kind kind = (eco_weight_kind)k;
        if (!eco_weight_present(c, kind) || (kind == ECO_W_LM_HEAD && c->tie_embeddings)) continue;
        if (phi3 && (kind == ECO_W_K || kind == ECO_W_V || kind == ECO_W_UP)) continue; /* folded into Q / GATE */
        int nl = eco_weight_per_layer(kind) ? c->layers : 1;
        for (int l = 0; l < nl; l++) {
            save_item *it = &items[n++];
            it->layer = l;
            it->kinds[it->nk++] = kind;
            if (phi3 && kind == ECO_W_Q) { it->kinds[it->nk++] = ECO_W_K; it->kinds[it->nk++] = ECO_W_V; }
            if (phi3 && kind == ECO_W_GATE) it->kinds[it->nk++] = ECO_W_UP;
            eco_weight_hf_name(c, kind, l, it->name, sizeof it->name);
            for (int i = 0; i < it->nk; i++) {
                uint64_t r, cl;
                eco_weight_shape(c, it->kinds[i], &r, &cl);
                it->rows += r;
                it->cols = cl;
            }
        }
    }
    *count = n;
    return items;
}

/* Shard boundaries of about equal bytes (by tensor count, an embedding-heavy model had one shard 7x another):
 * a tensor goes to the shard its middle falls in, and each shard keeps at least one. cut[0..shards]. */
static bool shard_cuts(const save_item *items, size_t n, int shards, size_t *cut)
{
    double *upto = calloc(n + 1, sizeof *upto); /* elements of items [0, k) */
    if (!upto) return false;
    for (size_t k = 0; k < n; k++) upto[k + 1] = upto[k] + (double)items[k].rows * (double)items[k].cols;
    cut[0] = 0;
    size_t at = 0;
    for (int s = 1; s < shards; s++) {
        while (at < n && (upto[at] + upto[at + 1]) / 2 < upto[n] * s / shards) at++;
        size_t lo = cut[s - 1] + 1, hi = n - (size_t)(shards - s);
        cut[s] = at < lo ? lo : at > hi ? hi : at;
        at = cut[s];
    }
    cut[shards] = n;
    free(upto);
    return true;
}

static void shard_name(int s, int shards, char *out, size_t cap)
{
    if (shards == 1) snprintf(out, cap, "model.safetensors");
    else snprintf(out, cap, "model-%05d-of-%05d.safetensors", s + 1, shards);
}

static eco_err write_config(const eco_weights *w, eco_dtype dtype, const char *path)
{
    eco_model_config saved = w->cfg; /* its torch_dtype is the dtype of these files; random values say so */
    if (w->synthetic) saved.synthetic_checkpoint = true, saved.synthetic_seed = w->seed;
    snprintf(saved.torch_dtype, sizeof saved.torch_dtype, "%s", dtype == ECO_DT_F16 ? "float16" : dtype == ECO_DT_BF16 ? "bfloat16" : "float32");
    char *cfg_json;
    eco_err e = eco_model_config_to_json(&saved, &cfg_json);
    if (e) return e;
    FILE *f = fopen(path, "w");
    if (!f) { free(cfg_json); return eco_fail(ECO_EIO, "%s: %s", path, strerror(errno)); }
    bool ok = fputs(cfg_json, f) >= 0;
    free(cfg_json);
    if (fclose(f) || !ok) return eco_fail(ECO_EIO, "%s: write failed", path);
    return ECO_OK;
}

eco_err eco_weights_save(eco_weights *w, const char *dir, eco_dtype dtype, int shards)
{
    const eco_model_config *c = &w->cfg;
    if (dtype != ECO_DT_F32 && dtype != ECO_DT_F16 && dtype != ECO_DT_BF16)
        return eco_fail(ECO_EINVAL, "saving weights: dtype must be F32, F16 or BF16");
    if (shards < 1 || shards > 64) return eco_fail(ECO_EINVAL, "saving weights: shards must be 1..64");
    eco_err e = refuse_checkpoint_folder(dir);
    if (e) return e;
    size_t n;
    save_item *items = save_items(c, &n);
    if (!items) return eco_fail(ECO_ENOMEM, "out of memory");
    if ((size_t)shards > n) {
        free(items);
        return eco_fail(ECO_EINVAL, "saving weights: %d shards for %zu tensors (at most one a shard)", shards, n);
    }
    size_t cut[65];
    if (!shard_cuts(items, n, shards, cut)) { free(items); return eco_fail(ECO_ENOMEM, "out of memory"); }
    if (mkdir(dir, 0777) && errno != EEXIST) { free(items); return eco_fail(ECO_EIO, "%s: %s", dir, strerror(errno)); }

    /* shards, then the index, then config.json: a folder with a config is a whole checkpoint; a failure removes
     * what was written */
    char path[4096], fname[64];
    int written = 0;
    json_t *wmap = json_object();
    for (int s = 0; s < shards && !e; s++) {
        size_t i0 = cut[s], i1 = cut[s + 1];
        eco_st_write_tensor *wt = calloc(i1 - i0 + 1, sizeof *wt);
        if (!wt) { e = eco_fail(ECO_ENOMEM, "out of memory"); break; }
        for (size_t i = i0; i < i1 && !e; i++) {
            save_item *it = &items[i];
            if ((e = save_item_fill(w, it, dtype))) break;
            eco_st_write_tensor *t = &wt[i - i0];
            t->name = it->name;
            t->dtype = dtype;
            bool vec = it->cols == 1 && !(it->nk == 1 && (it->kinds[0] == ECO_W_EMBED || it->kinds[0] == ECO_W_LM_HEAD));
            t->ndim = vec ? 1 : 2;
            t->shape[0] = it->rows;
            t->shape[1] = it->cols;
            t->data = it->data;
        }
        shard_name(s, shards, fname, sizeof fname);
        snprintf(path, sizeof path, "%s/%s", dir, fname);
        if (!e) {
            const char *meta[] = {"format", "pt"};
            e = eco_safetensors_write(path, wt, i1 - i0, meta, 1);
            written = s + 1; /* a shard that failed part-way is removed with the others */
        }
        for (size_t i = i0; i < i1; i++) {
            json_object_set_new(wmap, items[i].name, json_string(fname));
            free(items[i].data);
            items[i].data = NULL;
        }
        free(wt);
    }
    for (size_t k = 0; k < n; k++) free(items[k].data);
    free(items);
    bool index_written = false;
    if (!e && shards > 1) {
        json_t *idx = json_pack("{s:{}, s:o}", "metadata", "weight_map", wmap);
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        if (json_dump_file(idx, path, JSON_INDENT(2))) e = eco_fail(ECO_EIO, "%s: write failed", path);
        else index_written = true;
        json_decref(idx);
    } else {
        json_decref(wmap);
    }
    if (!e) {
        snprintf(path, sizeof path, "%s/config.json", dir);
        if ((e = write_config(w, dtype, path))) unlink(path);
    }
    if (e) {
        for (int s = 0; s < written; s++) {
            shard_name(s, shards, fname, sizeof fname);
            snprintf(path, sizeof path, "%s/%s", dir, fname);
            unlink(path);
        }
        if (index_written) {
            snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
            unlink(path);
        }
    }
    return e;
}
