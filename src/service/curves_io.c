#include "service/curves_io.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eco/json.h"

#define REAL_PRECISION 12
#define CURVES_MAX_BYTES ((size_t)64 << 20)

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *str_list(const char (*items)[96], size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(items[i]));
    return a;
}

json_t *eco_curves_to_json(const eco_curve_set *set)
{
    json_t *curves = json_array();
    for (size_t i = 0; i < set->n_curves; i++) {
        const eco_curve *c = &set->curves[i];
        json_t *anchors = json_array(), *excl = json_array(), *loo = json_array(), *boot = json_array(), *sess = json_array();
        for (size_t k = 0; k < c->n_anchors; k++) {
            const eco_anchor *a = &c->anchors[k];
            json_array_append_new(anchors, json_pack("{s:o, s:o, s:o, s:o, s:o, s:i, s:s, s:s, s:s, s:s, s:s, s:b, s:s}", "params_b",
                                                     num(a->params_b), "delta_pct", num(a->delta_pct), "sd_pct", num(a->sd_pct),
                                                     "cv_pct", num(a->cv_pct), "weight", num(a->weight), "n_trials", a->n_trials,
                                                     "model", a->model, "gpu", a->gpu, "session", a->session, "source", a->source,
                                                     "flags", a->flags, "synthetic_weights", a->synthetic_weights, "design", a->design));
        }
        for (size_t k = 0; k < c->n_excluded; k++)
            json_array_append_new(excl, json_pack("{s:s, s:s, s:o, s:o}", "source", c->excluded[k].source, "reason", c->excluded[k].reason,
                                                  "params_b", num(c->excluded[k].params_b), "delta_pct", num(c->excluded[k].delta_pct)));
        for (size_t k = 0; k < c->loo_n; k++) json_array_append_new(loo, num(c->loo_err_pct[k]));
        for (size_t k = 0; k < c->n_boot; k++)
            json_array_append_new(boot, json_pack("[o, o, o]", num(c->boot[k][0]), num(c->boot[k][1]), num(c->boot[k][2])));
        for (size_t k = 0; k < c->n_sessions; k++) json_array_append_new(sess, json_string(c->sessions[k]));
        json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:s, s:s, s:b, s:{s:o, s:o, s:o}, s:o, s:s}",
                              "arch", c->arch, "precision", eco_precision_name(c->precision), "protocol", c->protocol,
                              "pooled_protocols", str_list((const char (*)[96])c->pooled_protocols, c->n_pooled),
                              "sessions", sess, "form", eco_curve_form_name(c->form), "weighting",
                              eco_weighting_name(c->weighting), "anchor_compat", c->anchor_compat, "params", "A", num(c->A),
                              "S", num(c->S), "nstar", num(c->nstar), "s_cap_pct", num(c->s_cap_pct), "form_note", c->form_note);
        json_object_set_new(o, "backend", json_string(c->backend));
        if (c->card[0]) json_object_set_new(o, "card", json_string(c->card)); /* absent: the arch's cards pooled */
        json_object_set_new(o, "n_anchors", json_integer((json_int_t)c->n_anchors));
        json_object_set_new(o, "n_distinct_sizes", json_integer((json_int_t)c->n_distinct_sizes));
        json_object_set_new(o, "n_min_b", num(c->n_min_b));
        json_object_set_new(o, "n_max_b", num(c->n_max_b));
        json_object_set_new(o, "resid_sd_pct", num(c->resid_sd_pct));
        json_object_set_new(o, "crossover_b", num(c->crossover_b));
        json_object_set_new(o, "crossover_dir", json_integer(c->crossover_dir));
        json_object_set_new(o, "loo", json_pack("{s:o, s:o, s:o}", "median_abs_pct", num(c->loo_median_abs_pct), "mae_pct",
                                                num(c->loo_mae_pct), "errors_pct", loo));
        json_object_set_new(o, "anchors", anchors);
        json_object_set_new(o, "excluded", excl);
        json_object_set_new(o, "seed", json_integer((json_int_t)(c->seed & 0x7fffffffffffffffULL)));
        json_object_set_new(o, "boot", boot);
        json_array_append_new(curves, o);
    }
    json_t *fp16 = json_array();
    for (size_t i = 0; i < set->n_fp16; i++) {
        const eco_fp16_baseline *b = &set->fp16[i];
        json_t *pts = json_array();
        for (size_t k = 0; k < b->n_points; k++) {
            const eco_fp16_point *p = &b->points[k];
            json_array_append_new(pts, json_pack("{s:o, s:o, s:o, s:o, s:i, s:s}", "params_b", num(p->params_b), "e_mj", num(p->e_mj),
                                                 "e_min_mj", num(p->e_min_mj), "e_max_mj", num(p->e_max_mj), "n_rows", p->n_rows,
                                                 "gpus", p->gpus));
        }
        json_t *bo = json_pack("{s:s, s:s, s:s, s:o}", "arch", b->arch, "protocol", b->protocol, "backend", b->backend, "points", pts);
        if (b->card[0]) json_object_set_new(bo, "card", json_string(b->card)); /* absent: the arch's cards pooled */
        json_array_append_new(fp16, bo);
    }
    json_t *doc = json_pack("{s:s, s:i, s:{s:s, s:I, s:s, s:s}}", "format", ECO_CURVES_FORMAT, "version", ECO_CURVES_VERSION,
                            "provenance", "dataset", set->dataset, "records", (json_int_t)set->n_records, "generator",
                            "eco fit " ECO_VERSION, "model",
                            "saturating: dE(N) = A - S*N/(N+nstar); loglinear: dE(N) = A + S*ln(N); constant: dE = A; "
                            "clamped at -s_cap_pct");
    json_object_set_new(doc, "curves", curves);
    json_object_set_new(doc, "fp16", fp16);
    return doc;
}

/* ---- reader ---- */

typedef struct {
    char path[128];
} ctx;

static eco_err bad(const char *path, const char *what)
{
    return eco_fail(ECO_EFORMAT, "curves.json: %s: %s", path, what);
}

static eco_err get_num(const json_t *o, const char *key, bool nullable, double *out, const char *where)
{
    char p[192];
    snprintf(p, sizeof p, "%s.%s", where, key);
    json_t *v = json_object_get(o, key);
    if (v && json_is_null(v) && nullable) { *out = NAN; return ECO_OK; }
    if (!v || !json_is_number(v)) return bad(p, nullable ? "expected a number or null" : "expected a number");
    *out = json_number_value(v);
    if (!isfinite(*out)) return bad(p, "not finite");
    return ECO_OK;
}

static eco_err get_str(const json_t *o, const char *key, char *buf, size_t cap, const char *where)
{
    char p[192];
    snprintf(p, sizeof p, "%s.%s", where, key);
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) return bad(p, "expected a string");
    if (json_string_length(v) >= cap) return bad(p, "string too long");
    memcpy(buf, json_string_value(v), json_string_length(v) + 1);
    return ECO_OK;
}

static eco_err get_arr(const json_t *o, const char *key, size_t max, json_t **out, const char *where)
{
    char p[192];
    snprintf(p, sizeof p, "%s.%s", where, key);
    json_t *v = json_object_get(o, key);
    if (!json_is_array(v)) return bad(p, "expected an array");
    if (json_array_size(v) > max) return bad(p, "too many items");
    *out = v;
    return ECO_OK;
}

#define TRY(x) do { eco_err e_ = (x); if (e_) return e_; } while (0)

static eco_err read_curve(const json_t *o, eco_curve *c, const char *w)
{
    char p[192], tmp[64];
    json_t *a;
    memset(c, 0, sizeof *c);
    if (!json_is_object(o)) return bad(w, "expected an object");
    TRY(get_str(o, "arch", c->arch, sizeof c->arch, w));
    if (!eco_arch_is_known(c->arch)) return bad(w, "unknown arch");
    TRY(get_str(o, "precision", tmp, sizeof tmp, w));
    if (eco_precision_parse(tmp, &c->precision) || c->precision == ECO_PREC_FP16) { eco_clear_error(); return bad(w, "bad precision"); }
    TRY(get_str(o, "protocol", c->protocol, sizeof c->protocol, w));
    TRY(get_str(o, "backend", c->backend, sizeof c->backend, w));
    if (json_object_get(o, "card")) TRY(get_str(o, "card", c->card, sizeof c->card, w)); /* absent: the arch's pool */
    TRY(get_arr(o, "pooled_protocols", ECO_FIT_MAX_PROTOCOLS, &a, w));
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *s = json_array_get(a, i);
        if (!json_is_string(s) || json_string_length(s) >= 96) return bad(w, "pooled_protocols: bad item");
        snprintf(c->pooled_protocols[c->n_pooled++], 96, "%s", json_string_value(s));
    }
    TRY(get_arr(o, "sessions", ECO_FIT_MAX_SESSIONS, &a, w));
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *s = json_array_get(a, i);
        if (!json_is_string(s) || json_string_length(s) >= sizeof c->sessions[0]) return bad(w, "sessions: bad item");
        snprintf(c->sessions[c->n_sessions++], sizeof c->sessions[0], "%s", json_string_value(s));
    }
    TRY(get_str(o, "form", tmp, sizeof tmp, w));
    if (eco_curve_form_parse(tmp, &c->form)) { eco_clear_error(); return bad(w, "unknown form"); }
    TRY(get_str(o, "weighting", tmp, sizeof tmp, w));
    if (eco_weighting_parse(tmp, &c->weighting)) { eco_clear_error(); return bad(w, "unknown weighting"); }
    json_t *ac = json_object_get(o, "anchor_compat");
    if (!json_is_boolean(ac)) return bad(w, "anchor_compat: expected a boolean");
    c->anchor_compat = json_is_true(ac);
    json_t *params = json_object_get(o, "params");
    snprintf(p, sizeof p, "%s.params", w);
    if (!json_is_object(params)) return bad(p, "expected an object");
    TRY(get_num(params, "A", false, &c->A, p));
    TRY(get_num(params, "S", false, &c->S, p));
    TRY(get_num(params, "nstar", false, &c->nstar, p));
    if (c->form == ECO_FORM_SATURATING && !(c->nstar > 0)) return bad(p, "nstar must be > 0");
    TRY(get_num(o, "s_cap_pct", false, &c->s_cap_pct, w));
    TRY(get_str(o, "form_note", c->form_note, sizeof c->form_note, w));
    TRY(get_num(o, "n_min_b", false, &c->n_min_b, w));
    TRY(get_num(o, "n_max_b", false, &c->n_max_b, w));
    if (!(c->n_min_b > 0) || c->n_max_b < c->n_min_b) return bad(w, "bad n_min_b/n_max_b");
    TRY(get_num(o, "resid_sd_pct", true, &c->resid_sd_pct, w));
    TRY(get_num(o, "crossover_b", true, &c->crossover_b, w));
    double d;
    TRY(get_num(o, "crossover_dir", false, &d, w));
    c->crossover_dir = d > 0 ? 1 : d < 0 ? -1 : 0;
    TRY(get_num(o, "n_distinct_sizes", false, &d, w));
    c->n_distinct_sizes = d > 0 ? (size_t)d : 0;
    json_t *loo = json_object_get(o, "loo");
    snprintf(p, sizeof p, "%s.loo", w);
    if (!json_is_object(loo)) return bad(p, "expected an object");
    TRY(get_num(loo, "median_abs_pct", true, &c->loo_median_abs_pct, p));
    TRY(get_num(loo, "mae_pct", true, &c->loo_mae_pct, p));
    TRY(get_arr(loo, "errors_pct", ECO_FIT_MAX_ANCHORS, &a, p));
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_number(v)) return bad(p, "errors_pct: expected numbers");
        c->loo_err_pct[c->loo_n++] = json_number_value(v);
    }
    TRY(get_arr(o, "anchors", ECO_FIT_MAX_ANCHORS, &a, w));
    if (json_array_size(a) == 0) return bad(w, "anchors: empty");
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i);
        eco_anchor *an = &c->anchors[c->n_anchors++];
        snprintf(p, sizeof p, "%s.anchors[%zu]", w, i);
        if (!json_is_object(x)) return bad(p, "expected an object");
        TRY(get_num(x, "params_b", false, &an->params_b, p));
        if (!(an->params_b > 0)) return bad(p, "params_b must be > 0");
        TRY(get_num(x, "delta_pct", false, &an->delta_pct, p));
        TRY(get_num(x, "sd_pct", true, &an->sd_pct, p));
        TRY(get_num(x, "cv_pct", true, &an->cv_pct, p));
        TRY(get_num(x, "weight", false, &an->weight, p));
        TRY(get_num(x, "n_trials", false, &d, p));
        if (d < 1 || d > 1e6) return bad(p, "n_trials out of range");
        an->n_trials = (int)d;
        TRY(get_str(x, "model", an->model, sizeof an->model, p));
        TRY(get_str(x, "gpu", an->gpu, sizeof an->gpu, p));
        TRY(get_str(x, "session", an->session, sizeof an->session, p));
        TRY(get_str(x, "source", an->source, sizeof an->source, p));
        an->flags[0] = '\0'; // absent from curves files written before the anchors had flags
        if (json_object_get(x, "flags")) TRY(get_str(x, "flags", an->flags, sizeof an->flags, p));
        json_t *syn = json_object_get(x, "synthetic_weights"); // absent from files written before anchors said it
        if (syn && !json_is_boolean(syn)) return bad(p, "synthetic_weights must be true or false");
        an->synthetic_weights = json_is_true(syn);
        an->design[0] = '\0'; // absent from files written before anchors named their kernel design
        if (json_object_get(x, "design")) TRY(get_str(x, "design", an->design, sizeof an->design, p));
    }
    TRY(get_arr(o, "excluded", ECO_FIT_MAX_EXCLUDED, &a, w));
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i);
        snprintf(p, sizeof p, "%s.excluded[%zu]", w, i);
        if (!json_is_object(x)) return bad(p, "expected an object");
        eco_excluded *ex = &c->excluded[c->n_excluded++];
        TRY(get_str(x, "source", ex->source, sizeof ex->source, p));
        TRY(get_str(x, "reason", ex->reason, sizeof ex->reason, p));
        ex->params_b = ex->delta_pct = NAN; // absent from files written before the rows carried them
        if (json_object_get(x, "params_b")) TRY(get_num(x, "params_b", true, &ex->params_b, p));
        if (json_object_get(x, "delta_pct")) TRY(get_num(x, "delta_pct", true, &ex->delta_pct, p));
        if (!(ex->params_b > 0)) ex->params_b = ex->delta_pct = NAN;
    }
    TRY(get_num(o, "seed", false, &d, w));
    c->seed = (uint64_t)json_integer_value(json_object_get(o, "seed"));
    TRY(get_arr(o, "boot", ECO_FIT_BOOT, &a, w));
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i);
        snprintf(p, sizeof p, "%s.boot[%zu]", w, i);
        if (!json_is_array(x) || json_array_size(x) != 3) return bad(p, "expected [A, S, nstar]");
        for (size_t k = 0; k < 3; k++) {
            json_t *v = json_array_get(x, k);
            if (!json_is_number(v) || !isfinite(json_number_value(v))) return bad(p, "expected numbers");
            c->boot[c->n_boot][k] = json_number_value(v);
        }
        if (c->form == ECO_FORM_SATURATING && !(c->boot[c->n_boot][2] > 0)) return bad(p, "nstar must be > 0");
        c->n_boot++;
    }
    return ECO_OK;
}

eco_err eco_curves_from_json(const json_t *doc, eco_curve_set *set)
{
    memset(set, 0, sizeof *set);
    if (!json_is_object(doc)) return bad("$", "expected an object");
    json_t *f = json_object_get(doc, "format"), *v = json_object_get(doc, "version");
    if (!json_is_string(f) || strcmp(json_string_value(f), ECO_CURVES_FORMAT)) return bad("format", "not \"" ECO_CURVES_FORMAT "\"");
    if (!json_is_integer(v) || json_integer_value(v) != ECO_CURVES_VERSION)
        return eco_fail(ECO_EFORMAT, "curves.json: version: this build reads version %d", ECO_CURVES_VERSION);
    json_t *prov = json_object_get(doc, "provenance");
    if (!json_is_object(prov)) return bad("provenance", "expected an object");
    TRY(get_str(prov, "dataset", set->dataset, sizeof set->dataset, "provenance"));
    double d;
    TRY(get_num(prov, "records", false, &d, "provenance"));
    set->n_records = d > 0 ? (size_t)d : 0;
    json_t *curves = NULL, *fp16 = NULL;
    TRY(get_arr(doc, "curves", ECO_FIT_MAX_CURVES, &curves, "$"));
    for (size_t i = 0; i < json_array_size(curves); i++) {
        char w[32];
        snprintf(w, sizeof w, "curves[%zu]", i);
        const eco_curve *c = &set->curves[set->n_curves];
        TRY(read_curve(json_array_get(curves, i), &set->curves[set->n_curves], w));
        if (eco_curve_set_find_exact(set, c->arch, c->precision, c->card)) return bad(w, "duplicate (arch, precision, card)");
        /* a card's curve answers beside its arch's pooled one, which the estimator's fallbacks read */
        if (c->card[0] && !eco_curve_set_find(set, c->arch, c->precision)) return bad(w, "a card's curve before its arch's pooled one");
        set->n_curves++;
    }
    TRY(get_arr(doc, "fp16", sizeof set->fp16 / sizeof set->fp16[0], &fp16, "$"));
    for (size_t i = 0; i < json_array_size(fp16); i++) {
        char w[64], p[96];
        snprintf(w, sizeof w, "fp16[%zu]", i);
        json_t *o = json_array_get(fp16, i), *pts;
        if (!json_is_object(o)) return bad(w, "expected an object");
        eco_fp16_baseline *b = &set->fp16[set->n_fp16];
        memset(b, 0, sizeof *b);
        TRY(get_str(o, "arch", b->arch, sizeof b->arch, w));
        if (!eco_arch_is_known(b->arch)) return bad(w, "unknown arch");
        TRY(get_str(o, "protocol", b->protocol, sizeof b->protocol, w));
        if (json_object_get(o, "backend")) TRY(get_str(o, "backend", b->backend, sizeof b->backend, w)); /* absent before 2026-12 */
        if (json_object_get(o, "card")) TRY(get_str(o, "card", b->card, sizeof b->card, w)); /* absent: the arch's pool */
        TRY(get_arr(o, "points", ECO_FIT_MAX_FP16, &pts, w));
        for (size_t k = 0; k < json_array_size(pts); k++) {
            json_t *x = json_array_get(pts, k);
            eco_fp16_point *pt = &b->points[b->n_points];
            snprintf(p, sizeof p, "%s.points[%zu]", w, k);
            if (!json_is_object(x)) return bad(p, "expected an object");
            TRY(get_num(x, "params_b", false, &pt->params_b, p));
            TRY(get_num(x, "e_mj", false, &pt->e_mj, p));
            TRY(get_num(x, "e_min_mj", false, &pt->e_min_mj, p));
            TRY(get_num(x, "e_max_mj", false, &pt->e_max_mj, p));
            if (!(pt->params_b > 0) || !(pt->e_mj > 0) || !(pt->e_min_mj > 0)) return bad(p, "values must be > 0");
            if (b->n_points && pt->params_b <= b->points[b->n_points - 1].params_b) return bad(p, "points must be sorted by params_b");
            TRY(get_num(x, "n_rows", false, &d, p));
            pt->n_rows = (int)d;
            TRY(get_str(x, "gpus", pt->gpus, sizeof pt->gpus, p));
            b->n_points++;
        }
        set->n_fp16++;
    }
    return ECO_OK;
}

eco_err eco_curves_write_file(const eco_curve_set *set, const char *path)
{
    json_t *doc = eco_curves_to_json(set);
    if (!doc) return eco_fail(ECO_ENOMEM, "curves.json: out of memory");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int rc = json_dump_file(doc, tmp, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(REAL_PRECISION));
    json_decref(doc);
    if (rc != 0) { remove(tmp); return eco_fail_field(ECO_EIO, "out", "cannot write %s", path); }
    FILE *f = fopen(tmp, "ab"); /* trailing newline, then an atomic replace so readers never see half a file */
    if (!f || fputc('\n', f) == EOF || fclose(f) != 0) { remove(tmp); return eco_fail_field(ECO_EIO, "out", "cannot write %s", path); }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return eco_fail_field(ECO_EIO, "out", "cannot write %s: %s", path, strerror(e));
    }
    return ECO_OK;
}

eco_err eco_curves_read_file(const char *path, eco_curve_set *set)
{
    json_t *doc;
    eco_err e = eco_json_load_file(path, CURVES_MAX_BYTES, &doc);
    if (e) return e;
    e = eco_curves_from_json(doc, set);
    json_decref(doc);
    if (e) eco_fail_context("%s: ", path);
    return e;
}
