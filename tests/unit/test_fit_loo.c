/* Leave-one-out on the reference anchors (shared/reference/measured.csv): our fit against the anchor project's
 * published loo_mae (shared/reference/curves.json). Prints both; asserts sane bounds. */
#include "eco_test.h"

#include <string.h>

#include <jansson.h>

#include "eco/fit.h"
#include "eco/stats.h"

/* A CSV field into a fixed record field; a field that does not fit fails the test rather than truncating. */
static void copy_field(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    assert_true(n < cap);
    memcpy(dst, src, n + 1);
}

/* Minimal loader for measured.csv (no quoted commas in the fields used; notes may contain commas and are last).
 * Protocol and session follow data/reference/manifest.csv, as the store assigns them. */
static size_t load_measured(eco_record *rows, size_t cap)
{
    char path[1024], line[2048];
    FILE *f = fopen(eco_test_path("ECO_SHARED_DIR", "reference/measured.csv", path, sizeof path), "r");
    assert_non_null(f);
    size_t n = 0;
    assert_non_null(fgets(line, sizeof line, f)); /* header */
    while (n < cap && fgets(line, sizeof line, f)) {
        char *fld[12] = {0}, *p = line;
        for (int i = 0; i < 12 && p; i++) {
            fld[i] = p;
            char *c = i < 11 ? strchr(p, ',') : NULL;
            if (c) { *c = '\0'; p = c + 1; } else p = NULL;
        }
        if (!fld[11]) continue;
        eco_record *r = &rows[n];
        memset(r, 0, sizeof *r);
        copy_field(r->gpu, sizeof r->gpu, fld[0]);
        copy_field(r->arch, sizeof r->arch, fld[1]);
        r->vram_gb = atof(fld[2]);
        copy_field(r->model, sizeof r->model, fld[3]);
        r->params_b = atof(fld[4]);
        r->precision = !strcmp(fld[5], "NF4") ? ECO_PREC_NF4 : ECO_PREC_INT8_MIXED;
        r->e_fp16_mj = atof(fld[6]);
        r->e_quant_mj = atof(fld[7]);
        r->n_trials = atoi(fld[9]);
        r->e_quant_sd_mj = *fld[10] ? atof(fld[10]) : NAN;
        r->e_fp16_sd_mj = NAN;
        r->cv_pct = NAN;
        r->batch = 1;
        const char *sess = "?";
        if (!strcmp(r->gpu, "RTX 4090D")) { r->tokens = 256; r->basis = ECO_BASIS_NET; strcpy(r->method, "nvml-power-poll"); sess = "rtx4090d-2026q1"; }
        else if (!strcmp(r->gpu, "RTX 4090")) {
            r->tokens = 256; r->basis = ECO_BASIS_GROSS; strcpy(r->method, "nvml-power-poll");
            sess = strstr(fld[11], "2026-08-06") ? "rtx4090-2026-08-06" : "rtx4090-2026-07-container";
        } else if (!strcmp(r->gpu, "A800")) { r->tokens = 512; r->basis = ECO_BASIS_GROSS; strcpy(r->method, "nvml-power-poll"); sess = "a800-2026-02"; }
        else { r->tokens = 512; r->basis = ECO_BASIS_GROSS; strcpy(r->method, "avg-power/throughput"); sess = !strcmp(r->gpu, "T4") ? "t4-v1.1.0" : "rtx5090-v1.1.0"; }
        snprintf(r->session, sizeof r->session, "%s", sess);
        snprintf(r->source, sizeof r->source, "measured.csv:%zu", n + 2);
        r->single_trial = r->n_trials < 2;
        n++;
    }
    fclose(f);
    return n;
}

static double anchor_loo(json_t *doc, const char *arch, const char *prec)
{
    json_t *v = json_object_get(json_object_get(json_object_get(json_object_get(doc, "curves"), arch), prec), "loo_mae");
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void report(const char *title, const eco_curve_set *set, json_t *anchor_doc, double *overall_median, double *overall_mae)
{
    double all[256], scratch[256], sum = 0;
    size_t n = 0;
    printf("%s\n  %-9s %-10s %-10s %3s %9s %9s %12s\n", title, "arch", "precision", "form", "n", "loo_med", "loo_mae", "anchor_mae");
    for (size_t i = 0; i < set->n_curves; i++) {
        const eco_curve *c = &set->curves[i];
        printf("  %-9s %-10s %-10s %3zu %9.2f %9.2f %12.2f\n", c->arch, eco_precision_name(c->precision), eco_curve_form_name(c->form),
               c->n_anchors, c->loo_median_abs_pct, c->loo_mae_pct,
               anchor_loo(anchor_doc, c->arch, c->precision == ECO_PREC_NF4 ? "NF4" : "INT8"));
        for (size_t k = 0; k < c->loo_n && n < 256; k++) { all[n++] = fabs(c->loo_err_pct[k]); sum += fabs(c->loo_err_pct[k]); }
    }
    *overall_median = eco_quantile(all, n, 0.5, scratch);
    *overall_mae = sum / (double)n;
    printf("  overall: %zu LOO predictions, median |error| %.2f points, MAE %.2f points\n", n, *overall_median, *overall_mae);
}

static void test_loo_reference(void **state)
{
    (void)state;
    eco_record rows[64];
    size_t n = load_measured(rows, 64);
    assert_int_equal(n, 29);
    char path[1024];
    json_error_t jerr;
    json_t *anchor_doc = json_load_file(eco_test_path("ECO_SHARED_DIR", "reference/curves.json", path, sizeof path), 0, &jerr);
    assert_non_null(anchor_doc);

    eco_curve_set *set = malloc(sizeof *set);
    eco_fit_options opt;
    double med, mae;

    /* 1. the anchor's own method on the same pooled data: must reproduce its published LOO MAE */
    eco_fit_options_default(&opt);
    opt.pool = true;
    opt.anchor_compat = true;
    assert_int_equal(eco_fit_all(rows, n, &opt, set), ECO_OK);
    report("anchor-compatible fit (pooled, unweighted, S >= 0):", set, anchor_doc, &med, &mae);
    const eco_curve *ada_nf4 = eco_curve_set_find(set, "ada", ECO_PREC_NF4);
    assert_non_null(ada_nf4);
    assert_near(ada_nf4->A, 54.2295, 0.5);
    assert_near(ada_nf4->S, 131.0936, 1.0);
    assert_near(ada_nf4->nstar, 5.2846, 0.1);
    assert_near(ada_nf4->loo_mae_pct, anchor_loo(anchor_doc, "ada", "NF4"), 0.5);
    static const struct { const char *arch, *key; eco_precision p; } groups[] = {
        {"ada", "NF4", ECO_PREC_NF4}, {"ada", "INT8", ECO_PREC_INT8_MIXED}, {"blackwell", "NF4", ECO_PREC_NF4}, {"turing", "NF4", ECO_PREC_NF4}};
    for (size_t g = 0; g < 4; g++) /* published loo_mae to 0.1 point */
        assert_near(eco_curve_set_find(set, groups[g].arch, groups[g].p)->loo_mae_pct, anchor_loo(anchor_doc, groups[g].arch, groups[g].key), 0.1);
    double anchor_overall_mae = mae;

    /* 2. ours, pooled (same data as the anchor): weighted, signed S, form chosen on LOO */
    eco_fit_options_default(&opt);
    opt.pool = true;
    assert_int_equal(eco_fit_all(rows, n, &opt, set), ECO_OK);
    report("ours, pooled protocols (trial-weighted, form by LOO):", set, anchor_doc, &med, &mae);
    assert_true(med < 15.0);
    assert_true(mae <= anchor_overall_mae + 1e-9); /* no worse than the anchor's method on its own data */

    /* 3. ours, default: largest protocol group per (arch, precision) */
    eco_fit_options_default(&opt);
    assert_int_equal(eco_fit_all(rows, n, &opt, set), ECO_OK);
    report("ours, default (largest protocol group):", set, anchor_doc, &med, &mae);
    assert_true(med < 15.0);
    ada_nf4 = eco_curve_set_find(set, "ada", ECO_PREC_NF4);
    assert_string_equal(ada_nf4->protocol, "tok256/gross/nvml-power-poll");
    assert_int_equal(ada_nf4->n_anchors, 5);   /* the 4 RTX 4090D (net power) rows are left out and listed */
    assert_int_equal(ada_nf4->n_excluded, 4);
    const eco_curve *amp = eco_curve_set_find(set, "ampere", ECO_PREC_NF4);
    assert_int_equal(amp->form, ECO_FORM_LOGLINEAR); /* 3 sizes: no exactly-determined 3-parameter fit */
    assert_true(amp->S > 0);                         /* the A800 rebound (-4.1 -> +2.5) is representable */
    assert_int_equal(amp->loo_n, 3);
    free(set);
    json_decref(anchor_doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_loo_reference)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
