/* Focused tests of the JSON-Schema validator: error locations and messages, refusals, limits, numeric
 * edge cases, the json helpers, and our energy.json schema against its examples and their sidecars. */
#include <dirent.h>
#include <string.h>

#include "eco/json.h"
#include "eco/jsonschema.h"
#include "eco_test.h"

static json_t *parse(const char *text)
{
    json_t *j;
    if (eco_json_loadb(text, strlen(text), "test", 0, &j)) fail_msg("bad test JSON: %s", eco_last_error());
    return j;
}

static eco_schema *compile_text(const char *text)
{
    json_t *j = parse(text);
    eco_schema *s;
    if (eco_schema_compile(j, &s)) fail_msg("compile failed: %s", eco_last_error());
    json_decref(j);
    return s;
}

/* Validates and returns the verdict code, errors in `errs`. */
static eco_err run(eco_schema *s, const char *instance, eco_schema_errors *errs)
{
    json_t *j = parse(instance);
    eco_schema_errors_clear(errs);
    eco_err rc = eco_schema_validate(s, j, errs);
    json_decref(j);
    return rc;
}

static eco_err compile_rc(const char *text)
{
    json_t *j = parse(text);
    eco_schema *s = NULL;
    eco_err rc = eco_schema_compile(j, &s);
    eco_schema_free(s);
    json_decref(j);
    return rc;
}

static void error_locations_and_messages(void **state)
{
    (void)state;
    eco_schema *s = compile_text("{\"type\":\"object\",\"required\":[\"results\",\"tool\"],"
                                 "\"properties\":{\"results\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/r\"}}},"
                                 "\"$defs\":{\"r\":{\"type\":\"object\",\"properties\":{"
                                 "\"mj_per_token\":{\"type\":\"number\",\"minimum\":0},"
                                 "\"precision\":{\"enum\":[\"fp16\",\"nf4\"]}}}}}");
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    eco_err rc = run(s, "{\"results\":[{\"mj_per_token\":1},{\"mj_per_token\":-2.5,\"precision\":\"fp32\"},"
                        "{\"mj_per_token\":\"x\"}]}",
                     &errs);
    assert_int_equal(rc, ECO_EINVAL);
    assert_int_equal(errs.count, 4);
    assert_string_equal(errs.items[0].instance_path, "");
    assert_string_equal(errs.items[0].keyword, "required");
    assert_string_equal(errs.items[0].message, "missing required property \"tool\"");
    assert_string_equal(errs.items[0].schema_path, "/required");
    assert_string_equal(errs.items[1].instance_path, "/results/1/mj_per_token");
    assert_string_equal(errs.items[1].keyword, "minimum");
    assert_string_equal(errs.items[1].message, "must be >= 0, got -2.5");
    assert_string_equal(errs.items[1].schema_path, "/$defs/r/properties/mj_per_token/minimum");
    assert_string_equal(errs.items[2].instance_path, "/results/1/precision");
    assert_string_equal(errs.items[2].keyword, "enum");
    assert_string_equal(errs.items[2].message, "must be one of [\"fp16\",\"nf4\"], got \"fp32\"");
    assert_string_equal(errs.items[3].instance_path, "/results/2/mj_per_token");
    assert_string_equal(errs.items[3].message, "must be number, got string");
    /* The summary message names the first error. */
    assert_non_null(strstr(eco_last_error(), "missing required property"));
    assert_int_equal(run(s, "{\"results\":[],\"tool\":\"eco\"}", &errs), ECO_OK);
    assert_int_equal(errs.count, 0);
    eco_schema_errors_free(&errs);
    eco_schema_free(s);
}

static void pointer_escaping_and_additional(void **state)
{
    (void)state;
    eco_schema *s = compile_text("{\"properties\":{\"a/b~c\":{\"type\":\"integer\"}},\"additionalProperties\":false}");
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    assert_int_equal(run(s, "{\"a/b~c\":1.5,\"zz\":0}", &errs), ECO_EINVAL);
    assert_int_equal(errs.count, 2);
    assert_string_equal(errs.items[0].instance_path, "/a~1b~0c");
    assert_string_equal(errs.items[0].schema_path, "/properties/a~1b~0c/type");
    assert_string_equal(errs.items[1].instance_path, "/zz");
    assert_string_equal(errs.items[1].keyword, "additionalProperties");
    assert_string_equal(errs.items[1].message, "property \"zz\" is not allowed");
    /* Verdict-only mode agrees. */
    json_t *j = parse("{\"a/b~c\":1.0}");
    assert_int_equal(eco_schema_validate(s, j, NULL), ECO_OK); /* 1.0 is an integer */
    json_decref(j);
    eco_schema_errors_free(&errs);
    eco_schema_free(s);
}

static void composition_messages(void **state)
{
    (void)state;
    eco_schema *s = compile_text("{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":2}],"
                                 "\"if\":{\"type\":\"number\"},\"then\":{\"maximum\":10}}");
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    assert_int_equal(run(s, "3", &errs), ECO_EINVAL);
    assert_int_equal(errs.count, 1);
    assert_string_equal(errs.items[0].keyword, "oneOf");
    assert_string_equal(errs.items[0].message, "must match exactly one schema in oneOf, but matches 0 and 1");
    assert_int_equal(run(s, "12.5", &errs), ECO_EINVAL);
    assert_int_equal(errs.count, 1); /* oneOf: only minimum matches; then: maximum fails */
    assert_string_equal(errs.items[0].keyword, "maximum");
    assert_string_equal(errs.items[0].schema_path, "/then/maximum");
    assert_int_equal(run(s, "1.5", &errs), ECO_EINVAL);
    assert_string_equal(errs.items[0].message, "must match exactly one of the 2 schemas in oneOf, matched none");
    assert_int_equal(run(s, "2.5", &errs), ECO_OK);
    eco_schema_errors_free(&errs);
    eco_schema_free(s);
}

static void refusals_at_compile_time(void **state)
{
    (void)state;
    assert_int_equal(compile_rc("{\"$dynamicRef\":\"#x\"}"), ECO_EUNSUPPORTED);
    assert_non_null(strstr(eco_last_error(), "$dynamicRef"));
    assert_int_equal(compile_rc("{\"properties\":{\"a\":{\"unevaluatedProperties\":false}}}"), ECO_EUNSUPPORTED);
    assert_non_null(strstr(eco_last_error(), "/properties/a/unevaluatedProperties"));
    assert_int_equal(compile_rc("{\"unevaluatedItems\":false}"), ECO_EUNSUPPORTED);
    assert_int_equal(compile_rc("{\"$ref\":\"http://example.com/other.json#/x\"}"), ECO_EUNSUPPORTED);
    assert_non_null(strstr(eco_last_error(), "remote"));
    assert_int_equal(compile_rc("{\"$schema\":\"http://json-schema.org/draft-07/schema#\"}"), ECO_EUNSUPPORTED);
    /* Malformed keyword values name their location. */
    assert_int_equal(compile_rc("{\"properties\":{\"a\":{\"minimum\":\"0\"}}}"), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "/properties/a/minimum"));
    assert_int_equal(compile_rc("{\"pattern\":\"(\"}"), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "bad regular expression"));
    assert_int_equal(compile_rc("{\"$ref\":\"#/$defs/missing\"}"), ECO_EINVAL);
    assert_int_equal(compile_rc("{\"items\":[{}]}"), ECO_EINVAL);
    assert_int_equal(compile_rc("{\"type\":\"float\"}"), ECO_EINVAL);
    assert_int_equal(compile_rc("{\"multipleOf\":0}"), ECO_EINVAL);
    assert_int_equal(compile_rc("[]"), ECO_EINVAL);
    /* Unknown keywords: annotations by default, errors in strict mode. */
    assert_int_equal(compile_rc("{\"maximun\":3}"), ECO_OK);
    json_t *j = parse("{\"properties\":{\"x\":{\"maximun\":3}}}");
    eco_schema *s = NULL;
    assert_int_equal(eco_schema_compile_ex(j, ECO_SCHEMA_STRICT, &s), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "/properties/x: unknown keyword 'maximun'"));
    json_decref(j);
    assert_null(s);
}

static void recursion_is_bounded(void **state)
{
    (void)state;
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    /* A ref cycle that never consumes instance: evaluation stops at the depth limit with an error. */
    eco_schema *s = compile_text("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},"
                                 "\"$ref\":\"#/$defs/a\"}");
    assert_int_equal(run(s, "1", &errs), ECO_ETOOBIG);
    assert_int_equal(errs.count, 1);
    assert_string_equal(errs.items[0].keyword, "$ref");
    json_t *one = json_integer(1);
    assert_int_equal(eco_schema_validate(s, one, NULL), ECO_ETOOBIG);
    json_decref(one);
    eco_schema_free(s);
    /* Inside "not" the failure is still reported, not turned into a pass. */
    s = compile_text("{\"not\":{\"$ref\":\"#\"}}");
    assert_int_equal(run(s, "1", &errs), ECO_ETOOBIG);
    eco_schema_free(s);
    /* Recursion that consumes instance is fine until the instance is deeper than the limit. */
    s = compile_text("{\"items\":{\"$ref\":\"#\"},\"type\":\"array\"}");
    char deep[2 * 1200 + 1];
    for (int depth = 100; depth <= 1200; depth += 1100) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        deep[2 * depth] = '\0';
        assert_int_equal(run(s, deep, &errs), depth == 100 ? ECO_OK : ECO_ETOOBIG);
    }
    eco_schema_free(s);
    eco_schema_errors_free(&errs);
}

static void error_cap(void **state)
{
    (void)state;
    eco_schema *s = compile_text("{\"items\":{\"type\":\"string\"}}");
    char buf[1024] = "[";
    for (int i = 0; i < 150; i++) strcat(buf, i ? ",1" : "1");
    strcat(buf, "]");
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    assert_int_equal(run(s, buf, &errs), ECO_EINVAL);
    assert_int_equal(errs.count, ECO_SCHEMA_MAX_ERRORS);
    assert_int_equal(errs.dropped, 150 - ECO_SCHEMA_MAX_ERRORS);
    assert_string_equal(errs.items[99].instance_path, "/99");
    errs.max = 3;
    assert_int_equal(run(s, buf, &errs), ECO_EINVAL);
    assert_int_equal(errs.count, 3);
    assert_int_equal(errs.dropped, 147);
    eco_schema_errors_free(&errs);
    eco_schema_free(s);
}

static void numbers_strings_arrays(void **state)
{
    (void)state;
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    eco_schema *s = compile_text("{\"multipleOf\":0.01}");
    assert_int_equal(run(s, "19.99", &errs), ECO_OK);
    assert_int_equal(run(s, "0.3", &errs), ECO_OK);
    assert_int_equal(run(s, "0.305", &errs), ECO_EINVAL);
    assert_string_equal(errs.items[0].message, "must be a multiple of 0.01, got 0.305");
    eco_schema_free(s);
    /* Integer vs real comparisons stay exact beyond 2^53. */
    s = compile_text("{\"maximum\":9007199254740992.0}");
    assert_int_equal(run(s, "9007199254740992", &errs), ECO_OK);
    assert_int_equal(run(s, "9007199254740993", &errs), ECO_EINVAL);
    eco_schema_free(s);
    /* Lengths count code points: U+1F4A9 is 4 bytes, 1 character. */
    s = compile_text("{\"maxLength\":2,\"minLength\":2}");
    assert_int_equal(run(s, "\"\\ud83d\\udca9\\u00e9\"", &errs), ECO_OK);
    assert_int_equal(run(s, "\"abc\"", &errs), ECO_EINVAL);
    assert_string_equal(errs.items[0].message, "must be at most 2 characters long, got 3");
    eco_schema_free(s);
    /* Equality is by value: 1 == 1.0, objects regardless of key order. */
    s = compile_text("{\"uniqueItems\":true}");
    assert_int_equal(run(s, "[0, {\"a\":1,\"b\":[2]}, 3, {\"b\":[2.0],\"a\":1}]", &errs), ECO_EINVAL);
    assert_string_equal(errs.items[0].message, "items must be unique, but items 1 and 3 are equal");
    assert_int_equal(run(s, "[1, \"1\", [1], {\"1\":1}, true, null]", &errs), ECO_OK);
    eco_schema_free(s);
    s = compile_text("{\"const\":{\"a\":[1,2]}}");
    assert_int_equal(run(s, "{\"a\":[1.0,2.0]}", &errs), ECO_OK);
    assert_int_equal(run(s, "{\"a\":[2,1]}", &errs), ECO_EINVAL);
    eco_schema_free(s);
    /* Catastrophic backtracking hits the match limit and is reported, not hung on. */
    s = compile_text("{\"pattern\":\"^(a+)+$\"}");
    assert_int_equal(run(s, "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"", &errs), ECO_EINVAL);
    assert_non_null(strstr(errs.items[0].message, "regex limits exceeded"));
    assert_int_equal(run(s, "\"aaaa\"", &errs), ECO_OK);
    eco_schema_free(s);
    /* ECMA-262 long Unicode property names. */
    s = compile_text("{\"pattern\":\"^\\\\p{Lowercase_Letter}+$\"}");
    assert_int_equal(run(s, "\"\\u03c0abc\"", &errs), ECO_OK);
    assert_int_equal(run(s, "\"Abc\"", &errs), ECO_EINVAL);
    eco_schema_free(s);
    /* contains with counts */
    s = compile_text("{\"contains\":{\"const\":\"fp16\"},\"minContains\":1,\"maxContains\":1}");
    assert_int_equal(run(s, "[\"nf4\",\"fp16\"]", &errs), ECO_OK);
    assert_int_equal(run(s, "[\"fp16\",\"fp16\"]", &errs), ECO_EINVAL);
    assert_string_equal(errs.items[0].keyword, "maxContains");
    assert_int_equal(run(s, "[\"nf4\"]", &errs), ECO_EINVAL);
    assert_string_equal(errs.items[0].keyword, "minContains");
    eco_schema_free(s);
    eco_schema_errors_free(&errs);
}

static void schema_is_copied_and_ids_resolve(void **state)
{
    (void)state;
    json_t *j = parse("{\"$id\":\"https://x.example/s/root.json\",\"$ref\":\"defs.json#pos\","
                      "\"$defs\":{\"d\":{\"$id\":\"defs.json\",\"$defs\":{\"p\":{\"$anchor\":\"pos\",\"minimum\":0}}}}}");
    eco_schema *s;
    assert_int_equal(eco_schema_compile(j, &s), ECO_OK);
    assert_string_equal(eco_schema_id(s), "https://x.example/s/root.json");
    /* Changing the caller's document after compiling changes nothing. */
    json_object_set_new(json_object_get(json_object_get(json_object_get(json_object_get(j, "$defs"), "d"), "$defs"), "p"),
                        "minimum", json_integer(100));
    json_decref(j);
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    assert_int_equal(run(s, "5", &errs), ECO_OK);
    assert_int_equal(run(s, "-1", &errs), ECO_EINVAL);
    assert_string_equal(errs.items[0].schema_path, "/$defs/d/$defs/p/minimum");
    eco_schema_errors_free(&errs);
    eco_schema_free(s);
}

static void json_helpers(void **state)
{
    (void)state;
    json_t *j = NULL;
    assert_int_equal(eco_json_loadb("{\n  \"a\": 1,\n  \"b\": }", 19, "doc.json", 0, &j), ECO_EFORMAT);
    assert_null(j);
    assert_non_null(strstr(eco_last_error(), "doc.json:3:"));
    assert_int_equal(eco_json_loadb("{\"a\":1,\"a\":2}", 13, "dup.json", 0, &j), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "duplicate"));
    assert_int_equal(eco_json_loadb("[1,2,3]", 7, "big.json", 4, &j), ECO_ETOOBIG);
    assert_int_equal(eco_json_loadb("", 0, "empty.json", 0, &j), ECO_EFORMAT);
    assert_int_equal(eco_json_load_file("/nonexistent/energy.json", 0, &j), ECO_EIO);
    assert_non_null(strstr(eco_last_error(), "/nonexistent/energy.json"));

    j = parse("{\"s\":\"x\",\"n\":2.5,\"i\":3.0,\"b\":true,\"z\":null,\"f\":1.5}");
    const char *str;
    double d;
    long long i;
    bool b;
    assert_int_equal(eco_json_get_string(j, "s", &str), ECO_OK);
    assert_string_equal(str, "x");
    assert_int_equal(eco_json_get_number(j, "n", &d), ECO_OK);
    assert_near(d, 2.5, 0);
    assert_int_equal(eco_json_get_int(j, "i", &i), ECO_OK);
    assert_int_equal(i, 3);
    assert_int_equal(eco_json_get_int(j, "f", &i), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "f");
    assert_int_equal(eco_json_get_bool(j, "b", &b), ECO_OK);
    assert_true(b);
    assert_int_equal(eco_json_get_string(j, "z", &str), ECO_ENOTFOUND);
    assert_int_equal(eco_json_get_string(j, "n", &str), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "'n' must be a string, got real"));
    assert_int_equal(eco_json_get_number(j, "missing", &d), ECO_ENOTFOUND);
    json_decref(j);
}

/* ---- our energy.json schema against its examples ---- */

static eco_schema *energy_schema(void)
{
    char path[1024];
    eco_test_path("ECO_SOURCE_DIR", "data/schema/energy.schema.json", path, sizeof path);
    eco_schema *s;
    /* Strict: a misspelt keyword in the published schema would silently weaken it. */
    if (eco_schema_compile_file(path, ECO_SCHEMA_STRICT, &s)) fail_msg("%s", eco_last_error());
    return s;
}

static void energy_schema_valid_examples(void **state)
{
    (void)state;
    eco_schema *s = energy_schema();
    assert_string_equal(eco_schema_id(s), "https://ecocompute.example/schema/energy/v2.json");
    static const char *const valid[] = {"energy.example.valid.json", "energy.example.cpu-no-meter.json"};
    for (size_t k = 0; k < 2; k++) {
        char rel[256], path[1024];
        snprintf(rel, sizeof rel, "data/schema/examples/%s", valid[k]);
        json_t *doc;
        if (eco_json_load_file(eco_test_path("ECO_SOURCE_DIR", rel, path, sizeof path), 0, &doc))
            fail_msg("%s", eco_last_error());
        eco_schema_errors errs;
        eco_schema_errors_init(&errs);
        eco_err rc = eco_schema_validate(s, doc, &errs);
        for (size_t e = 0; e < errs.count; e++)
            printf("%s: %s: %s\n", valid[k], errs.items[e].instance_path, errs.items[e].message);
        assert_int_equal(rc, ECO_OK);
        /* Silent zeros are refused: a 0 energy in a measured result must fail. */
        json_t *r0 = json_array_get(json_object_get(doc, "results"), 0);
        if (json_is_number(json_object_get(r0, "mj_per_token_gross"))) {
            json_object_set_new(r0, "mj_per_token_gross", json_real(0.0));
            assert_int_equal(eco_schema_validate(s, doc, &errs), ECO_EINVAL);
        }
        eco_schema_errors_free(&errs);
        json_decref(doc);
    }
    eco_schema_free(s);
}

static void energy_schema_invalid_examples(void **state)
{
    (void)state;
    eco_schema *s = energy_schema();
    char dir[1024];
    eco_test_path("ECO_SOURCE_DIR", "data/schema/examples", dir, sizeof dir);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *ent;
    int checked = 0;
    while ((ent = readdir(d))) {
        size_t n = strlen(ent->d_name);
        if (strncmp(ent->d_name, "energy.invalid.", 15) || n < 5 || strcmp(ent->d_name + n - 5, ".json")) continue;
        char path[2048], expect[2048];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        snprintf(expect, sizeof expect, "%s/%.*s.expect", dir, (int)(n - 5), ent->d_name);
        json_t *doc;
        if (eco_json_load_file(path, 0, &doc)) fail_msg("%s", eco_last_error());
        eco_schema_errors errs;
        eco_schema_errors_init(&errs);
        assert_int_equal(eco_schema_validate(s, doc, &errs), ECO_EINVAL);
        FILE *f = fopen(expect, "r");
        if (!f) fail_msg("%s has no sidecar %s", ent->d_name, expect);
        char line[512];
        size_t expected = 0;
        while (fgets(line, sizeof line, f)) {
            if (line[0] == '#' || line[0] == '\n') continue;
            line[strcspn(line, "\n")] = '\0';
            char *sp = strrchr(line, ' ');
            assert_non_null(sp);
            *sp = '\0';
            int found = 0;
            for (size_t e = 0; e < errs.count && !found; e++)
                found = !strcmp(errs.items[e].instance_path, line) && !strcmp(errs.items[e].keyword, sp + 1);
            if (!found) {
                for (size_t e = 0; e < errs.count; e++)
                    printf("  got %s %s: %s\n", errs.items[e].instance_path, errs.items[e].keyword, errs.items[e].message);
                fail_msg("%s: expected error %s (%s) not reported", ent->d_name, line, sp + 1);
            }
            expected++;
        }
        fclose(f);
        if (errs.count != expected) fail_msg("%s: %zu errors, sidecar lists %zu", ent->d_name, errs.count, expected);
        eco_schema_errors_free(&errs);
        json_decref(doc);
        checked++;
    }
    closedir(d);
    printf("checked %d invalid examples against their sidecars\n", checked);
    assert_true(checked >= 10);
    eco_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(error_locations_and_messages),
        cmocka_unit_test(pointer_escaping_and_additional),
        cmocka_unit_test(composition_messages),
        cmocka_unit_test(refusals_at_compile_time),
        cmocka_unit_test(recursion_is_bounded),
        cmocka_unit_test(error_cap),
        cmocka_unit_test(numbers_strings_arrays),
        cmocka_unit_test(schema_is_copied_and_ids_resolve),
        cmocka_unit_test(json_helpers),
        cmocka_unit_test(energy_schema_valid_examples),
        cmocka_unit_test(energy_schema_invalid_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
