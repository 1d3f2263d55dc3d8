/* The request layer shared by the CLI, the REST API and the MCP server: it validates parameters
 * (naming the field that is wrong), runs the estimator/optimizer of src/fit, and builds JSON answers.
 * Transports (HTTP, JSON-RPC, argv) stay thin and never re-implement validation or formatting. */
#ifndef ECO_SERVICE_H
#define ECO_SERVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "eco/err.h"

typedef struct eco_service eco_service;

typedef struct {
    const char *curves_path; /* curves.json written by `eco fit` (required) */
    const char *db_path;     /* SQLite store for /v1/measurements and replications; NULL = none */
} eco_service_config;

eco_err eco_service_open(const eco_service_config *cfg, eco_service **out);
void eco_service_close(eco_service *svc);

/* Where parameters came from. From a query string (or argv) every value is a string and is coerced
 * ("7e9" -> number); from a JSON body or MCP arguments a wrong JSON type is an error naming the field. */
typedef enum { ECO_PARAMS_JSON = 0, ECO_PARAMS_STRINGS = 1 } eco_params_origin;

/* Each call returns ECO_OK and a new JSON object in *result, or an error with eco_last_error() /
 * eco_last_error_field() set (ECO_EINVAL: bad input -> 400; ECO_ENOTFOUND: unknown GPU/model/precision -> 400
 * with the list of supported values in the message; ECO_EUNSUPPORTED: no data for that combination -> 422). */
eco_err eco_service_estimate(eco_service *svc, const json_t *params, eco_params_origin origin, json_t **result);
eco_err eco_service_optimize(eco_service *svc, const json_t *params, eco_params_origin origin, json_t **result);
eco_err eco_service_architectures(eco_service *svc, json_t **result);
eco_err eco_service_gpus(eco_service *svc, json_t **result);
eco_err eco_service_models(eco_service *svc, json_t **result);
eco_err eco_service_measurements(eco_service *svc, const json_t *filter, eco_params_origin origin, json_t **result);

/* Replications: energy.json documents others measured. Submitting validates the document against the published
 * schema (data/schema/energy.schema.json) and stores a valid one; the result always says what happened:
 * {accepted, stored, id, sha256, validation, errors[]} (accepted false with the schema errors by JSON Pointer when
 * invalid; example documents are refused). ECO_EFORMAT for text that is not JSON, ECO_EUNSUPPORTED when the
 * service has no store (--db) or cannot find the schema. */
#define ECO_SERVICE_MAX_REPLICATION_BYTES ((size_t)1 << 20)
eco_err eco_service_submit_replication(eco_service *svc, const char *doc, size_t len, json_t **result);
/* A page of the stored replications (params: offset, limit up to ECO_REPLICATIONS_PAGE_MAX; default
 * ECO_REPLICATIONS_PAGE), without their documents, with the total count. */
#define ECO_REPLICATIONS_PAGE 100
#define ECO_REPLICATIONS_PAGE_MAX 1000
eco_err eco_service_replications(eco_service *svc, const json_t *params, eco_params_origin origin, json_t **result);
/* One stored replication's document, its bytes as submitted (caller frees *doc); ENOTFOUND without that id. */
eco_err eco_service_replication_doc(eco_service *svc, int64_t id, char **doc, size_t *len);

/* JSON Schemas (draft 2020-12, using only keywords common to draft-07) of each operation's input and
 * output, named "estimate_request", "estimate_response", "optimize_request", "optimize_response",
 * "architectures_response", "gpus_response", "models_response", "measurements_response",
 * "replication_submit_response", "replications_response", "problem".
 * The OpenAPI document and the MCP tool declarations are built from these, so they cannot drift.
 * Returns a new reference, or NULL for an unknown name. */
json_t *eco_service_schema(const char *name);

#endif
