/* Decode speed per model x precision against the bandwidth roofline measured in the same run:
 * roofline tok/s = streaming read bandwidth / bytes read per token (weights, scales, lm_head, KV).
 * usage: bench_engine [--backend cuda|cpu] [--models A,B] [--precisions fp16,nf4,...] [--tokens N]
 *                     [--reference-stack] [--seconds S] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eco/cuda.h"
#include "eco/engine.h"
#include "eco/model.h"
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
    printf("%-16s %-10s %10.1f %10.1f %10.1f %7.1f%% %8.2fx   (load %.1f s)\n", c->name, pname, bytes / 1e6,
           t.decode_tok_per_s, roof, 100.0 * t.decode_tok_per_s / roof, b->fp16_tps > 0 ? t.decode_tok_per_s / b->fp16_tps : 0.0,
           t_load);
    fflush(stdout);
    free(out);
    eco_engine_free(e);
    return 0;
}

int main(int argc, char **argv)
{
    const char *backend = "cuda", *models = "Qwen2.5-0.5B,Qwen2.5-1.5B,Qwen2.5-3B,Qwen2.5-7B,Llama-3.1-8B,Qwen2.5-14B";
    const char *precs = "fp16,int8,int8-mixed,nf4,fp8";
    int tokens = 128, prompt = 8;
    double seconds = 2.0;
    int reference_stack = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
        else if (!strcmp(argv[i], "--models") && i + 1 < argc) models = argv[++i];
        else if (!strcmp(argv[i], "--precisions") && i + 1 < argc) precs = argv[++i];
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) tokens = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reference-stack")) reference_stack = 1;
        else { fprintf(stderr, "bench_engine: unknown argument %s\n", argv[i]); return 2; }
    }
    if (tokens < 2) tokens = 2;
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
    printf("device: %s\nmeasured streaming read bandwidth: %.1f GB/s\nbackend %s%s, batch 1, greedy, %d-token prompt, %d generated tokens\n\n",
           device, bw, backend, reference_stack ? " (reference-stack mode)" : "", prompt, tokens);
    printf("%-16s %-10s %10s %10s %10s %8s %9s\n", "model", "precision", "MB/token", "tok/s", "roofline", "% roof", "vs fp16");

    struct engine_bench ctx = {.backend = backend, .bw = bw, .tokens = tokens, .prompt = prompt};
    return eco_model_sweep("bench_engine", models, precs, bench_one, &ctx);
}
