#include "eco/record.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void eco_record_design_id(const eco_record *r, char out[9])
{
    out[0] = '\0';
    const char *d = strstr(r->note, ECO_RECORD_DESIGN_MARK);
    if (!d || !d[strlen(ECO_RECORD_DESIGN_MARK)]) return;
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *c = d + strlen(ECO_RECORD_DESIGN_MARK); *c; c++) h = (h ^ (unsigned char)*c) * 16777619u;
    snprintf(out, 9, "%08x", (unsigned)h);
}

double eco_record_delta_pct(const eco_record *r) { return (r->e_quant_mj - r->e_fp16_mj) / r->e_fp16_mj * 100.0; }

const char *eco_energy_basis_name(eco_energy_basis b)
{
    return b == ECO_BASIS_GROSS ? "gross" : b == ECO_BASIS_NET ? "net" : "unknown";
}

const char *eco_record_origin_name(eco_record_origin o)
{
    return o == ECO_ORIGIN_RUN ? "run" : o == ECO_ORIGIN_REPLICATION ? "replication" : "reference";
}

void eco_record_protocol_key(const eco_record *r, char *buf, size_t cap)
{
    char tok[16];
    if (r->tokens > 0) snprintf(tok, sizeof tok, "tok%d", r->tokens);
    else snprintf(tok, sizeof tok, "tok?");
    snprintf(buf, cap, "%s/%s/%s", tok, eco_energy_basis_name(r->basis), r->method[0] ? r->method : "unknown");
}

static const struct { const char *arch, *label; } archs[] = {
    {"turing", "Turing (T4)"},
    {"ampere", "Ampere (A100/A800)"},
    {"ada", "Ada (RTX 4090/4090D)"},
    {"hopper", "Hopper (H100/H200)"},
    {"blackwell", "Blackwell (RTX 5090)"},
};

size_t eco_arch_count(void) { return sizeof archs / sizeof archs[0]; }
const char *eco_arch_at(size_t i) { return i < eco_arch_count() ? archs[i].arch : NULL; }

bool eco_arch_is_known(const char *arch)
{
    for (size_t i = 0; arch && i < eco_arch_count(); i++)
        if (!strcmp(arch, archs[i].arch)) return true;
    return false;
}

const char *eco_arch_label(const char *arch)
{
    for (size_t i = 0; arch && i < eco_arch_count(); i++)
        if (!strcmp(arch, archs[i].arch)) return archs[i].label;
    return NULL;
}

/* Case-insensitive substring search on a normalised name (spaces/dashes dropped). */
static void normalise(const char *in, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && j + 1 < cap; i++) {
        unsigned char c = (unsigned char)in[i];
        if (isalnum(c)) out[j++] = (char)tolower(c);
    }
    out[j] = '\0';
}

bool eco_gpu_name_memory_at(const char *s)
{
    size_t d = 0;
    while (isdigit((unsigned char)s[d])) d++;
    return d > 0 && d <= 3 && s[d] == 'g' && s[d + 1] == 'b';
}

/* Whether a normalised name holds a card pattern: one ending in a digit must not run on into more digits ("l4" is
 * not "l40", "p4" not "p40"), unless they are a memory size ("h10080gb"). */
static bool names_pattern(const char *n, const char *pattern)
{
    const char *hit = strstr(n, pattern);
    size_t len = strlen(pattern);
    return hit && !(isdigit((unsigned char)pattern[len - 1]) && isdigit((unsigned char)hit[len]) && !eco_gpu_name_memory_at(hit + len));
}

const char *eco_gpu_name_outside_classes(const char *gpu)
{
    static const struct { const char *pattern, *what; } outside[] = {
        {"amd", "an AMD GPU"},      {"radeon", "an AMD GPU"},   {"instinct", "an AMD GPU"}, {"intel", "an Intel GPU"},
        {"gaudi", "an Intel accelerator"}, {"v100", "a Volta GPU"}, {"titanv", "a Volta GPU"}, {"p100", "a Pascal GPU"},
        {"p40", "a Pascal GPU"},   {"p4", "a Pascal GPU"},     {"k80", "a Kepler GPU"},
    };
    char n[128];
    if (!gpu || !*gpu) return NULL;
    normalise(gpu, n, sizeof n);
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
        if (names_pattern(n, outside[i].pattern)) return outside[i].what;
    return NULL;
}

eco_err eco_arch_from_gpu_name(const char *gpu, const char **arch_out)
{
    /* Ordered: more specific patterns first ("rtxa6000" is ampere, "rtx6000ada" is ada, "rtxpro6000" blackwell). */
    static const struct { const char *pattern, *arch; } map[] = {
        {"rtxpro6000", "blackwell"}, {"b200", "blackwell"}, {"b100", "blackwell"}, {"gb200", "blackwell"},
        {"5090", "blackwell"},       {"5080", "blackwell"}, {"5070", "blackwell"}, {"5060", "blackwell"},
        {"5050", "blackwell"},
        {"h100", "hopper"},          {"h200", "hopper"},    {"h800", "hopper"},    {"h20", "hopper"},
        {"gh200", "hopper"},         {"hopper", "hopper"},
        {"6000ada", "ada"},          {"l40", "ada"},        {"l4", "ada"},         {"l20", "ada"},
        {"4090", "ada"},             {"4080", "ada"},       {"4070", "ada"},       {"4060", "ada"},
        {"ada", "ada"},              {"rtxa", "ampere"}, /* the RTX A2000..A6000 workstation cards */
        {"a100", "ampere"},          {"a800", "ampere"},    {"a40", "ampere"},     {"a30", "ampere"},
        {"a10", "ampere"},           {"a16", "ampere"},     {"3090", "ampere"},    {"3080", "ampere"},
        {"3070", "ampere"},          {"3060", "ampere"},    {"3050", "ampere"},    {"ampere", "ampere"},
        {"t4", "turing"},            {"2080", "turing"},    {"2070", "turing"},    {"2060", "turing"},
        {"titanrtx", "turing"},      {"quadrortx", "turing"}, {"turing", "turing"}, {"a2", "ampere"},
    };
    char n[128];
    if (!gpu || !*gpu) return eco_fail_field(ECO_EINVAL, "gpu", "gpu is empty");
    normalise(gpu, n, sizeof n);
    for (size_t i = 0; i < eco_arch_count(); i++)
        if (!strcmp(n, archs[i].arch)) { *arch_out = archs[i].arch; return ECO_OK; }
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (names_pattern(n, map[i].pattern)) {
            *arch_out = map[i].arch;
            return ECO_OK;
        }
    return eco_fail_field(ECO_ENOTFOUND, "gpu",
                          "unknown GPU '%s': give a card name (e.g. \"RTX 4090\", \"H200\", \"A100\", \"T4\") or an "
                          "architecture (turing, ampere, ada, hopper, blackwell)", gpu);
}

eco_err eco_record_check(const eco_record *r)
{
    if (!eco_arch_is_known(r->arch))
        return eco_fail_field(ECO_EINVAL, "arch", "unknown architecture '%s'", r->arch);
    if (!(r->params_b > 0) || !isfinite(r->params_b))
        return eco_fail_field(ECO_EINVAL, "params_b", "params_b must be a positive number, got %g", r->params_b);
    if (!(r->e_fp16_mj > 0) || !isfinite(r->e_fp16_mj))
        return eco_fail_field(ECO_EINVAL, "energy_fp16", "fp16 energy must be positive, got %g", r->e_fp16_mj);
    if (!(r->e_quant_mj > 0) || !isfinite(r->e_quant_mj))
        return eco_fail_field(ECO_EINVAL, "energy_quant", "quantized energy must be positive, got %g", r->e_quant_mj);
    if (r->precision == ECO_PREC_FP16 || (unsigned)r->precision >= ECO_PREC_COUNT)
        return eco_fail_field(ECO_EINVAL, "precision", "a record compares a quantized precision with fp16");
    if (r->n_trials < 1) return eco_fail_field(ECO_EINVAL, "n_trials", "n_trials must be >= 1, got %d", r->n_trials);
    return ECO_OK;
}
