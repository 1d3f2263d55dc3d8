/* Private to src/api: routes and the lock-free request metrics shared by server.c and metrics.c. */
#ifndef ECO_API_INTERNAL_H
#define ECO_API_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    ROUTE_ESTIMATE,
    ROUTE_OPTIMIZE,
    ROUTE_ARCHITECTURES,
    ROUTE_GPUS,
    ROUTE_MODELS,
    ROUTE_MEASUREMENTS,
    ROUTE_REPLICATIONS,
    ROUTE_REPLICATION, /* /v1/replications/{id} */
    ROUTE_OPENAPI,
    ROUTE_HEALTHZ,
    ROUTE_METRICS,
    ROUTE_STATIC,
    ROUTE_NONE, /* unknown path, or a request rejected before routing */
    ROUTE_COUNT
} api_route;

/* Statuses this server produces; anything else is counted as "other". */
#define API_STATUSES(X) X(200) X(201) X(204) X(304) X(400) X(404) X(405) X(413) X(414) X(415) X(422) X(500) X(503)
enum {
#define API_STATUS_ENUM(code) STATUS_##code,
    API_STATUSES(API_STATUS_ENUM)
#undef API_STATUS_ENUM
    STATUS_OTHER,
    STATUS_COUNT
};

/* Upper bounds of the latency histogram, in nanoseconds (Prometheus "le" buckets; +Inf is implicit). */
#define API_LATENCY_BUCKETS 12

typedef struct {
    _Atomic uint64_t requests[ROUTE_COUNT][STATUS_COUNT];
    _Atomic uint64_t latency_bucket[ROUTE_COUNT][API_LATENCY_BUCKETS + 1]; /* non-cumulative; last = +Inf */
    _Atomic uint64_t latency_sum_ns[ROUTE_COUNT];
    uint64_t start_ns; /* CLOCK_MONOTONIC at start, for uptime */
    uint64_t start_unix_s;
} api_metrics;

const char *api_route_name(api_route r);
uint64_t api_now_ns(void);
void api_metrics_init(api_metrics *m);
void api_metrics_record(api_metrics *m, api_route route, unsigned status, uint64_t latency_ns);
uint64_t api_metrics_total(const api_metrics *m);
/* Prometheus text exposition format 0.0.4; returns a malloc'd string (NULL on out of memory). */
char *api_metrics_render(const api_metrics *m, size_t *len);

/* Static files under a realpath'd root. Returns 0 and fills fd/size/content type, or an HTTP status
 * (404) when the path is not a regular file inside the root. */
typedef struct {
    int fd;
    uint64_t size;
    const char *content_type;
    char etag[64];
} api_static_file;
unsigned api_static_open(const char *root, const char *norm_path, api_static_file *f);
const char *api_content_type(const char *path);

#endif
