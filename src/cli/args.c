#include "cli/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool eco_args_once(const char *cmd, int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        if (strncmp(argv[i], "--", 2)) continue;
        for (int j = 1; j < i; j++)
            if (!strcmp(argv[i], argv[j])) {
                fprintf(stderr, "eco %s: %s is given twice: give each option once\n", cmd, argv[i]);
                return false;
            }
    }
    return true;
}

bool eco_arg_long(const char *cmd, const char *flag, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || end == v || x < lo || x > hi) {
        fprintf(stderr, "%s: %s must be an integer in [%ld, %ld], got '%s'\n", cmd, flag, lo, hi, v);
        return false;
    }
    *out = x;
    return true;
}

bool eco_arg_double(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end || end == v || !(x >= lo && x <= hi)) {
        fprintf(stderr, "%s: %s must be a number in [%g, %g], got '%s'\n", cmd, flag, lo, hi, v);
        return false;
    }
    *out = x;
    return true;
}

eco_args_result eco_args_service_params(const char *cmd, int argc, char **argv, const eco_arg_param *map, size_t n_map,
                                        json_t *params, const char **curves, bool *as_json)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return ECO_ARGS_HELP;
        if (!strcmp(a, "--json")) { *as_json = true; continue; }
        if (i + 1 >= argc) { fprintf(stderr, "eco %s: %s needs a value (or is unknown)\n", cmd, a); return ECO_ARGS_USAGE; }
        const char *val = argv[++i];
        if (!strcmp(a, "--curves")) { *curves = val; continue; }
        size_t k = 0;
        while (k < n_map && strcmp(map[k].flag, a)) k++;
        if (k == n_map) { fprintf(stderr, "eco %s: unknown option %s\n", cmd, a); return ECO_ARGS_USAGE; }
        if (json_object_get(params, map[k].param)) { /* two spellings of one parameter (--model-params, --params-b) */
            fprintf(stderr, "eco %s: %s gives %s again: give it once\n", cmd, a, map[k].param);
            return ECO_ARGS_ERROR;
        }
        json_object_set_new(params, map[k].param, json_string(val));
    }
    return ECO_ARGS_OK;
}
