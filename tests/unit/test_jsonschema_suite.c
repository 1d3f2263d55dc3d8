/* Runs the official JSON-Schema-Test-Suite (draft 2020-12) for every keyword file the validator claims.
 * Each case is validated twice: verdict only (errs = NULL) and collecting errors, which must agree, and an
 * invalid verdict must come with at least one error. Skips are explicit, one reason per case. */
#include <string.h>

#include "eco/json.h"
#include "eco/jsonschema.h"
#include "eco_test.h"

/* Files whose keywords are claimed. Not run: dynamicRef, unevaluatedItems, unevaluatedProperties (keywords
 * refused at compile time as unsupported), refRemote and vocabulary (need schemas served from a remote
 * host). content, default and format are annotation-only in 2020-12 and are run to prove no assertion. */
static const char *const suite_files[] = {
    "additionalProperties", "allOf", "anchor", "anyOf", "boolean_schema", "const", "contains", "content",
    "default", "defs", "dependentRequired", "dependentSchemas", "enum", "exclusiveMaximum", "exclusiveMinimum",
    "format", "if-then-else", "infinite-loop-detection", "items", "maxContains", "maxItems", "maxLength",
    "maxProperties", "maximum", "minContains", "minItems", "minLength", "minProperties", "minimum", "multipleOf",
    "not", "oneOf", "pattern", "patternProperties", "prefixItems", "properties", "propertyNames", "ref",
    "required", "type", "uniqueItems",
};

typedef struct {
    const char *file, *group, *test; /* test NULL = the whole group (its schema does not compile here) */
    const char *reason;
    int used;
} skip;

static skip skips[] = {
    {"defs", "validate definition against metaschema", NULL,
     "$ref to the 2020-12 meta-schema, a remote document (which itself needs $dynamicRef)", 0},
    {"ref", "remote ref, containing refs itself", NULL,
     "$ref to the 2020-12 meta-schema, a remote document (which itself needs $dynamicRef)", 0},
    {"ref", "ref creates new scope when adjacent to keywords", NULL, "uses unevaluatedProperties (unsupported)", 0},
    {"not", "collect annotations inside a 'not', even if collection is disabled", NULL,
     "uses unevaluatedProperties (unsupported)", 0},
};

static skip *find_skip(const char *file, const char *group, const char *test)
{
    for (size_t i = 0; i < sizeof skips / sizeof skips[0]; i++) {
        skip *s = &skips[i];
        if (strcmp(s->file, file) || strcmp(s->group, group)) continue;
        if (!s->test || (test && !strcmp(s->test, test))) return s;
    }
    return NULL;
}

static int total_pass, total_fail, total_skip;

static void run_file(void **state)
{
    const char *name = *state;
    char rel[256], path[1024];
    snprintf(rel, sizeof rel, "reference/json-schema-test-suite/draft2020-12/%s.json", name);
    eco_test_path("ECO_SHARED_DIR", rel, path, sizeof path);
    json_error_t jerr;
    /* The suite has strings with U+0000, which eco_json_load_file refuses for untrusted input. */
    json_t *doc = json_load_file(path, JSON_ALLOW_NUL, &jerr);
    if (!doc) fail_msg("%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    assert_true(json_is_array(doc));
    int pass = 0, failed = 0, skipped = 0;
    size_t gi;
    json_t *group;
    json_array_foreach(doc, gi, group) {
        const char *gdesc = json_string_value(json_object_get(group, "description"));
        json_t *tests = json_object_get(group, "tests");
        eco_schema *s = NULL;
        eco_err rc = eco_schema_compile(json_object_get(group, "schema"), &s);
        skip *gskip = find_skip(name, gdesc, NULL);
        if (rc) {
            if (gskip && !gskip->test) {
                gskip->used = 1;
                skipped += (int)json_array_size(tests);
                continue;
            }
            printf("  FAIL %s / %s: schema did not compile: %s\n", name, gdesc, eco_last_error());
            failed += (int)json_array_size(tests);
            continue;
        }
        if (gskip && !gskip->test)
            printf("  NOTE %s / %s: skipped group now compiles (%s)\n", name, gdesc, gskip->reason);
        size_t ti;
        json_t *t;
        json_array_foreach(tests, ti, t) {
            const char *tdesc = json_string_value(json_object_get(t, "description"));
            skip *ts = find_skip(name, gdesc, tdesc);
            if (ts && ts->test) { ts->used = 1; skipped++; continue; }
            int expect = json_is_true(json_object_get(t, "valid"));
            json_t *data = json_object_get(t, "data");
            eco_err v1 = eco_schema_validate(s, data, NULL);
            eco_schema_errors errs;
            eco_schema_errors_init(&errs);
            eco_err v2 = eco_schema_validate(s, data, &errs);
            int got = v1 == ECO_OK;
            int consistent = (v1 == ECO_OK) == (v2 == ECO_OK) && (got ? errs.count == 0 : errs.count > 0);
            if (got == expect && consistent && (v1 == ECO_OK || v1 == ECO_EINVAL)) {
                pass++;
            } else {
                failed++;
                printf("  FAIL %s / %s / %s: expected %s, got %s (%s), collecting run %s with %zu errors\n", name,
                       gdesc, tdesc, expect ? "valid" : "invalid", got ? "valid" : "invalid", eco_err_name(v1),
                       v2 == ECO_OK ? "valid" : "invalid", errs.count);
            }
            eco_schema_errors_free(&errs);
        }
        eco_schema_free(s);
    }
    json_decref(doc);
    printf("%-26s %3d passed, %d failed, %d skipped\n", name, pass, failed, skipped);
    total_pass += pass;
    total_fail += failed;
    total_skip += skipped;
    assert_int_equal(failed, 0);
}

static void skips_all_used(void **state)
{
    (void)state;
    printf("suite total: %d passed, %d failed, %d skipped\n", total_pass, total_fail, total_skip);
    for (size_t i = 0; i < sizeof skips / sizeof skips[0]; i++) {
        printf("  skip %s / %s%s%s: %s%s\n", skips[i].file, skips[i].group, skips[i].test ? " / " : "",
               skips[i].test ? skips[i].test : "", skips[i].reason, skips[i].used ? "" : " [UNUSED]");
        if (!skips[i].used) fail_msg("skip-list entry '%s / %s' matched nothing", skips[i].file, skips[i].group);
    }
    assert_true(total_pass > 900);
}

int main(void)
{
    enum { N = sizeof suite_files / sizeof suite_files[0] };
    struct CMUnitTest tests[N + 1];
    for (size_t i = 0; i < N; i++)
        tests[i] = (struct CMUnitTest){suite_files[i], run_file, NULL, NULL, (void *)suite_files[i]};
    tests[N] = (struct CMUnitTest){"skip list", skips_all_used, NULL, NULL, NULL};
    return _cmocka_run_group_tests("jsonschema_suite", tests, N + 1, NULL, NULL);
}
