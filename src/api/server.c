/* The HTTP transport: libmicrohttpd with a thread pool on epoll, routing, CORS, limits, problem JSON.
 *
 * Request lifecycle. MHD calls the URI-log callback first with the raw request target (before it
 * %-decodes the path in place): we copy it into a per-request struct, so routing, query decoding and path
 * checks all work from the exact bytes the client sent. The access handler's first call only checks
 * limits; responses are queued on a later call, because MHD 0.9.75 closes the connection when a response
 * is queued on the first call (no keep-alive). The completion callback records metrics and frees the struct. */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api/api_internal.h"
#include "eco/api.h"

/* Reuse of answers to identical GETs. The service is deterministic for the curves loaded at start, so the
 * same request target always yields the same bytes; caching the built MHD_Response (MHD reference-counts
 * it) skips parsing, estimating, serialising and header building. One direct-mapped table per worker
 * thread: no locks, and a colliding target simply replaces the slot. Measurements are not cached (the
 * store can change while serving), nor errors or POSTs. */
#define RESP_CACHE_SLOTS 512
#define RESP_CACHE_MAX_KEY 1024
typedef struct {
    uint64_t hash;
    size_t key_len;
    char *key;
    struct MHD_Response *resp;
} cache_slot;
typedef struct resp_cache {
    struct resp_cache *next;
    cache_slot slots[RESP_CACHE_SLOTS];
} resp_cache;
static _Thread_local resp_cache *tl_cache; /* MHD worker threads belong to one daemon, so one eco_api */

struct eco_api {
    struct MHD_Daemon *daemon;
    pthread_mutex_t caches_lock; /* only taken when a worker thread creates its table */
    resp_cache *caches;
    eco_service *svc;
    bool has_web;
    char web_root[PATH_MAX];
    unsigned threads;
    uint16_t port;
    api_metrics metrics;
    char *openapi_text;
    struct MHD_Response *r_openapi, *r_healthz, *r_preflight; /* built once, shared by all threads */
};

typedef struct {
    uint64_t t0_ns;
    api_metrics *metrics;
    api_route route;
    unsigned status;   /* 0 until a response is queued */
    bool started;      /* the handler's first call has been seen */
    bool too_big;      /* the body went over ECO_API_MAX_BODY_BYTES */
    size_t discarded;  /* body bytes dropped after that */
    size_t uri_len;    /* length of the raw target as sent (may exceed what was copied) */
    size_t body_len;
    char *body;        /* capped at body_limit, allocated on the first chunk */
    size_t body_limit; /* ECO_API_MAX_BODY_BYTES, or ECO_API_MAX_REPLICATION_BYTES for a submitted energy.json */
    bool not_json;     /* a POST whose Content-Type names another media type: its body is counted, not kept (415) */
    char body_type[72];/* that type as sent, non-printable bytes shown as '?' */
    char uri[];        /* raw target, at most ECO_API_MAX_URL_BYTES + 1 bytes copied */
} request;

#define DISCARD_LIMIT_BYTES (1u << 20) /* beyond this an oversized body is cut off with the connection */
#define CACHE_PUBLIC "public, max-age=300"
#define CACHE_MEASUREMENTS "public, max-age=60" /* eco import may add rows to the store while serving */
#define CACHE_NONE "no-store"
#define ALLOW_GET "GET, HEAD, OPTIONS"
#define ALLOW_GET_POST "GET, HEAD, POST, OPTIONS"
#define CT_JSON "application/json"
#define CT_PROBLEM "application/problem+json"

/* ---------- responses ---------- */

static void add_common_headers(struct MHD_Response *r, const char *content_type, const char *cache)
{
    MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (content_type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (cache) MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, cache);
}

static enum MHD_Result queue(struct MHD_Connection *con, request *rq, unsigned status, struct MHD_Response *r)
{
    if (!r) return MHD_NO; /* out of memory: MHD drops the connection */
    rq->status = status;
    /* counted before the bytes leave, so a client that reads /metrics after its answer always sees it */
    if (rq->metrics) api_metrics_record(rq->metrics, rq->route, status, api_now_ns() - rq->t0_ns);
    return MHD_queue_response(con, status, r);
}

/* Queue body (ownership taken when must_free) and release our reference to the response. */
static enum MHD_Result send_body(struct MHD_Connection *con, request *rq, unsigned status, char *body, size_t len,
                                 bool must_free, const char *content_type, const char *cache, const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, body, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (must_free) free(body);
        return MHD_NO;
    }
    add_common_headers(r, content_type, cache);
    if (allow) MHD_add_response_header(r, "Allow", allow);
    if (status == 503) MHD_add_response_header(r, "Retry-After", "5"); /* the store's busy timeout */
    enum MHD_Result ret = queue(con, rq, status, r);
    MHD_destroy_response(r);
    return ret;
}

static const char *status_title(unsigned status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

/* RFC 9457 problem details. `type` is a URN per kind of failure, so clients can branch on it. */
static enum MHD_Result send_problem(struct MHD_Connection *con, request *rq, unsigned status, const char *type,
                                    const char *detail, const char *field, const char *allow)
{
    json_t *p = json_object();
    if (!p) return MHD_NO;
    json_object_set_new(p, "type", json_string(type));
    json_object_set_new(p, "title", json_string(status_title(status)));
    json_object_set_new(p, "status", json_integer(status));
    /* detail may echo client bytes; jansson refuses invalid UTF-8, so fall back to a fixed text */
    json_t *d = json_string(detail);
    json_object_set_new(p, "detail", d ? d : json_string(status_title(status)));
    if (field && field[0]) {
        json_t *f = json_string(field);
        if (f) json_object_set_new(p, "field", f);
    }
    char *text = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    if (!text) return MHD_NO;
    return send_body(con, rq, status, text, strlen(text), true, CT_PROBLEM, CACHE_NONE, allow);
}

static enum MHD_Result send_service_error(struct MHD_Connection *con, request *rq, eco_err err)
{
    unsigned status;
    const char *type;
    switch (err) {
    case ECO_EINVAL: status = 400, type = "urn:ecocompute:problem:invalid-parameter"; break;
    case ECO_ENOTFOUND: status = 400, type = "urn:ecocompute:problem:unknown-value"; break;
    case ECO_EUNSUPPORTED: status = 422, type = "urn:ecocompute:problem:no-data"; break;
    case ECO_ETOOBIG: status = 413, type = "urn:ecocompute:problem:too-large"; break;
    case ECO_EBUSY: status = 503, type = "urn:ecocompute:problem:busy"; break;
    default: status = 500, type = "urn:ecocompute:problem:internal"; break;
    }
    const char *msg = eco_last_error();
    if (status >= 500) {
        /* the server's own failure: its message (which names local paths) goes to the server's log, not the client */
        fprintf(stderr, "eco serve: %s: %s\n", api_route_name(rq->route), msg);
        msg = status == 503 ? "the store is busy (locked by another writer) or its disk is full: nothing was stored; "
                              "retry in a few seconds"
                            : "internal error: the server's log has the details";
    }
    return send_problem(con, rq, status, type, msg[0] ? msg : status_title(status), eco_last_error_field(), NULL);
}

/* A 200 JSON response owning its text; NULL on out of memory. Consumes result. 15 significant digits
 * round-trip every decimal the data holds without printing binary noise (4402.43, not 4402.4300000000003). */
static struct MHD_Response *json_response(json_t *result, const char *cache)
{
    char *text = json_dumps(result, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(result);
    if (!text) return NULL;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return NULL;
    }
    add_common_headers(r, CT_JSON, cache);
    return r;
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static resp_cache *thread_cache(eco_api *api)
{
    if (tl_cache) return tl_cache;
    resp_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_lock(&api->caches_lock);
    c->next = api->caches;
    api->caches = c;
    pthread_mutex_unlock(&api->caches_lock);
    return tl_cache = c;
}

static struct MHD_Response *cache_get(resp_cache *c, uint64_t h, const char *key, size_t len)
{
    cache_slot *s = &c->slots[h % RESP_CACHE_SLOTS];
    return s->resp && s->hash == h && s->key_len == len && !memcmp(s->key, key, len) ? s->resp : NULL;
}

/* Takes over the caller's reference to r (dropped if the key cannot be stored). */
static void cache_put(resp_cache *c, uint64_t h, const char *key, size_t len, struct MHD_Response *r)
{
    char *k = malloc(len);
    if (!k) {
        MHD_destroy_response(r);
        return;
    }
    memcpy(k, key, len);
    cache_slot *s = &c->slots[h % RESP_CACHE_SLOTS];
    if (s->resp) MHD_destroy_response(s->resp); /* connections still sending it keep their own reference */
    free(s->key);
    *s = (cache_slot){h, len, k, r};
}

static void caches_free(eco_api *api)
{
    for (resp_cache *c = api->caches, *next; c; c = next) {
        next = c->next;
        for (size_t i = 0; i < RESP_CACHE_SLOTS; i++) {
            if (c->slots[i].resp) MHD_destroy_response(c->slots[i].resp);
            free(c->slots[i].key);
        }
        free(c);
    }
    api->caches = NULL;
}

/* ---------- routing ---------- */

typedef struct {
    const char *path;
    api_route route;
    bool post; /* also accepts POST with a JSON body */
} route_entry;

static const route_entry routes[] = {
    {"/v1/estimate", ROUTE_ESTIMATE, true},          {"/v1/optimize", ROUTE_OPTIMIZE, true},
    {"/v1/architectures", ROUTE_ARCHITECTURES, false}, {"/v1/gpus", ROUTE_GPUS, false},
    {"/v1/models", ROUTE_MODELS, false},             {"/v1/measurements", ROUTE_MEASUREMENTS, false},
    {"/v1/replications", ROUTE_REPLICATIONS, true},
    {"/openapi.json", ROUTE_OPENAPI, false},         {"/healthz", ROUTE_HEALTHZ, false},
    {"/metrics", ROUTE_METRICS, false},
};

#define REPLICATION_PREFIX "/v1/replications/"

static const route_entry *find_route(const char *path)
{
    static const route_entry one_replication = {REPLICATION_PREFIX "{id}", ROUTE_REPLICATION, false};
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(path, routes[i].path)) return &routes[i];
    if (strncmp(path, REPLICATION_PREFIX, strlen(REPLICATION_PREFIX))) return NULL;
    const char *id = path + strlen(REPLICATION_PREFIX);
    size_t digits = strspn(id, "0123456789");
    return digits && digits <= 18 && !id[digits] ? &one_replication : NULL;
}

/* Where no query parameters are taken (a POST's go in its body; some routes take none): a query that names one is
 * answered 400, a malformed one as the parser says, and *answered is set. A query of empty segments only ("?",
 * "?&&") names none and is let through, as the parser accepts empty segments between parameters. One parse. */
static enum MHD_Result refuse_named_query(struct MHD_Connection *con, request *rq, const char *query, size_t qlen,
                                          bool is_post, bool *answered)
{
    json_t *params = NULL;
    eco_err err = eco_api_parse_query(query, qlen, &params);
    *answered = true;
    if (err) return send_service_error(con, rq, err);
    const char *name = json_object_iter_key(json_object_iter(params));
    if (!name) {
        *answered = false;
        json_decref(params);
        return MHD_YES;
    }
    char detail[256];
    if (is_post)
        snprintf(detail, sizeof detail, "POST takes its parameters in the JSON body, not the query ('%.100s')", name);
    else
        snprintf(detail, sizeof detail, "unknown parameter '%.100s': %s takes no parameters", name,
                 api_route_name(rq->route));
    enum MHD_Result ret = send_problem(con, rq, 400, "urn:ecocompute:problem:invalid-parameter", detail, name, NULL);
    json_decref(params);
    return ret;
}

/* If-None-Match (RFC 9110 13.1.2): "*" or a comma-separated list of entity tags, compared weakly (W/ ignored). */
static bool etag_list_matches(const char *list, const char *etag)
{
    size_t n = strlen(etag);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (*p == '*') return true;
        if (!strncmp(p, "W/", 2)) p += 2;
        const char *end = *p == '"' ? strchr(p + 1, '"') : NULL;
        size_t len = end ? (size_t)(end - p) + 1 : strcspn(p, ",");
        if (len == n && !memcmp(p, etag, n)) return true;
        p += len;
        while (*p && *p != ',') p++;
    }
    return false;
}

static enum MHD_Result serve_static(eco_api *api, struct MHD_Connection *con, request *rq, const char *path)
{
    api_static_file f;
    if (api_static_open(api->web_root, path, &f))
        return send_problem(con, rq, 404, "about:blank", "no such file", NULL, NULL);
    const char *inm = MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm && etag_list_matches(inm, f.etag)) {
        /* the 200's response, as a 304: MHD sends no body and the 200's Content-Length (RFC 9110 8.6), where an
         * empty response would say 0 */
        struct MHD_Response *r = MHD_create_response_from_fd64(f.size, f.fd);
        if (!r) { close(f.fd); return MHD_NO; }
        add_common_headers(r, NULL, "no-cache");
        MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, f.etag);
        enum MHD_Result ret = queue(con, rq, 304, r);
        MHD_destroy_response(r);
        return ret;
    }
    struct MHD_Response *r = MHD_create_response_from_fd64(f.size, f.fd);
    if (!r) { close(f.fd); return MHD_NO; }
    /* revalidate with the ETag: the site and its curves.json change when the data is refitted */
    add_common_headers(r, f.content_type, "no-cache");
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, f.etag);
    enum MHD_Result ret = queue(con, rq, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* A POST body is JSON: a Content-Type that names another media type (a form, text) is refused with 415 rather
 * than parsed as if it were JSON. None at all (or an empty one) is taken as JSON, for clients that send bare
 * bodies. shown: the media type as sent, for the problem's detail. */
static bool body_type_is_json(struct MHD_Connection *con, char *shown, size_t shown_size)
{
    const char *ct = MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct) return true;
    while (*ct == ' ' || *ct == '\t') ct++;
    size_t n = strcspn(ct, ";");
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t')) n--;
    if (!n) return true;
    size_t k = 0; /* the detail is JSON text: header bytes that are not printable ASCII are shown as '?' */
    for (; k < n && k + 1 < shown_size && k < 64; k++) shown[k] = ct[k] >= 0x20 && ct[k] < 0x7f ? ct[k] : '?';
    shown[k] = '\0';
    if (n == 16 && !strncasecmp(ct, "application/json", 16)) return true;
    /* type/name+json (application/problem+json and kin): a type, a slash, a name, the suffix */
    const char *slash = memchr(ct, '/', n);
    return slash && slash > ct && n >= 5 && slash + 1 < ct + n - 5 && !strncasecmp(ct + n - 5, "+json", 5);
}

/* POST /v1/replications: the raw body is the energy.json; 201 stored, 200 stored before, 422 with the schema errors. */
static enum MHD_Result submit_replication(eco_api *api, struct MHD_Connection *con, request *rq)
{
    json_t *result = NULL;
    eco_clear_error();
    eco_err err = eco_service_submit_replication(api->svc, rq->body ? rq->body : "", rq->body_len, &result);
    if (err) return send_service_error(con, rq, err);
    bool accepted = json_is_true(json_object_get(result, "accepted"));
    int status = !accepted ? 422 : json_is_true(json_object_get(result, "stored")) ? 201 : 200;
    struct MHD_Response *r = json_response(result, CACHE_NONE);
    if (!r) return send_problem(con, rq, 500, "urn:ecocompute:problem:internal", "cannot serialise the answer", NULL, NULL);
    enum MHD_Result ret = queue(con, rq, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result dispatch(eco_api *api, struct MHD_Connection *con, const char *method, request *rq)
{
    const char *target = rq->uri;
    const char *q = memchr(target, '?', rq->uri_len);
    size_t path_len = q ? (size_t)(q - target) : rq->uri_len;
    const char *query = q ? q + 1 : "";
    size_t qlen = q ? rq->uri_len - path_len - 1 : 0;
    const char *hash = memchr(query, '#', qlen);
    if (hash) qlen = (size_t)(hash - query);

    char path[ECO_API_MAX_URL_BYTES + 1];
    if (eco_api_normalize_path(target, path_len, path, sizeof path)) {
        rq->route = ROUTE_NONE;
        /* a preflight on any path gets 204 (docs/API.md): the browser then sees the real request's 404 with CORS */
        if (!strcmp(method, MHD_HTTP_METHOD_OPTIONS)) return queue(con, rq, 204, api->r_preflight);
        return send_problem(con, rq, 404, "about:blank", eco_last_error(), "path", NULL);
    }

    bool is_get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
    bool is_post = !strcmp(method, MHD_HTTP_METHOD_POST);
    const route_entry *re = find_route(path);
    rq->route = re ? re->route : (api->has_web && strncmp(path, "/v1/", 4) ? ROUTE_STATIC : ROUTE_NONE);

    if (!strcmp(method, MHD_HTTP_METHOD_OPTIONS)) return queue(con, rq, 204, api->r_preflight);
    if (rq->route == ROUTE_NONE) {
        char detail[160];
        snprintf(detail, sizeof detail, "no route %.100s; see /openapi.json", path);
        return send_problem(con, rq, 404, "about:blank", detail, NULL, NULL);
    }
    const char *allow = re && re->post ? ALLOW_GET_POST : ALLOW_GET;
    if (!is_get && !(is_post && re && re->post)) {
        char detail[192];
        snprintf(detail, sizeof detail, "%.16s is not allowed on %.100s (allowed: %s)", method, path, allow);
        return send_problem(con, rq, 405, "about:blank", detail, NULL, allow);
    }

    if (rq->route == ROUTE_STATIC) return serve_static(api, con, rq, path);

    resp_cache *rc = NULL;
    uint64_t key_hash = 0;
    if (is_get && rq->uri_len <= RESP_CACHE_MAX_KEY &&
        (rq->route == ROUTE_ESTIMATE || rq->route == ROUTE_OPTIMIZE || rq->route == ROUTE_ARCHITECTURES ||
         rq->route == ROUTE_GPUS || rq->route == ROUTE_MODELS) &&
        (rc = thread_cache(api))) {
        key_hash = fnv1a(rq->uri, rq->uri_len);
        struct MHD_Response *hit = cache_get(rc, key_hash, rq->uri, rq->uri_len);
        if (hit) return queue(con, rq, 200, hit);
    }

    json_t *params = NULL, *result = NULL;
    eco_err err = ECO_OK;
    bool answered = false;
    if (is_post) {
        if (rq->not_json) {
            char detail[192];
            snprintf(detail, sizeof detail, "request body must be JSON: Content-Type is '%s', send application/json", rq->body_type);
            return send_problem(con, rq, 415, "about:blank", detail, "body", NULL);
        }
        if (qlen) {
            enum MHD_Result ret = refuse_named_query(con, rq, query, qlen, true, &answered);
            if (answered) return ret;
        }
        if (rq->route == ROUTE_REPLICATIONS) return submit_replication(api, con, rq);
        err = eco_api_parse_body(rq->body ? rq->body : "", rq->body_len, &params);
    } else if (rq->route == ROUTE_ESTIMATE || rq->route == ROUTE_OPTIMIZE || rq->route == ROUTE_MEASUREMENTS ||
               rq->route == ROUTE_REPLICATIONS) {
        err = eco_api_parse_query(query, qlen, &params);
    } else if (qlen && rq->route != ROUTE_OPENAPI && rq->route != ROUTE_HEALTHZ && rq->route != ROUTE_METRICS) {
        enum MHD_Result ret = refuse_named_query(con, rq, query, qlen, false, &answered);
        if (answered) return ret;
    }
    if (err) return send_service_error(con, rq, err);
    eco_params_origin origin = is_post ? ECO_PARAMS_JSON : ECO_PARAMS_STRINGS;
    const char *cache = is_post ? CACHE_NONE : CACHE_PUBLIC;

    eco_clear_error();
    switch (rq->route) {
    case ROUTE_ESTIMATE: err = eco_service_estimate(api->svc, params, origin, &result); break;
    case ROUTE_OPTIMIZE: err = eco_service_optimize(api->svc, params, origin, &result); break;
    case ROUTE_ARCHITECTURES: err = eco_service_architectures(api->svc, &result); break;
    case ROUTE_GPUS: err = eco_service_gpus(api->svc, &result); break;
    case ROUTE_MODELS: err = eco_service_models(api->svc, &result); break;
    case ROUTE_MEASUREMENTS:
        err = eco_service_measurements(api->svc, params, origin, &result);
        cache = CACHE_MEASUREMENTS;
        break;
    case ROUTE_REPLICATIONS:
        err = eco_service_replications(api->svc, params, origin, &result);
        cache = CACHE_NONE;
        break;
    case ROUTE_REPLICATION: { /* the stored bytes, as submitted */
        char *doc;
        size_t len;
        if ((err = eco_service_replication_doc(api->svc, strtoll(path + strlen(REPLICATION_PREFIX), NULL, 10), &doc, &len))) {
            json_decref(params);
            if (err == ECO_ENOTFOUND) return send_problem(con, rq, 404, "about:blank", eco_last_error(), "id", NULL);
            return send_service_error(con, rq, err);
        }
        json_decref(params);
        return send_body(con, rq, 200, doc, len, true, CT_JSON, CACHE_NONE, NULL);
    }
    case ROUTE_OPENAPI: return queue(con, rq, 200, api->r_openapi);
    case ROUTE_HEALTHZ: return queue(con, rq, 200, api->r_healthz);
    case ROUTE_METRICS: {
        size_t len = 0;
        char *text = api_metrics_render(&api->metrics, &len);
        if (!text) return MHD_NO;
        return send_body(con, rq, 200, text, len, true, "text/plain; version=0.0.4; charset=utf-8", CACHE_NONE, NULL);
    }
    default: err = eco_fail(ECO_ESTATE, "unrouted request"); break;
    }
    json_decref(params);
    if (err) return send_service_error(con, rq, err);
    if (!result) return send_problem(con, rq, 500, "urn:ecocompute:problem:internal", "the service returned no answer", NULL, NULL);
    struct MHD_Response *r = json_response(result, cache);
    if (!r) return send_problem(con, rq, 500, "urn:ecocompute:problem:internal", "cannot serialise the answer", NULL, NULL);
    enum MHD_Result ret = queue(con, rq, 200, r);
    if (rc) cache_put(rc, key_hash, rq->uri, rq->uri_len, r);
    else MHD_destroy_response(r);
    return ret;
}

/* ---------- MHD callbacks ---------- */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *con)
{
    eco_api *api = cls;
    (void)con;
    size_t len = strnlen(uri, ECO_API_MAX_URL_BYTES + 1);
    request *rq = malloc(sizeof *rq + len + 1);
    if (!rq) return NULL;
    memset(rq, 0, sizeof *rq);
    rq->t0_ns = api_now_ns();
    rq->metrics = &api->metrics;
    rq->route = ROUTE_NONE;
    rq->uri_len = len > ECO_API_MAX_URL_BYTES ? strlen(uri) : len;
    memcpy(rq->uri, uri, len);
    rq->uri[len] = '\0';
    return rq;
}

static void on_completed(void *cls, struct MHD_Connection *con, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)con;
    (void)toe;
    (void)cls;
    request *rq = *con_cls;
    if (!rq) return;
    free(rq->body);
    free(rq);
    *con_cls = NULL;
}

typedef struct {
    const char *first;
    bool differ;
} content_lengths;

static enum MHD_Result collect_content_length(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    content_lengths *c = cls;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) return MHD_YES;
    if (!c->first) c->first = value ? value : "";
    else if (strcmp(c->first, value ? value : "")) c->differ = true;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    eco_api *api = cls;
    request *rq = *con_cls;
    if (!rq) {
        /* the URI callback ran out of memory; MHD has already decoded the path, which is still usable */
        rq = on_uri(api, url, con);
        if (!rq) return MHD_NO;
        *con_cls = rq;
    }
    if (!rq->started) {
        rq->started = true;
        size_t path_len = strcspn(rq->uri, "?#");
        rq->body_limit = (path_len == 16 || (path_len == 17 && rq->uri[16] == '/')) && !strncmp(rq->uri, "/v1/replications", 16)
                             ? ECO_API_MAX_REPLICATION_BYTES
                             : ECO_API_MAX_BODY_BYTES;
        if (rq->uri_len > ECO_API_MAX_URL_BYTES) {
            char detail[128];
            snprintf(detail, sizeof detail, "request target is %zu bytes, the limit is %u", rq->uri_len, ECO_API_MAX_URL_BYTES);
            return send_problem(con, rq, 414, "about:blank", detail, "url", NULL);
        }
        /* two Content-Lengths that differ frame the body two ways (request smuggling): RFC 9112 6.3 says refuse */
        content_lengths cls_seen = {NULL, false};
        MHD_get_connection_values(con, MHD_HEADER_KIND, collect_content_length, &cls_seen);
        if (cls_seen.differ)
            return send_problem(con, rq, 400, "about:blank", "the request has Content-Length headers that differ", "body", NULL);
        const char *cl = MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (errno || end == cl || n > rq->body_limit) {
                char detail[128];
                snprintf(detail, sizeof detail, "request body is %.24s bytes, the limit is %zu", cl, rq->body_limit);
                return send_problem(con, rq, 413, "urn:ecocompute:problem:too-large", detail, "body", NULL);
            }
        }
        /* the type is known before the body: a non-JSON one is answered (after the route's method check) without
         * keeping up to a MiB of it */
        rq->not_json = !strcmp(method, MHD_HTTP_METHOD_POST) && !body_type_is_json(con, rq->body_type, sizeof rq->body_type);
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        /* MHD cannot queue a response mid-body (chunked uploads have no Content-Length to reject early):
         * count and discard the excess, answer 413 once the body ends, and drop a client that keeps going. */
        if (rq->too_big || rq->body_len + n > rq->body_limit) {
            rq->too_big = true;
            rq->discarded += n;
            return rq->discarded > DISCARD_LIMIT_BYTES ? MHD_NO : MHD_YES;
        }
        if (rq->not_json) { /* refused with 415 once it ends: counted against the limit, not kept */
            rq->body_len += n;
            return MHD_YES;
        }
        if (!rq->body && !(rq->body = malloc(rq->body_limit))) return MHD_NO;
        memcpy(rq->body + rq->body_len, upload_data, n);
        rq->body_len += n;
        return MHD_YES;
    }
    if (rq->status) return MHD_YES;
    if (rq->too_big) {
        char detail[128];
        snprintf(detail, sizeof detail, "request body exceeds the limit of %zu bytes", rq->body_limit);
        return send_problem(con, rq, 413, "urn:ecocompute:problem:too-large", detail, "body", NULL);
    }
    return dispatch(api, con, method, rq);
}

/* ---------- lifecycle ---------- */

static struct MHD_Response *shared_response(const char *body, const char *content_type, const char *cache)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    if (r) add_common_headers(r, content_type, cache);
    return r;
}

static unsigned online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

eco_err eco_api_start(const eco_api_config *cfg, eco_api **out)
{
    *out = NULL;
    if (!cfg || !cfg->svc) return eco_fail_field(ECO_EINVAL, "svc", "eco_api_start needs an open eco_service");
    if (cfg->threads > 1024) return eco_fail_field(ECO_EINVAL, "threads", "threads must be 1..1024, got %u", cfg->threads);
    const char *host = cfg->host && cfg->host[0] ? cfg->host : "127.0.0.1";

    eco_api *api = calloc(1, sizeof *api);
    if (!api) return eco_fail(ECO_ENOMEM, "out of memory starting the API");
    api->svc = cfg->svc;
    pthread_mutex_init(&api->caches_lock, NULL);
    api->threads = cfg->threads ? cfg->threads : online_cpus();
    api_metrics_init(&api->metrics);

    if (cfg->web_dir) {
        if (!realpath(cfg->web_dir, api->web_root)) {
            eco_err e = eco_fail_field(ECO_EIO, "web", "web directory %s: %s", cfg->web_dir, strerror(errno));
            free(api);
            return e;
        }
        api->has_web = true;
    }

    json_t *doc = eco_api_openapi();
    api->openapi_text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    api->r_openapi = api->openapi_text ? shared_response(api->openapi_text, CT_JSON, CACHE_PUBLIC) : NULL;
    api->r_healthz = shared_response("{\"status\":\"ok\"}", CT_JSON, CACHE_NONE);
    api->r_preflight = shared_response("", NULL, "public, max-age=86400");
    if (!api->r_openapi || !api->r_healthz || !api->r_preflight) {
        eco_api_stop(api);
        return eco_fail(ECO_ENOMEM, "cannot build the OpenAPI document or the shared responses");
    }
    MHD_add_response_header(api->r_preflight, "Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
    MHD_add_response_header(api->r_preflight, "Access-Control-Allow-Headers", "Content-Type, Accept, If-None-Match");
    MHD_add_response_header(api->r_preflight, "Access-Control-Max-Age", "86400");

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char port_s[8];
    snprintf(port_s, sizeof port_s, "%u", (unsigned)cfg->port);
    int gai = getaddrinfo(host, port_s, &hints, &ai);
    if (gai || !ai) {
        eco_api_stop(api);
        return eco_fail_field(ECO_EINVAL, "host", "cannot resolve host '%s': %s", host, gai_strerror(gai));
    }
    struct sockaddr_storage sa;
    memcpy(&sa, ai->ai_addr, ai->ai_addrlen);
    bool v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);

    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | (v6 ? MHD_USE_IPv6 : 0);
    errno = 0;
    api->daemon = MHD_start_daemon(
        flags, cfg->port, NULL, NULL, on_request, api, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_THREAD_POOL_SIZE, api->threads, MHD_OPTION_URI_LOG_CALLBACK, on_uri, api,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, api, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
        /* MHD zeroes this pool per request, so keep it small; still room for targets well past the 4 KiB
         * limit, which then get our 414 problem rather than MHD's bare one */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_CONNECTION_LIMIT, 4096u,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
    if (!api->daemon) {
        int e = errno;
        eco_api_stop(api);
        return eco_fail_field(ECO_EIO, "port", "cannot listen on %s port %u: %s", host, (unsigned)cfg->port,
                              e ? strerror(e) : "libmicrohttpd refused to start");
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(api->daemon, MHD_DAEMON_INFO_BIND_PORT);
    api->port = info ? info->port : cfg->port;
    *out = api;
    return ECO_OK;
}

uint16_t eco_api_port(const eco_api *api) { return api ? api->port : 0; }
unsigned eco_api_threads(const eco_api *api) { return api ? api->threads : 0; }
uint64_t eco_api_requests_total(const eco_api *api) { return api ? api_metrics_total(&api->metrics) : 0; }

void eco_api_stop(eco_api *api)
{
    if (!api) return;
    if (api->daemon) MHD_stop_daemon(api->daemon); /* joins the workers: no request touches the caches now */
    caches_free(api);
    pthread_mutex_destroy(&api->caches_lock);
    if (api->r_openapi) MHD_destroy_response(api->r_openapi);
    if (api->r_healthz) MHD_destroy_response(api->r_healthz);
    if (api->r_preflight) MHD_destroy_response(api->r_preflight);
    free(api->openapi_text);
    free(api);
}
