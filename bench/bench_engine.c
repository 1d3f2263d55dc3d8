/* Decode speed per model x precision against the bandwidth roofline measured in the same run:
 * roofline tok/s = streaming read bandwidth / bytes read per token (weights, scales, lm_head, KV).
 * usage: bench_engine [--backend cuda|cpu] [--models A,B] [--precisions fp16,nf4,...] [--tokens N]
 *                     [--reference-stack] [--seconds S] [--variants "V;V;..." [--rounds N]]
 * --variants: engine variants side by side. Each V is "-" (the defaults) or space-separated NAME=VALUE
 * environment assignments, in force while that variant's engine is built and warmed up (the CUDA backend
 * reads its ECO_CUDA_* settings then). All variants of a model x precision are held at once and decoded in
 * turn, round after round, so drift in clocks or temperature falls on all of them alike; each prints its
 * median tok/s over the rounds, the spread, and its ratio to the first variant's median. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eco/cuda.h"
#include "eco/engine.h"
#include "eco/model.h"
#include "eco/stats.h"
#include "model_sweep.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU streaming read bandwidth (one thread per core is not attempted: this is a reference figure). */
static double cpu_bandwidth_gbps(double seconds)
{
    size_t n = (size_t)1 << 27; /* 1 GiB of uint64 */
    uint64_t *buf = malloc(n * sizeof *buf);
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = i;
    volatile uint64_t sink = 0;
    double t0 = now_s(), bytes = 0;
    while (now_s() - t0 < seconds) {
        uint64_t acc = 0;
        for (size_t i = 0; i < n; i++) acc ^= buf[i];
        sink ^= acc;
        bytes += (double)n * sizeof *buf;
    }
    double gbps = bytes / (now_s() - t0) / 1e9;
    free(buf);
    (void)sink;
    return gbps;
}

#define WARMUP_TOKENS 16 /* decoded before the timed run: graph captured, clocks up */

/* The speed target, in % of the roofline, for this model and precision, or 0 where it sets none: on the
 * H200, fp16 >= 80% and int8 / nf4 (with or without double quant) / fp8 >= 65% for models of 7B and up (the 7B class: Qwen2.5-7B has 7.6B
 * parameters, Mistral-7B 7.2B); LLM.int8() and smaller models have no target. */
static double speed_target_pct(const eco_model_config *c, eco_precision p)
{
    if (eco_model_param_count(c) < 6500000000ull) return 0;
    switch (p) {
    case ECO_PREC_FP16: return 80;
    case ECO_PREC_INT8:
    case ECO_PREC_NF4:
    case ECO_PREC_NF4_DQ:
    case ECO_PREC_FP8: return 65;
    default: return 0;
    }
}

/* "  target 65%: met" or "  target 65%: short by 4.4 points", nothing where there is no target. */
static const char *target_verdict(const eco_model_config *c, eco_precision p, double pct, char *buf, size_t n)
{
    double target = speed_target_pct(c, p);
    if (target <= 0) snprintf(buf, n, "%s", "");
    else if (pct >= target) snprintf(buf, n, "  target %.0f%%: met", target);
    else snprintf(buf, n, "  target %.0f%%: short by %.1f points", target, target - pct);
    return buf;
}

struct engine_bench {
    const char *backend;
    double bw;
    int tokens, prompt;
    const eco_model_config *model; /* the model fp16_tps belongs to */
    double fp16_tps;
};

/* One model x precision: load, warm up, decode `tokens` tokens, print tok/s against the roofline. */
static int bench_one(const eco_model_config *c, eco_weights *w, eco_precision p, const char *pname, void *ctx)
{
    struct engine_bench *b = ctx;
    if (b->model != c) { b->model = c; b->fp16_tps = 0; }
    eco_engine_options o;
    eco_engine_options_default(&o);
    o.precision = p;
    int most = b->tokens > WARMUP_TOKENS ? b->tokens : WARMUP_TOKENS; /* tokens one generate call may produce */
    o.max_seq = b->prompt + most + 8;
    eco_engine *e;
    double t_load = now_s();
    if (eco_engine_create(b->backend, w, &o, &e)) {
        printf("%-16s %-10s failed: %s\n", c->name, pname, eco_last_error());
        return 0;
    }
    t_load = now_s() - t_load;
    int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, *out = malloc(sizeof(int32_t) * (size_t)most);
    eco_decode_timing warm, t;
    eco_engine_generate(e, in, b->prompt, WARMUP_TOKENS, out, &warm);
    if (eco_engine_generate(e, in, b->prompt, b->tokens, out, &t)) {
        printf("%-16s %-10s failed: %s\n", c->name, pname, eco_last_error());
        free(out);
        eco_engine_free(e);
        return 0;
    }
    /* Mean context over the decode: prompt + half the generated tokens. */
    double bytes = (double)eco_model_bytes_per_token(c, p, (uint64_t)(b->prompt + b->tokens / 2), false);
    double roof = b->bw * 1e9 / bytes;
    if (p == ECO_PREC_FP16) b->fp16_tps = t.decode_tok_per_s;
    double pct = 100.0 * t.decode_tok_per_s / roof;
    char verdict[64];
    printf("%-16s %-10s %10.1f %10.1f %10.1f %7.1f%% %8.2fx   (load %.1f s)%s\n", c->name, pname, bytes / 1e6,
           t.decode_tok_per_s, roof, pct, b->fp16_tps > 0 ? t.decode_tok_per_s / b->fp16_tps : 0.0, t_load,
           target_verdict(c, p, pct, verdict, sizeof verdict));
    fflush(stdout);
    free(out);
    eco_engine_free(e);
    return 0;
}

#define MAX_VARIANTS 8
#define MAX_ROUNDS 32
#define MAX_ASSIGN 8

struct variant_bench {
    struct engine_bench *b;
    int n, rounds;
    char *spec[MAX_VARIANTS];
};

/* Undoes variant_apply's n assignments, last first. */
static void variant_restore(int n, char *names[MAX_ASSIGN], char *saved[MAX_ASSIGN])
{
    for (int i = n - 1; i >= 0; i--) {
        if (saved[i]) setenv(names[i], saved[i], 1);
        else unsetenv(names[i]);
        free(names[i]);
        free(saved[i]);
    }
}

/* Sets the assignments of `spec` ("-" or "A=1 B=2"), saving what they replaced in saved[] (NULL: unset).
 * Returns how many were set, or -1 for a malformed one (with none left set). */
static int variant_apply(const char *spec, char *names[MAX_ASSIGN], char *saved[MAX_ASSIGN])
{
    int n = 0;
    if (!strcmp(spec, "-")) return 0;
    char *copy = strdup(spec);
    for (char *ss = NULL, *a = strtok_r(copy, " ", &ss); a; a = strtok_r(NULL, " ", &ss)) {
        char *eq = strchr(a, '=');
        if (!eq || eq == a || n == MAX_ASSIGN) {
            free(copy);
            variant_restore(n, names, saved);
            return -1;
        }
        *eq = 0;
        const char *old = getenv(a);
        names[n] = strdup(a);
        saved[n] = old ? strdup(old) : NULL;
        setenv(a, eq + 1, 1);
        n++;
    }
    free(copy);
    return n;
}

/* Whether spec is "-" or up to MAX_ASSIGN space-separated NAME=VALUE. */
static int variant_valid(const char *spec)
{
    if (!strcmp(spec, "-")) return 1;
    char *names[MAX_ASSIGN], *saved[MAX_ASSIGN];
    int n = variant_apply(spec, names, saved);
    if (n < 0) return 0;
    variant_restore(n, names, saved);
    return n > 0;
}

/* One model x precision, every variant held at once and decoded in turn for `rounds` rounds. */
static int bench_variants(const eco_model_config *c, eco_weights *w, eco_precision p, const char *pname, void *ctx)
{
    struct variant_bench *vb = ctx;
    struct engine_bench *b = vb->b;
    eco_engine *e[MAX_VARIANTS] = {0};
    double tps[MAX_VARIANTS][MAX_ROUNDS], load[MAX_VARIANTS] = {0};
    int most = b->tokens > WARMUP_TOKENS ? b->tokens : WARMUP_TOKENS;
    int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, *out = malloc(sizeof(int32_t) * (size_t)most);
    if (!out) return 1;
    for (int v = 0; v < vb->n; v++) {
        char *names[MAX_ASSIGN], *saved[MAX_ASSIGN];
        int na = variant_apply(vb->spec[v], names, saved); /* checked in main */
        if (na < 0) na = 0;
        eco_engine_options o;
        eco_engine_options_default(&o);
        o.precision = p;
        o.max_seq = b->prompt + most + 8;
        double t0 = now_s();
        eco_decode_timing warm;
        if (eco_engine_create(b->backend, w, &o, &e[v]) || eco_engine_generate(e[v], in, b->prompt, WARMUP_TOKENS, out, &warm)) {
            printf("%-16s %-10s [%s] failed: %s\n", c->name, pname, vb->spec[v], eco_last_error());
            if (e[v]) eco_engine_free(e[v]);
            e[v] = NULL;
        }
        load[v] = now_s() - t0;
        variant_restore(na, names, saved);
    }
    for (int r = 0; r < vb->rounds; r++)
        for (int v = 0; v < vb->n; v++) {
            eco_decode_timing t;
            tps[v][r] = 0;
            if (e[v] && eco_engine_generate(e[v], in, b->prompt, b->tokens, out, &t) == ECO_OK) tps[v][r] = t.decode_tok_per_s;
        }
    double bytes = (double)eco_model_bytes_per_token(c, p, (uint64_t)(b->prompt + b->tokens / 2), false);
    double roof = b->bw * 1e9 / bytes, base = 0;
    for (int v = 0; v < vb->n; v++) {
        if (!e[v]) continue;
        double sorted[MAX_ROUNDS]; /* eco_quantile leaves the rounds sorted here: the range's ends */
        double med = eco_quantile(tps[v], (size_t)vb->rounds, 0.5, sorted);
        if (v == 0) base = med;
        printf("%-16s %-10s %10.1f %10.1f %10.1f %7.1f%%  %6.1f..%-6.1f %8s   (load %.1f s)  %s\n", c->name, pname, bytes / 1e6, med, roof,
               100.0 * med / roof, sorted[0], sorted[vb->rounds - 1], "", load[v], vb->spec[v]);
        if (v > 0 && base > 0) printf("%-16s %-10s %39s x%.4f vs [%s]\n", "", "", "", med / base, vb->spec[0]);
        eco_engine_free(e[v]);
    }
    fflush(stdout);
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    const char *backend = "cuda", *models = "Qwen2.5-0.5B,Qwen2.5-1.5B,Qwen2.5-3B,Qwen2.5-7B,Llama-3.1-8B,Qwen2.5-14B";
    const char *precs = "fp16,int8,int8-mixed,nf4,fp8";
    int tokens = 128, prompt = 8;
    double seconds = 2.0;
    int reference_stack = 0, rounds = 5;
    char *variants = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
        else if (!strcmp(argv[i], "--models") && i + 1 < argc) models = argv[++i];
        else if (!strcmp(argv[i], "--precisions") && i + 1 < argc) precs = argv[++i];
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) tokens = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reference-stack")) reference_stack = 1;
        else if (!strcmp(argv[i], "--variants") && i + 1 < argc) variants = argv[++i];
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else { fprintf(stderr, "bench_engine: unknown argument %s\n", argv[i]); return 2; }
    }
    if (tokens < 2) tokens = 2;
    struct variant_bench vb = {.rounds = rounds};
    if (variants) {
        if (rounds < 1 || rounds > MAX_ROUNDS) { fprintf(stderr, "bench_engine: --rounds wants 1..%d\n", MAX_ROUNDS); return 2; }
        for (char *vs = NULL, *v = strtok_r(variants, ";", &vs); v; v = strtok_r(NULL, ";", &vs)) {
            if (vb.n == MAX_VARIANTS) { fprintf(stderr, "bench_engine: at most %d variants\n", MAX_VARIANTS); return 2; }
            if (!variant_valid(v)) {
                fprintf(stderr, "bench_engine: variant \"%s\": want \"-\" or up to %d space-separated NAME=VALUE\n", v, MAX_ASSIGN);
                return 2;
            }
            vb.spec[vb.n++] = v;
        }
        if (!vb.n) { fprintf(stderr, "bench_engine: --variants names none\n"); return 2; }
    }
    double bw;
    char device[256] = "CPU";
    if (!strcmp(backend, "cuda")) {
        if (!eco_cuda_stream_bandwidth || eco_cuda_device_name(device, sizeof device) != ECO_OK) {
            fprintf(stderr, "bench_engine: no CUDA device in this build/machine (use --backend cpu)\n");
            return 2;
        }
        if (eco_cuda_stream_bandwidth(seconds, &bw) != ECO_OK) { fprintf(stderr, "%s\n", eco_last_error()); return 1; }
        if (reference_stack) eco_cuda_set_reference_stack(true);
    } else {
        bw = cpu_bandwidth_gbps(seconds);
    }
    printf("device: %s\nmeasured streaming read bandwidth: %.1f GB/s\nbackend %s%s, batch 1, greedy, %d-token prompt, %d generated tokens\n",
           device, bw, backend, reference_stack ? " (reference-stack mode)" : "", prompt, tokens);
    printf("targets (issue 5, for the H200%s): fp16 >= 80%%, int8 / nf4 / fp8 >= 65%% of the roofline at 7B and up\n\n",
           strstr(device, "H200") ? "" : "; this device is another, so a verdict here is not the target's");
    if (variants)
        printf("%-16s %-10s %10s %10s %10s %8s  %-13s %8s   %s\n", "model", "precision", "MB/token", "tok/s", "roofline", "% roof", "range", "", "variant");
    else
        printf("%-16s %-10s %10s %10s %10s %8s %9s\n", "model", "precision", "MB/token", "tok/s", "roofline", "% roof", "vs fp16");

    struct engine_bench ctx = {.backend = backend, .bw = bw, .tokens = tokens, .prompt = prompt};
    if (!variants) return eco_model_sweep("bench_engine", models, precs, bench_one, &ctx);
    vb.b = &ctx;
    printf("variants side by side: %d, decoded in turn for %d rounds; tok/s is the median, then the range\n", vb.n, rounds);
    return eco_model_sweep("bench_engine", models, precs, bench_variants, &vb);
}
