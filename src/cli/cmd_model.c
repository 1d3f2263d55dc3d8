/* eco model list | info NAME | info --config config.json | generate ... */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "eco/engine.h"
#include "eco/model.h"

/* A built-in tiny Llama-shaped model for quick manual runs and smoke tests. */
static const eco_model_config tiny_preset = {
    .name = "tiny", .hf_id = "", .family = ECO_FAMILY_LLAMA, .hidden = 64, .intermediate = 160, .layers = 2,
    .heads = 4, .kv_heads = 2, .head_dim = 16, .vocab = 256, .max_pos = 512, .rope_theta = 1e4, .rms_eps = 1e-5,
};

static void usage(FILE *f)
{
    fprintf(f, "usage: eco model list\n"
               "       eco model info NAME | --config path/to/config.json\n"
               "       eco model generate (--preset NAME [--synthetic] [--seed N] | --weights DIR|FILE [--config config.json])\n"
               "                          [--precision P] [--tokens N] [--prompt-ids 1,2,3] [--threads N]\n"
               "                          [--quantize-lm-head] [--int8-threshold T] [--max-seq N]\n"
               "       eco model save NAME --out DIR [--seed N] [--dtype f16|bf16|f32] [--shards N]\n"
               "                          (synthetic weights of a preset as an HF-style checkpoint folder)\n"
               "presets: eco model list (and \"tiny\": 2 layers, hidden 64, vocab 256)\n");
}

static const eco_model_config *find_preset(const char *name)
{
    if (!strcmp(name, "tiny")) return &tiny_preset;
    return eco_preset_find(name);
}

static int cmd_list(void)
{
    printf("%-16s %-36s %-8s %7s %6s %7s %5s %6s %5s %8s %10s\n", "name", "hf_id", "family", "params", "layers",
           "hidden", "heads", "kv", "hd", "vocab", "fp16 GiB");
    for (size_t i = 0; i < eco_preset_count(); i++) {
        const eco_model_config *c = eco_preset_at(i);
        printf("%-16s %-36s %-8s %6.2fB %6d %7d %5d %6d %5d %8d %10.2f\n", c->name, c->hf_id,
               eco_model_family_name(c->family), eco_model_param_count(c) / 1e9, c->layers, c->hidden, c->heads,
               c->kv_heads, c->head_dim, c->vocab, eco_model_weight_bytes(c, ECO_PREC_FP16, false) / (1024.0 * 1024.0 * 1024.0));
    }
    return 0;
}

static int cmd_info(const eco_model_config *c)
{
    if (c->hf_id[0] && strcmp(c->hf_id, c->name)) printf("model         %s  (%s)\n", c->name, c->hf_id);
    else printf("model         %s\n", c->name);
    printf("family        %s\n", eco_model_family_name(c->family));
    printf("params        %llu (%.3fB)\n", (unsigned long long)eco_model_param_count(c), eco_model_param_count(c) / 1e9);
    printf("shapes        hidden %d, intermediate %d, layers %d, heads %d, kv_heads %d, head_dim %d, vocab %d\n",
           c->hidden, c->intermediate, c->layers, c->heads, c->kv_heads, c->head_dim, c->vocab);
    printf("rope          theta %g%s", c->rope_theta, c->rope_llama3 ? ", llama3 scaling" : "");
    if (c->rope_llama3)
        printf(" (factor %g, low %g, high %g, original %d)", c->rope_factor, c->rope_low_freq_factor,
               c->rope_high_freq_factor, c->rope_original_max_pos);
    printf("\nnorm eps      %g\n", c->rms_eps);
    printf("tied head     %s;  qkv bias %s;  max_pos %d;  sliding_window %d\n", c->tie_embeddings ? "yes" : "no",
           c->qkv_bias ? "yes" : "no", c->max_pos, c->sliding_window);
    printf("kv cache      %llu bytes per position (fp16 K+V)\n\n", (unsigned long long)eco_model_kv_bytes_per_position(c));
    printf("bytes read per decoded token (batch 1; lm_head and embeddings 16-bit):\n");
    printf("%-11s %14s %14s %14s %10s %14s\n", "precision", "weights-only", "ctx 512", "ctx 4096", "vs fp16", "resident");
    uint64_t base = eco_model_bytes_per_token(c, ECO_PREC_FP16, 0, false);
    for (int p = 0; p < ECO_PREC_COUNT; p++) {
        uint64_t w0 = eco_model_bytes_per_token(c, (eco_precision)p, 0, false);
        printf("%-11s %14llu %14llu %14llu %9.3fx %14llu\n", eco_precision_name((eco_precision)p), (unsigned long long)w0,
               (unsigned long long)eco_model_bytes_per_token(c, (eco_precision)p, 512, false),
               (unsigned long long)eco_model_bytes_per_token(c, (eco_precision)p, 4096, false), (double)w0 / (double)base,
               (unsigned long long)eco_model_weight_bytes(c, (eco_precision)p, false));
    }
    return 0;
}

static const char *argv_threads(int n)
{
    static char buf[16];
    snprintf(buf, sizeof buf, "%d", n);
    return buf;
}

static int parse_ids(const char *s, int32_t **ids, int *n)
{
    int cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    *ids = malloc((size_t)cap * sizeof **ids);
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > 0x7fffffff || (*end && *end != ',')) return -1;
        (*ids)[(*n)++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    return *n > 0 ? 0 : -1;
}

static int cmd_generate(int argc, char **argv)
{
    const char *preset = NULL, *weights_dir = NULL, *prompt = "1", *config = NULL;
    uint64_t seed = 1;
    int tokens = 16;
    eco_engine_options o;
    eco_engine_options_default(&o);
    static const char cmd[] = "eco model generate";
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        double d;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--synthetic")) continue;
        if (!strcmp(a, "--quantize-lm-head")) { o.quantize_lm_head = true; continue; }
        if (!v) { fprintf(stderr, "%s: %s needs a value (or is unknown)\n", cmd, a); return 2; }
        i++;
        if (!strcmp(a, "--preset")) preset = v;
        else if (!strcmp(a, "--weights")) weights_dir = v;
        else if (!strcmp(a, "--config")) config = v;
        else if (!strcmp(a, "--seed")) { if (!eco_arg_long(cmd, a, v, 0, LONG_MAX, &n)) return 2; seed = (uint64_t)n; }
        else if (!strcmp(a, "--tokens")) { if (!eco_arg_long(cmd, a, v, 1, 100000, &n)) return 2; tokens = (int)n; }
        else if (!strcmp(a, "--threads")) { if (!eco_arg_long(cmd, a, v, 0, ECO_ENGINE_MAX_CPU_THREADS, &n)) return 2; o.threads = (int)n; }
        else if (!strcmp(a, "--max-seq")) { if (!eco_arg_long(cmd, a, v, 0, 1 << 20, &n)) return 2; o.max_seq = (int)n; }
        else if (!strcmp(a, "--int8-threshold")) { if (!eco_arg_double(cmd, a, v, 0, 1e6, &d)) return 2; o.quant.int8_threshold = (float)d; }
        else if (!strcmp(a, "--prompt-ids")) prompt = v;
        else if (!strcmp(a, "--precision")) {
            if (eco_precision_parse(v, &o.precision)) { fprintf(stderr, "eco model generate: %s\n", eco_last_error()); return 2; }
        } else { fprintf(stderr, "eco model generate: unknown option %s\n", a); usage(stderr); return 2; }
    }
    if (!preset == !weights_dir) { fprintf(stderr, "eco model generate: give --preset NAME (synthetic weights) or --weights DIR\n"); return 2; }
    int32_t *ids;
    int n_ids;
    if (parse_ids(prompt, &ids, &n_ids)) { fprintf(stderr, "eco model generate: --prompt-ids must be comma-separated token ids\n"); free(ids); return 2; }
    eco_weights *w = NULL;
    eco_err e;
    if (preset) {
        const eco_model_config *c = find_preset(preset);
        if (!c) { fprintf(stderr, "eco model generate: unknown preset \"%s\" (eco model list)\n", preset); free(ids); return 2; }
        e = eco_weights_synthetic(c, seed, &w);
    } else {
        eco_model_config given;
        e = config ? eco_model_config_from_json(config, &given) : ECO_OK;
        if (!e) e = eco_weights_open(weights_dir, config ? &given : NULL, &w);
    }
    if (e) { fprintf(stderr, "eco model generate: %s\n", eco_last_error()); free(ids); return 1; }
    if (o.max_seq == 0) o.max_seq = n_ids + tokens;
    eco_engine *eng = NULL;
    int32_t *out = malloc((size_t)tokens * sizeof *out);
    eco_decode_timing t;
    int rc = 0;
    if ((e = eco_engine_create("cpu", w, &o, &eng)) || (e = eco_engine_generate(eng, ids, n_ids, tokens, out, &t))) {
        fprintf(stderr, "eco model generate: %s\n", eco_last_error());
        rc = 1;
    } else {
        const eco_model_config *c = eco_weights_config(w);
        printf("model %s (%s weights), precision %s, threads %s\n", c->name, preset ? "synthetic" : "checkpoint",
               eco_precision_name(o.precision), o.threads ? argv_threads(o.threads) : "all CPUs");
        printf("tokens:");
        for (int i = 0; i < tokens; i++) printf("%s%d", i ? "," : " ", out[i]);
        printf("\nprefill %d tokens in %.3f s; decode %d forwards in %.3f s (%.2f tok/s); resident %.1f MB\n",
               t.prefill_tokens, t.prefill_s, t.decode_forwards, t.decode_s, t.decode_tok_per_s,
               eco_engine_resident_bytes(eng) / 1e6);
    }
    eco_engine_free(eng);
    eco_weights_free(w);
    free(out);
    free(ids);
    return rc;
}

static int cmd_save(int argc, char **argv)
{
    const char *name = NULL, *out = NULL, *dtype = "f16";
    unsigned long long seed = 1;
    int shards = 1;
    for (int i = 2; i < argc; i++) {
        long n;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            if (!eco_arg_long("eco model save", argv[i], argv[i + 1], 0, LONG_MAX, &n)) return 2;
            seed = (unsigned long long)n, i++;
        } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) dtype = argv[++i];
        else if (!strcmp(argv[i], "--shards") && i + 1 < argc) {
            if (!eco_arg_long("eco model save", argv[i], argv[i + 1], 1, 64, &n)) return 2;
            shards = (int)n, i++;
        } else if (argv[i][0] != '-' && !name) name = argv[i];
        else { fprintf(stderr, "eco model save: unexpected argument \"%s\"\n", argv[i]); return 2; }
    }
    if (!name || !out) { usage(stderr); return 2; }
    const eco_model_config *c = find_preset(name);
    if (!c) { fprintf(stderr, "eco model save: unknown model \"%s\" (eco model list)\n", name); return 2; }
    eco_dtype dt = !strcmp(dtype, "f16") ? ECO_DT_F16 : !strcmp(dtype, "bf16") ? ECO_DT_BF16 : !strcmp(dtype, "f32") ? ECO_DT_F32 : ECO_DT_COUNT;
    if (dt == ECO_DT_COUNT) { fprintf(stderr, "eco model save: --dtype must be f16, bf16 or f32\n"); return 2; }
    eco_weights *w = NULL;
    eco_err e = eco_weights_synthetic(c, seed, &w);
    if (e || (e = eco_weights_save(w, out, dt, shards))) {
        fprintf(stderr, "eco model save: %s\n", eco_last_error());
        eco_weights_free(w);
        return eco_cli_exit_status(e);
    }
    eco_weights_free(w);
    printf("wrote %s (%s, synthetic seed %llu, %s)\n", out, c->name, seed, dtype);
    return 0;
}

int eco_cmd_model(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "list")) return cmd_list();
    if (!strcmp(argv[1], "generate")) return cmd_generate(argc, argv);
    if (!strcmp(argv[1], "save")) return cmd_save(argc, argv);
    if (!strcmp(argv[1], "info")) {
        if (argc == 4 && !strcmp(argv[2], "--config")) {
            eco_model_config c;
            if (eco_model_config_from_json(argv[3], &c)) { fprintf(stderr, "eco model info: %s\n", eco_last_error()); return 1; }
            return cmd_info(&c);
        }
        if (argc != 3) { usage(stderr); return 2; }
        const eco_model_config *c = find_preset(argv[2]);
        if (!c) { fprintf(stderr, "eco model info: unknown model \"%s\" (eco model list)\n", argv[2]); return 2; }
        return cmd_info(c);
    }
    fprintf(stderr, "eco model: unknown subcommand \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
