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
