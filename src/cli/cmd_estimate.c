/* eco estimate: ΔE% and energy per token for a model size, GPU and precision (the service's answer). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "eco/service.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: eco estimate --gpu GPU (--model-params N | --model PRESET) [options]\n"
                 "  --gpu GPU            card (\"RTX 4090\", \"H200\", \"A100\") or architecture\n"
                 "  --model-params N     size: billions (7) or a parameter count (7e9)\n"
                 "  --model PRESET       a model preset (eco model list), e.g. Qwen2.5-7B\n"
                 "  --precision P        int8, int8-mixed (LLM.int8()), nf4 (default), nf4-dq, fp8\n"
                 "  --batch B            batch size (ΔE is a batch-1 measurement; absolute energy is amortised)\n"
                 "  --ctx C              context length (ΔE was measured at short context; a long one's KV cache,\n"
                 "                       the same bytes in every format, shrinks ΔE and makes it estimated)\n"
                 "  --curves FILE        curves.json (default var/curves.json)\n"
                 "  --json               print the service's JSON answer\n");
}

static void print_range(const char *name, json_t *v)
{
    if (!json_is_object(v)) return;
    json_t *r = json_object_get(v, "range95");
    printf("  %-22s %.1f mJ/token  [%.1f, %.1f]  (%s)\n", name, json_number_value(json_object_get(v, "value")),
           json_number_value(json_array_get(r, 0)), json_number_value(json_array_get(r, 1)),
           json_string_value(json_object_get(v, "label")));
}

int eco_cmd_estimate(int argc, char **argv)
{
    const char *curves = "var/curves.json";
    bool as_json = false;
    json_t *params = json_object();
    static const eco_arg_param map[] = {
        {"--gpu", "gpu"}, {"--model-params", "params_b"}, {"--params-b", "params_b"}, {"--model", "model"},
        {"--precision", "precision"}, {"--batch", "batch"}, {"--ctx", "ctx"},
    };
    switch (eco_args_service_params("estimate", argc, argv, map, sizeof map / sizeof map[0], params, &curves, &as_json)) {
    case ECO_ARGS_OK: break;
    case ECO_ARGS_HELP: usage(stdout); json_decref(params); return 0;
    case ECO_ARGS_USAGE: usage(stderr); json_decref(params); return 2;
    case ECO_ARGS_ERROR: json_decref(params); return 2;
    }
    eco_service *svc;
    eco_service_config cfg = {.curves_path = curves, .db_path = NULL};
    if (eco_service_open(&cfg, &svc)) {
        fprintf(stderr, "eco estimate: %s\n", eco_last_error());
        json_decref(params);
        return 1;
    }
    json_t *r;
    eco_err e = eco_service_estimate(svc, params, ECO_PARAMS_STRINGS, &r);
    json_decref(params);
    eco_service_close(svc);
    if (e) {
        const char *field = eco_last_error_field();
        fprintf(stderr, "eco estimate: %s%s%s\n", *field ? field : "", *field ? ": " : "", eco_last_error());
        return eco_cli_exit_status(e);
    }
    if (as_json) {
        json_dumpf(r, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        putchar('\n');
    } else {
        json_t *in = json_object_get(r, "input"), *rng = json_object_get(r, "range95");
        json_t *model = json_object_get(in, "model");
        printf("%s%s%.4gB on %s (%s), %s vs fp16\n", json_is_string(model) ? json_string_value(model) : "",
               json_is_string(model) ? ", " : "", json_number_value(json_object_get(in, "params_b")),
               json_string_value(json_object_get(in, "gpu")), json_string_value(json_object_get(in, "arch")),
               json_string_value(json_object_get(in, "precision")));
        printf("  ΔE                     %+.1f%%  range95 [%+.1f, %+.1f]\n", json_number_value(json_object_get(r, "delta_pct")),
               json_number_value(json_array_get(rng, 0)), json_number_value(json_array_get(rng, 1)));
        printf("  label                  %s (n=%lld trials, %lld anchor(s), arch used: %s)\n",
               json_string_value(json_object_get(r, "label")), (long long)json_integer_value(json_object_get(r, "n")),
               (long long)json_integer_value(json_object_get(r, "n_anchors")), json_string_value(json_object_get(r, "arch_used")));
        json_t *cv = json_object_get(r, "cv_pct"), *sessions = json_object_get(r, "sessions");
        if (json_is_number(cv)) printf("  CV                     %.2f%% (energy across the measurements' trials)\n", json_number_value(cv));
        if (json_array_size(sessions)) {
            printf("  sessions               ");
            size_t k;
            json_t *x;
            json_array_foreach(sessions, k, x) {
                if (k == 6) { printf(", ... (%zu in all; --json lists them)", json_array_size(sessions)); break; }
                printf("%s%s", k ? ", " : "", json_string_value(x));
            }
            putchar('\n');
        }
        const char *backend = json_string_value(json_object_get(r, "backend"));
        if (backend && *backend) printf("  software               %s\n", backend);
        printf("  recommendation         %s\n", json_string_value(json_object_get(r, "recommendation")));
        json_t *cx = json_object_get(r, "crossover_b");
        if (json_is_number(cx)) printf("  crossover              %.2fB\n", json_number_value(cx));
        printf("  protocol               %s\n", json_string_value(json_object_get(r, "protocol")));
        json_t *en = json_object_get(r, "energy");
        if (json_is_object(en)) {
            print_range("fp16 energy", json_object_get(en, "fp16_mj_per_token"));
            print_range("quantized energy", json_object_get(en, "quant_mj_per_token"));
        }
        size_t i;
        json_t *n;
        json_array_foreach(json_object_get(r, "notes"), i, n) printf("  note: %s\n", json_string_value(n));
    }
    json_decref(r);
    return 0;
}
