/* Estimator: picks the curve (own arch, else a documented proxy), labels the answer by the rules in fit.h,
 * and adds absolute energy from the arch's fp16 baselines. Cheap: no fitting, one percentile over stored samples. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "eco/fit.h"
#include "eco/stats.h"
#include "fit_internal.h"

#define SIZE_TOL 1e-6
#define PROXY_SIGMA_PCT 10.0
#define WEAK_PROXY_SIGMA_PCT 20.0
#define FP16_LOG_SIGMA_FLOOR 0.05
/* a measured fp16 baseline's range reaches at least this far either way (absolute energy between units, builds) */
#define FP16_MEASURED_FLOOR 0.10
/* A model name counts as a measurement of that model only near its measured size: a name with another size
 * (model=Llama-3.1-8B, params_b=70) is the size's question, not the measurement's. */
#define NAME_SIZE_TOL 0.15
/* Absolute energy carried over to a card of the same architecture that was not measured (an L4 from an RTX 4090
 * baseline: power limits and memory differ several-fold): log-SD, a 95% factor of about 2. */
#define OTHER_CARD_LOG_SIGMA 0.35
/* The batch factor borrowed for fp16 (the only sweep is pure INT8): log-SD, a 95% factor of about 1.6. */
#define BORROWED_BATCH_LOG_SIGMA 0.25

__attribute__((format(printf, 2, 3))) static void note(eco_estimate *e, const char *fmt, ...)
{
    if (e->n_notes >= ECO_EST_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->notes[e->n_notes], sizeof e->notes[0], fmt, ap);
    va_end(ap);
    eco_utf8_cut_partial(e->notes[e->n_notes++]); /* a 200-character name can fill the note */
}

/* The measurements behind a measured estimate that carry flags, by source: "throttled fp16:throttled" on a run
 * means its fp16 baseline ran at the power cap, which moves its ΔE. */
static void flagged_note(eco_estimate *e, const eco_curve *c, size_t hits)
{
    char list[ECO_EST_NOTE_BYTES] = "";
    size_t flagged = 0, at = 0;
    for (size_t k = 0; k < hits; k++) {
        const eco_anchor *a = &c->anchors[e->anchor_idx[k]];
        if (!a->flags[0]) continue;
        flagged++;
        int n = snprintf(list + at, sizeof list - at, "%s%s (%s)", at ? "; " : "", a->source, a->flags);
        if (n > 0) at = (size_t)n >= sizeof list - at ? sizeof list - 1 : at + (size_t)n;
    }
    if (flagged) note(e, "%zu of %zu measurement(s) at this size carry flags: %s", flagged, hits, list);
}

/* The SD of ΔE between sessions that measured the same model at the same size on this curve (pooled over every
 * such repeat), NAN when none repeats: what a single session's own spread cannot show. */
static double session_scatter_sd(const eco_curve *c)
{
    double ss = 0;
    size_t df = 0;
    bool done[ECO_FIT_MAX_ANCHORS] = {false};
    for (size_t i = 0; i < c->n_anchors; i++) {
        if (done[i]) continue;
        const eco_anchor *a = &c->anchors[i];
        double sum = 0;
        size_t k = 0, idx[ECO_FIT_MAX_ANCHORS];
        for (size_t j = i; j < c->n_anchors; j++) {
            const eco_anchor *b = &c->anchors[j];
            if (done[j] || !eco_same_model(a->model, b->model) || fabs(a->params_b - b->params_b) > SIZE_TOL * a->params_b)
                continue;
            bool new_session = true; /* one session's rows repeat nothing between sessions */
            for (size_t m = 0; m < k; m++) new_session &= strcmp(c->anchors[idx[m]].session, b->session) != 0;
            if (!new_session) continue;
            done[j] = true;
            idx[k++] = j;
            sum += b->delta_pct;
        }
        if (k < 2) continue;
        for (size_t j = 0; j < k; j++) ss += pow(c->anchors[idx[j]].delta_pct - sum / (double)k, 2);
        df += k - 1;
    }
    return df ? sqrt(ss / (double)df) : NAN;
}

/* Measurements on synthetic weights (random values of the model's real shapes): the answer says so, as a measurement
 * of a trained checkpoint would otherwise be read (an int8-mixed figure depends on where the outlier columns are). */
static void synthetic_note(eco_estimate *e, const eco_curve *c, const size_t *idx, size_t n, bool measured)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += c->anchors[idx[i]].synthetic_weights;
    if (!k) return;
    note(e, "%zu of %zu measurement(s) %s used synthetic weights (random values of the models' real shapes): speed and "
            "energy follow the shapes%s", k, n, measured ? "behind this answer" : "on this curve",
         c->precision == ECO_PREC_INT8_MIXED ? "; LLM.int8()'s outlier path follows the synthetic outlier columns, not a trained model's" : "");
}

/* Measurements made with different versions of eco's own kernels (the design id each run recorded): the spread
 * between them is the engine's changes as well as the cards', which a reader comparing them needs to know. */
static void design_note(eco_estimate *e, const eco_curve *c, const size_t *idx, size_t n, bool measured)
{
    const char *seen[ECO_FIT_MAX_ANCHORS];
    size_t designs = 0, named = 0;
    for (size_t i = 0; i < n; i++) {
        const char *d = c->anchors[idx[i]].design;
        if (!*d) continue;
        named++;
        bool known = false;
        for (size_t m = 0; m < designs && !known; m++) known = !strcmp(seen[m], d);
        if (!known) seen[designs++] = d;
    }
    if (designs < 2) return;
    char who[64];
    if (named == n) snprintf(who, sizeof who, "the %zu measurements %s", n, measured ? "behind this answer" : "on this curve");
    else snprintf(who, sizeof who, "%zu of the %zu measurements %s", named, n, measured ? "behind this answer" : "on this curve");
    note(e, "%s ran %zu different kernel designs of eco's engine: the differences between them include the engine's "
            "changes, not only the cards' (each run's energy.json names its design)", who, designs);
}

/* The asked card's own measurements among anchors idx[0..n), moved to the front: their count (0 where none ran on it, or
 * no card was asked). Cards of one architecture differ in power limit and memory, so where the card itself was
 * measured, its measurements answer for it, not the architecture's pool. */
static size_t own_card_first(const eco_curve *c, size_t *idx, size_t n, const char *card)
{
    const eco_gpu_spec *want = card ? eco_gpu_exact(card) : NULL;
    if (!want) return 0;
    size_t own = 0;
    for (size_t k = 0; k < n; k++)
        if (eco_gpu_exact(c->anchors[idx[k]].gpu) == want) {
            size_t t = idx[own];
            idx[own++] = idx[k];
            idx[k] = t;
        }
    return own;
}

/* Appends a GPU name not yet in the ", "-separated list[cap] (*at: its length, kept within cap). */
static void names_add(char *list, size_t cap, size_t *at, const char *name)
{
    if (fit_names_hold(list, ", ", name)) return;
    int n = snprintf(list + *at, cap - *at, "%s%s", *at ? ", " : "", name);
    if (n > 0) *at = (size_t)n >= cap - *at ? cap - 1 : *at + (size_t)n;
}

/* A measured ΔE asked for a card none of its measurements ran on: say which cards they were. */
static void other_card_note(eco_estimate *e, const eco_curve *c, size_t hits, const char *card)
{
    if (!card) return;
    const eco_gpu_spec *want = eco_gpu_exact(card); /* NULL, not a card of the table: no anchor is it */
    char list[ECO_EST_NOTE_BYTES / 2] = "";
    size_t at = 0;
    for (size_t k = 0; k < hits; k++) {
        const eco_anchor *a = &c->anchors[e->anchor_idx[k]];
        if (want && eco_gpu_exact(a->gpu) == want) return;
        names_add(list, sizeof list, &at, a->gpu);
    }
    note(e, "ΔE measured on %s, not on the %s: another card of the %s architecture (labels are per architecture)", list,
         want ? want->name : card, c->arch);
}

void eco_estimate_query_model_bytes(eco_estimate_query *q, const eco_model_config *preset)
{
    if (preset) {
        q->kv_bytes_per_position = (double)eco_model_kv_bytes_per_position(preset);
        q->bytes_per_token = (double)eco_model_bytes_per_token(preset, q->precision, 0, false);
        q->fp16_bytes_per_token = (double)eco_model_bytes_per_token(preset, ECO_PREC_FP16, 0, false);
    } else { /* the presets' median KV bytes per parameter, weights from bits per weight */
        q->kv_bytes_per_position = eco_kv_bytes_per_position_per_b() * q->params_b;
        q->bytes_per_token = q->params_b * 1e9 * eco_precision_bits_per_weight(q->precision) / 8.0;
        q->fp16_bytes_per_token = q->params_b * 1e9 * eco_precision_bits_per_weight(ECO_PREC_FP16) / 8.0;
    }
}

eco_err eco_check_ctx(const eco_model_config *preset, int ctx)
{
    if (preset && ctx > preset->max_pos)
        return eco_fail_field(ECO_EINVAL, "ctx", "%s takes at most %d positions, got ctx %d", preset->name, preset->max_pos, ctx);
    return ECO_OK;
}

bool eco_energy_composed(const eco_fp16_baseline *fb, const eco_curve *c)
{
    return fb && c && !c->n_pooled && (strcmp(fb->protocol, c->protocol) || strcmp(fb->backend, c->backend));
}

void eco_delta_at_ctx(double kv1, double *delta, double *lo, double *hi)
{
    if (!(kv1 > 0)) return;
    double near = 1 + ECO_KV_ALPHA_LO * kv1, far = 1 + ECO_KV_ALPHA_HI * kv1;
    *delta /= 1 + kv1;
    *lo = fmin(*lo / near, *lo / far);
    *hi = fmax(*hi / near, *hi / far);
}

double eco_kv_share_beyond_measured(int ctx, int batch, double kv_bytes_per_position, double weight_bytes)
{
    if (ctx <= ECO_MEASURED_CTX || !(kv_bytes_per_position > 0) || !(weight_bytes > 0)) return 0;
    return kv_bytes_per_position * (double)(ctx - ECO_MEASURED_CTX) * (batch > 1 ? batch : 1) / weight_bytes;
}

/* ---- batch amortisation: the measured A800 sweep (Mistral-7B, pure INT8, 10 runs per batch), J per 1k tokens,
 * from shared/reference/a800_batchsize_pure_int8_summary_20260215.csv (energy_per_1k_tokens_j mean) ---- */
static const int sweep_batch[] = {1, 2, 4, 8, 16, 32, 64};
static const double sweep_j1k[] = {6907.42, 3650.58, 1932.9, 1108.35, 802.23, 392.41, 296.44};

double eco_batch_energy_factor(int batch)
{
    const size_t n = sizeof sweep_batch / sizeof sweep_batch[0];
    if (batch <= 1) return 1.0;
    if (batch >= sweep_batch[n - 1]) return sweep_j1k[n - 1] / sweep_j1k[0];
    for (size_t i = 1; i < n; i++)
        if (batch <= sweep_batch[i]) {
            double t = (log(batch) - log(sweep_batch[i - 1])) / (log(sweep_batch[i]) - log(sweep_batch[i - 1]));
            return exp(log(sweep_j1k[i - 1]) + t * (log(sweep_j1k[i]) - log(sweep_j1k[i - 1]))) / sweep_j1k[0];
        }
    return sweep_j1k[n - 1] / sweep_j1k[0];
}

eco_label eco_batch_label(const char *arch, const char *card, eco_precision precision, double params_b, int batch)
{
    if (batch <= 1) return ECO_LABEL_MEASURED; /* every ΔE is a batch-1 measurement */
    /* an A100 shares the arch, not the card: its memory and clocks differ from the A800 the sweep ran on */
    bool sweep_card = !card || eco_gpu_exact(card) == eco_gpu_exact(ECO_BATCH_SWEEP_CARD);
    eco_clear_error();
    bool sweep_config = arch && !strcmp(arch, "ampere") && sweep_card && precision == ECO_PREC_INT8 && fabs(params_b - 7.0) < 0.5;
    if (!sweep_config) return ECO_LABEL_ESTIMATED; /* the factor is borrowed from another precision / arch / size */
    const size_t n = sizeof sweep_batch / sizeof sweep_batch[0];
    for (size_t i = 0; i < n; i++)
        if (sweep_batch[i] == batch) return ECO_LABEL_MEASURED;
    return batch < sweep_batch[n - 1] ? ECO_LABEL_INTERPOLATED : ECO_LABEL_EXTRAPOLATED;
}

/* ---- fp16 baseline ---- */

eco_err eco_fp16_energy(const eco_fp16_baseline *b, double N, eco_energy_value *out)
{
    memset(out, 0, sizeof *out);
    if (!b || b->n_points == 0) return eco_fail(ECO_EUNSUPPORTED, "no fp16 baseline for this architecture");
    const eco_fp16_point *p = b->points;
    size_t n = b->n_points;
    for (size_t i = 0; i < n; i++)
        if (fabs(p[i].params_b - N) <= SIZE_TOL * N) {
            /* min..max of the baselines, never narrower than the floor: one baseline alone had a zero-width range,
             * though absolute energy moved by up to 13% between units and builds of one card (data/h200) */
            out->value_mj = p[i].e_mj;
            out->lo_mj = fmin(p[i].e_min_mj, p[i].e_mj * (1 - FP16_MEASURED_FLOOR));
            out->hi_mj = fmax(p[i].e_max_mj, p[i].e_mj * (1 + FP16_MEASURED_FLOOR));
            out->label = ECO_LABEL_MEASURED;
            out->basis_note = "fp16 baseline measured at this size (mean of the distinct baselines; range = their min..max, "
                              "at least ±10%: absolute energy moves between units and builds of one card)";
            return ECO_OK;
        }
    /* power law E = c N^k over all points: its residual gives the band, its slope the extrapolation */
    double slope = 1.0, sig = FP16_LOG_SIGMA_FLOOR;
    if (n >= 2) {
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (size_t i = 0; i < n; i++) {
            double x = log(p[i].params_b), y = log(p[i].e_mj);
            sx += x; sy += y; sxx += x * x; sxy += x * y;
        }
        double var = sxx - sx * sx / (double)n;
        if (var > 1e-12) slope = (sxy - sx * sy / (double)n) / var;
        double icpt = (sy - slope * sx) / (double)n, ss = 0;
        for (size_t i = 0; i < n; i++) {
            double r = log(p[i].e_mj) - (icpt + slope * log(p[i].params_b));
            ss += r * r;
        }
        if (n > 2 && sqrt(ss / (double)(n - 2)) > sig) sig = sqrt(ss / (double)(n - 2));
    }
    double lv, d = 0;
    if (N > p[0].params_b && N < p[n - 1].params_b) {
        size_t i = 1;
        while (p[i].params_b < N) i++;
        double t = (log(N) - log(p[i - 1].params_b)) / (log(p[i].params_b) - log(p[i - 1].params_b));
        lv = log(p[i - 1].e_mj) + t * (log(p[i].e_mj) - log(p[i - 1].e_mj));
        out->label = ECO_LABEL_INTERPOLATED;
        out->basis_note = "fp16 baseline interpolated on log-log between the neighbouring measured sizes";
    } else {
        const eco_fp16_point *end = N <= p[0].params_b ? &p[0] : &p[n - 1];
        d = fabs(log(N / end->params_b));
        lv = log(end->e_mj) + slope * (log(N) - log(end->params_b));
        out->label = ECO_LABEL_EXTRAPOLATED;
        out->basis_note = n >= 2 ? "fp16 baseline extrapolated from the nearest measured size with the fitted power-law slope"
                                 : "fp16 baseline extrapolated from one measured size assuming energy proportional to size";
    }
    double s = sig * (1.0 + d); /* widen with log-distance outside the measured sizes */
    out->value_mj = exp(lv);
    out->lo_mj = exp(lv - 1.96 * s);
    out->hi_mj = exp(lv + 1.96 * s);
    return ECO_OK;
}

static eco_label worse(eco_label a, eco_label b) { return a > b ? a : b; }

/* The baseline's point measured at this size, or NULL. */
static const eco_fp16_point *point_at(const eco_fp16_baseline *b, double N)
{
    for (size_t i = 0; i < b->n_points; i++)
        if (fabs(b->points[i].params_b - N) <= SIZE_TOL * N) return &b->points[i];
    return NULL;
}

/* Whether one of a " + "-separated list of recorded GPU names is the card (both resolved through the GPU table). */
static bool list_has_card(const char *gpus, const eco_gpu_spec *card)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", gpus);
    bool found = false;
    for (char *at = buf, *next; at && !found; at = next) {
        next = strstr(at, " + ");
        if (next) *next = '\0', next += 3;
        found = eco_gpu_exact(at) == card;
    }
    return found;
}

bool eco_fp16_baseline_has_card(const eco_fp16_baseline *b, double N, const char *card)
{
    if (!card) return true;
    const eco_gpu_spec *want = eco_gpu_exact(card);
    if (!want) return false;
    const eco_fp16_point *at = point_at(b, N);
    if (at) return list_has_card(at->gpus, want);
    for (size_t i = 0; i < b->n_points; i++)
        if (list_has_card(b->points[i].gpus, want)) return true;
    return false;
}

eco_err eco_fp16_energy_on(const eco_fp16_baseline *b, double N, const char *card, int batch, eco_energy_value *out)
{
    eco_err e = eco_fp16_energy(b, N, out);
    if (e) return e;
    double widen = 0; /* log-SDs added in quadrature to the band */
    if (!eco_fp16_baseline_has_card(b, N, card)) {
        out->label = worse(out->label, ECO_LABEL_ESTIMATED);
        out->basis_note = batch > 1 ? "fp16 baseline of another card of this architecture, times the batch factor borrowed from the A800 "
                                      "INT8 sweep: estimated, range widened for both"
                                    : "fp16 baseline of another card of this architecture (not measured on this one): estimated, range widened";
        widen += OTHER_CARD_LOG_SIGMA * OTHER_CARD_LOG_SIGMA;
    }
    if (batch > 1) {
        double f = eco_batch_energy_factor(batch);
        out->value_mj *= f; out->lo_mj *= f; out->hi_mj *= f;
        out->label = worse(out->label, eco_batch_label(NULL, card, ECO_PREC_FP16, N, batch));
        if (widen == 0)
            out->basis_note = "fp16 baseline times the batch factor borrowed from the A800 INT8 sweep (no fp16 batch sweep): "
                              "estimated, range widened";
        widen += BORROWED_BATCH_LOG_SIGMA * BORROWED_BATCH_LOG_SIGMA;
    }
    if (widen > 0) {
        double v = log(out->value_mj), dl = v - log(out->lo_mj), dh = log(out->hi_mj) - v, add = 1.96 * 1.96 * widen;
        out->lo_mj = exp(v - sqrt(dl * dl + add));
        out->hi_mj = exp(v + sqrt(dh * dh + add));
    }
    return ECO_OK;
}

static void precisions_with_data(const eco_curve_set *set, const char *arch, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < set->n_curves && len + 1 < cap; i++)
        if (!strcmp(set->curves[i].arch, arch) && !set->curves[i].card[0]) /* a card's own curve repeats its pool's precision */
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", eco_precision_name(set->curves[i].precision));
    if (!len) snprintf(buf, cap, "none");
}

/* EcoCompute's own engine (backend "eco <version> ...") or the reference stack (bitsandbytes / HF eager). */
static bool is_eco_stack(const char *backend) { return !strncmp(backend, "eco ", 4); }

/* The software stack of an architecture's own data: its fp16 baseline's, else its first curve's (1 EcoCompute's
 * engine, 0 the reference stack); STACK_NO_DATA when the architecture has no data, STACK_UNKNOWN when it has some
 * but a fit without the stack split (--no-split-backend, --pool) recorded none. A proxy curve is carried over only
 * from a stack known to be the same: ΔE is mostly the kernel design's (data/h200). */
enum { STACK_NO_DATA = -1, STACK_UNKNOWN = -2 };
static int arch_stack(const eco_curve_set *set, const char *arch)
{
    const eco_fp16_baseline *fb = eco_curve_set_fp16(set, arch);
    if (fb && fb->backend[0]) return is_eco_stack(fb->backend);
    bool has_data = fb != NULL;
    for (size_t i = 0; i < set->n_curves; i++) {
        if (strcmp(set->curves[i].arch, arch)) continue;
        if (set->curves[i].backend[0]) return is_eco_stack(set->curves[i].backend);
        has_data = true;
    }
    return has_data ? STACK_UNKNOWN : STACK_NO_DATA;
}

/* On EcoCompute's engine nf4 and nf4-dq are the same 4-bit codes and kernels; only the block scales differ. */
static const char SIBLING_REASON[] =
    "no curve for this precision on this architecture; its nf4 sibling on the same architecture and software stack "
    "stands in (EcoCompute's engine decodes nf4 and nf4-dq with the same kernels; double quant only stores the block "
    "scales in 8 bits, 0.13 instead of 0.5 bits a weight)";

static const eco_curve *sibling_curve(const eco_curve_set *set, const char *arch, eco_precision p, const char *card)
{
    if (arch_stack(set, arch) != 1) return NULL; /* on bitsandbytes double quant adds its own dequantize kernel */
    if (p == ECO_PREC_NF4_DQ) return eco_curve_set_find_for(set, arch, ECO_PREC_NF4, card);
    if (p == ECO_PREC_NF4) return eco_curve_set_find_for(set, arch, ECO_PREC_NF4_DQ, card);
    return NULL;
}

/* The answer is a card's own curve: say so, and which other cards its architecture's pool holds. */
static void card_curve_note(eco_estimate *e, const eco_curve_set *set, const eco_curve *c)
{
    const eco_curve *pool = eco_curve_set_find(set, c->arch, c->precision);
    char others[ECO_EST_NOTE_BYTES / 2] = "";
    size_t at = 0;
    for (size_t i = 0; pool && i < pool->n_anchors; i++) {
        if (strcmp(pool->anchors[i].gpu, c->card)) names_add(others, sizeof others, &at, pool->anchors[i].gpu);
    }
    note(e, "curve fitted to the %s's own %zu measurements (%zu sizes), not the %s pool%s%s: cards of one architecture differ "
            "in power limit and memory bandwidth, and ΔE with them", c->card, c->n_anchors, c->n_distinct_sizes, c->arch,
         others[0] ? " with " : "", others);
}

/* A card's own curve without a measurement at this size, where its pool has one of another card: say so (the answer
 * stays this card's curve; another card's measurement is not this card's). */
static void pool_measured_note(eco_estimate *e, const eco_curve_set *set, const eco_curve *c, double N)
{
    const eco_curve *pool = eco_curve_set_find(set, c->arch, c->precision);
    if (!pool || !c->card[0]) return;
    double sum = 0, w = 0;
    char cards[ECO_EST_NOTE_BYTES / 2] = "";
    size_t at = 0;
    for (size_t i = 0; i < pool->n_anchors; i++) {
        const eco_anchor *a = &pool->anchors[i];
        if (fabs(a->params_b - N) > SIZE_TOL * a->params_b || !strcmp(a->gpu, c->card)) continue;
        sum += a->delta_pct * a->n_trials, w += a->n_trials;
        names_add(cards, sizeof cards, &at, a->gpu);
    }
    if (w > 0)
        note(e, "%.3gB was measured on %s (ΔE %+.1f%%, another card of the %s architecture), not on the %s: the answer is "
                "the %s's own curve", N, cards, sum / w, c->arch, c->card, c->card);
}

/* The spread of a measured answer over anchors idx[0..hits) of c: their trial-weighted mean, min and max, and the
 * half-width the range adds either side of min..max. The SE of the mean comes from the trials' pooled SD, with
 * Student's t for its few trials (its degrees of freedom: the trials that gave an SD, less their anchors' means).
 * Anchors without an SD (single trials) take the pooled SD of those with one; where none has one, the scatter
 * between sessions that repeated a measurement on this curve, and only then the curve's residual SD, which a poorly
 * fitting form inflates (Ada int8-mixed: 58 points around two sessions 0.1 point apart). One session's answer adds
 * the scatter between sessions (min..max covers it where the answer has several). */
typedef struct {
    double mean, mn, mx, half, cv_pct, trial_sd, between;
    double tied_lo, tied_hi; /* a tied group's ΔE at these sizes (INFINITY, -INFINITY: none) */
    double lo, hi;           /* the answer's range: min..max of both groups, each way by half */
    int trials, single, with_sd;
} measured_spread;

static measured_spread spread_of(const eco_curve *c, const size_t *idx, size_t hits, double sig_curve)
{
    measured_spread m = {.mn = INFINITY, .mx = -INFINITY, .between = NAN};
    double sw = 0, s = 0, cv = 0, var = 0;
    int ncv = 0, sd_trials = 0;
    for (size_t k = 0; k < hits; k++) {
        const eco_anchor *a = &c->anchors[idx[k]];
        sw += a->n_trials; s += a->n_trials * a->delta_pct; m.trials += a->n_trials;
        if (a->delta_pct < m.mn) m.mn = a->delta_pct;
        if (a->delta_pct > m.mx) m.mx = a->delta_pct;
        if (isfinite(a->cv_pct)) { cv += a->cv_pct; ncv++; }
        if (isfinite(a->sd_pct)) { var += a->n_trials * a->sd_pct * a->sd_pct; m.with_sd++; sd_trials += a->n_trials; }
        if (a->n_trials < 2) m.single++;
    }
    m.mean = s / sw;
    m.cv_pct = ncv ? cv / ncv : NAN;
    bool se_known = m.with_sd > 0;
    double scatter = session_scatter_sd(c);
    m.trial_sd = se_known ? sqrt(var / sd_trials) : isfinite(scatter) ? scatter : sig_curve;
    /* a trial SD spreads single trials (SE over all of them); the scatter spreads sessions (SE over the anchors) */
    double se = se_known ? m.trial_sd / sqrt((double)m.trials) : isfinite(scatter) ? scatter / sqrt((double)hits) : sig_curve;
    if (se < 1.0) se = 1.0;
    size_t df = sd_trials > m.with_sd ? (size_t)(sd_trials - m.with_sd) : 1;
    double t = se_known ? eco_t975(df) : 1.96;
    /* where no trial SD is known the scatter (or the residual SD) already stands in for it */
    if (hits == 1 && se_known) m.between = scatter;
    m.half = isfinite(m.between) ? sqrt(pow(t * se, 2) + pow(1.96 * m.between, 2)) : t * se;
    /* a group as large as the curve's (another session or stack, left out by name alone) measured these sizes too:
     * the answer rests on one of two equal groups, and its range covers the other's measurements */
    m.tied_lo = INFINITY, m.tied_hi = -INFINITY;
    for (size_t x = 0; x < c->n_excluded; x++) {
        const eco_excluded *ex = &c->excluded[x];
        if (!strstr(ex->reason, ECO_FIT_TIED_REASON) || !isfinite(ex->delta_pct)) continue;
        for (size_t k = 0; k < hits; k++)
            if (fabs(c->anchors[idx[k]].params_b - ex->params_b) <= SIZE_TOL * ex->params_b) {
                m.tied_lo = fmin(m.tied_lo, ex->delta_pct);
                m.tied_hi = fmax(m.tied_hi, ex->delta_pct);
                break;
            }
    }
    m.lo = fmin(m.mn, m.tied_lo) - m.half;
    m.hi = fmax(m.mx, m.tied_hi) + m.half;
    return m;
}

/* How far a measured answer reaches below and above its value at the anchor sizes nearest N in log size
 * (interpolated between the two that bracket N, the edge's beyond them): a fitted or extrapolated range is never
 * narrower, either way, than the measurements it rests on (a curve through 2-trial anchors had answered 9B more
 * tightly than 7B, where it was measured; a tied group's measurement reaches one way only). False without anchors. */
static bool measured_reach_near(const eco_curve *c, double N, double sig_curve, double *down, double *up)
{
    double below = 0, above = INFINITY;
    for (size_t i = 0; i < c->n_anchors; i++) {
        double x = c->anchors[i].params_b;
        if (x <= N && x > below) below = x;
        if (x >= N && x < above) above = x;
    }
    double dn[2] = {NAN, NAN}, upr[2] = {NAN, NAN}, at[2] = {below, above};
    for (int k = 0; k < 2; k++) {
        if (!(at[k] > 0) || !isfinite(at[k])) continue;
        size_t idx[ECO_FIT_MAX_ANCHORS], n = 0;
        for (size_t i = 0; i < c->n_anchors; i++)
            if (fabs(c->anchors[i].params_b - at[k]) <= SIZE_TOL * at[k]) idx[n++] = i;
        measured_spread m = spread_of(c, idx, n, sig_curve);
        dn[k] = m.mean - m.lo;
        upr[k] = m.hi - m.mean;
    }
    if (!isfinite(dn[0]) && !isfinite(dn[1])) return false;
    if (!isfinite(dn[0]) || (isfinite(dn[1]) && above <= below)) { *down = dn[1]; *up = upr[1]; return true; }
    if (!isfinite(dn[1])) { *down = dn[0]; *up = upr[0]; return true; }
    double w = log(N / below) / log(above / below);
    *down = dn[0] + w * (dn[1] - dn[0]);
    *up = upr[0] + w * (upr[1] - upr[0]);
    return true;
}

eco_err eco_estimate_run(const eco_curve_set *set, const eco_estimate_query *q, eco_estimate *e)
{
    memset(e, 0, sizeof *e);
    e->cv_pct = NAN;
    e->crossover_b = NAN;
    if (!set) return eco_fail(ECO_ESTATE, "no curves loaded");
    if (!q->arch || !eco_arch_is_known(q->arch))
        return eco_fail_field(ECO_ENOTFOUND, "gpu", "unknown architecture '%s' (turing, ampere, ada, hopper, blackwell)",
                              q->arch ? q->arch : "");
    if (!(q->params_b > 0) || !isfinite(q->params_b))
        return eco_fail_field(ECO_EINVAL, "params_b", "params_b must be a positive finite number, got %g", q->params_b);
    if (q->precision == ECO_PREC_FP16 || (unsigned)q->precision >= ECO_PREC_COUNT)
        return eco_fail_field(ECO_EINVAL, "precision", "precision must be a quantized format (fp16 is the baseline)");
    if (q->batch < 1) return eco_fail_field(ECO_EINVAL, "batch", "batch must be >= 1, got %d", q->batch);

    const double N = q->params_b;
    const eco_curve *c = eco_curve_set_find_for(set, q->arch, q->precision, q->card);
    bool proxy = false, weak = false;
    if (!c) {
        const char *reason = NULL;
        const char *pa = eco_arch_proxy(q->arch, &reason, &weak);
        c = pa ? eco_curve_set_find(set, pa, q->precision) : NULL;
        int own_stack = arch_stack(set, q->arch);
        /* an architecture with data of its own takes a proxy curve only from a stack known to be its own */
        bool stack_unknown = c && own_stack != STACK_NO_DATA && (own_stack == STACK_UNKNOWN || !c->backend[0]);
        bool other_stack = c && (stack_unknown || (own_stack >= 0 && is_eco_stack(c->backend) != own_stack));
        const eco_curve *other = other_stack ? c : NULL;
        if (other_stack) c = NULL;
        if (!c && (c = sibling_curve(set, q->arch, q->precision, q->card))) reason = SIBLING_REASON, weak = false;
        if (!c) {
            char own[128], others[128];
            precisions_with_data(set, q->arch, own, sizeof own);
            if (other && stack_unknown)
                return eco_fail_field(ECO_EUNSUPPORTED, "precision",
                                      "no data for %s on %s; %s has it, but these curves were fitted without the software-"
                                      "stack split (eco fit --no-split-backend or --pool), so whether both were measured "
                                      "with the same stack is unknown, and ΔE is mostly the kernels': not carried over; "
                                      "precisions with data on %s: %s",
                                      eco_precision_name(q->precision), q->arch, pa, q->arch, own);
            if (other)
                return eco_fail_field(ECO_EUNSUPPORTED, "precision",
                                      "no data for %s on %s; %s has it, measured with another software stack (%s, against %s "
                                      "here), and ΔE is mostly the kernels', so it is not carried over; precisions with data on %s: %s",
                                      eco_precision_name(q->precision), q->arch, pa, other->backend,
                                      own_stack ? "EcoCompute's engine" : "the reference stack", q->arch, own);
            if (pa) precisions_with_data(set, pa, others, sizeof others);
            if (pa)
                return eco_fail_field(ECO_EUNSUPPORTED, "precision",
                                      "no data for %s on %s nor on its proxy %s; precisions with data on %s: %s; on %s: %s",
                                      eco_precision_name(q->precision), q->arch, pa, q->arch, own, pa, others);
            return eco_fail_field(ECO_EUNSUPPORTED, "precision", "no data for %s on %s; precisions with data: %s",
                                  eco_precision_name(q->precision), q->arch, own);
        }
        proxy = true;
        e->proxy_reason = reason;
    }
    e->curve = c;
    e->arch_used = c->arch;
    e->crossover_b = c->crossover_b;
    double sig_curve = isfinite(c->resid_sd_pct) && c->resid_sd_pct > 2.0 ? c->resid_sd_pct : 2.0;

    /* measured: anchors at this size, or of the same model */
    size_t hits = 0, named_hits = 0;
    const eco_anchor *named_elsewhere = NULL, *named_shifted = NULL;
    size_t named_idx[ECO_FIT_MAX_ANCHORS];
    if (!proxy)
        for (size_t i = 0; i < c->n_anchors; i++) {
            const eco_anchor *a = &c->anchors[i];
            bool named = q->model && *q->model && eco_same_model(q->model, a->model);
            bool same_size = fabs(a->params_b - N) <= SIZE_TOL * a->params_b;
            bool near = fabs(a->params_b - N) <= NAME_SIZE_TOL * a->params_b;
            if (named && !near) named_elsewhere = a;
            if (named && near) {
                named_idx[named_hits++] = i;
                if (!same_size) named_shifted = a;
            }
            if (same_size) e->anchor_idx[hits++] = i;
        }
    /* the model's own measurements when it has them, not other models that happen to share the size */
    if (named_hits) {
        memcpy(e->anchor_idx, named_idx, named_hits * sizeof named_idx[0]);
        hits = named_hits;
    }
    size_t own = own_card_first(c, e->anchor_idx, hits, q->card);
    if (own && own < hits) {
        note(e, "%zu of the %zu measurements %s ran on the %s itself: the answer rests on those, not on the other cards of "
                "%s (cards of one architecture differ in power limit and memory)", own, hits,
             named_hits ? "of this model" : "at this size", eco_gpu_exact(q->card)->name, c->arch);
        hits = own;
    }
    if (named_elsewhere)
        note(e, "%s was measured at %.3gB, not at the %.3gB asked: the answer is for %.3gB, not that measurement", named_elsewhere->model,
             named_elsewhere->params_b, N, N);
    if (named_shifted)
        note(e, "the measurements are of %s at %.4gB; %.4gB was asked (within 15%% of its size, so they stand for it)",
             named_shifted->model, named_shifted->params_b, N);
    if (hits) {
        measured_spread m = spread_of(c, e->anchor_idx, hits, sig_curve);
        double mn = m.mn, mx = m.mx, between = m.between;
        int single = m.single;
        e->label = ECO_LABEL_MEASURED;
        e->delta_pct = m.mean;
        e->n = m.trials;
        e->n_anchors = hits;
        e->cv_pct = m.cv_pct;
        if (m.with_sd > 0 && (size_t)m.with_sd < hits)
            note(e, "%zu of %zu measurement(s) give no trial SD: they take the %.1f-point SD of the others' trials",
                 hits - (size_t)m.with_sd, hits, m.trial_sd);
        e->lo_pct = m.lo;
        e->hi_pct = m.hi;
        double tlo = m.tied_lo, thi = m.tied_hi;
        if (isfinite(tlo)) {
            if (thi > tlo)
                note(e, "the group tied with this curve's (another session or stack, left out by name alone) measured %+.1f to "
                        "%+.1f%% here: the range covers it", tlo, thi);
            else
                note(e, "the group tied with this curve's (another session or stack, left out by name alone) measured %+.1f%% "
                        "here: the range covers it", tlo);
        }
        if (isfinite(between))
            note(e, "one session's measurement: its range adds the %.1f-point SD between sessions that repeated a "
                    "measurement on this curve", between);
        if (hits > 1)
            note(e, "%zu measurements %s (%.1f to %.1f points); the value is their trial-weighted mean", hits,
                 named_hits ? "of this model" : "at this size", mn, mx);
        if (single) note(e, "%d of %zu measurement(s) at this size are single trials (n=1)", single, hits);
        bool other_models = false;
        for (size_t k = 1; k < hits; k++)
            other_models |= !eco_same_model(c->anchors[e->anchor_idx[k]].model, c->anchors[e->anchor_idx[0]].model);
        if (q->model && *q->model && !named_hits)
            note(e, "the measurement at this size is of %s%s, another model than %s", c->anchors[e->anchor_idx[0]].model,
                 other_models ? " and others" : "", q->model);
        flagged_note(e, c, hits);
        other_card_note(e, c, hits, q->card);
        synthetic_note(e, c, e->anchor_idx, hits, true);
        design_note(e, c, e->anchor_idx, hits, true);
    } else {
        double lo, hi;
        eco_curve_band95(c, N, &lo, &hi);
        e->delta_pct = eco_curve_eval(c, N);
        e->lo_pct = lo; e->hi_pct = hi;
        e->n_anchors = c->n_anchors;
        for (size_t i = 0; i < c->n_anchors; i++) { e->anchor_idx[i] = i; e->n += c->anchors[i].n_trials; }
        synthetic_note(e, c, e->anchor_idx, c->n_anchors, false);
        design_note(e, c, e->anchor_idx, c->n_anchors, false);
        if (!proxy) pool_measured_note(e, set, c, N);
        double d = 0;
        if (N < c->n_min_b) d = log(c->n_min_b / N);
        else if (N > c->n_max_b) d = log(N / c->n_max_b);
        double extra = 0;
        if (d > 0) {
            double sx = 1.2 * (sig_curve + 4.0) * d;
            extra += sx * sx;
            note(e, "%.3gB is outside the measured range %.3g-%.3gB of %s/%s (log-distance %.2f): the range is widened",
                 N, c->n_min_b, c->n_max_b, c->arch, eco_precision_name(c->precision), d);
        }
        if (proxy) {
            double sp = weak ? WEAK_PROXY_SIGMA_PCT : PROXY_SIGMA_PCT;
            extra += sp * sp;
            note(e, "estimated from the %s curve: %s (extra %.0f-point uncertainty)", c->arch, e->proxy_reason, sp);
            e->label = ECO_LABEL_ESTIMATED;
        } else {
            e->label = d > 0 ? ECO_LABEL_EXTRAPOLATED : ECO_LABEL_INTERPOLATED;
        }
        if (extra > 0) {
            double hl = e->delta_pct - lo, hh = hi - e->delta_pct;
            e->lo_pct = e->delta_pct - sqrt(hl * hl + 1.96 * 1.96 * extra);
            e->hi_pct = e->delta_pct + sqrt(hh * hh + 1.96 * 1.96 * extra);
        }
        double down, up;
        if (measured_reach_near(c, N, sig_curve, &down, &up) && (e->delta_pct - e->lo_pct < down || e->hi_pct - e->delta_pct < up)) {
            if (e->delta_pct - e->lo_pct < down) e->lo_pct = e->delta_pct - down;
            if (e->hi_pct - e->delta_pct < up) e->hi_pct = e->delta_pct + up;
            note(e, "the range is widened to the nearest measurements' own reach (%.1f points down, %.1f up): a curve is not "
                    "surer than the data it passes through", down, up);
        }
    }
    if (e->lo_pct < -c->s_cap_pct) e->lo_pct = -c->s_cap_pct;
    if (e->delta_pct < -c->s_cap_pct) e->delta_pct = -c->s_cap_pct;
    if (e->label != ECO_LABEL_MEASURED && e->delta_pct <= -c->s_cap_pct + 1e-9)
        note(e, "ΔE at short context is held at the curve's floor of %+.0f%% (about what %s's fewer weight bytes allow at "
                "most): the fitted curve runs past it at %.3gB, so that central value is the bound, not a fit", -c->s_cap_pct,
             eco_precision_name(q->precision), N);
    /* a long context: the short-context ΔE, and the KV cache's share that every format reads alike */
    e->short_delta_pct = e->delta_pct, e->short_lo_pct = e->lo_pct, e->short_hi_pct = e->hi_pct, e->short_label = e->label;
    double fp16_bytes = q->fp16_bytes_per_token > 0 ? q->fp16_bytes_per_token : q->bytes_per_token;
    /* at the batch asked: each sequence reads its own KV cache, the weights are read once a step for all of them, so
     * the KV share of a step grows with the batch (batch 64 at ctx 4096 reads several times a 7B's weights) */
    double kvb = eco_kv_share_beyond_measured(q->ctx, q->batch, q->kv_bytes_per_position, fp16_bytes);
    if (kvb > ECO_KV_SHARE_MEASURED) {
        e->ctx_kv_share = kvb;
        eco_delta_at_ctx(kvb, &e->delta_pct, &e->lo_pct, &e->hi_pct);
        e->label = worse(e->label, ECO_LABEL_ESTIMATED);
        char at_batch[32] = "";
        if (q->batch > 1) snprintf(at_batch, sizeof at_batch, " at batch %d", q->batch);
        note(e, "at ctx %d the KV cache (fp16 in every format) adds about %.0f%% to an fp16 step's bytes%s beyond the "
                "short-context (<= %d positions) measurements, and about the same energy to both: ΔE %+.1f%% becomes "
                "%+.1f%%, estimated (KV energy per byte taken at %.1f-%.1fx fp16's per weight byte for the range)",
             q->ctx, 100 * kvb, at_batch, ECO_MEASURED_CTX, e->short_delta_pct, e->delta_pct, ECO_KV_ALPHA_LO, ECO_KV_ALPHA_HI);
    }
    e->recommendation = e->hi_pct < 0 ? ECO_REC_QUANTIZE : e->lo_pct > 0 ? ECO_REC_DO_NOT_QUANTIZE : ECO_REC_DEPENDS;

    if (c->card[0]) card_curve_note(e, set, c);
    if (c->n_pooled) note(e, "curve pools %zu measurement protocols (explicit pool option)", c->n_pooled);
    else note(e, "curve fitted on protocol %s only (%zu rows left out)", c->protocol, c->n_excluded);
    size_t tied = 0;
    const char *tied_source = NULL;
    for (size_t i = 0; i < c->n_excluded; i++)
        if (strstr(c->excluded[i].reason, ECO_FIT_TIED_REASON)) tied++, tied_source = tied_source ? tied_source : c->excluded[i].source;
    if (tied)
        note(e, "%zu rows of another group as large as this curve's (another session or stack, e.g. %s) were left out by "
                "name alone: the answer rests on one of two equal groups, which may disagree (eco fit --source-file fits "
                "the other)", tied, tied_source);
    if (!strncmp(c->backend, "eco ", 4))
        note(e, "measured with EcoCompute's own CUDA engine (%s), not bitsandbytes/HF eager: the reference stack's "
                "kernels and host syncs decode slower (data/h200), so its ΔE is likely higher", c->backend);
    if (c->form != ECO_FORM_SATURATING) note(e, "curve form: %s", c->form_note);
    if (!isfinite(c->crossover_b)) note(e, "no crossover (ΔE = 0) inside the measured range");
    if (q->precision == ECO_PREC_INT8_MIXED && !is_eco_stack(c->backend))
        note(e, "int8-mixed is bitsandbytes LLM.int8() (threshold 6.0); its penalty varied 2x between sessions on one card");

    /* a size that does not fit the card asked for: fp16 (the baseline) or even the quantized weights */
    const eco_gpu_spec *spec;
    bool exact;
    if (q->card && eco_gpu_find(q->card, &spec, &exact) == ECO_OK) {
        double b16 = N * 1e9 * 2.0, bq = N * 1e9 * eco_precision_bits_per_weight(q->precision) / 8.0;
        double gb16 = b16 / ECO_GIB, gbq = bq / ECO_GIB; /* as the optimizer's *_gb fields */
        /* the optimizer's test, so the two never disagree on whether weights fit */
#define FITS(b) (eco_vram_needed_gib((b), 0) <= spec->vram_gb)
        if (!FITS(bq))
            note(e, "the %s weights (%.1f GiB) do not fit the %s's %.0f GB: this answer is for a model that needs more than "
                    "one card", eco_precision_name(q->precision), gbq, spec->name, spec->vram_gb);
        else if (!FITS(b16))
            note(e, "fp16 weights (%.1f GiB) do not fit the %s's %.0f GB: the fp16 baseline this ΔE is against needs more than one "
                    "card, the %s weights (%.1f GiB) fit", gb16, spec->name, spec->vram_gb, eco_precision_name(q->precision), gbq);
#undef FITS
    }
    eco_clear_error();

    /* absolute energy: only from this arch's own fp16 baseline (another card's J/token would be a different number) */
    e->batch_factor = eco_batch_energy_factor(q->batch);
    e->batch_label = eco_batch_label(q->arch, q->card, q->precision, N, q->batch);
    if (q->batch > 1) {
        note(e, "ΔE is a batch-1 measurement; absolute energy at batch %d uses the measured A800 Mistral-7B pure-INT8 "
                "batch sweep (factor %.3f)%s%s",
             q->batch, e->batch_factor,
             e->batch_label == ECO_LABEL_MEASURED       ? ""
             : e->batch_label == ECO_LABEL_INTERPOLATED ? ", interpolated between the sweep's batches"
             : e->batch_label == ECO_LABEL_EXTRAPOLATED ? ", held at its batch-64 value beyond the sweep"
                                                        : ", borrowed for this arch/precision/size",
             q->precision == ECO_PREC_NF4 || q->precision == ECO_PREC_NF4_DQ ? "; NF4's penalty has been seen to grow with batch" : "");
    }
    const eco_fp16_baseline *fb = eco_curve_set_fp16_for(set, q->arch, q->card);
    if (fb && eco_fp16_energy_on(fb, N, q->card, q->batch, &e->e_fp16) == ECO_OK) {
        e->has_energy = true;
        if (!q->card) { /* asked for an architecture: the answer is its measured card's, which the label alone hides */
            const eco_fp16_point *at = point_at(fb, N);
            note(e, "fp16 energy per token as measured on %s: asked for the %s architecture, another card of it differs in "
                    "power limit and memory (name the card for its own figure)", at ? at->gpus : fb->points[0].gpus, q->arch);
        } else if (!eco_fp16_baseline_has_card(fb, N, q->card)) {
            const eco_fp16_point *at = point_at(fb, N);
            const char *gpus = at ? at->gpus : fb->points[0].gpus;
            note(e, "fp16 energy per token measured on %s, not on the %s: carried over within %s and labelled estimated "
                    "(cards of one architecture differ in power limit and memory)", gpus, q->card, q->arch);
        }
        /* The KV cache adds the same bytes, and about the same energy a token, to fp16 and to the quantized model
         * (eco_delta_at_ctx): fp16's energy at this batch times the step's KV share, its range at the two alphas. */
        double kv_step = kvb > ECO_KV_SHARE_MEASURED ? kvb : 0; /* the share that rescaled ΔE above */
        double kv_quant = eco_kv_share_beyond_measured(q->ctx, q->batch, q->kv_bytes_per_position, q->bytes_per_token);
        const eco_energy_value f16 = e->e_fp16; /* at the measurements' short context */
        if (kv_step > 0) {
            e->e_fp16.label = worse(e->e_fp16.label, ECO_LABEL_ESTIMATED);
            e->e_fp16.value_mj *= 1 + kv_step;
            e->e_fp16.lo_mj *= 1 + ECO_KV_ALPHA_LO * kv_step;
            e->e_fp16.hi_mj *= 1 + ECO_KV_ALPHA_HI * kv_step;
        }
        e->e_quant.value_mj = f16.value_mj * (1 + e->short_delta_pct / 100 + kv_step);
        e->e_quant.lo_mj = f16.lo_mj * (1 + e->short_lo_pct / 100 + ECO_KV_ALPHA_LO * kv_step);
        e->e_quant.hi_mj = f16.hi_mj * (1 + e->short_hi_pct / 100 + ECO_KV_ALPHA_HI * kv_step);
        e->e_quant.label = worse(e->e_fp16.label, e->label);
        if (kv_quant > ECO_KV_SHARE_MEASURED) {
            e->e_quant.label = worse(e->e_quant.label, ECO_LABEL_ESTIMATED);
            note(e, "at ctx %d%s the KV cache adds about %.0f%% to the bytes a %s step reads (%.0f%% in fp16) beyond the "
                    "short-context measurements: absolute energy is estimated, the KV's energy added alike to both",
                 q->ctx, q->batch > 1 ? " and this batch" : "", 100 * kv_quant, eco_precision_name(q->precision), 100 * kv_step);
        }
        e->e_quant.basis_note = "fp16 baseline x (1 + ΔE/100); range combines both ranges";
        if (eco_energy_composed(fb, c)) {
            /* one stack's fp16 energy times another's ΔE is no measurement of the quantized energy */
            e->e_quant.label = worse(e->e_quant.label, ECO_LABEL_ESTIMATED);
            note(e, "absolute energy uses fp16 baselines of protocol %s%s%s%s, and ΔE of %s%s%s%s: the quantized energy "
                    "composes the two and is estimated", fb->protocol, fb->backend[0] ? " (" : "", fb->backend,
                 fb->backend[0] ? ")" : "", c->protocol, c->backend[0] ? " (" : "", c->backend, c->backend[0] ? ")" : "");
        }
    } else {
        eco_clear_error();
        note(e, "no fp16 baseline measured on %s: absolute energy per token is not given", q->arch);
    }
    return ECO_OK;
}
