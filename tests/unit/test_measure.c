/* The measurement protocol end to end with a timed fake workload and the fake libnvidia-ml:
 * window energy from the counter, prefill exclusion, idle subtraction, paired ΔE%, basis, no-meter path. */
#include <dlfcn.h>
#include <string.h>
#include <time.h>

#include "eco_test.h"
#include "eco/measure.h"
#include "eco/paths.h"

typedef struct {
    double decode_s_per_token[2];
    double prefill_s;
    int calls[2];
    /* optional: the fake meter's fake_nvml_add_power, to put a spike on the first prefill-only generations (on until
     * the next decoding one); spike_state 0 before, 1 during, 2 after */
    void (*add_power)(double watts);
    int spike_state;
} fake_work;

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleeps stand in for work; the times reported are the ones that really passed (a loaded CI machine oversleeps). */
static eco_err fake_generate(void *ctx, int config, int tokens, eco_generation *out)
{
    fake_work *w = ctx;
    w->calls[config]++;
    if (w->add_power && tokens == 0 && w->spike_state == 0) w->add_power(20000.0), w->spike_state = 1;
    if (w->add_power && tokens > 0 && w->spike_state == 1) w->add_power(-20000.0), w->spike_state = 2;
    double t0 = now_s();
    sleep_s(w->prefill_s);
    double t1 = now_s();
    sleep_s(w->decode_s_per_token[config] * tokens);
    out->prefill_s = t1 - t0;
    out->decode_s = now_s() - t1;
    out->prompt_tokens = 8;
    out->generated_tokens = tokens;
    return ECO_OK;
}

static void small_options(eco_measure_options *o)
{
    eco_measure_options_default(o);
    o->n_configs = 2;
    o->precisions[1] = ECO_PREC_NF4;
    o->tokens = 64;
    o->iterations = 3;
    o->warmups = 1;
    o->min_window_s = 0.4;
    o->idle_s = 0.3;
    o->quiet = true;
}

/* Points the NVML loader at the test build's fake library, drawing `power` (see tests/fake_nvml). */
static void use_fake_nvml(const char *power)
{
    char lib[1024];
    const char *bin = getenv("ECO_BINARY_DIR");
    snprintf(lib, sizeof lib, "%s/tests/libfake_nvml.so", bin ? bin : ".");
    setenv("ECO_NVML_LIBRARY", lib, 1);
    setenv("ECO_FAKE_NVML_POWER", power, 1);
}

/* The fake meter is closed in the teardown, which cmocka runs even when an assertion fails, so a failed
 * test cannot leave the fake library loaded (or its environment set) for the next one. */
static int close_meter(void **state)
{
    eco_nvml_close((eco_nvml *)*state);
    *state = NULL;
    unsetenv("ECO_FAKE_NVML_COUNTER_MS");
    unsetenv("ECO_FAKE_NVML_THROTTLE");
    return 0;
}

/* The protocol on the fake meter drawing `power`: fp16 takes 2 ms per token, nf4 1 ms, prefill 4 ms. The meter
 * goes to *state for the teardown. */
static eco_measurement *run_on_fake_meter(void **state, const char *power)
{
    use_fake_nvml(power);
    eco_nvml *meter = NULL;
    assert_int_equal(eco_nvml_open(0, &meter), ECO_OK);
    *state = meter;
    fake_work w = {.decode_s_per_token = {0.002, 0.001}, .prefill_s = 0.004};
    eco_workload wl = {.ctx = &w, .generate = fake_generate};
    eco_measure_options o;
    small_options(&o);
    eco_measurement *m = NULL;
    assert_int_equal(eco_measure_run(&o, &wl, meter, &m), ECO_OK);
    return m;
}

static void test_protocol_with_fake_meter(void **state)
{
    /* fp16 takes 2 ms per token, nf4 1 ms: at constant power, decode energy per token halves (-50%). */
    eco_measurement *m = run_on_fake_meter(state, "const:200");
    assert_string_equal(eco_measurement_basis(m), "measured");
    assert_int_equal(eco_measurement_window_count(m), 6);
    assert_near(eco_measurement_idle_before_w(m), 200.0, 2.0);

    eco_config_summary s0, s1;
    assert_int_equal(eco_measurement_summary(m, 0, &s0), ECO_OK);
    assert_int_equal(eco_measurement_summary(m, 1, &s1), ECO_OK);
    assert_int_equal(s0.n, 3);
    /* 200 W x 2 ms = 400 mJ per fp16 token; the prefill is excluded, so no 4 ms / 64 tokens bias (+6%). */
    /* At constant power, decode energy per token = power x real time per token (1000 / tokens_per_s ms). */
    assert_near(s0.mj_per_token_gross, 200.0 * 1000.0 / s0.tokens_per_s, 400.0 * 0.04);
    assert_near(s1.mj_per_token_gross, 200.0 * 1000.0 / s1.tokens_per_s, 200.0 * 0.05);
    assert_near(s0.mj_per_token_gross, 400.0, 400.0 * 0.10); /* ~2 ms per token, oversleeping included */
    assert_near(s0.mj_per_token_net, 0.0, 20.0); /* constant power: nothing above idle */
    assert_near(s1.delta_pct, 100.0 * (s0.tokens_per_s / s1.tokens_per_s - 1.0), 3.0);
    assert_true(s1.delta_pct < -40.0);
    assert_true(s1.delta_ci95_lo <= s1.delta_pct && s1.delta_pct <= s1.delta_ci95_hi);
    assert_true(isnan(s0.delta_pct));
    assert_true(s0.e2e_mj_per_token_gross > s0.mj_per_token_gross); /* end to end includes prefill */
    assert_near(s0.tokens_per_s, 500.0, 50.0);

    /* Windows are interleaved: each block holds both configurations once. */
    const eco_window *win = eco_measurement_windows(m);
    for (int b = 0; b < 3; b++) {
        int seen = 0;
        for (size_t i = 0; i < 6; i++)
            if (win[i].block == b) seen |= 1 << win[i].config;
        assert_int_equal(seen, 3);
    }
    json_t *meter_json = eco_measurement_meter_json(m);
    assert_string_equal(json_string_value(json_object_get(meter_json, "basis")), "measured");
    json_t *st = json_object_get(meter_json, "self_test");
    assert_true(json_is_true(json_object_get(st, "cadence_check_passed")));
    assert_near(json_real_value(json_object_get(st, "counter_update_median_ms")), 100.0, 15.0);
    json_decref(meter_json);
    eco_measurement_free(m);
}

/* A power cap that comes and goes inside the windows (30 ms of every 100 ms at 1500 MHz, reason 4 = software
 * power cap) shows in every window's reasons and clocks, and flags the results: the end-of-window read alone
 * would have caught it in about a third of them. */
static void test_clock_events_inside_windows(void **state)
{
    setenv("ECO_FAKE_NVML_THROTTLE", "100:0.3:1500:4", 1);
    eco_measurement *m = run_on_fake_meter(state, "const:300");
    const eco_window *win = eco_measurement_windows(m);
    for (size_t i = 0; i < eco_measurement_window_count(m); i++) {
        assert_true(win[i].clock_event_reasons & 4u);
        assert_int_equal(win[i].sm_mhz_min, 1500);
        assert_true(win[i].sm_mhz_mean > 1500.0 && win[i].sm_mhz_mean < 1980.0);
    }
    json_t *windows = eco_measurement_windows_json(m);
    json_t *w0 = json_array_get(windows, 0);
    assert_int_equal(json_integer_value(json_object_get(w0, "sm_mhz_min")), 1500);
    assert_non_null(strstr(json_string_value(json_object_get(w0, "clock_event_reasons")), "sw_power_cap"));
    json_decref(windows);
    eco_measurement_free(m);
    unsetenv("ECO_FAKE_NVML_THROTTLE");
}

/* A prefill-only sub-window whose energy swamps its decode window (20 kW while block 1's first prefills run, as a
 * neighbour's burst would) cannot give that window's decode energy: the window is measured again, once, and the
 * run ends with the clean window and says it re-measured one. */
static void test_swamped_prefill_window_is_measured_again(void **state)
{
    use_fake_nvml("const:200");
    eco_nvml *meter = NULL;
    assert_int_equal(eco_nvml_open(0, &meter), ECO_OK);
    *state = meter;
    void *lib = dlopen(getenv("ECO_NVML_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(lib);
    fake_work w = {.decode_s_per_token = {0.002, 0.001}, .prefill_s = 0.004};
    *(void **)&w.add_power = dlsym(lib, "fake_nvml_add_power");
    dlclose(lib); /* the meter's reference keeps it loaded; the teardown's close unloads it, spike and all */
    assert_non_null(w.add_power);
    eco_workload wl = {.ctx = &w, .generate = fake_generate};
    eco_measure_options o;
    small_options(&o);
    eco_measurement *m = NULL;
    assert_int_equal(eco_measure_run(&o, &wl, meter, &m), ECO_OK);
    assert_int_equal(w.spike_state, 2);
    assert_int_equal(eco_measurement_windows_remeasured(m), 1);
    assert_int_equal(eco_measurement_window_count(m), 6); /* the swamped window is not kept */
    eco_config_summary s0, s1;
    assert_int_equal(eco_measurement_summary(m, 0, &s0), ECO_OK);
    assert_int_equal(eco_measurement_summary(m, 1, &s1), ECO_OK);
    assert_near(s0.mj_per_token_gross, 200.0 * 1000.0 / s0.tokens_per_s, 400.0 * 0.04); /* no trace of the spike */
    assert_near(s1.mj_per_token_gross, 200.0 * 1000.0 / s1.tokens_per_s, 200.0 * 0.05);
    assert_true(s1.delta_pct < -40.0);
    eco_measurement_free(m);
}

static void test_no_meter_marks_energy_unavailable(void **state)
{
    (void)state;
    fake_work w = {.decode_s_per_token = {0.001, 0.0005}, .prefill_s = 0.001};
    eco_workload wl = {.ctx = &w, .generate = fake_generate};
    eco_measure_options o;
    small_options(&o);
    o.min_window_s = 0.1;
    eco_measurement *m = NULL;
    assert_int_equal(eco_measure_run(&o, &wl, NULL, &m), ECO_OK);
    assert_string_equal(eco_measurement_basis(m), "unavailable");
    eco_config_summary s1;
    assert_int_equal(eco_measurement_summary(m, 1, &s1), ECO_OK);
    assert_true(isnan(s1.mj_per_token_gross));
    assert_true(isnan(s1.delta_pct));
    assert_near(s1.tokens_per_s, 2000.0, 300.0);
    json_t *wj = eco_measurement_windows_json(m);
    assert_true(json_is_null(json_object_get(json_array_get(wj, 0), "energy_j")));
    json_decref(wj);
    eco_measurement_free(m);
}

/* A counter that never moves fails the self-test: the run goes on without energy, basis "failed", with the reason. */
static void test_failed_self_test_measures_without_energy(void **state)
{
    use_fake_nvml("const:200");
    setenv("ECO_FAKE_NVML_COUNTER_MS", "100000", 1); /* one update every 100 s */
    eco_nvml *meter = NULL;
    assert_int_equal(eco_nvml_open(0, &meter), ECO_OK);
    *state = meter;
    fake_work w = {.decode_s_per_token = {0.001, 0.0005}, .prefill_s = 0.001};
    eco_workload wl = {.ctx = &w, .generate = fake_generate};
    eco_measure_options o;
    small_options(&o);
    o.min_window_s = 0.1;
    o.idle_s = 0.2;
    eco_measurement *m = NULL;
    assert_int_equal(eco_measure_run(&o, &wl, meter, &m), ECO_OK);
    unsetenv("ECO_FAKE_NVML_COUNTER_MS");
    assert_string_equal(eco_measurement_basis(m), "failed");
    assert_non_null(strstr(eco_measurement_failure(m), "did not change"));
    eco_config_summary s1;
    assert_int_equal(eco_measurement_summary(m, 1, &s1), ECO_OK);
    assert_true(isnan(s1.mj_per_token_gross)); /* never a number from a meter that failed its check */
    assert_near(s1.tokens_per_s, 2000.0, 300.0);
    json_t *mj = eco_measurement_meter_json(m);
    assert_string_equal(json_string_value(json_object_get(mj, "basis")), "failed");
    assert_true(json_is_false(json_object_get(json_object_get(mj, "self_test"), "cadence_check_passed")));
    json_decref(mj);
    eco_measurement_free(m);
}

static void test_bad_options(void **state)
{
    (void)state;
    fake_work w = {.decode_s_per_token = {0.001, 0.001}};
    eco_workload wl = {.ctx = &w, .generate = fake_generate};
    eco_measure_options o;
    small_options(&o);
    o.precisions[0] = ECO_PREC_NF4;
    eco_measurement *m = NULL;
    assert_int_equal(eco_measure_run(&o, &wl, NULL, &m), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "precisions");
    small_options(&o);
    o.precisions[1] = ECO_PREC_FP16;
    assert_int_equal(eco_measure_run(&o, &wl, NULL, &m), ECO_EINVAL);
    small_options(&o);
    o.tokens = 0;
    assert_int_equal(eco_measure_run(&o, &wl, NULL, &m), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "tokens");
    assert_null(m);
}

/* A run's rows carry their result's flags and the fp16 baseline's, prefixed, cut only between whole flags. */
static void test_run_rows_carry_result_and_baseline_flags(void **state)
{
    (void)state;
    json_error_t err;
    json_t *doc = json_loads("{\"results\": ["
                             "{\"precision\": \"fp16\", \"flags\": [\"throttled\", \"hot\"]},"
                             "{\"precision\": \"nf4\", \"flags\": [\"counter-instant-disagree\"]},"
                             "{\"precision\": \"int8\", \"flags\": []},"
                             "{\"precision\": \"fp8\"}]}",
                             0, &err);
    assert_non_null(doc);
    char buf[160];
    eco_energy_record_flags(doc, "nf4", buf, sizeof buf);
    assert_string_equal(buf, "counter-instant-disagree fp16:throttled fp16:hot");
    eco_energy_record_flags(doc, "int8", buf, sizeof buf);
    assert_string_equal(buf, "fp16:throttled fp16:hot");
    eco_energy_record_flags(doc, "fp8", buf, sizeof buf); /* no flags array: the baseline's only */
    assert_string_equal(buf, "fp16:throttled fp16:hot");
    eco_energy_record_flags(doc, "int8-mixed", buf, sizeof buf); /* no such result */
    assert_string_equal(buf, "fp16:throttled fp16:hot");
    eco_energy_record_flags(doc, "nf4", buf, 40); /* room for the first two flags only */
    assert_string_equal(buf, "counter-instant-disagree fp16:throttled");
    eco_energy_record_flags(doc, "nf4", buf, 10); /* not even the first */
    assert_string_equal(buf, "");
    json_decref(doc);
    doc = json_loads("{\"results\": [{\"precision\": \"fp16\", \"flags\": []}, {\"precision\": \"nf4\", \"flags\": []}]}", 0, &err);
    eco_energy_record_flags(doc, "nf4", buf, sizeof buf);
    assert_string_equal(buf, "");
    json_decref(doc);
}

/* A committed H200 run is consistent; each single defect a schema cannot see is reported at its own pointer. */
/* orig with its first comparison's key set to value (stolen): one defect to look for */
static json_t *first_comparison_with(const json_t *orig, const char *key, json_t *value)
{
    json_t *d = json_deep_copy(orig);
    json_object_set_new(json_array_get(json_object_get(d, "comparisons"), 0), key, value);
    return d;
}

/* Exactly one finding, at want_path; takes doc. */
static void one_finding(const char *path, json_t *doc, const char *want_path)
{
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    assert_int_equal(eco_energy_check_consistency(doc, &errs), ECO_EINVAL);
    for (size_t i = 0; i < errs.count; i++) print_message("%s: %s: %s\n", path, errs.items[i].instance_path, errs.items[i].message);
    assert_int_equal(errs.count, 1);
    assert_string_equal(errs.items[0].instance_path, want_path);
    assert_string_equal(errs.items[0].keyword, "consistency");
    eco_schema_errors_free(&errs);
    json_decref(doc);
}

static void test_energy_figures_checked_against_each_other(void **state)
{
    (void)state;
    char path[4096];
    assert_true(eco_find_data_file("data/h200/h200_qwen2.5-0.5b.energy.json", NULL, path, sizeof path));
    json_error_t err;
    json_t *orig = json_load_file(path, 0, &err);
    assert_non_null(orig);
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    assert_int_equal(eco_energy_check_consistency(orig, &errs), ECO_OK);
    assert_int_equal(errs.count, 0);
    eco_schema_errors_free(&errs);
    json_t *c0 = json_array_get(json_object_get(orig, "comparisons"), 0);
    const char *p0 = json_string_value(json_object_get(c0, "precision"));
    size_t r_int8 = 0;
    for (size_t i = 0; i < json_array_size(json_object_get(orig, "results")); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(json_object_get(orig, "results"), i), "precision")), p0)) r_int8 = i;
    char want[64];
    json_t *d;
    /* a ΔE the results do not give (its interval and verdict moved with it) */
    d = first_comparison_with(orig, "delta_pct", json_real(50.0));
    json_object_set_new(json_array_get(json_object_get(d, "comparisons"), 0), "ci95_pct", json_pack("[f, f]", 49.0, 51.0));
    json_object_set_new(json_array_get(json_object_get(d, "comparisons"), 0), "verdict", json_string("costs"));
    one_finding(path, d, "/comparisons/0/delta_pct");
    /* an interval that does not contain its own point, a verdict without an interval of two pairs */
    one_finding(path, first_comparison_with(orig, "ci95_pct", json_pack("[f, f]", -30.0, -25.0)), "/comparisons/0/ci95_pct");
    one_finding(path, first_comparison_with(orig, "n_pairs", json_integer(1)), "/comparisons/0/verdict");
    /* spread figures the samples do not give (they weigh the fit and print as CV) */
    d = json_deep_copy(orig);
    json_object_set_new(json_array_get(json_object_get(d, "results"), r_int8), "cv_pct", json_real(50.0));
    snprintf(want, sizeof want, "/results/%zu/cv_pct", r_int8);
    one_finding(path, d, want);
    d = json_deep_copy(orig);
    json_object_set_new(json_array_get(json_object_get(d, "results"), r_int8), "sd_mj", json_real(100.0));
    snprintf(want, sizeof want, "/results/%zu/sd_mj", r_int8);
    one_finding(path, d, want);
    /* end to end below decode (it adds the prefill) */
    d = json_deep_copy(orig);
    json_object_set_new(json_array_get(json_object_get(d, "results"), r_int8), "e2e_mj_per_token_gross", json_real(1.0));
    snprintf(want, sizeof want, "/results/%zu/e2e_mj_per_token_gross", r_int8);
    one_finding(path, d, want);
    /* more blocks done than asked for; a size its preset does not have */
    d = json_deep_copy(orig);
    json_object_set_new(json_object_get(d, "protocol"), "iterations", json_integer(2));
    one_finding(path, d, "/protocol/blocks");
    d = json_deep_copy(orig);
    json_object_set_new(json_object_get(d, "weights"), "params_b", json_real(5.0));
    one_finding(path, d, "/weights/params_b");
    /* the same precision measured twice */
    d = json_deep_copy(orig);
    json_array_append_new(json_object_get(d, "results"), json_deep_copy(json_array_get(json_object_get(d, "results"), r_int8)));
    snprintf(want, sizeof want, "/results/%zu/precision", json_array_size(json_object_get(d, "results")) - 1);
    one_finding(path, d, want);
    /* a backwards interval, a verdict against its interval, more pairs than blocks */
    d = first_comparison_with(orig, "ci95_pct", json_pack("[f, f]", 5.0, -5.0));
    json_object_del(json_array_get(json_object_get(d, "comparisons"), 0), "verdict");
    one_finding(path, d, "/comparisons/0/ci95_pct");
    one_finding(path, first_comparison_with(orig, "verdict", json_string("costs")), "/comparisons/0/verdict");
    one_finding(path, first_comparison_with(orig, "n_pairs", json_integer(99)), "/comparisons/0/n_pairs");
    /* a comparison without its result */
    d = json_deep_copy(orig);
    json_array_remove(json_object_get(d, "results"), r_int8);
    one_finding(path, d, "/comparisons/0/precision");
    /* an implausible energy (with its ΔE made to follow, so the energy alone is reported) */
    d = json_deep_copy(orig);
    json_t *res = json_array_get(json_object_get(d, "results"), r_int8);
    double base = 0;
    for (size_t i = 0; i < json_array_size(json_object_get(d, "results")); i++) {
        json_t *r = json_array_get(json_object_get(d, "results"), i);
        if (!strcmp(json_string_value(json_object_get(r, "precision")), "fp16")) base = json_number_value(json_object_get(r, "mj_per_token_gross"));
    }
    json_object_set_new(res, "mj_per_token_gross", json_real(2e7));
    json_object_set_new(res, "ci95_mj", json_pack("[f, f]", 2e7 - 1, 2e7 + 1));
    json_object_del(res, "samples_mj_per_token"); /* so the energy alone is reported, not what follows from it */
    json_object_del(res, "mean_power_w");
    double huge = (2e7 - base) / base * 100;
    json_object_set_new(json_array_get(json_object_get(d, "comparisons"), 0), "delta_pct", json_real(huge));
    json_object_set_new(json_array_get(json_object_get(d, "comparisons"), 0), "ci95_pct", json_pack("[f, f]", huge - 1, huge + 1));
    json_object_set_new(json_array_get(json_object_get(d, "comparisons"), 0), "verdict", json_string("costs"));
    snprintf(want, sizeof want, "/results/%zu/mj_per_token_gross", r_int8);
    one_finding(path, d, want);
    json_decref(orig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_protocol_with_fake_meter, close_meter),
        cmocka_unit_test_teardown(test_clock_events_inside_windows, close_meter),
        cmocka_unit_test_teardown(test_swamped_prefill_window_is_measured_again, close_meter),
        cmocka_unit_test(test_no_meter_marks_energy_unavailable),
        cmocka_unit_test_teardown(test_failed_self_test_measures_without_energy, close_meter),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_run_rows_carry_result_and_baseline_flags),
        cmocka_unit_test(test_energy_figures_checked_against_each_other),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
