/* GPU hardware table and the precision x batch optimizer. Every candidate field carries its basis: ΔE from the
 * estimator's label, VRAM and latency "modelled" (byte accounting and a bandwidth/compute roofline). */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "eco/fit.h"

#define BW_EFFICIENCY 0.70      /* achievable fraction of datasheet bandwidth */
#define COMPUTE_EFFICIENCY 0.30 /* achievable fraction of dense fp16 tensor throughput in decode */
#define OVERHEAD_GIB 0.8        /* CUDA context, allocator slack, activations at small batch */
#define OVERHEAD_FRAC 0.05

static const eco_gpu_spec gpus[] = {
    {"T4", "turing", 16, 320, 65, 70, "NVIDIA T4 datasheet"},
    {"A10", "ampere", 24, 600, 125, 150, "NVIDIA A10 datasheet"},
    {"RTX 3090", "ampere", 24, 936, 71, 350, "NVIDIA Ampere GA102 whitepaper (fp32 accumulate)"},
    {"A100 40GB", "ampere", 40, 1555, 312, 400, "NVIDIA A100 datasheet"},
    {"A100 80GB", "ampere", 80, 2039, 312, 400, "NVIDIA A100 80GB SXM datasheet"},
    {"A800", "ampere", 80, 2039, 312, 400, "NVIDIA A800 80GB SXM datasheet"},
    {"RTX 4090", "ada", 24, 1008, 165, 450, "NVIDIA Ada whitepaper (fp32 accumulate)"},
    {"RTX 4090D", "ada", 24, 1008, 147, 425, "RTX 4090 figures scaled by SM count (114/128)"},
    {"L4", "ada", 24, 300, 121, 72, "NVIDIA L4 datasheet"},
    {"L40S", "ada", 48, 864, 362, 350, "NVIDIA L40S datasheet"},
    {"H100 PCIe", "hopper", 80, 2000, 756, 350, "NVIDIA H100 datasheet"},
    {"H100 SXM", "hopper", 80, 3350, 989, 700, "NVIDIA H100 datasheet"},
    {"H200", "hopper", 141, 4800, 989, 700, "NVIDIA H200 datasheet"},
    {"RTX 5090", "blackwell", 32, 1792, 209, 575, "NVIDIA Blackwell GB202 whitepaper (fp32 accumulate)"},
    /* cards the arch table names, so their own memory bounds the optimizer rather than a datacenter reference card's:
     * memory, bandwidth and board power from the datasheets; fp16 tensor (fp32 accumulate, half rate on GeForce)
     * scaled from the whitepaper card of the generation by SMs x boost clock where no datasheet gives it */
    {"RTX 3060", "ampere", 12, 360, 25.6, 170, "GeForce RTX 3060 specs; fp16 from the GA102 whitepaper by SMs x clock"},
    {"RTX 3070", "ampere", 8, 448, 40.6, 220, "GeForce RTX 3070 specs; fp16 from the GA102 whitepaper by SMs x clock"},
    {"RTX 3050", "ampere", 8, 224, 18.2, 130, "GeForce RTX 3050 specs; fp16 from the GA102 whitepaper by SMs x clock"},
    {"RTX 2060", "turing", 6, 336, 25.8, 160, "GeForce RTX 2060 specs; fp16 from the Turing whitepaper by SMs x clock"},
    {"RTX 2070", "turing", 8, 448, 29.9, 175, "GeForce RTX 2070 specs; fp16 from the Turing whitepaper by SMs x clock"},
    {"RTX A4000", "ampere", 16, 448, 76.7, 140, "NVIDIA RTX A4000 datasheet"},
    {"A2", "ampere", 16, 200, 18, 60, "NVIDIA A2 datasheet"},
    {"Quadro RTX 4000", "turing", 8, 416, 57, 160, "NVIDIA Quadro RTX 4000 datasheet"},
    /* the rest of the GeForce RTX line-ups and the datacenter Ampere/Ada cards: a GeForce card outside the table had
     * stood in as its architecture's datacenter reference (an RTX 3080 as an 80 GB A100) */
    {"RTX 3080", "ampere", 10, 760, 59.4, 320, "GeForce RTX 3080 specs; fp16 from the GA102 whitepaper by SMs x clock"},
    {"RTX 3080 Ti", "ampere", 12, 912, 68.0, 350, "GeForce RTX 3080 Ti specs; fp16 from the GA102 whitepaper by SMs x clock"},
    {"RTX 3090 Ti", "ampere", 24, 1008, 79.8, 450, "GeForce RTX 3090 Ti specs; fp16 from the GA102 whitepaper by SMs x clock"},
    {"RTX 2080", "turing", 8, 448, 40.3, 215, "GeForce RTX 2080 specs; fp16 from the Turing whitepaper by SMs x clock"},
    {"RTX 2080 Ti", "turing", 11, 616, 53.9, 250, "GeForce RTX 2080 Ti specs; fp16 from the Turing whitepaper by SMs x clock"},
    {"RTX 4080", "ada", 16, 716.8, 97.4, 320, "GeForce RTX 4080 specs; fp16 from the Ada whitepaper by SMs x clock"},
    {"RTX 4080 SUPER", "ada", 16, 736, 104.4, 320, "GeForce RTX 4080 SUPER specs; fp16 from the Ada whitepaper by SMs x clock"},
    {"RTX 4070 Ti", "ada", 12, 504, 80.1, 285, "GeForce RTX 4070 Ti specs; fp16 from the Ada whitepaper by SMs x clock"},
    {"RTX 4070", "ada", 12, 504, 58.2, 200, "GeForce RTX 4070 specs; fp16 from the Ada whitepaper by SMs x clock"},
    {"RTX 4060 Ti", "ada", 8, 288, 44.1, 160, "GeForce RTX 4060 Ti (8 GB) specs; fp16 from the Ada whitepaper by SMs x clock"},
    {"RTX 4060", "ada", 8, 272, 30.2, 115, "GeForce RTX 4060 specs; fp16 from the Ada whitepaper by SMs x clock"},
    {"RTX 5080", "blackwell", 16, 960, 112.3, 360, "GeForce RTX 5080 specs; fp16 from the GB202 whitepaper by SMs x clock"},
    {"RTX 5070 Ti", "blackwell", 16, 896, 87.5, 300, "GeForce RTX 5070 Ti specs; fp16 from the GB202 whitepaper by SMs x clock"},
    {"RTX 5070", "blackwell", 12, 672, 61.5, 250, "GeForce RTX 5070 specs; fp16 from the GB202 whitepaper by SMs x clock"},
    {"RTX 5060 Ti", "blackwell", 8, 448, 47.2, 180, "GeForce RTX 5060 Ti (8 GB) specs; fp16 from the GB202 whitepaper by SMs x clock"},
    {"RTX 5060", "blackwell", 8, 448, 38.3, 145, "GeForce RTX 5060 specs; fp16 from the GB202 whitepaper by SMs x clock"},
    {"A40", "ampere", 48, 696, 149.7, 300, "NVIDIA A40 datasheet"},
    {"A30", "ampere", 24, 933, 165, 165, "NVIDIA A30 datasheet"},
    {"L40", "ada", 48, 864, 181, 300, "NVIDIA L40 datasheet"},
};
static const struct { const char *alias; size_t idx; } gpu_alias[] = {
    {"t4", 0},         {"teslat4", 0},   {"a10", 1},        {"a10g", 1},       {"rtx3090", 2},   {"3090", 2},
    {"a10040gb", 3},   {"a100pcie40gb", 3}, {"a100sxm440gb", 3}, {"a100", 4},   {"a10080gb", 4},  {"a100sxm480gb", 4},
    {"a800", 5},       {"a80080gb", 5},  {"a800sxm480gb", 5}, {"rtx4090", 6},   {"4090", 6},      {"rtx4090d", 7},
    {"4090d", 7},      {"l4", 8},        {"l40s", 9},       {"h100pcie", 10},  {"h100", 11},     {"h100sxm", 11},
    {"h100sxm580gb", 11}, {"h200", 12},  {"h200sxm", 12},   {"rtx5090", 13},  {"5090", 13},
    {"rtx3060", 14},   {"3060", 14},     {"rtx3070", 15},   {"3070", 15},      {"rtx3050", 16},  {"3050", 16},
    {"rtx2060", 17},   {"2060", 17},     {"rtx2070", 18},   {"2070", 18},      {"rtxa4000", 19}, {"a4000", 19},
    {"a2", 20},        {"quadrortx4000", 21},
    {"rtx3080", 22},   {"3080", 22},     {"rtx3080ti", 23}, {"3080ti", 23},    {"rtx3090ti", 24}, {"3090ti", 24},
    {"rtx2080", 25},   {"2080", 25},     {"rtx2080ti", 26}, {"2080ti", 26},    {"rtx4080", 27},  {"4080", 27},
    {"rtx4080super", 28}, {"4080super", 28}, {"rtx4070ti", 29}, {"4070ti", 29}, {"rtx4070", 30},  {"4070", 30},
    {"rtx4060ti", 31}, {"4060ti", 31},   {"rtx4060", 32},   {"4060", 32},      {"rtx5080", 33},  {"5080", 33},
    {"rtx5070ti", 34}, {"5070ti", 34},   {"rtx5070", 35},   {"5070", 35},      {"rtx5060ti", 36}, {"5060ti", 36},
    {"rtx5060", 37},   {"5060", 37},     {"a40", 38},       {"a30", 39},       {"l40", 40},
};
/* Cards the table does not hold whose closest table card is not their architecture's reference card */
static const struct { const char *prefix; size_t idx; } closest[] = {
    {"gh200", 12}, /* Grace Hopper: H200-class HBM (96 GB HBM3 or 144 GB HBM3e), not the H100 SXM */
};
static const struct { const char *arch; size_t idx; } arch_ref[] = {
    {"turing", 0}, {"ampere", 4}, {"ada", 6}, {"hopper", 11}, {"blackwell", 13},
};

size_t eco_gpu_count(void) { return sizeof gpus / sizeof gpus[0]; }
const eco_gpu_spec *eco_gpu_at(size_t i) { return i < eco_gpu_count() ? &gpus[i] : NULL; }

static void normalise(const char *in, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && j + 1 < cap; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (isalnum(ch)) out[j++] = (char)tolower(ch);
    }
    out[j] = '\0';
    static const char *const vendor[] = {"nvidia", "geforce", "tesla"};
    for (int again = 1; again;) {
        again = 0;
        for (size_t v = 0; v < 3; v++) {
            size_t l = strlen(vendor[v]);
            if (!strncmp(out, vendor[v], l) && out[l]) { memmove(out, out + l, strlen(out + l) + 1); again = 1; }
        }
    }
}

/* Whether what follows a card's name only says its form factor or memory ("sxm5", "pcie", "141gb", "hbm3e"): not
 * another card ("ti", "nvl", "d"), nor another memory size than the card's ("RTX 3050 6GB" is not the 8 GB one). */
static bool only_form_and_memory(const char *rest, double vram_gb)
{
    while (*rest) {
        if (!strncmp(rest, "sxm", 3)) {
            rest += 3;
            if (isdigit((unsigned char)*rest)) rest++; /* its version: sxm4, sxm5 */
        } else if (!strncmp(rest, "pcie", 4)) {
            rest += 4;
        } else if (!strncmp(rest, "hbm", 3) || !strncmp(rest, "gddr", 4)) { /* memory type: hbm3, hbm3e, gddr6x */
            rest += rest[0] == 'h' ? 3 : 4;
            while (isdigit((unsigned char)*rest)) rest++;
            if (*rest == 'e' || *rest == 'x') rest++;
        } else if (isdigit((unsigned char)*rest)) { /* a memory size */
            char *end;
            double size = strtod(rest, &end); /* digits only here: no sign, no exponent reaches strtod's reading */
            rest = end;
            if (!strncmp(rest, "gb", 2)) {
                rest += 2;
                if (fabs(size - vram_gb) > 0.5) return false;
            } else if (*rest && strncmp(rest, "sxm", 3) && strncmp(rest, "pcie", 4) && strncmp(rest, "hbm", 3) && strncmp(rest, "gddr", 4)) {
                return false;
            }
        } else {
            return false;
        }
    }
    return true;
}

/* A GeForce RTX model number ("rtx4050..." -> 4050), or 0: a tier x050..x090, followed by nothing or by what a
 * GeForce name adds (Ti, SUPER, D, Laptop/Mobile, Max-Q). "RTX 4000 Ada Generation" is a workstation card, not a
 * GeForce one (its memory is not a 4060's). */
static int geforce_number(const char *normalised)
{
    if (strncmp(normalised, "rtx", 3)) return 0;
    const char *d = normalised + 3;
    for (int k = 0; k < 4; k++)
        if (!isdigit((unsigned char)d[k])) return 0;
    int tier = (d[2] - '0') * 10 + (d[3] - '0');
    if (tier < 50 || tier > 90 || tier % 10) return 0;
    static const char *const suffixes[] = {"", "ti", "super", "tisuper", "d", "laptop", "laptopgpu", "mobile", "maxq"};
    bool geforce = false;
    for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0] && !geforce; k++) geforce = !strcmp(d + 4, suffixes[k]);
    if (!geforce) return 0;
    return (d[0] - '0') * 1000 + (d[1] - '0') * 100 + tier;
}

/* The table's GeForce card of this architecture with the nearest model number (the lower on a tie), for a
 * GeForce name the table lacks; NULL for other names. */
static const eco_gpu_spec *nearest_geforce(const char *normalised, const char *arch)
{
    int want = geforce_number(normalised), best_gap = INT_MAX, best_number = 0;
    const eco_gpu_spec *best = NULL;
    if (!want) return NULL;
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        char n[64];
        normalise(gpus[i].name, n, sizeof n);
        int have = geforce_number(n);
        if (!have || strcmp(gpus[i].arch, arch)) continue;
        int gap = abs(have - want);
        /* on a tie the lower number, then the smaller memory and board power (a 5070 before a 5070 Ti): the budget
         * of the lesser card */
        bool better = gap < best_gap;
        if (gap == best_gap && best)
            better = have != best_number ? have < best_number
                     : gpus[i].vram_gb != best->vram_gb ? gpus[i].vram_gb < best->vram_gb
                                                         : gpus[i].board_power_w < best->board_power_w;
        if (better) best_gap = gap, best_number = have, best = &gpus[i];
    }
    return best;
}

eco_err eco_gpu_find(const char *name, const eco_gpu_spec **out, bool *exact)
{
    char n[128];
    if (!name || !*name) return eco_fail_field(ECO_EINVAL, "gpu", "gpu is empty");
    normalise(name, n, sizeof n);
    if (exact) *exact = true;
    for (size_t i = 0; i < sizeof gpu_alias / sizeof gpu_alias[0]; i++)
        if (!strcmp(n, gpu_alias[i].alias)) { *out = &gpus[gpu_alias[i].idx]; return ECO_OK; }
    /* longest alias that prefixes the name ("a100sxm4" -> a100, not a10) */
    size_t best = SIZE_MAX, blen = 0;
    for (size_t i = 0; i < sizeof gpu_alias / sizeof gpu_alias[0]; i++) {
        size_t l = strlen(gpu_alias[i].alias);
        if (l > blen && !strncmp(n, gpu_alias[i].alias, l) &&
            (!isdigit((unsigned char)n[l]) || !isdigit((unsigned char)n[l - 1]) || eco_gpu_name_memory_at(n + l))) {
            best = i; blen = l;
        }
    }
    if (best != SIZE_MAX) { /* "H100 NVL" -> H100 SXM: the closest card of the table, not that card */
        *out = &gpus[gpu_alias[best].idx];
        /* "H200 SXM 141GB" is the H200; after an alias ending in "sxm" a digit may be its version ("5141gb") */
        const char *rest = n + blen;
        bool version = blen >= 3 && !strncmp(rest - 3, "sxm", 3) && isdigit((unsigned char)*rest);
        if (exact)
            *exact = only_form_and_memory(rest, (*out)->vram_gb) || (version && only_form_and_memory(rest + 1, (*out)->vram_gb));
        return ECO_OK;
    }
    for (size_t i = 0; i < sizeof closest / sizeof closest[0]; i++)
        if (!strncmp(n, closest[i].prefix, strlen(closest[i].prefix))) {
            *out = &gpus[closest[i].idx];
            if (exact) *exact = false;
            return ECO_OK;
        }
    const char *arch;
    if (eco_arch_from_gpu_name(name, &arch) == ECO_OK) {
        const eco_gpu_spec *geforce = nearest_geforce(n, arch);
        if (geforce) { /* a GeForce card the table lacks ("RTX 4050"): the nearest model number, not a datacenter card */
            *out = geforce;
            if (exact) *exact = false;
            return ECO_OK;
        }
        for (size_t i = 0; i < sizeof arch_ref / sizeof arch_ref[0]; i++)
            if (!strcmp(arch_ref[i].arch, arch)) {
                *out = &gpus[arch_ref[i].idx];
                if (exact) *exact = false;
                return ECO_OK;
            }
    }
    char list[1024];
    size_t len = 0;
    for (size_t i = 0; i < eco_gpu_count() && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", gpus[i].name);
    return eco_fail_field(ECO_ENOTFOUND, "gpu",
                          "unknown GPU '%s'; supported cards: %s; or an architecture: turing, ampere, ada, hopper, blackwell",
                          name, list);
}

const eco_gpu_spec *eco_gpu_exact(const char *name)
{
    const eco_gpu_spec *g;
    bool exact = false;
    if (!name || eco_gpu_find(name, &g, &exact) != ECO_OK || !exact) g = NULL;
    eco_clear_error();
    return g;
}

double eco_decode_tokens_per_s_ceiling(const eco_gpu_spec *gpu, const eco_model_config *preset, eco_precision p, int batch)
{
    if (!gpu || !preset || batch < 1 || gpu->mem_bw_gbps <= 0) return 0;
    double bytes = (double)eco_model_bytes_per_token(preset, p, 0, true);
    if (!(bytes >= 2 * ECO_L2_MAX_BYTES)) return 0;
    return batch * gpu->mem_bw_gbps * 1e9 * ECO_TPS_CEILING_SLACK / (bytes - ECO_L2_MAX_BYTES);
}

bool eco_gpu_is_arch_name(const char *gpu)
{
    for (size_t i = 0; gpu && i < eco_arch_count(); i++)
        if (!strcasecmp(gpu, eco_arch_at(i))) return true;
    return false;
}

eco_err eco_gpu_resolve_arch(const char *gpu, const char **arch)
{
    eco_err e = eco_arch_from_gpu_name(gpu, arch);
    if (!e) return ECO_OK;
    const eco_gpu_spec *g;
    if (eco_gpu_find(gpu, &g, NULL) == ECO_OK) { *arch = g->arch; eco_clear_error(); return ECO_OK; }
    return e; /* eco_gpu_find's message lists the supported cards */
}

eco_err eco_resolve_model_size(const char *model, bool has_params_b, double params_b, double *params_b_out,
                               const eco_model_config **preset)
{
    *preset = NULL;
    if (model) {
        *preset = eco_preset_find(model);
        if (!*preset && !has_params_b) {
            char list[512];
            size_t len = 0;
            for (size_t i = 0; i < eco_preset_count() && len < sizeof list; i++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", eco_preset_at(i)->name);
            return eco_fail_field(ECO_ENOTFOUND, "model", "unknown model '%s'; presets: %s (or give params_b)", model, list);
        }
    }
    if (has_params_b) {
        double v = params_b;
        if (!(v > 0)) return eco_fail_field(ECO_EINVAL, "params_b", "params_b must be > 0, got %g", v);
        if (v >= ECO_PARAMS_COUNT_MIN) v /= 1e9;
        else if (v > ECO_PARAMS_B_MAX)
            return eco_fail_field(ECO_EINVAL, "params_b", "params_b %g is neither billions (<= %g) nor a parameter count (>= 1e6)",
                                  params_b, ECO_PARAMS_B_MAX);
        if (v > ECO_PARAMS_B_MAX)
            return eco_fail_field(ECO_EINVAL, "params_b", "params_b must be <= %g billion, got %g", ECO_PARAMS_B_MAX, v);
        if (v < ECO_PARAMS_B_MIN)
            return eco_fail_field(ECO_EINVAL, "params_b", "params_b must be >= %g billion (a million parameters), got %g",
                                  ECO_PARAMS_B_MIN, v);
        *params_b_out = v;
        return ECO_OK;
    }
    if (*preset) { *params_b_out = (double)eco_model_param_count(*preset) / 1e9; return ECO_OK; }
    return eco_fail_field(ECO_EINVAL, "params_b", "give the model size: params_b (e.g. 7 or 7e9) or model (a preset name)");
}

const char *eco_objective_name(eco_objective o)
{
    return o == ECO_OBJ_ENERGY ? "energy" : o == ECO_OBJ_LATENCY ? "latency" : "balanced";
}

eco_err eco_objective_parse(const char *s, eco_objective *out)
{
    for (int o = 0; o <= ECO_OBJ_BALANCED; o++)
        if (s && !strcmp(s, eco_objective_name((eco_objective)o))) { *out = (eco_objective)o; return ECO_OK; }
    return eco_fail_field(ECO_EINVAL, "objective", "unknown objective '%s' (energy, latency, balanced)", s ? s : "");
}

__attribute__((format(printf, 2, 3))) static void onote(eco_optimize_result *r, const char *fmt, ...)
{
    if (r->n_notes >= ECO_EST_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes[r->n_notes], sizeof r->notes[0], fmt, ap);
    va_end(ap);
    eco_utf8_cut_partial(r->notes[r->n_notes++]); /* a 200-character name can fill the note */
}

/* KV bytes per cached position per billion parameters: median over the presets (used without a preset). */
double eco_kv_bytes_per_position_per_b(void)
{
    double v[32];
    size_t n = 0;
    for (size_t i = 0; i < eco_preset_count() && n < 32; i++) {
        const eco_model_config *c = eco_preset_at(i);
        v[n++] = (double)eco_model_kv_bytes_per_position(c) / ((double)eco_model_param_count(c) / 1e9);
    }
    for (size_t i = 1; i < n; i++) { /* insertion sort, then median */
        double t = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1] > t) { v[j] = v[j - 1]; j--; }
        v[j] = t;
    }
    return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0;
}

static int cmp_cand(const eco_candidate *a, const eco_candidate *b)
{
    if (a->score != b->score) return a->score < b->score ? -1 : 1;
    double ea = isfinite(a->energy_mj) ? a->energy_mj : a->energy_rel_fp16, eb = isfinite(b->energy_mj) ? b->energy_mj : b->energy_rel_fp16;
    if (ea != eb) return ea < eb ? -1 : 1;
    if (a->vram_gb != b->vram_gb) return a->vram_gb < b->vram_gb ? -1 : 1;
    if (a->latency_ms != b->latency_ms) return a->latency_ms < b->latency_ms ? -1 : 1;
    if (a->precision != b->precision) return a->precision < b->precision ? -1 : 1;
    return (a->batch > b->batch) - (a->batch < b->batch);
}

/* The energy a candidate is ranked by: absolute mJ/token where the arch has an fp16 baseline, else relative. */
static double cand_energy(const eco_optimize_result *r, const eco_candidate *c)
{
    return r->energy_absolute ? c->energy_mj : c->energy_rel_fp16;
}

/* Energy at the top of a candidate's ΔE range over its point value. */
static double range_top_factor(const eco_candidate *c) { return (1 + c->delta_hi_pct / 100) / (1 + c->delta_pct / 100); }

/* The same for a borrowed (proxy) ΔE; 1 for a ΔE of this architecture's own data. A guess is weighed at its
 * pessimistic end wherever it could displace a measurement or buy speed. */
static double proxy_top_factor(const eco_candidate *c) { return c->borrowed ? range_top_factor(c) : 1; }

double eco_vram_needed_gib(double weight_bytes, double kv_bytes)
{
    return (weight_bytes + kv_bytes) / ECO_GIB + OVERHEAD_GIB + OVERHEAD_FRAC * weight_bytes / ECO_GIB;
}

void eco_optimize_note_request(eco_optimize_result *r, const char *gpu_asked, const eco_gpu_spec *gpu, bool exact,
                               bool vram_given, const eco_model_config *overridden, double params_b)
{
    if (overridden)
        onote(r, "params_b %.3gB is used, not %s's %.3gB: its shapes (bytes, KV cache) are not", params_b, overridden->name,
              (double)eco_model_param_count(overridden) / 1e9);
    if (!exact) {
        size_t before = r->n_notes;
        onote(r, "'%s' is not in the hardware table: the %s card %s stands in (its %.0f GB VRAM, bandwidth and power%s)",
              gpu_asked, gpu->arch, gpu->name, gpu->vram_gb, vram_given ? "" : "; give max_vram_gb for this card's memory");
        /* first: every feasibility and latency below rests on another card's figures */
        if (r->n_notes == before || before == 0) return;
        char first[ECO_EST_NOTE_BYTES];
        memcpy(first, r->notes[r->n_notes - 1], sizeof first);
        memmove(r->notes[1], r->notes[0], before * sizeof r->notes[0]);
        memcpy(r->notes[0], first, sizeof first);
    }
}

/* The step energy factor of batch b kept from falling as b grows: the largest f(k)·k over k = 1, 2, 4, ... up to
 * b (and b itself), f being eco_batch_energy_factor. */
static double step_energy_floor(int b)
{
    double most = eco_batch_energy_factor(b) * b;
    for (int k = 1; k < b; k *= 2) most = fmax(most, eco_batch_energy_factor(k) * k);
    return most;
}

/* Front order: latency ascending, then energy ascending. */
static bool front_before(const eco_optimize_result *r, int a, int b)
{
    const eco_candidate *x = &r->cand[a], *y = &r->cand[b];
    if (x->latency_ms != y->latency_ms) return x->latency_ms < y->latency_ms;
    return cand_energy(r, x) < cand_energy(r, y);
}

/* The trade-off a single recommendation hides: every feasible config that no other feasible config matches or
 * beats on both energy and latency (ties on both keep both). */
static void pareto_front(eco_optimize_result *r)
{
    r->n_pareto = 0;
    for (size_t i = 0; i < r->n; i++) {
        const eco_candidate *c = &r->cand[i];
        if (!c->feasible) continue;
        double ei = cand_energy(r, c);
        bool dominated = false;
        for (size_t j = 0; j < r->n && !dominated; j++) {
            const eco_candidate *o = &r->cand[j];
            if (j == i || !o->feasible) continue;
            double ej = cand_energy(r, o);
            /* a borrowed (proxy) ΔE dominates a candidate of this architecture's own data only at the top of its range */
            if (!c->borrowed) ej *= proxy_top_factor(o);
            dominated = ej <= ei && o->latency_ms <= c->latency_ms && (ej < ei || o->latency_ms < c->latency_ms);
        }
        if (dominated) continue;
        size_t at = r->n_pareto++; /* insertion: at most ECO_OPT_MAX_CANDIDATES, and no shared state (the server is threaded) */
        for (; at > 0 && front_before(r, (int)i, r->pareto[at - 1]); at--) r->pareto[at] = r->pareto[at - 1];
        r->pareto[at] = (int)i;
    }
}

static bool own_data(const eco_candidate *c) { return !c->borrowed; }
static bool own_sure_saving(const eco_candidate *c)
{
    return !c->borrowed && c->precision != ECO_PREC_FP16 && c->delta_hi_pct < 0;
}

/* The best feasible candidate `firmer` accepts, where the recommendation does not beat it at the top of its own ΔE
 * range (a guess or an uncertain saving wins only if it wins even there); -1 where the recommendation stands. */
static int firmer_alternative(const eco_optimize_result *r, const eco_optimize_query *q, bool (*firmer)(const eco_candidate *))
{
    int alt = -1;
    for (size_t i = 0; i < r->n; i++)
        if (r->cand[i].feasible && firmer(&r->cand[i]) && (alt < 0 || cmp_cand(&r->cand[i], &r->cand[alt]) < 0)) alt = (int)i;
    if (alt < 0 || alt == r->best) return -1;
    double f = range_top_factor(&r->cand[r->best]);
    double pessimistic = r->cand[r->best].score * (q->objective == ECO_OBJ_ENERGY ? f : sqrt(f));
    return pessimistic < r->cand[alt].score ? -1 : alt;
}

eco_err eco_optimize_run(const eco_curve_set *set, const eco_optimize_query *q, eco_optimize_result *r)
{
    memset(r, 0, sizeof *r);
    r->best = r->closest_infeasible = -1;
    if (!q->gpu) return eco_fail_field(ECO_EINVAL, "gpu", "gpu is required");
    double N = q->preset ? (double)eco_model_param_count(q->preset) / 1e9 : q->params_b;
    if (!(N > 0) || !isfinite(N)) return eco_fail_field(ECO_EINVAL, "params_b", "params_b must be a positive finite number");
    if (q->ctx < 1) return eco_fail_field(ECO_EINVAL, "ctx", "ctx must be >= 1, got %d", q->ctx);
    if (q->max_vram_gb < 0 || !isfinite(q->max_vram_gb)) return eco_fail_field(ECO_EINVAL, "max_vram_gb", "max_vram_gb must be >= 0");
    if (q->max_latency_ms < 0 || !isfinite(q->max_latency_ms)) return eco_fail_field(ECO_EINVAL, "max_latency_ms", "max_latency_ms must be >= 0");
    if (q->batch < 0 || q->batch > ECO_OPT_MAX_BATCH)
        return eco_fail_field(ECO_EINVAL, "batch", "batch must be 1..%d (or absent to sweep), got %d", ECO_OPT_MAX_BATCH, q->batch);
    const char *arch = q->gpu->arch;

    r->vram_budget_gb = q->max_vram_gb > 0 ? q->max_vram_gb : q->gpu->vram_gb;
    /* a card missing from the table borrows a reference card's figures, not its memory: its own is what was given */
    bool borrowed = q->card && eco_gpu_exact(q->card) != q->gpu;
    if (borrowed && q->max_vram_gb > q->gpu->vram_gb) {
        onote(r, "max_vram_gb %.1f is taken as the %s's memory (the %s it borrows figures from has %.0f GB)", q->max_vram_gb,
              q->card, q->gpu->name, q->gpu->vram_gb);
    } else if (r->vram_budget_gb > q->gpu->vram_gb) {
        onote(r, "max_vram_gb %.1f exceeds the %s's %.0f GB: the card's memory is the budget", q->max_vram_gb, q->gpu->name, q->gpu->vram_gb);
        r->vram_budget_gb = q->gpu->vram_gb;
    }
    eco_energy_value fp16e;
    const char *card = q->card; /* NULL: the architecture's baseline, as /v1/estimate answers it */
    const eco_fp16_baseline *fb = eco_curve_set_fp16_for(set, arch, card);
    r->energy_absolute = fb && eco_fp16_energy_on(fb, N, card, 1, &fp16e) == ECO_OK;
    eco_clear_error();
    /* The power bound: the energy of a step over the board's limit. Where the energy is another card's (carried over,
     * estimated), at the low end of its range: a bound that holds though that card's figure may not (an A100 had
     * been ranked first for latency at 370 tokens/s of 4.8 J each, 1.8 kW on a 400 W board). */
    bool power_bound = r->energy_absolute && q->gpu->board_power_w > 0;
    bool own_card_energy = power_bound && eco_fp16_baseline_has_card(fb, N, card ? card : q->gpu->name);
    double bound_share = own_card_energy || !(fp16e.value_mj > 0) ? 1 : fp16e.lo_mj / fp16e.value_mj;
    size_t power_bounded = 0, over_power = 0, long_ctx = 0;
    if (!r->energy_absolute) onote(r, "no fp16 baseline on %s: energy is relative to fp16 at batch 1 only", arch);

    /* the model's bytes as /v1/estimate counts them (exact for a preset, else per parameter) */
    eco_estimate_query bytes = {.precision = ECO_PREC_FP16, .params_b = N};
    eco_estimate_query_model_bytes(&bytes, q->preset);
    double kv_pos = bytes.kv_bytes_per_position, fp16_rbytes = bytes.fp16_bytes_per_token;
    double kv1 = eco_kv_share_beyond_measured(q->ctx, 1, kv_pos, fp16_rbytes); /* the fp16 batch-1 step's KV share */
    if (!q->preset) onote(r, "no model preset: weights from params x bits, KV cache from the presets' median KV bytes per parameter");
    onote(r, "latency is a roofline (%.0f%% of datasheet bandwidth, %.0f%% of fp16 tensor throughput, no dequantization or "
             "kernel-launch cost): HF eager bitsandbytes decode measured 4-5x slower", BW_EFFICIENCY * 100, COMPUTE_EFFICIENCY * 100);
    onote(r, "energy vs batch: the measured A800 Mistral-7B pure-INT8 sweep (batch 1-64), borrowed for other precisions and archs");

    static const int sweep[ECO_OPT_BATCHES] = {1, 2, 4, 8, 16, 32, 64};
    const int *batches = q->batch > 0 ? &q->batch : sweep;
    int n_batches = q->batch > 0 ? 1 : ECO_OPT_BATCHES;
    if (q->batch > 0) onote(r, "batch pinned to %d: only precisions are compared", q->batch);
    for (int p = 0; p < ECO_PREC_COUNT; p++) {
        eco_estimate est;
        bool proxy_delta = false, composed = false;
        /* ΔE at the measurements' short context (0, measured, for fp16 against itself), rescaled per batch below */
        double d_short = 0, d_short_lo = 0, d_short_hi = 0;
        eco_label d_short_label = ECO_LABEL_MEASURED;
        if (p != ECO_PREC_FP16) {
            eco_estimate_query eq = {.arch = arch, .precision = (eco_precision)p, .params_b = N, .model = q->model, .batch = 1,
                                     .card = card, .ctx = q->ctx};
            eco_estimate_query_model_bytes(&eq, q->preset);
            if (eco_estimate_run(set, &eq, &est) != ECO_OK) { eco_clear_error(); continue; }
            d_short = est.short_delta_pct, d_short_lo = est.short_lo_pct, d_short_hi = est.short_hi_pct;
            d_short_label = est.short_label;
            proxy_delta = est.proxy_reason != NULL;
            composed = r->energy_absolute && eco_energy_composed(fb, est.curve);
        }
        double wbytes = q->preset ? (double)eco_model_weight_bytes(q->preset, (eco_precision)p, false)
                                  : N * 1e9 * eco_precision_bits_per_weight((eco_precision)p) / 8.0;
        double rbytes = q->preset ? (double)eco_model_bytes_per_token(q->preset, (eco_precision)p, 0, false) : wbytes;
        for (int bi = 0; bi < n_batches; bi++) {
            eco_candidate *c = &r->cand[r->n++];
            memset(c, 0, sizeof *c);
            int b = batches[bi];
            c->precision = (eco_precision)p;
            c->batch = b;
            double kv = kv_pos * (double)q->ctx * b;
            c->weights_gb = wbytes / ECO_GIB;
            c->kv_gb = kv / ECO_GIB;
            c->vram_gb = eco_vram_needed_gib(wbytes, kv);
            double t_mem = (rbytes + kv) / (q->gpu->mem_bw_gbps * 1e9 * BW_EFFICIENCY);
            double t_cmp = b * 2.0 * N * 1e9 / (q->gpu->fp16_tflops * 1e12 * COMPUTE_EFFICIENCY);
            double t = t_mem > t_cmp ? t_mem : t_cmp;
            c->bound = t_mem >= t_cmp ? "memory" : "compute";
            c->borrowed = proxy_delta;
            double f = eco_batch_energy_factor(b);
            c->batch_label = eco_batch_label(arch, card, (eco_precision)p, N, b);
            /* the KV energy both formats pay: fp16's at this batch times the step's KV share */
            double kv_step = eco_kv_share_beyond_measured(q->ctx, b, kv_pos, fp16_rbytes);
            /* ΔE as /v1/estimate answers it at this batch and context: the short-context figure over the step's KV share
             * (the estimator's own rescaling, with the same byte counts) */
            c->delta_pct = d_short, c->delta_lo_pct = d_short_lo, c->delta_hi_pct = d_short_hi, c->delta_label = d_short_label;
            if (p != ECO_PREC_FP16 && kv_step > ECO_KV_SHARE_MEASURED) {
                eco_delta_at_ctx(kv_step, &c->delta_pct, &c->delta_lo_pct, &c->delta_hi_pct);
                if (c->delta_label < ECO_LABEL_ESTIMATED) c->delta_label = ECO_LABEL_ESTIMATED;
            }
            c->energy_rel_fp16 = (1 + d_short / 100 + (kv_step > ECO_KV_SHARE_MEASURED ? kv_step : 0)) * f;
            c->energy_mj = r->energy_absolute ? fp16e.value_mj * c->energy_rel_fp16 : NAN;
            c->energy_label = c->delta_label > c->batch_label ? c->delta_label : c->batch_label;
            if (r->energy_absolute && fp16e.label > c->energy_label) c->energy_label = fp16e.label;
            if (composed && c->energy_label < ECO_LABEL_ESTIMATED) c->energy_label = ECO_LABEL_ESTIMATED;
            /* a step cannot draw more than the board allows: energy per step / power limit bounds it from below
             * (on the H200 the roofline alone gave Qwen2.5-7B nf4 689 tok/s at 1239 mJ a token, 854 W). A borrowed
             * (proxy) ΔE bounds it at the top of its range, so a guess cannot buy speed. */
            /* a step of b tokens takes at least the energy of a smaller batch's step: the borrowed sweep's per-token
             * factor falls faster than 1/b between some batches (32 below half of 16), which would make a larger
             * batch's step faster */
            double e_step = c->energy_mj / f * proxy_top_factor(c) * step_energy_floor(b); /* mJ a step */
            double t_pow = power_bound && isfinite(e_step) ? e_step * bound_share * 1e-3 / q->gpu->board_power_w : 0;
            if (t_pow > t) t = t_pow, c->bound = "power", power_bounded++;
            /* bounded at the low end, yet over the limit at the central energy: one of the two figures does not hold */
            if (!own_card_energy && t_pow < t && isfinite(c->energy_mj) && c->energy_mj * 1e-3 * b / t > q->gpu->board_power_w)
                over_power++;
            /* a long context reads KV bytes the short-context measurements did not */
            if (eco_kv_share_beyond_measured(q->ctx, b, kv_pos, rbytes) > ECO_KV_SHARE_MEASURED) {
                if (c->energy_label < ECO_LABEL_ESTIMATED) c->energy_label = ECO_LABEL_ESTIMATED;
                long_ctx++;
            }
            c->latency_ms = t * 1e3;
            c->throughput_tok_s = b / t;
            c->feasible = true;
            size_t len = 0;
            if (c->vram_gb > r->vram_budget_gb) {
                c->feasible = false;
                c->violation += c->vram_gb / r->vram_budget_gb - 1;
                len += (size_t)snprintf(c->reason + len, sizeof c->reason - len, "needs %.3g GB > VRAM budget %.3g GB",
                                        c->vram_gb, r->vram_budget_gb);
            }
            if (q->max_latency_ms > 0 && c->latency_ms > q->max_latency_ms) {
                c->feasible = false;
                c->violation += c->latency_ms / q->max_latency_ms - 1;
                snprintf(c->reason + len, sizeof c->reason - len, "%slatency %.4g ms > %.4g ms", len ? "; " : "",
                         c->latency_ms, q->max_latency_ms);
            }
        }
    }
    if (r->n == 0) return eco_fail(ECO_EUNSUPPORTED, "no candidate configurations for %s", arch);
    if (over_power)
        onote(r, "%zu of %zu configurations imply more power than the %s's %.0f W at their central energy (carried over from "
                 "the measured card, speed modelled here): one of the two does not hold on this card", over_power, r->n,
              q->gpu->name, q->gpu->board_power_w);
    if (long_ctx)
        onote(r, "at ctx %d the KV cache adds over %.0f%% to a step's bytes in %zu configurations, beyond the short-context "
                 "measurements: their energy is estimated", q->ctx, 100 * ECO_KV_SHARE_MEASURED, long_ctx);
    if (kv1 > ECO_KV_SHARE_MEASURED || (kv1 > 0 && long_ctx))
        onote(r, "at ctx %d the KV cache (fp16 in every format) adds %.0f%% to an fp16 batch-1 step's bytes, b times that at "
                 "batch b, and about the same energy to every format: each ΔE is its short-context figure / (1 + that share) "
                 "where the share passes %.0f%%, estimated", q->ctx, 100 * kv1, 100 * ECO_KV_SHARE_MEASURED);
    if (power_bounded)
        onote(r, "%zu of %zu configurations are slower than the roofline: their energy per step%s over the %s's %.0f W board "
                 "limit (bound \"power\")", power_bounded, r->n,
              own_card_energy ? "" : " (the low end of its range: the energy is carried over from another card)", q->gpu->name,
              q->gpu->board_power_w);

    double emin = INFINITY, lmin = INFINITY;
    for (size_t i = 0; i < r->n; i++) {
        double e = cand_energy(r, &r->cand[i]);
        if (e < emin) emin = e;
        if (r->cand[i].latency_ms < lmin) lmin = r->cand[i].latency_ms;
    }
    for (size_t i = 0; i < r->n; i++) {
        eco_candidate *c = &r->cand[i];
        double e = cand_energy(r, c);
        c->score = q->objective == ECO_OBJ_ENERGY ? e : q->objective == ECO_OBJ_LATENCY ? c->latency_ms
                                                                                          : sqrt((e / emin) * (c->latency_ms / lmin));
        if (c->feasible) {
            r->n_feasible++;
            if (r->best < 0 || cmp_cand(c, &r->cand[r->best]) < 0) r->best = (int)i;
        } else if (r->closest_infeasible < 0 || c->violation < r->cand[r->closest_infeasible].violation) {
            r->closest_infeasible = (int)i;
        }
    }
    if (r->best >= 0 && r->cand[r->best].borrowed && q->objective != ECO_OBJ_LATENCY) {
        /* nf4-dq borrowing nf4's curve must not displace the measured nf4 by a fraction of its own uncertainty */
        const eco_candidate *b = &r->cand[r->best];
        int own = firmer_alternative(r, q, own_data);
        if (own >= 0) {
            const eco_candidate *o = &r->cand[own];
            onote(r, "%s's ΔE is estimated from a proxy curve and its range reaches past %s's (%s): the %s configuration is "
                     "recommended", eco_precision_name(b->precision), eco_precision_name(o->precision),
                  eco_label_name(o->delta_label), eco_precision_name(o->precision));
            r->best = own;
        }
    }
    if (r->best >= 0 && q->objective != ECO_OBJ_LATENCY && r->cand[r->best].precision != ECO_PREC_FP16 &&
        r->cand[r->best].delta_hi_pct >= 0) {
        /* an extrapolated LLM.int8() at -50% [-50, +168] must not displace an nf4 at -49% [-74, -17] by its centre */
        const eco_candidate *b = &r->cand[r->best];
        int sure = firmer_alternative(r, q, own_sure_saving);
        if (sure >= 0) {
            const eco_candidate *s = &r->cand[sure];
            onote(r, "%s's ΔE (%+.1f%%) is lower at its centre, but its 95%% range reaches %+.1f%%: %s, a saving across its "
                     "whole range (%+.1f%% to %+.1f%%), is recommended", eco_precision_name(b->precision), b->delta_pct,
                  b->delta_hi_pct, eco_precision_name(s->precision), s->delta_lo_pct, s->delta_hi_pct);
            r->best = sure;
        }
    }
    if (r->best >= 0 && q->objective != ECO_OBJ_LATENCY && r->cand[r->best].precision != ECO_PREC_FP16) {
        const eco_candidate *b = &r->cand[r->best];
        const eco_candidate *f16 = NULL; /* fp16 at the recommended batch */
        for (size_t i = 0; i < r->n && !f16; i++)
            if (r->cand[i].precision == ECO_PREC_FP16 && r->cand[i].batch == b->batch) f16 = &r->cand[i];
        if (f16 && !f16->feasible && b->delta_lo_pct > 0)
            onote(r, "%s is recommended because fp16 does not fit at batch %d (%s), not for its energy: against fp16 it "
                     "costs %+.1f%% (95%% range %+.1f%% to %+.1f%%)", eco_precision_name(b->precision), b->batch, f16->reason,
                  b->delta_pct, b->delta_lo_pct, b->delta_hi_pct);
        else if (f16 && !f16->feasible)
            onote(r, "fp16 does not fit at batch %d (%s): %s's ΔE against it (%+.1f%%, 95%% range %+.1f%% to %+.1f%%) is "
                     "what the energy would be if it did", b->batch, f16->reason, eco_precision_name(b->precision), b->delta_pct,
                  b->delta_lo_pct, b->delta_hi_pct);
        else if (b->delta_lo_pct < 0 && b->delta_hi_pct > 0)
            onote(r, "%s's ΔE (%+.1f%%, 95%% range %+.1f%% to %+.1f%%) does not tell it from fp16: it is recommended on its "
                     "central value, and fp16 at the same batch may use as little energy",
                  eco_precision_name(b->precision), b->delta_pct, b->delta_lo_pct, b->delta_hi_pct);
    }
    if (r->best >= 0) {
        r->closest_infeasible = -1;
        /* alternatives: the best config of each other precision first (more informative than batch neighbours),
         * then the next best configs */
        bool used[ECO_OPT_MAX_CANDIDATES] = {false};
        used[r->best] = true;
        for (int pass = 0; pass < 2 && r->n_alt < 3; pass++) {
            for (;;) {
                int pick = -1;
                for (size_t i = 0; i < r->n; i++) {
                    if (used[i] || !r->cand[i].feasible) continue;
                    if (pass == 0) {
                        bool seen = r->cand[i].precision == r->cand[r->best].precision;
                        for (size_t a = 0; a < r->n_alt && !seen; a++) seen = r->cand[r->alt[a]].precision == r->cand[i].precision;
                        if (seen) continue;
                    }
                    if (pick < 0 || cmp_cand(&r->cand[i], &r->cand[pick]) < 0) pick = (int)i;
                }
                if (pick < 0 || r->n_alt >= 3) break;
                used[pick] = true;
                r->alt[r->n_alt++] = pick;
            }
        }
    }
    pareto_front(r);
    return ECO_OK;
}

bool eco_optimize_rejection(const eco_optimize_result *r, eco_precision p, eco_objective objective, const char *arch,
                            char *why, size_t cap)
{
    bool shown = r->best >= 0 && r->cand[r->best].precision == p;
    for (size_t i = 0; i < r->n_alt && !shown; i++) shown = r->cand[r->alt[i]].precision == p;
    if (shown) return false;
    int best_f = -1, least = -1;
    for (size_t i = 0; i < r->n; i++) {
        if (r->cand[i].precision != p) continue;
        if (r->cand[i].feasible && (best_f < 0 || r->cand[i].score < r->cand[best_f].score)) best_f = (int)i;
        if (!r->cand[i].feasible && (least < 0 || r->cand[i].violation < r->cand[least].violation)) least = (int)i;
    }
    if (best_f >= 0 && r->best >= 0)
        snprintf(why, cap, "feasible but ranked lower on %s (best: batch %d, score %.4g vs %.4g)", eco_objective_name(objective),
                 r->cand[best_f].batch, r->cand[best_f].score, r->cand[r->best].score);
    else if (least >= 0)
        snprintf(why, cap, "no batch fits: at batch %d: %s", r->cand[least].batch, r->cand[least].reason);
    else if (p != ECO_PREC_FP16)
        snprintf(why, cap, "no ΔE data for %s on %s or its proxy", eco_precision_name(p), arch);
    else
        return false;
    return true;
}
