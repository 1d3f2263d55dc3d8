/* The model x precision loop the benchmark programs share: synthetic weights of each named preset (exact HF
 * shapes, cached once per model so every precision quantizes the same values), then one call per precision. */
#ifndef ECO_BENCH_MODEL_SWEEP_H
#define ECO_BENCH_MODEL_SWEEP_H

#include <stdio.h>
#include <string.h>

#include "eco/model.h"

/* Called once per (model, precision); a nonzero result stops the sweep and is returned. */
typedef int (*eco_sweep_fn)(const eco_model_config *c, eco_weights *w, eco_precision p, const char *precision_name, void *ctx);

/* models, precisions: comma lists. Returns 2 for an unknown preset or precision, 1 when weights cannot be made,
 * else the first nonzero result of fn, else 0. `program` prefixes the error messages. */
static inline int eco_model_sweep(const char *program, const char *models, const char *precisions, eco_sweep_fn fn, void *ctx)
{
    char mbuf[512];
    snprintf(mbuf, sizeof mbuf, "%s", models);
    for (char *ms = NULL, *mname = strtok_r(mbuf, ",", &ms); mname; mname = strtok_r(NULL, ",", &ms)) {
        const eco_model_config *c = eco_preset_find(mname);
        if (!c) { fprintf(stderr, "%s: unknown preset %s\n", program, mname); return 2; }
        eco_weights *w;
        if (eco_weights_synthetic(c, 1, &w) || eco_weights_cache(w, true)) {
            fprintf(stderr, "%s: %s\n", program, eco_last_error());
            return 1;
        }
        char pbuf[256];
        snprintf(pbuf, sizeof pbuf, "%s", precisions);
        int rc = 0;
        for (char *ps = NULL, *pname = strtok_r(pbuf, ",", &ps); pname && !rc; pname = strtok_r(NULL, ",", &ps)) {
            eco_precision p;
            if (eco_precision_parse(pname, &p)) {
                fprintf(stderr, "%s: %s\n", program, eco_last_error());
                rc = 2;
            } else {
                rc = fn(c, w, p, pname, ctx);
            }
        }
        eco_weights_free(w);
        if (rc) return rc;
    }
    return 0;
}

#endif
