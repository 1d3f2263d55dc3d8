/* Quantize and qmatvec throughput per weight format on a 4096 x 4096 matrix: quantizing on one thread and on all
 * cores (eco_quantize_threads, the same bytes), qmatvec on one thread.
 * GB/s counts the weight bytes each call reads (eco_precision_weight_bytes); ratios are vs fp16.
 *   bench_quant [N [THREADS]]   (N x N weights; THREADS: default the online cores) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "eco/err.h"
#include "eco/quant.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 4096;
    uint64_t rows = n, cols = n;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = argc > 2 ? atoi(argv[2]) : cores < 1 ? 1 : (int)cores;
    if (threads < 1) threads = 1;
    float *w = malloc(rows * cols * sizeof(float)), *x = malloc(cols * sizeof(float)), *y = malloc(rows * 4);
    if (!w || !x || !y) return 1;
    uint64_t s = 88172645463325252ull;
    for (uint64_t i = 0; i < rows * cols; i++) { /* xorshift, roughly Gaussian by summing 4 uniforms */
        double acc = 0;
        for (int k = 0; k < 4; k++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            acc += (double)(s >> 11) * 0x1p-53 - 0.5;
        }
        w[i] = (float)(acc * 0.035);
    }
    for (uint64_t i = 0; i < cols; i++) x[i] = (float)sin((double)i);
    printf("bench_quant: %llu x %llu; quantize on 1 and %d threads, qmatvec on one\n", (unsigned long long)rows,
           (unsigned long long)cols, threads);
    printf("%-11s %12s %12s %12s %9s %12s %12s %10s\n", "format", "weight MB", "quant ms", "quant ms N", "ratio",
           "matvec ms", "matvec GB/s", "vs fp16");
    double fp16_ms = 0;
    for (int p = 0; p < ECO_PREC_COUNT; p++) {
        eco_qweight q;
        double t0 = now_s();
        if (eco_quantize((eco_precision)p, w, rows, cols, NULL, &q)) {
            fprintf(stderr, "%s\n", eco_last_error());
            return 1;
        }
        double tq = now_s() - t0;
        eco_qweight qn;
        t0 = now_s();
        if (eco_quantize_threads((eco_precision)p, w, rows, cols, NULL, threads, &qn)) {
            fprintf(stderr, "%s\n", eco_last_error());
            return 1;
        }
        double tqn = now_s() - t0;
        eco_qweight_free(&qn);
        int reps = 0;
        double best = 1e9, start = now_s();
        while (reps < 3 || now_s() - start < 1.0) {
            double t1 = now_s();
            if (eco_qmatvec(&q, x, y)) return 1;
            double dt = now_s() - t1;
            if (dt < best) best = dt;
            reps++;
        }
        double bytes = (double)eco_precision_weight_bytes((eco_precision)p, rows, cols);
        if (p == ECO_PREC_FP16) fp16_ms = best * 1e3;
        printf("%-11s %12.1f %12.1f %12.1f %8.2fx %12.3f %12.2f %9.2fx\n", eco_precision_name((eco_precision)p), bytes / 1e6,
               tq * 1e3, tqn * 1e3, tq / tqn, best * 1e3, bytes / best / 1e9, fp16_ms / (best * 1e3));
        eco_qweight_free(&q);
    }
    printf("(ratio = one thread's quantize time / N threads'; vs fp16 = fp16 matvec time / this format's matvec time; > 1 is faster)\n");
    free(w);
    free(x);
    free(y);
    return 0;
}
