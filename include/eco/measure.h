/* The measurement protocol: meter self-test, idle baseline before and after, warm-ups, configurations
 * interleaved in a seeded random order per block, windows of >= min_window_s of back-to-back generations
 * read with the energy counter after a sync, prefill measured separately and excluded from decode energy,
 * statistics per configuration and paired ΔE% vs fp16. The workload is a callback, so the protocol is the
 * same for the CPU backend, the CUDA backend and the test doubles. */
#ifndef ECO_MEASURE_H
#define ECO_MEASURE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "eco/engine.h"
#include "eco/err.h"
#include "eco/jsonschema.h"
#include "eco/power.h"
#include "eco/quant.h"
#include "eco/record.h"

#define ECO_MEASURE_MAX_CONFIGS 8
#define ECO_PROTOCOL_VERSION "eco-measure/1"

/* What one generation did; timings are wall seconds measured after a device sync. */
typedef struct {
    double prefill_s, decode_s;
    int prompt_tokens, generated_tokens;
} eco_generation;

typedef struct {
    void *ctx;
    /* Runs one complete generation for configuration `config` (prefill + exactly `tokens` greedy decode steps,
     * EOS ignored) and returns after the device is synchronised. tokens == 0 means prefill only. */
    eco_err (*generate)(void *ctx, int config, int tokens, eco_generation *out);
    /* Optional: same-run quality of `config` against config 0 (fp16): KL, top-1 agreement, perplexity. */
    eco_err (*quality)(void *ctx, int config, json_t **out);
} eco_workload;

typedef struct {
    int n_configs;
    eco_precision precisions[ECO_MEASURE_MAX_CONFIGS]; /* precisions[0] must be fp16: the baseline */
    int tokens;            /* generated tokens per generation (256) */
    int iterations;        /* measured blocks; each block has one window per configuration (10) */
    int warmups;           /* warm-up generations per configuration (2) */
    double min_window_s;   /* >= 10 s on a GPU; tests use less */
    int min_generations;   /* at least this many back-to-back generations per window (1) */
    double idle_s;         /* idle baseline length before and after (5 s) */
    uint64_t seed;         /* block order */
    unsigned sampler_period_ms; /* 10 */
    bool quiet;            /* no progress line on stderr */
} eco_measure_options;

void eco_measure_options_default(eco_measure_options *o);

/* Per-window record. energy is NAN when no meter exists. */
typedef struct {
    int block, order, config;
    int generations;
    long tokens;
    double t0_s, t1_s, decode_s, prefill_s;
    double energy_j;           /* counter delta over the window, less the edge tail */
    double tail_j;             /* energy between the end of the work and the counter update that closed the window */
    double prefill_energy_j;   /* estimated from this block's prefill-only window of the config */
    double decode_mj_per_token_gross, decode_mj_per_token_net, e2e_mj_per_token_gross;
    double mean_power_w, instant_trapz_j, counter_vs_instant_ratio;
    int temp_start_c, temp_end_c;
    uint64_t clock_event_reasons; /* every reason any timeline sample in the window reported, and the end sample's */
    unsigned sm_mhz_min;          /* lowest SM clock the timeline saw in the window; 0 unknown */
    double sm_mhz_mean;           /* mean over those samples; NAN unknown */
} eco_window;

typedef struct eco_measurement eco_measurement;

/* Runs the protocol. `meter` may be NULL (no energy meter: every energy is null with a reason, and the
 * run still measures time, tokens/s and quality). `on_progress` prints a line per window unless quiet. */
eco_err eco_measure_run(const eco_measure_options *o, eco_workload *w, eco_nvml *meter, eco_measurement **out);
void eco_measurement_free(eco_measurement *m);
const eco_measure_options *eco_measurement_options(const eco_measurement *m);

size_t eco_measurement_window_count(const eco_measurement *m);
const eco_window *eco_measurement_windows(const eco_measurement *m);

/* Summary per configuration (index as in options). NAN energies without a meter. */
typedef struct {
    eco_precision precision;
    int n;                         /* windows */
    double mj_per_token_gross, mj_per_token_net, e2e_mj_per_token_gross;
    double sd_mj, cv_pct, ci95_lo_mj, ci95_hi_mj;
    double tokens_per_s, mean_power_w;
    double delta_pct, delta_ci95_lo, delta_ci95_hi; /* paired by block vs config 0; NAN for config 0 */
} eco_config_summary;
eco_err eco_measurement_summary(const eco_measurement *m, int config, eco_config_summary *out);

/* Meter self-test (idle check + counter cadence, and the windows' counter/instant agreement afterwards):
 * "measured", "unverified" or "failed"; "unavailable" without a meter. */
const char *eco_measurement_basis(const eco_measurement *m);
/* Why the self-test failed (basis "failed": the run went on without energy), "" otherwise. */
const char *eco_measurement_failure(const eco_measurement *m);
double eco_measurement_idle_before_w(const eco_measurement *m);
double eco_measurement_idle_after_w(const eco_measurement *m);
/* Windows measured again because their prefill estimate left no decode energy (run flag window-remeasured). */
size_t eco_measurement_windows_remeasured(const eco_measurement *m);
/* The self-test and windows as JSON (for energy.json), new reference. */
json_t *eco_measurement_meter_json(const eco_measurement *m);
json_t *eco_measurement_windows_json(const eco_measurement *m);
json_t *eco_measurement_quality_json(const eco_measurement *m, int config); /* borrowed; NULL if none */

/* energy.json's run_id (data/schema/energy.schema.json): 1 to ECO_RUN_ID_MAX of these characters. */
#define ECO_RUN_ID_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-"
#define ECO_RUN_ID_MAX 128

/* What energy.json says about the run besides the measurement itself. */
typedef struct {
    const char *run_id;           /* NULL: derived from the model, GPU and start time */
    time_t started;               /* session start (UTC) */
    const char *engine_backend;   /* "cpu", "cuda", "cuda-reference-stack" */
    const char *cuda_runtime;     /* NULL on the CPU */
    const char *engine_design;    /* CUDA kernel design (eco_cuda_design), NULL on the CPU */
    const eco_gpu_card *gpu;      /* NULL without NVML */
    const char *gpu_arch;         /* eco_arch_from_gpu_name of the card, NULL if unknown */
    const char *weights_source;   /* "synthetic" | "checkpoint" */
    const char *model;            /* HF id or checkpoint name */
    const char *preset;           /* NULL for a checkpoint without a preset */
    double params_b;
    uint64_t synthetic_seed;
    const char *checkpoint_sha256;/* NULL when not computed */
    double int8_mixed_threshold;  /* LLM.int8() outlier threshold of the run (6.0 by default) */
    bool lm_head_quantized;       /* --quantize-lm-head: the head in each run's format, not fp16 */
    int prompt_tokens;
    const char *energy_unavailable_reason; /* required when no meter */
    const char *const *notes;     /* NULL-terminated, may be NULL */
} eco_energy_meta;

/* Builds the energy.json document (data/schema/energy.schema.json v2) from a finished measurement. */
eco_err eco_energy_json(const eco_measurement *m, const eco_energy_meta *meta, json_t **out);
/* s as Markdown text on one line: characters that would make markup (a heading, a table cell, emphasis, a link,
 * a tag) escaped; code: for inside a code span (only the backtick and '|' handled). Malloc'd; NULL when out of
 * memory. */
char *eco_markdown_escape(const char *s, bool code);
/* Renders the readable Markdown report of any energy.json document. */
eco_err eco_energy_report_md(const json_t *energy, char **markdown);

/* The decode engine as a workload: one resident engine per precision (precs[0] = fp16), a fixed prompt,
 * generations of up to max_new tokens; quality compares each precision with fp16 teacher-forced over the
 * tokens given to eco_engine_workload_set_quality_tokens (none: quality is null). */
typedef struct eco_engine_workload eco_engine_workload;
eco_err eco_engine_workload_create(const char *backend, eco_weights *w, const eco_engine_options *base,
                                   const eco_precision *precs, int n, const int32_t *prompt, int n_prompt, int max_new,
                                   eco_engine_workload **out);
eco_err eco_engine_workload_set_quality_tokens(eco_engine_workload *wl, const int32_t *tokens, int n, const char *name);
eco_engine *eco_engine_workload_engine(eco_engine_workload *wl, int config);
eco_workload eco_engine_workload_iface(eco_engine_workload *wl);
void eco_engine_workload_free(eco_engine_workload *wl);

/* What a schema-valid energy.json's figures say of each other (the rules: docs/SCHEMA.md, "Consistency"): one
 * result and comparison per precision, delta_pct from the results, intervals that contain their points, verdicts
 * that follow the interval, pairs within blocks and windows, samples that average to the result, plausible mJ a
 * token and power. Each finding goes to errs (keyword "consistency"); ECO_EINVAL when there is any. */
eco_err eco_energy_check_consistency(const json_t *doc, eco_schema_errors *errs);
/* The architecture class a card's runs are filed under: its stated arch, a known class and, where the name is a
 * card the curves know, that card's; with none stated, the name's. The consistency check and the dataset rows
 * apply the one rule. *resolved is the class (NULL unless OK), *named the name's class (NULL when unknown). */
typedef enum {
    ECO_CARD_ARCH_OK, ECO_CARD_ARCH_UNKNOWN, ECO_CARD_ARCH_NOT_THE_NAMES, ECO_CARD_ARCH_NONE,
    ECO_CARD_ARCH_OUTSIDE /* a card of no class (eco_gpu_name_outside_classes): *named says what it is */
} eco_card_arch_verdict;
eco_card_arch_verdict eco_card_arch(const char *name, const char *arch, const char **resolved, const char **named);
/* Whether params_b is within 1% of the preset's parameter count (the fit's x axis); *want gets that count, B. */
bool eco_params_match_preset(const eco_model_config *preset, double params_b, double *want);
/* Whether a document is one of the shipped examples (data/schema/examples): "example": true, or the examples' own
 * identity (their GPU UUID or host) under another flag: an example with "example": false must not become data. */
#define ECO_EXAMPLE_GPU_UUID "GPU-00000000-1111-2222-3333-444444444444"
#define ECO_EXAMPLE_HOSTNAME "example-node-01"
bool eco_energy_is_example(const json_t *doc);
/* A document as everything that accepts one checks it: the schema (NULL: skipped), then, if that passes, the
 * consistency checks; every finding in errs. */
eco_err eco_energy_validate(const eco_schema *schema, const json_t *doc, eco_schema_errors *errs);

/* Dataset rows of a measured energy.json: one eco_record per quantized precision against the same-run fp16
 * (origin "run", protocol "tok<N>/gross/nvml-energy-counter", backend "eco <version> <engine backend>", flags
 * from eco_energy_record_flags).
 * ECO_EUNSUPPORTED for documents without a measured GPU meter (CPU runs, failed self-tests). Caller frees *out. */
eco_err eco_energy_records(const json_t *doc, const char *source, eco_record **out, size_t *count);
/* The flags a row of that precision carries: its result's (throttled, hot, counter-instant-disagree, ...), then
 * the same-run fp16 baseline's as "fp16:<flag>", space-separated ("" when none). A throttled baseline moves
 * every ΔE of the run, so a reader of the row needs both. Cut at a whole flag to fit cap. */
void eco_energy_record_flags(const json_t *doc, const char *precision, char *buf, size_t cap);

/* Environment card pieces (recorded, never changed). */
json_t *eco_env_gpu_json(const eco_gpu_card *card, const char *arch);
json_t *eco_env_host_json(void);
json_t *eco_env_software_json(const char *engine_backend, const char *cuda_runtime, const char *engine_design);

#endif
