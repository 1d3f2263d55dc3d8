/* CPU decode throughput per precision on a synthetic preset-shaped model: tokens/s, bytes read per token,
 * effective GB/s, and ratios vs fp16. The CPU reference is not a roofline engine: these figures show the
 * relative cost of each format's reference numerics, not what a GPU kernel reaches.
 *
 * usage: bench_engine_cpu [--preset Qwen2.5-0.5B] [--layers N] [--tokens 4] [--threads 0] [--prompt 2]
 *                         [--precisions fp16,int8,int8-mixed,nf4,nf4-dq,fp8] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eco/engine.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    const char *preset = "Qwen2.5-0.5B", *plist = "fp16,int8,int8-mixed,nf4,nf4-dq,fp8";
    int layers = 0, tokens = 4, threads = 0, n_prompt = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--preset")) preset = argv[i + 1];
        else if (!strcmp(argv[i], "--layers")) layers = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tokens")) tokens = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--prompt")) n_prompt = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--precisions")) plist = argv[i + 1];
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const eco_model_config *pc = eco_preset_find(preset);
    if (!pc || tokens < 2 || n_prompt < 1) { fprintf(stderr, "unknown preset %s or bad --tokens/--prompt\n", preset); return 2; }
    eco_model_config c = *pc;
    if (layers > 0 && layers < c.layers) c.layers = layers; /* same per-layer shapes, fewer layers */
    eco_weights *w;
    if (eco_weights_synthetic(&c, 1, &w)) { fprintf(stderr, "%s\n", eco_last_error()); return 1; }
    int32_t *prompt = malloc((size_t)n_prompt * sizeof *prompt), *out = malloc((size_t)tokens * sizeof *out);
    for (int i = 0; i < n_prompt; i++) prompt[i] = (int32_t)((i * 7919 + 1) % c.vocab);

    printf("bench_engine_cpu: %s shapes, %d of %d layers, %.3fB params, prompt %d, %d tokens, threads %s\n", pc->name,
           c.layers, pc->layers, eco_model_param_count(&c) / 1e9, n_prompt, tokens, threads ? "set" : "all");
    printf("%-11s %8s %10s %10s %14s %9s %11s %11s\n", "precision", "load s", "prefill s", "tok/s", "bytes/token",
           "GB/s", "tok/s ratio", "bytes ratio");
    double base_tps = 0, base_bytes = 0;
    char *list = strdup(plist);
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        eco_engine_options o;
        eco_engine_options_default(&o);
        if (eco_precision_parse(name, &o.precision)) { fprintf(stderr, "%s\n", eco_last_error()); return 2; }
        o.threads = threads;
        o.max_seq = n_prompt + tokens;
        eco_engine *e;
        double t0 = now_s();
        if (eco_engine_create("cpu", w, &o, &e)) { fprintf(stderr, "%s\n", eco_last_error()); return 1; }
        double load_s = now_s() - t0;
        eco_decode_timing t;
        if (eco_engine_generate(e, prompt, n_prompt, tokens, out, &t)) { fprintf(stderr, "%s\n", eco_last_error()); return 1; }
        /* bytes at the mean context of the decode steps */
        double bytes = (double)eco_model_bytes_per_token(&c, o.precision, (uint64_t)(n_prompt + tokens / 2), false);
        if (o.precision == ECO_PREC_FP16) { base_tps = t.decode_tok_per_s; base_bytes = bytes; }
        if (base_tps > 0)
            printf("%-11s %8.2f %10.3f %10.3f %14.0f %9.2f %10.3fx %10.3fx\n", eco_precision_name(o.precision), load_s,
                   t.prefill_s, t.decode_tok_per_s, bytes, bytes * t.decode_tok_per_s / 1e9, t.decode_tok_per_s / base_tps,
                   bytes / base_bytes);
        else /* fp16 not run first: no ratios */
            printf("%-11s %8.2f %10.3f %10.3f %14.0f %9.2f %11s %11s\n", eco_precision_name(o.precision), load_s,
                   t.prefill_s, t.decode_tok_per_s, bytes, bytes * t.decode_tok_per_s / 1e9, "-", "-");
        eco_engine_free(e);
    }
    free(list);
    free(prompt);
    free(out);
    eco_weights_free(w);
    return 0;
}
