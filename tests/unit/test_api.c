/* The API's request parsing (query strings, bodies, paths), content types, static-file confinement and
 * the Prometheus rendering: everything of src/api that needs no socket. */
#include "eco_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "eco/api.h"

static json_t *query_ok(const char *q)
{
    json_t *o = NULL;
    eco_err e = eco_api_parse_query(q, strlen(q), &o);
    if (e) fail_msg("query '%s' failed: %s", q, eco_last_error());
    return o;
}

static void query_fails(const char *q, eco_err code, const char *field)
{
    json_t *o = (json_t *)1;
    assert_int_equal(eco_api_parse_query(q, strlen(q), &o), code);
    assert_null(o);
    assert_string_equal(eco_last_error_field(), field);
}

static void test_query_decoding(void **state)
{
    (void)state;
    json_t *o = query_ok("params_b=7&arch=ampere&q=13B+on+a%20T4&empty=&flag");
    assert_int_equal(json_object_size(o), 5);
    assert_string_equal(json_string_value(json_object_get(o, "params_b")), "7");
    assert_string_equal(json_string_value(json_object_get(o, "arch")), "ampere");
    assert_string_equal(json_string_value(json_object_get(o, "q")), "13B on a T4");
    assert_string_equal(json_string_value(json_object_get(o, "empty")), "");
    assert_string_equal(json_string_value(json_object_get(o, "flag")), "");
    json_decref(o);

    o = query_ok(""); /* no parameters */
    assert_int_equal(json_object_size(o), 0);
    json_decref(o);
    o = query_ok("a=1&&b=2&"); /* stray separators, as browsers produce */
    assert_int_equal(json_object_size(o), 2);
    json_decref(o);
    o = query_ok("precisions=FP16%2CNF4&n%61me=%C3%A9"); /* encoded name, UTF-8 value */
    assert_string_equal(json_string_value(json_object_get(o, "precisions")), "FP16,NF4");
    assert_string_equal(json_string_value(json_object_get(o, "name")), "\xc3\xa9");
    json_decref(o);
    /* only the given length is read */
    json_t *p = NULL;
    assert_int_equal(eco_api_parse_query("a=1&b=2", 3, &p), ECO_OK);
    assert_int_equal(json_object_size(p), 1);
    json_decref(p);
}

static void test_query_errors(void **state)
{
    (void)state;
    query_fails("params_b=%zz", ECO_EINVAL, "params_b");
    query_fails("params_b=7%", ECO_EINVAL, "params_b");
    query_fails("params_b=7%4", ECO_EINVAL, "params_b");
    query_fails("x=a%00b", ECO_EINVAL, "x");
    query_fails("x=%ff", ECO_EINVAL, "x"); /* not UTF-8 */
    query_fails("a=1&a=2", ECO_EINVAL, "a");
    query_fails("=1", ECO_EINVAL, "query");
    query_fails("%zz=1", ECO_EINVAL, "query");
    assert_non_null(strstr(eco_last_error(), "%-escape"));
    char many[1024] = "";
    for (int i = 0; i <= (int)ECO_API_MAX_PARAMS; i++) {
        char kv[16];
        snprintf(kv, sizeof kv, "p%d=1&", i);
        strcat(many, kv);
    }
    query_fails(many, ECO_EINVAL, "query");
    char *huge = malloc(ECO_API_MAX_URL_BYTES + 2);
    memset(huge, 'a', ECO_API_MAX_URL_BYTES + 1);
    huge[ECO_API_MAX_URL_BYTES + 1] = '\0';
    query_fails(huge, ECO_ETOOBIG, "query");
    free(huge);
}

static void body_fails(const char *b, size_t len, eco_err code, const char *needle)
{
    json_t *o = (json_t *)1;
    assert_int_equal(eco_api_parse_body(b, len, &o), code);
    assert_null(o);
    assert_string_equal(eco_last_error_field(), "body");
    if (needle && !strstr(eco_last_error(), needle)) fail_msg("'%s' lacks '%s'", eco_last_error(), needle);
}

static void test_body(void **state)
{
    (void)state;
    json_t *o = NULL;
    const char *good = "{\"params_b\": 7, \"arch\": \"ada\"}";
    assert_int_equal(eco_api_parse_body(good, strlen(good), &o), ECO_OK);
    assert_near(json_number_value(json_object_get(o, "params_b")), 7.0, 0);
    json_decref(o);
    assert_int_equal(eco_api_parse_body(" \r\n\t", 4, &o), ECO_OK); /* empty body is {} */
    assert_true(json_is_object(o) && json_object_size(o) == 0);
    json_decref(o);
    assert_int_equal(eco_api_parse_body(NULL, 0, &o), ECO_OK);
    json_decref(o);

    body_fails("[1,2]", 5, ECO_EINVAL, "got an array");
    body_fails("\"x\"", 3, ECO_EINVAL, "got a string");
    body_fails("null", 4, ECO_EINVAL, "got null");
    body_fails("42", 2, ECO_EINVAL, "got a number");
    body_fails("{\"a\":1", 6, ECO_EINVAL, "not valid JSON");
    body_fails("{\"a\":1,\"a\":2}", 13, ECO_EINVAL, "not valid JSON"); /* duplicate key */
    body_fails("{\"a\":1} x", 9, ECO_EINVAL, "not valid JSON");
    body_fails("{\"a\":1}", 8, ECO_EINVAL, "not valid JSON"); /* an embedded NUL byte */
    body_fails("{\"a\":\"\xff\"}", 8, ECO_EINVAL, "not valid JSON");
    /* an integer past 64 bits is valid JSON: it reaches the parameter checks as a double, the rest as they were */
    const char *huge_int = "{\"batch\": 99999999999999999999, \"params_b\": 7}";
    assert_int_equal(eco_api_parse_body(huge_int, strlen(huge_int), &o), ECO_OK);
    assert_near(json_number_value(json_object_get(o, "batch")), 1e20, 1e6);
    assert_near(json_number_value(json_object_get(o, "params_b")), 7.0, 0);
    json_decref(o);
    body_fails("{\"batch\": 99999999999999999999, \"batch\": 1}", 43, ECO_EINVAL, "not valid JSON"); /* still one key once */

    char deep[200] = "{\"a\":";
    for (int i = 0; i < 40; i++) strcat(deep, "[");
    body_fails(deep, strlen(deep), ECO_EINVAL, "deeper");
    /* brackets inside strings do not count as nesting */
    char flat[300] = "{\"a\":\"";
    for (int i = 0; i < 100; i++) strcat(flat, "[");
    strcat(flat, "\"}");
    assert_int_equal(eco_api_parse_body(flat, strlen(flat), &o), ECO_OK);
    json_decref(o);

    char *big = malloc(ECO_API_MAX_BODY_BYTES + 1);
    memset(big, ' ', ECO_API_MAX_BODY_BYTES + 1);
    body_fails(big, ECO_API_MAX_BODY_BYTES + 1, ECO_ETOOBIG, "limit");
    free(big);
}

static void path_is(const char *raw, const char *want)
{
    char out[256];
    eco_err e = eco_api_normalize_path(raw, strlen(raw), out, sizeof out);
    if (e) fail_msg("path '%s' failed: %s", raw, eco_last_error());
    assert_string_equal(out, want);
}

static void path_fails(const char *raw)
{
    char out[256];
    if (eco_api_normalize_path(raw, strlen(raw), out, sizeof out) == ECO_OK)
        fail_msg("path '%s' was accepted as '%s'", raw, out);
    assert_string_equal(eco_last_error_field(), "path");
    assert_string_equal(out, ""); /* nothing usable is left behind */
}

static void test_paths(void **state)
{
    (void)state;
    path_is("/", "/");
    path_is("/v1/estimate", "/v1/estimate");
    path_is("/v1/estimate/", "/v1/estimate");
    path_is("/v1/%65stimate", "/v1/estimate");
    path_is("/a%20b.html", "/a b.html");
    path_is("/..a/b..", "/..a/b..");
    path_fails("");
    path_fails("v1/estimate");
    path_fails("/../etc/passwd");
    path_fails("/a/../../etc/passwd");
    path_fails("/a/..");
    path_fails("/a/.");
    path_fails("/./a");
    path_fails("/%2e%2e/secret");
    path_fails("/%2E%2e/secret");
    path_fails("/.%2e/secret");
    path_fails("/a%2f..%2fsecret");
    path_fails("/a%2F..");
    path_fails("/a%5c..%5csecret");
    path_fails("/a\\b");
    path_fails("/a%00.html");
    path_fails("/a%0a");
    path_fails("/a%");
    path_fails("/a%4");
    path_fails("/a%g1");
    path_fails("//etc/passwd");
    path_fails("/a//b");
    char out[8];
    assert_int_equal(eco_api_normalize_path("/abcdefghij", 11, out, sizeof out), ECO_ETOOBIG);
}

static void test_content_types(void **state)
{
    (void)state;
    assert_string_equal(api_content_type("/index.html"), "text/html; charset=utf-8");
    assert_string_equal(api_content_type("/x/app.js"), "text/javascript; charset=utf-8");
    assert_string_equal(api_content_type("/eco.wasm"), "application/wasm");
    assert_string_equal(api_content_type("/curves.json"), "application/json");
    assert_string_equal(api_content_type("/STYLE.CSS"), "text/css; charset=utf-8");
    assert_string_equal(api_content_type("/noext"), "application/octet-stream");
    assert_string_equal(api_content_type("/dir.d/noext"), "application/octet-stream");
}

static void test_static_confinement(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/eco-api-static-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char root[512], path[600];
    snprintf(root, sizeof root, "%s/web", tmpl);
    assert_int_equal(mkdir(root, 0755), 0);
    snprintf(path, sizeof path, "%s/index.html", root);
    FILE *f = fopen(path, "w");
    fputs("<p>hi</p>", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/secret.txt", tmpl);
    f = fopen(path, "w");
    fputs("secret", f);
    fclose(f);
    char link[600];
    snprintf(link, sizeof link, "%s/escape.txt", root);
    assert_int_equal(symlink(path, link), 0);
    snprintf(link, sizeof link, "%s/inside.html", root);
    assert_int_equal(symlink("index.html", link), 0);

    api_static_file sf;
    assert_int_equal(api_static_open(root, "/", &sf), 0); /* directory -> index.html */
    assert_int_equal(sf.size, 9);
    assert_string_equal(sf.content_type, "text/html; charset=utf-8");
    assert_int_equal(sf.etag[0], '"');
    close(sf.fd);
    assert_int_equal(api_static_open(root, "/inside.html", &sf), 0); /* a symlink inside the root is fine */
    close(sf.fd);
    assert_int_equal(api_static_open(root, "/escape.txt", &sf), 404);
    assert_int_equal(sf.fd, -1);
    assert_int_equal(api_static_open(root, "/missing.html", &sf), 404);
    assert_int_equal(api_static_open(root, "/.hidden", &sf), 404);

    snprintf(path, sizeof path, "rm -rf '%s'", tmpl);
    assert_int_equal(system(path), 0);
}

static void test_metrics_render(void **state)
{
    (void)state;
    api_metrics *m = malloc(sizeof *m);
    api_metrics_init(m);
    api_metrics_record(m, ROUTE_ESTIMATE, 200, 40000);     /* 40 us: first bucket */
    api_metrics_record(m, ROUTE_ESTIMATE, 200, 3000000);   /* 3 ms */
    api_metrics_record(m, ROUTE_ESTIMATE, 400, 2000000000); /* 2 s: only +Inf */
    api_metrics_record(m, ROUTE_NONE, 418, 1000);
    assert_int_equal(api_metrics_total(m), 4);
    size_t len = 0;
    char *text = api_metrics_render(m, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    assert_non_null(strstr(text, "# TYPE eco_http_requests_total counter\n"));
    assert_non_null(strstr(text, "eco_http_requests_total{route=\"/v1/estimate\",status=\"200\"} 2\n"));
    assert_non_null(strstr(text, "eco_http_requests_total{route=\"/v1/estimate\",status=\"400\"} 1\n"));
    assert_non_null(strstr(text, "eco_http_requests_total{route=\"none\",status=\"other\"} 1\n"));
    assert_null(strstr(text, "route=\"/v1/gpus\"")); /* untouched routes are omitted */
    assert_non_null(strstr(text, "eco_http_request_duration_seconds_bucket{route=\"/v1/estimate\",le=\"5e-05\"} 1\n"));
    assert_non_null(strstr(text, "eco_http_request_duration_seconds_bucket{route=\"/v1/estimate\",le=\"0.0025\"} 1\n"));
    assert_non_null(strstr(text, "eco_http_request_duration_seconds_bucket{route=\"/v1/estimate\",le=\"0.005\"} 2\n"));
    assert_non_null(strstr(text, "eco_http_request_duration_seconds_bucket{route=\"/v1/estimate\",le=\"1\"} 2\n"));
    assert_non_null(strstr(text, "eco_http_request_duration_seconds_bucket{route=\"/v1/estimate\",le=\"+Inf\"} 3\n"));
    assert_non_null(strstr(text, "eco_http_request_duration_seconds_sum{route=\"/v1/estimate\"} 2.003040000\n"));
    assert_non_null(strstr(text, "eco_http_request_duration_seconds_count{route=\"/v1/estimate\"} 3\n"));
    assert_non_null(strstr(text, "\neco_uptime_seconds "));
    assert_non_null(strstr(text, "eco_build_info{version=\"" ECO_VERSION "\""));
    free(text);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query_decoding), cmocka_unit_test(test_query_errors),
        cmocka_unit_test(test_body),           cmocka_unit_test(test_paths),
        cmocka_unit_test(test_content_types),  cmocka_unit_test(test_static_confinement),
        cmocka_unit_test(test_metrics_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
