/* One measured comparison (a quantized precision against its same-session fp16 baseline), the unit
 * that flows from the store into the fit. Shared by store, fit and measure. Pure C. */
#ifndef ECO_RECORD_H
#define ECO_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "eco/err.h"
#include "eco/quant.h"

typedef enum {
    ECO_BASIS_UNKNOWN = 0,
    ECO_BASIS_GROSS, /* total board energy over the window (idle included) */
    ECO_BASIS_NET    /* idle power subtracted ("active" energy) */
} eco_energy_basis;

/* String sizes (bytes, with the NUL) that hold what a valid energy.json may carry: gpu.name up to 128 characters
 * and weights.model up to 256, of up to 4 UTF-8 bytes each; run_id up to 128 ASCII characters; a run's row source
 * is "<file>[@<run_id>]#<precision>". A longer string is refused on import, never cut: a cut id would merge two
 * runs. */
#define ECO_GPU_NAME_SIZE (4 * 128 + 1)
#define ECO_MODEL_NAME_SIZE (4 * 256 + 1)
#define ECO_SESSION_SIZE 129
#define ECO_SOURCE_SIZE 416

typedef enum { ECO_ORIGIN_REFERENCE = 0, ECO_ORIGIN_RUN, ECO_ORIGIN_REPLICATION } eco_record_origin;

typedef struct {
    /* what was measured */
    char gpu[ECO_GPU_NAME_SIZE]; /* card as named by the source, e.g. "RTX 4090" */
    char arch[16];     /* class the curves are fitted per: turing, ampere, ada, hopper, blackwell */
    double vram_gb;
    char model[ECO_MODEL_NAME_SIZE];
    double params_b;   /* nominal size, billions */
    eco_precision precision; /* the quantized precision (never fp16) */
    int batch;

    /* energy, mJ per generated token (= J per 1k tokens) */
    double e_fp16_mj, e_quant_mj;
    double e_fp16_sd_mj, e_quant_sd_mj; /* NAN when the source gave none */
    double cv_pct;                      /* CV of the quantized energy across trials/iterations; NAN if unknown */
    int n_trials;                       /* independent repeated trials: the n the fit and the site show */
    int n_iterations;                   /* decode iterations per trial; 0 if unknown */

    /* protocol: rows with different protocols are never pooled silently */
    int tokens;                /* generated tokens per iteration (256, 512); 0 = unknown */
    eco_energy_basis basis;
    char method[32];           /* "nvml-energy-counter", "nvml-power-poll", "avg-power/throughput", "unknown" */
    char backend[96];          /* e.g. "bitsandbytes 0.43.3; transformers 4.57.6", "eco 0.1.0 cuda" */

    /* provenance */
    eco_record_origin origin;
    char session[ECO_SESSION_SIZE]; /* rows of one session share an fp16 baseline and a machine */
    char source[ECO_SOURCE_SIZE]; /* "measured.csv:7", a run id or a replication file */
    bool synthetic_weights;    /* weights were synthetic (real shapes, random values) */
    bool single_trial;         /* n_trials < 2 */
    char note[1280]; /* a run's note carries the engine design string, up to 1024 characters */
    char flags[160];           /* space-separated: a reference row's "fp16-back-derived", a run's "throttled
                                * fp16:throttled" (eco_energy_record_flags); "" when none */
} eco_record;

/* A run's note names its engine's kernel design after this mark (eco measure's software.engine_design). */
#define ECO_RECORD_DESIGN_MARK "; kernels: "
/* A short id of that design: 8 hex digits of a hash of the text after the mark, "" when the note names none. Two
 * records with the same id ran the same described design (the text names the kernels and their rules, not the
 * build: energy.json's software.build tells builds apart). */
void eco_record_design_id(const eco_record *r, char out[9]);

/* (E_quant - E_fp16) / E_fp16 * 100; negative = quantization saves energy. */
double eco_record_delta_pct(const eco_record *r);
/* Protocol identity used to refuse silent pooling, e.g. "tok256/gross/nvml-power-poll". */
void eco_record_protocol_key(const eco_record *r, char *buf, size_t cap);
const char *eco_energy_basis_name(eco_energy_basis b); /* "gross", "net", "unknown" */
const char *eco_record_origin_name(eco_record_origin o); /* "reference", "run", "replication" */
/* Checks ranges (positive energies, params, n >= 1, known arch). */
eco_err eco_record_check(const eco_record *r);

/* GPU architecture classes and card-name mapping ("NVIDIA H200" -> hopper, "RTX 4090D" -> ada, "A800" -> ampere).
 * ECO_ENOTFOUND with a message listing the classes when the card is not recognised. */
eco_err eco_arch_from_gpu_name(const char *gpu, const char **arch_out);
/* A card no class of the curves holds, named as such: another vendor's (AMD Instinct or Radeon, Intel) or an NVIDIA
 * generation before Turing (Volta V100, Pascal P100/P40, Kepler K80). NULL for any other name: one the curves know
 * or a new card, which may state its class. A document from such a card would otherwise be filed under the class it
 * claims (an MI300X as hopper). */
const char *eco_gpu_name_outside_classes(const char *gpu);
/* Whether a normalised GPU name continues here with a memory size ("80gb" in "h10080gbhbm3", as nvidia-smi
 * prints "NVIDIA H100 80GB HBM3"), not with more digits of another model number. */
bool eco_gpu_name_memory_at(const char *s);
bool eco_arch_is_known(const char *arch);
size_t eco_arch_count(void);
const char *eco_arch_at(size_t i);        /* "turing", "ampere", "ada", "hopper", "blackwell" */
const char *eco_arch_label(const char *arch); /* "Ada (RTX 4090/4090D)" */

#endif
