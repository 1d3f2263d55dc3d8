/* Option values of the eco subcommands: a whole decimal number in a range, or a clear message naming the flag. */
#ifndef ECO_CLI_ARGS_H
#define ECO_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* "eco measure: --tokens must be an integer in [1, 65536], got '2x'" on stderr and false, else *out and true. */
bool eco_arg_long(const char *cmd, const char *flag, const char *v, long lo, long hi, long *out);
bool eco_arg_double(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out);
/* No option given twice (up to a "--" that ends the options): every command keeps one value an option, and which of
 * two was meant cannot be known ("--model-params 7 --model-params 8" had answered for 8 without a word). Says so on
 * stderr and returns false. */
bool eco_args_once(const char *cmd, int argc, char **argv);

/* The options of a command that asks the service (eco estimate, eco optimize): --help/-h, --json, --curves FILE, and
 * each flag of map as a string parameter into params (two spellings of one parameter, --model-params and
 * --params-b, may not both be given). Problems are said on stderr; the caller prints its usage where asked. */
typedef struct {
    const char *flag, *param;
} eco_arg_param;
typedef enum { ECO_ARGS_OK, ECO_ARGS_HELP, ECO_ARGS_USAGE /* an error the usage explains */, ECO_ARGS_ERROR } eco_args_result;
eco_args_result eco_args_service_params(const char *cmd, int argc, char **argv, const eco_arg_param *map, size_t n_map,
                                        json_t *params, const char **curves, bool *as_json);

#endif
