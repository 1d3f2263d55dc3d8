/* JSON-Schema draft 2020-12 subset over jansson.
 *
 * Compile: a scan pass registers every schema resource ($id) and anchor with its base URI, then a compile
 * pass turns each subschema into a node once (cached by its json_t), resolving $ref to nodes through a
 * work list so reference chains and cycles need no deep recursion. Validate: a recursive walk that either
 * collects every error (top level, allOf, properties, then/else...) or only computes a verdict (inside
 * anyOf/oneOf/not/if/contains, whose failures are not errors of the document). */
#include "eco/jsonschema.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "eco/json.h"

#define MAX_NODES 200000
#define MAX_SCHEMA_NESTING 256
#define DEFAULT_BASE "file:///eco-schema-root.json"

/* ------------------------------------------------------------------ strings */

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (n >= SIZE_MAX / 2 - b->n) { b->oom = 1; return; } /* keeps the doubling below from wrapping */
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

/* Returns the malloc'd string (never NULL unless out of memory) and resets the buffer. */
static char *sb_take(sbuf *b)
{
    if (b->oom) { free(b->p); b->p = NULL; b->n = b->cap = 0; b->oom = 0; return NULL; }
    char *s = b->p ? b->p : strdup("");
    b->p = NULL;
    b->n = b->cap = 0;
    return s;
}

static void sb_put_token(sbuf *b, const char *tok, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (tok[i] == '~') sb_putn(b, "~0", 2);
        else if (tok[i] == '/') sb_putn(b, "~1", 2);
        else sb_putn(b, tok + i, 1);
    }
}

/* parent + "/" + escaped token */
static char *ptr_join(const char *parent, const char *tok)
{
    sbuf b = {0};
    sb_puts(&b, parent);
    sb_putn(&b, "/", 1);
    sb_put_token(&b, tok, strlen(tok));
    return sb_take(&b);
}

static char *ptr_join_index(const char *parent, size_t i)
{
    char num[32];
    snprintf(num, sizeof num, "%zu", i);
    return ptr_join(parent, num);
}

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

/* Compact JSON of a value for messages, cut at a UTF-8 boundary so messages stay short. */
static void fmt_value(const json_t *j, char *buf, size_t cap)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    if (!s) { snprintf(buf, cap, "(value)"); return; }
    size_t n = strlen(s);
    if (n < cap) {
        memcpy(buf, s, n + 1);
    } else {
        size_t k = cap > 4 ? cap - 4 : 0;
        while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
        memcpy(buf, s, k);
        memcpy(buf + k, "...", 4);
    }
    free(s);
}

static void fmt_key(const char *key, char *buf, size_t cap)
{
    json_t *j = json_string(key);
    if (!j) { snprintf(buf, cap, "\"?\""); return; }
    fmt_value(j, buf, cap);
    json_decref(j);
}

static size_t utf8_length(const char *s, size_t n)
{
    size_t cp = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) cp++;
    return cp;
}

/* ------------------------------------------------------------------ URIs (RFC 3986) */

typedef struct {
    const char *s;
    size_t n;
    int present;
} part;

typedef struct {
    part scheme, authority, path, query, fragment;
} uri_parts;

static void uri_parse(const char *u, uri_parts *p)
{
    memset(p, 0, sizeof *p);
    const char *c = u;
    const char *q = u;
    if ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z')) {
        while ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '+' ||
               *q == '-' || *q == '.')
            q++;
        if (*q == ':') {
            p->scheme = (part){u, (size_t)(q - u), 1};
            c = q + 1;
        }
    }
    if (c[0] == '/' && c[1] == '/') {
        const char *a = c + 2;
        size_t n = strcspn(a, "/?#");
        p->authority = (part){a, n, 1};
        c = a + n;
    }
    size_t n = strcspn(c, "?#");
    p->path = (part){c, n, 1};
    c += n;
    if (*c == '?') {
        n = strcspn(c + 1, "#");
        p->query = (part){c + 1, n, 1};
        c += 1 + n;
    }
    if (*c == '#') p->fragment = (part){c + 1, strlen(c + 1), 1};
}

static void remove_dot_segments(const char *path, size_t len, sbuf *out)
{
    char *in = malloc(len + 1);
    if (!in) { out->oom = 1; return; }
    memcpy(in, path, len);
    in[len] = '\0';
    char *i = in;
    while (*i) {
        if (!strncmp(i, "../", 3)) i += 3;
        else if (!strncmp(i, "./", 2)) i += 2;
        else if (!strncmp(i, "/./", 3)) i += 2;
        else if (!strcmp(i, "/.")) { i += 1; *i = '/'; }
        else if (!strncmp(i, "/../", 4) || !strcmp(i, "/..")) {
            if (i[3] == '/') i += 3;
            else { i += 2; *i = '/'; }
            if (!out->oom) {
                while (out->n > 0 && out->p[out->n - 1] != '/') out->n--;
                if (out->n > 0) out->n--;
                if (out->p) out->p[out->n] = '\0';
            }
        } else if (!strcmp(i, ".") || !strcmp(i, "..")) break;
        else {
            size_t seg = strcspn(i + 1, "/") + 1;
            sb_putn(out, i, seg);
            i += seg;
        }
    }
    free(in);
}

/* Resolves `ref` against the absolute `base`; result is malloc'd. */
static char *uri_resolve(const char *base, const char *ref)
{
    uri_parts b, r;
    uri_parse(base, &b);
    uri_parse(ref, &r);
    sbuf out = {0};
    const part *scheme = &b.scheme, *auth, *query;
    sbuf path = {0};
    if (r.scheme.present) {
        scheme = &r.scheme;
        auth = &r.authority;
        remove_dot_segments(r.path.s, r.path.n, &path);
        query = &r.query;
    } else if (r.authority.present) {
        auth = &r.authority;
        remove_dot_segments(r.path.s, r.path.n, &path);
        query = &r.query;
    } else {
        auth = &b.authority;
        if (r.path.n == 0) {
            sb_putn(&path, b.path.s, b.path.n);
            query = r.query.present ? &r.query : &b.query;
        } else {
            if (r.path.s[0] == '/') {
                remove_dot_segments(r.path.s, r.path.n, &path);
            } else {
                sbuf merged = {0};
                if (b.authority.present && b.path.n == 0) {
                    sb_putn(&merged, "/", 1);
                } else {
                    size_t k = b.path.n;
                    while (k > 0 && b.path.s[k - 1] != '/') k--;
                    sb_putn(&merged, b.path.s, k);
                }
                sb_putn(&merged, r.path.s, r.path.n);
                if (merged.oom) path.oom = 1;
                else remove_dot_segments(merged.p ? merged.p : "", merged.n, &path);
                free(merged.p);
            }
            query = &r.query;
        }
    }
    if (scheme->present) { sb_putn(&out, scheme->s, scheme->n); sb_putn(&out, ":", 1); }
    if (auth->present) { sb_putn(&out, "//", 2); sb_putn(&out, auth->s, auth->n); }
    if (path.oom) out.oom = 1;
    else if (path.p) sb_putn(&out, path.p, path.n);
    free(path.p);
    if (query->present) { sb_putn(&out, "?", 1); sb_putn(&out, query->s, query->n); }
    if (r.fragment.present) { sb_putn(&out, "#", 1); sb_putn(&out, r.fragment.s, r.fragment.n); }
    return sb_take(&out);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes in place; returns 0 on a malformed escape or a decoded NUL. */
static int percent_decode(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r == '%') {
            int hi = hexval(r[1]), lo = hi >= 0 ? hexval(r[2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return 0;
            *w++ = (char)(hi * 16 + lo);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return 1;
}

/* ------------------------------------------------------------------ compiled form */

enum {
    T_NULL = 1,
    T_BOOLEAN = 2,
    T_OBJECT = 4,
    T_ARRAY = 8,
    T_NUMBER = 16,
    T_STRING = 32,
    T_INTEGER = 64,
};

static const char *const type_names[] = {"null", "boolean", "object", "array", "number", "string", "integer"};

typedef struct node node;

typedef struct {
    char *name;
    node *schema;
} named_node;

typedef struct {
    char *source;
    pcre2_code *re;
    node *schema;
} pattern_node;

typedef struct {
    char *name;
    char **required;
    size_t n;
} dep_required;

struct node {
    node *next_alloc;
    int boolean; /* -1: object schema; 0 / 1: the false / true schema */
    char *loc;   /* JSON Pointer of this schema in the document */

    unsigned types; /* bit set of T_*; 0 = no "type" */
    const json_t *enum_v, *const_v;
    const json_t *multiple_of, *maximum, *exclusive_maximum, *minimum, *exclusive_minimum;
    long long max_length, min_length, max_items, min_items, max_contains, min_contains, max_properties,
        min_properties; /* -1 = absent */
    pcre2_code *pattern;
    char *pattern_src;
    int unique_items;

    node *ref;
    char *ref_src;
    node *items, *contains, *additional_properties, *property_names, *not_s, *if_s, *then_s, *else_s;
    node **prefix_items, **all_of, **any_of, **one_of;
    size_t n_prefix_items, n_all_of, n_any_of, n_one_of;
    named_node *properties, *dependent_schemas;
    size_t n_properties, n_dependent_schemas;
    pattern_node *pattern_properties;
    size_t n_pattern_properties;
    char **required;
    size_t n_required;
    dep_required *dependent_required;
    size_t n_dependent_required;
};

struct eco_schema {
    json_t *doc;
    node *root;
    node *nodes; /* every node, for freeing */
    char *id;
    pcre2_match_context *mctx;
};

/* ------------------------------------------------------------------ compile context */

typedef struct {
    const json_t *key;
    char *base;
    char *loc;
    node *compiled;
} entry;

typedef struct {
    char *uri;
    const json_t *root;
} resource;

typedef struct {
    char *uri; /* base "#" name */
    const json_t *target;
} anchor_def;

typedef struct {
    node *from;
    const json_t *target;
    char *base, *loc;
} pending_ref;

typedef struct {
    eco_schema *s;
    unsigned flags;
    entry *tab;
    size_t tab_cap, tab_n;
    resource *res;
    size_t n_res, cap_res;
    anchor_def *anc;
    size_t n_anc, cap_anc;
    pending_ref *pend;
    size_t n_pend, cap_pend;
    size_t n_nodes;
} cctx;

static size_t ptr_hash(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static entry *tab_find(cctx *c, const json_t *key)
{
    if (!c->tab_cap) return NULL;
    size_t m = c->tab_cap - 1;
    for (size_t i = ptr_hash(key) & m;; i = (i + 1) & m) {
        if (!c->tab[i].key) return NULL;
        if (c->tab[i].key == key) return &c->tab[i];
    }
}

static eco_err tab_insert(cctx *c, const json_t *key, char *base, char *loc)
{
    if ((c->tab_n + 1) * 2 > c->tab_cap) {
        size_t ncap = c->tab_cap ? c->tab_cap * 2 : 256;
        entry *nt = calloc(ncap, sizeof *nt);
        if (!nt) {
            free(base);
            free(loc);
            return eco_fail(ECO_ENOMEM, "schema: out of memory");
        }
        for (size_t i = 0; i < c->tab_cap; i++) {
            if (!c->tab[i].key) continue;
            size_t j = ptr_hash(c->tab[i].key) & (ncap - 1);
            while (nt[j].key) j = (j + 1) & (ncap - 1);
            nt[j] = c->tab[i];
        }
        free(c->tab);
        c->tab = nt;
        c->tab_cap = ncap;
    }
    size_t m = c->tab_cap - 1;
    size_t i = ptr_hash(key) & m;
    while (c->tab[i].key && c->tab[i].key != key) i = (i + 1) & m;
    if (c->tab[i].key) { /* the same value reached twice (shared json_t): first location wins */
        free(base);
        free(loc);
        return ECO_OK;
    }
    c->tab[i] = (entry){key, base, loc, NULL};
    c->tab_n++;
    return ECO_OK;
}

#define GROW(arr, n, cap)                                                                                   \
    do {                                                                                                    \
        if ((n) == (cap)) {                                                                                 \
            size_t ncap_ = (cap) ? (cap) * 2 : 8;                                                           \
            void *np_ = realloc((arr), ncap_ * sizeof *(arr));                                              \
            if (!np_) return eco_fail(ECO_ENOMEM, "schema: out of memory");                                 \
            (arr) = np_;                                                                                    \
            (cap) = ncap_;                                                                                  \
        }                                                                                                   \
    } while (0)

static const resource *find_resource(const cctx *c, const char *uri)
{
    for (size_t i = 0; i < c->n_res; i++)
        if (!strcmp(c->res[i].uri, uri)) return &c->res[i];
    return NULL;
}

static const anchor_def *find_anchor(const cctx *c, const char *uri)
{
    for (size_t i = 0; i < c->n_anc; i++)
        if (!strcmp(c->anc[i].uri, uri)) return &c->anc[i];
    return NULL;
}

static eco_err add_resource(cctx *c, char *uri, const json_t *root, const char *loc)
{
    const resource *old = find_resource(c, uri);
    if (old) {
        if (old->root == root) { free(uri); return ECO_OK; }
        eco_err rc = eco_fail(ECO_EINVAL, "schema %s: duplicate $id '%s'", loc, uri);
        free(uri);
        return rc;
    }
    GROW(c->res, c->n_res, c->cap_res);
    c->res[c->n_res++] = (resource){uri, root};
    return ECO_OK;
}

static int valid_anchor_name(const char *a)
{
    if (!((*a >= 'A' && *a <= 'Z') || (*a >= 'a' && *a <= 'z') || *a == '_')) return 0;
    for (a++; *a; a++)
        if (!((*a >= 'A' && *a <= 'Z') || (*a >= 'a' && *a <= 'z') || (*a >= '0' && *a <= '9') || *a == '-' ||
              *a == '_' || *a == '.'))
            return 0;
    return 1;
}

static eco_err add_anchor(cctx *c, const char *base, const char *name, const json_t *target, const char *loc)
{
    if (!valid_anchor_name(name))
        return eco_fail(ECO_EINVAL, "schema %s: invalid anchor name '%s'", loc, name);
    char *uri = str_printf("%s#%s", base, name);
    if (!uri) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    const anchor_def *old = find_anchor(c, uri);
    if (old) {
        eco_err rc = old->target == target ? ECO_OK : eco_fail(ECO_EINVAL, "schema %s: duplicate anchor '%s'", loc, uri);
        free(uri);
        return rc;
    }
    GROW(c->anc, c->n_anc, c->cap_anc);
    c->anc[c->n_anc++] = (anchor_def){uri, target};
    return ECO_OK;
}

/* Keywords whose value is one subschema / an array of subschemas / a map of names to subschemas. */
static const char *const kw_single[] = {"additionalProperties", "propertyNames", "items", "contains", "if", "then",
                                        "else", "not", NULL};
static const char *const kw_array[] = {"allOf", "anyOf", "oneOf", "prefixItems", NULL};
static const char *const kw_map[] = {"$defs", "properties", "patternProperties", "dependentSchemas", NULL};

static int in_list(const char *const *list, const char *k)
{
    for (; *list; list++)
        if (!strcmp(*list, k)) return 1;
    return 0;
}

/* Base URI of a schema: its own $id resolved against the parent's base, fragment stripped. */
static eco_err own_base(const json_t *schema, const char *parent_base, const char *loc, char **out)
{
    json_t *id = json_object_get(schema, "$id");
    if (!id) { *out = strdup(parent_base); return *out ? ECO_OK : eco_fail(ECO_ENOMEM, "schema: out of memory"); }
    if (!json_is_string(id)) return eco_fail(ECO_EINVAL, "schema %s/$id: must be a string", loc);
    char *abs = uri_resolve(parent_base, json_string_value(id));
    if (!abs) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    char *hash = strchr(abs, '#');
    if (hash) {
        if (hash[1]) {
            eco_err rc = eco_fail(ECO_EINVAL, "schema %s/$id: '%s' must not have a fragment (use $anchor)", loc,
                                  json_string_value(id));
            free(abs);
            return rc;
        }
        *hash = '\0';
    }
    *out = abs;
    return ECO_OK;
}

static eco_err scan(cctx *c, const json_t *schema, const char *parent_base, const char *loc, int depth)
{
    if (depth > MAX_SCHEMA_NESTING)
        return eco_fail(ECO_ETOOBIG, "schema %s: nested deeper than %d levels", loc, MAX_SCHEMA_NESTING);
    if (!json_is_object(schema)) return ECO_OK; /* booleans need no registration; others fail in compile */
    char *base;
    eco_err rc = own_base(schema, parent_base, loc, &base);
    if (rc) return rc;
    if (json_object_get(schema, "$id") || depth == 0) {
        char *uri = strdup(base);
        if (!uri) { free(base); return eco_fail(ECO_ENOMEM, "schema: out of memory"); }
        if ((rc = add_resource(c, uri, schema, loc))) { free(base); return rc; }
    }
    static const char *const anchor_kws[] = {"$anchor", "$dynamicAnchor"};
    for (size_t i = 0; i < 2; i++) {
        json_t *a = json_object_get(schema, anchor_kws[i]);
        if (!a) continue;
        if (!json_is_string(a)) { free(base); return eco_fail(ECO_EINVAL, "schema %s/%s: must be a string", loc, anchor_kws[i]); }
        if ((rc = add_anchor(c, base, json_string_value(a), schema, loc))) { free(base); return rc; }
    }
    char *myloc = strdup(loc);
    char *mybase = strdup(base);
    if (!myloc || !mybase) { free(myloc); free(mybase); free(base); return eco_fail(ECO_ENOMEM, "schema: out of memory"); }
    if ((rc = tab_insert(c, schema, mybase, myloc))) { free(base); return rc; }

    const char *key;
    json_t *val;
    json_object_foreach((json_t *)schema, key, val) {
        char *kloc = ptr_join(loc, key);
        if (!kloc) { rc = eco_fail(ECO_ENOMEM, "schema: out of memory"); break; }
        if (in_list(kw_single, key)) {
            rc = scan(c, val, base, kloc, depth + 1);
        } else if (in_list(kw_array, key) && json_is_array(val)) {
            size_t i;
            json_t *el;
            json_array_foreach(val, i, el) {
                char *eloc = ptr_join_index(kloc, i);
                rc = eloc ? scan(c, el, base, eloc, depth + 1) : eco_fail(ECO_ENOMEM, "schema: out of memory");
                free(eloc);
                if (rc) break;
            }
        } else if (in_list(kw_map, key) && json_is_object(val)) {
            const char *k2;
            json_t *v2;
            json_object_foreach(val, k2, v2) {
                char *eloc = ptr_join(kloc, k2);
                rc = eloc ? scan(c, v2, base, eloc, depth + 1) : eco_fail(ECO_ENOMEM, "schema: out of memory");
                free(eloc);
                if (rc) break;
            }
        }
        free(kloc);
        if (rc) break;
    }
    free(base);
    return rc;
}

/* ------------------------------------------------------------------ keyword compilation */

static node *new_node(cctx *c, int boolean, const char *loc)
{
    if (c->n_nodes >= MAX_NODES) return NULL;
    node *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->loc = strdup(loc);
    if (!n->loc) { free(n); return NULL; }
    n->boolean = boolean;
    n->max_length = n->min_length = n->max_items = n->min_items = -1;
    n->max_contains = n->min_contains = n->max_properties = n->min_properties = -1;
    n->next_alloc = c->s->nodes;
    c->s->nodes = n;
    c->n_nodes++;
    return n;
}

static eco_err compile_node(cctx *c, const json_t *schema, const char *parent_base, const char *loc, int depth,
                            node **out);

static eco_err nonneg_int(const json_t *v, const char *loc, const char *kw, long long *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) { *out = json_integer_value(v); return ECO_OK; }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d >= 0 && d == floor(d) && d < 9.2e18) { *out = (long long)d; return ECO_OK; }
    }
    return eco_fail(ECO_EINVAL, "schema %s/%s: must be a non-negative integer", loc, kw);
}

/* ECMA-262 (u mode) spells Unicode general categories by long name (\p{Letter}); PCRE2 10.42 knows only
 * the short ones. Script names are the same in both, and "Script=" / "sc=" prefixes are dropped. */
static const char *const gc_names[][2] = {
    {"Letter", "L"}, {"Cased_Letter", "L&"}, {"LC", "L&"}, {"Uppercase_Letter", "Lu"}, {"Lowercase_Letter", "Ll"},
    {"Titlecase_Letter", "Lt"}, {"Modifier_Letter", "Lm"}, {"Other_Letter", "Lo"}, {"Mark", "M"},
    {"Combining_Mark", "M"}, {"Nonspacing_Mark", "Mn"}, {"Spacing_Mark", "Mc"}, {"Enclosing_Mark", "Me"},
    {"Number", "N"}, {"Decimal_Number", "Nd"}, {"digit", "Nd"}, {"Letter_Number", "Nl"}, {"Other_Number", "No"},
    {"Punctuation", "P"}, {"punct", "P"}, {"Connector_Punctuation", "Pc"}, {"Dash_Punctuation", "Pd"},
    {"Open_Punctuation", "Ps"}, {"Close_Punctuation", "Pe"}, {"Initial_Punctuation", "Pi"},
    {"Final_Punctuation", "Pf"}, {"Other_Punctuation", "Po"}, {"Symbol", "S"}, {"Math_Symbol", "Sm"},
    {"Currency_Symbol", "Sc"}, {"Modifier_Symbol", "Sk"}, {"Other_Symbol", "So"}, {"Separator", "Z"},
    {"Space_Separator", "Zs"}, {"Line_Separator", "Zl"}, {"Paragraph_Separator", "Zp"}, {"Other", "C"},
    {"Control", "Cc"}, {"cntrl", "Cc"}, {"Format", "Cf"}, {"Surrogate", "Cs"}, {"Private_Use", "Co"},
    {"Unassigned", "Cn"}};

static char *ecma_to_pcre(const char *src)
{
    sbuf b = {0};
    for (const char *p = src; *p; p++) {
        if (*p != '\\') { sb_putn(&b, p, 1); continue; }
        if (!p[1]) { sb_putn(&b, p, 1); break; }
        if ((p[1] == 'p' || p[1] == 'P') && p[2] == '{') {
            const char *name = p + 3, *end = strchr(name, '}');
            if (end) {
                size_t n = (size_t)(end - name);
                const char *eq = memchr(name, '=', n);
                if (eq) { n -= (size_t)(eq + 1 - name); name = eq + 1; }
                const char *mapped = NULL;
                for (size_t i = 0; i < sizeof gc_names / sizeof gc_names[0] && !mapped; i++)
                    if (strlen(gc_names[i][0]) == n && !memcmp(gc_names[i][0], name, n)) mapped = gc_names[i][1];
                sb_putn(&b, p, 3);
                if (mapped) sb_puts(&b, mapped);
                else sb_putn(&b, name, n);
                sb_putn(&b, "}", 1);
                p = end;
                continue;
            }
        }
        sb_putn(&b, p, 2);
        p++;
    }
    return sb_take(&b);
}

static eco_err compile_regex(const char *ecma, const char *loc, const char *kw, pcre2_code **out)
{
    int errcode;
    PCRE2_SIZE erroff;
    char *src = ecma_to_pcre(ecma);
    if (!src) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    /* UTF + ECMAScript-style \u escapes; '$' only at the very end, as in ECMA-262 without the m flag. */
    *out = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY,
                         &errcode, &erroff, NULL);
    free(src);
    if (!*out) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(errcode, msg, sizeof msg);
        return eco_fail(ECO_EINVAL, "schema %s/%s: bad regular expression at offset %zu: %s", loc, kw,
                        (size_t)erroff, (const char *)msg);
    }
    return ECO_OK;
}

static eco_err sub(cctx *c, const json_t *v, const char *base, const char *loc, const char *kw, int depth,
                   node **out)
{
    char *l = ptr_join(loc, kw);
    if (!l) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    eco_err rc = compile_node(c, v, base, l, depth + 1, out);
    free(l);
    return rc;
}

static eco_err sub_array(cctx *c, const json_t *v, const char *base, const char *loc, const char *kw, int depth,
                         node ***out, size_t *n_out)
{
    size_t n = json_array_size(v);
    if (!json_is_array(v) || n == 0) return eco_fail(ECO_EINVAL, "schema %s/%s: must be a non-empty array of schemas", loc, kw);
    *out = calloc(n, sizeof **out);
    if (!*out) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    *n_out = n;
    char *kloc = ptr_join(loc, kw);
    if (!kloc) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    eco_err rc = ECO_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        char *eloc = ptr_join_index(kloc, i);
        rc = eloc ? compile_node(c, json_array_get(v, i), base, eloc, depth + 1, &(*out)[i])
                  : eco_fail(ECO_ENOMEM, "schema: out of memory");
        free(eloc);
    }
    free(kloc);
    return rc;
}

static eco_err sub_map(cctx *c, const json_t *v, const char *base, const char *loc, const char *kw, int depth,
                       named_node **out, size_t *n_out)
{
    if (!json_is_object(v)) return eco_fail(ECO_EINVAL, "schema %s/%s: must be an object of schemas", loc, kw);
    size_t n = json_object_size(v);
    *out = calloc(n ? n : 1, sizeof **out);
    if (!*out) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    char *kloc = ptr_join(loc, kw);
    if (!kloc) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    eco_err rc = ECO_OK;
    const char *k;
    json_t *el;
    size_t i = 0;
    json_object_foreach((json_t *)v, k, el) {
        (*out)[i].name = strdup(k);
        *n_out = ++i;
        char *eloc = ptr_join(kloc, k);
        if (!(*out)[i - 1].name || !eloc) rc = eco_fail(ECO_ENOMEM, "schema: out of memory");
        else rc = compile_node(c, el, base, eloc, depth + 1, &(*out)[i - 1].schema);
        free(eloc);
        if (rc) break;
    }
    free(kloc);
    return rc;
}

static eco_err string_array(const json_t *v, const char *loc, const char *kw, char ***out, size_t *n_out)
{
    if (!json_is_array(v)) return eco_fail(ECO_EINVAL, "schema %s/%s: must be an array of strings", loc, kw);
    size_t n = json_array_size(v);
    *out = calloc(n ? n : 1, sizeof **out);
    if (!*out) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(v, i);
        if (!json_is_string(s)) return eco_fail(ECO_EINVAL, "schema %s/%s/%zu: must be a string", loc, kw, i);
        for (size_t j = 0; j < i; j++)
            if (!strcmp((*out)[j], json_string_value(s)))
                return eco_fail(ECO_EINVAL, "schema %s/%s: '%s' is listed twice", loc, kw, json_string_value(s));
        (*out)[i] = strdup(json_string_value(s));
        *n_out = i + 1;
        if (!(*out)[i]) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    }
    return ECO_OK;
}

static unsigned type_bit(const char *name)
{
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (!strcmp(name, type_names[i])) return 1u << i;
    return 0;
}

/* Keywords that only annotate (or identify) and never change a verdict. */
static const char *const kw_annotations[] = {
    "$schema", "$id", "$anchor", "$dynamicAnchor", "$comment", "$vocabulary", "$defs", "title", "description",
    "default", "examples", "deprecated", "readOnly", "writeOnly", "format", "contentEncoding", "contentMediaType",
    "contentSchema", NULL};

/* Keywords that would change verdicts and are not implemented: refuse rather than ignore. */
static const char *const kw_unsupported[] = {"$dynamicRef", "unevaluatedProperties", "unevaluatedItems",
                                             "$recursiveRef", "$recursiveAnchor", NULL};

static const char *const kw_supported[] = {
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "contains", "items", "prefixItems", "maxProperties", "minProperties", "required", "properties",
    "patternProperties", "additionalProperties", "propertyNames", "dependentRequired", "dependentSchemas", "allOf",
    "anyOf", "oneOf", "not", "if", "then", "else", "$ref", "$defs", "$id", "$anchor", NULL};

const char *const *eco_schema_supported_keywords(void) { return kw_supported; }

static int schema_uri_ok(const char *u)
{
    return !strcmp(u, "https://json-schema.org/draft/2020-12/schema") ||
           !strcmp(u, "https://json-schema.org/draft/2020-12/schema#");
}

static eco_err compile_ref(cctx *c, node *n, const char *base, const char *loc, const json_t *v)
{
    if (!json_is_string(v)) return eco_fail(ECO_EINVAL, "schema %s/$ref: must be a string", loc);
    const char *ref = json_string_value(v);
    n->ref_src = strdup(ref);
    char *abs = uri_resolve(base, ref);
    if (!abs || !n->ref_src) { free(abs); return eco_fail(ECO_ENOMEM, "schema: out of memory"); }
    char *frag = strchr(abs, '#');
    if (frag) *frag++ = '\0';
    eco_err rc = ECO_OK;
    const json_t *target = NULL;
    const resource *r = find_resource(c, abs);
    if (!r) {
        rc = eco_fail(ECO_EUNSUPPORTED,
                      "schema %s/$ref: '%s' points outside this schema document (%s); remote references are not "
                      "supported",
                      loc, ref, abs);
    } else if (!frag || !*frag) {
        target = r->root;
    } else if (frag[0] == '/' || frag[0] == '%') {
        if (!percent_decode(frag)) {
            rc = eco_fail(ECO_EINVAL, "schema %s/$ref: bad percent-encoding in '%s'", loc, ref);
        } else if (frag[0] != '/') {
            rc = eco_fail(ECO_EINVAL, "schema %s/$ref: '%s' is not a JSON Pointer", loc, ref);
        } else {
            /* Walk the pointer from the resource root, unescaping ~1 and ~0 in each token. */
            const json_t *cur = r->root;
            char *p = frag + 1;
            for (;;) {
                char *slash = strchr(p, '/');
                if (slash) *slash = '\0';
                char *w = p;
                for (char *q = p; *q; q++) {
                    if (*q == '~' && q[1] == '0') { *w++ = '~'; q++; }
                    else if (*q == '~' && q[1] == '1') { *w++ = '/'; q++; }
                    else *w++ = *q;
                }
                *w = '\0';
                if (json_is_object(cur)) {
                    cur = json_object_get(cur, p);
                } else if (json_is_array(cur)) {
                    char *end;
                    unsigned long long idx = strtoull(p, &end, 10);
                    int canonical = *p && !*end && (p[0] != '0' || !p[1]) && p[0] != '-' && p[0] != '+';
                    cur = canonical ? json_array_get(cur, (size_t)idx) : NULL;
                } else {
                    cur = NULL;
                }
                if (!cur || !slash) break;
                p = slash + 1;
            }
            if (!cur) rc = eco_fail(ECO_EINVAL, "schema %s/$ref: '%s' does not resolve to a schema", loc, ref);
            target = cur;
        }
    } else {
        percent_decode(frag);
        char *key = str_printf("%s#%s", abs, frag);
        const anchor_def *a = key ? find_anchor(c, key) : NULL;
        if (!key) rc = eco_fail(ECO_ENOMEM, "schema: out of memory");
        else if (!a) rc = eco_fail(ECO_EINVAL, "schema %s/$ref: no $anchor '%s' in %s", loc, frag, abs);
        else target = a->target;
        free(key);
    }
    if (!rc) {
        /* Resolved after the tree is compiled (work list), so ref chains and cycles need no recursion. */
        if (c->n_pend == c->cap_pend) {
            size_t ncap = c->cap_pend ? c->cap_pend * 2 : 16;
            pending_ref *np = realloc(c->pend, ncap * sizeof *np);
            if (!np) { free(abs); return eco_fail(ECO_ENOMEM, "schema: out of memory"); }
            c->pend = np;
            c->cap_pend = ncap;
        }
        char *tloc = str_printf("%s/$ref", loc);
        char *tbase = strdup(abs);
        if (!tloc || !tbase) { free(tloc); free(tbase); free(abs); return eco_fail(ECO_ENOMEM, "schema: out of memory"); }
        c->pend[c->n_pend++] = (pending_ref){n, target, tbase, tloc};
    }
    free(abs);
    return rc;
}

static eco_err compile_keyword(cctx *c, node *n, const char *base, const char *loc, int depth, const char *k,
                               const json_t *v)
{
    long long *iv = NULL;
    if (!strcmp(k, "type")) {
        if (json_is_string(v)) {
            n->types = type_bit(json_string_value(v));
            if (!n->types) return eco_fail(ECO_EINVAL, "schema %s/type: unknown type '%s'", loc, json_string_value(v));
            return ECO_OK;
        }
        if (!json_is_array(v) || json_array_size(v) == 0)
            return eco_fail(ECO_EINVAL, "schema %s/type: must be a type name or a non-empty array of them", loc);
        size_t i;
        json_t *t;
        json_array_foreach(v, i, t) {
            unsigned bit = json_is_string(t) ? type_bit(json_string_value(t)) : 0;
            if (!bit) return eco_fail(ECO_EINVAL, "schema %s/type/%zu: unknown type", loc, i);
            if (n->types & bit) return eco_fail(ECO_EINVAL, "schema %s/type: '%s' is listed twice", loc, json_string_value(t));
            n->types |= bit;
        }
        return ECO_OK;
    }
    if (!strcmp(k, "enum")) {
        if (!json_is_array(v)) return eco_fail(ECO_EINVAL, "schema %s/enum: must be an array", loc);
        n->enum_v = v;
        return ECO_OK;
    }
    if (!strcmp(k, "const")) { n->const_v = v; return ECO_OK; }
    if (!strcmp(k, "multipleOf") || !strcmp(k, "maximum") || !strcmp(k, "exclusiveMaximum") || !strcmp(k, "minimum") ||
        !strcmp(k, "exclusiveMinimum")) {
        if (!json_is_number(v)) return eco_fail(ECO_EINVAL, "schema %s/%s: must be a number", loc, k);
        if (!strcmp(k, "multipleOf")) {
            if (!(json_number_value(v) > 0)) return eco_fail(ECO_EINVAL, "schema %s/multipleOf: must be > 0", loc);
            n->multiple_of = v;
        } else if (!strcmp(k, "maximum")) n->maximum = v;
        else if (!strcmp(k, "exclusiveMaximum")) n->exclusive_maximum = v;
        else if (!strcmp(k, "minimum")) n->minimum = v;
        else n->exclusive_minimum = v;
        return ECO_OK;
    }
    if (!strcmp(k, "maxLength")) iv = &n->max_length;
    else if (!strcmp(k, "minLength")) iv = &n->min_length;
    else if (!strcmp(k, "maxItems")) iv = &n->max_items;
    else if (!strcmp(k, "minItems")) iv = &n->min_items;
    else if (!strcmp(k, "maxContains")) iv = &n->max_contains;
    else if (!strcmp(k, "minContains")) iv = &n->min_contains;
    else if (!strcmp(k, "maxProperties")) iv = &n->max_properties;
    else if (!strcmp(k, "minProperties")) iv = &n->min_properties;
    if (iv) return nonneg_int(v, loc, k, iv);
    if (!strcmp(k, "pattern")) {
        if (!json_is_string(v)) return eco_fail(ECO_EINVAL, "schema %s/pattern: must be a string", loc);
        n->pattern_src = strdup(json_string_value(v));
        if (!n->pattern_src) return eco_fail(ECO_ENOMEM, "schema: out of memory");
        return compile_regex(n->pattern_src, loc, k, &n->pattern);
    }
    if (!strcmp(k, "uniqueItems")) {
        if (!json_is_boolean(v)) return eco_fail(ECO_EINVAL, "schema %s/uniqueItems: must be true or false", loc);
        n->unique_items = json_is_true(v);
        return ECO_OK;
    }
    if (!strcmp(k, "required")) return string_array(v, loc, k, &n->required, &n->n_required);
    if (!strcmp(k, "dependentRequired")) {
        if (!json_is_object(v)) return eco_fail(ECO_EINVAL, "schema %s/dependentRequired: must be an object", loc);
        n->dependent_required = calloc(json_object_size(v) + 1, sizeof *n->dependent_required);
        if (!n->dependent_required) return eco_fail(ECO_ENOMEM, "schema: out of memory");
        char *kloc = ptr_join(loc, k);
        if (!kloc) return eco_fail(ECO_ENOMEM, "schema: out of memory");
        const char *name;
        json_t *arr;
        eco_err rc = ECO_OK;
        json_object_foreach((json_t *)v, name, arr) {
            dep_required *d = &n->dependent_required[n->n_dependent_required++];
            d->name = strdup(name);
            if (!d->name) { rc = eco_fail(ECO_ENOMEM, "schema: out of memory"); break; }
            if ((rc = string_array(arr, kloc, name, &d->required, &d->n))) break;
        }
        free(kloc);
        return rc;
    }
    if (!strcmp(k, "$ref")) return compile_ref(c, n, base, loc, v);
    if (!strcmp(k, "items")) {
        if (json_is_array(v))
            return eco_fail(ECO_EINVAL, "schema %s/items: must be a schema; the array form is prefixItems in 2020-12", loc);
        return sub(c, v, base, loc, k, depth, &n->items);
    }
    if (!strcmp(k, "contains")) return sub(c, v, base, loc, k, depth, &n->contains);
    if (!strcmp(k, "additionalProperties")) return sub(c, v, base, loc, k, depth, &n->additional_properties);
    if (!strcmp(k, "propertyNames")) return sub(c, v, base, loc, k, depth, &n->property_names);
    if (!strcmp(k, "not")) return sub(c, v, base, loc, k, depth, &n->not_s);
    if (!strcmp(k, "if")) return sub(c, v, base, loc, k, depth, &n->if_s);
    if (!strcmp(k, "then")) return sub(c, v, base, loc, k, depth, &n->then_s);
    if (!strcmp(k, "else")) return sub(c, v, base, loc, k, depth, &n->else_s);
    if (!strcmp(k, "prefixItems")) return sub_array(c, v, base, loc, k, depth, &n->prefix_items, &n->n_prefix_items);
    if (!strcmp(k, "allOf")) return sub_array(c, v, base, loc, k, depth, &n->all_of, &n->n_all_of);
    if (!strcmp(k, "anyOf")) return sub_array(c, v, base, loc, k, depth, &n->any_of, &n->n_any_of);
    if (!strcmp(k, "oneOf")) return sub_array(c, v, base, loc, k, depth, &n->one_of, &n->n_one_of);
    if (!strcmp(k, "properties")) return sub_map(c, v, base, loc, k, depth, &n->properties, &n->n_properties);
    if (!strcmp(k, "dependentSchemas"))
        return sub_map(c, v, base, loc, k, depth, &n->dependent_schemas, &n->n_dependent_schemas);
    if (!strcmp(k, "patternProperties")) {
        if (!json_is_object(v)) return eco_fail(ECO_EINVAL, "schema %s/patternProperties: must be an object", loc);
        n->pattern_properties = calloc(json_object_size(v) + 1, sizeof *n->pattern_properties);
        if (!n->pattern_properties) return eco_fail(ECO_ENOMEM, "schema: out of memory");
        char *kloc = ptr_join(loc, k);
        if (!kloc) return eco_fail(ECO_ENOMEM, "schema: out of memory");
        const char *src;
        json_t *el;
        eco_err rc = ECO_OK;
        json_object_foreach((json_t *)v, src, el) {
            pattern_node *p = &n->pattern_properties[n->n_pattern_properties++];
            p->source = strdup(src);
            char *eloc = ptr_join(kloc, src);
            if (!p->source || !eloc) rc = eco_fail(ECO_ENOMEM, "schema: out of memory");
            else if (!(rc = compile_regex(src, kloc, "", &p->re)))
                rc = compile_node(c, el, base, eloc, depth + 1, &p->schema);
            free(eloc);
            if (rc) break;
        }
        free(kloc);
        return rc;
    }
    if (!strcmp(k, "$defs")) {
        /* Compiled eagerly so a bad definition is reported even when nothing refers to it. */
        named_node *defs = NULL;
        size_t nd = 0;
        eco_err rc = sub_map(c, v, base, loc, k, depth, &defs, &nd);
        if (defs)
            for (size_t i = 0; i < nd; i++) free(defs[i].name);
        free(defs);
        return rc;
    }
    if (!strcmp(k, "$schema")) {
        if (!json_is_string(v)) return eco_fail(ECO_EINVAL, "schema %s/$schema: must be a string", loc);
        if (!schema_uri_ok(json_string_value(v)))
            return eco_fail(ECO_EUNSUPPORTED, "schema %s/$schema: dialect '%s' is not supported (only draft 2020-12)",
                            loc, json_string_value(v));
        return ECO_OK;
    }
    if (in_list(kw_unsupported, k))
        return eco_fail(ECO_EUNSUPPORTED, "schema %s/%s: keyword '%s' is not supported by this validator", loc, k, k);
    if (in_list(kw_annotations, k)) return ECO_OK;
    if (c->flags & ECO_SCHEMA_STRICT)
        return eco_fail(ECO_EINVAL, "schema %s: unknown keyword '%s' (strict mode)", loc, k);
    return ECO_OK; /* 2020-12: unknown keywords are annotations */
}

static eco_err compile_node(cctx *c, const json_t *schema, const char *parent_base, const char *loc, int depth,
                            node **out)
{
    if (depth > MAX_SCHEMA_NESTING)
        return eco_fail(ECO_ETOOBIG, "schema %s: nested deeper than %d levels", loc, MAX_SCHEMA_NESTING);
    if (json_is_boolean(schema)) {
        /* true/false are jansson singletons: never cached, each use gets its own location. */
        *out = new_node(c, json_is_true(schema), loc);
        return *out ? ECO_OK : eco_fail(ECO_ETOOBIG, "schema: more than %d subschemas or out of memory", MAX_NODES);
    }
    if (!json_is_object(schema))
        return eco_fail(ECO_EINVAL, "schema %s: must be an object or a boolean, got %s", *loc ? loc : "(root)",
                        eco_json_type_name(schema));
    entry *e = tab_find(c, schema);
    if (e && e->compiled) { *out = e->compiled; return ECO_OK; }
    char *base = NULL;
    eco_err rc;
    if (e) {
        base = strdup(e->base);
        loc = e->loc;
        if (!base) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    } else {
        /* Reached only through a $ref into a place the scan does not visit: cache it too, so a cycle
         * through it compiles once. */
        if ((rc = own_base(schema, parent_base, loc, &base))) return rc;
        char *b2 = strdup(base), *l2 = strdup(loc);
        if (!b2 || !l2 || (rc = tab_insert(c, schema, b2, l2))) {
            if (!b2 || !l2) { free(b2); free(l2); rc = eco_fail(ECO_ENOMEM, "schema: out of memory"); }
            free(base);
            return rc;
        }
        e = tab_find(c, schema);
    }
    node *n = new_node(c, -1, loc);
    if (!n) { free(base); return eco_fail(ECO_ETOOBIG, "schema: more than %d subschemas or out of memory", MAX_NODES); }
    e->compiled = n;
    *out = n;
    const char *k;
    json_t *v;
    rc = ECO_OK;
    json_object_foreach((json_t *)schema, k, v) {
        if ((rc = compile_keyword(c, n, base, n->loc, depth, k, v))) break;
    }
    free(base);
    return rc;
}

static void free_node(node *n)
{
    free(n->loc);
    if (n->pattern) pcre2_code_free(n->pattern);
    free(n->pattern_src);
    free(n->ref_src);
    free(n->prefix_items);
    free(n->all_of);
    free(n->any_of);
    free(n->one_of);
    for (size_t i = 0; n->properties && i < n->n_properties; i++) free(n->properties[i].name);
    free(n->properties);
    for (size_t i = 0; n->dependent_schemas && i < n->n_dependent_schemas; i++) free(n->dependent_schemas[i].name);
    free(n->dependent_schemas);
    for (size_t i = 0; n->pattern_properties && i < n->n_pattern_properties; i++) {
        free(n->pattern_properties[i].source);
        if (n->pattern_properties[i].re) pcre2_code_free(n->pattern_properties[i].re);
    }
    free(n->pattern_properties);
    for (size_t i = 0; n->required && i < n->n_required; i++) free(n->required[i]);
    free(n->required);
    for (size_t i = 0; n->dependent_required && i < n->n_dependent_required; i++) {
        dep_required *d = &n->dependent_required[i];
        free(d->name);
        for (size_t j = 0; d->required && j < d->n; j++) free(d->required[j]);
        free(d->required);
    }
    free(n->dependent_required);
    free(n);
}

void eco_schema_free(eco_schema *s)
{
    if (!s) return;
    for (node *n = s->nodes, *next; n; n = next) {
        next = n->next_alloc;
        free_node(n);
    }
    if (s->mctx) pcre2_match_context_free(s->mctx);
    json_decref(s->doc);
    free(s->id);
    free(s);
}

static void cctx_free(cctx *c)
{
    for (size_t i = 0; i < c->tab_cap; i++) {
        free(c->tab[i].base);
        free(c->tab[i].loc);
    }
    free(c->tab);
    for (size_t i = 0; i < c->n_res; i++) free(c->res[i].uri);
    free(c->res);
    for (size_t i = 0; i < c->n_anc; i++) free(c->anc[i].uri);
    free(c->anc);
    for (size_t i = 0; i < c->n_pend; i++) {
        free(c->pend[i].base);
        free(c->pend[i].loc);
    }
    free(c->pend);
}

eco_err eco_schema_compile_ex(const json_t *schema, unsigned flags, eco_schema **out)
{
    *out = NULL;
    if (!schema) return eco_fail(ECO_EINVAL, "schema: no document");
    eco_schema *s = calloc(1, sizeof *s);
    if (!s) return eco_fail(ECO_ENOMEM, "schema: out of memory");
    /* Our own copy: compiled nodes point into it, so later edits by the caller cannot break them. */
    s->doc = json_deep_copy(schema);
    s->mctx = pcre2_match_context_create(NULL);
    if (!s->doc || !s->mctx) { eco_schema_free(s); return eco_fail(ECO_ENOMEM, "schema: out of memory"); }
    /* Bound backtracking so a hostile pattern or instance cannot hang validation. */
    pcre2_set_match_limit(s->mctx, 1000000);
    pcre2_set_depth_limit(s->mctx, 10000);
    cctx c = {.s = s, .flags = flags};
    eco_err rc;
    json_t *id = json_is_object(s->doc) ? json_object_get(s->doc, "$id") : NULL;
    s->id = strdup(json_is_string(id) ? json_string_value(id) : "");
    if (!s->id) rc = eco_fail(ECO_ENOMEM, "schema: out of memory");
    else if (!(rc = scan(&c, s->doc, DEFAULT_BASE, "", 0)))
        rc = compile_node(&c, s->doc, DEFAULT_BASE, "", 0, &s->root);
    /* Work list: compiling a ref target may add more refs. */
    for (size_t i = 0; !rc && i < c.n_pend; i++) {
        pending_ref p = c.pend[i];
        node *target;
        if (!(rc = compile_node(&c, p.target, p.base, p.loc, 0, &target))) p.from->ref = target;
    }
    cctx_free(&c);
    if (rc) { eco_schema_free(s); return rc; }
    *out = s;
    return ECO_OK;
}

eco_err eco_schema_compile(const json_t *schema, eco_schema **out) { return eco_schema_compile_ex(schema, 0, out); }

eco_err eco_schema_compile_file(const char *path, unsigned flags, eco_schema **out)
{
    json_t *doc;
    *out = NULL;
    eco_err rc = eco_json_load_file(path, ECO_JSON_MAX_BYTES, &doc);
    if (rc) return rc;
    rc = eco_schema_compile_ex(doc, flags, out);
    json_decref(doc);
    if (rc) return eco_fail_context("%s: ", path);
    return ECO_OK;
}

const char *eco_schema_id(const eco_schema *s) { return s && s->id ? s->id : ""; }

/* ------------------------------------------------------------------ errors */

void eco_schema_errors_init(eco_schema_errors *errs) { memset(errs, 0, sizeof *errs); }

void eco_schema_errors_clear(eco_schema_errors *errs)
{
    for (size_t i = 0; i < errs->count; i++) {
        free(errs->items[i].instance_path);
        free(errs->items[i].schema_path);
        free(errs->items[i].message);
    }
    errs->count = 0;
    errs->dropped = 0;
}

void eco_schema_errors_free(eco_schema_errors *errs)
{
    eco_schema_errors_clear(errs);
    free(errs->items);
    errs->items = NULL;
    errs->cap = 0;
}

bool eco_schema_errors_add(eco_schema_errors *errs, const char *instance_path, const char *keyword, const char *fmt, ...)
{
    size_t max = errs->max ? errs->max : ECO_SCHEMA_MAX_ERRORS;
    if (errs->count >= max) { errs->dropped++; return true; }
    if (errs->count == errs->cap) {
        size_t ncap = errs->cap ? errs->cap * 2 : 8;
        eco_schema_error *ni = realloc(errs->items, ncap * sizeof *ni);
        if (!ni) return false;
        errs->items = ni;
        errs->cap = ncap;
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    eco_schema_error *it = &errs->items[errs->count];
    it->instance_path = strdup(instance_path);
    it->schema_path = strdup("");
    it->keyword = keyword;
    it->message = strdup(msg);
    if (!it->instance_path || !it->schema_path || !it->message) {
        free(it->instance_path);
        free(it->schema_path);
        free(it->message);
        return false;
    }
    errs->count++;
    return true;
}

/* ------------------------------------------------------------------ validation */

typedef struct {
    const eco_schema *s;
    eco_schema_errors *errs;
    int collect; /* 0 inside anyOf/oneOf/not/if/contains: only the verdict matters */
    sbuf path;   /* current instance location */
    int depth;
    int too_deep;
    int oom;
} vctx;

static void record(vctx *v, const node *n, const char *kw, char *msg)
{
    eco_schema_errors *e = v->errs;
    size_t max = e->max ? e->max : ECO_SCHEMA_MAX_ERRORS;
    if (e->count >= max) { e->dropped++; free(msg); return; }
    if (e->count == e->cap) {
        size_t ncap = e->cap ? e->cap * 2 : 8;
        eco_schema_error *ni = realloc(e->items, ncap * sizeof *ni);
        if (!ni) { v->oom = 1; free(msg); return; }
        e->items = ni;
        e->cap = ncap;
    }
    eco_schema_error *it = &e->items[e->count];
    it->instance_path = strdup(v->path.p ? v->path.p : "");
    it->schema_path = str_printf("%s/%s", n->loc, kw);
    it->keyword = kw;
    it->message = msg;
    if (!it->instance_path || !it->schema_path || !msg) {
        free(it->instance_path);
        free(it->schema_path);
        free(msg);
        v->oom = 1;
        return;
    }
    e->count++;
}

static void fail_at(vctx *v, const node *n, const char *kw, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void fail_at(vctx *v, const node *n, const char *kw, const char *fmt, ...)
{
    if (!v->collect || !v->errs) return;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *msg = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (msg) vsnprintf(msg, (size_t)len + 1, fmt, ap2);
    va_end(ap2);
    record(v, n, kw, msg);
}

static size_t path_push(vctx *v, const char *tok, size_t len)
{
    size_t old = v->path.n;
    sb_putn(&v->path, "/", 1);
    sb_put_token(&v->path, tok, len);
    return old;
}

static size_t path_push_index(vctx *v, size_t i)
{
    char num[32];
    int len = snprintf(num, sizeof num, "%zu", i);
    return path_push(v, num, (size_t)len);
}

static void path_pop(vctx *v, size_t old)
{
    if (v->path.oom) return;
    v->path.n = old;
    if (v->path.p) v->path.p[old] = '\0';
}

/* a <=> b for JSON numbers, exact for integer pairs and for integer/real mixes beyond 2^53. */
static int num_cmp(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return (x > y) - (x < y);
    }
    if (json_is_integer(a) || json_is_integer(b)) {
        int flip = json_is_integer(b);
        json_int_t i = json_integer_value(flip ? b : a);
        double d = json_real_value(flip ? a : b);
        int r;
        if (d >= 9223372036854775808.0) r = -1;
        else if (d < -9223372036854775808.0) r = 1;
        else {
            double fl = floor(d);
            json_int_t fi = (json_int_t)fl;
            if (i < fi) r = -1;
            else if (i > fi) r = 1;
            else r = d > fl ? -1 : 0;
        }
        return flip ? -r : r;
    }
    double x = json_real_value(a), y = json_real_value(b);
    return (x > y) - (x < y);
}

/* JSON equality as the spec defines it: numbers by value (1 == 1.0), objects regardless of key order. */
static int json_eq(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) return num_cmp(a, b) == 0;
    if (json_typeof(a) != json_typeof(b)) return 0;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b)) return 0;
        for (size_t i = 0; i < n; i++)
            if (!json_eq(json_array_get(a, i), json_array_get(b, i))) return 0;
        return 1;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b)) return 0;
        const char *k;
        size_t klen;
        json_t *va;
        json_object_keylen_foreach((json_t *)a, k, klen, va) {
            json_t *vb = json_object_getn(b, k, klen);
            if (!vb || !json_eq(va, vb)) return 0;
        }
        return 1;
    }
    default: return 1; /* true, false, null */
    }
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* Consistent with json_eq: equal values hash equally (numbers via their double value). */
static uint64_t json_hash(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_NULL: return 1;
    case JSON_TRUE: return 2;
    case JSON_FALSE: return 3;
    case JSON_INTEGER:
    case JSON_REAL: {
        double d = json_number_value(j);
        if (d == 0) d = 0; /* -0.0 == 0 */
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return mix64(bits ^ 4);
    }
    case JSON_STRING: return mix64(hash_bytes(json_string_value(j), json_string_length(j)) ^ 5);
    case JSON_ARRAY: {
        uint64_t h = 6;
        for (size_t i = 0; i < json_array_size(j); i++) h = mix64(h * 31 + json_hash(json_array_get(j, i)));
        return h;
    }
    case JSON_OBJECT: {
        uint64_t h = 7;
        const char *k;
        size_t klen;
        json_t *v;
        json_object_keylen_foreach((json_t *)j, k, klen, v) h += mix64(hash_bytes(k, klen) * 131 + json_hash(v));
        return mix64(h);
    }
    }
    return 0;
}

typedef struct {
    uint64_t h;
    size_t i;
} hashed_item;

static int cmp_hashed(const void *a, const void *b)
{
    const hashed_item *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Finds the first pair of equal items (by the lower second index); returns 0 when all are unique. */
static int find_duplicate(const json_t *arr, size_t *first, size_t *second, int *oom)
{
    size_t n = json_array_size(arr);
    if (n < 2) return 0;
    hashed_item *hs = malloc(n * sizeof *hs);
    if (!hs) { *oom = 1; return 0; }
    for (size_t i = 0; i < n; i++) hs[i] = (hashed_item){json_hash(json_array_get(arr, i)), i};
    qsort(hs, n, sizeof *hs, cmp_hashed);
    int found = 0;
    for (size_t a = 0; a < n; a++) {
        for (size_t b = a + 1; b < n && hs[b].h == hs[a].h; b++) {
            if (json_eq(json_array_get(arr, hs[a].i), json_array_get(arr, hs[b].i))) {
                size_t lo = hs[a].i < hs[b].i ? hs[a].i : hs[b].i, hi = hs[a].i ^ hs[b].i ^ lo;
                if (!found || hi < *second || (hi == *second && lo < *first)) { *first = lo; *second = hi; }
                found = 1;
            }
        }
    }
    free(hs);
    return found;
}

static int is_multiple(const json_t *x, const json_t *m)
{
    if (json_is_integer(x) && json_is_integer(m)) return json_integer_value(x) % json_integer_value(m) == 0;
    double q = json_number_value(x) / json_number_value(m);
    if (!isfinite(q)) return 0;
    /* Decimal multiples are rarely exact in binary (0.0075 / 0.0001 = 74.99999999999999). */
    double tol = fmax(1e-9, fabs(q) * 4 * DBL_EPSILON);
    return fabs(q - round(q)) <= tol;
}

static unsigned instance_types(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_NULL: return T_NULL;
    case JSON_TRUE:
    case JSON_FALSE: return T_BOOLEAN;
    case JSON_OBJECT: return T_OBJECT;
    case JSON_ARRAY: return T_ARRAY;
    case JSON_STRING: return T_STRING;
    case JSON_INTEGER: return T_NUMBER | T_INTEGER;
    case JSON_REAL: {
        double d = json_real_value(j);
        return T_NUMBER | (isfinite(d) && floor(d) == d ? T_INTEGER : 0);
    }
    }
    return 0;
}

static const char *instance_type_name(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_NULL: return "null";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    }
    return "?";
}

static void types_text(unsigned types, char *buf, size_t cap)
{
    buf[0] = '\0';
    size_t n = 0, count = 0, total = 0;
    for (unsigned t = types; t; t &= t - 1) total++;
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++) {
        if (!(types & (1u << i))) continue;
        count++;
        const char *sep = count == 1 ? "" : count == total ? " or " : ", ";
        int w = snprintf(buf + n, cap - n, "%s%s", sep, type_names[i]);
        if (w < 0 || (size_t)w >= cap - n) break;
        n += (size_t)w;
    }
}

/* 1 match, 0 no match, -1 matching failed (limits) */
static int regex_match(const vctx *v, const pcre2_code *re, const char *s, size_t len)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) return -1;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, md, v->s->mctx);
    pcre2_match_data_free(md);
    if (rc >= 0) return 1;
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    return -1;
}

static int validate(vctx *v, const node *n, const json_t *inst);

/* Evaluates a subschema for its verdict only. */
static int check(vctx *v, const node *n, const json_t *inst)
{
    int saved = v->collect;
    v->collect = 0;
    int ok = validate(v, n, inst);
    v->collect = saved;
    return ok;
}

#define FAIL()                                                                                              \
    do {                                                                                                    \
        ok = 0;                                                                                             \
        if (!v->collect || v->too_deep) return 0;                                                           \
    } while (0)

static int validate_number(vctx *v, const node *n, const json_t *inst)
{
    int ok = 1;
    char got[64], lim[64];
    if (!json_is_number(inst)) return 1;
    fmt_value(inst, got, sizeof got);
    if (n->multiple_of && !is_multiple(inst, n->multiple_of)) {
        fmt_value(n->multiple_of, lim, sizeof lim);
        fail_at(v, n, "multipleOf", "must be a multiple of %s, got %s", lim, got);
        FAIL();
    }
    if (n->maximum && num_cmp(inst, n->maximum) > 0) {
        fmt_value(n->maximum, lim, sizeof lim);
        fail_at(v, n, "maximum", "must be <= %s, got %s", lim, got);
        FAIL();
    }
    if (n->exclusive_maximum && num_cmp(inst, n->exclusive_maximum) >= 0) {
        fmt_value(n->exclusive_maximum, lim, sizeof lim);
        fail_at(v, n, "exclusiveMaximum", "must be < %s, got %s", lim, got);
        FAIL();
    }
    if (n->minimum && num_cmp(inst, n->minimum) < 0) {
        fmt_value(n->minimum, lim, sizeof lim);
        fail_at(v, n, "minimum", "must be >= %s, got %s", lim, got);
        FAIL();
    }
    if (n->exclusive_minimum && num_cmp(inst, n->exclusive_minimum) <= 0) {
        fmt_value(n->exclusive_minimum, lim, sizeof lim);
        fail_at(v, n, "exclusiveMinimum", "must be > %s, got %s", lim, got);
        FAIL();
    }
    return ok;
}

static int validate_string(vctx *v, const node *n, const json_t *inst)
{
    int ok = 1;
    if (!json_is_string(inst)) return 1;
    const char *s = json_string_value(inst);
    size_t len = json_string_length(inst);
    if (n->max_length >= 0 || n->min_length >= 0) {
        size_t cp = utf8_length(s, len);
        if (n->max_length >= 0 && cp > (unsigned long long)n->max_length) {
            fail_at(v, n, "maxLength", "must be at most %lld characters long, got %zu", n->max_length, cp);
            FAIL();
        }
        if (n->min_length >= 0 && cp < (unsigned long long)n->min_length) {
            fail_at(v, n, "minLength", "must be at least %lld characters long, got %zu", n->min_length, cp);
            FAIL();
        }
    }
    if (n->pattern) {
        int m = regex_match(v, n->pattern, s, len);
        if (m != 1) {
            char got[80];
            fmt_value(inst, got, sizeof got);
            if (m < 0) fail_at(v, n, "pattern", "matching /%s/ failed (regex limits exceeded)", n->pattern_src);
            else fail_at(v, n, "pattern", "must match /%s/, got %s", n->pattern_src, got);
            FAIL();
        }
    }
    return ok;
}

static int validate_array(vctx *v, const node *n, const json_t *inst)
{
    int ok = 1;
    if (!json_is_array(inst)) return 1;
    size_t size = json_array_size(inst);
    if (n->max_items >= 0 && size > (unsigned long long)n->max_items) {
        fail_at(v, n, "maxItems", "must have at most %lld items, got %zu", n->max_items, size);
        FAIL();
    }
    if (n->min_items >= 0 && size < (unsigned long long)n->min_items) {
        fail_at(v, n, "minItems", "must have at least %lld items, got %zu", n->min_items, size);
        FAIL();
    }
    if (n->unique_items) {
        size_t a = 0, b = 0;
        int oom = 0;
        if (find_duplicate(inst, &a, &b, &oom)) {
            fail_at(v, n, "uniqueItems", "items must be unique, but items %zu and %zu are equal", a, b);
            FAIL();
        }
        if (oom) { v->oom = 1; FAIL(); }
    }
    for (size_t i = 0; i < size && i < n->n_prefix_items; i++) {
        size_t old = path_push_index(v, i);
        int r = validate(v, n->prefix_items[i], json_array_get(inst, i));
        path_pop(v, old);
        if (!r) FAIL();
    }
    if (n->items && size > n->n_prefix_items) {
        if (n->items->boolean == 0) {
            fail_at(v, n, "items", "must have at most %zu items (items is false), got %zu", n->n_prefix_items, size);
            FAIL();
        } else {
            for (size_t i = n->n_prefix_items; i < size; i++) {
                size_t old = path_push_index(v, i);
                int r = validate(v, n->items, json_array_get(inst, i));
                path_pop(v, old);
                if (!r) FAIL();
            }
        }
    }
    if (n->contains) {
        long long min = n->min_contains >= 0 ? n->min_contains : 1;
        long long matched = 0;
        for (size_t i = 0; i < size; i++) {
            size_t old = path_push_index(v, i);
            matched += check(v, n->contains, json_array_get(inst, i));
            path_pop(v, old);
            if (v->too_deep) return 0;
        }
        if (matched < min) {
            if (n->min_contains >= 0)
                fail_at(v, n, "minContains", "must contain at least %lld item%s matching 'contains', found %lld", min,
                        min == 1 ? "" : "s", matched);
            else
                fail_at(v, n, "contains", "must contain an item matching 'contains'");
            FAIL();
        }
        if (n->max_contains >= 0 && matched > n->max_contains) {
            fail_at(v, n, "maxContains", "must contain at most %lld item%s matching 'contains', found %lld",
                    n->max_contains, n->max_contains == 1 ? "" : "s", matched);
            FAIL();
        }
    }
    return ok;
}

static int validate_object(vctx *v, const node *n, const json_t *inst)
{
    int ok = 1;
    if (!json_is_object(inst)) return 1;
    size_t size = json_object_size(inst);
    char key[96];
    if (n->max_properties >= 0 && size > (unsigned long long)n->max_properties) {
        fail_at(v, n, "maxProperties", "must have at most %lld properties, got %zu", n->max_properties, size);
        FAIL();
    }
    if (n->min_properties >= 0 && size < (unsigned long long)n->min_properties) {
        fail_at(v, n, "minProperties", "must have at least %lld properties, got %zu", n->min_properties, size);
        FAIL();
    }
    for (size_t i = 0; i < n->n_required; i++) {
        if (!json_object_get(inst, n->required[i])) {
            fmt_key(n->required[i], key, sizeof key);
            fail_at(v, n, "required", "missing required property %s", key);
            FAIL();
        }
    }
    for (size_t i = 0; i < n->n_dependent_required; i++) {
        const dep_required *d = &n->dependent_required[i];
        if (!json_object_get(inst, d->name)) continue;
        for (size_t j = 0; j < d->n; j++) {
            if (json_object_get(inst, d->required[j])) continue;
            char dep[96];
            fmt_key(d->name, dep, sizeof dep);
            fmt_key(d->required[j], key, sizeof key);
            fail_at(v, n, "dependentRequired", "property %s requires property %s", dep, key);
            FAIL();
        }
    }
    for (size_t i = 0; i < n->n_dependent_schemas; i++) {
        if (!json_object_get(inst, n->dependent_schemas[i].name)) continue;
        if (!validate(v, n->dependent_schemas[i].schema, inst)) FAIL();
    }
    if (n->n_properties || n->n_pattern_properties || n->additional_properties || n->property_names) {
        const char *k;
        size_t klen;
        json_t *val;
        json_object_keylen_foreach((json_t *)inst, k, klen, val) {
            size_t old = path_push(v, k, klen);
            int known = 0, r = 1;
            for (size_t i = 0; i < n->n_properties; i++) {
                if (strlen(n->properties[i].name) != klen || memcmp(n->properties[i].name, k, klen)) continue;
                known = 1;
                r &= validate(v, n->properties[i].schema, val);
                break;
            }
            for (size_t i = 0; i < n->n_pattern_properties; i++) {
                int m = regex_match(v, n->pattern_properties[i].re, k, klen);
                if (m < 0) {
                    fail_at(v, n, "patternProperties", "matching /%s/ failed (regex limits exceeded)",
                            n->pattern_properties[i].source);
                    r = 0;
                } else if (m) {
                    known = 1;
                    r &= validate(v, n->pattern_properties[i].schema, val);
                }
            }
            if (!known && n->additional_properties) {
                if (n->additional_properties->boolean == 0) {
                    fmt_key(k, key, sizeof key);
                    fail_at(v, n, "additionalProperties", "property %s is not allowed", key);
                    r = 0;
                } else {
                    r &= validate(v, n->additional_properties, val);
                }
            }
            if (n->property_names) {
                json_t *name = json_stringn(k, klen);
                if (!name) { v->oom = 1; r = 0; }
                else if (!check(v, n->property_names, name)) {
                    fmt_key(k, key, sizeof key);
                    fail_at(v, n, "propertyNames", "property name %s does not match propertyNames", key);
                    r = 0;
                }
                json_decref(name);
            }
            path_pop(v, old);
            if (!r) FAIL();
        }
    }
    return ok;
}

static int validate(vctx *v, const node *n, const json_t *inst)
{
    if (n->boolean == 1) return 1;
    if (n->boolean == 0) {
        fail_at(v, n, "false", "no value is allowed here (schema is false)");
        return 0;
    }
    if (v->too_deep) return 0;
    if (v->depth >= ECO_SCHEMA_MAX_DEPTH) {
        v->too_deep = 1;
        int saved = v->collect;
        v->collect = 1; /* always reported, even from inside anyOf/not */
        fail_at(v, n, "$ref", "evaluation nested deeper than %d levels (recursive schema without progress?)",
                ECO_SCHEMA_MAX_DEPTH);
        v->collect = saved;
        return 0;
    }
    v->depth++;
    int ok = 1;
    char buf[256];
#undef FAIL
#define FAIL()                                                                                              \
    do {                                                                                                    \
        ok = 0;                                                                                             \
        if (!v->collect || v->too_deep) goto out;                                                           \
    } while (0)

    if (n->ref && !validate(v, n->ref, inst)) FAIL();
    if (n->types && !(n->types & instance_types(inst))) {
        types_text(n->types, buf, sizeof buf);
        fail_at(v, n, "type", "must be %s, got %s", buf, instance_type_name(inst));
        FAIL();
    }
    if (n->enum_v) {
        int found = 0;
        for (size_t i = 0; i < json_array_size(n->enum_v) && !found; i++) found = json_eq(inst, json_array_get(n->enum_v, i));
        if (!found) {
            char got[80];
            fmt_value(n->enum_v, buf, sizeof buf);
            fmt_value(inst, got, sizeof got);
            fail_at(v, n, "enum", "must be one of %s, got %s", buf, got);
            FAIL();
        }
    }
    if (n->const_v && !json_eq(inst, n->const_v)) {
        char got[80];
        fmt_value(n->const_v, buf, sizeof buf);
        fmt_value(inst, got, sizeof got);
        fail_at(v, n, "const", "must be %s, got %s", buf, got);
        FAIL();
    }
    if (!validate_number(v, n, inst)) FAIL();
    if (!validate_string(v, n, inst)) FAIL();
    if (!validate_array(v, n, inst)) FAIL();
    if (!validate_object(v, n, inst)) FAIL();
    for (size_t i = 0; i < n->n_all_of; i++)
        if (!validate(v, n->all_of[i], inst)) FAIL();
    if (n->n_any_of) {
        int any = 0;
        for (size_t i = 0; i < n->n_any_of && !any && !v->too_deep; i++) any = check(v, n->any_of[i], inst);
        if (!any) {
            fail_at(v, n, "anyOf", "must match at least one of the %zu schemas in anyOf", n->n_any_of);
            FAIL();
        }
    }
    if (n->n_one_of) {
        size_t matched = 0, first = 0, second = 0;
        for (size_t i = 0; i < n->n_one_of && matched < 2 && !v->too_deep; i++) {
            if (!check(v, n->one_of[i], inst)) continue;
            if (matched++ == 0) first = i;
            else second = i;
        }
        if (matched == 0) {
            fail_at(v, n, "oneOf", "must match exactly one of the %zu schemas in oneOf, matched none", n->n_one_of);
            FAIL();
        } else if (matched > 1) {
            fail_at(v, n, "oneOf", "must match exactly one schema in oneOf, but matches %zu and %zu", first, second);
            FAIL();
        }
    }
    if (n->not_s && check(v, n->not_s, inst) && !v->too_deep) {
        fail_at(v, n, "not", "must not match the schema in 'not'");
        FAIL();
    }
    if (n->if_s) {
        int cond = check(v, n->if_s, inst);
        if (v->too_deep) FAIL();
        if (cond && n->then_s && !validate(v, n->then_s, inst)) FAIL();
        if (!cond && n->else_s && !validate(v, n->else_s, inst)) FAIL();
    }
out:
    v->depth--;
    return ok;
}
#undef FAIL

eco_err eco_schema_validate(const eco_schema *s, const json_t *instance, eco_schema_errors *errs)
{
    if (!s || !instance) return eco_fail(ECO_EINVAL, "validate: no schema or no instance");
    vctx v = {.s = s, .errs = errs, .collect = errs != NULL};
    sb_putn(&v.path, "", 0);
    size_t before = errs ? errs->count : 0;
    int ok = validate(&v, s->root, instance);
    free(v.path.p);
    if (v.oom || v.path.oom) return eco_fail(ECO_ENOMEM, "validate: out of memory");
    if (v.too_deep)
        return eco_fail(ECO_ETOOBIG, "validate: evaluation nested deeper than %d levels", ECO_SCHEMA_MAX_DEPTH);
    if (ok) return ECO_OK;
    if (errs && errs->count > before) {
        const eco_schema_error *e = &errs->items[before];
        return eco_fail(ECO_EINVAL, "instance does not match the schema: %s: %s%s", *e->instance_path ? e->instance_path : "(root)",
                        e->message, errs->count - before > 1 ? " (and more)" : "");
    }
    return eco_fail(ECO_EINVAL, "instance does not match the schema");
}
