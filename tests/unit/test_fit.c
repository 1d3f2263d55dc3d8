/* Fitter, estimator labels and optimizer on synthetic data with known answers. */
#include "eco_test.h"

#include <string.h>

#include "eco/fit.h"
#include "eco/stats.h"

static void make_row(eco_record *r, const char *arch, eco_precision p, double N, double delta, int n_trials, const char *proto_method)
{
    memset(r, 0, sizeof *r);
    snprintf(r->arch, sizeof r->arch, "%s", arch);
    snprintf(r->gpu, sizeof r->gpu, "synthetic");
    snprintf(r->model, sizeof r->model, "m%.2f", N);
    snprintf(r->method, sizeof r->method, "%s", proto_method);
    snprintf(r->session, sizeof r->session, "s1");
    snprintf(r->source, sizeof r->source, "synthetic:%g", N);
    r->precision = p;
    r->params_b = N;
    r->e_fp16_mj = 1000.0 * N;
    r->e_quant_mj = r->e_fp16_mj * (1 + delta / 100);
    r->e_quant_sd_mj = r->e_fp16_sd_mj = r->cv_pct = NAN;
    r->n_trials = n_trials;
    r->tokens = 256;
    r->basis = ECO_BASIS_GROSS;
    r->batch = 1;
}

static double truth(double N) { return 60.0 - 120.0 * N / (N + 4.0); } /* A=60, S=120, N*=4 */

static void test_recover_saturating(void **state)
{
    (void)state;
    static const double sizes[] = {0.5, 1, 1.5, 2, 3, 4, 6, 8, 11, 14, 20, 30};
    eco_record rows[12];
    eco_rng rng;
    eco_rng_seed(&rng, 7);
    for (int i = 0; i < 12; i++) make_row(&rows[i], "ada", ECO_PREC_NF4, sizes[i], truth(sizes[i]) + 0.5 * eco_rng_normal(&rng), 2, "m");
    eco_curve *c = malloc(sizeof *c);
    eco_fit_options o;
    eco_fit_options_default(&o);
    assert_int_equal(eco_fit_curve(rows, 12, &o, c), ECO_OK);
    assert_int_equal(c->form, ECO_FORM_SATURATING); /* beats the line on LOO when the data are saturating */
    assert_near(c->A, 60, 3);
    assert_near(c->S, 120, 6);
    assert_near(c->nstar, 4, 0.6);
    assert_true(c->resid_sd_pct < 1.0);
    assert_near(c->crossover_b, 4.0, 0.3); /* 60 = 120 x/(1+x) -> x = 1 */
    assert_int_equal(c->crossover_dir, -1);
    assert_true(c->loo_median_abs_pct < 1.5);
    double lo, hi;
    eco_curve_band95(c, 5.0, &lo, &hi);
    assert_true(lo < truth(5.0) && truth(5.0) < hi);
    assert_true(hi - lo < 10); /* 2 x 1.96 x the 2-point noise floor + the bootstrap spread */
    free(c);
}

/* A heavily-trialled point pulls the fit; with unit weights it would not. */
static void test_weights_matter(void **state)
{
    (void)state;
    eco_record rows[4];
    make_row(&rows[0], "ada", ECO_PREC_NF4, 1, 10, 1, "m");
    make_row(&rows[1], "ada", ECO_PREC_NF4, 2, 0, 1, "m");
    make_row(&rows[2], "ada", ECO_PREC_NF4, 4, 10, 20, "m"); /* many trials */
    make_row(&rows[3], "ada", ECO_PREC_NF4, 8, -20, 1, "m");
    eco_curve *w = malloc(sizeof *w), *u = malloc(sizeof *u);
    eco_fit_options o;
    eco_fit_options_default(&o);
    o.n_boot = 16;
    assert_int_equal(eco_fit_curve(rows, 4, &o, w), ECO_OK);
    o.weighting = ECO_WEIGHT_NONE;
    assert_int_equal(eco_fit_curve(rows, 4, &o, u), ECO_OK);
    double rw = fabs(eco_curve_eval(w, 4) - 10), ru = fabs(eco_curve_eval(u, 4) - 10);
    assert_true(rw < ru);
    printf("weighted |fit(4) - 10| = %.2f, unweighted %.2f\n", rw, ru);
    assert_true(rw < 0.5 * ru);
    free(w);
    free(u);
}

static void test_fallback_forms_and_protocols(void **state)
{
    (void)state;
    eco_record rows[5];
    make_row(&rows[0], "ampere", ECO_PREC_NF4, 7, -4, 2, "m");
    make_row(&rows[1], "ampere", ECO_PREC_NF4, 9, -1.5, 2, "m");
    make_row(&rows[2], "ampere", ECO_PREC_NF4, 14, 2.5, 2, "m");
    make_row(&rows[3], "ampere", ECO_PREC_NF4, 3, 50, 2, "other-method"); /* another protocol */
    make_row(&rows[4], "ampere", ECO_PREC_NF4, 5, 40, 2, "other-method");
    eco_curve *c = malloc(sizeof *c);
    eco_fit_options o;
    eco_fit_options_default(&o);
    assert_int_equal(eco_fit_curve(rows, 5, &o, c), ECO_OK);
    assert_int_equal(c->n_anchors, 3); /* largest protocol group only */
    assert_int_equal(c->n_excluded, 2);
    assert_string_equal(c->protocol, "tok256/gross/m");
    assert_int_equal(c->form, ECO_FORM_LOGLINEAR);
    assert_true(c->S > 0); /* rising: a rebound is representable */
    assert_int_equal(c->crossover_dir, 1);
    assert_true(c->crossover_b > 9 && c->crossover_b < 14);
    o.protocol = "tok256/gross/other-method";
    assert_int_equal(eco_fit_curve(rows, 5, &o, c), ECO_OK);
    assert_int_equal(c->n_anchors, 2);
    assert_int_equal(c->form, ECO_FORM_LOGLINEAR);
    o.protocol = NULL;
    o.pool = true;
    assert_int_equal(eco_fit_curve(rows, 5, &o, c), ECO_OK);
    assert_int_equal(c->n_anchors, 5);
    assert_int_equal(c->n_pooled, 2);
    o.pool = false;
    assert_int_equal(eco_fit_curve(rows, 1, &o, c), ECO_OK);
    assert_int_equal(c->form, ECO_FORM_CONSTANT);
    assert_near(eco_curve_eval(c, 100), -4, 1e-12);
    assert_int_equal(c->loo_n, 0);
    /* bad input: mixed groups are refused with a message naming the row */
    make_row(&rows[1], "ada", ECO_PREC_NF4, 9, -1.5, 2, "m");
    assert_int_equal(eco_fit_curve(rows, 2, &o, c), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "ada/nf4"));
    free(c);
}

static void test_bootstrap_deterministic(void **state)
{
    (void)state;
    eco_record rows[6];
    static const double sizes[] = {0.5, 1.1, 1.5, 3, 7, 9};
    for (int i = 0; i < 6; i++) make_row(&rows[i], "blackwell", ECO_PREC_NF4, sizes[i], truth(sizes[i]) + (i % 2 ? 3 : -3), 2, "m");
    eco_curve *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    eco_fit_options o;
    eco_fit_options_default(&o);
    assert_int_equal(eco_fit_curve(rows, 6, &o, a), ECO_OK);
    assert_int_equal(eco_fit_curve(rows, 6, &o, b), ECO_OK);
    assert_int_equal(a->n_boot, ECO_FIT_BOOT);
    assert_memory_equal(a->boot, b->boot, sizeof a->boot);
    o.seed = 99;
    assert_int_equal(eco_fit_curve(rows, 6, &o, b), ECO_OK);
    assert_true(memcmp(a->boot, b->boot, sizeof a->boot) != 0);
    assert_near(a->A, b->A, 1e-12); /* the point fit does not depend on the seed */
    /* the band's fast selection equals the sort-based quantiles of the stored samples */
    double v[ECO_FIT_BOOT], scratch[ECO_FIT_BOOT], lo, hi;
    for (size_t k = 0; k < a->n_boot; k++)
        v[k] = eco_curve_eval_params(a->form, a->boot[k][0], a->boot[k][1], a->boot[k][2], a->s_cap_pct, 4.0);
    double p = eco_curve_eval(a, 4.0), q_lo = eco_quantile(v, a->n_boot, 0.025, scratch), q_hi = eco_quantile(v, a->n_boot, 0.975, scratch);
    double sig = a->resid_sd_pct > 2 ? a->resid_sd_pct : 2;
    eco_curve_band95(a, 4.0, &lo, &hi);
    double dl = p - q_lo > 0 ? p - q_lo : 0, dh = q_hi - p > 0 ? q_hi - p : 0;
    assert_near(lo, p - sqrt(dl * dl + 1.96 * 1.96 * sig * sig), 1e-9);
    assert_near(hi, p + sqrt(dh * dh + 1.96 * 1.96 * sig * sig), 1e-9);
    free(a);
    free(b);
}

/* Fits rows with the default options into `into` (a new set when NULL); the caller frees it. */
static eco_curve_set *fit_rows(const eco_record *rows, size_t n, eco_curve_set *into)
{
    eco_curve_set *set = into ? into : malloc(sizeof *set);
    assert_non_null(set);
    eco_fit_options o;
    eco_fit_options_default(&o);
    assert_int_equal(eco_fit_all(rows, n, &o, set), ECO_OK);
    return set;
}

/* Two cards of one architecture measured at the same size: asked for either card, ΔE is that card's own measurement
 * (labelled measured, with a note that the other card's was set aside); asked for the architecture or a third card of
 * it, the measurements are pooled (their trial-weighted mean) and a third card is told which cards they ran on. */
static void test_measured_on_the_card_asked(void **state)
{
    (void)state;
    eco_record rows[5];
    static const double sizes[] = {1, 3, 7, 14};
    for (int i = 0; i < 4; i++) {
        make_row(&rows[i], "hopper", ECO_PREC_NF4, sizes[i], -20 - 5 * i, 3, "nvml-energy-counter");
        snprintf(rows[i].gpu, sizeof rows[i].gpu, "NVIDIA H200");
    }
    make_row(&rows[4], "hopper", ECO_PREC_NF4, 7, -40, 3, "nvml-energy-counter"); /* the H200 measured -30 at 7B */
    rows[4].e_fp16_mj = 9000; /* the H200's fp16 took 7000 mJ a token at 7B */
    rows[4].e_quant_mj = 9000 * 0.6;
    snprintf(rows[4].gpu, sizeof rows[4].gpu, "NVIDIA H100 80GB HBM3");
    snprintf(rows[4].session, sizeof rows[4].session, "s2");
    snprintf(rows[4].source, sizeof rows[4].source, "h100:7");
    eco_curve_set *set = fit_rows(rows, 5, NULL);
    eco_estimate e;
    eco_estimate_query q = {.arch = "hopper", .precision = ECO_PREC_NF4, .params_b = 7, .batch = 1, .card = "H100 SXM"};
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.n_anchors, 1);
    assert_near(e.delta_pct, -40, 1e-9);
    /* and the card's own fp16 energy, measured, not the pool's mean (8000) */
    assert_int_equal(e.e_fp16.label, ECO_LABEL_MEASURED);
    assert_near(e.e_fp16.value_mj, 9000, 1e-6);
    assert_near(e.e_quant.value_mj, 9000 * 0.6, 1e-6);
    bool said = false;
    for (size_t i = 0; i < e.n_notes; i++) {
        said |= strstr(e.notes[i], "1 of the 2 measurements at this size ran on the H100 SXM itself") != NULL;
        assert_null(strstr(e.notes[i], "not on the H100 SXM")); /* it was */
    }
    assert_true(said);
    q.params_b = 14; /* ΔE measured on the H200 alone (and so noted); fp16: the H100's own baseline, extrapolated */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_EXTRAPOLATED);
    assert_near(e.e_fp16.value_mj, 18000, 1e-6);
    said = false;
    for (size_t i = 0; i < e.n_notes; i++) said |= strstr(e.notes[i], "ΔE measured on NVIDIA H200, not on the H100 SXM") != NULL;
    assert_true(said);
    q.params_b = 7;
    q.card = "H200";
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.n_anchors, 1);
    assert_near(e.delta_pct, -30, 1e-9);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_MEASURED);
    assert_near(e.e_fp16.value_mj, 7000, 1e-6);
    q.card = NULL; /* the architecture: both, pooled with equal trials */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.n_anchors, 2);
    assert_near(e.delta_pct, -35, 1e-9);
    assert_near(e.e_fp16.value_mj, 8000, 1e-6);
    /* the set holds hopper's pool and one baseline per card, and curves.json keeps them apart */
    assert_int_equal(set->n_fp16, 3);
    assert_string_equal(eco_curve_set_fp16(set, "hopper")->card, "");
    assert_string_equal(eco_curve_set_fp16_for(set, "hopper", "H100 SXM")->card, "NVIDIA H100 80GB HBM3");
    assert_string_equal(eco_curve_set_fp16_for(set, "hopper", "H100 PCIe")->card, ""); /* none of its own: the pool */
    q.card = "H100 PCIe"; /* hopper, measured on neither: pooled, and the note names both cards */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.n_anchors, 2);
    said = false;
    for (size_t i = 0; i < e.n_notes; i++)
        said |= strstr(e.notes[i], "ΔE measured on NVIDIA H200, NVIDIA H100 80GB HBM3, not on the H100 PCIe") != NULL ||
                strstr(e.notes[i], "ΔE measured on NVIDIA H100 80GB HBM3, NVIDIA H200, not on the H100 PCIe") != NULL;
    assert_true(said);
    free(set);
}

static bool has_note(const eco_estimate *e, const char *text)
{
    for (size_t i = 0; i < e->n_notes; i++)
        if (strstr(e->notes[i], text)) return true;
    return false;
}

/* Two cards of one arch, each with three sizes or more, get a curve each beside the pool; a card with fewer sizes
 * answers from the pool. Asked for a card with a curve, only its own measurements label an answer measured: another
 * card's measurement at the size is noted, and the card's own curve answers. */
static void test_card_curves(void **state)
{
    (void)state;
    eco_record rows[10];
    static const double h200[] = {1, 3, 7, 14}, h100[] = {1, 3, 7}, pcie[] = {3, 7};
    size_t n = 0;
    for (int i = 0; i < 4; i++, n++) {
        make_row(&rows[n], "hopper", ECO_PREC_NF4, h200[i], -20 - 5 * i, 3, "nvml-energy-counter");
        snprintf(rows[n].gpu, sizeof rows[n].gpu, "NVIDIA H200");
    }
    for (int i = 0; i < 3; i++, n++) { /* saves more on the H100 SXM, and more steeply with size */
        make_row(&rows[n], "hopper", ECO_PREC_NF4, h100[i], -30 - 10 * i, 3, "nvml-energy-counter");
        snprintf(rows[n].gpu, sizeof rows[n].gpu, "NVIDIA H100 80GB HBM3");
        snprintf(rows[n].source, sizeof rows[n].source, "h100:%g", h100[i]);
    }
    for (int i = 0; i < 2; i++, n++) { /* two sizes: no curve of its own */
        make_row(&rows[n], "hopper", ECO_PREC_NF4, pcie[i], -10, 3, "nvml-energy-counter");
        snprintf(rows[n].gpu, sizeof rows[n].gpu, "NVIDIA H100 PCIe");
        snprintf(rows[n].source, sizeof rows[n].source, "pcie:%g", pcie[i]);
    }
    /* a card whose name begins another's ("NVIDIA H20" in "NVIDIA H200"): listed in notes as itself */
    make_row(&rows[n], "hopper", ECO_PREC_NF4, 1, -22, 3, "nvml-energy-counter");
    snprintf(rows[n].gpu, sizeof rows[n].gpu, "NVIDIA H20");
    snprintf(rows[n++].source, sizeof rows[0].source, "h20:1");
    eco_curve_set *set = fit_rows(rows, n, NULL);
    assert_int_equal(set->n_curves, 3);
    const eco_curve *pool = eco_curve_set_find(set, "hopper", ECO_PREC_NF4);
    assert_non_null(pool);
    assert_string_equal(pool->card, "");
    assert_int_equal(pool->n_anchors, 10);
    const eco_curve *sxm = eco_curve_set_find_for(set, "hopper", ECO_PREC_NF4, "H100 SXM");
    assert_string_equal(sxm->card, "NVIDIA H100 80GB HBM3");
    assert_int_equal(sxm->n_anchors, 3);
    assert_near(sxm->n_max_b, 7, 1e-12);
    assert_string_equal(eco_curve_set_find_for(set, "hopper", ECO_PREC_NF4, "H200")->card, "NVIDIA H200");
    assert_ptr_equal(eco_curve_set_find_for(set, "hopper", ECO_PREC_NF4, "H100 PCIe"), pool);
    assert_ptr_equal(eco_curve_set_find_for(set, "hopper", ECO_PREC_NF4, NULL), pool);
    assert_ptr_equal(eco_curve_set_find_for(set, "hopper", ECO_PREC_INT8, "H200"), NULL);

    eco_estimate e;
    eco_estimate_query q = {.arch = "hopper", .precision = ECO_PREC_NF4, .params_b = 14, .batch = 1, .card = "H100 SXM"};
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_ptr_equal(e.curve, sxm);
    assert_int_equal(e.label, ECO_LABEL_EXTRAPOLATED); /* the H200's 14B is not the H100's measurement */
    assert_near(e.delta_pct, eco_curve_eval(sxm, 14), 1e-9);
    assert_true(e.delta_pct < -50); /* its own trend, not the pool's measured -35 */
    assert_true(has_note(&e, "14B was measured on NVIDIA H200 (ΔE -35.0%"));
    assert_true(has_note(&e, "curve fitted to the NVIDIA H100 80GB HBM3's own 3 measurements (3 sizes), not the hopper pool with "
                             "NVIDIA H200, NVIDIA H100 PCIe, NVIDIA H20:"));
    q.params_b = 5;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_INTERPOLATED);
    assert_int_equal(e.n_anchors, 3);
    assert_false(has_note(&e, "was measured on"));
    q.params_b = 7;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_near(e.delta_pct, -50, 1e-9);
    q.card = "H200", q.params_b = 14;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_near(e.delta_pct, -35, 1e-9);
    q.card = NULL, q.params_b = 7; /* the architecture: the pool's three cards at 7B, equal trials */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_ptr_equal(e.curve, pool);
    assert_int_equal(e.n_anchors, 3);
    assert_near(e.delta_pct, (-30 - 50 - 10) / 3.0, 1e-9);
    assert_false(has_note(&e, "curve fitted to the"));
    q.card = "H100 PCIe"; /* its own measurement first, from the pool: no curve of its own */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_ptr_equal(e.curve, pool);
    assert_near(e.delta_pct, -10, 1e-9);
    q.params_b = 1; /* the pool's measurements at 1B, none on the PCIe card: noted */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_true(has_note(&e, "ΔE measured on NVIDIA H200, NVIDIA H100 80GB HBM3, NVIDIA H20, not on the H100 PCIe"));
    q.card = "H200"; /* its own curve: its own 1B measurement alone, not the pool mean */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_near(e.delta_pct, -20, 1e-9);
    free(set);
}

/* A set with an ada nf4 curve over 1-7B (anchor at 3B), an fp16 baseline, and nothing for hopper. */
static eco_curve_set *make_set(void)
{
    eco_record rows[5];
    static const double sizes[] = {1, 2, 3, 5, 7};
    for (int i = 0; i < 5; i++) make_row(&rows[i], "ada", ECO_PREC_NF4, sizes[i], 30 - 10 * i, 2, "m");
    return fit_rows(rows, 5, NULL);
}

static void test_labels_at_boundaries(void **state)
{
    (void)state;
    eco_curve_set *set = make_set();
    eco_estimate e;
    eco_estimate_query q = {.arch = "ada", .precision = ECO_PREC_NF4, .params_b = 3.0, .batch = 1};
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_near(e.delta_pct, 10, 1e-9); /* the anchor's value, not the curve's */
    assert_int_equal(e.n, 2);
    assert_true(e.has_energy && e.e_fp16.label == ECO_LABEL_MEASURED);
    assert_near(e.e_fp16.value_mj, 3000, 1e-6);
    q.params_b = 3.0 * (1 + 1e-7); /* within the size tolerance */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    q.params_b = 3.01;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_INTERPOLATED);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_INTERPOLATED);
    q.params_b = 7.0; /* the upper bound is an anchor */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    q.params_b = 6.999;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_INTERPOLATED);
    double w_in = e.hi_pct - e.lo_pct;
    q.params_b = 7.01;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_EXTRAPOLATED);
    q.params_b = 30;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_EXTRAPOLATED);
    assert_true(e.hi_pct - e.lo_pct > w_in + 10); /* widened with log-distance */
    assert_true(e.delta_pct >= -75 && e.lo_pct >= -75); /* s_cap */
    q.params_b = 0.99;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_EXTRAPOLATED);
    q.model = "m3.00"; /* measured by model name, whatever the exact size */
    q.params_b = 3.09;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    q.model = NULL;
    /* blackwell has no nf4 curve: proxy ada, estimated, no absolute energy, wider range */
    q.arch = "blackwell";
    q.params_b = 3.0;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_ESTIMATED);
    assert_string_equal(e.arch_used, "ada");
    assert_non_null(e.proxy_reason);
    assert_false(e.has_energy);
    /* no curve and no proxy curve: unsupported, naming what exists */
    q.arch = "hopper";
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_EUNSUPPORTED);
    assert_string_equal(eco_last_error_field(), "precision");
    q.arch = "ada";
    q.precision = ECO_PREC_INT8;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_EUNSUPPORTED);
    assert_non_null(strstr(eco_last_error(), "nf4"));
    q.precision = ECO_PREC_NF4;
    q.params_b = -1;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "params_b");
    q.params_b = 3;
    q.arch = "volta";
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_ENOTFOUND);
    /* recommendation follows the range's sign */
    q.arch = "ada";
    q.params_b = 1;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.recommendation, e.lo_pct > 0 ? ECO_REC_DO_NOT_QUANTIZE : e.hi_pct < 0 ? ECO_REC_QUANTIZE : ECO_REC_DEPENDS);
    assert_int_equal(e.recommendation, ECO_REC_DO_NOT_QUANTIZE); /* +30 +- a few points */
    free(set);
}

/* Where an answer's numbers come from when the request and the data differ: a model name at another size is not
 * its measurement; a card of the architecture that was not measured gets estimated absolute energy with a wider
 * range; fp16 energy at batch > 1 is estimated (the batch factor is an INT8 sweep's); a proxy curve crosses
 * architectures only within one software stack, and on EcoCompute's engine nf4-dq borrows its own arch's nf4. */
static void test_provenance_when_request_and_data_differ(void **state)
{
    (void)state;
    eco_record rows[8];
    static const double sizes[] = {1, 3, 7, 14};
    for (int i = 0; i < 4; i++) { /* hopper nf4 on EcoCompute's engine, measured on an H200 */
        make_row(&rows[i], "hopper", ECO_PREC_NF4, sizes[i], -20 - 5 * i, 3, "nvml-energy-counter");
        snprintf(rows[i].gpu, sizeof rows[i].gpu, "NVIDIA H200");
        snprintf(rows[i].backend, sizeof rows[i].backend, "eco 0.1.0 cuda");
    }
    for (int i = 0; i < 4; i++) { /* ampere nf4-dq and fp8 on bitsandbytes */
        make_row(&rows[4 + i], "ampere", i < 2 ? ECO_PREC_NF4_DQ : ECO_PREC_FP8, sizes[i % 2 ? 2 : 1], 10 + i, 3, "nvml-power-poll");
        snprintf(rows[4 + i].gpu, sizeof rows[4 + i].gpu, "NVIDIA A800-SXM4-80GB");
        snprintf(rows[4 + i].backend, sizeof rows[4 + i].backend, "bitsandbytes 0.43.3");
    }
    eco_curve_set *set = fit_rows(rows, 8, NULL);
    assert_string_equal(eco_curve_set_fp16(set, "hopper")->backend, "eco 0.1.0 cuda");
    assert_string_equal(eco_curve_set_fp16(set, "hopper")->protocol, eco_curve_set_find(set, "hopper", ECO_PREC_NF4)->protocol);
    eco_estimate e;
    eco_estimate_query q = {.arch = "hopper", .precision = ECO_PREC_NF4, .params_b = 7, .batch = 1, .card = "H200"};
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_MEASURED);
    assert_near(e.e_fp16.value_mj, 7000, 1e-6);
    for (size_t i = 0; i < e.n_notes; i++) /* same protocol and stack: no note about the baseline's */
        assert_null(strstr(e.notes[i], "fp16 baselines of protocol"));
    /* the model's name at 70B: the 70B question, not the 7B measurement */
    q.model = "m7.00";
    q.params_b = 70;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_EXTRAPOLATED);
    bool said = false;
    for (size_t i = 0; i < e.n_notes; i++) said |= strstr(e.notes[i], "measured at 7B, not at the 70B") != NULL;
    assert_true(said);
    /* 70B fp16 (140e9 bytes, 130 GiB) fits the H200's 141 GiB with its context and allocator, as the optimizer
     * counts it; 72B (134 GiB x 1.05 + 0.8) does not */
    for (size_t i = 0; i < e.n_notes; i++) assert_null(strstr(e.notes[i], "do not fit"));
    assert_true(eco_vram_needed_gib(140e9, 0) <= 141);
    q.params_b = 72;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    said = false;
    for (size_t i = 0; i < e.n_notes; i++) said |= strstr(e.notes[i], "fp16 weights (134.1 GiB) do not fit the H200's 141 GB") != NULL;
    assert_true(said);
    assert_true(eco_vram_needed_gib(144e9, 0) > 141);
    q.params_b = 7.5; /* within 15%: the model's measurement */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    q.model = NULL;
    /* an H100 is hopper but not the H200 the baseline ran on: ΔE keeps its label, absolute energy is estimated */
    q.params_b = 7;
    q.card = "H100 SXM";
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_ESTIMATED);
    assert_int_equal(e.e_quant.label, ECO_LABEL_ESTIMATED);
    assert_near(e.e_fp16.value_mj, 7000, 1e-6);
    assert_true(e.e_fp16.lo_mj < 7000 / 1.8 && e.e_fp16.hi_mj > 7000 * 1.8); /* 1.96 x 0.35 in log: x/ 1.99 */
    said = false;
    for (size_t i = 0; i < e.n_notes; i++) said |= strstr(e.notes[i], "ΔE measured on NVIDIA H200, not on the H100 SXM") != NULL;
    assert_true(said);
    /* a long context whose KV cache reads 10% more bytes than the fp16 weights: both pay the KV's energy alike, so ΔE
     * shrinks by 1/(1 + 0.1), estimated, and the absolute energies carry it; 4% is not */
    q.card = "H200";
    q.bytes_per_token = 1e9;
    q.kv_bytes_per_position = 1e5; /* 1000 more positions x 100 KB = 10% */
    eco_estimate s0;
    q.ctx = 0;
    assert_int_equal(eco_estimate_run(set, &q, &s0), ECO_OK);
    q.ctx = ECO_MEASURED_CTX + 1000;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(s0.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.label, ECO_LABEL_ESTIMATED);
    assert_near(e.delta_pct, s0.delta_pct / 1.1, 1e-9);
    assert_near(e.lo_pct, fmin(s0.lo_pct / 1.05, s0.lo_pct / 1.2), 1e-9);
    assert_near(e.hi_pct, fmax(s0.hi_pct / 1.05, s0.hi_pct / 1.2), 1e-9);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_ESTIMATED);
    assert_int_equal(e.e_quant.label, ECO_LABEL_ESTIMATED);
    assert_near(e.e_fp16.value_mj, s0.e_fp16.value_mj * 1.1, 1e-6);
    assert_near(e.e_quant.value_mj, s0.e_fp16.value_mj * (1 + s0.delta_pct / 100 + 0.1), 1e-6);
    assert_near(e.e_quant.value_mj / e.e_fp16.value_mj, 1 + e.delta_pct / 100, 1e-9); /* the two agree at batch 1 */
    /* at batch 4 every sequence reads its own cache while the weights are read once: 4 x 10% of a step, so ΔE
     * shrinks by 1/1.4, and the two energies still agree with it */
    q.batch = 4;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_ESTIMATED);
    assert_near(e.ctx_kv_share, 0.4, 1e-12);
    assert_near(e.delta_pct, s0.delta_pct / 1.4, 1e-9);
    assert_near(e.short_delta_pct, s0.delta_pct, 1e-12);
    assert_near(e.e_quant.value_mj / e.e_fp16.value_mj, 1 + e.delta_pct / 100, 1e-9);
    /* a share under 5% at batch 1 passes it at batch 2: 4% becomes 8% */
    q.kv_bytes_per_position = 4e4;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_ESTIMATED);
    assert_near(e.delta_pct, s0.delta_pct / 1.16, 1e-9);
    q.kv_bytes_per_position = 1e5;
    q.batch = 1;
    q.kv_bytes_per_position = 4e4;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_near(e.delta_pct, s0.delta_pct, 0);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_MEASURED);
    /* each precision's own share: 2.5% of fp16's 4e9 bytes moves neither ΔE nor the baseline, and 10% of the
     * quantized 1e9 bytes makes the quantized energy estimated */
    q.fp16_bytes_per_token = 4e9;
    q.kv_bytes_per_position = 1e5;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.e_quant.label, ECO_LABEL_ESTIMATED);
    assert_near(e.e_quant.value_mj, s0.e_quant.value_mj, 1e-6);
    q.kv_bytes_per_position = 4e5; /* 10% and 40% */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_ESTIMATED);
    assert_near(e.delta_pct, s0.delta_pct / 1.1, 1e-9);
    assert_near(e.e_quant.hi_mj, s0.e_fp16.hi_mj * (1 + s0.hi_pct / 100 + 2 * 0.1), 1e-6 * e.e_quant.hi_mj);
    q.fp16_bytes_per_token = 0;
    q.ctx = 0;
    /* batch 8 on the measured card: the fp16 factor is borrowed, so estimated and widened (log-SD 0.25 in quadrature
     * with the measured baseline's own floor of +-10%: x/ 1.65 at 95%) */
    q.card = "H200";
    q.batch = 8;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_ESTIMATED);
    double f = eco_batch_energy_factor(8);
    assert_near(e.e_fp16.value_mj, 7000 * f, 1e-6);
    assert_near(e.e_fp16.hi_mj / e.e_fp16.value_mj, exp(sqrt(pow(log(1.10), 2) + pow(1.96 * 0.25, 2))), 1e-9);
    q.batch = 1;
    /* nf4-dq: ampere has it on bitsandbytes, which is not carried over; hopper's own nf4 stands in */
    q.precision = ECO_PREC_NF4_DQ;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_ESTIMATED);
    assert_string_equal(e.arch_used, "hopper");
    assert_int_equal(e.curve->precision, ECO_PREC_NF4);
    assert_non_null(strstr(e.proxy_reason, "sibling"));
    assert_true(e.delta_pct < -20 && e.hi_pct - e.lo_pct > 2 * 1.96 * 10 - 1e-9);
    /* fp8 on ampere: hopper has it only on another stack (no fp8 row there here either): refused, saying why */
    q.arch = "ampere";
    q.card = NULL;
    q.precision = ECO_PREC_INT8;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_EUNSUPPORTED);
    q.precision = ECO_PREC_NF4; /* hopper's nf4 is EcoCompute's engine, ampere's data bitsandbytes */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_EUNSUPPORTED);
    assert_non_null(strstr(eco_last_error(), "another software stack"));
    /* and no sibling on bitsandbytes (double quant adds a kernel there): nf4 is not borrowed from nf4-dq */
    assert_null(strstr(eco_last_error(), "sibling"));
    /* the optimizer: at 10B nf4 and nf4-dq read one curve, and nf4-dq's fewer bytes would break the tie, but its
     * ΔE is borrowed (wide range): the fitted nf4 is recommended, and a note says why */
    const eco_gpu_spec *h200;
    assert_int_equal(eco_gpu_find("H200", &h200, NULL), ECO_OK);
    eco_optimize_result *r = malloc(sizeof *r);
    eco_optimize_query oq = {.params_b = 10, .gpu = h200, .ctx = 2048, .objective = ECO_OBJ_ENERGY, .batch = 1};
    assert_int_equal(eco_optimize_run(set, &oq, r), ECO_OK);
    assert_int_equal(r->cand[r->best].precision, ECO_PREC_NF4);
    assert_int_equal(r->cand[r->best].delta_label, ECO_LABEL_INTERPOLATED);
    bool dq_close = false;
    for (size_t i = 0; i < r->n; i++)
        if (r->cand[i].precision == ECO_PREC_NF4_DQ) {
            dq_close = r->cand[i].delta_label == ECO_LABEL_ESTIMATED && r->cand[i].score <= r->cand[r->best].score;
        }
    assert_true(dq_close); /* without the rule it would have won */

    said = false;
    for (size_t i = 0; i < r->n_notes; i++) said |= strstr(r->notes[i], "nf4-dq's ΔE is estimated from a proxy curve") != NULL;
    assert_true(said);
    /* no configuration draws more than the board's 700 W: at 7B fp16 (7000 mJ a token here) a token takes >= 10 ms */
    oq.params_b = 7;
    assert_int_equal(eco_optimize_run(set, &oq, r), ECO_OK);
    bool fp16_seen = false;
    for (size_t i = 0; i < r->n; i++) {
        const eco_candidate *c = &r->cand[i];
        assert_true(c->energy_mj * 1e-3 * c->throughput_tok_s <= 700 * (1 + 1e-9));
        if (c->precision == ECO_PREC_FP16) {
            fp16_seen = true;
            assert_near(c->latency_ms, 10.0, 1e-9);
            assert_string_equal(c->bound, "power");
        }
    }
    assert_true(fp16_seen);
    /* on a card the baseline was not measured on, another card's energy bounds its latency at the low end of its
     * range (carried over, x/ ~2): still no step over the board's 700 W at that energy, and the note says so */
    assert_int_equal(eco_gpu_find("H100 SXM", &oq.gpu, NULL), ECO_OK);
    assert_int_equal(eco_optimize_run(set, &oq, r), ECO_OK);
    eco_energy_value carried;
    assert_int_equal(eco_fp16_energy_on(eco_curve_set_fp16(set, "hopper"), 7, "H100 SXM", 1, &carried), ECO_OK);
    assert_true(carried.lo_mj < carried.value_mj / 1.5);
    size_t bounded = 0;
    for (size_t i = 0; i < r->n; i++) {
        const eco_candidate *c = &r->cand[i];
        double lo_token_j = c->energy_mj * (carried.lo_mj / carried.value_mj) * 1e-3;
        assert_true(lo_token_j * c->throughput_tok_s <= 700 * (1 + 1e-9) || c->borrowed);
        bounded += !strcmp(c->bound, "power");
    }
    assert_true(bounded > 0);
    said = false;
    for (size_t i = 0; i < r->n_notes; i++) said |= strstr(r->notes[i], "the low end of its range") != NULL;
    assert_true(said);
    /* there, at 10B, nf4-dq (fewer bytes, nf4's curve borrowed) would be as cheap and faster than the fitted nf4 on
     * its point value alone; its borrowed ΔE dominates only at the top of its range, so nf4 stays on the front */
    oq.params_b = 10;
    assert_int_equal(eco_optimize_run(set, &oq, r), ECO_OK);
    bool nf4_on_front = false;
    for (size_t i = 0; i < r->n_pareto; i++) nf4_on_front |= r->cand[r->pareto[i]].precision == ECO_PREC_NF4;
    assert_true(nf4_on_front);
    oq.params_b = 7;
    /* a card asked by a name that only resembles the table's (an H200 NVL: 600 W): the H200's energy is estimated
     * there, and bounds the steps only at the low end of its range: faster than on the measured H200 */
    assert_int_equal(eco_gpu_find("H200", &oq.gpu, NULL), ECO_OK);
    oq.card = "H200";
    assert_int_equal(eco_optimize_run(set, &oq, r), ECO_OK);
    double fp16_ms_measured = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->cand[i].precision == ECO_PREC_FP16) fp16_ms_measured = r->cand[i].latency_ms;
    oq.card = "H200 NVL";
    assert_int_equal(eco_optimize_run(set, &oq, r), ECO_OK);
    for (size_t i = 0; i < r->n; i++) {
        assert_int_equal(r->cand[i].energy_label, ECO_LABEL_ESTIMATED);
        if (r->cand[i].precision == ECO_PREC_FP16) assert_true(r->cand[i].latency_ms < fp16_ms_measured * 0.9);
    }
    /* and a long context the measurements did not read makes energy estimated on the measured card too */
    oq.card = "H200";
    oq.preset = eco_preset_find("Qwen2.5-7B");
    oq.ctx = 32768;
    assert_int_equal(eco_optimize_run(set, &oq, r), ECO_OK);
    for (size_t i = 0; i < r->n; i++) assert_int_equal(r->cand[i].energy_label, ECO_LABEL_ESTIMATED);
    free(r);
    free(set);
}

/* A measured estimate names the measurements at its size that carry flags, with their sources; unflagged ones
 * add no note; the flags reach the anchors from the records. */
static void test_flagged_measurements_are_named(void **state)
{
    (void)state;
    eco_record rows[6];
    static const double sizes[] = {1, 2, 3, 3, 5, 7};
    for (int i = 0; i < 6; i++) make_row(&rows[i], "ada", ECO_PREC_NF4, sizes[i], 30 - 5 * i, 3, "m");
    snprintf(rows[3].source, sizeof rows[3].source, "run.energy.json#nf4");
    snprintf(rows[3].flags, sizeof rows[3].flags, "throttled fp16:throttled");
    eco_curve_set *set = fit_rows(rows, 6, NULL);
    eco_estimate e;
    eco_estimate_query q = {.arch = "ada", .precision = ECO_PREC_NF4, .params_b = 3.0, .batch = 1};
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.n_anchors, 2);
    bool named = false;
    for (size_t i = 0; i < e.n_notes; i++)
        named |= strstr(e.notes[i], "1 of 2 measurement(s) at this size carry flags: run.energy.json#nf4 (throttled fp16:throttled)") != NULL;
    assert_true(named);
    q.params_b = 5.0; /* a measured size without flags: no such note */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    for (size_t i = 0; i < e.n_notes; i++) assert_null(strstr(e.notes[i], "carry flags"));
    free(set);
}

/* Measurements of eco's own engine name their kernel design; an answer resting on several designs says so. */
static void test_kernel_designs_are_said(void **state)
{
    (void)state;
    char a[9], b[9], none[9];
    eco_record r = {0};
    snprintf(r.note, sizeof r.note, "eco measure" ECO_RECORD_DESIGN_MARK "graph+PDL, nf4 a row per lane");
    eco_record_design_id(&r, a);
    snprintf(r.note, sizeof r.note, "eco measure" ECO_RECORD_DESIGN_MARK "graph+PDL, nf4 lanes");
    eco_record_design_id(&r, b);
    snprintf(r.note, sizeof r.note, "reference row");
    eco_record_design_id(&r, none);
    assert_int_equal(strlen(a), 8);
    assert_string_not_equal(a, b);
    assert_string_equal(none, "");
    snprintf(r.note, sizeof r.note, "eco measure" ECO_RECORD_DESIGN_MARK);
    eco_record_design_id(&r, none);
    assert_string_equal(none, "");

    eco_record rows[6];
    static const double sizes[] = {1, 2, 3, 3, 5, 7};
    for (int i = 0; i < 6; i++) make_row(&rows[i], "ada", ECO_PREC_NF4, sizes[i], 30 - 5 * i, 3, "m");
    snprintf(rows[3].session, sizeof rows[3].session, "s2");
    snprintf(rows[2].note, sizeof rows[2].note, "eco measure" ECO_RECORD_DESIGN_MARK "graph+PDL, nf4 a row per lane");
    snprintf(rows[3].note, sizeof rows[3].note, "eco measure" ECO_RECORD_DESIGN_MARK "graph+PDL, nf4 lanes");
    eco_estimate e;
    eco_estimate_query q = {.arch = "ada", .precision = ECO_PREC_NF4, .params_b = 3.0, .batch = 1};
    for (int same = 0; same < 2; same++) {
        if (same) snprintf(rows[3].note, sizeof rows[3].note, "%s", rows[2].note);
        eco_curve_set *set = fit_rows(rows, 6, NULL);
        q.params_b = 3.0;
        assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
        assert_int_equal(e.label, ECO_LABEL_MEASURED);
        bool said = false;
        for (size_t i = 0; i < e.n_notes; i++)
            said |= strstr(e.notes[i], "the 2 measurements behind this answer ran 2 different kernel designs of eco's engine") != NULL;
        assert_int_equal(said, !same);
        q.params_b = 4.0; /* between the sizes: the curve's six measurements, two of which name a design */
        assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
        assert_int_equal(e.label, ECO_LABEL_INTERPOLATED);
        said = false;
        for (size_t i = 0; i < e.n_notes; i++)
            said |= strstr(e.notes[i], "2 of the 6 measurements on this curve ran 2 different kernel designs") != NULL;
        assert_int_equal(said, !same);
        free(set);
    }
}

/* A measured answer's range: Student's t over its few trials, the scatter between sessions that repeated a
 * measurement on the curve when the answer rests on one session, and an fp16 baseline never zero-width. */
static void test_measured_ranges(void **state)
{
    (void)state;
    eco_record rows[6];
    static const double sizes[] = {1, 2, 3, 3, 5, 7}, deltas[] = {30, 20, 12, 8, 0, -5};
    for (int i = 0; i < 6; i++) {
        make_row(&rows[i], "ada", ECO_PREC_NF4, sizes[i], deltas[i], 2, "m");
        rows[i].e_quant_sd_mj = 0.01 * rows[i].e_quant_mj; /* 1% of E_q: 1 point of ΔE, about */
        snprintf(rows[i].session, sizeof rows[i].session, "s%d", i);
        snprintf(rows[i].model, sizeof rows[i].model, "m%.2f", sizes[i]); /* rows 2 and 3: one model, two sessions */
    }
    eco_curve_set *set = fit_rows(rows, 6, NULL);
    const eco_curve *c = eco_curve_set_find(set, "ada", ECO_PREC_NF4);
    assert_non_null(c);
    eco_estimate e;
    eco_estimate_query q = {.arch = "ada", .precision = ECO_PREC_NF4, .params_b = 5.0, .batch = 1};
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    /* one session of 2 trials: SE with t(1) = 12.71 (not 1.96), and the SD between the 3B sessions (12 and 8:
     * 2.83 points) at 1.96 */
    size_t k = 0;
    while (k < c->n_anchors && fabs(c->anchors[k].params_b - 5.0) > 1e-9) k++;
    assert_true(k < c->n_anchors);
    double se = c->anchors[k].sd_pct / sqrt(2.0), between = sqrt(8.0);
    if (se < 1.0) se = 1.0;
    double half = sqrt(pow(eco_t975(1) * se, 2) + pow(1.96 * between, 2));
    assert_near(e.hi_pct - e.delta_pct, half, 1e-9);
    assert_near(e.delta_pct - e.lo_pct, half, 1e-9);
    bool said = false;
    for (size_t i = 0; i < e.n_notes; i++) said |= strstr(e.notes[i], "adds the 2.8-point SD between sessions") != NULL;
    assert_true(said);
    /* two sessions at 3B: min..max plus the SE part only (their spread is in min..max already) */
    q.params_b = 3.0;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.n_anchors, 2);
    assert_true(e.lo_pct < 8 && e.hi_pct > 12);
    for (size_t i = 0; i < e.n_notes; i++) assert_null(strstr(e.notes[i], "between sessions"));
    /* the fp16 baseline at a measured size with one baseline: at least +-10% */
    q.params_b = 5.0;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_MEASURED);
    assert_near(e.e_fp16.hi_mj / e.e_fp16.value_mj, 1.10, 1e-12);
    assert_near(e.e_fp16.lo_mj / e.e_fp16.value_mj, 0.90, 1e-12);
    /* asked for the architecture, the fp16 energy is its measured card's, and a note says which */
    said = false;
    for (size_t i = 0; i < e.n_notes; i++) said |= strstr(e.notes[i], "fp16 energy per token as measured on synthetic: asked for the ada architecture") != NULL;
    assert_true(said);
    /* a model asked by name that this curve never measured: the size's measurement answers, and says whose it is */
    q.model = "Other-5B";
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    said = false;
    for (size_t i = 0; i < e.n_notes; i++)
        said |= strstr(e.notes[i], "the measurement at this size is of m5.00, another model than Other-5B") != NULL;
    assert_true(said);
    free(set);
}

/* A measurement without a trial SD takes the others' pooled SD, not the curve's residual SD (a form that fits
 * badly had made two sessions 0.1 point apart a range of 230 points); and a fitted or extrapolated range is never
 * narrower than the measurements nearest it. */
static void test_ranges_rest_on_the_measurements(void **state)
{
    (void)state;
    eco_record rows[6];
    static const double sizes[] = {0.5, 1, 2, 3.5, 7, 7}, deltas[] = {580, 30, 400, -5, 105.9, 105.8};
    static const int trials[] = {2, 2, 2, 2, 3, 1};
    for (int i = 0; i < 6; i++) {
        make_row(&rows[i], "ada", ECO_PREC_INT8_MIXED, sizes[i], deltas[i], trials[i], "m");
        if (trials[i] > 1) rows[i].e_quant_sd_mj = 0.02 * rows[i].e_quant_mj;
        snprintf(rows[i].session, sizeof rows[i].session, "s%d", i);
    }
    eco_curve_set *set = fit_rows(rows, 6, NULL);
    const eco_curve *c = eco_curve_set_find(set, "ada", ECO_PREC_INT8_MIXED);
    assert_non_null(c);
    assert_true(c->resid_sd_pct > 50); /* the zigzag no form follows */
    eco_estimate e;
    eco_estimate_query q = {.arch = "ada", .precision = ECO_PREC_INT8_MIXED, .params_b = 7.0, .batch = 1};
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.n_anchors, 2);
    /* the 3-trial anchor's SD: 2% of E_q is 2 x 2.059 = 4.12 points of ΔE; SE over all 4 trials, t(2) */
    size_t k = 0;
    while (k < c->n_anchors && !(fabs(c->anchors[k].params_b - 7.0) < 1e-9 && c->anchors[k].n_trials == 3)) k++;
    assert_true(k < c->n_anchors);
    double half = eco_t975(2) * c->anchors[k].sd_pct / 2.0;
    assert_near(e.hi_pct - 105.9, half, 1e-6);
    assert_near(105.8 - e.lo_pct, half, 1e-6);
    assert_true(e.lo_pct > 90 && e.recommendation == ECO_REC_DO_NOT_QUANTIZE);
    bool said = false;
    for (size_t i = 0; i < e.n_notes; i++) said |= strstr(e.notes[i], "1 of 2 measurement(s) give no trial SD") != NULL;
    assert_true(said);
    /* beyond 7B: at least as wide as the 7B measurement, either way */
    q.params_b = 9.0;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_EXTRAPOLATED);
    double floor_half = half + (105.9 - 105.8) / 2;
    assert_true(e.hi_pct - e.delta_pct >= floor_half - 1e-9);
    assert_true(e.delta_pct - e.lo_pct >= floor_half - 1e-9 || e.lo_pct <= -c->s_cap_pct);
    /* a smooth curve through 2-trial anchors: its band at 8B is narrow, the 7B measurement's t(1) range is not */
    static const double nf4[] = {10, 0, -8, -15};
    for (int i = 0; i < 4; i++) {
        make_row(&rows[i], "ada", ECO_PREC_NF4, sizes[i + 1], nf4[i] - 0.3 * (i == 1), 2, "m");
        rows[i].e_quant_sd_mj = 0.01 * rows[i].e_quant_mj;
        snprintf(rows[i].session, sizeof rows[i].session, "s%d", i);
    }
    fit_rows(rows, 4, set);
    c = eco_curve_set_find(set, "ada", ECO_PREC_NF4);
    q.precision = ECO_PREC_NF4;
    q.params_b = 7.0;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    double measured_half = e.hi_pct - e.delta_pct;
    assert_true(measured_half > 5); /* t(1) = 12.7 */
    q.params_b = 8.0;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_EXTRAPOLATED);
    assert_true(e.hi_pct - e.delta_pct >= measured_half - 1e-9 && e.delta_pct - e.lo_pct >= measured_half - 1e-9);
    /* between 3.5B and 7B: at least the two measurements' half-widths interpolated in log size */
    q.params_b = 3.5;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    double half35 = e.hi_pct - e.delta_pct, w = log(5.0 / 3.5) / log(7.0 / 3.5);
    double want = half35 + w * (measured_half - half35);
    q.params_b = 5.0;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_INTERPOLATED);
    assert_true(e.hi_pct - e.delta_pct >= want - 1e-9 && e.delta_pct - e.lo_pct >= want - 1e-9);
    free(set);
}

/* Two groups as large as each other (rows and trials): one is fitted, the other's rows say it was a tie, not
 * that they were fewer, and an estimate on the curve says its answer rests on one of two equal groups. */
static void test_tied_groups_are_said(void **state)
{
    (void)state;
    eco_record rows[6];
    static const double sizes[] = {1, 3, 7};
    for (int i = 0; i < 6; i++) {
        make_row(&rows[i], "ada", ECO_PREC_NF4, sizes[i % 3], i < 3 ? 10 - 5 * i : -5 * i, 2, "m");
        snprintf(rows[i].backend, sizeof rows[i].backend, "%s", i < 3 ? "stack-b" : "stack-a");
        snprintf(rows[i].source, sizeof rows[i].source, "t:%d", i);
    }
    eco_curve_set *set = fit_rows(rows, 6, NULL);
    const eco_curve *c = eco_curve_set_find(set, "ada", ECO_PREC_NF4);
    assert_string_equal(c->backend, "stack-a"); /* the smaller name */
    assert_int_equal(c->n_excluded, 3);
    for (size_t i = 0; i < c->n_excluded; i++) assert_non_null(strstr(c->excluded[i].reason, "tied with the chosen group"));
    eco_estimate e;
    eco_estimate_query q = {.arch = "ada", .precision = ECO_PREC_NF4, .params_b = 3.0, .batch = 1};
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    bool said = false;
    for (size_t i = 0; i < e.n_notes; i++) said |= strstr(e.notes[i], "3 rows of another group as large as this curve's") != NULL;
    assert_true(said);
    /* and its measured range covers the tied group's measurement at this size (+5 against the chosen -20) */
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_near(e.delta_pct, -20, 1e-9);
    assert_true(e.hi_pct > 5 && e.recommendation == ECO_REC_DEPENDS);
    said = false;
    for (size_t i = 0; i < e.n_notes; i++) said |= strstr(e.notes[i], "left out by name alone) measured +5.0% here") != NULL;
    assert_true(said);
    /* and a size beside it is no surer: the curve's floor takes the tied group's measurements too (1.5B and 1.501B
     * on the RTX 4090 had answered "depends" and "do not quantize") */
    double measured_width = e.hi_pct - e.lo_pct;
    q.params_b = 3.001;
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_INTERPOLATED);
    assert_true(e.hi_pct - e.lo_pct >= 0.99 * measured_width && e.recommendation == ECO_REC_DEPENDS);
    /* one more row in stack-b: the larger group wins, and the others are plainly not the largest */
    eco_record more[7];
    memcpy(more, rows, sizeof rows);
    make_row(&more[6], "ada", ECO_PREC_NF4, 5, 0, 2, "m");
    snprintf(more[6].backend, sizeof more[6].backend, "stack-b");
    fit_rows(more, 7, set);
    c = eco_curve_set_find(set, "ada", ECO_PREC_NF4);
    assert_string_equal(c->backend, "stack-b");
    for (size_t i = 0; i < c->n_excluded; i++) assert_non_null(strstr(c->excluded[i].reason, "not the largest group"));
    free(set);
}

static void test_unknown_gpu(void **state)
{
    (void)state;
    const eco_gpu_spec *g;
    bool exact;
    assert_int_equal(eco_gpu_find("Voodoo 5", &g, &exact), ECO_ENOTFOUND);
    assert_string_equal(eco_last_error_field(), "gpu");
    assert_non_null(strstr(eco_last_error(), "RTX 4090"));
    assert_int_equal(eco_gpu_find("NVIDIA H200", &g, &exact), ECO_OK);
    assert_string_equal(g->name, "H200");
    assert_true(exact);
    /* nvidia-smi's names and form factors are the card; another model of the family is only the closest card */
    static const struct { const char *asked, *card; bool exact; } names[] = {
        {"NVIDIA H100 80GB HBM3", "H100 SXM", true}, {"NVIDIA GeForce RTX 4090 24GB", "RTX 4090", true},
        {"H200 SXM 141GB", "H200", true},            {"H100 PCIe 80GB", "H100 PCIe", true},
        {"H100 NVL", "H100 SXM", false},             {"RTX 4090 Ti", "RTX 4090", false},
        {"RTX 4090D", "RTX 4090D", true},            {"H200 NVL", "H200", false},
        {"H200 141GB HBM3e", "H200", true},          {"H200 X", "H200", false},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        assert_int_equal(eco_gpu_find(names[i].asked, &g, &exact), ECO_OK);
        assert_string_equal(g->name, names[i].card);
        assert_int_equal(exact, names[i].exact);
    }
    const char *arch;
    assert_int_equal(eco_arch_from_gpu_name("NVIDIA H100 80GB HBM3", &arch), ECO_OK);
    assert_string_equal(arch, "hopper");
    assert_int_equal(eco_arch_from_gpu_name("RTX 40900", &arch), ECO_ENOTFOUND); /* digits of another number */
    /* every consumer generation's cards, not only its top two; workstation cards by their own generation */
    static const struct { const char *name, *arch; } gens[] = {
        {"NVIDIA GeForce RTX 3060", "ampere"}, {"RTX 3070 Ti", "ampere"},  {"RTX 3050", "ampere"},
        {"NVIDIA RTX A4000", "ampere"},        {"NVIDIA A2", "ampere"},     {"NVIDIA A16", "ampere"},
        {"GeForce RTX 2060 SUPER", "turing"},  {"RTX 2070", "turing"},      {"Quadro RTX 4000", "turing"},
        {"NVIDIA RTX 4000 Ada Generation", "ada"}, {"NVIDIA L20", "ada"},   {"RTX 4060 Ti", "ada"},
        {"NVIDIA GH200 480GB", "hopper"},      {"NVIDIA H200 NVL", "hopper"}, {"NVIDIA GB200", "blackwell"},
        {"NVIDIA GeForce RTX 5060 Ti", "blackwell"}, {"NVIDIA GeForce RTX 5050", "blackwell"},
    };
    for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++) {
        assert_int_equal(eco_arch_from_gpu_name(gens[i].name, &arch), ECO_OK);
        if (strcmp(arch, gens[i].arch)) fail_msg("%s: %s, not %s", gens[i].name, arch, gens[i].arch);
    }
    /* cards of no class are named as such (a document from one is refused, not filed under the class it claims);
     * no card of a class is */
    static const struct { const char *name, *what; } outside[] = {
        {"AMD Instinct MI300X", "an AMD GPU"}, {"AMD Radeon RX 7900 XTX", "an AMD GPU"}, {"Intel(R) Data Center GPU Max 1550", "an Intel GPU"},
        {"Tesla V100-SXM2-32GB", "a Volta GPU"}, {"Tesla P100-PCIE-16GB", "a Pascal GPU"}, {"Tesla P4", "a Pascal GPU"},
        {"Tesla P40", "a Pascal GPU"}, {"Tesla K80", "a Kepler GPU"},
    };
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
        const char *what = eco_gpu_name_outside_classes(outside[i].name);
        if (!what || strcmp(what, outside[i].what)) fail_msg("%s: %s", outside[i].name, what ? what : "(none)");
    }
    for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++) assert_null(eco_gpu_name_outside_classes(gens[i].name));
    for (size_t i = 0; i < eco_gpu_count(); i++) assert_null(eco_gpu_name_outside_classes(eco_gpu_at(i)->name));
    assert_null(eco_gpu_name_outside_classes("NVIDIA A100-PCIE-40GB"));
    assert_true(eco_gpu_is_arch_name("Hopper") && !eco_gpu_is_arch_name("H200"));
    assert_int_equal(eco_gpu_find("NVIDIA A100-SXM4-80GB", &g, &exact), ECO_OK);
    assert_string_equal(g->name, "A100 80GB");
    assert_int_equal(eco_gpu_find("RTX 4090D", &g, &exact), ECO_OK);
    assert_string_equal(g->name, "RTX 4090D");
    /* the cards those names map to are in the table with their own memory, not a datacenter reference card's */
    static const struct { const char *asked, *card; double vram; } own[] = {
        {"NVIDIA GeForce RTX 3060", "RTX 3060", 12}, {"NVIDIA GeForce RTX 2060", "RTX 2060", 6}, {"Tesla A2", "A2", 16},
        {"NVIDIA RTX A4000", "RTX A4000", 16},       {"Quadro RTX 4000", "Quadro RTX 4000", 8},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        assert_int_equal(eco_gpu_find(own[i].asked, &g, &exact), ECO_OK);
        assert_string_equal(g->name, own[i].card);
        assert_true(exact && g->vram_gb == own[i].vram);
    }
    /* a memory size in the name that is not the card's: the closest card, not that card */
    static const struct { const char *asked; bool exact; } sized[] = {
        {"RTX 3050 6GB", false}, {"RTX 3060 8GB", false}, {"A800 40GB", false},      {"H100 SXM 94GB", false},
        {"RTX 3050 8GB", true},  {"H200 SXM 141GB", true}, {"NVIDIA H200 SXM5 141GB", true}, {"A100 PCIe 80GB", true},
    };
    for (size_t i = 0; i < sizeof sized / sizeof sized[0]; i++) {
        assert_int_equal(eco_gpu_find(sized[i].asked, &g, &exact), ECO_OK);
        if (exact != sized[i].exact) fail_msg("%s: exact %d", sized[i].asked, exact);
    }
    assert_int_equal(eco_gpu_find("NVIDIA GH200 480GB", &g, &exact), ECO_OK); /* the closest card: H200-class memory */
    assert_string_equal(g->name, "H200");
    assert_false(exact);
    assert_int_equal(eco_gpu_find("NVIDIA RTX 4000 Ada Generation", &g, &exact), ECO_OK); /* not the Quadro RTX 4000 */
    assert_string_equal(g->arch, "ada");
    assert_string_equal(g->name, "RTX 4090"); /* a workstation card (20 GB), not the GeForce RTX 4060 (8 GB) */
    /* the GeForce line-ups are in the table: an RTX 3080 had stood in as an 80 GB A100 (QA: API) */
    assert_int_equal(eco_gpu_find("NVIDIA GeForce RTX 3080", &g, &exact), ECO_OK);
    assert_true(exact && !strcmp(g->name, "RTX 3080") && g->vram_gb == 10);
    assert_int_equal(eco_gpu_find("RTX 4080 SUPER", &g, &exact), ECO_OK);
    assert_true(exact && !strcmp(g->name, "RTX 4080 SUPER"));
    /* a GeForce card the table lacks: the nearest model number of its architecture (lower on a tie, then the
     * smaller memory), never the architecture's datacenter reference */
    static const struct { const char *asked, *card; } geforce[] = {
        {"RTX 2060 SUPER", "RTX 2060"}, {"RTX 3060 Ti", "RTX 3060"}, {"RTX 5050", "RTX 5060"}, {"RTX 4070 SUPER", "RTX 4070"},
    };
    for (size_t i = 0; i < sizeof geforce / sizeof geforce[0]; i++) {
        assert_int_equal(eco_gpu_find(geforce[i].asked, &g, &exact), ECO_OK);
        if (exact || strcmp(g->name, geforce[i].card)) fail_msg("%s: %s, exact %d", geforce[i].asked, g->name, exact);
    }
    assert_int_equal(eco_gpu_find("NVIDIA RTX 3070 Laptop GPU", &g, &exact), ECO_OK);
    assert_true(!exact && !strcmp(g->name, "RTX 3070"));
}

/* The request resolvers the service and the browser share. */
static void test_request_resolvers(void **state)
{
    (void)state;
    const char *arch;
    assert_int_equal(eco_gpu_resolve_arch("hopper", &arch), ECO_OK);
    assert_string_equal(arch, "hopper");
    assert_int_equal(eco_gpu_resolve_arch("NVIDIA H200", &arch), ECO_OK);
    assert_string_equal(arch, "hopper");
    assert_int_equal(eco_gpu_resolve_arch("RTX 4090", &arch), ECO_OK);
    assert_string_equal(arch, "ada");
    assert_int_equal(eco_gpu_resolve_arch("Voodoo 5", &arch), ECO_ENOTFOUND);
    assert_string_equal(eco_last_error_field(), "gpu");

    const eco_model_config *preset;
    double b = 0;
    assert_int_equal(eco_resolve_model_size(NULL, true, 7e9, &b, &preset), ECO_OK); /* a count */
    assert_true(fabs(b - 7.0) < 1e-12);
    assert_null(preset);
    assert_int_equal(eco_resolve_model_size(NULL, true, 14, &b, &preset), ECO_OK); /* billions */
    assert_true(fabs(b - 14.0) < 1e-12);
    assert_int_equal(eco_resolve_model_size("Qwen2.5-7B", false, 0, &b, &preset), ECO_OK); /* the preset's exact count */
    assert_non_null(preset);
    assert_true(fabs(b - (double)eco_model_param_count(preset) / 1e9) < 1e-12);
    assert_true(b > 7.0 && b < 8.0);
    assert_int_equal(eco_resolve_model_size("Qwen2.5-7B", true, 3, &b, &preset), ECO_OK); /* params_b wins */
    assert_true(fabs(b - 3.0) < 1e-12);
    assert_int_equal(eco_resolve_model_size("GPT-9", false, 0, &b, &preset), ECO_ENOTFOUND);
    assert_string_equal(eco_last_error_field(), "model");
    assert_non_null(strstr(eco_last_error(), "Llama-3.1-8B")); /* the presets are listed */
    assert_int_equal(eco_resolve_model_size(NULL, true, 5000, &b, &preset), ECO_EINVAL); /* neither billions nor a count */
    assert_string_equal(eco_last_error_field(), "params_b");
    assert_int_equal(eco_resolve_model_size(NULL, true, 3e12, &b, &preset), ECO_EINVAL); /* 3000 billion */
    assert_int_equal(eco_resolve_model_size(NULL, true, -1, &b, &preset), ECO_EINVAL);
    assert_int_equal(eco_resolve_model_size(NULL, false, 0, &b, &preset), ECO_EINVAL); /* no size at all */
}

static void test_optimizer_budgets(void **state)
{
    (void)state;
    eco_curve_set *set = make_set();
    const eco_gpu_spec *g;
    assert_int_equal(eco_gpu_find("RTX 4090", &g, NULL), ECO_OK);
    eco_optimize_result *r = malloc(sizeof *r);
    const eco_model_config *m = eco_preset_find("Qwen2.5-7B");
    assert_non_null(m);
    eco_optimize_query q = {.preset = m, .gpu = g, .ctx = 2048, .max_vram_gb = 12, .max_latency_ms = 30, .objective = ECO_OBJ_ENERGY};
    assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
    assert_true(r->best >= 0);
    for (size_t i = 0; i < r->n; i++)
        if (r->cand[i].feasible) assert_true(r->cand[i].vram_gb <= 12 && r->cand[i].latency_ms <= 30);
    const eco_candidate *b = &r->cand[r->best];
    assert_int_equal(b->precision, ECO_PREC_NF4); /* fp16 weights alone (15 GB) exceed 12 GB */
    for (size_t i = 0; i < r->n; i++) /* nothing feasible is better under the objective */
        if (r->cand[i].feasible) assert_true(r->cand[i].score >= b->score);
    assert_true(r->n_alt <= 3);
    for (size_t a = 0; a < r->n_alt; a++) assert_true(r->cand[r->alt[a]].feasible && r->alt[a] != r->best);
    /* latency objective picks the smallest step time */
    q.objective = ECO_OBJ_LATENCY;
    assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
    for (size_t i = 0; i < r->n; i++)
        if (r->cand[i].feasible) assert_true(r->cand[i].latency_ms >= r->cand[r->best].latency_ms);
    /* impossible budget: nothing feasible, closest infeasible reported with a reason */
    q.max_vram_gb = 1;
    assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
    assert_int_equal(r->best, -1);
    assert_true(r->closest_infeasible >= 0);
    assert_non_null(strstr(r->cand[r->closest_infeasible].reason, "VRAM"));
    assert_int_equal(r->n_feasible, 0);
    free(r);
    free(set);
}

/* The Pareto front: exactly the feasible configs no feasible config matches-or-beats on both axes, by latency. */
static void test_optimizer_pareto_front(void **state)
{
    (void)state;
    eco_curve_set *set = make_set();
    const eco_gpu_spec *g;
    assert_int_equal(eco_gpu_find("RTX 4090", &g, NULL), ECO_OK);
    eco_optimize_result *r = malloc(sizeof *r);
    eco_optimize_query q = {.preset = eco_preset_find("Qwen2.5-7B"), .gpu = g, .ctx = 2048, .objective = ECO_OBJ_ENERGY};
    const double budgets[] = {0, 12, 30}; /* VRAM budgets: none, tight, in between */
    for (size_t k = 0; k < 3; k++) {
        q.max_vram_gb = budgets[k];
        assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
        assert_true(r->n_pareto >= 1 && r->n_pareto <= r->n_feasible);
        bool on_front[ECO_OPT_MAX_CANDIDATES] = {false};
        for (size_t f = 0; f < r->n_pareto; f++) {
            const eco_candidate *c = &r->cand[r->pareto[f]];
            on_front[r->pareto[f]] = true;
            assert_true(c->feasible);
            if (f > 0) { /* latency up, energy strictly down along the front */
                const eco_candidate *prev = &r->cand[r->pareto[f - 1]];
                assert_true(c->latency_ms >= prev->latency_ms);
                assert_true(c->energy_mj < prev->energy_mj);
            }
        }
        for (size_t i = 0; i < r->n; i++) {
            if (!r->cand[i].feasible) { assert_false(on_front[i]); continue; }
            bool dominated = false;
            for (size_t j = 0; j < r->n && !dominated; j++) {
                const eco_candidate *a = &r->cand[i], *o = &r->cand[j];
                dominated = j != i && o->feasible && o->energy_mj <= a->energy_mj && o->latency_ms <= a->latency_ms &&
                            (o->energy_mj < a->energy_mj || o->latency_ms < a->latency_ms);
            }
            assert_int_equal(on_front[i], !dominated);
        }
        /* the energy objective's pick is the front's lowest-energy end */
        assert_int_equal(r->pareto[r->n_pareto - 1], r->best);
    }
    free(r);
    free(set);
}

/* A pinned batch: one candidate per precision, at that batch, with the batch factor's own label. */
static void test_optimizer_pinned_batch(void **state)
{
    (void)state;
    eco_record rows[10]; /* ampere int8 and nf4: the A800 batch sweep's own config is int8 at ~7B */
    static const double sizes[] = {1, 2, 3, 5, 7};
    for (int i = 0; i < 5; i++) {
        make_row(&rows[i], "ampere", ECO_PREC_INT8, sizes[i], 20 - 5 * i, 2, "m");
        make_row(&rows[5 + i], "ampere", ECO_PREC_NF4, sizes[i], 30 - 10 * i, 2, "m");
        snprintf(rows[i].gpu, sizeof rows[i].gpu, "A800"); /* the card's own energy: its power limit bounds a step */
        snprintf(rows[5 + i].gpu, sizeof rows[5 + i].gpu, "A800");
    }
    eco_curve_set *set = fit_rows(rows, 10, NULL);
    const eco_gpu_spec *g;
    assert_int_equal(eco_gpu_find("A800", &g, NULL), ECO_OK);
    eco_optimize_result *r = malloc(sizeof *r);
    eco_optimize_query q = {.params_b = 7.0, .gpu = g, .ctx = 2048, .objective = ECO_OBJ_ENERGY};
    const struct { int batch; eco_label int8_label; } cases[] = {
        {1, ECO_LABEL_MEASURED}, {3, ECO_LABEL_INTERPOLATED}, {64, ECO_LABEL_MEASURED}, {128, ECO_LABEL_EXTRAPOLATED}};
    for (size_t k = 0; k < 4; k++) {
        q.batch = cases[k].batch;
        assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
        assert_true(r->n >= 1 && r->n <= ECO_PREC_COUNT);
        bool saw_int8 = false;
        for (size_t i = 0; i < r->n; i++) {
            assert_int_equal(r->cand[i].batch, cases[k].batch);
            for (size_t j = 0; j < i; j++) assert_int_not_equal(r->cand[j].precision, r->cand[i].precision);
            if (r->cand[i].precision == ECO_PREC_INT8) {
                saw_int8 = true;
                assert_int_equal(r->cand[i].batch_label, cases[k].int8_label);
            } else if (cases[k].batch > 1) {
                assert_int_equal(r->cand[i].batch_label, ECO_LABEL_ESTIMATED); /* borrowed from the int8 sweep */
            }
        }
        assert_true(saw_int8);
    }
    /* a step of more tokens is never modelled faster: the borrowed sweep's per-token energy at batch 32 is under
     * half of 16's, which had made the power-bound batch-32 step shorter */
    double last[ECO_PREC_COUNT];
    for (int p = 0; p < ECO_PREC_COUNT; p++) last[p] = 0;
    int power_bound = 0;
    for (int b = 1; b <= 64; b *= 2) {
        q.batch = b;
        assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
        for (size_t i = 0; i < r->n; i++) {
            const eco_candidate *cd = &r->cand[i];
            if (!cd->feasible) continue;
            power_bound += !strcmp(cd->bound, "power");
            assert_true(cd->latency_ms >= last[cd->precision] * (1 - 1e-12));
            last[cd->precision] = cd->latency_ms;
        }
    }
    assert_true(power_bound > 0); /* the bound the rule is about was in play */
    q.batch = -1;
    assert_int_equal(eco_optimize_run(set, &q, r), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "batch");
    q.batch = ECO_OPT_MAX_BATCH + 1;
    assert_int_equal(eco_optimize_run(set, &q, r), ECO_EINVAL);
    /* the label rule itself: only the sweep's own config is measured, and only at its batches */
    assert_int_equal(eco_batch_label("ampere", NULL, ECO_PREC_INT8, 7.2, 16), ECO_LABEL_MEASURED);
    assert_int_equal(eco_batch_label("ampere", "A800", ECO_PREC_INT8, 7.2, 16), ECO_LABEL_MEASURED);
    assert_int_equal(eco_batch_label("ampere", "NVIDIA A800 80GB PCIe", ECO_PREC_INT8, 7.2, 16), ECO_LABEL_MEASURED);
    assert_int_equal(eco_batch_label("ampere", NULL, ECO_PREC_INT8, 7.2, 24), ECO_LABEL_INTERPOLATED);
    assert_int_equal(eco_batch_label("ampere", NULL, ECO_PREC_INT8, 13, 16), ECO_LABEL_ESTIMATED);
    /* the sweep's arch on another card */
    assert_int_equal(eco_batch_label("ampere", "A100", ECO_PREC_INT8, 7.2, 16), ECO_LABEL_ESTIMATED);
    assert_int_equal(eco_batch_label("ada", NULL, ECO_PREC_INT8, 7, 16), ECO_LABEL_ESTIMATED);
    assert_int_equal(eco_batch_label("ada", "RTX 4090", ECO_PREC_NF4, 7, 1), ECO_LABEL_MEASURED);
    free(r);
    free(set);
}

static void test_batch_factor(void **state)
{
    (void)state;
    assert_near(eco_batch_energy_factor(1), 1.0, 0);
    assert_near(eco_batch_energy_factor(8), 1108.35 / 6907.42, 1e-12);
    assert_near(eco_batch_energy_factor(64), 296.44 / 6907.42, 1e-12);
    assert_near(eco_batch_energy_factor(1000), 296.44 / 6907.42, 1e-12);
    double f3 = eco_batch_energy_factor(3);
    assert_true(f3 < eco_batch_energy_factor(2) && f3 > eco_batch_energy_factor(4));
}

/* The speed no engine passes: weights streamed once a step at the datasheet bandwidth (x1.2), less the largest L2. */
static void test_tokens_per_s_ceiling(void **state)
{
    (void)state;
    const eco_gpu_spec *h200 = eco_gpu_exact("NVIDIA H200"), *l4 = eco_gpu_exact("NVIDIA L4");
    const eco_model_config *llama = eco_preset_find("Llama-3.1-8B");
    assert_non_null(h200);
    assert_non_null(l4);
    assert_non_null(llama);
    double bytes = (double)eco_model_bytes_per_token(llama, ECO_PREC_FP16, 0, true);
    assert_true(bytes > 14.9e9 && bytes < 15.1e9); /* research/anchor-kernels.md §6: 15.01 GB */
    double h = eco_decode_tokens_per_s_ceiling(h200, llama, ECO_PREC_FP16, 1);
    assert_near(h, 4800e9 * 1.2 / (bytes - 128.0 * 1024 * 1024), 1e-9);
    assert_true(h > 380 && h < 395); /* the H200 decoded it at 234 tokens/s: 61% of this bound */
    assert_near(eco_decode_tokens_per_s_ceiling(h200, llama, ECO_PREC_FP16, 8), 8 * h, 1e-9);
    assert_true(eco_decode_tokens_per_s_ceiling(h200, llama, ECO_PREC_NF4, 1) > 2.5 * h);
    assert_near(eco_decode_tokens_per_s_ceiling(l4, llama, ECO_PREC_FP16, 1) / h, 300.0 / 4800, 1e-12);
    /* no bound: no card, no preset, no batch, or weights an L2 could hold */
    eco_model_config small = *llama;
    small.layers = 1, small.vocab = 1000, small.hidden = 512, small.intermediate = 1024, small.heads = 4, small.kv_heads = 1;
    small.head_dim = 128;
    assert_true(eco_decode_tokens_per_s_ceiling(NULL, llama, ECO_PREC_FP16, 1) == 0);
    assert_true(eco_decode_tokens_per_s_ceiling(h200, NULL, ECO_PREC_FP16, 1) == 0);
    assert_true(eco_decode_tokens_per_s_ceiling(h200, llama, ECO_PREC_FP16, 0) == 0);
    assert_true(eco_decode_tokens_per_s_ceiling(h200, &small, ECO_PREC_FP16, 1) == 0);
}

/* An uncertain saving (its range reaching past fp16) does not displace a sure one by its central value; a format
 * recommended because fp16 does not fit says so. */
static void test_optimizer_sure_saving(void **state)
{
    (void)state;
    eco_record rows[10];
    static const double sizes[] = {1, 2, 3, 5, 7}, mixed[] = {-30, 60, -40, 50, -45};
    for (int i = 0; i < 5; i++) {
        make_row(&rows[i], "ampere", ECO_PREC_INT8_MIXED, sizes[i], mixed[i], 2, "m");
        rows[i].e_quant_sd_mj = 0.3 * rows[i].e_quant_mj;
        make_row(&rows[5 + i], "ampere", ECO_PREC_NF4, sizes[i], -20 - 2 * i, 2, "m");
        rows[5 + i].e_quant_sd_mj = 0.005 * rows[5 + i].e_quant_mj;
    }
    eco_curve_set *set = fit_rows(rows, 10, NULL);
    const eco_gpu_spec *g;
    assert_int_equal(eco_gpu_find("A100 80GB", &g, NULL), ECO_OK);
    eco_optimize_result *r = malloc(sizeof *r);
    eco_optimize_query q = {.params_b = 7.0, .gpu = g, .ctx = 512, .batch = 1, .objective = ECO_OBJ_ENERGY};
    assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
    const eco_candidate *mix = NULL;
    for (size_t i = 0; i < r->n; i++)
        if (r->cand[i].precision == ECO_PREC_INT8_MIXED) mix = &r->cand[i];
    assert_non_null(mix);
    assert_true(mix->delta_pct < -40 && mix->delta_hi_pct > 0); /* lower at its centre, not a sure saving */
    assert_true(r->best >= 0);
    assert_int_equal(r->cand[r->best].precision, ECO_PREC_NF4);
    assert_true(r->cand[r->best].delta_hi_pct < 0);
    bool said = false;
    for (size_t i = 0; i < r->n_notes; i++) said |= strstr(r->notes[i], "a saving across its whole range") != NULL;
    assert_true(said);
    /* 72B on an 80 GB card: fp16 does not fit, and the note says why a format is recommended */
    q.params_b = 72.0;
    assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
    assert_true(r->best >= 0 && r->cand[r->best].precision != ECO_PREC_FP16);
    said = false;
    for (size_t i = 0; i < r->n_notes; i++) {
        char want[64]; /* the batch it names is the recommended one's: the rejected list's "at batch 1" differs */
        snprintf(want, sizeof want, "fp16 does not fit at batch %d (needs", r->cand[r->best].batch);
        said |= strstr(r->notes[i], want) != NULL;
        assert_null(strstr(r->notes[i], "fp16 at the same batch may use as little energy"));
    }
    assert_true(said);
    /* a long context: the optimizer's ΔE is /v1/estimate's (the KV energy both formats pay), estimated, and the
     * candidate's energy carries that KV energy at fp16's rate */
    q.params_b = 7.0;
    q.ctx = 65536;
    assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
    eco_estimate_query eq = {.arch = "ampere", .precision = ECO_PREC_NF4, .params_b = 7.0, .batch = 1, .ctx = 65536};
    eco_estimate_query_model_bytes(&eq, NULL);
    eco_estimate est, est0;
    assert_int_equal(eco_estimate_run(set, &eq, &est), ECO_OK);
    eq.ctx = 0;
    assert_int_equal(eco_estimate_run(set, &eq, &est0), ECO_OK);
    assert_int_equal(est.label, ECO_LABEL_ESTIMATED);
    assert_true(fabs(est.delta_pct) < fabs(est0.delta_pct) * 0.9);
    const eco_candidate *nf4 = NULL;
    for (size_t i = 0; i < r->n; i++)
        if (r->cand[i].precision == ECO_PREC_NF4) nf4 = &r->cand[i];
    assert_non_null(nf4);
    assert_near(nf4->delta_pct, est.delta_pct, 1e-9);
    assert_near(nf4->delta_lo_pct, est.lo_pct, 1e-9);
    assert_near(nf4->delta_hi_pct, est.hi_pct, 1e-9);
    assert_int_equal(nf4->delta_label, ECO_LABEL_ESTIMATED);
    assert_near(nf4->energy_rel_fp16, 1 + est.delta_pct / 100 + (est0.delta_pct - est.delta_pct) / 100 +
                                          (est0.delta_pct / est.delta_pct - 1), 1e-9); /* 1 + ΔE_short + kv1 */
    /* at batch 8 the candidate's ΔE is the estimate's at batch 8 (eight caches to a step), and its energy against
     * fp16's at batch 8 says the same */
    q.batch = 8;
    assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
    eq.ctx = 65536;
    eq.batch = 8;
    eco_estimate est8;
    assert_int_equal(eco_estimate_run(set, &eq, &est8), ECO_OK);
    const eco_candidate *nf4_8 = NULL, *fp16_8 = NULL;
    for (size_t i = 0; i < r->n; i++) {
        if (r->cand[i].precision == ECO_PREC_NF4) nf4_8 = &r->cand[i];
        if (r->cand[i].precision == ECO_PREC_FP16) fp16_8 = &r->cand[i];
    }
    assert_non_null(nf4_8);
    assert_non_null(fp16_8);
    assert_int_equal(nf4_8->batch, 8);
    assert_near(nf4_8->delta_pct, est8.delta_pct, 1e-9);
    assert_near(nf4_8->delta_lo_pct, est8.lo_pct, 1e-9);
    assert_near(nf4_8->delta_hi_pct, est8.hi_pct, 1e-9);
    assert_true(fabs(est8.delta_pct) < fabs(est.delta_pct));
    assert_near(nf4_8->energy_rel_fp16 / fp16_8->energy_rel_fp16, 1 + nf4_8->delta_pct / 100, 1e-9);
    q.batch = 1;
    assert_int_equal(eco_optimize_run(set, &q, r), ECO_OK);
    nf4 = NULL;
    for (size_t i = 0; i < r->n; i++)
        if (r->cand[i].precision == ECO_PREC_NF4 && r->cand[i].batch == 1) nf4 = &r->cand[i];
    assert_non_null(nf4);
    /* an own curve's ΔE rescaled for the context is not a borrowed one: a saving still beats fp16 */
    assert_false(nf4->borrowed);
    assert_true(r->best >= 0 && r->cand[r->best].precision != ECO_PREC_FP16);
    free(r);
    free(set);
}

/* One stack's fp16 baseline times another stack's ΔE is no measurement of the quantized energy: estimated, in the
 * estimator and the optimizer alike. */
static void test_composed_energy_is_estimated(void **state)
{
    (void)state;
    eco_record rows[8];
    static const double sizes[] = {1, 2, 3, 5, 7};
    for (int i = 0; i < 5; i++) { /* the larger group: its fp16 energies are the baseline */
        make_row(&rows[i], "ampere", ECO_PREC_INT8, sizes[i], 10, 2, "m");
        snprintf(rows[i].backend, sizeof rows[i].backend, "stack-b");
        snprintf(rows[i].gpu, sizeof rows[i].gpu, "A800");
    }
    for (int i = 0; i < 3; i++) {
        make_row(&rows[5 + i], "ampere", ECO_PREC_NF4, sizes[2 * i], -20, 2, "m");
        snprintf(rows[5 + i].backend, sizeof rows[5 + i].backend, "stack-a");
        snprintf(rows[5 + i].gpu, sizeof rows[5 + i].gpu, "A800");
    }
    eco_curve_set *set = fit_rows(rows, 8, NULL);
    const eco_fp16_baseline *fb = eco_curve_set_fp16(set, "ampere");
    assert_non_null(fb);
    assert_string_equal(fb->backend, "stack-b");
    eco_estimate e;
    eco_estimate_query q = {.arch = "ampere", .precision = ECO_PREC_NF4, .params_b = 3.0, .batch = 1, .card = "A800"};
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.e_fp16.label, ECO_LABEL_MEASURED);
    assert_int_equal(e.e_quant.label, ECO_LABEL_ESTIMATED);
    q.precision = ECO_PREC_INT8; /* the baseline's own stack: measured */
    assert_int_equal(eco_estimate_run(set, &q, &e), ECO_OK);
    assert_int_equal(e.e_quant.label, ECO_LABEL_MEASURED);
    const eco_gpu_spec *g;
    assert_int_equal(eco_gpu_find("A800", &g, NULL), ECO_OK);
    eco_optimize_result *r = malloc(sizeof *r);
    eco_optimize_query oq = {.params_b = 3.0, .gpu = g, .card = "A800", .ctx = 512, .batch = 1, .objective = ECO_OBJ_ENERGY};
    assert_int_equal(eco_optimize_run(set, &oq, r), ECO_OK);
    int seen = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->cand[i].precision == ECO_PREC_NF4) seen++, assert_int_equal(r->cand[i].energy_label, ECO_LABEL_ESTIMATED);
        if (r->cand[i].precision == ECO_PREC_INT8) seen++, assert_int_equal(r->cand[i].energy_label, ECO_LABEL_MEASURED);
    }
    assert_int_equal(seen, 2);
    free(r);
    free(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recover_saturating),      cmocka_unit_test(test_weights_matter),
        cmocka_unit_test(test_fallback_forms_and_protocols), cmocka_unit_test(test_bootstrap_deterministic),
        cmocka_unit_test(test_labels_at_boundaries),    cmocka_unit_test(test_flagged_measurements_are_named),
        cmocka_unit_test(test_kernel_designs_are_said),
        cmocka_unit_test(test_provenance_when_request_and_data_differ),
        cmocka_unit_test(test_measured_on_the_card_asked),
        cmocka_unit_test(test_card_curves),
        cmocka_unit_test(test_measured_ranges),
        cmocka_unit_test(test_ranges_rest_on_the_measurements),
        cmocka_unit_test(test_tied_groups_are_said),
        cmocka_unit_test(test_unknown_gpu), cmocka_unit_test(test_request_resolvers),
        cmocka_unit_test(test_optimizer_budgets),       cmocka_unit_test(test_batch_factor),
        cmocka_unit_test(test_tokens_per_s_ceiling),     cmocka_unit_test(test_optimizer_sure_saving),
        cmocka_unit_test(test_composed_energy_is_estimated),
        cmocka_unit_test(test_optimizer_pareto_front),  cmocka_unit_test(test_optimizer_pinned_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
