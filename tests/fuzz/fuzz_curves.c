/* libFuzzer target: a document as curves.json (what `eco serve` and the site's estimator load). The reader must
 * refuse what it cannot use with ECO_EFORMAT and a message; what it accepts must write back and read again to the
 * same bytes, and every curve in it must answer an estimate at a few sizes (as its pool and, for a card's curve, as
 * that card) with a finite ΔE inside a finite range, or refuse with a documented code. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eco/fit.h"
#include "eco/json.h"
#include "service/curves_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void ask(const eco_curve_set *set, const eco_curve *c, double params_b, int batch, int ctx)
{
    eco_estimate_query q = {.arch = c->arch, .precision = c->precision, .params_b = params_b, .batch = batch,
                            .card = c->card[0] ? c->card : NULL, .ctx = ctx};
    eco_estimate_query_model_bytes(&q, NULL);
    static eco_estimate est; /* about 10 KB of notes */
    eco_err e = eco_estimate_run(set, &q, &est);
    if (e == ECO_OK) {
        if (!isfinite(est.delta_pct) || !isfinite(est.lo_pct) || !isfinite(est.hi_pct)) abort();
        if (!(est.lo_pct <= est.delta_pct + 1e-9 && est.delta_pct <= est.hi_pct + 1e-9)) abort();
        if (est.n_notes > ECO_EST_MAX_NOTES) abort();
    } else if (e != ECO_EUNSUPPORTED && e != ECO_EINVAL && e != ECO_ENOTFOUND) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *doc;
    if (eco_json_loadb((const char *)data, size, "fuzz", 1 << 20, &doc)) return 0;
    static eco_curve_set set, again; /* about 10 MB each: not on the stack */
    eco_err e = eco_curves_from_json(doc, &set);
    json_decref(doc);
    if (e) {
        if (e != ECO_EFORMAT && e != ECO_ETOOBIG && e != ECO_ENOMEM) abort();
        return 0;
    }
    json_t *out = eco_curves_to_json(&set);
    if (!out) abort();
    char *first = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
    if (!first || eco_curves_from_json(out, &again)) abort();
    json_decref(out);
    json_t *out2 = eco_curves_to_json(&again);
    char *second = out2 ? json_dumps(out2, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (!second || strcmp(first, second)) abort();
    free(first);
    free(second);
    json_decref(out2);
    for (size_t i = 0; i < set.n_curves; i++) {
        const eco_curve *c = &set.curves[i];
        ask(&set, c, 7.0, 1, 0);
        ask(&set, c, c->n_min_b > 0 ? c->n_min_b : 0.5, 4, 0);
        ask(&set, c, 400.0, 1, 32768);
    }
    return 0;
}
