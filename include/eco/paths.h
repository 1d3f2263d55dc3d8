/* Finding the project's data files (schema, reference text) from a build tree, an install or a checkout. */
#ifndef ECO_PATHS_H
#define ECO_PATHS_H

#include <stdbool.h>
#include <stddef.h>

#define ECO_ENERGY_SCHEMA_REL "data/schema/energy.schema.json"
#define ECO_QUALITY_TEXT_REL "data/reference/quality_eval_text.txt"

/* Writes the first readable candidate for `rel` (e.g. "data/schema/energy.schema.json") into buf: the value of
 * the environment variable `env` when set (returned even if unreadable, so the caller reports it), then
 * <exe dir>/../rel, <exe dir>/../../rel, <exe dir>/rel, <exe dir>/../share/ecocompute/<rel without "data/">,
 * $ECO_SOURCE_DIR/rel and ./rel. False when none is readable. */
bool eco_find_data_file(const char *rel, const char *env, char *buf, size_t cap);

#endif
