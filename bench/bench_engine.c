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

    char mbuf[512];
    snprintf(mbuf, sizeof mbuf, "%s", models);
    for (char *ms = NULL, *mname = strtok_r(mbuf, ",", &ms); mname; mname = strtok_r(NULL, ",", &ms)) {
        const eco_model_config *c = eco_preset_find(mname);
        if (!c) { fprintf(stderr, "bench_engine: unknown preset %s\n", mname); return 2; }
        eco_weights *w;
        if (eco_weights_synthetic(c, 1, &w) || eco_weights_cache(w, true)) { fprintf(stderr, "%s\n", eco_last_error()); return 1; }
        double fp16_tps = 0;
        char pbuf[256];
        snprintf(pbuf, sizeof pbuf, "%s", precs);
        for (char *ps = NULL, *pname = strtok_r(pbuf, ",", &ps); pname; pname = strtok_r(NULL, ",", &ps)) {
            eco_precision p;
            if (eco_precision_parse(pname, &p)) { fprintf(stderr, "%s\n", eco_last_error()); return 2; }
            eco_engine_options o;
            eco_engine_options_default(&o);
            o.precision = p;
            o.max_seq = prompt + tokens + 8;
            eco_engine *e;
            double t_load = now_s();
            if (eco_engine_create(backend, w, &o, &e)) {
                printf("%-16s %-10s failed: %s\n", c->name, pname, eco_last_error());
                continue;
            }
            t_load = now_s() - t_load;
            int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, *out = malloc(sizeof(int32_t) * (size_t)tokens);
            eco_decode_timing warm, t;
            eco_engine_generate(e, in, prompt, 16, out, &warm);
            if (eco_engine_generate(e, in, prompt, tokens, out, &t)) {
                printf("%-16s %-10s failed: %s\n", c->name, pname, eco_last_error());
                free(out);
                eco_engine_free(e);
                continue;
            }
            /* Mean context over the decode: prompt + half the generated tokens. */
            double bytes = (double)eco_model_bytes_per_token(c, p, (uint64_t)(prompt + tokens / 2), false);
            double roof = bw * 1e9 / bytes;
            if (p == ECO_PREC_FP16) fp16_tps = t.decode_tok_per_s;
            printf("%-16s %-10s %10.1f %10.1f %10.1f %7.1f%% %8.2fx   (load %.1f s)\n", c->name, pname, bytes / 1e6,
                   t.decode_tok_per_s, roof, 100.0 * t.decode_tok_per_s / roof,
                   fp16_tps > 0 ? t.decode_tok_per_s / fp16_tps : 0.0, t_load);
            fflush(stdout);
            free(out);
            eco_engine_free(e);
        }
        eco_weights_free(w);
    }
    return 0;
}
