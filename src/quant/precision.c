#include "eco/quant.h"

#include <string.h>
#include <strings.h>

static const char *const canonical[ECO_PREC_COUNT] = {"fp16", "int8", "int8-mixed", "nf4", "nf4-dq", "fp8"};

const char *eco_precision_name(eco_precision p)
{
    return (unsigned)p < ECO_PREC_COUNT ? canonical[p] : "unknown";
}

eco_err eco_precision_parse(const char *name, eco_precision *out)
{
    static const struct { const char *alias; eco_precision p; } aliases[] = {
        {"float16", ECO_PREC_FP16},      {"half", ECO_PREC_FP16},         {"f16", ECO_PREC_FP16},
        {"w8a16", ECO_PREC_INT8},        {"int8-pure", ECO_PREC_INT8},    {"int8_pure", ECO_PREC_INT8},
        {"int8_mixed", ECO_PREC_INT8_MIXED}, {"llm.int8", ECO_PREC_INT8_MIXED}, {"llm.int8()", ECO_PREC_INT8_MIXED},
        {"bnb-int8", ECO_PREC_INT8_MIXED}, {"int8_default", ECO_PREC_INT8_MIXED},
        {"nf4_dq", ECO_PREC_NF4_DQ},     {"nf4+dq", ECO_PREC_NF4_DQ},     {"nf4-double-quant", ECO_PREC_NF4_DQ},
        {"fp8-e4m3", ECO_PREC_FP8},      {"fp8_e4m3", ECO_PREC_FP8},      {"e4m3", ECO_PREC_FP8},
    };
    if (!name || !*name) return eco_fail_field(ECO_EINVAL, "precision", "precision is empty");
    /* surrounding blanks, as numbers are read (" nf4" from a form or a query string) */
    char bare[32];
    size_t start = strspn(name, " \t"), len = strlen(name + start);
    while (len && (name[start + len - 1] == ' ' || name[start + len - 1] == '\t')) len--;
    if (len && len < sizeof bare) {
        memcpy(bare, name + start, len);
        bare[len] = '\0';
        for (int p = 0; p < ECO_PREC_COUNT; p++)
            if (!strcasecmp(bare, canonical[p])) { *out = (eco_precision)p; return ECO_OK; }
        for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
            if (!strcasecmp(bare, aliases[i].alias)) { *out = aliases[i].p; return ECO_OK; }
    }
    return eco_fail_field(ECO_EINVAL, "precision",
                          "unknown precision '%s' (expected fp16, int8, int8-mixed, nf4, nf4-dq or fp8)", name);
}

eco_err eco_quantized_precision_parse(const char *name, eco_precision *out)
{
    eco_precision p;
    if (eco_precision_parse(name, &p)) {
        if (!name || !*name) return eco_last_error_code();
        return eco_fail_field(ECO_ENOTFOUND, "precision",
                              "unknown precision '%s' (a quantized format: int8, int8-mixed, nf4, nf4-dq or fp8)", name);
    }
    if (p == ECO_PREC_FP16)
        return eco_fail_field(ECO_EINVAL, "precision",
                              "precision must be a quantized format (fp16 is the baseline every ΔE is measured against)");
    *out = p;
    return ECO_OK;
}

uint64_t eco_precision_weight_bytes(eco_precision p, uint64_t rows, uint64_t cols)
{
    uint64_t n = rows * cols;
    switch (p) {
    case ECO_PREC_FP16: return 2 * n;
    case ECO_PREC_INT8:
    case ECO_PREC_INT8_MIXED:
    case ECO_PREC_FP8: return n + 4 * rows;                 /* one fp32 scale per row */
    case ECO_PREC_NF4: return (n + 1) / 2 + 4 * ((n + 63) / 64); /* packed nibbles + fp32 absmax per 64 */
    case ECO_PREC_NF4_DQ: {
        uint64_t blocks = (n + 63) / 64, groups = (blocks + 255) / 256;
        /* 8-bit absmax codes, an fp32 scale + offset per 256 blocks, the 256-entry fp32 dynamic map */
        return (n + 1) / 2 + blocks + 4 * groups + 4 + 256 * 4;
    }
    default: return 0;
    }
}

double eco_precision_bits_per_weight(eco_precision p)
{
    switch (p) {
    case ECO_PREC_FP16: return 16.0;
    case ECO_PREC_INT8:
    case ECO_PREC_INT8_MIXED:
    case ECO_PREC_FP8: return 8.0;
    case ECO_PREC_NF4: return 4.5;
    case ECO_PREC_NF4_DQ: return 4.0 + 8.0 / 64 + 32.0 / (64 * 256);
    default: return 0;
    }
}
