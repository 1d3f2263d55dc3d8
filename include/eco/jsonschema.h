/* JSON-Schema validator (draft 2020-12 subset) over jansson.
 *
 * Compile a schema once, validate many instances. Every failing keyword is reported with the instance
 * location as a JSON Pointer ("/results/1/mj_per_token"), the schema location of the keyword, the keyword
 * and a message. Keywords that would change results but are not implemented ($dynamicRef,
 * unevaluatedProperties, unevaluatedItems, refs outside the schema document, other dialects) fail the
 * compile with ECO_EUNSUPPORTED instead of being ignored. docs/SCHEMA.md lists what is supported. */
#ifndef ECO_JSONSCHEMA_H
#define ECO_JSONSCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "eco/err.h"

typedef struct eco_schema eco_schema;

/* Compile flags. */
#define ECO_SCHEMA_STRICT 1u /* unknown keywords are a compile error (catches typos in our own schemas) */

/* Limits: nesting of schema evaluation (guards ref cycles that never consume instance), errors kept. */
#define ECO_SCHEMA_MAX_DEPTH 512
#define ECO_SCHEMA_MAX_ERRORS 100

typedef struct {
    char *instance_path; /* JSON Pointer into the instance; "" is the whole document */
    char *schema_path;   /* JSON Pointer into the schema document, ending in the keyword */
    const char *keyword; /* "minimum", "required", "$ref", ... (static) */
    char *message;       /* e.g. "must be >= 0, got -1.5" */
} eco_schema_error;

typedef struct {
    eco_schema_error *items;
    size_t count, cap;
    size_t max;     /* keep at most this many (0 = ECO_SCHEMA_MAX_ERRORS) */
    size_t dropped; /* errors found beyond `max` */
} eco_schema_errors;

/* The schema is deep-copied; the caller keeps ownership of `schema`. ECO_EINVAL for a malformed schema,
 * ECO_EUNSUPPORTED for a keyword or reference this validator does not implement, ECO_ETOOBIG when nested
 * too deep. The message names the schema location. */
eco_err eco_schema_compile(const json_t *schema, eco_schema **out);
eco_err eco_schema_compile_ex(const json_t *schema, unsigned flags, eco_schema **out);
/* Loads (size-limited) and compiles a schema file. */
eco_err eco_schema_compile_file(const char *path, unsigned flags, eco_schema **out);
void eco_schema_free(eco_schema *s);
/* The schema's "$id" ("" when none). */
const char *eco_schema_id(const eco_schema *s);

/* ECO_OK when valid; ECO_EINVAL when invalid, with every error appended to `errs` (may be NULL to only get
 * the verdict); ECO_ETOOBIG when evaluation nested deeper than ECO_SCHEMA_MAX_DEPTH (also reported as an
 * error). Safe to call concurrently on one compiled schema. */
eco_err eco_schema_validate(const eco_schema *s, const json_t *instance, eco_schema_errors *errs);

void eco_schema_errors_init(eco_schema_errors *errs);
void eco_schema_errors_clear(eco_schema_errors *errs); /* frees the entries, keeps `max` */
void eco_schema_errors_free(eco_schema_errors *errs);
/* Appends a finding of a check the schema cannot express (schema_path ""; keyword static, e.g. "consistency").
 * false when out of memory; beyond `max` it only counts `dropped`. */
bool eco_schema_errors_add(eco_schema_errors *errs, const char *instance_path, const char *keyword, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* NULL-terminated list of the keywords that are asserted or applied (for docs and `eco validate --help`). */
const char *const *eco_schema_supported_keywords(void);

#endif
