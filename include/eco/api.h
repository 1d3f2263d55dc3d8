/* The REST API: an HTTP/1.1 server (libmicrohttpd, thread pool on epoll) in front of eco_service.
 * Routes: /v1/estimate, /v1/optimize (GET query or POST JSON), /v1/architectures, /v1/gpus, /v1/models,
 * /v1/measurements, /openapi.json, /healthz, /metrics, and the static web site. Errors are RFC 9457
 * problem JSON naming the bad input. The parsing helpers are public so unit tests and fuzzers reach them. */
#ifndef ECO_API_H
#define ECO_API_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "eco/err.h"
#include "eco/service.h"

#define ECO_API_MAX_BODY_BYTES 8192u /* POST bodies above this are answered 413 */
#define ECO_API_MAX_REPLICATION_BYTES (1u << 20) /* except an energy.json submitted to /v1/replications */
#define ECO_API_MAX_URL_BYTES 4096u  /* request targets (path + query) above this are answered 414 */
#define ECO_API_MAX_PARAMS 64u       /* query parameters per request */
#define ECO_API_MAX_JSON_DEPTH 32u   /* nesting of a POST body */

typedef struct eco_api eco_api;

typedef struct {
    eco_service *svc;    /* required; borrowed, must outlive the server */
    const char *host;    /* address to bind, e.g. "127.0.0.1" or "::1" (NULL = 127.0.0.1) */
    uint16_t port;       /* 0 = an ephemeral port, see eco_api_port() */
    unsigned threads;    /* worker threads (0 = number of online CPUs) */
    const char *web_dir; /* static site root served under / (NULL = none) */
} eco_api_config;

eco_err eco_api_start(const eco_api_config *cfg, eco_api **out);
uint16_t eco_api_port(const eco_api *api);       /* the bound port */
unsigned eco_api_threads(const eco_api *api);    /* the worker threads actually started */
uint64_t eco_api_requests_total(const eco_api *api);
void eco_api_stop(eco_api *api); /* waits for in-flight requests; NULL is a no-op */

/* Decode a raw query string (no leading '?': "a=1&b=x%20y") into a new JSON object of strings.
 * '+' is a space; bad %-escapes, NUL bytes, invalid UTF-8, empty or repeated names and more than
 * ECO_API_MAX_PARAMS parameters are ECO_EINVAL naming the parameter (or "query"). */
eco_err eco_api_parse_query(const char *query, size_t len, json_t **out);

/* Parse a POST body into a new JSON object. Empty (or all-whitespace) is {}. Malformed JSON, duplicate
 * keys, nesting deeper than ECO_API_MAX_JSON_DEPTH and non-objects are ECO_EINVAL with field "body";
 * more than ECO_API_MAX_BODY_BYTES is ECO_ETOOBIG. */
eco_err eco_api_parse_body(const char *body, size_t len, json_t **out);

/* Percent-decode a raw request path into out (NUL-terminated) and normalise it: it must start with '/',
 * a trailing '/' is dropped (except for "/"), and "." / ".." segments, empty segments, encoded '/' or '\',
 * backslashes, NUL and control bytes are ECO_EINVAL. The result is safe to append to a directory. */
eco_err eco_api_normalize_path(const char *raw, size_t len, char *out, size_t cap);

/* The OpenAPI 3.1 document of this API (a new reference), built from eco_service_schema(). */
json_t *eco_api_openapi(void);

#endif
