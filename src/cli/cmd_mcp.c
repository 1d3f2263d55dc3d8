/* `eco mcp --curves FILE [--db FILE]`: the MCP server on stdin/stdout. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "eco/mcp.h"
#include "eco/service.h"

static const char instructions[] =
    "EcoCompute answers whether quantizing an LLM's weights (FP16 -> INT8, LLM.int8(), NF4, FP8) lowers GPU energy "
    "per generated token, from measured data and curves fitted to it. Every number carries a label: measured (a "
    "measurement exists at this size), interpolated, extrapolated or estimated (a proxy GPU architecture), with n and "
    "a range. Report the label and range with the number; never present an estimate as a measurement. Use "
    "list_gpus and list_models to find valid names.";

static void usage(FILE *out)
{
    fprintf(out, "usage: eco mcp --curves FILE [--db FILE] [--quiet]\n\n"
                 "Model Context Protocol server on stdio (newline-delimited JSON-RPC 2.0, protocol 2025-11-25 and\n"
                 "2025-06-18). Tools: recommend_config, estimate_energy, list_gpus, list_models.\n\n"
                 "  --curves FILE  curves.json written by `eco fit` (required)\n"
                 "  --db FILE      SQLite store written by `eco import` (optional)\n"
                 "  --quiet        no diagnostics on stderr\n\n"
                 "stdout carries protocol messages only; diagnostics go to stderr. Exits 0 at end of input.\n");
}

/* Takes "--name VALUE" or "--name=VALUE"; returns 1 when argv[*i] is that option. */
static int take_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n)) return 0;
    if (argv[*i][n] == '=') {
        *value = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != '\0') return 0;
    if (*i + 1 >= argc) {
        *value = NULL;
        return 1;
    }
    *value = argv[++*i];
    return 1;
}

int eco_cmd_mcp(int argc, char **argv)
{
    const char *curves = NULL, *db = NULL;
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else if (take_value(argc, argv, &i, "--curves", &v)) {
            if (!v || !*v) {
                fprintf(stderr, "eco mcp: --curves needs a file\n");
                return 2;
            }
            curves = v;
        } else if (take_value(argc, argv, &i, "--db", &v)) {
            if (!v || !*v) {
                fprintf(stderr, "eco mcp: --db needs a file\n");
                return 2;
            }
            db = v;
        } else {
            fprintf(stderr, "eco mcp: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!curves) {
        fprintf(stderr, "eco mcp: --curves FILE is required (make one with `eco fit --db DB --out curves.json`)\n");
        usage(stderr);
        return 2;
    }

    /* Keep the protocol stream private and point fd 1 at stderr, so a stray printf anywhere in the library
     * cannot corrupt the JSON-RPC stream. */
    fflush(stdout);
    int proto_fd = dup(STDOUT_FILENO);
    FILE *proto = proto_fd >= 0 ? fdopen(proto_fd, "w") : NULL;
    if (!proto || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        fprintf(stderr, "eco mcp: cannot set up the protocol stream\n");
        if (proto) fclose(proto);
        else if (proto_fd >= 0) close(proto_fd);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN); /* a vanished client shows up as a write error, not a kill */

    eco_service *svc = NULL;
    eco_service_config cfg = {.curves_path = curves, .db_path = db};
    if (eco_service_open(&cfg, &svc) != ECO_OK) {
        fprintf(stderr, "eco mcp: %s\n", eco_last_error());
        fclose(proto);
        return 1;
    }
    eco_mcp_server *srv = NULL;
    eco_err rc = eco_mcp_server_new("ecocompute", ECO_VERSION, &srv);
    if (rc == ECO_OK) rc = eco_mcp_server_set_instructions(srv, instructions);
    if (rc == ECO_OK) rc = eco_mcp_add_eco_tools(srv, svc);
    if (rc == ECO_OK) {
        if (quiet) eco_mcp_server_set_log(srv, NULL);
        else fprintf(stderr, "eco mcp: serving on stdio (curves %s)\n", curves);
        rc = eco_mcp_serve(srv, stdin, proto);
    }
    if (rc != ECO_OK) fprintf(stderr, "eco mcp: %s\n", eco_last_error());
    eco_mcp_server_free(srv);
    eco_service_close(svc);
    if (fclose(proto) != 0 && rc == ECO_OK) rc = ECO_EIO;
    return rc == ECO_OK ? 0 : 1;
}
