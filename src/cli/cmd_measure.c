/* eco measure: a controlled A/B of precisions on one device in one session (see include/eco/measure.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/files.h"
#include "cli/commands.h"
#include "eco/cuda.h"
#include "eco/engine.h"
#include "eco/json.h"
#include "eco/jsonschema.h"
#include "eco/measure.h"
#include "eco/model.h"
#include "eco/paths.h"
#include "eco/record.h"
#include "eco/stats.h"
#include "eco/store.h"
#include "eco/tokenizer.h"


static void usage(FILE *f)
{
    fputs("usage: eco measure (--model PRESET | --weights DIR|FILE.safetensors [--config config.json] [--model NAME]) [options]\n"
          "A/B energy per generated token of precisions against the fp16 baseline, same device, same session.\n"
          "  --precisions LIST   fp16,int8,int8-mixed,nf4,fp8 (default; fp16 is always measured, first)\n"
          "  --tokens N          generated tokens per generation, EOS ignored (256)\n"
          "  --blocks N          measured blocks: each runs one window per precision in a seeded random order (10)\n"
          "  --iterations N      at least N back-to-back generations per window (1); windows are lengthened to --window\n"
          "  --warmups N         warm-up generations per precision (2)\n"
          "  --window S          minimum window length in seconds (10)\n"
          "  --idle S            idle baseline before and after, seconds (5)\n"
          "  --prompt-tokens N   prompt length (32); --quality-tokens N teacher-forced tokens for KL/top-1/perplexity (128, 0 = off)\n"
          "  --tokenizer FILE    tokenizer.json for the quality text (default: the weights folder's; else seeded ids)\n"
          "  --config FILE       config.json for --weights FILE.safetensors (or to override a folder's)\n"
          "  --backend cpu|cuda  default cuda when built with a device, else cpu\n"
          "  --meter auto|nvml|none  auto = NVML with the cuda backend; nvml on the cpu backend is for tests with a fake NVML\n"
          "  --gpu-index N       NVML device (0)\n"
          "  --reference-stack   cuda: launches one by one and the reference library's host syncs (no CUDA graph)\n"
          "  --double-quant      measure nf4 as nf4-dq (double-quantized absmax);  --int8-threshold T (6.0);  --quantize-lm-head\n"
          "  --seed N            block order seed;  --weights-seed N  synthetic weights seed (1)\n"
          "  --threads N         CPU backend threads (0 = all)\n"
          "  --out FILE          energy.json (default energy.json);  --report FILE  Markdown report (default report.md)\n"
          "  --schema FILE       schema to validate against (default: found beside the build or source tree)\n"
          "  --run-id ID         A-Z a-z 0-9 . _ : - (default: model-arch-time);  --quiet\n",
          f);
}

static int parse_precisions(const char *list, eco_measure_options *o)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    o->n_configs = 1;
    o->precisions[0] = ECO_PREC_FP16;
    int fp16_seen = 0;
    size_t len = strlen(list);
    if (len && (list[0] == ',' || list[len - 1] == ',' || strstr(list, ",,"))) {
        fprintf(stderr, "eco measure: --precisions '%s' has an empty name\n", list);
        return 0;
    }
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        eco_precision p;
        if (eco_precision_parse(tok, &p)) {
            fprintf(stderr, "eco measure: %s\n", eco_last_error());
            return 0;
        }
        if (p == ECO_PREC_FP16) {
            if (fp16_seen++) { fprintf(stderr, "eco measure: precision fp16 listed twice\n"); return 0; }
            continue;
        }
        for (int i = 1; i < o->n_configs; i++)
            if (o->precisions[i] == p) { fprintf(stderr, "eco measure: precision %s listed twice\n", tok); return 0; }
        if (o->n_configs == ECO_MEASURE_MAX_CONFIGS) { fprintf(stderr, "eco measure: too many precisions\n"); return 0; }
        o->precisions[o->n_configs++] = p;
    }
    if (o->n_configs < 2) {
        fprintf(stderr, "eco measure: --precisions '%s' names no quantized precision to compare with fp16 (e.g. int8,nf4)\n", list);
        return 0;
    }
    return 1;
}

/* --double-quant: the nf4 listed is measured, and labelled, as nf4-dq (it had been labelled nf4). */
static int double_quant_nf4(eco_measure_options *o)
{
    int at = -1;
    for (int i = 1; i < o->n_configs; i++) {
        if (o->precisions[i] == ECO_PREC_NF4_DQ) {
            fprintf(stderr, "eco measure: --double-quant turns nf4 into nf4-dq, which --precisions lists already\n");
            return 0;
        }
        if (o->precisions[i] == ECO_PREC_NF4) at = i;
    }
    if (at < 0) { fprintf(stderr, "eco measure: --double-quant applies to nf4, which --precisions does not list\n"); return 0; }
    o->precisions[at] = ECO_PREC_NF4_DQ;
    return 1;
}

typedef struct {
    const char *model, *weights_dir, *backend, *meter, *out, *report, *schema, *run_id, *tokenizer, *config;
    int prompt_tokens, quality_tokens, gpu_index, threads;
    bool reference_stack, quantize_lm_head, double_quant;
    double int8_threshold;
    uint64_t weights_seed;
} measure_args;

/* The reference text through a tokenizer into ids < vocab; false with why[] when it cannot serve. */
static bool encode_text(const char *tok_path, const eco_model_config *c, int32_t *ids, int want, int *have, char *why, size_t cap)
{
    char text_path[PATH_MAX];
    if (!eco_find_data_file(ECO_QUALITY_TEXT_REL, NULL, text_path, sizeof text_path)) {
        snprintf(why, cap, "cannot find %s", ECO_QUALITY_TEXT_REL);
        return false;
    }
    char *text = NULL;
    size_t len = 0, n = 0;
    if (eco_store_read_file(text_path, (size_t)64 << 20, &text, &len)) { snprintf(why, cap, "%s", eco_last_error()); return false; }
    eco_tokenizer *tk;
    int32_t *enc = NULL;
    bool ok = false;
    if (eco_tokenizer_load(tok_path, &tk)) snprintf(why, cap, "%s", eco_last_error());
    else {
        if (eco_tokenizer_encode(tk, text, len, &enc, &n)) snprintf(why, cap, "%s", eco_last_error());
        else if (n < (size_t)want) snprintf(why, cap, "%s gives %zu tokens of the reference text, %d wanted", tok_path, n, want);
        else {
            ok = true;
            for (int i = 0; i < want && ok; i++) {
                if (enc[i] < 0 || enc[i] >= c->vocab) {
                    snprintf(why, cap, "%s gives token id %d, beyond the model's vocab of %d: not this model's tokenizer",
                             tok_path, enc[i], c->vocab);
                    ok = false;
                }
                ids[i] = enc[i];
            }
            if (ok) *have = want;
        }
        free(enc);
        eco_tokenizer_free(tk);
    }
    free(text);
    return ok;
}

/* Prompt and quality tokens: the reference text through the checkpoint's tokenizer, else seeded ids (synthetic
 * weights have none). A --tokenizer that cannot serve is an error (-1); a folder's tokenizer.json that cannot
 * (sentencepiece files are not supported) is said on stderr and in the quality text's name. 0: out of memory. */
static int make_tokens(const measure_args *a, const eco_model_config *c, int32_t **prompt, int32_t **quality,
                       int *n_quality, char *quality_name, size_t name_cap)
{
    int want = a->prompt_tokens > a->quality_tokens ? a->prompt_tokens : a->quality_tokens;
    int32_t *ids = malloc((size_t)(want > 0 ? want : 1) * sizeof *ids);
    if (!ids) return 0;
    int have = 0;
    char tok_path[PATH_MAX], why[PATH_MAX + 256] = "";
    if (a->tokenizer) snprintf(tok_path, sizeof tok_path, "%s", a->tokenizer);
    else if (a->weights_dir) snprintf(tok_path, sizeof tok_path, "%s/tokenizer.json", a->weights_dir);
    else tok_path[0] = '\0';
    bool tried = tok_path[0] && (a->tokenizer || access(tok_path, F_OK) == 0);
    if (tried && encode_text(tok_path, c, ids, want, &have, why, sizeof why))
        snprintf(quality_name, name_cap, "quality_eval_text.txt (first %d tokens)", have);
    else if (tried && a->tokenizer) {
        fprintf(stderr, "eco measure: --tokenizer: %s\n", why);
        free(ids);
        return -1;
    } else if (tried) {
        fprintf(stderr, "eco measure: warning: %s not used (%s); the quality check reads seeded token ids\n", tok_path, why);
    }
    if (have < want) {
        eco_rng rng;
        eco_rng_seed(&rng, a->weights_seed * 7919u + 17u);
        for (have = 0; have < want; have++) ids[have] = (int32_t)eco_rng_below(&rng, (size_t)c->vocab);
        snprintf(quality_name, name_cap, "seeded random token ids (%d, seed %llu)%s", have, (unsigned long long)a->weights_seed,
                 tried ? "; the folder's tokenizer.json could not be used" : "");
    }
    *prompt = malloc((size_t)(a->prompt_tokens > 0 ? a->prompt_tokens : 1) * sizeof **prompt);
    if (!*prompt) { free(ids); return 0; }
    memcpy(*prompt, ids, (size_t)a->prompt_tokens * sizeof *ids);
    *quality = ids;
    *n_quality = a->quality_tokens;
    return 1;
}

static const char *default_backend(void)
{
    if (&eco_backend_cuda && eco_cuda_device_name) {
        char name[256];
        if (eco_cuda_device_name(name, sizeof name) == ECO_OK) return "cuda";
    }
    return "cpu";
}

int eco_cmd_measure(int argc, char **argv)
{
    eco_measure_options o;
    eco_measure_options_default(&o);
    measure_args a = {.out = "energy.json", .report = "report.md", .prompt_tokens = 32, .quality_tokens = 128,
                      .meter = "auto", .int8_threshold = ECO_INT8_MIXED_THRESHOLD, .weights_seed = 1};
    long iterations = 1;
    if (!parse_precisions("fp16,int8,int8-mixed,nf4,fp8", &o)) return 2;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        double d;
#define NEED_VALUE \
    if (!v) { fprintf(stderr, "eco measure: %s needs a value\n", f); return 2; } \
    i++;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) { usage(stdout); return 0; }
        else if (!strcmp(f, "--quiet")) o.quiet = true;
        else if (!strcmp(f, "--reference-stack")) a.reference_stack = true;
        else if (!strcmp(f, "--quantize-lm-head")) a.quantize_lm_head = true;
        else if (!strcmp(f, "--double-quant")) a.double_quant = true;
        else if (!strcmp(f, "--model")) { NEED_VALUE a.model = v; }
        else if (!strcmp(f, "--weights")) { NEED_VALUE a.weights_dir = v; }
        else if (!strcmp(f, "--tokenizer")) { NEED_VALUE a.tokenizer = v; }
        else if (!strcmp(f, "--config")) { NEED_VALUE a.config = v; }
        else if (!strcmp(f, "--backend")) { NEED_VALUE a.backend = v; }
        else if (!strcmp(f, "--meter")) { NEED_VALUE a.meter = v; }
        else if (!strcmp(f, "--out")) { NEED_VALUE a.out = v; }
        else if (!strcmp(f, "--report")) { NEED_VALUE a.report = v; }
        else if (!strcmp(f, "--schema")) { NEED_VALUE a.schema = v; }
        else if (!strcmp(f, "--run-id")) {
            NEED_VALUE
            size_t ok_chars = strspn(v, ECO_RUN_ID_CHARS);
            if (!*v || v[ok_chars] || ok_chars > ECO_RUN_ID_MAX) { /* the schema's run_id, checked before the run rather than after it */
                fprintf(stderr, "eco measure: --run-id must be 1-128 of A-Z a-z 0-9 . _ : -, got '%s'\n", v);
                return 2;
            }
            a.run_id = v;
        }
        else if (!strcmp(f, "--precisions")) { NEED_VALUE if (!parse_precisions(v, &o)) return 2; }
        else if (!strcmp(f, "--tokens")) { NEED_VALUE if (!eco_arg_long("eco measure", f, v, 1, 65536, &n)) return 2; o.tokens = (int)n; }
        else if (!strcmp(f, "--blocks")) { NEED_VALUE if (!eco_arg_long("eco measure", f, v, 1, 10000, &n)) return 2; o.iterations = (int)n; }
        else if (!strcmp(f, "--iterations")) { NEED_VALUE if (!eco_arg_long("eco measure", f, v, 1, 100000, &iterations)) return 2; }
        else if (!strcmp(f, "--warmups")) { NEED_VALUE if (!eco_arg_long("eco measure", f, v, 0, 1000, &n)) return 2; o.warmups = (int)n; }
        else if (!strcmp(f, "--prompt-tokens")) { NEED_VALUE if (!eco_arg_long("eco measure", f, v, 1, 8192, &n)) return 2; a.prompt_tokens = (int)n; }
        else if (!strcmp(f, "--quality-tokens")) { NEED_VALUE if (!eco_arg_long("eco measure", f, v, 0, 8192, &n)) return 2; a.quality_tokens = (int)n; }
        else if (!strcmp(f, "--gpu-index")) { NEED_VALUE if (!eco_arg_long("eco measure", f, v, 0, 64, &n)) return 2; a.gpu_index = (int)n; }
        else if (!strcmp(f, "--threads")) { NEED_VALUE if (!eco_arg_long("eco measure", f, v, 0, ECO_ENGINE_MAX_CPU_THREADS, &n)) return 2; a.threads = (int)n; }
        else if (!strcmp(f, "--seed")) { NEED_VALUE if (!eco_arg_long("eco measure", f, v, 0, LONG_MAX, &n)) return 2; o.seed = (uint64_t)n; }
        else if (!strcmp(f, "--weights-seed")) { NEED_VALUE if (!eco_arg_long("eco measure", f, v, 0, LONG_MAX, &n)) return 2; a.weights_seed = (uint64_t)n; }
        else if (!strcmp(f, "--window")) { NEED_VALUE if (!eco_arg_double("eco measure", f, v, 0.001, 3600, &d)) return 2; o.min_window_s = d; }
        else if (!strcmp(f, "--idle")) { NEED_VALUE if (!eco_arg_double("eco measure", f, v, 0, 600, &d)) return 2; o.idle_s = d; }
        else if (!strcmp(f, "--int8-threshold")) { NEED_VALUE if (!eco_arg_double("eco measure", f, v, 0, 1e6, &d)) return 2; a.int8_threshold = d; }
        else { fprintf(stderr, "eco measure: unknown option '%s'\n", f); usage(stderr); return 2; }
#undef NEED_VALUE
    }
    if (!a.model && !a.weights_dir) { fprintf(stderr, "eco measure: give --model PRESET or --weights DIR\n"); return 2; }
    if (a.double_quant && !double_quant_nf4(&o)) return 2;
    if (a.reference_stack && !strcmp(a.backend ? a.backend : default_backend(), "cpu")) {
        fprintf(stderr, "eco measure: --reference-stack is a CUDA launch sequence; the cpu backend has none\n");
        return 2;
    }
    if (a.quality_tokens == 1) { fprintf(stderr, "eco measure: --quality-tokens must be 0 or >= 2\n"); return 2; }
    if (!a.backend) a.backend = default_backend();
    if (strcmp(a.backend, "cpu") && strcmp(a.backend, "cuda")) {
        fprintf(stderr, "eco measure: --backend must be cpu or cuda, got '%s'\n", a.backend);
        return 2;
    }
    if (strcmp(a.meter, "auto") && strcmp(a.meter, "nvml") && strcmp(a.meter, "none")) {
        fprintf(stderr, "eco measure: --meter must be auto, nvml or none\n");
        return 2;
    }
    bool use_nvml = !strcmp(a.meter, "nvml") || (!strcmp(a.meter, "auto") && !strcmp(a.backend, "cuda"));
    if (use_nvml && !(o.idle_s > 0)) {
        fprintf(stderr, "eco measure: --idle must be > 0 s with an energy meter (the idle power is net energy's baseline)\n");
        return 2;
    }

    /* Everything the end of the run needs, checked before it starts: a measurement can take an hour. */
    char why[PATH_MAX + 64];
    if (!*a.out || !*a.report || eco_same_output(a.out, a.report)) {
        fprintf(stderr, "eco measure: --out and --report must be two different files (got '%s' and '%s')\n", a.out, a.report);
        return 2;
    }
    if (!eco_file_writable(a.out, why, sizeof why) || !eco_file_writable(a.report, why, sizeof why)) {
        fprintf(stderr, "eco measure: %s\n", why);
        return 2;
    }
    char schema_path[PATH_MAX];
    if (a.schema) snprintf(schema_path, sizeof schema_path, "%s", a.schema);
    else if (!eco_find_data_file(ECO_ENERGY_SCHEMA_REL, "ECO_SCHEMA", schema_path, sizeof schema_path)) {
        fprintf(stderr, "eco measure: cannot find %s (use --schema): the result could not be validated\n", ECO_ENERGY_SCHEMA_REL);
        return 2;
    }
    eco_schema *schema;
    if (eco_schema_compile_file(schema_path, 0, &schema)) { fprintf(stderr, "eco measure: %s\n", eco_last_error()); return 2; }
    /* From here every exit goes through done: with rc set (2 for a usage error, 1 for a failure). */
    int rc = 1;
    eco_weights *w = NULL;
    eco_nvml *meter = NULL;
    int32_t *prompt = NULL, *qtokens = NULL;
    eco_engine_workload *wl = NULL;
    json_t *doc = NULL;
    eco_measurement *m = NULL;

    /* Weights: a checkpoint directory, or synthetic weights of a preset's exact shapes. */
    eco_err e;
    const eco_model_config *preset = a.model ? eco_preset_find(a.model) : NULL;
    eco_model_config given_cfg;
    if (a.config && eco_model_config_from_json(a.config, &given_cfg)) {
        fprintf(stderr, "eco measure: --config: %s\n", eco_last_error());
        rc = 2;
        goto done;
    }
    if (a.weights_dir) e = eco_weights_open(a.weights_dir, a.config ? &given_cfg : NULL, &w);
    else if (!preset) {
        fprintf(stderr, "eco measure: unknown model preset '%s' (see `eco model list`%s)\n", a.model,
                !strcmp(a.model, "tiny") ? "; the tiny test shape is measured from files: `eco model save tiny --out DIR`, then --weights DIR" : "");
        rc = 2;
        goto done;
    } else e = eco_weights_synthetic(preset, a.weights_seed, &w);
    if (!e && o.n_configs > 1) e = eco_weights_cache(w, true); /* one generation/read for all precisions */
    if (e) { fprintf(stderr, "eco measure: %s\n", eco_last_error()); goto done; }
    const eco_model_config *cfg = eco_weights_config(w);
    if (a.prompt_tokens + o.tokens > cfg->max_pos || a.quality_tokens > cfg->max_pos) {
        fprintf(stderr, "eco measure: %s takes %d positions (max_position_embeddings): --prompt-tokens %d + --tokens %d, "
                        "and --quality-tokens %d, must each fit\n", cfg->name, cfg->max_pos, a.prompt_tokens, o.tokens, a.quality_tokens);
        rc = 2;
        goto done;
    }
    char ck_sha[65] = "", model_name[256];
    if (a.weights_dir && (e = eco_checkpoint_sha256(a.weights_dir, o.quiet, ck_sha))) {
        fprintf(stderr, "eco measure: %s\n", eco_last_error());
        goto done;
    }
    if (a.model) snprintf(model_name, sizeof model_name, "%.255s", preset ? preset->hf_id : a.model);
    else eco_checkpoint_name(a.weights_dir, cfg->hf_id, model_name, sizeof model_name);

    /* The meter before the engines: a missing counter is a clear error unless energy is not asked for. */
    eco_gpu_card card;
    const char *gpu_arch = NULL, *reason = NULL;
    char reason_buf[512];
    if (use_nvml) {
        if ((e = eco_nvml_open((unsigned)a.gpu_index, &meter))) {
            fprintf(stderr, "eco measure: %s\n", eco_last_error());
            goto done;
        }
        eco_nvml_card(meter, &card);
        if (eco_arch_from_gpu_name(card.name, &gpu_arch)) gpu_arch = NULL;
    } else {
        snprintf(reason_buf, sizeof reason_buf, "no energy meter: %s backend%s", a.backend,
                 !strcmp(a.backend, "cpu") ? " (NVML measures GPUs only)" : " (--meter none)");
        reason = reason_buf;
    }

    if (a.reference_stack && eco_cuda_set_reference_stack) eco_cuda_set_reference_stack(true);
    eco_engine_options eo;
    eco_engine_options_default(&eo);
    eo.threads = a.threads;
    eo.quantize_lm_head = a.quantize_lm_head;
    eo.quant.int8_threshold = (float)a.int8_threshold;
    eo.max_seq = a.prompt_tokens + o.tokens + a.quality_tokens + 8;
    if (eo.max_seq > cfg->max_pos) eo.max_seq = cfg->max_pos;

    int n_quality = 0;
    char quality_name[256];
    int made = make_tokens(&a, cfg, &prompt, &qtokens, &n_quality, quality_name, sizeof quality_name);
    if (made != 1) {
        if (!made) fprintf(stderr, "eco measure: out of memory\n");
        rc = made ? 2 : 1;
        goto done;
    }
    if (!o.quiet) fprintf(stderr, "[load] %s on %s: %d precisions\n", cfg->name[0] ? cfg->name : a.model, a.backend, o.n_configs);
    time_t started = time(NULL);
    e = eco_engine_workload_create(a.backend, w, &eo, o.precisions, o.n_configs, prompt, a.prompt_tokens, o.tokens, &wl);
    if (!e && n_quality >= 2) e = eco_engine_workload_set_quality_tokens(wl, qtokens, n_quality, quality_name);
    if (e) { fprintf(stderr, "eco measure: %s\n", eco_last_error()); goto done; }
    {
        /* --iterations: at least that many generations in every window. */
        eco_workload iface = eco_engine_workload_iface(wl);
        o.min_generations = (int)iterations;
        if ((e = eco_measure_run(&o, &iface, meter, &m))) { fprintf(stderr, "eco measure: %s\n", eco_last_error()); goto done; }
    }
    {
        char cuda_rt[256] = "";
        if (!strcmp(a.backend, "cuda") && eco_cuda_device_name) eco_cuda_device_name(cuda_rt, sizeof cuda_rt);
        char backend_name[64], design[2048] = ""; /* the schema's engine_design maxLength */
        snprintf(backend_name, sizeof backend_name, "%s%s", a.backend, a.reference_stack ? "-reference-stack" : "");
        if (!strcmp(a.backend, "cuda") && eco_cuda_design) eco_cuda_design(design, sizeof design);
        const char *notes[4] = {NULL};
        int nn = 0;
        if (meter && !strcmp(a.backend, "cpu"))
            notes[nn++] = "the energy meter measured a GPU while the workload ran on the CPU: a test of the harness, not a result";
        char synthetic_note[160];
        if (cfg->synthetic_checkpoint) {
            snprintf(synthetic_note, sizeof synthetic_note, "the checkpoint holds synthetic weights written by eco model save "
                     "(seed %llu): real shapes, random values; quality figures are not meaningful", (unsigned long long)cfg->synthetic_seed);
            notes[nn++] = synthetic_note;
        }
        eco_energy_meta meta = {.run_id = a.run_id, .started = started, .engine_backend = backend_name,
                                .cuda_runtime = cuda_rt[0] ? cuda_rt : NULL, .engine_design = design[0] ? design : NULL, .gpu = meter ? &card : NULL,
                                .gpu_arch = gpu_arch, .weights_source = a.weights_dir ? "checkpoint" : "synthetic",
                                .model = model_name, .checkpoint_sha256 = ck_sha[0] ? ck_sha : NULL,
                                .preset = preset ? preset->name : NULL,
                                .params_b = (double)eco_model_param_count(cfg) / 1e9, .synthetic_seed = a.weights_seed,
                                .int8_mixed_threshold = a.int8_threshold, .lm_head_quantized = a.quantize_lm_head,
                                .prompt_tokens = a.prompt_tokens, .energy_unavailable_reason = reason, .notes = notes};
        if ((e = eco_energy_json(m, &meta, &doc))) { fprintf(stderr, "eco measure: %s\n", eco_last_error()); goto done; }
    }
    {
        /* Validate what we publish (schema, then its figures against each other) before writing it; an invalid
         * document is still kept beside --out, so the measurement is not lost to a bug in its writer. */
        eco_schema_errors errs;
        eco_schema_errors_init(&errs);
        eco_err ve = eco_energy_validate(schema, doc, &errs);
        for (size_t i = 0; i < errs.count; i++)
            fprintf(stderr, "eco measure: energy.json invalid at %s: %s\n", errs.items[i].instance_path, errs.items[i].message);
        eco_schema_errors_free(&errs);
        if (ve) {
            char kept[PATH_MAX + 16];
            snprintf(kept, sizeof kept, "%s.invalid", a.out);
            if (!json_dump_file(doc, kept, JSON_INDENT(1) | JSON_REAL_PRECISION(10)))
                fprintf(stderr, "eco measure: the measurement is kept in %s (not a valid energy.json)\n", kept);
            goto done;
        }
    }
    {
        char *text = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(10)), *md = NULL;
        bool written = text && eco_write_atomically("eco measure", a.out, text, strlen(text));
        free(text);
        if (!written) goto done;
        if ((e = eco_energy_report_md(doc, &md))) { fprintf(stderr, "eco measure: %s\n", eco_last_error()); goto done; }
        written = eco_write_atomically("eco measure", a.report, md, strlen(md));
        if (written && !o.quiet) fputs(md, stdout);
        free(md);
        if (!written) { fprintf(stderr, "eco measure: %s is written; its report is not (eco report %s renders it)\n", a.out, a.out); goto done; }
    }
    if (!o.quiet) fprintf(stderr, "[done] wrote %s and %s\n", a.out, a.report);
    rc = 0;
done:
    eco_schema_free(schema);
    json_decref(doc);
    eco_measurement_free(m);
    eco_engine_workload_free(wl);
    free(prompt);
    free(qtokens);
    eco_nvml_close(meter);
    eco_weights_free(w);
    return rc;
}
