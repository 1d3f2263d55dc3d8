/* The NVML meter against the fake libnvidia-ml (tests/fake_nvml): dlopen path, missing counter,
 * environment card, edge-aligned counter windows vs the known true energy, and the aliasing case where
 * polled "instant" power is wrong while the counter is right. */
#include <dlfcn.h>
#include <string.h>
#include <time.h>

#include "eco_test.h"
#include "eco/power.h"

typedef double (*true_energy_fn)(double, double);

static char fake_path[1024], noenergy_path[1024];

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static eco_nvml *open_fake(const char *script)
{
    setenv("ECO_NVML_LIBRARY", fake_path, 1);
    setenv("ECO_FAKE_NVML_POWER", script, 1);
    eco_nvml *m = NULL;
    assert_int_equal(eco_nvml_open(0, &m), ECO_OK);
    return m;
}

/* A function the fake exports for tests (it is loaded already, by eco_nvml_open). */
static void *fake_symbol(const char *name)
{
    void *h = dlopen(fake_path, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    void *sym = dlsym(h, name);
    dlclose(h); /* drops only the NOLOAD reference */
    assert_non_null(sym);
    return sym;
}

static true_energy_fn truth(void)
{
    union { void *obj; true_energy_fn fn; } cast = {.obj = fake_symbol("fake_nvml_true_energy_j")};
    return cast.fn;
}

/* Window bounded by counter update edges: energy = counter delta, time = edge midpoints. */
static double g_edge_uncertainty_s; /* the last window's two edge reads: how long each took (a loaded machine stalls them) */

static void measure_window(eco_nvml *m, double seconds, double *energy_j, double *t0, double *t1)
{
    eco_counter_read a, b;
    assert_int_equal(eco_nvml_read_counter_edge(m, 0.5, &a), ECO_OK);
    sleep_s(seconds);
    assert_int_equal(eco_nvml_read_counter_edge(m, 0.5, &b), ECO_OK);
    *energy_j = (double)(b.energy_mj - a.energy_mj) / 1000.0;
    *t0 = a.t_before_s;
    *t1 = b.t_before_s;
    g_edge_uncertainty_s = (a.t_after_s - a.t_before_s) + (b.t_after_s - b.t_before_s);
}

static void test_missing_library_is_a_clear_error(void **state)
{
    (void)state;
    setenv("ECO_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    eco_nvml *m = NULL;
    assert_int_equal(eco_nvml_open(0, &m), ECO_EDEVICE);
    assert_null(m);
    assert_non_null(strstr(eco_last_error(), "/nonexistent/libnvidia-ml.so.1"));
}

static void test_missing_energy_counter_refuses(void **state)
{
    (void)state;
    setenv("ECO_NVML_LIBRARY", noenergy_path, 1);
    eco_nvml *m = NULL;
    assert_int_equal(eco_nvml_open(0, &m), ECO_EUNSUPPORTED);
    assert_non_null(strstr(eco_last_error(), "nvmlDeviceGetTotalEnergyConsumption"));
}

static void test_card_fields(void **state)
{
    (void)state;
    eco_nvml *m = open_fake("const:300");
    eco_gpu_card c;
    assert_int_equal(eco_nvml_card(m, &c), ECO_OK);
    assert_string_equal(c.name, "NVIDIA H200 (fake NVML)");
    assert_int_equal(c.architecture_code, 9);
    assert_near(c.power_limit_w, 700.0, 1e-9);
    assert_int_equal(c.sm_clock_max_mhz, 1980);
    assert_int_equal(c.cuda_driver_version, 13000);
    assert_true(c.has_instant_field && c.has_average_field && c.has_memory_field);
    assert_true(isnan(c.power_limit_default_w)); /* the fake does not export it: NAN, never a guess */
    char reasons[128];
    eco_clock_event_reasons_str(0x5, reasons, sizeof reasons);
    assert_string_equal(reasons, "idle|sw_power_cap");
    eco_nvml_close(m);
}

static void test_counter_matches_truth_constant(void **state)
{
    (void)state;
    eco_nvml *m = open_fake("const:300");
    double e, t0, t1;
    measure_window(m, 1.0, &e, &t0, &t1);
    double expected = truth()(t0, t1);
    /* Edge-aligned reads: the only error left is the read latency at each edge (~2 ms of 1 s; more when the
     * tests share two cores and a read is descheduled, which the reads' own timestamps show) */
    assert_true(fabs(e / expected - 1.0) < 0.005 + g_edge_uncertainty_s / (t1 - t0));
    assert_near(e / (t1 - t0), 300.0, 1.5);
    eco_nvml_close(m);
}

static void test_aliasing_polled_power_wrong_counter_right(void **state)
{
    (void)state;
    /* 100 ms square wave at 60% duty between 130 and 455 W: true mean 325 W. */
    eco_nvml *m = open_fake("square:130:455:100:0.6");
    eco_sampler *s = NULL;
    assert_int_equal(eco_sampler_start(m, 10, 4096, &s), ECO_OK);
    double e, t0, t1;
    measure_window(m, 2.0, &e, &t0, &t1);
    eco_sampler_stop(s);
    double expected = truth()(t0, t1);
    assert_true(fabs(e / expected - 1.0) < 0.005);
    assert_true(eco_sampler_count(s) > 150); /* ~10 ms ticks over >2 s */
    double polled = eco_power_trapz_j(eco_sampler_samples(s), eco_sampler_count(s), t0, t1, 0);
    double polled_err = fabs(polled / expected - 1.0);
    print_message("square wave: truth %.1f J, counter %.1f J (%.3f%%), polled instant %.1f J (%.1f%%)\n", expected, e,
                  100 * (e / expected - 1), polled, 100 * (polled / expected - 1));
    assert_true(polled_err > 0.10); /* the instant field samples one phase of the load */
    double average = eco_power_trapz_j(eco_sampler_samples(s), eco_sampler_count(s), t0, t1, 1);
    assert_true(average > 0);
    eco_sampler_free(s);
    eco_nvml_close(m);
}

/* A reader preempted across a counter update stamps the edge up to the stall early. Every other update of the
 * fake stalls a read 30 ms: edge reads must pass those over and land within a few ms of the true update time. */
static void test_edge_reads_skip_a_preempted_update(void **state)
{
    (void)state;
    setenv("ECO_FAKE_NVML_STALL_MS", "30", 1);
    eco_nvml *m = open_fake("const:300");
    union { void *obj; double (*fn)(void); } tick = {.obj = fake_symbol("fake_nvml_last_tick_s")};
    double worst = 0;
    for (int i = 0; i < 6; i++) {
        eco_counter_read r;
        assert_int_equal(eco_nvml_read_counter_edge(m, 0.5, &r), ECO_OK);
        double off = r.t_before_s - tick.fn();
        if (fabs(off) > worst) worst = fabs(off);
    }
    print_message("edge stamps within %.2f ms of the true updates\n", worst * 1e3);
    assert_true(worst < 0.006); /* a read or two (2 ms each), not the 30 ms stall */
    eco_nvml_close(m);
    unsetenv("ECO_FAKE_NVML_STALL_MS");
}

static void test_trapz_exact_on_linear_ramp(void **state)
{
    (void)state;
    eco_power_sample s[3] = {{.t_s = 0, .instant_w = 100}, {.t_s = 1, .instant_w = 200}, {.t_s = 2, .instant_w = 200}};
    assert_near(eco_power_trapz_j(s, 3, 0, 2, 0), 150 + 200, 1e-9);
    assert_near(eco_power_trapz_j(s, 3, 0.5, 1.5, 0), 0.5 * (150 + 200) * 0.5 + 200 * 0.5, 1e-9);
    assert_near(eco_power_trapz_j(s, 3, -1, 0, 0), 100, 1e-9); /* edge value held before the first sample */
}

int main(void)
{
    char dir[512];
    const char *bin = getenv("ECO_BINARY_DIR");
    snprintf(dir, sizeof dir, "%s/tests", bin ? bin : ".");
    snprintf(fake_path, sizeof fake_path, "%s/libfake_nvml.so", dir);
    snprintf(noenergy_path, sizeof noenergy_path, "%s/libfake_nvml_noenergy.so", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_library_is_a_clear_error),
        cmocka_unit_test(test_missing_energy_counter_refuses),
        cmocka_unit_test(test_card_fields),
        cmocka_unit_test(test_counter_matches_truth_constant),
        cmocka_unit_test(test_aliasing_polled_power_wrong_counter_right),
        cmocka_unit_test(test_edge_reads_skip_a_preempted_update),
        cmocka_unit_test(test_trapz_exact_on_linear_ramp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
