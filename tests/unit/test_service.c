/* The service layer: curves.json round trip (byte-identical), parameter validation naming the field, and every
 * response validated against the service's own JSON Schemas (strict compile: no unknown keywords). */
#include "eco_test.h"

#include <string.h>
#include <unistd.h>

#include "eco/fit.h"
#include "eco/jsonschema.h"
#include "eco/service.h"
#include "eco/store.h"
#include "service/curves_io.h"

static char curves_path[256], curves_path2[256];

static void make_row(eco_record *r, const char *arch, eco_precision p, double N, double delta, const char *model)
{
    memset(r, 0, sizeof *r);
    snprintf(r->arch, sizeof r->arch, "%s", arch);
    snprintf(r->gpu, sizeof r->gpu, "%s", !strcmp(arch, "ada") ? "RTX 4090" : "A800");
    snprintf(r->model, sizeof r->model, "%s", model);
    snprintf(r->method, sizeof r->method, "nvml-power-poll");
    snprintf(r->session, sizeof r->session, "s-%s", arch);
    snprintf(r->source, sizeof r->source, "test:%s:%g", arch, N);
    r->precision = p;
    r->params_b = N;
    r->e_fp16_mj = 800.0 * N;
    r->e_quant_mj = r->e_fp16_mj * (1 + delta / 100);
    r->e_quant_sd_mj = r->e_fp16_sd_mj = r->cv_pct = NAN;
    r->n_trials = 2;
    r->tokens = 256;
    r->basis = ECO_BASIS_GROSS;
    r->batch = 1;
}

static int setup(void **state)
{
    (void)state;
    eco_record rows[9];
    make_row(&rows[0], "ada", ECO_PREC_NF4, 0.5, 40, "Qwen2-0.5B");
    make_row(&rows[1], "ada", ECO_PREC_NF4, 1.5, 20, "Qwen2.5-1.5B");
    make_row(&rows[2], "ada", ECO_PREC_NF4, 3.0, 5, "Qwen2.5-3B");
    make_row(&rows[3], "ada", ECO_PREC_NF4, 7.0, -25, "Qwen2-7B");
    make_row(&rows[4], "ada", ECO_PREC_NF4, 14.0, -40, "Qwen/Qwen2.5-14B"); /* the preset by its HF id */
    make_row(&rows[5], "ampere", ECO_PREC_INT8_MIXED, 7.0, 130, "Mistral-7B");
    make_row(&rows[6], "ampere", ECO_PREC_INT8_MIXED, 9.0, 117, "Yi-1.5-9B");
    make_row(&rows[7], "ampere", ECO_PREC_INT8_MIXED, 14.0, 107, "Qwen2.5-14B");
    make_row(&rows[8], "ampere", ECO_PREC_NF4, 7.0, -4, "Mistral-7B");
    snprintf(rows[3].flags, sizeof rows[3].flags, "throttled fp16:throttled"); /* kept through the round trip */
    snprintf(rows[3].note, sizeof rows[3].note, "eco measure" ECO_RECORD_DESIGN_MARK "graph+PDL"); /* and its design id */
    memset(rows[8].session, 'R', ECO_SESSION_SIZE - 1); /* a run id of the schema's 128 characters, kept whole */
    rows[8].session[ECO_SESSION_SIZE - 1] = '\0';
    eco_curve_set *set = malloc(sizeof *set);
    eco_fit_options o;
    eco_fit_options_default(&o);
    assert_int_equal(eco_fit_all(rows, 9, &o, set), ECO_OK);
    snprintf(set->dataset, sizeof set->dataset, "unit-test");
    snprintf(curves_path, sizeof curves_path, "/tmp/eco_test_curves_%d.json", (int)getpid());
    snprintf(curves_path2, sizeof curves_path2, "/tmp/eco_test_curves_%d_b.json", (int)getpid());
    assert_int_equal(eco_curves_write_file(set, curves_path), ECO_OK);
    /* refit the same data: byte-identical file */
    assert_int_equal(eco_fit_all(rows, 9, &o, set), ECO_OK);
    snprintf(set->dataset, sizeof set->dataset, "unit-test");
    assert_int_equal(eco_curves_write_file(set, curves_path2), ECO_OK);
    free(set);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(curves_path);
    unlink(curves_path2);
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    return b;
}

static void test_curves_deterministic_and_round_trip(void **state)
{
    (void)state;
    char *a = slurp(curves_path), *b = slurp(curves_path2);
    assert_string_equal(a, b);
    /* read back, write again: same bytes (the reader keeps every field) */
    eco_curve_set *set = malloc(sizeof *set);
    assert_int_equal(eco_curves_read_file(curves_path, set), ECO_OK);
    assert_int_equal(set->n_curves, 3);
    assert_int_equal(eco_curves_write_file(set, curves_path2), ECO_OK);
    char *c = slurp(curves_path2);
    assert_string_equal(a, c);
    assert_non_null(strstr(a, "\"flags\": \"throttled fp16:throttled\""));
    char design[9];
    eco_record_design_id(&(eco_record){.note = "x" ECO_RECORD_DESIGN_MARK "graph+PDL"}, design);
    char want[40];
    snprintf(want, sizeof want, "\"design\": \"%s\"", design);
    assert_int_equal(strlen(design), 8);
    assert_non_null(strstr(a, want));
    bool long_session = false;
    for (size_t i = 0; i < set->n_curves; i++)
        for (size_t k = 0; k < set->curves[i].n_sessions; k++) long_session |= strlen(set->curves[i].sessions[k]) == 128;
    assert_true(long_session);
    /* an anchor without flags (curves written before they had them) reads as none; a non-string is refused */
    json_error_t jerr0;
    json_t *old = json_loads(a, 0, &jerr0);
    json_t *anchor0 = json_array_get(json_object_get(json_array_get(json_object_get(old, "curves"), 0), "anchors"), 0);
    json_object_del(anchor0, "flags");
    json_object_del(anchor0, "design");
    assert_int_equal(eco_curves_from_json(old, set), ECO_OK);
    assert_string_equal(set->curves[0].anchors[0].flags, "");
    assert_string_equal(set->curves[0].anchors[0].design, "");
    json_object_set_new(anchor0, "design", json_string("0123456789abcdef")); /* longer than an id: refused, not cut */
    assert_int_equal(eco_curves_from_json(old, set), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "curves[0].anchors[0].design"));
    json_object_del(anchor0, "design");
    json_object_set_new(anchor0, "flags", json_integer(3));
    assert_int_equal(eco_curves_from_json(old, set), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "curves[0].anchors[0].flags"));
    json_decref(old);
    /* corrupted documents are refused with the path of the bad value */
    json_error_t jerr;
    json_t *doc = json_loads(a, 0, &jerr);
    json_array_set_new(json_array_get(json_object_get(json_array_get(json_object_get(doc, "curves"), 0), "boot"), 3), 0,
                       json_string("x"));
    assert_int_equal(eco_curves_from_json(doc, set), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "curves[0].boot[3]"));
    json_object_set_new(doc, "version", json_integer(99));
    assert_int_equal(eco_curves_from_json(doc, set), ECO_EFORMAT);
    json_decref(doc);
    /* a card's own fp16 baseline keeps its card through the round trip; the arch's pool has none */
    assert_int_equal(eco_curves_read_file(curves_path, set), ECO_OK);
    assert_int_equal(set->n_fp16, 2); /* ada, ampere */
    snprintf(set->fp16[1].card, sizeof set->fp16[1].card, "A800");
    assert_int_equal(eco_curves_write_file(set, curves_path2), ECO_OK);
    eco_curve_set *back = malloc(sizeof *back);
    assert_int_equal(eco_curves_read_file(curves_path2, back), ECO_OK);
    assert_int_equal(back->n_fp16, 2);
    assert_string_equal(back->fp16[0].card, "");
    assert_string_equal(back->fp16[1].card, "A800");
    assert_ptr_equal(eco_curve_set_fp16_for(back, back->fp16[1].arch, "A800"), &back->fp16[1]);
    /* a card's own curve too, after its arch's pooled one; a repeated (arch, precision, card) or a card's curve without
     * its pool is refused */
    set->curves[set->n_curves] = set->curves[0];
    snprintf(set->curves[set->n_curves++].card, sizeof set->curves[0].card, "NVIDIA H200");
    assert_int_equal(eco_curves_write_file(set, curves_path2), ECO_OK);
    assert_int_equal(eco_curves_read_file(curves_path2, back), ECO_OK);
    assert_int_equal(back->n_curves, 4);
    assert_string_equal(back->curves[0].card, "");
    assert_string_equal(back->curves[3].card, "NVIDIA H200");
    assert_ptr_equal(eco_curve_set_find(back, back->curves[0].arch, back->curves[0].precision), &back->curves[0]);
    char *d = slurp(curves_path2);
    json_t *cdoc = json_loads(d, 0, &jerr);
    free(d);
    json_t *cl = json_object_get(cdoc, "curves");
    assert_null(json_object_get(json_array_get(cl, 0), "card")); /* the pool: no key */
    json_array_append(cl, json_array_get(cl, 3));
    assert_int_equal(eco_curves_from_json(cdoc, back), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "curves[4]: duplicate (arch, precision, card)"));
    json_array_remove(cl, 4);
    json_array_remove(cl, 0); /* the pool gone: the card's curve stands alone */
    assert_int_equal(eco_curves_from_json(cdoc, back), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "a card's curve before its arch's pooled one"));
    json_decref(cdoc);
    free(back);
    free(a); free(b); free(c); free(set);
}

static eco_schema *schema(const char *name)
{
    json_t *s = eco_service_schema(name);
    assert_non_null(s);
    eco_schema *c;
    if (eco_schema_compile_ex(s, ECO_SCHEMA_STRICT, &c) != ECO_OK) fail_msg("schema %s: %s", name, eco_last_error());
    json_decref(s);
    return c;
}

static void assert_valid(const char *name, const json_t *doc)
{
    eco_schema *s = schema(name);
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    if (eco_schema_validate(s, doc, &errs) != ECO_OK) {
        char *txt = json_dumps(doc, JSON_COMPACT);
        fail_msg("%s: %s at '%s' (%s)\n%s", name, errs.count ? errs.items[0].message : "?", errs.count ? errs.items[0].instance_path : "",
                 errs.count ? errs.items[0].keyword : "", txt);
    }
    eco_schema_errors_free(&errs);
    eco_schema_free(s);
}

static eco_service *open_svc(void)
{
    eco_service *svc;
    eco_service_config cfg = {.curves_path = curves_path, .db_path = NULL};
    assert_int_equal(eco_service_open(&cfg, &svc), ECO_OK);
    return svc;
}

static json_t *estimate_ok(eco_service *svc, const char *params, eco_params_origin origin)
{
    json_error_t jerr;
    json_t *p = json_loads(params, 0, &jerr), *r = NULL;
    assert_non_null(p);
    if (eco_service_estimate(svc, p, origin, &r) != ECO_OK) fail_msg("%s: %s", params, eco_last_error());
    json_decref(p);
    assert_valid("estimate_response", r);
    return r;
}

static void test_estimate(void **state)
{
    (void)state;
    eco_service *svc = open_svc();
    json_t *r = estimate_ok(svc, "{\"gpu\":\"RTX 4090\",\"params_b\":7,\"precision\":\"nf4\"}", ECO_PARAMS_JSON);
    assert_string_equal(json_string_value(json_object_get(r, "label")), "measured");
    assert_near(json_number_value(json_object_get(r, "delta_pct")), -25, 1e-9);
    assert_string_equal(json_string_value(json_object_get(r, "recommendation")), "quantize");
    assert_near(json_number_value(json_object_get(json_object_get(json_object_get(r, "energy"), "fp16_mj_per_token"), "value")), 5600, 1e-6);
    json_decref(r);
    /* strings from a query string: 7e9 parameters = 7B */
    r = estimate_ok(svc, "{\"gpu\":\"ada\",\"params_b\":\"7e9\",\"batch\":\"4\"}", ECO_PARAMS_STRINGS);
    assert_near(json_number_value(json_object_get(json_object_get(r, "input"), "params_b")), 7, 1e-12);
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(r, "energy"), "quant_mj_per_token"), "label")),
                        "estimated"); /* batch factor borrowed */
    json_decref(r);
    r = estimate_ok(svc, "{\"gpu\":\"RTX 4090\",\"params_b\":5}", ECO_PARAMS_JSON);
    assert_string_equal(json_string_value(json_object_get(r, "label")), "interpolated");
    json_decref(r);
    r = estimate_ok(svc, "{\"gpu\":\"RTX 4090\",\"params_b\":70}", ECO_PARAMS_JSON);
    assert_string_equal(json_string_value(json_object_get(r, "label")), "extrapolated");
    json_decref(r);
    r = estimate_ok(svc, "{\"gpu\":\"H100\",\"model\":\"Qwen2.5-14B\",\"precision\":\"LLM.int8\"}", ECO_PARAMS_JSON);
    assert_string_equal(json_string_value(json_object_get(r, "label")), "estimated");
    assert_string_equal(json_string_value(json_object_get(r, "arch_used")), "ampere");
    assert_true(json_is_null(json_object_get(r, "energy")));
    assert_string_equal(json_string_value(json_object_get(r, "recommendation")), "do_not_quantize");
    json_decref(r);
    /* a model measured under another spelling of its preset (the HF id) is that measurement, in estimate and
     * optimize alike: not an interpolation at the preset's exact size (14.77B against the 14.0B stored) */
    r = estimate_ok(svc, "{\"gpu\":\"RTX 4090\",\"model\":\"qwen2.5-14b\",\"precision\":\"nf4\"}", ECO_PARAMS_JSON);
    assert_string_equal(json_string_value(json_object_get(r, "label")), "measured");
    assert_near(json_number_value(json_object_get(r, "delta_pct")), -40, 1e-9);
    json_decref(r);
    json_error_t jerr;
    json_t *p = json_loads("{\"gpu\":\"RTX 4090\",\"model\":\"Qwen2.5-14B\",\"batch\":1}", 0, &jerr);
    assert_int_equal(eco_service_optimize(svc, p, ECO_PARAMS_JSON, &r), ECO_OK);
    json_t *all = json_array(), *c;
    json_array_append(all, json_object_get(r, "recommended"));
    json_array_extend(all, json_object_get(r, "alternatives"));
    size_t i;
    int seen = 0;
    json_array_foreach(all, i, c) {
        if (!json_is_object(c) || strcmp(json_string_value(json_object_get(c, "precision")), "nf4")) continue;
        assert_string_equal(json_string_value(json_object_get(json_object_get(c, "basis"), "delta")), "measured");
        assert_near(json_number_value(json_object_get(c, "delta_pct")), -40, 1e-9);
        seen++;
    }
    assert_int_equal(seen, 1);
    json_decref(all);
    json_decref(r);
    json_decref(p);
    eco_service_close(svc);
}

static void expect_error(eco_service *svc, const char *params, eco_params_origin origin, eco_err code, const char *field)
{
    json_error_t jerr;
    json_t *p = json_loads(params, JSON_DECODE_ANY, &jerr), *r = NULL;
    assert_non_null(p);
    eco_err e = eco_service_estimate(svc, p, origin, &r);
    if (e != code) fail_msg("%s: expected %s, got %s (%s)", params, eco_err_name(code), eco_err_name(e), eco_last_error());
    assert_null(r);
    assert_string_equal(eco_last_error_field(), field);
    assert_true(strlen(eco_last_error()) > 10);
    json_decref(p);
}

static void test_validation(void **state)
{
    (void)state;
    eco_service *svc = open_svc();
    expect_error(svc, "{\"params_b\":7}", ECO_PARAMS_JSON, ECO_EINVAL, "gpu");
    expect_error(svc, "{\"gpu\":\"Voodoo\",\"params_b\":7}", ECO_PARAMS_JSON, ECO_ENOTFOUND, "gpu");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":\"7\"}", ECO_PARAMS_JSON, ECO_EINVAL, "params_b"); /* string in a JSON body */
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":\"seven\"}", ECO_PARAMS_STRINGS, ECO_EINVAL, "params_b");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":\"nan\"}", ECO_PARAMS_STRINGS, ECO_EINVAL, "params_b");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":\"inf\"}", ECO_PARAMS_STRINGS, ECO_EINVAL, "params_b");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":-3}", ECO_PARAMS_JSON, ECO_EINVAL, "params_b");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":5000}", ECO_PARAMS_JSON, ECO_EINVAL, "params_b");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":3e12}", ECO_PARAMS_JSON, ECO_EINVAL, "params_b");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":5e-324}", ECO_PARAMS_JSON, ECO_EINVAL, "params_b"); /* no model so small */
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":0.0005}", ECO_PARAMS_JSON, ECO_EINVAL, "params_b");
    expect_error(svc, "{\"gpu\":\"ada\"}", ECO_PARAMS_JSON, ECO_EINVAL, "params_b");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":7,\"batch\":1.5}", ECO_PARAMS_JSON, ECO_EINVAL, "batch");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":7,\"batch\":0}", ECO_PARAMS_JSON, ECO_EINVAL, "batch");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":7,\"colour\":\"red\"}", ECO_PARAMS_JSON, ECO_EINVAL, "colour");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":7,\"precision\":\"int3\"}", ECO_PARAMS_JSON, ECO_ENOTFOUND, "precision");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":7,\"precision\":\"fp16\"}", ECO_PARAMS_JSON, ECO_EINVAL, "precision");
    expect_error(svc, "{\"gpu\":\"ada\",\"params_b\":7,\"precision\":\"fp8\"}", ECO_PARAMS_JSON, ECO_EUNSUPPORTED, "precision");
    expect_error(svc, "{\"gpu\":\"ada\",\"model\":\"GPT-5\"}", ECO_PARAMS_JSON, ECO_ENOTFOUND, "model");
    expect_error(svc, "[1,2]", ECO_PARAMS_JSON, ECO_EINVAL, "");
    eco_service_close(svc);
    /* opening: missing and malformed files */
    eco_service *s2;
    eco_service_config bad = {.curves_path = "/nonexistent/curves.json"};
    assert_int_not_equal(eco_service_open(&bad, &s2), ECO_OK);
    bad.curves_path = NULL;
    assert_int_equal(eco_service_open(&bad, &s2), ECO_EINVAL);
}

static void test_optimize_and_lists(void **state)
{
    (void)state;
    eco_service *svc = open_svc();
    json_error_t jerr;
    json_t *p = json_loads("{\"gpu\":\"RTX 4090\",\"model\":\"Qwen2.5-7B\",\"max_vram_gb\":16,\"max_latency_ms\":50}", 0, &jerr), *r;
    assert_int_equal(eco_service_optimize(svc, p, ECO_PARAMS_JSON, &r), ECO_OK);
    assert_valid("optimize_response", r);
    json_t *best = json_object_get(r, "recommended");
    assert_true(json_is_object(best));
    assert_true(json_number_value(json_object_get(best, "vram_gb")) <= 16);
    assert_true(json_number_value(json_object_get(best, "latency_ms")) <= 50);
    assert_string_equal(json_string_value(json_object_get(json_object_get(best, "basis"), "latency")), "modelled");
    json_decref(r);
    json_decref(p);
    p = json_loads("{\"gpu\":\"T4\",\"params_b\":70,\"max_vram_gb\":4}", 0, &jerr);
    assert_int_equal(eco_service_optimize(svc, p, ECO_PARAMS_JSON, &r), ECO_OK);
    assert_valid("optimize_response", r);
    assert_true(json_is_null(json_object_get(r, "recommended")));
    assert_true(json_is_object(json_object_get(r, "closest_infeasible")));
    json_decref(r);
    json_decref(p);
    /* a card missing from the table borrows a reference card's figures, not its memory: the budget given stands;
     * a table card's own memory caps it */
    p = json_loads("{\"gpu\":\"H100 NVL\",\"params_b\":40,\"max_vram_gb\":94}", 0, &jerr);
    assert_int_equal(eco_service_optimize(svc, p, ECO_PARAMS_JSON, &r), ECO_OK);
    assert_near(json_number_value(json_object_get(r, "vram_budget_gb")), 94, 1e-9);
    json_decref(r);
    json_decref(p);
    p = json_loads("{\"gpu\":\"H100\",\"params_b\":40,\"max_vram_gb\":94}", 0, &jerr);
    assert_int_equal(eco_service_optimize(svc, p, ECO_PARAMS_JSON, &r), ECO_OK);
    assert_near(json_number_value(json_object_get(r, "vram_budget_gb")), 80, 1e-9);
    json_decref(r);
    json_decref(p);
    p = json_loads("{\"gpu\":\"T4\",\"params_b\":7,\"objective\":\"cheapest\"}", 0, &jerr);
    assert_int_equal(eco_service_optimize(svc, p, ECO_PARAMS_JSON, &r), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "objective");
    json_decref(p);

    assert_int_equal(eco_service_architectures(svc, &r), ECO_OK);
    assert_valid("architectures_response", r);
    assert_int_equal(json_array_size(json_object_get(r, "architectures")), eco_arch_count());
    json_decref(r);
    assert_int_equal(eco_service_gpus(svc, &r), ECO_OK);
    assert_valid("gpus_response", r);
    json_decref(r);
    assert_int_equal(eco_service_models(svc, &r), ECO_OK);
    assert_valid("models_response", r);
    assert_int_equal(json_array_size(json_object_get(r, "models")), eco_preset_count());
    json_decref(r);
    assert_int_equal(eco_service_measurements(svc, NULL, ECO_PARAMS_JSON, &r), ECO_EUNSUPPORTED); /* no db */
    eco_service_close(svc);

    /* every named schema compiles strictly; unknown names give NULL */
    static const char *const names[] = {"estimate_request", "estimate_response", "optimize_request", "optimize_response",
                                        "architectures_response", "gpus_response", "models_response", "measurements_request",
                                        "measurements_response", "problem"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) eco_schema_free(schema(names[i]));
    assert_null(eco_service_schema("nope"));
    /* request schemas accept what the service accepts and reject unknown fields */
    json_t *ok = json_pack("{s:s, s:f}", "gpu", "T4", "params_b", 7e9), *no = json_pack("{s:s, s:f, s:i}", "gpu", "T4", "params_b", 7.0, "x", 1);
    eco_schema *rs = schema("estimate_request");
    assert_int_equal(eco_schema_validate(rs, ok, NULL), ECO_OK);
    assert_int_equal(eco_schema_validate(rs, no, NULL), ECO_EINVAL);
    eco_schema_free(rs);
    json_decref(ok);
    json_decref(no);
    json_t *prob = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", "about:blank", "title", "Bad Request", "status", 400, "detail", "x", "field", "gpu");
    assert_valid("problem", prob);
    json_decref(prob);
}

static void test_replications(void **state)
{
    (void)state;
    char db[256], path[512];
    snprintf(db, sizeof db, "/tmp/eco_test_repl_%d.db", (int)getpid());
    unlink(db);
    eco_service *nostore = NULL, *svc = NULL;
    eco_service_config c1 = {.curves_path = curves_path}, c2 = {.curves_path = curves_path, .db_path = db};
    assert_int_equal(eco_service_open(&c1, &nostore), ECO_OK);
    json_t *r = NULL;
    assert_int_equal(eco_service_submit_replication(nostore, "{}", 2, &r), ECO_EUNSUPPORTED); /* nowhere to keep it */
    assert_non_null(strstr(eco_last_error(), "--db"));
    eco_service_close(nostore);

    /* a store that does not exist is an error, not a new empty one (a mistyped --db) */
    assert_int_equal(eco_service_open(&c2, &svc), ECO_ENOTFOUND);
    assert_non_null(strstr(eco_last_error(), "eco import"));
    eco_store *made;
    assert_int_equal(eco_store_open(db, &made), ECO_OK);
    eco_store_close(made);
    assert_int_equal(eco_service_open(&c2, &svc), ECO_OK);
    assert_int_equal(eco_service_submit_replication(svc, "{\"a\":", 6, &r), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "body");
    assert_int_equal(eco_service_submit_replication(svc, "[1]", 3, &r), ECO_EINVAL);

    /* a measured run: accepted and stored once */
    char *doc = slurp(eco_test_path("ECO_SOURCE_DIR", "data/h200/h200_qwen2.5-1.5b.energy.json", path, sizeof path));
    assert_int_equal(eco_service_submit_replication(svc, doc, strlen(doc), &r), ECO_OK);
    assert_true(json_is_true(json_object_get(r, "accepted")) && json_is_true(json_object_get(r, "stored")));
    assert_valid("replication_submit_response", r);
    json_decref(r);
    assert_int_equal(eco_service_submit_replication(svc, doc, strlen(doc), &r), ECO_OK);
    assert_true(json_is_true(json_object_get(r, "accepted")) && json_is_false(json_object_get(r, "stored")));
    json_decref(r);
    free(doc);

    /* an example is refused with a pointer to why; an invalid document with its schema errors */
    doc = slurp(eco_test_path("ECO_SOURCE_DIR", "data/schema/examples/energy.example.valid.json", path, sizeof path));
    assert_int_equal(eco_service_submit_replication(svc, doc, strlen(doc), &r), ECO_OK);
    assert_true(json_is_false(json_object_get(r, "accepted")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(r, "errors"), 0), "instance_path")), "/example");
    json_decref(r);
    free(doc);
    doc = slurp(eco_test_path("ECO_SOURCE_DIR", "data/schema/examples/energy.invalid.bad-precision.json", path, sizeof path));
    assert_int_equal(eco_service_submit_replication(svc, doc, strlen(doc), &r), ECO_OK);
    assert_string_equal(json_string_value(json_object_get(r, "validation")), "invalid");
    assert_true(json_array_size(json_object_get(r, "errors")) >= 1);
    assert_valid("replication_submit_response", r);
    json_decref(r);
    free(doc);

    assert_int_equal(eco_service_replications(svc, NULL, ECO_PARAMS_JSON, &r), ECO_OK);
    assert_int_equal(json_integer_value(json_object_get(r, "count")), 1);
    assert_int_equal(json_integer_value(json_object_get(r, "total")), 1);
    json_t *first = json_array_get(json_object_get(r, "replications"), 0);
    assert_string_equal(json_string_value(json_object_get(first, "gpu")), "NVIDIA H200");
    assert_non_null(strstr(json_string_value(json_object_get(first, "run_id")), "Qwen2.5-1.5B"));
    json_int_t stored_id = json_integer_value(json_object_get(first, "id"));
    assert_valid("replications_response", r);
    json_decref(r);

    /* the same run again with other bytes (re-indented): one run is one replication */
    doc = slurp(eco_test_path("ECO_SOURCE_DIR", "data/h200/h200_qwen2.5-1.5b.energy.json", path, sizeof path));
    json_t *parsed = json_loads(doc, 0, NULL);
    char *other = json_dumps(parsed, JSON_INDENT(3));
    json_decref(parsed);
    assert_int_equal(eco_service_submit_replication(svc, other, strlen(other), &r), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "run_id");
    assert_non_null(strstr(eco_last_error(), "stored as replication #"));
    free(other);
    /* its stored bytes come back as submitted */
    char *got = NULL;
    size_t got_len = 0;
    assert_int_equal(eco_service_replication_doc(svc, stored_id, &got, &got_len), ECO_OK);
    assert_int_equal(got_len, strlen(doc));
    assert_memory_equal(got, doc, got_len);
    free(got);
    free(doc);
    assert_int_equal(eco_service_replication_doc(svc, stored_id + 100, &got, &got_len), ECO_ENOTFOUND);
    /* a card named in 70 two-byte characters (valid: the schema counts characters) is listed whole, not cut
     * mid-character and dropped from the page */
    doc = slurp(eco_test_path("ECO_SOURCE_DIR", "data/h200/h200_qwen2.5-3b.energy.json", path, sizeof path));
    parsed = json_loads(doc, 0, NULL);
    free(doc);
    char wide[160] = "NVIDIA H200X ";
    for (int k = 0; k < 70; k++) strcat(wide, "\xc3\xa9");
    json_object_set_new(json_object_get(json_object_get(parsed, "environment"), "gpu"), "name", json_string(wide));
    other = json_dumps(parsed, JSON_COMPACT);
    json_decref(parsed);
    if (eco_service_submit_replication(svc, other, strlen(other), &r) != ECO_OK) fail_msg("%s", eco_last_error());
    assert_true(json_is_true(json_object_get(r, "stored")));
    json_decref(r);
    free(other);
    assert_int_equal(eco_service_replications(svc, NULL, ECO_PARAMS_JSON, &r), ECO_OK);
    assert_int_equal(json_integer_value(json_object_get(r, "count")), 2);
    assert_int_equal(json_integer_value(json_object_get(r, "total")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(r, "replications"), 1), "gpu")), wide);
    json_decref(r);
    /* pages: offset and limit, the total whatever the page */
    json_t *page = json_pack("{s:i}", "offset", 2);
    assert_int_equal(eco_service_replications(svc, page, ECO_PARAMS_JSON, &r), ECO_OK);
    assert_int_equal(json_integer_value(json_object_get(r, "count")), 0);
    assert_int_equal(json_integer_value(json_object_get(r, "total")), 2);
    assert_valid("replications_response", r);
    json_decref(r);
    json_decref(page);
    page = json_pack("{s:i}", "limit", 0);
    assert_int_equal(eco_service_replications(svc, page, ECO_PARAMS_JSON, &r), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "limit");
    json_decref(page);
    eco_service_close(svc);
    unlink(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_curves_deterministic_and_round_trip),
        cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_optimize_and_lists),
        cmocka_unit_test(test_replications),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
