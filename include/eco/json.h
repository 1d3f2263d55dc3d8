/* Small helpers over jansson for untrusted JSON: bounded loads with line/column errors, and getters that
 * name the field that was missing or of the wrong type. */
#ifndef ECO_JSON_H
#define ECO_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "eco/err.h"

/* Default size limit for documents read from outside (energy.json, schemas, request bodies). */
#define ECO_JSON_MAX_BYTES ((size_t)16 << 20)

/* Parses `len` bytes (no NUL needed). Duplicate object keys are rejected. `name` labels the error
 * ("energy.json:3:14: ..."). ECO_EFORMAT for malformed JSON, ECO_ETOOBIG over max_bytes (0 = default). */
eco_err eco_json_loadb(const char *buf, size_t len, const char *name, size_t max_bytes, json_t **out);
/* json_loadb for messages whose numbers are parameters (API bodies, MCP messages): an integer past 64 bits is
 * valid JSON, so instead of failing the load the text is read again with every number as a double, and those a
 * double holds exactly (up to 2^53) become integers again; the larger one then meets its own range check. NULL
 * with *err set as json_loadb's on any other failure. */
json_t *eco_json_loadb_wide(const char *buf, size_t len, size_t flags, json_error_t *err);
/* Reads and parses a file ("-" = stdin). ECO_EIO when it cannot be read, else as eco_json_loadb. */
eco_err eco_json_load_file(const char *path, size_t max_bytes, json_t **out);

/* "object", "array", "string", "integer", "real", "true", "false", "null" (or "missing" for NULL). */
const char *eco_json_type_name(const json_t *v);

/* Getters: ECO_ENOTFOUND when `key` is absent (or null), ECO_EINVAL when it has the wrong type; the error
 * names the key. `eco_json_get_number` accepts integers and reals; `eco_json_get_int` accepts reals with no
 * fractional part that fit in long long. */
eco_err eco_json_get_string(const json_t *obj, const char *key, const char **out);
eco_err eco_json_get_number(const json_t *obj, const char *key, double *out);
eco_err eco_json_get_int(const json_t *obj, const char *key, long long *out);
eco_err eco_json_get_bool(const json_t *obj, const char *key, bool *out);

#endif
