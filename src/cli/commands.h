/* Subcommands of `eco`. Each lives in its own cmd_<name>.c; main.c dispatches to the ones linked in.
 * Declared weak so a subcommand's file can land without editing main.c or breaking the build. */
#ifndef ECO_CLI_COMMANDS_H
#define ECO_CLI_COMMANDS_H

#include "eco/err.h"

/* Exit statuses: 0 done; 1 failed (I/O, device, ...); 2 the request is wrong (usage, bad value, unknown name);
 * 3 a valid request the data or the build cannot serve (no measurements of that precision on that architecture). */
enum { ECO_EXIT_OK = 0, ECO_EXIT_FAILED = 1, ECO_EXIT_USAGE = 2, ECO_EXIT_NO_DATA = 3 };

static inline int eco_cli_exit_status(eco_err e)
{
    if (e == ECO_OK) return ECO_EXIT_OK;
    if (e == ECO_EINVAL || e == ECO_ENOTFOUND) return ECO_EXIT_USAGE;
    return e == ECO_EUNSUPPORTED ? ECO_EXIT_NO_DATA : ECO_EXIT_FAILED;
}

typedef int (*eco_cmd_fn)(int argc, char **argv); /* argv[0] is the subcommand name; returns exit status */

#define ECO_CLI_COMMANDS(X)                                                                  \
    X(import, "import the reference dataset (a folder) or a replication (an energy.json)")  \
    X(fit, "fit curves per (GPU architecture, precision) from the store; writes curves.json") \
    X(estimate, "estimate ΔE% and energy per token for a model size, GPU and precision")     \
    X(optimize, "best precision x batch under VRAM / latency budgets, with alternatives")    \
    X(serve, "serve the REST API and the web site")                                          \
    X(mcp, "Model Context Protocol server on stdio")                                         \
    X(model, "model presets: `eco model info NAME`, `eco model list`")                       \
    X(measure, "measure energy per token of precisions on this GPU (A/B against fp16)")      \
    X(validate, "validate an energy.json against the published schema")                     \
    X(report, "render the Markdown report of an energy.json")                                \
    X(export, "export the store as CSV or JSON")

#define ECO_DECLARE_CMD(name, help) int eco_cmd_##name(int argc, char **argv) __attribute__((weak));
ECO_CLI_COMMANDS(ECO_DECLARE_CMD)
#undef ECO_DECLARE_CMD

#endif
