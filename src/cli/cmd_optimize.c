/* eco optimize: best precision x batch under VRAM / latency budgets, with alternatives (the service's answer). */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "eco/service.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: eco optimize --gpu GPU (--model PRESET | --model-params N) [options]\n"
                 "  --max-vram-gb G       VRAM budget (default: the card's memory)\n"
                 "  --max-latency-ms L    per-token latency budget (modelled roofline)\n"
                 "  --objective O         energy (default), latency, balanced\n"
                 "  --ctx C               cached positions per sequence (default 2048)\n"
                 "  --batch B             pin the batch size, compare precisions only (default: sweep 1..64)\n"
                 "  --curves FILE         curves.json (default var/curves.json)\n"
                 "  --json                print the service's JSON answer\n");
}

static void print_cand(const char *tag, json_t *c)
{
    if (!json_is_object(c)) return;
    json_t *e = json_object_get(c, "energy_mj_per_token"), *b = json_object_get(c, "basis");
    char energy[64];
    if (json_is_number(e)) snprintf(energy, sizeof energy, "%.1f mJ/token", json_number_value(e));
    else snprintf(energy, sizeof energy, "%.3fx fp16", json_number_value(json_object_get(c, "energy_rel_fp16")));
    const json_t *dr = json_object_get(c, "delta_range95");
    char delta[96] = "";
    if (strcmp(json_string_value(json_object_get(c, "precision")), "fp16"))
        snprintf(delta, sizeof delta, "  ΔE %+.1f%% [%+.1f, %+.1f] (%s)", json_number_value(json_object_get(c, "delta_pct")),
                 json_number_value(json_array_get(dr, 0)), json_number_value(json_array_get(dr, 1)),
                 json_string_value(json_object_get(b, "delta")));
    printf("  %-12s %-10s batch %-3lld %s (%s)%s  |  modelled: %.1f GB, %.2f ms/token, %.0f tok/s%s%s\n", tag,
           json_string_value(json_object_get(c, "precision")), (long long)json_integer_value(json_object_get(c, "batch")), energy,
           json_string_value(json_object_get(b, "energy")), delta, json_number_value(json_object_get(c, "vram_gb")),
           json_number_value(json_object_get(c, "latency_ms")), json_number_value(json_object_get(c, "throughput_tok_s")),
           json_is_string(json_object_get(c, "reason")) ? "  -- " : "",
           json_is_string(json_object_get(c, "reason")) ? json_string_value(json_object_get(c, "reason")) : "");
}

int eco_cmd_optimize(int argc, char **argv)
{
    const char *curves = "var/curves.json";
    bool as_json = false;
    json_t *params = json_object();
    static const eco_arg_param map[] = {
        {"--gpu", "gpu"}, {"--model-params", "params_b"}, {"--params-b", "params_b"}, {"--model", "model"},
        {"--max-vram-gb", "max_vram_gb"}, {"--max-latency-ms", "max_latency_ms"}, {"--objective", "objective"}, {"--ctx", "ctx"},
        {"--batch", "batch"},
    };
    switch (eco_args_service_params("optimize", argc, argv, map, sizeof map / sizeof map[0], params, &curves, &as_json)) {
    case ECO_ARGS_OK: break;
    case ECO_ARGS_HELP: usage(stdout); json_decref(params); return 0;
    case ECO_ARGS_USAGE: usage(stderr); json_decref(params); return 2;
    case ECO_ARGS_ERROR: json_decref(params); return 2;
    }
    eco_service *svc;
    eco_service_config cfg = {.curves_path = curves, .db_path = NULL};
    if (eco_service_open(&cfg, &svc)) {
        fprintf(stderr, "eco optimize: %s\n", eco_last_error());
        json_decref(params);
        return 1;
    }
    json_t *r;
    eco_err e = eco_service_optimize(svc, params, ECO_PARAMS_STRINGS, &r);
    json_decref(params);
    eco_service_close(svc);
    if (e) {
        const char *field = eco_last_error_field();
        fprintf(stderr, "eco optimize: %s%s%s\n", *field ? field : "", *field ? ": " : "", eco_last_error());
        return eco_cli_exit_status(e);
    }
    if (as_json) {
        json_dumpf(r, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        putchar('\n');
    } else {
        json_t *in = json_object_get(r, "input"), *g = json_object_get(r, "gpu");
        printf("%.2fB on %s (%s, %.0f GB), objective %s, VRAM budget %.1f GB: %lld of %lld configs feasible\n",
               json_number_value(json_object_get(in, "params_b")), json_string_value(json_object_get(g, "name")),
               json_string_value(json_object_get(g, "arch")), json_number_value(json_object_get(g, "vram_gb")),
               json_string_value(json_object_get(in, "objective")), json_number_value(json_object_get(r, "vram_budget_gb")),
               (long long)json_integer_value(json_object_get(r, "feasible_count")),
               (long long)json_integer_value(json_object_get(r, "candidates_count")));
        print_cand("recommended", json_object_get(r, "recommended"));
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(r, "alternatives"), i, v) print_cand("alternative", v);
        print_cand("closest", json_object_get(r, "closest_infeasible"));
        json_array_foreach(json_object_get(r, "pareto_front"), i, v) print_cand("pareto front", v);
        json_array_foreach(json_object_get(r, "rejected"), i, v)
            printf("  rejected     %-10s %s\n", json_string_value(json_object_get(v, "precision")), json_string_value(json_object_get(v, "reason")));
        json_array_foreach(json_object_get(r, "notes"), i, v) printf("  note: %s\n", json_string_value(v));
    }
    json_decref(r);
    return 0;
}
