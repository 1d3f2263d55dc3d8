/* What an energy.json's numbers say of each other, which its JSON Schema cannot check: a schema-valid file with a
 * ΔE of +50% over results that give −20%, 1e308 mJ a token or two fp16 results would otherwise join the fit and
 * move every estimate of its architecture. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eco/fit.h"
#include "eco/measure.h"
#include "eco/model.h"

/* 1 kJ a generated token: a 1 kW board at one token a second. Anything above is a unit or export error, not a
 * decode (the reference data's largest is about 20 J). */
#define MJ_PER_TOKEN_MAX 1e6
/* delta_pct is (E - E_fp16) / E_fp16 x 100 of the results' own figures (eco measure writes exactly that); the
 * slack covers a writer that rounds each figure to a few decimals. */
#define DELTA_SLACK_PCT 0.05
/* an interval must contain its own point estimate, up to rounding (relative) */
#define INTERVAL_SLACK 1e-6
/* 10 uJ a token: no GPU decodes a token for less; below it is a unit error */
#define MJ_PER_TOKEN_MIN 1e-2
/* the per-window samples average to the gross figure (a writer may round each: 0.5% and 0.01 mJ) */
#define SAMPLES_SLACK 0.005
/* mean power against energy x speed: the same windows, so within half of it either way of the bounds that the
 * prefill's share allows */
#define POWER_FACTOR 1.5
/* the spread figures against the samples' own (n - 1) SD: 1% and 0.01 of the unit for a writer's rounding */
#define SPREAD_SLACK 0.01
/* a window's mean power over the card's power limit: the limit caps the average, transients aside */
#define POWER_LIMIT_SLACK 1.15
/* a preset's parameter count against weights.params_b: the fit's x axis */
#define PARAMS_SLACK 0.01
/* fp16 weights (2 bytes a parameter) within the card's memory, with room for a GB/GiB mix-up */
#define MEMORY_SLACK 1.1
/* tokens_per_s is the mean of its windows' tokens over decode seconds: within their range (0.5% for rounding) */
#define SPEED_SLACK 0.005
/* net is gross less the idle draw over a token's time: eco measure subtracts the idle before the run over each
 * window's decode time (host gaps between generations included, which tokens_per_s over decode_s leaves out),
 * another writer may take the idle after the run or their mean. So the idle term (gross - net) is checked against
 * idle x 1000 / tokens_per_s for either idle, 25% either way, and 0.5% of gross for rounding: an idle left out
 * (net = gross: 16-20% of gross on the H200 at 7-8B) or taken twice is outside it. */
#define IDLE_TERM_SLACK 0.25
#define NET_ROUNDING 0.005

static const char *str(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

static bool number(const json_t *o, const char *k, double *out)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_number(v)) return false;
    *out = json_number_value(v);
    return true;
}

static const json_t *result_of(const json_t *doc, const char *precision, size_t *index)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "results"), i, r) {
        const char *p = str(r, "precision");
        if (p && precision && !strcmp(p, precision)) {
            if (index) *index = i;
            return r;
        }
    }
    return NULL;
}

/* Whether a window is one of this precision's (NULL: of none). */
static bool window_of(const json_t *w, const char *precision)
{
    const char *p = str(w, "precision");
    return p && precision && !strcmp(p, precision);
}

/* The share of a precision's window time spent decoding (the windows' decode_s over their seconds), 1 where the
 * document keeps no windows: the mean power covers the whole window, the decode figures only its decode part. */
static double decode_time_share(const json_t *doc, const char *precision)
{
    size_t i;
    json_t *w;
    double decode = 0, total = 0, d, t;
    json_array_foreach(json_object_get(doc, "windows"), i, w) {
        if (window_of(w, precision) && number(w, "decode_s", &d) && number(w, "seconds", &t) && d > 0 && t > 0)
            decode += d, total += t;
    }
    return total > 0 && decode < total ? decode / total : 1.0;
}

/* The range of a precision's window speeds (tokens over decode seconds); false where the document keeps none. */
static bool window_speed_range(const json_t *doc, const char *precision, double *lo, double *hi)
{
    size_t i;
    json_t *w;
    double tokens, d;
    bool any = false;
    json_array_foreach(json_object_get(doc, "windows"), i, w) {
        if (!window_of(w, precision) || !number(w, "tokens", &tokens) || !number(w, "decode_s", &d) || !(d > 0))
            continue;
        double v = tokens / d;
        if (!any || v < *lo) *lo = v;
        if (!any || v > *hi) *hi = v;
        any = true;
    }
    return any;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A precision's windows' decode_mj_per_token_gross (those that give one), at most cap, in *count (which may pass
 * cap: the count is what the document holds). */
static void window_decode_figures(const json_t *doc, const char *precision, double *out, size_t cap, size_t *count)
{
    size_t i, m = 0;
    json_t *w;
    double v;
    json_array_foreach(json_object_get(doc, "windows"), i, w) {
        if (!window_of(w, precision) || !number(w, "decode_mj_per_token_gross", &v)) continue;
        if (m < cap) out[m] = v;
        m++;
    }
    *count = m;
}

/* The most samples (and windows of a precision) matched one to one; a longer run is checked by its average only. */
#define MATCH_MAX 256

#define ADD(path, ...) ok &= eco_schema_errors_add(errs, path, "consistency", __VA_ARGS__)

/* The samples are the windows' figures (one window a block, its decode energy a token), where the document keeps
 * windows that give them: false (and said) where they differ in count or, sorted, in value. */
static bool samples_are_windows(const json_t *doc, const char *precision, const json_t *samples, size_t i,
                                eco_schema_errors *errs, bool *ok_out)
{
    bool ok = true;
    double win[MATCH_MAX], smp[MATCH_MAX];
    size_t m, ns = json_array_size(samples);
    char at[96];
    window_decode_figures(doc, precision, win, MATCH_MAX, &m);
    if (m == 0) return true;
    snprintf(at, sizeof at, "/results/%zu/samples_mj_per_token", i);
    if (m != ns) {
        ADD(at, "%zu samples, but %zu windows of %s give a decode figure (one sample a window)", ns, m, precision);
        *ok_out &= ok;
        return false;
    }
    for (size_t k = 0; k < ns; k++) smp[k] = json_number_value(json_array_get(samples, k));
    qsort(win, m, sizeof win[0], compare_doubles);
    qsort(smp, ns, sizeof smp[0], compare_doubles);
    for (size_t k = 0; k < ns; k++)
        if (!(fabs(smp[k] - win[k]) <= SAMPLES_SLACK * fabs(win[k]) + 0.01)) {
            ADD(at, "the samples are not the windows' decode_mj_per_token_gross: %g mJ against %g (the %zu%s smallest of each)",
                smp[k], win[k], k + 1, k == 0 ? "st" : k == 1 ? "nd" : k == 2 ? "rd" : "th");
            *ok_out &= ok;
            return false;
        }
    return true;
}

/* Each window's decode figure is its energy less the prefill's, a token. */
static bool check_windows(const json_t *doc, eco_schema_errors *errs)
{
    bool ok = true;
    size_t i;
    json_t *w;
    char at[96];
    double energy, tokens, decode, prefill;
    json_array_foreach(json_object_get(doc, "windows"), i, w) {
        if (!number(w, "energy_j", &energy) || !number(w, "tokens", &tokens) || !(tokens > 0) ||
            !number(w, "decode_mj_per_token_gross", &decode))
            continue;
        if (!number(w, "prefill_energy_j", &prefill)) prefill = 0;
        double want = (energy - prefill) * 1000.0 / tokens;
        if (!(fabs(decode - want) <= SAMPLES_SLACK * fabs(want) + 0.01)) {
            snprintf(at, sizeof at, "/windows/%zu/decode_mj_per_token_gross", i);
            ADD(at, "%g mJ a token, but the window's energy gives %g ((energy_j - prefill_energy_j) x 1000 / tokens)", decode, want);
        }
    }
    return ok;
}

static bool check_results(const json_t *doc, eco_schema_errors *errs)
{
    bool ok = true;
    size_t i;
    json_t *r;
    char at[96];
    json_array_foreach(json_object_get(doc, "results"), i, r) {
        const char *p = str(r, "precision");
        size_t first = i;
        if (p && result_of(doc, p, &first) && first != i) {
            snprintf(at, sizeof at, "/results/%zu/precision", i);
            ADD(at, "%s is measured twice (also /results/%zu): one result per precision", p, first);
        }
        static const char *const energy[] = {"mj_per_token_gross", "e2e_mj_per_token_gross"};
        for (size_t k = 0; k < 2; k++) {
            double v;
            if (number(r, energy[k], &v) && !(v <= MJ_PER_TOKEN_MAX && v >= MJ_PER_TOKEN_MIN)) {
                snprintf(at, sizeof at, "/results/%zu/%s", i, energy[k]);
                ADD(at, "%g mJ a token is not a decode measurement (outside %g..%g: a unit or export error)", v, MJ_PER_TOKEN_MIN,
                    MJ_PER_TOKEN_MAX);
            }
        }
        double gross = NAN, net, n, power, tps;
        bool has_gross = number(r, "mj_per_token_gross", &gross);
        bool has_net = number(r, "mj_per_token_net", &net);
        const json_t *idle = json_object_get(doc, "idle");
        double idle_before, idle_after;
        if (has_gross && has_net && net > gross * (1 + INTERVAL_SLACK)) {
            snprintf(at, sizeof at, "/results/%zu/mj_per_token_net", i);
            ADD(at, "net %g mJ is more than gross %g mJ (net is gross less the idle draw)", net, gross);
        } else if (has_gross && gross <= MJ_PER_TOKEN_MAX && gross >= MJ_PER_TOKEN_MIN /* else said above */ && has_net &&
                   number(r, "tokens_per_s", &tps) && tps > 0 && number(idle, "before_w", &idle_before) && idle_before >= 0) {
            bool has_after = number(idle, "after_w", &idle_after) && idle_after >= 0;
            double least = has_after ? fmin(idle_before, idle_after) : idle_before, most = has_after ? fmax(idle_before, idle_after) : idle_before;
            double want = gross - idle_before * 1000 / tps, term = gross - net, rounding = NET_ROUNDING * gross;
            if (!(term >= least * 1000 / tps * (1 - IDLE_TERM_SLACK) - rounding && term <= most * 1000 / tps * (1 + IDLE_TERM_SLACK) + rounding)) {
                snprintf(at, sizeof at, "/results/%zu/mj_per_token_net", i);
                ADD(at, "net %g mJ, but gross %g mJ less the idle %g W over a token at %g tokens/s is %g mJ", net, gross, idle_before,
                    tps, want);
            }
        }
        const json_t *samples = json_object_get(r, "samples_mj_per_token");
        size_t ns = json_array_size(samples), numeric = 0;
        double sum = 0;
        for (size_t k = 0; k < ns; k++)
            if (json_is_number(json_array_get(samples, k))) sum += json_number_value(json_array_get(samples, k)), numeric++;
        if (!ns && has_gross && gross <= MJ_PER_TOKEN_MAX && gross >= MJ_PER_TOKEN_MIN && number(r, "n", &n) && n > 1) {
            /* trials weigh the fit: a count no sample backs cannot be checked (n 1000 had taken over a curve) */
            snprintf(at, sizeof at, "/results/%zu/samples_mj_per_token", i);
            ADD(at, "n %g without its samples: give samples_mj_per_token, one a trial", n);
        } else if (ns && numeric == ns && number(r, "n", &n) && (double)ns != n) {
            snprintf(at, sizeof at, "/results/%zu/n", i);
            ADD(at, "n %g with %zu samples", n, ns);
        } else if (ns && numeric == ns && has_gross && !(fabs(sum / (double)ns - gross) <= SAMPLES_SLACK * gross + 0.01)) {
            snprintf(at, sizeof at, "/results/%zu/samples_mj_per_token", i);
            ADD(at, "the samples average %g mJ, the result says %g", sum / (double)ns, gross);
        } else if (ns && numeric == ns && ns <= MATCH_MAX && !samples_are_windows(doc, p, samples, i, errs, &ok)) {
            /* said by samples_are_windows */
        } else if (ns >= 2 && numeric == ns) {
            /* the spread the fit weighs by and the estimates print as CV: the samples' own */
            double mean_s = sum / (double)ns, ss = 0, sd_mj, cv;
            for (size_t k = 0; k < ns; k++) ss += pow(json_number_value(json_array_get(samples, k)) - mean_s, 2);
            double sd_s = sqrt(ss / (double)(ns - 1)), cv_s = mean_s > 0 ? 100 * sd_s / mean_s : NAN;
            if (number(r, "sd_mj", &sd_mj) && !(fabs(sd_mj - sd_s) <= SPREAD_SLACK * sd_s + 0.01)) {
                snprintf(at, sizeof at, "/results/%zu/sd_mj", i);
                ADD(at, "SD %g mJ, the samples' SD is %g", sd_mj, sd_s);
            }
            if (isfinite(cv_s) && number(r, "cv_pct", &cv) && !(fabs(cv - cv_s) <= SPREAD_SLACK * cv_s + 0.01)) {
                snprintf(at, sizeof at, "/results/%zu/cv_pct", i);
                ADD(at, "CV %g%%, the samples' CV is %g%%", cv, cv_s);
            }
        }
        double e2e, blocks;
        bool gross_plausible = has_gross && gross <= MJ_PER_TOKEN_MAX && gross >= MJ_PER_TOKEN_MIN; /* else said above */
        if (gross_plausible && number(r, "e2e_mj_per_token_gross", &e2e) && e2e < gross * (1 - INTERVAL_SLACK)) {
            snprintf(at, sizeof at, "/results/%zu/e2e_mj_per_token_gross", i);
            ADD(at, "end to end %g mJ is less than decode %g mJ (end to end adds the prefill)", e2e, gross);
        }
        if (number(r, "n", &n) && number(json_object_get(doc, "protocol"), "blocks", &blocks) && n > blocks) {
            snprintf(at, sizeof at, "/results/%zu/n", i);
            ADD(at, "n %g from %g blocks (one sample a block)", n, blocks);
        }
        if (has_gross && number(r, "mean_power_w", &power) && number(r, "tokens_per_s", &tps) && tps > 0) {
            /* the window's power lies between the decode's alone (diluted by the prefill's time) and all of the
             * window's energy (prefill included where given) over the decode time */
            double with_prefill, lo = gross * 1e-3 * tps * decode_time_share(doc, p) / POWER_FACTOR;
            double hi = (number(r, "e2e_mj_per_token_gross", &with_prefill) && with_prefill > gross ? with_prefill : gross) * 1e-3 * tps * POWER_FACTOR;
            if (!(power <= hi && power >= lo)) {
                snprintf(at, sizeof at, "/results/%zu/mean_power_w", i);
                ADD(at, "%g W against %g mJ a token at %g tokens/s (%g..%g W)", power, gross, tps, lo, hi);
            }
        }
        double slow = 0, fast = 0;
        /* 0 (a partial run's: no window paired with an fp16 one) is the schema's to refuse, not a second finding here */
        if (number(r, "tokens_per_s", &tps) && tps > 0 && window_speed_range(doc, p, &slow, &fast) &&
            !(tps >= slow * (1 - SPEED_SLACK) && tps <= fast * (1 + SPEED_SLACK))) {
            snprintf(at, sizeof at, "/results/%zu/tokens_per_s", i);
            ADD(at, "%g tokens/s, but its windows decoded %g..%g tokens/s (tokens over decode_s)", tps, slow, fast);
        }
        const json_t *ci = json_object_get(r, "ci95_mj");
        double lo, hi, mean;
        if (json_is_array(ci) && json_array_size(ci) == 2 && json_is_number(json_array_get(ci, 0)) && json_is_number(json_array_get(ci, 1))) {
            lo = json_number_value(json_array_get(ci, 0));
            hi = json_number_value(json_array_get(ci, 1));
            snprintf(at, sizeof at, "/results/%zu/ci95_mj", i);
            if (lo > hi) ADD(at, "the interval [%g, %g] runs backwards", lo, hi);
            else if (number(r, "mj_per_token_gross", &mean) && !(mean >= lo - INTERVAL_SLACK * fabs(lo) && mean <= hi + INTERVAL_SLACK * fabs(hi)))
                ADD(at, "the interval [%g, %g] does not contain the mean %g mJ", lo, hi, mean);
        }
    }
    return ok;
}

eco_card_arch_verdict eco_card_arch(const char *name, const char *arch, const char **resolved, const char **named)
{
    *resolved = *named = NULL;
    if (name && eco_arch_from_gpu_name(name, named)) *named = NULL;
    eco_clear_error();
    const char *outside = *named ? NULL : eco_gpu_name_outside_classes(name);
    if (outside) {
        *named = outside;
        return ECO_CARD_ARCH_OUTSIDE;
    }
    if (arch && !eco_arch_is_known(arch)) return ECO_CARD_ARCH_UNKNOWN;
    if (arch && *named && strcmp(arch, *named)) return ECO_CARD_ARCH_NOT_THE_NAMES;
    if (!arch && !*named) return ECO_CARD_ARCH_NONE;
    *resolved = arch ? arch : *named;
    return ECO_CARD_ARCH_OK;
}

bool eco_params_match_preset(const eco_model_config *preset, double params_b, double *want)
{
    *want = (double)eco_model_param_count(preset) / 1e9;
    return fabs(params_b - *want) <= PARAMS_SLACK * *want;
}

/* The card: its architecture (the curve a run joins) known and the name's own, and the power drawn within what the
 * card can draw: its power limit caps the windows' mean, and the idle draw is below a loaded one. */
static bool check_card(const json_t *doc, eco_schema_errors *errs)
{
    bool ok = true;
    const json_t *g = json_object_get(json_object_get(doc, "environment"), "gpu");
    if (!json_is_object(g)) return ok;
    const char *name = str(g, "name"), *arch = str(g, "arch"), *named, *resolved;
    switch (eco_card_arch(name, arch, &resolved, &named)) {
    case ECO_CARD_ARCH_UNKNOWN:
        ADD("/environment/gpu/arch", "unknown architecture '%s' (turing, ampere, ada, hopper, blackwell)", arch);
        break;
    case ECO_CARD_ARCH_NOT_THE_NAMES: ADD("/environment/gpu/arch", "'%s' is a %s card, not %s", name, named, arch); break;
    case ECO_CARD_ARCH_OUTSIDE:
        ADD("/environment/gpu/name", "'%s' is %s: no class the curves have (turing, ampere, ada, hopper, blackwell) holds it", name, named);
        break;
    case ECO_CARD_ARCH_NONE:
        /* a document without a card name is the schema's to refuse */
        if (name)
            ADD("/environment/gpu/arch", "no architecture, and '%s' is not a card the curves know: give one of turing, "
                "ampere, ada, hopper, blackwell", name);
        break;
    case ECO_CARD_ARCH_OK: break;
    }
    double limit = 0, power, idle = 0;
    bool has_limit = number(g, "power_limit_w", &limit) && limit > 0;
    bool has_idle = number(json_object_get(doc, "idle"), "before_w", &idle);
    size_t i;
    json_t *r;
    char at[96];
    bool idle_said = false;
    json_array_foreach(json_object_get(doc, "results"), i, r) {
        if (!number(r, "mean_power_w", &power)) continue;
        if (has_limit && power > limit * POWER_LIMIT_SLACK) {
            snprintf(at, sizeof at, "/results/%zu/mean_power_w", i);
            ADD(at, "%g W is over the card's %g W power limit", power, limit);
        }
        if (has_idle && !idle_said && idle > power * POWER_FACTOR) {
            ADD("/idle/before_w", "idle %g W is over %g times the %s run's mean %g W", idle, POWER_FACTOR,
                str(r, "precision") ? str(r, "precision") : "?", power);
            idle_said = true;
        }
    }
    return ok;
}

/* A meter called "measured" passed its self-test (docs/SCHEMA.md): its checks did not fail, and it dropped no more
 * samples than it took. */
static bool check_meter(const json_t *doc, eco_schema_errors *errs)
{
    bool ok = true;
    const json_t *m = json_object_get(doc, "meter"), *st = json_object_get(m, "self_test");
    const char *basis = str(m, "basis");
    if (!basis || strcmp(basis, "measured")) return ok;
    static const char *const checks[] = {"idle_check_passed", "cadence_check_passed"};
    char at[96];
    for (size_t k = 0; k < 2; k++)
        if (json_is_false(json_object_get(st, checks[k]))) {
            snprintf(at, sizeof at, "/meter/self_test/%s", checks[k]);
            ADD(at, "the self-test's %s failed, and the meter's basis says \"measured\" (a failed self-test is \"failed\")", checks[k]);
        }
    double taken, dropped;
    if (number(m, "sampler_samples", &taken) && number(m, "dropped_samples", &dropped) && dropped > taken)
        ADD("/meter/dropped_samples", "%g samples dropped of %g taken", dropped, taken);
    return ok;
}

/* The run as a whole: blocks done against blocks asked for, and a preset's size against the size recorded. */
static bool check_run(const json_t *doc, eco_schema_errors *errs)
{
    bool ok = check_card(doc, errs);
    ok &= check_meter(doc, errs);
    const json_t *proto = json_object_get(doc, "protocol"), *w = json_object_get(doc, "weights");
    double blocks, iterations, params;
    if (number(proto, "blocks", &blocks) && number(proto, "iterations", &iterations) && blocks > iterations)
        ADD("/protocol/blocks", "%g blocks done of the %g asked for", blocks, iterations);
    /* the preset named, else the model's own id where it is a preset's (an HF checkpoint run names no preset) */
    const char *preset = str(w, "preset");
    const eco_model_config *c = preset ? eco_preset_find(preset) : NULL;
    if (!preset && str(w, "model") && (c = eco_preset_find(str(w, "model")))) preset = str(w, "model");
    double want;
    if (c && number(w, "params_b", &params) && !eco_params_match_preset(c, params, &want))
        ADD("/weights/params_b", "%g billion, but preset %s has %.6g billion", params, preset, want);
    /* fp16 weights were measured on this card: they fit its memory (a size in millions had passed for billions) */
    double mem;
    const json_t *g = json_object_get(json_object_get(doc, "environment"), "gpu");
    if (number(w, "params_b", &params) && number(g, "memory_total_gb", &mem) && mem > 0 && result_of(doc, "fp16", NULL) &&
        params * 2 > mem * MEMORY_SLACK)
        ADD("/weights/params_b", "%g billion parameters in fp16 are %.4g GB, and the card has %g GB: the fp16 result could not "
            "have run on it (a size in millions?)", params, params * 2, mem);
    /* no engine decodes faster than the card streams the weights (a speed in tokens a minute, or summed over a batch
     * the protocol does not record, would otherwise set the optimizer's latencies) */
    const eco_gpu_spec *card = eco_gpu_exact(str(g, "name"));
    if (!card || !c) return ok;
    double batch = 1, tps;
    number(proto, "batch", &batch);
    size_t i;
    json_t *r;
    char at[96];
    json_array_foreach(json_object_get(doc, "results"), i, r) {
        eco_precision prec;
        const char *name = str(r, "precision");
        if (!name || eco_precision_parse(name, &prec) || !number(r, "tokens_per_s", &tps)) {
            eco_clear_error();
            continue;
        }
        double ceiling = eco_decode_tokens_per_s_ceiling(card, c, prec, batch >= 1 && batch <= 1e6 ? (int)batch : 0);
        if (ceiling > 0 && tps > ceiling) {
            snprintf(at, sizeof at, "/results/%zu/tokens_per_s", i);
            ADD(at, "%g tokens/s is over what the %s can stream: %s in %s reads %.3g GB a token, at most %.0f tokens/s at batch %g",
                tps, card->name, c->name, name, (double)eco_model_bytes_per_token(c, prec, 0, true) / 1e9, ceiling, batch);
        }
    }
    return ok;
}

static bool check_comparisons(const json_t *doc, eco_schema_errors *errs)
{
    bool ok = true;
    double blocks = NAN;
    number(json_object_get(doc, "protocol"), "blocks", &blocks);
    size_t i;
    json_t *c;
    char at[96];
    json_array_foreach(json_object_get(doc, "comparisons"), i, c) {
        const char *p = str(c, "precision"), *base = str(c, "baseline"), *metric = str(c, "metric");
        for (size_t j = 0; j < i && p; j++)
            if (str(json_array_get(json_object_get(doc, "comparisons"), j), "precision") &&
                !strcmp(str(json_array_get(json_object_get(doc, "comparisons"), j), "precision"), p)) {
                snprintf(at, sizeof at, "/comparisons/%zu/precision", i);
                ADD(at, "%s is compared twice (also /comparisons/%zu)", p, j);
                break;
            }
        const json_t *rq = result_of(doc, p, NULL), *rb = result_of(doc, base, NULL);
        if (p && !rq) {
            snprintf(at, sizeof at, "/comparisons/%zu/precision", i);
            ADD(at, "no result for %s: a comparison needs both results", p);
        }
        if (base && !rb) {
            snprintf(at, sizeof at, "/comparisons/%zu/baseline", i);
            ADD(at, "no result for the baseline %s", base);
        }
        double d = NAN, eq, eb, n_pairs, lo = NAN, hi = NAN;
        bool has_delta = number(c, "delta_pct", &d);
        if (has_delta && rq && rb && metric && number(rq, metric, &eq) && number(rb, metric, &eb) && eb != 0) {
            double want = (eq - eb) / eb * 100.0; /* docs/SCHEMA.md: (E - E_fp16) / E_fp16 x 100 */
            if (!(fabs(d - want) <= DELTA_SLACK_PCT + 1e-6 * fabs(want))) {
                snprintf(at, sizeof at, "/comparisons/%zu/delta_pct", i);
                ADD(at, "%+.6g%% does not follow from the results' %s (%g against %g mJ: %+.6g%%)", d, metric, eq, eb, want);
            }
        }
        const json_t *ci = json_object_get(c, "ci95_pct");
        bool has_ci = json_is_array(ci) && json_array_size(ci) == 2 && json_is_number(json_array_get(ci, 0)) &&
                      json_is_number(json_array_get(ci, 1));
        if (has_ci) {
            lo = json_number_value(json_array_get(ci, 0));
            hi = json_number_value(json_array_get(ci, 1));
            snprintf(at, sizeof at, "/comparisons/%zu/ci95_pct", i);
            if (lo > hi) ADD(at, "the interval [%g, %g] runs backwards", lo, hi);
            else if (has_delta && !(d >= lo - DELTA_SLACK_PCT && d <= hi + DELTA_SLACK_PCT))
                ADD(at, "the interval [%+.6g, %+.6g]%% does not contain delta_pct %+.6g%%", lo, hi, d);
        }
        if (number(c, "n_pairs", &n_pairs)) {
            double nq, nb;
            if (isfinite(blocks) && n_pairs > blocks) {
                snprintf(at, sizeof at, "/comparisons/%zu/n_pairs", i);
                ADD(at, "%g pairs from %g blocks: a block gives one pair", n_pairs, blocks);
            } else if (rq && rb && number(rq, "n", &nq) && number(rb, "n", &nb) && n_pairs > fmin(nq, nb)) {
                snprintf(at, sizeof at, "/comparisons/%zu/n_pairs", i);
                ADD(at, "%g pairs from %g and %g windows", n_pairs, nq, nb);
            }
        }
        /* the verdict is the interval's sign (docs/SCHEMA.md): "saves" only when the whole CI is below zero; without
         * an interval of two pairs or more nothing is shown, so only "inconclusive" (or "unavailable") */
        const char *v = str(c, "verdict");
        if (v && strcmp(v, "unavailable")) {
            bool two = !number(c, "n_pairs", &n_pairs) || n_pairs >= 2;
            const char *want = !(has_ci && lo <= hi && two) ? "inconclusive" : hi < 0 ? "saves" : lo > 0 ? "costs" : "inconclusive";
            if (strcmp(v, want) && (has_ci ? lo <= hi : true)) {
                snprintf(at, sizeof at, "/comparisons/%zu/verdict", i);
                if (has_ci && two)
                    ADD(at, "\"%s\" with a 95%% interval of [%+.2f, %+.2f]%%: that is \"%s\"", v, lo, hi, want);
                else
                    ADD(at, "\"%s\" without a 95%% interval over two or more pairs: that is \"inconclusive\"", v);
            }
        }
    }
    return ok;
}

bool eco_energy_is_example(const json_t *doc)
{
    const json_t *env = json_object_get(doc, "environment");
    const char *uuid = str(json_object_get(env, "gpu"), "uuid"), *host = str(json_object_get(env, "host"), "hostname");
    return json_is_true(json_object_get(doc, "example")) || (uuid && !strcmp(uuid, ECO_EXAMPLE_GPU_UUID)) ||
           (host && !strcmp(host, ECO_EXAMPLE_HOSTNAME));
}

eco_err eco_energy_validate(const eco_schema *schema, const json_t *doc, eco_schema_errors *errs)
{
    eco_err e = schema ? eco_schema_validate(schema, doc, errs) : ECO_OK;
    return e ? e : eco_energy_check_consistency(doc, errs);
}

eco_err eco_energy_check_consistency(const json_t *doc, eco_schema_errors *errs)
{
    size_t before = errs->count + errs->dropped;
    if (!json_is_object(doc)) {
        eco_schema_errors_add(errs, "", "consistency", "not a JSON object");
        return eco_fail(ECO_EINVAL, "energy.json: not a JSON object");
    }
    bool ok = check_results(doc, errs);
    ok &= check_comparisons(doc, errs);
    ok &= check_run(doc, errs);
    ok &= check_windows(doc, errs);
    if (!ok) return eco_fail(ECO_ENOMEM, "energy.json check: out of memory");
    size_t found = errs->count + errs->dropped - before;
    if (found) return eco_fail(ECO_EINVAL, "energy.json: %zu inconsistenc%s between its figures", found, found == 1 ? "y" : "ies");
    return ECO_OK;
}
