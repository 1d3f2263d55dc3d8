/* Request parsing: query strings, JSON bodies and paths. Everything here sees attacker-controlled bytes,
 * so it is pure (no I/O), bounded, and fuzzed (tests/fuzz/fuzz_api_request.c). */
#include "eco/api.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "eco/json.h"

static int hex_val(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode src[0..len) into dst (capacity >= len + 1). Returns the decoded length, or -1 on a bad escape or
 * a decoded NUL. With plus_is_space, '+' becomes ' ' (query strings, not paths). */
static long pct_decode(const char *src, size_t len, char *dst, bool plus_is_space)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c == '%') {
            if (i + 2 >= len) return -1;
            int hi = hex_val((unsigned char)src[i + 1]), lo = hex_val((unsigned char)src[i + 2]);
            if (hi < 0 || lo < 0) return -1;
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            c = ' ';
        }
        if (c == '\0') return -1;
        dst[o++] = (char)c;
    }
    dst[o] = '\0';
    return (long)o;
}

eco_err eco_api_parse_query(const char *query, size_t len, json_t **out)
{
    *out = NULL;
    if (len > ECO_API_MAX_URL_BYTES) return eco_fail_field(ECO_ETOOBIG, "query", "query string is %zu bytes, the limit is %u", len, ECO_API_MAX_URL_BYTES);
    json_t *obj = json_object();
    if (!obj) return eco_fail(ECO_ENOMEM, "out of memory decoding the query string");
    char name[ECO_API_MAX_URL_BYTES + 1], value[ECO_API_MAX_URL_BYTES + 1];
    size_t count = 0, i = 0;
    while (i < len) {
        size_t end = i;
        while (end < len && query[end] != '&') end++;
        if (end > i) { /* "a=1&&b=2" and a trailing '&' are tolerated, as browsers produce them */
            const char *eq = memchr(query + i, '=', end - i);
            size_t name_len = eq ? (size_t)(eq - (query + i)) : end - i;
            long n = pct_decode(query + i, name_len, name, true);
            if (n < 0) {
                json_decref(obj);
                return eco_fail_field(ECO_EINVAL, "query", "query parameter name '%.*s' has a bad %%-escape or a NUL byte",
                                      (int)(name_len > 64 ? 64 : name_len), query + i);
            }
            if (n == 0) {
                json_decref(obj);
                return eco_fail_field(ECO_EINVAL, "query", "query string has a parameter with an empty name");
            }
            const char *vsrc = eq ? eq + 1 : query + end;
            long v = pct_decode(vsrc, eq ? (size_t)(query + end - vsrc) : 0, value, true);
            if (v < 0) {
                json_decref(obj);
                return eco_fail_field(ECO_EINVAL, name, "query parameter '%s' has a bad %%-escape or a NUL byte", name);
            }
            if (json_object_get(obj, name)) {
                json_decref(obj);
                return eco_fail_field(ECO_EINVAL, name, "query parameter '%s' is given more than once", name);
            }
            if (++count > ECO_API_MAX_PARAMS) {
                json_decref(obj);
                return eco_fail_field(ECO_EINVAL, "query", "query string has more than %u parameters", ECO_API_MAX_PARAMS);
            }
            json_t *s = json_stringn(value, (size_t)v);
            if (!s) {
                json_decref(obj);
                return eco_fail_field(ECO_EINVAL, name, "query parameter '%s' is not valid UTF-8", name);
            }
            /* json_object_set_new() checks the key's UTF-8 too; a failure here means a bad name */
            if (json_object_setn_new(obj, name, (size_t)n, s)) {
                json_decref(obj);
                return eco_fail_field(ECO_EINVAL, "query", "query parameter name is not valid UTF-8");
            }
        }
        i = end + 1;
    }
    *out = obj;
    return ECO_OK;
}

/* Nesting depth of JSON text, ignoring brackets inside strings; stops early once over the limit. */
static size_t json_depth(const char *s, size_t len)
{
    size_t depth = 0, max = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            if (++depth > max) max = depth;
            if (max > ECO_API_MAX_JSON_DEPTH) return max;
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
        }
    }
    return max;
}

eco_err eco_api_parse_body(const char *body, size_t len, json_t **out)
{
    *out = NULL;
    if (len > ECO_API_MAX_BODY_BYTES)
        return eco_fail_field(ECO_ETOOBIG, "body", "request body is %zu bytes, the limit is %u", len, ECO_API_MAX_BODY_BYTES);
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n')) i++;
    if (i == len) {
        *out = json_object();
        return *out ? ECO_OK : eco_fail(ECO_ENOMEM, "out of memory");
    }
    if (json_depth(body, len) > ECO_API_MAX_JSON_DEPTH)
        return eco_fail_field(ECO_EINVAL, "body", "request body nests deeper than %u levels", ECO_API_MAX_JSON_DEPTH);
    json_error_t jerr;
    /* an integer past 64 bits reaches the parameter's own range check ("batch must be between 1 and 1024, got 1e+20") */
    json_t *v = eco_json_loadb_wide(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!v)
        return eco_fail_field(ECO_EINVAL, "body", "request body is not valid JSON: %s (line %d, column %d)", jerr.text,
                              jerr.line, jerr.column);
    if (!json_is_object(v)) {
        const char *t = json_is_array(v) ? "an array" : json_is_string(v) ? "a string" : json_is_null(v) ? "null"
                        : json_is_boolean(v) ? "a boolean" : "a number";
        json_decref(v);
        return eco_fail_field(ECO_EINVAL, "body", "request body must be a JSON object, got %s", t);
    }
    *out = v;
    return ECO_OK;
}

static eco_err normalize(const char *raw, size_t len, char *out, size_t cap)
{
    if (cap == 0) return eco_fail(ECO_EINVAL, "path buffer has no room");
    out[0] = '\0';
    if (len == 0 || raw[0] != '/') return eco_fail_field(ECO_EINVAL, "path", "request path must start with '/'");
    if (len >= cap) return eco_fail_field(ECO_ETOOBIG, "path", "request path is %zu bytes, the limit is %zu", len, cap - 1);
    size_t o = 0;
    size_t seg_start = 0; /* index in out of the current segment's first byte */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '%') {
            int hi = i + 2 < len ? hex_val((unsigned char)raw[i + 1]) : -1;
            int lo = i + 2 < len ? hex_val((unsigned char)raw[i + 2]) : -1;
            if (hi < 0 || lo < 0) return eco_fail_field(ECO_EINVAL, "path", "request path has a bad %%-escape");
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
            /* an encoded separator would smuggle a segment past the checks below */
            if (c == '/' || c == '\\') return eco_fail_field(ECO_EINVAL, "path", "request path has an encoded '/' or '\\'");
        }
        if (c < 0x20 || c == 0x7f) return eco_fail_field(ECO_EINVAL, "path", "request path has a control byte");
        if (c == '\\') return eco_fail_field(ECO_EINVAL, "path", "request path has a backslash");
        if (c == '/') {
            if (o > 0) { /* close the previous segment */
                size_t n = o - seg_start;
                if (n == 0) return eco_fail_field(ECO_EINVAL, "path", "request path has an empty segment");
                if ((n == 1 && out[seg_start] == '.') || (n == 2 && out[seg_start] == '.' && out[seg_start + 1] == '.'))
                    return eco_fail_field(ECO_EINVAL, "path", "request path has a '.' or '..' segment");
            }
            out[o++] = '/';
            seg_start = o;
            continue;
        }
        out[o++] = (char)c;
    }
    size_t n = o - seg_start;
    if ((n == 1 && out[seg_start] == '.') || (n == 2 && out[seg_start] == '.' && out[seg_start + 1] == '.'))
        return eco_fail_field(ECO_EINVAL, "path", "request path has a '.' or '..' segment");
    if (n == 0 && o > 1) o--; /* trailing slash */
    out[o] = '\0';
    return ECO_OK;
}

eco_err eco_api_normalize_path(const char *raw, size_t len, char *out, size_t cap)
{
    eco_err e = normalize(raw, len, out, cap);
    if (e && cap) out[0] = '\0'; /* never leave a half-checked path behind */
    return e;
}
