#include "eco/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

eco_err eco_json_loadb(const char *buf, size_t len, const char *name, size_t max_bytes, json_t **out)
{
    if (!name) name = "JSON";
    if (!max_bytes) max_bytes = ECO_JSON_MAX_BYTES;
    *out = NULL;
    if (len > max_bytes)
        return eco_fail(ECO_ETOOBIG, "%s: %zu bytes is over the %zu-byte limit", name, len, max_bytes);
    json_error_t jerr;
    /* Duplicate keys in untrusted input are ambiguous (which one wins differs between parsers). */
    json_t *doc = json_loadb(buf ? buf : "", len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!doc) {
        if (len == 0) return eco_fail(ECO_EFORMAT, "%s: empty document, expected JSON", name);
        return eco_fail(ECO_EFORMAT, "%s:%d:%d: malformed JSON: %s", name, jerr.line, jerr.column, jerr.text);
    }
    *out = doc;
    return ECO_OK;
}

static bool exact_integer(const json_t *x)
{
    return json_is_real(x) && floor(json_real_value(x)) == json_real_value(x) && fabs(json_real_value(x)) <= 9007199254740992.0;
}

static void integers_back(json_t *v)
{
    if (json_is_object(v)) {
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x) {
            if (exact_integer(x)) json_object_set_new(v, key, json_integer((json_int_t)json_real_value(x)));
            else integers_back(x);
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *x = json_array_get(v, i);
            if (exact_integer(x)) json_array_set_new(v, i, json_integer((json_int_t)json_real_value(x)));
            else integers_back(x);
        }
    }
}

json_t *eco_json_loadb_wide(const char *buf, size_t len, size_t flags, json_error_t *err)
{
    json_t *v = json_loadb(buf, len, flags, err);
    if (!v && json_error_code(err) == json_error_numeric_overflow && (v = json_loadb(buf, len, flags | JSON_DECODE_INT_AS_REAL, err)))
        integers_back(v);
    return v;
}

eco_err eco_json_load_file(const char *path, size_t max_bytes, json_t **out)
{
    if (!max_bytes) max_bytes = ECO_JSON_MAX_BYTES;
    *out = NULL;
    int is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) return eco_fail(ECO_EIO, "%s: cannot open: %s", path, strerror(errno));
    /* Read at most max_bytes + 1 so an oversized file is detected without reading all of it. */
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    eco_err rc = ECO_OK;
    if (!buf) { rc = eco_fail(ECO_ENOMEM, "%s: out of memory", path); goto done; }
    for (;;) {
        if (len == cap) {
            size_t ncap = cap * 2;
            if (ncap > max_bytes + 1) ncap = max_bytes + 1;
            if (ncap <= cap) {
                rc = eco_fail(ECO_ETOOBIG, "%s: file is over the %zu-byte limit", path, max_bytes);
                goto done;
            }
            char *nb = realloc(buf, ncap);
            if (!nb) { rc = eco_fail(ECO_ENOMEM, "%s: out of memory", path); goto done; }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) { rc = eco_fail(ECO_EIO, "%s: read error: %s", path, strerror(errno)); goto done; }
    if (len > max_bytes) {
        rc = eco_fail(ECO_ETOOBIG, "%s: file is over the %zu-byte limit", path, max_bytes);
        goto done;
    }
    rc = eco_json_loadb(buf, len, path, max_bytes, out);
done:
    free(buf);
    if (!is_stdin) fclose(f);
    return rc;
}

const char *eco_json_type_name(const json_t *v)
{
    if (!v) return "missing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "real";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "unknown";
}

static eco_err lookup(const json_t *obj, const char *key, json_t **v)
{
    if (!json_is_object(obj))
        return eco_fail_field(ECO_EINVAL, key, "cannot read '%s': the container is %s, not an object", key,
                              eco_json_type_name(obj));
    *v = json_object_get(obj, key);
    if (!*v || json_is_null(*v)) return eco_fail_field(ECO_ENOTFOUND, key, "'%s' is missing", key);
    return ECO_OK;
}

eco_err eco_json_get_string(const json_t *obj, const char *key, const char **out)
{
    json_t *v = NULL;
    eco_err rc = lookup(obj, key, &v);
    if (rc) return rc;
    if (!json_is_string(v))
        return eco_fail_field(ECO_EINVAL, key, "'%s' must be a string, got %s", key, eco_json_type_name(v));
    *out = json_string_value(v);
    return ECO_OK;
}

eco_err eco_json_get_number(const json_t *obj, const char *key, double *out)
{
    json_t *v = NULL;
    eco_err rc = lookup(obj, key, &v);
    if (rc) return rc;
    if (!json_is_number(v))
        return eco_fail_field(ECO_EINVAL, key, "'%s' must be a number, got %s", key, eco_json_type_name(v));
    *out = json_number_value(v);
    return ECO_OK;
}

eco_err eco_json_get_int(const json_t *obj, const char *key, long long *out)
{
    json_t *v = NULL;
    eco_err rc = lookup(obj, key, &v);
    if (rc) return rc;
    if (json_is_integer(v)) { *out = json_integer_value(v); return ECO_OK; }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        /* 2^63 is exactly representable; anything at or above it would overflow the cast. */
        if (floor(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
            *out = (long long)d;
            return ECO_OK;
        }
        return eco_fail_field(ECO_EINVAL, key, "'%s' must be an integer, got %.17g", key, d);
    }
    return eco_fail_field(ECO_EINVAL, key, "'%s' must be an integer, got %s", key, eco_json_type_name(v));
}

eco_err eco_json_get_bool(const json_t *obj, const char *key, bool *out)
{
    json_t *v = NULL;
    eco_err rc = lookup(obj, key, &v);
    if (rc) return rc;
    if (!json_is_boolean(v))
        return eco_fail_field(ECO_EINVAL, key, "'%s' must be true or false, got %s", key, eco_json_type_name(v));
    *out = json_is_true(v);
    return ECO_OK;
}
