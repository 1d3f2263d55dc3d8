/* The measurement protocol (see include/eco/measure.h and shared/research/anchor-measurement.md §7). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eco/measure.h"
#include "eco/stats.h"

#define SAMPLER_CAPACITY 262144 /* ~44 min at 10 ms */
#define EDGE_TIMEOUT_S 0.5
#define IDLE_AGREEMENT 0.03      /* idle check: counter vs instant trapezoid */
#define WINDOW_AGREEMENT 0.03    /* per-window flag */
#define CADENCE_MIN_MS 50.0
#define CADENCE_MAX_MS 150.0

struct eco_measurement {
    eco_measure_options opt;
    eco_window *windows;
    size_t n_windows, cap_windows;
    const char *basis;
    double idle_before_w, idle_after_w;
    /* self-test */
    double selftest_counter_w, selftest_instant_w, selftest_average_w;
    double cadence_median_ms, read_latency_median_ms;
    int idle_check_passed, cadence_check_passed; /* -1 = not run */
    size_t windows_flagged, sampler_dropped, sampler_samples;
    size_t windows_remeasured; /* windows whose prefill estimate left no decode energy, measured again */
    double gens_per_window[ECO_MEASURE_MAX_CONFIGS], prefills_per_window[ECO_MEASURE_MAX_CONFIGS];
    json_t *quality[ECO_MEASURE_MAX_CONFIGS];
    char failure[512]; /* why the meter self-test failed ("" when it did not) */
};

void eco_measure_options_default(eco_measure_options *o)
{
    memset(o, 0, sizeof *o);
    o->n_configs = 1;
    o->precisions[0] = ECO_PREC_FP16;
    o->tokens = 256;
    o->iterations = 10;
    o->warmups = 2;
    o->min_window_s = 10.0;
    o->min_generations = 1;
    o->idle_s = 5.0;
    o->seed = 20261202;
    o->sampler_period_ms = 10;
}

static void sleep_s(double s)
{
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static eco_err check_options(const eco_measure_options *o)
{
    if (o->n_configs < 1 || o->n_configs > ECO_MEASURE_MAX_CONFIGS)
        return eco_fail_field(ECO_EINVAL, "precisions", "need 1..%d precisions, got %d", ECO_MEASURE_MAX_CONFIGS, o->n_configs);
    if (o->precisions[0] != ECO_PREC_FP16)
        return eco_fail_field(ECO_EINVAL, "precisions", "the first configuration must be the fp16 baseline, got %s",
                              eco_precision_name(o->precisions[0]));
    for (int i = 0; i < o->n_configs; i++)
        for (int j = 0; j < i; j++)
            if (o->precisions[i] == o->precisions[j])
                return eco_fail_field(ECO_EINVAL, "precisions", "precision %s is listed twice", eco_precision_name(o->precisions[i]));
    if (o->tokens < 1 || o->tokens > 65536) return eco_fail_field(ECO_EINVAL, "tokens", "tokens must be 1..65536, got %d", o->tokens);
    if (o->iterations < 1 || o->iterations > 10000)
        return eco_fail_field(ECO_EINVAL, "iterations", "iterations must be 1..10000, got %d", o->iterations);
    if (o->warmups < 0 || o->warmups > 1000) return eco_fail_field(ECO_EINVAL, "warmups", "warmups must be 0..1000, got %d", o->warmups);
    if (!(o->min_window_s > 0) || o->min_window_s > 3600)
        return eco_fail_field(ECO_EINVAL, "min_window_s", "window length must be in (0, 3600] s, got %g", o->min_window_s);
    if (o->min_generations < 0 || o->min_generations > 100000)
        return eco_fail_field(ECO_EINVAL, "iterations", "generations per window must be 0..100000, got %d", o->min_generations);
    if (!(o->idle_s >= 0) || o->idle_s > 600) return eco_fail_field(ECO_EINVAL, "idle_s", "idle must be 0..600 s, got %g", o->idle_s);
    return ECO_OK;
}

static eco_err push_window(eco_measurement *m, const eco_window *w)
{
    if (m->n_windows == m->cap_windows) {
        size_t cap = m->cap_windows ? 2 * m->cap_windows : 64;
        eco_window *p = realloc(m->windows, cap * sizeof *p);
        if (!p) return eco_fail(ECO_ENOMEM, "out of memory");
        m->windows = p;
        m->cap_windows = cap;
    }
    m->windows[m->n_windows++] = *w;
    return ECO_OK;
}

/* Counter energy over an idle period with edge-aligned reads; also the instant-field trapezoid. */
static eco_err idle_window(eco_nvml *meter, eco_sampler *s, double seconds, double *power_w,
                           double *instant_w, double *average_w)
{
    eco_counter_read a, b;
    eco_err e = eco_nvml_read_counter_edge(meter, EDGE_TIMEOUT_S, &a);
    if (e) return e;
    sleep_s(seconds);
    if ((e = eco_nvml_read_counter_edge(meter, EDGE_TIMEOUT_S, &b))) return e;
    double t0 = a.t_before_s, t1 = b.t_before_s, dt = t1 - t0;
    *power_w = (double)(b.energy_mj - a.energy_mj) / 1000.0 / dt;
    size_t n = eco_sampler_count(s);
    const eco_power_sample *p = eco_sampler_samples(s);
    *instant_w = eco_power_trapz_j(p, n, t0, t1, 0) / dt;
    *average_w = eco_power_trapz_j(p, n, t0, t1, 1) / dt;
    return ECO_OK;
}

/* Median interval between counter changes and median read latency, spinning ~1 s. */
static eco_err cadence_check(eco_nvml *meter, double seconds, double *median_ms, double *latency_ms)
{
    enum { MAX_READS = 4096 };
    double *changes = malloc(MAX_READS * sizeof *changes), *lat = malloc(MAX_READS * sizeof *lat);
    double *scratch = malloc(MAX_READS * sizeof *scratch);
    if (!changes || !lat || !scratch) { free(changes); free(lat); free(scratch); return eco_fail(ECO_ENOMEM, "out of memory"); }
    size_t nc = 0, nl = 0;
    eco_counter_read r, prev;
    eco_err e = eco_nvml_read_counter(meter, &prev);
    double end = prev.t_after_s + seconds;
    while (!e && nl < MAX_READS) {
        if ((e = eco_nvml_read_counter(meter, &r))) break;
        lat[nl++] = (r.t_after_s - r.t_before_s) * 1e3;
        if (r.energy_mj != prev.energy_mj && nc < MAX_READS) changes[nc++] = r.t_before_s;
        prev = r;
        if (r.t_after_s > end) break;
    }
    if (!e) {
        for (size_t i = 0; i + 1 < nc; i++) changes[i] = (changes[i + 1] - changes[i]) * 1e3;
        *median_ms = nc >= 2 ? eco_quantile(changes, nc - 1, 0.5, scratch) : NAN;
        *latency_ms = nl ? eco_quantile(lat, nl, 0.5, scratch) : NAN;
    }
    free(changes);
    free(lat);
    free(scratch);
    return e;
}

/* The end-of-window read waits for the next counter update (<= ~100 ms) after the work ended; that tail is
 * not workload energy. Charge it at the sampled instant power over the tail (else the idle power). */
static double tail_energy_j(const eco_measurement *m, eco_sampler *s, double t_work_end, double t_edge)
{
    double tail_s = t_edge - t_work_end;
    if (tail_s <= 0) return 0;
    if (s) {
        double j = eco_power_trapz_j(eco_sampler_samples(s), eco_sampler_count(s), t_work_end, t_edge, 0);
        if (isfinite(j) && j > 0) return j;
    }
    return isfinite(m->idle_before_w) ? m->idle_before_w * tail_s : 0;
}

/* Clocks over a window from the timeline: the reasons any sample reported (the end-of-window read alone can
 * miss a power cap that came and went), and the lowest and mean SM clock. */
static void window_clocks(const eco_power_sample *p, size_t n, eco_window *w)
{
    unsigned lo = 0;
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i].t_s < w->t0_s || p[i].t_s > w->t1_s) continue;
        w->clock_event_reasons |= p[i].clock_event_reasons;
        if (!p[i].sm_mhz) continue;
        lo = k == 0 || p[i].sm_mhz < lo ? p[i].sm_mhz : lo;
        sum += p[i].sm_mhz;
        k++;
    }
    w->sm_mhz_min = lo;
    w->sm_mhz_mean = k ? sum / (double)k : NAN;
}

static eco_err run_generations(eco_workload *w, int config, int count, int tokens, double *prefill_s, double *decode_s,
                               long *generated)
{
    *prefill_s = *decode_s = 0;
    *generated = 0;
    for (int i = 0; i < count; i++) {
        eco_generation g;
        eco_err e = w->generate(w->ctx, config, tokens, &g);
        if (e) return e;
        if (g.generated_tokens != tokens)
            return eco_fail(ECO_ESTATE, "configuration %d generated %d tokens, expected exactly %d", config,
                            g.generated_tokens, tokens);
        *prefill_s += g.prefill_s;
        *decode_s += g.decode_s;
        *generated += g.generated_tokens;
    }
    return ECO_OK;
}

static void shuffle(int *order, int n, eco_rng *rng)
{
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)eco_rng_below(rng, (size_t)i + 1);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* One block's windows for one configuration: a prefill-only window, then the decode window. */
/* *swamped: the error returned is a window whose prefill estimate left no decode energy (worth measuring again). */
static eco_err measure_config(eco_measurement *m, eco_workload *w, eco_nvml *meter, eco_sampler *s, int block, int pos,
                              int config, bool *swamped)
{
    *swamped = false;
    const eco_measure_options *o = &m->opt;
    eco_window win;
    memset(&win, 0, sizeof win);
    win.block = block;
    win.order = pos;
    win.config = config;
    win.energy_j = win.prefill_energy_j = NAN;
    double pf_s, dec_s, prefill_each_j = NAN, prefill_each_s;
    long gen;
    eco_counter_read a, b;
    eco_err e;

    int n_prefill = (int)m->prefills_per_window[config];
    double t0 = eco_monotonic_s();
    if (meter && (e = eco_nvml_read_counter_edge(meter, EDGE_TIMEOUT_S, &a))) return e;
    if (meter) t0 = a.t_before_s;
    if ((e = run_generations(w, config, n_prefill, 0, &pf_s, &dec_s, &gen))) return e;
    double t1 = eco_monotonic_s();
    if (meter && (e = eco_nvml_read_counter_edge(meter, EDGE_TIMEOUT_S, &b))) return e;
    if (meter)
        prefill_each_j = ((double)(b.energy_mj - a.energy_mj) / 1000.0 - tail_energy_j(m, s, t1, b.t_before_s)) / n_prefill;
    prefill_each_s = (t1 - t0) / n_prefill;

    int k = (int)m->gens_per_window[config];
    win.generations = k;
    win.t0_s = eco_monotonic_s();
    if (meter && (e = eco_nvml_read_counter_edge(meter, EDGE_TIMEOUT_S, &a))) return e;
    if (meter) win.t0_s = a.t_before_s;
    eco_power_sample ps;
    win.temp_start_c = meter && eco_nvml_sample(meter, &ps) == ECO_OK ? ps.temp_c : -1;
    if ((e = run_generations(w, config, k, o->tokens, &win.prefill_s, &win.decode_s, &win.tokens))) return e;
    /* the warm-ups' pace can overstate a window's: it lasts at least min_window_s, as the protocol says */
    while (eco_monotonic_s() - win.t0_s < o->min_window_s && win.generations < 1000000) {
        double pf1, dec1;
        long gen1;
        if ((e = run_generations(w, config, 1, o->tokens, &pf1, &dec1, &gen1))) return e;
        win.prefill_s += pf1, win.decode_s += dec1, win.tokens += gen1, win.generations++;
    }
    k = win.generations;
    win.t1_s = eco_monotonic_s();
    if (meter && (e = eco_nvml_read_counter_edge(meter, EDGE_TIMEOUT_S, &b))) return e;
    double window_s;
    if (meter) {
        if (b.energy_mj < a.energy_mj) return eco_fail(ECO_EDEVICE, "energy counter went backwards during a window");
        win.tail_j = tail_energy_j(m, s, win.t1_s, b.t_before_s);
        win.energy_j = (double)(b.energy_mj - a.energy_mj) / 1000.0 - win.tail_j;
        eco_nvml_sample(meter, &ps);
        win.temp_end_c = ps.temp_c;
        win.clock_event_reasons = ps.clock_event_reasons;
    } else {
        win.temp_end_c = -1;
        win.tail_j = NAN;
    }
    window_s = win.t1_s - win.t0_s;
    win.mean_power_w = win.energy_j / window_s;
    win.prefill_energy_j = prefill_each_j * k;
    double decode_energy_j = win.energy_j - win.prefill_energy_j;
    *swamped = meter && !(decode_energy_j > 0.05 * win.energy_j);
    if (*swamped)
        return eco_fail(ECO_ESTATE, "block %d, %s: the prefills' energy (%.3g J, from their own sub-window) is %.0f%% of the "
                                    "window's %.3g J, so its decode energy cannot be told apart: a longer --window, or a "
                                    "quieter machine", block + 1, eco_precision_name(o->precisions[config]),
                        win.prefill_energy_j, 100 * win.prefill_energy_j / win.energy_j, win.energy_j);
    double decode_window_s = window_s - prefill_each_s * k;
    win.decode_mj_per_token_gross = decode_energy_j * 1000.0 / (double)win.tokens;
    win.decode_mj_per_token_net = (decode_energy_j - m->idle_before_w * decode_window_s) * 1000.0 / (double)win.tokens;
    win.e2e_mj_per_token_gross = win.energy_j * 1000.0 / (double)win.tokens;
    win.instant_trapz_j = NAN;
    win.counter_vs_instant_ratio = NAN;
    win.sm_mhz_min = 0;
    win.sm_mhz_mean = NAN;
    if (meter && s) {
        window_clocks(eco_sampler_samples(s), eco_sampler_count(s), &win);
        win.instant_trapz_j = eco_power_trapz_j(eco_sampler_samples(s), eco_sampler_count(s), win.t0_s, win.t1_s, 0);
        if (win.instant_trapz_j > 0) {
            win.counter_vs_instant_ratio = win.energy_j / win.instant_trapz_j;
            if (fabs(1.0 - win.counter_vs_instant_ratio) > WINDOW_AGREEMENT) m->windows_flagged++;
        }
    }
    if (!o->quiet) {
        double tps = (double)win.tokens / (win.decode_s > 0 ? win.decode_s : window_s);
        if (meter)
            fprintf(stderr, "[block %d/%d] %-10s %6.2f s  %6ld tok  %9.2f mJ/tok decode (gross)  %8.1f tok/s  %6.1f W\n",
                    block + 1, o->iterations, eco_precision_name(o->precisions[config]), window_s, win.tokens,
                    win.decode_mj_per_token_gross, tps, win.mean_power_w);
        else
            fprintf(stderr, "[block %d/%d] %-10s %6.2f s  %6ld tok  energy unavailable  %8.1f tok/s\n", block + 1,
                    o->iterations, eco_precision_name(o->precisions[config]), window_s, win.tokens, tps);
    }
    return push_window(m, &win);
}

/* Self-test: idle agreement between the counter and the instant field, and the counter cadence. An error here
 * (a counter that never moves, a failed read) makes the run's basis "failed": it goes on without energy. */
static eco_err self_test(eco_measurement *m, eco_nvml *meter, eco_sampler *s)
{
    const eco_measure_options *o = &m->opt;
    eco_err e = idle_window(meter, s, o->idle_s, &m->idle_before_w, &m->selftest_instant_w, &m->selftest_average_w);
    if (e) return e;
    m->selftest_counter_w = m->idle_before_w;
    m->idle_check_passed = isnan(m->selftest_instant_w) || m->selftest_instant_w <= 0
                               ? -1
                               : fabs(m->selftest_counter_w / m->selftest_instant_w - 1.0) <= IDLE_AGREEMENT;
    if ((e = cadence_check(meter, 1.0, &m->cadence_median_ms, &m->read_latency_median_ms))) return e;
    m->cadence_check_passed = m->cadence_median_ms >= CADENCE_MIN_MS && m->cadence_median_ms <= CADENCE_MAX_MS;
    return ECO_OK;
}

static eco_err run_protocol(eco_measurement *m, eco_workload *w, eco_nvml *meter, eco_sampler *s)
{
    const eco_measure_options *o = &m->opt;
    eco_err e;
    if (!meter && !m->failure[0]) m->idle_check_passed = m->cadence_check_passed = -1; /* no meter: not run */

    /* Warm-ups also size the windows: K generations so a window lasts >= min_window_s. */
    for (int c = 0; c < o->n_configs; c++) {
        double pf = 0, dec = 0;
        long gen;
        int n = o->warmups > 0 ? o->warmups : 1;
        if ((e = run_generations(w, c, n, o->tokens, &pf, &dec, &gen))) return e;
        double per_gen = (pf + dec) / n, per_prefill = pf / n;
        double k = ceil(o->min_window_s / (per_gen > 1e-6 ? per_gen : 1e-6));
        if (k < o->min_generations) k = o->min_generations;
        m->gens_per_window[c] = k < 1 ? 1 : k > 1e6 ? 1e6 : k;
        double kp = ceil(0.5 * o->min_window_s / (per_prefill > 1e-6 ? per_prefill : 1e-6));
        m->prefills_per_window[c] = kp < 1 ? 1 : kp > 1e6 ? 1e6 : kp;
        if (!o->quiet)
            fprintf(stderr, "[warm-up] %-10s %.4f s per generation -> %d generations per window\n",
                    eco_precision_name(o->precisions[c]), per_gen, (int)m->gens_per_window[c]);
    }

    eco_rng rng;
    eco_rng_seed(&rng, o->seed);
    int order[ECO_MEASURE_MAX_CONFIGS];
    for (int b = 0; b < o->iterations; b++) {
        shuffle(order, o->n_configs, &rng);
        for (int p = 0; p < o->n_configs; p++) {
            /* one noisy prefill sub-window is measured again (twice at most) rather than ending the run */
            bool swamped;
            for (int attempt = 0;; attempt++) {
                e = measure_config(m, w, meter, s, b, p, order[p], &swamped);
                if (!e || !swamped || attempt == 2) break;
                m->windows_remeasured++;
                fprintf(stderr, "[block %d/%d] %s: %s; measuring the window again\n", b + 1, o->iterations,
                        eco_precision_name(o->precisions[order[p]]), eco_last_error());
                eco_clear_error();
            }
            if (e) return e;
        }
    }

    if (meter) {
        double inst, avg;
        if ((e = idle_window(meter, s, o->idle_s, &m->idle_after_w, &inst, &avg))) return e;
    }
    if (w->quality)
        for (int c = 0; c < o->n_configs; c++)
            if ((e = w->quality(w->ctx, c, &m->quality[c]))) return e;
    return ECO_OK;
}

eco_err eco_measure_run(const eco_measure_options *o, eco_workload *w, eco_nvml *meter, eco_measurement **out)
{
    eco_err e = check_options(o);
    if (e) return e;
    if (!w || !w->generate) return eco_fail(ECO_EINVAL, "measure: no workload");
    if (meter && !(o->idle_s > 0)) /* idle 0 had measured 1 s each side and recorded 0 */
        return eco_fail_field(ECO_EINVAL, "idle_s", "with an energy meter the idle baseline needs a length > 0 s (it is the "
                                                    "baseline of net energy), got %g", o->idle_s);
    eco_measurement *m = calloc(1, sizeof *m);
    if (!m) return eco_fail(ECO_ENOMEM, "out of memory");
    m->opt = *o;
    m->selftest_counter_w = m->selftest_instant_w = m->selftest_average_w = NAN;
    m->cadence_median_ms = m->read_latency_median_ms = NAN;
    eco_sampler *s = NULL;
    if (meter && (e = eco_sampler_start(meter, o->sampler_period_ms ? o->sampler_period_ms : 10, SAMPLER_CAPACITY, &s))) {
        free(m);
        return e;
    }
    m->idle_before_w = m->idle_after_w = NAN;
    if (meter && (e = self_test(m, meter, s))) {
        snprintf(m->failure, sizeof m->failure, "energy meter self-test failed: %s", eco_last_error());
        fprintf(stderr, "[self-test] %s; measuring without energy\n", m->failure); /* even --quiet: the asked-for meter failed */
        eco_sampler_stop(s);
        m->idle_before_w = NAN;
        m->idle_check_passed = m->cadence_check_passed = 0;
        meter = NULL;
    }
    e = run_protocol(m, w, meter, s && meter ? s : NULL);
    if (s) {
        eco_sampler_stop(s);
        m->sampler_dropped = eco_sampler_dropped(s);
        m->sampler_samples = eco_sampler_count(s);
        eco_sampler_free(s);
    }
    if (e) { eco_measurement_free(m); return e; }
    if (m->failure[0]) m->basis = "failed";
    else if (!meter) m->basis = "unavailable";
    else if (m->idle_check_passed == 1 && m->cadence_check_passed == 1) m->basis = "measured";
    else m->basis = "unverified";
    *out = m;
    return ECO_OK;
}

void eco_measurement_free(eco_measurement *m)
{
    if (!m) return;
    for (int c = 0; c < ECO_MEASURE_MAX_CONFIGS; c++) json_decref(m->quality[c]);
    free(m->windows);
    free(m);
}

size_t eco_measurement_window_count(const eco_measurement *m) { return m->n_windows; }
const eco_measure_options *eco_measurement_options(const eco_measurement *m) { return &m->opt; }
const eco_window *eco_measurement_windows(const eco_measurement *m) { return m->windows; }
const char *eco_measurement_basis(const eco_measurement *m) { return m->basis; }
const char *eco_measurement_failure(const eco_measurement *m) { return m->failure; }
double eco_measurement_idle_before_w(const eco_measurement *m) { return m->idle_before_w; }
size_t eco_measurement_windows_remeasured(const eco_measurement *m) { return m->windows_remeasured; }

double eco_measurement_idle_after_w(const eco_measurement *m) { return m->idle_after_w; }
json_t *eco_measurement_quality_json(const eco_measurement *m, int config)
{
    return config >= 0 && config < ECO_MEASURE_MAX_CONFIGS ? m->quality[config] : NULL;
}

/* The window of `config` in `block`, or NULL. */
static const eco_window *find_window(const eco_measurement *m, int block, int config)
{
    for (size_t i = 0; i < m->n_windows; i++)
        if (m->windows[i].block == block && m->windows[i].config == config) return &m->windows[i];
    return NULL;
}

eco_err eco_measurement_summary(const eco_measurement *m, int config, eco_config_summary *out)
{
    if (config < 0 || config >= m->opt.n_configs) return eco_fail(ECO_EINVAL, "no configuration %d", config);
    int nb = m->opt.iterations;
    double *gross = calloc((size_t)nb, sizeof *gross), *net = calloc((size_t)nb, sizeof *net);
    double *e2e = calloc((size_t)nb, sizeof *e2e), *tps = calloc((size_t)nb, sizeof *tps);
    double *pw = calloc((size_t)nb, sizeof *pw), *base = calloc((size_t)nb, sizeof *base);
    if (!gross || !net || !e2e || !tps || !pw || !base) {
        free(gross); free(net); free(e2e); free(tps); free(pw); free(base);
        return eco_fail(ECO_ENOMEM, "out of memory");
    }
    int n = 0;
    for (int b = 0; b < nb; b++) {
        const eco_window *w = find_window(m, b, config), *w0 = find_window(m, b, 0);
        if (!w || !w0) continue;
        gross[n] = w->decode_mj_per_token_gross;
        net[n] = w->decode_mj_per_token_net;
        e2e[n] = w->e2e_mj_per_token_gross;
        tps[n] = (double)w->tokens / w->decode_s;
        pw[n] = w->mean_power_w;
        base[n] = w0->decode_mj_per_token_gross;
        n++;
    }
    memset(out, 0, sizeof *out);
    out->precision = m->opt.precisions[config];
    out->n = n;
    out->mj_per_token_gross = eco_mean(gross, (size_t)n);
    out->mj_per_token_net = eco_mean(net, (size_t)n);
    out->e2e_mj_per_token_gross = eco_mean(e2e, (size_t)n);
    out->sd_mj = eco_sd(gross, (size_t)n);
    out->cv_pct = eco_cv_pct(gross, (size_t)n);
    eco_interval ci = eco_mean_ci95(gross, (size_t)n);
    out->ci95_lo_mj = ci.lo;
    out->ci95_hi_mj = ci.hi;
    out->tokens_per_s = eco_mean(tps, (size_t)n);
    out->mean_power_w = eco_mean(pw, (size_t)n);
    out->delta_pct = out->delta_ci95_lo = out->delta_ci95_hi = NAN;
    if (config != 0 && n > 0 && !isnan(gross[0])) {
        eco_interval d = eco_paired_delta_pct_t95(gross, base, (size_t)n);
        out->delta_pct = d.point;
        out->delta_ci95_lo = d.lo;
        out->delta_ci95_hi = d.hi;
    }
    free(gross); free(net); free(e2e); free(tps); free(pw); free(base);
    return ECO_OK;
}

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *eco_measurement_meter_json(const eco_measurement *m)
{
    json_t *j = json_object();
    json_object_set_new(j, "basis", json_string(m->basis));
    json_object_set_new(j, "method", json_string(strcmp(m->basis, "unavailable") ? "nvml-energy-counter" : "none"));
    if (m->failure[0]) json_object_set_new(j, "failure", json_string(m->failure));
    json_object_set_new(j, "sampler_period_ms", json_integer(m->opt.sampler_period_ms ? m->opt.sampler_period_ms : 10));
    json_object_set_new(j, "sampler_samples", json_integer((json_int_t)m->sampler_samples));
    json_object_set_new(j, "dropped_samples", json_integer((json_int_t)m->sampler_dropped));
    json_t *st = json_object();
    json_object_set_new(st, "idle_counter_w", num_or_null(m->selftest_counter_w));
    json_object_set_new(st, "idle_instant_trapz_w", num_or_null(m->selftest_instant_w));
    json_object_set_new(st, "idle_average_field_w", num_or_null(m->selftest_average_w));
    json_object_set_new(st, "idle_check_passed", m->idle_check_passed < 0 ? json_null() : json_boolean(m->idle_check_passed));
    json_object_set_new(st, "counter_update_median_ms", num_or_null(m->cadence_median_ms));
    json_object_set_new(st, "counter_read_latency_median_ms", num_or_null(m->read_latency_median_ms));
    json_object_set_new(st, "cadence_check_passed",
                        m->cadence_check_passed < 0 ? json_null() : json_boolean(m->cadence_check_passed));
    json_object_set_new(st, "windows_flagged_counter_vs_instant", json_integer((json_int_t)m->windows_flagged));
    json_object_set_new(j, "self_test", st);
    return j;
}

json_t *eco_measurement_windows_json(const eco_measurement *m)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < m->n_windows; i++) {
        const eco_window *w = &m->windows[i];
        json_t *o = json_object();
        json_object_set_new(o, "block", json_integer(w->block));
        json_object_set_new(o, "order", json_integer(w->order));
        json_object_set_new(o, "precision", json_string(eco_precision_name(m->opt.precisions[w->config])));
        json_object_set_new(o, "generations", json_integer(w->generations));
        json_object_set_new(o, "tokens", json_integer(w->tokens));
        json_object_set_new(o, "seconds", json_real(w->t1_s - w->t0_s));
        json_object_set_new(o, "decode_s", json_real(w->decode_s));
        json_object_set_new(o, "prefill_s", json_real(w->prefill_s));
        json_object_set_new(o, "energy_j", num_or_null(w->energy_j));
        json_object_set_new(o, "prefill_energy_j", num_or_null(w->prefill_energy_j));
        json_object_set_new(o, "edge_tail_j", num_or_null(w->tail_j));
        json_object_set_new(o, "decode_mj_per_token_gross", num_or_null(w->decode_mj_per_token_gross));
        json_object_set_new(o, "decode_mj_per_token_net", num_or_null(w->decode_mj_per_token_net));
        json_object_set_new(o, "mean_power_w", num_or_null(w->mean_power_w));
        json_object_set_new(o, "counter_vs_instant_ratio", num_or_null(w->counter_vs_instant_ratio));
        json_object_set_new(o, "temp_start_c", w->temp_start_c >= 0 ? json_integer(w->temp_start_c) : json_null());
        json_object_set_new(o, "temp_end_c", w->temp_end_c >= 0 ? json_integer(w->temp_end_c) : json_null());
        char reasons[160];
        eco_clock_event_reasons_str(w->clock_event_reasons, reasons, sizeof reasons);
        json_object_set_new(o, "clock_event_reasons", json_string(reasons));
        json_object_set_new(o, "sm_mhz_min", w->sm_mhz_min ? json_integer(w->sm_mhz_min) : json_null());
        json_object_set_new(o, "sm_mhz_mean", num_or_null(w->sm_mhz_mean));
        json_array_append_new(arr, o);
    }
    return arr;
}
