/* Byte-level BPE tokenizer from HF tokenizer.json: loading, encoding (added tokens, normalizer check,
 * pcre2 pre-split, rank-ordered merges, template post-processing) and ByteLevel decoding.
 * Semantics follow HF tokenizers (Rust); docs/TOKENIZER.md lists what is supported. */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <pcre2.h>

#include "eco/tokenizer.h"

#define MAX_PRE_STEPS 16       /* Split/ByteLevel steps after flattening Sequences */
#define MAX_NESTING 8          /* Sequence inside Sequence ... */
#define REGEX_MATCH_LIMIT 10000000u
#define MAX_MERGES ((size_t)1 << 24)
#define MAX_ADDED 65536

/* GPT-2's pre-split, used by a ByteLevel pre-tokenizer with use_regex (HF hard-codes it). */
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* ---------------------------------------------------------------- arena for token strings */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
} arena_block;

static char *arena_dup(arena_block **head, const char *s, size_t len)
{
    arena_block *b = *head;
    if (!b || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > ((size_t)1 << 20) ? len + 1 : ((size_t)1 << 20);
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->next = *head;
        b->used = 0;
        b->cap = cap;
        *head = b;
    }
    char *p = b->data + b->used;
    memcpy(p, s, len);
    p[len] = '\0';
    b->used += len + 1;
    return p;
}

static void arena_free(arena_block *b)
{
    while (b) {
        arena_block *n = b->next;
        free(b);
        b = n;
    }
}

/* ---------------------------------------------------------------- string -> id map (open addressing) */

typedef struct {
    const char *key; /* NULL = empty slot */
    uint32_t len;
    int32_t val;
} smap_entry;

typedef struct {
    smap_entry *e;
    size_t mask;
} smap;

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static eco_err smap_init(smap *m, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 1) cap <<= 1;
    m->e = calloc(cap, sizeof *m->e);
    if (!m->e) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory for a %zu-entry map", n);
    m->mask = cap - 1;
    return ECO_OK;
}

static smap_entry *smap_slot(const smap *m, const char *key, size_t len)
{
    size_t i = (size_t)hash_bytes(key, len) & m->mask;
    for (;;) {
        smap_entry *e = &m->e[i];
        if (!e->key || (e->len == len && memcmp(e->key, key, len) == 0)) return e;
        i = (i + 1) & m->mask;
    }
}

static bool smap_get(const smap *m, const char *key, size_t len, int32_t *val)
{
    if (!m->e) return false;
    smap_entry *e = smap_slot(m, key, len);
    if (!e->key) return false;
    *val = e->val;
    return true;
}

/* ---------------------------------------------------------------- (left id, right id) -> (rank, merged id) */

typedef struct {
    uint64_t key; /* UINT64_MAX = empty */
    int32_t rank, id;
} pmap_entry;

typedef struct {
    pmap_entry *e;
    size_t mask;
} pmap;

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static size_t pair_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
}

static const pmap_entry *pmap_get(const pmap *m, int32_t a, int32_t b)
{
    if (!m->e) return NULL;
    uint64_t k = pair_key(a, b);
    for (size_t i = pair_hash(k) & m->mask;; i = (i + 1) & m->mask) {
        if (m->e[i].key == k) return &m->e[i];
        if (m->e[i].key == UINT64_MAX) return NULL;
    }
}

/* ---------------------------------------------------------------- UTF-8 and GPT-2's byte alphabet */

/* Length of the valid UTF-8 sequence at s[0..n), 0 when invalid (overlong, surrogate, > U+10FFFF, cut). */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

static size_t utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* GPT-2 bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes map to U+0100+k
 * in byte order, so every byte string becomes a printable string and vocab entries can be JSON keys. */
static uint32_t byte_to_cp(unsigned b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return b;
    unsigned k = 0;
    for (unsigned x = 0; x < b; x++)
        if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174)) k++;
    return 256 + k;
}

/* Unicode White_Space (what Oniguruma's \s and Rust's char::is_whitespace accept). */
static bool is_white_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Code points NFC leaves alone in any context: canonical class 0, no singleton or excluded decomposition,
 * and never the second half of a canonical composition (checked against the JS engine by
 * tests/node/tokenizer_fixtures.test.mjs). Text made only of these is already NFC. */
static bool nfc_inert(uint32_t c)
{
    return c < 0x300 || (c >= 0x0388 && c <= 0x03CE) || (c >= 0x3041 && c <= 0x3096) || (c >= 0x30A1 && c <= 0x30FA) ||
           (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xFF01 && c <= 0xFF5E) ||
           (c >= 0x1F300 && c <= 0x1FAFF) || (c >= 0x2010 && c <= 0x2027) || c == 0x3001 || c == 0x3002 ||
           (c >= 0x0400 && c <= 0x0482) || (c >= 0x048A && c <= 0x04FF) || c == 0x200D || c == 0xFE0F;
}

/* ---------------------------------------------------------------- the tokenizer */

enum { SPLIT_ISOLATED, SPLIT_REMOVED };

typedef struct {
    pcre2_code *re;
    int behavior;
    bool jit;
} split_step;

typedef struct {
    char *content;
    uint32_t len;
    int32_t id;
    bool special, lstrip, rstrip, normalized;
} added_token;

typedef struct {
    bool is_seq; /* the encoded text ("A"); otherwise ids of a special token */
    int32_t *ids;
    size_t n;
} tmpl_item;

typedef struct {
    tmpl_item *items;
    size_t n;
} tmpl;

struct eco_tokenizer {
    arena_block *arena;
    /* model */
    smap vocab; /* model vocab: token -> id */
    pmap merges;
    int32_t byte_id[256]; /* id of each byte's one-char token, -1 when absent */
    int32_t unk_id;       /* -1 = none */
    bool fuse_unk, byte_fallback, ignore_merges;
    /* id -> string (added tokens override the model vocab), special flags */
    const char **names;
    uint32_t *name_len;
    uint8_t *special;
    size_t vocab_size;
    /* added tokens, bucketed by first byte, longest first */
    added_token *added;
    size_t n_added;
    smap added_map; /* content -> index into added */
    uint32_t first_off[257];
    uint32_t *by_first;
    /* pipeline */
    bool nfc;
    split_step steps[MAX_PRE_STEPS];
    size_t n_steps;
    tmpl *tmpls;
    size_t n_tmpls;
    uint16_t cp_to_byte[324]; /* inverse alphabet: code point < 324 -> byte + 1, 0 = not a byte char */
};

void eco_tokenizer_free(eco_tokenizer *tok)
{
    if (!tok) return;
    for (size_t i = 0; i < tok->n_steps; i++) pcre2_code_free(tok->steps[i].re);
    for (size_t t = 0; t < tok->n_tmpls; t++) {
        for (size_t i = 0; i < tok->tmpls[t].n; i++) free(tok->tmpls[t].items[i].ids);
        free(tok->tmpls[t].items);
    }
    free(tok->tmpls);
    free(tok->vocab.e);
    free(tok->merges.e);
    free(tok->names);
    free(tok->name_len);
    free(tok->special);
    free(tok->added);
    free(tok->added_map.e);
    free(tok->by_first);
    arena_free(tok->arena);
    free(tok);
}

/* ---------------------------------------------------------------- loading helpers */

static const char *jtype(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Optional boolean: absent or null -> def. */
static eco_err get_bool(const json_t *obj, const char *key, const char *path, bool def, bool *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) { *out = def; return ECO_OK; }
    if (!json_is_boolean(v))
        return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s.%s must be a boolean, got %s", path, key, jtype(v));
    *out = json_is_true(v);
    return ECO_OK;
}

/* Optional string: absent or null -> NULL. */
static eco_err get_str(const json_t *obj, const char *key, const char *path, const char **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v)) return ECO_OK;
    if (!json_is_string(v))
        return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s.%s must be a string, got %s", path, key, jtype(v));
    *out = json_string_value(v);
    return ECO_OK;
}

static eco_err get_id(const json_t *v, const char *path, int32_t *out)
{
    if (!json_is_integer(v))
        return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s must be an integer id, got %s", path, jtype(v));
    json_int_t id = json_integer_value(v);
    if (id < 0 || id >= ECO_TOKENIZER_MAX_VOCAB)
        return eco_fail_field(ECO_ETOOBIG, path, "tokenizer.json: %s = %lld is outside 0..%d", path, (long long)id,
                              (int)ECO_TOKENIZER_MAX_VOCAB - 1);
    *out = (int32_t)id;
    return ECO_OK;
}

static const char *type_of(const json_t *node)
{
    json_t *t = json_object_get(node, "type");
    return json_is_string(t) ? json_string_value(t) : NULL;
}

/* Oniguruma's \s / \S are Unicode White_Space; pcre2's UCP \s also takes U+180E, so spell them out. */
static eco_err compile_regex(const char *pat, size_t len, bool literal, const char *path, split_step *st)
{
    char *buf = NULL;
    size_t n = 0;
    if (!literal) {
        buf = malloc(len * 8 + 1);
        if (!buf) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory compiling %s", path);
        for (size_t i = 0; i < len; i++) {
            if (pat[i] == '\\' && i + 1 < len && (pat[i + 1] == 's' || pat[i + 1] == 'S')) {
                const char *rep = pat[i + 1] == 's' ? "\\p{White_Space}" : "\\P{White_Space}";
                memcpy(buf + n, rep, strlen(rep));
                n += strlen(rep);
                i++;
            } else if (pat[i] == '\\' && i + 1 < len) {
                buf[n++] = pat[i++];
                buf[n++] = pat[i];
            } else {
                buf[n++] = pat[i];
            }
        }
        pat = buf;
        len = n;
    }
    int code;
    PCRE2_SIZE off;
    st->re = pcre2_compile((PCRE2_SPTR)pat, len, literal ? PCRE2_UTF | PCRE2_LITERAL : PCRE2_UTF | PCRE2_UCP, &code, &off, NULL);
    free(buf);
    if (!st->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s: regex does not compile at offset %zu: %s", path,
                              (size_t)off, (const char *)msg);
    }
    st->jit = pcre2_jit_compile(st->re, PCRE2_JIT_COMPLETE) == 0;
    return ECO_OK;
}

/* ---------------------------------------------------------------- model */

static eco_err load_model(eco_tokenizer *tok, json_t *model)
{
    if (!model || json_is_null(model))
        return eco_fail_field(ECO_EFORMAT, "model", "tokenizer.json: missing field \"model\"");
    if (!json_is_object(model))
        return eco_fail_field(ECO_EFORMAT, "model", "tokenizer.json: model must be an object, got %s", jtype(model));
    json_t *type = json_object_get(model, "type");
    if (type && !json_is_string(type))
        return eco_fail_field(ECO_EFORMAT, "model.type", "tokenizer.json: model.type must be a string, got %s", jtype(type));
    /* Old files omit the type; HF then infers BPE from the merges. */
    if (type && strcmp(json_string_value(type), "BPE") != 0)
        return eco_fail_field(ECO_EUNSUPPORTED, "model.type",
                              "tokenizer.json: model.type \"%s\" is not supported (only byte-level \"BPE\")",
                              json_string_value(type));
    json_t *vocab = json_object_get(model, "vocab");
    json_t *merges = json_object_get(model, "merges");
    if (!json_is_object(vocab))
        return eco_fail_field(ECO_EFORMAT, "model.vocab", "tokenizer.json: model.vocab must be an object of token -> id, got %s",
                              vocab ? jtype(vocab) : "nothing");
    if (!json_is_array(merges))
        return eco_fail_field(ECO_EFORMAT, "model.merges", "tokenizer.json: model.merges must be an array, got %s",
                              merges ? jtype(merges) : "nothing");
    const char *s;
    eco_err err;
    if ((err = get_str(model, "continuing_subword_prefix", "model", &s))) return err;
    if (s && *s)
        return eco_fail_field(ECO_EUNSUPPORTED, "model.continuing_subword_prefix",
                              "tokenizer.json: model.continuing_subword_prefix is not supported by byte-level BPE");
    if ((err = get_str(model, "end_of_word_suffix", "model", &s))) return err;
    if (s && *s)
        return eco_fail_field(ECO_EUNSUPPORTED, "model.end_of_word_suffix",
                              "tokenizer.json: model.end_of_word_suffix is not supported by byte-level BPE");
    json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout) && !(json_is_number(dropout) && json_number_value(dropout) == 0.0))
        return eco_fail_field(ECO_EUNSUPPORTED, "model.dropout", "tokenizer.json: BPE dropout is not supported");
    if ((err = get_bool(model, "fuse_unk", "model", false, &tok->fuse_unk))) return err;
    if ((err = get_bool(model, "byte_fallback", "model", false, &tok->byte_fallback))) return err;
    if ((err = get_bool(model, "ignore_merges", "model", false, &tok->ignore_merges))) return err;

    size_t nv = json_object_size(vocab);
    if (nv > (size_t)ECO_TOKENIZER_MAX_VOCAB)
        return eco_fail_field(ECO_ETOOBIG, "model.vocab", "tokenizer.json: model.vocab has %zu entries, limit %d", nv,
                              (int)ECO_TOKENIZER_MAX_VOCAB);
    if ((err = smap_init(&tok->vocab, nv))) return err;
    const char *key;
    json_t *val;
    char path[96];
    json_object_foreach(vocab, key, val) {
        size_t klen = strlen(key);
        snprintf(path, sizeof path, "model.vocab[\"%.40s\"]", key);
        int32_t id;
        if ((err = get_id(val, path, &id))) return err;
        if (klen > ECO_TOKENIZER_MAX_TOKEN_BYTES)
            return eco_fail_field(ECO_ETOOBIG, path, "tokenizer.json: %s is %zu bytes long, limit %d", path, klen,
                                  ECO_TOKENIZER_MAX_TOKEN_BYTES);
        smap_entry *e = smap_slot(&tok->vocab, key, klen);
        char *copy = arena_dup(&tok->arena, key, klen);
        if (!copy) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory for the vocab");
        e->key = copy;
        e->len = (uint32_t)klen;
        e->val = id;
        if ((size_t)id + 1 > tok->vocab_size) tok->vocab_size = (size_t)id + 1;
    }
    /* id -> name, rejecting two tokens with one id (the reverse map would be ambiguous). */
    tok->names = calloc(tok->vocab_size ? tok->vocab_size : 1, sizeof *tok->names);
    tok->name_len = calloc(tok->vocab_size ? tok->vocab_size : 1, sizeof *tok->name_len);
    if (!tok->names || !tok->name_len) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory for the vocab");
    for (size_t i = 0; i <= tok->vocab.mask; i++) {
        smap_entry *e = &tok->vocab.e[i];
        if (!e->key) continue;
        if (tok->names[e->val])
            return eco_fail_field(ECO_EFORMAT, "model.vocab", "tokenizer.json: model.vocab gives id %d to both \"%.40s\" and \"%.40s\"",
                                  (int)e->val, tok->names[e->val], e->key);
        tok->names[e->val] = e->key;
        tok->name_len[e->val] = e->len;
    }
    for (unsigned b = 0; b < 256; b++) {
        char u[4];
        size_t ul = utf8_put(byte_to_cp(b), u);
        if (!smap_get(&tok->vocab, u, ul, &tok->byte_id[b])) tok->byte_id[b] = -1;
    }
    if ((err = get_str(model, "unk_token", "model", &s))) return err;
    tok->unk_id = -1;
    if (s && !smap_get(&tok->vocab, s, strlen(s), &tok->unk_id))
        return eco_fail_field(ECO_EFORMAT, "model.unk_token", "tokenizer.json: model.unk_token \"%.40s\" is not in model.vocab", s);

    /* merges: rank = position; the merged token must be in the vocab (as HF checks at load). */
    size_t nm = json_array_size(merges);
    if (nm > MAX_MERGES)
        return eco_fail_field(ECO_ETOOBIG, "model.merges", "tokenizer.json: %zu merges, limit %zu", nm, MAX_MERGES);
    size_t cap = 16;
    while (cap < 2 * nm + 1) cap <<= 1;
    tok->merges.e = malloc(cap * sizeof *tok->merges.e);
    if (!tok->merges.e) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory for %zu merges", nm);
    for (size_t i = 0; i < cap; i++) tok->merges.e[i].key = UINT64_MAX;
    tok->merges.mask = cap - 1;
    char *joined = malloc(2 * ECO_TOKENIZER_MAX_TOKEN_BYTES + 2);
    if (!joined) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
    err = ECO_OK;
    for (size_t r = 0; r < nm && !err; r++) {
        json_t *m = json_array_get(merges, r);
        const char *a, *b;
        size_t al, bl;
        snprintf(path, sizeof path, "model.merges[%zu]", r);
        if (json_is_string(m)) {
            a = json_string_value(m);
            const char *sp = strchr(a, ' ');
            if (!sp || sp == a || !sp[1] || strchr(sp + 1, ' ')) {
                err = eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s \"%.60s\" is not two tokens separated by one space", path, a);
                break;
            }
            al = (size_t)(sp - a);
            b = sp + 1;
            bl = strlen(b);
        } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1))) {
            a = json_string_value(json_array_get(m, 0));
            b = json_string_value(json_array_get(m, 1));
            al = strlen(a);
            bl = strlen(b);
        } else {
            err = eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s must be \"a b\" or [\"a\", \"b\"], got %s", path, jtype(m));
            break;
        }
        int32_t ia, ib, im;
        if (!smap_get(&tok->vocab, a, al, &ia) || !smap_get(&tok->vocab, b, bl, &ib)) {
            bool left = !smap_get(&tok->vocab, a, al, &ia);
            err = eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s names token \"%.*s\", which is not in model.vocab", path,
                                 (int)(left ? (al > 60 ? 60 : al) : (bl > 60 ? 60 : bl)), left ? a : b);
            break;
        }
        memcpy(joined, a, al);
        memcpy(joined + al, b, bl);
        if (!smap_get(&tok->vocab, joined, al + bl, &im)) {
            err = eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s: the merged token \"%.*s\" is not in model.vocab", path,
                                 (int)(al + bl > 60 ? 60 : al + bl), joined);
            break;
        }
        /* A repeated pair keeps its last rank, as HF's map insertion does. */
        uint64_t k = pair_key(ia, ib);
        size_t j = pair_hash(k) & tok->merges.mask;
        while (tok->merges.e[j].key != UINT64_MAX && tok->merges.e[j].key != k) j = (j + 1) & tok->merges.mask;
        tok->merges.e[j] = (pmap_entry){k, (int32_t)r, im};
    }
    free(joined);
    return err;
}

/* ---------------------------------------------------------------- added tokens */

static int cmp_by_first(const void *pa, const void *pb, void *ctx);

static eco_err load_added(eco_tokenizer *tok, json_t *arr)
{
    if (!arr || json_is_null(arr)) return ECO_OK;
    if (!json_is_array(arr))
        return eco_fail_field(ECO_EFORMAT, "added_tokens", "tokenizer.json: added_tokens must be an array, got %s", jtype(arr));
    size_t n = json_array_size(arr);
    if (n > MAX_ADDED) return eco_fail_field(ECO_ETOOBIG, "added_tokens", "tokenizer.json: %zu added_tokens, limit %d", n, MAX_ADDED);
    tok->added = calloc(n ? n : 1, sizeof *tok->added);
    eco_err err = smap_init(&tok->added_map, n);
    if (err) return err;
    if (!tok->added) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
    char path[64];
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(arr, i);
        snprintf(path, sizeof path, "added_tokens[%zu]", i);
        if (!json_is_object(t)) return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s must be an object, got %s", path, jtype(t));
        added_token *a = &tok->added[i];
        const char *content;
        if ((err = get_str(t, "content", path, &content))) return err;
        if (!content || !*content)
            return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s.content must be a non-empty string", path);
        size_t len = strlen(content);
        if (len > ECO_TOKENIZER_MAX_TOKEN_BYTES)
            return eco_fail_field(ECO_ETOOBIG, path, "tokenizer.json: %s.content is %zu bytes, limit %d", path, len, ECO_TOKENIZER_MAX_TOKEN_BYTES);
        json_t *id = json_object_get(t, "id");
        char idpath[80];
        snprintf(idpath, sizeof idpath, "%s.id", path);
        if (!id) return eco_fail_field(ECO_EFORMAT, idpath, "tokenizer.json: missing %s", idpath);
        if ((err = get_id(id, idpath, &a->id))) return err;
        bool single_word = false;
        if ((err = get_bool(t, "special", path, false, &a->special))) return err;
        if ((err = get_bool(t, "lstrip", path, false, &a->lstrip))) return err;
        if ((err = get_bool(t, "rstrip", path, false, &a->rstrip))) return err;
        if ((err = get_bool(t, "normalized", path, !a->special, &a->normalized))) return err;
        if ((err = get_bool(t, "single_word", path, false, &single_word))) return err;
        if (single_word)
            return eco_fail_field(ECO_EUNSUPPORTED, path, "tokenizer.json: %s: single_word added tokens are not supported", path);
        a->content = arena_dup(&tok->arena, content, len);
        if (!a->content) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
        a->len = (uint32_t)len;
        smap_entry *e = smap_slot(&tok->added_map, a->content, len);
        if (e->key)
            return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s repeats the content \"%.40s\" of added_tokens[%d]", path,
                                  content, (int)e->val);
        e->key = a->content;
        e->len = (uint32_t)len;
        e->val = (int32_t)i;
        tok->n_added++;
    }
    /* Bucket by first byte, longest first, so the first hit at a position is the longest match. */
    tok->by_first = malloc((n ? n : 1) * sizeof *tok->by_first);
    if (!tok->by_first) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < n; i++) tok->by_first[i] = (uint32_t)i;
    /* insertion sort is fine for the few hundred added tokens real files have; qsort_r is not C11 */
    for (size_t i = 1; i < n; i++) {
        uint32_t x = tok->by_first[i];
        size_t j = i;
        while (j > 0 && cmp_by_first(&tok->by_first[j - 1], &x, tok) > 0) {
            tok->by_first[j] = tok->by_first[j - 1];
            j--;
        }
        tok->by_first[j] = x;
    }
    size_t k = 0;
    for (unsigned c = 0; c < 256; c++) {
        tok->first_off[c] = (uint32_t)k;
        while (k < n && (unsigned char)tok->added[tok->by_first[k]].content[0] == c) k++;
    }
    tok->first_off[256] = (uint32_t)k;
    return ECO_OK;
}

static int cmp_by_first(const void *pa, const void *pb, void *ctx)
{
    const eco_tokenizer *tok = ctx;
    const added_token *a = &tok->added[*(const uint32_t *)pa], *b = &tok->added[*(const uint32_t *)pb];
    unsigned ca = (unsigned char)a->content[0], cb = (unsigned char)b->content[0];
    if (ca != cb) return ca < cb ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return 0;
}

/* ---------------------------------------------------------------- pipeline components */

static eco_err load_normalizer(eco_tokenizer *tok, json_t *node, const char *path, int depth)
{
    if (!node || json_is_null(node)) return ECO_OK;
    const char *t = type_of(node);
    if (!json_is_object(node) || !t)
        return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s must be null or an object with a \"type\"", path);
    if (strcmp(t, "NFC") == 0) { tok->nfc = true; return ECO_OK; }
    if (strcmp(t, "Sequence") == 0 && depth < MAX_NESTING) {
        json_t *list = json_object_get(node, "normalizers");
        if (!json_is_array(list)) return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s.normalizers must be an array", path);
        for (size_t i = 0; i < json_array_size(list); i++) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s.normalizers[%zu]", path, i);
            eco_err err = load_normalizer(tok, json_array_get(list, i), sub, depth + 1);
            if (err) return err;
        }
        return ECO_OK;
    }
    return eco_fail_field(ECO_EUNSUPPORTED, path, "tokenizer.json: %s type \"%s\" is not supported (null or NFC only)", path, t);
}

static eco_err load_pre(eco_tokenizer *tok, json_t *node, const char *path, int depth, bool *byte_level)
{
    const char *t = json_is_object(node) ? type_of(node) : NULL;
    if (!t) return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s must be an object with a \"type\"", path);
    if (*byte_level)
        return eco_fail_field(ECO_EUNSUPPORTED, path, "tokenizer.json: %s: only a ByteLevel pre-tokenizer may come last", path);
    eco_err err;
    if (strcmp(t, "Sequence") == 0) {
        json_t *list = json_object_get(node, "pretokenizers");
        if (!json_is_array(list))
            return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s.pretokenizers must be an array", path);
        if (depth >= MAX_NESTING) return eco_fail_field(ECO_ETOOBIG, path, "tokenizer.json: %s nests too deep", path);
        for (size_t i = 0; i < json_array_size(list); i++) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s.pretokenizers[%zu]", path, i);
            if ((err = load_pre(tok, json_array_get(list, i), sub, depth + 1, byte_level))) return err;
        }
        return ECO_OK;
    }
    if (strcmp(t, "ByteLevel") == 0) {
        bool prefix = false, use_regex = true;
        if ((err = get_bool(node, "add_prefix_space", path, false, &prefix))) return err;
        if ((err = get_bool(node, "use_regex", path, true, &use_regex))) return err;
        if (prefix)
            return eco_fail_field(ECO_EUNSUPPORTED, path, "tokenizer.json: %s: add_prefix_space=true is not supported", path);
        if (use_regex) {
            if (tok->n_steps == MAX_PRE_STEPS) return eco_fail_field(ECO_ETOOBIG, path, "tokenizer.json: more than %d pre-tokenizer steps", MAX_PRE_STEPS);
            split_step *st = &tok->steps[tok->n_steps];
            if ((err = compile_regex(GPT2_PATTERN, strlen(GPT2_PATTERN), false, path, st))) return err;
            st->behavior = SPLIT_ISOLATED;
            tok->n_steps++;
        }
        *byte_level = true;
        return ECO_OK;
    }
    if (strcmp(t, "Split") == 0) {
        json_t *pat = json_object_get(node, "pattern");
        json_t *rx = json_is_object(pat) ? json_object_get(pat, "Regex") : NULL;
        json_t *lit = json_is_object(pat) ? json_object_get(pat, "String") : NULL;
        if (!json_is_string(rx) && !json_is_string(lit))
            return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s.pattern must be {\"Regex\": ...} or {\"String\": ...}", path);
        const char *behavior;
        bool invert = false;
        if ((err = get_str(node, "behavior", path, &behavior))) return err;
        if ((err = get_bool(node, "invert", path, false, &invert))) return err;
        if (invert) return eco_fail_field(ECO_EUNSUPPORTED, path, "tokenizer.json: %s: invert=true is not supported", path);
        int b;
        if (behavior && strcmp(behavior, "Isolated") == 0) b = SPLIT_ISOLATED;
        else if (behavior && strcmp(behavior, "Removed") == 0) b = SPLIT_REMOVED;
        else
            return eco_fail_field(ECO_EUNSUPPORTED, path, "tokenizer.json: %s.behavior \"%s\" is not supported (Isolated, Removed)", path,
                                  behavior ? behavior : "(missing)");
        if (tok->n_steps == MAX_PRE_STEPS) return eco_fail_field(ECO_ETOOBIG, path, "tokenizer.json: more than %d pre-tokenizer steps", MAX_PRE_STEPS);
        split_step *st = &tok->steps[tok->n_steps];
        json_t *p = json_is_string(rx) ? rx : lit;
        if ((err = compile_regex(json_string_value(p), json_string_length(p), !json_is_string(rx), path, st))) return err;
        st->behavior = b;
        tok->n_steps++;
        return ECO_OK;
    }
    return eco_fail_field(ECO_EUNSUPPORTED, path, "tokenizer.json: %s type \"%s\" is not supported (Split, ByteLevel, Sequence)", path, t);
}

static eco_err load_template(eco_tokenizer *tok, json_t *node, const char *path)
{
    json_t *single = json_object_get(node, "single");
    json_t *specials = json_object_get(node, "special_tokens");
    if (!json_is_array(single)) return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s.single must be an array", path);
    if (specials && !json_is_object(specials) && !json_is_null(specials))
        return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s.special_tokens must be an object", path);
    tmpl *grown = realloc(tok->tmpls, (tok->n_tmpls + 1) * sizeof *grown);
    if (!grown) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
    tok->tmpls = grown;
    tmpl *tp = &tok->tmpls[tok->n_tmpls++];
    size_t n = json_array_size(single);
    tp->n = 0;
    tp->items = calloc(n ? n : 1, sizeof *tp->items);
    if (!tp->items) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(single, i);
        char sub[128];
        snprintf(sub, sizeof sub, "%s.single[%zu]", path, i);
        json_t *seq = json_object_get(it, "Sequence"), *sp = json_object_get(it, "SpecialToken");
        tmpl_item *item = &tp->items[tp->n];
        if (json_is_object(seq)) {
            json_t *id = json_object_get(seq, "id");
            if (!json_is_string(id) || strcmp(json_string_value(id), "A") != 0)
                return eco_fail_field(ECO_EFORMAT, sub, "tokenizer.json: %s: a single-sequence template can only hold Sequence \"A\"", sub);
            item->is_seq = true;
        } else if (json_is_object(sp)) {
            json_t *name = json_object_get(sp, "id");
            if (!json_is_string(name)) return eco_fail_field(ECO_EFORMAT, sub, "tokenizer.json: %s.SpecialToken.id must be a string", sub);
            json_t *def = specials ? json_object_get(specials, json_string_value(name)) : NULL;
            json_t *ids = json_object_get(def, "ids");
            if (!json_is_array(ids))
                return eco_fail_field(ECO_EFORMAT, sub, "tokenizer.json: %s names special token \"%.40s\", missing from %s.special_tokens",
                                      sub, json_string_value(name), path);
            item->n = json_array_size(ids);
            if (item->n > 64) return eco_fail_field(ECO_ETOOBIG, sub, "tokenizer.json: %s: more than 64 ids", sub);
            item->ids = malloc((item->n ? item->n : 1) * sizeof *item->ids);
            if (!item->ids) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
            for (size_t k = 0; k < item->n; k++) {
                eco_err err = get_id(json_array_get(ids, k), sub, &item->ids[k]);
                if (err) { free(item->ids); item->ids = NULL; return err; }
            }
        } else {
            return eco_fail_field(ECO_EFORMAT, sub, "tokenizer.json: %s must hold \"Sequence\" or \"SpecialToken\"", sub);
        }
        tp->n++;
    }
    return ECO_OK;
}

static eco_err load_post(eco_tokenizer *tok, json_t *node, const char *path, int depth)
{
    if (!node || json_is_null(node)) return ECO_OK;
    const char *t = json_is_object(node) ? type_of(node) : NULL;
    if (!t) return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s must be null or an object with a \"type\"", path);
    if (strcmp(t, "ByteLevel") == 0) return ECO_OK; /* only moves offsets */
    if (strcmp(t, "TemplateProcessing") == 0) return load_template(tok, node, path);
    if (strcmp(t, "Sequence") == 0) {
        json_t *list = json_object_get(node, "processors");
        if (!json_is_array(list)) return eco_fail_field(ECO_EFORMAT, path, "tokenizer.json: %s.processors must be an array", path);
        if (depth >= MAX_NESTING) return eco_fail_field(ECO_ETOOBIG, path, "tokenizer.json: %s nests too deep", path);
        for (size_t i = 0; i < json_array_size(list); i++) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s.processors[%zu]", path, i);
            eco_err err = load_post(tok, json_array_get(list, i), sub, depth + 1);
            if (err) return err;
        }
        return ECO_OK;
    }
    return eco_fail_field(ECO_EUNSUPPORTED, path,
                          "tokenizer.json: %s type \"%s\" is not supported (TemplateProcessing, ByteLevel, Sequence)", path, t);
}

static eco_err load_root(eco_tokenizer *tok, json_t *root)
{
    if (!json_is_object(root)) return eco_fail(ECO_EFORMAT, "tokenizer.json: the document must be an object, got %s", jtype(root));
    eco_err err;
    if ((err = load_model(tok, json_object_get(root, "model")))) return err;
    if ((err = load_added(tok, json_object_get(root, "added_tokens")))) return err;
    if ((err = load_normalizer(tok, json_object_get(root, "normalizer"), "normalizer", 0))) return err;

    json_t *pre = json_object_get(root, "pre_tokenizer");
    bool byte_level = false;
    if (pre && !json_is_null(pre) && (err = load_pre(tok, pre, "pre_tokenizer", 0, &byte_level))) return err;
    if (!byte_level)
        return eco_fail_field(ECO_EUNSUPPORTED, "pre_tokenizer",
                              "tokenizer.json: pre_tokenizer has no ByteLevel step: only byte-level BPE is supported");
    json_t *dec = json_object_get(root, "decoder");
    const char *dt = json_is_object(dec) ? type_of(dec) : NULL;
    if (!dt || strcmp(dt, "ByteLevel") != 0)
        return eco_fail_field(ECO_EUNSUPPORTED, "decoder", "tokenizer.json: decoder must be {\"type\": \"ByteLevel\"}, got %s",
                              dt ? dt : dec ? jtype(dec) : "nothing");
    if ((err = load_post(tok, json_object_get(root, "post_processor"), "post_processor", 0))) return err;

    /* One id space for the model vocab and the added tokens. */
    size_t vs = tok->vocab_size;
    for (size_t i = 0; i < tok->n_added; i++)
        if ((size_t)tok->added[i].id + 1 > vs) vs = (size_t)tok->added[i].id + 1;
    if (vs > tok->vocab_size) {
        const char **names = realloc(tok->names, vs * sizeof *names);
        if (names) tok->names = names;
        uint32_t *lens = realloc(tok->name_len, vs * sizeof *lens);
        if (lens) tok->name_len = lens;
        if (!names || !lens) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
        memset(tok->names + tok->vocab_size, 0, (vs - tok->vocab_size) * sizeof *names);
        memset(tok->name_len + tok->vocab_size, 0, (vs - tok->vocab_size) * sizeof *lens);
        tok->vocab_size = vs;
    }
    tok->special = calloc(vs ? vs : 1, 1);
    if (!tok->special) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < tok->n_added; i++) {
        added_token *a = &tok->added[i];
        tok->names[a->id] = a->content;
        tok->name_len[a->id] = a->len;
        if (a->special) tok->special[a->id] = 1;
    }
    for (size_t t = 0; t < tok->n_tmpls; t++)
        for (size_t i = 0; i < tok->tmpls[t].n; i++)
            for (size_t k = 0; k < tok->tmpls[t].items[i].n; k++) {
                int32_t id = tok->tmpls[t].items[i].ids[k];
                if ((size_t)id >= vs || !tok->names[id])
                    return eco_fail_field(ECO_EFORMAT, "post_processor",
                                          "tokenizer.json: post_processor special token id %d is neither in model.vocab nor in added_tokens", (int)id);
            }
    for (uint32_t cp = 0; cp < 324; cp++) tok->cp_to_byte[cp] = 0;
    for (unsigned b = 0; b < 256; b++) tok->cp_to_byte[byte_to_cp(b)] = (uint16_t)(b + 1);
    return ECO_OK;
}

eco_err eco_tokenizer_load_json(const char *text, size_t len, eco_tokenizer **out)
{
    if (!out) return eco_fail(ECO_EINVAL, "eco_tokenizer_load_json: out is NULL");
    *out = NULL;
    if (!text) return eco_fail(ECO_EINVAL, "eco_tokenizer_load_json: text is NULL");
    if (len > ECO_TOKENIZER_MAX_JSON_BYTES)
        return eco_fail(ECO_ETOOBIG, "tokenizer.json: %zu bytes, limit %zu", len, ECO_TOKENIZER_MAX_JSON_BYTES);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return eco_fail(ECO_EFORMAT, "tokenizer.json:%d:%d: %s", jerr.line, jerr.column, jerr.text);
    eco_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) { json_decref(root); return eco_fail(ECO_ENOMEM, "tokenizer: out of memory"); }
    eco_err err = load_root(tok, root);
    json_decref(root);
    if (err) { eco_tokenizer_free(tok); return err; }
    *out = tok;
    return ECO_OK;
}

eco_err eco_tokenizer_load(const char *path, eco_tokenizer **out)
{
    if (!out) return eco_fail(ECO_EINVAL, "eco_tokenizer_load: out is NULL");
    *out = NULL;
    if (!path) return eco_fail(ECO_EINVAL, "eco_tokenizer_load: path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f) return eco_fail(ECO_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return eco_fail(ECO_EIO, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > ECO_TOKENIZER_MAX_JSON_BYTES) {
        fclose(f);
        return eco_fail(ECO_ETOOBIG, "%s: %lld bytes, limit %zu", path, (long long)st.st_size, ECO_TOKENIZER_MAX_JSON_BYTES);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n ? n : 1);
    if (!buf) { fclose(f); return eco_fail(ECO_ENOMEM, "%s: out of memory for %zu bytes", path, n); }
    size_t got = fread(buf, 1, n, f);
    int rerr = ferror(f);
    fclose(f);
    if (got != n || rerr) { free(buf); return eco_fail(ECO_EIO, "%s: short read (%zu of %zu bytes)", path, got, n); }
    eco_err err = eco_tokenizer_load_json(buf, n, out);
    free(buf);
    if (err) return eco_fail_context("%s: ", path);
    return ECO_OK;
}

/* ---------------------------------------------------------------- encoding */

typedef struct {
    int32_t *v;
    size_t n, cap;
} ivec;

static eco_err ivec_push(ivec *a, int32_t x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        int32_t *v = realloc(a->v, cap * sizeof *v);
        if (!v) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory for %zu ids", cap);
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return ECO_OK;
}

typedef struct {
    size_t start, end;
} range;

typedef struct {
    range *v;
    size_t n, cap;
} rvec;

static eco_err rvec_push(rvec *a, size_t s, size_t e)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        range *v = realloc(a->v, cap * sizeof *v);
        if (!v) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory for %zu pre-tokens", cap);
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = (range){s, e};
    return ECO_OK;
}

typedef struct {
    int32_t rank;
    uint32_t pos;
    int32_t id;
} merge_cand;

/* Per-call scratch, so one tokenizer can encode on many threads. */
typedef struct {
    const eco_tokenizer *tok;
    const char *text;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    rvec pieces[2];
    int32_t *sym;
    int32_t *prev, *next;
    size_t sym_cap;
    merge_cand *heap;
    size_t heap_n, heap_cap;
    char *mapped;
    size_t mapped_cap;
    ivec out;
} enc_ctx;

static bool cand_less(const merge_cand *a, const merge_cand *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static eco_err heap_push(enc_ctx *c, merge_cand m)
{
    if (c->heap_n == c->heap_cap) {
        size_t cap = c->heap_cap ? c->heap_cap * 2 : 64;
        merge_cand *h = realloc(c->heap, cap * sizeof *h);
        if (!h) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
        c->heap = h;
        c->heap_cap = cap;
    }
    size_t i = c->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(&m, &c->heap[p])) break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = m;
    return ECO_OK;
}

static merge_cand heap_pop(enc_ctx *c)
{
    merge_cand top = c->heap[0], last = c->heap[--c->heap_n];
    size_t i = 0, n = c->heap_n;
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        const merge_cand *bv = &last;
        if (l < n && cand_less(&c->heap[l], bv)) { best = l; bv = &c->heap[l]; }
        if (l + 1 < n && cand_less(&c->heap[l + 1], bv)) best = l + 1;
        if (best == i) break;
        c->heap[i] = c->heap[best];
        i = best;
    }
    if (n) c->heap[i] = last;
    return top;
}

static eco_err push_pair(enc_ctx *c, int32_t left)
{
    int32_t right = c->next[left];
    if (right < 0) return ECO_OK;
    const pmap_entry *m = pmap_get(&c->tok->merges, c->sym[left], c->sym[right]);
    if (!m) return ECO_OK;
    return heap_push(c, (merge_cand){m->rank, (uint32_t)left, m->id});
}

static eco_err grow_syms(enc_ctx *c, size_t need)
{
    if (need <= c->sym_cap) return ECO_OK;
    size_t cap = c->sym_cap ? c->sym_cap : 64;
    while (cap < need) cap *= 2;
    int32_t *s = realloc(c->sym, cap * sizeof *s);
    if (s) c->sym = s;
    int32_t *p = realloc(c->prev, cap * sizeof *p);
    if (p) c->prev = p;
    int32_t *n = realloc(c->next, cap * sizeof *n);
    if (n) c->next = n;
    if (!s || !p || !n) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory for a %zu-byte pre-token", need);
    c->sym_cap = cap;
    return ECO_OK;
}

/* BPE on one pre-token: start from one symbol per byte, then apply the lowest-ranked adjacent merge
 * (leftmost on ties) until none applies; a heap of candidates makes this O(n log n), as HF's word merge. */
static eco_err bpe_piece(enc_ctx *c, const unsigned char *p, size_t len)
{
    const eco_tokenizer *tok = c->tok;
    eco_err err;
    if (tok->ignore_merges) {
        if (len * 2 > c->mapped_cap) {
            char *m = realloc(c->mapped, len * 2);
            if (!m) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory");
            c->mapped = m;
            c->mapped_cap = len * 2;
        }
        size_t ml = 0;
        for (size_t i = 0; i < len; i++) ml += utf8_put(byte_to_cp(p[i]), c->mapped + ml);
        int32_t id;
        if (smap_get(&tok->vocab, c->mapped, ml, &id)) return ivec_push(&c->out, id);
    }
    if ((err = grow_syms(c, len * 2 + 1))) return err;
    size_t n = 0;
    bool pending_unk = false;
    for (size_t i = 0; i < len; i++) {
        int32_t id = tok->byte_id[p[i]];
        if (id >= 0) {
            pending_unk = false;
            c->sym[n++] = id;
            continue;
        }
        if (tok->byte_fallback) { /* <0xNN> tokens for the UTF-8 bytes of the byte's alphabet char */
            char u[4], name[8];
            size_t ul = utf8_put(byte_to_cp(p[i]), u);
            int32_t ids[4];
            bool all = true;
            for (size_t k = 0; k < ul && all; k++) {
                snprintf(name, sizeof name, "<0x%02X>", (unsigned char)u[k]);
                all = smap_get(&tok->vocab, name, 6, &ids[k]);
            }
            if (all) {
                pending_unk = false;
                for (size_t k = 0; k < ul; k++) c->sym[n++] = ids[k];
                continue;
            }
        }
        if (tok->unk_id >= 0 && !(pending_unk && tok->fuse_unk)) c->sym[n++] = tok->unk_id;
        pending_unk = tok->unk_id >= 0;
        /* no unk token: HF drops the character */
    }
    for (size_t i = 0; i < n; i++) {
        c->prev[i] = (int32_t)i - 1;
        c->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    c->heap_n = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if ((err = push_pair(c, (int32_t)i))) return err;
    while (c->heap_n) {
        merge_cand m = heap_pop(c);
        int32_t l = (int32_t)m.pos, r = c->next[l];
        if (c->sym[l] < 0 || r < 0) continue; /* merged away, or nothing on its right any more */
        const pmap_entry *cur = pmap_get(&tok->merges, c->sym[l], c->sym[r]);
        if (!cur || cur->id != m.id || cur->rank != m.rank) continue; /* stale: a neighbour changed */
        c->sym[l] = m.id;
        c->sym[r] = -1;
        c->next[l] = c->next[r];
        if (c->next[r] >= 0) c->prev[c->next[r]] = l;
        if (c->prev[l] >= 0 && (err = push_pair(c, c->prev[l]))) return err;
        if ((err = push_pair(c, l))) return err;
    }
    for (int32_t i = n ? 0 : -1; i >= 0; i = c->next[i])
        if ((err = ivec_push(&c->out, c->sym[i]))) return err;
    return ECO_OK;
}

static size_t utf8_len_at(const char *s) /* on valid UTF-8 */
{
    unsigned char c = (unsigned char)*s;
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* One regex split over text[r.start, r.end), as HF's Split (matches found like onig's find_iter). */
static eco_err split_piece(enc_ctx *c, const split_step *st, range r, rvec *out)
{
    PCRE2_SPTR subj = (PCRE2_SPTR)(c->text + r.start);
    size_t len = r.end - r.start, search = 0, prev = 0, last_match_end = SIZE_MAX;
    eco_err err;
    uint32_t opts = PCRE2_NO_UTF_CHECK;
    while (search <= len) {
        int rc = pcre2_match(st->re, subj, len, search, opts, c->md, c->mctx);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !(opts & PCRE2_NO_JIT)) { opts |= PCRE2_NO_JIT; continue; }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT)
            return eco_fail(ECO_ETOOBIG, "tokenizer: pre-tokenizer regex hit pcre2's match limit on a %zu-byte piece", len);
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return eco_fail(ECO_ESTATE, "tokenizer: pre-tokenizer regex failed: %s", (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
        size_t s = ov[0], e = ov[1];
        if (e < s) e = s; /* \K tricks; never in real patterns */
        if (s == e && last_match_end == e) { /* no empty match right after a match: step one char */
            if (search >= len) break;
            search += utf8_len_at((const char *)subj + search);
            continue;
        }
        search = e;
        last_match_end = e;
        if (s > prev && (err = rvec_push(out, r.start + prev, r.start + s))) return err;
        if (e > s && st->behavior == SPLIT_ISOLATED && (err = rvec_push(out, r.start + s, r.start + e))) return err;
        prev = e;
    }
    if (prev < len && (err = rvec_push(out, r.start + prev, r.end))) return err;
    return ECO_OK;
}

/* Normalizer, pre-tokenizer and model over a stretch of text between added tokens. */
static eco_err encode_plain(enc_ctx *c, size_t start, size_t end)
{
    eco_err err;
    rvec *cur = &c->pieces[0], *nxt = &c->pieces[1];
    cur->n = 0;
    if ((err = rvec_push(cur, start, end))) return err;
    for (size_t s = 0; s < c->tok->n_steps; s++) {
        nxt->n = 0;
        for (size_t i = 0; i < cur->n; i++)
            if ((err = split_piece(c, &c->tok->steps[s], cur->v[i], nxt))) return err;
        rvec *t = cur;
        cur = nxt;
        nxt = t;
    }
    for (size_t i = 0; i < cur->n; i++)
        if ((err = bpe_piece(c, (const unsigned char *)c->text + cur->v[i].start, cur->v[i].end - cur->v[i].start))) return err;
    return ECO_OK;
}

/* Longest added token (of the given normalized-ness) starting at text[i], or -1. */
static int32_t added_at(const eco_tokenizer *tok, const char *text, size_t i, size_t end, bool normalized)
{
    unsigned c = (unsigned char)text[i];
    for (uint32_t k = tok->first_off[c]; k < tok->first_off[c + 1]; k++) {
        const added_token *a = &tok->added[tok->by_first[k]];
        if (a->normalized == normalized && a->len <= end - i && memcmp(text + i, a->content, a->len) == 0)
            return (int32_t)tok->by_first[k];
    }
    return -1;
}

static size_t skip_ws_back(const char *t, size_t floor, size_t pos)
{
    while (pos > floor) {
        size_t q = pos - 1;
        while (q > floor && ((unsigned char)t[q] & 0xC0) == 0x80) q--;
        uint32_t cp;
        if (!utf8_seq((const unsigned char *)t + q, pos - q, &cp) || !is_white_space(cp)) break;
        pos = q;
    }
    return pos;
}

static size_t skip_ws_fwd(const char *t, size_t pos, size_t end)
{
    while (pos < end) {
        uint32_t cp;
        size_t l = utf8_seq((const unsigned char *)t + pos, end - pos, &cp);
        if (!l || !is_white_space(cp)) break;
        pos += l;
    }
    return pos;
}

static eco_err check_nfc(const char *text, size_t start, size_t end)
{
    for (size_t i = start; i < end;) {
        uint32_t cp;
        size_t l = utf8_seq((const unsigned char *)text + i, end - i, &cp);
        if (!nfc_inert(cp))
            return eco_fail(ECO_EUNSUPPORTED,
                            "tokenizer: the NFC normalizer is only implemented for text it leaves unchanged; U+%04X at byte %zu "
                            "may change (normalize the text to NFC first)", (unsigned)cp, i);
        i += l;
    }
    return ECO_OK;
}

static eco_err encode_gap(enc_ctx *c, size_t start, size_t end, bool normalized_pass);

/* Split out added tokens (leftmost-longest, lstrip/rstrip eat neighbouring whitespace), pass 1 on the raw
 * text for non-normalized tokens, pass 2 (after normalization) for normalized ones, as HF does. */
static eco_err encode_sections(enc_ctx *c, size_t start, size_t end, bool normalized_pass)
{
    const eco_tokenizer *tok = c->tok;
    eco_err err;
    size_t seg = start, i = start;
    while (i < end) {
        int32_t k = tok->n_added ? added_at(tok, c->text, i, end, normalized_pass) : -1;
        if (k < 0) { i++; continue; }
        const added_token *a = &tok->added[k];
        size_t gap_end = a->lstrip ? skip_ws_back(c->text, seg, i) : i;
        if (gap_end > seg && (err = encode_gap(c, seg, gap_end, normalized_pass))) return err;
        if ((err = ivec_push(&c->out, a->id))) return err;
        i += a->len;
        if (a->rstrip) i = skip_ws_fwd(c->text, i, end);
        seg = i;
    }
    return seg < end ? encode_gap(c, seg, end, normalized_pass) : ECO_OK;
}

static eco_err encode_gap(enc_ctx *c, size_t start, size_t end, bool normalized_pass)
{
    if (normalized_pass) return encode_plain(c, start, end);
    if (c->tok->nfc) {
        eco_err err = check_nfc(c->text, start, end);
        if (err) return err;
    }
    return encode_sections(c, start, end, true);
}

eco_err eco_tokenizer_encode_ex(const eco_tokenizer *tok, const char *utf8, size_t len, unsigned flags, int32_t **ids, size_t *n)
{
    if (!ids || !n) return eco_fail(ECO_EINVAL, "eco_tokenizer_encode: ids and n must not be NULL");
    *ids = NULL;
    *n = 0;
    if (!tok) return eco_fail(ECO_EINVAL, "eco_tokenizer_encode: tokenizer is NULL");
    if (!utf8 && len) return eco_fail(ECO_EINVAL, "eco_tokenizer_encode: text is NULL");
    if (len > ECO_TOKENIZER_MAX_TEXT_BYTES)
        return eco_fail(ECO_ETOOBIG, "tokenizer: text of %zu bytes, limit %zu", len, ECO_TOKENIZER_MAX_TEXT_BYTES);
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t l = utf8_seq((const unsigned char *)utf8 + i, len - i, &cp);
        if (!l) return eco_fail_field(ECO_EINVAL, "text", "tokenizer: text is not valid UTF-8 at byte %zu (0x%02X)", i, (unsigned char)utf8[i]);
        i += l;
    }
    enc_ctx c = {.tok = tok, .text = utf8 ? utf8 : ""};
    eco_err err = ECO_OK;
    if (tok->n_steps) {
        c.md = pcre2_match_data_create(1, NULL);
        c.mctx = pcre2_match_context_create(NULL);
        if (!c.md || !c.mctx) err = eco_fail(ECO_ENOMEM, "tokenizer: out of memory for pcre2 match data");
        else pcre2_set_match_limit(c.mctx, REGEX_MATCH_LIMIT);
    }
    if (!err && len) err = encode_sections(&c, 0, len, false);
    /* Template post-processing: each template wraps the result of the previous one. */
    if (!err && !(flags & ECO_TOK_NO_SPECIAL)) {
        for (size_t t = 0; t < tok->n_tmpls && !err; t++) {
            ivec body = c.out, res = {0};
            for (size_t i = 0; i < tok->tmpls[t].n && !err; i++) {
                const tmpl_item *it = &tok->tmpls[t].items[i];
                if (it->is_seq)
                    for (size_t k = 0; k < body.n && !err; k++) err = ivec_push(&res, body.v[k]);
                else
                    for (size_t k = 0; k < it->n && !err; k++) err = ivec_push(&res, it->ids[k]);
            }
            free(body.v);
            c.out = res;
        }
    }
    pcre2_match_data_free(c.md);
    pcre2_match_context_free(c.mctx);
    free(c.pieces[0].v);
    free(c.pieces[1].v);
    free(c.sym);
    free(c.prev);
    free(c.next);
    free(c.heap);
    free(c.mapped);
    if (err) { free(c.out.v); return err; }
    *ids = c.out.v;
    *n = c.out.n;
    return ECO_OK;
}

eco_err eco_tokenizer_encode(const eco_tokenizer *tok, const char *utf8, size_t len, int32_t **ids, size_t *n)
{
    return eco_tokenizer_encode_ex(tok, utf8, len, 0, ids, n);
}

/* ---------------------------------------------------------------- decoding and lookups */

eco_err eco_tokenizer_decode_ex(const eco_tokenizer *tok, const int32_t *ids, size_t n, unsigned flags, char **utf8, size_t *len)
{
    if (!utf8 || !len) return eco_fail(ECO_EINVAL, "eco_tokenizer_decode: utf8 and len must not be NULL");
    *utf8 = NULL;
    *len = 0;
    if (!tok) return eco_fail(ECO_EINVAL, "eco_tokenizer_decode: tokenizer is NULL");
    if (!ids && n) return eco_fail(ECO_EINVAL, "eco_tokenizer_decode: ids is NULL");
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || (size_t)id >= tok->vocab_size || !tok->names[id])
            return eco_fail_field(ECO_EINVAL, "ids", "tokenizer: ids[%zu] = %d is not in the vocabulary (size %zu)", i, (int)id,
                                  tok->vocab_size);
        total += tok->name_len[id]; /* bytes out <= bytes of the token string */
    }
    char *out = malloc(total + 1);
    if (!out) return eco_fail(ECO_ENOMEM, "tokenizer: out of memory decoding %zu ids", n);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if ((flags & ECO_TOK_SKIP_SPECIAL) && tok->special[id]) continue;
        const unsigned char *s = (const unsigned char *)tok->names[id];
        size_t sl = tok->name_len[id], start = o;
        bool mapped = true;
        for (size_t k = 0; k < sl;) {
            uint32_t cp;
            size_t l = utf8_seq(s + k, sl - k, &cp);
            if (!l || cp >= 324 || !tok->cp_to_byte[cp]) { mapped = false; break; }
            out[o++] = (char)(tok->cp_to_byte[cp] - 1);
            k += l;
        }
        if (!mapped) { /* a token outside the byte alphabet stands for its own UTF-8, as in HF */
            o = start;
            memcpy(out + o, s, sl);
            o += sl;
        }
    }
    out[o] = '\0';
    *utf8 = out;
    *len = o;
    return ECO_OK;
}

eco_err eco_tokenizer_decode(const eco_tokenizer *tok, const int32_t *ids, size_t n, char **utf8, size_t *len)
{
    return eco_tokenizer_decode_ex(tok, ids, n, 0, utf8, len);
}

size_t eco_tokenizer_vocab_size(const eco_tokenizer *tok) { return tok ? tok->vocab_size : 0; }

eco_err eco_tokenizer_token_to_id(const eco_tokenizer *tok, const char *token, int32_t *id)
{
    if (!tok || !token || !id) return eco_fail(ECO_EINVAL, "eco_tokenizer_token_to_id: NULL argument");
    size_t len = strlen(token);
    int32_t k;
    if (smap_get(&tok->added_map, token, len, &k)) { *id = tok->added[k].id; return ECO_OK; }
    if (smap_get(&tok->vocab, token, len, id)) return ECO_OK;
    return eco_fail(ECO_ENOTFOUND, "tokenizer: token \"%.60s\" is not in the vocabulary", token);
}

eco_err eco_tokenizer_id_to_token(const eco_tokenizer *tok, int32_t id, const char **token)
{
    if (!tok || !token) return eco_fail(ECO_EINVAL, "eco_tokenizer_id_to_token: NULL argument");
    if (id < 0 || (size_t)id >= tok->vocab_size || !tok->names[id])
        return eco_fail(ECO_ENOTFOUND, "tokenizer: id %d is not in the vocabulary (size %zu)", (int)id, tok->vocab_size);
    *token = tok->names[id];
    return ECO_OK;
}

bool eco_tokenizer_is_special(const eco_tokenizer *tok, int32_t id)
{
    return tok && id >= 0 && (size_t)id < tok->vocab_size && tok->special[id];
}
