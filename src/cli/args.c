#include "cli/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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
