/* The OpenAPI 3.1 document, assembled from the service's JSON Schemas so the spec cannot drift from what
 * the service validates and returns. Query parameters are the request schema's properties; the schemas go
 * to components/schemas with their $defs hoisted beside them (a "#/$defs/x" reference would otherwise
 * point into the OpenAPI document's root). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "eco/api.h"

static const char *const schema_names[] = {"estimate_request",       "estimate_response",   "optimize_request",
                                           "optimize_response",      "architectures_response", "gpus_response",
                                           "models_response",        "measurements_request", "measurements_response",
                                           "replication_submit_response", "replications_request", "replications_response",
                                           "problem"};

/* Rewrite "#/$defs/X" references to "#/components/schemas/<owner>_X", recursively. */
static void rewrite_refs(json_t *node, const char *owner)
{
    if (json_is_array(node)) {
        size_t i;
        json_t *v;
        json_array_foreach(node, i, v) rewrite_refs(v, owner);
        return;
    }
    if (!json_is_object(node)) return;
    const char *key;
    json_t *v;
    json_object_foreach(node, key, v)
    {
        if (!strcmp(key, "$ref") && json_is_string(v)) {
            const char *ref = json_string_value(v);
            const char *prefix = strncmp(ref, "#/$defs/", 8) == 0 ? ref + 8 : strncmp(ref, "#/definitions/", 14) == 0 ? ref + 14 : NULL;
            if (prefix) {
                char buf[256];
                snprintf(buf, sizeof buf, "#/components/schemas/%s_%s", owner, prefix);
                json_string_set(v, buf);
            } else if (!strcmp(ref, "#")) {
                char buf[256];
                snprintf(buf, sizeof buf, "#/components/schemas/%s", owner);
                json_string_set(v, buf);
            }
        } else {
            rewrite_refs(v, owner);
        }
    }
}

static void add_schema(json_t *schemas, const char *name, json_t *schema)
{
    json_object_del(schema, "$schema");
    json_object_del(schema, "$id");
    rewrite_refs(schema, name);
    const char *defs_key = json_object_get(schema, "$defs") ? "$defs" : "definitions";
    json_t *defs = json_object_get(schema, defs_key);
    if (json_is_object(defs)) {
        const char *k;
        json_t *d;
        json_object_foreach(defs, k, d)
        {
            char buf[256];
            snprintf(buf, sizeof buf, "%s_%s", name, k);
            json_object_set(schemas, buf, d);
        }
        json_object_del(schema, defs_key);
    }
    json_object_set_new(schemas, name, schema);
}

static json_t *ref(const char *kind, const char *name)
{
    char buf[160];
    snprintf(buf, sizeof buf, "#/components/%s/%s", kind, name);
    return json_pack("{s:s}", "$ref", buf);
}

/* Query parameters from a request schema's properties (the same names a JSON body takes). */
static json_t *query_parameters(json_t *schema)
{
    json_t *params = json_array();
    json_t *props = json_object_get(schema, "properties");
    json_t *required = json_object_get(schema, "required");
    const char *name;
    json_t *prop;
    json_object_foreach(props, name, prop)
    {
        bool req = false;
        size_t i;
        json_t *r;
        json_array_foreach(required, i, r) if (json_is_string(r) && !strcmp(json_string_value(r), name)) req = true;
        json_t *p = json_pack("{s:s, s:s, s:b, s:O}", "name", name, "in", "query", "required", req, "schema", prop);
        json_t *desc = json_object_get(prop, "description");
        if (json_is_string(desc)) json_object_set(p, "description", desc);
        json_t *type = json_object_get(prop, "type");
        bool array = json_is_string(type) && !strcmp(json_string_value(type), "array");
        if (array) { /* lists travel comma-separated: precisions=FP16,NF4 */
            json_object_set_new(p, "style", json_string("form"));
            json_object_set_new(p, "explode", json_false());
        }
        json_array_append_new(params, p);
    }
    return params;
}

static json_t *json_content(json_t *schema)
{
    return json_pack("{s:{s:o}}", "application/json", "schema", schema);
}

static json_t *ok_response(const char *desc, json_t *content)
{
    return json_pack("{s:s, s:{s:o, s:o}, s:o}", "description", desc, "headers", "Cache-Control",
                     ref("headers", "CacheControl"), "Access-Control-Allow-Origin", ref("headers", "AccessControlAllowOrigin"),
                     "content", content);
}

/* Error responses every operation documents; POST adds 413 and 415, service-backed operations add 422. */
static void add_errors(json_t *responses, bool post, bool service)
{
    json_object_set_new(responses, "400", ref("responses", "BadRequest"));
    json_object_set_new(responses, "404", ref("responses", "NotFound"));
    json_object_set_new(responses, "405", ref("responses", "MethodNotAllowed"));
    if (post) json_object_set_new(responses, "413", ref("responses", "ContentTooLarge"));
    if (post) json_object_set_new(responses, "415", ref("responses", "UnsupportedMediaType"));
    json_object_set_new(responses, "414", ref("responses", "UriTooLong"));
    if (service) json_object_set_new(responses, "422", ref("responses", "UnprocessableContent"));
    json_object_set_new(responses, "500", ref("responses", "InternalError"));
}

/* Operations that read or write the store: it may be locked by another writer, or its disk full (503). */
static void add_store_errors(json_t *responses)
{
    json_object_set_new(responses, "503", ref("responses", "ServiceUnavailable"));
}

static json_t *operation(const char *id, const char *tag, const char *summary, const char *description)
{
    return json_pack("{s:s, s:[s], s:s, s:s}", "operationId", id, "tags", tag, "summary", summary, "description",
                     description);
}

/* GET (query) [+ POST (JSON body)] operations of a service-backed path. */
static json_t *service_path(json_t *schemas, json_t *query_only, const char *name, const char *tag, const char *what, bool post,
                            const char *request, const char *response)
{
    json_t *path = json_object();
    char id[64], summary[160], desc[400];

    snprintf(id, sizeof id, "%sGet", name);
    snprintf(summary, sizeof summary, "%s (query string)", what);
    snprintf(desc, sizeof desc, "%s. Parameters come from the query string; numbers and lists (comma-separated) are "
             "parsed from text. Unknown parameters are rejected with 400 naming the parameter.", what);
    json_t *get = operation(id, tag, summary, desc);
    json_t *req_schema = json_object_get(schemas, request);
    if (!req_schema) req_schema = json_object_get(query_only, request);
    if (req_schema) json_object_set_new(get, "parameters", query_parameters(req_schema));
    json_t *responses = json_object();
    json_object_set_new(responses, "200", ok_response("The answer.", json_content(ref("schemas", response))));
    add_errors(responses, false, true);
    json_object_set_new(get, "responses", responses);
    json_object_set_new(path, "get", get);

    if (post) {
        snprintf(id, sizeof id, "%sPost", name);
        snprintf(summary, sizeof summary, "%s (JSON body)", what);
        snprintf(desc, sizeof desc, "%s. Parameters come from a JSON object body (at most %u bytes); a value of the "
                 "wrong JSON type is rejected with 400 naming the field. Answers are not cacheable.", what,
                 ECO_API_MAX_BODY_BYTES);
        json_t *op = operation(id, tag, summary, desc);
        json_object_set_new(op, "requestBody", json_pack("{s:b, s:o}", "required", 1, "content",
                                                         json_content(ref("schemas", request))));
        responses = json_object();
        json_object_set_new(responses, "200", ok_response("The answer.", json_content(ref("schemas", response))));
        add_errors(responses, true, true);
        json_object_set_new(op, "responses", responses);
        json_object_set_new(path, "post", op);
    }
    return path;
}

static json_t *simple_path(const char *id, const char *tag, const char *summary, const char *description,
                           json_t *content)
{
    json_t *op = operation(id, tag, summary, description);
    json_t *responses = json_object();
    json_object_set_new(responses, "200", ok_response("The answer.", content));
    add_errors(responses, false, false);
    json_object_set_new(op, "responses", responses);
    return json_pack("{s:o}", "get", op);
}

static json_t *problem_response(const char *description);

/* GET lists submitted replications; POST takes an energy.json (up to 1 MiB), validates it against the published
 * schema and stores it: 201 stored, 200 stored before, 422 with the schema errors (or a problem when this server
 * keeps no store). */
static json_t *replications_path(json_t *query_only)
{
    json_t *get = operation("replicationsGet", "data", "Submitted replications",
                            "A page of the replications stored on this server, in id order: id, name, hash, validation "
                            "status, run id, GPU and model (the documents themselves: /v1/replications/{id}), and the "
                            "total count. Submitted documents are kept for review; they join the fitted dataset only "
                            "when a maintainer imports them (`eco import --run`), so /v1/measurements does not list them.");
    json_t *req = json_object_get(query_only, "replications_request");
    if (req) json_object_set_new(get, "parameters", query_parameters(req));
    json_t *responses = json_object();
    json_object_set_new(responses, "200", ok_response("The list.", json_content(ref("schemas", "replications_response"))));
    add_errors(responses, false, false);
    add_store_errors(responses);
    json_object_set_new(get, "responses", responses);

    json_t *post = operation("replicationsPost", "data", "Submit a replication (an energy.json)",
                             "The body is an energy.json document as `eco measure` writes it (at most 1048576 bytes). "
                             "It is validated against the published schema (data/schema/energy.schema.json) and stored "
                             "only when valid; example documents are refused. Nothing is fitted from it automatically.");
    json_object_set_new(post, "requestBody",
                        json_pack("{s:b, s:o}", "required", 1, "content",
                                  json_content(json_pack("{s:s, s:s}", "type", "object", "description",
                                                         "energy.json, schema https://ecocompute.example/schema/energy/v2.json"))));
    responses = json_object();
    json_object_set_new(responses, "200", ok_response("Valid; this exact document was stored before.",
                                                      json_content(ref("schemas", "replication_submit_response"))));
    json_object_set_new(responses, "201", ok_response("Valid and stored.", json_content(ref("schemas", "replication_submit_response"))));
    add_errors(responses, true, false);
    add_store_errors(responses);
    json_t *invalid = json_pack("{s:s, s:{s:o}, s:{s:{s:o}, s:{s:o}}}", "description",
                                "Not stored: the schema errors by JSON Pointer, or (problem) this server keeps no store.",
                                "headers", "Cache-Control", ref("headers", "CacheControl"), "content", "application/json",
                                "schema", ref("schemas", "replication_submit_response"), "application/problem+json", "schema",
                                ref("schemas", "problem"));
    json_object_set_new(responses, "422", invalid);
    json_object_set_new(post, "responses", responses);
    return json_pack("{s:o, s:o}", "get", get, "post", post);
}

/* GET one stored replication: its bytes as submitted. */
static json_t *replication_path(void)
{
    json_t *get = operation("replicationGet", "data", "One submitted replication's document",
                            "The energy.json exactly as it was submitted (the bytes its sha256 is of).");
    json_object_set_new(get, "parameters",
                        json_pack("[{s:s, s:s, s:b, s:{s:s, s:i}}]", "name", "id", "in", "path", "required", 1, "schema",
                                  "type", "integer", "minimum", 1));
    json_t *responses = json_object();
    json_object_set_new(responses, "200", ok_response("The document.", json_content(json_pack("{s:s}", "type", "object"))));
    add_errors(responses, false, true); /* 422: this server keeps no store */
    add_store_errors(responses);
    json_object_set_new(responses, "404", problem_response("No replication has this id."));
    json_object_set_new(get, "responses", responses);
    return json_pack("{s:o}", "get", get);
}

static json_t *problem_response(const char *description)
{
    return json_pack("{s:s, s:{s:o}, s:{s:{s:o}}}", "description", description, "headers", "Cache-Control",
                     ref("headers", "CacheControl"), "content", "application/problem+json", "schema",
                     ref("schemas", "problem"));
}

json_t *eco_api_openapi(void)
{
    json_t *schemas = json_object();
    /* request schemas of GET-only operations become parameters only: as unreferenced components they would
     * be dead weight (and redocly's no-unused-components rightly flags them) */
    json_t *query_only = json_object();
    for (size_t i = 0; i < sizeof schema_names / sizeof schema_names[0]; i++) {
        json_t *s = eco_service_schema(schema_names[i]);
        bool get_only = !strcmp(schema_names[i], "measurements_request") || !strcmp(schema_names[i], "replications_request");
        if (s) add_schema(get_only ? query_only : schemas, schema_names[i], s);
    }
    if (!json_object_get(schemas, "problem")) /* the transport's own shape, should the service lack one */
        json_object_set_new(schemas, "problem", json_pack(
            "{s:s, s:[s,s,s,s], s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}}", "type", "object", "required",
            "type", "title", "status", "detail", "properties", "type", "type", "string", "title", "type", "string",
            "status", "type", "integer", "detail", "type", "string", "field", "type", "string"));
    json_object_set_new(schemas, "health", json_pack("{s:s, s:[s], s:{s:{s:s}}, s:b}", "type", "object", "required",
                                                     "status", "properties", "status", "const", "ok",
                                                     "additionalProperties", 0));

    json_t *paths = json_object();
    json_object_set_new(paths, "/v1/estimate",
                        service_path(schemas, query_only, "estimate", "estimate",
                                     "Estimate the change in energy per token (ΔE%) of a precision against FP16", true,
                                     "estimate_request", "estimate_response"));
    json_object_set_new(paths, "/v1/optimize",
                        service_path(schemas, query_only, "optimize", "optimize",
                                     "Best precision and batch size under VRAM / latency budgets", true,
                                     "optimize_request", "optimize_response"));
    json_object_set_new(paths, "/v1/measurements",
                        service_path(schemas, query_only, "measurements", "data",
                                     "Measured comparisons (reference data and imported runs), filtered", false,
                                     "measurements_request", "measurements_response"));
    add_store_errors(json_object_get(json_object_get(json_object_get(paths, "/v1/measurements"), "get"), "responses"));
    json_object_set_new(paths, "/v1/replications", replications_path(query_only));
    json_object_set_new(paths, "/v1/replications/{id}", replication_path());
    json_object_set_new(paths, "/v1/architectures",
                        simple_path("architectures", "data", "GPU architectures with fitted curves",
                                    "Each architecture with its precisions, the model sizes measured and the crossover size.",
                                    json_content(ref("schemas", "architectures_response"))));
    json_object_set_new(paths, "/v1/gpus",
                        simple_path("gpus", "data", "Known GPUs", "GPU names, their architecture and datasheet figures.",
                                    json_content(ref("schemas", "gpus_response"))));
    json_object_set_new(paths, "/v1/models",
                        simple_path("models", "data", "Model presets", "Model presets with their parameter counts.",
                                    json_content(ref("schemas", "models_response"))));
    json_object_set_new(paths, "/openapi.json",
                        simple_path("openapi", "meta", "This document", "The OpenAPI 3.1 description of this API.",
                                    json_content(json_pack("{s:s}", "type", "object"))));
    json_object_set_new(paths, "/healthz",
                        simple_path("healthz", "meta", "Liveness", "Answers {\"status\":\"ok\"} while the server runs.",
                                    json_content(ref("schemas", "health"))));
    json_object_set_new(paths, "/metrics",
                        simple_path("metrics", "meta", "Prometheus metrics",
                                    "Request counts by route and status, a latency histogram per route, and uptime, in "
                                    "the Prometheus text exposition format 0.0.4.",
                                    json_pack("{s:{s:{s:s}}}", "text/plain", "schema", "type", "string")));

    json_t *responses = json_object();
    json_object_set_new(responses, "BadRequest", problem_response("Bad input: malformed JSON, a wrong type, an "
                                                                  "unknown parameter or value; `field` names it."));
    json_object_set_new(responses, "NotFound", problem_response("No such route."));
    json_object_set_new(responses, "MethodNotAllowed", problem_response("Method not allowed; the Allow header lists "
                                                                        "the methods of this path."));
    json_object_set_new(responses, "ContentTooLarge", problem_response("The body is over 8192 bytes (1048576 for a "
                                                                       "replication)."));
    json_object_set_new(responses, "UnsupportedMediaType", problem_response("The body's Content-Type names a media type "
                                                                            "other than JSON (application/json or a "
                                                                            "+json type; none at all is taken as JSON)."));
    json_object_set_new(responses, "UriTooLong", problem_response("The request target is over 4096 bytes."));
    json_object_set_new(responses, "UnprocessableContent", problem_response("Valid input, but no data covers it "
                                                                            "(e.g. a precision not measured on that "
                                                                            "architecture)."));
    json_object_set_new(responses, "InternalError", problem_response("An internal error."));
    json_object_set_new(responses, "ServiceUnavailable",
                        problem_response("The store is locked by another writer past its busy timeout, or its disk is "
                                         "full: nothing was stored; retry after the Retry-After seconds."));

    json_t *headers = json_pack(
        "{s:{s:s, s:{s:s}}, s:{s:s, s:{s:s}}}", "CacheControl", "description",
        "`public, max-age=300` on successful GETs of deterministic answers; `no-store` on POSTs and errors.",
        "schema", "type", "string", "AccessControlAllowOrigin", "description",
        "`*`: the API is open to every origin (also on errors).", "schema", "type", "string");

    json_t *doc = json_pack(
        "{s:s, s:{s:s, s:s, s:s, s:{s:s, s:s}}, s:[{s:s, s:s}], s:[], s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}, {s:s, s:s}],"
        " s:o, s:{s:o, s:o, s:o}}",
        "openapi", "3.1.0", "info", "title", "EcoCompute API", "version", ECO_VERSION, "description",
        "Does quantizing an LLM's weights (FP16 -> INT8 / LLM.int8() / NF4 / FP8) lower GPU energy per generated "
        "token? Estimates come from curves fitted to measurements, each labelled measured, interpolated, "
        "extrapolated or estimated, with a range. Errors are RFC 9457 problem details. CORS is open.",
        "license", "name", "Apache-2.0", "identifier", "Apache-2.0",
        "servers", "url", "/", "description", "The server that serves this document",
        "security",
        "tags", "name", "estimate", "description", "Energy per token of a precision against FP16", "name", "optimize",
        "description", "Configuration search under budgets", "name", "data",
        "description", "Architectures, GPUs, models and measurements behind the curves", "name", "meta",
        "description", "The document, liveness and metrics",
        "paths", paths, "components", "schemas", schemas, "responses", responses, "headers", headers);
    json_decref(query_only);
    return doc;
}
