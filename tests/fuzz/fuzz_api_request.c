/* The API's request parsing layer on arbitrary bytes: the request target is split as the server splits it
 * (path '?' query), the path normalised and the query decoded, and the same bytes parsed as a POST body.
 * Beyond "no crash", it checks the invariants the server relies on: a normalised path never holds a "." or
 * ".." segment, "//", a backslash or a control byte; parsed queries and bodies are JSON objects, and
 * every failure names a field. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eco/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *p)
{
    if (p[0] != '/') abort();
    for (const char *c = p; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '\\') abort();
    if (strstr(p, "//")) abort();
    const char *seg = p;
    while (seg) {
        seg++;
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) abort();
        seg = end;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *q = memchr(s, '?', size);
    size_t path_len = q ? (size_t)(q - s) : size;

    char path[ECO_API_MAX_URL_BYTES + 1];
    if (eco_api_normalize_path(s, path_len, path, sizeof path) == ECO_OK) check_path(path);
    else if (path[0] != '\0' || !eco_last_error_field()[0]) abort();

    if (q) {
        json_t *params = NULL;
        if (eco_api_parse_query(q + 1, size - path_len - 1, &params) == ECO_OK) {
            if (!json_is_object(params) || json_object_size(params) > ECO_API_MAX_PARAMS) abort();
            const char *k;
            json_t *v;
            json_object_foreach(params, k, v) if (!k[0] || !json_is_string(v)) abort();
            json_decref(params);
        } else if (params || !eco_last_error_field()[0]) {
            abort();
        }
    }

    json_t *body = NULL;
    if (eco_api_parse_body(s, size, &body) == ECO_OK) {
        if (!json_is_object(body)) abort();
        json_decref(body);
    } else if (body || strcmp(eco_last_error_field(), "body")) {
        abort();
    }
    return 0;
}
