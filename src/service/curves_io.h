/* curves.json: the fitted curves as data (format "ecocompute-curves", version 1). Internal to src/service and
 * the CLI (`eco fit` writes it, the service and the site read it). Deterministic: the same fit gives the same bytes. */
#ifndef ECO_SERVICE_CURVES_IO_H
#define ECO_SERVICE_CURVES_IO_H

#include <jansson.h>

#include "eco/err.h"
#include "eco/fit.h"

#define ECO_CURVES_FORMAT "ecocompute-curves"
#define ECO_CURVES_VERSION 1

json_t *eco_curves_to_json(const eco_curve_set *set);
/* ECO_EFORMAT naming the offending path ("curves[2].boot[7]") when the document is not a valid curves file. */
eco_err eco_curves_from_json(const json_t *doc, eco_curve_set *set);
eco_err eco_curves_write_file(const eco_curve_set *set, const char *path);
eco_err eco_curves_read_file(const char *path, eco_curve_set *set);

#endif
