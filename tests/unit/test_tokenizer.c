/* Byte-level BPE tokenizer: ids identical to @huggingface/tokenizers on the committed fixtures
 * (tests/fixtures/tokenizer/, made by generate.mjs), exact decode round trips, BPE and added-token
 * semantics on hand-made vocabularies, and clear errors for malformed tokenizer.json and bad text. */
#include "eco_test.h"

#include <string.h>
#include <time.h>

#include <jansson.h>

#include "eco/tokenizer.h"

static eco_tokenizer *load_fixture(const char *style)
{
    char rel[128], path[1024];
    snprintf(rel, sizeof rel, "tests/fixtures/tokenizer/%s.tokenizer.json", style);
    eco_tokenizer *tok = NULL;
    eco_err err = eco_tokenizer_load(eco_test_path("ECO_SOURCE_DIR", rel, path, sizeof path), &tok);
    if (err) fail_msg("loading %s: %s", path, eco_last_error());
    return tok;
}

static json_t *load_cases(const char *style)
{
    char rel[128], path[1024];
    snprintf(rel, sizeof rel, "tests/fixtures/tokenizer/%s.cases.json", style);
    json_error_t jerr;
    json_t *root = json_load_file(eco_test_path("ECO_SOURCE_DIR", rel, path, sizeof path), JSON_ALLOW_NUL, &jerr);
    if (!root) fail_msg("loading %s: %s", path, jerr.text);
    return root;
}

static void print_ids(const char *label, const int32_t *ids, size_t n)
{
    fprintf(stderr, "  %s (%zu):", label, n);
    for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", (int)ids[i]);
    fprintf(stderr, "\n");
}

/* Compares ids with a JSON array; prints both on mismatch. Returns true when equal. */
static bool ids_equal(const int32_t *ids, size_t n, json_t *expect, const char *what, size_t ci, const char *text)
{
    bool same = json_array_size(expect) == n;
    for (size_t i = 0; same && i < n; i++) same = json_integer_value(json_array_get(expect, i)) == ids[i];
    if (!same) {
        fprintf(stderr, "case %zu %s differs for text \"%s\"\n", ci, what, text);
        print_ids("got", ids, n);
        fprintf(stderr, "  expected (%zu):", json_array_size(expect));
        for (size_t i = 0; i < json_array_size(expect); i++)
            fprintf(stderr, " %lld", (long long)json_integer_value(json_array_get(expect, i)));
        fprintf(stderr, "\n");
    }
    return same;
}

static void check_fixture(const char *style, size_t min_cases)
{
    eco_tokenizer *tok = load_fixture(style);
    json_t *root = load_cases(style);
    json_t *cases = json_object_get(root, "cases");
    assert_true(json_array_size(cases) >= min_cases);
    size_t failures = 0, roundtrips = 0;
    for (size_t ci = 0; ci < json_array_size(cases); ci++) {
        json_t *c = json_array_get(cases, ci);
        json_t *jt = json_object_get(c, "text");
        const char *text = json_string_value(jt);
        size_t len = json_string_length(jt);
        int32_t *ids = NULL;
        size_t n = 0;
        eco_err err = eco_tokenizer_encode(tok, text, len, &ids, &n);
        if (err) fail_msg("%s case %zu \"%s\": %s", style, ci, text, eco_last_error());
        if (!ids_equal(ids, n, json_object_get(c, "ids"), "ids", ci, text)) failures++;

        char *dec = NULL;
        size_t dlen = 0;
        assert_int_equal(eco_tokenizer_decode(tok, ids, n, &dec, &dlen), ECO_OK);
        json_t *jd = json_object_get(c, "decoded");
        if (dlen != json_string_length(jd) || memcmp(dec, json_string_value(jd), dlen) != 0) {
            fprintf(stderr, "%s case %zu: decode gave \"%s\", expected \"%s\"\n", style, ci, dec, json_string_value(jd));
            failures++;
        }
        free(dec);
        free(ids);

        assert_int_equal(eco_tokenizer_encode_ex(tok, text, len, ECO_TOK_NO_SPECIAL, &ids, &n), ECO_OK);
        if (!ids_equal(ids, n, json_object_get(c, "ids_no_special"), "ids_no_special", ci, text)) failures++;
        if (json_is_true(json_object_get(c, "roundtrip"))) {
            assert_int_equal(eco_tokenizer_decode(tok, ids, n, &dec, &dlen), ECO_OK);
            if (dlen != len || memcmp(dec, text, len) != 0) {
                fprintf(stderr, "%s case %zu: round trip gave \"%s\" for \"%s\"\n", style, ci, dec, text);
                failures++;
            }
            roundtrips++;
            free(dec);
        }
        free(ids);
    }
    assert_true(roundtrips >= min_cases / 2);
    json_decref(root);
    eco_tokenizer_free(tok);
    if (failures) fail_msg("%s: %zu mismatches with @huggingface/tokenizers", style, failures);
}

static void test_fixture_gpt2(void **state) { (void)state; check_fixture("gpt2", 150); }
static void test_fixture_qwen2(void **state) { (void)state; check_fixture("qwen2", 100); }
static void test_fixture_llama3(void **state) { (void)state; check_fixture("llama3", 150); }

static void test_lookups(void **state)
{
    (void)state;
    eco_tokenizer *tok = load_fixture("llama3");
    int32_t bos, id;
    assert_int_equal(eco_tokenizer_token_to_id(tok, "<|begin_of_text|>", &bos), ECO_OK);
    assert_int_equal(eco_tokenizer_vocab_size(tok), (size_t)bos + 8); /* 8 added tokens after the vocab */
    assert_true(eco_tokenizer_is_special(tok, bos));
    const char *s;
    assert_int_equal(eco_tokenizer_id_to_token(tok, bos, &s), ECO_OK);
    assert_string_equal(s, "<|begin_of_text|>");
    /* byte-level alphabet: GPT-2 order puts '!' first and the space byte at 220 ("Ġ") */
    assert_int_equal(eco_tokenizer_token_to_id(tok, "!", &id), ECO_OK);
    assert_int_equal(id, 0);
    assert_int_equal(eco_tokenizer_token_to_id(tok, "\xc4\xa0", &id), ECO_OK);
    assert_int_equal(id, 220);
    assert_false(eco_tokenizer_is_special(tok, 220));
    assert_int_equal(eco_tokenizer_token_to_id(tok, "no such token", &id), ECO_ENOTFOUND);
    assert_int_equal(eco_tokenizer_id_to_token(tok, -1, &s), ECO_ENOTFOUND);
    assert_int_equal(eco_tokenizer_id_to_token(tok, (int32_t)eco_tokenizer_vocab_size(tok), &s), ECO_ENOTFOUND);

    /* BOS from the template, and skipped again on request */
    int32_t *ids;
    size_t n;
    assert_int_equal(eco_tokenizer_encode(tok, "Hi", 2, &ids, &n), ECO_OK);
    assert_true(n >= 2);
    assert_int_equal(ids[0], bos);
    char *dec;
    size_t dlen;
    assert_int_equal(eco_tokenizer_decode_ex(tok, ids, n, ECO_TOK_SKIP_SPECIAL, &dec, &dlen), ECO_OK);
    assert_string_equal(dec, "Hi");
    free(dec);
    ids[1] = (int32_t)eco_tokenizer_vocab_size(tok);
    assert_int_equal(eco_tokenizer_decode(tok, ids, n, &dec, &dlen), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "ids[1]"));
    free(ids);
    eco_tokenizer_free(tok);
}

static void test_bad_text(void **state)
{
    (void)state;
    eco_tokenizer *tok = load_fixture("llama3");
    int32_t *ids = (int32_t *)1;
    size_t n = 7;
    const char *cases[] = {"ab\xff", "ab\xc3", "ab\xc0\x80", "ab\xed\xa0\x80", "ab\xf4\x90\x80\x80", "ab\x80"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(eco_tokenizer_encode(tok, cases[i], strlen(cases[i]), &ids, &n), ECO_EINVAL);
        assert_null(ids);
        assert_int_equal(n, 0);
        assert_non_null(strstr(eco_last_error(), "not valid UTF-8 at byte 2"));
    }
    /* empty text: only the BOS */
    assert_int_equal(eco_tokenizer_encode(tok, "", 0, &ids, &n), ECO_OK);
    assert_int_equal(n, 1);
    free(ids);
    assert_int_equal(eco_tokenizer_encode_ex(tok, NULL, 0, ECO_TOK_NO_SPECIAL, &ids, &n), ECO_OK);
    assert_int_equal(n, 0);
    free(ids);
    eco_tokenizer_free(tok);

    /* Qwen2's NFC step: text NFC would change is refused, not silently mis-tokenized */
    tok = load_fixture("qwen2");
    assert_int_equal(eco_tokenizer_encode(tok, "cafe\xcc\x81", 6, &ids, &n), ECO_EUNSUPPORTED);
    assert_non_null(strstr(eco_last_error(), "U+0301"));
    assert_int_equal(eco_tokenizer_encode(tok, "caf\xc3\xa9", 5, &ids, &n), ECO_OK);
    free(ids);
    eco_tokenizer_free(tok);
}

/* The NFC-inert ranges the node test validated with String.prototype.normalize are exactly the ones the
 * C tokenizer accepts: each range's ends encode, the code points just outside are refused. */
static bool in_ranges(json_t *ranges, long cp)
{
    for (size_t i = 0; i < json_array_size(ranges); i++) {
        json_t *r = json_array_get(ranges, i);
        if (cp >= json_integer_value(json_array_get(r, 0)) && cp <= json_integer_value(json_array_get(r, 1))) return true;
    }
    return false;
}

static void test_nfc_ranges(void **state)
{
    (void)state;
    eco_tokenizer *tok = load_fixture("qwen2");
    json_t *root = load_cases("qwen2");
    json_t *ranges = json_object_get(root, "nfc_inert_ranges");
    assert_true(json_array_size(ranges) >= 5);
    size_t probes = 0;
    for (size_t i = 0; i < json_array_size(ranges); i++) {
        json_t *r = json_array_get(ranges, i);
        long lo = (long)json_integer_value(json_array_get(r, 0)), hi = (long)json_integer_value(json_array_get(r, 1));
        long cps[] = {lo - 1, lo, (lo + hi) / 2, hi, hi + 1};
        for (size_t k = 0; k < 5; k++) {
            long cp = cps[k];
            if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
            char text[8];
            size_t n = 0;
            if (cp < 0x80) text[n++] = (char)cp;
            else if (cp < 0x800) { text[n++] = (char)(0xC0 | (cp >> 6)); text[n++] = (char)(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) {
                text[n++] = (char)(0xE0 | (cp >> 12)); text[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                text[n++] = (char)(0x80 | (cp & 0x3F));
            } else {
                text[n++] = (char)(0xF0 | (cp >> 18)); text[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                text[n++] = (char)(0x80 | ((cp >> 6) & 0x3F)); text[n++] = (char)(0x80 | (cp & 0x3F));
            }
            int32_t *ids;
            size_t nids;
            eco_err err = eco_tokenizer_encode(tok, text, n, &ids, &nids);
            eco_err want = in_ranges(ranges, cp) ? ECO_OK : ECO_EUNSUPPORTED;
            if (err != want) fail_msg("U+%04lX: got %s, want %s", cp, eco_err_name(err), eco_err_name(want));
            if (!err) free(ids);
            probes++;
        }
    }
    assert_true(probes >= 40);
    json_decref(root);
    eco_tokenizer_free(tok);
}

/* ---- hand-made tokenizers */

/* A byte-level tokenizer whose vocab holds only the listed tokens (other bytes are dropped, as in HF). */
static eco_tokenizer *make_tok(const char *vocab, const char *merges, const char *added, const char *pre)
{
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"added_tokens\": [%s], \"normalizer\": null, \"pre_tokenizer\": %s, \"post_processor\": null,"
             " \"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {%s}, \"merges\": [%s]}}",
             added, pre ? pre : "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}", vocab, merges);
    eco_tokenizer *tok = NULL;
    if (eco_tokenizer_load_json(buf, strlen(buf), &tok)) fail_msg("make_tok: %s", eco_last_error());
    return tok;
}

static void expect_ids(eco_tokenizer *tok, const char *text, const int32_t *want, size_t nwant)
{
    int32_t *ids;
    size_t n;
    if (eco_tokenizer_encode(tok, text, strlen(text), &ids, &n)) fail_msg("encode \"%s\": %s", text, eco_last_error());
    bool same = n == nwant && (n == 0 || memcmp(ids, want, n * sizeof *ids) == 0);
    if (!same) {
        print_ids("got", ids, n);
        print_ids("want", want, nwant);
        free(ids);
        fail_msg("wrong ids for \"%s\"", text);
    }
    free(ids);
}

static void test_merge_order(void **state)
{
    (void)state;
    const char *vocab = "\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"bc\": 4, \"abc\": 5, \"aa\": 6, \"aaaa\": 7";
    /* lowest rank first: "b c" (0) beats "a b" (1), then "a bc" */
    eco_tokenizer *tok = make_tok(vocab, "\"b c\", \"a b\", \"a bc\"", "", NULL);
    expect_ids(tok, "abc", (int32_t[]){5}, 1);
    expect_ids(tok, "ab", (int32_t[]){3}, 1);
    expect_ids(tok, "cab", (int32_t[]){2, 3}, 2);
    /* '-' is not in this vocab and there is no unk: HF drops it, so a and b become neighbours and merge */
    expect_ids(tok, "a-b", (int32_t[]){3}, 1);
    eco_tokenizer_free(tok);
    /* other order: "a b" first, then no "ab c" merge exists */
    tok = make_tok(vocab, "[\"a\", \"b\"], [\"b\", \"c\"], [\"a\", \"bc\"]", "", NULL);
    expect_ids(tok, "abc", (int32_t[]){3, 2}, 2);
    eco_tokenizer_free(tok);
    /* ties go to the leftmost pair: aaa -> aa a; aaaa -> aa aa -> aaaa; aaaaa -> aaaa a */
    tok = make_tok(vocab, "\"a a\", \"aa aa\"", "", NULL);
    expect_ids(tok, "aaa", (int32_t[]){6, 0}, 2);
    expect_ids(tok, "aaaa", (int32_t[]){7}, 1);
    expect_ids(tok, "aaaaa", (int32_t[]){7, 0}, 2);
    expect_ids(tok, "aaaaaa", (int32_t[]){7, 6}, 2);
    eco_tokenizer_free(tok);
}

static void test_added_tokens(void **state)
{
    (void)state;
    const char *vocab = "\"a\": 0, \"b\": 1, \"<\": 2, \">\": 3, \"x\": 4, \"\xc4\xa0\": 5";
    eco_tokenizer *tok = make_tok(vocab, "",
                                  "{\"id\": 10, \"content\": \"<x>\", \"special\": true},"
                                  "{\"id\": 11, \"content\": \"<x>b\", \"special\": false, \"normalized\": false},"
                                  "{\"id\": 12, \"content\": \"x\", \"special\": false, \"rstrip\": true, \"normalized\": true}",
                                  NULL);
    expect_ids(tok, "a<x>ba", (int32_t[]){0, 11, 0}, 3);  /* longest at the leftmost position */
    expect_ids(tok, "<x><x>a", (int32_t[]){10, 10, 0}, 3);
    expect_ids(tok, "<xa", (int32_t[]){2, 12, 0}, 3);     /* normalized token found in pass 2 */
    expect_ids(tok, "x  a", (int32_t[]){12, 0}, 2);       /* rstrip eats the spaces */
    expect_ids(tok, "a ", (int32_t[]){0, 5}, 2);
    assert_int_equal(eco_tokenizer_vocab_size(tok), 13);
    assert_true(eco_tokenizer_is_special(tok, 10));
    assert_false(eco_tokenizer_is_special(tok, 11));
    int32_t id;
    assert_int_equal(eco_tokenizer_token_to_id(tok, "x", &id), ECO_OK);
    assert_int_equal(id, 12); /* the added token wins over the vocab entry with the same content */
    eco_tokenizer_free(tok);
}

static void test_split_behaviors(void **state)
{
    (void)state;
    const char *vocab = "\"a\": 0, \"b\": 1, \"-\": 2, \"ab\": 3, \"b-\": 4";
    /* Isolated keeps the delimiter as its own piece, so "b-" never merges */
    eco_tokenizer *tok = make_tok(vocab, "\"a b\", \"b -\"", "",
                                  "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"},"
                                  " \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"use_regex\": false}]}");
    expect_ids(tok, "ab-ab", (int32_t[]){3, 2, 3}, 3);
    eco_tokenizer_free(tok);
    tok = make_tok(vocab, "\"b -\", \"a b\"", "",
                   "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"-+\"},"
                   " \"behavior\": \"Removed\", \"invert\": false}, {\"type\": \"ByteLevel\", \"use_regex\": false}]}");
    expect_ids(tok, "ab--ab-", (int32_t[]){3, 3}, 2);
    eco_tokenizer_free(tok);
    /* without a Split, "b -" (rank 0) wins over "a b" */
    tok = make_tok(vocab, "\"b -\", \"a b\"", "", NULL);
    expect_ids(tok, "ab-", (int32_t[]){0, 4}, 2);
    eco_tokenizer_free(tok);
    /* an empty-matching regex splits without infinite loops */
    tok = make_tok(vocab, "\"a b\"", "",
                   "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(?=b)\"},"
                   " \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"use_regex\": false}]}");
    expect_ids(tok, "abab", (int32_t[]){0, 1, 0, 1}, 4);
    eco_tokenizer_free(tok);
}

static void test_long_pretoken(void **state)
{
    (void)state;
    /* one 256 KiB pre-token: the heap keeps BPE at O(n log n) (a rescan per merge would take minutes) */
    eco_tokenizer *tok = make_tok("\"a\": 0, \"aa\": 1, \"aaaa\": 2", "\"a a\", \"aa aa\"", "", NULL);
    size_t len = 256 * 1024 + 1;
    char *text = malloc(len + 1);
    memset(text, 'a', len);
    text[len] = '\0';
    int32_t *ids;
    size_t n;
    clock_t t0 = clock();
    assert_int_equal(eco_tokenizer_encode(tok, text, len, &ids, &n), ECO_OK);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_int_equal(n, len / 4 + 1);
    for (size_t i = 0; i + 1 < n; i++) assert_int_equal(ids[i], 2);
    assert_int_equal(ids[n - 1], 0);
    assert_true(secs < 20.0);
    free(ids);
    free(text);
    eco_tokenizer_free(tok);
}

/* ---- malformed tokenizer.json */

static void expect_load_error(const char *json, eco_err code, const char *needle)
{
    eco_tokenizer *tok = (eco_tokenizer *)1;
    eco_err err = eco_tokenizer_load_json(json, strlen(json), &tok);
    if (err != code)
        fail_msg("expected %s, got %s (%s) for %s", eco_err_name(code), eco_err_name(err), eco_last_error(), json);
    assert_null(tok);
    if (!strstr(eco_last_error(), needle)) fail_msg("message \"%s\" lacks \"%s\"", eco_last_error(), needle);
}

#define PRE "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"decoder\": {\"type\": \"ByteLevel\"}"

static void test_malformed(void **state)
{
    (void)state;
    expect_load_error("", ECO_EFORMAT, "tokenizer.json");
    expect_load_error("{\"model\": ", ECO_EFORMAT, "tokenizer.json:1");
    expect_load_error("[1, 2]", ECO_EFORMAT, "must be an object");
    expect_load_error("{" PRE "}", ECO_EFORMAT, "missing field \"model\"");
    expect_load_error("{" PRE ", \"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", ECO_EUNSUPPORTED, "WordPiece");
    expect_load_error("{" PRE ", \"model\": {\"type\": \"BPE\", \"vocab\": [], \"merges\": []}}", ECO_EFORMAT, "model.vocab");
    expect_load_error("{" PRE ", \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}", ECO_EFORMAT, "model.merges");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a c\"]}}", ECO_EFORMAT,
                      "model.merges[0] names token \"c\"");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [[\"a\", \"b\"]]}}", ECO_EFORMAT,
                      "merged token \"ab\" is not in model.vocab");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"ab\"]}}", ECO_EFORMAT,
                      "not two tokens");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b c\"]}}", ECO_EFORMAT,
                      "not two tokens");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [[\"a\"]]}}", ECO_EFORMAT,
                      "model.merges[0] must be");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}", ECO_EFORMAT, "gives id 0 to both");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": -1}, \"merges\": []}}", ECO_ETOOBIG, "outside");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": 99999999999}, \"merges\": []}}", ECO_ETOOBIG, "outside");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": \"0\"}, \"merges\": []}}", ECO_EFORMAT, "integer id");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": 0, \"a\": 1}, \"merges\": []}}", ECO_EFORMAT, "duplicate");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": 0}, \"merges\": [], \"unk_token\": \"<unk>\"}}", ECO_EFORMAT,
                      "unk_token");
    expect_load_error("{" PRE ", \"model\": {\"vocab\": {\"a\": 0}, \"merges\": [], \"continuing_subword_prefix\": \"##\"}}",
                      ECO_EUNSUPPORTED, "continuing_subword_prefix");
    expect_load_error("{\"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EUNSUPPORTED, "no ByteLevel");
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"Metaspace\"}, \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EUNSUPPORTED, "Metaspace");
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
                      "{\"Regex\": \"(a\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\"}]}, \"decoder\": {\"type\": \"ByteLevel\"},"
                      " \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EFORMAT, "pre_tokenizer.pretokenizers[0]: regex does not compile");
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
                      "{\"Regex\": \"a\"}, \"behavior\": \"MergedWithNext\"}, {\"type\": \"ByteLevel\"}]}, \"decoder\": {\"type\": \"ByteLevel\"},"
                      " \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EUNSUPPORTED, "MergedWithNext");
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"ByteLevel\"}, {\"type\": \"Split\","
                      " \"pattern\": {\"Regex\": \"a\"}, \"behavior\": \"Isolated\"}]}, \"decoder\": {\"type\": \"ByteLevel\"},"
                      " \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EUNSUPPORTED, "may come last");
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true}, \"decoder\": {\"type\": \"ByteLevel\"},"
                      " \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EUNSUPPORTED, "add_prefix_space");
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"ByteLevel\"}, \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EUNSUPPORTED, "decoder");
    expect_load_error("{\"normalizer\": {\"type\": \"NFKC\"}, " PRE ", \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EUNSUPPORTED, "NFKC");
    expect_load_error("{" PRE ", \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
                      "{\"id\": \"<s>\", \"type_id\": 0}}], \"special_tokens\": {}}, \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EFORMAT, "missing from post_processor.special_tokens");
    expect_load_error("{" PRE ", \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
                      "{\"id\": \"<s>\", \"type_id\": 0}}], \"special_tokens\": {\"<s>\": {\"ids\": [7]}}}, \"model\": {\"vocab\": "
                      "{\"a\": 0}, \"merges\": []}}",
                      ECO_EFORMAT, "id 7 is neither");
    expect_load_error("{" PRE ", \"post_processor\": {\"type\": \"RobertaProcessing\"}, \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EUNSUPPORTED, "RobertaProcessing");
    expect_load_error("{" PRE ", \"added_tokens\": [{\"id\": 1, \"content\": \"\"}], \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EFORMAT, "added_tokens[0].content");
    expect_load_error("{" PRE ", \"added_tokens\": [{\"content\": \"x\"}], \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EFORMAT, "added_tokens[0].id");
    expect_load_error("{" PRE ", \"added_tokens\": [{\"id\": 1, \"content\": \"x\"}, {\"id\": 2, \"content\": \"x\"}], "
                      "\"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
                      ECO_EFORMAT, "repeats");
    /* a huge token string */
    size_t big = ECO_TOKENIZER_MAX_TOKEN_BYTES + 10;
    char *json = malloc(big + 256);
    int k = snprintf(json, big + 256, "{" PRE ", \"model\": {\"vocab\": {\"");
    memset(json + k, 'a', big);
    snprintf(json + k + big, 256, "\": 0}, \"merges\": []}}");
    expect_load_error(json, ECO_ETOOBIG, "bytes long");
    free(json);

    eco_tokenizer *tok = (eco_tokenizer *)1;
    assert_int_equal(eco_tokenizer_load("/nonexistent/tokenizer.json", &tok), ECO_EIO);
    assert_null(tok);
    assert_non_null(strstr(eco_last_error(), "/nonexistent/tokenizer.json"));
    assert_int_equal(eco_tokenizer_load_json("{}", ECO_TOKENIZER_MAX_JSON_BYTES + 1, &tok), ECO_ETOOBIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_gpt2),   cmocka_unit_test(test_fixture_qwen2),   cmocka_unit_test(test_fixture_llama3),
        cmocka_unit_test(test_lookups),        cmocka_unit_test(test_nfc_ranges),        cmocka_unit_test(test_bad_text),        cmocka_unit_test(test_merge_order),
        cmocka_unit_test(test_added_tokens),   cmocka_unit_test(test_split_behaviors), cmocka_unit_test(test_long_pretoken),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
