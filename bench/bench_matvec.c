/* Matvec kernel shapes per weight format on a model's layer: for each rows-per-warp x loads-in-flight
 * shape (and column slices for the residual-add linears), the time of one layer's four matvecs and the
 * bandwidth it reaches against the streaming read bandwidth measured in the same run. The engine's
 * defaults per format (default_shape in src/engine/cuda/cuda_backend.cu) come from this table.
 * usage: bench_matvec [--models Qwen2.5-7B,Qwen2.5-14B] [--precisions fp16,int8,...] [--fp8-bits]
 *                     [--shape R,U] [--linear qkv|o|gate_up|down] [--dims ROWSxCOLS,...]
 * --shape and --linear time one kernel shape and one linear only (a profiler then sees only that kernel).
 * --dims times bare linears (plain store, the engine's default shape per format) of the given sizes instead
 * of model layers, with each one's share of the streaming bandwidth: sizes side by side. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eco/cuda.h"
#include "eco/model.h"
#include "eco/quant.h"

static const int shapes[][2] = {{1, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 2}, {2, 4}, {4, 1}, {4, 2}, {8, 1}};
static const int split_choices[] = {1, 2, 4};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])
#define MAX_PRECS 8

/* Summed over the models: one layer's time per precision x shape, and the most column slices it used. */
static double total_us[MAX_PRECS][N_SHAPES];
static int most_splits[MAX_PRECS][N_SHAPES], shape_failed[MAX_PRECS][N_SHAPES];
static char prec_names[MAX_PRECS][16];

static int time_one(eco_precision p, int rows, int cols, int r, int u, int s, int hw, double *us, double *gbps)
{
    if (eco_cuda_matvec_bench(p, rows, cols, r, u, s, hw, us, gbps) != ECO_OK) {
        fprintf(stderr, "bench_matvec: %s\n", eco_last_error());
        return -1;
    }
    return 0;
}

/* Bare linears of the sizes in dims ("ROWSxCOLS,..."), per precision, at one shape (R,U; 4,1 unless given). */
static int time_dims(const char *dims, const char *precs, int r, int u, int fp8_hw, double bw)
{
    if (!r) r = 4, u = 1;
    char dbuf[512]; /* refilled for each precision: strtok_r cuts it */
    if (strlen(dims) >= sizeof dbuf) { fprintf(stderr, "bench_matvec: --dims list over %zu characters\n", sizeof dbuf - 1); return 2; }
    printf("bare linears, R,U = %d,%d, one column slice; %% of the streaming bandwidth\n", r, u);
    printf("  %-10s %14s %10s %10s %10s\n", "precision", "rows x cols", "row bytes", "us", "% of bw");
    char pbuf[256];
    snprintf(pbuf, sizeof pbuf, "%s", precs);
    for (char *ps = NULL, *pname = strtok_r(pbuf, ",", &ps); pname; pname = strtok_r(NULL, ",", &ps)) {
        eco_precision p;
        if (eco_precision_parse(pname, &p)) { fprintf(stderr, "%s\n", eco_last_error()); return 2; }
        snprintf(dbuf, sizeof dbuf, "%s", dims);
        for (char *ds = NULL, *d = strtok_r(dbuf, ",", &ds); d; d = strtok_r(NULL, ",", &ds)) {
            int rows, cols;
            if (sscanf(d, "%dx%d", &rows, &cols) != 2 || rows < 2 || cols < 64) {
                fprintf(stderr, "bench_matvec: --dims wants ROWSxCOLS[,ROWSxCOLS...], got %s\n", d);
                return 2;
            }
            double us, gb;
            if (time_one(p, rows, cols, r, u, 1, fp8_hw, &us, &gb)) return 1;
            double bytes = (double)eco_precision_weight_bytes(p, (uint64_t)rows, (uint64_t)cols);
            printf("  %-10s %6d x %-6d %10.0f %10.2f %9.1f%%\n", pname, rows, cols, bytes / rows, us, 100.0 * bytes / (us * 1e-6) / 1e9 / bw);
            fflush(stdout);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *models = "Qwen2.5-7B,Qwen2.5-14B", *precs = "fp16,int8,int8-mixed,nf4,fp8";
    int fp8_hw = 1, only_r = 0, only_u = 0;
    const char *only_linear = NULL, *dims = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--models") && i + 1 < argc) models = argv[++i];
        else if (!strcmp(argv[i], "--precisions") && i + 1 < argc) precs = argv[++i];
        else if (!strcmp(argv[i], "--fp8-bits")) fp8_hw = 0;
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            if (sscanf(argv[++i], "%d,%d", &only_r, &only_u) != 2) { fprintf(stderr, "bench_matvec: --shape wants R,U\n"); return 2; }
        } else if (!strcmp(argv[i], "--linear") && i + 1 < argc) only_linear = argv[++i];
        else if (!strcmp(argv[i], "--dims") && i + 1 < argc) dims = argv[++i];
        else { fprintf(stderr, "bench_matvec: unknown argument %s\n", argv[i]); return 2; }
    }
    char device[256];
    double bw;
    if (!eco_cuda_matvec_bench || eco_cuda_device_name(device, sizeof device) || eco_cuda_stream_bandwidth(2.0, &bw)) {
        fprintf(stderr, "bench_matvec: no CUDA device in this build/machine\n");
        return 2;
    }
    printf("device: %s\nmeasured streaming read bandwidth: %.1f GB/s\n", device, bw);
    printf("each figure: best of 5 graph replays, weights rotating over > 1 GiB; layer = qkv + o + gate_up + down\n");
    if (dims) return time_dims(dims, precs, only_r, only_u, fp8_hw, bw);
    char mbuf[256];
    snprintf(mbuf, sizeof mbuf, "%s", models);
    for (char *ms = NULL, *mname = strtok_r(mbuf, ",", &ms); mname; mname = strtok_r(NULL, ",", &ms)) {
        const eco_model_config *c = eco_preset_find(mname);
        if (!c) { fprintf(stderr, "bench_matvec: unknown preset %s\n", mname); return 2; }
        int q_rows = (c->heads + 2 * c->kv_heads) * c->head_dim;
        const struct { const char *name; int rows, cols, add; } lin[4] = {
            {"qkv", q_rows, c->hidden, 0},
            {"o", c->hidden, c->heads * c->head_dim, 1},
            {"gate_up", 2 * c->intermediate, c->hidden, 0},
            {"down", c->hidden, c->intermediate, 1},
        };
        char pbuf[256];
        snprintf(pbuf, sizeof pbuf, "%s", precs);
        int pi = -1;
        for (char *ps = NULL, *pname = strtok_r(pbuf, ",", &ps); pname; pname = strtok_r(NULL, ",", &ps)) {
            if (++pi >= MAX_PRECS) break;
            snprintf(prec_names[pi], sizeof prec_names[pi], "%s", pname);
            eco_precision p;
            if (eco_precision_parse(pname, &p)) { fprintf(stderr, "%s\n", eco_last_error()); return 2; }
            double layer_bytes = 0;
            for (int k = 0; k < 4; k++) layer_bytes += (double)eco_precision_weight_bytes(p, (uint64_t)lin[k].rows, (uint64_t)lin[k].cols);
            printf("\n%s %s%s (layer %.1f MB; floor %.1f us at the measured bandwidth)\n", c->name, pname,
                   p == ECO_PREC_FP8 ? (fp8_hw ? " [hardware e4m3 conversion]" : " [e4m3 by bit moves]") : "", layer_bytes / 1e6, layer_bytes / bw / 1e3);
            printf("  R,U   %9s %12s %9s %12s %10s %9s\n", "qkv us", "o us (S)", "gate_up", "down us (S)", "layer us", "% of bw");
            double best_layer = 1e30;
            int best_i = -1, best_so = 1, best_sd = 1;
            for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                int r = shapes[si][0], u = shapes[si][1];
                if (only_r && (r != only_r || u != only_u)) continue;
                double t[4], gb;
                int split[4] = {1, 1, 1, 1};
                int ok = 1;
                for (int k = 0; k < 4 && ok; k++) {
                    t[k] = 1e30;
                    if (only_linear && strcmp(only_linear, lin[k].name)) { t[k] = 0; continue; }
                    for (size_t sc = 0; sc < (lin[k].add ? 3u : 1u); sc++) {
                        double us;
                        if (time_one(p, lin[k].rows, lin[k].cols, r, u, split_choices[sc], fp8_hw, &us, &gb)) { ok = 0; break; }
                        if (us < t[k]) { t[k] = us; split[k] = split_choices[sc]; }
                    }
                }
                if (!ok) { shape_failed[pi][si] = 1; continue; }
                double layer = t[0] + t[1] + t[2] + t[3];
                total_us[pi][si] += layer;
                for (int k = 1; k < 4; k += 2)
                    if (split[k] > most_splits[pi][si]) most_splits[pi][si] = split[k];
                printf("  %d,%d   %9.1f %8.1f (%d) %9.1f %8.1f (%d) %10.1f %8.1f%%\n", r, u, t[0], t[1], split[1], t[2], t[3],
                       split[3], layer, 100.0 * layer_bytes / (layer * 1e-6) / 1e9 / bw);
                fflush(stdout);
                if (layer < best_layer) { best_layer = layer; best_i = (int)si; best_so = split[1]; best_sd = split[3]; }
            }
            if (best_i >= 0)
                printf("  best: R,U = %d,%d with o split %d, down split %d: %.1f us a layer, %.1f%% of the streaming bandwidth\n",
                       shapes[best_i][0], shapes[best_i][1], best_so, best_sd, best_layer,
                       100.0 * layer_bytes / (best_layer * 1e-6) / 1e9 / bw);
        }
    }
    /* The shape per format over all the models: the engine's defaults, and env lines to try them. */
    printf("\nper format, summed over the models (one layer each):\n");
    for (int pi = 0; pi < MAX_PRECS && prec_names[pi][0]; pi++) {
        int best = -1;
        for (size_t si = 0; si < N_SHAPES; si++)
            if (!shape_failed[pi][si] && total_us[pi][si] > 0 && (best < 0 || total_us[pi][si] < total_us[pi][best])) best = (int)si;
        if (best < 0) continue;
        char env[32];
        size_t k = 0;
        for (const char *c = prec_names[pi]; *c && k + 1 < sizeof env; c++) env[k++] = *c == '-' ? '_' : (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
        env[k] = 0;
        printf("ECO_CUDA_MATVEC_%s=%d,%d,%d   # %.1f us, vs 2,2: %.3fx\n", env, shapes[best][0], shapes[best][1],
               most_splits[pi][best] < 1 ? 1 : most_splits[pi][best], total_us[pi][best],
               total_us[pi][4] > 0 ? total_us[pi][4] / total_us[pi][best] : 0.0);
    }
    return 0;
}
