/* Curves of ΔE%(N) per (GPU architecture, precision, protocol), the estimator that labels every number,
 * and the precision x batch optimizer. Pure C, no I/O, no threads, no JSON: this module is also compiled to
 * WebAssembly, where a shim fills these structs from curves.json, so the site computes the same numbers.
 *
 * Curve forms (x = N / nstar, N in billions of parameters):
 *   saturating  ΔE(N) = A - S * x / (1 + x)   (the anchor project's form; S may be negative = rising curve)
 *   loglinear   ΔE(N) = A + S * ln(N)         (fallback for 2-3 distinct sizes: 1 degree of freedom left)
 *   constant    ΔE(N) = A                     (fallback for 1 distinct size)
 * Every prediction is clamped below at -s_cap (NF4 75, 8-bit 50 points: the weight-byte bound).
 *
 * The curve: the asked card's own where it has one (eco_curve_set_find_for), else the arch's pool.
 * Labels (eco_estimate_run), first rule that applies:
 *   measured      the curve has anchors at this size (|N - N_a| <= 1e-6 * N_a) or whose model name equals the
 *                 request's model within 15% of its size: ΔE is the anchors' weighted mean, range = their spread.
 *                 On a card's own curve only its own measurements count (another card's at this size gets a note);
 *                 on a pooled curve, a card none of the anchors ran on gets a note.
 *   interpolated  the arch has its own curve and n_min_b <= N <= n_max_b.
 *   extrapolated  the arch has its own curve and N is outside [n_min_b, n_max_b]; the range widens with
 *                 d = |ln(N / nearest bound)|: sigma_extra = 1.2 * (max(resid_sd, 2) + 4) * d.
 *   estimated     the arch has no curve for the precision: a proxy arch's curve measured with the same software
 *                 stack (eco_arch_proxy says which and why), else on EcoCompute's engine the nf4/nf4-dq sibling on
 *                 the same arch, with an extra 10-point (close proxy) or 20-point (weak proxy) sigma term.
 *                 Any of the above at a long context, whose KV cache rescaled ΔE (eco_delta_at_ctx), is estimated too.
 * Absolute energy (fp16 baseline x (1 + ΔE)) is estimated, with a wider range, for a card of the arch the
 * baseline was not measured on, and at batch > 1 (the batch factor is borrowed from the A800 INT8 sweep).
 *   modelled      (optimizer fields only) computed from a physical model (roofline, byte accounting).
 * Range: 95% bootstrap percentile band of the stored curve samples, combined in quadrature with 1.96 * the
 * residual SD (a prediction band for a new measurement, not only the mean curve).
 * Recommendation: hi < 0 -> quantize; lo > 0 -> do_not_quantize; otherwise depends. */
#ifndef ECO_FIT_H
#define ECO_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eco/err.h"
#include "eco/model.h"
#include "eco/quant.h"
#include "eco/record.h"

#define ECO_FIT_MAX_ANCHORS 64
#define ECO_FIT_MAX_EXCLUDED 64
#define ECO_FIT_MAX_PROTOCOLS 8
#define ECO_FIT_MAX_SESSIONS 64
#define ECO_FIT_BOOT 256 /* bootstrap parameter sets kept per curve */
#define ECO_FIT_MAX_CURVES 48
/* Distinct sizes a card needs in its arch's pool before it gets a curve of its own: two leave a line through two points
 * (no residual, no form choice), three give the loglinear form a degree of freedom. */
#define ECO_FIT_CARD_MIN_SIZES 3
#define ECO_FIT_MAX_FP16 32 /* fp16 baseline points per arch */
#define ECO_FIT_DEFAULT_SEED 20260215u

typedef enum { ECO_FORM_SATURATING = 0, ECO_FORM_LOGLINEAR, ECO_FORM_CONSTANT } eco_curve_form;
typedef enum { ECO_WEIGHT_TRIALS = 0, ECO_WEIGHT_INVVAR, ECO_WEIGHT_NONE } eco_weighting;

typedef enum {
    ECO_LABEL_MEASURED = 0,
    ECO_LABEL_INTERPOLATED,
    ECO_LABEL_EXTRAPOLATED,
    ECO_LABEL_ESTIMATED,
    ECO_LABEL_MODELLED
} eco_label;

typedef enum { ECO_REC_QUANTIZE = 0, ECO_REC_DO_NOT_QUANTIZE, ECO_REC_DEPENDS } eco_recommendation;

typedef struct {
    double params_b, delta_pct;
    double sd_pct;   /* SD of ΔE across trials (from the quantized SD), NAN when unknown */
    double cv_pct;   /* CV of the quantized energy across trials, NAN when unknown */
    double weight;   /* normalised to mean 1 over the curve's anchors */
    int n_trials;
    char model[ECO_MODEL_NAME_SIZE], gpu[ECO_GPU_NAME_SIZE], session[ECO_SESSION_SIZE], source[ECO_SOURCE_SIZE];
    char flags[160]; /* the record's ("" when none): a throttled baseline or a disagreeing meter, shown with the estimate */
    bool synthetic_weights; /* measured on random values of the model's real shapes (data/h200), said with the estimate */
    char design[9];  /* the engine's kernel design (eco_record_design_id), "" when the record names none */
} eco_anchor;

typedef struct {
    char source[ECO_SOURCE_SIZE];
    char reason[96]; /* "protocol tok512/gross/... not selected", "not finite", ... */
    double params_b, delta_pct; /* the row's, NAN when not known: a measured answer's range covers a tied group's */
} eco_excluded;
/* The reason of a row left out because its group was as large as the chosen one (fit.c writes it, estimate.c
 * counts it; it travels in curves.json with the reason). */
#define ECO_FIT_TIED_REASON "tied with the chosen group"
/* Bytes in a GiB: memory everywhere in the estimator and optimizer (the *_gb fields) */
#define ECO_GIB (1024.0 * 1024.0 * 1024.0)

typedef struct {
    char arch[16];
    eco_precision precision;
    char card[ECO_GPU_NAME_SIZE]; /* "": the arch's cards pooled; else the rows of this recorded GPU name alone, fitted
                                   * where the pool holds several cards and this one has ECO_FIT_CARD_MIN_SIZES sizes */
    char protocol[96];                                      /* the protocol fitted, or "pooled" */
    char backend[96];                                       /* software stack fitted (split_backend), "" otherwise */
    size_t n_pooled;                                         /* > 0 only with the pool option */
    char pooled_protocols[ECO_FIT_MAX_PROTOCOLS][96];
    size_t n_sessions;
    char sessions[ECO_FIT_MAX_SESSIONS][ECO_SESSION_SIZE];

    eco_curve_form form;
    eco_weighting weighting;
    bool anchor_compat;   /* the anchor's fit: saturating, S >= 0, unweighted */
    double A, S, nstar;   /* nstar unused (0) unless saturating */
    double s_cap_pct;
    char form_note[200];  /* why this form ("4 sizes: saturating LOO rmse 3.1 < loglinear 4.0") */

    size_t n_anchors;
    eco_anchor anchors[ECO_FIT_MAX_ANCHORS];
    size_t n_excluded;
    eco_excluded excluded[ECO_FIT_MAX_EXCLUDED];
    size_t n_distinct_sizes;
    double n_min_b, n_max_b;
    double resid_sd_pct;  /* weighted residual SD with n - p degrees of freedom; NAN when n <= p */
    double crossover_b;   /* ΔE = 0 inside [n_min_b, n_max_b], else NAN */
    int crossover_dir;    /* -1: saves above it (falling curve), +1: costs above it (rising), 0: none */

    /* leave-one-out: refit without anchor i (same form), error = prediction - measured */
    size_t loo_n;
    double loo_err_pct[ECO_FIT_MAX_ANCHORS];
    double loo_median_abs_pct, loo_mae_pct; /* NAN when loo_n == 0 */

    uint64_t seed;
    size_t n_boot;
    double boot[ECO_FIT_BOOT][3]; /* (A, S, nstar) of each bootstrap refit */
} eco_curve;

/* fp16 absolute energy per arch (for mJ/token), from the fp16 baselines of the fitted rows. */
typedef struct {
    double params_b, e_mj;        /* mean over the rows (distinct baselines) at this size */
    double e_min_mj, e_max_mj;
    int n_rows;
    char gpus[96];
} eco_fp16_point;

typedef struct {
    char arch[16];
    char card[ECO_GPU_NAME_SIZE]; /* "": every card of the arch pooled; else the rows of this recorded GPU name alone (where the
                        * arch has several cards: their power limits and memories differ, so each answers for itself) */
    char protocol[96]; /* the protocol of the rows used (the arch's largest group), or "pooled" */
    char backend[96];  /* their software stack (split_backend), "" otherwise */
    size_t n_points;
    eco_fp16_point points[ECO_FIT_MAX_FP16]; /* sorted by params_b, one per distinct size */
} eco_fp16_baseline;

typedef struct {
    size_t n_curves;
    eco_curve curves[ECO_FIT_MAX_CURVES];
    size_t n_fp16;
    eco_fp16_baseline fp16[24]; /* per arch pooled, then per card where an arch has several */
    char dataset[160]; /* provenance, copied into curves.json */
    size_t n_records;
} eco_curve_set;

typedef struct {
    const char *arch;      /* NULL = every arch in the records */
    int precision;         /* -1 = every precision, else eco_precision */
    const char *protocol;  /* NULL = each (arch, precision)'s largest protocol group */
    bool pool;             /* fit every protocol together and record pooled_protocols */
    bool split_backend;    /* also split a protocol by software stack (record.backend); default true: the same
                            * protocol on two bitsandbytes/torch stacks differed 2x (RTX 4090 INT8, July vs August) */
    bool anchor_compat;    /* the anchor's unweighted S >= 0 saturating fit, for comparison */
    eco_weighting weighting;
    uint64_t seed;         /* 0 = ECO_FIT_DEFAULT_SEED */
    size_t n_boot;         /* 0 = ECO_FIT_BOOT */
} eco_fit_options;

void eco_fit_options_default(eco_fit_options *o);

/* Fits one curve from rows that already share (arch, precision) (protocol filtering is done here too).
 * ECO_EINVAL when no usable row remains. */
eco_err eco_fit_curve(const eco_record *rows, size_t n, const eco_fit_options *opt, eco_curve *out);
/* Groups `rows` by (arch, precision), fits each group, and fills fp16 baselines. set is overwritten. Where an
 * (arch, precision) curve pools several cards, each card with ECO_FIT_CARD_MIN_SIZES sizes of that curve's group
 * also gets a curve of its own rows (after the pooled one): the cards of one arch differ in power limit and memory
 * bandwidth, and their ΔE differs with them (hopper nf4 at 7B: -56% on the H100 SXM, -50% on the H200). */
eco_err eco_fit_all(const eco_record *rows, size_t n, const eco_fit_options *opt, eco_curve_set *set);

/* Curve value (clamped at -s_cap) with the point parameters, or with bootstrap sample k. */
double eco_curve_eval(const eco_curve *c, double params_b);
double eco_curve_eval_params(eco_curve_form form, double A, double S, double nstar, double s_cap, double params_b);
/* 95% band at params_b: bootstrap percentiles combined with 1.96 * resid SD (floor 2 points). */
void eco_curve_band95(const eco_curve *c, double params_b, double *lo, double *hi);

double eco_precision_s_cap_pct(eco_precision p);
const char *eco_curve_form_name(eco_curve_form f);
eco_err eco_curve_form_parse(const char *s, eco_curve_form *out);
const char *eco_weighting_name(eco_weighting w);
eco_err eco_weighting_parse(const char *s, eco_weighting *out);
const char *eco_label_name(eco_label l);
const char *eco_recommendation_name(eco_recommendation r);

/* The arch whose curves stand in for `arch` when it has no data, and why; NULL when there is none. */
const char *eco_arch_proxy(const char *arch, const char **reason, bool *weak);

const eco_curve *eco_curve_set_find(const eco_curve_set *set, const char *arch, eco_precision p); /* the arch's pool */
/* The curve of exactly this card as recorded ("" or NULL: the arch's pool), else NULL: no fallback, no name matching. */
const eco_curve *eco_curve_set_find_exact(const eco_curve_set *set, const char *arch, eco_precision p, const char *card);
/* The asked card's own curve where the set has one (the card resolved through the GPU table), else the arch's pooled
 * one; card NULL: the pooled one. */
const eco_curve *eco_curve_set_find_for(const eco_curve_set *set, const char *arch, eco_precision p, const char *card);
const eco_fp16_baseline *eco_curve_set_fp16(const eco_curve_set *set, const char *arch); /* the arch's pooled one */
/* The asked card's own fp16 baseline where the set has one (the card resolved through the GPU table), else the arch's
 * pooled one; card NULL: the pooled one. */
const eco_fp16_baseline *eco_curve_set_fp16_for(const eco_curve_set *set, const char *arch, const char *card);

/* ---- estimator ---- */
#define ECO_EST_MAX_NOTES 24
#define ECO_EST_NOTE_BYTES 400

typedef struct {
    const char *arch;         /* architecture class (eco_arch_from_gpu_name) */
    eco_precision precision;  /* quantized precision */
    double params_b;          /* > 0 */
    const char *model;        /* optional model name: an anchor of the same name counts as measured */
    int batch;                /* >= 1; ΔE is a batch-1 quantity, absolute energy is amortised */
    const char *card;         /* optional: the card asked for, as asked (NULL: an architecture); absolute energy
                               * not measured on that very card (a table name matched exactly) is labelled estimated */
    int ctx;                  /* optional (0: short): context positions; with the two byte counts below, a KV cache
                               * read much larger than the measurements' makes absolute energy estimated */
    double kv_bytes_per_position, bytes_per_token; /* of the model at this precision (0: unknown) */
    double fp16_bytes_per_token;                   /* of the model in fp16, for the baseline's KV share (0: unknown) */
} eco_estimate_query;

/* Fills q's KV and weight byte counts (q->precision and q->params_b set): exact for a preset, else the presets'
 * median KV bytes per parameter and bits per weight. */
void eco_estimate_query_model_bytes(eco_estimate_query *q, const eco_model_config *preset);
/* ECO_EINVAL (field "ctx") when a preset cannot hold ctx positions. */
eco_err eco_check_ctx(const eco_model_config *preset, int ctx);
/* KV bytes per cached position per billion parameters, the presets' median: a model without a preset. */
double eco_kv_bytes_per_position_per_b(void);
/* Share of a step's bytes that a KV cache of ctx positions x batch adds beyond the measurements' short context
 * (0 at or below ECO_MEASURED_CTX, or when a byte count is unknown). */
double eco_kv_share_beyond_measured(int ctx, int batch, double kv_bytes_per_position, double weight_bytes);

/* A long context's KV cache is the same bytes in every format (fp16), read by the same attention: it adds about the
 * same energy a token to fp16 and to a quantized model, at fp16's energy per byte of weights times an alpha taken
 * between ECO_KV_ALPHA_LO and ECO_KV_ALPHA_HI for the ranges (attention's efficiency is not measured). With kv1 the
 * KV share of an fp16 batch-1 step beyond the measured context, ΔE becomes ΔE / (1 + alpha·kv1): a saving or a
 * cost shrinks as the KV cache dominates. Scales delta (alpha 1) and lo/hi (the alphas that widen them). */
#define ECO_KV_ALPHA_LO 0.5
#define ECO_KV_ALPHA_HI 2.0
void eco_delta_at_ctx(double kv1, double *delta, double *lo, double *hi);

/* Context the measurements were taken at (prompt + generated tokens: 288 on the H200, 512 in the reference). */
#define ECO_MEASURED_CTX 512
/* Share of a token's bytes the KV cache may add beyond the measured context before absolute energy is estimated. */
#define ECO_KV_SHARE_MEASURED 0.05

typedef struct {
    double value_mj, lo_mj, hi_mj;
    eco_label label;
    const char *basis_note; /* static text */
} eco_energy_value;

typedef struct {
    double delta_pct, lo_pct, hi_pct;
    eco_label label;
    int n;                       /* trials behind the answer (measured: at this size; else the curve's total) */
    size_t n_anchors;            /* anchors used (measured: at this size; else the curve's) */
    size_t anchor_idx[ECO_FIT_MAX_ANCHORS];
    double cv_pct;               /* measured only: CV of the anchors' ΔE at this size; NAN otherwise */
    const eco_curve *curve;
    const char *arch_used;
    const char *proxy_reason;    /* NULL unless borrowed from a proxy or sibling curve */
    double ctx_kv_share;         /* > 0 when a long context rescaled ΔE (eco_delta_at_ctx): the fp16 step's KV share */
    double short_delta_pct, short_lo_pct, short_hi_pct; /* ΔE before that rescaling (the data's short context) */
    eco_label short_label;       /* and its label */
    eco_recommendation recommendation;
    double crossover_b;          /* NAN when none inside the measured range */
    bool has_energy;             /* an fp16 baseline exists for arch_used */
    eco_energy_value e_fp16, e_quant;
    double batch_factor;         /* energy per token at `batch` / at batch 1 */
    eco_label batch_label;
    size_t n_notes;
    char notes[ECO_EST_MAX_NOTES][ECO_EST_NOTE_BYTES];
} eco_estimate;

/* ECO_EUNSUPPORTED (naming the precisions that have data) when neither the arch nor its proxy has a curve. */
eco_err eco_estimate_run(const eco_curve_set *set, const eco_estimate_query *q, eco_estimate *out);
/* Whether a quantized energy from this fp16 baseline and this curve's ΔE composes two protocols or software stacks:
 * no measurement of the quantized energy then, which is estimated (the estimator and the optimizer alike). */
bool eco_energy_composed(const eco_fp16_baseline *fb, const eco_curve *c);

/* fp16 energy per token at params_b, log-log between baseline points (power law outside). */
eco_err eco_fp16_energy(const eco_fp16_baseline *b, double params_b, eco_energy_value *out);
/* The same for a card (NULL: the architecture) at a batch: estimated, with a wider range, when the card is not one
 * the baseline was measured on (at params_b, or at any size off the measured ones) or batch > 1 (the batch factor is
 * borrowed from the A800 INT8 sweep). */
eco_err eco_fp16_energy_on(const eco_fp16_baseline *b, double params_b, const char *card, int batch, eco_energy_value *out);
/* Whether the card is among those behind the baseline at params_b (off the measured sizes: behind any point).
 * NULL card: true. */
bool eco_fp16_baseline_has_card(const eco_fp16_baseline *b, double params_b, const char *card);

/* Energy per token at `batch` relative to batch 1, from the only measured batch sweep
 * (A800, Mistral-7B, pure INT8, batch 1-64; log-log interpolation, flat beyond 64). */
double eco_batch_energy_factor(int batch);
/* Where that factor comes from for this config: measured only at the sweep's own batches of its own config (ampere,
 * the A800 card or no card named, int8, ~7B), interpolated / extrapolated between / beyond them there, estimated
 * (borrowed) everywhere else, the A100 included. */
#define ECO_BATCH_SWEEP_CARD "A800"
eco_label eco_batch_label(const char *arch, const char *card, eco_precision precision, double params_b, int batch);

/* ---- GPUs and optimizer ---- */
typedef struct {
    const char *name;      /* "RTX 4090" */
    const char *arch;
    double vram_gb, mem_bw_gbps, fp16_tflops; /* datasheet: dense fp16 tensor, fp32 accumulate */
    double board_power_w;                     /* datasheet maximum board power (the SXM part's where two exist) */
    const char *source;
} eco_gpu_spec;

size_t eco_gpu_count(void);
const eco_gpu_spec *eco_gpu_at(size_t i);
/* Card name (normalised match), else the arch's reference card. ECO_ENOTFOUND listing supported cards. */
eco_err eco_gpu_find(const char *name, const eco_gpu_spec **out, bool *exact);
/* A GPU name or an architecture as the API and the browser take it: an architecture name or alias, else a
 * known card's architecture. ECO_ENOTFOUND (listing the cards) otherwise. */
eco_err eco_gpu_resolve_arch(const char *gpu, const char **arch);
/* The table card this name is (eco_gpu_find's exact match), else NULL: an architecture, the closest card of another
 * ("H100 NVL"), or no GPU. Leaves no error. */
const eco_gpu_spec *eco_gpu_exact(const char *name);
/* Whether the name is an architecture's ("hopper", any case) rather than a card's. */
bool eco_gpu_is_arch_name(const char *gpu);
/* The most tokens a second `batch` sequences of this model can decode on this card, whatever the engine: a step reads
 * every weight byte of the token once (eco_model_bytes_per_token at no context, the lm_head in the format too: the
 * fewest bytes it can be), at the card's datasheet bandwidth with ECO_TPS_CEILING_SLACK for a memory overclock, less
 * what the largest L2 of any card (ECO_L2_MAX_BYTES) could keep between steps. 0 where no such bound holds: weights
 * under twice that cache, no card, no preset or a batch < 1. A reported speed above it is a unit or batch error. */
#define ECO_L2_MAX_BYTES (128.0 * 1024 * 1024)
#define ECO_TPS_CEILING_SLACK 1.2
double eco_decode_tokens_per_s_ceiling(const eco_gpu_spec *gpu, const eco_model_config *preset, eco_precision p, int batch);

/* Request limits the service and the browser share for model sizes. */
#define ECO_PARAMS_B_MAX 2000.0
#define ECO_PARAMS_B_MIN 0.001 /* a million parameters: below it no language model, and log-size curves run off */
#define ECO_PARAMS_COUNT_MIN 1e6
/* Model size of a request: params_b in billions, or an absolute count (>= 1e6, e.g. 7e9 -> 7); else the size
 * of the preset `model` names (NULL: none). *preset: that preset, or NULL. ECO_ENOTFOUND for an unknown
 * preset without params_b (the message lists the presets), ECO_EINVAL for a size out of range or missing. */
eco_err eco_resolve_model_size(const char *model, bool has_params_b, double params_b, double *params_b_out,
                               const eco_model_config **preset);

typedef enum { ECO_OBJ_ENERGY = 0, ECO_OBJ_LATENCY, ECO_OBJ_BALANCED } eco_objective;
const char *eco_objective_name(eco_objective o);
eco_err eco_objective_parse(const char *s, eco_objective *out);

#define ECO_OPT_BATCHES 7 /* 1, 2, 4, ..., 64 */
#define ECO_OPT_MAX_BATCH 1024
#define ECO_OPT_MAX_CANDIDATES (ECO_PREC_COUNT * ECO_OPT_BATCHES)

typedef struct {
    const eco_model_config *preset; /* optional: exact byte accounting */
    double params_b;
    const char *model;
    const eco_gpu_spec *gpu;
    const char *card;        /* the card as asked (NULL: an architecture, or gpu's own name): energy measured on
                              * another card is estimated there, and only this card's energy bounds its latency */
    int ctx;                 /* cached positions per sequence */
    double max_vram_gb;      /* 0 = the card's VRAM */
    double max_latency_ms;   /* per-token step time budget; 0 = none */
    int batch;               /* 0: sweep batch 1, 2, 4, ..., 64; else only this batch (1..ECO_OPT_MAX_BATCH) */
    eco_objective objective;
} eco_optimize_query;

typedef struct {
    eco_precision precision;
    int batch;
    double vram_gb, weights_gb, kv_gb;
    double latency_ms, throughput_tok_s;
    const char *bound;               /* "memory" | "compute" | "power" (energy per step over the board's limit) */
    double delta_pct, delta_lo_pct, delta_hi_pct; /* 0 for fp16 */
    eco_label delta_label;           /* measured for fp16 (it is the baseline) */
    bool borrowed;                   /* ΔE from a proxy or sibling curve, not this architecture's own data for the format */
    double energy_rel_fp16;          /* (1 + ΔE/100) * batch factor: relative to fp16 at batch 1 */
    double energy_mj;                /* NAN when the arch has no fp16 baseline */
    eco_label energy_label;          /* worst of ΔE, fp16 baseline and batch factor labels */
    eco_label batch_label;           /* measured only for ampere int8 (the sweep's own config) */
    bool feasible;
    char reason[160];                /* why infeasible */
    double violation;                /* summed relative budget excess (0 when feasible) */
    double score;                    /* lower is better under the objective */
} eco_candidate;

typedef struct {
    size_t n;
    eco_candidate cand[ECO_OPT_MAX_CANDIDATES];
    int best;                        /* index, -1 when nothing is feasible */
    size_t n_alt;
    int alt[3];
    int closest_infeasible;          /* -1 when something is feasible */
    size_t n_pareto;                 /* feasible configs no other feasible one beats on both energy and latency, */
    int pareto[ECO_OPT_MAX_CANDIDATES]; /* by latency ascending (so energy descending) */
    size_t n_feasible;
    bool energy_absolute;            /* false: relative to fp16 batch 1 only */
    double vram_budget_gb;
    size_t n_notes;
    char notes[ECO_EST_MAX_NOTES][ECO_EST_NOTE_BYTES];
} eco_optimize_result;

eco_err eco_optimize_run(const eco_curve_set *set, const eco_optimize_query *q, eco_optimize_result *out);
/* VRAM a configuration needs, in GiB (the unit of the cards' "80 GB"): weights and KV cache, plus 0.8 GiB and 5%
 * of the weights for the CUDA context and allocator. The optimizer's budget check and the estimate's fit note. */
double eco_vram_needed_gib(double weight_bytes, double kv_bytes);
/* The notes on how a request was read, added to r after eco_optimize_run (the service and eco.wasm both): the size
 * given over a preset's (`overridden`: that preset, else NULL), and a card name matched only to its architecture
 * (`exact` false: gpu is that architecture's reference card, whose VRAM stands in unless vram_given). */
void eco_optimize_note_request(eco_optimize_result *r, const char *gpu_asked, const eco_gpu_spec *gpu, bool exact,
                               bool vram_given, const eco_model_config *overridden, double params_b);
/* Why precision p is neither recommended nor an alternative in r (ranked lower, no batch fits, or no ΔE data on
 * `arch`), written into why. False when p is shown, or is fp16 without candidates: nothing to explain. */
bool eco_optimize_rejection(const eco_optimize_result *r, eco_precision p, eco_objective objective, const char *arch,
                            char *why, size_t cap);

#endif
