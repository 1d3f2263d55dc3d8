/* Curve fitting: weighted, bounded least squares with A and S solved exactly for each N* (they enter linearly),
 * N* found by a log grid plus golden-section refinement; form fallback for few sizes; LOO; bootstrap. */
#include "eco/fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "eco/stats.h"
#include "fit_internal.h"

#define NSTAR_LO 0.1
#define NSTAR_HI 200.0
#define NSTAR_GRID 161
#define INVVAR_FLOOR_PCT 2.0 /* between-session noise floor added to each anchor's variance */

double eco_precision_s_cap_pct(eco_precision p)
{
    switch (p) {
    case ECO_PREC_NF4:
    case ECO_PREC_NF4_DQ: return 75.0;
    default: return 50.0;
    }
}

const char *eco_curve_form_name(eco_curve_form f)
{
    return f == ECO_FORM_SATURATING ? "saturating" : f == ECO_FORM_LOGLINEAR ? "loglinear" : "constant";
}

eco_err eco_curve_form_parse(const char *s, eco_curve_form *out)
{
    for (int f = 0; f <= ECO_FORM_CONSTANT; f++)
        if (s && !strcmp(s, eco_curve_form_name((eco_curve_form)f))) { *out = (eco_curve_form)f; return ECO_OK; }
    return eco_fail_field(ECO_EFORMAT, "form", "unknown curve form '%s' (saturating, loglinear, constant)", s ? s : "");
}

const char *eco_weighting_name(eco_weighting w)
{
    return w == ECO_WEIGHT_TRIALS ? "trials" : w == ECO_WEIGHT_INVVAR ? "inverse-variance" : "none";
}

eco_err eco_weighting_parse(const char *s, eco_weighting *out)
{
    for (int w = 0; w <= ECO_WEIGHT_NONE; w++)
        if (s && !strcmp(s, eco_weighting_name((eco_weighting)w))) { *out = (eco_weighting)w; return ECO_OK; }
    return eco_fail_field(ECO_EINVAL, "weighting", "unknown weighting '%s' (trials, inverse-variance, none)", s ? s : "");
}

const char *eco_label_name(eco_label l)
{
    static const char *const names[] = {"measured", "interpolated", "extrapolated", "estimated", "modelled"};
    return (unsigned)l <= ECO_LABEL_MODELLED ? names[l] : "unknown";
}

const char *eco_recommendation_name(eco_recommendation r)
{
    return r == ECO_REC_QUANTIZE ? "quantize" : r == ECO_REC_DO_NOT_QUANTIZE ? "do_not_quantize" : "depends";
}

void eco_fit_options_default(eco_fit_options *o)
{
    memset(o, 0, sizeof *o);
    o->precision = -1;
    o->weighting = ECO_WEIGHT_TRIALS;
    o->split_backend = true;
    o->seed = ECO_FIT_DEFAULT_SEED;
    o->n_boot = ECO_FIT_BOOT;
}

double eco_curve_eval_params(eco_curve_form form, double A, double S, double nstar, double s_cap, double params_b)
{
    double v;
    if (form == ECO_FORM_SATURATING) v = A - S * params_b / (params_b + nstar);
    else if (form == ECO_FORM_LOGLINEAR) v = A + S * log(params_b);
    else v = A;
    return v < -s_cap ? -s_cap : v;
}

double eco_curve_eval(const eco_curve *c, double params_b)
{
    return eco_curve_eval_params(c->form, c->A, c->S, c->nstar, c->s_cap_pct, params_b);
}

/* ---- least squares ---- */

typedef struct {
    const double *N, *y, *w;
    size_t n;
    double a_lo, a_hi, s_lo, s_hi; /* bounds for the saturating form */
} fit_data;

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static double sse_sat(const fit_data *d, double A, double S, double nstar)
{
    double s = 0;
    for (size_t i = 0; i < d->n; i++) {
        double r = d->y[i] - (A - S * d->N[i] / (d->N[i] + nstar));
        s += d->w[i] * r * r;
    }
    return s;
}

/* For fixed N*, y = A - S*u is linear: the box-constrained weighted LS optimum is either the unconstrained one
 * (if inside the box) or lies on an edge, where it is a clamped 1-D solution. Exact, no iterations. */
static double solve_AS(const fit_data *d, double nstar, double *A_out, double *S_out)
{
    double sw = 0, su = 0, sy = 0, suu = 0, suy = 0;
    for (size_t i = 0; i < d->n; i++) {
        double u = d->N[i] / (d->N[i] + nstar), w = d->w[i];
        sw += w; su += w * u; sy += w * d->y[i]; suu += w * u * u; suy += w * u * d->y[i];
    }
    double cand[6][2];
    int nc = 0;
    double var = suu - su * su / sw;
    if (var > 1e-14 * (suu > 0 ? suu : 1)) {
        double B = (suy - su * sy / sw) / var; /* slope of y on u; S = -B */
        double A = (sy - B * su) / sw;
        if (A >= d->a_lo && A <= d->a_hi && -B >= d->s_lo && -B <= d->s_hi) {
            *A_out = A; *S_out = -B;
            return sse_sat(d, A, -B, nstar);
        }
    }
    /* edges: S fixed at a bound (A free, clamped), A fixed at a bound (S free, clamped) */
    double sb[2] = {d->s_lo, d->s_hi}, ab[2] = {d->a_lo, d->a_hi};
    for (int k = 0; k < 2; k++) {
        double A = clampd((sy + sb[k] * su) / sw, d->a_lo, d->a_hi);
        cand[nc][0] = A; cand[nc][1] = sb[k]; nc++;
    }
    for (int k = 0; k < 2; k++) {
        double S = suu > 0 ? -(suy - ab[k] * su) / suu : 0;
        cand[nc][0] = ab[k]; cand[nc][1] = clampd(S, d->s_lo, d->s_hi); nc++;
    }
    double best = INFINITY;
    for (int k = 0; k < nc; k++) {
        double s = sse_sat(d, cand[k][0], cand[k][1], nstar);
        if (s < best) { best = s; *A_out = cand[k][0]; *S_out = cand[k][1]; }
    }
    return best;
}

static void fit_saturating(const fit_data *d, double p[3])
{
    double lo = log(NSTAR_LO), hi = log(NSTAR_HI), step = (hi - lo) / (NSTAR_GRID - 1);
    double best = INFINITY;
    int bi = 0;
    for (int g = 0; g < NSTAR_GRID; g++) {
        double A, S, s = solve_AS(d, exp(lo + step * g), &A, &S);
        if (g == 0 || s < best * (1 - 1e-12)) { best = s; bi = g; }
    }
    /* golden section on ln N* between the grid neighbours of the best grid point */
    double a = lo + step * (bi > 0 ? bi - 1 : 0), b = lo + step * (bi < NSTAR_GRID - 1 ? bi + 1 : bi);
    const double gr = 0.6180339887498949;
    double c = b - gr * (b - a), e = a + gr * (b - a), A, S;
    double fc = solve_AS(d, exp(c), &A, &S), fe = solve_AS(d, exp(e), &A, &S);
    for (int it = 0; it < 60; it++) {
        if (fc < fe) { b = e; e = c; fe = fc; c = b - gr * (b - a); fc = solve_AS(d, exp(c), &A, &S); }
        else { a = c; c = e; fc = fe; e = a + gr * (b - a); fe = solve_AS(d, exp(e), &A, &S); }
    }
    double ln = (fc < fe) ? c : e;
    double s_ref = solve_AS(d, exp(ln), &A, &S);
    double A0, S0, s_grid = solve_AS(d, exp(lo + step * bi), &A0, &S0);
    if (s_grid < s_ref) { ln = lo + step * bi; A = A0; S = S0; }
    p[0] = A; p[1] = S; p[2] = exp(ln);
}

static void fit_loglinear(const fit_data *d, double p[3])
{
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < d->n; i++) {
        double x = log(d->N[i]), w = d->w[i];
        sw += w; sx += w * x; sy += w * d->y[i]; sxx += w * x * x; sxy += w * x * d->y[i];
    }
    double var = sxx - sx * sx / sw;
    double b = var > 1e-14 ? (sxy - sx * sy / sw) / var : 0;
    p[0] = (sy - b * sx) / sw; p[1] = b; p[2] = 0;
}

static void fit_constant(const fit_data *d, double p[3])
{
    double sw = 0, sy = 0;
    for (size_t i = 0; i < d->n; i++) { sw += d->w[i]; sy += d->w[i] * d->y[i]; }
    p[0] = sy / sw; p[1] = 0; p[2] = 0;
}

static size_t distinct_sizes(const double *N, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) seen = fabs(N[j] - N[i]) <= 1e-6 * N[i];
        if (!seen) d++;
    }
    return d;
}

static size_t form_params(eco_curve_form f) { return f == ECO_FORM_SATURATING ? 3 : f == ECO_FORM_LOGLINEAR ? 2 : 1; }

/* Fits `form`, falling back to a simpler form when the points cannot determine it. Returns the form used. */
static eco_curve_form fit_form(eco_curve_form form, const fit_data *d, double p[3])
{
    size_t k = distinct_sizes(d->N, d->n);
    if (form == ECO_FORM_SATURATING && k < 3) form = ECO_FORM_LOGLINEAR;
    if (form == ECO_FORM_LOGLINEAR && k < 2) form = ECO_FORM_CONSTANT;
    if (form == ECO_FORM_SATURATING) fit_saturating(d, p);
    else if (form == ECO_FORM_LOGLINEAR) fit_loglinear(d, p);
    else fit_constant(d, p);
    return form;
}

typedef struct {
    double N[ECO_FIT_MAX_ANCHORS], y[ECO_FIT_MAX_ANCHORS], w[ECO_FIT_MAX_ANCHORS];
} work_buf;

/* LOO errors of `form` (prediction without anchor i minus anchor i); returns the weighted RMS. */
static double loo_errors(const eco_curve *c, eco_curve_form form, const fit_data *full, double *err, size_t *n_err)
{
    work_buf wb;
    double ss = 0, sw = 0;
    *n_err = 0;
    if (distinct_sizes(full->N, full->n) < 2) return NAN; /* nothing left to predict from at another size */
    for (size_t i = 0; i < full->n; i++) {
        size_t m = 0;
        for (size_t j = 0; j < full->n; j++)
            if (j != i) { wb.N[m] = full->N[j]; wb.y[m] = full->y[j]; wb.w[m] = full->w[j]; m++; }
        fit_data d = *full;
        d.N = wb.N; d.y = wb.y; d.w = wb.w; d.n = m;
        double p[3];
        eco_curve_form used = fit_form(form, &d, p);
        double e = eco_curve_eval_params(used, p[0], p[1], p[2], c->s_cap_pct, full->N[i]) - full->y[i];
        err[(*n_err)++] = e;
        ss += full->w[i] * e * e;
        sw += full->w[i];
    }
    return sqrt(ss / sw);
}

/* Group identity: the protocol key, plus the software stack when splitting by backend. */
static void group_key(const eco_record *r, bool split, char *buf, size_t cap)
{
    char k[96];
    eco_record_protocol_key(r, k, sizeof k);
    if (split && r->backend[0]) snprintf(buf, cap, "%s [%s]", k, r->backend);
    else snprintf(buf, cap, "%s", k);
}

static void add_excluded(eco_curve *c, const eco_record *r, const char *fmt, const char *arg)
{
    if (c->n_excluded >= ECO_FIT_MAX_EXCLUDED) return;
    eco_excluded *x = &c->excluded[c->n_excluded++];
    snprintf(x->source, sizeof x->source, "%.400s", r->source[0] ? r->source : r->model);
    snprintf(x->reason, sizeof x->reason, fmt, arg);
    double d = eco_record_delta_pct(r);
    x->params_b = isfinite(d) && r->params_b > 0 ? r->params_b : NAN;
    x->delta_pct = isfinite(d) && r->params_b > 0 ? d : NAN;
}

static void crossover(eco_curve *c)
{
    c->crossover_b = NAN;
    c->crossover_dir = 0;
    double N = NAN;
    if (c->form == ECO_FORM_SATURATING && c->S != 0) {
        double u = c->A / c->S; /* A - S u = 0 */
        if (u > 0 && u < 1) N = c->nstar * u / (1 - u);
    } else if (c->form == ECO_FORM_LOGLINEAR && c->S != 0) {
        N = exp(-c->A / c->S);
    }
    if (isfinite(N) && N >= c->n_min_b && N <= c->n_max_b) {
        c->crossover_b = N;
        c->crossover_dir = c->S > 0 ? (c->form == ECO_FORM_SATURATING ? -1 : 1) : (c->form == ECO_FORM_SATURATING ? 1 : -1);
    }
}

eco_err eco_fit_curve(const eco_record *rows, size_t n, const eco_fit_options *opt_in, eco_curve *c)
{
    eco_fit_options def;
    if (!opt_in) { eco_fit_options_default(&def); opt_in = &def; }
    eco_fit_options opt = *opt_in;
    if (!opt.seed) opt.seed = ECO_FIT_DEFAULT_SEED;
    if (!opt.n_boot || opt.n_boot > ECO_FIT_BOOT) opt.n_boot = ECO_FIT_BOOT;
    if (opt.anchor_compat) opt.weighting = ECO_WEIGHT_NONE;
    if (n == 0) return eco_fail_field(ECO_EINVAL, "rows", "no rows to fit");

    memset(c, 0, sizeof *c);
    snprintf(c->arch, sizeof c->arch, "%s", rows[0].arch);
    c->precision = rows[0].precision;
    c->s_cap_pct = eco_precision_s_cap_pct(c->precision);
    c->anchor_compat = opt.anchor_compat;
    c->seed = opt.seed;

    /* usable rows and their protocols */
    char keys[ECO_FIT_MAX_PROTOCOLS * 4][200];
    size_t counts[ECO_FIT_MAX_PROTOCOLS * 4] = {0}, trials[ECO_FIT_MAX_PROTOCOLS * 4] = {0}, nkeys = 0;
    bool *usable = calloc(n, sizeof *usable);
    if (!usable) return eco_fail(ECO_ENOMEM, "fit: out of memory");
    for (size_t i = 0; i < n; i++) {
        const eco_record *r = &rows[i];
        if (strcmp(r->arch, c->arch) || r->precision != c->precision) {
            free(usable);
            return eco_fail_field(ECO_EINVAL, "rows", "row %zu (%s) is %s/%s but the group is %s/%s", i, r->source,
                                  r->arch, eco_precision_name(r->precision), c->arch, eco_precision_name(c->precision));
        }
        if (eco_record_check(r) != ECO_OK || !isfinite(eco_record_delta_pct(r))) {
            add_excluded(c, r, "invalid row: %.70s", eco_last_error());
            eco_clear_error();
            continue;
        }
        usable[i] = true;
        char k[96], g[200];
        eco_record_protocol_key(r, k, sizeof k);
        if (opt.protocol && !opt.pool && strcmp(k, opt.protocol)) continue; /* excluded below */
        group_key(r, opt.split_backend, g, sizeof g);
        size_t j = 0;
        while (j < nkeys && strcmp(keys[j], g)) j++;
        if (j == nkeys && nkeys < sizeof keys / sizeof keys[0]) snprintf(keys[nkeys++], sizeof keys[0], "%s", g);
        if (j < nkeys) { counts[j]++; trials[j] += (size_t)r->n_trials; }
    }

    const char *chosen = NULL; /* group key */
    size_t best = 0;
    if (opt.pool) {
        snprintf(c->protocol, sizeof c->protocol, "pooled");
        for (size_t j = 0; j < nkeys && c->n_pooled < ECO_FIT_MAX_PROTOCOLS; j++)
            snprintf(c->pooled_protocols[c->n_pooled++], 96, "%.95s", keys[j]);
    } else if (nkeys) {
        /* largest group; ties: more trials, then the smaller key (deterministic) */
        for (size_t j = 1; j < nkeys; j++)
            if (counts[j] > counts[best] || (counts[j] == counts[best] &&
                                              (trials[j] > trials[best] ||
                                               (trials[j] == trials[best] && strcmp(keys[j], keys[best]) < 0))))
                best = j;
        chosen = keys[best];
    }

    /* anchors */
    for (size_t i = 0; i < n; i++) {
        if (!usable[i]) continue;
        const eco_record *r = &rows[i];
        char k[96], g[200];
        eco_record_protocol_key(r, k, sizeof k);
        group_key(r, opt.split_backend, g, sizeof g);
        if (opt.protocol && !opt.pool && strcmp(k, opt.protocol)) { add_excluded(c, r, "protocol %.60s not selected", k); continue; }
        if (chosen && strcmp(g, chosen)) {
            size_t j = 0;
            while (j < nkeys && strcmp(keys[j], g)) j++;
            if (j < nkeys && counts[j] == counts[best] && trials[j] == trials[best]) /* not smaller: say so */
                add_excluded(c, r, "%.50s: " ECO_FIT_TIED_REASON "; chosen by name", g);
            else
                add_excluded(c, r, "%.60s: not the largest group", g);
            continue;
        }
        if (chosen && !c->protocol[0]) {
            snprintf(c->protocol, sizeof c->protocol, "%s", k);
            if (opt.split_backend) snprintf(c->backend, sizeof c->backend, "%s", r->backend);
        }
        if (c->n_anchors >= ECO_FIT_MAX_ANCHORS) { add_excluded(c, r, "%s", "over the anchor limit"); continue; }
        eco_anchor *a = &c->anchors[c->n_anchors++];
        a->params_b = r->params_b;
        a->delta_pct = eco_record_delta_pct(r);
        a->sd_pct = isfinite(r->e_quant_sd_mj) ? 100.0 * r->e_quant_sd_mj / r->e_fp16_mj : NAN;
        a->cv_pct = isfinite(r->cv_pct) ? r->cv_pct
                    : isfinite(r->e_quant_sd_mj) ? 100.0 * r->e_quant_sd_mj / r->e_quant_mj : NAN;
        a->n_trials = r->n_trials;
        snprintf(a->model, sizeof a->model, "%s", r->model);
        snprintf(a->gpu, sizeof a->gpu, "%s", r->gpu);
        snprintf(a->session, sizeof a->session, "%s", r->session);
        snprintf(a->source, sizeof a->source, "%s", r->source);
        snprintf(a->flags, sizeof a->flags, "%s", r->flags);
        a->synthetic_weights = r->synthetic_weights;
        eco_record_design_id(r, a->design);
        if (r->session[0] && c->n_sessions < ECO_FIT_MAX_SESSIONS) {
            bool seen = false;
            for (size_t s = 0; s < c->n_sessions && !seen; s++) seen = !strcmp(c->sessions[s], r->session);
            if (!seen) snprintf(c->sessions[c->n_sessions++], sizeof c->sessions[0], "%s", r->session);
        }
    }
    free(usable);
    if (c->n_anchors == 0)
        return eco_fail_field(ECO_EINVAL, "protocol", "%s/%s: no usable row%s%s", c->arch, eco_precision_name(c->precision),
                              opt.protocol ? " with protocol " : "", opt.protocol ? opt.protocol : "");

    /* weights, normalised to mean 1 so the residual SD stays in points */
    c->weighting = opt.weighting;
    if (c->weighting == ECO_WEIGHT_INVVAR)
        for (size_t i = 0; i < c->n_anchors; i++)
            if (!isfinite(c->anchors[i].sd_pct)) { c->weighting = ECO_WEIGHT_TRIALS; break; }
    double wsum = 0;
    for (size_t i = 0; i < c->n_anchors; i++) {
        eco_anchor *a = &c->anchors[i];
        if (c->weighting == ECO_WEIGHT_TRIALS) a->weight = a->n_trials;
        else if (c->weighting == ECO_WEIGHT_INVVAR)
            a->weight = 1.0 / (a->sd_pct * a->sd_pct / a->n_trials + INVVAR_FLOOR_PCT * INVVAR_FLOOR_PCT);
        else a->weight = 1;
        wsum += a->weight;
    }
    work_buf wb;
    double ymax = -INFINITY, ymin = INFINITY;
    c->n_min_b = INFINITY; c->n_max_b = 0;
    for (size_t i = 0; i < c->n_anchors; i++) {
        eco_anchor *a = &c->anchors[i];
        a->weight *= (double)c->n_anchors / wsum;
        wb.N[i] = a->params_b; wb.y[i] = a->delta_pct; wb.w[i] = a->weight;
        if (a->delta_pct > ymax) ymax = a->delta_pct;
        if (a->delta_pct < ymin) ymin = a->delta_pct;
        if (a->params_b < c->n_min_b) c->n_min_b = a->params_b;
        if (a->params_b > c->n_max_b) c->n_max_b = a->params_b;
    }
    c->n_distinct_sizes = distinct_sizes(wb.N, c->n_anchors);

    fit_data d = {.N = wb.N, .y = wb.y, .w = wb.w, .n = c->n_anchors};
    if (opt.anchor_compat) { /* the anchor's bounds */
        d.a_lo = -50; d.a_hi = ymax + 50; d.s_lo = 0; d.s_hi = c->s_cap_pct + (ymax > 0 ? ymax : 0);
    } else { /* S may be negative: a curve that rises with N (a rebound to a penalty) is representable */
        double span = c->s_cap_pct + (ymax > 0 ? ymax : 0) + (ymax - ymin);
        d.a_lo = -c->s_cap_pct - 50; d.a_hi = ymax + 100; d.s_lo = -span; d.s_hi = span;
    }

    /* form: the saturating curve needs >= 4 sizes to leave a degree of freedom; with >= 4 it must also beat
     * the log-linear line on leave-one-out error. Anchor mode keeps the saturating form from 3 sizes. */
    double loo_err[ECO_FIT_MAX_ANCHORS];
    size_t nloo = 0;
    eco_curve_form form;
    size_t k = c->n_distinct_sizes;
    if (opt.anchor_compat) {
        form = k >= 3 ? ECO_FORM_SATURATING : k == 2 ? ECO_FORM_LOGLINEAR : ECO_FORM_CONSTANT;
        snprintf(c->form_note, sizeof c->form_note, "anchor-compatible fit: saturating, S >= 0, unweighted%s",
                 k < 3 ? " (fewer than 3 sizes: simpler form)" : "");
    } else if (k >= 4) {
        double loo_s[ECO_FIT_MAX_ANCHORS], loo_l[ECO_FIT_MAX_ANCHORS];
        size_t ns, nl;
        double rs = loo_errors(c, ECO_FORM_SATURATING, &d, loo_s, &ns);
        double rl = loo_errors(c, ECO_FORM_LOGLINEAR, &d, loo_l, &nl);
        form = rs <= rl ? ECO_FORM_SATURATING : ECO_FORM_LOGLINEAR;
        snprintf(c->form_note, sizeof c->form_note, "%zu sizes: %s chosen on weighted LOO RMS error (saturating %.2f, loglinear %.2f points)",
                 k, eco_curve_form_name(form), rs, rl);
    } else if (k >= 2) {
        form = ECO_FORM_LOGLINEAR;
        snprintf(c->form_note, sizeof c->form_note,
                 "%zu sizes: too few for the 3-parameter saturating form (it would fit exactly); log-linear line", k);
    } else {
        form = ECO_FORM_CONSTANT;
        snprintf(c->form_note, sizeof c->form_note, "1 size: constant (no size trend can be fitted)");
    }
    double p[3];
    c->form = fit_form(form, &d, p);
    c->A = p[0]; c->S = p[1]; c->nstar = p[2];
    c->loo_median_abs_pct = c->loo_mae_pct = NAN;
    loo_errors(c, c->form, &d, loo_err, &nloo);
    c->loo_n = nloo;
    if (nloo) {
        double absd[ECO_FIT_MAX_ANCHORS], scratch[ECO_FIT_MAX_ANCHORS], s = 0;
        for (size_t i = 0; i < nloo; i++) { c->loo_err_pct[i] = loo_err[i]; absd[i] = fabs(loo_err[i]); s += absd[i]; }
        c->loo_median_abs_pct = eco_quantile(absd, nloo, 0.5, scratch);
        c->loo_mae_pct = s / (double)nloo;
    }

    /* residual SD (points), n - p degrees of freedom */
    size_t np = form_params(c->form);
    c->resid_sd_pct = NAN;
    if (c->n_anchors > np) {
        double ss = 0;
        for (size_t i = 0; i < c->n_anchors; i++) {
            double r = wb.y[i] - eco_curve_eval(c, wb.N[i]);
            ss += wb.w[i] * r * r;
        }
        c->resid_sd_pct = sqrt(ss / (double)(c->n_anchors - np));
    }
    crossover(c);

    /* bootstrap: resample anchors with replacement, refit the same form (simpler when a resample lacks sizes) */
    eco_rng rng;
    uint64_t h = 1469598103934665603ULL; /* FNV-1a of the group: each curve gets its own stream */
    for (const char *s = c->arch; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    eco_rng_seed(&rng, opt.seed ^ h ^ ((uint64_t)c->precision << 56));
    work_buf bw;
    c->n_boot = opt.n_boot;
    size_t need = c->form == ECO_FORM_SATURATING ? 3 : c->form == ECO_FORM_LOGLINEAR ? 2 : 1;
    for (size_t b = 0; b < c->n_boot; b++) {
        fit_data bd = d;
        bd.N = bw.N; bd.y = bw.y; bd.w = bw.w;
        bool ok = false;
        for (int attempt = 0; attempt < 64 && !ok; attempt++) {
            for (size_t i = 0; i < c->n_anchors; i++) {
                size_t j = eco_rng_below(&rng, c->n_anchors);
                bw.N[i] = wb.N[j]; bw.y[i] = wb.y[j]; bw.w[i] = wb.w[j];
            }
            ok = distinct_sizes(bw.N, c->n_anchors) >= need;
        }
        double bp[3] = {c->A, c->S, c->nstar};
        if (ok) {
            eco_curve_form used = fit_form(c->form, &bd, bp);
            (void)used; /* `ok` guarantees the same form */
        }
        c->boot[b][0] = bp[0]; c->boot[b][1] = bp[1]; c->boot[b][2] = bp[2];
    }
    return ECO_OK;
}

/* k-th smallest of v[0..n) (v is reordered): Hoare quickselect, O(n), no allocation. */
static double select_kth(double *v, size_t n, size_t k)
{
    size_t l = 0, r = n - 1;
    while (l < r) {
        double pivot = v[l + (r - l) / 2];
        size_t i = l, j = r;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                double t = v[i]; v[i] = v[j]; v[j] = t;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (k <= j) r = j;
        else if (k >= i) l = i;
        else return v[k];
    }
    return v[k];
}

/* Type-7 quantile (as eco_quantile) by selection: the estimator runs per request, a full sort is too slow. */
static double quantile_select(double *v, size_t n, double p)
{
    double h = (double)(n - 1) * p;
    size_t k = (size_t)h;
    double a = select_kth(v, n, k);
    if (k + 1 >= n) return a;
    double b = v[k + 1]; /* after selection everything right of k is >= a: its minimum is order statistic k+1 */
    for (size_t i = k + 2; i < n; i++)
        if (v[i] < b) b = v[i];
    return a + (h - (double)k) * (b - a);
}

void eco_curve_band95(const eco_curve *c, double params_b, double *lo, double *hi)
{
    double v[ECO_FIT_BOOT];
    double point = eco_curve_eval(c, params_b);
    double sig = isfinite(c->resid_sd_pct) && c->resid_sd_pct > 2.0 ? c->resid_sd_pct : 2.0;
    double dl = 0, dh = 0;
    if (c->n_boot > 1) {
        for (size_t k = 0; k < c->n_boot; k++)
            v[k] = eco_curve_eval_params(c->form, c->boot[k][0], c->boot[k][1], c->boot[k][2], c->s_cap_pct, params_b);
        double q_lo = quantile_select(v, c->n_boot, 0.025), q_hi = quantile_select(v, c->n_boot, 0.975);
        dl = point - q_lo > 0 ? point - q_lo : 0;
        dh = q_hi - point > 0 ? q_hi - point : 0;
    }
    *lo = point - sqrt(dl * dl + 1.96 * 1.96 * sig * sig);
    *hi = point + sqrt(dh * dh + 1.96 * 1.96 * sig * sig);
    if (*lo < -c->s_cap_pct) *lo = -c->s_cap_pct;
}

/* ---- all groups ---- */

bool fit_names_hold(const char *list, const char *sep, const char *name)
{
    size_t len = strlen(name), sl = strlen(sep);
    for (const char *at = list; (at = strstr(at, name)); at += len)
        if ((at == list || ((size_t)(at - list) >= sl && !strncmp(at - sl, sep, sl))) && (!at[len] || !strncmp(at + len, sep, sl)))
            return true;
    return false;
}

/* The recorded GPU names a baseline was made from (as many as a per-card baseline is made for). */
typedef struct {
    size_t n;
    char name[8][ECO_GPU_NAME_SIZE];
} gpu_names;

/* Adds a name not yet in g (as many as it holds). */
static void gpu_names_add(gpu_names *g, const char *name)
{
    size_t k = 0;
    while (k < g->n && strcmp(g->name[k], name)) k++;
    if (k == g->n && g->n < sizeof g->name / sizeof g->name[0]) snprintf(g->name[g->n++], sizeof g->name[0], "%s", name);
}

/* The arch's fp16 baseline from its largest group; only_gpu: that recorded GPU's rows of the group alone (NULL: all).
 * seen (may be NULL): the GPU names of the rows it used. */
static void fit_fp16(const eco_record *rows, size_t n, const char *arch, const eco_fit_options *opt, const char *only_gpu,
                     eco_fp16_baseline *fb, gpu_names *seen)
{
    memset(fb, 0, sizeof *fb);
    snprintf(fb->arch, sizeof fb->arch, "%s", arch);
    if (only_gpu) snprintf(fb->card, sizeof fb->card, "%s", only_gpu);
    /* the arch's largest group (absolute energy is not comparable across protocols or software stacks) */
    char keys[16][200];
    size_t counts[16] = {0}, first[16] = {0}, nk = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rows[i].arch, arch) || eco_record_check(&rows[i]) != ECO_OK) continue;
        char k[96], g[200];
        eco_record_protocol_key(&rows[i], k, sizeof k);
        if (opt->protocol && strcmp(k, opt->protocol)) continue;
        group_key(&rows[i], opt->split_backend, g, sizeof g);
        size_t j = 0;
        while (j < nk && strcmp(keys[j], g)) j++;
        if (j == nk && nk < 16) first[nk] = i, snprintf(keys[nk++], sizeof keys[0], "%s", g);
        if (j < nk) counts[j]++;
    }
    eco_clear_error();
    const char *chosen = NULL;
    size_t chosen_i = 0;
    if (!opt->pool && nk) {
        size_t b = 0;
        for (size_t j = 1; j < nk; j++)
            if (counts[j] > counts[b] || (counts[j] == counts[b] && strcmp(keys[j], keys[b]) < 0)) b = j;
        chosen = keys[b];
        chosen_i = b;
    }
    if (chosen) { /* its protocol and stack apart, as a curve records them, so the estimator can compare */
        const eco_record *r = &rows[first[chosen_i]];
        eco_record_protocol_key(r, fb->protocol, sizeof fb->protocol);
        if (opt->split_backend) snprintf(fb->backend, sizeof fb->backend, "%s", r->backend);
    } else {
        snprintf(fb->protocol, sizeof fb->protocol, "pooled");
    }
    /* distinct baselines: rows sharing (gpu, size, fp16 energy) are one baseline measured once */
    double sizes[ECO_FIT_MAX_FP16 * 4];
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        const eco_record *r = &rows[i];
        if (strcmp(r->arch, arch) || eco_record_check(r) != ECO_OK) continue;
        char k[96], g[200];
        eco_record_protocol_key(r, k, sizeof k);
        group_key(r, opt->split_backend, g, sizeof g);
        if (opt->protocol && strcmp(k, opt->protocol)) continue;
        if (chosen && strcmp(g, chosen)) continue;
        if (only_gpu && strcmp(r->gpu, only_gpu)) continue;
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++) {
            const eco_record *q = &rows[j];
            dup = !strcmp(q->arch, arch) && !strcmp(q->gpu, r->gpu) && q->params_b == r->params_b && q->e_fp16_mj == r->e_fp16_mj;
        }
        if (dup) continue;
        size_t s = 0;
        while (s < fb->n_points && fabs(fb->points[s].params_b - r->params_b) > 1e-6 * r->params_b) s++;
        if (s == fb->n_points) {
            if (fb->n_points >= ECO_FIT_MAX_FP16) continue;
            eco_fp16_point *pt = &fb->points[fb->n_points++];
            memset(pt, 0, sizeof *pt);
            pt->params_b = r->params_b;
            pt->e_min_mj = INFINITY; pt->e_max_mj = -INFINITY;
            if (ns < sizeof sizes / sizeof sizes[0]) sizes[ns++] = r->params_b;
        }
        eco_fp16_point *pt = &fb->points[s];
        pt->e_mj += r->e_fp16_mj; /* sum now, mean below */
        pt->n_rows++;
        if (r->e_fp16_mj < pt->e_min_mj) pt->e_min_mj = r->e_fp16_mj;
        if (r->e_fp16_mj > pt->e_max_mj) pt->e_max_mj = r->e_fp16_mj;
        if (!fit_names_hold(pt->gpus, " + ", r->gpu)) {
            size_t len = strlen(pt->gpus);
            snprintf(pt->gpus + len, sizeof pt->gpus - len, "%s%s", len ? " + " : "", r->gpu);
        }
        if (seen) gpu_names_add(seen, r->gpu);
    }
    eco_clear_error();
    for (size_t s = 0; s < fb->n_points; s++) fb->points[s].e_mj /= fb->points[s].n_rows;
    /* sort points by size (insertion: at most a few dozen) */
    for (size_t i = 1; i < fb->n_points; i++) {
        eco_fp16_point t = fb->points[i];
        size_t j = i;
        while (j > 0 && fb->points[j - 1].params_b > t.params_b) { fb->points[j] = fb->points[j - 1]; j--; }
        fb->points[j] = t;
    }
}

/* Distinct sizes among a curve's anchors of one recorded GPU. */
static size_t card_sizes(const eco_curve *c, const char *gpu)
{
    double N[ECO_FIT_MAX_ANCHORS];
    size_t m = 0;
    for (size_t i = 0; i < c->n_anchors; i++)
        if (!strcmp(c->anchors[i].gpu, gpu)) N[m++] = c->anchors[i].params_b;
    return distinct_sizes(N, m);
}

/* Each card of set->curves[pooled]'s anchors, where they are several, with ECO_FIT_CARD_MIN_SIZES sizes: a curve of
 * its own rows from the pooled curve's group (same protocol and stack), appended to the set. group: the (arch,
 * precision) rows the pooled curve was fitted from; reordered. */
static eco_err fit_card_curves(eco_record *group, size_t m, const eco_fit_options *opt, eco_curve_set *set, size_t pooled)
{
    const eco_curve *pc = &set->curves[pooled];
    if (!strcmp(pc->protocol, "pooled")) return ECO_OK; /* several protocols pooled: a card's subset would be another fit */
    gpu_names cards = {0};
    for (size_t i = 0; i < pc->n_anchors; i++) gpu_names_add(&cards, pc->anchors[i].gpu);
    for (size_t k = 0; cards.n > 1 && k < cards.n; k++) {
        if (card_sizes(pc, cards.name[k]) < ECO_FIT_CARD_MIN_SIZES) continue;
        /* the card's rows of the pooled group first (a stable partition keeps their order) */
        size_t own = 0;
        for (size_t i = 0; i < m; i++) {
            char key[96];
            eco_record_protocol_key(&group[i], key, sizeof key);
            bool same_group = !strcmp(key, pc->protocol) && (!opt->split_backend || !strcmp(group[i].backend, pc->backend));
            if (!same_group || strcmp(group[i].gpu, cards.name[k])) continue;
            eco_record t = group[i];
            memmove(&group[own + 1], &group[own], (i - own) * sizeof *group);
            group[own++] = t;
        }
        if (set->n_curves >= ECO_FIT_MAX_CURVES) return eco_fail(ECO_ETOOBIG, "fit: more than %d curves", ECO_FIT_MAX_CURVES);
        eco_curve *c = &set->curves[set->n_curves];
        eco_err err = eco_fit_curve(group, own, opt, c);
        if (err) return err;
        snprintf(c->card, sizeof c->card, "%s", cards.name[k]);
        set->n_curves++;
    }
    return ECO_OK;
}

eco_err eco_fit_all(const eco_record *rows, size_t n, const eco_fit_options *opt_in, eco_curve_set *set)
{
    eco_fit_options def;
    if (!opt_in) { eco_fit_options_default(&def); opt_in = &def; }
    memset(set, 0, sizeof *set);
    set->n_records = n;
    eco_record *group = malloc((n ? n : 1) * sizeof *group);
    if (!group) return eco_fail(ECO_ENOMEM, "fit: out of memory");
    eco_err err = ECO_OK;
    for (size_t ai = 0; ai < eco_arch_count(); ai++) {
        const char *arch = eco_arch_at(ai);
        if (opt_in->arch && strcmp(opt_in->arch, arch)) continue;
        bool any = false;
        for (int p = ECO_PREC_FP16 + 1; p < ECO_PREC_COUNT; p++) {
            if (opt_in->precision >= 0 && opt_in->precision != p) continue;
            size_t m = 0;
            for (size_t i = 0; i < n; i++)
                if (!strcmp(rows[i].arch, arch) && rows[i].precision == (eco_precision)p) group[m++] = rows[i];
            if (!m) continue;
            any = true;
            if (set->n_curves >= ECO_FIT_MAX_CURVES) { err = eco_fail(ECO_ETOOBIG, "fit: more than %d curves", ECO_FIT_MAX_CURVES); goto out; }
            err = eco_fit_curve(group, m, opt_in, &set->curves[set->n_curves]);
            if (err == ECO_EINVAL && opt_in->protocol) { eco_clear_error(); err = ECO_OK; continue; } /* not in that protocol */
            if (err) { eco_fail_context("fitting %s/%s: ", arch, eco_precision_name((eco_precision)p)); goto out; }
            set->n_curves++;
            if ((err = fit_card_curves(group, m, opt_in, set, set->n_curves - 1))) {
                eco_fail_context("fitting %s/%s per card: ", arch, eco_precision_name((eco_precision)p));
                goto out;
            }
        }
        const size_t cap = sizeof set->fp16 / sizeof set->fp16[0];
        if (any && set->n_fp16 < cap) {
            gpu_names cards = {0};
            fit_fp16(rows, n, arch, opt_in, NULL, &set->fp16[set->n_fp16], &cards);
            if (set->fp16[set->n_fp16].n_points) set->n_fp16++;
            /* several cards in the pool: each card's own baseline too (one card's pool is already its own) */
            for (size_t c = 0; cards.n > 1 && c < cards.n && set->n_fp16 < cap; c++) {
                fit_fp16(rows, n, arch, opt_in, cards.name[c], &set->fp16[set->n_fp16], NULL);
                if (set->fp16[set->n_fp16].n_points) set->n_fp16++;
            }
        }
    }
    if (set->n_curves == 0) err = eco_fail_field(ECO_EINVAL, "rows", "no (arch, precision) group with usable rows matches the options");
out:
    free(group);
    return err;
}

const eco_curve *eco_curve_set_find_exact(const eco_curve_set *set, const char *arch, eco_precision p, const char *card)
{
    for (size_t i = 0; set && arch && i < set->n_curves; i++) {
        const eco_curve *c = &set->curves[i];
        if (c->precision == p && !strcmp(c->arch, arch) && !strcmp(c->card, card ? card : "")) return c;
    }
    return NULL;
}

const eco_curve *eco_curve_set_find(const eco_curve_set *set, const char *arch, eco_precision p)
{
    return eco_curve_set_find_exact(set, arch, p, "");
}

const eco_curve *eco_curve_set_find_for(const eco_curve_set *set, const char *arch, eco_precision p, const char *card)
{
    const eco_gpu_spec *want = card ? eco_gpu_exact(card) : NULL;
    for (size_t i = 0; want && set && arch && i < set->n_curves; i++) {
        const eco_curve *c = &set->curves[i];
        if (c->precision == p && !strcmp(c->arch, arch) && c->card[0] && eco_gpu_exact(c->card) == want) return c;
    }
    return eco_curve_set_find(set, arch, p);
}

const eco_fp16_baseline *eco_curve_set_fp16(const eco_curve_set *set, const char *arch)
{
    for (size_t i = 0; set && arch && i < set->n_fp16; i++)
        if (!strcmp(set->fp16[i].arch, arch) && !set->fp16[i].card[0]) return &set->fp16[i];
    return NULL;
}

const eco_fp16_baseline *eco_curve_set_fp16_for(const eco_curve_set *set, const char *arch, const char *card)
{
    const eco_gpu_spec *want = card ? eco_gpu_exact(card) : NULL;
    for (size_t i = 0; want && set && arch && i < set->n_fp16; i++)
        if (!strcmp(set->fp16[i].arch, arch) && set->fp16[i].card[0] && eco_gpu_exact(set->fp16[i].card) == want) return &set->fp16[i];
    return eco_curve_set_fp16(set, arch);
}

const char *eco_arch_proxy(const char *arch, const char **reason, bool *weak)
{
    static const struct { const char *arch, *proxy, *reason; bool weak; } map[] = {
        {"hopper", "ampere", "Hopper has no curve for this precision; Ampere (A100/A800) is the closest datacenter HBM part "
                             "(used only where both were measured with the same software stack)", false},
        {"ampere", "hopper", "Ampere has no curve for this precision; Hopper is the closest datacenter HBM part (used only "
                             "where both were measured with the same software stack)", false},
        {"blackwell", "ada", "Blackwell (RTX 5090) has no curve for this precision; Ada (RTX 4090) is the closest consumer "
                             "GDDR part with the same kernels", false},
        {"ada", "blackwell", "Ada has no curve for this precision; Blackwell (RTX 5090) is the closest consumer GDDR part", false},
        {"turing", "ada", "Turing (T4) has no curve for this precision; Ada is used as a weak proxy: the T4's 70 W cap and "
                          "older tensor cores differ a lot", true},
    };
    for (size_t i = 0; arch && i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i].arch, arch)) {
            if (reason) *reason = map[i].reason;
            if (weak) *weak = map[i].weak;
            return map[i].proxy;
        }
    return NULL;
}
