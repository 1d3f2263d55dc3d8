/* Option values of the eco subcommands: a whole decimal number in a range, or a clear message naming the flag. */
#ifndef ECO_CLI_ARGS_H
#define ECO_CLI_ARGS_H

#include <stdbool.h>

/* "eco measure: --tokens must be an integer in [1, 65536], got '2x'" on stderr and false, else *out and true. */
bool eco_arg_long(const char *cmd, const char *flag, const char *v, long lo, long hi, long *out);
bool eco_arg_double(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out);
/* No option given twice (up to a "--" that ends the options): every command keeps one value an option, and which of
 * two was meant cannot be known ("--model-params 7 --model-params 8" had answered for 8 without a word). Says so on
 * stderr and returns false. */
bool eco_args_once(const char *cmd, int argc, char **argv);

#endif
