/* Estimates per second from an in-memory curve set (what the API does per request, minus JSON), and the cost
 * of one full fit (grid + LOO + 256 bootstrap refits). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eco/fit.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
    static const double sizes[] = {0.5, 1.1, 1.5, 3.0, 7.0, 9.0, 14.0};
    static const double delta[] = {35.6, 16.3, 15.1, 0.8, -28.5, -30.0, -35.0};
    eco_record rows[7];
    for (int i = 0; i < 7; i++) {
        eco_record *r = &rows[i];
        memset(r, 0, sizeof *r);
        strcpy(r->arch, "ada");
        strcpy(r->gpu, "RTX 4090");
        strcpy(r->method, "nvml-power-poll");
        r->precision = ECO_PREC_NF4;
        r->params_b = sizes[i];
        r->e_fp16_mj = 700 * sizes[i] + 1000;
        r->e_quant_mj = r->e_fp16_mj * (1 + delta[i] / 100);
        r->e_quant_sd_mj = r->e_fp16_sd_mj = r->cv_pct = 0.0 / 0.0;
        r->n_trials = 2;
        r->tokens = 256;
        r->basis = ECO_BASIS_GROSS;
    }
    eco_curve_set *set = malloc(sizeof *set);
    eco_fit_options o;
    eco_fit_options_default(&o);
    double t0 = now_s();
    int fits = 20;
    for (int i = 0; i < fits; i++)
        if (eco_fit_all(rows, 7, &o, set)) { fprintf(stderr, "fit: %s\n", eco_last_error()); return 1; }
    double t_fit = (now_s() - t0) / fits;

    eco_estimate e;
    eco_estimate_query q = {.arch = "ada", .precision = ECO_PREC_NF4, .batch = 1};
    const int n = 200000;
    double sink = 0;
    t0 = now_s();
    for (int i = 0; i < n; i++) {
        q.params_b = 0.3 + (i % 1000) * 0.05; /* interpolated and extrapolated sizes: the percentile path */
        if (eco_estimate_run(set, &q, &e)) { fprintf(stderr, "estimate: %s\n", eco_last_error()); return 1; }
        sink += e.delta_pct + e.hi_pct;
    }
    double dt = now_s() - t0;
    printf("fit (1 curve, 7 anchors, LOO + %d bootstrap refits): %.2f ms\n", ECO_FIT_BOOT, t_fit * 1e3);
    printf("estimates: %d in %.3f s = %.0f estimates/s per core (%.2f us each; API target 50k req/s)\n", n, dt, n / dt,
           dt / n * 1e6);
    printf("(checksum %.3f)\n", sink);
    free(set);
    return 0;
}
