/* /metrics: request counters and a latency histogram per route, updated with relaxed atomics so the
 * request path takes no lock; rendering reads a slightly torn but monotonic snapshot, which Prometheus
 * tolerates. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_internal.h"

static const uint64_t bucket_ns[API_LATENCY_BUCKETS] = {
    50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 25000000, 100000000, 250000000, 1000000000};

static const unsigned status_codes[STATUS_COUNT] = {
#define API_STATUS_CODE(code) code,
    API_STATUSES(API_STATUS_CODE)
#undef API_STATUS_CODE
    0};

const char *api_route_name(api_route r)
{
    static const char *const names[ROUTE_COUNT] = {"/v1/estimate", "/v1/optimize", "/v1/architectures", "/v1/gpus",
                                                   "/v1/models", "/v1/measurements", "/v1/replications", "/v1/replications/{id}", "/openapi.json", "/healthz",
                                                   "/metrics", "static", "none"};
    return (unsigned)r < ROUTE_COUNT ? names[r] : "none";
}

uint64_t api_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void api_metrics_init(api_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->start_ns = api_now_ns();
    m->start_unix_s = (uint64_t)time(NULL);
}

static unsigned status_index(unsigned status)
{
    switch (status) {
#define API_STATUS_CASE(code) case code: return STATUS_##code;
        API_STATUSES(API_STATUS_CASE)
#undef API_STATUS_CASE
    default: return STATUS_OTHER;
    }
}

void api_metrics_record(api_metrics *m, api_route route, unsigned status, uint64_t latency_ns)
{
    if ((unsigned)route >= ROUTE_COUNT) route = ROUTE_NONE;
    atomic_fetch_add_explicit(&m->requests[route][status_index(status)], 1, memory_order_relaxed);
    unsigned b = 0;
    while (b < API_LATENCY_BUCKETS && latency_ns > bucket_ns[b]) b++;
    atomic_fetch_add_explicit(&m->latency_bucket[route][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->latency_sum_ns[route], latency_ns, memory_order_relaxed);
}

uint64_t api_metrics_total(const api_metrics *m)
{
    uint64_t n = 0;
    for (unsigned r = 0; r < ROUTE_COUNT; r++)
        for (unsigned s = 0; s < STATUS_COUNT; s++)
            n += atomic_load_explicit(&((api_metrics *)m)->requests[r][s], memory_order_relaxed);
    return n;
}

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} sbuf;

__attribute__((format(printf, 2, 3))) static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) { b->oom = 1; return; }
        if ((size_t)n < b->cap - b->len) { b->len += (size_t)n; return; }
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *p = realloc(b->buf, cap);
        if (!p) { b->oom = 1; return; }
        b->buf = p;
        b->cap = cap;
    }
}

char *api_metrics_render(const api_metrics *cm, size_t *len)
{
    api_metrics *m = (api_metrics *)cm; /* atomics are read through non-const pointers in C11 */
    sbuf b = {malloc(8192), 0, 8192, 0};
    if (!b.buf) return NULL;
    b.buf[0] = '\0';
    sb_printf(&b, "# HELP eco_http_requests_total HTTP requests answered, by route and status code.\n"
                  "# TYPE eco_http_requests_total counter\n");
    for (unsigned r = 0; r < ROUTE_COUNT; r++)
        for (unsigned s = 0; s < STATUS_COUNT; s++) {
            uint64_t n = atomic_load_explicit(&m->requests[r][s], memory_order_relaxed);
            if (!n) continue;
            if (status_codes[s])
                sb_printf(&b, "eco_http_requests_total{route=\"%s\",status=\"%u\"} %llu\n", api_route_name((api_route)r),
                          status_codes[s], (unsigned long long)n);
            else
                sb_printf(&b, "eco_http_requests_total{route=\"%s\",status=\"other\"} %llu\n",
                          api_route_name((api_route)r), (unsigned long long)n);
        }
    sb_printf(&b, "# HELP eco_http_request_duration_seconds Time from the request line to the answer being queued, by route.\n"
                  "# TYPE eco_http_request_duration_seconds histogram\n");
    for (unsigned r = 0; r < ROUTE_COUNT; r++) {
        uint64_t counts[API_LATENCY_BUCKETS + 1], total = 0;
        for (unsigned i = 0; i <= API_LATENCY_BUCKETS; i++) {
            counts[i] = atomic_load_explicit(&m->latency_bucket[r][i], memory_order_relaxed);
            total += counts[i];
        }
        if (!total) continue;
        const char *name = api_route_name((api_route)r);
        uint64_t cum = 0;
        for (unsigned i = 0; i < API_LATENCY_BUCKETS; i++) {
            cum += counts[i];
            sb_printf(&b, "eco_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n", name,
                      (double)bucket_ns[i] / 1e9, (unsigned long long)cum);
        }
        sb_printf(&b, "eco_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", name,
                  (unsigned long long)total);
        sb_printf(&b, "eco_http_request_duration_seconds_sum{route=\"%s\"} %.9f\n", name,
                  (double)atomic_load_explicit(&m->latency_sum_ns[r], memory_order_relaxed) / 1e9);
        sb_printf(&b, "eco_http_request_duration_seconds_count{route=\"%s\"} %llu\n", name, (unsigned long long)total);
    }
    sb_printf(&b, "# HELP eco_uptime_seconds Seconds since the server started.\n# TYPE eco_uptime_seconds gauge\n"
                  "eco_uptime_seconds %.3f\n",
              (double)(api_now_ns() - m->start_ns) / 1e9);
    sb_printf(&b, "# HELP eco_start_time_seconds Unix time the server started.\n# TYPE eco_start_time_seconds gauge\n"
                  "eco_start_time_seconds %llu\n",
              (unsigned long long)m->start_unix_s);
    sb_printf(&b, "# HELP eco_build_info Version of the running server.\n# TYPE eco_build_info gauge\n"
                  "eco_build_info{version=\"%s\",build=\"%s\"} 1\n",
              ECO_VERSION, ECO_BUILD_HASH);
    if (b.oom) { free(b.buf); return NULL; }
    *len = b.len;
    return b.buf;
}
